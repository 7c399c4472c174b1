//! `drainwatch client --attach --protocol http2` on loopback against an HTTP/2 server that
//! fails on purpose (`attach_h2/server.rs`, the h2 crate's server): a graceful GOAWAY loses
//! nothing and the flows reopen; GOAWAY then a reset, RST_STREAM, and an exit without GOAWAY
//! (FIN and RST) are each recorded with their mechanism and the HTTP/2 code; h2 over TLS by
//! ALPN, and a TLS server that does not select h2.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[allow(dead_code)]
#[path = "attach_h2/server.rs"]
mod h2_server;
#[allow(dead_code)]
#[path = "attach_client/support.rs"]
mod support;
#[allow(dead_code)]
#[path = "attach_ws/server.rs"]
mod ws_server;

use std::path::Path;
use std::sync::Arc;

use h2_server::{Fault, H2Server};
use serde_json::Value;
use support::*;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

fn run(port: u16, dir: &Path, extra: &[&str]) -> Value {
    let mut args = extra.to_vec();
    if !args.contains(&"--dial-rate") {
        args.extend(["--dial-rate", "5"]);
    }
    let c = client_with(port, "http2", 2, "2s", dir, &args);
    let r = finish(c, dir);
    assert_eq!(r["trial"]["config"]["attach"]["protocol"], "http2");
    r["trial"]["attach"].clone()
}

fn failures_with(at: &Value, mechanism: &str) -> Vec<Value> {
    let f = at["failures"].as_array().unwrap();
    f.iter()
        .filter(|f| f["mechanism"] == mechanism)
        .cloned()
        .collect()
}

#[test]
fn a_graceful_goaway_loses_nothing_and_the_flows_reopen() {
    let dir = common::temp_dir("h2-good");
    let s = H2Server::start(Fault::Graceful, 4);
    let at = run(s.port, &dir, &[]);
    let req = &at["requests"];
    assert!(count(req, "total") > 4, "{at:#}");
    assert_eq!(count(req, "failed"), 0, "{at:#}");
    let conns = &at["connections"];
    assert!(count(conns, "graceful_close") >= 2, "{at:#}");
    assert_eq!(count(conns, "severed"), 0, "{at:#}");
    assert!(count(conns, "reopened") >= 2, "{at:#}");
    let records = at["connection_records"].as_array().unwrap();
    let graceful: Vec<&Value> = records
        .iter()
        .filter(|c| c["outcome"] == "graceful-close")
        .collect();
    assert!(graceful.len() >= 2, "{at:#}");
    for c in graceful {
        assert_eq!(c["result"], "goaway", "{c:#}");
        assert_eq!(c["goaway_code"], "NO_ERROR", "{c:#}");
        assert!(c["goaway_t_ms"].is_i64(), "{c:#}");
        assert!(c["goaway_last_stream_id"].as_u64().unwrap() >= 7, "{c:#}");
    }
    assert!(count(&at["dials"], "served") > 0, "{at:#}");
    assert_eq!(count(&at["dials"], "failed"), 0, "{at:#}");
}

#[test]
fn a_goaway_then_a_reset_of_the_held_stream_is_goaway_then_reset() {
    let dir = common::temp_dir("h2-goaway-reset");
    let s = H2Server::start(Fault::GoawayThenReset, 3);
    let at = run(s.port, &dir, &[]);
    let f = failures_with(&at, "goaway-then-reset");
    assert!(!f.is_empty(), "{at:#}");
    assert!(
        f.iter()
            .all(|f| f["kind"] == "request" && f["h2_code"] == "CANCEL"),
        "{at:#}"
    );
    let sev = &at["connections"]["severed_by_mechanism"];
    assert!(count(sev, "goaway-then-reset") > 0, "{at:#}");
    assert!(count(&at["connections"], "reopened") > 0, "{at:#}");
}

#[test]
fn an_rst_stream_fails_that_request_with_its_code() {
    let dir = common::temp_dir("h2-rst");
    let s = H2Server::start(Fault::RstStream, 3);
    let at = run(s.port, &dir, &[]);
    let f = failures_with(&at, "rst-stream");
    // Once per connection: the connection goes on, so one per flow.
    assert_eq!(f.len(), 2, "{at:#}");
    assert!(f.iter().all(|f| f["h2_code"] == "INTERNAL_ERROR"), "{at:#}");
    assert_eq!(count(&at["requests"], "failed"), 2, "{at:#}");
    assert!(count(&at["requests"], "ok") > 2, "{at:#}");
}

