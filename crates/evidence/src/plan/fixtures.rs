//! A plan input with every flag at its default, for the plan's own tests and the platforms'.

use super::{DrainBehavior, PlanInput, Platform};
use crate::trigger::Trigger;

/// The default flags of `drainwatch run --platform local`, as a plan input.
pub fn input() -> PlanInput {
    PlanInput {
        platform: Platform::Local,
        drain_behavior: Some(DrainBehavior::Drain),
        trigger: Trigger::Sigterm,
        grace_period_seconds: 30,
        drain_max_seconds: 0,
        exit_now_force_rst: true,
        tcp_flows: 10,
        udp_flows: 10,
        target_host: "127.0.0.1".into(),
        tcp_port: 7001,
        udp_port: 7002,
        ready_port: 7003,
        settle_seconds: 10,
        observe_timeout_seconds: 0,
        flow_timeout_ms: 10_000,
        interval_ms: 500,
        udp_silence_datagrams: 6,
        post_terminal_grace_seconds: 5,
        repeat: 1,
        namespace: None,
        kubernetes: None,
        clients: 1,
        attach: None,
    }
}
