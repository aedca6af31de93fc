//! Fair sharing of one pool's `max_connections` slots among users
//! (tenants, `crate::tenant`): a statement takes a slot before it borrows
//! a connection (`Pool::get_as`) and gives it back when the connection
//! returns.
//!
//! Fast path: a free slot the taker may have and nobody of its own queue
//! waiting: one uncontended lock (each worker has its own pools, so only
//! that worker's thread takes it), one clock read, no allocation.
//!
//! A user is *active* in a pool while it holds or waits for slots, and
//! for 100 to 200 ms after (`DEMAND_WINDOW`): its recent demand is
//! the most slots it held plus waited for in that time. Each active user
//! has a fair number of slots, the pool divided evenly among them. A user
//! may take a free slot while it holds fewer than its fair number (and its
//! cap), or when the free slots exceed what the other active users may
//! still take, each up to its recent demand, fair number and cap. So a
//! quiet user keeps room for the few connections it uses between its
//! statements, and a noisy one uses everything the others leave.
//!
//! When the pool is busy, each user waits in a FIFO queue of its own, and
//! a slot given back goes to the waiting user that may take it and comes
//! first by:
//! 1. `priority` (high, then normal, then low);
//! 2. fewest slots held now (so a user with 500 waiting scans and one
//!    with a waiting point select share the connections evenly), ties to
//!    the user served longest ago (round-robin).
//!
//! `backend_share` caps the fair number of slots a user may hold while
//! other users are active: its cap (at least one slot). With nobody else
//! active it may use every slot.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// A user's priority for backend connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Priority {
    Low = 0,
    #[default]
    Normal = 1,
    High = 2,
}

impl Priority {
    pub fn name(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
        }
    }

    pub fn from_u8(v: u8) -> Priority {
        match v {
            0 => Priority::Low,
            2 => Priority::High,
            _ => Priority::Normal,
        }
    }
}

/// Who takes a slot: a tenant's index (`crate::tenant::TenantState::index`),
/// its priority and its share (per mille of the pool's slots, 1000 = all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    pub index: usize,
    pub priority: Priority,
    pub share_permille: u32,
}

impl Claim {
    /// The proxy's own work (dictionary reads, recovery, sequences, KILL):
    /// tenant 0, high priority, no cap.
    pub const PROXY: Claim = Claim {
        index: 0,
        priority: Priority::High,
        share_permille: 1000,
    };
}

/// How long a user's demand (slots held plus waiters) counts after it
/// fell: a user between two statements keeps the room it used (a client's
/// next statement comes within a millisecond or so), and a user that
/// stopped leaves its room to others within two windows.
const DEMAND_WINDOW: Duration = Duration::from_millis(100);

/// One user's place in one pool.
#[derive(Default)]
struct Queue {
    held: usize,
    /// The most slots it may hold while others are active (from its share).
    cap: usize,
    priority: Priority,
    waiters: VecDeque<(u64, oneshot::Sender<()>)>,
    /// When it was last given a slot out of the queue (`Inner::served`).
    last_served: u64,
    /// The most slots held plus waiters in this demand window and the one
    /// before it (`DEMAND_WINDOW`).
    peak: usize,
    last_peak: usize,
}

impl Queue {
    fn demand(&self) -> usize {
        self.held + self.waiters.len()
    }

    /// Its demand over the last one or two windows.
    fn recent_demand(&self) -> usize {
        self.peak.max(self.last_peak).max(self.demand())
    }

    fn is_active(&self) -> bool {
        self.recent_demand() > 0
    }

    fn note_demand(&mut self) {
        self.peak = self.peak.max(self.demand());
    }
}

#[derive(Default)]
struct Inner {
    max: usize,
    free: usize,
    /// Waiters over all queues.
    waiting: usize,
    queues: Vec<Queue>,
    /// Slots handed to waiters so far (orders `Queue::last_served`).
    served: u64,
    next_waiter: u64,
    /// When the demand window began.
    window: Option<Instant>,
}

impl Inner {
    fn queue(&mut self, claim: Claim) -> &mut Queue {
        if self.queues.len() <= claim.index {
            self.queues.resize_with(claim.index + 1, Queue::default);
        }
        let max = self.max;
        let q = &mut self.queues[claim.index];
        q.priority = claim.priority;
        q.cap = ((max * claim.share_permille as usize).div_ceil(1000)).clamp(1, max);
        q
    }

    /// Start a new demand window when the last one is over; then users
    /// whose demand fell may leave room to others (the caller dispatches).
    fn tick(&mut self, now: Instant) -> bool {
        let since = self
            .window
            .map_or(Duration::MAX, |at| now.saturating_duration_since(at));
        if since < DEMAND_WINDOW {
            return false;
        }
        self.window = Some(now);
        // The window before this one was empty when a whole one passed.
        let is_gap = since >= DEMAND_WINDOW * 2;
        for q in &mut self.queues {
            q.last_peak = if is_gap { 0 } else { q.peak };
            q.peak = q.demand();
        }
        true
    }

