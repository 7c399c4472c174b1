//! `drainwatch run --platform kubernetes` end to end, against a real cluster.
//!
//! Every test is `#[ignore]`d: `make e2e-k8s` runs them (`-- --ignored`) with
//! `DRAINWATCH_E2E_KUBECONFIG` set to the local cluster's admin kubeconfig. Run without the
//! variable, or against a broken cluster, they fail: nothing here skips. Tests take a lock, so trials never overlap even
//! when the harness runs tests in parallel. Assertions are grouped so that one trial serves
//! several checks (CI time).
//!
//! Traffic goes only to the cluster's own addresses and loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;

use drainwatch::evidence::event::EventName;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::{
    Reaper, assert_replay_identical, assert_valid_report, flows_of, json, kubectl,
    spawn_until_trigger, temp_dir, wait, wait_for_trigger,
};
use serde_json::Value;

/// The admin kubeconfig, and the lock every cluster test holds; panics when not configured.
fn cluster() -> (PathBuf, MutexGuard<'static, ()>) {
    common::cluster("e2e-k8s")
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    out: PathBuf,
}

/// `drainwatch run` with small, fast trial settings plus `extra`.
fn dw_run(kc: &Path, name: &str, extra: &[&str]) -> Run {
    let out = temp_dir(name);
    let defaults = [
        ("--tcp-flows", "3"),
        ("--udp-flows", "3"),
        ("--grace-period", "8"),
        ("--settle-seconds", "2"),
        ("--post-terminal-grace", "3"),
        ("--ready-timeout", "90"),
    ];
    let mut args = vec!["run".to_string()];
    for (flag, value) in defaults {
        // A flag given in `extra` replaces the default.
        if !extra.contains(&flag) {
            args.push(flag.into());
            args.push(value.into());
        }
    }
    args.push("--kubeconfig".into());
    args.push(kc.display().to_string());
    args.push("--out".into());
    args.push(out.display().to_string());
    if let (false, Some(image)) = (extra.contains(&"--image"), common::e2e_image()) {
        args.extend(["--image".into(), image]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let o = Command::new(common::bin())
        .args(&args)
        .output()
        .expect("drainwatch runs");
    let r = Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        out,
    };
    eprintln!("--- {name}: exit {}\n{}", r.code, tail(&r.stderr, 25));
    r
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn events(report: &Value) -> Vec<Value> {
    report["trial"]["timeline"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The first timeline entry named `event` (from `source`, when given).
fn first(report: &Value, event: EventName, source: Option<&str>) -> Option<Value> {
    events(report)
        .into_iter()
        .find(|e| e["event"] == event.as_str() && source.is_none_or(|s| e["source"] == s))
}

/// The trial's namespace, as the run printed it, is gone or going. Only this run's namespace
/// is checked: the cluster is shared, and other runs may have theirs.
fn namespace_gone(kc: &Path, r: &Run) {
    // Every trial names the namespace it created; a run that names none is a failure here,
    // not a pass: this is called only for runs that create one per trial.
    let created: Vec<&str> = r
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("drainwatch: namespace "))
        .filter(|l| l.contains("(created for this trial)"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        !created.is_empty(),
        "the run names no namespace it created:\n{}",
        r.stderr
    );
    for ns in created {
        // --ignore-not-found: a namespace that is gone is exit 0 and no output; a kubectl that
        // cannot ask (an unreachable API) is a failure, never "gone".
        let out = kubectl(
            kc,
            &[
                "get",
                "ns",
                ns,
                "--ignore-not-found",
                "-o",
                "jsonpath={.status.phase}",
            ],
        );
        assert!(
            out.status.success(),
            "kubectl get ns {ns}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let phase = String::from_utf8_lossy(&out.stdout);
        assert!(
            phase.is_empty() || phase == "Terminating",
            "namespace {ns} left behind ({phase})"
        );
    }
}

/// Checks every report must pass: schema, replay, status, clocks of one kernel.
fn common_checks(kc: &Path, r: &Run, placement: &str, udp_flows: usize) -> Value {
    assert_eq!(r.code, 0, "drainwatch failed:\n{}", r.stderr);
    assert!(
        r.stdout.contains("FLOWS"),
        "the table is printed: {}",
        r.stdout
    );
    namespace_gone(kc, r);
    let report = json(&r.out.join("report.json"));
    assert_valid_report(&report);
    assert_replay_identical(&r.out, None);
    assert_eq!(
        report["schema_version"],
        drainwatch::evidence::report::SCHEMA_VERSION
    );
    // Which cluster was used, as the kubeconfig resolved it (the summary names it).
    let server = report["environment"]["cluster"]["server"]
        .as_str()
        .unwrap_or_default();
    assert!(server.starts_with("https://"), "{}", report["environment"]);
    assert!(report["environment"]["cluster"]["context"].is_string());
    assert_eq!(report["trial"]["status"], "completed");
    assert_eq!(report["trial"]["config"]["kubernetes"]["client"], placement);
    // The local cluster's pods run on this machine's kernel: probe times are exact.
    assert_eq!(
        report["trial"]["clock"]["probe"]["mapping"],
        "same-host-monotonic"
    );
    if placement == "pod" {
        assert_eq!(
            report["trial"]["clock"]["client"]["mapping"],
            "same-host-monotonic"
        );
    } else {
        assert!(report["trial"]["clock"].get("client").is_none());
    }
    assert!(first(&report, EventName::PodUnderTestChosen, Some("orchestrator")).is_some());
    assert!(first(&report, EventName::PodDeletionTimestampSet, Some("k8s")).is_some());
    assert!(first(&report, EventName::SigtermReceived, Some("probe")).is_some());
    // Every UDP flow ends with an outcome and the mechanism that explains it.
    for f in flows_n(&report, "udp", udp_flows) {
        assert_ne!(f["outcome"], "not-measured", "{f}");
        assert_ne!(f["mechanism"], "none", "{f}");
    }
    report
}

/// In events.jsonl, each TCP flow's `flow_bye` comes before its `flow_eof`.
fn bye_before_fin(dir: &Path, flows: u32) {
    let text = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    for i in 1..=flows {
        let id = format!("tcp-{i:04}");
        let pos = |ev: &str| {
            text.lines().position(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                v["flow_id"] == id.as_str() && v["event"] == ev
            })
        };
        let (bye, eof) = (pos("flow_bye"), pos("flow_eof"));
        assert!(
            bye.is_some() && eof.is_some() && bye < eof,
            "{id}: bye {bye:?} eof {eof:?}"
        );
    }
}

/// The flows of `proto`, after asserting there are exactly `n`: an empty list proves nothing.
fn flows_n(report: &Value, proto: &str, n: usize) -> Vec<Value> {
    let f = flows_of(report, proto);
    assert_eq!(f.len(), n, "{n} {proto} flows expected: {f:?}");
    f
}

fn t_ms(e: &Value) -> i64 {
    e["t_ms"].as_i64().unwrap()
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-k8s"]
fn three_arms_with_both_client_placements() {
    let (kc, _lock) = cluster();
    for placement in ["pod", "host"] {
        let r = dw_run(
            &kc,
            &format!("drain-{placement}"),
            &["--drain-behavior", "drain", "--client", placement],
        );
        let rep = common_checks(&kc, &r, placement, 3);
        for f in flows_n(&rep, "tcp", 3) {
            assert_eq!(f["outcome"], "drained-clean-close", "{f}");
            assert_eq!(f["mechanism"], "fin-after-announcement", "{f}");
        }
        bye_before_fin(&r.out, 3);
        let exit =
            first(&rep, EventName::ContainerTerminated, Some("k8s")).expect("container exit seen");
        let term = first(&rep, EventName::EndpointsliceTerminatingTrue, Some("k8s"))
            .or_else(|| first(&rep, EventName::EndpointsliceReadyFalse, Some("k8s")))
            .expect("endpoint seen terminating");
        assert!(
            t_ms(&term) < t_ms(&exit),
            "terminating {term} not before exit {exit}"
        );
        assert!(
            term["detail"].as_str().unwrap().contains("serving=true"),
            "the draining endpoint still serves: {term}"
        );
        assert_eq!(rep["trial"]["summary"]["container_exit_code"], 0);

        let r = dw_run(
            &kc,
            &format!("exit-now-{placement}"),
            &["--drain-behavior", "exit-now", "--client", placement],
        );
        let rep = common_checks(&kc, &r, placement, 3);
        for f in flows_n(&rep, "tcp", 3) {
            assert_eq!(
                (&f["outcome"], &f["mechanism"]),
                (&"severed".into(), &"rst".into()),
                "{f}"
            );
        }

        let r = dw_run(
            &kc,
            &format!("ignore-{placement}"),
            &["--drain-behavior", "ignore", "--client", placement],
        );
        let rep = common_checks(&kc, &r, placement, 3);
        assert_eq!(rep["trial"]["summary"]["container_exit_code"], 137);
        for f in flows_n(&rep, "tcp", 3) {
            assert_eq!(f["outcome"], "severed", "{f}");
            let t = f["t_terminal_ms"].as_i64().unwrap();
            assert!(
                (7_500..12_000).contains(&t),
                "severed at the 8 s SIGKILL, not {t} ms: {f}"
            );
        }
    }
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-k8s"]
fn evict_forbidden_by_a_pdb_is_blocked_not_failed() {
    let (kc, _lock) = cluster();
    let r = dw_run(
        &kc,
        "evict-pdb",
        &["--trigger", "evict", "--pdb", "--udp-flows", "1"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    namespace_gone(&kc, &r);
    let rep = json(&r.out.join("report.json"));
    assert_valid_report(&rep);
    assert_replay_identical(&r.out, None);
    assert_eq!(rep["trial"]["status"], "blocked-by-pdb");
    assert!(
        rep["trial"]["status_detail"]
            .as_str()
            .unwrap()
            .contains("429")
    );
    let all = common::flows(&rep);
    assert_eq!(all.len(), 3 + 1, "3 TCP and 1 UDP flows: {all:?}");
    for f in all {
        assert_eq!(f["outcome"], "survived-observation-window", "{f}");
    }
    assert!(first(&rep, EventName::ContainerTerminated, None).is_none());
}

/// A kubeconfig for `server` (with the admin kubeconfig's CA) authenticating with `token`.
fn token_kubeconfig(admin: &Path, token: &str, server: Option<&str>, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(admin).unwrap();
    let cfg: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    let cluster = &cfg["clusters"][0]["cluster"];
    let server = server
        .map(str::to_string)
        .unwrap_or_else(|| cluster["server"].as_str().unwrap().to_string());
    let ca = cluster["certificate-authority-data"]
        .as_str()
        .unwrap_or_default();
    let user = if token.is_empty() {
        let u = &cfg["users"][0]["user"];
        format!(
            "client-certificate-data: {}\n    client-key-data: {}",
            u["client-certificate-data"].as_str().unwrap_or_default(),
            u["client-key-data"].as_str().unwrap_or_default()
        )
    } else {
        format!("token: {token}")
    };
    let tls_name = cluster["server"]
        .as_str()
        .and_then(|s| s.trim_start_matches("https://").split(':').next())
        .unwrap_or_default()
        .to_string();
    let y = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\n    tls-server-name: {tls_name}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user:\n    {user}\n"
    );
    let p = temp_dir(name).join("kubeconfig");
    std::fs::write(&p, y).unwrap();
    p
}

/// `drainwatch rbac --namespace NS` piped to `kubectl apply -f -`: kubectl's output, and the
/// objects (to delete).
fn rendered_rbac(kc: &Path, ns: &str) -> (Output, String) {
    let yaml = Command::new(common::bin())
        .args(["rbac", "--namespace", ns])
        .output()
        .unwrap();
    assert!(
        yaml.status.success(),
        "{}",
        String::from_utf8_lossy(&yaml.stderr)
    );
    let mut apply = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kc)
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    apply.stdin.take().unwrap().write_all(&yaml.stdout).unwrap();
    let out = apply.wait_with_output().unwrap();
    (out, String::from_utf8(yaml.stdout).unwrap())
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-k8s"]
fn the_rendered_rbac_runs_a_whole_trial_and_a_bare_identity_is_named() {
    let (kc, _lock) = cluster();
    // Rendered for a namespace of its own (not the shipped drainwatch-system): the identity, its
    // bindings and every right move there, and a whole trial runs on them.
    let ns = "drainwatch-e2e-rbac";
    let (out, rendered) = rendered_rbac(&kc, ns);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let applied = String::from_utf8_lossy(&out.stdout);
    assert!(
        applied.contains(
            "clusterrolebinding.rbac.authorization.k8s.io/drainwatch-drainwatch-e2e-rbac"
        ),
        "{applied}"
    );
    let tok = kubectl(
        &kc,
        &[
            "-n",
            ns,
            "create",
            "token",
            "drainwatch",
            "--duration",
            "1h",
        ],
    );
    assert!(
        tok.status.success(),
        "{}",
        String::from_utf8_lossy(&tok.stderr)
    );
    let token = String::from_utf8_lossy(&tok.stdout).trim().to_string();
    let sa_kc = token_kubeconfig(&kc, &token, None, "rbac-kubeconfig");
    // The scale trigger under the shipped role: deployments/scale patch is in it.
    let r = dw_run(
        &sa_kc,
        "rbac-trial",
        &["--trigger", "scale", "--udp-flows", "1", "--tcp-flows", "2"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    namespace_gone(&kc, &r);
    let rep = json(&r.out.join("report.json"));
    assert_valid_report(&rep);
    assert_eq!(rep["trial"]["status"], "completed");
    assert_eq!(rep["trial"]["config"]["trigger"], "scale");
    for f in flows_n(&rep, "tcp", 2) {
        assert_eq!(f["outcome"], "drained-clean-close", "{f}");
    }

    // An identity bound to nothing: exit 2, the verb and resource named, no report.
    let _ = kubectl(
        &kc,
        &[
            "-n",
            ns,
            "create",
            "serviceaccount",
            "drainwatch-e2e-nobody",
        ],
    );
    let tok = kubectl(
        &kc,
        &[
            "-n",
            ns,
            "create",
            "token",
            "drainwatch-e2e-nobody",
            "--duration",
            "1h",
        ],
    );
    let nobody = token_kubeconfig(
        &kc,
        String::from_utf8_lossy(&tok.stdout).trim(),
        None,
        "nobody-kubeconfig",
    );
    let r = dw_run(&nobody, "rbac-denied", &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("preflight check \"permissions\" failed"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("list nodes"), "{}", r.stderr);
    assert!(!r.out.join("report.json").exists());
    let _ = common::delete_identity(&kc, &rendered, "rbac-rendered");
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-k8s"]
fn faults_are_named_with_exit_2_and_leave_nothing_behind() {
    let (kc, _lock) = cluster();
    // Unreachable API server: an unallocated node address (the egress guard drops it).
    let dead = token_kubeconfig(&kc, "", Some("https://10.10.0.250:6443"), "dead-api");
    let t = Instant::now();
    let r = dw_run(&dead, "api-unreachable", &["--api-timeout", "3"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("preflight check \"api-reachable\" failed"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("10.10.0.250"),
        "the server is named: {}",
        r.stderr
    );
    assert!(
        t.elapsed() < Duration::from_secs(45),
        "took {:?}",
        t.elapsed()
    );
    assert!(!r.out.join("report.json").exists());

    // Missing image: a registry on a closed loopback port, so the pull fails at once.
    let r = dw_run(
        &kc,
        "missing-image",
        &["--image", "127.0.0.1:1/drainwatch/missing:0"],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("preflight check \"image-present\" failed"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("127.0.0.1:1/drainwatch/missing:0"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("ErrImagePull") || r.stderr.contains("ImagePullBackOff"),
        "{}",
        r.stderr
    );
    assert!(!r.out.join("report.json").exists());
    namespace_gone(&kc, &r);

    // A crash-looping probe (it refuses an invalid setting and exits 2).
    let r = dw_run(&kc, "crash-loop", &["--probe-env", "PROBE_UDP_SOCKETS=0"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("crash-looping"), "{}", r.stderr);
    assert!(r.stderr.contains("exitCode=2"), "{}", r.stderr);
    namespace_gone(&kc, &r);

    // Invalid flags: a trigger that does not exist is refused by the parser, one that exists
    // but is not the probe's on Kubernetes by the plan; both exit 2 before anything is made.
    let r = dw_run(&kc, "bad-flags", &["--trigger", "drain"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("invalid value 'drain'") && r.stderr.contains("drain-node"),
        "{}",
        r.stderr
    );
    let r = dw_run(&kc, "bad-trigger", &["--trigger", "sigterm"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("delete, evict or scale"), "{}", r.stderr);
}

/// `drainwatch run` in the background with small trial settings plus `extra`; see
/// [`spawn_until_trigger`].
fn spawn_trial(
    kc: &Path,
    out: &Path,
    extra: &[&str],
) -> (std::process::Child, Arc<AtomicBool>, Arc<Mutex<String>>) {
    let image = common::e2e_image().map(|i| ["--image".to_string(), i]);
    let image: Vec<&str> = image.iter().flatten().map(String::as_str).collect();
    let base = [
        "run",
        "--kubeconfig",
        kc.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--tcp-flows",
        "3",
        "--udp-flows",
        "2",
        "--settle-seconds",
        "2",
        "--ready-timeout",
        "90",
    ];
    spawn_until_trigger(base.iter().chain(image.iter()).chain(extra))
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-k8s"]
fn ctrl_c_mid_observation_keeps_an_aborted_report_and_removes_the_namespace() {
    let (kc, _lock) = cluster();
    let out = temp_dir("ctrl-c");
    let (child, triggered, log) = spawn_trial(
        &kc,
        &out,
        &["--drain-behavior", "ignore", "--grace-period", "30"],
    );
    let mut child = Reaper(child);
    wait_for_trigger(&mut child.0, &triggered, &log, Duration::from_secs(120));
    // Interrupted mid-observation: once the probe's SIGTERM is recorded (the report must keep
    // what was seen), while it ignores the signal for its 30 s grace.
    let events = out.join("events.jsonl");
    wait::until(
        wait::with_file(
            "the probe's sigterm_received in the streamed events",
            &events,
        ),
        Duration::from_secs(60),
        || {
            std::fs::read_to_string(&events)
                .unwrap_or_default()
                .lines()
                .any(|l| l.contains("\"sigterm_received\"") && l.contains("\"source\":\"probe\""))
                .then_some(())
        },
    );
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.0.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.0.wait().unwrap();
    let log = log.lock().unwrap().clone();
    assert_eq!(status.code(), Some(130), "{log}");
    let rep = json(&out.join("report.json"));
    assert_valid_report(&rep);
    assert_eq!(rep["trial"]["status"], "aborted");
    assert!(
        rep["trial"]["status_detail"]
            .as_str()
            .unwrap()
            .contains("observation")
    );
    assert!(
        first(&rep, EventName::SigtermReceived, Some("probe")).is_some(),
        "what was seen is kept"
    );
    let ns = rep["trial"]["config"]["namespace"]
        .as_str()
        .unwrap()
        .to_string();
    let got = kubectl(&kc, &["get", "ns", &ns]);
    assert!(!got.status.success(), "namespace {ns} still exists");
}

/// A TCP proxy to the API server that can simulate an outage: every open connection is cut
/// and, for a while, new ones are dropped as soon as they arrive.
struct CutProxy {
    addr: SocketAddr,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    down: Arc<AtomicBool>,
}

impl CutProxy {
    fn start(upstream: SocketAddr) -> Self {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let down = Arc::new(AtomicBool::new(false));
        let (c, d) = (conns.clone(), down.clone());
        std::thread::spawn(move || {
            for client in l.incoming().map_while(Result::ok) {
                if d.load(Ordering::SeqCst) {
                    // The outage: reset the connection at once.
                    let _ = socket2::SockRef::from(&client).set_linger(Some(Duration::ZERO));
                    drop(client);
                    continue;
                }
                let Ok(up) = TcpStream::connect(upstream) else {
                    continue;
                };
                c.lock()
                    .unwrap()
                    .extend([client.try_clone().unwrap(), up.try_clone().unwrap()]);
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), up.try_clone().unwrap()),
                    (up, client),
                ] {
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16384];
                        while let Ok(n) = from.read(&mut buf) {
                            if n == 0 || std::io::Write::write_all(&mut to, &buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Self { addr, conns, down }
    }

    /// Cuts every open connection and refuses new ones for `outage`; returns how many were cut.
    fn cut(&self, outage: Duration) -> usize {
        self.down.store(true, Ordering::SeqCst);
        let mut c = self.conns.lock().unwrap();
        for s in c.iter() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        let n = c.len() / 2;
        c.clear();
        let d = self.down.clone();
        std::thread::spawn(move || {
            std::thread::sleep(outage);
            d.store(false, Ordering::SeqCst);
        });
        n
    }
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-k8s"]
fn a_cut_watch_stream_is_resumed_and_the_gap_recorded() {
    let (kc, _lock) = cluster();
    let text = std::fs::read_to_string(&kc).unwrap();
    let cfg: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    let server = cfg["clusters"][0]["cluster"]["server"]
        .as_str()
        .unwrap()
        .to_string();
    let hostport = server.trim_start_matches("https://").to_string();
    let upstream = hostport.to_socket_addrs().unwrap().next().unwrap();
    let proxy = CutProxy::start(upstream);
    let via = token_kubeconfig(
        &kc,
        "",
        Some(&format!("https://{}", proxy.addr)),
        "cut-kubeconfig",
    );
    let out = temp_dir("cut-watch");
    let (child, triggered, log) = spawn_trial(
        &via,
        &out,
        &[
            "--drain-behavior",
            "drain",
            "--grace-period",
            "8",
            "--post-terminal-grace",
            "3",
        ],
    );
    let mut child = Reaper(child);
    wait_for_trigger(&mut child.0, &triggered, &log, Duration::from_secs(120));
    // The watches stream from before the trigger; cut them while the drain is under way.
    let cut = proxy.cut(Duration::from_secs(2));
    assert!(cut > 0, "no connection to cut");
    let status = child.0.wait().unwrap();
    let log = log.lock().unwrap().clone();
    assert_eq!(status.code(), Some(0), "{log}");
    let rep = json(&out.join("report.json"));
    assert_valid_report(&rep);
    assert_replay_identical(&out, None);
    let interrupted =
        first(&rep, EventName::WatchInterrupted, Some("k8s")).expect("the cut is recorded");
    let resumed =
        first(&rep, EventName::WatchResumed, Some("k8s")).expect("the resume is recorded");
    assert!(t_ms(&resumed) >= t_ms(&interrupted));
    assert!(resumed["detail"].as_str().unwrap().contains("gap of"));
    // The timeline is complete after the gap: the container's exit and the endpoint's removal.
    assert!(first(&rep, EventName::ContainerTerminated, Some("k8s")).is_some());
    assert!(first(&rep, EventName::EndpointsliceEndpointRemoved, Some("k8s")).is_some());
    for f in flows_n(&rep, "tcp", 3) {
        assert_eq!(f["outcome"], "drained-clean-close", "{f}");
    }
}

#[test]
#[ignore = "needs a Kubernetes cluster; make e2e-k8s"]
fn host_placement_shards_flows_over_client_processes() {
    let (kc, _lock) = cluster();
    let r = dw_run(
        &kc,
        "drain-host-sharded",
        &[
            "--drain-behavior",
            "drain",
            "--client",
            "host",
            "--clients",
            "2",
            "--tcp-flows",
            "4",
            "--udp-flows",
            "4",
        ],
    );
    let rep = common_checks(&kc, &r, "host", 4);
    assert_eq!(rep["trial"]["config"]["clients"], 2);
    let started: Vec<Value> = events(&rep)
        .into_iter()
        .filter(|e| e["event"] == "client_process_started")
        .collect();
    assert_eq!(started.len(), 2, "one line per client process: {started:?}");
    // Each child holds a contiguous half of the ids one client would have used.
    let ids: Vec<&str> = rep["trial"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "tcp-0001", "tcp-0002", "tcp-0003", "tcp-0004", "udp-0001", "udp-0002", "udp-0003",
            "udp-0004"
        ]
    );
    for f in flows_n(&rep, "tcp", 4) {
        assert_eq!(f["outcome"], "drained-clean-close", "{f}");
    }
    bye_before_fin(&r.out, 4);
    // The children ended with the run (their pids are in client_process_started).
    for e in &started {
        let detail = e["detail"].as_str().unwrap();
        let pid = detail
            .split_whitespace()
            .skip_while(|w| *w != "pid")
            .nth(1)
            .unwrap();
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "client process {pid} left behind: {detail}"
        );
    }
}
