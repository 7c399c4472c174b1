//! Event lines of the attach client, stamped at the edge with the host's monotonic clock, and
//! the mapping from socket errors to the closed result names of `evidence::attach`.

use crate::evidence::attach::FailureMechanism;
use crate::evidence::event::{EventLine, EventName, Source};
use crate::host;
use crate::recorder::Sink;

use super::http::ExchangeError;

/// Sends the client's attach lines.
#[derive(Clone)]
pub struct Emitter {
    sink: Sink,
}

impl Emitter {
    /// An emitter into `sink`.
    pub fn new(sink: Sink) -> Self {
        Self { sink }
    }

    /// A client line for `event`, stamped now.
    pub fn line(&self, event: EventName) -> EventLine {
        let at = host::mono_ns();
        let mut l = EventLine::new(Source::Client, event, at);
        l.mono_ns = Some(at);
        l
    }

    /// Sends a line.
    pub fn send(&self, line: EventLine) {
        let _ = self.sink.send(line);
    }

    /// A connection event of `flow` generation `generation`.
    pub fn conn(&self, event: EventName, flow: &str, generation: u64, result: Option<&str>) {
        let mut l = self.line(event).flow(flow).seq(generation);
        l.result = result.map(str::to_string);
        self.send(l);
    }

    /// A connection event caused by a failure.
    pub fn conn_failed(&self, event: EventName, flow: &str, generation: u64, f: &Failure) {
        let mut l = self.line(event).flow(flow).seq(generation);
        f.fill(&mut l);
        self.send(l);
    }
}

/// A failure as recorded: mechanism, errno, and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The closed mechanism.
    pub mechanism: FailureMechanism,
    /// Symbolic errno, when the OS gave one.
    pub errno: Option<String>,
    /// Human detail.
    pub detail: String,
}

impl Failure {
    /// Sets `result`, `errno` and `detail` on `l`.
    pub fn fill(&self, l: &mut EventLine) {
        l.result = Some(self.mechanism.as_str().to_string());
        l.errno = self.errno.clone();
        l.detail = Some(self.detail.clone());
    }

    /// A timeout of `what` after `ms` milliseconds.
    pub fn timeout(what: &str, ms: u128) -> Self {
        Self {
            mechanism: FailureMechanism::Timeout,
            errno: None,
            detail: format!("{what}: no answer within {ms} ms"),
        }
    }

    /// The failure an OS error means.
    pub fn io(what: &str, e: &std::io::Error) -> Self {
        Self {
            mechanism: mechanism_of(e),
            errno: host::errno_name(e),
            detail: format!("{what}: {e}"),
        }
    }

    /// The failure a failed exchange means.
    pub fn exchange(e: &ExchangeError) -> Self {
        match e {
            ExchangeError::Io { op, source } => Self::io(&format!("socket {op}"), source),
            ExchangeError::Eof { .. } => Self {
                mechanism: FailureMechanism::Truncated,
                errno: None,
                detail: e.to_string(),
            },
            ExchangeError::Malformed(_) => Self {
                mechanism: FailureMechanism::Error,
                errno: None,
                detail: e.to_string(),
            },
        }
    }
}

/// The mechanism an OS error means: refused, reset, timeout (the kernel gave up: keepalive,
/// TCP_USER_TIMEOUT, SYN retries), a TLS alert or TLS error, else error.
pub fn mechanism_of(e: &std::io::Error) -> FailureMechanism {
    use std::io::ErrorKind as K;
    // TLS failures arrive as io::Error wrapping rustls's own error.
    if let Some(t) = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<tokio_rustls::rustls::Error>())
    {
        return match t {
            tokio_rustls::rustls::Error::AlertReceived(_) => FailureMechanism::TlsAlert,
            _ => FailureMechanism::TlsError,
        };
    }
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => return FailureMechanism::Refused,
        Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED) => {
            return FailureMechanism::Reset;
        }
        Some(libc::ETIMEDOUT) => return FailureMechanism::Timeout,
        _ => {}
    }
    match e.kind() {
        K::ConnectionRefused => FailureMechanism::Refused,
        K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted => FailureMechanism::Reset,
        K::TimedOut => FailureMechanism::Timeout,
        K::UnexpectedEof => FailureMechanism::Truncated,
        _ => FailureMechanism::Error,
    }
}

/// The result of a response with `status` when `expect` is the good one.
pub fn status_result(status: u16, expect: u16) -> Option<FailureMechanism> {
    if status == expect {
        None
    } else if (500..=599).contains(&status) {
        Some(FailureMechanism::Status5xx)
    } else {
        Some(FailureMechanism::UnexpectedStatus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_mechanisms() {
        let os = std::io::Error::from_raw_os_error;
        assert_eq!(
            mechanism_of(&os(libc::ECONNREFUSED)),
            FailureMechanism::Refused
        );
        assert_eq!(mechanism_of(&os(libc::ECONNRESET)), FailureMechanism::Reset);
        assert_eq!(mechanism_of(&os(libc::EPIPE)), FailureMechanism::Reset);
        assert_eq!(
            mechanism_of(&os(libc::ETIMEDOUT)),
            FailureMechanism::Timeout
        );
        assert_eq!(
            mechanism_of(&os(libc::EHOSTUNREACH)),
            FailureMechanism::Error
        );
        assert_eq!(status_result(200, 200), None);
        assert_eq!(status_result(503, 200), Some(FailureMechanism::Status5xx));
        assert_eq!(
            status_result(404, 200),
            Some(FailureMechanism::UnexpectedStatus)
        );
        assert_eq!(status_result(204, 204), None);
    }

    #[test]
    fn tls_failures_are_told_from_socket_ones() {
        use tokio_rustls::rustls::{AlertDescription, CertificateError, Error};
        let wrapped = |e: Error| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        assert_eq!(
            mechanism_of(&wrapped(Error::AlertReceived(
                AlertDescription::CertificateRequired
            ))),
            FailureMechanism::TlsAlert
        );
        assert_eq!(
            mechanism_of(&wrapped(Error::InvalidCertificate(
                CertificateError::UnknownIssuer
            ))),
            FailureMechanism::TlsError
        );
    }
}
