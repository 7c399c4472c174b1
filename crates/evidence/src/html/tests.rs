//! The HTML report on small reports: escaping, lanes and markers, "not measured", the flow cap,
//! clock bounds, and a policy run's page.

use super::{FLOW_LANE_CAP, PageTrial, run_page, trial_page};
use crate::report::Report;
use crate::test_fixtures;
use crate::verdict::Verdict;

const HOSTILE: &str = "</script><svg onload=alert(1)>\"'&";

fn attach() -> Report {
    serde_json::from_str(include_str!(
        "../../../../tests/fixtures/attach/report.json"
    ))
    .expect("attach fixture parses")
}

fn count(html: &str, needle: &str) -> usize {
    html.matches(needle).count()
}

/// Everything the page may hold: no script, nothing loaded from anywhere.
fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.contains("default-src 'none'"), "the CSP forbids loads");
    for banned in [
        "<script", "<link", "<img", "<iframe", "@import", "url(", " src=",
    ] {
        assert!(!html.contains(banned), "page holds {banned}");
    }
    // The one absolute URL is the SVG namespace, which is a name, not a load.
    let urls = count(html, "http://") + count(html, "https://");
    assert_eq!(urls, count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
}

#[test]
fn hostile_strings_in_pod_names_and_details_are_escaped() {
    let mut r = attach();
    let a = r.trial.attach.as_mut().expect("attach section");
    let old = a.pods[0].pod.clone();
    a.pods[0].pod = HOSTILE.into();
    for f in &mut a.failures {
        if f.pod.as_deref() == Some(old.as_str()) {
            f.pod = Some(HOSTILE.into());
        }
        f.errno = Some(HOSTILE.into());
    }
    for e in &mut r.trial.timeline {
        e.detail = Some(HOSTILE.into());
    }
    r.trial.status_detail = Some(HOSTILE.into());
    r.environment.hostname = HOSTILE.into();
    let html = trial_page(&r);
    assert_self_contained(&html);
    assert!(!html.contains("<svg onload"));
    assert!(!html.contains("</script>"));
    assert!(html.contains("&lt;/script&gt;&lt;svg onload=alert(1)&gt;&quot;&#39;&amp;"));
    // The hostile name is a lane's data-pod, escaped inside the attribute.
    assert_eq!(
        count(
            &html,
            "data-pod=\"&lt;/script&gt;&lt;svg onload=alert(1)&gt;&quot;&#39;&amp;\""
        ),
        // The lane, its 4 markers and its 1 failure.
        1 + 4 + 1
    );
}

#[test]
fn an_attach_trial_has_a_lane_per_pod_its_markers_and_each_failure_on_its_pod() {
    let r = attach();
    let a = r.trial.attach.as_ref().expect("attach section");
    assert_eq!((a.pods.len(), a.failures.len()), (2, 4));
    let html = trial_page(&r);
    assert_self_contained(&html);
    assert_eq!(count(&html, "<svg class=\"timeline\""), 1);
    assert_eq!(count(&html, "class=\"lane\" data-kind=\"pod\""), 2);
    // Each pod's own four transitions, on its lane.
    for p in ["web-a", "web-b"] {
        for e in [
            "deletion",
            "endpoint-not-ready",
            "endpoint-removed",
            "container-exit",
        ] {
            assert_eq!(
                count(
                    &html,
                    &format!("class=\"marker pod\" data-event=\"{e}\" data-t-ms=")
                ),
                2,
                "{e}"
            );
            assert!(html.contains(&format!("data-event=\"{e}\" data-t-ms=\"")));
        }
        assert!(html.contains(&format!("data-pod=\"{p}\"")));
    }
    assert_eq!(count(&html, "class=\"marker\" data-event=\"trigger\""), 1);
    // One failure mark per recorded failure, each on the lane of its pod.
    assert_eq!(count(&html, "class=\"fail kind-"), 4);
    let web_b_lane = html
        .split_once("class=\"lane\" data-kind=\"pod\" data-pod=\"web-b\"")
        .map(|(_, rest)| rest.split("class=\"lane\"").next().unwrap_or(""))
        .expect("web-b lane");
    assert_eq!(count(web_b_lane, "class=\"fail kind-"), 3);
    // SIGKILL (exit 137) is named on the pod's exit marker.
    assert!(html.contains("exit 137 (SIGKILL)"));
    // Unmodified workloads: SIGTERM is not observed, and the page says so.
    assert!(html.contains("SIGTERM: not measured"));
}

