//! How a partition key's column compares its values, so that hashing
//! functions see one value for all the values the column calls equal:
//! 'abc' and 'ABC' under a case-insensitive collation, 'a' and 'a ' under
//! PAD SPACE, 1.0 and 1.00 in a DECIMAL key.
//!
//! A string key is replaced by its collation's weight, written as
//! characters (`'abc'` under utf8mb4_general_ci is `'ABC'`, `'é '` is
//! `'E'`); a DECIMAL key by its value at the column's scale (`'01.0'` in a
//! DECIMAL(10,2) is `'1.00'`, as the column stores it). The backend computes
//! the same with [`KeyCompare::sql`] when rows are copied between
//! partitions. Only collations whose weight is one character per character
//! are reproduced (tables in `collation_tables.rs`). Every other collation
//! (the UCA ones: utf8mb4_unicode_ci, unicode_520_ci, the language
//! variants, uca1400_*, latin1_german2_ci, ...) is [`Weighed`]: the
//! backend's `WEIGHT_STRING` of the key, level by level, written in hex,
//! each level's trailing space weights dropped under PAD SPACE
//! ([`Weighed::sql`]). The proxy asks the backend once per key and keeps
//! the answer in its worker's book (`weights.rs`); routing, the copy
//! filter and SHOW PARTITIONS all see the same text, as the backend
//! computes it.
//!
//! Tables set up before this existed have no [`KeyCompare`] and keep their
//! placement: raw values, as before.

use std::fmt;

use crate::collation_tables as tables;
use crate::known::Known;
use crate::value::Decimal;
use crate::{HashError, KeyValue};

/// A collation hscale reproduces exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Collation {
    /// utf8mb4_general_ci and utf8mb4_general_nopad_ci.
    GeneralCi { pad_space: bool },
    /// utf8mb4_bin and utf8mb4_nopad_bin: code points.
    Utf8Bin { pad_space: bool },
    /// latin1 collations with one weight byte per character (`table`),
    /// latin1_bin and latin1_nopad_bin (`None`: the byte itself).
    Latin1 {
        name: &'static str,
        table: Option<&'static [u8; 256]>,
        pad_space: bool,
    },
}

/// A collation without a table in hscale: the backend weighs its keys,
/// by their primary weights (`WEIGHT_STRING(.. LEVEL 1)`). Values the
/// collation calls equal have equal primary weights; the other levels
/// (accents and case under `_as_`, `_cs`, thai_520_w2) are left out, so
/// keys that differ only there share a partition, which is always
/// correct. MariaDB's `WEIGHT_STRING` at level 3 keeps weights its own
/// comparison skips (`utf8mb4_uca1400_*_ai_cs`: 'è' has one more than
/// 'e', yet they are equal), so nothing beyond level 1 is used.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Weighed {
    /// The collation (`utf8mb4_unicode_ci`).
    pub name: String,
    /// Its character set (`utf8mb4`).
    pub charset: String,
    /// PAD SPACE: the primary weight of one space (hex), dropped from the
    /// end of a key's. `None`: NO PAD.
    pub pad: Option<String>,
}

/// How the key column compares (`None` in the dictionary: raw values).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeyCompare {
    /// A string under a collation.
    Collated(Collation),
    /// A string under a collation the backend weighs.
    Weighed(Weighed),
    /// A DECIMAL with this many fraction digits.
    Decimal { scale: u32 },
}

/// The key's column compares under a collation hscale has no table for:
/// its keys are [`Weighed`] by the backend (SETUP_TABLE learns how, with
/// [`Weighed::learn_sql`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("partitioning a string key under collation {0} with NONE, PREFIX or HASH (hscale could not read how the backend weighs it)")]
pub struct UnsupportedCollation(pub String);

impl Weighed {
    /// The collation's character set: the name up to its first `_`.
    pub fn charset_of(collation: &str) -> &str {
        collation.split('_').next().unwrap_or(collation)
    }

