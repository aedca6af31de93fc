//! A text-protocol row rewritten as a binary-protocol row (the rows of a
//! COM_STMT_EXECUTE answer), column by column from its definition, as the
//! server writes each type (`Protocol_binary::store_*`): integers in their
//! width, FLOAT and DOUBLE as IEEE values, dates and times as their parts
//! (with the shortest length the value allows), everything else as the
//! same length-encoded bytes as in the text row.
//!
//! The proxy uses it for answers it builds from text rows itself (merged
//! results of prepared statements). The conversion is exact: the server's
//! text for a number or date reads back as the value it stores, including
//! DOUBLE, which it prints with as many digits as needed to read back.

use bytes::{BufMut, BytesMut};

use crate::buf::put_lenenc_bytes;
use crate::resultset::ColumnInfo;
use crate::WireError;

const UNSIGNED_FLAG: u16 = 0x20;

/// The binary row for `values` (text-protocol values) of `columns`.
pub fn encode_binary_row(
    columns: &[ColumnInfo],
    values: &[Option<&[u8]>],
) -> Result<BytesMut, WireError> {
    if columns.len() != values.len() {
        return Err(WireError::Malformed("row and column counts differ"));
    }
    let bitmap_len = (values.len() + 7 + 2) / 8;
    let mut b = BytesMut::with_capacity(1 + bitmap_len + values.len() * 9);
    b.put_u8(0x00);
    let at = b.len();
    b.put_bytes(0, bitmap_len);
    for (i, (c, v)) in columns.iter().zip(values).enumerate() {
        match v {
            None => b[at + (i + 2) / 8] |= 1 << ((i + 2) % 8),
            Some(v) => put_value(&mut b, c, v)?,
        }
    }
    Ok(b)
}

fn text(v: &[u8]) -> Result<&str, WireError> {
    std::str::from_utf8(v).map_err(|_| WireError::Malformed("a numeric or temporal value"))
}

fn put_value(b: &mut BytesMut, c: &ColumnInfo, v: &[u8]) -> Result<(), WireError> {
    fn bad<E>(_: E) -> WireError {
        WireError::Malformed("a numeric value that does not fit its column")
    }
    let unsigned = c.flags & UNSIGNED_FLAG != 0;
    let int =
        |v: &[u8]| -> Result<i128, WireError> { text(v)?.trim().parse::<i128>().map_err(bad) };
    match c.column_type {
        0x01 => {
            let n = int(v)?;
            b.put_u8(if unsigned { n as u8 } else { n as i8 as u8 });
        }
        0x02 | 0x0d => b.put_u16_le(int(v)? as u16),
        0x03 | 0x09 => b.put_u32_le(int(v)? as u32),
        0x08 => b.put_u64_le(int(v)? as u64),
        0x04 => {
            let f: f32 = text(v)?.trim().parse().map_err(bad)?;
            b.put_f32_le(f);
        }
        0x05 => {
            let f: f64 = text(v)?.trim().parse().map_err(bad)?;
            b.put_f64_le(f);
        }
        0x07 | 0x0a | 0x0c | 0x0e => put_datetime(b, text(v)?)?,
        0x0b => put_time(b, text(v)?)?,
        _ => put_lenenc_bytes(b, v),
    }
    Ok(())
}

/// `digits.fraction` seconds: whole seconds and microseconds.
fn seconds(s: &str) -> Result<(u8, u32), WireError> {
    let bad = WireError::Malformed("a temporal value");
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    let secs = whole.parse::<u8>().map_err(|_| bad)?;
    let mut micros = 0u32;
    for (i, d) in frac.bytes().take(6).enumerate() {
        if !d.is_ascii_digit() {
            return Err(WireError::Malformed("a temporal value"));
        }
        micros += u32::from(d - b'0') * 10u32.pow(5 - i as u32);
    }
    Ok((secs, micros))
}

