//! Events in, report out: the one function that turns a trial's event lines into its report.
//!
//! A pure function of the lines: the live run and `drainwatch report --events` call it with the
//! same lines and must produce the same bytes.

mod clocks;
mod flows;
mod summary;
mod terminated;

use std::collections::BTreeSet;

use super::attach::attach_section;
use super::classify::Outcome;
use super::clock::{RelayedClock, place_relayed_client};
use super::event::{EventLine, Source, TrialHeader};
use super::findings::findings;
use super::plan::MAX_FLOWS_PER_PROTOCOL;
use super::report::{Report, SCHEMA_VERSION, Summary, TimelineEntry, Trial, TrialStatus};
use super::shard::Losses;
use super::timeline;
use crate::event::EventName;
use clocks::ProbeClock;

/// Why a set of event lines cannot become a report.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AssembleError {
    /// The header line that carries config and environment is missing.
    #[error(
        "the events hold no trial_started line with a header: the trial's configuration and environment are unknown"
    )]
    NoHeader,
    /// The header claims more flows of one protocol than a plan allows: these events were not
    /// written by a drainwatch run as they stand, and listing every claimed flow up front would
    /// allocate without bound.
    #[error(
        "the trial header's {field} is {count}, above the {max} flows of one protocol a plan allows: the events were altered or are not drainwatch's",
        max = MAX_FLOWS_PER_PROTOCOL
    )]
    FlowsAboveCap {
        /// `tcp_flows` or `udp_flows`.
        field: &'static str,
        /// The count claimed.
        count: u32,
    },
}

/// Probe events that belong on the timeline; heartbeats, accepts and UDP stats do not.
pub const PROBE_TIMELINE_EVENTS: &[EventName] = &[
    EventName::SigtermReceived,
    EventName::ProbeStarted,
    EventName::Listening,
    EventName::DrainStarted,
    EventName::DrainComplete,
    EventName::DrainDeadlineReached,
    EventName::StoppedAccepting,
    EventName::ReadyzNow503,
    EventName::SigtermIgnored,
    EventName::TcpFlowResetForced,
    EventName::TcpFlowOpenAtExit,
    EventName::TcpFlowClosed,
    EventName::Exiting,
    EventName::Fatal,
];

/// Builds the report of one trial from its event lines.
pub fn build_report(lines: &[EventLine]) -> Result<Report, AssembleError> {
    let boot = lines
        .iter()
        .find_map(|l| l.header.as_ref().map(|h| h.boot_id.clone()))
        .ok_or(AssembleError::NoHeader)?;
    // Client lines relayed from a client pod are placed on our timebase before anything reads
    // their times; events.jsonl keeps them as received.
    let mut placed = lines.to_vec();
    let relayed = place_relayed_client(&mut placed, &boot);
    assemble(&placed, relayed)
}

/// Where the trial's times are measured from: the trigger, else the header line.
struct Anchor<'a> {
    header: &'a TrialHeader,
    trigger: Option<&'a EventLine>,
    t0: i64,
    trigger_wall: Option<i64>,
}

fn anchor(lines: &[EventLine]) -> Result<Anchor<'_>, AssembleError> {
    let (header_line, header) = lines
        .iter()
        .find_map(|l| match (&l.header, &l.event) {
            (Some(h), EventName::TrialStarted) => Some((l, h.as_ref())),
            _ => None,
        })
        .ok_or(AssembleError::NoHeader)?;
    let c = &header.config;
    for (field, count) in [("tcp_flows", c.tcp_flows), ("udp_flows", c.udp_flows)] {
        if count > MAX_FLOWS_PER_PROTOCOL {
            return Err(AssembleError::FlowsAboveCap { field, count });
        }
    }
    let trigger = lines
        .iter()
        .find(|l| l.source == Some(Source::Orchestrator) && l.event == EventName::TriggerIssued);
    let t0 = trigger
        .and_then(|l| l.at_ns)
        .or(header_line.at_ns)
        .unwrap_or(0);
    let trigger_wall = trigger
        .and_then(|l| l.wall.as_deref())
        .and_then(timeline::parse_wall_ns);
    Ok(Anchor {
        header,
        trigger,
        t0,
        trigger_wall,
    })
}

