//! The reply writer: the one way an OK, an ERR or a result set reaches a
//! client. It sits at the end of a statement's path (step 7, *Forward*, and
//! every answer the proxy makes itself): the session opens a [`Reply`] on the
//! client's [`PacketStream`] with the first sequence id of the reply, and
//! the writer owns everything after that: sequence ids, the
//! `CLIENT_DEPRECATE_EOF` rule and the status flags of the final packet.
//!
//! ```text
//! Reply ──ok/err──────────────────────────────────────────────► Done
//!   │ └─ok_more──► Reply (next result, SERVER_MORE_RESULTS_EXISTS)
//!   ├─columns(n)──► Columns ──rows(status)──► Rows ──finish──► Done
//!   │                  └─err──► Done            ├─err─────► Done
//!   │                                           └─finish_more──► Reply
//!   └─prepared(ok, status)──► Prepared ──finish──► Done
//! ```
//!
//! Without `CLIENT_DEPRECATE_EOF` an EOF follows the column definitions and
//! ends the rows; with it there is no metadata EOF and the rows end with an
//! OK whose header is `0xFE`. Nothing is flushed per packet: call
//! `maybe_flush` while streaming and `flush` (or [`Done::flush`]) at the end.

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::buf::put_lenenc_bytes;
use crate::consts::status::MORE_RESULTS_EXISTS;
use crate::packet::WholeResult;
use crate::response::{encode_eof, encode_err, encode_ok, OkPacket};
use crate::resultset::{encode_column, encode_column_count};
use crate::stmt::PrepareOk;
use crate::{PacketStream, WireError, MAX_PAYLOAD};

/// What an OK packet says. There is no `Default`: the status flags and the
/// warning count always come from the caller, who knows the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OkParts<'i> {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status: u16,
    pub warnings: u16,
    pub info: &'i str,
}

impl OkParts<'static> {
    /// No affected rows, no insert id, no info.
    pub fn new(status: u16, warnings: u16) -> Self {
        OkParts {
            affected_rows: 0,
            last_insert_id: 0,
            status,
            warnings,
            info: "",
        }
    }
}

/// What every state shares: the stream, the next sequence id, the client's
/// EOF mode and a scratch buffer reused for rows the writer encodes.
struct Out<'a, S> {
    stream: &'a mut PacketStream<S>,
    seq: u8,
    is_eof_deprecated: bool,
    scratch: BytesMut,
}

impl<'a, S: AsyncRead + AsyncWrite + Unpin> Out<'a, S> {
    fn put(&mut self, payload: &[u8]) {
        self.seq = self.stream.write_payload(self.seq, payload);
    }

    fn ok(&mut self, ok: &OkParts<'_>, status: u16) {
        let p = OkPacket {
            affected_rows: ok.affected_rows,
            last_insert_id: ok.last_insert_id,
            status,
            warnings: ok.warnings,
            info: Default::default(),
        };
        self.put(&encode_ok(0, &p, ok.info));
    }

    fn err(mut self, code: u16, sql_state: &[u8; 5], message: &str) -> Done<'a, S> {
        self.put(&encode_err(code, sql_state, message));
        self.done()
    }

    /// The EOF after a block of definitions, classic clients only.
    fn metadata_eof(&mut self, status: u16, warnings: u16) {
        if !self.is_eof_deprecated {
            self.put(&encode_eof(warnings, status));
        }
    }

    /// The packet that ends a result set: EOF, or OK `0xFE`.
    fn terminate(&mut self, status: u16, warnings: u16) {
        if self.is_eof_deprecated {
            let ok = OkPacket {
                affected_rows: 0,
                last_insert_id: 0,
                status,
                warnings,
                info: Default::default(),
            };
            self.put(&encode_ok(0xfe, &ok, ""));
        } else {
            self.put(&encode_eof(warnings, status));
        }
    }

    fn done(self) -> Done<'a, S> {
        Done {
            stream: self.stream,
            seq: self.seq,
        }
    }
}

/// Nothing of this reply has been written yet.
#[must_use = "a reply must be answered: ok, err or columns"]
pub struct Reply<'a, S> {
    out: Out<'a, S>,
}

impl<'a, S: AsyncRead + AsyncWrite + Unpin> Reply<'a, S> {
    /// A reply whose first packet gets `first_seq` (1 after a command).
    pub fn new(stream: &'a mut PacketStream<S>, first_seq: u8, is_eof_deprecated: bool) -> Self {
        Reply {
            out: Out {
                stream,
                seq: first_seq,
                is_eof_deprecated,
                scratch: BytesMut::new(),
            },
        }
    }

