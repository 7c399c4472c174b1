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
