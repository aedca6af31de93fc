//! Running a `MergePlan` (`hscale_route::router::merge`): the partitions'
//! fragments run in parallel, and their rows are merged here.
//!
//! - **Sort**: every fragment is sorted (and limited to OFFSET + LIMIT rows)
//!   by its backend; the proxy keeps one row per partition and repeatedly
//!   sends the smallest (a k-way merge), so memory does not grow with the
//!   result. Partitions beyond the connections a statement may hold at
//!   once are read into a bounded buffer instead (only with LIMIT).
//! - **Group**: each fragment returns partial groups; the proxy combines
//!   them in a hash map keyed by the values' comparison forms, computes the
//!   final values, sorts and cuts. The column definitions come from the
//!   statement itself run with `LIMIT 0` on one partition, so the client
//!   sees exactly what one server would send.
//!
//! At most `[proxy] merge_max_rows` rows are held; past that the statement
//! fails with `ProxyError::MergeLimit`.

use std::cmp::Ordering;
use std::collections::HashMap;

use bytes::Bytes;
use hscale_route::dictionary::Target;
use hscale_route::router::{
    ArithOp, CmpOp, GroupPlan, Having, MergePlan, Mode, OrderKey, Output, Ship, Val,
};
use hscale_route::value::{compare, Cmp, Decimal, Kind};
use hscale_wire::response::{decode_eof, encode_eof, encode_ok, is_eof, ErrPacket, OkPacket};
use hscale_wire::resultset::{decode_row, encode_column_count, encode_row_bytes, ColumnInfo};
use tokio::io::{AsyncRead, AsyncWrite};

use super::bindings::Running;
use super::forward::Outcome;
use super::{write_error, Effects, Exec};
use crate::backend::{BackendConn, PooledConn};
use crate::error::ProxyError;
use crate::partition::copy::InsertBatcher;

type Row = Vec<Option<Vec<u8>>>;

/// Why a merge stopped.
enum Stop {
    /// A backend answered with an error: the statement's answer.
    Server(ErrPacket),
    Proxy(ProxyError),
}

impl From<ProxyError> for Stop {
    fn from(e: ProxyError) -> Self {
        Stop::Proxy(e)
    }
}

/// One partition's result, read row by row. A part dropped before its
/// result was read to the end closes its connection (a connection with an
/// unread response must never return to the pool).
struct Part {
    conn: Option<PooledConn>,
    /// Registered for KILL QUERY while the part runs.
    running: Option<Running>,
    defs: Vec<Bytes>,
    columns: Vec<ColumnInfo>,
    status: Option<u16>,
}

impl Drop for Part {
    fn drop(&mut self) {
        if let Some(c) = self.conn.as_mut() {
            c.is_broken = true;
        }
    }
}

impl Part {
    fn started(conn: PooledConn, running: Running) -> Part {
        Part {
            conn: Some(conn),
            running: Some(running),
            defs: Vec::new(),
            columns: Vec::new(),
            status: None,
        }
    }

    fn conn(&mut self) -> Result<&mut PooledConn, Stop> {
        self.conn
            .as_mut()
            .ok_or_else(|| Stop::Proxy(ProxyError::Wrong("a finished part was read".into())))
    }

    fn lost(&mut self, e: impl std::fmt::Display) -> Stop {
        let backend = match self.conn.as_mut() {
            Some(c) => {
                c.is_broken = true;
                c.backend.to_string()
            }
            None => String::new(),
        };
        Stop::Proxy(ProxyError::BackendLost {
            backend,
            reason: e.to_string(),
        })
    }

    async fn packet(&mut self) -> Result<hscale_wire::Packet, Stop> {
        let r = self.conn()?.stream.read_packet().await;
        match r {
            Ok(p) if p.is_continued() => Err(Stop::Proxy(ProxyError::Refused(
                "rows of 16 MB or more cannot be merged across partitions".into(),
            ))),
            Ok(p) => Ok(p),
            Err(e) => Err(self.lost(e)),
        }
    }

    /// Read the column definitions of the statement sent.
    async fn open(&mut self) -> Result<(), Stop> {
        let part = self;
        let first = part.packet().await?;
        match first.first() {
            Some(0xff) => {
                let e = ErrPacket::decode(&first.payload).map_err(|e| part.lost(e))?;
                return Err(Stop::Server(e));
            }
            Some(0x00) => {
                return Err(part.lost("a result set was expected"));
            }
            _ => {}
        }
        let n = hscale_wire::buf::Reader::new(&first.payload)
            .lenenc()
            .map_err(|e| part.lost(e))? as usize;
        for _ in 0..n {
            let d = part.packet().await?;
            let info = ColumnInfo::decode(&d.payload).map_err(|e| part.lost(e))?;
            part.columns.push(info);
            part.defs.push(d.payload);
        }
        let eof = part.packet().await?;
        if !is_eof(&eof.payload) {
            return Err(part.lost("no EOF after the column definitions"));
        }
        Ok(())
    }

    /// The next row, or `None` at the end.
    async fn row(&mut self) -> Result<Option<Row>, Stop> {
        if self.status.is_some() {
            return Ok(None);
        }
        let p = self.packet().await?;
        if is_eof(&p.payload) {
            let (_, st) = decode_eof(&p.payload).map_err(|e| self.lost(e))?;
            self.status = Some(st);
            return Ok(None);
        }
        if p.first() == Some(0xff) {
            let e = ErrPacket::decode(&p.payload).map_err(|e| self.lost(e))?;
            self.status = Some(0);
            return Err(Stop::Server(e));
        }
        decode_row(&p.payload, self.columns.len())
            .map(Some)
            .map_err(|e| self.lost(e))
    }

