//! Statements on the views hscale keeps (`crate::view`): CREATE [OR
//! REPLACE] VIEW and ALTER VIEW over partitioned or global tables, DROP
//! VIEW, SHOW CREATE VIEW; and every other statement naming such a view,
//! planned with the view written in as a derived table
//! (`(SELECT ...) AS v`), again for views over views.
//!
//! A view that reads no partitioned table, global table or kept view is
//! the backend's own, as before: its statements pass through.

use hscale_sql::{Token, TokenKind};

use super::refs::{table_starts, CLAUSE_WORDS};
use super::{cte_names, is_name, unquote, Plan, StatementKind};
use crate::dictionary::{Dictionary, TableName, Target};
use crate::known::Known;
use crate::view::{quote, View, ViewError};
use crate::BackendId;

/// How many views inside views a query is followed through.
const MAX_VIEW_DEPTH: usize = 16;

/// A CREATE or ALTER VIEW hscale keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewDdl {
    /// The view as stated (`inner` not yet known: the proxy reads the
    /// SELECT's columns before storing a view with a column list; the
    /// definer empty when the statement names none: the proxy user).
    pub view: View,
    pub or_replace: bool,
    pub is_alter: bool,
    pub if_not_exists: bool,
}

/// The plan of a statement on views, or `None` when it is not one.
pub(super) fn plan_view_statement(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
    prepared: bool,
    known: &Known<'_>,
) -> Option<Plan> {
    let first = tokens.first()?;
    if first.is_word(sql, "CREATE") || first.is_word(sql, "ALTER") {
        return plan_ddl(sql, tokens, session_db, dict);
    }
    if first.is_word(sql, "DROP") && tokens.get(1)?.is_word(sql, "VIEW") {
        return plan_drop(sql, tokens, session_db, dict);
    }
    if first.is_word(sql, "SHOW")
        && tokens.get(1)?.is_word(sql, "CREATE")
        && (tokens.get(2)?.is_word(sql, "VIEW") || tokens.get(2)?.is_word(sql, "TABLE"))
    {
        let is_view = tokens[2].is_word(sql, "VIEW");
        let (name, end) = read_name(sql, tokens, 3, session_db)?;
        if end != tokens.len() {
            return None;
        }
        if dict.view(&name).is_some() {
            return Some(Plan::ShowCreateView(name));
        }
        if is_view && (dict.table(&name).is_some() || dict.is_global(&name)) {
            return Some(Plan::ViewError(ViewError::NotView(name)));
        }
        return None;
    }
    if !dict.has_views() {
        return None;
    }
    match expand(sql, tokens, session_db, dict) {
        Ok(None) => None,
        Ok(Some(expanded)) => Some(plan_expanded(
            sql, tokens, &expanded, session_db, dict, prepared, known,
        )),
        Err(Stop::Refuse(why)) => Some(Plan::Refuse(why)),
        Err(Stop::View(e)) => Some(Plan::ViewError(e)),
    }
}

/// `sql` with every view it names written in, for the plans of reads on
/// copies; `None` when it names no view (or one that cannot be read).
pub(super) fn expanded(sql: &str, session_db: Option<&str>, dict: &Dictionary) -> Option<String> {
    if !dict.has_views() {
        return None;
    }
    let tokens = hscale_sql::tokenize(sql).ok()?;
    expand(sql, &tokens, session_db, dict).ok().flatten()
}