    /// A query answering, in one row, whether `collation` pads with spaces
    /// and the hex primary weight of one space ([`Weighed::learn`]).
    pub fn learn_sql(collation: &str) -> String {
        let cs = Weighed::charset_of(collation);
        let conv = |hex: &str| format!("CONVERT(_utf8mb4 X'{hex}' USING {cs}) COLLATE {collation}");
        format!(
            "SELECT {} = {}, HEX(WEIGHT_STRING({} LEVEL 1))",
            conv("61"),
            conv("6120"),
            conv("20")
        )
    }

    /// How `collation` weighs, from the row of [`Weighed::learn_sql`]. A
    /// space must weigh one unit (so that trailing ones can be dropped).
    pub fn learn(collation: &str, row: &[Option<String>]) -> Option<Weighed> {
        let is_pad = row.first()?.as_deref()? == "1";
        let space = row.get(1)?.clone()?;
        if space.is_empty() || !space.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        Some(Weighed {
            name: collation.to_ascii_lowercase(),
            charset: Weighed::charset_of(collation).to_ascii_lowercase(),
            pad: is_pad.then(|| space.to_ascii_uppercase()),
        })
    }

    /// The SQL expression of the weight of `expr` (a column, or a string
    /// in another character set): the hex primary weight, under PAD SPACE
    /// without its trailing space weights (a space weighs one unit, so a
    /// match anchored at the end is aligned). NULL stays NULL.
    pub fn sql(&self, expr: &str) -> String {
        let w = format!(
            "HEX(WEIGHT_STRING(CONVERT({expr} USING {}) COLLATE {} LEVEL 1))",
            self.charset, self.name
        );
        match &self.pad {
            Some(space) => format!("REGEXP_REPLACE({w}, '({space})+$', '')"),
            None => w,
        }
    }

    /// The weight of `value` when `known` has it (`weights.rs`);
    /// otherwise the value is noted there for the proxy to ask the backend.
    fn weight(&self, value: &str, known: &Known<'_>) -> Result<String, HashError> {
        known
            .weight(self, value)
            .ok_or_else(|| HashError::WeightUnknown {
                collation: self.name.clone(),
            })
    }
}

impl Collation {
    pub fn parse(name: &str) -> Option<Collation> {
        let n = name.trim().to_ascii_lowercase();
        let latin1 = |name: &'static str, table: Option<&'static [u8; 256]>, pad_space| {
            Some(Collation::Latin1 {
                name,
                table,
                pad_space,
            })
        };
        match n.as_str() {
            "utf8mb4_general_ci" => Some(Collation::GeneralCi { pad_space: true }),
            "utf8mb4_general_nopad_ci" => Some(Collation::GeneralCi { pad_space: false }),
            "utf8mb4_bin" => Some(Collation::Utf8Bin { pad_space: true }),
            "utf8mb4_nopad_bin" => Some(Collation::Utf8Bin { pad_space: false }),
            "latin1_swedish_ci" => latin1("latin1_swedish_ci", Some(&tables::L1_SWEDISH_CI), true),
            "latin1_swedish_nopad_ci" => latin1(
                "latin1_swedish_nopad_ci",
                Some(&tables::L1_SWEDISH_CI),
                false,
            ),
            "latin1_general_ci" => latin1("latin1_general_ci", Some(&tables::L1_GENERAL_CI), true),
            "latin1_general_cs" => latin1("latin1_general_cs", Some(&tables::L1_GENERAL_CS), true),
            "latin1_german1_ci" => latin1("latin1_german1_ci", Some(&tables::L1_GERMAN1_CI), true),
            "latin1_danish_ci" => latin1("latin1_danish_ci", Some(&tables::L1_DANISH_CI), true),
            "latin1_spanish_ci" => latin1("latin1_spanish_ci", Some(&tables::L1_SPANISH_CI), true),
            "latin1_bin" => latin1("latin1_bin", None, true),
            "latin1_nopad_bin" => latin1("latin1_nopad_bin", None, false),
            _ => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Collation::GeneralCi { pad_space: true } => "utf8mb4_general_ci",
            Collation::GeneralCi { pad_space: false } => "utf8mb4_general_nopad_ci",
            Collation::Utf8Bin { pad_space: true } => "utf8mb4_bin",
            Collation::Utf8Bin { pad_space: false } => "utf8mb4_nopad_bin",
            Collation::Latin1 { name, .. } => name,
        }
    }

