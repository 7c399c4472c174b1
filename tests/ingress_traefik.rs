//! The attach client through a real Traefik on loopback: Traefik (built from the Go module proxy
//! by deploy/ingress/traefik-build.sh) routes `Host: shop.example` to two example services;
//! one exits mid-run while Traefik's configuration still lists it. Traefik's JSON access log,
//! read by the pure core's adapter (`evidence::ingress::traefik`), joins every client request by
//! its `X-Drainwatch-Request` id, and each 502 the client saw is attributed to the service that
//! was gone.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[path = "ingress_loopback/support.rs"]
mod loopback;
#[allow(dead_code)]
#[path = "attach_client/support.rs"]
mod support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use drainwatch::evidence::ingress::{
    self, IngressOutcome, join, retries, traefik, traefik_api, traefik_metrics,
};
use drainwatch::evidence::plan::attach::ingress::IngressController;
use drainwatch::evidence::request_id::{RequestIdPrefix, Spelling};
use loopback::*;
use support::*;

/// The Traefik binary: `DRAINWATCH_TRAEFIK`, which `make test-ingress` sets.
fn traefik_bin() -> PathBuf {
    let p = std::env::var_os("DRAINWATCH_TRAEFIK")
        .map(PathBuf::from)
        .expect("DRAINWATCH_TRAEFIK names the Traefik binary (make test-ingress builds it)");
    assert!(p.is_file(), "{} is not a file", p.display());
    p
}

