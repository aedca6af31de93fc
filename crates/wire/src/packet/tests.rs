//! `PacketStream`'s tests: framing, relays, held replies, moved rows.

use super::*;

/// A held reply stays in the buffer through flushes and is copied
/// whole; one that outgrows its cap goes out and is not copied.
#[tokio::test]
async fn held_replies_are_copied_or_spilled() {
    let (a, mut b) = tokio::io::duplex(1 << 20);
    let mut s = PacketStream::new(a);
    assert!(s.is_plain_reply());
    s.hold(100);
    s.write_packet(1, b"one");
    s.write_packet(2, b"two");
    s.flush().await.unwrap();
    let (held, next) = s.take_held().unwrap();
    assert_eq!(&held[..], b"\x03\x00\x00\x01one\x03\x00\x00\x02two");
    assert_eq!(next, 3);
    let (c, mut d) = tokio::io::duplex(1 << 20);
    let mut other = PacketStream::new(c);
    other.send_framed(&held, next).await.unwrap();
    s.flush().await.unwrap();
    let mut got = vec![0u8; held.len()];
    b.read_exact(&mut got).await.unwrap();
    assert_eq!(got, held);
    d.read_exact(&mut got).await.unwrap();
    assert_eq!(got, held);
    s.hold(5);
    s.write_packet(1, b"too long");
    s.flush().await.unwrap();
    assert!(s.take_held().is_none());
    let mut got = vec![0u8; 12];
    b.read_exact(&mut got).await.unwrap();
    assert_eq!(&got[4..], b"too long");
}

/// Rows buffered behind a packet already read move across renumbered,
/// and stop before a terminator, an error, an incomplete packet and a
/// packet continued past 16 MiB.
#[tokio::test]
async fn buffered_rows_move_across_renumbered() {
    let (a, b) = tokio::io::duplex(1 << 20);
    let mut backend_side = PacketStream::new(a);
    let mut backend = PacketStream::new(b);
    let (c, _d) = tokio::io::duplex(1 << 20);
    let mut client = PacketStream::new(c);
    // The first row (read as a packet), three more rows, an EOF, an
    // error after it.
    backend_side.write_packet(5, &[1, b'a']);
    backend_side.write_packet(6, &[1, b'b']);
    backend_side.write_packet(7, &[0xfe, 0, 0, 0, 0, 0, 0, 0, 0, 1, b'c']);
    backend_side.write_packet(8, &[2, b'd', b'e']);
    backend_side.write_packet(9, &[0xfe, 0, 0, 2, 0]);
    backend_side.write_packet(10, &[0xff, 1, 2]);
    backend_side.flush().await.unwrap();
    let first = backend.read_packet().await.unwrap();
    assert_eq!((first.seq, &first.payload[..]), (5, &[1, b'a'][..]));
    // Wait until everything arrived.
    while backend.rbuf.len() < 4 + 2 + 4 + 11 + 4 + 3 + 4 + 5 + 4 + 3 {
        backend.stream.read_buf(&mut backend.rbuf).await.unwrap();
    }
    let mut seq = 2;
    assert_eq!(backend.move_rows_into(&mut client, &mut seq), (3, 8));
    assert_eq!(seq, 5);
    assert_eq!(
        &client.wbuf[..],
        &[
            2, 0, 0, 2, 1, b'b', //
            11, 0, 0, 3, 0xfe, 0, 0, 0, 0, 0, 0, 0, 0, 1, b'c', //
            3, 0, 0, 4, 2, b'd', b'e',
        ][..]
    );
    // The EOF stays for the packet path; nothing moves before it.
    assert_eq!(backend.move_rows_into(&mut client, &mut seq), (0, 0));
    let eof = backend.read_packet().await.unwrap();
    assert_eq!(&eof.payload[..], &[0xfe, 0, 0, 2, 0]);
    assert_eq!(backend.move_rows_into(&mut client, &mut seq), (0, 0));
    // An incomplete packet stays too.
    let mut half = PacketStream::new(tokio::io::duplex(64).0);
    half.rbuf.extend_from_slice(&[5, 0, 0, 1, 4, b'a']);
    assert_eq!(half.move_rows_into(&mut client, &mut seq), (0, 0));
    assert_eq!(half.rbuf.len(), 6);
}

