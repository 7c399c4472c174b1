//! A gRPC service that exits at once on SIGTERM, as servers without `GracefulStop` do: no
//! GOAWAY, calls in flight cut, new connections refused while endpoints still point at it.
//! See `shared/grpc.rs`.

#[path = "shared/grpc.rs"]
mod grpc;

fn main() {
    grpc::main_with(grpc::Shutdown::Abrupt);
}