/// Traefik on `web` (the entry point) and `api` (its API and request counters), routing
/// shop.example to `backends` (`IP:PORT`) through the file provider, with a retry middleware
/// (3 attempts, as the ingress-nginx provider puts on every route) when `retry`; its access
/// log in `dir/access.jsonl`.
fn start_traefik(dir: &Path, web: u16, api: u16, backends: &[String], retry: bool) -> Reaped {
    let servers: String = backends
        .iter()
        .map(|b| format!("          - url: \"http://{b}\"\n"))
        .collect();
    let (uses, defines) = if retry {
        (
            "      middlewares: [retry]\n",
            "  middlewares:\n    retry:\n      retry:\n        attempts: 3\n",
        )
    } else {
        ("", "")
    };
    let dynamic = format!(
        "http:\n  routers:\n    shop:\n      rule: \"Host(`shop.example`)\"\n      entryPoints: [web]\n      service: shop\n{uses}{defines}  services:\n    shop:\n      loadBalancer:\n        servers:\n{servers}"
    );
    std::fs::write(dir.join("dynamic.yml"), dynamic).unwrap();
    let mut args = vec![
        "--global.checknewversion=false".to_string(),
        "--global.sendanonymoususage=false".into(),
        format!("--entrypoints.web.address=127.0.0.1:{web}"),
        format!("--entrypoints.traefik.address=127.0.0.1:{api}"),
        format!(
            "--providers.file.filename={}",
            dir.join("dynamic.yml").display()
        ),
        "--log.level=ERROR".into(),
        "--log.format=json".into(),
        "--accesslog=true".into(),
        format!(
            "--accesslog.filepath={}",
            dir.join("access.jsonl").display()
        ),
        "--accesslog.bufferingsize=0".into(),
        traefik_metrics::METRICS_FLAG.into(),
        "--api.insecure=true".into(),
    ];
    args.extend(traefik::ACCESS_LOG_FLAGS.iter().map(|f| f.to_string()));
    let log = std::fs::File::create(dir.join("traefik.log")).unwrap();
    Reaped(
        Command::new(traefik_bin())
            .args(&args)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// The two example services (shop-a stays, shop-b goes) behind a Traefik routing to both
/// (with a retry when `retry`), once Traefik answers for the rule; the entry point's and the
/// API's ports.
struct Bench {
    stays: Service,
    goes: Service,
    web: u16,
    api: u16,
    _traefik: Reaped,
}

fn bench(dir: &Path, retry: bool) -> Bench {
    let (stays, stays_port) = Service::start("good-shutdown", "shop-a", 0, 0);
    let (goes, goes_port) = Service::start("bad-shutdown", "shop-b", 0, 0);
    let (web, api, _) = free_ports();
    let backends = [
        format!("{STAYS_IP}:{stays_port}"),
        format!("{GOES_IP}:{goes_port}"),
    ];
    let traefik = start_traefik(dir, web, api, &backends, retry);
    wait::until(
        format_args!(
            "Traefik routing shop.example on 127.0.0.1:{web} (its log: {})",
            dir.join("traefik.log").display()
        ),
        Duration::from_secs(20),
        || get_status(web).filter(|l| l.contains(" 200 ")),
    );
    Bench {
        stays,
        goes,
        web,
        api,
        _traefik: traefik,
    }
}

#[test]
#[ignore = "needs a Traefik binary built from the Go module proxy; make test-ingress"]
fn every_request_through_traefik_is_joined_and_each_502_names_the_backend_that_was_gone() {
    let dir = temp_dir("ingress-traefik");
    // Bound by name, each field: a field left in the temporary would be dropped (Traefik
    // stopped) at the end of the statement.
    let Bench {
        mut stays,
        mut goes,
        web,
        api,
        _traefik,
    } = bench(&dir, false);
    // Its API lists both backends as choosable servers of the one service, asked as the edge
    // asks it (narrowed by name, a page large enough).
    let servers =
        traefik_api::servers(&get_body(api, &traefik_api::services_path("shop"))).unwrap();
    let shop: Vec<&ingress::view::Server> = servers
        .iter()
        .filter(|s| s.service == "shop@file")
        .collect();
    assert_eq!(shop.len(), 2, "{servers:#?}");
    for s in &shop {
        assert!(!s.fenced, "{s:?}");
        assert!(
            s.address.starts_with(STAYS_IP) || s.address.starts_with(GOES_IP),
            "{s:?}"
        );
    }

    let c = client_with(
        web,
        "http",
        2,
        "3s",
        &dir,
        &[
            "--dial-rate",
            "10",
            "--host-header",
            "shop.example",
            "--request-id-prefix",
            "loopback-1",
        ],
    );
    // Both services answered through Traefik before one goes.
    wait_for_events(&dir, &["attach_request", "\"result\":\"ok\"", "shop-b"], 3);
    wait_for_events(&dir, &["attach_request", "\"result\":\"ok\"", "shop-a"], 3);
    goes.sigterm();
    assert_eq!(goes.wait(Duration::from_secs(5)), Some(0));
    let report = finish(c, &dir);
    assert_eq!(
        report["trial"]["config"]["attach"]["host_header"], "shop.example",
        "{:#}",
        report["trial"]["config"]
    );
    assert_eq!(
        report["trial"]["config"]["attach"]["request_id_prefix"], "loopback-1",
        "{:#}",
        report["trial"]["config"]
    );
    let prefix: RequestIdPrefix = "loopback-1".parse().unwrap();
    let ours = Spelling::new(Some(&prefix));

    let lines = event_lines(&dir);
    let asked = asked(&lines);
    let joined = joined_once_logged(
        IngressController::Traefik,
        &dir.join("access.jsonl"),
        &lines,
        &ours,
    );
    assert_eq!(joined.requests.len(), asked);
    assert!(asked > 20, "the client made only {asked} requests");
    failures_on_the_gone_service(&joined, 502, IngressOutcome::UpstreamError, &[]);
    stays.sigterm();
    assert_eq!(stays.wait(Duration::from_secs(10)), Some(0));
    println!("recorded in {}", dir.display());
}

/// Traefik's request counters on `api`, as the orchestrator scrapes them.
fn scrape(api: u16) -> Vec<retries::ServiceRequests> {
    traefik_metrics::service_requests(&get_body(api, traefik_metrics::METRICS_PATH)).unwrap()
}

/// The body of `GET path` on Traefik's `traefik` entry point (its API and metrics).
fn get_body(api: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", api)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // HTTP/1.0: the body comes whole, not chunked.
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    body.to_string()
}

#[test]
#[ignore = "needs a Traefik binary built from the Go module proxy; make test-ingress"]
fn a_retrying_traefik_hides_the_failed_attempts_and_its_counters_show_them() {
    let dir = temp_dir("ingress-traefik-retry");
    let Bench {
        mut stays,
        mut goes,
        web,
        api,
        _traefik,
    } = bench(&dir, true);
    // Before the trial's first request, once the readiness GETs above are all counted (the
    // counter moves as the response ends, maybe after the client read it): as many requests
    // in the counters as lines in the access log.
    let before = wait::until(
        "Traefik's counters agree with its access log",
        Duration::from_secs(10),
        || {
            let counters = scrape(api);
            let counted: u64 = counters.iter().map(|c| c.count).sum();
            let text = std::fs::read_to_string(dir.join("access.jsonl")).unwrap_or_default();
            let logged = text.lines().filter(|l| l.contains("shop@file")).count() as u64;
            (counted > 0 && counted == logged).then_some(counters)
        },
    );

    let c = client_with(
        web,
        "http",
        2,
        "3s",
        &dir,
        &["--dial-rate", "10", "--host-header", "shop.example"],
    );
    wait_for_events(&dir, &["attach_request", "\"result\":\"ok\"", "shop-b"], 3);
    goes.sigterm();
    assert_eq!(goes.wait(Duration::from_secs(5)), Some(0));
    let report = finish(c, &dir);
    let lines = event_lines(&dir);
    let asked = asked(&lines);
    // The counters after the trial's last request, once the access log holds every client
    // request and every request they count (each is counted and logged as its response ends):
    // polled, as the orchestrator waits for the log to go quiet and scrapes again.
    let h = wait::until(
        format_args!(
            "Traefik's counters and {} holding the same requests",
            dir.join("access.jsonl").display()
        ),
        Duration::from_secs(10),
        || {
            let after = scrape(api);
            let text = std::fs::read_to_string(dir.join("access.jsonl")).unwrap_or_default();
            let mut all = lines.clone();
            all.extend(
                ingress::accesses(IngressController::Traefik, &text)
                    .iter()
                    .filter_map(|a| {
                        let mut l = a.line(0, &Spelling::default())?;
                        l.replica = Some("traefik".into());
                        Some(l)
                    }),
            );
            if join::join(&all, &BTreeMap::new()).not_logged > 0 {
                return None;
            }
            all.extend(retries::scrape_lines(&before, "traefik", 1, 0));
            all.extend(retries::scrape_lines(&after, "traefik", 2, 0));
            retries::hidden_retries(&all).filter(|h| h.hidden.is_some())
        },
    );
    assert_eq!(h.replicas.len(), 1, "{h:#?}");
    let r = &h.replicas[0];
    assert_eq!(r.services, ["shop@file"], "{h:#?}");
    assert!(r.requests_logged > 20, "{h:#?}");
    let hidden = r.hidden.unwrap_or_else(|| panic!("{h:#?}"));
    assert!(
        hidden > 0,
        "Traefik kept choosing the gone server and retried: {h:#?}"
    );
    // What the clients saw fail is what the log says failed; the rest of the counters' 5xx
    // were retried.
    let failed = report["trial"]["attach"]["requests"]["failed"]
        .as_u64()
        .unwrap_or(0)
        + report["trial"]["attach"]["dials"]["failed"]
            .as_u64()
            .unwrap_or(0);
    assert_eq!(
        r.failed_logged, failed,
        "{h:#?}\n{:#}",
        report["trial"]["attach"]
    );
    assert_eq!(r.failed_counted, Some(failed + hidden), "{h:#?}");
    assert!(asked > 20, "the client made only {asked} requests");
    stays.sigterm();
    assert_eq!(stays.wait(Duration::from_secs(10)), Some(0));
    println!("recorded in {}: {hidden} hidden retries", dir.display());
}
