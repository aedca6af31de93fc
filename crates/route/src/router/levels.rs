//! The parenthesis structure of a token slice, found in one pass, so that
//! walks over nested conditions (`prune`) take them apart level by level
//! without scanning the tokens inside parentheses again at every level:
//! each token is visited a constant number of times however deep it is
//! nested.
//!
//! Depths count as a left-to-right scan does (`(` adds one after it, `)`
//! takes one away), so a stray `)` makes the depth negative for the tokens
//! after it, as in the scans this replaces.

use hscale_sql::Token;

/// Marks "none" in `close` and `next`.
const NONE: u32 = u32::MAX;

pub(super) struct Levels {
    /// For a `(`: the index of its `)`; `NONE` when it is not closed.
    close: Vec<u32>,
    /// The first token at or after `i` that is not a parenthesis and has
    /// the depth of token `i` (`len` when there is none; `len + 1` entries).
    next: Vec<u32>,
}

impl Levels {
    pub(super) fn new(sql: &str, t: &[Token]) -> Levels {
        let n = t.len();
        // The depth before each token.
        let mut depth = Vec::with_capacity(n);
        let mut close = vec![NONE; n];
        let mut open: Vec<usize> = Vec::new();
        let mut d = 0i32;
        let (mut lo, mut hi) = (0i32, 0i32);
        for (i, x) in t.iter().enumerate() {
            depth.push(d);
            if x.is_punct(sql, "(") {
                open.push(i);
                d += 1;
            } else if x.is_punct(sql, ")") {
                if let Some(o) = open.pop() {
                    close[o] = i as u32;
                }
                d -= 1;
            }
            lo = lo.min(d);
            hi = hi.max(d);
        }
        // Backwards: the nearest non-parenthesis token seen so far at each depth.
        let mut nearest = vec![n as u32; (hi - lo + 1) as usize];
        let mut next = vec![n as u32; n + 1];
        for i in (0..n).rev() {
            let slot = (depth[i] - lo) as usize;
            if !is_paren(sql, &t[i]) {
                nearest[slot] = i as u32;
            }
            next[i] = nearest[slot];
        }
        Levels { close, next }
    }

    /// Whether the `(` at `a` is closed by the `)` at `b - 1` or later: then
    /// the pair encloses all of `a..b`.
    pub(super) fn encloses(&self, a: usize, b: usize) -> bool {
        let c = self.close[a];
        c == NONE || c as usize >= b - 1
    }

    /// The tokens of `a..b` at its own depth, parentheses left out, in order.
    pub(super) fn top(&self, a: usize, b: usize) -> impl Iterator<Item = usize> + '_ {
        // After a token that is not a parenthesis the depth is unchanged,
        // so `next` of the following index is the next token at this level.
        let mut i = self.next.get(a).map_or(b, |&j| j as usize);
        std::iter::from_fn(move || {
            if i >= b {
                return None;
            }
            let at = i;
            i = self.next[at + 1] as usize;
            Some(at)
        })
    }
}

fn is_paren(sql: &str, t: &Token) -> bool {
    t.is_punct(sql, "(") || t.is_punct(sql, ")")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top(sql: &str, a: usize, b: usize) -> Vec<String> {
        let t = hscale_sql::tokenize(sql).unwrap();
        let l = Levels::new(sql, &t);
        l.top(a, b.min(t.len()))
            .map(|i| t[i].text(sql).to_string())
            .collect()
    }

    #[test]
    fn tokens_at_one_level() {
        assert_eq!(
            top("a AND (b OR (c)) AND d", 0, 99),
            ["a", "AND", "AND", "d"]
        );
        assert_eq!(top("a AND (b OR (c)) AND d", 3, 8), ["b", "OR"]);
        // A stray `)`: the tokens after it are one level down until a `(`.
        assert_eq!(top("a ) b ( c", 0, 99), ["a", "c"]);
        let sql = "((a) OR b) x";
        let t = hscale_sql::tokenize(sql).unwrap();
        let l = Levels::new(sql, &t);
        assert!(l.encloses(0, 7));
        assert!(!l.encloses(1, 7));
        assert!(l.encloses(1, 4));
    }
}