    /// An OK that ends the reply (`SERVER_MORE_RESULTS_EXISTS` cleared).
    pub fn ok(mut self, ok: OkParts<'_>) -> Done<'a, S> {
        self.out.ok(&ok, ok.status & !MORE_RESULTS_EXISTS);
        self.out.done()
    }

    /// An OK followed by another result (`SERVER_MORE_RESULTS_EXISTS` set).
    pub fn ok_more(mut self, ok: OkParts<'_>) -> Reply<'a, S> {
        self.out.ok(&ok, ok.status | MORE_RESULTS_EXISTS);
        self
    }

    pub fn err(self, code: u16, sql_state: &[u8; 5], message: &str) -> Done<'a, S> {
        self.out.err(code, sql_state, message)
    }

    /// An error without the SQLSTATE marker, as a server sends the errors
    /// it answers before it reads the client's capabilities ("Too many
    /// connections"): drivers show it as `Error 1040: ...` and some match
    /// that text.
    pub fn err_without_state(mut self, code: u16, message: &str) -> Done<'a, S> {
        let mut b = Vec::with_capacity(3 + message.len());
        b.push(0xff);
        b.extend_from_slice(&code.to_le_bytes());
        b.extend_from_slice(message.as_bytes());
        self.out.put(&b);
        self.out.done()
    }

    /// A bare end-of-data answer, as a server sends for `COM_SET_OPTION`:
    /// an EOF, or an OK `0xFE` for `CLIENT_DEPRECATE_EOF` clients.
    pub fn eof(mut self, status: u16, warnings: u16) -> Done<'a, S> {
        self.out.terminate(status & !MORE_RESULTS_EXISTS, warnings);
        self.out.done()
    }

    /// Start a result set of `count` columns (text or binary rows alike).
    pub fn columns(mut self, count: usize) -> Columns<'a, S> {
        debug_assert!(count > 0, "a result set has at least one column");
        self.out.put(&encode_column_count(count));
        Columns {
            out: self.out,
            left: count,
        }
    }

    /// Start a `COM_STMT_PREPARE` answer; `status` goes into the EOFs after
    /// the parameter and column definitions (classic clients only).
    pub fn prepared(mut self, ok: PrepareOk, status: u16) -> Prepared<'a, S> {
        self.out.put(&ok.encode());
        Prepared {
            out: self.out,
            params: u32::from(ok.num_params),
            columns: u32::from(ok.num_columns),
            written: 0,
            status,
            warnings: ok.warnings,
        }
    }

    pub async fn flush(&mut self) -> Result<(), WireError> {
        self.out.stream.flush().await
    }
}

/// The column count is written; the column definitions come next.
#[must_use = "a result set must be finished: rows, or err"]
pub struct Columns<'a, S> {
    out: Out<'a, S>,
    left: usize,
}

impl<'a, S: AsyncRead + AsyncWrite + Unpin> Columns<'a, S> {
    /// A text column definition named `name`, built by the proxy.
    pub fn column(&mut self, name: &str) {
        self.column_def(&encode_column(name));
    }

    /// An encoded column definition, e.g. forwarded from a backend.
    pub fn column_def(&mut self, def: &[u8]) {
        debug_assert!(self.left > 0, "more column definitions than columns");
        self.left = self.left.saturating_sub(1);
        self.out.put(def);
    }

    /// End the definitions (an EOF carrying `status` for classic clients)
    /// and start the rows.
    pub fn rows(mut self, status: u16) -> Rows<'a, S> {
        debug_assert_eq!(self.left, 0, "column definitions missing");
        self.out.metadata_eof(status, 0);
        Rows {
            out: self.out,
            count: 0,
            is_mid_row: false,
        }
    }

    pub fn err(self, code: u16, sql_state: &[u8; 5], message: &str) -> Done<'a, S> {
        self.out.err(code, sql_state, message)
    }

    pub async fn maybe_flush(&mut self) -> Result<(), WireError> {
        self.out.stream.maybe_flush().await
    }
}

/// The definitions are written; rows come next, then the terminator.
#[must_use = "a result set must be finished: finish, finish_more or err"]
pub struct Rows<'a, S> {
    out: Out<'a, S>,
    count: u64,
    /// The last physical packet was full, so a continuation follows.
    is_mid_row: bool,
}