#[test]
fn a_probe_trial_draws_the_workload_each_flow_and_its_terminal_event() {
    let r = test_fixtures::report("ignore");
    assert_eq!(r.trial.flows.len(), 5);
    let html = trial_page(&r);
    assert_self_contained(&html);
    assert_eq!(count(&html, "class=\"lane\" data-kind=\"pod\""), 1);
    assert_eq!(count(&html, "class=\"lane\" data-kind=\"flow\""), 5);
    for e in ["trigger", "sigterm", "sigkill", "container-exit"] {
        assert_eq!(
            count(&html, &format!("class=\"marker\" data-event=\"{e}\"")),
            1,
            "{e}"
        );
    }
    let ended = r
        .trial
        .flows
        .iter()
        .filter(|f| f.t_terminal_ms.is_some())
        .count();
    assert_eq!(count(&html, "class=\"terminal"), ended);
    let failed = r
        .trial
        .flows
        .iter()
        .filter(|f| {
            f.t_terminal_ms.is_some()
                && matches!(
                    f.outcome,
                    crate::classify::Outcome::Severed | crate::classify::Outcome::ReadTimeout
                )
        })
        .count();
    assert_eq!(count(&html, "class=\"terminal fail"), failed);
}

#[test]
fn absent_values_read_not_measured_never_zero() {
    let mut r = test_fixtures::report("drain");
    r.trial.summary.sigterm_to_ready_false_ms = None;
    r.trial.summary.trigger_to_container_terminated_ms = None;
    r.trial.summary.container_exit_code = None;
    let html = trial_page(&r);
    assert!(html.contains(
        "<td>SIGTERM → endpoint not ready</td><td><span class=\"nm\">not measured</span></td>"
    ));
    assert!(
        html.contains(
            "<td>container exit code</td><td><span class=\"nm\">not measured</span></td>"
        )
    );
    assert!(!html.contains("<td>SIGTERM → endpoint not ready</td><td>0 ms</td>"));
    // The workload lane says its exit was not measured rather than drawing one.
    assert!(html.contains("exit not measured"));

    let mut r = attach();
    let a = r.trial.attach.as_mut().expect("attach section");
    a.pods[0].exited_t_ms = None;
    a.pods[0].exit_code = None;
    let html = trial_page(&r);
    assert!(html.contains("exit not measured"));
    assert_eq!(
        count(&html, "class=\"marker pod\" data-event=\"container-exit\""),
        1
    );
}

fn with_flows(n: usize) -> Report {
    let mut r = test_fixtures::report("exit-now");
    let base = r.trial.flows.clone();
    r.trial.flows = (0..n)
        .map(|i| {
            let mut f = base[i % base.len()].clone();
            f.id = format!("tcp-{:04}", i + 1);
            f
        })
        .collect();
    r
}

