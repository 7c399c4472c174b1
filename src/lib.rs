//! drainwatch: recorded evidence of what a pod's established connections go through when it
//! is terminated.
//!
//! Data flows one way: flags → validated plan ([`evidence::plan`]) → event lines
//! ([`evidence::event`]) → report ([`evidence::assemble`]) → renderers. The [`evidence`] core is
//! pure; the edges ([`probe`], [`net`], [`platform`], [`trial`]) do the I/O.

pub mod cli;
pub mod console;
pub use drainwatch_evidence as evidence;
pub mod gate;
pub mod github;
pub mod host;
pub mod k8s;
pub mod net;
pub mod platform;
pub mod preflight;
pub mod probe;
pub mod recorder;
pub mod trial;
pub mod wire;
