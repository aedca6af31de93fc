//! `DO expr, ...` naming partitioned tables (`DO (SELECT COUNT(*) FROM
//! t)`), which the router refuses as a statement of its own: its
//! expressions are evaluated as `SELECT expr, ...`, planned and run like
//! any read (merged, or one server on copies of the tables), into memory;
//! the rows are dropped and the client gets DO's OK, or the read's error,
//! as one server evaluates them and answers.

use hscale_sql::Token;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ProxyError;
use crate::exec::send;
use crate::exec::sink::{self, Answer};
use crate::exec::Exec;
use hscale_wire::reply::OkParts;

/// `DO e1, e2` as `SELECT e1, e2`; `None` for any other statement, and for
/// a DO that assigns (`:=`), which a read on copies would not keep.
pub fn do_as_select(sql: &str) -> Option<String> {
    let tokens = hscale_sql::tokenize(sql).ok()?;
    let first: &Token = tokens.first()?;
    if !first.is_word(sql, "DO") || tokens.len() < 2 {
        return None;
    }
    if tokens
        .iter()
        .any(|t| t.is_punct(sql, ":=") || t.kind == hscale_sql::TokenKind::Semicolon)
    {
        return None;
    }
    Some(format!("SELECT {}", &sql[tokens[1].start as usize..]))
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    /// Run `select` (a DO's expressions) and answer DO's OK.
    pub async fn do_statement(&mut self, select: &str) -> Result<(), ProxyError> {
        let max_rows = self.b.ctx.config.proxy.ship_max_rows;
        let answer = sink::read(self.b, self.scratch, select, "DO", max_rows).await?;
        // The read's rows are not the client's.
        self.scratch.note.rows = 0;
        self.scratch.note.is_result = false;
        let err = match answer {
            Answer::Error(err) => err,
            Answer::Ok(_) | Answer::Rows(..) => return self.write_do_ok().await,
        };
        if is_set_up_error(err.code) {
            return self.write_server_error(1, &err).await;
        }
        // An error while the expressions are evaluated: one server's DO
        // clears it ("DO always is OK", sql_do.cc) and keeps it among the
        // statement's conditions, at level Error.
        self.scratch.note.error = 0;
        let g = &mut self.scratch.gathered;
        g.error = None;
        g.rows.push([
            b"Error".to_vec(),
            err.code.to_string().into_bytes(),
            err.message.into_bytes(),
        ]);
        g.count += 1;
        self.write_do_ok().await
    }

    /// DO's OK, counting the conditions its evaluation raised.
    async fn write_do_ok(&mut self) -> Result<(), ProxyError> {
        let warnings = u16::try_from(self.scratch.gathered.count).unwrap_or(u16::MAX);
        let st = self.b.status();
        send(self.reply(1).ok(OkParts::new(st, warnings))).await
    }
}

/// Errors a server raises while it sets a statement up (names, syntax,
/// privileges), before DO evaluates anything: DO answers them as errors.
fn is_set_up_error(code: u16) -> bool {
    const SET_UP: &[u16] = &[
        1044, // access denied to a database
        1046, // no database selected
        1049, // unknown database
        1052, // ambiguous column
        1054, // unknown column
        1064, // syntax
        1111, // invalid use of a group function
        1142, // command denied on a table
        1143, // command denied on a column
        1146, // no such table
        1235, // refused by hscale
        1241, // operand should contain n columns
        1305, // no such function
        1582, // wrong parameter count of a native function
        1583, // wrong parameters of a native function
        1630, // no such function (a name followed by a space)
    ];
    SET_UP.contains(&code)
}
