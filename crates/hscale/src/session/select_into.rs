//! `SELECT ... INTO @a, @b` over several partitions
//! (`hscale_route::router::select_into_variables`, whose module draws the
//! steps): the SELECT read like any other into memory, then the values
//! assigned by one server with a SELECT ... INTO of them, run as the
//! client's statement (so the variables live where the session's
//! variables live, and the answer, warning 1329 or error 1172 is the
//! server's).

use hscale_route::router::SelectInto;
use tokio::io::{AsyncRead, AsyncWrite};

use super::Session;
use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::exec::sink::{self, literal_rows, Answer, Selected};

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Session<S> {
    /// Run the client's statement without its INTO clause and assign its
    /// row to the variables.
    pub(super) async fn select_into(&mut self, into: SelectInto) -> Result<(), ProxyError> {
        // The read uses no variables (`sink::read` refuses one over
        // several partitions that does): it may borrow connections beside
        // the one the session's variables pin.
        self.b.may_borrow_beside = true;
        let max_rows = self.b.ctx.config.proxy.ship_max_rows;
        let answer = sink::read(
            &mut self.b,
            &into.select,
            "SELECT ... INTO user variables",
            max_rows,
        )
        .await?;
        // The read's rows are not the client's.
        self.b.note.rows = 0;
        self.b.note.is_result = false;
        let columns = match &answer {
            Answer::Error(err) => return self.exec().write_server_error(1, err).await,
            Answer::Ok(_) => 0,
            Answer::Rows(c, _) => c.len(),
        };
        let collations = self.b.ctx.collations();
        let rows = match literal_rows(answer, &|id| {
            collations.get(id).map(|(cs, _)| cs.to_string())
        })? {
            Selected::Rows(rows) => rows,
            Selected::Error(err) => return self.exec().write_server_error(1, &err).await,
        };
        let sql = into.assignment(columns, &rows);
        let payload = BackendConn::payload_for_query(&sql);
        Box::pin(self.query_text(&payload)).await
    }
}