/// A question that checks a view's SELECT and reads its column names
/// without reading rows: `SELECT * FROM (select) AS probe LIMIT 0`, its
/// partitioned tables read as their default partitions, on the one backend
/// holding them all (the main backend when it also names other tables).
/// `None` when no one backend holds them.
pub fn view_probe(select: &str, dict: &Dictionary) -> Option<(BackendId, String)> {
    let expanded = expanded(select, None, dict);
    let sql = expanded.as_deref().unwrap_or(select);
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let refs = super::table_refs(sql, &tokens, None, dict);
    let starts = table_starts(sql, &tokens);
    let ctes = cte_names(sql, &tokens);
    let names_other = starts.iter().any(|&s| {
        let Some((n, _)) = read_name(sql, &tokens, s, Some("")) else {
            return false;
        };
        let is_cte = n.db.is_empty() && ctes.iter().any(|c| c.eq_ignore_ascii_case(&n.table));
        !(refs.iter().any(|r| r.start == s) || dict.is_global(&n) || is_cte)
    });
    let mut backend = None;
    for r in &refs {
        let b = dict.table(&r.name)?.default_backend;
        if backend.is_some_and(|x| x != b) {
            return None;
        }
        backend = Some(b);
    }
    let backend = backend.unwrap_or(BackendId::MAIN);
    if names_other && backend != BackendId::MAIN {
        return None;
    }
    let mut out = sql.to_string();
    for r in refs.iter().rev() {
        let target = dict.table(&r.name)?.default_target();
        out = super::rewrite(&out, &tokens, r, &target, true);
    }
    Some((
        backend,
        format!("SELECT * FROM ({out}) AS `hscale_view_probe` LIMIT 0"),
    ))
}

/// Plan the statement with its views written in. One that the planner
/// would pass through (the view reads only tables of the main backend)
/// runs on the main backend as written in.
fn plan_expanded(
    sql: &str,
    tokens: &[Token],
    expanded: &str,
    session_db: Option<&str>,
    dict: &Dictionary,
    prepared: bool,
    known: &Known<'_>,
) -> Plan {
    let Ok(t2) = hscale_sql::tokenize(expanded) else {
        return Plan::Refuse("a statement on a view that hscale cannot read".into());
    };
    match super::plan_nested(
        expanded,
        &t2,
        super::Scope::new(session_db, dict, known),
        prepared,
        &mut None,
        1,
    ) {
        Plan::Passthrough => {
            let kind = match tokens.first().map(|t| t.text(sql).to_ascii_uppercase()) {
                Some(w) if w == "INSERT" || w == "REPLACE" => StatementKind::Insert,
                Some(w) if w == "UPDATE" => StatementKind::Update,
                Some(w) if w == "DELETE" => StatementKind::Delete,
                _ => StatementKind::Select,
            };
            Plan::Targets {
                kind,
                parts: vec![(
                    Target {
                        backend: BackendId::MAIN,
                        physical_table: "statement with its views written in".into(),
                    },
                    expanded.to_string(),
                )],
            }
        }
        other => other,
    }
}

