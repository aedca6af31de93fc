//! A pool of connections to one backend.
//!
//! Checkout is lock-free on the fast path: a semaphore permit (an atomic
//! decrement unless the pool is exhausted) and a pop from a lock-free queue.
//! The [`PooledConn`] guard returns the connection on drop without doing
//! I/O; broken connections are closed instead. A health-check task pings
//! idle connections and keeps `min_connections` open.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_queue::ArrayQueue;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::backend::BackendConn;
use crate::config::BackendConfig;
use crate::error::ProxyError;

pub struct Pool {
    pub cfg: BackendConfig,
    /// Idle connections, without and with `CLIENT_FOUND_ROWS`.
    idle: [ArrayQueue<BackendConn>; 2],
    permits: Arc<Semaphore>,
    open: AtomicUsize,
    is_up: AtomicBool,
    connect_timeout: Duration,
    acquire_timeout: Duration,
    connects: AtomicU64,
    connect_failures: AtomicU64,
}

/// Counters shown by `HSCALE SHOW BACKENDS` and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    pub open: usize,
    pub idle: usize,
    pub is_up: bool,
    pub connects: u64,
    pub connect_failures: u64,
}

impl Pool {
    pub fn new(
        cfg: BackendConfig,
        connect_timeout: Duration,
        acquire_timeout: Duration,
    ) -> Arc<Pool> {
        let max = cfg.max_connections.max(1);
        Arc::new(Pool {
            idle: [ArrayQueue::new(max), ArrayQueue::new(max)],
            permits: Arc::new(Semaphore::new(max)),
            open: AtomicUsize::new(0),
            is_up: AtomicBool::new(true),
            connect_timeout,
            acquire_timeout,
            connects: AtomicU64::new(0),
            connect_failures: AtomicU64::new(0),
            cfg,
        })
    }

    pub fn name(&self) -> &str {
        &self.cfg.name
    }

    pub fn stats(&self) -> PoolStats {
        PoolStats {
            open: self.open.load(Ordering::Relaxed),
            idle: self.idle[0].len() + self.idle[1].len(),
            is_up: self.is_up.load(Ordering::Relaxed),
            connects: self.connects.load(Ordering::Relaxed),
            connect_failures: self.connect_failures.load(Ordering::Relaxed),
        }
    }

    /// Borrow a connection, waiting up to the acquire timeout for one to be free.
    pub async fn get(self: &Arc<Self>, is_found_rows: bool) -> Result<PooledConn, ProxyError> {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                tokio::time::timeout(self.acquire_timeout, self.permits.clone().acquire_owned())
                    .await
                    .map_err(|_| ProxyError::PoolTimeout {
                        backend: self.cfg.name.clone(),
                        ms: self.acquire_timeout.as_millis() as u64,
                    })?
                    .map_err(|_| ProxyError::PoolTimeout {
                        backend: self.cfg.name.clone(),
                        ms: 0,
                    })?
            }
        };
        let variant = usize::from(is_found_rows);
        while let Some(conn) = self.idle[variant].pop() {
            if conn.is_alive_quick() {
                return Ok(PooledConn {
                    conn: Some(conn),
                    pool: self.clone(),
                    _permit: permit,
                });
            }
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
        // Make room: an idle connection of the other kind is closed so that
        // open connections never exceed max_connections.
        if self.idle[1 - variant].pop().is_some() {
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
        let conn = self.connect(is_found_rows).await?;
        Ok(PooledConn {
            conn: Some(conn),
            pool: self.clone(),
            _permit: permit,
        })
    }

    async fn connect(&self, is_found_rows: bool) -> Result<BackendConn, ProxyError> {
        self.open.fetch_add(1, Ordering::Relaxed);
        match BackendConn::connect(&self.cfg, is_found_rows, self.connect_timeout).await {
            Ok(c) => {
                self.connects.fetch_add(1, Ordering::Relaxed);
                if !self.is_up.swap(true, Ordering::Relaxed) {
                    tracing::info!(backend = %self.cfg.name, "backend is reachable again");
                }
                Ok(c)
            }
            Err(e) => {
                self.open.fetch_sub(1, Ordering::Relaxed);
                self.connect_failures.fetch_add(1, Ordering::Relaxed);
                if self.is_up.swap(false, Ordering::Relaxed) {
                    tracing::warn!(backend = %self.cfg.name, error = %e, "backend is unreachable");
                }
                Err(e)
            }
        }
    }

    fn put_back(&self, mut conn: BackendConn) {
        if conn.is_broken {
            self.open.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        conn.last_used = Instant::now();
        let variant = usize::from(conn.is_found_rows);
        if self.idle[variant].push(conn).is_err() {
            self.open.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// One round of health checks: ping connections idle for longer than
    /// `idle_for`, then open connections up to `min_connections`.
    pub async fn check(self: &Arc<Self>, idle_for: Duration) {
        for variant in 0..2 {
            let n = self.idle[variant].len();
            for _ in 0..n {
                let Some(mut conn) = self.idle[variant].pop() else {
                    break;
                };
                if conn.last_used.elapsed() >= idle_for {
                    if let Err(e) = conn.ping().await {
                        tracing::info!(backend = %self.cfg.name, error = %e, "closing a dead idle connection");
                        self.is_up.store(false, Ordering::Relaxed);
                    }
                }
                self.put_back(conn);
            }
        }
        while self.open.load(Ordering::Relaxed) < self.cfg.min_connections {
            match self.connect(false).await {
                Ok(c) => self.put_back(c),
                Err(_) => break,
            }
        }
    }
}

/// A borrowed connection; dropping it returns the connection to its pool.
pub struct PooledConn {
    conn: Option<BackendConn>,
    pool: Arc<Pool>,
    _permit: OwnedSemaphorePermit,
}

impl PooledConn {
    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }
}

impl Deref for PooledConn {
    type Target = BackendConn;
    fn deref(&self) -> &BackendConn {
        // The connection is only taken out in Drop.
        self.conn.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for PooledConn {
    fn deref_mut(&mut self) -> &mut BackendConn {
        self.conn.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for PooledConn {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.put_back(conn);
        }
    }
}
