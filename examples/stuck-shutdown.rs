//! An HTTP service whose accept loop is wedged on SIGTERM: it stops calling accept() but keeps
//! its listening socket open (backlog cut to 0) and stays alive until SIGKILL at the end of the
//! grace period. New dials are not refused: the kernel drops their SYNs, so they time out.
//! `no-new-connection-failed` misses on it, `no-new-connection-refused` holds. See
//! `shared/service.rs`.

#[path = "shared/service.rs"]
mod service;

fn main() {
    service::main_with(service::Shutdown::Stuck);
}
