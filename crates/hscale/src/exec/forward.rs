//! Streaming a backend's response to the client, packet by packet.
//!
//! Result sets are never held: each packet is copied to the client's write
//! buffer, which is flushed whenever the backend has nothing more buffered.
//! Backend connections use classic EOF packets; for clients that negotiated
//! `CLIENT_DEPRECATE_EOF` the metadata EOF is dropped and the final EOF
//! becomes an OK packet with the `0xFE` header.
//!
//! ```text
//!  first ─┬─ OK ──────────────── (more results? → first) ─► done
//!         ├─ ERR ─────────────────────────────────────────► done
//!         ├─ 0xFB LOCAL INFILE ─ relay file ─► first
//!         └─ column count ─► defs ─► EOF ─► rows ─► EOF ─ (more? → first) ─► done
//! ```

use hscale_wire::consts::status;
use hscale_wire::reply::Relay;
use hscale_wire::response::{decode_eof, is_eof, OkInfo, OkPacket};
use hscale_wire::{PacketStream, WireError};
use tokio::io::{AsyncRead, AsyncWrite};

/// What response the command produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// COM_QUERY and COM_STMT_EXECUTE: OK, ERR or result sets.
    Query,
    /// COM_STMT_FETCH: rows, then EOF.
    Rows,
    /// COM_FIELD_LIST: column definitions, then EOF.
    FieldList,
    /// COM_STATISTICS and others: exactly one packet.
    Single,
}

/// How a response ended.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Status flags of the last OK/EOF, if the response ended with one.
    pub status: Option<u16>,
    /// The last OK packet, if any.
    pub ok: Option<OkPacket>,
    /// The response was an error that names a table that does not exist
    /// (1146), held back instead of sent: the statement may have been
    /// routed by an older dictionary (see [`Forwarder::holding_missing_tables`]).
    pub held: Option<hscale_wire::response::ErrPacket>,
    pub is_err: bool,
    /// The error says the server is ending the connection (it was killed,
    /// or the server shuts down): it is not used again.
    pub is_conn_ending: bool,
    /// Packets sent to the client.
    pub packets: u64,
    /// Row packets sent to the client (for metrics and digests).
    pub rows: u64,
    /// The code of the error packet forwarded, if any.
    pub err_code: u16,
    /// The warning count of the terminator read (OK or EOF).
    pub warnings: u16,
    /// The first error packet forwarded (its payload), for SHOW WARNINGS.
    pub err: Option<Vec<u8>>,
}

/// Which side failed.
#[derive(Debug)]
pub enum ForwardError {
    Backend(WireError),
    Client(WireError),
}

/// A failed forward: the error, and the sequence id an error packet to the
/// client must use.
#[derive(Debug)]
pub struct ForwardFailure {
    pub error: ForwardError,
    pub next_seq: u8,
}

pub struct Forwarder<'a, B, C> {
    backend: &'a mut PacketStream<B>,
    /// The client side: sequence ids and the EOF rule are the relay's.
    out: Relay<'a, C>,
    backend_seq: u8,
    outcome: Outcome,
    max_allowed_packet: usize,
    /// Text-row values equal to `.0` are sent as `.1`.
    relabel: Option<(&'a [u8], &'a [u8])>,
    /// Columns of the current result set.
    columns: usize,
    /// Hold back a first packet that is error 1146.
    is_holding_missing_tables: bool,
    /// Hold back a first packet that is a syntax error (1064, 1149).
    is_holding_parse_errors: bool,
    /// OK packets carry this insert id (the first id a sequence generated
    /// for the statement) instead of the backend's.
    insert_id: Option<u64>,
    /// An INSERT ... SELECT of one row run as VALUES: its OK gets the
    /// info text one server writes (`scatter::part_info`).
    one_row_select: Option<&'a str>,
    /// Error messages name partitioned tables as the client does
    /// (`Dictionary::user_message`), read only when an error comes.
    names: Option<&'a crate::partition::Partitioning>,
    /// The last original table `send_column_def` looked up, and the
    /// partitioned table it is a partition of.
    last_org: Option<(Vec<u8>, Option<String>)>,
    /// Shipped copies' temporary tables and the tables they copy.
    ships: &'a [(String, String)],
    /// A part whose column definitions were already read
    /// (`scatter.rs::preflight`): its response goes on with its rows.
    is_past_metadata: bool,
    /// Definitions sent in place of the result's, when it has as many
    /// columns (`StatementScratch::answer_defs`), and how many were sent.
    replacing: Option<(Vec<bytes::Bytes>, usize)>,
}

