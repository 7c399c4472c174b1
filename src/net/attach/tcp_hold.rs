//! One held TCP connection with no payload: TCP keepalive and TCP_USER_TIMEOUT make a
//! black-holed peer end in ETIMEDOUT within a bound, so FIN, RST, timeout and survival are told
//! apart.

use std::net::SocketAddr;
use std::sync::Arc;

use socket2::{SockRef, TcpKeepalive};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::emit::{Emitter, Failure};
use super::{Settings, connect};
use crate::evidence::attach::names;
use crate::evidence::event::EventName;

/// Keepalive and user timeout on `s`, as configured.
fn arm(s: &TcpStream, cfg: &Settings) -> std::io::Result<()> {
    let sock = SockRef::from(s);
    let ka = TcpKeepalive::new()
        .with_time(cfg.keepalive_idle)
        .with_interval(cfg.keepalive_interval)
        .with_retries(cfg.keepalive_count);
    sock.set_tcp_keepalive(&ka)?;
    sock.set_tcp_user_timeout(Some(cfg.user_timeout).filter(|d| !d.is_zero()))
}

/// Holds flow `id` until it ends or `cancel`.
pub async fn run(
    id: String,
    addr: SocketAddr,
    cfg: Arc<Settings>,
    emit: Emitter,
    cancel: CancellationToken,
) {
    let s = tokio::select! {
        () = cancel.cancelled() => return,
        r = connect(addr, cfg.request_timeout) => match r {
            Ok(s) => s,
            Err(f) => {
                emit.conn_failed(EventName::AttachConnOpenFailed, &id, 1, &f);
                return;
            }
        },
    };
    if let Err(e) = arm(&s, &cfg) {
        // Without keepalive a black-holed connection would look alive: not a measurement.
        emit.conn_failed(
            EventName::AttachConnOpenFailed,
            &id,
            1,
            &Failure::io("setting TCP keepalive and TCP_USER_TIMEOUT", &e),
        );
        return;
    }
    let mut s = tokio::select! {
        () = cancel.cancelled() => return,
        r = cfg.wrap(s) => match r {
            Ok(s) => s,
            Err(f) => {
                emit.conn_failed(EventName::AttachConnOpenFailed, &id, 1, &f);
                return;
            }
        },
    };
    emit.conn(EventName::AttachConnOpened, &id, 1, None);
    let mut buf = [0u8; 4096];
    loop {
        tokio::select! {
            () = cancel.cancelled() => {
                emit.conn(EventName::AttachConnObservationEnd, &id, 1, None);
                return;
            }
            r = s.read(&mut buf) => match r {
                Ok(0) => {
                    emit.conn(EventName::AttachConnClosedGraceful, &id, 1, Some(names::CLOSE_FIN));
                    return;
                }
                // A banner or anything else the server says is not our business.
                Ok(_) => {}
                Err(e) => {
                    emit.conn_failed(EventName::AttachConnSevered, &id, 1, &Failure::io("socket read", &e));
                    return;
                }
            }
        }
    }
}
