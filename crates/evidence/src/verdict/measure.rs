//! One threshold against one trial's report: held, missed, or not measured, with the number
//! that decided it. A missing report or a value the trial did not measure is never "held".

use crate::attach::section::DialCounts;
use crate::attach::{AttachReport, FailureMechanism};
use crate::classify::{Mechanism, Outcome};
use crate::event::EventName;
use crate::flow::Proto;
use crate::policy::threshold::{Amount, Counted, Interval, Op, Scope, Threshold};
use crate::report::{FlowReport, Report, TrialStatus};

use super::check::{Check, CheckState, decide, none_bad, not_measured};
use super::pods::{self, LaneTime};

/// Events that mean the endpoint left the ready set.
const ENDPOINT_NOT_READY: [EventName; 2] = [
    EventName::EndpointsliceReadyFalse,
    EventName::EndpointsliceEndpointRemoved,
];
/// The event that means the workload's container or process exited.
const CONTAINER_EXIT: EventName = EventName::ContainerTerminated;

/// Checks `t` against one trial; `report` is `None` when the trial left no readable report.
pub fn check(t: &Threshold, trial_id: &str, report: Option<&Report>) -> Check {
    let Some(r) = report else {
        return not_measured(trial_id, "no report: the trial produced no evidence".into());
    };
    match r.trial.status {
        TrialStatus::Completed => {}
        TrialStatus::Aborted => {
            return not_measured(
                trial_id,
                "the trial was aborted, so its evidence is partial".into(),
            );
        }
        TrialStatus::BlockedByPdb => {
            return not_measured(
                trial_id,
                "a PodDisruptionBudget blocked the eviction, so no termination happened".into(),
            );
        }
        TrialStatus::NotTerminated => {
            return not_measured(
                trial_id,
                r.trial.status_detail.clone().unwrap_or_else(|| {
                    "the trigger terminated no pod of the target, so no shutdown was measured"
                        .into()
                }),
            );
        }
    }
    partly(t, trial_id, r, measure(t, trial_id, r))
}

/// An attach threshold of the "nothing failed" kind cannot be shown while a lost client
/// shard's part of the traffic is unknown: any of it could have failed. A miss in the part that
/// was measured stands; a hold becomes not measured, naming the lost slices and what the rest
/// measured.
fn partly(t: &Threshold, trial_id: &str, r: &Report, c: Check) -> Check {
    let lost = r
        .trial
        .attach
        .as_ref()
        .and_then(|a| a.lost_clients.as_deref())
        .unwrap_or_default();
    let attach_bound = matches!(
        t,
        Threshold::NoRequestFailed
            | Threshold::NoNewConnectionRefused
            | Threshold::NoNewConnectionFailed
            | Threshold::NoWsAbnormalClose
            | Threshold::NoStreamReset
            | Threshold::GoawayBeforeClose
            | Threshold::NoWatchCut
    );
    if lost.is_empty() || !attach_bound || c.state != CheckState::Held {
        return c;
    }
    let slices: Vec<String> = lost
        .iter()
        .map(|l| format!("{} ({})", l.slice, l.why))
        .collect();
    not_measured(
        trial_id,
        format!(
            "partly measured: {} client shard(s) lost before the window closed, their connections, requests and dials from then on unknown: {}; the rest measured {}",
            lost.len(),
            slices.join("; "),
            c.measured.as_deref().unwrap_or("nothing")
        ),
    )
}

