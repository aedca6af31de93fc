//! Why a merge stops ([`Stop`]), and a part's error said as one server
//! says it for the client's statement.
//! A merge sorts on expressions it adds after the client's select list
//! (`Mode::Sort`'s hidden columns), so an unknown column named only in the
//! client's ORDER BY reaches the server in the fragment's select list, and
//! the server names the wrong clause. Pure; unit-tested.

use hscale_sql::{tokenize, TokenKind};
use hscale_wire::response::ErrPacket;

use crate::error::ProxyError;

/// Why a merge stopped.
#[derive(Debug)]
pub(super) enum Stop {
    /// A backend answered with an error: the statement's answer.
    Server(ErrPacket),
    Proxy(ProxyError),
}

impl From<ProxyError> for Stop {
    fn from(e: ProxyError) -> Self {
        Stop::Proxy(e)
    }
}

/// Values of ENUM and SET columns order by member position, which their
/// text does not tell.
pub(super) fn unordered() -> Stop {
    Stop::Proxy(ProxyError::Refused(
        "ordering or grouping ENUM or SET values across partitions is not supported (they order by member position)".into(),
    ))
}

/// A partial value the merge cannot combine exactly: the statement falls
/// back to a shipped plan, or is refused.
pub(super) fn bad_value(what: &str) -> Stop {
    Stop::Proxy(ProxyError::Refused(format!(
        "a partial {what} that cannot be combined exactly (floating-point values or numbers beyond 36 digits) across partitions"
    )))
}

pub(super) const ER_BAD_FIELD_ERROR: u16 = 1054;

/// `err` from a fragment whose last `hidden` select items are the merge's
/// sort keys: "in 'SELECT'" becomes "in 'ORDER BY'" when the unknown
/// column is not in the client's own select items.
pub(super) fn as_client_sees(err: ErrPacket, fragment: &str, hidden: usize) -> ErrPacket {
    if err.code != ER_BAD_FIELD_ERROR || hidden == 0 {
        return err;
    }
    let Some(rest) = err.message.strip_prefix("Unknown column '") else {
        return err;
    };
    let Some(name) = rest.strip_suffix("' in 'SELECT'") else {
        return err;
    };
    let Some(visible) = visible_items(fragment, hidden) else {
        return err;
    };
    if visible.iter().any(|item| names(item, name)) {
        return err;
    }
    let message = format!("Unknown column '{name}' in 'ORDER BY'");
    ErrPacket { message, ..err }
}

/// The client's select items of a fragment, each as its tokens' text
/// without quotes, lowercased and joined.
fn visible_items(fragment: &str, hidden: usize) -> Option<Vec<String>> {
    let tokens = tokenize(fragment).ok()?;
    let start = tokens.iter().position(|t| t.is_word(fragment, "SELECT"))? + 1;
    let mut items = vec![String::new()];
    let mut depth = 0i32;
    for t in &tokens[start..] {
        let text = t.text(fragment);
        match text {
            "(" => depth += 1,
            ")" => depth -= 1,
            _ => {}
        }
        if depth == 0 && t.is_word(fragment, "FROM") {
            break;
        }
        if depth == 0 && text == "," {
            items.push(String::new());
            continue;
        }
        let last = items.last_mut()?;
        match t.kind {
            TokenKind::QuotedIdent => last.push_str(&text.trim_matches('`').to_lowercase()),
            _ => last.push_str(&text.to_lowercase()),
        }
        last.push(' ');
    }
    let visible = items.len().checked_sub(hidden)?;
    items.truncate(visible);
    Some(items)
}

/// Whether `item` (as `visible_items` gives it) refers to column `name`.
fn names(item: &str, name: &str) -> bool {
    let name: String = name
        .to_lowercase()
        .split('.')
        .collect::<Vec<_>>()
        .join(" . ");
    let hay = format!(" {item}");
    hay.contains(&format!(" {name} "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(msg: &str) -> ErrPacket {
        ErrPacket {
            code: 1054,
            sql_state: *b"42S22",
            message: msg.into(),
        }
    }

    #[test]
    fn an_unknown_column_only_in_order_by_is_named_there() {
        let f = "SELECT id, nosuch, WEIGHT_STRING(nosuch) FROM `d`.`t_p` AS `t` ORDER BY nosuch";
        let e = as_client_sees(err("Unknown column 'nosuch' in 'SELECT'"), f, 2);
        assert_eq!(e.message, "Unknown column 'nosuch' in 'ORDER BY'");
        let f =
            "SELECT id, t.nosuch, WEIGHT_STRING(t.nosuch) FROM `d`.`t_p` AS `t` ORDER BY t.nosuch";
        let e = as_client_sees(err("Unknown column 't.nosuch' in 'SELECT'"), f, 2);
        assert_eq!(e.message, "Unknown column 't.nosuch' in 'ORDER BY'");
    }

    #[test]
    fn an_unknown_column_of_the_select_list_stays_there() {
        let f = "SELECT `nosuch`, id, WEIGHT_STRING(id) FROM `d`.`t_p` AS `t` ORDER BY id";
        let e = as_client_sees(err("Unknown column 'nosuch' in 'SELECT'"), f, 2);
        assert_eq!(e.message, "Unknown column 'nosuch' in 'SELECT'");
        let f = "SELECT CONCAT(x.nosuch, 1), id FROM t ORDER BY id";
        let e = as_client_sees(err("Unknown column 'x.nosuch' in 'SELECT'"), f, 1);
        assert_eq!(e.message, "Unknown column 'x.nosuch' in 'SELECT'");
    }
}
