//! A live session as the rest of the proxy sees it (`SessionHandle`):
//! what KILL and PROCESSLIST read, what wakes an idle session, and its
//! transaction across backends as `HSCALE SHOW TRANSACTIONS` lists it
//! (`Published`, which `exec/txn/published.rs` writes).

use super::*;

/// What KILL needs to know about a session. Its lock is taken when a
/// statement starts or ends on a backend connection and by KILL; it is
/// never shared with another session's statements.
pub struct SessionHandle {
    pub user: Mutex<String>,
    /// The client's address as PROCESSLIST shows it (`ip:port`, or
    /// `localhost` for the unix socket).
    pub host: String,
    /// What the session does now (PROCESSLIST); locked when a command
    /// starts and ends and by PROCESSLIST.
    activity: Mutex<Activity>,
    /// `(backend, backend thread id)` of every connection a statement of
    /// this session runs on now (several for a statement over partitions).
    running: Mutex<Vec<(BackendId, u32)>>,
    is_killed: AtomicBool,
    /// KILL QUERY reached the session while no backend ran its statement
    /// (it waited for another's execution, `exec/coalesce.rs`).
    is_interrupted: AtomicBool,
    /// Wakes the session waiting between commands (KILL, SIGTERM): a flag
    /// and one registered waker, which costs the session loop two atomic
    /// operations per command where a `Notify` took a lock twice.
    is_woken: AtomicBool,
    waker: futures_util::task::AtomicWaker,
    /// The session's transaction across backends, as of its last statement.
    pub txn: Published,
}

impl SessionHandle {
    pub fn new(user: &str, host: String) -> SessionHandle {
        SessionHandle {
            user: Mutex::new(user.to_string()),
            host,
            activity: Mutex::new(Activity {
                command: "Sleep",
                since: std::time::Instant::now(),
                info: None,
                db: None,
            }),
            running: Mutex::new(Vec::new()),
            is_killed: AtomicBool::new(false),
            is_interrupted: AtomicBool::new(false),
            is_woken: AtomicBool::new(false),
            waker: futures_util::task::AtomicWaker::new(),
            txn: Default::default(),
        }
    }
    fn running_list(&self) -> std::sync::MutexGuard<'_, Vec<(BackendId, u32)>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }
    pub fn add_running(&self, key: (BackendId, u32)) {
        self.running_list().push(key);
    }
    pub fn remove_running(&self, key: (BackendId, u32)) {
        let mut list = self.running_list();
        if let Some(i) = list.iter().position(|k| *k == key) {
            list.swap_remove(i);
        }
    }
    /// The backend index and thread id of every connection running a
    /// statement of this session now.
    pub fn running(&self) -> Vec<(BackendId, u32)> {
        self.running_list().clone()
    }
    /// Whether `key` still runs a statement of this session.
    pub fn is_running(&self, key: (BackendId, u32)) -> bool {
        self.running_list().contains(&key)
    }
    fn activity_lock(&self) -> std::sync::MutexGuard<'_, Activity> {
        self.activity.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// A command arrived at `now`: `command` as a server names it, `info`
    /// the statement it runs.
    pub fn begin(&self, command: &'static str, info: Option<Info>, now: std::time::Instant) {
        let mut a = self.activity_lock();
        a.command = command;
        a.since = now;
        a.info = info;
    }
    /// The command ended at `now`; `db` is the session's database after it.
    pub fn end(&self, now: std::time::Instant, db: Option<&str>) {
        let mut a = self.activity_lock();
        a.command = "Sleep";
        a.since = now;
        a.info = None;
        if a.db.as_deref() != db {
            a.db = db.map(str::to_string);
        }
    }
    /// What the session does now.
    pub fn activity(&self) -> Activity {
        self.activity_lock().clone()
    }
    pub fn kill(&self) {
        self.is_killed.store(true, Ordering::Relaxed);
        self.wake();
    }
    /// Wake the session if it waits between commands; if it does not,
    /// its next wait ends at once (it then looks at why).
    pub fn wake(&self) {
        self.is_woken.store(true, Ordering::SeqCst);
        self.waker.wake();
    }
    /// Ready once [`SessionHandle::wake`] was called since it last was.
    pub fn woken(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(|cx| {
            self.waker.register(cx.waker());
            if self.is_woken.swap(false, Ordering::SeqCst) {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
    }
    /// KILL QUERY: a statement waiting for another's execution ends with
    /// error 1317 (one running on a backend is killed there).
    pub fn interrupt(&self) {
        self.is_interrupted.store(true, Ordering::SeqCst);
        self.wake();
    }
    /// Whether [`SessionHandle::interrupt`] was called since this was
    /// last asked.
    pub fn take_interrupt(&self) -> bool {
        self.is_interrupted.swap(false, Ordering::SeqCst)
    }
    pub fn is_killed(&self) -> bool {
        self.is_killed.load(Ordering::Relaxed)
    }
}

/// What a session does now, as PROCESSLIST shows it.
#[derive(Clone)]
pub struct Activity {
    /// `Sleep` between commands, else the command's name (`Query`,
    /// `Execute`, ...).
    pub command: &'static str,
    /// When the command started (or, in `Sleep`, the last one ended).
    pub since: std::time::Instant,
    /// The statement the command runs.
    pub info: Option<Info>,
    pub db: Option<String>,
}

/// A statement's text, shared with the command that runs it (no copy).
#[derive(Clone)]
pub enum Info {
    Text(bytes::Bytes),
    Prepared(Arc<[u8]>),
}

impl Info {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Info::Text(b) => b,
            Info::Prepared(b) => b,
        }
    }
}

/// A session's transaction across backends, for the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnView {
    pub gtrid: String,
    pub home: BackendId,
    pub home_written: bool,
    /// Every branch besides the home: backend and whether it wrote.
    pub branches: Vec<(BackendId, bool)>,
}

/// What a session last published (in its `SessionHandle`), at the top
/// of each command (`Bindings::publish_txn`): one relaxed load when it
/// has no transaction across backends, so the statement path of other
/// sessions is untouched.
#[derive(Debug, Default)]
pub struct Published {
    has_txn: AtomicBool,
    view: Mutex<Option<TxnView>>,
}

impl Published {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<TxnView>> {
        self.view.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session's transaction across backends, if it has one.
    pub fn get(&self) -> Option<TxnView> {
        if !self.has_txn.load(Ordering::Relaxed) {
            return None;
        }
        self.lock().clone()
    }

    /// The session has no transaction across backends (any more).
    pub fn clear(&self) {
        if self.has_txn.load(Ordering::Relaxed) {
            *self.lock() = None;
            self.has_txn.store(false, Ordering::Relaxed);
        }
    }

    /// The session's transaction across backends is `view`.
    pub fn set(&self, view: TxnView) {
        let mut g = self.lock();
        if g.as_ref() != Some(&view) {
            *g = Some(view);
        }
        self.has_txn.store(true, Ordering::Relaxed);
    }
}
