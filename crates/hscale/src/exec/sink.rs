//! The executor's other answer sink: statements the proxy runs for itself
//! (the read of an INSERT ... SELECT, of an ordered write, of SELECT ...
//! INTO, of a SET or DO with a subquery, the steps of a key move) enter
//! [`Exec::run`] exactly as a client's statement does (plan, merges,
//! shipped joins, the fence), and their answer lands in a [`RowSink`]
//! instead of on the client's socket.
//!
//! ```text
//!  client statement ─► Exec::run ─► PacketStream<client socket>
//!  proxy's own read ─► Exec::run ─► PacketStream<RowSink> ─► Answer
//! ```
//!
//! The sink decodes each packet as it is written (classic EOF, text rows):
//! the column definitions, then the rows, at most `max_rows` of them and
//! [`MAX_BYTES`] of row bytes, then the terminator or the error that ended
//! the answer. Nothing is kept as bytes; a read that grows past its bounds
//! stops being kept at once and ends as the bound's error.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytes::{Buf, BytesMut};
use hscale_route::router::Plan;
use hscale_route::value::Kind;
use hscale_route::BackendId;
use hscale_wire::response::{ErrPacket, OkPacket};
use hscale_wire::resultset::ColumnInfo;
use hscale_wire::PacketStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::bindings::Bindings;
use super::forward::Expect;
use super::{Effects, Exec};
use crate::backend::BackendConn;
use crate::error::ProxyError;

/// The most bytes of rows a read into memory holds (a statement written
/// from them must fit the backends' max_allowed_packet).
pub const MAX_BYTES: usize = 8 << 20;

/// A text row: each value, or NULL.
pub type Row = Vec<Option<Vec<u8>>>;

/// What a statement run into memory answered.
pub enum Answer {
    /// The server's (or the proxy's) error.
    Error(ErrPacket),
    /// An OK: a write, or a statement without a result set.
    Ok(OkPacket),
    /// A result set: its columns and rows.
    Rows(Vec<ColumnInfo>, Vec<Row>),
}

/// Run `plan` (planned from `text`, which a passthrough plan sends as it
/// is) for the proxy itself, fenced, its answer kept in memory. More than
/// `max_rows` rows is `ProxyError::ShipLimit`; more than [`MAX_BYTES`] a
/// refusal naming `what`.
pub async fn run(
    b: &mut Bindings,
    scratch: &mut super::scratch::StatementScratch,
    text: &str,
    what: &str,
    plan: Plan,
    effects: Effects<'_>,
    max_rows: usize,
) -> Result<Answer, ProxyError> {
    Ok(
        run_with_origins(b, scratch, text, what, plan, effects, max_rows)
            .await?
            .0,
    )
}

/// Where a result column's values come from, as its definition says:
/// `(schema, org_table, org_name)`, empty for an expression.
pub type Origin = (String, String, String);

/// [`run`], with the origin of each result column.
async fn run_with_origins(
    b: &mut Bindings,
    scratch: &mut super::scratch::StatementScratch,
    text: &str,
    what: &str,
    plan: Plan,
    effects: Effects<'_>,
    max_rows: usize,
) -> Result<(Answer, Vec<Origin>), ProxyError> {
    let mut sink = PacketStream::new(RowSink::new(max_rows));
    {
        let mut exec = Exec::new(&mut sink, b, scratch, false);
        exec.is_fenced = true;
        match plan {
            Plan::Passthrough => {
                let payload = BackendConn::payload_for_query(text);
                exec.execute_on_backend(BackendId::MAIN, &payload, Expect::Query, effects)
                    .await?
            }
            Plan::Refuse(why) => return Err(ProxyError::Refused(why)),
            plan @ (Plan::Targets { .. } | Plan::Merge(_)) => exec.run(plan, effects).await?,
            _ => {
                return Err(ProxyError::Unsupported {
                    what: format!("{what} from this statement"),
                })
            }
        }
    }
    let mut sink = sink.into_inner();
    let origins = std::mem::take(&mut sink.origins);
    Ok((sink.answer(what)?, origins))
}

