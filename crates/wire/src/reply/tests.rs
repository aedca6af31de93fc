//! Tests of the reply writers (`super`): the packets each writes.

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