/// `t` against a completed trial's evidence, as measured.
fn measure(t: &Threshold, trial_id: &str, r: &Report) -> Check {
    match t {
        Threshold::Count {
            scope,
            counted,
            op,
            amount,
        } => count(t, trial_id, &r.trial.flows, *scope, *counted, *op, *amount),
        Threshold::Interval { interval, max_ms } => time(t, trial_id, r, *interval, *max_ms),
        Threshold::EndpointNotReadyBeforeExit => endpoint_before_exit(trial_id, r),
        Threshold::NoRequestFailed => no_request_failed(trial_id, r),
        Threshold::NoNewConnectionRefused => no_new_connection_refused(trial_id, r),
        Threshold::NoNewConnectionFailed => no_new_connection_failed(trial_id, r),
        Threshold::NoWsAbnormalClose => no_ws_abnormal_close(trial_id, r),
        Threshold::NoStreamReset => super::h2_checks::no_stream_reset(trial_id, r),
        Threshold::GoawayBeforeClose => super::h2_checks::goaway_before_close(trial_id, r),
        Threshold::NoWatchCut => super::h2_checks::no_watch_cut(trial_id, r),
        Threshold::NoIngressHiddenRetry => super::ingress_retries::no_hidden_retry(trial_id, r),
        // Checked once across the arm (`distribution.rs`), never per trial.
        Threshold::Distribution(_) => not_measured(
            trial_id,
            format!("\"{t}\" is checked across the arm's trials, not in one trial"),
        ),
        // Judged once per arm by `baseline`; never against one trial alone.
        Threshold::Baseline { .. } | Threshold::NoRegression => not_measured(
            trial_id,
            "a baseline threshold is judged once per arm, against the baseline run".into(),
        ),
    }
}

fn no_request_failed(trial_id: &str, r: &Report) -> Check {
    let Some(a) = &r.trial.attach else {
        return not_measured(
            trial_id,
            "the trial measured drainwatch's probe, not an attached workload, so it sent no requests".into(),
        );
    };
    let Some(q) = &a.requests else {
        return not_measured(trial_id, format!("a {} arm sends no requests", a.protocol));
    };
    if q.total == 0 {
        return not_measured(trial_id, "no request was recorded".into());
    }
    let by: Vec<String> = q
        .failed_by_mechanism
        .iter()
        .map(|(m, n)| format!("{m} {n}"))
        .collect();
    let measured = if by.is_empty() {
        format!("{} of {} requests failed", q.failed, q.total)
    } else {
        format!(
            "{} of {} requests failed ({})",
            q.failed,
            q.total,
            by.join(", ")
        )
    };
    none_bad(trial_id, q.failed, q.total, measured, "no failed request")
}

/// The prober's counts, or why there are none.
fn dials<'a>(trial_id: &str, r: &'a Report) -> Result<&'a DialCounts, Check> {
    let Some(a) = &r.trial.attach else {
        return Err(not_measured(
            trial_id,
            "the trial measured drainwatch's probe, not an attached workload, so no new connections were probed".into(),
        ));
    };
    a.dials.as_ref().ok_or_else(|| {
        not_measured(
            trial_id,
            "the new-connection prober recorded no attempt (is the dial rate 0?)".into(),
        )
    })
}

/// Refusals only (ECONNREFUSED): a reset or a timed-out dial is `no-new-connection-failed`'s.
fn no_new_connection_refused(trial_id: &str, r: &Report) -> Check {
    let d = match dials(trial_id, r) {
        Ok(d) => d,
        Err(c) => return c,
    };
    let refused = d
        .failed_by_result
        .get(&FailureMechanism::Refused)
        .copied()
        .unwrap_or(0);
    let measured = format!(
        "{refused} of {} new connections refused ({} served, {} failed in all)",
        d.total, d.served, d.failed
    );
    none_bad(
        trial_id,
        refused,
        d.total,
        measured,
        "no refused new connection",
    )
}

/// Every failed dial, whatever stopped it, named per result.
fn no_new_connection_failed(trial_id: &str, r: &Report) -> Check {
    let d = match dials(trial_id, r) {
        Ok(d) => d,
        Err(c) => return c,
    };
    let by: Vec<String> = d
        .failed_by_result
        .iter()
        .map(|(m, n)| format!("{m} {n}"))
        .collect();
    let mut measured = format!("{} of {} new connections failed", d.failed, d.total);
    if !by.is_empty() {
        measured.push_str(&format!(" ({})", by.join(", ")));
    }
    none_bad(
        trial_id,
        d.failed,
        d.total,
        measured,
        "no failed new connection",
    )
}

