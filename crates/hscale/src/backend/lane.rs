//! Pipelined lanes: one backend connection that carries the autocommit
//! reads of many sessions of a worker at once. A session hands its
//! statement to a lane instead of borrowing a connection of its own; the
//! lane writes every statement waiting at that moment in one write, the
//! server runs them one after the other without waiting for the network
//! in between, and the lane reads the answers back in order and hands each
//! to its session. On this machine that halves the server's CPU per point
//! select (one thread running a queue of statements instead of a thread
//! woken per statement: bench/RESULTS.md, "Pipelined lanes") and saves
//! the proxy a write and a read per statement on the backend side.
//!
//! What may go on a lane is decided by the session
//! (`exec/pipeline.rs`): a single read that any session in the same state
//! would be answered the same way (the coalescing probe's rules). A lane
//! answers [`Reply::Clean`] only for an answer the session can relay as it
//! is: one result, OK or error, no warning (those are read on the
//! connection that ran the statement, which a lane has moved past);
//! anything else is [`Reply::Unclean`] and the session runs the statement
//! again the ordinary way (a read without side effects: running it twice
//! is invisible). A lane whose connection fails answers [`Reply::Lost`] to
//! every statement it holds; they run the ordinary way too.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use hscale_wire::consts::status;
use hscale_wire::response::{decode_eof, is_eof, OkPacket};
use hscale_wire::WireError;
use tokio::sync::{mpsc, oneshot};

use super::state::SessionVars;
use super::PooledConn;

/// At most this many statements go out in one write.
const MAX_BATCH: usize = 64;

/// A lane with nothing to do for this long gives its connection back.
const IDLE: Duration = Duration::from_secs(2);

/// An answer longer than this is not kept: the statement runs the ordinary
/// way (large answers stream; a lane holds whole answers).
pub const MAX_ANSWER: usize = 32 * 1024;

/// A statement whose answer took longer than this on a lane delays every
/// statement behind it: its digest stays off lanes for [`SLOW_FOR`]
/// ([`Lanes::note_slow`]; a server busy for a moment does not keep a
/// digest off for good).
pub const SLOW: Duration = Duration::from_millis(20);
const SLOW_FOR: Duration = Duration::from_secs(10);

/// A new lane opens when every open one holds this many statements.
const BUSY: usize = 8;

/// A lane that answered nothing for this long while holding statements is
/// stalled (its first statement waits for a lock, or runs long): no
/// statement is handed to it, and those behind the first one run the
/// ordinary way ([`Lane::is_stalled_behind`]).
pub const STALL: Duration = Duration::from_millis(100);

/// Lanes are used while at least this many statements of a pool's worker
/// are at the backend (connections lent out plus statements on lanes):
/// with fewer, a lane's hand-over costs the proxy more than the server
/// saves.
pub const CROWD: usize = 12;

/// The state a lane's connection is in: a session in exactly this state
/// may use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneState {
    pub db: Option<String>,
    pub vars: Arc<SessionVars>,
    pub is_found_rows: bool,
}

impl LaneState {
    fn is(&self, db: Option<&str>, vars: &Arc<SessionVars>, is_found_rows: bool) -> bool {
        self.is_found_rows == is_found_rows
            && self.db.as_deref() == db
            && (Arc::ptr_eq(&self.vars, vars) || *self.vars == **vars)
    }
}

/// What a lane answers a statement.
#[derive(Debug)]
pub enum Reply {
    /// The framed answer, sequence ids as the server wrote them.
    Clean(Bytes),
    /// Warnings, more than one result, or longer than
    /// [`MAX_ANSWER`] (`is_long`): run the statement the ordinary way.
    Unclean { is_long: bool },
    /// The connection failed: run it the ordinary way.
    Lost,
}

struct Request {
    command: Bytes,
    reply: oneshot::Sender<(Reply, Duration)>,
}

/// One lane: its connection's state and the queue to its task.
pub struct Lane {
    state: LaneState,
    tx: mpsc::UnboundedSender<Request>,
    /// Statements handed to it and not answered yet.
    queued: AtomicUsize,
    /// The same, over all lanes of its pool ([`Lanes::queued`]).
    all_queued: Arc<AtomicUsize>,
    /// Statements handed to it so far, and of those the ones done with
    /// (answered, or skipped because their session stopped waiting), in
    /// the order they were handed: a statement is the lane's first while
    /// `done` is its number.
    handed: AtomicU64,
    done: AtomicU64,
    /// When it last made progress (a batch written or an answer read), in
    /// µs since `born`.
    progress_us: AtomicU64,
    born: Instant,
    is_dead: AtomicBool,
}

impl Lane {
    /// Hand `command` (a COM_QUERY payload) to the lane. `None`: the lane
    /// is gone (run the statement the ordinary way).
    pub fn submit(self: &Arc<Self>, command: Bytes) -> Option<Handed> {
        let (reply, rx) = oneshot::channel();
        self.queued.fetch_add(1, Ordering::Relaxed);
        self.all_queued.fetch_add(1, Ordering::Relaxed);
        // One worker thread hands statements to a lane: numbers follow
        // the queue's order.
        let number = self.handed.fetch_add(1, Ordering::Relaxed);
        if self.tx.send(Request { command, reply }).is_err() {
            self.finished_one();
            return None;
        }
        Some(Handed { rx, number })
    }

