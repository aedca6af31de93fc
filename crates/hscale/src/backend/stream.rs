//! The socket of one backend connection, whose reads give up: after
//! `[proxy] backend_read_timeout_ms` without a byte (when set), and as soon
//! as the health check found the backend frozen ([`BackendWatch`]), so a
//! statement on a server that stopped answering fails instead of waiting
//! for ever.
//!
//! No timer is touched per read: one timer per connection is armed when a
//! read first waits and moved only when it fires, so a read that waits
//! costs a clock read and an atomic load.
//!
//! The socket is plain TCP or TLS (`backend/tls.rs`, upgraded once during
//! the handshake by [`BackendStream::upgrade`]): one enum, so a plain
//! connection pays one `match` per read or write.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// What every connection to one backend (over all workers) watches.
#[derive(Debug)]
pub struct BackendWatch {
    is_frozen: AtomicBool,
    /// Longest wait for the next bytes of a response; `None`: no limit.
    pub read_timeout: Option<Duration>,
    /// Time a health-check ping (or probe connect) gets; also how often a
    /// waiting read looks at `is_frozen`.
    pub ping_timeout: Duration,
    /// Raised whenever the backend's global defaults of session variables
    /// may have changed (`SET GLOBAL` through the proxy, or a change the
    /// health check saw); a pooled connection opened or reset under an
    /// older value is reset at its next checkout (`Pool::get`).
    defaults: AtomicU64,
    /// When the backend was first found down (frozen, or a connect or
    /// ping failed) since it last answered, in ms since the Unix epoch; 0
    /// while it is up. For `HSCALE SHOW BACKENDS`.
    down_since_ms: AtomicU64,
    /// The address the dictionary names for this server now, when it is
    /// not the config's (a switchover or failover moved the backend to a
    /// replica, `admin/failover.rs`): read at every connect, never per
    /// statement. `None`: the config's address.
    address: std::sync::Mutex<Option<String>>,
    /// Raised whenever `address` changes: a pooled connection opened under
    /// an older value is closed at its next checkout (the raise also
    /// raises `defaults`, so the checkout's one comparison notices).
    address_generation: AtomicU64,
    /// The server run confirmed as the backend's primary by the newest
    /// dictionary (`backend/primary_check.rs`): its address generation
    /// and its start time. A connection to another run is confirmed
    /// before it is used.
    confirmed_run: std::sync::Mutex<Option<(u64, u64)>>,
}

impl BackendWatch {
    pub fn new(read_timeout: Option<Duration>, ping_timeout: Duration) -> BackendWatch {
        BackendWatch {
            is_frozen: AtomicBool::new(false),
            read_timeout,
            ping_timeout: ping_timeout.max(Duration::from_millis(10)),
            defaults: AtomicU64::new(0),
            down_since_ms: AtomicU64::new(0),
            address: std::sync::Mutex::new(None),
            address_generation: AtomicU64::new(0),
            confirmed_run: std::sync::Mutex::new(None),
        }
    }

    /// Whether the run of the server that started at `start` (Unix
    /// seconds) was confirmed as the primary under address `generation`.
    pub fn is_confirmed(&self, generation: u64, start: u64) -> bool {
        *self.confirmed_run.lock().unwrap_or_else(|p| p.into_inner()) == Some((generation, start))
    }

    /// Remember that run as confirmed (see `is_confirmed`).
    pub fn confirm(&self, generation: u64, start: u64) {
        *self.confirmed_run.lock().unwrap_or_else(|p| p.into_inner()) = Some((generation, start));
    }

    /// The address connections go to now: the dictionary's, or `config`.
    pub fn address(&self, config: &str) -> String {
        self.address
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .unwrap_or_else(|| config.to_string())
    }

    /// Point every connection to this backend made from now on at
    /// `address` (`None`: the config's); connections to the old one are
    /// closed at their next checkout. True if it changed.
    pub fn set_address(&self, address: Option<String>) -> bool {
        let mut a = self.address.lock().unwrap_or_else(|p| p.into_inner());
        if *a == address {
            return false;
        }
        *a = address;
        self.address_generation.fetch_add(1, Ordering::AcqRel);
        self.defaults_changed();
        // The new server has not been found down by anyone yet.
        self.set_frozen(false);
        self.note_up();
        true
    }

