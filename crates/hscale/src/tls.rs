//! TLS to clients: the `[tls]` certificate loaded into a rustls server
//! configuration (ring provider), the client stream that is plain or TLS,
//! and the playground's self-signed certificate. The HTTP API's HTTPS
//! (`[http] tls`) uses the same certificate with ALPN (`http_acceptor`).
//!
//! ```text
//!  accept ─► ClientStream::Plain ─► greeting (CLIENT_SSL when [tls] is set)
//!            ─► SSLRequest (seq 1) ─► ClientStream::upgrade ─► ClientStream::Tls
//!            ─► HandshakeResponse (seq 2) over TLS ─► session
//! ```
//! The stream is one enum for both, so the session code is compiled once;
//! a plain connection pays one match per read or write.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use hscale_wire::compress::Compressed;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::config::TlsConfig;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("[tls] cert = {path:?}: {reason}")]
    Cert { path: String, reason: String },
    #[error("[tls] key = {path:?}: {reason}")]
    Key { path: String, reason: String },
    #[error("[tls]: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("generating a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("writing {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

impl From<TlsError> for io::Error {
    fn from(e: TlsError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidInput, e.to_string())
    }
}

/// The acceptor for `[tls]`, or `None` when no certificate is configured.
pub fn acceptor(tls: &TlsConfig) -> Result<Option<TlsAcceptor>, TlsError> {
    Ok(server_config(tls)?.map(|c| TlsAcceptor::from(Arc::new(c))))
}

/// The acceptor of the HTTP API (`[http] tls`): `[tls]`'s certificate,
/// offering HTTP/2 and HTTP/1.1 by ALPN (a client that names neither
/// speaks HTTP/1.1 or sends HTTP/2's preface: hyper-util reads which).
pub fn http_acceptor(tls: &TlsConfig) -> Result<Option<TlsAcceptor>, TlsError> {
    Ok(server_config(tls)?.map(|mut c| {
        c.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        TlsAcceptor::from(Arc::new(c))
    }))
}

fn server_config(tls: &TlsConfig) -> Result<Option<rustls::ServerConfig>, TlsError> {
    let (Some(cert), Some(key)) = (&tls.cert, &tls.key) else {
        return Ok(None);
    };
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::Cert {
            path: cert.clone(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Cert {
            path: cert.clone(),
            reason: "no certificate in the file".into(),
        });
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Key {
        path: key.clone(),
        reason: e.to_string(),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)?;
    Ok(Some(config))
}

/// Write a self-signed certificate for `localhost` / 127.0.0.1 and its key
/// into `dir` (`hscale-cert.pem`, `hscale-key.pem`) and return their paths.
pub fn self_signed(dir: &Path) -> Result<(PathBuf, PathBuf), TlsError> {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let certified = rcgen::generate_simple_self_signed(names)?;
    let cert = dir.join("hscale-cert.pem");
    let key = dir.join("hscale-key.pem");
    let write = |path: &Path, text: String| {
        std::fs::write(path, text).map_err(|source| TlsError::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    write(&cert, certified.cert.pem())?;
    write(&key, certified.signing_key.serialize_pem())?;
    Ok((cert, key))
}

/// A client's TLS session as MariaDB's `Ssl_version` and `Ssl_cipher`
/// name it (OpenSSL's names), for `SHOW STATUS` (`session/rewrite.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSession {
    pub version: String,
    pub cipher: String,
}

impl TlsSession {
    fn of(c: &rustls::ServerConnection) -> Option<TlsSession> {
        use rustls::{CipherSuite as C, ProtocolVersion as V};
        let version = match c.protocol_version()? {
            V::TLSv1_2 => "TLSv1.2".to_string(),
            V::TLSv1_3 => "TLSv1.3".to_string(),
            other => format!("{other:?}"),
        };
        let cipher = match c.negotiated_cipher_suite()?.suite() {
            C::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
            C::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
            C::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
            C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
            C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
            C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-ECDSA-CHACHA20-POLY1305",
            C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
            C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
            C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
            other => {
                return Some(TlsSession {
                    version,
                    cipher: format!("{other:?}"),
                })
            }
        };
        Some(TlsSession {
            version,
            cipher: cipher.to_string(),
        })
    }
}

/// A client connection: plain until the client asks for TLS.
pub enum ClientStream<S> {
    Plain(S),
    Tls(Box<TlsStream<Prefixed<S>>>),
    /// The compressed protocol (`CLIENT_COMPRESS`) over a plain or TLS
    /// stream, from the packet after the login OK on.
    Compressed(Box<Compressed<ClientStream<S>>>),
    /// Only while [`ClientStream::upgrade`] runs (or after it failed).
    Upgrading,
}

impl<S: AsyncRead + AsyncWrite + Unpin> ClientStream<S> {
    pub fn is_tls(&self) -> bool {
        match self {
            ClientStream::Tls(_) => true,
            ClientStream::Compressed(c) => c.get_ref().is_tls(),
            _ => false,
        }
    }

    /// The TLS session, when the client asked for TLS.
    pub fn tls_session(&self) -> Option<TlsSession> {
        match self {
            ClientStream::Tls(s) => TlsSession::of(s.get_ref().1),
            ClientStream::Compressed(c) => c.get_ref().tls_session(),
            _ => None,
        }
    }

    /// Speak the compressed protocol from now on (the client asked for
    /// `CLIENT_COMPRESS` and its login OK went out).
    pub fn compress(&mut self) {
        let inner = std::mem::replace(self, ClientStream::Upgrading);
        *self = ClientStream::Compressed(Box::new(Compressed::new(inner)));
    }

    /// Run the TLS server handshake on the plain stream. `early` holds the
    /// bytes the packet reader already took past the SSLRequest (the start
    /// of the client's TLS hello).
    pub async fn upgrade(&mut self, acceptor: &TlsAcceptor, early: Bytes) -> io::Result<()> {
        let ClientStream::Plain(inner) = std::mem::replace(self, ClientStream::Upgrading) else {
            return Err(io::Error::other("TLS requested twice"));
        };
        let tls = acceptor.accept(Prefixed { early, inner }).await?;
        *self = ClientStream::Tls(Box::new(tls));
        Ok(())
    }
}

fn upgrading() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "TLS handshake failed")
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for ClientStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            ClientStream::Compressed(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            ClientStream::Upgrading => Poll::Ready(Err(upgrading())),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for ClientStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            ClientStream::Compressed(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            ClientStream::Upgrading => Poll::Ready(Err(upgrading())),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
            ClientStream::Compressed(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
            ClientStream::Upgrading => Poll::Ready(Err(upgrading())),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            ClientStream::Plain(s) => s.is_write_vectored(),
            ClientStream::Tls(s) => s.is_write_vectored(),
            ClientStream::Compressed(s) => s.is_write_vectored(),
            ClientStream::Upgrading => false,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_flush(cx),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            ClientStream::Compressed(s) => Pin::new(s.as_mut()).poll_flush(cx),
            ClientStream::Upgrading => Poll::Ready(Err(upgrading())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ClientStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            ClientStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            ClientStream::Compressed(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            ClientStream::Upgrading => Poll::Ready(Ok(())),
        }
    }
}

/// A stream that first yields bytes already read from it.
pub struct Prefixed<S> {
    early: Bytes,
    inner: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.early.is_empty() {
            let n = this.early.len().min(buf.remaining());
            buf.put_slice(&this.early[..n]);
            this.early.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
