//! Values an INSERT ... SELECT over partitions cannot write back as
//! one server copies them. `insert_form.rs` writes the SELECT's rows as
//! literal VALUES, and a result's text loses what tells these apart, so
//! such a copy is refused (1235) before anything is written, rather than
//! stored as something else:
//!
//! - An ENUM's error value (index 0, stored by a write without strict
//!   mode of a value that is no member) reads as `''`, as a member `''`
//!   does. One server copies it into an ENUM as index 0 in every mode
//!   without a warning, into a number as 0; no literal stores index 0
//!   without a warning (1265), or in strict mode without that error, and
//!   `''` is the member `''` where the column has one.
//! - A TIMESTAMP in the hour the session's time zone repeats when its
//!   clocks go back reads as one text for two instants; written back, the
//!   text is the earlier one. One server copies the instant.
//!
//! Nothing here runs unless the rows hold an ENUM `''` or a TIMESTAMP.

use std::collections::BTreeSet;

use hscale_route::dictionary::{TableName, Target};
use hscale_route::BackendId;
use tokio::io::{AsyncRead, AsyncWrite};

use super::sink::{self, Answer, Origin};
use super::Exec;
use crate::error::ProxyError;
use crate::partition::{quote_ident, quote_str};

/// The ENUM flag of a column definition.
const ENUM_FLAG: u16 = 0x100;
/// The type of a TIMESTAMP column.
const TIMESTAMP: u8 = 0x07;
/// TIMESTAMP values asked about in one statement.
const STAMPS_PER_ASK: usize = 500;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// A refusal when the rows an INSERT ... SELECT read (`answer`, its
    /// columns from `origins`) hold an ENUM's error value or a TIMESTAMP
    /// of a repeated hour (see the module).
    pub(super) async fn refuse_lost_copies(
        &mut self,
        answer: &Answer,
        origins: &[Origin],
    ) -> Result<(), ProxyError> {
        let Answer::Rows(columns, rows) = answer else {
            return Ok(());
        };
        let value = |r: &'_ [Option<Vec<u8>>], i: usize| r.get(i).cloned().flatten();
        for (i, c) in columns.iter().enumerate() {
            let has_empty = rows
                .iter()
                .any(|r| value(r, i).is_some_and(|v| v.is_empty()));
            if c.flags & ENUM_FLAG != 0
                && has_empty
                && !self.are_empty_members(origins.get(i)).await?
            {
                return Err(ProxyError::Refused(format!(
                    "INSERT ... SELECT of an ENUM's error value ('' of index 0, column {}) over partitioned tables",
                    c.name
                )));
            }
        }
        let mut stamps = BTreeSet::new();
        for (i, c) in columns.iter().enumerate() {
            if c.column_type != TIMESTAMP {
                continue;
            }
            for v in rows.iter().filter_map(|r| value(r, i)) {
                let is_text = v.iter().all(|x| x.is_ascii_digit() || b"-:. ".contains(x));
                let is_zero = v.iter().all(|x| !(b'1'..=b'9').contains(x));
                if is_text && !is_zero {
                    stamps.insert(String::from_utf8_lossy(&v).into_owned());
                }
            }
        }
        let stamps: Vec<String> = stamps.into_iter().collect();
        for chunk in stamps.chunks(STAMPS_PER_ASK) {
            if let Some(v) = self.repeated_hour(chunk).await? {
                return Err(ProxyError::Refused(format!(
                    "INSERT ... SELECT of TIMESTAMP '{v}', in the hour the session's time zone repeats (two instants), over partitioned tables"
                )));
            }
        }
        Ok(())
    }

    /// Whether every `''` of the column at `origin` is its member `''`:
    /// it has one, and its table holds no error value (index 0).
    async fn are_empty_members(&mut self, origin: Option<&Origin>) -> Result<bool, ProxyError> {
        let Some((db, table, column)) = origin else {
            return Ok(false);
        };
        if db.is_empty() || table.is_empty() || column.is_empty() {
            return Ok(false);
        }
        let target = {
            let dict = self.b.ctx.partitioning.dictionary();
            match dict.table(&TableName::new(db, table)) {
                Some(t) => t.default_target(),
                None => Target {
                    backend: BackendId::MAIN,
                    physical_table: table.clone(),
                },
            }
        };
        let sql = format!(
            "SELECT COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {} AND COLUMN_NAME = {}",
            quote_str(db),
            quote_str(&target.physical_table),
            quote_str(column)
        );
        let mut c = self
            .b
            .ctx
            .pool(self.b.worker, target.backend)
            .get(false)
            .await?;
        let rows = c.query_rows(&sql).await?.map_err(|e| {
            ProxyError::Wrong(format!(
                "reading the type of {table}.{column}: {}",
                e.message
            ))
        })?;
        drop(c);
        let ty = rows
            .strings()
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten());
        if !ty.as_deref().is_some_and(has_empty_member) {
            return Ok(false);
        }
        let probe = format!(
            "SELECT 1 FROM {}.{} WHERE {} = 0 LIMIT 1",
            quote_ident(db),
            quote_ident(table),
            quote_ident(column)
        );
        Ok(
            match sink::read(self.b, self.scratch, &probe, "INSERT ... SELECT", 1).await? {
                Answer::Rows(_, rows) => rows.is_empty(),
                _ => false,
            },
        )
    }

    /// The first of `stamps` (TIMESTAMP texts) that the session's time
    /// zone shows for two instants, asked of the main backend in the
    /// session's state: a later instant (by a shift of half an hour to
    /// two hours) shows the same text.
    async fn repeated_hour(&mut self, stamps: &[String]) -> Result<Option<String>, ProxyError> {
        let values: Vec<String> = stamps
            .iter()
            .map(|v| format!("SELECT '{v}' AS v"))
            .collect();
        let sql = format!(
            "SELECT v FROM ({}) AS t WHERE {} LIMIT 1",
            values.join(" UNION ALL "),
            [1800, 3600, 7200]
                .map(|d| format!("FROM_UNIXTIME(UNIX_TIMESTAMP(v) + {d}) = v"))
                .join(" OR ")
        );
        let rows = self
            .b
            .ask(BackendId::MAIN, async |conn| conn.query_rows(&sql).await)
            .await?
            .map_err(|err| ProxyError::Backend {
                backend: "main".into(),
                during: "reading TIMESTAMPs in the session's time zone".into(),
                err,
            })?;
        Ok(rows
            .strings()
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten()))
    }
}

/// Whether an `enum('a',...)` COLUMN_TYPE has the member `''`.
fn has_empty_member(ty: &str) -> bool {
    let Some(list) = ty.strip_prefix("enum(") else {
        return false;
    };
    let b = list.as_bytes();
    let mut i = 0;
    while b.get(i) == Some(&b'\'') {
        let start = i + 1;
        let mut j = start;
        loop {
            match b.get(j) {
                Some(b'\'') if b.get(j + 1) == Some(&b'\'') => j += 2,
                Some(b'\'') => break,
                Some(_) => j += 1,
                None => return false,
            }
        }
        if j == start {
            return true;
        }
        // Past the closing quote and the comma.
        i = j + 2;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::has_empty_member;

    #[test]
    fn empty_members() {
        for ty in [
            "enum('')",
            "enum('a','b','')",
            "enum('','a')",
            "enum('it''s','')",
        ] {
            assert!(has_empty_member(ty), "{ty}");
        }
        for ty in [
            "enum('a','b')",
            "enum('''','a')",
            "enum('a'',''b')",
            "set('','a')",
            "int(11)",
        ] {
            assert!(!has_empty_member(ty), "{ty}");
        }
    }
}