    /// Each active user's fair number of slots: the pool shared evenly.
    fn fair(&self) -> usize {
        // The proxy's own work (index 0) comes first and keeps no room.
        let active = self.queues.iter().skip(1).filter(|q| q.is_active()).count();
        self.max.div_ceil(active.max(1))
    }

    /// The slots other active users may still take: each up to its recent
    /// demand, its fair number and its cap.
    fn reserved_for_others(&self, index: usize, fair: usize) -> usize {
        self.queues
            .iter()
            .enumerate()
            .filter(|(i, q)| *i != index && *i != Claim::PROXY.index && q.is_active())
            .map(|(_, q)| {
                q.recent_demand()
                    .min(fair)
                    .min(q.cap)
                    .saturating_sub(q.held)
            })
            .sum()
    }

    /// Whether user `index` may take one of the free slots now: below its
    /// fair number (and cap), or when the free slots exceed what the other
    /// active users may still take.
    fn may_take(&self, index: usize) -> bool {
        if self.free == 0 {
            return false;
        }
        let q = &self.queues[index];
        let fair = self.fair();
        q.held < fair.min(q.cap) || self.free > self.reserved_for_others(index, fair)
    }

    /// Hand free slots to waiters, best first. Afterwards every waiter
    /// left may not take a free slot (or none is free).
    fn dispatch(&mut self) {
        while self.free > 0 && self.waiting > 0 {
            let mut best: Option<usize> = None;
            for (i, q) in self.queues.iter().enumerate() {
                if q.waiters.is_empty() || !self.may_take(i) {
                    continue;
                }
                let is_better = match best {
                    None => true,
                    Some(b) => {
                        let o = &self.queues[b];
                        (std::cmp::Reverse(q.priority), q.held, q.last_served)
                            < (std::cmp::Reverse(o.priority), o.held, o.last_served)
                    }
                };
                if is_better {
                    best = Some(i);
                }
            }
            let Some(i) = best else { return };
            self.served += 1;
            let served = self.served;
            let q = &mut self.queues[i];
            let Some((_, tx)) = q.waiters.pop_front() else {
                return;
            };
            q.held += 1;
            q.last_served = served;
            self.free -= 1;
            self.waiting -= 1;
            // The receiver lives in the waiter's `Wait` guard until it
            // has seen this or left the queue (under this lock): the send
            // cannot fail.
            let _ = tx.send(());
        }
    }

    /// Take a free slot for `claim` at once if it may: nobody of its own
    /// queue waits, and the waiters of others may not take it (after each
    /// dispatch, those left cannot).
    fn take_now(&mut self, claim: Claim, now: Instant) -> bool {
        if self.tick(now) {
            self.dispatch();
        }
        let q = self.queue(claim);
        if !q.waiters.is_empty() || !self.may_take(claim.index) {
            return false;
        }
        self.free -= 1;
        let q = &mut self.queues[claim.index];
        q.held += 1;
        q.note_demand();
        true
    }
}

/// Held users' slots and waiters of one pool, for `HSCALE SHOW USERS`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UserSlots {
    pub held: usize,
    pub waiting: usize,
}

/// A pool's `max_connections` slots, shared fairly among users.
pub struct FairSlots {
    inner: Mutex<Inner>,
    /// Takes waiting now, and the takes so far that had to wait.
    pub waiting: AtomicUsize,
    pub waits: AtomicU64,
    in_use: AtomicUsize,
}

