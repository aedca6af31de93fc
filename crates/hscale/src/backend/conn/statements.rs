//! The statements prepared on one backend connection: a cache keyed by
//! the database and the SQL, least recently used evicted past
//! `backend_statement_cache`, and the server's syntax check by PREPARE.

use super::*;

impl BackendConn {
    /// The cache key of a statement: the database it resolves names in
    /// (a prepared statement keeps the one current at PREPARE), then the SQL.
    fn statement_key(&self, sql: &[u8]) -> Vec<u8> {
        let db = self.db.as_deref().unwrap_or("");
        let mut key = Vec::with_capacity(db.len() + 1 + sql.len());
        key.extend_from_slice(db.as_bytes());
        key.push(0);
        key.extend_from_slice(sql);
        key
    }

    pub fn statement(&mut self, sql: &[u8]) -> Option<BackendStatement> {
        self.statement_tick += 1;
        let tick = self.statement_tick;
        let key = self.statement_key(sql);
        self.statements.get_mut(key.as_slice()).map(|s| {
            s.last_used = tick;
            *s
        })
    }

    /// Prepare `sql` here, reading and discarding the metadata. `Ok(Err)` is
    /// the server's refusal. Evicts the least recently used statement when
    /// more than `cache_size` are prepared.
    pub async fn prepare(
        &mut self,
        sql: &Arc<[u8]>,
        cache_size: usize,
    ) -> Result<Result<BackendStatement, ErrPacket>, ProxyError> {
        let name = self.backend.clone();
        let mut payload = BytesMut::with_capacity(1 + sql.len());
        payload.put_u8(com::STMT_PREPARE);
        payload.put_slice(sql);
        let r: Result<_, WireError> = async {
            self.stream.send_command(&payload).await?;
            let first = self.stream.read_packet().await?;
            if first.first() == Some(0xff) {
                return Ok(Err(ErrPacket::decode(&first.payload)?));
            }
            let ok = PrepareOk::decode(&first.payload)?;
            for n in [ok.num_params, ok.num_columns] {
                if n > 0 {
                    for _ in 0..=n {
                        self.stream.read_packet().await?;
                    }
                }
            }
            Ok(Ok(ok))
        }
        .await;
        let ok = match r {
            Ok(Ok(ok)) => ok,
            Ok(Err(e)) => return Ok(Err(e)),
            Err(e) => {
                self.is_broken = true;
                return Err(lost(&name, e));
            }
        };
        Ok(Ok(self.remember_statement(sql, ok, cache_size).await?))
    }

    /// The server's syntax error for `sql`, if it has one: `sql` is
    /// prepared (which parses it and runs nothing) and the statement
    /// closed again. `None` when the server parses it, or refuses it for
    /// another reason (an unknown table, a statement the prepared
    /// protocol does not take).
    pub async fn parse_error(&mut self, sql: &[u8]) -> Result<Option<ErrPacket>, ProxyError> {
        let mut payload = BytesMut::with_capacity(1 + sql.len());
        payload.put_u8(com::STMT_PREPARE);
        payload.put_slice(sql);
        let r: Result<Option<ErrPacket>, WireError> = async {
            self.stream.send_command(&payload).await?;
            match self.read_prepare().await? {
                Err(e) => Ok(Some(e)),
                Ok((ok, _)) => {
                    let mut close = [0u8; 5];
                    close[0] = com::STMT_CLOSE;
                    close[1..].copy_from_slice(&ok.statement_id.to_le_bytes());
                    // COM_STMT_CLOSE has no response.
                    self.stream.send_command(&close).await?;
                    Ok(None)
                }
            }
        }
        .await;
        match r {
            Ok(Some(e)) if matches!(e.code, 1064 | 1149) => Ok(Some(e)),
            Ok(_) => Ok(None),
            Err(e) => {
                self.is_broken = true;
                Err(lost(&self.backend, e))
            }
        }
    }

    /// Read the answer to a COM_STMT_PREPARE sent on this connection: its
    /// OK and the parameter and column definitions, or the server's error.
    pub async fn read_prepare(
        &mut self,
    ) -> Result<Result<(PrepareOk, Vec<Bytes>), ErrPacket>, WireError> {
        let first = self.stream.read_packet().await?;
        if first.first() == Some(0xff) {
            return Ok(Err(ErrPacket::decode(&first.payload)?));
        }
        let ok = PrepareOk::decode(&first.payload)?;
        let mut defs = Vec::new();
        for n in [ok.num_params, ok.num_columns] {
            if n == 0 {
                continue;
            }
            for _ in 0..n {
                defs.push(self.stream.read_packet().await?.payload);
            }
            let eof = self.stream.read_packet().await?;
            if !hscale_wire::response::is_eof(&eof.payload) {
                return Err(WireError::Malformed("expected EOF after metadata"));
            }
        }
        Ok(Ok((ok, defs)))
    }

    /// Record a statement prepared on this connection (evicting if full).
    pub async fn remember_statement(
        &mut self,
        sql: &Arc<[u8]>,
        ok: PrepareOk,
        cache_size: usize,
    ) -> Result<BackendStatement, ProxyError> {
        if self.statements.len() >= cache_size.max(1) {
            let victim = self
                .statements
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(k, s)| (k.clone(), s.id));
            if let Some((key, id)) = victim {
                self.statements.remove(&key);
                let mut close = [0u8; 5];
                close[0] = com::STMT_CLOSE;
                close[1..].copy_from_slice(&id.to_le_bytes());
                // COM_STMT_CLOSE has no response.
                if let Err(e) = self.stream.send_command(&close).await {
                    self.is_broken = true;
                    return Err(lost(&self.backend, e));
                }
            }
        }
        self.statement_tick += 1;
        let s = BackendStatement {
            id: ok.statement_id,
            prepare: ok,
            last_used: self.statement_tick,
        };
        let key: Arc<[u8]> = Arc::from(self.statement_key(sql));
        if let Some(old) = self.statements.insert(key, s) {
            // Re-prepared: close the one it replaces on the server.
            let mut close = [0u8; 5];
            close[0] = com::STMT_CLOSE;
            close[1..].copy_from_slice(&old.id.to_le_bytes());
            if let Err(e) = self.stream.send_command(&close).await {
                self.is_broken = true;
                return Err(lost(&self.backend, e));
            }
        }
        Ok(s)
    }

    pub fn prepared_count(&self) -> usize {
        self.statements.len()
    }
}
