//! An HTTP service that exits at once on SIGTERM, as many do: connections in flight are cut and
//! new ones refused while endpoints still point at it. See `shared/service.rs`.

#[path = "shared/service.rs"]
mod service;

fn main() {
    service::main_with(service::Shutdown::Abrupt);
}