    /// Whether `handed` waits behind a first statement of a lane that
    /// answered nothing for [`STALL`]: it had better run the ordinary way
    /// (dropping its answer to come; not yet written, it is skipped).
    pub fn is_stalled_behind(&self, handed: &Handed) -> bool {
        self.done.load(Ordering::Relaxed) != handed.number && self.is_stalled()
    }

    fn is_stalled(&self) -> bool {
        self.queued.load(Ordering::Relaxed) > 0
            && self
                .now_us()
                .saturating_sub(self.progress_us.load(Ordering::Relaxed))
                >= STALL.as_micros() as u64
    }

    fn now_us(&self) -> u64 {
        self.born.elapsed().as_micros() as u64
    }

    fn progressed(&self) {
        self.progress_us.store(self.now_us(), Ordering::Relaxed);
    }

    /// One statement done with (answered or skipped).
    fn finished_one(&self) {
        self.queued.fetch_sub(1, Ordering::Relaxed);
        self.all_queued.fetch_sub(1, Ordering::Relaxed);
        self.done.fetch_add(1, Ordering::Relaxed);
    }
}

/// A statement handed to a lane: its answer to come, and its number.
pub struct Handed {
    pub rx: oneshot::Receiver<(Reply, Duration)>,
    number: u64,
}

/// Where a session's read goes.
pub enum Pick {
    Lane(Arc<Lane>),
    /// Open a lane ([`Lanes::open`]).
    Open,
    /// Every lane is busy or stalled and no other may open: the ordinary
    /// way.
    None,
}

/// A pool's lanes (`Pool::lanes`), all on its worker.
#[derive(Default)]
pub struct Lanes {
    list: Mutex<Vec<Arc<Lane>>>,
    /// Digests of statements that were slow or long on a lane, and when.
    slow: Mutex<std::collections::HashMap<u64, Instant>>,
    /// Statements on its lanes now.
    queued: Arc<AtomicUsize>,
}

impl Lanes {
    /// Statements on this pool's lanes now.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// The lane for a session in this state with the fewest statements,
    /// unless every one is busy (or stalled) and fewer than `max` are open
    /// (and fewer than `cap` of every state).
    pub fn pick(
        &self,
        db: Option<&str>,
        vars: &Arc<SessionVars>,
        is_found_rows: bool,
        max: usize,
        cap: usize,
    ) -> Pick {
        let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|l| !l.is_dead.load(Ordering::Relaxed));
        // Lanes of every state hold at most a quarter of the pool.
        let is_full = list.len() >= cap;
        let mut open = 0;
        let mut best: Option<&Arc<Lane>> = None;
        for l in list.iter().filter(|l| l.state.is(db, vars, is_found_rows)) {
            open += 1;
            if l.is_stalled() {
                continue;
            }
            let q = l.queued.load(Ordering::Relaxed);
            if best.is_none_or(|b| q < b.queued.load(Ordering::Relaxed)) {
                best = Some(l);
            }
        }
        match best {
            Some(b) if b.queued.load(Ordering::Relaxed) < BUSY || open >= max => {
                Pick::Lane(b.clone())
            }
            _ if open < max && !is_full => Pick::Open,
            _ => Pick::None,
        }
    }

    /// Open a lane on `conn`, which is in `state`, and serve it on the
    /// current worker's runtime.
    pub fn open(&self, conn: PooledConn, state: LaneState) -> Arc<Lane> {
        let (tx, rx) = mpsc::unbounded_channel();
        let lane = Arc::new(Lane {
            state,
            tx,
            queued: AtomicUsize::new(0),
            all_queued: self.queued.clone(),
            handed: AtomicU64::new(0),
            done: AtomicU64::new(0),
            progress_us: AtomicU64::new(0),
            born: Instant::now(),
            is_dead: AtomicBool::new(false),
        });
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(lane.clone());
        tokio::spawn(serve(conn, rx, lane.clone()));
        lane
    }

    /// Whether statements of this digest stay off lanes.
    pub fn is_slow(&self, digest: u64) -> bool {
        let slow = self.slow.lock().unwrap_or_else(|e| e.into_inner());
        !slow.is_empty() && slow.get(&digest).is_some_and(|at| at.elapsed() < SLOW_FOR)
    }

    /// Keep statements of `digest` off lanes for a while.
    pub fn note_slow(&self, digest: u64) {
        let mut slow = self.slow.lock().unwrap_or_else(|e| e.into_inner());
        if slow.len() >= 10_000 {
            slow.retain(|_, at| at.elapsed() < SLOW_FOR);
        }
        slow.insert(digest, Instant::now());
    }

    /// Lanes open now.
    pub fn open_count(&self) -> usize {
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|l| !l.is_dead.load(Ordering::Relaxed))
            .count()
    }
}

