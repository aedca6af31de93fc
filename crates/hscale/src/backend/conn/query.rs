//! The proxy's own queries on a backend connection (dictionary reads,
//! admin commands, the rows of a read it makes for itself): whole small
//! results, streamed rows and raw answers; never a client's statement.

use super::*;

impl BackendConn {
    /// Run a query and read its whole (small) text result: column
    /// definitions and rows. For the proxy's own queries (dictionary,
    /// admin commands), never for client statements.
    pub async fn query_rows(
        &mut self,
        sql: &str,
    ) -> Result<Result<TextResult, ErrPacket>, ProxyError> {
        self.ensure_utf8().await?;
        let r = self.query_rows_inner(sql).await;
        if r.is_err() {
            self.is_broken = true;
        }
        r
    }

    /// Run a compound statement (`BEGIN NOT ATOMIC ... END`) whose one
    /// SELECT gives a small text result, in the connection's own character
    /// set (no `SET NAMES`: the statement's literals are the session's),
    /// and read the OK that ends the compound statement after it.
    pub async fn query_block_rows(
        &mut self,
        sql: &str,
    ) -> Result<Result<TextResult, ErrPacket>, ProxyError> {
        let r = async {
            let rows = match self.query_rows_inner(sql).await? {
                Ok(rows) if !rows.columns.is_empty() => rows,
                other => return Ok(other),
            };
            Ok(self.read_response_inner().await?.map(|_| rows))
        }
        .await;
        if r.is_err() {
            self.is_broken = true;
        }
        r
    }

    async fn query_rows_inner(
        &mut self,
        sql: &str,
    ) -> Result<Result<TextResult, ErrPacket>, ProxyError> {
        let columns = match self.query_stream(sql).await? {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        let mut out = TextResult {
            columns,
            rows: Vec::new(),
        };
        while let Some(row) = self.next_row(out.columns.len()).await? {
            match row {
                Ok(r) => out.rows.push(r),
                Err(e) => return Ok(Err(e)),
            }
        }
        Ok(Ok(out))
    }

    /// Send a query whose text result the proxy reads row by row
    /// ([`BackendConn::next_row`]): the column definitions, or the server's
    /// error. For bulk reads of the proxy's own (row copies), so memory does
    /// not grow with the result.
    pub async fn query_stream(
        &mut self,
        sql: &str,
    ) -> Result<Result<Vec<ColumnInfo>, ErrPacket>, ProxyError> {
        self.was_broken = self.is_broken;
        self.is_broken = true; // until the result is read to its end
        let name = self.backend.clone();
        let proto = |e: WireError| ProxyError::BackendProtocol {
            backend: name.to_string(),
            reason: e.to_string(),
        };
        self.stream
            .send_command(&Self::payload_for_query(sql))
            .await
            .map_err(|e| lost(&name, e))?;
        let first = self.read().await?;
        match first.first() {
            Some(0xff) => {
                self.is_broken = self.was_broken;
                return Ok(Err(ErrPacket::decode(&first.payload).map_err(proto)?));
            }
            Some(0x00) => {
                // No result set: no columns, no rows.
                if let Ok(ok) = OkPacket::decode(&first.payload) {
                    self.note_insert_id(ok.last_insert_id);
                }
                self.is_broken = self.was_broken;
                return Ok(Ok(Vec::new()));
            }
            _ => {}
        }
        let n = hscale_wire::buf::Reader::new(&first.payload)
            .lenenc()
            .map_err(proto)? as usize;
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            let p = self.read().await?;
            columns.push(ColumnInfo::decode(&p.payload).map_err(proto)?);
        }
        self.read().await?; // EOF after the definitions
        Ok(Ok(columns))
    }

    /// Run a query that lists no rows (`SHOW WARNINGS LIMIT 0`) and return
    /// its column definitions as the server sent them, for a result the
    /// proxy answers itself with the server's exact metadata.
    pub async fn query_defs(
        &mut self,
        sql: &str,
    ) -> Result<Result<Vec<Bytes>, ErrPacket>, ProxyError> {
        Ok(self.query_raw(sql).await?.map(|(defs, _)| defs))
    }

