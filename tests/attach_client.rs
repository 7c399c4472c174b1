//! `drainwatch client --attach` against the example services as real processes on loopback,
//! with a real SIGTERM to the server: a good shutdown fails nothing, a bad one is recorded with
//! its mechanisms. Then against servers that fail on purpose (`faults`): a reset of held
//! connections, a reset in the middle of a request, and a black hole made in a network
//! namespace of the test's own.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[path = "attach_client/faults.rs"]
mod faults;
#[path = "attach_client/support.rs"]
mod support;

use std::time::Duration;

use common::*;
use serde_json::Value;
use support::*;

#[test]
fn a_bad_shutdown_is_recorded_with_mechanisms() {
    let dir = temp_dir("attach-bad");
    let (mut a, port) = Service::start("bad-shutdown", "bad-a", 0, 0);
    let c = client(port, "http", 3, "3s", &dir);
    wait_for_events(&dir, &["attach_request", "\"result\":\"ok\"", "bad-a"], 6);
    a.sigterm();
    assert_eq!(a.wait(Duration::from_secs(5)), Some(0));
    let r = finish(c, &dir);
    let at = &r["trial"]["attach"];
    // A server that exits at once announces nothing: whatever it closed, it closed by a FIN.
    let conns = &at["connections"];
    assert_eq!(conns["closed_announced"], 0, "{at:#}");
    assert_eq!(
        count(conns, "closed_unannounced_fin"),
        count(conns, "graceful_close"),
        "{at:#}"
    );
    let req = &at["requests"];
    assert!(count(req, "failed") > 0, "{at:#}");
    assert!(count(&req["failed_by_mechanism"], "refused") > 0, "{at:#}");
    let dials = &at["dials"];
    assert!(count(&dials["failed_by_result"], "refused") > 0, "{at:#}");
    let w = &at["longest_failure_window"];
    assert!(count(w, "failures") > 1, "{at:#}");
    assert!(w["duration_ms"].as_i64().unwrap() > 500, "{at:#}");
    // No control plane here: every failure is unattributed, said so, never guessed.
    let failures = at["failures"].as_array().unwrap();
    assert!(!failures.is_empty(), "{at:#}");
    assert!(
        failures
            .iter()
            .all(|f| f["phase"] == "unattributed" && f["pod"].is_null())
    );
    assert!(
        failures
            .iter()
            .any(|f| f["kind"] == "dial" && f["mechanism"] == "refused")
    );
    assert!(
        failures
            .iter()
            .any(|f| f["kind"] == "request" && f["errno"] == "ECONNREFUSED"),
        "{at:#}"
    );
}

#[test]
fn held_tcp_connections_record_how_they_end() {
    let dir = temp_dir("attach-tcp");
    let (mut a, port) = Service::start("bad-shutdown", "bad-tcp", 0, 0);
    let c = client(port, "tcp", 3, "2s", &dir);
    wait_for_events(&dir, &["attach_conn_opened"], 3);
    wait_for_events(&dir, &["attach_dial", "\"result\":\"served\""], 2);
    a.sigterm();
    assert_eq!(a.wait(Duration::from_secs(5)), Some(0));
    let r = finish(c, &dir);
    let at = &r["trial"]["attach"];
    assert_eq!(at["requests"], Value::Null, "a TCP arm sends no requests");
    let conns = &at["connections"];
    assert_eq!(count(conns, "total"), 3, "{at:#}");
    // An exiting process closes sockets with nothing unread with FIN.
    assert_eq!(count(conns, "graceful_close"), 3, "{at:#}");
    // ... and a FIN says nothing before it: not an announced close.
    assert_eq!(count(conns, "closed_unannounced_fin"), 3, "{at:#}");
    assert_eq!(conns["closed_announced"], 0, "{at:#}");
    let records = at["connection_records"].as_array().unwrap();
    assert_eq!(records.len(), 3, "{at:#}");
    assert!(records.iter().all(|c| c["result"] == "fin"
        && c["close"] == "unannounced-fin"
        && c["ended_t_ms"].is_i64()));
    assert!(
        count(&at["dials"]["failed_by_result"], "refused") > 0,
        "{at:#}"
    );
}

