//! One probe trial's measurement, in its phases: deploy and preflight the workload, start the
//! flows and see them dialled and carrying data, hold the steady state, trigger at t=0 and
//! observe until every flow is terminal or the window closes.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::lost::{lost_window, or_lost};
use super::{Phase, TrialError, attach, client_config, close_window, issue_trigger, or_interrupt};
use crate::console;
use crate::evidence::event::EventName;
use crate::evidence::plan::TrialConfig;
use crate::net::progress::{Progress, Snapshot};
use crate::platform::{Flows, Platform, Target};
use crate::preflight;
use crate::recorder::Recorder;

/// `Ok(None)`: a signal interrupted the phase.
type Step<T> = Result<Option<T>, TrialError>;

pub(super) async fn measure<P: Platform>(
    platform: &mut P,
    cfg: &TrialConfig,
    id: &str,
    rec: &Recorder,
    interrupt: &CancellationToken,
    client_slot: &mut Option<Flows>,
) -> Result<Phase, TrialError> {
    let Some(target) = or_interrupt(interrupt, platform.deploy(cfg, id, rec)).await else {
        return Ok(Phase::Interrupted("deploy"));
    };
    let target = target?;
    let Some(pf) = or_interrupt(interrupt, platform.preflight(cfg, rec)).await else {
        return Ok(Phase::Interrupted("preflight"));
    };
    pf?;
    if cfg.kubernetes.as_ref().is_some_and(|k| k.attach.is_some()) {
        return attach::observe(platform, cfg, target, rec, interrupt, client_slot).await;
    }

    let Some(progress) = start_flows(platform, cfg, &target, rec, interrupt, client_slot).await?
    else {
        return Ok(Phase::Interrupted("preflight"));
    };
    if carrying(&progress, interrupt).await?.is_none() {
        return Ok(Phase::Interrupted("preflight"));
    }
    let n_tcp = cfg.tcp_flows as usize;
    rec.orchestrator(
        EventName::PreflightPassed,
        format!(
            "{n_tcp} tcp flows and {} udp flows established; probe ready and its events delivering",
            cfg.udp_flows
        ),
    );
    if settle(cfg, &progress, rec, interrupt, client_slot)
        .await?
        .is_none()
    {
        return Ok(Phase::Interrupted("settle"));
    }

    let t0 = Instant::now();
    if !issue_trigger(
        platform,
        cfg,
        rec,
        client_slot,
        format!("trigger={} target={id}", cfg.trigger),
        "the trigger was refused; flows still alive are recorded as survived-observation-window",
    )
    .await?
    {
        return Ok(Phase::Done);
    }
    observe(platform, cfg, &progress, rec, interrupt, client_slot, t0).await
}

/// Starts the flows and waits until none is still dialling (the flows-dialed check).
async fn start_flows<P: Platform>(
    platform: &mut P,
    cfg: &TrialConfig,
    target: &Target,
    rec: &Recorder,
    interrupt: &CancellationToken,
    client_slot: &mut Option<Flows>,
) -> Step<Arc<Progress>> {
    let ccfg = client_config(cfg, target.host.clone(), target.tcp_port, target.udp_port);
    let dial_limit = ccfg.dial_window + Duration::from_secs(5);
    let Some(client) = or_interrupt(interrupt, platform.start_flows(ccfg, rec)).await else {
        return Ok(None);
    };
    let client = client?;
    let progress = client.progress.clone();
    *client_slot = Some(client);

    let t = Instant::now();
    let Some((snap, ok)) = or_interrupt(
        interrupt,
        progress.wait_until(dial_limit, |s| s.dialing == 0),
    )
    .await
    else {
        return Ok(None);
    };
    if !ok || !snap.dial_failed.is_empty() {
        console::failure!(
            "{}",
            preflight::line(&preflight::FLOWS_DIALED, false, t.elapsed())
        );
        let why = if snap.dial_failed.is_empty() {
            format!("{} flows still dialling after {dial_limit:?}", snap.dialing)
        } else {
            format!("flows never connected: {:?}", snap.dial_failed)
        };
        return Err(preflight::FLOWS_DIALED.fail(why).into_trial());
    }
    console::progress!(
        "{}",
        preflight::line(&preflight::FLOWS_DIALED, true, t.elapsed())
    );
    Ok(Some(progress))
}

