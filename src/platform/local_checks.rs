//! The local platform's preflight helpers: the ports are free, the probe's /readyz answers,
//! and each check's outcome line.

use std::net::{TcpListener as StdTcpListener, UdpSocket as StdUdpSocket};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::PlatformError;
use crate::console;
use crate::evidence::plan::TrialConfig;
use crate::preflight::{self, Check};

pub(super) fn check_ok(c: &Check, started: tokio::time::Instant) {
    console::progress!("{}", preflight::line(c, true, started.elapsed()));
}

pub(super) fn check_fail(c: Check, started: tokio::time::Instant, why: String) -> PlatformError {
    console::failure!("{}", preflight::line(&c, false, started.elapsed()));
    PlatformError::Preflight(c.fail(why))
}

pub(super) fn ports_free(cfg: &TrialConfig, ready_port: u16) -> Result<(), String> {
    let host = "0.0.0.0";
    StdTcpListener::bind((host, cfg.tcp_port))
        .map_err(|e| format!("tcp port {} is taken: {e}", cfg.tcp_port))?;
    StdUdpSocket::bind((host, cfg.udp_port))
        .map_err(|e| format!("udp port {} is taken: {e}", cfg.udp_port))?;
    StdTcpListener::bind((host, ready_port))
        .map_err(|e| format!("readiness port {ready_port} is taken: {e}"))?;
    Ok(())
}

pub(super) async fn readyz(port: u16) -> Result<u16, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET /readyz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
        .await
        .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&buf);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| {
            format!(
                "unparseable response {:?}",
                text.lines().next().unwrap_or("")
            )
        })
}
