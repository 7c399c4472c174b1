//! `grpc.health.v1.Health` for the gRPC examples, on tonic-health's generated server: Check and
//! Watch answer SERVING until the service drains, NOT_SERVING after (what a Kubernetes `grpc:`
//! readiness probe reads), for the whole server ("") and for the Echo service. tonic-health's
//! own reporter is not used because its Watch calls never end: one held by a client would
//! keep that client's connection open past GOAWAY until the process is killed. Here every
//! Watch call ends with OK once the server starts closing its connections (`close`), so a
//! graceful shutdown ends every call it has.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use tokio::sync::watch;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse, health_server};

use super::echo;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Phase {
    serving: bool,
    closed: bool,
}

/// The health state the server's answers read, and the handle that changes it.
pub struct Health {
    pod: Arc<str>,
    phase: watch::Sender<Phase>,
}

impl Health {
    pub fn new(pod: Arc<str>) -> Arc<Self> {
        let (phase, _) = watch::channel(Phase {
            serving: true,
            closed: false,
        });
        Arc::new(Self { pod, phase })
    }

    /// From now on NOT_SERVING (readiness fails; Watch calls hear it).
    pub fn drain(&self) {
        self.phase.send_modify(|p| p.serving = false);
    }

    /// Ends every Watch call with OK: the server is closing its connections.
    pub fn close(&self) {
        self.phase.send_modify(|p| p.closed = true);
    }

    /// The status of `service` in `phase`; `None` for a service this server does not have.
    fn status(phase: Phase, service: &str) -> Option<ServingStatus> {
        (service.is_empty() || service == echo::SERVICE).then_some(if phase.serving {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        })
    }
}

fn answer(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse {
        status: status as i32,
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

#[tonic::async_trait]
impl health_server::Health for Health {
    async fn check(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        let phase = *self.phase.borrow();
        let status = Self::status(phase, &request.get_ref().service)
            .ok_or_else(|| Status::not_found("unknown service"))?;
        Ok(echo::served_by(Response::new(answer(status)), &self.pod))
    }

    type WatchStream = WatchStream;

    /// The current status at once, then each change, until `close`; an unknown service is
    /// SERVICE_UNKNOWN and stays so (the protocol's rule: the call is not ended for it).
    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let service = request.into_inner().service;
        let rx = self.phase.subscribe();
        let stream = futures::stream::unfold((rx, None), move |(mut rx, last)| {
            let service = service.clone();
            async move {
                loop {
                    let phase = *rx.borrow_and_update();
                    if phase.closed {
                        return None;
                    }
                    let status =
                        Self::status(phase, &service).unwrap_or(ServingStatus::ServiceUnknown);
                    if last != Some(status) {
                        return Some((Ok(answer(status)), (rx, Some(status))));
                    }
                    if rx.changed().await.is_err() {
                        return None;
                    }
                }
            }
        });
        let stream: WatchStream = Box::pin(stream);
        Ok(echo::served_by(Response::new(stream), &self.pod))
    }
}
