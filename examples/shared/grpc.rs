//! A tiny gRPC service for the attach examples, on tonic: `grpc.health.v1.Health`
//! (`grpc_health.rs`: SERVING, NOT_SERVING once draining; a Kubernetes `grpc:` readiness probe
//! reads it) and one unary method `drainwatch.example.Echo/Say` (`grpc_echo.rs`), every answer
//! carrying `x-served-by: $POD_NAME` metadata. What SIGTERM does is the example's point: see
//! `Shutdown`.
//!
//! Environment: `PORT` (default 8080; 0 picks a free port), `POD_NAME` (else the hostname),
//! `DRAIN_DELAY` seconds (default 5, the graceful example only), `TLS_DIR` (default /tls) and
//! `TLS_PORT` (default 8443): when `TLS_DIR` holds `tls.crt` and `tls.key` the same services
//! are also served over TLS (ALPN h2) on `TLS_PORT`; without them, plaintext only, said on
//! stderr. stdout: `listening <port>` first, then `listening-tls <port>` when TLS is served.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};
use tonic::transport::{Identity, Server, ServerTlsConfig};
use tonic_health::pb::health_server::HealthServer;

#[path = "grpc_echo.rs"]
mod echo;
#[path = "grpc_health.rs"]
mod health;
#[path = "listen.rs"]
mod listen;

/// What the service does on SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // each example binary compiles this module and constructs one variant
pub enum Shutdown {
    /// Health NOT_SERVING (readiness fails), keep serving for `DRAIN_DELAY` while endpoints
    /// drain, stop accepting once the accept queue is drained, end held Watch calls, then
    /// tonic's graceful shutdown: GOAWAY on every connection, in-flight calls finish, exit 0.
    Graceful,
    /// Exit at once: no GOAWAY, every call in flight is cut under its client's feet.
    Abrupt,
}

/// Longest wait for in-flight calls once closing began.
const FINISH: Duration = Duration::from_secs(10);

/// The TLS identity in `dir`, `None` (plaintext only) when the files are not there.
fn tls_identity(dir: &str) -> Option<Identity> {
    let read = |name: &str| {
        let path = format!("{dir}/{name}");
        match std::fs::read(&path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(2)
            }
        }
    };
    match (read("tls.crt"), read("tls.key")) {
        (Some(cert), Some(key)) => Some(Identity::from_pem(cert, key)),
        _ => {
            eprintln!("no {dir}/tls.crt and {dir}/tls.key: serving plaintext only");
            None
        }
    }
}

/// Serves the health and Echo services on `listener` (over TLS with `tls`) until `stop`:
/// accepting then ends with the accept queue drained (`listen::accept_loop`), which ends the
/// stream of connections tonic reads, and tonic shuts every connection down gracefully and
/// returns once they have all closed.
async fn serve(
    listener: TcpListener,
    tls: Option<Identity>,
    health: Arc<health::Health>,
    echo: echo::EchoServer,
    stop: watch::Receiver<bool>,
) -> Result<(), tonic::transport::Error> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(listen::accept_loop(listener, stop, move |r| match r {
        Ok((s, _)) => {
            // tonic reads the stream until it ends; a send fails only once it stopped.
            let _ = tx.send(s);
        }
        Err(e) => eprintln!("accept failed: {e}"),
    }));
    let incoming = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|s| (Ok::<_, std::io::Error>(s), rx))
    });
    let mut builder = Server::builder();
    if let Some(id) = tls {
        builder = builder.tls_config(ServerTlsConfig::new().identity(id))?;
    }
    // The end of `incoming` starts tonic's graceful shutdown; the signal never fires, but only
    // a server given one shuts its connections down gracefully (GOAWAY) rather than dropping.
    builder
        .add_service(HealthServer::from_arc(health))
        .add_service(echo)
        .serve_with_incoming_shutdown(incoming, std::future::pending())
        .await
}

async fn run(mode: Shutdown) -> std::io::Result<()> {
    let port = listen::env_port("PORT", 8080);
    let drain = Duration::from_secs(listen::env_u64("DRAIN_DELAY", 5));
    let tls_dir = std::env::var("TLS_DIR").unwrap_or_else(|_| "/tls".into());
    let tls = tls_identity(&tls_dir);
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let pod: Arc<str> = listen::pod_name().into();
    let health = health::Health::new(pod.clone());
    let echo = echo::EchoServer::new(pod);
    let (stop_tx, stop_rx) = watch::channel(false);

    let listener = listen::bind(port)?;
    println!("listening {}", listener.local_addr()?.port());
    let mut servers = vec![tokio::spawn(serve(
        listener,
        None,
        health.clone(),
        echo.clone(),
        stop_rx.clone(),
    ))];
    if let Some(id) = tls {
        let listener = listen::bind(listen::env_port("TLS_PORT", 8443))?;
        println!("listening-tls {}", listener.local_addr()?.port());
        servers.push(tokio::spawn(serve(
            listener,
            Some(id),
            health.clone(),
            echo,
            stop_rx,
        )));
    }

    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    if mode == Shutdown::Abrupt {
        eprintln!("SIGTERM: exiting at once");
        std::process::exit(0);
    }
    eprintln!("SIGTERM: health NOT_SERVING, serving for {drain:?} while endpoints drain");
    health.drain();
    tokio::time::sleep(drain).await;
    eprintln!("draining the accept queue, ending Watch calls, then GOAWAY on every connection");
    health.close();
    let _ = stop_tx.send(true);
    let finished = tokio::time::timeout(FINISH, async {
        for s in servers {
            match s.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => eprintln!("server failed: {e}"),
                Err(e) => eprintln!("server task failed: {e}"),
            }
        }
    })
    .await;
    match finished {
        Ok(()) => eprintln!("every connection closed: exiting"),
        Err(_) => eprintln!("calls still in flight after {FINISH:?}: exiting anyway"),
    }
    Ok(())
}

/// Runs the service until SIGTERM does what `mode` says.
pub fn main_with(mode: Shutdown) {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("failed to start the runtime: {e}");
            std::process::exit(2)
        }
    };
    if let Err(e) = rt.block_on(run(mode)) {
        eprintln!("service failed: {e}");
        std::process::exit(2)
    }
}
