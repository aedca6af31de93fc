//! Reading one parameter of a `COM_STMT_EXECUTE` as a partition key value,
//! for prepared statements routed at each execution.

use hscale_route::KeyValue;
use hscale_wire::buf::Reader;
use hscale_wire::stmt::Execute;

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::ProxyError;

/// How the client's string parameters read as text: its character set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientText {
    /// UTF-8 (or ASCII, binary, the server's default).
    Utf8,
    /// A single-byte character set (latin1, cp1251, ...): each byte one
    /// character, as the server reads it.
    SingleByte(&'static hscale_route::single_byte::SingleByte),
    /// Another character set: non-ASCII strings cannot be read.
    Other,
}

/// The value of parameter `index`. `long_data` lists the parameters whose
/// values came by COM_STMT_SEND_LONG_DATA (absent from the packet).
pub fn key_value(
    exec: &Execute,
    types: &[u8],
    index: usize,
    long_data: &[u16],
) -> Result<KeyValue, String> {
    key_value_as(exec, types, index, long_data, ClientText::Utf8)
}

/// [`key_value`], string parameters read as `text`.
pub fn key_value_as(
    exec: &Execute,
    types: &[u8],
    index: usize,
    long_data: &[u16],
    text: ClientText,
) -> Result<KeyValue, String> {
    let is_null = |i: usize| {
        exec.null_bitmap
            .get(i / 8)
            .is_some_and(|b| b & (1 << (i % 8)) != 0)
    };
    let mut r = Reader::new(exec.values);
    let bad = |_| "malformed parameter values".to_string();
    for i in 0..=index {
        if is_null(i) {
            if i == index {
                return Ok(KeyValue::Null);
            }
            continue;
        }
        if long_data.contains(&(i as u16)) {
            if i == index {
                return Err("the partition key was sent as long data".into());
            }
            continue;
        }
        let ty = *types.get(2 * i).ok_or("missing parameter type")?;
        let unsigned = types.get(2 * i + 1).is_some_and(|f| f & 0x80 != 0);
        let v = match ty {
            0x01 => {
                let b = r.u8().map_err(bad)?;
                KeyValue::Int(if unsigned { b as i128 } else { b as i8 as i128 })
            }
            0x02 | 0x0d => {
                let b = r.u16().map_err(bad)?;
                KeyValue::Int(if unsigned {
                    b as i128
                } else {
                    b as i16 as i128
                })
            }
            0x03 | 0x09 => {
                let b = r.u32().map_err(bad)?;
                KeyValue::Int(if unsigned {
                    b as i128
                } else {
                    b as i32 as i128
                })
            }
            0x08 => {
                let b = r.u64().map_err(bad)?;
                KeyValue::Int(if unsigned {
                    b as i128
                } else {
                    b as i64 as i128
                })
            }
            0x04 => {
                r.skip(4).map_err(bad)?;
                KeyValue::Null
            }
            0x05 => {
                r.skip(8).map_err(bad)?;
                KeyValue::Null
            }
            0x07 | 0x0a | 0x0c => {
                let n = r.u8().map_err(bad)? as usize;
                let d = r.take(n).map_err(bad)?;
                if i == index {
                    return date_value(d);
                }
                KeyValue::Null
            }
            0x0b => {
                let n = r.u8().map_err(bad)? as usize;
                r.skip(n).map_err(bad)?;
                KeyValue::Null
            }
            _ => {
                let bytes = r.lenenc_bytes().map_err(bad)?;
                KeyValue::Str(match text {
                    ClientText::SingleByte(cs) if i == index => {
                        cs.decode(bytes).ok_or_else(|| {
                            format!(
                                "a string partition key parameter with a byte that character set {} reads as no character of its own",
                                cs.name
                            )
                        })?
                    }
                    _ => String::from_utf8_lossy(bytes).into_owned(),
                })
            }
        };
        if i == index {
            if matches!(ty, 0x04 | 0x05 | 0x0b) {
                return Err(
                    "the partition key was sent as a FLOAT, DOUBLE or TIME parameter".into(),
                );
            }
            return Ok(v);
        }
    }
    Err("no such parameter".into())
}

/// One parameter of an execute packet, as bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound<'a> {
    Null,
    /// Sent by COM_STMT_SEND_LONG_DATA (no bytes in the packet).
    Long,
    /// Its bytes in the packet, length prefix included.
    Value(&'a [u8]),
}

