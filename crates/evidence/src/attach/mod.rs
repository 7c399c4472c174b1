//! Attach: what an unmodified user workload's clients saw while Kubernetes replaced its pods.
//!
//! Pure like the rest of the core: events in, the report's `trial.attach` section out. Nothing
//! here reads a clock or touches a socket; the client (`src/net/attach/`) stamps every event
//! with `host::mono_ns()` at the edge.
//!
//! # Events the client writes (source `client`, `at_ns` = `mono_ns` = client CLOCK_MONOTONIC)
//!
//! Flow ids: `http-0001…` (HTTP keep-alive connections), `tcp-0001…` (held TCP connections),
//! `ws-0001…` (held WebSocket connections, schema 2.0), `dial-000001…` (new-connection prober
//! attempts). `seq` is the connection generation on
//! connection events (1 = first connection of the flow, 2 = after the first reopen, …) and the
//! request number (from 1) on `attach_request`. New optional `EventLine` fields (format stays
//! v1): `result` (the closed result name below), `status` (HTTP status), `latency_ns`.
//!
//! | event | flow_id | fields | meaning |
//! | --- | --- | --- | --- |
//! | `attach_window_started` | – | detail `http HOST:PORT` | the observation window opens |
//! | `attach_window_ended` | – | detail `duration` or `interrupted` | the window closes |
//! | `attach_conn_opened` | http/tcp/ws | seq = 1 | first connection of the flow established |
//! | `attach_conn_reopened` | http/ws | seq ≥ 2 | a new connection after a graceful close or a failure |
//! | `attach_conn_open_failed` | http/tcp/ws | seq, result, errno, status | the dial or WebSocket handshake failed (refused, reset, timeout, error, a status other than 101); on HTTP arms the request it was for is recorded failed beside it and no connection is counted |
//! | `attach_conn_closed_graceful` | http/tcp/ws/h2/grpc | seq, result `connection-close` / `goaway` / `ws-close` (announced first) or `fin-idle` / `fin` (a bare FIN, which a dying process's kernel sends too) (close_code, detail = reason) | the server ended the connection without a break; the report's `close` says whether it announced it (schema 3.3) |
//! | `attach_conn_severed` | http/tcp/ws | seq, result `reset` / `timeout` / `truncated` / `error` / `ws-close-abnormal` (close_code, detail = reason) / `ws-no-close-frame` / `ws-pong-missing`, errno | the connection broke |
//! | `attach_conn_observation_end` | http/tcp/ws | seq | still open when the window closed |
//! | `attach_request` | http | seq, result, status, latency_ns, instance, errno | one request: `ok` or a failure mechanism |
//! | `attach_dial` | dial | result, status, latency_ns, instance, errno | one prober attempt: `served` or a failure mechanism |
//!
//! Request / dial results: `ok` (requests) / `served` (dials), and the failure mechanisms
//! `reset`, `timeout`, `status-5xx`, `unexpected-status`, `truncated`, `refused`, `error`, and
//! on WebSocket connections `ws-close-abnormal`, `ws-no-close-frame`, `ws-pong-missing`. On
//! WebSocket arms, as on TCP ones, the held connections are the observations: an opened one is
//! a success, a failed open or a severed one a failure, and no requests are counted; a
//! handshake answered other than 101 fails with its status's mechanism and the status.
//! `instance` is the endpoint that answered when the response reveals it (`X-Served-By`,
//! `X-Pod-Name`, else `Server`, as sent), absent otherwise.
//!
//! # Timeline events read for attribution (source `k8s`, `instance` = pod name)
//!
//! `pod_deletion_timestamp_set` (deletion requested; the line's `at_ns` is taken as the
//! request time, so the watcher should place it at deletionTimestamp − grace),
//! `endpointslice_ready_false` / `endpointslice_serving_false` (first of either: not ready),
//! `endpointslice_endpoint_removed`, `container_terminated`. Each pod with at least one of them
//! is a lane. A lane whose deletion was seen before the trigger (t0) is context
//! (`context_pods`: an earlier rollout still terminating), never judged; `endpointslice_endpoint_added`
//! with `ready` and `endpointslice_ready_true` say whether a lane's endpoint was ever seen ready. Phases: `before-termination`, `terminating-ready`, `terminating-not-ready`,
//! `after-endpoint-removal`, `after-exit`, and `unattributed` (pod null) when a failure cannot
//! be tied to one pod.
//!
//! # Entry points
//!
//! ```text
//! pub fn attach_section(lines: &[EventLine], config: &AttachConfig, t0_ns: i64) -> AttachReport
//! pub fn lanes(lines: &[EventLine]) -> Vec<PodLane>
//! pub fn split(lanes: Vec<PodLane>, t0_ns: i64) -> (Vec<PodLane>, Vec<PodLane>)
//! pub fn attribute(lanes: &[PodLane], t_ns: i64, instance: Option<&str>) -> Attribution
//! ```
//!
//! `lines` are the trial's lines after relayed client times were placed (as `assemble` has
//! them); `t0_ns` is the trigger (times in the section are ms relative to it, like the
//! timeline). `TrialConfig.attach: Option<AttachConfig>` (schema 1.2) says a trial is an attach
//! trial; `assemble::build_report` then fills `trial.attach` and holds no probe flows.

mod build;
#[cfg(test)]
mod close_tests;
#[cfg(test)]
pub(crate) mod context_tests;
pub use crate::data_plane;
#[cfg(test)]
mod data_plane_tests;
mod fold;
pub mod judged;
pub mod lanes;
pub mod names;
pub mod ready;
pub mod render;
pub mod section;
#[cfg(test)]
pub(crate) mod tests;
pub mod watch;
#[cfg(test)]
mod watch_tests;
pub mod window;
#[cfg(test)]
mod ws_tests;

pub use build::attach_section;
// The dial settings are the plan's; the attach report is built against them.
pub use crate::plan::attach::config::{AttachConfig, AttachGrpc, AttachProtocol, AttachTls};
pub use lanes::{PodLane, attribute, lanes, split};
pub use section::{AttachReport, Attribution, FailureMechanism, Phase};
