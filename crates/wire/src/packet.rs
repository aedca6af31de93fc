//! Packet framing: a 3-byte length, a 1-byte sequence id, then the payload.
//! Payloads of 16 MiB - 1 or more are split over several packets; the reader
//! can hand out the physical packets one by one (for streaming) or join them
//! into one logical payload (for commands the proxy must look at).
//!
//! Sequence ids restart at 0 with each command, and the reply goes on from
//! the command's last packet. A client command of several packets
//! ([`PacketStream::read_command`]) moves every later id of its exchange
//! on by its extra packets, in the stream itself: code above it numbers a
//! reply as if the command were one packet (the reply starts at 1).

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::WireError;

/// Largest payload of one physical packet; a packet of exactly this size is
/// followed by a continuation packet.
pub const MAX_PAYLOAD: usize = 0xff_ffff;

/// Flush the write buffer once it holds this many bytes.
const FLUSH_THRESHOLD: usize = 64 * 1024;

/// The read buffer grows towards an announced packet by at most this much
/// (or by what it already holds, whichever is more) per read.
const GROW_STEP: usize = 64 * 1024;

/// One physical packet.
#[derive(Debug, Clone)]
pub struct Packet {
    pub seq: u8,
    pub payload: Bytes,
}

impl Packet {
    /// True when a continuation packet follows this one.
    pub fn is_continued(&self) -> bool {
        self.payload.len() == MAX_PAYLOAD
    }
    /// First payload byte, or `None` for an empty payload.
    pub fn first(&self) -> Option<u8> {
        self.payload.first().copied()
    }
}

/// A buffered packet reader and writer over one socket.
pub struct PacketStream<S> {
    stream: S,
    rbuf: BytesMut,
    wbuf: BytesMut,
    /// Continuation packets of the current command (see
    /// [`PacketStream::read_command`]): added to every sequence id written
    /// and taken from every one read until the next command.
    seq_shift: u8,
    /// While the replies of several statements are joined into one reply
    /// (a multi-statement query the proxy runs statement by statement):
    /// where the last packet queued starts in `wbuf`. `flush` holds that
    /// packet back until [`PacketStream::end_relayed`] knows whether more
    /// results follow it.
    relay: Option<usize>,
    /// The sequence id after the last packet queued (as sent).
    next_seq: u8,
    /// While a reply is held ([`PacketStream::hold`]): where it starts in
    /// `wbuf` and how many bytes it may grow to before it goes out.
    hold: Option<Hold>,
}

/// A reply kept in the write buffer instead of flushed, to be copied
/// (the answer one execution gives several clients, hscale's
/// `exec/coalesce.rs`).
#[derive(Debug, Clone, Copy)]
struct Hold {
    start: usize,
    cap: usize,
}

/// A whole result set found in a read buffer
/// ([`PacketStream::whole_result`]): byte offsets from the buffer's front,
/// headers included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WholeResult {
    /// End of the column count and definitions.
    pub head: usize,
    /// Length of the metadata EOF that follows them.
    pub meta_eof: usize,
    /// End of the rows (where the final EOF starts).
    pub rows_end: usize,
    /// End of the final EOF: the whole result set's length.
    pub len: usize,
    pub columns: u64,
    pub rows: u64,
    /// The final EOF's status flags and warning count.
    pub status: u16,
    pub warnings: u16,
}

/// An EOF packet's warning count and status flags (`None`: not an EOF of
/// the protocol 4.1 form).
fn eof_fields(p: &[u8]) -> Option<(u16, u16)> {
    (p.len() == 5 && p[0] == 0xfe).then(|| {
        (
            u16::from_le_bytes([p[1], p[2]]),
            u16::from_le_bytes([p[3], p[4]]),
        )
    })
}

/// How one statement's reply ended within a relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayEnd {
    /// An OK or EOF: another statement's reply may follow.
    Done,
    /// An error (or nothing): the statements after it do not run.
    Failed,
}

