//! The example servers themselves, as real processes on loopback: the HTTP examples' h2c beside
//! HTTP/1.1 (`h2c`), and the gRPC examples (`grpc`), each graceful one's shutdown against its
//! abrupt twin. What drainwatch records of them is tests/attach_client.rs's and the cluster
//! e2e's business; these prove the servers do what the examples claim.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[path = "example_servers/grpc.rs"]
mod grpc;
#[path = "example_servers/h2c.rs"]
mod h2c;
#[path = "example_servers/support.rs"]
mod support;
