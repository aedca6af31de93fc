//! `SET hscale_coalesce = ON | OFF`: coalescing turned off (or on again)
//! for one session (`exec/coalesce.rs`).

use crate::error::ProxyError;

/// The session variable that turns coalescing off for one session.
pub const VARIABLE: &str = "hscale_coalesce";

/// `SET [SESSION] hscale_coalesce = ON | OFF` (also 1 / 0, TRUE / FALSE,
/// DEFAULT): `Some(Ok(is_on))`, answered by hscale, never sent to a
/// server; `None` for any other statement. Set alone: with other
/// variables in the same SET it is refused.
pub fn setting(facts: &hscale_sql::Facts) -> Option<Result<bool, ProxyError>> {
    let Some(hscale_sql::SessionChange::Set(items)) = &facts.change else {
        return None;
    };
    let item = items.iter().find(|i| i.key == VARIABLE)?;
    if items.len() > 1 || facts.statements > 1 {
        return Some(Err(ProxyError::Unsupported {
            what: format!("{VARIABLE} set together with other variables (set it alone)"),
        }));
    }
    let value = item.assign.rsplit('=').next().unwrap_or("").trim();
    let bare = value.trim_matches(|c| c == '\'' || c == '"');
    let is = |w: &str| bare.eq_ignore_ascii_case(w);
    Some(if is("ON") || is("1") || is("TRUE") || is("DEFAULT") {
        Ok(true)
    } else if is("OFF") || is("0") || is("FALSE") {
        Ok(false)
    } else {
        Err(ProxyError::WrongValue {
            var: VARIABLE,
            value: bare.to_string(),
        })
    })
}
