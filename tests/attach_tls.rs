//! `drainwatch client --attach --tls` on loopback, with a certificate generated at test time
//! (rcgen): WebSocket, HTTP and TCP over TLS on drainwatch's own socket, a server certificate the
//! given CA does not vouch for (`tls-error`), a server's fatal alert (`tls-alert`), and
//! `--insecure-skip-verify` said in the report.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests panic on failed setup by design

mod common;
#[allow(dead_code)]
#[path = "attach_ws/server.rs"]
mod server;
#[allow(dead_code)]
#[path = "attach_client/support.rs"]
mod support;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use server::{Fault, WsServer};
use support::*;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};

/// A self-signed certificate for `localhost`: its PEM written to `dir/ca.pem` (the client's
/// CA file), and a TLS acceptor serving it; `client_auth` makes the server demand a client
/// certificate, which the client does not have.
fn acceptor(dir: &Path, client_auth: bool) -> TlsAcceptor {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.join("ca.pem"), ck.cert.pem()).unwrap();
    let cert: CertificateDer<'static> = ck.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = if client_auth {
        let mut roots = RootCertStore::empty();
        roots.add(cert.clone()).unwrap();
        let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap();
        builder.with_client_cert_verifier(v)
    } else {
        builder.with_no_client_auth()
    };
    let config = builder.with_single_cert(vec![cert], key).unwrap();
    TlsAcceptor::from(Arc::new(config))
}

fn run(dir: &Path, port: u16, protocol: &str, tls: &[&str]) -> Value {
    let mut extra = vec!["--dial-rate", "5", "--tls"];
    extra.extend_from_slice(tls);
    let c = client_with(port, protocol, 2, "2s", dir, &extra);
    finish(c, dir)
}

#[test]
fn websocket_over_tls_records_its_close_frames() {
    let dir = common::temp_dir("tls-ws");
    let s = WsServer::start_with(Fault::Close(1001), 3, Some(acceptor(&dir, false)));
    let ca = dir.join("ca.pem");
    let r = run(
        &dir,
        s.port,
        "websocket",
        &[
            "--ca-file",
            ca.to_str().unwrap(),
            "--server-name",
            "localhost",
        ],
    );
    let tls = &r["trial"]["config"]["attach"]["tls"];
    assert_eq!(tls["server_name"], "localhost", "{tls:#}");
    assert_eq!(tls["insecure_skip_verify"], false, "{tls:#}");
    let at = &r["trial"]["attach"];
    assert!(count(&at["connections"], "graceful_close") >= 2, "{at:#}");
    assert_eq!(at["failures"].as_array().unwrap().len(), 0, "{at:#}");
    assert!(count(&at["dials"], "served") > 0, "{at:#}");
    assert!(
        at["connection_records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["close_code"] == 1001),
        "{at:#}"
    );
}

#[test]
fn a_certificate_the_ca_does_not_vouch_for_is_a_tls_error() {
    let dir = common::temp_dir("tls-untrusted");
    let s = WsServer::start_with(Fault::Silent, 100, Some(acceptor(&dir, false)));
    // Another certificate as the CA: the server's is not signed by it.
    let other = common::temp_dir("tls-other-ca");
    let _ = acceptor(&other, false);
    let ca = other.join("ca.pem");
    let r = run(
        &dir,
        s.port,
        "tcp",
        &[
            "--ca-file",
            ca.to_str().unwrap(),
            "--server-name",
            "localhost",
        ],
    );
    let at = &r["trial"]["attach"];
    let dials = &at["dials"];
    assert!(count(dials, "total") > 0, "{at:#}");
    assert_eq!(count(dials, "served"), 0, "{at:#}");
    assert_eq!(count(dials, "failed"), count(dials, "total"), "{at:#}");
    assert_eq!(
        count(&dials["failed_by_result"], "tls-error"),
        count(dials, "failed"),
        "{at:#}"
    );
    let failures = at["failures"].as_array().unwrap();
    assert!(
        failures
            .iter()
            .any(|f| f["kind"] == "connection" && f["mechanism"] == "tls-error"),
        "{at:#}"
    );
}

#[test]
fn a_servers_fatal_alert_is_a_tls_alert() {
    let dir = common::temp_dir("tls-alert");
    // The server demands a client certificate; the client has none, and is told so by alert.
    let s = WsServer::start_with(Fault::Silent, 100, Some(acceptor(&dir, true)));
    let ca = dir.join("ca.pem");
    let r = run(
        &dir,
        s.port,
        "websocket",
        &[
            "--ca-file",
            ca.to_str().unwrap(),
            "--server-name",
            "localhost",
        ],
    );
    let at = &r["trial"]["attach"];
    let dials = &at["dials"];
    assert!(count(dials, "failed") > 0, "{at:#}");
    assert_eq!(
        count(&dials["failed_by_result"], "tls-alert"),
        count(dials, "failed"),
        "{at:#}"
    );
}

#[test]
fn insecure_skip_verify_is_said_in_the_report() {
    let dir = common::temp_dir("tls-insecure");
    let s = WsServer::start_with(Fault::Silent, 100, Some(acceptor(&dir, false)));
    // No CA file and a name the certificate does not carry: only skipping verification serves.
    let r = run(&dir, s.port, "tcp", &["--insecure-skip-verify"]);
    let tls = &r["trial"]["config"]["attach"]["tls"];
    assert_eq!(tls["insecure_skip_verify"], true, "{tls:#}");
    assert_eq!(tls["ca_file"], Value::Null, "{tls:#}");
    let at = &r["trial"]["attach"];
    let notes = at["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("verification OFF")),
        "{at:#}"
    );
    assert_eq!(count(&at["connections"], "total"), 2, "{at:#}");
    assert_eq!(
        count(&at["connections"], "survived_observation_window"),
        2,
        "{at:#}"
    );
    assert!(count(&at["dials"], "served") > 0, "{at:#}");
}

/// Answers every GET with 200 on keep-alive TLS connections.
fn https_server(acceptor: TlsAcceptor) -> (u16, tokio::runtime::Runtime) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (l, port, rt) = server::loopback_runtime();
    rt.spawn(async move {
        let l = tokio::net::TcpListener::from_std(l).unwrap();
        while let Ok((s, _)) = l.accept().await {
            let a = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut t) = a.accept(s).await else { return };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                loop {
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match t.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                    buf.drain(..end);
                    let ok =
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Served-By: tls-http\r\n\r\nok";
                    if t.write_all(ok).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, rt)
}

#[test]
fn http_over_tls_serves_requests() {
    let dir = common::temp_dir("tls-http");
    let (port, _rt) = https_server(acceptor(&dir, false));
    let ca = dir.join("ca.pem");
    let r = run(
        &dir,
        port,
        "http",
        &[
            "--ca-file",
            ca.to_str().unwrap(),
            "--server-name",
            "localhost",
        ],
    );
    let at = &r["trial"]["attach"];
    let req = &at["requests"];
    assert!(count(req, "ok") > 0, "{at:#}");
    assert_eq!(count(req, "failed"), 0, "{at:#}");
    assert!(
        count(&at["dials"]["served_by_instance"], "tls-http") > 0,
        "{at:#}"
    );
}
