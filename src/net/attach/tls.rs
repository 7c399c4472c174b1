//! TLS on drainwatch's own connected socket (tokio-rustls, the ring provider the crate already
//! builds rustls with): the socket is dialled and armed as on plain TCP, then wrapped, so its
//! end is still observed as FIN, RST or timeout with errno. Certificate verification fails
//! loudly unless `--insecure-skip-verify` turned it off, which the report records.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::crypto::{self, CryptoProvider};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    self, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use super::emit::Failure;
use crate::evidence::attach::AttachTls;

/// Why the TLS settings do not make a client.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// The CA file could not be read or held no certificate.
    #[error("--ca-file {path}: {why}")]
    CaFile {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
    /// The server name is not a DNS name or IP address.
    #[error("--server-name {0:?} is not a DNS name or an IP address")]
    ServerName(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// A TLS client: the connector and the name the server's certificate must carry.
pub struct Tls {
    connector: TlsConnector,
    name: ServerName<'static>,
    /// HTTP/2 and gRPC: ALPN `h2` offered, and its selection by the server required.
    h2: bool,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tls({:?})", self.name)
    }
}

/// Accepts any certificate: `--insecure-skip-verify` only. Signatures are still checked, so
/// the handshake itself is sound; the server's identity is not.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

impl Tls {
    /// The client `t` asks for; `h2` offers ALPN `h2` (HTTP/2 and gRPC) and requires the
    /// server to select it.
    pub fn new(t: &AttachTls, h2: bool) -> Result<Self, TlsSetupError> {
        let provider = Arc::new(crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?;
        let mut config = if t.insecure_skip_verify {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
                .with_no_client_auth()
        } else {
            builder
                .with_root_certificates(roots(t.ca_file.as_deref())?)
                .with_no_client_auth()
        };
        if h2 {
            config.alpn_protocols = vec![b"h2".to_vec()];
        }
        let name = ServerName::try_from(t.server_name.clone())
            .map_err(|_| TlsSetupError::ServerName(t.server_name.clone()))?;
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
            name,
            h2,
        })
    }

    /// The TLS handshake on `s` within `timeout`.
    pub async fn wrap(&self, s: TcpStream, timeout: Duration) -> Result<Conn, Failure> {
        match tokio::time::timeout(timeout, self.connector.connect(self.name.clone(), s)).await {
            // A server that does not select h2 would be spoken HTTP/2 to and answer something
            // else: a TLS failure of the dial, said as such, not a protocol error later.
            Ok(Ok(t)) if self.h2 && t.get_ref().1.alpn_protocol() != Some(b"h2") => Err(Failure {
                mechanism: crate::evidence::attach::FailureMechanism::TlsError,
                errno: None,
                detail: format!(
                    "TLS handshake: the server did not select ALPN h2 (selected {:?})",
                    t.get_ref().1.alpn_protocol().map(String::from_utf8_lossy)
                ),
            }),
            Ok(Ok(t)) => Ok(Conn::Tls(Box::new(t))),
            Ok(Err(e)) => Err(Failure::io("TLS handshake", &e)),
            Err(_) => Err(Failure::timeout("TLS handshake", timeout.as_millis())),
        }
    }
}

/// The trusted roots: the CA file's certificates (PEM).
fn roots(ca_file: Option<&str>) -> Result<RootCertStore, TlsSetupError> {
    let path = ca_file.unwrap_or_default();
    let err = |why: String| TlsSetupError::CaFile {
        path: path.to_string(),
        why,
    };
    let mut store = RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(path).map_err(|e| err(e.to_string()))? {
        let c = c.map_err(|e| err(e.to_string()))?;
        store.add(c).map_err(|e| err(e.to_string()))?;
    }
    if store.is_empty() {
        return Err(err("no certificate in it".into()));
    }
    Ok(store)
}

/// The CA file's text, once it is known to hold at least one PEM certificate rustls takes:
/// `run --target --tls` checks it before any trial and hands the text to the client pod.
pub fn read_ca(path: &str) -> Result<String, TlsSetupError> {
    let err = |why: String| TlsSetupError::CaFile {
        path: path.to_string(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let mut store = RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(text.as_bytes()) {
        let c = c.map_err(|e| err(format!("not PEM: {e}")))?;
        store.add(c).map_err(|e| err(e.to_string()))?;
    }
    if store.is_empty() {
        return Err(err("no PEM certificate in it".into()));
    }
    Ok(text)
}

/// A held connection: plain TCP, or TLS over it.
pub enum Conn {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over drainwatch's own TCP socket.
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            // A FIN without close_notify is read as the FIN it is, as on plain TCP: a
            // truncated response is still told by HTTP's framing, a WebSocket's end by its
            // close frame.
            Self::Tls(s) => match Pin::new(&mut **s).poll_read(cx, buf) {
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    Poll::Ready(Ok(()))
                }
                other => other,
            },
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, b),
            Self::Tls(s) => Pin::new(&mut **s).poll_write(cx, b),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Self::Tls(s) => Pin::new(&mut **s).poll_shutdown(cx),
        }
    }
}