/// The tcp-established and udp-replying checks: every flow of each protocol carries data.
async fn carrying(progress: &Progress, interrupt: &CancellationToken) -> Step<()> {
    for (check, proto) in [
        (preflight::TCP_ESTABLISHED, "tcp-"),
        (preflight::UDP_REPLYING, "udp-"),
    ] {
        let t = Instant::now();
        let silent_of = |s: &Snapshot| s.silent.iter().filter(|i| i.starts_with(proto)).count();
        // Each check answers for its own protocol: a UDP flow that ends fails the UDP check.
        let ended_of = |s: &Snapshot| match proto {
            "tcp-" => s.terminal_tcp,
            _ => s.terminal - s.terminal_tcp,
        };
        let Some((snap, ok)) = or_interrupt(
            interrupt,
            progress.wait_until(Duration::from_secs(30), |s| {
                silent_of(s) == 0 && ended_of(s) == 0
            }),
        )
        .await
        else {
            return Ok(None);
        };
        if !ok {
            console::failure!("{}", preflight::line(&check, false, t.elapsed()));
            let silent: Vec<_> = snap
                .silent
                .iter()
                .filter(|i| i.starts_with(proto))
                .collect();
            let why = if ended_of(&snap) > 0 {
                ended_before_start(&progress.ended(proto))
            } else {
                format!(
                    "{} flows never carried data within 30s: {silent:?}",
                    proto.trim_end_matches('-')
                )
            };
            return Err(check.fail(why).into_trial());
        }
        console::progress!("{}", preflight::line(&check, true, t.elapsed()));
    }
    Ok(Some(()))
}

/// Holds the steady state for the settle period; a flow that ends in it fails the trial, and
/// so does the client lost in it (named, not blamed on the workload).
async fn settle(
    cfg: &TrialConfig,
    progress: &Progress,
    rec: &Recorder,
    interrupt: &CancellationToken,
    client_slot: &Option<Flows>,
) -> Step<()> {
    let n_tcp = cfg.tcp_flows as usize;
    let settle = Duration::from_secs(u64::from(cfg.settle_seconds));
    let Some((snap, ended)) =
        or_interrupt(interrupt, progress.wait_until(settle, |s| s.terminal > 0)).await
    else {
        return Ok(None);
    };
    let mut lost = client_slot.as_ref().and_then(Flows::lost_now);
    if let (true, None, Some(c)) = (ended, &lost, client_slot) {
        // A deleted client ends its flows as it stops, a moment before the pod watch says
        // why: the watch gets 2 s to tell that from flows the workload ended.
        lost = tokio::time::timeout(Duration::from_secs(2), c.lost())
            .await
            .ok();
    }
    if ended || lost.is_some() {
        let why = match lost {
            Some(why) => format!("the client was lost before the trigger was issued: {why}"),
            None => format!(
                "{} flows ended during steady state before the trigger was issued",
                snap.terminal
            ),
        };
        return Err(preflight::Check {
            name: "steady-state-held",
            invariant: "no flow ends during the settle period before the trigger",
            hint: "the probe's stderr and events.jsonl: something other than the trigger is ending flows",
        }
        .fail(why)
        .into_trial());
    }
    rec.orchestrator(
        EventName::SettleComplete,
        format!(
            "held {n_tcp} tcp and {} udp flows for {}s with no flow terminating",
            cfg.udp_flows, cfg.settle_seconds
        ),
    );
    Ok(Some(()))
}

