//! Key values of a write that only the server can convert: the value an
//! INSERT's key literal becomes in the column depends on the column's exact
//! type and the session's sql_mode (`'7abc'` is 7 in an INT column without
//! strict mode, `'2024-01-31 23:59:59.7'` is `2024-02-01 00:00:00` in a
//! DATETIME under TIME_ROUND_FRACTIONAL and `2024-01-31 23:59:59`
//! without, `1.5` is 2), and the row must go to the partition of the value
//! the column will hold. Routing does not guess such a value: it notes the
//! literal and refuses the statement; the proxy asks the backend to store
//! the literals into variables of the column's type in the session's state
//! (`hscale::exec::conversions`) and plans again with the answers preset.
//!
//! ```text
//!  route an INSERT ──► its key literal is sure ──► the partition
//!         └──not sure──► lookup ──preset──► the stored value's partition
//!                          └──miss──► noted; the statement is refused
//!  the proxy ──► take_misses ──► asks the backend (one statement)
//!            ──► with_preset(answers, plan again)
//! ```
//!
//! Nothing is kept between statements: the answer depends on the session
//! (sql_mode, time zone), so answers are preset only around one planning
//! call on one thread, and the misses are taken right after it.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use crate::dictionary::{PartitionedTable, TableName, Target};
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

#[derive(Default)]
struct State {
    /// The backend's answers by table and literal.
    preset: HashMap<(TableName, String), Option<String>>,
    misses: Vec<Ask>,
    noted: HashSet<(TableName, String)>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Run `planning` with `answers` preset, and forget them after it; the
/// misses [`take_misses`] gives next are this planning's (others planned
/// on this thread before are forgotten).
pub fn with_preset<T>(answers: &[Converted], planning: impl FnOnce() -> T) -> T {
    // Every statement's planning passes here: empty state costs nothing
    // to keep empty (a map that held many keys is dropped, not cleared
    // bucket by bucket every time).
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.misses.clear();
        if !s.noted.is_empty() {
            s.noted = HashSet::new();
        }
        if !s.preset.is_empty() || !answers.is_empty() {
            s.preset = answers
                .iter()
                .map(|a| ((a.table.clone(), a.literal.clone()), a.value.clone()))
                .collect();
        }
    });
    let out = planning();
    if !answers.is_empty() {
        STATE.with(|s| s.borrow_mut().preset = HashMap::new());
    }
    out
}

/// The preset value of `ask`'s literal, or `None` after noting the miss
/// (at most [`MAX_MISSES`] + 1 of them).
pub(crate) fn lookup(ask: Ask) -> Option<Option<String>> {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        let key = (ask.table.clone(), ask.literal.clone());
        if let Some(v) = s.preset.get(&key) {
            return Some(v.clone());
        }
        if s.misses.len() <= MAX_MISSES && s.noted.insert(key) {
            s.misses.push(ask);
        }
        None
    })
}

/// The target of the row whose key constant is `literal` (SQL text), by
/// the value the backend said `table`'s key column makes of it; `None`
/// (the literal noted for [`take_misses`]) when it has not said.
pub fn route_converted(
    table: &PartitionedTable,
    literal: &str,
) -> Option<Result<Target, HashError>> {
    let home = table.default_target();
    let value = lookup(Ask {
        table: table.name.clone(),
        physical: home.physical_table,
        backend: home.backend,
        column: table.column.clone(),
        literal: literal.to_string(),
    })?;
    let key = match value {
        None => KeyValue::Null,
        Some(v) if table.is_key_integer => match v.parse::<i128>() {
            Ok(i) => KeyValue::Int(i),
            Err(_) => KeyValue::Str(v),
        },
        // The stored time's fraction cannot carry into another hour any
        // more: the column has rounded or truncated it already.
        Some(v) if matches!(table.function, HashingFunction::Date(_)) => {
            KeyValue::Str(match v.split_once('.') {
                Some((whole, _)) if whole.contains(':') => whole.to_string(),
                _ => v,
            })
        }
        Some(v) => KeyValue::Str(v),
    };
    Some(table.route(&key))
}

/// The literals noted since the last call, forgotten here.
pub fn take_misses() -> Vec<Ask> {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        if !s.noted.is_empty() {
            s.noted = HashSet::new();
        }
        std::mem::take(&mut s.misses)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(literal: &str) -> Ask {
        Ask {
            table: TableName::new("d", "t"),
            physical: "t_default".into(),
            backend: BackendId::MAIN,
            column: "k".into(),
            literal: literal.into(),
        }
    }

    #[test]
    fn misses_are_noted_once_and_presets_last_one_planning() {
        assert_eq!(lookup(ask("'7abc'")), None);
        assert_eq!(lookup(ask("'7abc'")), None);
        assert_eq!(take_misses(), vec![ask("'7abc'")]);
        assert!(take_misses().is_empty());
        let answers = [Converted {
            table: TableName::new("d", "t"),
            literal: "'7abc'".into(),
            value: Some("7".into()),
        }];
        let got = with_preset(&answers, || lookup(ask("'7abc'")));
        assert_eq!(got, Some(Some("7".into())));
        assert!(take_misses().is_empty());
        // Gone after the planning it was preset for.
        assert_eq!(lookup(ask("'7abc'")), None);
        assert_eq!(take_misses().len(), 1);
    }
}
