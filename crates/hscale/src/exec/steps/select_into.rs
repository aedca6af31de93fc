//! `SELECT ... INTO @a, @b` over several partitions
//! (`hscale_route::router::select_into_variables`, whose module draws the
//! steps): the SELECT read like any other into memory, then the values
//! assigned by one server with a SELECT ... INTO of them, run as the
//! client's statement (so the variables live where the session's
//! variables live, and the answer, warning 1329 or error 1172 is the
//! server's).

use bytes::Bytes;
use hscale_route::router::SelectInto;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::exec::sink::{self, Answer};
use crate::exec::Exec;

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Read the client's statement without its INTO clause: the
    /// statement that assigns its row to the variables, for the session
    /// to run as the client's, or `None` when the read's error was
    /// answered.
    pub async fn select_into(&mut self, into: SelectInto) -> Result<Option<Bytes>, ProxyError> {
        // The read uses no variables (`sink::read` refuses one over
        // several partitions that does): it may borrow connections beside
        // the one the session's variables pin.
        self.b.may_borrow_beside = true;
        let max_rows = self.b.ctx.config.proxy.ship_max_rows;
        let answer = sink::read(
            self.b,
            self.scratch,
            &into.select,
            "SELECT ... INTO user variables",
            max_rows,
        )
        .await?;
        // The read's rows are not the client's.
        self.scratch.note.rows = 0;
        self.scratch.note.is_result = false;
        let columns = match &answer {
            Answer::Error(err) => return self.write_server_error(1, err).await.map(|()| None),
            Answer::Ok(_) => 0,
            Answer::Rows(c, _) => c.len(),
        };
        let Some(rows) = self.literal_rows_or_answer(answer).await? else {
            return Ok(None);
        };
        let sql = into.assignment(columns, &rows);
        Ok(Some(BackendConn::payload_for_query(&sql)))
    }
}