impl<'a, B, C> Forwarder<'a, B, C>
where
    B: AsyncRead + AsyncWrite + Unpin,
    C: AsyncRead + AsyncWrite + Unpin,
{
    pub fn new(
        backend: &'a mut PacketStream<B>,
        client: &'a mut PacketStream<C>,
        is_eof_deprecated: bool,
        max_allowed_packet: usize,
    ) -> Self {
        Forwarder {
            backend,
            out: Relay::new(client, 1, is_eof_deprecated),
            backend_seq: 0,
            outcome: Outcome::default(),
            max_allowed_packet,
            relabel: None,
            columns: 0,
            is_holding_missing_tables: false,
            is_holding_parse_errors: false,
            insert_id: None,
            one_row_select: None,
            names: None,
            last_org: None,
            ships: &[],
            is_past_metadata: false,
            replacing: None,
        }
    }

    /// Send `defs` in place of the result's column definitions (when it
    /// has as many columns).
    pub fn replacing_defs(mut self, defs: Option<Vec<bytes::Bytes>>) -> Self {
        self.replacing = defs.map(|d| (d, 0));
        self
    }

    /// Column definitions name the table a shipped copy (`ships`: its
    /// temporary table, the table) copies.
    pub fn shipped(mut self, ships: &'a [(String, String)]) -> Self {
        self.ships = ships;
        self
    }

    /// Error messages name the partitioned tables of `p`'s dictionary, not
    /// their physical tables.
    pub fn naming(mut self, p: &'a crate::partition::Partitioning) -> Self {
        self.names = Some(p);
        self
    }

    /// An error packet as the client is sent it: physical table names
    /// replaced (`None`: as the server sent it).
    fn renamed(&self, payload: &[u8]) -> Option<bytes::BytesMut> {
        let names = self.names?;
        let e = hscale_wire::response::ErrPacket::decode(payload).ok()?;
        let message = names.with_dictionary(|d| d.user_message(&e.message))?;
        Some(hscale_wire::response::encode_err(
            e.code,
            &e.sql_state,
            &message,
        ))
    }

    /// `sql` is an INSERT ... SELECT of one row run as VALUES.
    pub fn one_row_select(mut self, sql: Option<&'a str>) -> Self {
        self.one_row_select = sql;
        self
    }

    /// Report `id` as the statement's insert id in its OK packet.
    pub fn insert_id(mut self, id: Option<u64>) -> Self {
        self.insert_id = id;
        self
    }

    /// Do not send a response that is only error 1146 (no such table):
    /// keep it in [`Outcome::held`], so the statement can run again after
    /// the dictionary is reloaded. Nothing has reached the client then.
    pub fn holding_missing_tables(mut self) -> Self {
        self.is_holding_missing_tables = true;
        self
    }

    /// Do not send a response that is only a syntax error (1064, 1149)
    /// either: keep it in [`Outcome::held`], so the session can answer
    /// with the server's error about the client's own text, not about
    /// the statement as rewritten for the partition.
    pub fn holding_parse_errors(mut self) -> Self {
        self.is_holding_parse_errors = true;
        self
    }

    /// Record an error packet of the response.
    fn note_err(&mut self, payload: &[u8]) {
        use hscale_wire::consts::code;
        self.outcome.is_err = true;
        let c = payload.get(1..3).map(|b| u16::from_le_bytes([b[0], b[1]]));
        if self.outcome.err_code == 0 {
            self.outcome.err_code = c.unwrap_or(0);
            self.outcome.err = Some(payload.to_vec());
        }
        if matches!(
            c,
            Some(code::ER_CONNECTION_KILLED | code::ER_SERVER_SHUTDOWN)
        ) {
            self.outcome.is_conn_ending = true;
        }
    }

    /// Whether `p`, the first packet of a response, is held back.
    fn hold(&mut self, p: &hscale_wire::Packet) -> bool {
        if !(self.is_holding_missing_tables || self.is_holding_parse_errors)
            || p.first() != Some(0xff)
        {
            return false;
        }
        match hscale_wire::response::ErrPacket::decode(&p.payload) {
            Ok(e)
                if (self.is_holding_missing_tables && super::fence::is_stale(&e))
                    || (self.is_holding_parse_errors && is_parse_error(&e)) =>
            {
                self.outcome.is_err = true;
                self.outcome.held = Some(e);
                true
            }
            _ => false,
        }
    }

    /// Show text-row values equal to `from` as `to` (small metadata results).
    pub fn relabel(mut self, from: &'a str, to: &'a str) -> Self {
        self.relabel = Some((from.as_bytes(), to.as_bytes()));
        self
    }

    /// A row with relabeled values, if any value needs it.
    fn relabeled(&self, payload: &[u8]) -> Option<bytes::BytesMut> {
        let (from, to) = self.relabel?;
        let row = hscale_wire::resultset::decode_row(payload, self.columns).ok()?;
        if !row.iter().any(|v| v.as_deref() == Some(from)) {
            return None;
        }
        let values: Vec<Option<&[u8]>> = row
            .iter()
            .map(|v| v.as_deref().map(|b| if b == from { to } else { b }))
            .collect();
        Some(hscale_wire::resultset::encode_row_bytes(&values))
    }

    async fn next(&mut self) -> Result<hscale_wire::Packet, ForwardError> {
        if !self.backend.has_buffered_packet() && self.out.stream().pending() > 0 {
            self.out
                .stream()
                .flush()
                .await
                .map_err(ForwardError::Client)?;
        }
        let p = self
            .backend
            .read_packet()
            .await
            .map_err(ForwardError::Backend)?;
        self.backend_seq = p.seq;
        Ok(p)
    }

    /// Wait until the backend's next packet is buffered (flushing the
    /// client first, as [`Forwarder::next`] does), without taking it.
    async fn fill(&mut self) -> Result<(), ForwardError> {
        if !self.backend.has_buffered_packet() {
            if self.out.stream().pending() > 0 {
                self.flush().await?;
            }
            self.backend
                .fill_packet()
                .await
                .map_err(ForwardError::Backend)?;
        }
        Ok(())
    }

    async fn send(&mut self, payload: &[u8]) -> Result<(), ForwardError> {
        self.out.packet(payload);
        self.outcome.packets += 1;
        self.maybe_flush().await
    }

    async fn maybe_flush(&mut self) -> Result<(), ForwardError> {
        self.out
            .stream()
            .maybe_flush()
            .await
            .map_err(ForwardError::Client)
    }

    async fn flush(&mut self) -> Result<(), ForwardError> {
        self.out
            .stream()
            .flush()
            .await
            .map_err(ForwardError::Client)
    }

    /// The metadata EOF, for classic clients only.
    async fn send_metadata_eof(&mut self, eof: &[u8]) -> Result<(), ForwardError> {
        if self.out.metadata_eof(eof) {
            self.outcome.packets += 1;
        }
        self.maybe_flush().await
    }

    /// Forward a column definition, a partition's physical table as its
    /// original table shown as the partitioned table
    /// (`Partitioning::logical_table`; the last one's answer kept,
    /// the columns of a result mostly name one table).
    async fn send_column_def(&mut self, def: hscale_wire::Packet) -> Result<(), ForwardError> {
        if let Some((defs, at)) = &mut self.replacing {
            if defs.len() == self.columns && !def.is_continued() {
                if let Some(d) = defs.get(*at).cloned() {
                    *at += 1;
                    return self.send(&d).await;
                }
            }
        }
        let Some(names) = self.names else {
            return self.send_whole(def).await;
        };
        if def.is_continued() {
            return self.send_whole(def).await;
        }
        let (schema, org) = match hscale_wire::resultset::aliased_org_table(&def.payload) {
            Some(found) => found,
            None => return self.send_whole(def).await,
        };
        let logical = match &self.last_org {
            Some((o, l)) if o[..] == *org => l.clone(),
            _ => {
                let l = names.client_table(self.ships, schema, org);
                self.last_org = Some((org.to_vec(), l.clone()));
                l
            }
        };
        match logical
            .and_then(|l| hscale_wire::resultset::with_org_table(&def.payload, l.as_bytes()).ok())
        {
            Some(renamed) => self.send(&renamed).await,
            None => self.send(&def.payload).await,
        }
    }

    /// Forward a packet and any continuation packets that follow it.
    async fn send_whole(&mut self, first: hscale_wire::Packet) -> Result<(), ForwardError> {
        let mut continued = first.is_continued();
        self.send(&first.payload).await?;
        while continued {
            let p = self.next().await?;
            continued = p.is_continued();
            self.send(&p.payload).await?;
        }
        Ok(())
    }

    /// An EOF that ends a result set, in the client's format.
    async fn send_terminator(&mut self, eof: &[u8]) -> Result<(), ForwardError> {
        let (warnings, st) = decode_eof(eof).map_err(ForwardError::Backend)?;
        self.outcome.status = Some(st);
        self.outcome.warnings = warnings;
        self.out.terminator(st, warnings);
        self.outcome.packets += 1;
        self.maybe_flush().await
    }

    /// Continue a response whose earlier packets used sequence ids below `seq`.
    pub fn starting_at(mut self, seq: u8) -> Self {
        self.out.resume_at(seq);
        self
    }

    /// Stream one backend's result as a part of a concatenated result:
    /// the first part sends the column definitions, every part its rows,
    /// none the terminator (its status and warning count are in the
    /// outcome): the caller ends the result set once every part's
    /// conditions are known (`scatter.rs`). Returns the outcome and the
    /// next sequence id.
    /// The part's column definitions were read already: its response
    /// goes on with its rows (a later part of a concatenation).
    pub fn past_metadata(mut self, is_past: bool) -> Self {
        self.is_past_metadata = is_past;
        self
    }

    pub async fn run_part(mut self, is_first: bool) -> Result<(Outcome, u8), ForwardFailure> {
        let r = match self.part(is_first).await {
            Ok(()) => self.flush().await,
            Err(e) => Err(e),
        };
        match r {
            Ok(()) => Ok((std::mem::take(&mut self.outcome), self.out.seq())),
            Err(error) => Err(ForwardFailure {
                error,
                next_seq: self.out.seq(),
            }),
        }
    }

    async fn part(&mut self, is_first: bool) -> Result<(), ForwardError> {
        if !self.is_past_metadata && self.part_metadata(is_first).await? {
            return Ok(());
        }
        loop {
            let row = self.next().await?;
            if is_eof(&row.payload) {
                let (warnings, st) = decode_eof(&row.payload).map_err(ForwardError::Backend)?;
                self.outcome.status = Some(st);
                self.outcome.warnings = warnings;
                return Ok(());
            }
            if row.first() == Some(0xff) {
                let renamed = self.renamed(&row.payload);
                let payload = renamed.as_deref().unwrap_or(&row.payload);
                self.note_err(payload);
                return self.send(payload).await;
            }
            self.outcome.rows += 1;
            self.send_whole(row).await?;
        }
    }

    /// A part's response up to its rows (sent to the client only for the
    /// first part); true when the response ended there.
    async fn part_metadata(&mut self, is_first: bool) -> Result<bool, ForwardError> {
        let p = self.next().await?;
        if is_first && self.hold(&p) {
            return Ok(true);
        }
        match p.first() {
            Some(0xff) => {
                let renamed = self.renamed(&p.payload);
                let payload = renamed.as_deref().unwrap_or(&p.payload);
                self.note_err(payload);
                return self.send(payload).await.map(|()| true);
            }
            Some(0x00) => {
                // No result set (should not happen for a SELECT): no rows.
                let ok = OkPacket::decode(&p.payload).map_err(ForwardError::Backend)?;
                self.outcome.status = Some(ok.status);
                self.outcome.warnings = ok.warnings;
                return Ok(true);
            }
            _ => {}
        }
        if is_first {
            self.send_whole(p).await?;
        }
        loop {
            let d = self.next().await?;
            if is_eof(&d.payload) {
                if is_first {
                    self.send_metadata_eof(&d.payload).await?;
                }
                break;
            }
            if d.first() == Some(0xff) {
                let renamed = self.renamed(&d.payload);
                let payload = renamed.as_deref().unwrap_or(&d.payload);
                self.note_err(payload);
                return self.send(payload).await.map(|()| true);
            }
            if is_first {
                self.send_column_def(d).await?;
            }
        }
        Ok(false)
    }

    /// Stream the whole response; flushes the client at the end.
    pub async fn run(mut self, expect: Expect) -> Result<Outcome, ForwardFailure> {
        match self.run_inner(expect).await {
            Ok(()) => Ok(std::mem::take(&mut self.outcome)),
            Err(error) => Err(ForwardFailure {
                error,
                next_seq: self.out.seq(),
            }),
        }
    }

    async fn run_inner(&mut self, expect: Expect) -> Result<(), ForwardError> {
        match expect {
            Expect::Query => self.query().await?,
            Expect::Rows => {
                self.rows().await?;
            }
            Expect::FieldList => self.field_list().await?,
            Expect::Single => {
                let p = self.next().await?;
                self.outcome.is_err = p.first() == Some(0xff);
                if p.first() == Some(0x00) {
                    if let Ok(ok) = OkPacket::decode(&p.payload) {
                        self.outcome.status = Some(ok.status);
                        self.outcome.ok = Some(ok);
                    }
                }
                self.send_whole(p).await?;
            }
        }
        self.flush().await
    }

    async fn query(&mut self) -> Result<(), ForwardError> {
        if self.names.is_none() && self.replacing.is_none() && self.relabel.is_none() {
            // The usual answer to a read: one result set the server sent
            // in one piece, passed on in one copy when the proxy changes
            // none of it (nothing renamed, replaced or relabeled).
            self.fill().await?;
            if let Some(w) = self.out.whole_result_in(self.backend) {
                self.outcome.packets += self.out.whole_result_from(self.backend, &w);
                self.columns = w.columns as usize;
                self.outcome.rows += w.rows;
                self.outcome.status = Some(w.status);
                self.outcome.warnings = w.warnings;
                return Ok(());
            }
        }
        let mut is_first = true;
        loop {
            let p = self.next().await?;
            if std::mem::take(&mut is_first) && self.hold(&p) {
                return Ok(());
            }
            match p.first() {
                Some(0x00) => {
                    let ok = OkPacket::decode(&p.payload).map_err(ForwardError::Backend)?;
                    self.outcome.status = Some(ok.status);
                    self.outcome.warnings = ok.warnings;
                    self.outcome.ok = Some(ok);
                    match self.insert_id {
                        _ if self.one_row_select.is_some() && ok.info == OkInfo::None => {
                            let info = super::scatter::part_info(
                                self.one_row_select.unwrap_or_default().as_bytes(),
                                ok.info,
                                ok.affected_rows,
                                ok.warnings,
                            );
                            let ok = OkPacket {
                                last_insert_id: self.insert_id.unwrap_or(ok.last_insert_id),
                                ..ok
                            };
                            let p = hscale_wire::response::encode_ok(0, &ok, &info.text());
                            self.send(&p).await?;
                        }
                        Some(id) => {
                            let rewritten = hscale_wire::response::with_insert_id(&p.payload, id)
                                .map_err(ForwardError::Backend)?;
                            self.send(&rewritten).await?;
                        }
                        None => self.send(&p.payload).await?,
                    }
                    if ok.status & status::MORE_RESULTS_EXISTS == 0 {
                        return Ok(());
                    }
                }
                Some(0xff) => {
                    let renamed = self.renamed(&p.payload);
                    let payload = renamed.as_deref().unwrap_or(&p.payload);
                    self.note_err(payload);
                    self.send(payload).await?;
                    return Ok(());
                }
                Some(0xfb) => {
                    self.send(&p.payload).await?;
                    self.relay_local_infile().await?;
                }
                _ => {
                    let more = self.result_set(p).await?;
                    if !more {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// A result set from its column-count packet. Returns whether more
    /// results follow.
    async fn result_set(&mut self, count: hscale_wire::Packet) -> Result<bool, ForwardError> {
        self.columns = hscale_wire::buf::Reader::new(&count.payload)
            .lenenc()
            .unwrap_or(0) as usize;
        self.send_whole(count).await?;
        // Column definitions up to the metadata EOF. Those the read buffer
        // holds go across as they are, many at a time, when none is
        // renamed or replaced (as rows do, `rows`); what is left takes the
        // packet path below.
        let is_relayed_as_read = self.names.is_none() && self.replacing.is_none();
        loop {
            if is_relayed_as_read {
                let (moved, last) = self.out.rows_from(self.backend);
                if moved > 0 {
                    self.outcome.packets += moved;
                    self.backend_seq = last;
                    continue;
                }
            }
            let p = self.next().await?;
            if is_eof(&p.payload) {
                let (_, st) = decode_eof(&p.payload).map_err(ForwardError::Backend)?;
                if st & status::CURSOR_EXISTS != 0 {
                    // A cursor was opened: rows come with COM_STMT_FETCH.
                    self.send_terminator(&p.payload).await?;
                    return Ok(false);
                }
                self.send_metadata_eof(&p.payload).await?;
                break;
            }
            if p.first() == Some(0xff) {
                let renamed = self.renamed(&p.payload);
                let payload = renamed.as_deref().unwrap_or(&p.payload);
                self.note_err(payload);
                self.send(payload).await?;
                return Ok(false);
            }
            self.send_column_def(p).await?;
        }
        self.rows().await
    }

    /// Rows up to the final EOF (or an ERR). Returns whether more results follow.
    async fn rows(&mut self) -> Result<bool, ForwardError> {
        loop {
            // The rows already read go across as they are, many at a
            // time; what is left (the first row of each read, the
            // terminator, an error) takes the packet path below.
            if self.relabel.is_none() {
                let (moved, last) = self.out.rows_from(self.backend);
                if moved > 0 {
                    self.outcome.rows += moved;
                    self.outcome.packets += moved;
                    self.backend_seq = last;
                    self.maybe_flush().await?;
                    continue;
                }
            }
            let p = self.next().await?;
            if is_eof(&p.payload) {
                self.send_terminator(&p.payload).await?;
                let st = self.outcome.status.unwrap_or(0);
                return Ok(st & status::MORE_RESULTS_EXISTS != 0);
            }
            if p.first() == Some(0xff) {
                let renamed = self.renamed(&p.payload);
                let payload = renamed.as_deref().unwrap_or(&p.payload);
                self.note_err(payload);
                self.send(payload).await?;
                return Ok(false);
            }
            self.outcome.rows += 1;
            if self.relabel.is_some() && !p.is_continued() {
                if let Some(row) = self.relabeled(&p.payload) {
                    self.out.payload(&row);
                    self.outcome.packets += 1;
                    self.maybe_flush().await?;
                    continue;
                }
            }
            self.send_whole(p).await?;
        }
    }

    async fn field_list(&mut self) -> Result<(), ForwardError> {
        loop {
            let p = self.next().await?;
            if is_eof(&p.payload) {
                return self.send_terminator(&p.payload).await;
            }
            if p.first() == Some(0xff) {
                let renamed = self.renamed(&p.payload);
                let payload = renamed.as_deref().unwrap_or(&p.payload);
                self.note_err(payload);
                return self.send(payload).await;
            }
            self.send_whole(p).await?;
        }
    }

    /// `LOAD DATA LOCAL INFILE`: the client sends the file in packets ending
    /// with an empty one; relay them to the backend.
    async fn relay_local_infile(&mut self) -> Result<(), ForwardError> {
        self.flush().await?;
        loop {
            let p = self
                .out
                .stream()
                .read_packet()
                .await
                .map_err(ForwardError::Client)?;
            if p.payload.len() > self.max_allowed_packet {
                return Err(ForwardError::Client(WireError::TooLarge {
                    size: p.payload.len(),
                    max: self.max_allowed_packet,
                }));
            }
            self.out.resume_at(p.seq.wrapping_add(1));
            self.backend_seq = self.backend_seq.wrapping_add(1);
            self.backend.write_packet(self.backend_seq, &p.payload);
            self.backend
                .maybe_flush()
                .await
                .map_err(ForwardError::Backend)?;
            if p.payload.is_empty() {
                self.backend.flush().await.map_err(ForwardError::Backend)?;
                return Ok(());
            }
        }
    }
}

/// A server's syntax error (ER_PARSE_ERROR, ER_SYNTAX_ERROR).
pub fn is_parse_error(e: &hscale_wire::response::ErrPacket) -> bool {
    matches!(e.code, 1064 | 1149)
}