    fn pad_space(&self) -> bool {
        match *self {
            Collation::GeneralCi { pad_space }
            | Collation::Utf8Bin { pad_space }
            | Collation::Latin1 { pad_space, .. } => pad_space,
        }
    }

    /// The weight of one character, as a character.
    fn weigh(&self, c: char) -> char {
        match self {
            Collation::GeneralCi { .. } => {
                let cp = c as u32;
                if cp > 0xFFFF {
                    return '\u{FFFD}';
                }
                match tables::GENERAL_CI.binary_search_by_key(&(cp as u16), |p| p.0) {
                    Ok(i) => char::from_u32(u32::from(tables::GENERAL_CI[i].1)).unwrap_or(c),
                    Err(_) => c,
                }
            }
            Collation::Utf8Bin { .. } => c,
            Collation::Latin1 { table, .. } => {
                // The column holds the latin1 byte; characters latin1 lacks
                // are stored as '?'.
                let byte = latin1_byte(c).unwrap_or(b'?');
                let w = match table {
                    Some(t) => t[usize::from(byte)],
                    None => byte,
                };
                char::from_u32(u32::from(tables::LATIN1[usize::from(w)])).unwrap_or('?')
            }
        }
    }

    /// The weight of a string, as characters, without trimming.
    fn weigh_all(&self, s: &str) -> String {
        s.chars().map(|c| self.weigh(c)).collect()
    }

    /// The weight of a string as the column compares it: PAD SPACE
    /// collations ignore trailing spaces (the only character that weighs as
    /// a space in these collations).
    pub fn weight(&self, s: &str) -> String {
        let mut w = self.weigh_all(s);
        if self.pad_space() {
            let n = w.trim_end_matches(' ').len();
            w.truncate(n);
        }
        w
    }
}

fn latin1_byte(c: char) -> Option<u8> {
    let cp = c as u32;
    if cp < 0x80 {
        return Some(cp as u8);
    }
    tables::LATIN1
        .iter()
        .position(|&u| u32::from(u) == cp)
        .map(|b| b as u8)
}

impl KeyCompare {
    /// How a column of `data_type` (information_schema DATA_TYPE), under
    /// `collation` (strings) with `scale` (NUMERIC_SCALE) compares. `None`:
    /// its values need no normalising (integers, dates, ENUM, ...).
    pub fn of_column(
        data_type: &str,
        collation: Option<&str>,
        scale: Option<u32>,
    ) -> Result<Option<KeyCompare>, UnsupportedCollation> {
        let ty = data_type.trim().to_ascii_lowercase();
        if ty == "decimal" || ty == "numeric" {
            return Ok(Some(KeyCompare::Decimal {
                scale: scale.unwrap_or(0),
            }));
        }
        let is_string = matches!(
            ty.as_str(),
            "char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext"
        );
        match collation {
            Some(c) if is_string => Collation::parse(c)
                .map(|c| Some(KeyCompare::Collated(c)))
                .ok_or_else(|| UnsupportedCollation(c.to_string())),
            _ => Ok(None),
        }
    }

    /// Parse the dictionary's form (`collation utf8mb4_general_ci`,
    /// `decimal 2`).
    pub fn parse(s: &str) -> Option<KeyCompare> {
        let (kind, arg) = s.trim().split_once(' ')?;
        match kind {
            "collation" => Collation::parse(arg).map(KeyCompare::Collated),
            "decimal" => arg
                .trim()
                .parse()
                .ok()
                .map(|scale| KeyCompare::Decimal { scale }),
            "weights" => {
                let mut words = arg.split_whitespace();
                let name = words.next()?.to_string();
                let pad = match words.next()? {
                    "nopad" => None,
                    space => Some(space.strip_prefix("pad:")?.to_string()),
                };
                Some(KeyCompare::Weighed(Weighed {
                    charset: Weighed::charset_of(&name).to_string(),
                    name,
                    pad,
                }))
            }
            _ => None,
        }
    }

