//! The `/metrics` endpoint: a minimal HTTP/1.x responder on its own thread
//! (a current-thread tokio runtime), so a scrape never runs on a worker.
//! It reads one request head (at most 8 KiB, 5 s), answers `GET /metrics`
//! with the text [`super::render`] writes, anything else with 404, and
//! closes the connection. No crate needed: Prometheus asks for nothing more.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Longest request head read.
const MAX_HEAD: usize = 8 * 1024;

/// Serve `scrape()` on `listener` until `stop` changes.
pub fn spawn<T: Send + Sync + 'static>(
    listener: std::net::TcpListener,
    scrape: Arc<dyn Fn() -> String + Send + Sync>,
    mut stop: tokio::sync::watch::Receiver<T>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("hscale-metrics".into())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::error!(error = %e, "metrics endpoint cannot listen");
                        return;
                    }
                };
                loop {
                    tokio::select! {
                        _ = stop.changed() => return,
                        r = listener.accept() => match r {
                            Ok((stream, _)) => {
                                let scrape = scrape.clone();
                                tokio::spawn(async move {
                                    let _ = tokio::time::timeout(
                                        Duration::from_secs(5),
                                        answer(stream, &*scrape),
                                    )
                                    .await;
                                });
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "metrics accept failed");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        }
                    }
                }
            });
        })
}

async fn answer(mut stream: TcpStream, scrape: &(dyn Fn() -> String + Send + Sync)) {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > MAX_HEAD {
            return;
        }
    }
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut words = line.split(|&b| b == b' ');
    let (method, path) = (words.next(), words.next());
    let (status, body) = match (method, path) {
        (Some(b"GET"), Some(p)) if p == b"/metrics" || p.starts_with(b"/metrics?") => {
            ("200 OK", scrape())
        }
        _ => ("404 Not Found", "only GET /metrics is served here\n".into()),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
}