    /// Run a query with a small text result and return its column
    /// definitions as the server sent them and its rows, for an answer
    /// the proxy writes itself with the server's metadata (values changed).
    pub async fn query_raw(
        &mut self,
        sql: &str,
    ) -> Result<Result<RawResult, ErrPacket>, ProxyError> {
        if let Err(e) = self
            .stream
            .send_command(&Self::payload_for_query(sql))
            .await
        {
            self.is_broken = true;
            return Err(lost(&self.backend, e));
        }
        Ok(self.read_raw().await?.map(|(result, _)| result))
    }

    /// Read the text result of a command already sent, as
    /// [`BackendConn::query_raw`] does, with its terminator's (warnings,
    /// status); an OK answers no columns and no rows, with its own.
    pub async fn read_raw(
        &mut self,
    ) -> Result<Result<(RawResult, (u16, u16)), ErrPacket>, ProxyError> {
        let r = async {
            let name = self.backend.clone();
            let proto = |reason: String| ProxyError::BackendProtocol {
                backend: name.to_string(),
                reason,
            };
            let first = self.read().await?;
            match first.first() {
                Some(0xff) => {
                    return Ok(Err(
                        ErrPacket::decode(&first.payload).map_err(|e| proto(e.to_string()))?
                    ))
                }
                Some(0x00) => {
                    let ok = hscale_wire::response::OkPacket::decode(&first.payload)
                        .map_err(|e| proto(e.to_string()))?;
                    return Ok(Ok(((Vec::new(), Vec::new()), (ok.warnings, ok.status))));
                }
                _ => {}
            }
            let n = hscale_wire::buf::Reader::new(&first.payload)
                .lenenc()
                .map_err(|e| proto(e.to_string()))? as usize;
            let mut defs = Vec::with_capacity(n);
            for _ in 0..n {
                defs.push(self.read().await?.payload);
            }
            self.read().await?; // EOF after the definitions
            let mut rows = Vec::new();
            loop {
                let p = self.read().await?;
                if is_eof(&p.payload) {
                    let end = hscale_wire::response::decode_eof(&p.payload)
                        .map_err(|e| proto(e.to_string()))?;
                    return Ok(Ok(((defs, rows), end)));
                }
                if p.first() == Some(0xff) {
                    return Ok(Err(
                        ErrPacket::decode(&p.payload).map_err(|e| proto(e.to_string()))?
                    ));
                }
                rows.push(
                    hscale_wire::resultset::decode_row(&p.payload, n)
                        .map_err(|e| proto(e.to_string()))?,
                );
            }
        }
        .await;
        if r.is_err() {
            self.is_broken = true;
        }
        r
    }

    /// The next row of a [`BackendConn::query_stream`] result with `n`
    /// columns; `Ok(None)` at its end.
    pub async fn next_row(
        &mut self,
        n: usize,
    ) -> Result<Option<Result<Vec<Option<Vec<u8>>>, ErrPacket>>, ProxyError> {
        let Some(row) = self.next_row_payload(n).await? else {
            return Ok(None);
        };
        Ok(Some(match row {
            Ok(p) => Ok(
                hscale_wire::resultset::decode_row(&p, n).map_err(|e| self.protocol_error(e))?
            ),
            Err(e) => Err(e),
        }))
    }

    /// [`BackendConn::next_row`] undecoded: the row's packet payload, for
    /// `hscale_wire::resultset::decode_row_into` (bulk copies).
    pub async fn next_row_payload(
        &mut self,
        n: usize,
    ) -> Result<Option<Result<Bytes, ErrPacket>>, ProxyError> {
        if n == 0 {
            return Ok(None); // an OK, not a result set (see `query_stream`)
        }
        let p = self.read().await?;
        if is_eof(&p.payload) {
            self.is_broken = self.was_broken;
            return Ok(None);
        }
        if p.first() == Some(0xff) {
            self.is_broken = self.was_broken;
            let err = ErrPacket::decode(&p.payload).map_err(|e| self.protocol_error(e))?;
            return Ok(Some(Err(err)));
        }
        Ok(Some(Ok(p.payload)))
    }
}

/// A server error met while the proxy ran `sql` itself: the code and
/// SQLSTATE are the server's.
pub fn server_error(conn: &BackendConn, sql: &str, err: ErrPacket) -> ProxyError {
    let sql = match sql.char_indices().nth(120) {
        Some((i, _)) => format!("{}...", &sql[..i]),
        None => sql.to_string(),
    };
    ProxyError::Backend {
        backend: conn.backend.to_string(),
        during: format!("hscale: {sql}"),
        err,
    }
}