fn assemble(lines: &[EventLine], relayed: Option<RelayedClock>) -> Result<Report, AssembleError> {
    let Anchor {
        header,
        trigger,
        t0,
        trigger_wall,
    } = anchor(lines)?;
    let flows = flows::fold(lines, &header.config, t0);
    let pc = clocks::probe_clock(lines, header, trigger_wall, relayed.as_ref());
    let (mut entries, unparseable) = timeline_entries(lines, &pc, t0);
    // Per clock domain: a flow's rows are approximate when its lines came from a client shard
    // on another kernel, whatever the other shards' clocks were.
    let inexact: BTreeSet<&str> = lines
        .iter()
        .filter(|l| relayed.as_ref().is_some_and(|c| c.approximate(l)))
        .filter_map(|l| l.flow_id.as_deref())
        .collect();
    let c = &header.config;
    let lost = Losses::of(lines, c.tcp_flows, c.udp_flows, c.clients);
    let flow_reports = flows::reports(&flows, t0, &inexact, &lost, &mut entries);
    let entries = timeline::sorted(entries);
    let termination_settings = lines
        .iter()
        .filter(|l| l.event == EventName::TerminationSettingsRecorded)
        .find_map(|l| l.termination_settings.as_deref().cloned());
    let (mut status, mut status_detail) = status_of(lines, header.streamed);
    if status == TrialStatus::Completed {
        if let Some(why) = terminated::not_terminated(
            lines,
            t0,
            header.config.trigger,
            trigger.is_some(),
            termination_settings.as_ref(),
        ) {
            (status, status_detail) = (TrialStatus::NotTerminated, Some(why));
        }
    }
    let inputs = summary::Inputs {
        lines,
        triggered: trigger.is_some(),
        unparseable,
    };
    let summary = summary::summarise(&entries, &flow_reports, &inputs);
    let attach = header.config.attach.as_ref();
    let mut report = Report {
        schema_version: SCHEMA_VERSION.into(),
        drainwatch_version: header.drainwatch_version.clone(),
        git_commit: header.git_commit.clone(),
        environment: header.environment.clone(),
        trial: Trial {
            id: header.trial_id.clone(),
            status,
            status_detail,
            config: header.config.clone(),
            timeline: entries,
            flows: flow_reports,
            summary,
            clock: clocks::report(&pc, relayed.as_ref(), trigger, trigger_wall),
            clock_note: clocks::CLOCK_NOTE.into(),
            probe_clock_offset_note: clocks::probe_note(&pc),
            attach: attach.map(|cfg| attach_section(lines, &lost, cfg, t0)),
            termination_settings,
        },
        findings: None,
    };
    // Computed from the report without its findings: a replay yields the same findings.
    report.findings = Some(findings(&report));
    Ok(report)
}

/// The orchestrator's, Kubernetes' and the probe's timeline rows, each at its placed time,
/// and how many probe lines could not be parsed.
fn timeline_entries(
    lines: &[EventLine],
    pc: &ProbeClock,
    t0: i64,
) -> (Vec<(i64, TimelineEntry)>, u32) {
    let mut entries: Vec<(i64, TimelineEntry)> = Vec::new();
    let mut unparseable = 0u32;
    for l in lines {
        match l.source {
            Some(Source::Orchestrator | Source::K8s) if l.event != EventName::TrialStarted => {
                let at = l.at_ns.unwrap_or(t0);
                entries.push((
                    at,
                    TimelineEntry {
                        t_ms: (at - t0) / 1_000_000,
                        source: l.source.unwrap_or(Source::Orchestrator),
                        event: l.event.clone(),
                        flow_id: l.flow_id.clone(),
                        detail: l.detail.clone(),
                        approximate: false,
                        // On a k8s line `instance` is the pod the change is about (on a
                        // probe's, the probe's own instance: not copied there).
                        pod: (l.source == Some(Source::K8s))
                            .then(|| l.instance.clone())
                            .flatten(),
                        ready: (l.source == Some(Source::K8s)).then_some(l.ready).flatten(),
                    },
                ))
            }
            Some(Source::Probe) if l.event == EventName::UnparseableLine => unparseable += 1,
            Some(Source::Probe) if PROBE_TIMELINE_EVENTS.contains(&l.event) => {
                let (placed, approximate) = pc.place(l, t0);
                let detail = match (&l.detail, &l.errno) {
                    (Some(d), Some(e)) => Some(format!("{d} errno={e}")),
                    (None, Some(e)) => Some(format!("errno={e}")),
                    (d, None) => d.clone(),
                };
                entries.push((
                    placed,
                    TimelineEntry {
                        t_ms: (placed - t0) / 1_000_000,
                        source: Source::Probe,
                        event: l.event.clone(),
                        flow_id: l.flow_id.clone(),
                        detail,
                        approximate,
                        pod: None,
                        ready: None,
                    },
                ));
            }
            _ => {}
        }
    }
    (entries, unparseable)
}

/// The status detail of a streamed recording that has no `trial_ended` line.
pub const CUT_OFF: &str = "the run ended without its end events (no trial_ended line): the orchestrator was killed or events.jsonl could not be written before the trial finished; the events recorded until then are kept";

/// How far the trial got. A streamed recording (`header.streamed`) that lacks its closing
/// `trial_ended` line was cut off, whatever it says before: aborted, and why.
fn status_of(lines: &[EventLine], streamed: bool) -> (TrialStatus, Option<String>) {
    let ours = || {
        lines
            .iter()
            .filter(|l| l.source == Some(Source::Orchestrator))
    };
    let aborted = ours().find(|l| l.event == EventName::TrialAborted);
    if streamed && !ours().any(|l| l.event == EventName::TrialEnded) {
        let detail = match aborted.and_then(|l| l.detail.as_deref()) {
            Some(d) => format!("{CUT_OFF}; before that: {d}"),
            None => CUT_OFF.to_string(),
        };
        return (TrialStatus::Aborted, Some(detail));
    }
    for l in ours() {
        match l.event {
            EventName::TrialAborted => return (TrialStatus::Aborted, l.detail.clone()),
            EventName::TrialBlockedByPdb => return (TrialStatus::BlockedByPdb, l.detail.clone()),
            _ => {}
        }
    }
    (TrialStatus::Completed, None)
}

/// Whether every count adds up: `total` equals the sum of its buckets for both protocols.
pub fn counts_are_consistent(s: &Summary) -> bool {
    [s.tcp, s.udp]
        .iter()
        .all(|c| Outcome::ALL.iter().map(|o| c.get(*o)).sum::<u32>() == c.total)
}

#[cfg(test)]
mod clock_tests;
#[cfg(any(test, feature = "test-fixtures"))]
#[doc(hidden)]
pub mod fixtures;
#[cfg(test)]
pub(crate) mod tests;