#[test]
fn flows_beyond_the_cap_are_drawn_grouped_by_outcome_and_mechanism() {
    let html = trial_page(&with_flows(FLOW_LANE_CAP));
    assert_eq!(
        count(&html, "class=\"lane\" data-kind=\"flow\""),
        FLOW_LANE_CAP
    );
    assert_eq!(count(&html, "class=\"lane\" data-kind=\"group\""), 0);

    let r = with_flows(FLOW_LANE_CAP + 5);
    let html = trial_page(&r);
    assert_eq!(count(&html, "class=\"lane\" data-kind=\"flow\""), 0);
    let mut keys: Vec<(String, String, String)> = r
        .trial
        .flows
        .iter()
        .map(|f| {
            (
                f.proto.as_str().to_string(),
                f.outcome.as_str().to_string(),
                f.mechanism.as_str().to_string(),
            )
        })
        .collect();
    keys.sort();
    keys.dedup();
    assert!(!keys.is_empty());
    assert_eq!(
        count(&html, "class=\"lane\" data-kind=\"group\""),
        keys.len()
    );
    // Every flow is in exactly one group.
    let total: usize = html
        .split("data-count=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next()?.parse::<usize>().ok())
        .sum();
    assert_eq!(total, FLOW_LANE_CAP + 5);
    for (p, o, m) in keys {
        assert!(html.contains(&format!(
            "data-proto=\"{p}\" data-outcome=\"{o}\" data-mechanism=\"{m}\""
        )));
    }
    // The per-flow table still lists every flow.
    assert!(html.contains(&format!("Flows ({})", FLOW_LANE_CAP + 5)));
}

#[test]
fn an_approximate_time_shows_its_bound() {
    let mut r = test_fixtures::report("drain");
    r.trial.clock.probe.error_bound_ms = Some(12.4);
    let row = r
        .trial
        .timeline
        .iter_mut()
        .find(|e| e.event == crate::event::EventName::SigtermReceived)
        .expect("sigterm row");
    row.approximate = true;
    let html = trial_page(&r);
    assert_eq!(count(&html, "<rect class=\"bound\""), 1);
    assert!(html.contains(">±12 ms</text>"));
    assert!(html.contains("data-event=\"sigterm\" data-t-ms="));
    assert!(html.contains("data-approximate=\"true\" data-bound-ms=\"12.4\""));

    r.trial.clock.probe.error_bound_ms = None;
    let html = trial_page(&r);
    assert_eq!(count(&html, "<rect class=\"bound\""), 0);
    assert!(html.contains("approximate, bound unknown"));
}

#[test]
fn each_client_clock_domain_has_a_row_in_the_clocks_table() {
    use crate::clock::{ClientDomainClock, Mapping};
    let mut r = test_fixtures::report("drain");
    let domain = |boot: &str, mapping, offset_ns, bound, node: Option<&str>| ClientDomainClock {
        boot_id: boot.into(),
        mapping,
        offset_ns,
        error_bound_ms: bound,
        approximate: bound != Some(0.0),
        lines: 40,
        node: node.map(str::to_string),
    };
    r.trial.clock.client_domains = Some(vec![
        domain(
            "aaaaaaaa-1111",
            Mapping::SameHostMonotonic,
            Some(0),
            Some(0.0),
            Some("node1"),
        ),
        domain(
            "bbbbbbbb-2222",
            Mapping::OffsetOneSided,
            Some(-2_500_000),
            None,
            None,
        ),
    ]);
    let html = trial_page(&r);
    let clocks = &html[html.find("<summary>Clocks").expect("clocks section")..];
    let clocks = &clocks[..clocks.find("</details>").expect("section end")];
    assert_eq!(
        count(clocks, "<tr>"),
        4,
        "header, probe, two domains (an in-process client has no row)"
    );
    assert!(clocks.contains("<td>client on node1</td><td>same-host-monotonic</td><td>no</td><td>0 ms</td><td>±0 ms</td><td>40 lines</td>"));
    assert!(clocks.contains("<td>client kernel bbbbbbbb</td><td>offset-one-sided</td><td>yes</td><td>-2.5 ms</td><td><span class=\"nm\">not measured</span></td>"));
    assert!(clocks.contains("boot id bbbbbbbb-2222"));
}

#[test]
fn a_policy_run_page_has_the_verdict_on_top_and_a_timeline_per_trial() {
    let v: Verdict = serde_json::from_str(
        r#"{"schema_version":"1.1","verdict":"fail","policy":"gate.toml","description":null,
        "arms":[{"name":"rollout","description":null,"verdict":"fail","trials":[],
        "thresholds":[{"name":"no <b>severed</b> flows","verdict":"fail","checks":[
        {"trial_id":"trial-001","state":"missed","measured":null,"value":null,"of":null,
         "message":"trial-001: 3 severed"}]}]}]}"#,
    )
    .expect("verdict parses");
    let (a, b) = (
        test_fixtures::report("drain"),
        test_fixtures::report("exit-now"),
    );
    let trials = [
        PageTrial {
            arm: Some("rollout"),
            id: "trial-001",
            report: Some(&a),
        },
        PageTrial {
            arm: Some("rollout"),
            id: "trial-002",
            report: Some(&b),
        },
        PageTrial {
            arm: Some("rollout"),
            id: "trial-003",
            report: None,
        },
    ];
    let html = run_page(Some(&v), &trials);
    assert_self_contained(&html);
    let verdict_at = html.find("data-verdict=\"fail\"").expect("verdict");
    let first_trial = html.find("<section class=\"trial\"").expect("trial");
    assert!(verdict_at < first_trial);
    assert_eq!(count(&html, "<section class=\"trial\""), 3);
    assert_eq!(count(&html, "<svg class=\"timeline\""), 2);
    assert!(html.contains("left no readable report.json"));
    assert!(html.contains("no &lt;b&gt;severed&lt;/b&gt; flows"));
    assert!(html.contains("href=\"#trial-rollout-trial-002\""));
    assert!(html.contains("id=\"trial-rollout-trial-002\""));
}