/// Rows whose sequence ids already match the client's are copied as
/// they are, in one go; within a relay, its mark is on the last row.
#[tokio::test]
async fn matching_rows_move_verbatim() {
    let mut backend = PacketStream::new(tokio::io::duplex(64).0);
    let mut client = PacketStream::new(tokio::io::duplex(64).0);
    let rows: &[u8] = &[
        2, 0, 0, 3, 1, b'x', //
        3, 0, 0, 4, 2, b'y', b'z', //
        5, 0, 0, 5, 0xfe, 0, 0, 2, 0,
    ];
    backend.rbuf.extend_from_slice(rows);
    client.wbuf.extend_from_slice(&[9, 9]);
    client.begin_relay();
    let mut seq = 3;
    assert_eq!(backend.move_rows_into(&mut client, &mut seq), (2, 4));
    assert_eq!(seq, 5);
    assert_eq!(&client.wbuf[2..], &rows[..13]);
    assert_eq!(client.relay, Some(2 + 6), "the relay marks the last row");
    assert_eq!(client.next_seq, 5);
    assert_eq!(backend.rbuf.len(), 9, "the EOF stays");
}

/// Two replies joined by a relay: the second is numbered on from the
/// first, the first's terminators carry MORE_RESULTS_EXISTS (an OK, a
/// classic EOF, an OK sent as EOF), the last's does not; the last
/// packet waits for the end of the relay, an error ends it.
#[tokio::test]
async fn relay_joins_replies() {
    use crate::consts::status::MORE_RESULTS_EXISTS as MORE;
    let (a, b) = tokio::io::duplex(64 * 1024);
    let mut w = PacketStream::new(a);
    let mut r = PacketStream::new(b);
    w.begin_relay();
    // An OK: affected 1, insert id 0, status 2, warnings 0.
    w.write_payload(1, &[0x00, 1, 0, 2, 0, 0, 0]);
    w.flush().await.unwrap();
    assert_eq!(w.pending(), 11, "the last packet is held back");
    assert_eq!(w.end_relayed(true), RelayEnd::Done);
    // A result set: column count, a definition, classic EOF, a row, EOF.
    let mut seq = 1;
    for p in [
        &[1u8][..],
        &[3, b'd', b'e', b'f'],
        &[0xfe, 0, 0, 2, 0],
        &[1, b'x'],
    ] {
        seq = w.write_payload(seq, p);
    }
    w.write_payload(seq, &[0xfe, 0, 0, 2, 0]);
    assert_eq!(w.end_relayed(true), RelayEnd::Done);
    // An OK sent as EOF (7 bytes), the last reply.
    w.write_payload(1, &[0xfe, 0, 0, 2, 0, 0, 0]);
    assert_eq!(w.end_relayed(false), RelayEnd::Done);
    w.write_payload(1, &[0xff, 0x10, 0x04]);
    assert_eq!(w.end_relayed(true), RelayEnd::Failed);
    w.end_relay();
    w.flush().await.unwrap();
    let mut got = Vec::new();
    for _ in 0..8 {
        let p = r.read_packet().await.unwrap();
        got.push((p.seq, p.payload.to_vec()));
    }
    let seqs: Vec<u8> = got.iter().map(|g| g.0).collect();
    assert_eq!(seqs, vec![1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(got[0].1[3], 2 | MORE as u8);
    assert_eq!(got[3].1[3], 2, "an EOF inside a result set is left alone");
    assert_eq!(got[5].1[3], 2 | MORE as u8);
    assert_eq!(got[6].1[3], 2);
    assert_eq!(got[7].1[0], 0xff);
}

#[tokio::test]
async fn split_and_join_large_payload() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let mut w = PacketStream::new(a);
    let mut r = PacketStream::new(b);
    let payload: Vec<u8> = (0..(MAX_PAYLOAD * 2 + 10)).map(|i| i as u8).collect();
    let p2 = payload.clone();
    let writer = tokio::spawn(async move {
        let next = w.write_payload(0, &p2);
        w.flush().await.unwrap();
        next
    });
    let (got, last_seq) = r.read_payload(0, usize::MAX).await.unwrap();
    assert_eq!(writer.await.unwrap(), 3);
    assert_eq!(last_seq, 2);
    assert_eq!(got.len(), payload.len());
    assert!(got[..] == payload[..]);
}

/// A command of three packets (ids 0-2): the reply written from id 1
/// goes out from id 3, and packets read back are numbered from 1 again;
/// the next command starts afresh.
#[tokio::test]
async fn reply_follows_a_split_command() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let mut client = PacketStream::new(a);
    let mut server = PacketStream::new(b);
    let command = vec![3u8; MAX_PAYLOAD * 2 + 1];
    let writer = tokio::spawn(async move {
        client.write_payload(0, &command);
        client.flush().await.unwrap();
        client
    });
    let got = server.read_command(usize::MAX).await.unwrap();
    assert_eq!(got.len(), MAX_PAYLOAD * 2 + 1);
    let mut client = writer.await.unwrap();
    assert_eq!(server.write_payload(1, b"reply"), 2);
    server.flush().await.unwrap();
    let p = client.read_packet().await.unwrap();
    assert_eq!((p.seq, &p.payload[..]), (3, &b"reply"[..]));
    client.write_payload(4, b"more");
    client.write_payload(0, b"next");
    client.flush().await.unwrap();
    let (p, seq) = server.read_payload(2, 100).await.unwrap();
    assert_eq!((seq, &p[..]), (2, &b"more"[..]));
    assert_eq!(&server.read_command(100).await.unwrap()[..], b"next");
    server.write_payload(1, b"ok");
    server.flush().await.unwrap();
    assert_eq!(client.read_packet().await.unwrap().seq, 1);
}

