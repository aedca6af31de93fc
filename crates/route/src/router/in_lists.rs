//! Each partition's part of a statement over several partitions gets only
//! its own keys of a `key IN (literal, ...)` list.
//!
//! For a row of partition P, `key IN (a, b, c)` has the same value (TRUE,
//! FALSE or NULL) as the list cut down to the items that route to P: a
//! row sits in the partition its key routes to, and an item equal to the
//! row's key routes where the key does (the same assumption pruning makes
//! when it sends the statement to the items' partitions only). So each
//! part can carry its own items; the backend then reads (and, in a locking
//! read or a write, locks) only the keys that can be there, instead of
//! every key of the list in every partition, as one server holding all
//! the rows would.
//!
//! - NULL items stay in every part (`k IN (1, NULL)` is NULL, not FALSE,
//!   for k = 2, and a NOT around it tells the two apart).
//! - A part keeps at least two items when the list had two or more,
//!   taking others' items (none of the partition's rows equals them, so
//!   they change no answer): MariaDB reads `k IN (a)` as `k = a`, whose
//!   plan can give a result other column types (MIN of an ENUM grouped
//!   by the key). A part none of whose items routes to it keeps others'
//!   items only: the list is FALSE (or NULL for a NULL key) there, as it
//!   was.
//! - Only lists whose every item is a literal the pruner places, all
//!   strings or all numbers (a mixed list compares differently once
//!   items are gone), with the bare key column (or `table.key`) as the
//!   whole left operand: the token before it ends an operand (WHERE, AND,
//!   OR, `&&`, `(`, `,`). Not after NOT (HIGH_NOT_PRECEDENCE makes
//!   `NOT k IN (...)` mean `(NOT k) IN (...)`), not inside subqueries
//!   (their columns may be another table's).
//! - Not where an item may convert with a warning, which the server
//!   raises once per statement and the parts could not tell apart: a
//!   string for an integer key other than plain digits, a DATE
//!   function's key; and not at all in a condition with a literal the
//!   server converts per row (`prune::walk_condition`: the statement
//!   goes whole to every partition, so every row one server compares is
//!   compared, and warns, as there).

use hscale_sql::{Token, TokenKind};

use super::literal;
use super::prune::{self, IsKey};
use crate::dictionary::{PartitionedTable, Target};
use crate::hashing::HashingFunction;
use crate::known::Known;
use crate::KeyValue;

/// One list: the bytes between its parentheses, and each item's bytes
/// with the partition it routes to (`None`: a NULL, kept everywhere).
#[derive(Debug)]
pub(super) struct KeyList {
    inner: (usize, usize),
    items: Vec<((usize, usize), Option<Target>)>,
}

