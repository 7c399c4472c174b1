//! A gRPC service that shuts down correctly on SIGTERM: health turns NOT_SERVING (readiness
//! fails), it keeps serving while endpoints drain (`DRAIN_DELAY`), then GOAWAY on every
//! connection, in-flight calls finish, exit 0. See `shared/grpc.rs` for its environment.

#[path = "shared/grpc.rs"]
mod grpc;

fn main() {
    grpc::main_with(grpc::Shutdown::Graceful);
}