impl<S: AsyncRead + AsyncWrite + Unpin> PacketStream<S> {
    pub fn new(stream: S) -> Self {
        PacketStream {
            stream,
            rbuf: BytesMut::with_capacity(16 * 1024),
            wbuf: BytesMut::with_capacity(16 * 1024),
            seq_shift: 0,
            relay: None,
            next_seq: 0,
            hold: None,
        }
    }

    /// A reply written now starts at sequence id 1 as it is sent: no
    /// relay joins it to others and no command of several packets shifts
    /// its ids. Only such a reply's bytes can be written again as they
    /// are to another client ([`PacketStream::send_framed`]).
    pub fn is_plain_reply(&self) -> bool {
        self.relay.is_none() && self.seq_shift == 0
    }

    /// Keep what is written from now on in the write buffer (flushes do
    /// nothing) until [`PacketStream::take_held`], unless it grows past
    /// `cap` bytes: then it is flushed as usual and the hold is over
    /// (`take_held` returns `None`). Nothing reaches the peer while held,
    /// so a peer that went away is noticed only afterwards.
    pub fn hold(&mut self, cap: usize) {
        self.hold = Some(Hold {
            start: self.wbuf.len(),
            cap,
        });
    }

    /// End a hold: a copy of the framed bytes written since
    /// [`PacketStream::hold`] and the sequence id after them, or `None`
    /// when they outgrew the cap. The bytes stay queued for this peer.
    pub fn take_held(&mut self) -> Option<(Bytes, u8)> {
        let h = self.hold.take()?;
        let held = self.wbuf.get(h.start..)?;
        Some((Bytes::copy_from_slice(held), self.next_seq))
    }

    /// Send framed packets as they are (bytes [`PacketStream::take_held`]
    /// gave, ids included; `next_seq` is the id after them), flushed in
    /// steps of the flush threshold: the write buffer never holds more
    /// than one step of them, however many peers are sent the same bytes.
    pub async fn send_framed(&mut self, framed: &[u8], next_seq: u8) -> Result<(), WireError> {
        self.next_seq = next_seq;
        for step in framed.chunks(FLUSH_THRESHOLD) {
            self.wbuf.extend_from_slice(step);
            self.flush().await?;
        }
        self.flush().await
    }

    pub fn get_ref(&self) -> &S {
        &self.stream
    }

    /// The socket itself, for writing bytes outside the framing (tests).
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// The socket, dropping whatever is buffered.
    pub fn into_inner(self) -> S {
        self.stream
    }

    /// Take the bytes read from the socket but not yet handed out as
    /// packets: what a client sent after its SSLRequest (its TLS hello).
    pub fn take_buffered(&mut self) -> Bytes {
        self.rbuf.split().freeze()
    }

    /// True when a complete packet is already buffered, so reading it will not wait.
    pub fn has_buffered_packet(&self) -> bool {
        if self.rbuf.len() < 4 {
            return false;
        }
        let len = u32::from_le_bytes([self.rbuf[0], self.rbuf[1], self.rbuf[2], 0]) as usize;
        self.rbuf.len() >= 4 + len
    }