impl<'a, S: AsyncRead + AsyncWrite + Unpin> Rows<'a, S> {
    /// One encoded row (text or binary), e.g. forwarded from a backend;
    /// split into several packets past 16 MiB.
    pub fn row(&mut self, payload: &[u8]) {
        debug_assert!(!self.is_mid_row, "a split row is unfinished");
        self.out.put(payload);
        self.count += 1;
    }

    /// One physical packet of a row, as read from a backend: a packet of
    /// [`MAX_PAYLOAD`] bytes is followed by its continuation, so a row of
    /// any size can be streamed without joining it.
    pub fn row_packet(&mut self, packet: &[u8]) {
        debug_assert!(packet.len() <= MAX_PAYLOAD);
        self.out.stream.write_packet(self.out.seq, packet);
        self.out.seq = self.out.seq.wrapping_add(1);
        self.is_mid_row = packet.len() == MAX_PAYLOAD;
        if !self.is_mid_row {
            self.count += 1;
        }
    }

    /// A text-protocol row built by the proxy; `None` is NULL.
    pub fn text_row(&mut self, values: &[Option<&[u8]>]) {
        let mut b = std::mem::take(&mut self.out.scratch);
        b.clear();
        for v in values {
            match v {
                Some(s) => put_lenenc_bytes(&mut b, s),
                None => b.extend_from_slice(&[0xfb]),
            }
        }
        self.row(&b);
        self.out.scratch = b;
    }

    /// Rows written so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// End the result set and the reply (`SERVER_MORE_RESULTS_EXISTS` cleared).
    pub fn finish(mut self, status: u16, warnings: u16) -> Done<'a, S> {
        debug_assert!(!self.is_mid_row, "a split row is unfinished");
        self.out.terminate(status & !MORE_RESULTS_EXISTS, warnings);
        self.out.done()
    }

    /// End the result set; another result follows.
    pub fn finish_more(mut self, status: u16, warnings: u16) -> Reply<'a, S> {
        debug_assert!(!self.is_mid_row, "a split row is unfinished");
        self.out.terminate(status | MORE_RESULTS_EXISTS, warnings);
        Reply { out: self.out }
    }

    /// An ERR ends the result set (e.g. a backend error mid-stream).
    pub fn err(self, code: u16, sql_state: &[u8; 5], message: &str) -> Done<'a, S> {
        self.out.err(code, sql_state, message)
    }

    /// Flush once enough is buffered, so long results stay bounded.
    pub async fn maybe_flush(&mut self) -> Result<(), WireError> {
        self.out.stream.maybe_flush().await
    }

    /// Flush now, e.g. when the backend has nothing more buffered.
    pub async fn flush(&mut self) -> Result<(), WireError> {
        self.out.stream.flush().await
    }
}

/// A `COM_STMT_PREPARE` answer: parameter definitions, then column
/// definitions, each block closed by an EOF for classic clients.
#[must_use = "a prepare answer must be finished"]
pub struct Prepared<'a, S> {
    out: Out<'a, S>,
    params: u32,
    columns: u32,
    written: u32,
    status: u16,
    warnings: u16,
}

impl<'a, S: AsyncRead + AsyncWrite + Unpin> Prepared<'a, S> {
    /// The next definition: parameters first, then columns. The EOF that
    /// closes a block follows its last definition.
    pub fn def(&mut self, def: &[u8]) {
        debug_assert!(
            self.written < self.params + self.columns,
            "too many definitions"
        );
        self.out.put(def);
        self.written += 1;
        let ends_params = self.written == self.params;
        let ends_columns = self.columns > 0 && self.written == self.params + self.columns;
        if ends_params || ends_columns {
            self.out.metadata_eof(self.status, self.warnings);
        }
    }

    /// A text definition named `name`, built by the proxy.
    pub fn def_named(&mut self, name: &str) {
        self.def(&encode_column(name));
    }

    pub fn finish(self) -> Done<'a, S> {
        debug_assert_eq!(self.written, self.params + self.columns);
        self.out.done()
    }
}

/// The reply is complete (possibly not yet flushed).
#[must_use = "flush the reply, or read next_seq to continue the exchange"]
pub struct Done<'a, S> {
    stream: &'a mut PacketStream<S>,
    seq: u8,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Done<'_, S> {
    /// The sequence id the next packet of this exchange would get.
    pub fn next_seq(&self) -> u8 {
        self.seq
    }

    /// Flush the client; returns [`Done::next_seq`].
    pub async fn flush(self) -> Result<u8, WireError> {
        self.stream.flush().await?;
        Ok(self.seq)
    }
}

