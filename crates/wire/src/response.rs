//! Generic response packets: OK, ERR and EOF, and how to tell them apart
//! from result-set rows.

use bytes::{BufMut, BytesMut};

use crate::buf::{put_lenenc, Reader};

use crate::WireError;

/// A decoded OK packet (header `0x00`, or `0xFE` when it ends a result set
/// under `CLIENT_DEPRECATE_EOF`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OkPacket {
    pub affected_rows: u64,
    pub last_insert_id: u64,
    pub status: u16,
    pub warnings: u16,
}

impl OkPacket {
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(payload);
        let header = r.u8()?;
        if header != 0x00 && header != 0xfe {
            return Err(WireError::Malformed("not an OK packet"));
        }
        let affected_rows = r.lenenc()?;
        let last_insert_id = r.lenenc()?;
        let status = r.u16()?;
        let warnings = r.u16()?;
        Ok(OkPacket {
            affected_rows,
            last_insert_id,
            status,
            warnings,
        })
    }
}

/// The OK packet `payload` with its insert id replaced by `id`; everything
/// after it (status, warnings, info, session state) is kept byte for byte.
pub fn with_insert_id(payload: &[u8], id: u64) -> Result<BytesMut, WireError> {
    let mut r = Reader::new(payload);
    let header = r.u8()?;
    let affected_rows = r.lenenc()?;
    r.lenenc()?;
    let rest = &payload[payload.len() - r.remaining()..];
    let mut b = BytesMut::with_capacity(payload.len() + 8);
    b.put_u8(header);
    put_lenenc(&mut b, affected_rows);
    put_lenenc(&mut b, id);
    b.put_slice(rest);
    Ok(b)
}

/// Encode an OK packet; `header` is `0x00`, or `0xFE` for a result-set terminator.
pub fn encode_ok(header: u8, ok: &OkPacket, info: &str) -> BytesMut {
    let mut b = BytesMut::with_capacity(16 + info.len());
    b.put_u8(header);
    put_lenenc(&mut b, ok.affected_rows);
    put_lenenc(&mut b, ok.last_insert_id);
    b.put_u16_le(ok.status);
    b.put_u16_le(ok.warnings);
    if !info.is_empty() {
        // Length-encoded, as MariaDB and MySQL servers send it (libmariadb
        // reads a length here).
        crate::buf::put_lenenc_bytes(&mut b, info.as_bytes());
    }
    b
}

/// A decoded ERR packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrPacket {
    pub code: u16,
    pub sql_state: [u8; 5],
    pub message: String,
}

impl ErrPacket {
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(payload);
        if r.u8()? != 0xff {
            return Err(WireError::Malformed("not an ERR packet"));
        }
        let code = r.u16()?;
        let mut sql_state = *b"HY000";
        let rest = r.rest();
        let message = if rest.first() == Some(&b'#') && rest.len() >= 6 {
            sql_state.copy_from_slice(&rest[1..6]);
            &rest[6..]
        } else {
            rest
        };
        Ok(ErrPacket {
            code,
            sql_state,
            message: String::from_utf8_lossy(message).into_owned(),
        })
    }
}

pub fn encode_err(code: u16, sql_state: &[u8; 5], message: &str) -> BytesMut {
    let mut b = BytesMut::with_capacity(9 + message.len());
    b.put_u8(0xff);
    b.put_u16_le(code);
    b.put_u8(b'#');
    b.put_slice(sql_state);
    b.put_slice(message.as_bytes());
    b
}

/// A 5-byte EOF packet.
pub fn encode_eof(warnings: u16, status: u16) -> [u8; 5] {
    let w = warnings.to_le_bytes();
    let s = status.to_le_bytes();
    [0xfe, w[0], w[1], s[0], s[1]]
}

/// `(warnings, status)` of an EOF packet.
pub fn decode_eof(payload: &[u8]) -> Result<(u16, u16), WireError> {
    let mut r = Reader::new(payload);
    if r.u8()? != 0xfe {
        return Err(WireError::Malformed("not an EOF packet"));
    }
    if r.remaining() < 4 {
        return Ok((0, 0));
    }
    Ok((r.u16()?, r.u16()?))
}

/// True for a classic EOF packet (`0xFE` and shorter than 9 bytes); a row
/// can also start with `0xFE` but is then at least 9 bytes long.
pub fn is_eof(payload: &[u8]) -> bool {
    payload.first() == Some(&0xfe) && payload.len() < 9
}

pub fn is_err(payload: &[u8]) -> bool {
    payload.first() == Some(&0xff)
}

pub fn is_ok(payload: &[u8]) -> bool {
    payload.first() == Some(&0x00)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ok_round_trip() {
        let ok = OkPacket {
            affected_rows: 300,
            last_insert_id: 1 << 40,
            status: 3,
            warnings: 1,
        };
        assert_eq!(OkPacket::decode(&encode_ok(0, &ok, "info")).unwrap(), ok);
        assert_eq!(OkPacket::decode(&encode_ok(0xfe, &ok, "")).unwrap(), ok);
    }

    #[test]
    fn err_round_trip() {
        let e = encode_err(1146, b"42S02", "Table 'x.y' doesn't exist");
        let d = ErrPacket::decode(&e).unwrap();
        assert_eq!(d.code, 1146);
        assert_eq!(&d.sql_state, b"42S02");
        assert_eq!(d.message, "Table 'x.y' doesn't exist");
    }

    #[test]
    fn eof_detection() {
        let e = encode_eof(2, 0x22);
        assert!(is_eof(&e));
        assert_eq!(decode_eof(&e).unwrap(), (2, 0x22));
        let mut row = vec![0xfe];
        row.extend_from_slice(&[0u8; 8]);
        assert!(!is_eof(&row));
    }
}