/// Run `select` as the client's read (planned, merged, fenced) into
/// memory (this module), at most `max_rows` rows. `what` names the
/// statement that needs it, in refusals.
pub async fn read(
    b: &mut Bindings,
    scratch: &mut super::scratch::StatementScratch,
    select: &str,
    what: &str,
    max_rows: usize,
) -> Result<Answer, ProxyError> {
    Ok(read_with_origins(b, scratch, select, what, max_rows)
        .await?
        .0)
}

/// [`read`], with the origin of each result column.
pub async fn read_with_origins(
    b: &mut Bindings,
    scratch: &mut super::scratch::StatementScratch,
    select: &str,
    what: &str,
    max_rows: usize,
) -> Result<(Answer, Vec<Origin>), ProxyError> {
    let facts = hscale_sql::analyze_bytes(select.as_bytes());
    let dict = b.ctx.partitioning.dictionary();
    let plan = crate::planning::plan(
        crate::planning::Asker::Session(b),
        &dict,
        select,
        crate::planning::Db::OfSession,
        crate::planning::Form::Plain,
    )
    .await?;
    let spread = match &plan {
        Plan::Targets { parts, .. } => parts.len() > 1,
        Plan::Merge(_) => true,
        _ => false,
    };
    if spread && (!facts.pins.is_empty() || facts.sets_last_insert_id) {
        return Err(ProxyError::Unsupported {
            what: format!("{what} over several partitions with session-bound state (user variables, locks, temporary tables) or LAST_INSERT_ID(expr)"),
        });
    }
    let effects = Effects {
        uses_last_insert_id: facts.uses_last_insert_id,
        is_read_only: true,
        ..Effects::default()
    };
    // sql_select_limit limits what a statement sends its client, never
    // the rows a statement reads for itself: the connections this read
    // runs on hold the session's variables without it, and the next
    // statement's sync sets it back.
    let limited = b
        .state
        .vars
        .without_select_limit()
        .map(|v| std::mem::replace(&mut b.state.vars, std::sync::Arc::new(v)));
    let r = run_with_origins(b, scratch, select, what, plan, effects, max_rows).await;
    if let Some(vars) = limited {
        b.state.vars = vars;
    }
    r
}

/// Where the answer being decoded is.
enum At {
    /// Nothing read yet.
    Start,
    /// This many column definitions still to come.
    Columns(usize),
    /// The definitions' EOF.
    MetadataEof,
    Rows,
    /// The answer is complete; anything after it is a fault.
    Done,
}

/// An in-memory client the executor writes to (see the module): it
/// decodes what is written packet by packet and reads nothing.
pub struct RowSink {
    /// Written bytes not yet a whole packet.
    pending: BytesMut,
    at: At,
    columns: Vec<ColumnInfo>,
    /// Each column's [`Origin`].
    origins: Vec<Origin>,
    rows: Vec<Row>,
    ok: Option<OkPacket>,
    err: Option<ErrPacket>,
    max_rows: usize,
    bytes: usize,
    is_over_rows: bool,
    is_over_bytes: bool,
    /// A packet that could not be read as what it should have been.
    is_unreadable: bool,
}

impl RowSink {
    fn new(max_rows: usize) -> Self {
        RowSink {
            pending: BytesMut::new(),
            at: At::Start,
            columns: Vec::new(),
            origins: Vec::new(),
            rows: Vec::new(),
            ok: None,
            err: None,
            max_rows,
            bytes: 0,
            is_over_rows: false,
            is_over_bytes: false,
            is_unreadable: false,
        }
    }

    fn answer(self, what: &str) -> Result<Answer, ProxyError> {
        if self.is_unreadable || !self.pending.is_empty() {
            return Err(ProxyError::Wrong(
                "internal: unreadable answer of a statement run in memory".into(),
            ));
        }
        if let Some(e) = self.err {
            return Ok(Answer::Error(e));
        }
        if self.is_over_bytes {
            return Err(ProxyError::Refused(format!(
                "{what} of more than {MAX_BYTES} bytes of rows through hscale"
            )));
        }
        if self.is_over_rows {
            return Err(ProxyError::ShipLimit {
                limit: self.max_rows,
            });
        }
        match (self.ok, self.at) {
            (Some(ok), _) => Ok(Answer::Ok(ok)),
            (None, At::Done) => Ok(Answer::Rows(self.columns, self.rows)),
            _ => Err(ProxyError::Wrong(
                "internal: a statement run in memory answered nothing whole".into(),
            )),
        }
    }

