//! HTTP/1.1 GETs to a port a pod serves on its own loopback only (Envoy's admin interface),
//! through a port-forward (`pods/portforward` create): the API server's pod proxy reaches only
//! the pod's address. One forward and one keep-alive connection are held per pod, so a poll
//! every 100 ms costs one request, not one WebSocket upgrade through the API server and the
//! kubelet each time.

use bytes::Bytes;
use futures::FutureExt;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::Portforwarder;
use tokio::task::JoinHandle;

/// Why a forwarded GET gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("port-forward to pod {pod} port {port}: {source}")]
    Open {
        pod: String,
        port: u16,
        #[source]
        source: kube::Error,
    },
    #[error("port-forward to pod {pod}: the API server gave no stream for port {port}")]
    NoStream { pod: String, port: u16 },
    #[error("HTTP over the port-forward to pod {pod} port {port}: {source}{said}")]
    Http {
        pod: String,
        port: u16,
        #[source]
        source: hyper::Error,
        /// What the kubelet said on the forward's error stream, if it said anything yet
        /// (e.g. nothing listens on the port).
        said: String,
    },
    #[error("GET {path} of pod {pod}: {source}")]
    Request {
        pod: String,
        path: String,
        #[source]
        source: http::Error,
    },
    #[error("GET {path} of pod {pod}: status {status}")]
    Status {
        pod: String,
        path: String,
        status: u16,
    },
    #[error("GET {path} of pod {pod}: the body is not UTF-8")]
    NotText { pod: String, path: String },
    #[error("GET {path} of pod {pod}: the answer is over {MAX_BODY} bytes")]
    TooLarge { pod: String, path: String },
}

impl ForwardError {
    /// The API server refused the forward itself (`pods/portforward` create not granted):
    /// asking again changes nothing.
    pub fn is_forbidden(&self) -> bool {
        matches!(self, Self::Open { source: kube::Error::Api(s), .. } if s.code == 403)
    }
}

/// The largest answer read: a controller's whole configuration of every tenant, bounded so that
/// one poll cannot hold the orchestrator's memory.
pub const MAX_BODY: usize = 16 * 1024 * 1024;

/// A keep-alive HTTP/1.1 connection to `port` on pod `pod`'s loopback.
pub struct PodHttp {
    pod: String,
    port: u16,
    sender: http1::SendRequest<Empty<Bytes>>,
    forward: Portforwarder,
    errors: Option<futures::future::BoxFuture<'static, Option<String>>>,
    conn: JoinHandle<()>,
}

impl PodHttp {
    /// Opens the forward to pod `ns/pod` and the HTTP connection over it.
    pub async fn open(
        client: &kube::Client,
        ns: &str,
        pod: &str,
        port: u16,
    ) -> Result<Self, ForwardError> {
        let name = format!("{ns}/{pod}");
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        let mut forward =
            api.portforward(pod, &[port])
                .await
                .map_err(|source| ForwardError::Open {
                    pod: name.clone(),
                    port,
                    source,
                })?;
        let stream = forward
            .take_stream(port)
            .ok_or_else(|| ForwardError::NoStream {
                pod: name.clone(),
                port,
            })?;
        let errors = forward.take_error(port).map(FutureExt::boxed);
        let handshake = http1::handshake(TokioIo::new(stream)).await;
        let (sender, conn) = match handshake {
            Ok(h) => h,
            Err(source) => {
                forward.abort();
                return Err(ForwardError::Http {
                    pod: name,
                    port,
                    source,
                    said: String::new(),
                });
            }
        };
        let conn = tokio::spawn(async move {
            // The connection's end is seen by the next request, which fails.
            let _ = conn.await;
        });
        Ok(Self {
            pod: name,
            port,
            sender,
            forward,
            errors,
            conn,
        })
    }

    /// GETs `path` and returns the body of a 2xx answer.
    pub async fn get(&mut self, path: &str) -> Result<String, ForwardError> {
        let req = http::Request::get(path)
            .header(http::header::HOST, "localhost")
            .body(Empty::new())
            .map_err(|source| ForwardError::Request {
                pod: self.pod.clone(),
                path: path.to_string(),
                source,
            })?;
        let sent = async {
            self.sender.ready().await?;
            let resp = self.sender.send_request(req).await?;
            let status = resp.status();
            let body = Limited::new(resp.into_body(), MAX_BODY).collect().await;
            Ok::<_, hyper::Error>((status, body))
        }
        .await;
        let (status, body) = sent.map_err(|source| ForwardError::Http {
            pod: self.pod.clone(),
            port: self.port,
            source,
            said: self.said(),
        })?;
        // Over the limit, or the connection failed while the body was read.
        let body = match body {
            Ok(b) => b.to_bytes(),
            Err(e) => match e.downcast::<hyper::Error>() {
                Ok(source) => {
                    return Err(ForwardError::Http {
                        pod: self.pod.clone(),
                        port: self.port,
                        source: *source,
                        said: self.said(),
                    });
                }
                Err(_) => {
                    return Err(ForwardError::TooLarge {
                        pod: self.pod.clone(),
                        path: path.to_string(),
                    });
                }
            },
        };
        if !status.is_success() {
            return Err(ForwardError::Status {
                pod: self.pod.clone(),
                path: path.to_string(),
                status: status.as_u16(),
            });
        }
        String::from_utf8(body.to_vec()).map_err(|_| ForwardError::NotText {
            pod: self.pod.clone(),
            path: path.to_string(),
        })
    }

    /// The kubelet's message on the forward's error stream, if one has come.
    fn said(&mut self) -> String {
        let Some(errors) = self.errors.as_mut() else {
            return String::new();
        };
        match errors.now_or_never() {
            Some(msg) => {
                self.errors = None;
                msg.map(|m| format!(" ({m})")).unwrap_or_default()
            }
            None => String::new(),
        }
    }
}

impl Drop for PodHttp {
    fn drop(&mut self) {
        self.conn.abort();
        self.forward.abort();
    }
}