    /// Move the complete row packets at the front of the read buffer into
    /// `out`'s write buffer as they are, numbered from `*seq` on (which
    /// moves past them), until `out` holds `FLUSH_THRESHOLD` bytes: the
    /// rows of a result set relayed without a `Packet` or an allocation
    /// each. Stops before anything that is not a whole row: an EOF
    /// (`0xFE`, under 9 bytes), an error (`0xFF`), an empty packet, one
    /// continued past 16 MiB, or one not fully read. Returns the rows
    /// moved and the sequence id (as read) of the last.
    pub fn move_rows_into<D: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        out: &mut PacketStream<D>,
        seq: &mut u8,
    ) -> (u64, u8) {
        // The whole rows at the front, copied in one go, headers included;
        // their sequence ids are rewritten only where the client's differ
        // (a reply joined from several statements' replies).
        let shift = out.seq_shift;
        let b = &self.rbuf[..];
        let room = FLUSH_THRESHOLD.saturating_sub(out.wbuf.len());
        let (mut at, mut last_at, mut moved) = (0usize, 0usize, 0u64);
        let mut next = seq.wrapping_add(shift);
        let mut is_renumbered = false;
        while at < room && b.len() - at >= 4 {
            let h = &b[at..];
            let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
            if len == 0 || len >= MAX_PAYLOAD || h.len() < 4 + len {
                break;
            }
            let first = h[4];
            if first == 0xff || (first == 0xfe && len < 9) {
                break;
            }
            is_renumbered |= h[3] != next;
            last_at = at;
            at += 4 + len;
            next = next.wrapping_add(1);
            moved += 1;
        }
        if moved == 0 {
            return (0, 0);
        }
        let last = b[last_at + 3].wrapping_sub(self.seq_shift);
        let start = out.wbuf.len();
        if let Some(relay_at) = out.relay.as_mut() {
            *relay_at = start + last_at;
        }
        out.wbuf.extend_from_slice(&b[..at]);
        self.rbuf.advance(at);
        if is_renumbered {
            let (mut p, mut s) = (start, seq.wrapping_add(shift));
            while p < out.wbuf.len() {
                let len = u32::from_le_bytes([out.wbuf[p], out.wbuf[p + 1], out.wbuf[p + 2], 0]);
                out.wbuf[p + 3] = s;
                s = s.wrapping_add(1);
                p += 4 + len as usize;
            }
        }
        out.next_seq = next;
        *seq = seq.wrapping_add(moved as u8);
        (moved, last)
    }

    /// A whole result set at the front of the read buffer, as a server
    /// sends the answer to a read in one piece: a column count under 251,
    /// its definitions, the metadata EOF, rows, and a final EOF that
    /// neither announces more results nor opened a cursor; every packet
    /// under 16 MiB, no error, at most `max` bytes in all. `None` when the
    /// buffer holds anything else or not all of it yet.
    pub fn whole_result(&self, max: usize) -> Option<WholeResult> {
        use crate::consts::status::{CURSOR_EXISTS, MORE_RESULTS_EXISTS};
        let b = self.rbuf.get(..self.rbuf.len().min(max))?;
        // The packet at `at`: its payload's bounds.
        let packet = |at: usize| -> Option<(usize, usize)> {
            let h = b.get(at..at + 4)?;
            let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
            let end = at + 4 + len;
            (len > 0 && len < MAX_PAYLOAD && end <= b.len()).then_some((at + 4, end))
        };
        let is_eof = |p: &[u8]| p[0] == 0xfe && p.len() < 9;
        let (start, mut at) = packet(0)?;
        let columns = b[start];
        if at - start != 1 || columns == 0 || columns >= 0xfb {
            return None;
        }
        for _ in 0..columns {
            let (s, e) = packet(at)?;
            if b[s] == 0xff || is_eof(&b[s..e]) {
                return None;
            }
            at = e;
        }
        let head = at;
        let (s, e) = packet(at)?;
        let (_, meta_status) = eof_fields(&b[s..e])?;
        if meta_status & CURSOR_EXISTS != 0 {
            return None;
        }
        let meta_eof = e - at;
        at = e;
        let mut rows = 0u64;
        loop {
            let (s, e) = packet(at)?;
            let p = &b[s..e];
            if is_eof(p) {
                let (warnings, status) = eof_fields(p)?;
                if status & MORE_RESULTS_EXISTS != 0 {
                    return None;
                }
                return Some(WholeResult {
                    head,
                    meta_eof,
                    rows_end: at,
                    len: e,
                    columns: u64::from(columns),
                    rows,
                    status,
                    warnings,
                });
            }
            if p[0] == 0xff {
                return None;
            }
            rows += 1;
            at = e;
        }
    }

    /// Move the first `len` bytes of the read buffer, whole packets, into
    /// `out`'s write buffer numbered from `*seq` on (which moves past
    /// them). Returns how many packets moved.
    pub fn move_packets_into<D: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        out: &mut PacketStream<D>,
        len: usize,
        seq: &mut u8,
    ) -> u64 {
        let start = out.wbuf.len();
        out.wbuf.extend_from_slice(&self.rbuf[..len]);
        self.rbuf.advance(len);
        let mut s = seq.wrapping_add(out.seq_shift);
        let (mut p, mut last, mut moved) = (start, start, 0u64);
        while p < out.wbuf.len() {
            let l = u32::from_le_bytes([out.wbuf[p], out.wbuf[p + 1], out.wbuf[p + 2], 0]);
            out.wbuf[p + 3] = s;
            s = s.wrapping_add(1);
            last = p;
            p += 4 + l as usize;
            moved += 1;
        }
        if moved > 0 {
            if let Some(relay_at) = out.relay.as_mut() {
                *relay_at = last;
            }
            out.next_seq = s;
        }
        *seq = seq.wrapping_add(moved as u8);
        moved
    }

    /// Drop the first `len` bytes of the read buffer (whole packets).
    pub fn skip_buffered(&mut self, len: usize) {
        self.rbuf.advance(len);
    }

    /// Bytes the read buffer holds room for now (buffered or not): what
    /// reading costs in memory, for tests.
    pub fn read_capacity(&self) -> usize {
        self.rbuf.capacity()
    }

    /// Read one physical packet.
    pub async fn read_packet(&mut self) -> Result<Packet, WireError> {
        self.read_packet_within(usize::MAX).await
    }

    /// Read the next command from a client: a logical payload at sequence
    /// id 0 of at most `max` bytes. A command of several packets shifts the
    /// sequence ids of the rest of its exchange, written and read, by its
    /// continuation packets, so its reply still starts at 1 for the caller.
    pub async fn read_command(&mut self, max: usize) -> Result<Bytes, WireError> {
        self.seq_shift = 0;
        let (payload, last) = self.read_payload(0, max).await?;
        self.seq_shift = last;
        Ok(payload)
    }

    /// Read one physical packet whose payload is at most `max` bytes. A
    /// header announcing more fails at once, before its payload is read;
    /// otherwise the buffer grows as bytes arrive (by at most what is
    /// already buffered, or 64 KiB), so a peer that announces a large
    /// packet and sends nothing costs nothing.
    async fn read_packet_within(&mut self, max: usize) -> Result<Packet, WireError> {
        let len = self.fill_within(max).await?;
        let seq = self.rbuf[3].wrapping_sub(self.seq_shift);
        self.rbuf.advance(4);
        let payload = self.rbuf.split_to(len).freeze();
        Ok(Packet { seq, payload })
    }

    /// Read until a whole packet is buffered (nothing is handed out).
    pub async fn fill_packet(&mut self) -> Result<(), WireError> {
        self.fill_within(usize::MAX).await.map(|_| ())
    }

    /// Read until a whole packet of at most `max` bytes is buffered at the
    /// front of the read buffer; its payload's length.
    #[inline]
    async fn fill_within(&mut self, max: usize) -> Result<usize, WireError> {
        loop {
            if self.rbuf.len() >= 4 {
                let len =
                    u32::from_le_bytes([self.rbuf[0], self.rbuf[1], self.rbuf[2], 0]) as usize;
                if len > max {
                    return Err(WireError::TooLarge { size: len, max });
                }
                if self.rbuf.len() >= 4 + len {
                    return Ok(len);
                }
                let missing = 4 + len - self.rbuf.len();
                if self.rbuf.capacity() - self.rbuf.len() < missing.min(4096) {
                    self.rbuf
                        .reserve(missing.min(self.rbuf.len().max(GROW_STEP)));
                }
            } else if self.rbuf.capacity() - self.rbuf.len() < 4096 {
                self.rbuf.reserve(16 * 1024);
            }
            let n = self.stream.read_buf(&mut self.rbuf).await?;
            if n == 0 {
                return Err(WireError::Closed);
            }
        }
    }

    /// Read a logical payload (joining continuation packets), checking that
    /// sequence ids follow `expected_seq` and that it stays within `max`
    /// bytes (checked against each packet's header, before its payload is
    /// read). Returns the payload and the sequence id of its last packet.
    pub async fn read_payload(
        &mut self,
        expected_seq: u8,
        max: usize,
    ) -> Result<(Bytes, u8), WireError> {
        let first = self.read_packet_within(max).await?;
        if first.seq != expected_seq {
            return Err(WireError::Sequence {
                got: first.seq,
                expected: expected_seq,
            });
        }
        if !first.is_continued() {
            return Ok((first.payload, first.seq));
        }
        let mut joined = BytesMut::from(&first.payload[..]);
        let mut seq = first.seq;
        loop {
            let p = self
                .read_packet_within(max - joined.len())
                .await
                .map_err(|e| match e {
                    WireError::TooLarge { size, max } => WireError::TooLarge {
                        size: size + joined.len(),
                        max: max + joined.len(),
                    },
                    e => e,
                })?;
            let want = seq.wrapping_add(1);
            if p.seq != want {
                return Err(WireError::Sequence {
                    got: p.seq,
                    expected: want,
                });
            }
            seq = p.seq;
            joined.extend_from_slice(&p.payload);
            if !p.is_continued() {
                return Ok((joined.freeze(), seq));
            }
        }
    }

    /// Queue a logical payload, split into packets as needed. Returns the
    /// sequence id to use for the next packet.
    pub fn write_payload(&mut self, mut seq: u8, payload: &[u8]) -> u8 {
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_PAYLOAD);
            if let Some(at) = self.relay.as_mut() {
                *at = self.wbuf.len();
            }
            self.wbuf.reserve(4 + n);
            self.wbuf.put_uint_le(n as u64, 3);
            self.wbuf.put_u8(seq.wrapping_add(self.seq_shift));
            self.wbuf.put_slice(&rest[..n]);
            seq = seq.wrapping_add(1);
            self.next_seq = seq.wrapping_add(self.seq_shift);
            rest = &rest[n..];
            if n < MAX_PAYLOAD {
                return seq;
            }
        }
    }

    /// Queue one physical packet as it is (used when forwarding packets that
    /// may be parts of a split payload).
    pub fn write_packet(&mut self, seq: u8, payload: &[u8]) {
        if let Some(at) = self.relay.as_mut() {
            *at = self.wbuf.len();
        }
        self.wbuf.reserve(4 + payload.len());
        self.wbuf.put_uint_le(payload.len() as u64, 3);
        self.wbuf.put_u8(seq.wrapping_add(self.seq_shift));
        self.wbuf.put_slice(payload);
        self.next_seq = seq.wrapping_add(self.seq_shift).wrapping_add(1);
    }

    /// The peer sent packets within the reply (the file of `LOAD DATA
    /// LOCAL INFILE`), the last at `seq` as read: the rest of the reply,
    /// written from sequence id 1, follows it.
    pub fn continue_after(&mut self, seq: u8) {
        self.seq_shift = self.seq_shift.wrapping_add(seq);
    }

    /// Start joining the replies of several statements into the reply to
    /// one command: each statement's reply is written as if it were the
    /// whole reply (from sequence id 1), and [`PacketStream::end_relayed`]
    /// after each one numbers the next on from it and marks its last
    /// packet with SERVER_MORE_RESULTS_EXISTS when another follows.
    pub fn begin_relay(&mut self) {
        self.relay = Some(self.wbuf.len());
    }

    /// End one statement's reply within a relay (`more`: another
    /// statement's reply follows). An error ends the relay's replies.
    pub fn end_relayed(&mut self, more: bool) -> RelayEnd {
        let Some(at) = self.relay else {
            return RelayEnd::Failed;
        };
        let Some(payload) = self.wbuf.get_mut(at + 4..) else {
            return RelayEnd::Failed;
        };
        let Some(status_at) = terminator_status(payload) else {
            return RelayEnd::Failed;
        };
        if more {
            payload[status_at] |= crate::consts::status::MORE_RESULTS_EXISTS as u8;
        }
        // The next reply starts at 1: shift it to follow this one's end.
        self.seq_shift = self.next_seq.wrapping_sub(1);
        RelayEnd::Done
    }

    /// Stop joining replies; the packet held back goes out at the next flush.
    pub fn end_relay(&mut self) {
        self.relay = None;
    }

    /// Bytes the write buffer takes before it is flushed.
    pub fn room(&self) -> usize {
        FLUSH_THRESHOLD.saturating_sub(self.wbuf.len())
    }

    /// Bytes queued and not yet flushed.
    pub fn pending(&self) -> usize {
        self.wbuf.len()
    }

    /// Flush if the write buffer has grown past the threshold.
    pub async fn maybe_flush(&mut self) -> Result<(), WireError> {
        if self.wbuf.len() >= FLUSH_THRESHOLD {
            self.flush().await?;
        }
        Ok(())
    }

    pub async fn flush(&mut self) -> Result<(), WireError> {
        if let Some(h) = self.hold {
            if self.wbuf.len() - h.start <= h.cap {
                return Ok(());
            }
            // Too big to copy: it goes out as any reply.
            self.hold = None;
        }
        // In a relay the last packet queued waits (see `relay`).
        let n = self.relay.unwrap_or(self.wbuf.len());
        if n > 0 {
            self.stream.write_all(&self.wbuf[..n]).await?;
            if n == self.wbuf.len() {
                self.wbuf.clear();
            } else {
                self.wbuf.advance(n);
            }
            if let Some(at) = self.relay.as_mut() {
                *at = 0;
            }
            // A no-op on a socket; the compressed protocol
            // (`compress::Compressed`) makes its frames here.
            self.stream.flush().await?;
        }
        Ok(())
    }

    /// Queue a payload starting at sequence 0 and flush.
    pub async fn send_command(&mut self, payload: &[u8]) -> Result<(), WireError> {
        self.queue_command(payload);
        self.flush().await
    }

    /// Queue a command (a payload starting at sequence 0) without flushing:
    /// several commands queued and flushed together are pipelined, and the
    /// server answers them one after the other, in order.
    pub fn queue_command(&mut self, payload: &[u8]) {
        self.seq_shift = 0;
        self.write_payload(0, payload);
    }

    /// Close the sending side (after an error was flushed) and read and
    /// drop what the peer still sends, up to `max_bytes` or its own close:
    /// closing with unread input would reset the connection and could
    /// destroy the error before the peer reads it. Costs no memory; the
    /// caller bounds the time.
    pub async fn linger(&mut self, max_bytes: usize) {
        let _ = self.flush().await;
        let _ = self.stream.shutdown().await;
        let mut dropped = self.rbuf.len();
        self.rbuf.clear();
        let mut scratch = [0u8; 8192];
        while dropped < max_bytes {
            match self.stream.read(&mut scratch).await {
                Ok(0) | Err(_) => return,
                Ok(n) => dropped += n,
            }
        }
    }

    pub async fn shutdown(&mut self) {
        let _ = self.flush().await;
        let _ = self.stream.shutdown().await;
    }
}

/// Where the low byte of the status flags is in a reply's last packet
/// (an OK, an OK sent as EOF, or a classic EOF); `None` for an error or
/// anything else.
fn terminator_status(p: &[u8]) -> Option<usize> {
    match p.first()? {
        0xfe if p.len() == 5 => Some(3),
        0x00 | 0xfe => {
            let mut r = crate::buf::Reader::new(p);
            r.skip(1).ok()?;
            r.lenenc().ok()?;
            r.lenenc().ok()?;
            (r.pos() + 2 <= p.len()).then_some(r.pos())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;
