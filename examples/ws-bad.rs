//! A WebSocket service that shuts down badly on SIGTERM: it exits at once, so every held
//! connection ends without a close frame (a FIN, or a reset). See `shared/ws_service.rs`.

#[path = "shared/ws_service.rs"]
mod ws_service;

fn main() {
    ws_service::main_with(ws_service::Shutdown::Abrupt);
}