impl FairSlots {
    pub fn new(max: usize) -> FairSlots {
        FairSlots {
            inner: Mutex::new(Inner {
                max,
                free: max,
                ..Inner::default()
            }),
            waiting: AtomicUsize::new(0),
            waits: AtomicU64::new(0),
            in_use: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take a slot at once if `claim` may (a free one, and no waiter or
    /// other user it must leave it to). [`FairSlots::take`] does the same
    /// first. (`Pool::try_get_as`: a part sent ahead.)
    pub fn try_take(&self, claim: Claim) -> bool {
        let is_taken = self.lock().take_now(claim, Instant::now());
        if is_taken {
            self.in_use.fetch_add(1, Ordering::Relaxed);
        }
        is_taken
    }

    /// Take a slot, waiting in `claim`'s queue up to `timeout`; false when
    /// it passed.
    pub async fn take(&self, claim: Claim, timeout: Duration) -> bool {
        let (id, rx) = {
            let now = Instant::now();
            let mut inner = self.lock();
            if inner.take_now(claim, now) {
                drop(inner);
                self.in_use.fetch_add(1, Ordering::Relaxed);
                return true;
            }
            let (tx, rx) = oneshot::channel();
            let id = inner.next_waiter;
            inner.next_waiter += 1;
            let q = &mut inner.queues[claim.index];
            q.waiters.push_back((id, tx));
            q.note_demand();
            inner.waiting += 1;
            // Its arrival changes the fair numbers: it may be served now.
            inner.dispatch();
            (id, rx)
        };
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let mut wait = Wait {
            slots: self,
            index: claim.index,
            id,
            rx,
            is_done: false,
        };
        let got = matches!(
            tokio::time::timeout(timeout, &mut wait.rx).await,
            Ok(Ok(()))
        );
        if got {
            wait.is_done = true;
            self.in_use.fetch_add(1, Ordering::Relaxed);
        }
        got
    }

    /// Return a slot `index` held: to the best waiter, if any may take it.
    pub fn give_back(&self, index: usize) {
        let mut inner = self.lock();
        if let Some(q) = inner.queues.get_mut(index) {
            q.held = q.held.saturating_sub(1);
        }
        inner.free += 1;
        if inner.waiting > 0 {
            inner.tick(Instant::now());
            inner.dispatch();
        }
        drop(inner);
        self.in_use.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Relaxed)
    }

    /// Slots held and waiters per user index (users with neither left out).
    pub fn per_user(&self) -> Vec<(usize, UserSlots)> {
        let inner = self.lock();
        inner
            .queues
            .iter()
            .enumerate()
            .filter(|(_, q)| q.is_active())
            .map(|(i, q)| {
                (
                    i,
                    UserSlots {
                        held: q.held,
                        waiting: q.waiters.len(),
                    },
                )
            })
            .collect()
    }
}

/// A waiter in line; leaving (timeout, the statement dropped) takes it
/// out of its queue, or gives back the slot it was handed meanwhile.
struct Wait<'a> {
    slots: &'a FairSlots,
    index: usize,
    id: u64,
    rx: oneshot::Receiver<()>,
    is_done: bool,
}

impl Drop for Wait<'_> {
    fn drop(&mut self) {
        self.slots.waiting.fetch_sub(1, Ordering::Relaxed);
        if self.is_done {
            return;
        }
        let mut inner = self.slots.lock();
        let q = &mut inner.queues[self.index];
        if let Some(pos) = q.waiters.iter().position(|(id, _)| *id == self.id) {
            q.waiters.remove(pos);
            inner.waiting -= 1;
            // Leaving may free a capped user's turn.
            inner.dispatch();
            return;
        }
        // Handed a slot after the timeout fired: give it back.
        drop(inner);
        self.slots.in_use.fetch_add(1, Ordering::Relaxed);
        self.slots.give_back(self.index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn user(index: usize) -> Claim {
        Claim {
            index,
            priority: Priority::Normal,
            share_permille: 1000,
        }
    }

    /// Spawn a waiter for `claim` that reports `tag` when it gets its slot
    /// and keeps it.
    fn wait_for(
        slots: &Arc<FairSlots>,
        claim: Claim,
        tag: usize,
        tx: &tokio::sync::mpsc::UnboundedSender<usize>,
    ) {
        let (slots, tx) = (slots.clone(), tx.clone());
        tokio::spawn(async move {
            assert!(slots.take(claim, Duration::from_secs(30)).await);
            tx.send(tag).unwrap();
        });
    }

    /// One user waits in FIFO order, and a newcomer never overtakes it.
    #[tokio::test(flavor = "current_thread")]
    async fn one_users_waiters_are_served_in_order_and_never_overtaken() {
        let slots = Arc::new(FairSlots::new(1));
        assert!(slots.try_take(user(1)));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..3 {
            wait_for(&slots, user(1), i, &tx);
            tokio::task::yield_now().await;
        }
        assert_eq!(slots.waiting.load(Ordering::Relaxed), 3);
        slots.give_back(1);
        assert!(!slots.try_take(user(1)), "a newcomer overtook the line");
        let mut order = Vec::new();
        for _ in 0..3 {
            order.push(rx.recv().await.unwrap());
            slots.give_back(1);
        }
        assert_eq!(order, [0, 1, 2]);
        assert!(slots.try_take(user(1)), "free again once nobody waits");
        assert_eq!(slots.in_use(), 1);
        assert_eq!(slots.waits.load(Ordering::Relaxed), 3);
    }

    /// User 1 holds every slot and has 20 waiters; user 2's 2 waiters,
    /// queued after them, get the next slots given back.
    #[tokio::test(flavor = "current_thread")]
    async fn a_user_with_few_waiters_is_not_starved_by_one_with_many() {
        let slots = Arc::new(FairSlots::new(4));
        for _ in 0..4 {
            assert!(slots.try_take(user(1)));
        }
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..20 {
            wait_for(&slots, user(1), 100 + i, &tx);
        }
        tokio::task::yield_now().await;
        wait_for(&slots, user(2), 1, &tx);
        wait_for(&slots, user(2), 2, &tx);
        tokio::task::yield_now().await;
        slots.give_back(1);
        slots.give_back(1);
        let first = [rx.recv().await.unwrap(), rx.recv().await.unwrap()];
        // User 2 holds none: it gets the first slot; then it holds one
        // and user 1 three, so the second is user 2's again.
        assert_eq!(first, [1, 2]);
        let per = slots.per_user();
        assert_eq!(
            per[0],
            (
                1,
                UserSlots {
                    held: 2,
                    waiting: 20
                }
            )
        );
        assert_eq!(
            per[1],
            (
                2,
                UserSlots {
                    held: 2,
                    waiting: 0
                }
            )
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn high_priority_waiters_go_first() {
        let slots = Arc::new(FairSlots::new(1));
        assert!(slots.try_take(user(1)));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        wait_for(&slots, user(2), 2, &tx);
        tokio::task::yield_now().await;
        let high = Claim {
            priority: Priority::High,
            ..user(3)
        };
        wait_for(&slots, high, 3, &tx);
        tokio::task::yield_now().await;
        slots.give_back(1);
        assert_eq!(rx.recv().await.unwrap(), 3);
    }

    /// A user with half the share takes at most half the slots while
    /// another user is active and may use them, and every slot when it is
    /// alone; a user that stopped keeps its room for a moment.
    #[tokio::test(flavor = "current_thread")]
    async fn a_share_caps_a_user_only_while_others_are_active() {
        let half = Claim {
            share_permille: 500,
            ..user(1)
        };
        let slots = Arc::new(FairSlots::new(4));
        for _ in 0..4 {
            assert!(slots.try_take(half), "alone, it may use every slot");
        }
        for _ in 0..4 {
            slots.give_back(1);
        }
        // User 2 used two slots and holds one now.
        assert!(slots.try_take(user(2)));
        assert!(slots.try_take(user(2)));
        slots.give_back(2);
        assert!(slots.try_take(half));
        assert!(slots.try_take(half));
        assert!(
            !slots.try_take(half),
            "at its cap while user 2 is active: the free slot is user 2's"
        );
        assert!(!slots.take(half, Duration::from_millis(20)).await);
        assert!(slots.try_take(user(2)), "user 2 finds its room");
        slots.give_back(2);
        slots.give_back(2);
        assert!(!slots.try_take(half), "user 2's room is kept a moment");
        // Two demand windows later user 2 is no longer active.
        tokio::time::sleep(DEMAND_WINDOW * 2 + Duration::from_millis(50)).await;
        assert!(slots.try_take(half));
        assert!(slots.try_take(half));
        assert_eq!(slots.in_use(), 4);
    }

    /// Two users with equal demand split the pool evenly: one that filled
    /// it alone gives the other its fair half as slots come back, and the
    /// other keeps that room between its statements.
    #[tokio::test(flavor = "current_thread")]
    async fn a_quiet_user_keeps_its_fair_room_between_statements() {
        let slots = Arc::new(FairSlots::new(4));
        for _ in 0..4 {
            assert!(slots.try_take(user(1)));
        }
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..10 {
            wait_for(&slots, user(1), 100 + i, &tx);
        }
        wait_for(&slots, user(2), 1, &tx);
        wait_for(&slots, user(2), 2, &tx);
        tokio::task::yield_now().await;
        slots.give_back(1);
        slots.give_back(1);
        assert_eq!([rx.recv().await.unwrap(), rx.recv().await.unwrap()], [1, 2]);
        // User 2's statements end; the slots stay free for its next ones
        // although user 1 waits.
        slots.give_back(2);
        slots.give_back(2);
        assert!(rx.try_recv().is_err(), "user 1 took user 2's room");
        assert!(slots.try_take(user(2)));
        assert!(slots.try_take(user(2)));
        assert_eq!(
            slots.per_user()[0],
            (
                1,
                UserSlots {
                    held: 2,
                    waiting: 10
                }
            )
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_take_gives_up_at_its_timeout_and_leaves_the_line() {
        let slots = FairSlots::new(1);
        assert!(slots.try_take(user(1)));
        assert!(!slots.take(user(2), Duration::from_millis(50)).await);
        assert_eq!(slots.waiting.load(Ordering::Relaxed), 0);
        slots.give_back(1);
        assert_eq!(slots.in_use(), 0);
        assert!(slots.try_take(user(1)));
    }
}
