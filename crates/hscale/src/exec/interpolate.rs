//! A prepared statement's parameters written into its text as literals of
//! the same types, so that an execution can run as the text statement
//! (`merge/prepared.rs`: reads merged across partitions).
//!
//! Each parameter becomes the literal the server reads as the value it
//! makes of that parameter (`sql_prepare.cc`, `set_param_*`): integers as
//! integers (BIGINT UNSIGNED beyond 2^63 too), FLOAT and DOUBLE in the
//! shortest exponent form that reads back exactly (a DOUBLE literal),
//! DECIMAL as a decimal number, DATE as `DATE'...'`, DATETIME and
//! TIMESTAMP as `TIMESTAMP'...'` (fractional digits only when the value
//! has them, as the parameter's), TIME as `TIME'...'`, strings quoted in
//! the client's character set (`'` doubled; a backslash doubled unless
//! the session's sql_mode has NO_BACKSLASH_ESCAPES), BLOB parameters as
//! binary strings (`_binary X'..'`), NULL as NULL.

use bytes::Bytes;
use hscale_wire::buf::Reader;
use hscale_wire::stmt::Execute;

use crate::error::ProxyError;

/// One parameter's literal.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// SQL text, whatever the sql_mode.
    Sql(String),
    /// A string's bytes, quoted when written.
    Str(Vec<u8>),
}

impl Literal {
    /// A string whose quoting depends on NO_BACKSLASH_ESCAPES.
    pub fn needs_mode(&self) -> bool {
        matches!(self, Literal::Str(b) if b.iter().any(|c| *c == b'\\' || *c == 0))
    }
}

fn refused(what: &str) -> ProxyError {
    ProxyError::Refused(format!(
        "a prepared statement merged across partitions with {what} (run it as a query)"
    ))
}

/// The literals of one execution's parameters, in order. `long_data`
/// holds the values sent with COM_STMT_SEND_LONG_DATA.
pub fn literals(
    exec: &Execute<'_>,
    types: &[u8],
    count: usize,
    long_data: &[(u16, Bytes)],
) -> Result<Vec<Literal>, ProxyError> {
    fn bad<E>(_: E) -> ProxyError {
        ProxyError::Wrong("malformed parameter values".into())
    }
    let mut r = Reader::new(exec.values);
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let is_null = exec
            .null_bitmap
            .get(i / 8)
            .is_some_and(|b| b & (1 << (i % 8)) != 0);
        let ty = *types.get(2 * i).ok_or_else(|| bad(()))?;
        let unsigned = types.get(2 * i + 1).is_some_and(|f| f & 0x80 != 0);
        if is_null || ty == 0x06 {
            out.push(Literal::Sql("NULL".into()));
            continue;
        }
        if long_data.iter().any(|(p, _)| usize::from(*p) == i) {
            let mut v = Vec::new();
            for (_, d) in long_data.iter().filter(|(p, _)| usize::from(*p) == i) {
                v.extend_from_slice(d);
            }
            out.push(string(ty, v));
            continue;
        }
        let lit = match ty {
            0x01 => {
                let b = r.u8().map_err(bad)?;
                int(if unsigned { b as i128 } else { b as i8 as i128 })
            }
            0x02 | 0x0d => {
                let b = r.u16().map_err(bad)?;
                int(if unsigned {
                    b as i128
                } else {
                    b as i16 as i128
                })
            }
            0x03 | 0x09 => {
                let b = r.u32().map_err(bad)?;
                int(if unsigned {
                    b as i128
                } else {
                    b as i32 as i128
                })
            }
            0x08 => {
                let b = r.u64().map_err(bad)?;
                int(if unsigned {
                    b as i128
                } else {
                    b as i64 as i128
                })
            }
            0x04 => {
                let b = r.u32().map_err(bad)?;
                double(f32::from_bits(b) as f64)?
            }
            0x05 => {
                let b = r.u64().map_err(bad)?;
                double(f64::from_bits(b))?
            }
            0x07 | 0x0a | 0x0c => {
                let n = r.u8().map_err(bad)? as usize;
                date(ty == 0x0a, r.take(n).map_err(bad)?)
            }
            0x0b => {
                let n = r.u8().map_err(bad)? as usize;
                time(r.take(n).map_err(bad)?)
            }
            0x00 | 0xf6 => {
                let v = r.lenenc_bytes().map_err(bad)?;
                let plain = !v.is_empty()
                    && v.iter().enumerate().all(|(j, c)| {
                        c.is_ascii_digit() || *c == b'.' || (j == 0 && (*c == b'-' || *c == b'+'))
                    })
                    && v.iter().filter(|c| **c == b'.').count() <= 1
                    && v.iter().any(u8::is_ascii_digit);
                if !plain {
                    return Err(refused("a DECIMAL parameter that is not a plain number"));
                }
                Literal::Sql(String::from_utf8_lossy(v).into_owned())
            }
            _ => string(ty, r.lenenc_bytes().map_err(bad)?.to_vec()),
        };
        out.push(lit);
    }
    Ok(out)
}

fn int(v: i128) -> Literal {
    Literal::Sql(v.to_string())
}

/// The shortest form that reads back as `v`, with an exponent so that the
/// server reads a DOUBLE.
fn double(v: f64) -> Result<Literal, ProxyError> {
    if !v.is_finite() {
        return Err(refused("a floating-point parameter that is not a number"));
    }
    Ok(Literal::Sql(format!("{v:e}")))
}

/// A string parameter: BLOB types are binary strings, the rest text in the
/// client's character set.
fn string(ty: u8, v: Vec<u8>) -> Literal {
    if (0xf9..=0xfc).contains(&ty) {
        let mut s = String::with_capacity(12 + 2 * v.len());
        s.push_str("_binary X'");
        for b in &v {
            s.push_str(&format!("{b:02X}"));
        }
        s.push('\'');
        return Literal::Sql(s);
    }
    Literal::Str(v)
}

