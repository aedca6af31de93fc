//! Sessions across HTTP requests (`POST /v1/sql` with `"session"`): a
//! transaction begun in one request, continued and committed in others.
//!
//! A session is one login to the proxy's own MySQL listener kept open
//! between requests, under a random token the first answer carries. Each
//! later request names the token and still authenticates (Basic or
//! bearer); the token is refused to any other user or password (404, as
//! an unknown one: a token does not say whether it exists to someone
//! else). One request at a time per session (a second one meanwhile is
//! 409). A session idle for `[http] session_idle_ms` (60 s by default) is
//! closed within a tenth of that time more (at most 5 s more), which ends
//! its MySQL session as a client that went away does: an open transaction
//! is rolled back.
//! `"close": true` closes it after the request's statement; so does
//! `DELETE /v1/sessions/{token}`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::backend::BackendConn;

/// Sessions open at once, over every user.
pub const MAX_SESSIONS: usize = 1000;

/// One session: its login's credentials and its connection.
pub struct Held {
    user: String,
    password: String,
    /// `None` once closed.
    pub conn: tokio::sync::Mutex<Option<BackendConn>>,
    last_used: Mutex<Instant>,
}

impl Held {
    pub fn touch(&self) {
        if let Ok(mut t) = self.last_used.lock() {
            *t = Instant::now();
        }
    }

    fn idle_for(&self, now: Instant) -> Duration {
        self.last_used
            .lock()
            .map(|t| now.saturating_duration_since(*t))
            .unwrap_or_default()
    }
}

/// Every open session, by token.
pub struct Sessions {
    open: Mutex<HashMap<String, Arc<Held>>>,
    idle: Duration,
    /// The sweep runs (started by the first session, on the runtime
    /// serving the API: `routes` runs before that runtime exists).
    is_swept: std::sync::atomic::AtomicBool,
}

impl Sessions {
    /// No session yet; each one left idle for `idle` is closed.
    pub fn new(idle: Duration) -> Self {
        Sessions {
            open: Mutex::default(),
            idle,
            is_swept: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

/// Why a session was not found or opened.
pub enum Refusal {
    /// No session with this token for these credentials.
    Unknown,
    /// [`MAX_SESSIONS`] are open.
    Full,
}

impl Sessions {
    /// A new session holding `conn`, and its token. Called on the
    /// runtime serving the API, which the first call starts the sweep on.
    pub fn open(
        self: &Arc<Self>,
        user: &str,
        password: &str,
        conn: BackendConn,
    ) -> Result<(String, Arc<Held>), Refusal> {
        let mut bytes = [0u8; 16];
        if getrandom::fill(&mut bytes).is_err() {
            return Err(Refusal::Full);
        }
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let held = Arc::new(Held {
            user: user.to_string(),
            password: password.to_string(),
            conn: tokio::sync::Mutex::new(Some(conn)),
            last_used: Mutex::new(Instant::now()),
        });
        let mut open = self.open.lock().map_err(|_| Refusal::Full)?;
        if open.len() >= MAX_SESSIONS {
            return Err(Refusal::Full);
        }
        open.insert(token.clone(), held.clone());
        drop(open);
        if !self
            .is_swept
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            self.keep_swept();
        }
        Ok((token, held))
    }

    /// The session `token` of this user and password.
    pub fn find(&self, token: &str, user: &str, password: &str) -> Result<Arc<Held>, Refusal> {
        let open = self.open.lock().map_err(|_| Refusal::Unknown)?;
        match open.get(token) {
            Some(h)
                if h.user == user
                    && super::same_secret(password.as_bytes(), h.password.as_bytes()) =>
            {
                Ok(h.clone())
            }
            _ => Err(Refusal::Unknown),
        }
    }

    /// Forget `token`'s session; its connection closes when the last
    /// request holding it ends.
    pub fn remove(&self, token: &str) -> Option<Arc<Held>> {
        self.open.lock().ok()?.remove(token)
    }

    /// Close the sessions idle for their idle time (`session_idle_ms`).
    fn sweep(&self) {
        let now = Instant::now();
        let idle: Vec<Arc<Held>> = match self.open.lock() {
            Ok(mut open) => {
                let tokens: Vec<String> = open
                    .iter()
                    .filter(|(_, h)| h.idle_for(now) >= self.idle)
                    .map(|(t, _)| t.clone())
                    .collect();
                tokens.iter().filter_map(|t| open.remove(t)).collect()
            }
            Err(_) => return,
        };
        for h in idle {
            // A request still running on it keeps it until it ends.
            if let Ok(mut conn) = h.conn.try_lock() {
                conn.take();
            }
        }
    }

    /// Sweep every tenth of the idle time (at most every 5 s) while the
    /// API lives, on the current runtime (the one serving the API).
    fn keep_swept(self: &Arc<Self>) {
        let every = (self.idle / 10).min(Duration::from_secs(5));
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let weak: Weak<Sessions> = Arc::downgrade(self);
        rt.spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                match weak.upgrade() {
                    Some(s) => s.sweep(),
                    None => return,
                }
            }
        });
    }
}
