//! Little-endian integers, length-encoded integers and strings: a bounds-checked
//! reader over a payload and append helpers for `BytesMut`.

use bytes::{BufMut, BytesMut};

use crate::WireError;

/// A cursor over a packet payload. Every read is bounds-checked and fails with
/// [`WireError::Malformed`] instead of panicking.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }
    pub fn pos(&self) -> usize {
        self.pos
    }
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    pub fn rest(&mut self) -> &'a [u8] {
        let r = &self.data[self.pos..];
        self.pos = self.data.len();
        r
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if self.remaining() < n {
            return Err(WireError::Malformed("truncated field"));
        }
        let r = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(r)
    }
    pub fn skip(&mut self, n: usize) -> Result<(), WireError> {
        self.take(n).map(|_| ())
    }
    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, WireError> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    pub fn u24(&mut self) -> Result<u32, WireError> {
        let b = self.take(3)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], 0]))
    }
    pub fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub fn u64(&mut self) -> Result<u64, WireError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    /// A length-encoded integer. `0xFB` (NULL) is returned as `None`.
    pub fn lenenc_opt(&mut self) -> Result<Option<u64>, WireError> {
        let first = self.u8()?;
        Ok(Some(match first {
            0..=0xfa => first as u64,
            0xfb => return Ok(None),
            0xfc => self.u16()? as u64,
            0xfd => self.u24()? as u64,
            0xfe => self.u64()?,
            0xff => return Err(WireError::Malformed("invalid length-encoded integer")),
        }))
    }
    pub fn lenenc(&mut self) -> Result<u64, WireError> {
        self.lenenc_opt()?
            .ok_or(WireError::Malformed("unexpected NULL length"))
    }
    pub fn lenenc_bytes(&mut self) -> Result<&'a [u8], WireError> {
        let n = self.lenenc()?;
        let n = usize::try_from(n).map_err(|_| WireError::Malformed("length too large"))?;
        self.take(n)
    }
    /// Bytes up to a NUL terminator (consumed, not returned).
    pub fn null_terminated(&mut self) -> Result<&'a [u8], WireError> {
        let rest = &self.data[self.pos..];
        match rest.iter().position(|&b| b == 0) {
            Some(i) => {
                self.pos += i + 1;
                Ok(&rest[..i])
            }
            None => Err(WireError::Malformed("missing NUL terminator")),
        }
    }
    /// Bytes up to a NUL terminator, or to the end of the payload if there is none.
    pub fn null_terminated_or_rest(&mut self) -> &'a [u8] {
        let rest = &self.data[self.pos..];
        match rest.iter().position(|&b| b == 0) {
            Some(i) => {
                self.pos += i + 1;
                &rest[..i]
            }
            None => {
                self.pos = self.data.len();
                rest
            }
        }
    }
}

/// Append a length-encoded integer.
pub fn put_lenenc(buf: &mut BytesMut, v: u64) {
    if v < 0xfb {
        buf.put_u8(v as u8);
    } else if v <= 0xffff {
        buf.put_u8(0xfc);
        buf.put_u16_le(v as u16);
    } else if v <= 0xff_ffff {
        buf.put_u8(0xfd);
        buf.put_uint_le(v, 3);
    } else {
        buf.put_u8(0xfe);
        buf.put_u64_le(v);
    }
}

/// Append a length-encoded string.
pub fn put_lenenc_bytes(buf: &mut BytesMut, b: &[u8]) {
    put_lenenc(buf, b.len() as u64);
    buf.put_slice(b);
}

/// Append a NUL-terminated string.
pub fn put_null_terminated(buf: &mut BytesMut, b: &[u8]) {
    buf.put_slice(b);
    buf.put_u8(0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn lenenc_round_trip(v in any::<u64>()) {
            let mut b = BytesMut::new();
            put_lenenc(&mut b, v);
            let mut r = Reader::new(&b);
            prop_assert_eq!(r.lenenc().unwrap(), v);
            prop_assert!(r.is_empty());
        }

        #[test]
        fn reader_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut r = Reader::new(&data);
            let _ = r.lenenc_bytes();
            let _ = r.null_terminated();
            let _ = r.u64();
        }
    }
}