/// After the trigger: waits until every flow is terminal (then the post-terminal grace) or
/// the observation window ends, and closes the window.
async fn observe<P: Platform>(
    platform: &mut P,
    cfg: &TrialConfig,
    progress: &Progress,
    rec: &Recorder,
    interrupt: &CancellationToken,
    client_slot: &Option<Flows>,
    t0: Instant,
) -> Result<Phase, TrialError> {
    let observe = Duration::from_secs(u64::from(cfg.observe_timeout_seconds));
    // A client lost under the trial (its pod deleted) ends the observation at once: nothing
    // it had not seen end can be observed any more.
    let Some(waited) = or_interrupt(
        interrupt,
        or_lost(
            client_slot,
            progress.wait_until(observe, |s| s.terminal == s.total),
        ),
    )
    .await
    else {
        return Ok(Phase::Interrupted("observation"));
    };
    let (snap, all) = match waited {
        Ok(w) => w,
        Err(why) => return Ok(lost_window(client_slot, rec, why).await),
    };
    if all {
        console::progress!("all flows terminal at t+{}ms", t0.elapsed().as_millis());
        rec.orchestrator(
            EventName::AllFlowsTerminal,
            format!(
                "all {} flows reached a terminal event; continuing to watch for up to {}s to catch trailing events",
                snap.total, cfg.post_terminal_grace_seconds
            ),
        );
        let post = Duration::from_secs(u64::from(cfg.post_terminal_grace_seconds));
        match or_interrupt(interrupt, or_lost(client_slot, platform.settled(post))).await {
            None => return Ok(Phase::Interrupted("observation")),
            Some(Err(why)) => return Ok(lost_window(client_slot, rec, why).await),
            Some(Ok(())) => {}
        }
    } else {
        console::progress!(
            "observation window closed with {} flows still alive",
            snap.total - snap.terminal
        );
    }
    // Lost in the same instant as the last wait ended (the flows' ends it wrote as its pod
    // was deleted can arrive before the pod watch says so): still lost, not a window closed.
    if let Some(why) = client_slot.as_ref().and_then(Flows::lost_now) {
        return Ok(lost_window(client_slot, rec, why).await);
    }
    let detail = format!(
        "window={}s; flows still alive at this instant are recorded as survived-observation-window",
        cfg.observe_timeout_seconds
    );
    close_window(client_slot, rec, detail).await;
    Ok(Phase::Done)
}

/// How many flows ended before t=0, by the line that ended them, and the first few ids.
fn ended_before_start(ended: &[(String, Option<String>)]) -> String {
    const NAMED: usize = 5;
    let mut by: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for (_, e) in ended {
        *by.entry(e.as_deref().unwrap_or("no line")).or_default() += 1;
    }
    let by: Vec<String> = by.iter().map(|(e, n)| format!("{n} by {e}")).collect();
    let ids: Vec<&str> = ended
        .iter()
        .take(NAMED)
        .map(|(id, _)| id.as_str())
        .collect();
    let more = ended.len().saturating_sub(NAMED);
    format!(
        "{} flow{} ended before t=0 ({}): {}{}",
        ended.len(),
        if ended.len() == 1 { "" } else { "s" },
        by.join(", "),
        ids.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_flows_are_counted_by_what_ended_them_and_the_first_are_named() {
        let ended: Vec<_> = (1..=7)
            .map(|i| {
                let by = if i <= 5 {
                    EventName::FlowReadTimeout
                } else {
                    EventName::FlowEof
                };
                (format!("tcp-{i:04}"), Some(by.as_str().to_string()))
            })
            .collect();
        assert_eq!(
            ended_before_start(&ended),
            "7 flows ended before t=0 (2 by flow_eof, 5 by flow_read_timeout): tcp-0001, tcp-0002, tcp-0003, tcp-0004, tcp-0005 and 2 more"
        );
        let one = [(
            "udp-0003".to_string(),
            Some("flow_socket_error ECONNREFUSED".to_string()),
        )];
        assert_eq!(
            ended_before_start(&one),
            "1 flow ended before t=0 (1 by flow_socket_error ECONNREFUSED): udp-0003"
        );
    }
}