#[test]
fn a_shard_holds_its_slice_of_the_flow_ids_and_every_nth_dial() {
    let dir = temp_dir("attach-shard-ids");
    let (mut a, port) = Service::start("good-shutdown", "good-shard", 0, 0);
    // Shard 2 of 3 of a run of 6 held connections: http-0003 and http-0004, dials 2, 5, 8, …
    let c = client_with(
        port,
        "http",
        2,
        "2s",
        &dir,
        &[
            "--dial-rate",
            "20",
            "--first-tcp-flow",
            "3",
            "--first-dial",
            "2",
            "--dial-stride",
            "3",
        ],
    );
    let r = finish(c, &dir);
    a.sigterm();
    assert_eq!(a.wait(Duration::from_secs(5)), Some(0));
    let records = r["trial"]["attach"]["connection_records"]
        .as_array()
        .unwrap();
    let mut held: Vec<&str> = records
        .iter()
        .map(|c| c["flow_id"].as_str().unwrap())
        .collect();
    held.dedup();
    assert_eq!(held, vec!["http-0003", "http-0004"]);
    let dials: Vec<u64> = recorded(&dir, "attach_dial")
        .iter()
        .map(|l| {
            l["flow_id"].as_str().unwrap()["dial-".len()..]
                .parse()
                .unwrap()
        })
        .collect();
    assert!(dials.len() >= 3, "the prober dialled: {dials:?}");
    let mut sorted = dials.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        (0..dials.len() as u64)
            .map(|k| 2 + 3 * k)
            .collect::<Vec<_>>(),
        "2, 5, 8, …: no id another shard's dials take"
    );
}

