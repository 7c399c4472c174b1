//! One exchange of an HTTP/2 flow on a new stream: the arm's gRPC call, or a GET judged by
//! its status.

use bytes::Bytes;
use h2::client::SendRequest;

use crate::evidence::attach::AttachProtocol;
use crate::net::attach::Settings;
use crate::net::attach::emit::Failure;
use crate::net::attach::grpc_call;
use crate::net::attach::h2_conn::{self, Answer, Called, ExchangeError, Failed};

/// The HTTP/2 GET of `--path`; no body.
pub fn get(cfg: &Settings) -> (http::Request<()>, Option<Bytes>) {
    let scheme = if cfg.tls.is_some() { "https" } else { "http" };
    let uri = format!("{scheme}://{}:{}{}", cfg.host, cfg.port, cfg.path);
    let mut r = http::Request::new(());
    *r.uri_mut() = uri.parse().unwrap_or_default();
    r.headers_mut().insert(
        http::header::USER_AGENT,
        http::HeaderValue::from_static("drainwatch"),
    );
    (r, None)
}

/// One exchange on a new stream of `send`: the arm's gRPC call (tonic's client), or the
/// HTTP/2 GET judged by its status.
pub async fn call(send: SendRequest<Bytes>, cfg: &Settings) -> Result<Called, ExchangeError> {
    if cfg.protocol == AttachProtocol::Grpc {
        return grpc_call::call(send, cfg).await;
    }
    let (req, body) = get(cfg);
    let a = h2_conn::exchange(send, req, body, cfg.request_timeout).await?;
    Ok(Called {
        status: Some(a.status),
        verdict: judge(cfg, &a),
        headers: a.headers,
    })
}

/// Whether an HTTP/2 answer is a success: the expected status.
fn judge(cfg: &Settings, a: &Answer) -> Result<(), Failed> {
    match crate::net::attach::emit::status_result(a.status, cfg.expect_status) {
        None => Ok(()),
        Some(m) => Err(Failed::plain(Failure {
            mechanism: m,
            errno: None,
            detail: format!("status {}", a.status),
        })),
    }
}