#[tokio::test]
async fn exact_multiple_gets_empty_trailer() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let mut w = PacketStream::new(a);
    let mut r = PacketStream::new(b);
    let payload = vec![7u8; MAX_PAYLOAD];
    let writer = tokio::spawn(async move {
        w.write_payload(0, &payload);
        w.flush().await.unwrap();
    });
    let (got, last_seq) = r.read_payload(0, usize::MAX).await.unwrap();
    writer.await.unwrap();
    assert_eq!(got.len(), MAX_PAYLOAD);
    assert_eq!(last_seq, 1);
}

#[tokio::test]
async fn too_large_and_bad_sequence_are_errors() {
    let (a, b) = tokio::io::duplex(1024);
    let mut w = PacketStream::new(a);
    let mut r = PacketStream::new(b);
    w.write_payload(5, &[1u8; 10]);
    w.write_payload(0, &[1u8; 100]);
    w.flush().await.unwrap();
    assert!(matches!(
        r.read_payload(0, 50).await,
        Err(WireError::Sequence { got: 5, .. })
    ));
    // Refused from its header; the connection is not read further.
    assert!(matches!(
        r.read_payload(0, 50).await,
        Err(WireError::TooLarge { size: 100, .. })
    ));
    drop(w);
    let (a, b) = tokio::io::duplex(1024);
    let mut w = PacketStream::new(a);
    let mut r = PacketStream::new(b);
    w.write_payload(5, &[1u8; 10]);
    w.flush().await.unwrap();
    assert!(matches!(
        r.read_payload(0, 50).await,
        Err(WireError::Sequence { got: 5, .. })
    ));
    drop(w);
    assert!(matches!(r.read_packet().await, Err(WireError::Closed)));
}

/// A peer that announces a 16 MiB packet and sends ten bytes of it
/// makes the reader hold about what arrived, not 16 MiB; over the
/// limit, the header alone is refused.
#[tokio::test]
async fn announced_size_is_not_reserved() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let mut w = PacketStream::new(a);
    let mut r = PacketStream::new(b);
    w.stream.write_all(&[0xff, 0xff, 0xff, 0]).await.unwrap();
    w.stream.write_all(&[b'x'; 10]).await.unwrap();
    let read = tokio::time::timeout(
        std::time::Duration::from_millis(100),
        r.read_payload(0, 64 * 1024 * 1024),
    )
    .await;
    assert!(read.is_err(), "no whole packet arrived");
    assert!(r.read_capacity() < 256 * 1024, "{}", r.read_capacity());
    // The rest arrives: the packet is read whole.
    let writer = tokio::spawn(async move {
        let rest = vec![b'y'; MAX_PAYLOAD - 10];
        w.stream.write_all(&rest).await.unwrap();
        w.write_payload(1, b"");
        w.flush().await.unwrap();
        w
    });
    let (p, seq) = r.read_payload(0, 64 * 1024 * 1024).await.unwrap();
    assert_eq!((p.len(), seq), (MAX_PAYLOAD, 1));
    drop(writer.await.unwrap());
    // Over the limit: refused from the header.
    let (a, b) = tokio::io::duplex(1024);
    let mut w = PacketStream::new(a);
    let mut r = PacketStream::new(b);
    w.stream.write_all(&[0xff, 0xff, 0xff, 0]).await.unwrap();
    assert!(matches!(
        r.read_payload(0, 64 * 1024).await,
        Err(WireError::TooLarge {
            size: MAX_PAYLOAD,
            max: 65536
        })
    ));
    drop(w);
}