#[test]
fn attach_flags_are_checked_before_anything_runs() {
    let out = run(&[
        "client",
        "--attach",
        "--port",
        "1",
        "--tcp-flows",
        "0",
        "--dial-rate",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at least one flow"), "{err}");
    let out = run(&["client", "--attach"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--port"));
}

#[test]
fn held_connections_reset_by_the_server_are_severed_by_rst() {
    let dir = temp_dir("attach-rst");
    let server = faults::Holder::start();
    let c = client_with(server.port, "tcp", 3, "2s", &dir, &["--dial-rate", "0"]);
    wait_for_events(&dir, &["attach_conn_opened"], 3);
    wait::until(
        "the server holds 3 connections",
        Duration::from_secs(10),
        || (server.held() >= 3).then_some(()),
    );
    assert_eq!(server.reset_all(), 3);
    let r = finish(c, &dir);
    let at = &r["trial"]["attach"];
    let conns = &at["connections"];
    assert_eq!(count(conns, "total"), 3, "{at:#}");
    assert_eq!(count(conns, "severed"), 3, "{at:#}");
    assert_eq!(
        count(conns, "graceful_close"),
        0,
        "an RST is no FIN: {at:#}"
    );
    assert_eq!(count(&conns["severed_by_mechanism"], "reset"), 3, "{at:#}");
    let records = at["connection_records"].as_array().unwrap();
    assert_eq!(records.len(), 3, "{at:#}");
    assert!(
        records.iter().all(|c| c["outcome"] == "severed"
            && c["result"] == "reset"
            && c["ended_t_ms"].is_i64()),
        "{at:#}"
    );
    let failures = at["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 3, "{at:#}");
    assert!(
        failures.iter().all(|f| f["kind"] == "connection"
            && f["mechanism"] == "reset"
            && f["errno"] == "ECONNRESET"),
        "{at:#}"
    );
    assert_eq!(at["dials"], Value::Null, "the prober was off");
}

#[test]
fn a_reset_in_the_middle_of_a_request_is_a_failed_request_with_mechanism_reset() {
    let dir = temp_dir("attach-http-rst");
    // The 5th request is read whole by the server, then its connection reset unanswered.
    let server = faults::HttpResetter::start(5);
    let c = client_with(server.port, "http", 1, "2s", &dir, &["--dial-rate", "0"]);
    let r = finish(c, &dir);
    let at = &r["trial"]["attach"];
    let req = &at["requests"];
    assert_eq!(count(req, "failed"), 1, "{at:#}");
    assert_eq!(count(&req["failed_by_mechanism"], "reset"), 1, "{at:#}");
    assert!(
        count(req, "ok") > 8,
        "the flow reopened and went on: {at:#}"
    );
    let failures = at["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{at:#}");
    let f = &failures[0];
    assert_eq!(
        (&f["kind"], &f["mechanism"], &f["errno"], &f["seq"]),
        (
            &Value::from("request"),
            &Value::from("reset"),
            &Value::from("ECONNRESET"),
            &Value::from(5)
        ),
        "{f}"
    );
    assert_eq!(f["status"], Value::Null, "no response head arrived");
    let conns = &at["connections"];
    assert_eq!(count(&conns["severed_by_mechanism"], "reset"), 1, "{at:#}");
    assert_eq!(count(conns, "reopened"), 1, "{at:#}");
    let first = &at["connection_records"][0];
    assert_eq!(
        (&first["generation"], &first["result"]),
        (&Value::from(1), &Value::from("reset"))
    );
}

#[test]
fn an_interim_103_is_not_the_answer_to_a_request() {
    // Every answer is 103 Early Hints, then 200: every request succeeded, on the 200.
    let dir = temp_dir("attach-http-103");
    let server = faults::HttpHinter::start(true);
    let c = client_with(server.port, "http", 1, "2s", &dir, &["--dial-rate", "0"]);
    let r = finish(c, &dir);
    let req = &r["trial"]["attach"]["requests"];
    assert!(count(req, "ok") > 3, "{req:#}");
    assert_eq!(count(req, "failed"), 0, "a 103 is no final status: {req:#}");
    let served: Vec<Value> = recorded(&dir, "attach_request");
    assert!(!served.is_empty());
    assert!(
        served
            .iter()
            .all(|l| l["status"] == 200 && l["instance"] == "hinter"),
        "{served:?}"
    );
    // A 103 and then the end of the connection: the request was never answered.
    let dir = temp_dir("attach-http-103-eof");
    let server = faults::HttpHinter::start(false);
    let c = client_with(server.port, "http", 1, "2s", &dir, &["--dial-rate", "0"]);
    let r = finish(c, &dir);
    let req = &r["trial"]["attach"]["requests"];
    assert_eq!(count(req, "ok"), 0, "{req:#}");
    assert!(count(req, "failed") > 0, "{req:#}");
    assert!(
        r["trial"]["attach"]["failures"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["status"].is_null()),
        "no final status arrived: {req:#}"
    );
}

/// The tests that make a network namespace of their own, which needs root: run as root (as
/// `.ci/run` is) they run, and anywhere else they fail saying so; `cargo test -- --skip netns::`
/// leaves them out knowingly. None of them skips and counts as passed.
mod netns {
    use super::*;

    /// Two replicas share one port through SO_REUSEPORT, a local stand-in for a Service. A
    /// replica that closes its listener would reset the dials its accept queue still holds, which
    /// two pods with their own addresses never see; with `net.ipv4.tcp_migrate_req` the kernel
    /// hands them to the surviving replica, as a Service routes new dials away from a terminating
    /// pod. So the test sets it, in a network namespace of its own (the host's setting stays).
    #[test]
    fn a_good_shutdown_fails_no_request_and_closes_gracefully() {
        faults::require_netns();
        let migrate = "net.ipv4.tcp_migrate_req";
        let host_before = faults::host_sysctl(migrate);
        let dir = temp_dir("attach-good");
        let d = dir.clone();
        let r = faults::in_new_netns(move || {
            faults::sysctl(migrate, "1");
            let (mut a, port) = Service::start("good-shutdown", "good-a", 0, 1);
            // The window holds the whole shutdown (1 s drain delay, the accept queue, the close of
            // every keep-alive connection) with room to spare on a loaded machine.
            let c = client(port, "http", 4, "10s", &d);
            // Every held connection is on replica a before replica b exists.
            wait_for_events(&d, &["attach_request", "\"result\":\"ok\"", "good-a"], 8);
            let (_b, port_b) = Service::start("good-shutdown", "good-b", port, 1);
            assert_eq!(port_b, port);
            a.sigterm();
            assert_eq!(a.wait(Duration::from_secs(15)), Some(0));
            finish(c, &d)
        });
        assert_eq!(
            faults::host_sysctl(migrate),
            host_before,
            "the host's {migrate}"
        );
        let at = &r["trial"]["attach"];
        let req = &at["requests"];
        assert_eq!(count(req, "failed"), 0, "{at:#}");
        assert!(count(req, "ok") > 20, "{at:#}");
        let conns = &at["connections"];
        assert_eq!(count(conns, "severed"), 0, "{at:#}");
        assert!(count(conns, "graceful_close") >= 4, "{at:#}");
        // Every close is told apart, and the draining server announces at least one.
        assert_eq!(
            count(conns, "closed_announced") + count(conns, "closed_unannounced_fin"),
            count(conns, "graceful_close"),
            "{at:#}"
        );
        assert!(count(conns, "closed_announced") > 0, "{at:#}");
        assert!(count(conns, "reopened") >= 4, "{at:#}");
        let dials = &at["dials"];
        assert_eq!(count(dials, "failed"), 0, "{at:#}");
        assert!(count(dials, "served") > 20, "{at:#}");
        assert!(count(&dials["served_by_instance"], "good-b") > 0, "{at:#}");
        assert_eq!(at["longest_failure_window"], Value::Null);
        assert!(at["failures"].as_array().unwrap().is_empty());
        // Closed by Connection: close after the drain delay (or FIN while idle), never severed.
        let records = at["connection_records"].as_array().unwrap();
        assert!(
            records.iter().any(|c| c["result"] == "connection-close"),
            "{at:#}"
        );
        assert_eq!(r["trial"]["status"], "completed");
        assert!(r["trial"]["flows"].as_array().unwrap().is_empty());
    }

    /// A peer whose packets vanish is only found out by keepalive and TCP_USER_TIMEOUT: the client
    /// must record it as a timeout within the bound they set, while an idle connection whose peer
    /// still answers the keepalive probes lives on. The black hole is an iptables DROP rule in a
    /// network namespace the test creates and that nothing else uses.
    #[test]
    fn a_black_holed_connection_times_out_within_its_bound_and_a_healthy_idle_one_survives() {
        faults::require_netns();
        let (dead_dir, live_dir) = (temp_dir("attach-blackhole"), temp_dir("attach-idle"));
        let (dd, ld) = (dead_dir.clone(), live_dir.clone());
        // Keepalive after 1 s idle, a probe a second, and TCP_USER_TIMEOUT 3 s: once the peer
        // falls silent, the kernel gives up 3 s after its last answer, so at most 3 s plus one
        // probe interval after the black hole starts.
        let knobs = [
            "--dial-rate",
            "0",
            "--keepalive-idle",
            "1s",
            "--keepalive-interval",
            "1s",
            "--keepalive-count",
            "2",
            "--user-timeout",
            "3s",
        ];
        let bound = Duration::from_secs(3 + 1);
        let (holed_at, dead, live) = faults::in_new_netns(move || {
            let (dead_srv, live_srv) = (faults::Holder::start(), faults::Holder::start());
            let dead_c = client_with(dead_srv.port, "tcp", 2, "12s", &dd, &knobs);
            let live_c = client_with(live_srv.port, "tcp", 2, "12s", &ld, &knobs);
            wait_for_events(&dd, &["attach_conn_opened"], 2);
            wait_for_events(&ld, &["attach_conn_opened"], 2);
            // Idle long enough for keepalive probes to be sent and answered on both.
            std::thread::sleep(Duration::from_secs(2));
            let holed_at = mono_ns();
            let port = dead_srv.port.to_string();
            for dir in ["--dport", "--sport"] {
                faults::run_ok(
                    "iptables",
                    &["-A", "INPUT", "-p", "tcp", dir, &port, "-j", "DROP"],
                );
            }
            (holed_at, finish(dead_c, &dd), finish(live_c, &ld))
        });

        let at = &dead["trial"]["attach"];
        let conns = &at["connections"];
        assert_eq!(count(conns, "severed"), 2, "{at:#}");
        assert_eq!(
            count(&conns["severed_by_mechanism"], "timeout"),
            2,
            "{at:#}"
        );
        let severed = recorded(&dead_dir, "attach_conn_severed");
        assert_eq!(severed.len(), 2);
        for l in &severed {
            assert_eq!(
                (&l["result"], &l["errno"]),
                (&Value::from("timeout"), &Value::from("ETIMEDOUT")),
                "{l}"
            );
            // Not before the kernel could have given up, and within the bound plus scheduling slack.
            let after_ms = (l["mono_ns"].as_i64().unwrap() - holed_at) / 1_000_000;
            let bound_ms = i64::try_from(bound.as_millis()).unwrap();
            assert!(
                (1500..=bound_ms + 1500).contains(&after_ms),
                "severed {after_ms} ms after the black hole began (bound {bound_ms} ms): {l}"
            );
        }

        let at = &live["trial"]["attach"];
        let conns = &at["connections"];
        assert_eq!(count(conns, "survived_observation_window"), 2, "{at:#}");
        assert_eq!(count(conns, "severed"), 0, "{at:#}");
        // And it outlived the black-holed ones by several keepalive bounds.
        let last_dead = severed
            .iter()
            .filter_map(|l| l["mono_ns"].as_i64())
            .max()
            .unwrap();
        let ended = recorded(&live_dir, "attach_conn_observation_end");
        assert_eq!(ended.len(), 2, "{ended:?}");
        for l in ended {
            let lived = l["mono_ns"].as_i64().unwrap() - last_dead;
            assert!(
                lived > 4_000_000_000,
                "{lived} ns past the last timeout: {l}"
            );
        }
    }
}