/// `YYYY-MM-DD[ HH:MM:SS[.ffffff]]`.
fn put_datetime(b: &mut BytesMut, s: &str) -> Result<(), WireError> {
    let bad = || WireError::Malformed("a temporal value");
    let (date, time) = s.split_once(' ').unwrap_or((s, ""));
    let mut d = date.split('-');
    let mut next = || -> Result<u16, WireError> {
        d.next().and_then(|x| x.parse::<u16>().ok()).ok_or_else(bad)
    };
    let (y, m, day) = (next()?, next()? as u8, next()? as u8);
    let (mut h, mut mi, mut sec, mut us) = (0u8, 0u8, 0u8, 0u32);
    if !time.is_empty() {
        let mut t = time.split(':');
        h = t.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
        mi = t.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
        (sec, us) = seconds(t.next().ok_or_else(bad)?)?;
    }
    let len = if us != 0 {
        11
    } else if h != 0 || mi != 0 || sec != 0 {
        7
    } else if y != 0 || m != 0 || day != 0 {
        4
    } else {
        0
    };
    b.put_u8(len);
    if len >= 4 {
        b.put_u16_le(y);
        b.put_u8(m);
        b.put_u8(day);
    }
    if len >= 7 {
        b.put_u8(h);
        b.put_u8(mi);
        b.put_u8(sec);
    }
    if len == 11 {
        b.put_u32_le(us);
    }
    Ok(())
}

/// `[-]HHH:MM:SS[.ffffff]` (hours up to 838).
fn put_time(b: &mut BytesMut, s: &str) -> Result<(), WireError> {
    let bad = || WireError::Malformed("a temporal value");
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let mut t = s.split(':');
    let hours: u32 = t.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
    let mi: u8 = t.next().and_then(|x| x.parse().ok()).ok_or_else(bad)?;
    let (sec, us) = seconds(t.next().ok_or_else(bad)?)?;
    let (days, h) = (hours / 24, (hours % 24) as u8);
    let len = if us != 0 {
        12
    } else if hours != 0 || mi != 0 || sec != 0 {
        8
    } else {
        0
    };
    b.put_u8(len);
    if len >= 8 {
        b.put_u8(u8::from(neg));
        b.put_u32_le(days);
        b.put_u8(h);
        b.put_u8(mi);
        b.put_u8(sec);
    }
    if len == 12 {
        b.put_u32_le(us);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(column_type: u8, flags: u16) -> ColumnInfo {
        ColumnInfo {
            name: "c".into(),
            charset: 63,
            column_type,
            length: 0,
            flags,
            decimals: 0,
        }
    }

    #[test]
    fn integers_nulls_and_strings() {
        let cols = [
            col(0x08, 0),
            col(0x08, UNSIGNED_FLAG),
            col(0xfd, 0),
            col(0x01, 0),
        ];
        let row = encode_binary_row(
            &cols,
            &[
                Some(b"-2"),
                Some(b"18446744073709551615"),
                None,
                Some(b"-1"),
            ],
        )
        .unwrap();
        let mut want = vec![0x00, 0b0001_0000];
        want.extend_from_slice(&(-2i64).to_le_bytes());
        want.extend_from_slice(&u64::MAX.to_le_bytes());
        want.push(0xff);
        assert_eq!(&row[..], &want[..]);
    }

    #[test]
    fn doubles_read_back_exactly() {
        let row = encode_binary_row(&[col(0x05, 0)], &[Some(b"0.30000000000000004")]).unwrap();
        assert_eq!(&row[2..], &(0.1f64 + 0.2).to_le_bytes());
    }

    #[test]
    fn dates_and_times_take_their_shortest_form() {
        let cols = [
            col(0x0a, 0),
            col(0x0c, 0),
            col(0x0c, 0),
            col(0x0b, 0),
            col(0x0c, 0),
        ];
        let row = encode_binary_row(
            &cols,
            &[
                Some(b"2024-02-29"),
                Some(b"2024-01-01 00:00:00.000001"),
                Some(b"0000-00-00 00:00:00"),
                Some(b"-838:59:59"),
                Some(b"1999-12-31 23:59:59"),
            ],
        )
        .unwrap();
        let mut want = vec![0x00, 0x00];
        want.extend_from_slice(&[4, 0xe8, 0x07, 2, 29]);
        want.extend_from_slice(&[11, 0xe8, 0x07, 1, 1, 0, 0, 0, 1, 0, 0, 0]);
        want.push(0);
        want.extend_from_slice(&[8, 1, 34, 0, 0, 0, 22, 59, 59]);
        want.extend_from_slice(&[7, 0xcf, 0x07, 12, 31, 23, 59, 59]);
        assert_eq!(&row[..], &want[..]);
    }
}
