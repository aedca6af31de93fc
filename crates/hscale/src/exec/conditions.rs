//! The conditions (warnings, notes, errors) of the statement running,
//! gathered from every connection it ran on ([`Gathered`]). One server
//! lists every condition of a statement in SHOW WARNINGS; through hscale
//! a statement may run on several connections, each of which knows only
//! its own, and gives them back to the pool. So when a part's terminator
//! (OK or EOF) counts conditions, its list is read on its connection
//! before that connection is given back ([`Bindings::gather`]): one more
//! round trip, only for a part that reported some. The session keeps the
//! statement's list (`session/conditions.rs`) and answers SHOW WARNINGS,
//! SHOW ERRORS and the counts from it.

use super::bindings::Bindings;
use crate::backend::PooledConn;

/// One condition: its Level, Code and Message as SHOW WARNINGS lists it.
pub type Condition = [Vec<u8>; 3];

/// What the statement running raised, on every connection it ran on.
#[derive(Debug, Default)]
pub struct Gathered {
    /// Conditions listed by the parts that counted some.
    pub rows: Vec<Condition>,
    /// Conditions the parts' terminators counted.
    pub count: u64,
    /// A part listed fewer conditions than it counted: the session's
    /// `max_error_count`, which bounds the whole statement's list too.
    pub cap: Option<usize>,
    /// Conditions counted by terminators `Bindings::finish` saw (a path
    /// that did not gather them shows here as more than `count`).
    pub reported: u64,
    /// A list could not be read, or the statement ran in a way whose
    /// conditions only its connection knows (several statements in one
    /// query): the session does not answer from its own list.
    pub missed: bool,
    /// The error the client was answered with (code, message), when it
    /// came from a part's error packet or from hscale.
    pub error: Option<(u16, String)>,
    /// Where each part's list ends in `rows`, one entry per part that
    /// listed some.
    pub part_ends: Vec<usize>,
    /// Whether the statement uses tables (`hscale_sql::Facts::uses_tables`,
    /// noted when it was analyzed); `None` counts as using them.
    pub uses_tables: Option<bool>,
}

impl Gathered {
    /// Record the error the client is answered with (the first wins).
    pub fn error(&mut self, code: u16, message: &str) {
        if self.error.is_none() {
            self.error = Some((code, message.to_string()));
        }
    }

    /// Record the error packet `payload` (from a part's response).
    pub fn error_packet(&mut self, payload: &[u8]) {
        if self.error.is_some() {
            return;
        }
        if let Ok(e) = hscale_wire::response::ErrPacket::decode(payload) {
            self.error = Some((e.code, e.message));
        }
    }
}

impl Bindings {
    /// After a part's terminator counted `warnings` conditions: read its
    /// list on `conn` (synced to the session, so the session's
    /// `max_error_count` bounds it) before the connection is given back.
    /// Costs nothing when `warnings` is 0.
    pub async fn gather(&mut self, conn: &mut PooledConn, warnings: u16) {
        if warnings == 0 {
            return;
        }
        self.gathered.count += u64::from(warnings);
        match conn.query_rows("SHOW WARNINGS").await {
            Ok(Ok(list)) if list.columns.len() == 3 => {
                if list.rows.len() < usize::from(warnings) {
                    let cap = self.gathered.cap.unwrap_or(usize::MAX);
                    self.gathered.cap = Some(cap.min(list.rows.len()));
                }
                for row in list.rows {
                    let mut cells = row.into_iter().map(Option::unwrap_or_default);
                    let (Some(level), Some(code), Some(message)) =
                        (cells.next(), cells.next(), cells.next())
                    else {
                        continue;
                    };
                    self.gathered.rows.push([level, code, message]);
                }
                self.gathered.part_ends.push(self.gathered.rows.len());
            }
            _ => self.gathered.missed = true,
        }
    }
}
