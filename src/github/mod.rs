//! GitHub: the Actions environment (step summary, step outputs, event payload) and the sticky
//! pull-request comment through octocrab. An edge: it reads the process environment and talks
//! HTTP; what it posts is rendered by the pure core.

pub mod baseline;
pub mod comment;
pub mod env;
pub mod event;
pub mod key;
pub mod steps;
pub mod unzip;
pub mod viewer;