/// Relaying a backend's response to the client packet by packet, the
/// proxy's hot path: packets pass through untouched, but sequence ids and
/// the `CLIENT_DEPRECATE_EOF` rule are the writer's, as in [`Reply`].
/// Backends always speak classic EOF; the relay drops the metadata EOF and
/// turns the final EOF into an OK `0xFE` for clients that asked for that.
pub struct Relay<'a, S> {
    out: Out<'a, S>,
}

impl<'a, S: AsyncRead + AsyncWrite + Unpin> Relay<'a, S> {
    /// A relay whose first packet gets `first_seq` (1 after a command).
    pub fn new(stream: &'a mut PacketStream<S>, first_seq: u8, is_eof_deprecated: bool) -> Self {
        Relay {
            out: Out {
                stream,
                seq: first_seq,
                is_eof_deprecated,
                scratch: BytesMut::new(),
            },
        }
    }

    /// Pass one physical packet through (a part of a split payload too).
    pub fn packet(&mut self, payload: &[u8]) {
        self.out.stream.write_packet(self.out.seq, payload);
        self.out.seq = self.out.seq.wrapping_add(1);
    }

    /// Pass the whole row packets `backend` has read and not yet handed
    /// out ([`PacketStream::move_rows_into`]): how many, and the last one's
    /// sequence id as read.
    pub fn rows_from<B: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        backend: &mut PacketStream<B>,
    ) -> (u64, u8) {
        backend.move_rows_into(self.out.stream, &mut self.out.seq)
    }

    /// The whole result set at the front of `backend`'s read buffer, when
    /// it fits in what the client's write buffer takes before a flush.
    pub fn whole_result_in<B: AsyncRead + AsyncWrite + Unpin>(
        &self,
        backend: &PacketStream<B>,
    ) -> Option<WholeResult> {
        backend.whole_result(self.out.stream.room())
    }

    /// Pass the whole result set `w` at the front of `backend`'s read
    /// buffer ([`PacketStream::whole_result`]) in one copy: as it is to a
    /// classic client, without the metadata EOF and with an OK `0xFE` for
    /// the final EOF to one that asked for `CLIENT_DEPRECATE_EOF`. Returns
    /// the packets written.
    pub fn whole_result_from<B: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        backend: &mut PacketStream<B>,
        w: &WholeResult,
    ) -> u64 {
        let out = &mut *self.out.stream;
        if !self.out.is_eof_deprecated {
            return backend.move_packets_into(out, w.len, &mut self.out.seq);
        }
        let mut moved = backend.move_packets_into(out, w.head, &mut self.out.seq);
        backend.skip_buffered(w.meta_eof);
        moved +=
            backend.move_packets_into(out, w.rows_end - w.head - w.meta_eof, &mut self.out.seq);
        backend.skip_buffered(w.len - w.rows_end);
        self.out.terminate(w.status, w.warnings);
        moved + 1
    }

    /// Pass a whole payload the proxy changed (split past 16 MiB).
    pub fn payload(&mut self, payload: &[u8]) {
        self.out.put(payload);
    }

    /// The EOF after column definitions: passed to classic clients only.
    /// Returns whether a packet was written.
    pub fn metadata_eof(&mut self, eof: &[u8]) -> bool {
        if self.out.is_eof_deprecated {
            return false;
        }
        self.packet(eof);
        true
    }

    /// The packet that ends a result set: EOF, or OK `0xFE`.
    pub fn terminator(&mut self, status: u16, warnings: u16) {
        self.out.terminate(status, warnings);
    }

    pub fn is_eof_deprecated(&self) -> bool {
        self.out.is_eof_deprecated
    }

    /// The sequence id of the next packet.
    pub fn seq(&self) -> u8 {
        self.out.seq
    }

    /// Continue after packets the client sent within the same exchange
    /// (`LOAD DATA LOCAL INFILE`): the next reply packet gets `seq`.
    pub fn resume_at(&mut self, seq: u8) {
        self.out.seq = seq;
    }

    /// The client stream, for flushing and for reading what the client
    /// sends within the exchange.
    pub fn stream(&mut self) -> &mut PacketStream<S> {
        self.out.stream
    }
}

#[cfg(test)]
mod tests;