    /// The generation of `address` (see there).
    pub fn address_generation(&self) -> u64 {
        self.address_generation.load(Ordering::Acquire)
    }

    /// The backend was found down: the first such moment is kept.
    pub fn note_down(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_millis() as u64)
            .max(1);
        let first =
            self.down_since_ms
                .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        if first.is_ok() {
            // Back, it may be an old primary that a switch retired
            // meanwhile: confirmed again (`backend/pool/primary_check.rs`).
            *self.confirmed_run.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// The backend answered (a connect succeeded, a probe got a reply).
    pub fn note_up(&self) {
        self.down_since_ms.store(0, Ordering::Relaxed);
    }

    /// When it was first found down since it last answered (ms since the
    /// Unix epoch), if it is down.
    pub fn down_since_ms(&self) -> Option<u64> {
        Some(self.down_since_ms.load(Ordering::Relaxed)).filter(|&ms| ms != 0)
    }

    /// The generation of the backend's global session defaults.
    pub fn defaults(&self) -> u64 {
        self.defaults.load(Ordering::Acquire)
    }

    /// The global session defaults may have changed: every pooled
    /// connection is reset before its next use.
    pub fn defaults_changed(&self) {
        self.defaults.fetch_add(1, Ordering::AcqRel);
    }

    /// The backend did not answer a health check in time.
    pub fn is_frozen(&self) -> bool {
        self.is_frozen.load(Ordering::Relaxed)
    }

    /// Record whether the backend answers; true when that changed.
    pub fn set_frozen(&self, is_frozen: bool) -> bool {
        if is_frozen {
            self.note_down();
        }
        self.is_frozen.swap(is_frozen, Ordering::Relaxed) != is_frozen
    }
}

impl Default for BackendWatch {
    fn default() -> Self {
        BackendWatch::new(None, Duration::from_secs(3))
    }
}

/// The socket under a [`BackendStream`].
enum Socket {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// A backend socket with read deadlines (see the module docs).
pub struct BackendStream {
    socket: Socket,
    watch: Arc<BackendWatch>,
    /// Off while the connection authenticates: a probe of a frozen backend
    /// must be able to succeed.
    is_watched: bool,
    /// When the current read began to wait.
    waiting_since: Option<Instant>,
    timer: Pin<Box<Sleep>>,
    is_armed: bool,
}

impl BackendStream {
    pub fn new(tcp: TcpStream, watch: Arc<BackendWatch>) -> BackendStream {
        BackendStream {
            socket: Socket::Plain(tcp),
            watch,
            is_watched: false,
            waiting_since: None,
            timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
            is_armed: false,
        }
    }

    pub fn tcp(&self) -> &TcpStream {
        match &self.socket {
            Socket::Plain(t) => t,
            Socket::Tls(t) => t.get_ref().0,
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self.socket, Socket::Tls(_))
    }

    /// Cheap liveness check of an idle connection: a dead peer shows as
    /// EOF, and a server going down may have sent something (an error, a
    /// TLS alert). Never consumes bytes of a TLS stream (it peeks).
    pub fn is_alive_quick(&self) -> bool {
        let mut b = [0u8; 1];
        let r = match &self.socket {
            Socket::Plain(t) => t.try_read(&mut b),
            Socket::Tls(t) => {
                let mut p = [std::mem::MaybeUninit::<u8>::uninit(); 1];
                socket2::SockRef::from(t.get_ref().0).peek(&mut p)
            }
        };
        match r {
            Err(e) => e.kind() == io::ErrorKind::WouldBlock,
            Ok(_) => false,
        }
    }

    /// Wait until the server closes this idle connection or sends on it
    /// unasked (its wait_timeout, a KILL, a shutdown): a server sends
    /// nothing to an idle client otherwise. Readiness without a byte
    /// (spurious) is cleared and waited on again; nothing is consumed.
    pub async fn closed_while_idle(&self) {
        let tcp = self.tcp();
        loop {
            if tcp.readable().await.is_err() {
                return;
            }
            let mut b = [std::mem::MaybeUninit::<u8>::uninit(); 1];
            let peeked = tcp.try_io(tokio::io::Interest::READABLE, || {
                socket2::SockRef::from(tcp).peek(&mut b)
            });
            match peeked {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                _ => return,
            }
        }
    }

