//! The compressed protocol (`CLIENT_COMPRESS`, zlib) as a byte stream
//! under [`crate::PacketStream`]: the packet layer reads and writes the
//! same packets as without compression, and [`Compressed`] turns them into
//! compressed frames and back.
//!
//! A frame is a 7-byte header (3 bytes: payload length, 1 byte: the
//! compressed sequence id, 3 bytes: the length before compression, 0 when
//! the payload is not compressed) and a payload that carries any run of
//! packet bytes (a packet may span frames, a frame may hold many packets).
//! The compressed sequence id has its own count: a reply's frames continue
//! from the id of the command's last frame, as a server's do. Like a
//! server, payloads shorter than 50 bytes, or that do not shrink, go
//! uncompressed. Written bytes are framed when the packet layer flushes,
//! so one reply becomes as few frames as it has flushes.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BufMut, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Shorter payloads are sent uncompressed (MariaDB's MIN_COMPRESS_LENGTH).
const MIN_COMPRESS: usize = 50;
/// The most bytes one frame carries (a 3-byte length).
const MAX_FRAME: usize = 0xFF_FFFF;
const HEADER: usize = 7;

/// A stream in the compressed protocol.
pub struct Compressed<S> {
    inner: S,
    /// Bytes read from `inner` that are not a whole frame yet.
    raw: BytesMut,
    /// Frame payloads read and decompressed, not handed out yet.
    plain: BytesMut,
    /// Bytes the packet layer wrote, framed at the next flush.
    pending: BytesMut,
    /// Frames not written to `inner` yet.
    out: BytesMut,
    /// Where reads from `inner` land before `raw`.
    scratch: Box<[u8]>,
    /// The compressed sequence id of the next frame written.
    seq: u8,
    compress: Compress,
    decompress: Decompress,
}

fn invalid(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn u24(b: &[u8]) -> usize {
    usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16
}

impl<S> Compressed<S> {
    /// Compress from now on: the next bytes either way are frames.
    pub fn new(inner: S) -> Compressed<S> {
        Compressed {
            inner,
            raw: BytesMut::new(),
            plain: BytesMut::new(),
            pending: BytesMut::new(),
            out: BytesMut::new(),
            scratch: vec![0; 64 * 1024].into_boxed_slice(),
            seq: 0,
            compress: Compress::new(Compression::default(), true),
            decompress: Decompress::new(true),
        }
    }

    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Take one whole frame off `raw` into `plain`; false when `raw` does
    /// not hold one yet.
    fn take_frame(&mut self) -> io::Result<bool> {
        if self.raw.len() < HEADER {
            return Ok(false);
        }
        let len = u24(&self.raw[0..3]);
        let seq = self.raw[3];
        let unpacked = u24(&self.raw[4..7]);
        if self.raw.len() < HEADER + len {
            self.raw.reserve(HEADER + len - self.raw.len());
            return Ok(false);
        }
        self.raw.advance(HEADER);
        let payload = self.raw.split_to(len);
        self.seq = seq.wrapping_add(1);
        if unpacked == 0 {
            self.plain.extend_from_slice(&payload);
            return Ok(true);
        }
        // At most the announced length is written: a frame cannot make
        // the proxy hold more than 16 MiB.
        let mut buf = Vec::with_capacity(unpacked);
        self.decompress.reset(true);
        let status = self
            .decompress
            .decompress_vec(&payload, &mut buf, FlushDecompress::Finish)
            .map_err(|_| invalid("a compressed frame that does not inflate"))?;
        if buf.len() != unpacked || status != Status::StreamEnd {
            return Err(invalid(
                "a compressed frame of another length than announced",
            ));
        }
        self.plain.extend_from_slice(&buf);
        Ok(true)
    }

    /// Frame everything in `pending` into `out`.
    fn frame_pending(&mut self) -> io::Result<()> {
        while !self.pending.is_empty() {
            let n = self.pending.len().min(MAX_FRAME);
            let chunk = self.pending.split_to(n);
            let start = self.out.len();
            self.out.put_bytes(0, HEADER);
            let mut unpacked = 0;
            if n >= MIN_COMPRESS {
                let mut packed = Vec::with_capacity(n);
                self.compress.reset();
                let status = self
                    .compress
                    .compress_vec(&chunk, &mut packed, FlushCompress::Finish)
                    .map_err(|_| invalid("zlib refused to compress"))?;
                if status == Status::StreamEnd && packed.len() < n {
                    self.out.extend_from_slice(&packed);
                    unpacked = n;
                }
            }
            if unpacked == 0 {
                self.out.extend_from_slice(&chunk);
            }
            let len = self.out.len() - start - HEADER;
            let h = &mut self.out[start..start + HEADER];
            h[0..3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
            h[3] = self.seq;
            h[4..7].copy_from_slice(&(unpacked as u32).to_le_bytes()[..3]);
            self.seq = self.seq.wrapping_add(1);
        }
        Ok(())
    }
}

impl<S: AsyncWrite + Unpin> Compressed<S> {
    /// Frame what was written and write every frame to `inner`.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.frame_pending()?;
        while !self.out.is_empty() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.out))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.out.advance(n);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Compressed<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.plain.is_empty() {
                let n = this.plain.len().min(buf.remaining());
                buf.put_slice(&this.plain[..n]);
                this.plain.advance(n);
                return Poll::Ready(Ok(()));
            }
            if this.take_frame()? {
                continue;
            }
            let mut rb = ReadBuf::new(&mut this.scratch);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
            if rb.filled().is_empty() {
                return if this.raw.is_empty() {
                    Poll::Ready(Ok(()))
                } else {
                    Poll::Ready(Err(io::ErrorKind::UnexpectedEof.into()))
                };
            }
            this.raw.extend_from_slice(rb.filled());
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Compressed<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // Bounded: a full frame's worth goes out before more is taken.
        if this.pending.len() >= MAX_FRAME {
            ready!(this.poll_drain(cx))?;
        }
        let n = buf.len().min(MAX_FRAME);
        this.pending.extend_from_slice(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// What one side writes, the other reads back, through frames small
    /// and large, compressed and not, with sequence ids counting up.
    #[tokio::test]
    async fn frames_round_trip() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let mut a = Compressed::new(a);
        let mut b = Compressed::new(b);
        let small = b"tiny".to_vec();
        let text: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 97).to_le_bytes())
            .collect();
        let noise: Vec<u8> = (0..5000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let sent = [small.clone(), text.clone(), noise.clone()].concat();
        let writer = tokio::spawn(async move {
            for part in [&small, &text, &noise] {
                a.write_all(part).await.unwrap();
                a.flush().await.unwrap();
            }
            a.seq
        });
        let mut got = vec![0u8; sent.len()];
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(got, sent);
        assert_eq!(writer.await.unwrap(), 3, "three flushes, three frames");
        assert_eq!(b.seq, 3, "the reader continues after the last id read");
    }

    /// A frame that announces another length than it inflates to is refused.
    #[tokio::test]
    async fn a_lying_frame_is_refused() {
        let mut c = Compress::new(Compression::default(), true);
        let mut packed = Vec::with_capacity(200);
        c.compress_vec(&[7u8; 100], &mut packed, FlushCompress::Finish)
            .unwrap();
        let mut frame = Vec::new();
        frame.extend_from_slice(&(packed.len() as u32).to_le_bytes()[..3]);
        frame.push(0);
        frame.extend_from_slice(&(99u32).to_le_bytes()[..3]);
        frame.extend_from_slice(&packed);
        let mut r = Compressed::new(&frame[..]);
        let mut out = Vec::new();
        let e = r.read_to_end(&mut out).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }
}
