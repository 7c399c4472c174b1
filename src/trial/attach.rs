//! The observation of an attached workload: the client pod's held connections and prober are
//! established, the steady state is held, the trigger is issued at t=0, and the window stays
//! open until the platform says the disruption is over (rollout complete, terminated pods gone,
//! replacements ready), plus the post-terminal grace, so that reconnecting flows, which never
//! "end", are observed through the whole disruption and no longer.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::lost::{lost_window, or_lost};
use super::{
    Phase, TrialError, client_config, close_window, issue_trigger, or_interrupt, preflight,
};
use crate::console;
use crate::evidence::event::EventName;
use crate::evidence::plan::TrialConfig;
use crate::platform::flows::AttachProgress;
use crate::platform::{Flows, Platform, Target};
use crate::recorder::Recorder;

/// How long the attach client may take to open every held connection and serve one dial.
const ESTABLISH_LIMIT: Duration = Duration::from_secs(30);

pub(super) async fn observe<P: Platform>(
    platform: &mut P,
    cfg: &TrialConfig,
    target: Target,
    rec: &Recorder,
    interrupt: &CancellationToken,
    client_slot: &mut Option<Flows>,
) -> Result<Phase, TrialError> {
    if established(platform, cfg, target, rec, interrupt, client_slot)
        .await?
        .is_none()
    {
        return Ok(Phase::Interrupted("preflight"));
    }
    if settle(cfg, rec, interrupt).await.is_none() {
        return Ok(Phase::Interrupted("settle"));
    }
    let t0 = Instant::now();
    if !issue_trigger(
        platform,
        cfg,
        rec,
        client_slot,
        format!("trigger={}", cfg.trigger),
        "the trigger was refused; nothing terminated",
    )
    .await?
    {
        return Ok(Phase::Done);
    }
    watch_disruption(platform, cfg, rec, interrupt, client_slot, t0).await
}

/// Starts the attach client and waits until its held connections are open and (with a dial
/// rate) one dial was served: the attach-flows-established check. `Ok(None)`: interrupted.
async fn established<P: Platform>(
    platform: &mut P,
    cfg: &TrialConfig,
    target: Target,
    rec: &Recorder,
    interrupt: &CancellationToken,
    client_slot: &mut Option<Flows>,
) -> Result<Option<()>, TrialError> {
    let dial_rate = cfg
        .kubernetes
        .as_ref()
        .and_then(|k| k.attach.as_ref())
        .map_or(0, |a| a.dial_rate);
    let ccfg = client_config(cfg, target.host, target.tcp_port, target.udp_port);
    let Some(client) = or_interrupt(interrupt, platform.start_flows(ccfg, rec)).await else {
        return Ok(None);
    };
    let client = client?;
    let counts = client.attach.clone();
    *client_slot = Some(client);
    let Some(mut counts) = counts else {
        return Err(preflight::ATTACH_FLOWS_ESTABLISHED
            .fail("the platform started no attach client")
            .into_trial());
    };

    held(cfg, &mut counts, dial_rate, rec, interrupt).await
}

/// Waits until every held connection is open and (with a dial rate) one dial was served.
async fn held(
    cfg: &TrialConfig,
    counts: &mut watch::Receiver<AttachProgress>,
    dial_rate: u32,
    rec: &Recorder,
    interrupt: &CancellationToken,
) -> Result<Option<()>, TrialError> {
    let t = Instant::now();
    let want = cfg.tcp_flows;
    // In a block of its own, so the channel's read guard is released before it is read again.
    let in_time = {
        let established = or_interrupt(
            interrupt,
            tokio::time::timeout(
                ESTABLISH_LIMIT,
                counts.wait_for(|a| {
                    a.open_failed > 0 || (a.opened >= want && (dial_rate == 0 || a.served > 0))
                }),
            ),
        )
        .await;
        match established {
            None => return Ok(None),
            Some(r) => r.is_ok_and(|r| r.is_ok()),
        }
    };
    let a = counts.borrow().clone();
    if !in_time || a.open_failed > 0 {
        console::failure!(
            "{}",
            preflight::line(&preflight::ATTACH_FLOWS_ESTABLISHED, false, t.elapsed())
        );
        return Err(preflight::ATTACH_FLOWS_ESTABLISHED
            .fail(format!(
                "after {}s: {} of {want} held connections opened ({} failed to open), {} dials served, {} failed{}",
                t.elapsed().as_secs(),
                a.opened,
                a.open_failed,
                a.served,
                a.dial_failed,
                a.last_dial_failure
                    .as_deref()
                    .map(|f| format!(" (the last: {f})"))
                    .unwrap_or_default()
            ))
            .into_trial());
    }
    console::progress!(
        "{}",
        preflight::line(&preflight::ATTACH_FLOWS_ESTABLISHED, true, t.elapsed())
    );
    rec.orchestrator(
        EventName::PreflightPassed,
        format!(
            "{} held connections open, {} of {} dials served so far; the target's pods and endpoints watched",
            a.opened,
            a.served,
            a.served + a.dial_failed
        ),
    );
    Ok(Some(()))
}

/// Holds the steady state for the settle period; `None`: interrupted.
async fn settle(cfg: &TrialConfig, rec: &Recorder, interrupt: &CancellationToken) -> Option<()> {
    let settle = Duration::from_secs(u64::from(cfg.settle_seconds));
    or_interrupt(interrupt, tokio::time::sleep(settle)).await?;
    rec.orchestrator(
        EventName::SettleComplete,
        format!("held the steady state for {}s", cfg.settle_seconds),
    );

    Some(())
}

/// After the trigger: the window stays open until the platform says the disruption is over,
/// plus the post-terminal grace, and then closes.
async fn watch_disruption<P: Platform>(
    platform: &mut P,
    cfg: &TrialConfig,
    rec: &Recorder,
    interrupt: &CancellationToken,
    client_slot: &Option<Flows>,
    t0: Instant,
) -> Result<Phase, TrialError> {
    let observe = Duration::from_secs(u64::from(cfg.observe_timeout_seconds));
    match or_interrupt(interrupt, or_lost(client_slot, platform.settled(observe))).await {
        None => return Ok(Phase::Interrupted("observation")),
        Some(Err(why)) => return Ok(lost_window(client_slot, rec, why).await),
        Some(Ok(())) => {}
    }
    console::progress!(
        "disruption over at t+{}ms; watching {}s more",
        t0.elapsed().as_millis(),
        cfg.post_terminal_grace_seconds
    );
    let post = Duration::from_secs(u64::from(cfg.post_terminal_grace_seconds));
    match or_interrupt(interrupt, or_lost(client_slot, tokio::time::sleep(post))).await {
        None => return Ok(Phase::Interrupted("observation")),
        Some(Err(why)) => return Ok(lost_window(client_slot, rec, why).await),
        Some(Ok(())) => {}
    }
    let detail = format!(
        "the disruption settled (or the {}s window ran out), then {}s of post-disruption watching",
        cfg.observe_timeout_seconds, cfg.post_terminal_grace_seconds
    );
    close_window(client_slot, rec, detail).await;
    Ok(Phase::Done)
}
