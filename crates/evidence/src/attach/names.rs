//! The attach result names; the table in `mod.rs` says what each means. The attach event names
//! are in the registry, `evidence::event::EventName`.

/// A request's success result.
pub const OK: &str = "ok";
/// A dial's success result.
pub const SERVED: &str = "served";
/// Graceful close: the response said `Connection: close`.
pub const CLOSE_CONNECTION_HEADER: &str = "connection-close";
/// Graceful close: FIN while idle, after a complete response.
pub const CLOSE_FIN_IDLE: &str = "fin-idle";
/// Graceful close of a held TCP connection: FIN.
pub const CLOSE_FIN: &str = "fin";
/// Graceful close of a WebSocket: the server's close frame with 1000 (normal) or 1001 (going
/// away), or with no code; the code and reason are on the connection record.
pub const CLOSE_WS: &str = "ws-close";
/// Graceful close of an HTTP/2 connection: the server's GOAWAY with NO_ERROR, every stream at
/// or below its last stream id answered, then the connection's end.
pub const CLOSE_GOAWAY: &str = "goaway";
