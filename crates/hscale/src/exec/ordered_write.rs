//! UPDATE and DELETE with `ORDER BY ... LIMIT n` over several partitions
//! (`hscale_route::router::OrderedWrite`): the keys of the first n rows are
//! read by the merged read the router wrote, run like a client's SELECT
//! into memory (`exec::sink::read`); then the statement runs
//! on each partition that holds some of them with LIMIT its share, through
//! `Exec::run` like any write over several partitions (in autocommit, in a
//! transaction of its own: atomic).
//!
//! The read and the write are two statements: a row another client commits
//! between them can change which rows are first (one server would lock the
//! rows as it reads them). Inside a transaction both run on its branches.

use hscale_route::router::{self, OrderedWrite, Plan};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ProxyError;
use crate::exec::sink::{self, Answer};
use crate::exec::{Effects, Exec};
use crate::planning::{Asker, Learnt};

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Run an ordered write (see the module) for the client's `sql`.
    pub(crate) async fn run_ordered_write(
        &mut self,
        w: OrderedWrite,
        sql: &str,
        effects: Effects<'_>,
    ) -> Result<(), ProxyError> {
        let what = "UPDATE or DELETE with ORDER BY ... LIMIT";
        let max_rows = self.b.ctx.config.proxy.ship_max_rows;
        let rows = match sink::read(self.b, self.scratch, &w.select, what, max_rows).await? {
            Answer::Error(err) => return self.write_server_error(1, &err).await,
            Answer::Ok(_) => Vec::new(),
            Answer::Rows(_, rows) => rows,
        };
        let mut keys = Vec::with_capacity(rows.len());
        for row in rows {
            let key = match row.into_iter().next().flatten() {
                None => None,
                Some(b) => Some(String::from_utf8(b).map_err(|_| {
                    ProxyError::Refused(format!(
                        "{what} over several partitions of {} whose partition keys are not UTF-8 in the connection's character set",
                        w.table
                    ))
                })?),
            };
            keys.push(key);
        }
        // The keys were read as the server holds them; a key the backend
        // weighs is asked about and the parts picked again.
        let dict = self.b.ctx.partitioning.dictionary();
        let mut learnt = Learnt::new();
        let plan = loop {
            let db = self.b.state.db.as_deref();
            let (plan, questions) =
                learnt.attempt(|known| router::ordered_write_parts(sql, db, &dict, &keys, known));
            let is_usable = !matches!(plan, Plan::Refuse(_));
            let mut asker = Asker::Session(self.b);
            if !learnt.ask(&mut asker, questions, is_usable).await? {
                break plan;
            }
        };
        self.is_fenced = true;
        self.run(plan, effects).await
    }
}