#[test]
fn every_finding_is_shown_with_its_id_severity_and_derived_number() {
    let r = attach();
    let f = crate::findings::findings(&r);
    assert!(!f.is_empty());
    let html = trial_page(&r);
    assert_eq!(count(&html, "<div class=\"finding "), f.len());
    for x in &f {
        assert!(html.contains(&format!(
            "data-finding=\"{}\" data-severity=\"{}\"",
            x.id.as_str(),
            x.severity.as_str()
        )));
        if let Some(d) = x.recommendation.as_ref().and_then(|r| r.derived.as_ref()) {
            assert!(html.contains(&format!("<b>{} {}</b>", d.value, d.unit.as_str())));
        }
    }
}

#[test]
fn an_attach_page_shows_its_outcomes_first_and_no_probe_interval_or_clock() {
    let html = trial_page(&attach());
    let outcomes = html.find("<h3>Outcomes</h3>").expect("outcomes");
    let timeline = html.find("<h3>Timeline</h3>").expect("timeline");
    assert!(outcomes < timeline);
    for probe_only in [
        "SIGTERM → last flow ended",
        "<h3>Intervals</h3>",
        "<td>probe</td>",
    ] {
        assert!(!html.contains(probe_only), "{probe_only}");
    }
    let probe = trial_page(&test_fixtures::report("drain"));
    assert!(probe.contains("SIGTERM → last flow ended"));
    assert!(probe.contains("<td>probe</td>"));
    let (timeline, intervals) = (
        probe.find("<h3>Timeline</h3>").expect("timeline"),
        probe.find("<h3>Intervals</h3>").expect("intervals"),
    );
    assert!(timeline < intervals);
}

