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

/// A column definition with its type, flags and decimals replaced (a
/// TEXT expression's LONG_BLOB of a statement not executed becomes the
/// BLOB of the temporary table an executed GROUP BY read it from).
pub fn with_type_flags_and_decimals(
    def: &[u8],
    column_type: u8,
    flags: u16,
    decimals: u8,
) -> Result<BytesMut, WireError> {
    let mut b = with_flags_and_decimals(def, flags, decimals)?;
    let mut r = Reader::new(def);
    for _ in 0..6 {
        r.lenenc_bytes()?;
    }
    r.lenenc()?;
    let at = r.pos() + 2;
    b[at + 4] = column_type;
    Ok(b)
}

/// A column definition with its flags and decimals replaced.
pub fn with_flags_and_decimals(
    def: &[u8],
    flags: u16,
    decimals: u8,
) -> Result<BytesMut, WireError> {
    let mut r = Reader::new(def);
    for _ in 0..6 {
        r.lenenc_bytes()?;
    }
    r.lenenc()?;
    let at = r.pos() + 2; // after the character set
    if def.len() < at + 8 {
        return Err(WireError::Malformed("column definition too short"));
    }
    let mut b = BytesMut::from(def);
    b[at + 5..at + 7].copy_from_slice(&flags.to_le_bytes());
    b[at + 7] = decimals;
    Ok(b)
}

/// A column definition's schema and original table, when a proxy may
/// need to show another one: the original table differs from the table
/// (read under an alias), or both end like a generation suffix (`_g7`, a
/// partition's table read under its own name). `None` also for a
/// malformed definition.
pub fn aliased_org_table(def: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut r = Reader::new(def);
    r.lenenc_bytes().ok()?; // catalog
    let schema = r.lenenc_bytes().ok()?;
    let table = r.lenenc_bytes().ok()?;
    let org_table = r.lenenc_bytes().ok()?;
    let is_generation = || {
        let digits = org_table
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_digit())
            .count();
        digits > 0 && org_table[..org_table.len() - digits].ends_with(b"_g")
    };
    (!org_table.is_empty() && (table != org_table || is_generation()))
        .then_some((schema, org_table))
}

/// A column definition with its original table named `org_table` (and
/// its table too, when that was the original table's own name).
pub fn with_org_table(def: &[u8], org_table: &[u8]) -> Result<BytesMut, WireError> {
    let mut r = Reader::new(def);
    let catalog = r.lenenc_bytes()?;
    let schema = r.lenenc_bytes()?;
    let table = r.lenenc_bytes()?;
    let old = r.lenenc_bytes()?;
    let rest = r.rest();
    let mut b = BytesMut::with_capacity(def.len() + org_table.len());
    put_lenenc_bytes(&mut b, catalog);
    put_lenenc_bytes(&mut b, schema);
    put_lenenc_bytes(&mut b, if table == old { org_table } else { table });
    put_lenenc_bytes(&mut b, org_table);
    b.put_slice(rest);
    Ok(b)
}

/// A column definition with its name `name` (everything else as it was:
/// the proxy answers a statement with a server's definitions for
/// another spelling of it).
pub fn with_name(def: &[u8], name: &[u8]) -> Result<BytesMut, WireError> {
    let mut r = Reader::new(def);
    let head: Vec<&[u8]> = (0..4).map(|_| r.lenenc_bytes()).collect::<Result<_, _>>()?;
    r.lenenc_bytes()?; // name
    let rest = r.rest();
    let mut b = BytesMut::with_capacity(def.len() + name.len());
    for field in head {
        put_lenenc_bytes(&mut b, field);
    }
    put_lenenc_bytes(&mut b, name);
    b.put_slice(rest);
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

    #[test]
    fn a_renamed_column_keeps_every_other_field() {
        let def_of = |name: &[u8]| {
            let mut def = BytesMut::new();
            for f in [
                &b"def"[..],
                b"information_schema",
                b"TABLE_NAMES",
                b"TABLE_NAMES",
            ] {
                put_lenenc_bytes(&mut def, f);
            }
            put_lenenc_bytes(&mut def, name);
            put_lenenc_bytes(&mut def, b"TABLE_NAME");
            def.put_slice(&[0x0c, 33, 0, 0, 1, 0, 0, 253, 1, 0x10, 0, 0, 0]);
            def
        };
        let renamed = with_name(&def_of(b"Tables_in_db"), b"Tables_in_db (o%)").unwrap();
        assert_eq!(renamed, def_of(b"Tables_in_db (o%)"));
        assert_eq!(
            ColumnInfo::decode(&renamed).unwrap().name,
            "Tables_in_db (o%)"
        );
    }

    #[test]
    fn an_aliased_original_table_is_renamed() {
        let mut def = BytesMut::new();
        for f in [&b"def"[..], b"db", b"t", b"t_p1_g10", b"id", b"id"] {
            put_lenenc_bytes(&mut def, f);
        }
        def.put_slice(&[0x0c, 63, 0, 11, 0, 0, 0, 3, 3, 0x42, 0, 0, 0]);
        assert_eq!(
            aliased_org_table(&def),
            Some((&b"db"[..], &b"t_p1_g10"[..]))
        );
        let renamed = with_org_table(&def, b"t").unwrap();
        assert_eq!(aliased_org_table(&renamed), None);
        let mut want = BytesMut::new();
        for f in [&b"def"[..], b"db", b"t", b"t", b"id", b"id"] {
            put_lenenc_bytes(&mut want, f);
        }
        want.put_slice(&[0x0c, 63, 0, 11, 0, 0, 0, 3, 3, 0x42, 0, 0, 0]);
        assert_eq!(renamed, want);
        assert_eq!(ColumnInfo::decode(&renamed).unwrap().name, "id");
        // A partition's table under its own name (RETURNING): both names.
        let mut own = BytesMut::new();
        for f in [&b"def"[..], b"db", b"t_p1_g10", b"t_p1_g10", b"id", b"id"] {
            put_lenenc_bytes(&mut own, f);
        }
        assert_eq!(
            aliased_org_table(&own),
            Some((&b"db"[..], &b"t_p1_g10"[..]))
        );
        let renamed = with_org_table(&own, b"t").unwrap();
        assert!(renamed.starts_with(b"\x03def\x02db\x01t\x01t\x02id"));
        // A plain table under its own name: nothing to look up.
        let mut plain = BytesMut::new();
        for f in [&b"def"[..], b"db", b"users", b"users", b"id", b"id"] {
            put_lenenc_bytes(&mut plain, f);
        }
        assert_eq!(aliased_org_table(&plain), None);
    }

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