/// Every held WebSocket connection that ended, ended with a close frame 1000 or 1001 (the
/// report's `graceful_close`); a severed one (another code, no close frame, a reset, a missing
/// pong: RFC 6455's abnormal closure) misses it, named by mechanism.
fn no_ws_abnormal_close(trial_id: &str, r: &Report) -> Check {
    let Some(a) = &r.trial.attach else {
        return not_measured(
            trial_id,
            "the trial measured drainwatch's probe, not an attached workload, so it held no WebSocket connection".into(),
        );
    };
    if a.protocol != crate::attach::AttachProtocol::Websocket {
        return not_measured(
            trial_id,
            format!("a {} arm holds no WebSocket connection", a.protocol),
        );
    }
    let c = &a.connections;
    // A reopen that failed (refused, reset, a handshake not answered 101) is a connection the
    // client lost as surely as a severed one.
    let bad = a.connections_lost();
    let failed_opens = bad - c.severed;
    let ended = c.graceful_close + bad + c.survived_observation_window;
    if ended == 0 {
        return not_measured(trial_id, "no WebSocket connection was established".into());
    }
    let by: Vec<String> = c
        .severed_by_mechanism
        .iter()
        .map(|(m, n)| format!("{m} {n}"))
        .collect();
    let mut measured = format!(
        "{} of {ended} WebSocket connections ended abnormally",
        c.severed
    );
    if !by.is_empty() {
        measured.push_str(&format!(" ({})", by.join(", ")));
    }
    if failed_opens > 0 {
        measured.push_str(&format!(", {failed_opens} failed to (re)open"));
    }
    measured.push_str(&format!(
        "; {} closed with 1000/1001, {} open at the window's end",
        c.graceful_close, c.survived_observation_window
    ));
    none_bad(
        trial_id,
        bad,
        ended,
        measured,
        "no WebSocket connection ended without a close frame 1000/1001 or failed to reopen",
    )
}

fn in_scope(f: &FlowReport, scope: Scope) -> bool {
    match scope {
        Scope::All => true,
        Scope::Proto(p) => f.proto == p,
    }
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::All => "",
        Scope::Proto(Proto::Tcp) => "tcp ",
        Scope::Proto(Proto::Udp) => "udp ",
    }
}

fn percent(count: u32, total: u32) -> String {
    if total == 0 {
        return "-".into();
    }
    let tenths = (u64::from(count) * 1000 + u64::from(total) / 2) / u64::from(total);
    if tenths % 10 == 0 {
        format!("{}%", tenths / 10)
    } else {
        format!("{}.{}%", tenths / 10, tenths % 10)
    }
}

fn holds(op: Op, amount: Amount, count: u32, total: u32) -> bool {
    let (lhs, rhs) = match amount {
        Amount::Flows(n) => (u64::from(count), u64::from(n)),
        Amount::PerMille(t) => (u64::from(count) * 1000, u64::from(t) * u64::from(total)),
    };
    match op {
        Op::AtLeast => lhs >= rhs,
        Op::AtMost => lhs <= rhs,
    }
}

fn count(
    t: &Threshold,
    trial_id: &str,
    flows: &[FlowReport],
    scope: Scope,
    counted: Counted,
    op: Op,
    amount: Amount,
) -> Check {
    let scoped: Vec<&FlowReport> = flows.iter().filter(|f| in_scope(f, scope)).collect();
    let sname = scope_name(scope);
    let total = u32::try_from(scoped.len()).unwrap_or(u32::MAX);
    if total == 0 {
        return not_measured(trial_id, format!("the report holds no {sname}flows"));
    }
    let unmeasured = scoped
        .iter()
        .filter(|f| f.outcome == Outcome::NotMeasured)
        .count();
    let unmeasured = u32::try_from(unmeasured).unwrap_or(u32::MAX);
    let counts_not_measured = counted == Counted::Outcome(Outcome::NotMeasured);
    if unmeasured == total && !counts_not_measured {
        return not_measured(
            trial_id,
            format!("none of the {total} {sname}flows was measured"),
        );
    }
    // An upper bound cannot be shown while some flows are unknown: any of them could be the
    // one that breaks it. A lower bound can, since unknown flows never count towards it.
    if op == Op::AtMost && unmeasured > 0 && !counts_not_measured {
        return not_measured(
            trial_id,
            format!(
                "{unmeasured} of {total} {sname}flows were not measured, so \"{t}\" cannot be shown"
            ),
        );
    }
    let n = scoped
        .iter()
        .filter(|f| match counted {
            Counted::Outcome(o) => f.outcome == o,
            Counted::Rehomed => f.rehomed.is_some() || f.mechanism == Mechanism::Rehomed,
        })
        .count();
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    let measured = format!(
        "{n} of {total} {sname}flows {counted} ({})",
        percent(n, total)
    );
    decide(
        trial_id,
        holds(op, amount, n, total),
        measured,
        i64::from(n),
        Some(total),
        format_args!("the threshold is {op} {amount}"),
    )
}