/// The statement with each view it names replaced by its derived table;
/// `Ok(None)` when it names none; `Err` with the plan that answers a
/// statement that cannot read its views (a write through a view, a view
/// whose table is gone).
fn expand(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Result<Option<String>, Stop> {
    let mut current: Option<String> = None;
    for depth in 0..=MAX_VIEW_DEPTH {
        let text = current.as_deref().unwrap_or(sql);
        let lexed;
        let toks = match &current {
            None => tokens,
            Some(c) => {
                lexed = hscale_sql::tokenize(c).map_err(|_| {
                    Stop::Refuse("a statement on a view that hscale cannot read".into())
                })?;
                &lexed[..]
            }
        };
        let refs = view_refs(text, toks, session_db, dict);
        if refs.is_empty() {
            return Ok(current);
        }
        if depth == MAX_VIEW_DEPTH {
            return Err(Stop::Refuse(format!(
                "views nested more than {MAX_VIEW_DEPTH} deep"
            )));
        }
        if depth == 0 {
            check_statement(text, toks, &refs)?;
        }
        let mut out = String::with_capacity(text.len() * 2);
        let mut at = 0;
        for r in &refs {
            let view = dict.view(&r.name).ok_or_else(|| {
                Stop::Refuse("internal: a view left the dictionary while planning".into())
            })?;
            if view
                .reads
                .iter()
                .any(|t| dict.table(t).is_none() && !dict.is_global(t) && dict.view(t).is_none())
            {
                return Err(Stop::View(ViewError::Invalid(view.name.clone())));
            }
            out.push_str(&text[at..toks[r.start].start as usize]);
            out.push_str(&view.derived_table());
            if !r.has_alias {
                out.push_str(" AS ");
                out.push_str(&quote(&view.name.table));
            }
            at = toks[r.end - 1].end as usize;
        }
        out.push_str(&text[at..]);
        current = Some(out);
    }
    Ok(current)
}

/// Why a statement naming views is not planned.
#[derive(Debug)]
enum Stop {
    Refuse(String),
    View(ViewError),
}

/// A reference to a kept view: its token range and whether an alias
/// follows it.
struct ViewRef {
    start: usize,
    end: usize,
    name: TableName,
    has_alias: bool,
}

fn view_refs(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Vec<ViewRef> {
    let ctes = cte_names(sql, tokens);
    let mut out = Vec::new();
    for start in table_starts(sql, tokens) {
        let qualified = tokens.get(start + 1).is_some_and(|d| d.is_punct(sql, "."))
            && tokens.get(start + 2).is_some_and(is_name);
        let last = if qualified { start + 2 } else { start };
        let table = unquote(&tokens[last], sql);
        let db = if qualified {
            unquote(&tokens[start], sql)
        } else {
            if ctes.iter().any(|c| c.eq_ignore_ascii_case(&table)) {
                continue;
            }
            match session_db {
                Some(d) => d.to_string(),
                None => continue,
            }
        };
        let name = TableName::new(&db, &table);
        if dict.view(&name).is_none() {
            continue;
        }
        let mut j = last + 1;
        if tokens.get(j).is_some_and(|n| n.is_word(sql, "AS")) {
            j += 1;
        }
        let has_alias = tokens.get(j).is_some_and(|a| {
            is_name(a)
                && !(a.kind == TokenKind::Word
                    && CLAUSE_WORDS
                        .iter()
                        .any(|w| a.text(sql).eq_ignore_ascii_case(w)))
        });
        out.push(ViewRef {
            start,
            end: last + 1,
            name,
            has_alias,
        });
    }
    out
}

/// Views are read-only through hscale: a statement that writes to one, or
/// does anything but read it (DESCRIBE, LOCK TABLES, ...), is refused.
fn check_statement(sql: &str, tokens: &[Token], refs: &[ViewRef]) -> Result<(), Stop> {
    let Some(first) = tokens.iter().find(|t| !t.is_punct(sql, "(")) else {
        return Ok(());
    };
    let word = first.text(sql).to_ascii_uppercase();
    let view = &refs[0].name;
    match word.as_str() {
        "SELECT" | "WITH" | "VALUES" | "TABLE" => Ok(()),
        "INSERT" | "REPLACE" | "UPDATE" | "DELETE" => {
            // The table written is the statement's first table reference.
            let first_table = table_starts(sql, tokens).first().copied();
            if first_table == Some(refs[0].start) {
                Err(Stop::Refuse(format!(
                    "{word} through view {view} (a view of partitioned tables is read-only through hscale; write to its tables)"
                )))
            } else {
                Ok(())
            }
        }
        _ => Err(Stop::Refuse(format!(
            "{word} on view {view} (hscale keeps this view: it is read by SELECT only)"
        ))),
    }
}

/// `[db .] name` at `i`: the name and the index after it.
fn read_name(
    sql: &str,
    tokens: &[Token],
    i: usize,
    session_db: Option<&str>,
) -> Option<(TableName, usize)> {
    let a = tokens.get(i).filter(|t| is_name(t))?;
    if tokens.get(i + 1).is_some_and(|d| d.is_punct(sql, "."))
        && tokens.get(i + 2).is_some_and(is_name)
    {
        let b = &tokens[i + 2];
        return Some((TableName::new(&unquote(a, sql), &unquote(b, sql)), i + 3));
    }
    Some((TableName::new(session_db?, &unquote(a, sql)), i + 1))
}

/// `DROP VIEW [IF EXISTS] v [, w ...] [RESTRICT | CASCADE]` naming a kept
/// view or a partitioned or global table.
fn plan_drop(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Option<Plan> {
    let mut i = 2;
    let if_exists = tokens.get(i).is_some_and(|t| t.is_word(sql, "IF"))
        && tokens.get(i + 1).is_some_and(|t| t.is_word(sql, "EXISTS"));
    if if_exists {
        i += 2;
    }
    let mut names = Vec::new();
    loop {
        let (name, next) = read_name(sql, tokens, i, session_db)?;
        names.push(name);
        i = next;
        if tokens.get(i).is_some_and(|t| t.is_punct(sql, ",")) {
            i += 1;
            continue;
        }
        break;
    }
    if tokens
        .get(i)
        .is_some_and(|t| t.is_word(sql, "RESTRICT") || t.is_word(sql, "CASCADE"))
    {
        i += 1;
    }
    if i != tokens.len() {
        return None;
    }
    let ours = names
        .iter()
        .any(|n| dict.view(n).is_some() || dict.table(n).is_some() || dict.is_global(n));
    ours.then_some(Plan::DropViews { names, if_exists })
}

/// `CREATE [OR REPLACE] [ALGORITHM = a] [DEFINER = d] [SQL SECURITY s]
/// VIEW [IF NOT EXISTS] v [(columns)] AS select [WITH [CASCADED | LOCAL]
/// CHECK OPTION]`, and ALTER VIEW alike, when it names a kept view or
/// reads a partitioned table, global table or kept view.
fn plan_ddl(
    sql: &str,
    tokens: &[Token],
    session_db: Option<&str>,
    dict: &Dictionary,
) -> Option<Plan> {
    let is_alter = tokens[0].is_word(sql, "ALTER");
    let mut i = 1;
    let or_replace = !is_alter
        && tokens.get(1).is_some_and(|t| t.is_word(sql, "OR"))
        && tokens.get(2).is_some_and(|t| t.is_word(sql, "REPLACE"));
    if or_replace {
        i = 3;
    }
    let mut algorithm = "UNDEFINED".to_string();
    let mut definer = String::new();
    let mut security = "DEFINER".to_string();
    loop {
        let t = tokens.get(i)?;
        if t.is_word(sql, "ALGORITHM") && tokens.get(i + 1)?.is_punct(sql, "=") {
            algorithm = tokens.get(i + 2)?.text(sql).to_ascii_uppercase();
            i += 3;
        } else if t.is_word(sql, "DEFINER") && tokens.get(i + 1)?.is_punct(sql, "=") {
            let from = tokens.get(i + 2)?.start as usize;
            let mut j = i + 2;
            while j < tokens.len()
                && !tokens[j].is_word(sql, "SQL")
                && !tokens[j].is_word(sql, "VIEW")
            {
                j += 1;
            }
            definer = normalize_definer(sql[from..tokens.get(j - 1)?.end as usize].trim());
            i = j;
        } else if t.is_word(sql, "SQL") && tokens.get(i + 1)?.is_word(sql, "SECURITY") {
            security = tokens.get(i + 2)?.text(sql).to_ascii_uppercase();
            i += 3;
        } else {
            break;
        }
    }
    if !tokens.get(i)?.is_word(sql, "VIEW") {
        return None;
    }
    i += 1;
    let if_not_exists = tokens.get(i).is_some_and(|t| t.is_word(sql, "IF"))
        && tokens.get(i + 1).is_some_and(|t| t.is_word(sql, "NOT"))
        && tokens.get(i + 2).is_some_and(|t| t.is_word(sql, "EXISTS"));
    if if_not_exists {
        i += 3;
    }
    let (name, next) = match read_name(sql, tokens, i, session_db) {
        Some(n) => n,
        None => {
            // Unqualified with no database: ours only if it reads ours.
            let reads = reads_of(sql, &tokens[i..], "", dict);
            return (!reads.is_empty()).then_some(Plan::ViewError(ViewError::NoDatabase));
        }
    };
    i = next;
    let mut columns = None;
    if tokens.get(i).is_some_and(|t| t.is_punct(sql, "(")) {
        let mut cols = Vec::new();
        i += 1;
        while let Some(t) = tokens.get(i) {
            if t.is_punct(sql, ")") {
                i += 1;
                break;
            }
            if is_name(t) {
                cols.push(unquote(t, sql));
            }
            i += 1;
        }
        columns = Some(cols);
    }
    if !tokens.get(i)?.is_word(sql, "AS") {
        return None;
    }
    i += 1;
    let mut end = tokens.len();
    while end > i && tokens[end - 1].kind == TokenKind::Semicolon {
        end -= 1;
    }
    let mut check_option = None;
    if end >= i + 3
        && tokens[end - 1].is_word(sql, "OPTION")
        && tokens[end - 2].is_word(sql, "CHECK")
    {
        let (kind, at) = match tokens[end - 3].text(sql).to_ascii_uppercase().as_str() {
            "CASCADED" => ("CASCADED", end - 4),
            "LOCAL" => ("LOCAL", end - 4),
            _ => ("CASCADED", end - 3),
        };
        if tokens.get(at).is_some_and(|t| t.is_word(sql, "WITH")) {
            check_option = Some(kind.to_string());
            end = at;
        }
    }
    if end <= i {
        return None;
    }
    let body = &sql[tokens[i].start as usize..tokens[end - 1].end as usize];
    let body_tokens = hscale_sql::tokenize(body).ok()?;
    let reads = reads_of(body, &body_tokens, &name.db, dict);
    let is_table = dict.table(&name).is_some() || dict.is_global(&name);
    if !is_table && dict.view(&name).is_none() && reads.is_empty() {
        return None;
    }
    if !is_table && reads.contains(&name) {
        // One server: a view cannot name itself.
        return Some(Plan::ViewError(ViewError::NoTable(name)));
    }
    let select = qualified(body, &body_tokens, &name.db);
    Some(Plan::CreateView(Box::new(ViewDdl {
        view: View {
            name,
            columns,
            select,
            inner: Vec::new(),
            algorithm,
            definer,
            security,
            check_option,
            reads,
        },
        or_replace,
        is_alter,
        if_not_exists,
    })))
}

/// `'u'@'h'`, `u@h`, `` `u`@`h` `` as `` `u`@`h` ``; CURRENT_USER as is
/// (the proxy fills in the user).
fn normalize_definer(raw: &str) -> String {
    if raw.eq_ignore_ascii_case("CURRENT_USER") || raw.eq_ignore_ascii_case("CURRENT_USER()") {
        return String::new();
    }
    let strip = |s: &str| {
        let s = s.trim();
        let q = s.chars().next();
        if matches!(q, Some('\'' | '"' | '`')) && s.len() >= 2 {
            s[1..s.len() - 1].to_string()
        } else {
            s.to_string()
        }
    };
    match raw.split_once('@') {
        Some((u, h)) => format!("{}@{}", quote(&strip(u)), quote(&strip(h))),
        None => format!("{}@`%`", quote(&strip(raw))),
    }
}

/// The partitioned tables, global tables and kept views a SELECT names
/// (unqualified names in `db`).
fn reads_of(sql: &str, tokens: &[Token], db: &str, dict: &Dictionary) -> Vec<TableName> {
    let ctes = cte_names(sql, tokens);
    let mut out: Vec<TableName> = Vec::new();
    for start in table_starts(sql, tokens) {
        let Some((name, _)) = read_name(sql, tokens, start, Some(db)) else {
            continue;
        };
        let is_qualified = tokens.get(start + 1).is_some_and(|d| d.is_punct(sql, "."));
        if !is_qualified && ctes.iter().any(|c| c.eq_ignore_ascii_case(&name.table)) {
            continue;
        }
        let is_ours =
            dict.table(&name).is_some() || dict.is_global(&name) || dict.view(&name).is_some();
        if is_ours && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The SELECT with every unqualified table name qualified with `db`
/// (common table expressions' names aside).
fn qualified(sql: &str, tokens: &[Token], db: &str) -> String {
    let ctes = cte_names(sql, tokens);
    let mut out = String::with_capacity(sql.len() + 32);
    let mut at = 0;
    for start in table_starts(sql, tokens) {
        let is_qualified = tokens.get(start + 1).is_some_and(|d| d.is_punct(sql, "."));
        let t = &tokens[start];
        if is_qualified
            || ctes
                .iter()
                .any(|c| c.eq_ignore_ascii_case(&unquote(t, sql)))
        {
            continue;
        }
        out.push_str(&sql[at..t.start as usize]);
        out.push_str(&quote(db));
        out.push('.');
        at = t.start as usize;
    }
    out.push_str(&sql[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashingFunction;

    fn dict() -> Dictionary {
        let mut d = Dictionary::default();
        d.setup_table(
            TableName::new("d", "t"),
            "id",
            "t",
            BackendId::MAIN,
            HashingFunction::parse("MOD(2)").unwrap(),
        )
        .unwrap();
        d
    }

    fn ddl(sql: &str, d: &Dictionary) -> ViewDdl {
        match crate::router::plan(sql, Some("d"), d, &crate::known::Known::nothing()) {
            Plan::CreateView(v) => *v,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn create_view_keeps_clauses_and_qualifies_tables() {
        let d = dict();
        let v = ddl(
            "CREATE OR REPLACE ALGORITHM=MERGE DEFINER='app'@'%' SQL SECURITY INVOKER VIEW v (a, b) AS SELECT id, n FROM t JOIN u ON u.id = t.id WITH LOCAL CHECK OPTION",
            &d,
        );
        assert!(v.or_replace);
        assert_eq!(v.view.algorithm, "MERGE");
        assert_eq!(v.view.definer, "`app`@`%`");
        assert_eq!(v.view.security, "INVOKER");
        assert_eq!(v.view.check_option.as_deref(), Some("LOCAL"));
        assert_eq!(v.view.columns, Some(vec!["a".into(), "b".into()]));
        assert_eq!(
            v.view.select,
            "SELECT id, n FROM `d`.t JOIN `d`.u ON u.id = t.id"
        );
        assert_eq!(v.view.reads, vec![TableName::new("d", "t")]);
    }

    #[test]
    fn views_of_plain_tables_pass_through() {
        let d = dict();
        assert_eq!(
            crate::router::plan(
                "CREATE VIEW p AS SELECT * FROM plain",
                Some("d"),
                &d,
                &crate::known::Known::nothing()
            ),
            Plan::Passthrough
        );
        assert_eq!(
            crate::router::plan(
                "DROP VIEW p",
                Some("d"),
                &d,
                &crate::known::Known::nothing()
            ),
            Plan::Passthrough
        );
    }

    #[test]
    fn queries_read_views_as_derived_tables() {
        let mut d = dict();
        let v = ddl("CREATE VIEW v AS SELECT id, n FROM t WHERE n > 1", &d).view;
        d.put_view(v);
        let w = ddl("CREATE VIEW w (x) AS SELECT id FROM v", &d);
        let mut w = w.view;
        w.inner = vec!["id".into()];
        d.put_view(w);
        let tokens = hscale_sql::tokenize("SELECT x FROM w AS q WHERE x = 1").unwrap();
        let e = expand("SELECT x FROM w AS q WHERE x = 1", &tokens, Some("d"), &d)
            .unwrap()
            .unwrap();
        assert_eq!(
            e,
            "SELECT x FROM (SELECT `id` AS `x` FROM (SELECT id FROM (SELECT id, n FROM `d`.t WHERE n > 1) AS `v`) AS `w`) AS q WHERE x = 1"
        );
        assert!(matches!(
            crate::router::plan(
                "UPDATE v SET n = 1",
                Some("d"),
                &d,
                &crate::known::Known::nothing()
            ),
            Plan::Refuse(_)
        ));
        // Reading a view in a write to another table is not a write through it.
        let p = crate::router::plan(
            "INSERT INTO plain SELECT * FROM v",
            Some("d"),
            &d,
            &crate::known::Known::nothing(),
        );
        assert!(
            !matches!(&p, Plan::Refuse(why) if why.contains("through view")),
            "{p:?}"
        );
        d.remove_table(&TableName::new("d", "t"));
        assert_eq!(
            crate::router::plan(
                "SELECT * FROM w",
                Some("d"),
                &d,
                &crate::known::Known::nothing()
            ),
            Plan::ViewError(ViewError::Invalid(TableName::new("d", "v")))
        );
    }
}
