//! Result sets the proxy builds itself (admin commands) and text rows it
//! reads itself (its own queries to backends).

use bytes::{BufMut, BytesMut};

use crate::buf::{put_lenenc, put_lenenc_bytes, Reader};
use crate::WireError;

/// `MYSQL_TYPE_VAR_STRING`.
const TYPE_VAR_STRING: u8 = 0xfd;

/// A column definition (protocol 41) for a text column named `name`.
pub fn encode_column(name: &str) -> BytesMut {
    let mut b = BytesMut::with_capacity(32 + name.len());
    put_lenenc_bytes(&mut b, b"def");
    put_lenenc_bytes(&mut b, b"");
    put_lenenc_bytes(&mut b, b"");
    put_lenenc_bytes(&mut b, b"");
    put_lenenc_bytes(&mut b, name.as_bytes());
    put_lenenc_bytes(&mut b, name.as_bytes());
    b.put_u8(0x0c);
    b.put_u16_le(45); // utf8mb4_general_ci
    b.put_u32_le(1024);
    b.put_u8(TYPE_VAR_STRING);
    b.put_u16_le(0);
    b.put_u8(0);
    b.put_u16_le(0);
    b
}

/// A text-protocol row; `None` is NULL.
pub fn encode_row(values: &[Option<&str>]) -> BytesMut {
    let mut b = BytesMut::with_capacity(values.iter().map(|v| v.map_or(1, |s| s.len() + 3)).sum());
    for v in values {
        match v {
            Some(s) => put_lenenc_bytes(&mut b, s.as_bytes()),
            None => b.put_u8(0xfb),
        }
    }
    b
}

/// A text-protocol row of raw values; `None` is NULL.
pub fn encode_row_bytes(values: &[Option<&[u8]>]) -> BytesMut {
    let mut b = BytesMut::with_capacity(values.iter().map(|v| v.map_or(1, |s| s.len() + 9)).sum());
    for v in values {
        match v {
            Some(s) => put_lenenc_bytes(&mut b, s),
            None => b.put_u8(0xfb),
        }
    }
    b
}

/// Decode a text-protocol row of `columns` values.
pub fn decode_row(payload: &[u8], columns: usize) -> Result<Vec<Option<Vec<u8>>>, WireError> {
    let mut r = Reader::new(payload);
    let mut out = Vec::with_capacity(columns);
    for _ in 0..columns {
        if r.remaining() > 0 && payload[r.pos()] == 0xfb {
            r.skip(1)?;
            out.push(None);
        } else {
            out.push(Some(r.lenenc_bytes()?.to_vec()));
        }
    }
    Ok(out)
}

/// [`decode_row`] without copying: `out` is cleared and given the row's
/// `columns` values as slices of `payload` (bulk reads, one allocation
/// per row at most).
pub fn decode_row_into<'p>(
    payload: &'p [u8],
    columns: usize,
    out: &mut Vec<Option<&'p [u8]>>,
) -> Result<(), WireError> {
    out.clear();
    let mut r = Reader::new(payload);
    for _ in 0..columns {
        if r.remaining() > 0 && payload[r.pos()] == 0xfb {
            r.skip(1)?;
            out.push(None);
        } else {
            out.push(Some(r.lenenc_bytes()?));
        }
    }
    Ok(())
}

/// What the proxy needs of a column definition: its name, character set
/// and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnInfo {
    pub name: String,
    pub charset: u16,
    pub column_type: u8,
    /// Display length.
    pub length: u32,
    pub flags: u16,
    /// Digits after the point (31: not fixed, a floating-point value).
    pub decimals: u8,
}

impl ColumnInfo {
    pub fn decode(payload: &[u8]) -> Result<ColumnInfo, WireError> {
        let mut r = Reader::new(payload);
        for _ in 0..4 {
            r.lenenc_bytes()?; // catalog, schema, table, org_table
        }
        let name = String::from_utf8_lossy(r.lenenc_bytes()?).into_owned();
        r.lenenc_bytes()?; // org_name
        r.lenenc()?; // length of fixed fields
        let charset = r.u16()?;
        let length = r.u32()?;
        let column_type = r.u8()?;
        let flags = r.u16()?;
        let decimals = r.u8()?;
        Ok(ColumnInfo {
            name,
            charset,
            column_type,
            length,
            flags,
            decimals,
        })
    }

    /// Binary data (BLOB, BINARY, VARBINARY, BIT, ...), which must be sent back as a hex literal.
    pub fn is_binary(&self) -> bool {
        self.charset == 63 && !matches!(self.column_type, 0x00..=0x0e | 0xf6)
    }
}

/// A column definition with its display length and flags replaced.
pub fn patch_column(def: &[u8], length: u32, flags: u16) -> Result<BytesMut, WireError> {
    let mut r = Reader::new(def);
    for _ in 0..6 {
        r.lenenc_bytes()?;
    }
    r.lenenc()?;
    let at = r.pos() + 2; // after the character set
    if def.len() < at + 7 {
        return Err(WireError::Malformed("column definition too short"));
    }
    let mut b = BytesMut::from(def);
    b[at..at + 4].copy_from_slice(&length.to_le_bytes());
    b[at + 5..at + 7].copy_from_slice(&flags.to_le_bytes());
    Ok(b)
}

/// A column-count packet.
pub fn encode_column_count(n: usize) -> BytesMut {
    let mut b = BytesMut::with_capacity(9);
    put_lenenc(&mut b, n as u64);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_round_trip() {
        let row = encode_row(&[Some("a"), None, Some("")]);
        let d = decode_row(&row, 3).unwrap();
        assert_eq!(d, vec![Some(b"a".to_vec()), None, Some(Vec::new())]);
        let mut slices = vec![None];
        decode_row_into(&row, 3, &mut slices).unwrap();
        assert_eq!(slices, vec![Some(&b"a"[..]), None, Some(&b""[..])]);
        let col = encode_column("value");
        let c = ColumnInfo::decode(&col).unwrap();
        assert_eq!(c.name, "value");
        assert_eq!(c.column_type, TYPE_VAR_STRING);
        assert!(!c.is_binary());
    }
}
