//! Column definitions of a merged result (pure): the parts' definitions
//! unified into the client's, the comparison kind of a column, and the
//! definitions of values only HAVING reads.

use bytes::{Bytes, BytesMut};
use hscale_route::router::{GroupPlan, Output};
use hscale_route::value::Kind;
use hscale_wire::resultset::ColumnInfo;

use super::{unordered, Stop};
use crate::error::ProxyError;

/// The column definitions of one result made of several parts (a UNION
/// ALL, or partitions): the first part's, with the longest display length
/// and NOT NULL only where every part has it. Parts whose columns differ in
/// type, character set or scale cannot be merged as they are.
pub(super) struct Unified {
    defs: Vec<Bytes>,
    columns: Vec<ColumnInfo>,
    changed: bool,
}

const NOT_NULL_FLAG: u16 = 0x0001;

impl Unified {
    pub(super) fn new(defs: &[Bytes], columns: &[ColumnInfo]) -> Unified {
        Unified {
            defs: defs.to_vec(),
            columns: columns.to_vec(),
            changed: false,
        }
    }

    pub(super) fn add(&mut self, columns: &[ColumnInfo]) -> Result<(), Stop> {
        if columns.len() != self.columns.len() {
            return Err(Stop::Proxy(ProxyError::Wrong(
                "the parts of this result have different numbers of columns".into(),
            )));
        }
        for (u, c) in self.columns.iter_mut().zip(columns) {
            if (u.column_type, u.charset, u.decimals) != (c.column_type, c.charset, c.decimals) {
                return Err(Stop::Proxy(ProxyError::Refused(format!(
                    "column {} has different types in the parts of this result (a UNION ALL of differently typed branches across partitions is not supported yet)",
                    u.name
                ))));
            }
            if c.length > u.length {
                u.length = c.length;
                self.changed = true;
            }
            if u.flags & NOT_NULL_FLAG != 0 && c.flags & NOT_NULL_FLAG == 0 {
                u.flags &= !NOT_NULL_FLAG;
                self.changed = true;
            }
        }
        Ok(())
    }

    pub(super) fn finish(mut self) -> Result<(Vec<Bytes>, Vec<ColumnInfo>), Stop> {
        if self.changed {
            for (d, c) in self.defs.iter_mut().zip(&self.columns) {
                let patched = hscale_wire::resultset::patch_column(d, c.length, c.flags)
                    .map_err(|e| Stop::Proxy(ProxyError::Wrong(e.to_string())))?;
                *d = patched.freeze();
            }
        }
        Ok((self.defs, self.columns))
    }
}

/// How the values of a column compare.
pub(super) fn kind_of(c: &ColumnInfo) -> Kind {
    Kind::of(c.column_type, c.charset, c.flags)
}

/// How the values of a column compare, refusing ENUM and SET (the merge
/// cannot order them).
pub(super) fn ordered_kind(c: &ColumnInfo) -> Result<Kind, Stop> {
    match kind_of(c) {
        Kind::Unordered => Err(unordered()),
        kind => Ok(kind),
    }
}

/// The client's column definitions of a grouped merge with the flags and
/// decimals one server sends when it runs the statement. The definitions
/// come from the statement run with `LIMIT 0`, which the server answers
/// without executing it; executed, a GROUP BY or DISTINCT reads its
/// columns from a temporary table, whose fields carry other flags (no key
/// flags, no BINARY on COUNT or SUM, NO_DEFAULT_VALUE on MIN of a DATE)
/// and decimals (0, not 39, on MIN / MAX of a VARCHAR). A partition ran
/// the same expression the same way (its own GROUP BY or DISTINCT), so
/// its column's flags and decimals are one server's, for the outputs the
/// fragment selects as they are (a key, COUNT, SUM, MIN, MAX, BIT_*,
/// GROUP_CONCAT; not AVG, which the fragment splits). With a COUNT(DISTINCT)
/// the fragments group by more columns than the statement (and the server
/// runs them otherwise): the definitions stay as they are.
pub(super) fn as_executed(
    defs: &[Bytes],
    columns: &[ColumnInfo],
    g: &GroupPlan,
    part: &[ColumnInfo],
) -> Vec<Bytes> {
    let groups_alike = !g
        .outputs
        .iter()
        .any(|o| matches!(o, Output::CountDistinct(_)));
    if !groups_alike {
        return defs.to_vec();
    }
    defs.iter()
        .zip(columns)
        .zip(&g.outputs)
        .map(|((def, c), o)| {
            let source = match o {
                Output::Key(k) => g.keys.get(*k).map(|v| v.col),
                Output::Count(c)
                | Output::Sum(c)
                | Output::BitAnd(c)
                | Output::BitOr(c)
                | Output::BitXor(c)
                | Output::GroupConcat { col: c, .. } => Some(*c),
                Output::Min(v) | Output::Max(v) => Some(v.col),
                Output::Avg { .. } | Output::CountDistinct(_) => None,
            };
            // The type too where both are BLOBs of one character set: a
            // TEXT expression (JSON_VALUE, JSON_KEYS) is a LONG_BLOB
            // unexecuted and a BLOB read from the temporary table.
            let is_blob = |t: u8| (0xf9..=0xfc).contains(&t);
            let executed = source
                .and_then(|s| part.get(s))
                .filter(|p| {
                    p.charset == c.charset
                        && (p.column_type == c.column_type
                            || is_blob(p.column_type) && is_blob(c.column_type))
                })
                .filter(|p| {
                    (p.column_type, p.flags, p.decimals) != (c.column_type, c.flags, c.decimals)
                });
            match executed {
                Some(p) => hscale_wire::resultset::with_type_flags_and_decimals(
                    def,
                    p.column_type,
                    p.flags,
                    p.decimals,
                )
                .map(BytesMut::freeze)
                .unwrap_or_else(|_| def.clone()),
                None => def.clone(),
            }
        })
        .chain(defs.iter().skip(g.outputs.len()).cloned())
        .collect()
}

