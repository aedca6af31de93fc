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
    /// The counts of its info text, which a proxy adds up over parts.
    pub info: OkInfo,
}

/// The counts an OK's info text carries, as the server writes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OkInfo {
    /// No info, or one that cannot be added up.
    #[default]
    None,
    /// `Records: 3  Duplicates: 1  Warnings: 0` (INSERT of several rows,
    /// INSERT ... SELECT, LOAD DATA, ALTER TABLE).
    Records {
        records: u64,
        duplicates: u64,
        warnings: u64,
    },
    /// `Records: 3  Deleted: 0  Skipped: 1  Warnings: 1` (LOAD DATA).
    Loaded {
        records: u64,
        deleted: u64,
        skipped: u64,
        warnings: u64,
    },
    /// `Rows matched: 2  Changed: 1  Warnings: 0` (UPDATE).
    Matched {
        matched: u64,
        changed: u64,
        warnings: u64,
    },
}

impl OkInfo {
    /// The same counts with the warning count `warnings` (`None` stays).
    pub fn with_warnings(self, warnings: u64) -> OkInfo {
        match self {
            OkInfo::None => OkInfo::None,
            OkInfo::Records {
                records,
                duplicates,
                ..
            } => OkInfo::Records {
                records,
                duplicates,
                warnings,
            },
            OkInfo::Loaded {
                records,
                deleted,
                skipped,
                ..
            } => OkInfo::Loaded {
                records,
                deleted,
                skipped,
                warnings,
            },
            OkInfo::Matched {
                matched, changed, ..
            } => OkInfo::Matched {
                matched,
                changed,
                warnings,
            },
        }
    }

    /// Read an info text (`None` for any other).
    pub fn parse(text: &[u8]) -> OkInfo {
        let Ok(text) = std::str::from_utf8(text) else {
            return OkInfo::None;
        };
        let numbers = |labels: [&str; 3]| -> Option<[u64; 3]> {
            let mut rest = text;
            let mut out = [0u64; 3];
            for (i, l) in labels.iter().enumerate() {
                rest = rest.trim_start().strip_prefix(l)?.trim_start();
                let end = rest
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len());
                out[i] = rest[..end].parse().ok()?;
                rest = &rest[end..];
            }
            rest.trim().is_empty().then_some(out)
        };
        if let Some([records, duplicates, warnings]) =
            numbers(["Records:", "Duplicates:", "Warnings:"])
        {
            return OkInfo::Records {
                records,
                duplicates,
                warnings,
            };
        }
        if let Some(rest) = text.strip_prefix("Records:") {
            let mut n = [0u64; 4];
            let mut it = rest.split("  ");
            let labels = ["", "Deleted:", "Skipped:", "Warnings:"];
            let mut ok = true;
            for (i, l) in labels.iter().enumerate() {
                match it
                    .next()
                    .and_then(|p| p.trim().strip_prefix(l))
                    .and_then(|v| v.trim().parse().ok())
                {
                    Some(v) => n[i] = v,
                    None => ok = false,
                }
            }
            if ok && it.next().is_none() {
                return OkInfo::Loaded {
                    records: n[0],
                    deleted: n[1],
                    skipped: n[2],
                    warnings: n[3],
                };
            }
        }
        if let Some([matched, changed, warnings]) =
            numbers(["Rows matched:", "Changed:", "Warnings:"])
        {
            return OkInfo::Matched {
                matched,
                changed,
                warnings,
            };
        }
        OkInfo::None
    }

    /// The sum of two parts' counts, when both are of one kind.
    pub fn plus(self, other: OkInfo) -> OkInfo {
        match (self, other) {
            (
                OkInfo::Records {
                    records: a,
                    duplicates: b,
                    warnings: c,
                },
                OkInfo::Records {
                    records: x,
                    duplicates: y,
                    warnings: z,
                },
            ) => OkInfo::Records {
                records: a + x,
                duplicates: b + y,
                warnings: c + z,
            },
            (
                OkInfo::Matched {
                    matched: a,
                    changed: b,
                    warnings: c,
                },
                OkInfo::Matched {
                    matched: x,
                    changed: y,
                    warnings: z,
                },
            ) => OkInfo::Matched {
                matched: a + x,
                changed: b + y,
                warnings: c + z,
            },
            (
                OkInfo::Loaded {
                    records: a,
                    deleted: b,
                    skipped: c,
                    warnings: d,
                },
                OkInfo::Loaded {
                    records: w,
                    deleted: x,
                    skipped: y,
                    warnings: z,
                },
            ) => OkInfo::Loaded {
                records: a + w,
                deleted: b + x,
                skipped: c + y,
                warnings: d + z,
            },
            _ => OkInfo::None,
        }
    }

    /// The info text, as the server writes it.
    pub fn text(&self) -> String {
        match self {
            OkInfo::None => String::new(),
            OkInfo::Records {
                records,
                duplicates,
                warnings,
            } => format!("Records: {records}  Duplicates: {duplicates}  Warnings: {warnings}"),
            OkInfo::Matched {
                matched,
                changed,
                warnings,
            } => format!("Rows matched: {matched}  Changed: {changed}  Warnings: {warnings}"),
            OkInfo::Loaded {
                records,
                deleted,
                skipped,
                warnings,
            } => format!(
                "Records: {records}  Deleted: {deleted}  Skipped: {skipped}  Warnings: {warnings}"
            ),
        }
    }
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
        // The info: a string to the end (no CLIENT_SESSION_TRACK), or
        // length-encoded; only the counts are kept.
        let rest = &payload[payload.len() - r.remaining()..];
        let info = match rest.split_first() {
            Some((&n, text)) if usize::from(n) == text.len() => OkInfo::parse(text),
            _ => OkInfo::parse(rest),
        };
        Ok(OkPacket {
            affected_rows,
            last_insert_id,
            status,
            warnings,
            info,
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
    fn load_data_counts_add_up() {
        let a = OkInfo::parse(b"Records: 3  Deleted: 1  Skipped: 0  Warnings: 2");
        let b = OkInfo::parse(b"Records: 2  Deleted: 0  Skipped: 1  Warnings: 1");
        assert_eq!(
            a.plus(b).text(),
            "Records: 5  Deleted: 1  Skipped: 1  Warnings: 3"
        );
        assert_eq!(OkInfo::parse(b"Records: 1  Deleted: x"), OkInfo::None);
    }

    #[test]
    fn ok_round_trip() {
        let ok = OkPacket {
            affected_rows: 300,
            last_insert_id: 1 << 40,
            status: 3,
            warnings: 1,
            info: OkInfo::None,
        };
        assert_eq!(OkPacket::decode(&encode_ok(0, &ok, "info")).unwrap(), ok);
        let info = "Records: 3  Duplicates: 1  Warnings: 0";
        let d = OkPacket::decode(&encode_ok(0, &ok, info)).unwrap();
        assert_eq!(d.info.text(), info);
        assert_eq!(
            d.info.plus(d.info).text(),
            "Records: 6  Duplicates: 2  Warnings: 0"
        );
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