#[test]
fn an_exit_without_goaway_is_no_goaway_by_fin_or_reset() {
    for (fault, errno) in [
        (Fault::ExitFin, Value::Null),
        (Fault::ExitRst, "ECONNRESET".into()),
    ] {
        let dir = common::temp_dir("h2-exit");
        let s = H2Server::start(fault, 3);
        let at = run(s.port, &dir, &["--dial-rate", "0"]);
        let f = failures_with(&at, "no-goaway");
        assert!(!f.is_empty(), "{fault:?}: {at:#}");
        assert!(f.iter().all(|f| f["kind"] == "request"), "{at:#}");
        let records = at["connection_records"].as_array().unwrap();
        let severed: Vec<&Value> = records
            .iter()
            .filter(|c| c["outcome"] == "severed")
            .collect();
        assert!(!severed.is_empty(), "{fault:?}: {at:#}");
        assert!(severed.iter().any(|c| c["result"] == "no-goaway"), "{at:#}");
        for c in &severed {
            // A reset that found no stream open (it hit a request being written, which is
            // then sent on the next connection) is the idle connection's plain reset.
            assert!(
                c["result"] == "no-goaway" || c["result"] == "reset",
                "{c:#}"
            );
            assert!(c.get("goaway_t_ms").is_none(), "{c:#}");
        }
        // A FIN from a server that exits with a request unread becomes the kernel's RST, so
        // the FIN case needs one FIN seen, the RST case all resets.
        let fins = f.iter().filter(|f| f["errno"].is_null()).count();
        match fault {
            Fault::ExitFin => assert!(fins > 0, "{at:#}"),
            _ => assert!(f.iter().all(|f| f["errno"] == errno), "{at:#}"),
        }
    }
}

/// A self-signed certificate for `localhost` into `dir/ca.pem`, served with ALPN `alpn`.
fn acceptor(dir: &Path, alpn: &[&[u8]]) -> TlsAcceptor {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.join("ca.pem"), ck.cert.pem()).unwrap();
    let cert: CertificateDer<'static> = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TlsAcceptor::from(Arc::new(config))
}

#[test]
fn h2_over_tls_by_alpn_and_a_server_that_does_not_select_h2() {
    let dir = common::temp_dir("h2-tls");
    let s = H2Server::start_with(Fault::Graceful, 4, Some(acceptor(&dir, &[b"h2"])));
    let ca = dir.join("ca.pem");
    let tls = [
        "--tls",
        "--ca-file",
        ca.to_str().unwrap(),
        "--server-name",
        "localhost",
    ];
    let at = run(s.port, &dir, &tls);
    assert!(count(&at["requests"], "ok") > 4, "{at:#}");
    assert_eq!(count(&at["requests"], "failed"), 0, "{at:#}");
    assert!(count(&at["connections"], "graceful_close") >= 2, "{at:#}");

    // A server with no ALPN completes the handshake without selecting h2: the client says
    // so (tls-error); one that speaks only http/1.1 refuses the handshake with the
    // no_application_protocol alert (tls-alert).
    for (alpn, mechanism) in [
        (&[][..], "tls-error"),
        (&[&b"http/1.1"[..]][..], "tls-alert"),
    ] {
        let dir = common::temp_dir("h2-tls-no-alpn");
        let s = H2Server::start_with(Fault::Graceful, 4, Some(acceptor(&dir, alpn)));
        let ca = dir.join("ca.pem");
        let tls = [
            "--tls",
            "--ca-file",
            ca.to_str().unwrap(),
            "--server-name",
            "localhost",
        ];
        let at = run(s.port, &dir, &tls);
        assert_eq!(count(&at["requests"], "ok"), 0, "{at:#}");
        assert!(
            count(&at["requests"]["failed_by_mechanism"], mechanism) > 0,
            "{at:#}"
        );
        assert!(
            count(&at["dials"]["failed_by_result"], mechanism) > 0,
            "{at:#}"
        );
    }
}
