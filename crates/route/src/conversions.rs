//! Key values of a write that only the server can convert: the value an
//! INSERT's key literal becomes in the column depends on the column's exact
//! type and the session's sql_mode (`'7abc'` is 7 in an INT column without
//! strict mode, `'2024-01-31 23:59:59.7'` is `2024-02-01 00:00:00` in a
//! DATETIME under TIME_ROUND_FRACTIONAL and `2024-01-31 23:59:59`
//! without, `1.5` is 2), and the row must go to the partition of the value
//! the column will hold. Routing does not guess such a value: it notes the
//! literal as a question (`crate::known`) and refuses the statement; the
//! proxy's planning driver asks the backend to store the literals into
//! variables of the column's type in the session's state
//! (`hscale::exec::conversions`) and plans again with the answers.
//!
//! ```text
//!  route an INSERT ──► its key literal is sure ──► the partition
//!         └──not sure──► Known::converted ──answered──► the stored value's partition
//!                          └──not yet──► a question; the statement is refused
//!  the driver ──► asks the backend (one statement) ──► plans again
//! ```
//!
//! Nothing is kept between statements: the answer depends on the session
//! (sql_mode, time zone), so answers live in one statement's `Known`.

use crate::dictionary::{PartitionedTable, TableName, Target};
use crate::known::Known;
use crate::{BackendId, HashError, HashingFunction, KeyValue};

/// A literal routing could not convert: which column to ask about, and the
/// literal's text as the statement has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub table: TableName,
    /// A physical table with the column (the table's default partition)
    /// and its backend.
    pub physical: String,
    pub backend: BackendId,
    pub column: String,
    pub literal: String,
    /// Asks for the column's default instead of the literal's value (the
    /// literal is then only the answer's name): its `COLUMN_DEFAULT` in
    /// information_schema, evaluated; for a NOT NULL column without one,
    /// this implicit default.
    pub implicit: Option<String>,
}

/// The backend's answer: the value the column holds for `literal` (`None`:
/// NULL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    pub table: TableName,
    pub literal: String,
    pub value: Option<String>,
}

/// Literals noted per planning at most (one more is noted, so that a
/// caller sees there were more: it then asks nothing).
pub const MAX_MISSES: usize = 1024;

/// The target of the row whose key constant is `literal` (SQL text), by
/// the value the backend said `table`'s key column makes of it; `None`
/// (the literal noted as a question in `known`) when it has not said.
pub fn route_converted(
    table: &PartitionedTable,
    literal: &str,
    known: &Known<'_>,
) -> Option<Result<Target, HashError>> {
    route_asked(table, literal.to_string(), None, known)
}

/// The target of a row that does not name the key column: by the value
/// the server stores there, the column's default (evaluated by the
/// backend from the default partition's `COLUMN_DEFAULT`), NULL
/// for a nullable column without one, and for a NOT NULL column without
/// one its implicit default (0, '', the zero date, an ENUM's first
/// member), which the server stores without strict mode (warning 1364;
/// in strict mode it answers 1364 itself, on whichever partition).
/// `None` (noted as a question) until the backend said.
pub fn route_default(
    table: &PartitionedTable,
    known: &Known<'_>,
) -> Option<Result<Target, HashError>> {
    // Only the key of the answer: the backend reads the column's default
    // from information_schema (`Ask::implicit`).
    let literal = format!("DEFAULT(`{}`)", table.column.replace('`', "``"));
    // An ENUM's implicit default is its first member (index 1); any other
    // type's is what '' becomes without strict mode.
    let implicit = match table.key_enum {
        Some(_) => "1",
        None => "''",
    };
    route_asked(table, literal, Some(implicit.to_string()), known)
}

fn route_asked(
    table: &PartitionedTable,
    literal: String,
    implicit: Option<String>,
    known: &Known<'_>,
) -> Option<Result<Target, HashError>> {
    let home = table.default_target();
    let value = known.converted(Ask {
        table: table.name.clone(),
        physical: home.physical_table,
        backend: home.backend,
        column: table.column.clone(),
        literal,
        implicit,
    })?;
    let key = match value {
        None => KeyValue::Null,
        Some(v) if table.is_key_integer => match v.parse::<i128>() {
            Ok(i) => KeyValue::Int(i),
            Err(_) => KeyValue::Str(v),
        },
        // The stored time's fraction cannot carry into another hour any
        // more: the column has rounded or truncated it already.
        Some(v)
            if matches!(table.function, HashingFunction::Date(_))
                && table.key_compare.is_none() =>
        {
            let key = KeyValue::Str(match v.split_once('.') {
                Some((whole, _)) if whole.contains(':') => whole.to_string(),
                _ => v,
            });
            // The column's own value: a day past its month's end is kept
            // under ALLOW_INVALID_DATES.
            return Some(
                table
                    .function
                    .apply_stored(&key)
                    .map(|value| table.target_of_value(value.as_deref())),
            );
        }
        Some(v) => KeyValue::Str(v),
    };
    Some(table.route(&key, known))
}