fn interval_value(r: &Report, i: Interval) -> Option<i64> {
    let s = &r.trial.summary;
    match i {
        Interval::TriggerToSigterm => s.trigger_to_sigterm_ms,
        Interval::SigtermToEndpointNotReady => s.sigterm_to_ready_false_ms,
        Interval::SigtermToLastFlowEnd => s.sigterm_to_last_flow_terminal_ms,
        Interval::TriggerToEndpointRemoved => s.trigger_to_endpoint_removed_ms,
        Interval::TriggerToContainerExit => s.trigger_to_container_terminated_ms,
        // Judged from the attach section (`node_lag`, `ingress_lag`) before any single value
        // is read.
        Interval::NodePropagationLag
        | Interval::IngressPropagationLag
        | Interval::IngressLastRequestLag => None,
    }
}

fn time(t: &Threshold, trial_id: &str, r: &Report, i: Interval, max_ms: u64) -> Check {
    let from_attach: Option<fn(&str, &AttachReport, u64) -> Check> = match i {
        Interval::NodePropagationLag => Some(super::node_lag::check),
        Interval::IngressPropagationLag => Some(super::ingress_lag::propagation),
        Interval::IngressLastRequestLag => Some(super::ingress_lag::last_request),
        _ => None,
    };
    if let Some(check) = from_attach {
        return match &r.trial.attach {
            Some(a) => check(trial_id, a, max_ms),
            None => not_measured(
                trial_id,
                "the trial measured drainwatch's probe, whose flows are not routed by dials or an ingress".into(),
            ),
        };
    }
    // An attach trial terminates pods of its own: each is judged on its lane, the worst decides.
    if let Some(a) = &r.trial.attach {
        let lane = match i {
            Interval::TriggerToContainerExit => Some(LaneTime::Exit),
            Interval::TriggerToEndpointRemoved => Some(LaneTime::EndpointRemoved),
            _ => None,
        };
        if let Some(lane) = lane {
            return pods::worst(trial_id, a, lane, i.as_str(), max_ms);
        }
    }
    let Some(v) = interval_value(r, i) else {
        return not_measured(
            trial_id,
            format!(
                "{} was not observed in this trial, so \"{t}\" cannot be shown",
                i.as_str()
            ),
        );
    };
    decide(
        trial_id,
        v <= i64::try_from(max_ms).unwrap_or(i64::MAX),
        format!("{} {v} ms", i.as_str()),
        v,
        None,
        format_args!("the threshold is ≤ {max_ms} ms"),
    )
}

fn endpoint_before_exit(trial_id: &str, r: &Report) -> Check {
    if let Some(a) = &r.trial.attach {
        return pods::endpoint_before_exit(trial_id, a);
    }
    // The timeline is ordered on full-precision times, so positions decide ties that the
    // truncated t_ms cannot.
    let tl = &r.trial.timeline;
    let exit = tl.iter().position(|e| e.event == CONTAINER_EXIT);
    let ready = tl
        .iter()
        .position(|e| ENDPOINT_NOT_READY.contains(&e.event));
    let (exit, ready) = match (exit, ready) {
        (None, _) => {
            return not_measured(trial_id, "the container's exit was not observed".into());
        }
        (Some(_), None) => {
            return not_measured(
                trial_id,
                "no endpoint transition was observed (the local platform has no endpoints)".into(),
            );
        }
        (Some(x), Some(r)) => (x, r),
    };
    let (xt, rt) = (tl[exit].t_ms, tl[ready].t_ms);
    let measured = format!(
        "endpoint left the ready set at {rt} ms ({}), container exited at {xt} ms",
        tl[ready].event
    );
    decide(
        trial_id,
        ready < exit,
        measured,
        xt - rt,
        None,
        format_args!("the endpoint must leave the ready set before the exit"),
    )
}