    /// Decode one whole packet's payload.
    fn take(&mut self, p: &[u8]) {
        let is_eof = p.first() == Some(&0xfe) && p.len() < 9;
        match self.at {
            At::Start => match p.first() {
                Some(0xff) => self.error(p),
                Some(0x00) => {
                    self.ok = OkPacket::decode(p).ok();
                    self.is_unreadable |= self.ok.is_none();
                    self.at = At::Done;
                }
                _ => match hscale_wire::buf::Reader::new(p).lenenc() {
                    Ok(0) | Err(_) => self.is_unreadable = true,
                    Ok(n) => {
                        self.at = At::Columns(usize::try_from(n).unwrap_or(usize::MAX));
                    }
                },
            },
            At::Columns(left) => match ColumnInfo::decode(p) {
                Ok(c) => {
                    self.columns.push(c);
                    self.origins.push(origin(p).unwrap_or_default());
                    self.at = if left > 1 {
                        At::Columns(left - 1)
                    } else {
                        At::MetadataEof
                    };
                }
                Err(_) => self.is_unreadable = true,
            },
            At::MetadataEof if is_eof => self.at = At::Rows,
            At::MetadataEof => self.is_unreadable = true,
            At::Rows if is_eof => self.at = At::Done,
            At::Rows if p.first() == Some(&0xff) => self.error(p),
            At::Rows => {
                self.bytes += p.len();
                if self.rows.len() >= self.max_rows {
                    self.is_over_rows = true;
                } else if self.bytes > MAX_BYTES {
                    self.is_over_bytes = true;
                } else {
                    match hscale_wire::resultset::decode_row(p, self.columns.len()) {
                        Ok(row) => self.rows.push(row),
                        Err(_) => self.is_unreadable = true,
                    }
                }
            }
            At::Done => self.is_unreadable = true,
        }
    }

    fn error(&mut self, p: &[u8]) {
        self.err = ErrPacket::decode(p).ok();
        self.is_unreadable |= self.err.is_none();
        self.at = At::Done;
    }
}

/// A column definition's [`Origin`].
fn origin(p: &[u8]) -> Option<Origin> {
    let mut r = hscale_wire::buf::Reader::new(p);
    let mut text =
        || -> Option<String> { Some(String::from_utf8_lossy(r.lenenc_bytes().ok()?).into_owned()) };
    let (_catalog, schema, _table, org_table, _name) =
        (text()?, text()?, text()?, text()?, text()?);
    Some((schema, org_table, text()?))
}