    /// The key value as the column compares it. A [`Weighed`] key whose
    /// weight this worker does not know yet is an error
    /// ([`HashError::WeightUnknown`]), never a guess.
    pub fn normalise(&self, v: &KeyValue, known: &Known<'_>) -> Result<KeyValue, HashError> {
        Ok(match (self, v) {
            (_, KeyValue::Null) => KeyValue::Null,
            (KeyCompare::Weighed(w), v) => match v.string_form() {
                Some(s) => KeyValue::Str(w.weight(&s, known)?),
                None => v.clone(),
            },
            (KeyCompare::Collated(c), v) => match v.string_form() {
                Some(s) => KeyValue::Str(c.weight(&s)),
                None => v.clone(),
            },
            (KeyCompare::Decimal { scale }, KeyValue::Int(i)) => {
                match (Decimal {
                    mantissa: *i,
                    scale: 0,
                })
                .to_text(*scale)
                {
                    Some(t) => KeyValue::Str(t),
                    None => v.clone(),
                }
            }
            (KeyCompare::Decimal { scale }, KeyValue::Str(s)) => {
                match Decimal::parse(crate::key::trim_server_space(s).as_bytes())
                    .and_then(|d| d.to_text(*scale))
                {
                    Some(t) => KeyValue::Str(t),
                    None => v.clone(),
                }
            }
        })
    }

    /// A partition value given to ADD_PARTITION, normalised as the hashing
    /// function produces it: NONE's values are whole keys; PREFIX's are
    /// beginnings of weights, whose trailing spaces count.
    pub fn partition_value(
        &self,
        is_prefix: bool,
        value: &str,
        known: &Known<'_>,
    ) -> Result<String, HashError> {
        Ok(match self {
            KeyCompare::Weighed(w) => w.weight(value, known)?,
            KeyCompare::Collated(c) if is_prefix => c.weigh_all(value),
            KeyCompare::Collated(c) => c.weight(value),
            KeyCompare::Decimal { .. } if is_prefix => value.to_string(),
            KeyCompare::Decimal { .. } => {
                match self.normalise(&KeyValue::Str(value.into()), known)? {
                    KeyValue::Str(s) => s,
                    _ => value.to_string(),
                }
            }
        })
    }

    /// Whether `key = 'value'` (a string literal) matches only rows whose
    /// key normalises as `value` does: string keys whose column's
    /// collation decides the comparison (the column's collation wins over
    /// a literal's). A literal a latin1 column cannot hold is compared in
    /// utf8mb4 instead, so it is not pruned on.
    pub fn prunes_equality(&self, value: &str) -> bool {
        let is_latin1 = |s: &str| s.chars().all(|c| latin1_byte(c).is_some());
        match self {
            KeyCompare::Collated(Collation::Latin1 { .. }) => is_latin1(value),
            KeyCompare::Collated(_) => true,
            KeyCompare::Weighed(w) => match w.charset.as_str() {
                "utf8mb4" => true,
                "latin1" => is_latin1(value),
                _ => false,
            },
            KeyCompare::Decimal { .. } => false,
        }
    }

    /// The SQL expression computing [`KeyCompare::normalise`] of `expr`
    /// (a column) on the backend, as a utf8mb4 string.
    pub fn sql(&self, expr: &str) -> String {
        let (weight, pad) = match self {
            // The column's text is already at its scale.
            KeyCompare::Decimal { .. } => return expr.to_string(),
            KeyCompare::Weighed(w) => return w.sql(expr),
            KeyCompare::Collated(c) => {
                let w = match c {
                    Collation::GeneralCi { .. } => {
                        format!("CONVERT(CONVERT(WEIGHT_STRING({expr}) USING ucs2) USING utf8mb4)")
                    }
                    Collation::Utf8Bin { .. } => format!("CONVERT({expr} USING utf8mb4)"),
                    Collation::Latin1 { table: None, .. } => {
                        format!("CONVERT({expr} USING utf8mb4)")
                    }
                    Collation::Latin1 { .. } => format!(
                        "CONVERT(CONVERT(WEIGHT_STRING({expr}) USING latin1) USING utf8mb4)"
                    ),
                };
                (w, c.pad_space())
            }
        };
        if pad {
            format!("TRIM(TRAILING ' ' FROM {weight})")
        } else {
            weight
        }
    }
}

