//! The evidence core: plan, events, the flow state machine, classification, timeline, report
//! schema and renderers.
//!
//! Pure by construction: nothing here imports tokio, sockets, kube or octocrab, and nothing
//! reads a clock. Timestamps arrive inside events; a report is a function of its event lines.
//! Its Cargo.toml holds no runtime, socket or client to import;
//! `tests/architecture.rs` fails the build if a clock, file or process is ever named.

pub mod assemble;
pub mod attach;
pub mod classify;
pub mod clock;
pub mod data_plane;
pub mod duration;
pub mod environment;
pub mod event;
pub mod finding;
pub mod findings;
pub mod flow;
pub mod format;
pub mod html;
pub mod ingress;
pub mod journal;
pub mod markdown;
pub mod mermaid;
pub mod plan;
pub mod policy;
pub mod rank;
pub mod report;
pub mod request_id;
pub mod settings;
pub mod shard;
pub mod stats;
pub mod table;
#[cfg(any(test, feature = "test-fixtures"))]
#[doc(hidden)]
pub mod test_fixtures;
pub mod timeline;
pub mod trigger;
pub mod verdict;