impl AsyncWrite for RowSink {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let me = &mut *self;
        me.pending.extend_from_slice(buf);
        while me.pending.len() >= 4 {
            let h = &me.pending[..4];
            let len = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
            if me.pending.len() < 4 + len {
                break;
            }
            me.pending.advance(4);
            let p = me.pending.split_to(len);
            // A packet of 16 MB or more continues in the next one: beyond
            // every bound a read into memory has.
            if len == 0xff_ffff {
                me.is_over_bytes = true;
            }
            me.take(&p);
        }
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for RowSink {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut TaskContext<'_>,
        _: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The SELECT's answer.
pub enum Selected {
    /// Each row's values as literals.
    Rows(Vec<Vec<String>>),
    Error(ErrPacket),
}

/// A read's answer as row texts of literals, each string value in the
/// character set `collations` names for its column.
pub fn literal_rows(
    answer: Answer,
    collations: &hscale_wire::charset::Collations,
) -> Result<Selected, ProxyError> {
    let charset = &|id: u16| collations.get(id).map(|(cs, _)| cs.to_string());
    let (columns, rows) = match answer {
        Answer::Error(e) => return Ok(Selected::Error(e)),
        Answer::Ok(_) => return Ok(Selected::Rows(Vec::new())),
        Answer::Rows(c, r) => (c, r),
    };
    if let Some(c) = columns.iter().find(|c| c.column_type == 0x04) {
        return Err(ProxyError::Refused(format!(
            "INSERT ... SELECT of FLOAT column {} through hscale (its text form is rounded)",
            c.name
        )));
    }
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut values = Vec::with_capacity(columns.len());
        for (v, c) in row.iter().zip(&columns) {
            let mut text = String::new();
            push_literal(&mut text, v.as_deref(), c, charset)?;
            values.push(text);
        }
        out.push(values);
    }
    Ok(Selected::Rows(out))
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// A read the statement made for itself, as row texts of literals
    /// ([`literal_rows`] under the main backend's collations); a server's
    /// error is written to the client as the statement's answer: `None`.
    pub(super) async fn literal_rows_or_answer(
        &mut self,
        answer: Answer,
    ) -> Result<Option<Vec<Vec<String>>>, ProxyError> {
        match literal_rows(answer, self.b.ctx.collations())? {
            Selected::Rows(rows) => Ok(Some(rows)),
            Selected::Error(err) => self.write_server_error(1, &err).await.map(|()| None),
        }
    }
}

/// Whether a DATE, DATETIME or TIMESTAMP value of `answer` has a day its
/// month does not have (`2024-02-30`, stored under ALLOW_INVALID_DATES):
/// one server's INSERT ... SELECT copies such a value into a column of
/// its type as it is (outside NO_ZERO_DATE and NO_ZERO_IN_DATE), where
/// the same text as a literal is refused (1292) or written as the zero
/// date. `false` when a string value of another column reads as such a
/// date too: a mode that takes one takes the other, which one server
/// would have refused (`exec/insert_form.rs`).
pub fn has_invalid_days(answer: &Answer) -> bool {
    let Answer::Rows(columns, rows) = answer else {
        return false;
    };
    let is_date_typed = |c: &ColumnInfo| matches!(c.column_type, 0x07 | 0x0a | 0x0c | 0x0e);
    let mut typed = false;
    for row in rows {
        for (v, c) in row.iter().zip(columns) {
            let Some(v) = v.as_deref() else { continue };
            if !is_invalid_day(v) {
                continue;
            }
            if !is_date_typed(c) {
                return false;
            }
            typed = true;
        }
    }
    typed
}

/// `YYYY-MM-DD...` with a month of 1 to 12 and a day past its end.
fn is_invalid_day(v: &[u8]) -> bool {
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let b = v.get(r)?;
        if !b.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(b).ok()?.parse().ok()
    };
    if v.get(4) != Some(&b'-') || v.get(7) != Some(&b'-') {
        return false;
    }
    let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        _ => return false,
    };
    d > days && d <= 31
}

