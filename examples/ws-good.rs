//! A WebSocket service that shuts down correctly on SIGTERM: readiness fails, it keeps serving
//! while endpoints drain (`DRAIN_DELAY`), sends a close frame 1001 (going away) on every
//! connection, waits for the clients' close, exits 0. With `TLS_PORT` it also serves wss.
//! See `shared/ws_service.rs` for the environment it reads.

#[path = "shared/ws_service.rs"]
mod ws_service;

fn main() {
    ws_service::main_with(ws_service::Shutdown::Graceful);
}