    /// Run the TLS client handshake on the plain socket (after the
    /// SSLRequest went out).
    pub async fn upgrade(self, tls: &crate::backend::tls::BackendTls) -> io::Result<BackendStream> {
        let Socket::Plain(tcp) = self.socket else {
            return Err(io::Error::other("TLS requested twice"));
        };
        let s = tls.connector.connect(tls.server_name.clone(), tcp).await?;
        Ok(BackendStream {
            socket: Socket::Tls(Box::new(s)),
            ..self
        })
    }

    /// Start applying the watch (after authentication).
    pub fn watch(&mut self) {
        self.is_watched = true;
    }

    /// Why a read that has waited since `since` must give up now, if it must.
    fn give_up(&self, since: Instant, now: Instant) -> Option<io::Error> {
        if self.watch.is_frozen() {
            return Some(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the backend stopped answering (a health check got no reply within {} ms)",
                    self.watch.ping_timeout.as_millis()
                ),
            ));
        }
        let limit = self.watch.read_timeout?;
        (now >= since + limit).then(|| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no reply within {} ms ([proxy] backend_read_timeout_ms)",
                    limit.as_millis()
                ),
            )
        })
    }
}

impl AsyncRead for BackendStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let read = match &mut this.socket {
            Socket::Plain(t) => Pin::new(t).poll_read(cx, buf),
            Socket::Tls(t) => Pin::new(t.as_mut()).poll_read(cx, buf),
        };
        if let Poll::Ready(r) = read {
            this.waiting_since = None;
            return Poll::Ready(r);
        }
        if !this.is_watched {
            return Poll::Pending;
        }
        let now = Instant::now();
        let since = *this.waiting_since.get_or_insert(now);
        if let Some(e) = this.give_up(since, now) {
            this.waiting_since = None;
            return Poll::Ready(Err(e));
        }
        loop {
            if !this.is_armed {
                let mut due = Instant::now() + this.watch.ping_timeout;
                if let Some(limit) = this.watch.read_timeout {
                    due = due.min(since + limit);
                }
                this.timer.as_mut().reset(due);
                this.is_armed = true;
            }
            if this.timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            // Fired (perhaps armed during an earlier wait): look again.
            this.is_armed = false;
            if let Some(e) = this.give_up(since, Instant::now()) {
                this.waiting_since = None;
                return Poll::Ready(Err(e));
            }
        }
    }
}

impl AsyncWrite for BackendStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().socket {
            Socket::Plain(t) => Pin::new(t).poll_write(cx, buf),
            Socket::Tls(t) => Pin::new(t.as_mut()).poll_write(cx, buf),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().socket {
            Socket::Plain(t) => Pin::new(t).poll_flush(cx),
            Socket::Tls(t) => Pin::new(t.as_mut()).poll_flush(cx),
        }
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().socket {
            Socket::Plain(t) => Pin::new(t).poll_shutdown(cx),
            Socket::Tls(t) => Pin::new(t.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn pair(watch: Arc<BackendWatch>) -> (BackendStream, TcpStream) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        let mut b = BackendStream::new(c, watch);
        b.watch();
        (b, s)
    }

    #[tokio::test]
    async fn a_read_gives_up_after_the_read_timeout() {
        let watch = Arc::new(BackendWatch::new(
            Some(Duration::from_millis(200)),
            Duration::from_secs(5),
        ));
        let (mut b, mut peer) = pair(watch).await;
        let mut buf = [0u8; 4];
        peer.write_all(b"ab").await.unwrap();
        assert_eq!(b.read(&mut buf).await.unwrap(), 2);
        let start = std::time::Instant::now();
        let e = b.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(190) && took < Duration::from_secs(2),
            "{took:?}"
        );
    }

    #[tokio::test]
    async fn a_waiting_read_notices_a_frozen_backend() {
        let watch = Arc::new(BackendWatch::new(None, Duration::from_millis(100)));
        let (mut b, _peer) = pair(watch.clone()).await;
        let w = watch.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            w.set_frozen(true);
        });
        let start = std::time::Instant::now();
        let mut buf = [0u8; 4];
        let e = b.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(290) && took < Duration::from_secs(2),
            "{took:?}"
        );
    }
}
