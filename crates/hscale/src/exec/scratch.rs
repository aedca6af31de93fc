//! What the statement running gathers and decides beside the backend
//! connections ([`StatementScratch`]): its metrics note, the conditions
//! it raised, the ids it generated, how its answer is to be rewritten.
//! The session owns it (`Session::scratch`) and lends it to each
//! [`super::Exec`] it runs (`Exec::scratch`), which passes it where a
//! statement's part records what it did (`Bindings::finish`, the
//! conditions' `gather`, the fence). Nothing in it outlives the
//! statement: the session clears it in one call before each command
//! (`session/mod.rs` `dispatch`) and before each statement of a
//! multi-statement query (`session/batch.rs`); the connections and the
//! session state they are synced to stay in [`super::Bindings`].

use bytes::Bytes;

/// What one statement gathers and decides (see the module).
#[derive(Default)]
pub struct StatementScratch {
    /// What the current statement did, for metrics and digests: the
    /// session sets its plan kind, `Bindings::finish` adds rows and errors.
    pub note: crate::metrics::StatementNote,
    /// The conditions the current statement raised on every connection
    /// it ran on (`conditions/mod.rs`), for the session's SHOW WARNINGS.
    pub gathered: super::conditions::Gathered,
    /// For an INSERT into a table with a sequence (`exec/sequence.rs`):
    /// the first id generated for it, which its OK packet reports and which
    /// becomes the session's LAST_INSERT_ID() once it succeeds; `Some(0)`
    /// when it gave every id itself (LAST_INSERT_ID() stays).
    pub generated_id: Option<u64>,
    /// Every id generated for it, in the order of its rows that needed
    /// one: an INSERT IGNORE or ON DUPLICATE KEY UPDATE run row by row
    /// (`exec/unique_rows.rs`) reports the first of the rows it stored.
    pub generated_ids: Vec<u64>,
    /// What the statement's explicit id did to this proxy's block of its
    /// table's sequence (`seq::Sequences::pass`), undone when the
    /// statement is rejected without writing (`exec/statement.rs`).
    pub passed: Option<crate::seq::Passed>,
    /// An INSERT ... SELECT that found one row, run as `VALUES (row)`
    /// (`exec/insert_form.rs`): its text. Its OK gets the info one
    /// server gives INSERT ... SELECT (`Records: 1  Duplicates: ..`).
    pub one_row_select: Option<String>,
    /// The session variables the statement's write runs in instead of
    /// the session's (`Bindings::vars_allowing_invalid_dates`: an INSERT
    /// ... SELECT copying invalid dates), set by `exec/insert_form.rs`
    /// and applied around each attempt by `exec/entry.rs`.
    pub write_vars: Option<std::sync::Arc<crate::backend::state::SessionVars>>,
    /// Column definitions that replace the answer's, one for one: a `SHOW
    /// TABLE STATUS` hscale answers from information_schema
    /// (`exec/rewrite.rs`) carries one server's `SHOW TABLE STATUS`
    /// definitions. Taken by the forward of the statement's answer.
    pub answer_defs: Option<Vec<Bytes>>,
}

impl StatementScratch {
    /// What a part of the statement answered (`outcome`, as its
    /// connection is finished): its rows, affected rows, error and
    /// warnings into the note and the conditions.
    pub fn record(&mut self, outcome: &super::forward::Outcome) {
        self.note.rows += outcome.rows;
        match &outcome.ok {
            Some(ok) => self.note.affected = Some(ok.affected_rows),
            None if outcome.status.is_some() && !outcome.is_err => self.note.is_result = true,
            None => {}
        }
        if outcome.err_code != 0 {
            self.note.error(outcome.err_code);
        }
        self.gathered.reported += u64::from(outcome.warnings);
        if let Some(err) = &outcome.err {
            self.gathered.error_packet(err);
        }
    }

    /// Nothing of the previous command or statement left. In place, with
    /// no allocation: what the last one gathered is dropped (the session
    /// took its conditions already).
    pub fn clear(&mut self) {
        *self = Self::default();
    }
}
