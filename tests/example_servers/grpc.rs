//! grpc-good and grpc-bad with tonic's client: health SERVING, then NOT_SERVING once the
//! graceful one drains, its in-flight call finishing and held Watch calls ending with OK before
//! it exits 0; the abrupt one exits at once, cutting the call in flight. And TLS on the second
//! port with a certificate made here.

use std::time::Duration;

use http::uri::PathAndQuery;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

use crate::common::temp_dir;
use crate::h2c::{connect, drained};
use crate::support::Server;
use drainwatch::net::attach::h2_frames::Frame;

/// `drainwatch.example.SayRequest` (the proto is in examples/shared/grpc_echo.rs).
#[derive(Clone, PartialEq, prost::Message)]
struct SayRequest {
    #[prost(string, tag = "1")]
    message: String,
    #[prost(uint32, tag = "2")]
    delay_ms: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SayReply {
    #[prost(string, tag = "1")]
    message: String,
    #[prost(string, tag = "2")]
    served_by: String,
}

async fn channel(port: u16) -> Channel {
    Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

async fn say(ch: Channel, message: &str, delay_ms: u32) -> Result<Response<SayReply>, Status> {
    let mut grpc = tonic::client::Grpc::new(ch);
    grpc.ready().await.unwrap();
    let req = SayRequest {
        message: message.into(),
        delay_ms,
    };
    grpc.unary(
        Request::new(req),
        PathAndQuery::from_static("/drainwatch.example.Echo/Say"),
        tonic_prost::ProstCodec::default(),
    )
    .await
}

async fn check(ch: Channel, service: &str) -> Result<ServingStatus, Status> {
    let r: Response<HealthCheckResponse> = HealthClient::new(ch)
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await?;
    Ok(r.into_inner().status())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_examples_serve_health_and_say() {
    for (name, pod) in [("grpc-good", "grpc-good-a"), ("grpc-bad", "grpc-bad-a")] {
        let server = Server::start(name, pod, &[], 1);
        let ch = channel(server.port()).await;
        assert_eq!(check(ch.clone(), "").await.unwrap(), ServingStatus::Serving);
        assert_eq!(
            check(ch.clone(), "drainwatch.example.Echo").await.unwrap(),
            ServingStatus::Serving
        );
        assert_eq!(
            check(ch.clone(), "no.such.Service")
                .await
                .unwrap_err()
                .code(),
            tonic::Code::NotFound
        );
        let r = say(ch, "hi", 0).await.unwrap();
        assert_eq!(r.metadata().get("x-served-by").unwrap(), pod, "{name}");
        let reply = r.into_inner();
        assert_eq!(
            (reply.message.as_str(), reply.served_by.as_str()),
            ("hi", pod)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_graceful_example_drains_finishes_its_calls_and_exits_0() {
    let mut server = Server::start("grpc-good", "grpc-good-a", &[("DRAIN_DELAY", "1")], 1);
    let ch = channel(server.port()).await;
    let mut watch = HealthClient::new(ch.clone())
        .watch(HealthCheckRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        watch.message().await.unwrap().unwrap().status(),
        ServingStatus::Serving
    );
    // Held past the drain delay: in flight when the server closes its connections.
    let in_flight = tokio::spawn(say(ch.clone(), "held", 2500));
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.sigterm();
    assert_eq!(
        watch.message().await.unwrap().unwrap().status(),
        ServingStatus::NotServing
    );
    assert_eq!(
        check(ch.clone(), "").await.unwrap(),
        ServingStatus::NotServing
    );
    // Closing ends the held Watch call with OK, not with an error.
    assert!(watch.message().await.unwrap().is_none());
    let reply = in_flight.await.unwrap().unwrap().into_inner();
    assert_eq!(reply.message, "held");
    let code = tokio::task::spawn_blocking(move || server.wait(Duration::from_secs(15)))
        .await
        .unwrap();
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_abrupt_example_exits_at_once_cutting_the_call_in_flight() {
    let mut server = Server::start("grpc-bad", "grpc-bad-a", &[], 1);
    let ch = channel(server.port()).await;
    assert_eq!(check(ch.clone(), "").await.unwrap(), ServingStatus::Serving);
    let in_flight = tokio::spawn(say(ch.clone(), "held", 10_000));
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.sigterm();
    let code = tokio::task::spawn_blocking(move || server.wait(Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(code, Some(0));
    let err = in_flight.await.unwrap().unwrap_err();
    assert_ne!(err.code(), tonic::Code::Ok, "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_graceful_example_serves_tls_on_its_second_port() {
    let dir = temp_dir("grpc-tls");
    let leaf = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    std::fs::write(dir.join("tls.crt"), leaf.cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), leaf.signing_key.serialize_pem()).unwrap();
    let server = Server::start(
        "grpc-good",
        "grpc-good-tls",
        &[("TLS_DIR", dir.to_str().unwrap())],
        2,
    );
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(leaf.cert.pem()))
        .domain_name("localhost");
    let ch = Endpoint::from_shared(format!(
        "https://127.0.0.1:{}",
        server.ports["listening-tls"]
    ))
    .unwrap()
    .tls_config(tls)
    .unwrap()
    .connect()
    .await
    .unwrap();
    assert_eq!(check(ch.clone(), "").await.unwrap(), ServingStatus::Serving);
    let r = say(ch, "over tls", 0).await.unwrap();
    assert_eq!(r.metadata().get("x-served-by").unwrap(), "grpc-good-tls");
    // The plaintext port still serves beside it.
    let plain = channel(server.port()).await;
    assert_eq!(check(plain, "").await.unwrap(), ServingStatus::Serving);
}

/// The frames each example's HTTP/2 layer sends an idle connection on SIGTERM: GOAWAY NO_ERROR
/// from the graceful one (tonic's graceful shutdown), nothing from the abrupt one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_graceful_example_sends_goaway_and_the_abrupt_one_none() {
    for (name, graceful) in [("grpc-good", true), ("grpc-bad", false)] {
        let mut server = Server::start(name, name, &[], 1);
        let (send, conn, frames) = connect(server.port()).await;
        server.sigterm();
        let ended = conn.await.unwrap();
        drop(send);
        let code = tokio::task::spawn_blocking(move || server.wait(Duration::from_secs(15)))
            .await
            .unwrap();
        assert_eq!(code, Some(0), "{name}");
        let frames = drained(frames);
        if graceful {
            assert!(ended.is_ok(), "{name}: {ended:?}");
            assert!(!frames.is_empty(), "{name}: no GOAWAY seen");
            for f in &frames {
                assert!(
                    matches!(f, Frame::GoAway { code: 0, .. }),
                    "{name}: expected only GOAWAY NO_ERROR, saw {f:?}"
                );
            }
        } else {
            assert_eq!(frames, Vec::<Frame>::new(), "{name}");
        }
    }
}