impl fmt::Display for KeyCompare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyCompare::Collated(c) => write!(f, "collation {}", c.name()),
            KeyCompare::Decimal { scale } => write!(f, "decimal {scale}"),
            KeyCompare::Weighed(w) => match &w.pad {
                Some(space) => write!(f, "weights {} pad:{space}", w.name),
                None => write!(f, "weights {} nopad", w.name),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(collation: &str, s: &str) -> String {
        Collation::parse(collation).unwrap().weight(s)
    }

    /// Golden vectors, each checked against MariaDB 10.11 with
    /// `WEIGHT_STRING(s COLLATE c)` (and `a = b COLLATE c`).
    #[test]
    fn golden_weights() {
        assert_eq!(w("utf8mb4_general_ci", "abc"), "ABC");
        assert_eq!(w("utf8mb4_general_ci", "Zoë  "), "ZOE");
        assert_eq!(w("utf8mb4_general_ci", "straße"), "STRASE");
        assert_eq!(w("utf8mb4_general_ci", "a\t"), "A\t");
        assert_eq!(w("utf8mb4_general_ci", "😀x"), "\u{FFFD}X");
        assert_eq!(w("utf8mb4_general_ci", "µ"), "\u{39C}");
        assert_eq!(w("utf8mb4_general_nopad_ci", "ab "), "AB ");
        assert_eq!(w("utf8mb4_bin", "aB  "), "aB");
        assert_eq!(w("utf8mb4_nopad_bin", "aB "), "aB ");
        assert_eq!(w("latin1_swedish_ci", "Abc "), "ABC");
        assert_eq!(w("latin1_swedish_ci", "é"), "E");
        // Swedish: 'ü' = 'y', 'ä' and 'æ' weigh as '\'.
        assert_eq!(w("latin1_swedish_ci", "ü"), "Y");
        assert_eq!(w("latin1_swedish_ci", "ä"), w("latin1_swedish_ci", "Æ"));
        assert_eq!(w("latin1_swedish_nopad_ci", "a "), "A ");
        assert_eq!(w("latin1_bin", "aB "), "aB");
        assert_eq!(w("latin1_bin", "a€"), "a€");
        assert_eq!(w("latin1_bin", "a😀"), "a?");
        // latin1_general_cs weighs 'a' 0x42 and 'A' 0x41.
        assert_eq!(w("latin1_general_cs", "aA"), "BA");
        assert_ne!(w("latin1_general_cs", "a"), w("latin1_general_cs", "A"));
        assert!(Collation::parse("utf8mb4_unicode_ci").is_none());
    }

    #[test]
    fn golden_decimals() {
        let d = KeyCompare::Decimal { scale: 2 };
        let n = |s: &str| {
            d.normalise(&KeyValue::Str(s.into()), &Known::nothing())
                .unwrap()
        };
        assert_eq!(n("1.0"), KeyValue::Str("1.00".into()));
        assert_eq!(n("01.000"), KeyValue::Str("1.00".into()));
        assert_eq!(n("-0"), KeyValue::Str("0.00".into()));
        assert_eq!(n("-0.001"), KeyValue::Str("0.00".into()));
        assert_eq!(n("1.005"), KeyValue::Str("1.01".into()));
        assert_eq!(n("-1.005"), KeyValue::Str("-1.01".into()));
        assert_eq!(
            d.normalise(&KeyValue::Int(7), &Known::nothing()).unwrap(),
            KeyValue::Str("7.00".into())
        );
        let z = KeyCompare::Decimal { scale: 0 };
        assert_eq!(
            z.normalise(&KeyValue::Str("12.0".into()), &Known::nothing())
                .unwrap(),
            KeyValue::Str("12".into())
        );
    }

    #[test]
    fn columns_and_dictionary_forms() {
        let c = KeyCompare::of_column("varchar", Some("utf8mb4_general_ci"), None)
            .unwrap()
            .unwrap();
        assert_eq!(c.to_string(), "collation utf8mb4_general_ci");
        assert_eq!(KeyCompare::parse(&c.to_string()), Some(c));
        let d = KeyCompare::of_column("decimal", None, Some(3))
            .unwrap()
            .unwrap();
        assert_eq!(KeyCompare::parse(&d.to_string()), Some(d));
        assert_eq!(KeyCompare::of_column("int", None, Some(0)), Ok(None));
        assert_eq!(
            KeyCompare::of_column("enum", Some("utf8mb4_unicode_ci"), None),
            Ok(None)
        );
        let e = KeyCompare::of_column("varchar", Some("utf8mb4_unicode_ci"), None).unwrap_err();
        assert!(
            e.to_string().contains("collation utf8mb4_unicode_ci"),
            "{e}"
        );
        let p = KeyCompare::Collated(Collation::GeneralCi { pad_space: true });
        assert_eq!(
            p.partition_value(true, "ab ", &crate::known::Known::nothing())
                .unwrap(),
            "AB "
        );
        assert_eq!(
            p.partition_value(false, "ab ", &crate::known::Known::nothing())
                .unwrap(),
            "AB"
        );
        assert_eq!(
            p.sql("`k`"),
            "TRIM(TRAILING ' ' FROM CONVERT(CONVERT(WEIGHT_STRING(`k`) USING ucs2) USING utf8mb4))"
        );
    }

    /// How a collation the backend weighs is learnt (rows as MariaDB 10.11
    /// answers `Weighed::learn_sql`), kept in the dictionary and computed.
    #[test]
    fn weighed_collations() {
        let row =
            |r: &[&str]| -> Vec<Option<String>> { r.iter().map(|s| Some(s.to_string())).collect() };
        let unicode = Weighed::learn("utf8mb4_unicode_ci", &row(&["1", "0209"])).unwrap();
        assert_eq!(unicode.pad.as_deref(), Some("0209"));
        let nopad = Weighed::learn("utf8mb4_unicode_nopad_ci", &row(&["0", "0209"])).unwrap();
        assert_eq!(nopad.pad, None);
        assert!(Weighed::learn("x_y", &row(&["1", ""])).is_none());
        for w in [unicode, nopad] {
            let c = KeyCompare::Weighed(w);
            assert_eq!(KeyCompare::parse(&c.to_string()), Some(c.clone()), "{c}");
        }
        let c = KeyCompare::parse("weights utf8mb4_uca1400_ai_cs pad:0209").unwrap();
        assert_eq!(
            c.sql("`k`"),
            "REGEXP_REPLACE(HEX(WEIGHT_STRING(CONVERT(`k` USING utf8mb4) COLLATE utf8mb4_uca1400_ai_cs LEVEL 1)), '(0209)+$', '')"
        );
        // Unknown weights are an error, never a guess.
        assert!(matches!(
            c.normalise(&KeyValue::Str("abc".into()), &Known::nothing()),
            Err(HashError::WeightUnknown { .. })
        ));
    }

    #[test]
    fn equality_prunes_on_strings_the_column_holds() {
        let latin1 = KeyCompare::parse("collation latin1_swedish_ci").unwrap();
        assert!(latin1.prunes_equality("Åsa"));
        assert!(!latin1.prunes_equality("Ā"));
        let general = KeyCompare::parse("collation utf8mb4_general_ci").unwrap();
        assert!(general.prunes_equality("Ā😀"));
        assert!(!KeyCompare::Decimal { scale: 2 }.prunes_equality("1.0"));
    }
}
