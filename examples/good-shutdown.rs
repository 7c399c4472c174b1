//! An HTTP service that shuts down correctly on SIGTERM: readiness fails, it keeps serving
//! while endpoints drain (`DRAIN_DELAY`), closes keep-alive connections cleanly, finishes
//! in-flight requests, exits 0. See `shared/service.rs` for the environment it reads.

#[path = "shared/service.rs"]
mod service;

fn main() {
    service::main_with(service::Shutdown::Graceful);
}
