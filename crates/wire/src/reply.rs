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
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::ReadBuf;

    use super::*;
    use crate::consts::status::{AUTOCOMMIT, IN_TRANS};
    use crate::response::{decode_eof, is_eof, ErrPacket};
    use crate::resultset::{decode_row, encode_row, ColumnInfo};

    /// A client socket that keeps what is written and never has anything to read.
    struct Mem(Vec<u8>);

    type Io<T> = Poll<std::io::Result<T>>;

    impl AsyncRead for Mem {
        fn poll_read(self: Pin<&mut Self>, _: &mut Context, _: &mut ReadBuf) -> Io<()> {
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Mem {
        fn poll_write(mut self: Pin<&mut Self>, _: &mut Context, b: &[u8]) -> Io<usize> {
            self.0.extend_from_slice(b);
            Poll::Ready(Ok(b.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context) -> Io<()> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context) -> Io<()> {
            Poll::Ready(Ok(()))
        }
    }

    fn client() -> PacketStream<Mem> {
        PacketStream::new(Mem(Vec::new()))
    }

    /// The physical packets written, as (sequence id, payload).
    fn packets(s: &PacketStream<Mem>) -> Vec<(u8, Vec<u8>)> {
        let mut b = &s.get_ref().0[..];
        let mut out = Vec::new();
        while !b.is_empty() {
            let len = u32::from_le_bytes([b[0], b[1], b[2], 0]) as usize;
            out.push((b[3], b[4..4 + len].to_vec()));
            b = &b[4 + len..];
        }
        out
    }

    fn seqs(p: &[(u8, Vec<u8>)]) -> Vec<u8> {
        p.iter().map(|(s, _)| *s).collect()
    }

    /// (status, warnings) of a terminator in either format.
    fn terminator(payload: &[u8], is_eof_deprecated: bool) -> (u16, u16) {
        assert_eq!(payload[0], 0xfe);
        if is_eof_deprecated {
            assert!(payload.len() >= 7, "an OK 0xFE, not an EOF");
            let ok = OkPacket::decode(payload).unwrap();
            (ok.status, ok.warnings)
        } else {
            assert!(is_eof(payload));
            let (w, s) = decode_eof(payload).unwrap();
            (s, w)
        }
    }

    #[tokio::test]
    async fn result_set_in_both_eof_modes() {
        for deprecated in [false, true] {
            let mut s = client();
            let mut cols = Reply::new(&mut s, 1, deprecated).columns(2);
            cols.column("a");
            cols.column_def(&encode_column("b"));
            let mut rows = cols.rows(IN_TRANS);
            rows.row(&encode_row(&[Some("1"), None]));
            rows.text_row(&[Some(b"x"), Some(b"")]);
            assert_eq!(rows.count(), 2);
            let done = rows.finish(IN_TRANS | AUTOCOMMIT, 3);
            let next = done.next_seq();
            assert!(s.get_ref().0.is_empty(), "nothing flushed before the end");
            assert!(s.pending() > 0);
            s.flush().await.unwrap();

            let p = packets(&s);
            let n = if deprecated { 6 } else { 7 };
            assert_eq!(p.len(), n);
            assert_eq!(next, 1 + n as u8);
            assert_eq!(seqs(&p[..n]), (1..=n as u8).collect::<Vec<_>>());
            assert_eq!(p[0].1, vec![2]);
            assert_eq!(ColumnInfo::decode(&p[1].1).unwrap().name, "a");
            assert_eq!(ColumnInfo::decode(&p[2].1).unwrap().name, "b");
            let mut i = 3;
            if !deprecated {
                assert_eq!(decode_eof(&p[3].1).unwrap(), (0, IN_TRANS));
                i += 1;
            }
            assert_eq!(
                decode_row(&p[i].1, 2).unwrap(),
                vec![Some(b"1".to_vec()), None]
            );
            let second = decode_row(&p[i + 1].1, 2).unwrap();
            assert_eq!(second, vec![Some(b"x".to_vec()), Some(Vec::new())]);
            assert_eq!(
                terminator(&p[i + 2].1, deprecated),
                (IN_TRANS | AUTOCOMMIT, 3)
            );
        }
    }

    #[tokio::test]
    async fn ok_carries_every_field() {
        let mut s = client();
        let ok = OkParts {
            affected_rows: 5,
            last_insert_id: 300,
            status: AUTOCOMMIT | MORE_RESULTS_EXISTS,
            warnings: 2,
            info: "Rows matched: 5",
        };
        let done = Reply::new(&mut s, 1, true).ok(ok);
        assert_eq!(done.flush().await.unwrap(), 2);
        let p = packets(&s);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].0, 1);
        assert_eq!(p[0].1[0], 0x00);
        let expect = OkPacket {
            affected_rows: 5,
            last_insert_id: 300,
            status: AUTOCOMMIT,
            warnings: 2,
            info: Default::default(),
        };
        assert_eq!(OkPacket::decode(&p[0].1).unwrap(), expect);
        assert!(p[0].1.ends_with(b"\x0fRows matched: 5"));
    }

    #[tokio::test]
    async fn err_packet() {
        let mut s = client();
        let done = Reply::new(&mut s, 1, false).err(1146, b"42S02", "no table");
        assert_eq!(done.flush().await.unwrap(), 2);
        let p = packets(&s);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].0, 1);
        let e = ErrPacket::decode(&p[0].1).unwrap();
        assert_eq!(
            (e.code, &e.sql_state, e.message.as_str()),
            (1146, b"42S02", "no table")
        );
    }

    #[tokio::test]
    async fn err_in_the_middle_of_rows() {
        for deprecated in [false, true] {
            let mut s = client();
            let mut cols = Reply::new(&mut s, 1, deprecated).columns(1);
            cols.column("a");
            let mut rows = cols.rows(AUTOCOMMIT);
            rows.text_row(&[Some(b"1")]);
            rows.maybe_flush().await.unwrap();
            let _ = rows
                .err(1158, b"08S01", "backend lost")
                .flush()
                .await
                .unwrap();
            let p = packets(&s);
            let n = if deprecated { 4 } else { 5 };
            assert_eq!(seqs(&p), (1..=n as u8).collect::<Vec<_>>());
            assert_eq!(ErrPacket::decode(&p[n - 1].1).unwrap().code, 1158);
        }
    }

    #[tokio::test]
    async fn more_results_continue_the_sequence() {
        for deprecated in [false, true] {
            let mut s = client();
            let mut cols = Reply::new(&mut s, 1, deprecated).columns(1);
            cols.column("a");
            let mut rows = cols.rows(AUTOCOMMIT);
            rows.text_row(&[Some(b"1")]);
            let next = rows
                .finish_more(AUTOCOMMIT, 1)
                .ok_more(OkParts::new(AUTOCOMMIT, 0));
            let ok = OkParts {
                affected_rows: 7,
                ..OkParts::new(AUTOCOMMIT | MORE_RESULTS_EXISTS, 0)
            };
            let _ = next.ok(ok).flush().await.unwrap();
            let p = packets(&s);
            let n = p.len();
            assert_eq!(n, if deprecated { 6 } else { 7 });
            assert_eq!(seqs(&p), (1..=n as u8).collect::<Vec<_>>());
            let first = terminator(&p[n - 3].1, deprecated);
            assert_eq!(first, (AUTOCOMMIT | MORE_RESULTS_EXISTS, 1));
            let middle = OkPacket::decode(&p[n - 2].1).unwrap();
            assert_eq!(middle.status, AUTOCOMMIT | MORE_RESULTS_EXISTS);
            let last = OkPacket::decode(&p[n - 1].1).unwrap();
            assert_eq!((last.affected_rows, last.status), (7, AUTOCOMMIT));
        }
    }

    #[tokio::test]
    async fn large_row_is_split_and_the_sequence_follows() {
        let big = vec![b'x'; MAX_PAYLOAD + 10];
        let mut s = client();
        let mut cols = Reply::new(&mut s, 1, true).columns(1);
        cols.column("a");
        let mut rows = cols.rows(AUTOCOMMIT);
        rows.row(&big);
        // The same row forwarded packet by packet, as read from a backend.
        rows.row_packet(&big[..MAX_PAYLOAD]);
        assert_eq!(rows.count(), 1);
        rows.row_packet(&big[MAX_PAYLOAD..]);
        assert_eq!(rows.count(), 2);
        let _ = rows.finish(AUTOCOMMIT, 0).flush().await.unwrap();
        let p = packets(&s);
        assert_eq!(seqs(&p), vec![1, 2, 3, 4, 5, 6, 7]);
        let lens: Vec<usize> = p.iter().map(|(_, b)| b.len()).collect();
        assert_eq!(lens[2..6], [MAX_PAYLOAD, 10, MAX_PAYLOAD, 10]);
        assert_eq!(terminator(&p[6].1, true), (AUTOCOMMIT, 0));
    }

    #[tokio::test]
    async fn prepare_answer_in_both_eof_modes() {
        for deprecated in [false, true] {
            let mut s = client();
            let ok = PrepareOk {
                statement_id: 9,
                num_columns: 1,
                num_params: 2,
                warnings: 0,
            };
            let mut prep = Reply::new(&mut s, 1, deprecated).prepared(ok, AUTOCOMMIT);
            prep.def_named("?");
            prep.def_named("?");
            prep.def(&encode_column("c"));
            let _ = prep.finish().flush().await.unwrap();
            let p = packets(&s);
            let n = if deprecated { 4 } else { 6 };
            assert_eq!(seqs(&p), (1..=n as u8).collect::<Vec<_>>());
            assert_eq!(PrepareOk::decode(&p[0].1).unwrap(), ok);
            let eofs: Vec<usize> = (0..n).filter(|&i| is_eof(&p[i].1)).collect();
            assert_eq!(eofs, if deprecated { vec![] } else { vec![3, 5] });
        }
    }

    #[tokio::test]
    async fn relay_keeps_packets_and_applies_the_eof_rule() {
        for deprecated in [false, true] {
            let mut stream = client();
            let mut r = Relay::new(&mut stream, 1, deprecated);
            r.packet(&encode_column_count(1));
            r.packet(&encode_column("a"));
            let wrote = r.metadata_eof(&encode_eof(0, AUTOCOMMIT));
            assert_eq!(wrote, !deprecated);
            r.packet(&encode_row(&[Some("1")]));
            r.terminator(AUTOCOMMIT | IN_TRANS, 2);
            let next = r.seq();
            stream.flush().await.unwrap();
            let packets = packets(&stream);
            let seqs: Vec<u8> = packets.iter().map(|p| p.0).collect();
            let n = if deprecated { 4 } else { 5 };
            assert_eq!(seqs, (1..=n).collect::<Vec<u8>>());
            assert_eq!(next, n + 1);
            let last = &packets.last().unwrap().1;
            if deprecated {
                assert_eq!(last[0], 0xfe);
                assert!(last.len() > 5, "an OK 0xFE, not an EOF");
            } else {
                assert!(is_eof(last));
                assert_eq!(decode_eof(last).unwrap(), (2, AUTOCOMMIT | IN_TRANS));
            }
        }
    }

    /// A backend socket with `0` to read, once.
    struct Src(Vec<u8>);

    impl AsyncRead for Src {
        fn poll_read(mut self: Pin<&mut Self>, _: &mut Context, b: &mut ReadBuf) -> Io<()> {
            let n = self.0.len().min(b.remaining());
            b.put_slice(&self.0[..n]);
            self.0.drain(..n);
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Src {
        fn poll_write(self: Pin<&mut Self>, _: &mut Context, b: &[u8]) -> Io<usize> {
            Poll::Ready(Ok(b.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context) -> Io<()> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context) -> Io<()> {
            Poll::Ready(Ok(()))
        }
    }

    /// Framed packets from sequence id 1, as a server sends a reply.
    fn framed(payloads: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            out.extend_from_slice(&(p.len() as u32).to_le_bytes()[..3]);
            out.push(i as u8 + 1);
            out.extend_from_slice(p);
        }
        out
    }

    /// A result set's payloads: `columns` columns, `rows` of them, the
    /// final EOF with `status` and `warnings`.
    fn result_set(
        columns: usize,
        rows: &[Vec<Option<&str>>],
        status: u16,
        warnings: u16,
    ) -> Vec<Vec<u8>> {
        let mut p = vec![encode_column_count(columns).to_vec()];
        for c in 0..columns {
            p.push(encode_column(&format!("c{c}")).to_vec());
        }
        p.push(encode_eof(0, AUTOCOMMIT).to_vec());
        for r in rows {
            p.push(encode_row(r).to_vec());
        }
        p.push(encode_eof(warnings, status).to_vec());
        p
    }

    /// What the packet-by-packet relay writes for the same payloads.
    async fn relayed_one_by_one(payloads: &[Vec<u8>], columns: usize, deprecated: bool) -> Vec<u8> {
        let mut stream = client();
        let mut r = Relay::new(&mut stream, 1, deprecated);
        for p in &payloads[..=columns] {
            r.packet(p);
        }
        r.metadata_eof(&payloads[columns + 1]);
        let last = payloads.last().unwrap();
        for p in &payloads[columns + 2..payloads.len() - 1] {
            r.packet(p);
        }
        let (warnings, status) = decode_eof(last).unwrap();
        r.terminator(status, warnings);
        stream.flush().await.unwrap();
        stream.get_ref().0.clone()
    }

    #[tokio::test]
    async fn a_whole_result_set_is_passed_as_packet_by_packet() {
        let long = "x".repeat(300);
        type Rows<'r> = Vec<Vec<Option<&'r str>>>;
        let shapes: Vec<(usize, Rows, u16, u16)> = vec![
            (1, vec![vec![Some("1")]], AUTOCOMMIT, 0),
            (3, vec![], AUTOCOMMIT | IN_TRANS, 0),
            (
                2,
                vec![vec![None, Some("a")], vec![Some(&long), Some("")]],
                AUTOCOMMIT,
                3,
            ),
        ];
        for (columns, rows, status, warnings) in shapes {
            let payloads = result_set(columns, &rows, status, warnings);
            for deprecated in [false, true] {
                let mut backend = PacketStream::new(Src(framed(&payloads)));
                backend.fill_packet().await.unwrap();
                let mut stream = client();
                let mut r = Relay::new(&mut stream, 1, deprecated);
                let w = r.whole_result_in(&backend).expect("a whole result set");
                assert_eq!((w.columns, w.rows), (columns as u64, rows.len() as u64));
                assert_eq!((w.status, w.warnings), (status, warnings));
                let moved = r.whole_result_from(&mut backend, &w);
                let next = r.seq();
                stream.flush().await.unwrap();
                let expected = relayed_one_by_one(&payloads, columns, deprecated).await;
                assert_eq!(
                    stream.get_ref().0,
                    expected,
                    "{columns} columns, deprecated {deprecated}"
                );
                assert_eq!(moved as usize, packets(&stream).len());
                assert_eq!(next as usize, moved as usize + 1);
                assert!(!backend.has_buffered_packet(), "the result set is consumed");
            }
        }
    }

    #[tokio::test]
    async fn what_is_not_a_whole_result_set_takes_the_packet_path() {
        use crate::consts::status::{CURSOR_EXISTS, MORE_RESULTS_EXISTS};
        let whole = result_set(1, &[vec![Some("1")]], AUTOCOMMIT, 0);
        let mut more = whole.clone();
        *more.last_mut().unwrap() = encode_eof(0, AUTOCOMMIT | MORE_RESULTS_EXISTS).to_vec();
        let mut cursor = whole.clone();
        cursor[2] = encode_eof(0, AUTOCOMMIT | CURSOR_EXISTS).to_vec();
        let mut err = whole.clone();
        err.insert(
            3,
            encode_err(1317, b"70100", "Query execution was interrupted").to_vec(),
        );
        let ok = vec![encode_ok(0, &OkPacket::default(), "").to_vec()];
        let mut cases = vec![("more results", framed(&more)), ("cursor", framed(&cursor))];
        cases.push(("an error among the rows", framed(&err)));
        cases.push(("an OK", framed(&ok)));
        let mut cut = framed(&whole);
        cut.pop();
        cases.push(("the last byte not read yet", cut));
        for (what, bytes) in cases {
            let mut backend = PacketStream::new(Src(bytes));
            backend.fill_packet().await.unwrap();
            let mut stream = client();
            let r = Relay::new(&mut stream, 1, false);
            assert_eq!(r.whole_result_in(&backend), None, "{what}");
        }
        // More than the caller takes in one go: packet by packet.
        let bytes = framed(&whole);
        let len = bytes.len();
        let mut backend = PacketStream::new(Src(bytes));
        backend.fill_packet().await.unwrap();
        assert_eq!(backend.whole_result(len - 1), None, "over the bound");
        assert_eq!(backend.whole_result(len).map(|w| w.len), Some(len));
    }
}