/// A column definition for a value the client does not see (HAVING).
pub(super) fn hidden_column(o: &Output, g: &GroupPlan, part: &[ColumnInfo]) -> ColumnInfo {
    let integer = ColumnInfo {
        name: String::new(),
        charset: 63,
        column_type: 0x08,
        length: 21,
        flags: 0,
        decimals: 0,
    };
    let of = |c: usize| part.get(c).cloned().unwrap_or_else(|| integer.clone());
    match o {
        Output::Key(k) => of(g.keys[*k].col),
        Output::Sum(c) => of(*c),
        Output::Avg { sum, .. } => {
            let mut c = of(*sum);
            c.decimals = (c.decimals + 4).min(30);
            c.column_type = 0xf6;
            c
        }
        Output::Min(v) | Output::Max(v) => of(v.col),
        _ => integer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::merge::fixtures::*;
    use hscale_route::router::Val;

    #[test]
    fn unified_columns_take_the_longest_length_and_nullable() {
        let not_null = hscale_wire::resultset::patch_column(
            &hscale_wire::resultset::encode_column("x"),
            10,
            NOT_NULL_FLAG,
        )
        .unwrap()
        .freeze();
        let first = ColumnInfo::decode(&not_null).unwrap();
        let mut u = Unified::new(
            std::slice::from_ref(&not_null),
            std::slice::from_ref(&first),
        );
        let mut longer = first.clone();
        longer.length = 40;
        longer.flags = 0;
        u.add(std::slice::from_ref(&longer)).unwrap();
        let (defs, columns) = u.finish().unwrap();
        let patched = ColumnInfo::decode(&defs[0]).unwrap();
        assert_eq!((patched.length, patched.flags), (40, 0));
        assert_eq!(columns[0], patched);
        // Nothing changed: the definition is kept as sent.
        let u = Unified::new(
            std::slice::from_ref(&not_null),
            std::slice::from_ref(&first),
        );
        assert_eq!(u.finish().unwrap().0[0], not_null);
    }

    #[test]
    fn parts_that_differ_in_type_or_count_are_refused() {
        let def = hscale_wire::resultset::encode_column("x").freeze();
        let c = ColumnInfo::decode(&def).unwrap();
        let mut u = Unified::new(std::slice::from_ref(&def), std::slice::from_ref(&c));
        assert!(matches!(
            u.add(&[c.clone(), c.clone()]),
            Err(Stop::Proxy(ProxyError::Wrong(_)))
        ));
        let mut other = c.clone();
        other.charset = BINARY;
        assert!(matches!(
            u.add(&[other]),
            Err(Stop::Proxy(ProxyError::Refused(_)))
        ));
    }

    #[test]
    fn kinds_follow_type_and_collation() {
        let s = |charset| kind_of(&col(VAR_STRING, charset, 0));
        assert_eq!(s(UTF8MB4_GENERAL_CI), Kind::Collated { pad_space: true });
        assert_eq!(
            s(UTF8MB4_GENERAL_NOPAD_CI),
            Kind::Collated { pad_space: false }
        );
        assert_eq!(s(BINARY), Kind::Bytes);
        assert_eq!(kind_of(&dec(2)), Kind::Decimal);
        assert!(ordered_kind(&col(0xf7, UTF8MB4_GENERAL_CI, 0)).is_err());
    }

    #[test]
    fn hidden_avg_columns_have_four_more_decimals() {
        // AVG(DECIMAL(22,2)) is DECIMAL with 6 decimals; AVG(INT) 4.
        let g = plan(
            vec![Val {
                col: 0,
                weight: None,
            }],
            Vec::new(),
            None,
        );
        let part = [int(), dec(2), int()];
        let avg = hidden_column(&Output::Avg { sum: 1, count: 2 }, &g, &part);
        assert_eq!((avg.column_type, avg.decimals), (NEWDECIMAL, 6));
        let avg = hidden_column(&Output::Avg { sum: 0, count: 2 }, &g, &part);
        assert_eq!((avg.column_type, avg.decimals), (NEWDECIMAL, 4));
        assert_eq!(hidden_column(&Output::Key(0), &g, &part), int());
        assert_eq!(
            hidden_column(&Output::Count(2), &g, &part).column_type,
            LONGLONG
        );
    }
}
