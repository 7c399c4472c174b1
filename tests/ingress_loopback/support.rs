//! What the loopback tests through a real ingress binary share (`tests/ingress_traefik.rs`,
//! `tests/ingress_envoy.rs`): two example services at addresses of their own, as pods have, a
//! GET through the proxy, and the join of the client's recorded requests with the proxy's access
//! log, read by the controller's adapter in the pure core.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use drainwatch::evidence::event::{EventLine, EventName};
use drainwatch::evidence::ingress::join::{self, Joined};
use drainwatch::evidence::ingress::{self, IngressOutcome};
use drainwatch::evidence::plan::attach::ingress::IngressController;
use drainwatch::evidence::request_id::Spelling;

use crate::common::wait;

/// The services listen on every address; the proxy is given each at an address of its own, as
/// pods have, so the join maps an upstream to its service by IP as it maps one to a pod.
pub const STAYS_IP: &str = "127.0.0.2";
pub const GOES_IP: &str = "127.0.0.3";

/// One GET through the proxy on `web` with the route's Host; its status line, if any came.
pub fn get_status(web: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", web)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    s.write_all(b"GET / HTTP/1.1\r\nHost: shop.example\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.lines().next().map(str::to_string)
}

/// The client's recorded lines in `dir`.
pub fn event_lines(dir: &Path) -> Vec<EventLine> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The client's requests and dials in `lines`.
pub fn asked(lines: &[EventLine]) -> usize {
    lines
        .iter()
        .filter(|l| matches!(l.event, EventName::AttachRequest | EventName::AttachDial))
        .count()
}

/// The client's `lines` joined with `controller`'s access log `log`, once it holds every one of
/// them (a proxy writes a line as the response ends, maybe after the client read it, and may
/// flush its file later): every id logged carries `ours`' prefix, so none reads bare.
pub fn joined_once_logged(
    controller: IngressController,
    log: &Path,
    lines: &[EventLine],
    ours: &Spelling,
) -> Joined {
    let pods = BTreeMap::from([
        (STAYS_IP.to_string(), "shop-a".to_string()),
        (GOES_IP.to_string(), "shop-b".to_string()),
    ]);
    wait::until(
        format_args!("every client request in {}", log.display()),
        Duration::from_secs(15),
        || {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let accesses = ingress::accesses(controller, &text);
            if accesses.is_empty() {
                return None;
            }
            assert!(
                accesses
                    .iter()
                    .all(|a| a.line(0, &Spelling::default()).is_none()),
                "{text}"
            );
            let mut all = lines.to_vec();
            all.extend(accesses.iter().filter_map(|a| a.line(0, ours)));
            let j = join::join(&all, &pods);
            (j.not_logged == 0).then_some(j)
        },
    )
}

/// Every request of `joined` the proxy answered with `status` failed on shop-b, the service
/// that exited, with the `outcome` the proxy's log says (at least one) or one of `racing` (a
/// request the proxy sent on a pooled connection to shop-b as it exited), and shop-a answered
/// every one it was sent; their count.
pub fn failures_on_the_gone_service(
    joined: &Joined,
    status: u16,
    outcome: IngressOutcome,
    racing: &[IngressOutcome],
) -> usize {
    assert_eq!((joined.unclaimed, joined.duplicates), (0, 0), "{joined:#?}");
    // Each of the two held connections may have had one request in flight at the close, which
    // the proxy logs and the client abandons.
    assert!(joined.abandoned <= 2, "{joined:#?}");
    let failed: Vec<_> = joined
        .requests
        .iter()
        .filter(|r| r.status == Some(status))
        .collect();
    assert!(
        !failed.is_empty(),
        "no {status} after shop-b exited: {joined:#?}"
    );
    for r in &failed {
        let g = r.ingress.as_ref().unwrap();
        assert_eq!(g.pod.as_deref(), Some("shop-b"), "{r:?}");
        assert!(g.outcome == outcome || racing.contains(&g.outcome), "{r:?}");
    }
    let by_pod = joined.outcomes_by_pod();
    let outcomes_a: Vec<_> = by_pod[&Some("shop-a".into())].keys().copied().collect();
    assert_eq!(outcomes_a, [IngressOutcome::UpstreamStatus], "{by_pod:?}");
    let b = &by_pod[&Some("shop-b".into())];
    assert!(b.get(&outcome).is_some_and(|n| *n > 0), "{by_pod:?}");
    let on_b: u64 = std::iter::once(&outcome)
        .chain(racing)
        .filter_map(|o| b.get(o))
        .sum();
    assert_eq!(on_b, failed.len() as u64, "{by_pod:?}");
    failed.len()
}
