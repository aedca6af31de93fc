//! A read answered on a pipelined lane (`backend/lane.rs`) instead of a
//! connection of its own: the session hands its statement to a lane in its
//! own state (one is opened on a connection leased and synced as any
//! statement's), waits for the answer, and relays it through the same
//! [`Forwarder`] as an answer read from a connection, so the client gets
//! the same bytes either way.
//!
//! Which reads: those `coalesce::run_coalesced` found shareable (one
//! SELECT, deterministic functions, no lock, no pin, autocommit, no
//! transaction: `Exec::is_pipelined`), sent as their text to one backend,
//! whose digest was never slow or long on a lane. An answer the lane
//! cannot give as it is (warnings, too long, an error the ordinary way
//! keeps: [`is_kept_error`]) and a lane that failed leave nothing written:
//! the statement runs the ordinary way.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hscale_route::BackendId;
use hscale_wire::packet::PacketStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use hscale_wire::consts::code;
use hscale_wire::response::ErrPacket;

use hscale_wire::consts::status;

use super::bindings::Bindings;
use super::forward::{is_parse_error, Expect, ForwardError, Forwarder, Outcome};
use super::scratch::StatementScratch;
use super::Exec;
use crate::backend::lane::{LaneState, Pick, Reply, CROWD, SLOW, STALL};
use crate::error::ProxyError;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Answer the read `payload` on one of `backend`'s lanes. `Ok(false)`:
    /// it was not answered there and nothing reached the client.
    pub(super) async fn run_pipelined(
        &mut self,
        backend: BackendId,
        payload: &[u8],
    ) -> Result<bool, ProxyError> {
        let ctx = self.b.ctx.clone();
        let pool = ctx.pool_as(self.b.worker, backend, self.b.identity);
        // (Statements without a digest share one entry.)
        let digest = self.scratch.note.digest.unwrap_or(0);
        if pool.in_use() + pool.lanes.queued() < CROWD || pool.lanes.is_slow(digest) {
            return Ok(false);
        }
        let (db, is_found_rows) = (self.b.state.db.as_deref(), self.b.is_found_rows);
        let max = ctx.config.proxy.pipeline_lanes;
        let cap = (pool.cfg.max_connections / 4).max(1);
        let lane = match pool
            .lanes
            .pick(db, &self.b.state.vars, is_found_rows, max, cap)
        {
            Pick::Lane(lane) => lane,
            Pick::None => return Ok(false),
            Pick::Open => {
                let Ok(conn) = self.b.lease(backend, false).await? else {
                    return Ok(false);
                };
                let state = LaneState {
                    db: conn.db.clone(),
                    vars: self.b.state.vars.clone(),
                    is_found_rows,
                };
                pool.lanes.open(conn, state)
            }
        };
        let Some(mut handed) = lane.submit(Bytes::copy_from_slice(payload)) else {
            return Ok(false);
        };
        let handle = self.b.handle.clone();
        let (reply, took) = loop {
            if handle.is_killed() || handle.take_interrupt() {
                return Err(match handle.is_killed() {
                    true => ProxyError::ClientGone,
                    false => ProxyError::Interrupted,
                });
            }
            tokio::select! {
                r = &mut handed.rx => break r.unwrap_or((Reply::Lost, Duration::ZERO)),
                _ = handle.woken() => {}
                _ = tokio::time::sleep(STALL) => {
                    // Behind a statement that waits for a lock or runs
                    // long: not held up by it.
                    if lane.is_stalled_behind(&handed) {
                        return Ok(false);
                    }
                }
            }
        };
        let is_long = matches!(reply, Reply::Unclean { is_long: true });
        if took > SLOW || is_long {
            // Other sessions' reads waited behind it: this digest runs
            // the ordinary way from now on.
            pool.lanes.note_slow(digest);
        }
        let Reply::Clean(answer) = reply else {
            return Ok(false);
        };
        if is_kept_error(&answer) {
            return Ok(false);
        }
        self.relay_answered(answer).await?;
        ctx.metrics.worker(self.b.worker).pipelined();
        Ok(true)
    }

    /// Relay a lane's whole answer to the client as `forward` relays one
    /// read from a connection, and note it as `finish` does.
    async fn relay_answered(&mut self, answer: Bytes) -> Result<(), ProxyError> {
        let max = self.b.ctx.config.proxy.max_allowed_packet;
        let deprecated = self.is_eof_deprecated();
        let mut from = PacketStream::new(Answered(answer));
        let mut f =
            Forwarder::new(&mut from, &mut *self.client, deprecated, max).shipped(&self.ship_names);
        if !self.b.ctx.partitioning.is_empty() {
            f = f.naming(&self.b.ctx.partitioning);
        }
        match f.run(Expect::Query).await {
            Ok(outcome) => {
                self.b.finish_answered(outcome, self.scratch);
                Ok(())
            }
            Err(f) => match f.error {
                ForwardError::Client(_) => Err(ProxyError::ClientGone),
                ForwardError::Backend(e) => Err(ProxyError::Wrong(format!(
                    "internal: a pipelined answer could not be relayed: {e}"
                ))),
            },
        }
    }
}

impl Bindings {
    /// `Bindings::finish` for a read a lane answered: an autocommit read
    /// with no pin, no warning and no error, so only the note and the
    /// status are left to take.
    fn finish_answered(&mut self, outcome: Outcome, scratch: &mut StatementScratch) {
        scratch.record(&outcome);
        if let Some(st) = outcome.status.filter(|st| st & status::IN_TRANS == 0) {
            self.note_outside_transaction(st);
        }
    }
}

/// An error the ordinary way turns into something else than the client's
/// answer: a missing table (1146, perhaps routed by an older dictionary:
/// the fence retries it) and a syntax error (1064, 1149: the session asks
/// about its own text). Such a read runs again the ordinary way.
fn is_kept_error(answer: &[u8]) -> bool {
    // An error answer is one packet: its payload after the 4-byte header.
    let Some(payload) = answer.get(4..).filter(|p| p.first() == Some(&0xff)) else {
        return false;
    };
    ErrPacket::decode(payload).is_ok_and(|e| e.code == code::ER_NO_SUCH_TABLE || is_parse_error(&e))
}

/// A whole answer in memory, read as a backend connection is.
struct Answered(Bytes);

impl AsyncRead for Answered {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = buf.remaining().min(self.0.len());
        let chunk = self.0.split_to(n);
        buf.put_slice(&chunk);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Answered {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(Err(std::io::ErrorKind::Unsupported.into()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