/// A lane's task: batches out, answers back, until idle or broken.
async fn serve(mut conn: PooledConn, mut rx: mpsc::UnboundedReceiver<Request>, lane: Arc<Lane>) {
    let mut batch: Vec<oneshot::Sender<(Reply, Duration)>> = Vec::with_capacity(MAX_BATCH);
    let mut is_broken = false;
    while let Ok(Some(first)) = tokio::time::timeout(IDLE, rx.recv()).await {
        let mut next = Some(first);
        while let Some(r) = next.take() {
            if r.reply.is_closed() {
                // Its session stopped waiting before it was written.
                lane.finished_one();
            } else {
                conn.stream.queue_command(&r.command);
                batch.push(r.reply);
            }
            if batch.len() < MAX_BATCH {
                next = rx.try_recv().ok();
            }
        }
        if batch.is_empty() {
            continue;
        }
        // The backend's primary moved, or its global session defaults
        // changed: as a pooled connection would be at its checkout, the
        // lane's is done with; its statements run the ordinary way.
        let watch = &conn.pool().watch;
        if conn.address_generation != watch.address_generation()
            || conn.defaults != watch.defaults()
        {
            is_broken = true;
        }
        lane.progressed();
        let mut since = Instant::now();
        if !is_broken && conn.stream.flush().await.is_err() {
            is_broken = true;
        }
        for reply in batch.drain(..) {
            let answer = match is_broken {
                true => Err(WireError::Closed),
                false => read_answer(&mut conn).await,
            };
            let took = since.elapsed();
            since = Instant::now();
            lane.progressed();
            lane.finished_one();
            let r = match answer {
                Ok(r) => r,
                Err(_) => {
                    is_broken = true;
                    Reply::Lost
                }
            };
            let _ = reply.send((r, took));
        }
        if is_broken {
            break;
        }
    }
    lane.is_dead.store(true, Ordering::Relaxed);
    rx.close();
    while let Ok(r) = rx.try_recv() {
        lane.finished_one();
        let _ = r.reply.send((Reply::Lost, Duration::ZERO));
    }
    if is_broken {
        conn.is_broken = true;
    }
}

/// One answer being read: its framed packets while it stays clean and
/// under [`MAX_ANSWER`].
#[derive(Default)]
struct Reading {
    out: BytesMut,
    is_clean: bool,
    is_long: bool,
}

/// Read one statement's whole answer.
async fn read_answer(conn: &mut PooledConn) -> Result<Reply, WireError> {
    let mut r = Reading {
        is_clean: true,
        ..Reading::default()
    };
    loop {
        let first = r.logical(conn).await?;
        let (warnings, st) = match first.first() {
            Some(0x00) => {
                let ok = OkPacket::decode(&first)?;
                (ok.warnings, ok.status)
            }
            // An error is the statement's answer, as on a connection of
            // its own (the session keeps some for itself: `pipeline.rs`).
            Some(0xff) => break,
            // LOCAL INFILE: a lane never sends what asks for it.
            Some(0xfb) => return Err(WireError::Malformed("LOCAL INFILE on a lane")),
            // A result set: column definitions, their EOF, rows, the
            // closing EOF (backend connections never deprecate EOF).
            _ => {
                let mut eofs = 0;
                loop {
                    let p = r.logical(conn).await?;
                    if p.first() == Some(&0xff) {
                        break (0, 0);
                    }
                    if is_eof(&p) {
                        eofs += 1;
                        if eofs == 2 {
                            break decode_eof(&p)?;
                        }
                    }
                }
            }
        };
        if warnings > 0 {
            r.is_clean = false;
        }
        if st & status::MORE_RESULTS_EXISTS == 0 {
            break;
        }
        r.is_clean = false;
    }
    Ok(match r.is_clean {
        true => Reply::Clean(r.out.freeze()),
        false => Reply::Unclean { is_long: r.is_long },
    })
}

impl Reading {
    /// One logical packet (continuations joined), its physical packets
    /// framed into `out` while the answer stays clean and short.
    async fn logical(&mut self, conn: &mut PooledConn) -> Result<Bytes, WireError> {
        let mut joined: Option<BytesMut> = None;
        loop {
            let p = conn.stream.read_packet().await?;
            if self.out.len() + 4 + p.payload.len() > MAX_ANSWER {
                self.is_long = true;
                self.is_clean = false;
            }
            if self.is_clean {
                let len = p.payload.len() as u32;
                self.out.put_slice(&len.to_le_bytes()[..3]);
                self.out.put_u8(p.seq);
                self.out.put_slice(&p.payload);
            }
            let is_continued = p.is_continued();
            match joined.as_mut() {
                None if !is_continued => return Ok(p.payload),
                None => joined = Some(BytesMut::from(&p.payload[..])),
                Some(j) => {
                    j.put_slice(&p.payload);
                    if !is_continued {
                        return Ok(joined.take().unwrap_or_default().freeze());
                    }
                }
            }
        }
    }
}