/// A binary DATE, DATETIME or TIMESTAMP parameter.
fn date(is_date: bool, d: &[u8]) -> Literal {
    let part = |i: usize| d.get(i).copied().unwrap_or(0);
    let y = u16::from_le_bytes([part(0), part(1)]);
    let (m, day) = (part(2), part(3));
    if y == 0 && m == 0 && day == 0 && d.len() <= 4 {
        // The zero date: no temporal literal takes it in every sql_mode.
        return Literal::Sql(if is_date {
            "'0000-00-00'".into()
        } else {
            "'0000-00-00 00:00:00'".into()
        });
    }
    if is_date {
        return Literal::Sql(format!("DATE'{y:04}-{m:02}-{day:02}'"));
    }
    let us = if d.len() >= 11 {
        u32::from_le_bytes([d[7], d[8], d[9], d[10]])
    } else {
        0
    };
    let mut s = format!(
        "TIMESTAMP'{y:04}-{m:02}-{day:02} {:02}:{:02}:{:02}",
        part(4),
        part(5),
        part(6)
    );
    if us != 0 {
        s.push_str(&format!(".{us:06}"));
    }
    s.push('\'');
    Literal::Sql(s)
}

/// A binary TIME parameter.
fn time(d: &[u8]) -> Literal {
    if d.len() < 8 {
        return Literal::Sql("TIME'00:00:00'".into());
    }
    let neg = if d[0] == 1 { "-" } else { "" };
    let days = u32::from_le_bytes([d[1], d[2], d[3], d[4]]);
    let hours = days * 24 + u32::from(d[5]);
    let mut s = format!("TIME'{neg}{hours:02}:{:02}:{:02}", d[6], d[7]);
    if d.len() >= 12 {
        let us = u32::from_le_bytes([d[8], d[9], d[10], d[11]]);
        if us != 0 {
            s.push_str(&format!(".{us:06}"));
        }
    }
    s.push('\'');
    Literal::Sql(s)
}

/// `sql` with the placeholder at each byte offset of `at` replaced by its
/// literal. `no_backslash_escapes`: the session's sql_mode, known when
/// some string needs it.
pub fn render(
    sql: &[u8],
    at: &[u32],
    literals: &[Literal],
    no_backslash_escapes: bool,
) -> Result<String, ProxyError> {
    let mut out: Vec<u8> = Vec::with_capacity(sql.len() + 16 * literals.len());
    let mut from = 0usize;
    for (pos, lit) in at.iter().zip(literals) {
        let pos = *pos as usize;
        out.extend_from_slice(&sql[from..pos]);
        from = pos + 1;
        match lit {
            Literal::Sql(s) => {
                // `- -5`, never `--5` (which reads as a comment after a space).
                if s.starts_with('-') && out.last() == Some(&b'-') {
                    out.push(b' ');
                }
                out.extend_from_slice(s.as_bytes());
            }
            Literal::Str(b) => {
                out.push(b'\'');
                for c in b {
                    match c {
                        b'\'' => out.extend_from_slice(b"''"),
                        b'\\' if no_backslash_escapes => {
                            return Err(refused(
                                "a string parameter holding a backslash under NO_BACKSLASH_ESCAPES",
                            ))
                        }
                        b'\\' => out.extend_from_slice(b"\\\\"),
                        0 if no_backslash_escapes => {
                            return Err(refused(
                                "a string parameter holding a NUL byte under NO_BACKSLASH_ESCAPES",
                            ))
                        }
                        0 => out.extend_from_slice(b"\\0"),
                        c => out.push(*c),
                    }
                }
                out.push(b'\'');
            }
        }
    }
    out.extend_from_slice(&sql[from..]);
    String::from_utf8(out).map_err(|_| refused("a string parameter that is not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_becomes_its_literal() {
        // 6 params: NULL, LONGLONG -5, unsigned LONGLONG 2^64-1, DOUBLE 0.1,
        // VAR_STRING "it's a\b", DATETIME 2024-01-02 03:04:05.000006
        let mut p = vec![0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0b000001, 1];
        p.extend_from_slice(&[0xfd, 0, 0x08, 0, 0x08, 0x80, 0x05, 0, 0xfd, 0, 0x0c, 0]);
        p.extend_from_slice(&(-5i64).to_le_bytes());
        p.extend_from_slice(&u64::MAX.to_le_bytes());
        p.extend_from_slice(&0.1f64.to_le_bytes());
        p.push(8);
        p.extend_from_slice(b"it's a\\b");
        p.extend_from_slice(&[11, 0xe8, 0x07, 1, 2, 3, 4, 5, 6, 0, 0, 0]);
        let e = Execute::decode(&p, 6).unwrap();
        let types = e.types.unwrap().to_vec();
        let lits = literals(&e, &types, 6, &[]).unwrap();
        let sql = b"SELECT ?, ? - ?, ?, ?, ?";
        let at: Vec<u32> = sql
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == b'?')
            .map(|(i, _)| i as u32)
            .collect();
        assert_eq!(
            render(sql, &at, &lits, false).unwrap(),
            "SELECT NULL, -5 - 18446744073709551615, 1e-1, 'it''s a\\\\b', TIMESTAMP'2024-01-02 03:04:05.000006'"
        );
        assert!(render(sql, &at, &lits, true).is_err());
        let minus = render(b"SELECT 1-?", &[9], &lits[1..2], false).unwrap();
        assert_eq!(minus, "SELECT 1- -5");
    }
}
