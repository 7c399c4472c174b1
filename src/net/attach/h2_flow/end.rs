//! How an HTTP/2 connection of a flow ended, from its GOAWAY, its failed streams and the
//! socket's end; and whether a failed exchange was ever seen by the server.

use super::Live;
use crate::evidence::attach::{FailureMechanism, names};
use crate::net::attach::emit::Failure;
use crate::net::attach::h2_conn::{ExchangeError, Failed, SocketEnd};
use crate::net::attach::h2_frames::code_name;

/// Whether the server never saw the exchange: the stream was not opened, or the server's
/// GOAWAY refused it (h2's remote GOAWAY error on a stream is for the streams above the last
/// stream id; a stream cut by the connection's end after it is an I/O error instead).
pub(super) fn unseen(e: &ExchangeError) -> bool {
    match e {
        ExchangeError::NotSent(_) => true,
        ExchangeError::Stream(h) => h.is_go_away() && h.is_remote(),
        ExchangeError::Timeout => false,
    }
}

/// How an ended connection ended: a GOAWAY with NO_ERROR and no stream failed is graceful
/// (`goaway`), as is a FIN with nothing open and nothing failed (`fin-idle`); a GOAWAY with an
/// error is `goaway-error`, streams failed after a GOAWAY `goaway-then-reset`, a FIN or RST
/// under open or failed streams with no GOAWAY `no-goaway` (errno: ECONNRESET for RST), an
/// idle reset `reset`, a kernel timeout `timeout`.
pub(super) fn conn_end(c: &Live) -> Result<&'static str, Failed> {
    let sock = c.end.lock().ok().and_then(|g| g.clone());
    let fail =
        |m: FailureMechanism, errno: Option<String>, detail: String, code: Option<u32>| Failed {
            failure: Failure {
                mechanism: m,
                errno,
                detail,
            },
            h2_code: code.map(code_name),
            grpc_code: None,
        };
    match c.goaway {
        Some((code, last)) if code != 0 => Err(fail(
            FailureMechanism::GoawayError,
            None,
            format!("GOAWAY {} (last stream {last})", code_name(code)),
            Some(code),
        )),
        Some((code, last)) if c.failed > 0 => Err(fail(
            FailureMechanism::GoawayThenReset,
            None,
            format!(
                "{} stream(s) failed after GOAWAY NO_ERROR (last stream {last})",
                c.failed
            ),
            Some(code),
        )),
        Some(_) => Ok(names::CLOSE_GOAWAY),
        None => {
            let streams = c.failed > 0;
            match sock {
                Some(SocketEnd::Error(f)) if f.mechanism == FailureMechanism::Timeout => {
                    Err(Failed::plain(f))
                }
                Some(SocketEnd::Error(f)) if streams => Err(fail(
                    FailureMechanism::NoGoaway,
                    f.errno.clone(),
                    format!("no GOAWAY; {}", f.detail),
                    None,
                )),
                Some(SocketEnd::Error(f)) => Err(Failed::plain(f)),
                Some(SocketEnd::Fin) if streams => Err(fail(
                    FailureMechanism::NoGoaway,
                    None,
                    "no GOAWAY; the server's FIN with streams open".into(),
                    None,
                )),
                Some(SocketEnd::Fin) => Ok(names::CLOSE_FIN_IDLE),
                None => match &c.ended {
                    Some(Err(e)) => Err(fail(
                        FailureMechanism::Error,
                        None,
                        format!("HTTP/2 connection: {e}"),
                        None,
                    )),
                    // The client's own close, with nothing left to send on: not the server's.
                    _ => Ok(names::CLOSE_FIN_IDLE),
                },
            }
        }
    }
}