    /// Read what is left, so the connection can serve again.
    async fn drain(&mut self) -> Result<(), Stop> {
        while self.row().await?.is_some() {}
        Ok(())
    }
}

/// A value of a row with its weight columns, for `compare`.
fn cmp_of<'a>(row: &'a Row, col: usize, weight: Option<(usize, usize)>) -> Cmp<'a> {
    let cell = |i: usize| row.get(i).and_then(|c| c.as_deref());
    Cmp {
        text: cell(col),
        weight: weight.and_then(|(w, _)| cell(w)),
        space: weight.and_then(|(_, s)| cell(s)),
    }
}

fn order_rows(a: &Row, b: &Row, keys: &[(OrderKey, Kind)], base: usize) -> Ordering {
    for (k, kind) in keys {
        let shift = |w: Option<(usize, usize)>| w.map(|(x, y)| (x + base, y + base));
        let o = compare(
            *kind,
            &cmp_of(a, k.col + base, shift(k.weight)),
            &cmp_of(b, k.col + base, shift(k.weight)),
        );
        let o = if k.desc { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The column definitions of one result made of several parts (a UNION
/// ALL, or partitions): the first part's, with the longest display length
/// and NOT NULL only where every part has it. Parts whose columns differ in
/// type, character set or scale cannot be merged as they are.
struct Unified {
    defs: Vec<Bytes>,
    columns: Vec<ColumnInfo>,
    changed: bool,
}

const NOT_NULL_FLAG: u16 = 0x0001;

impl Unified {
    fn new(defs: &[Bytes], columns: &[ColumnInfo]) -> Unified {
        Unified {
            defs: defs.to_vec(),
            columns: columns.to_vec(),
            changed: false,
        }
    }

    fn add(&mut self, columns: &[ColumnInfo]) -> Result<(), Stop> {
        if columns.len() != self.columns.len() {
            return Err(Stop::Proxy(ProxyError::Wrong(
                "the parts of this result have different numbers of columns".into(),
            )));
        }
        for (u, c) in self.columns.iter_mut().zip(columns) {
            if (u.column_type, u.charset, u.decimals) != (c.column_type, c.charset, c.decimals) {
                return Err(Stop::Proxy(ProxyError::Refused(format!(
                    "column {} has different types in the parts of this result (a UNION ALL of differently typed branches across partitions is not supported yet)",
                    u.name
                ))));
            }
            if c.length > u.length {
                u.length = c.length;
                self.changed = true;
            }
            if u.flags & NOT_NULL_FLAG != 0 && c.flags & NOT_NULL_FLAG == 0 {
                u.flags &= !NOT_NULL_FLAG;
                self.changed = true;
            }
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(Vec<Bytes>, Vec<ColumnInfo>), Stop> {
        if self.changed {
            for (d, c) in self.defs.iter_mut().zip(&self.columns) {
                let patched = hscale_wire::resultset::patch_column(d, c.length, c.flags)
                    .map_err(|e| Stop::Proxy(ProxyError::Wrong(e.to_string())))?;
                *d = patched.freeze();
            }
        }
        Ok((self.defs, self.columns))
    }
}

fn kind_of(c: &ColumnInfo) -> Kind {
    Kind::of(c.column_type, c.charset, c.flags)
}

fn unordered() -> Stop {
    Stop::Proxy(ProxyError::Refused(
        "ordering or grouping ENUM or SET values across partitions is not supported (they order by member position)".into(),
    ))
}

/// The grouping form of a value: equal forms for values the server groups
/// together (weights without trailing spaces under PAD SPACE).
fn group_form(out: &mut Vec<u8>, kind: Kind, v: Cmp<'_>) {
    let Some(text) = v.text else {
        out.push(0);
        return;
    };
    let bytes: &[u8] = match kind {
        Kind::Collated { pad_space } => {
            let mut w = v.weight.unwrap_or(text);
            if let (true, Some(space)) = (pad_space, v.space) {
                if !space.is_empty() {
                    while w.len() >= space.len() && w.ends_with(space) {
                        w = &w[..w.len() - space.len()];
                    }
                }
            }
            w
        }
        _ => text,
    };
    out.push(1);
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// An aggregate being combined.
#[derive(Debug, Clone)]
enum Acc {
    Key,
    Count(i128),
    Sum(Option<Decimal>),
    Best(Option<Row>),
    Avg(Option<Decimal>, i128),
    Bits(u64),
    Distinct(std::collections::HashSet<Vec<u8>>),
    /// GROUP_CONCAT so far, and the length limit.
    Concat(Option<Vec<u8>>, usize),
}

struct Group {
    /// The first partial row of the group (key values and weights).
    first: Row,
    accs: Vec<Acc>,
}

fn parse_int(v: Option<&[u8]>) -> Option<i128> {
    std::str::from_utf8(v?).ok()?.parse().ok()
}

fn bad_value(what: &str) -> Stop {
    Stop::Proxy(ProxyError::Refused(format!(
        "a partial {what} that cannot be combined exactly (floating-point values or numbers beyond 36 digits) across partitions"
    )))
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    pub(crate) async fn run_merge(&mut self, plan: MergePlan) -> Result<(), ProxyError> {
        if self.b.pinned.is_some() {
            return Err(ProxyError::Unsupported {
                what: "a statement over several partitions inside a transaction or with connection-bound state".into(),
            });
        }
        self.ship_setup = std::sync::Arc::new(Vec::new());
        if !plan.ship.is_empty() {
            match self.ship_statements(&plan.ship).await {
                Ok(s) => self.ship_setup = std::sync::Arc::new(s),
                Err(Stop::Server(e)) => return self.write_server_error(1, &e).await,
                Err(Stop::Proxy(ProxyError::ClientGone)) => return Err(ProxyError::ClientGone),
                Err(Stop::Proxy(e)) => {
                    write_error(&mut *self.client, 1, &e).await;
                    return Ok(());
                }
            }
        }
        // Parts still reading when this returns close their connections.
        let r = match &plan.mode {
            Mode::Sort { hidden } => self.merge_sorted(&plan, *hidden).await,
            Mode::Group(g) => self.merge_groups(&plan, g).await,
        };
        // Values that do not merge exactly are refused before anything is
        // sent: one server answers instead, with copies of the tables.
        if let (Err(Stop::Proxy(ProxyError::Refused(_))), Some(fallback)) = (&r, plan.fallback) {
            return Box::pin(self.run_merge(*fallback)).await;
        }
        match r {
            Ok(()) => Ok(()),
            Err(Stop::Server(e)) => self.write_server_error(1, &e).await,
            Err(Stop::Proxy(ProxyError::ClientGone)) => Err(ProxyError::ClientGone),
            Err(Stop::Proxy(e)) => {
                write_error(&mut *self.client, 1, &e).await;
                Ok(())
            }
        }
    }

    /// Send `sql` on a connection to `backend`, synced to the session,
    /// after the statements that set up shipped tables (such a connection
    /// is closed after use, which drops its temporary tables).
    async fn start_part(&mut self, target: &Target, sql: &str) -> Result<Part, Stop> {
        let mut conn = self.b.acquire(target.backend).await?;
        if let Some(err) = self.b.sync(&mut conn, false).await? {
            self.b.finish(conn, Outcome::default(), &Effects::default());
            return Err(Stop::Server(err));
        }
        let setup = self.ship_setup.clone();
        for statement in setup.iter() {
            conn.is_broken = true; // never reused: it holds temporary tables
            match conn
                .command(&BackendConn::payload_for_query(statement))
                .await
            {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(Stop::Server(e)),
                Err(e) => return Err(Stop::Proxy(e)),
            }
        }
        if let Err(e) = conn
            .stream
            .send_command(&BackendConn::payload_for_query(sql))
            .await
        {
            conn.is_broken = true;
            return Err(Stop::Proxy(ProxyError::BackendLost {
                backend: conn.backend.to_string(),
                reason: e.to_string(),
            }));
        }
        let running = self.b.running(&conn, target.backend);
        Ok(Part::started(conn, running))
    }

    /// Give a part's connection back once its result was read to the end.
    fn end_part(&mut self, mut part: Part) {
        part.running = None;
        if part.status.is_none() || part.conn.as_ref().is_some_and(|c| c.is_broken) {
            return; // dropped: closes the connection
        }
        let outcome = Outcome {
            status: part.status,
            ..Outcome::default()
        };
        if let Some(conn) = part.conn.take() {
            self.b.finish(conn, outcome, &Effects::default());
        }
    }

    /// The statements that create and fill the temporary tables of shipped
    /// tables on a part's connection: rows read from every source
    /// (bounded by `merge_max_rows`), inserted in batches.
    async fn ship_statements(&mut self, ships: &[Ship]) -> Result<Vec<String>, Stop> {
        let max_rows = self.b.ctx.config.proxy.ship_max_rows;
        let mut held = 0usize;
        let mut out = Vec::new();
        for ship in ships {
            let temp = crate::partition::qualified(&ship.db, &ship.temp);
            let ddl = {
                let mut c = self.b.acquire(ship.like.0).await?;
                let r = c
                    .query_rows(&format!(
                        "SHOW CREATE TABLE {}",
                        crate::partition::qualified(&ship.db, &ship.like.1)
                    ))
                    .await?;
                let r = r.map_err(Stop::Server)?;
                r.strings()
                    .first()
                    .and_then(|row| row.get(1).cloned().flatten())
                    .ok_or_else(|| {
                        Stop::Proxy(ProxyError::Wrong(
                            "SHOW CREATE TABLE returned nothing".into(),
                        ))
                    })?
            };
            let head = format!(
                "CREATE TABLE {}",
                crate::partition::quote_ident(&ship.like.1)
            );
            let body = ddl.strip_prefix(&head).ok_or_else(|| {
                Stop::Proxy(ProxyError::Wrong(format!(
                    "unexpected SHOW CREATE TABLE output for {}",
                    ship.like.1
                )))
            })?;
            out.push(format!("DROP TEMPORARY TABLE IF EXISTS {temp}"));
            out.push(format!("CREATE TEMPORARY TABLE {temp}{body}"));
            for (target, sql) in &ship.sources {
                // Read in the session's state (time zone, ...) with results
                // in the columns' own bytes; the connection is closed after.
                let mut c = self.b.acquire(target.backend).await?;
                if let Some(err) = self.b.sync(&mut c, false).await? {
                    c.is_broken = true;
                    return Err(Stop::Server(err));
                }
                c.is_broken = true;
                if let Ok(Err(e)) = c
                    .command(&BackendConn::payload_for_query(
                        "SET character_set_results = NULL",
                    ))
                    .await
                {
                    return Err(Stop::Server(e));
                }
                // Never read more than the bound allows.
                let cap = max_rows.saturating_sub(held) + 1;
                let columns = c
                    .query_stream(&format!("{sql} LIMIT {cap}"))
                    .await?
                    .map_err(Stop::Server)?;
                if let Some(c) = columns
                    .iter()
                    .find(|c| kind_of(c) == Kind::Float && c.column_type == 0x04)
                {
                    return Err(Stop::Proxy(ProxyError::Refused(format!(
                        "copying FLOAT column {} between servers would change its values",
                        c.name
                    ))));
                }
                let mut batcher = InsertBatcher::new(&temp, &columns);
                while let Some(row) = c.next_row(columns.len()).await? {
                    let row = row.map_err(Stop::Server)?;
                    held += 1;
                    if held > max_rows {
                        return Err(Stop::Proxy(ProxyError::ShipLimit { limit: max_rows }));
                    }
                    out.extend(batcher.push(&row));
                }
                out.extend(batcher.finish());
            }
        }
        Ok(out)
    }

    /// How many parts of this plan may run at once.
    fn concurrent_parts(&self, parts: &[(Target, String)]) -> bool {
        let mut per_backend = vec![0usize; self.b.ctx.config.backends.len()];
        for (t, _) in parts {
            per_backend[t.backend] += 1;
        }
        per_backend
            .iter()
            .enumerate()
            .all(|(b, n)| *n <= (self.b.ctx.pool(self.b.worker, b).cfg.max_connections / 2).max(1))
            && parts.len() <= 64
    }

    async fn write_header(&mut self, defs: &[Bytes]) -> Result<u8, Stop> {
        let mut seq = self
            .client
            .write_payload(1, &encode_column_count(defs.len()));
        for d in defs {
            seq = self.client.write_payload(seq, d);
        }
        if !self.is_eof_deprecated() {
            let st = self.b.status();
            seq = self.client.write_payload(seq, &encode_eof(0, st));
        }
        Ok(seq)
    }

    async fn write_row(&mut self, seq: u8, row: &[Option<Vec<u8>>]) -> Result<u8, Stop> {
        let cells: Vec<Option<&[u8]>> = row.iter().map(|c| c.as_deref()).collect();
        let seq = self.client.write_payload(seq, &encode_row_bytes(&cells));
        self.client
            .maybe_flush()
            .await
            .map_err(|_| Stop::Proxy(ProxyError::ClientGone))?;
        Ok(seq)
    }

    async fn write_end(&mut self, seq: u8) -> Result<(), Stop> {
        let st = self.b.status();
        if self.is_eof_deprecated() {
            let ok = OkPacket {
                status: st,
                ..OkPacket::default()
            };
            self.client.write_payload(seq, &encode_ok(0xfe, &ok, ""));
        } else {
            self.client.write_payload(seq, &encode_eof(0, st));
        }
        self.flush().await.map_err(Stop::Proxy)
    }

    /// ORDER BY / LIMIT: a k-way merge of sorted partition streams.
    async fn merge_sorted(&mut self, plan: &MergePlan, hidden: usize) -> Result<(), Stop> {
        let mut held: Vec<Part> = Vec::new();
        let max_rows = self.b.ctx.config.proxy.merge_max_rows;
        let streaming = self.concurrent_parts(&plan.parts);
        if !streaming {
            let per_part = plan.limit.map(|l| l.saturating_add(plan.offset) as usize);
            match per_part {
                Some(n) if n.saturating_mul(plan.parts.len()) <= max_rows => {}
                _ => {
                    return Err(Stop::Proxy(ProxyError::Refused(format!(
                        "ORDER BY over {} partitions needs more connections than a statement may hold at once; add LIMIT or raise the backends' max_connections",
                        plan.parts.len()
                    ))))
                }
            }
        }
        // Start every part (streaming) or read them one by one (buffered).
        let mut heads: Vec<Option<Row>> = Vec::new();
        let mut buffered: Vec<Row> = Vec::new();
        let mut defs: Option<(Vec<Bytes>, Vec<ColumnInfo>)> = None;
        if streaming {
            for (t, sql) in &plan.parts {
                held.push(self.start_part(t, sql).await?);
            }
            for p in held.iter_mut() {
                p.open().await?;
            }
            if let Some(first) = held.first() {
                let mut u = Unified::new(&first.defs, &first.columns);
                for p in &held[1..] {
                    u.add(&p.columns)?;
                }
                defs = Some(u.finish()?);
            }
            for p in held.iter_mut() {
                heads.push(p.row().await?);
            }
        } else {
            let mut unified: Option<Unified> = None;
            for (t, sql) in &plan.parts {
                let mut p = self.start_part(t, sql).await?;
                p.open().await?;
                match unified.as_mut() {
                    None => unified = Some(Unified::new(&p.defs, &p.columns)),
                    Some(u) => u.add(&p.columns)?,
                }
                while let Some(r) = p.row().await? {
                    buffered.push(r);
                }
                self.end_part(p);
            }
            if let Some(u) = unified {
                defs = Some(u.finish()?);
            }
        }
        let Some((defs, columns)) = defs else {
            return Err(Stop::Proxy(ProxyError::Wrong(
                "no partition answered".into(),
            )));
        };
        let visible = columns.len().saturating_sub(hidden);
        let base = visible;
        let mut keys = Vec::new();
        for k in &plan.order {
            let Some(c) = columns.get(base + k.col) else {
                return Err(Stop::Proxy(ProxyError::Wrong(
                    "a partition answered with too few columns".into(),
                )));
            };
            let kind = kind_of(c);
            if kind == Kind::Unordered {
                return Err(unordered());
            }
            keys.push((*k, kind));
        }
        let mut seq = self.write_header(&defs[..visible]).await?;
        let mut skip = plan.offset;
        let mut left = plan.limit.unwrap_or(u64::MAX);
        if streaming {
            while left > 0 {
                // The smallest head; ties go to the earlier partition.
                let mut best: Option<usize> = None;
                for (i, h) in heads.iter().enumerate() {
                    let Some(row) = h else { continue };
                    let better = match best.and_then(|b| heads[b].as_ref()) {
                        None => true,
                        Some(cur) => order_rows(row, cur, &keys, base) == Ordering::Less,
                    };
                    if better {
                        best = Some(i);
                    }
                }
                let Some(i) = best else { break };
                let next = held[i].row().await?;
                let row = std::mem::replace(&mut heads[i], next);
                let Some(row) = row else { break };
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                seq = self.write_row(seq, &row[..visible]).await?;
                left -= 1;
            }
            for mut p in held.drain(..) {
                p.drain().await?;
                self.end_part(p);
            }
        } else {
            buffered.sort_by(|a, b| order_rows(a, b, &keys, base));
            for row in buffered
                .iter()
                .skip(plan.offset as usize)
                .take(plan.limit.unwrap_or(u64::MAX) as usize)
            {
                seq = self.write_row(seq, &row[..visible]).await?;
            }
        }
        self.write_end(seq).await
    }

    /// Aggregates, GROUP BY, DISTINCT: combine partial groups.
    async fn merge_groups(&mut self, plan: &MergePlan, g: &GroupPlan) -> Result<(), Stop> {
        let max_rows = self.b.ctx.config.proxy.merge_max_rows;
        // The client's column definitions.
        let mut meta = self.start_part(&g.meta.0, &g.meta.1).await?;
        meta.open().await?;
        meta.drain().await?;
        let (out_defs, out_cols) = (meta.defs.clone(), meta.columns.clone());
        self.end_part(meta);
        if out_cols.len() != g.visible {
            return Err(Stop::Proxy(ProxyError::Wrong(format!(
                "the statement has {} columns, the merge computes {}",
                out_cols.len(),
                g.visible
            ))));
        }
        let mut groups: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut distinct_values = 0usize;
        let mut list: Vec<Group> = Vec::new();
        let mut key_kinds: Option<Vec<Kind>> = None;
        let mut part_cols: Vec<ColumnInfo> = Vec::new();
        // Parts run a few at a time, each read to its end.
        let window = if self.concurrent_parts(&plan.parts) {
            plan.parts.len()
        } else {
            1
        };
        let mut next = 0;
        while next < plan.parts.len() {
            let end = (next + window).min(plan.parts.len());
            let mut started = Vec::new();
            for (t, sql) in &plan.parts[next..end] {
                started.push(self.start_part(t, sql).await?);
            }
            next = end;
            for mut p in started.drain(..) {
                p.open().await?;
                if key_kinds.is_none() {
                    let mut kinds = Vec::new();
                    for k in &g.keys {
                        let Some(c) = p.columns.get(k.col) else {
                            return Err(Stop::Proxy(ProxyError::Wrong(
                                "a partition answered with too few columns".into(),
                            )));
                        };
                        let kind = kind_of(c);
                        if kind == Kind::Unordered {
                            return Err(unordered());
                        }
                        kinds.push(kind);
                    }
                    key_kinds = Some(kinds);
                    part_cols = p.columns.clone();
                }
                let kinds = key_kinds.clone().unwrap_or_default();
                loop {
                    let row = match p.row().await {
                        Ok(Some(r)) => r,
                        Ok(None) => break,
                        Err(e) => return Err(e),
                    };
                    let mut form = Vec::new();
                    for (k, kind) in g.keys.iter().zip(&kinds) {
                        group_form(&mut form, *kind, cmp_of(&row, k.col, k.weight));
                    }
                    let idx = match groups.get(&form) {
                        Some(i) => *i,
                        None => {
                            if list.len() >= max_rows {
                                return Err(Stop::Proxy(ProxyError::MergeLimit {
                                    limit: max_rows,
                                }));
                            }
                            list.push(Group {
                                first: row.clone(),
                                accs: g.outputs.iter().map(new_acc).collect(),
                            });
                            groups.insert(form, list.len() - 1);
                            list.len() - 1
                        }
                    };
                    let list_len = list.len();
                    let group = &mut list[idx];
                    for (acc, out) in group.accs.iter_mut().zip(&g.outputs) {
                        distinct_values += combine(acc, out, &row, &part_cols, &g.separators)?;
                        if list_len + distinct_values > max_rows {
                            return Err(Stop::Proxy(ProxyError::MergeLimit { limit: max_rows }));
                        }
                    }
                }
                self.end_part(p);
            }
        }
        // Aggregates without GROUP BY answer one row, even over no rows.
        if g.keys.is_empty() && list.is_empty() {
            list.push(Group {
                first: Vec::new(),
                accs: g.outputs.iter().map(new_acc).collect(),
            });
        }
        // Final rows: the client's columns, then the weights order keys use.
        // Columns of the values only HAVING reads, from the partial columns.
        let all_cols: Vec<ColumnInfo> = g
            .outputs
            .iter()
            .enumerate()
            .map(|(i, o)| match out_cols.get(i) {
                Some(c) => c.clone(),
                None => hidden_column(o, g, &part_cols),
            })
            .collect();
        // HAVING compares exact numbers: floating-point values compare
        // differently on the server (0.1 stored as a FLOAT is not 0.1).
        if let Some(h) = &g.having {
            let mut read = Vec::new();
            having_outputs(h, &mut read);
            if read
                .iter()
                .any(|i| all_cols.get(*i).is_some_and(|c| kind_of(c) == Kind::Float))
            {
                return Err(Stop::Proxy(ProxyError::Refused(
                    "HAVING on floating-point values across partitions".into(),
                )));
            }
        }
        let mut rows: Vec<Row> = Vec::with_capacity(list.len());
        let mut kept: Vec<usize> = Vec::with_capacity(list.len());
        for (gi, group) in list.iter().enumerate() {
            let mut out: Row = Vec::with_capacity(g.outputs.len() + 2 * plan.order.len());
            for ((acc, o), col) in group.accs.iter().zip(&g.outputs).zip(&all_cols) {
                out.push(finish(acc, o, g, &group.first, col)?);
            }
            if let Some(h) = &g.having {
                if eval(h, &out)?.is_none_or(|d| d.mantissa == 0) {
                    continue;
                }
            }
            rows.push(out);
            kept.push(gi);
        }
        let list: Vec<&Group> = kept.iter().map(|&i| &list[i]).collect();
        let mut keys = Vec::new();
        let mut extra: Vec<Option<(usize, usize)>> = Vec::new();
        for k in &plan.order {
            let Some(col) = all_cols.get(k.col) else {
                return Err(Stop::Proxy(ProxyError::Wrong(
                    "an order key past the columns".into(),
                )));
            };
            let kind = kind_of(col);
            if kind == Kind::Unordered {
                return Err(unordered());
            }
            // Weights of the output come from the group's first partial row
            // (keys) or from the chosen MIN/MAX row.
            let at = g.outputs.len() + 2 * extra.len();
            extra.push(k.weight);
            keys.push((
                OrderKey {
                    col: k.col,
                    weight: k.weight.map(|_| (at, at + 1)),
                    desc: k.desc,
                },
                kind,
            ));
        }
        if !extra.is_empty() {
            for (row, group) in rows.iter_mut().zip(&list) {
                for (k, w) in plan.order.iter().zip(&extra) {
                    let source: Option<&Row> = match g.outputs[k.col] {
                        Output::Key(_) => Some(&group.first),
                        _ => match &group.accs[k.col] {
                            Acc::Best(best) => best.as_ref(),
                            _ => None,
                        },
                    };
                    let cell = |i: usize| source.and_then(|r| r.get(i).cloned().flatten());
                    match w {
                        Some((a, b)) => {
                            row.push(cell(*a));
                            row.push(cell(*b));
                        }
                        None => {
                            row.push(None);
                            row.push(None);
                        }
                    }
                }
            }
            rows.sort_by(|a, b| order_rows(a, b, &keys, 0));
        } else if !keys.is_empty() {
            rows.sort_by(|a, b| order_rows(a, b, &keys, 0));
        }
        let mut seq = self.write_header(&out_defs).await?;
        let n = g.visible;
        for row in rows
            .iter()
            .skip(plan.offset as usize)
            .take(plan.limit.unwrap_or(u64::MAX) as usize)
        {
            seq = self.write_row(seq, &row[..n]).await?;
        }
        self.write_end(seq).await
    }
}

/// A column definition for a value the client does not see (HAVING).
fn hidden_column(o: &Output, g: &GroupPlan, part: &[ColumnInfo]) -> ColumnInfo {
    let integer = ColumnInfo {
        name: String::new(),
        charset: 63,
        column_type: 0x08,
        length: 21,
        flags: 0,
        decimals: 0,
    };
    let of = |c: usize| part.get(c).cloned().unwrap_or_else(|| integer.clone());
    match o {
        Output::Key(k) => of(g.keys[*k].col),
        Output::Sum(c) => of(*c),
        Output::Avg { sum, .. } => {
            let mut c = of(*sum);
            c.decimals = (c.decimals + 4).min(30);
            c.column_type = 0xf6;
            c
        }
        Output::Min(v) | Output::Max(v) => of(v.col),
        _ => integer,
    }
}

/// The outputs a HAVING condition reads.
fn having_outputs(h: &Having, out: &mut Vec<usize>) {
    match h {
        Having::Out(i) => out.push(*i),
        Having::Or(a, b) | Having::And(a, b) | Having::Cmp(_, a, b) | Having::Arith(_, a, b) => {
            having_outputs(a, out);
            having_outputs(b, out);
        }
        Having::Not(x) | Having::IsNull(x, _) | Having::Neg(x) => having_outputs(x, out),
        Having::Num(_) | Having::Null => {}
    }
}

/// A HAVING condition on a group's values: `Some(1)` true, `Some(0)`
/// false, `None` unknown (NULL).
fn eval(h: &Having, row: &Row) -> Result<Option<Decimal>, Stop> {
    let truth = |b: bool| Some(if b { Decimal::ONE } else { Decimal::ZERO });
    let not_numeric = || {
        Stop::Proxy(ProxyError::Refused(
            "HAVING across partitions compares numbers only".into(),
        ))
    };
    Ok(match h {
        Having::Num(t) => Some(Decimal::parse(t.as_bytes()).ok_or_else(not_numeric)?),
        Having::Null => None,
        Having::Out(i) => match row.get(*i).and_then(|c| c.as_deref()) {
            None => None,
            Some(v) => Some(Decimal::parse(v).ok_or_else(not_numeric)?),
        },
        Having::Neg(x) => eval(x, row)?.map(|d| Decimal {
            mantissa: -d.mantissa,
            scale: d.scale,
        }),
        Having::Arith(op, a, b) => match (eval(a, row)?, eval(b, row)?) {
            (Some(x), Some(y)) => {
                let r = match op {
                    ArithOp::Add => x.checked_add(y),
                    ArithOp::Sub => x.checked_add(Decimal {
                        mantissa: -y.mantissa,
                        scale: y.scale,
                    }),
                    ArithOp::Mul => x.checked_mul(y),
                };
                Some(r.ok_or_else(|| bad_value("HAVING value"))?)
            }
            _ => None,
        },
        Having::Cmp(op, a, b) => {
            let (x, y) = (eval(a, row)?, eval(b, row)?);
            match (op, x, y) {
                (CmpOp::NullSafeEq, x, y) => truth(
                    x == y || matches!((x, y), (Some(p), Some(q)) if p.cmp(&q) == Ordering::Equal),
                ),
                (_, Some(x), Some(y)) => {
                    let o = x.cmp(&y);
                    truth(match op {
                        CmpOp::Eq | CmpOp::NullSafeEq => o == Ordering::Equal,
                        CmpOp::Ne => o != Ordering::Equal,
                        CmpOp::Lt => o == Ordering::Less,
                        CmpOp::Le => o != Ordering::Greater,
                        CmpOp::Gt => o == Ordering::Greater,
                        CmpOp::Ge => o != Ordering::Less,
                    })
                }
                _ => None,
            }
        }
        Having::IsNull(x, negated) => {
            let is_null = match &**x {
                Having::Out(i) => row.get(*i).is_none_or(|c| c.is_none()),
                other => eval(other, row)?.is_none(),
            };
            truth(is_null != *negated)
        }
        Having::Not(x) => eval(x, row)?.map(|d| {
            if d.mantissa == 0 {
                Decimal::ONE
            } else {
                Decimal::ZERO
            }
        }),
        Having::And(a, b) => {
            let (x, y) = (eval(a, row)?, eval(b, row)?);
            let is_false = |v: &Option<Decimal>| v.is_some_and(|d| d.mantissa == 0);
            if is_false(&x) || is_false(&y) {
                truth(false)
            } else if x.is_none() || y.is_none() {
                None
            } else {
                truth(true)
            }
        }
        Having::Or(a, b) => {
            let (x, y) = (eval(a, row)?, eval(b, row)?);
            let is_true = |v: &Option<Decimal>| v.is_some_and(|d| d.mantissa != 0);
            if is_true(&x) || is_true(&y) {
                truth(true)
            } else if x.is_none() || y.is_none() {
                None
            } else {
                truth(false)
            }
        }
    })
}

fn new_acc(o: &Output) -> Acc {
    match o {
        Output::Key(_) => Acc::Key,
        Output::Count(_) => Acc::Count(0),
        Output::Sum(_) => Acc::Sum(None),
        Output::Min(_) | Output::Max(_) => Acc::Best(None),
        Output::Avg { .. } => Acc::Avg(None, 0),
        Output::BitAnd(_) => Acc::Bits(u64::MAX),
        Output::BitOr(_) | Output::BitXor(_) => Acc::Bits(0),
        Output::CountDistinct(_) => Acc::Distinct(Default::default()),
        Output::GroupConcat { .. } => Acc::Concat(None, usize::MAX),
    }
}

fn decimal_cell(
    row: &Row,
    col: usize,
    cols: &[ColumnInfo],
    what: &str,
) -> Result<Option<Decimal>, Stop> {
    let Some(v) = row.get(col).and_then(|c| c.as_deref()) else {
        return Ok(None);
    };
    if cols.get(col).is_some_and(|c| kind_of(c) == Kind::Float) {
        return Err(bad_value(what));
    }
    Decimal::parse(v).map(Some).ok_or_else(|| bad_value(what))
}

/// Fold one partial row into an aggregate.
/// Returns how many values it started holding (COUNT(DISTINCT)).
fn combine(
    acc: &mut Acc,
    out: &Output,
    row: &Row,
    cols: &[ColumnInfo],
    separators: &[String],
) -> Result<usize, Stop> {
    let cell = |i: usize| row.get(i).and_then(|c| c.as_deref());
    match (acc, out) {
        (Acc::Key, _) => {}
        (Acc::Count(n), Output::Count(c)) => {
            if let Some(v) = cell(*c) {
                *n += parse_int(Some(v)).ok_or_else(|| bad_value("COUNT"))?;
            }
        }
        (Acc::Sum(s), Output::Sum(c)) => {
            if let Some(d) = decimal_cell(row, *c, cols, "SUM")? {
                *s = Some(match s {
                    None => d,
                    Some(prev) => prev.checked_add(d).ok_or_else(|| bad_value("SUM"))?,
                });
            }
        }
        (Acc::Avg(s, n), Output::Avg { sum, count }) => {
            if let Some(d) = decimal_cell(row, *sum, cols, "AVG")? {
                *s = Some(match s {
                    None => d,
                    Some(prev) => prev.checked_add(d).ok_or_else(|| bad_value("AVG"))?,
                });
            }
            if let Some(v) = cell(*count) {
                *n += parse_int(Some(v)).ok_or_else(|| bad_value("AVG"))?;
            }
        }
        (Acc::Best(best), Output::Min(v) | Output::Max(v)) => {
            let Some(col) = cols.get(v.col) else {
                return Ok(0);
            };
            let kind = kind_of(col);
            if kind == Kind::Unordered {
                return Err(unordered());
            }
            if cell(v.col).is_none() {
                return Ok(0);
            }
            let replace = match best {
                None => true,
                Some(b) => {
                    let o = compare(
                        kind,
                        &cmp_of(row, v.col, v.weight),
                        &cmp_of(b, v.col, v.weight),
                    );
                    match out {
                        Output::Min(_) => o == Ordering::Less,
                        _ => o == Ordering::Greater,
                    }
                }
            };
            if replace {
                *best = Some(row.clone());
            }
        }
        (Acc::Concat(text, limit), Output::GroupConcat { col, sep, max_len }) => {
            if let Some(l) = parse_int(cell(*max_len)) {
                *limit = usize::try_from(l).unwrap_or(usize::MAX);
            }
            if let Some(part) = cell(*col) {
                match text {
                    None => *text = Some(part.to_vec()),
                    Some(t) => {
                        if let Some(s) = separators.get(*sep) {
                            t.extend_from_slice(s.as_bytes());
                        }
                        t.extend_from_slice(part);
                    }
                }
            }
        }
        (Acc::Distinct(set), Output::CountDistinct(v)) => {
            let Some(col) = cols.get(v.col) else {
                return Ok(0);
            };
            let value = cmp_of(row, v.col, v.weight);
            if value.text.is_some() {
                let mut form = Vec::new();
                group_form(&mut form, kind_of(col), value);
                return Ok(usize::from(set.insert(form)));
            }
        }
        (Acc::Bits(b), Output::BitAnd(c) | Output::BitOr(c) | Output::BitXor(c)) => {
            let v: u64 = match cell(*c) {
                None => match out {
                    Output::BitAnd(_) => u64::MAX,
                    _ => 0,
                },
                Some(v) => std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| bad_value("BIT_AND, BIT_OR or BIT_XOR"))?,
            };
            *b = match out {
                Output::BitAnd(_) => *b & v,
                Output::BitOr(_) => *b | v,
                _ => *b ^ v,
            };
        }
        _ => {}
    }
    Ok(0)
}

/// The client's value of one output of a finished group.
fn finish(
    acc: &Acc,
    out: &Output,
    g: &GroupPlan,
    first: &Row,
    col: &ColumnInfo,
) -> Result<Option<Vec<u8>>, Stop> {
    let scale = u32::from(col.decimals);
    let decimal = |d: &Decimal| -> Result<Option<Vec<u8>>, Stop> {
        if col.decimals >= 31 || kind_of(col) == Kind::Float {
            return Err(bad_value("SUM or AVG"));
        }
        d.to_text(scale)
            .map(|s| Some(s.into_bytes()))
            .ok_or_else(|| bad_value("SUM or AVG"))
    };
    Ok(match (acc, out) {
        (Acc::Key, Output::Key(k)) => {
            let Val { col, .. } = g.keys[*k];
            first.get(col).cloned().flatten()
        }
        (Acc::Count(n), _) => Some(n.to_string().into_bytes()),
        (Acc::Sum(Some(d)), _) => decimal(d)?,
        (Acc::Sum(None), _) => None,
        (Acc::Avg(s, n), _) => match (s, *n) {
            (Some(d), n) if n > 0 => {
                let q = d.div_round(n, scale).ok_or_else(|| bad_value("AVG"))?;
                decimal(&q)?
            }
            _ => None,
        },
        (Acc::Best(best), Output::Min(v) | Output::Max(v)) => {
            best.as_ref().and_then(|r| r.get(v.col).cloned().flatten())
        }
        (Acc::Bits(b), _) => Some(b.to_string().into_bytes()),
        (Acc::Distinct(set), _) => Some(set.len().to_string().into_bytes()),
        (Acc::Concat(text, limit), _) => text.as_ref().map(|t| {
            // Cut at the limit, as the server does, on a character boundary.
            let mut end = t.len().min(*limit);
            while end > 0 && end < t.len() && t[end] & 0xc0 == 0x80 {
                end -= 1;
            }
            t[..end].to_vec()
        }),
        _ => None,
    })
}
