//! The attach event names and result names; the table in `mod.rs` says what each means.

/// The observation window opens.
pub const WINDOW_STARTED: &str = "attach_window_started";
/// The observation window closes.
pub const WINDOW_ENDED: &str = "attach_window_ended";
/// A flow's first connection is established.
pub const CONN_OPENED: &str = "attach_conn_opened";
/// A flow's next connection is established.
pub const CONN_REOPENED: &str = "attach_conn_reopened";
/// A dial of a held connection failed.
pub const CONN_OPEN_FAILED: &str = "attach_conn_open_failed";
/// The server ended a connection cleanly.
pub const CONN_CLOSED_GRACEFUL: &str = "attach_conn_closed_graceful";
/// A connection broke.
pub const CONN_SEVERED: &str = "attach_conn_severed";
/// A connection was open when the window closed.
pub const CONN_OBSERVATION_END: &str = "attach_conn_observation_end";
/// One HTTP request.
pub const REQUEST: &str = "attach_request";
/// One new-connection prober attempt.
pub const DIAL: &str = "attach_dial";

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