/// Every parameter of `exec` (`n` of them), in order.
pub fn split<'a>(
    exec: &Execute<'a>,
    types: &[u8],
    n: usize,
    long_data: &[u16],
) -> Result<Vec<Bound<'a>>, String> {
    let bad = |_| "malformed parameter values".to_string();
    let mut r = Reader::new(exec.values);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        if exec
            .null_bitmap
            .get(i / 8)
            .is_some_and(|b| b & (1 << (i % 8)) != 0)
        {
            out.push(Bound::Null);
            continue;
        }
        if long_data.contains(&(i as u16)) {
            out.push(Bound::Long);
            continue;
        }
        let at = r.pos();
        match *types.get(2 * i).ok_or("missing parameter type")? {
            0x06 => {}
            0x01 => r.skip(1).map_err(bad)?,
            0x02 | 0x0d => r.skip(2).map_err(bad)?,
            0x03 | 0x09 | 0x04 => r.skip(4).map_err(bad)?,
            0x05 | 0x08 => r.skip(8).map_err(bad)?,
            0x07 | 0x0a | 0x0b | 0x0c => {
                let len = r.u8().map_err(bad)? as usize;
                r.skip(len).map_err(bad)?;
            }
            _ => {
                r.lenenc_bytes().map_err(bad)?;
            }
        }
        out.push(Bound::Value(&exec.values[at..r.pos()]));
    }
    Ok(out)
}

/// A binary DATE/DATETIME/TIMESTAMP as `YYYY-MM-DD[ HH:MM:SS]`.
fn date_value(d: &[u8]) -> Result<KeyValue, String> {
    if d.len() < 4 {
        return Ok(KeyValue::Str("0000-00-00".into()));
    }
    let y = u16::from_le_bytes([d[0], d[1]]);
    let mut s = format!("{y:04}-{:02}-{:02}", d[2], d[3]);
    if d.len() >= 7 {
        s.push_str(&format!(" {:02}:{:02}:{:02}", d[4], d[5], d[6]));
    }
    Ok(KeyValue::Str(s))
}

impl super::Bindings {
    /// Non-ASCII text from a client that does not send UTF-8 (cp1251,
    /// ...) would be planned as other strings than the server reads:
    /// refused where it names partitioned or global tables (or kept
    /// views). A latin1 client's statement is read as the text the server
    /// reads and handled from the start as UTF-8 text (`Some`), run with
    /// `character_set_client` utf8mb4 on its connections
    /// (`Bindings::is_text_utf8`, cleared by `query`): its keys route as
    /// their column holds them, and the server converts its literals as
    /// it would have converted the latin1 bytes.
    /// UTF-8 clients (nearly all) stop at the first check, which
    /// allocates nothing.
    pub fn as_utf8_text(
        &self,
        original: &Bytes,
        sql_bytes: &[u8],
    ) -> Result<Option<Bytes>, ProxyError> {
        let vars = &self.state.vars;
        let single_byte = (!self.is_text_utf8 && !vars.is_client_utf8())
            .then(|| vars.client_single_byte())
            .flatten();
        let is_foreign = match single_byte {
            Some(cs) => cs.is_foreign(sql_bytes),
            None => !sql_bytes.is_ascii(),
        };
        if is_foreign && !self.is_text_utf8 && !self.state.vars.is_client_utf8() {
            if let Some(why) = self.ctx.partitioning.refusal(sql_bytes) {
                let Some(text) = single_byte.and_then(|cs| cs.decode(&original[1..])) else {
                    return Err(ProxyError::Refused(match single_byte {
                        Some(cs) => format!(
                            "{why}: a byte that character set {} reads as no character of its own",
                            cs.name
                        ),
                        None => why,
                    }));
                };
                let mut p = BytesMut::with_capacity(1 + text.len());
                p.put_u8(original[0]);
                p.put_slice(text.as_bytes());
                return Ok(Some(p.freeze()));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_key_parameter() {
        // 3 params: NULL string, LONGLONG 42, VAR_STRING 'abc'
        let mut p = vec![
            0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0b001, 1, 0xfd, 0, 0x08, 0, 0xfd, 0,
        ];
        p.extend_from_slice(&42i64.to_le_bytes());
        p.extend_from_slice(&[3, b'a', b'b', b'c']);
        let e = Execute::decode(&p, 3).unwrap();
        let types = e.types.unwrap().to_vec();
        assert_eq!(key_value(&e, &types, 0, &[]), Ok(KeyValue::Null));
        assert_eq!(key_value(&e, &types, 1, &[]), Ok(KeyValue::Int(42)));
        assert_eq!(
            key_value(&e, &types, 2, &[]),
            Ok(KeyValue::Str("abc".into()))
        );
        assert!(key_value(&e, &types, 2, &[2]).is_err());
        assert_eq!(
            split(&e, &types, 3, &[2]),
            Ok(vec![
                Bound::Null,
                Bound::Value(&42i64.to_le_bytes()),
                Bound::Long
            ])
        );
        assert_eq!(
            split(&e, &types, 3, &[]).unwrap()[2],
            Bound::Value(b"\x03abc")
        );
    }
}