#[test]
fn each_client_node_has_a_lane_with_its_last_connection_to_each_pod() {
    use crate::attach::data_plane::{NodeView, PodRouting};
    let mut r = attach();
    let a = r.trial.attach.as_mut().expect("attach section");
    let pod = a.pods[0].pod.clone();
    let not_ready = a.pods[0]
        .endpoint_not_ready_t_ms
        .expect("the fixture's first pod turned not ready");
    let view = |node: &str, last: i64| NodeView {
        node: Some(node.into()),
        dials_served: 40,
        pods: vec![PodRouting {
            pod: pod.clone(),
            last_served_t_ms: Some(last),
            lag_after_not_ready_ms: Some(last - not_ready),
            lag_after_removed_ms: None,
            last_routed_t_ms: None,
            lag_at_least_ms: None,
            lag_at_most_ms: None,
            routed_after_not_ready: None,
        }],
        max_lag_after_not_ready_ms: Some(last - not_ready),
        max_lag_after_removed_ms: None,
        lag_at_least_ms: None,
        lag_at_most_ms: None,
    };
    // node1 stopped routing there before the signal; the hostile node 900 ms after it.
    a.data_plane = Some(vec![
        view("node1", not_ready - 50),
        view(HOSTILE, not_ready + 900),
    ]);
    let html = trial_page(&r);
    assert_self_contained(&html);
    assert_eq!(count(&html, "data-kind=\"node\""), 2, "a lane per node");
    assert!(html.contains("data-node=\"node1\""));
    assert!(
        html.contains("data-node=\"&lt;/script&gt;&lt;svg onload=alert(1)&gt;&quot;&#39;&amp;\"")
    );
    assert_eq!(
        count(&html, "class=\"node-last-served\""),
        2 + 1,
        "and the legend's"
    );
    assert!(
        html.contains(">node1: lag -50 ms after not ready<"),
        "the lane's label"
    );
    // Only the node that routed after the signal draws a lag window.
    assert_eq!(
        count(&html, "class=\"node-lag\""),
        1 + 1,
        "and the legend's"
    );
    assert!(
        html.contains(&format!(
            "node1 last sent {pod} a new connection at {} ms: -50 ms after its endpoint turned not ready, lag not measured after it left the EndpointSlice",
            not_ready - 50
        )),
        "{html}"
    );
    assert!(html.contains("+900 ms after its endpoint turned not ready"));
}

#[test]
fn a_trial_through_an_ingress_shows_its_outcomes_per_pod_and_each_replicas_routing() {
    use crate::attach::data_plane::PodRouting;
    use crate::ingress::IngressOutcome;
    use crate::ingress::routing::{IngressRouting, ReplicaRouting};
    use crate::ingress::summary::{IngressReport, UpstreamCounts};
    let mut r = attach();
    assert!(!trial_page(&r).contains("Through the ingress"));
    let a = r.trial.attach.as_mut().expect("attach section");
    a.ingress = Some(IngressReport {
        view: None,
        logged: 9,
        not_logged: 1,
        unclaimed: 0,
        abandoned: 0,
        hidden_retries: None,
        duplicates: 0,
        upstreams: vec![UpstreamCounts {
            pod: Some(HOSTILE.into()),
            outcomes: std::collections::BTreeMap::from([(IngressOutcome::UpstreamError, 3)]),
        }],
        routing: Some(IngressRouting {
            replicas: vec![ReplicaRouting {
                replica: Some("traefik-0".into()),
                requests_answered: 6,
                pods: vec![PodRouting {
                    pod: HOSTILE.into(),
                    last_served_t_ms: Some(100),
                    lag_after_not_ready_ms: None,
                    lag_after_removed_ms: None,
                    last_routed_t_ms: Some(2_100),
                    lag_at_least_ms: Some(1_945),
                    lag_at_most_ms: None,
                    routed_after_not_ready: Some(7),
                }],
                lag_at_least_ms: Some(1_945),
                lag_at_most_ms: None,
            }],
            logged_after_not_ready: Some(8),
            not_logged_after_not_ready: Some(1),
            last_request_lag_ms: Some(1_945),
        }),
    });
    let html = trial_page(&r);
    assert_self_contained(&html);
    assert!(html.contains("<h3>Through the ingress</h3>"));
    assert!(html.contains("9 of 10 requests and dials in its access log; 1 not logged"));
    assert!(html.contains("3 upstream-error"));
    assert!(!html.contains("<svg onload"), "the pod name is escaped");
    assert!(html.contains("<td>traefik-0</td>"));
    assert!(html.contains("<th>requests sent after not ready</th>"));
    assert!(
        html.contains("<td>7</td>"),
        "the pod's count after its edge"
    );
    assert!(html.contains("Last request to a terminating pod 1945 ms after its endpoint turned not ready; requests after that edge:"));
}