/// A result value as a literal one server would have used in its place:
/// numbers as written; anything else as a string of the result's
/// character set, `_charset X'..'` (which neither sql_mode nor the
/// connection's character set changes), converted to the column it goes
/// into as the server converts the SELECT's value.
fn push_literal(
    out: &mut String,
    v: Option<&[u8]>,
    c: &ColumnInfo,
    charset: &dyn Fn(u16) -> Option<String>,
) -> Result<(), ProxyError> {
    use std::fmt::Write;
    let Some(b) = v else {
        out.push_str("NULL");
        return Ok(());
    };
    let kind = Kind::of(c.column_type, c.charset, c.flags);
    if matches!(kind, Kind::Temporal | Kind::Time)
        && b.iter().all(|x| x.is_ascii_digit() || b"-:. ".contains(x))
    {
        out.push('\'');
        out.push_str(std::str::from_utf8(b).unwrap_or_default());
        out.push('\'');
        return Ok(());
    }
    if kind.is_number()
        && c.column_type != 0x10
        && !b.is_empty()
        && b.iter().all(|x| x.is_ascii_digit() || b"+-.eE".contains(x))
    {
        out.push_str(std::str::from_utf8(b).unwrap_or("0"));
        return Ok(());
    }
    // Printable ASCII without quotes or backslashes reads the same in
    // every character set and sql_mode: quoted, so the router can read a
    // partition key in it. Not the empty string: `''` is NULL under
    // EMPTY_STRING_IS_NULL, `_cs X''` is not.
    if c.charset != 63
        && !b.is_empty()
        && b.iter()
            .all(|x| (b' '..=b'~').contains(x) && !b"'\\".contains(x))
    {
        out.push('\'');
        out.push_str(std::str::from_utf8(b).unwrap_or_default());
        out.push('\'');
        return Ok(());
    }
    let cs = if c.charset == 63 {
        "binary".to_string()
    } else {
        charset(c.charset).ok_or_else(|| {
            ProxyError::Refused(format!(
                "INSERT ... SELECT of column {} in character set number {}",
                c.name, c.charset
            ))
        })?
    };
    let _ = write!(out, "_{cs} X'");
    for x in b {
        let _ = write!(out, "{x:02X}");
    }
    out.push('\'');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_days() {
        for v in [
            "2024-02-30",
            "2023-02-29 10:00:00",
            "2024-04-31",
            "1999-11-31 00:00:00.5",
        ] {
            assert!(is_invalid_day(v.as_bytes()), "{v}");
        }
        for v in [
            "2024-02-29",
            "0000-00-00",
            "2024-00-10",
            "2024-05-00",
            "2024-13-40",
            "abc",
            "2024-02-3",
        ] {
            assert!(!is_invalid_day(v.as_bytes()), "{v}");
        }
    }
    use hscale_wire::response::{encode_eof, encode_err};
    use hscale_wire::resultset::{encode_column, encode_column_count, encode_row};

    /// A sink that was written `packets` in bursts of `chunk` bytes (a
    /// packet split over writes, several packets in one).
    fn written(max_rows: usize, packets: &[Vec<u8>], chunk: usize) -> RowSink {
        let mut framed = Vec::new();
        for (seq, p) in packets.iter().enumerate() {
            let len = p.len();
            framed.extend_from_slice(&[
                len as u8,
                (len >> 8) as u8,
                (len >> 16) as u8,
                seq as u8 + 1,
            ]);
            framed.extend_from_slice(p);
        }
        let mut sink = RowSink::new(max_rows);
        let waker = std::task::Waker::noop();
        let mut cx = TaskContext::from_waker(waker);
        for part in framed.chunks(chunk) {
            let r = Pin::new(&mut sink).poll_write(&mut cx, part);
            assert!(matches!(r, Poll::Ready(Ok(n)) if n == part.len()));
        }
        sink
    }

    fn result(values: &[&str]) -> Vec<Vec<u8>> {
        let mut p = vec![encode_column_count(1).to_vec(), encode_column("v").to_vec()];
        p.push(encode_eof(0, 2).to_vec());
        for v in values {
            p.push(encode_row(&[Some(v)]).to_vec());
        }
        p.push(encode_eof(0, 2).to_vec());
        p
    }

    #[test]
    fn rows_are_decoded_as_written_in_any_bursts() {
        for chunk in [1, 3, 7, 1000] {
            let a = written(10, &result(&["a", "bb", "ccc"]), chunk)
                .answer("t")
                .unwrap();
            let Answer::Rows(c, r) = a else {
                panic!("not rows")
            };
            assert_eq!(c[0].name, "v");
            let got: Vec<_> = r.into_iter().map(|row| row[0].clone().unwrap()).collect();
            assert_eq!(got, vec![b"a".to_vec(), b"bb".to_vec(), b"ccc".to_vec()]);
        }
    }

    #[test]
    fn more_rows_than_the_bound_is_the_ship_limit() {
        let e = written(2, &result(&["1", "2", "3"]), 5).answer("t").err();
        assert!(
            matches!(e, Some(ProxyError::ShipLimit { limit: 2 })),
            "{e:?}"
        );
        assert!(written(3, &result(&["1", "2", "3"]), 5).answer("t").is_ok());
    }

    #[test]
    fn an_error_after_rows_is_the_answer() {
        let mut p = result(&["1"]);
        p.pop();
        p.push(encode_err(1146, b"42S02", "Table 'x' doesn't exist").to_vec());
        match written(10, &p, 4).answer("t").unwrap() {
            Answer::Error(e) => assert_eq!(e.code, 1146),
            _ => panic!("not the error"),
        }
    }

    #[test]
    fn a_cut_answer_is_no_answer() {
        let mut p = result(&["1"]);
        p.pop();
        assert!(written(10, &p, 4).answer("t").is_err());
    }
}