/// The key lists of `tokens[w..end]` (a WHERE clause) that can be cut per
/// partition (see the module).
pub(super) fn key_lists(
    sql: &str,
    tokens: &[Token],
    (w, end): (usize, usize),
    is_key: IsKey<'_>,
    table: &PartitionedTable,
    known: &Known<'_>,
) -> Vec<KeyList> {
    let mut out = Vec::new();
    // Whether each open parenthesis is (inside) a subquery.
    let mut parens: Vec<bool> = Vec::new();
    let mut i = w;
    while i < end {
        let t = &tokens[i];
        let in_subquery = parens.last().copied().unwrap_or(false);
        if t.is_punct(sql, "(") {
            let next = tokens.get(i + 1);
            let starts_query = next.is_some_and(|n| {
                ["SELECT", "WITH", "VALUES", "TABLE"]
                    .iter()
                    .any(|k| n.is_word(sql, k))
            });
            parens.push(in_subquery || starts_query);
        } else if t.is_punct(sql, ")") {
            parens.pop();
        } else if !in_subquery && t.is_word(sql, "IN") {
            if let Some((list, close)) = key_list(sql, tokens, (w, end), i, is_key, table, known) {
                out.push(list);
                // The list's own tokens hold no other list.
                i = close + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The list of the `IN` at `at`, if it can be cut; with its `)`'s index.
fn key_list(
    sql: &str,
    tokens: &[Token],
    (w, end): (usize, usize),
    at: usize,
    is_key: IsKey<'_>,
    table: &PartitionedTable,
    known: &Known<'_>,
) -> Option<(KeyList, usize)> {
    // The left operand: `k` or `q . k`, after a token that ends an operand.
    let ends_operand = |b: usize| {
        let t = &tokens[b];
        ["WHERE", "AND", "OR"].iter().any(|k| t.is_word(sql, k))
            || ["(", ",", "&&"].iter().any(|p| t.is_punct(sql, p))
    };
    let is_operand = |len: usize| -> bool {
        if at < w + len || !is_key(&tokens[at - len..at]) {
            return false;
        }
        let first = at - len;
        first == w || ends_operand(first - 1)
    };
    if !(is_operand(1) || is_operand(3)) {
        return None;
    }
    let open = at + 1;
    if open >= end || !tokens[open].is_punct(sql, "(") {
        return None;
    }
    // The items: literals at depth 0 up to the matching `)`.
    let mut items = Vec::new();
    let mut start = open + 1;
    let mut close = None;
    for (j, t) in tokens.iter().enumerate().take(end).skip(open + 1) {
        if t.is_punct(sql, "(") {
            return None;
        }
        if t.is_punct(sql, ",") || t.is_punct(sql, ")") {
            items.push((start, j));
            start = j + 1;
            if t.is_punct(sql, ")") {
                close = Some(j);
                break;
            }
        }
    }
    let close = close?;
    if matches!(table.function, HashingFunction::Date(_)) {
        // A date string may convert with a warning the server raises once
        // per statement; which part would raise it is not known.
        return None;
    }
    let mut kind = None;
    let mut placed = Vec::with_capacity(items.len());
    for &(a, b) in &items {
        let item = &tokens[a..b];
        let v = table.stored_key(literal(sql, item)?)?;
        let target = match v {
            KeyValue::Null => None,
            v => {
                let k = item.last().map(|t| t.kind)?;
                if *kind.get_or_insert(k) != k || !matches!(k, TokenKind::Str | TokenKind::Number) {
                    return None;
                }
                // A string for an integer key converts without a warning
                // only as plain digits ('2 ' warns, once per statement).
                if table.is_key_integer && k == TokenKind::Str && !is_plain_integer(sql, item) {
                    return None;
                }
                Some(prune::value_target(table, v, known)?)
            }
        };
        let bytes = (tokens[a].start as usize, tokens[b - 1].end as usize);
        placed.push((bytes, target));
    }
    let inner = (tokens[open].end as usize, tokens[close].start as usize);
    Some((
        KeyList {
            inner,
            items: placed,
        },
        close,
    ))
}

/// A quoted string that is an optional `-` and digits.
fn is_plain_integer(sql: &str, item: &[Token]) -> bool {
    let [t] = item else {
        return false;
    };
    let text = t.text(sql);
    let inner = &text[1..text.len().saturating_sub(1).max(1)];
    let digits = inner.strip_prefix('-').unwrap_or(inner);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

impl KeyList {
    /// The edit that cuts this list for `target`: (byte start, byte end,
    /// text).
    pub(super) fn edit_for(&self, sql: &str, target: &Target) -> (usize, usize, String) {
        (self.inner.0, self.inner.1, self.text_for(sql, target))
    }

    /// The list's text for the part of `target`: its items and NULLs, and
    /// other items to make two when the list had two or more (MariaDB
    /// reads `k IN (a)` as `k = a`, and the other plan can change a
    /// result's column types: MIN of an ENUM grouped by the key).
    fn text_for(&self, sql: &str, target: &Target) -> String {
        let is_kept = |t: &Option<Target>| t.as_ref().is_none_or(|t| t == target);
        let mut keep: Vec<bool> = self.items.iter().map(|(_, t)| is_kept(t)).collect();
        let mut n = keep.iter().filter(|k| **k).count();
        for k in keep.iter_mut() {
            if n >= self.items.len().min(2) {
                break;
            }
            if !*k {
                *k = true;
                n += 1;
            }
        }
        // In the list's own order.
        let kept: Vec<&str> = self
            .items
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(((a, b), _), _)| &sql[*a..*b])
            .collect();
        kept.join(", ")
    }
}

/// `text` with byte range `span` replaced by `replacement` and each list
/// cut for `target`; the list spans lie after `span`.
pub(super) fn rewrite(
    text: &str,
    span: (usize, usize),
    replacement: &str,
    lists: &[KeyList],
    target: &Target,
) -> String {
    let mut out = String::with_capacity(text.len() + replacement.len());
    out.push_str(&text[..span.0]);
    out.push_str(replacement);
    let mut at = span.1;
    for l in lists {
        if l.inner.0 < at {
            continue;
        }
        out.push_str(&text[at..l.inner.0]);
        out.push_str(&l.text_for(text, target));
        at = l.inner.1;
    }
    out.push_str(&text[at..]);
    out
}
