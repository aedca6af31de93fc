//! The HTTP listener (`[metrics] listen`): an axum [`Router`] served by
//! hyper 1 through hyper-util, HTTP/1.1 and HTTP/2 (prior knowledge) on one
//! port, on its own thread (a current-thread tokio runtime), so a request
//! never runs on a worker. [`routes`] serves `GET /metrics` (the page of
//! `metrics::exposition`) and 404 for everything else; the HTTP API
//! (`[http] listen`, `http_api`) is served by the same [`spawn`] with its
//! own routes, over TLS when `[http] tls` is set (HTTP/2 or HTTP/1.1 by
//! ALPN, `tls::http_acceptor`).
//!
//! Limits, as the hand-written responder had: a request head must arrive
//! within 5 s, a connection (its TLS handshake included) lives at most
//! 5 s, and an HTTP/1 connection
//! carries one request (the answer says `Connection: close`), so a client
//! reading to the end of the stream works. Malformed requests get hyper's
//! 400 (or 431 for an oversized head) and the connection closes.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use prometheus_client::registry::Registry;
use tokio_rustls::TlsAcceptor;

use crate::metrics::exposition;

/// How long a client may take to send a request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a connection may live.
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest request head (hyper's smallest buffer).
const MAX_HEAD: usize = 8 * 1024;

/// The routes: `/metrics` encodes `registry` at each request.
pub fn routes(registry: Arc<Registry>) -> Router {
    Router::new()
        .route("/metrics", get(metrics).fallback(not_found))
        .fallback(not_found)
        .with_state(registry)
}

async fn metrics(State(registry): State<Arc<Registry>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, exposition::CONTENT_TYPE)],
        exposition::text(&registry),
    )
}

async fn not_found() -> impl IntoResponse {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "only GET /metrics is served here\n",
    )
}

/// Serve `app` on `listener` until `stop` changes; over TLS only when
/// `tls` is given (HTTPS: a client that does not start a TLS handshake is
/// closed without an answer).
pub fn spawn<T: Send + Sync + 'static>(
    listener: std::net::TcpListener,
    app: Router,
    tls: Option<TlsAcceptor>,
    mut stop: tokio::sync::watch::Receiver<T>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("hscale-http".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!(error = %e, "HTTP listener cannot listen");
                        return;
                    }
                };
                let http = builder();
                loop {
                    tokio::select! {
                        _ = stop.changed() => return,
                        r = listener.accept() => match r {
                            Ok((stream, _)) => {
                                tokio::spawn(accepted(
                                    http.clone(),
                                    stream,
                                    tls.clone(),
                                    app.clone(),
                                ));
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "HTTP accept failed");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        }
                    }
                }
            });
        })
}

fn builder() -> Builder<TokioExecutor> {
    let mut http = Builder::new(TokioExecutor::new());
    http.http1()
        .keep_alive(false)
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        .timer(TokioTimer::new());
    http.http2()
        .max_concurrent_streams(16)
        .timer(TokioTimer::new());
    http
}

/// One connection, its TLS handshake included, within
/// [`CONNECTION_TIMEOUT`].
async fn accepted(
    http: Builder<TokioExecutor>,
    stream: tokio::net::TcpStream,
    tls: Option<TlsAcceptor>,
    app: Router,
) {
    let served = async move {
        match tls {
            None => serve(&http, stream, app).await,
            Some(tls) => match tls.accept(stream).await {
                Ok(stream) => serve(&http, stream, app).await,
                Err(e) => tracing::debug!(error = %e, "HTTPS handshake failed"),
            },
        }
    };
    if tokio::time::timeout(CONNECTION_TIMEOUT, served)
        .await
        .is_err()
    {
        tracing::debug!("HTTP connection timed out");
    }
}

async fn serve<I>(http: &Builder<TokioExecutor>, io: I, app: Router)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let connection = http.serve_connection(TokioIo::new(io), TowerToHyperService::new(app));
    if let Err(e) = connection.await {
        tracing::debug!(error = %e, "HTTP connection failed");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::io::{Read, Write};

    /// A listener serving a registry with one counter; stops when dropped.
    struct Served {
        addr: std::net::SocketAddr,
        _stop: tokio::sync::watch::Sender<()>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Drop for Served {
        fn drop(&mut self) {
            let _ = self._stop.send(());
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }

    fn served() -> Served {
        let mut registry = Registry::default();
        let c: prometheus_client::metrics::counter::Counter = Default::default();
        c.inc_by(7);
        registry.register("hscale_test", "A test counter.", c);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, rx) = tokio::sync::watch::channel(());
        let thread = spawn(listener, routes(Arc::new(registry)), None, rx).unwrap();
        Served {
            addr,
            _stop: stop,
            thread: Some(thread),
        }
    }

    /// Send `bytes` and read until the server closes (at most 10 s).
    fn exchange(addr: std::net::SocketAddr, bytes: &[u8]) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // The server may close before taking everything: not an error here.
        let _ = s.write_all(bytes);
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn get_metrics(addr: std::net::SocketAddr) -> String {
        exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: h\r\n\r\n")
    }

    #[test]
    fn serves_metrics_and_closes() {
        let s = served();
        let page = get_metrics(s.addr);
        assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
        assert!(
            page.contains("content-type: text/plain; version=0.0.4"),
            "{page}"
        );
        assert!(page.contains("connection: close"), "{page}");
        assert!(page.contains("\nhscale_test_total 7\n"), "{page}");
        let page = exchange(s.addr, b"GET /metrics?x=1 HTTP/1.0\r\n\r\n");
        assert!(page.contains("hscale_test_total 7"), "{page}");
        for other in [
            &b"GET /other HTTP/1.1\r\nHost: h\r\n\r\n"[..],
            b"POST /metrics HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nhi",
        ] {
            let page = exchange(s.addr, other);
            assert!(page.starts_with("HTTP/1.1 404 Not Found\r\n"), "{page}");
        }
    }

    #[test]
    fn malformed_requests_are_refused_and_the_listener_serves_on() {
        let s = served();
        let oversized = format!(
            "GET /metrics HTTP/1.1\r\nHost: h\r\nX: {}\r\n\r\n",
            "a".repeat(64 * 1024)
        );
        for (bad, status) in [
            (&b"\x00\x01\x02 garbage\r\n\r\n"[..], "400"),
            (b"GET /metrics HTTP/9.9\r\n\r\n", "400"),
            (b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", "400"),
            (b"GET /metrics HTTP/1.1\r\nContent-Length: x\r\n\r\n", "400"),
            (oversized.as_bytes(), "431"),
        ] {
            let answer = exchange(s.addr, bad);
            let line = answer.lines().next().unwrap_or_default();
            assert!(line.starts_with(&format!("HTTP/1.1 {status} ")), "{answer}");
        }
        // HTTP/2's preface, then frames that are not: a GOAWAY, no page.
        let answer = exchange(
            s.addr,
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        );
        assert!(!answer.contains("hscale_test"), "{answer}");
        // Half a head, then the client goes away.
        let mut half = std::net::TcpStream::connect(s.addr).unwrap();
        half.write_all(b"GET /met").unwrap();
        half.shutdown(std::net::Shutdown::Write).unwrap();
        let mut out = Vec::new();
        half.read_to_end(&mut out).unwrap();
        assert!(out.is_empty(), "{out:?}");
        drop(std::net::TcpStream::connect(s.addr).unwrap());
        let page = get_metrics(s.addr);
        assert!(page.contains("hscale_test_total 7"), "{page}");
    }
}
