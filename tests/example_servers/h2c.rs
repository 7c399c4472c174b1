//! good-shutdown and bad-shutdown speak h2c beside HTTP/1.1 on one port: an HTTP/2 client with
//! prior knowledge is answered, the graceful one sends GOAWAY NO_ERROR on SIGTERM and the
//! abrupt one closes without any. The frames are seen with drainwatch's own `Watched`.

use std::time::Duration;

use bytes::Bytes;
use drainwatch::net::attach::h2_frames::{Frame, Seen, Watched};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::support::Server;

/// An h2c connection to 127.0.0.1:`port`: the request handle, the connection's task (its
/// result: how it ended) and the frames the server sent.
pub async fn connect(
    port: u16,
) -> (
    h2::client::SendRequest<Bytes>,
    tokio::task::JoinHandle<Result<(), h2::Error>>,
    mpsc::UnboundedReceiver<Seen>,
) {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (io, frames) = Watched::new(tcp);
    let (send, conn) = h2::client::handshake(io).await.unwrap();
    (send, tokio::spawn(conn), frames)
}

/// GET `path`: the status, `x-served-by` and the body.
async fn get(send: &mut h2::client::SendRequest<Bytes>, path: &str) -> (u16, String, String) {
    let req = http::Request::get(format!("http://127.0.0.1{path}"))
        .body(())
        .unwrap();
    let (resp, _) = send
        .clone()
        .ready()
        .await
        .unwrap()
        .send_request(req, true)
        .unwrap();
    let resp = resp.await.unwrap();
    let status = resp.status().as_u16();
    let by = resp.headers()["x-served-by"].to_str().unwrap().to_string();
    let mut body = resp.into_body();
    let mut text = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        text.extend_from_slice(&chunk);
    }
    (status, by, String::from_utf8(text).unwrap())
}

pub fn drained(mut frames: mpsc::UnboundedReceiver<Seen>) -> Vec<Frame> {
    let mut out = Vec::new();
    while let Ok(s) = frames.try_recv() {
        out.push(s.frame);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_examples_answer_h2c_on_the_http_port() {
    for (name, pod) in [("good-shutdown", "good-h2"), ("bad-shutdown", "bad-h2")] {
        let server = Server::start(name, pod, &[], 1);
        let (mut send, _conn, _frames) = connect(server.port()).await;
        assert_eq!(
            get(&mut send, "/").await,
            (200, pod.to_string(), format!("hello from {pod}\n")),
            "{name}"
        );
        assert_eq!(get(&mut send, "/readyz").await.0, 200, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_graceful_example_sends_goaway_no_error_on_sigterm() {
    let mut server = Server::start("good-shutdown", "good-h2", &[("DRAIN_DELAY", "1")], 1);
    let (mut send, conn, frames) = connect(server.port()).await;
    assert_eq!(get(&mut send, "/").await.0, 200);
    server.sigterm();
    // While endpoints drain the connection still serves, readiness failing.
    let mut ready = 200;
    for _ in 0..100 {
        ready = get(&mut send, "/readyz").await.0;
        if ready == 503 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(ready, 503, "readiness never failed after SIGTERM");
    // `send` stays alive: an h2 client whose handles are all gone sends its own GOAWAY. The
    // server ends the connection gracefully, and the client's connection task ends cleanly.
    conn.await.unwrap().unwrap();
    drop(send);
    let code = tokio::task::spawn_blocking(move || server.wait(Duration::from_secs(15)))
        .await
        .unwrap();
    assert_eq!(code, Some(0));
    let frames = drained(frames);
    assert!(!frames.is_empty(), "no GOAWAY seen");
    for f in &frames {
        assert!(
            matches!(f, Frame::GoAway { code: 0, .. }),
            "expected only GOAWAY NO_ERROR, saw {f:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_abrupt_example_closes_without_goaway() {
    let mut server = Server::start("bad-shutdown", "bad-h2", &[], 1);
    let (mut send, conn, frames) = connect(server.port()).await;
    assert_eq!(get(&mut send, "/").await.0, 200);
    server.sigterm();
    let code = tokio::task::spawn_blocking(move || server.wait(Duration::from_secs(5)))
        .await
        .unwrap();
    assert_eq!(code, Some(0));
    // The connection ends (a bare FIN or a reset; h2 may call either an error or not).
    let _ = conn.await.unwrap();
    assert_eq!(
        drained(frames),
        Vec::<Frame>::new(),
        "no frame that ends anything"
    );
}
