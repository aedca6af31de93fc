//! One partition's part of a merge: its statement's answer read row by
//! row on its own connection (`Part`), closed if dropped before its end.

use bytes::Bytes;
use hscale_wire::response::{decode_eof, is_eof, ErrPacket};
use hscale_wire::resultset::{decode_row, ColumnInfo};

use super::{Row, Stop};
use crate::backend::PooledConn;
use crate::error::ProxyError;
use crate::exec::bindings::Running;

/// One partition's result, read row by row. A part dropped before its
/// result was read to the end closes its connection (a connection with an
/// unread response must never return to the pool).
pub(super) struct Part {
    pub(super) conn: Option<PooledConn>,
    /// Registered for KILL QUERY while the part runs.
    pub(super) running: Option<Running>,
    pub(super) defs: Vec<Bytes>,
    pub(super) columns: Vec<ColumnInfo>,
    pub(super) status: Option<u16>,
    /// The part's answer ended with an error packet: read to its end, the
    /// connection serves again.
    pub(super) is_err: bool,
    /// The warning count of the part's terminator.
    pub(super) warnings: u16,
    /// The partitions' statements it joins with UNION ALL
    /// (`conditions::union_branches`).
    pub(super) branches: u32,
    /// Drops the temporary tables of shipped tables from a transaction's
    /// branch once the part's rows were read (`ship.rs`).
    pub(super) cleanup: Option<String>,
    /// Its connection holds temporary copies of shipped tables and is
    /// closed after use (marked broken for that, not because it failed).
    pub(super) holds_copies: bool,
    /// The statement it runs, EXPLAINed on its connection when its
    /// conditions need it (`Bindings::measure_part`); `None` for the
    /// `LIMIT 0` of the column definitions.
    pub(super) fragment: Option<String>,
}

impl Drop for Part {
    fn drop(&mut self) {
        if let Some(c) = self.conn.as_mut() {
            c.is_broken = true;
        }
    }
}

impl Part {
    pub(super) fn started(conn: PooledConn, running: Running) -> Part {
        Part {
            conn: Some(conn),
            running: Some(running),
            defs: Vec::new(),
            columns: Vec::new(),
            status: None,
            is_err: false,
            warnings: 0,
            branches: 1,
            cleanup: None,
            holds_copies: false,
            fragment: None,
        }
    }

    pub(super) fn conn(&mut self) -> Result<&mut PooledConn, Stop> {
        self.conn
            .as_mut()
            .ok_or_else(|| Stop::Proxy(ProxyError::Wrong("a finished part was read".into())))
    }

    pub(super) fn lost(&mut self, e: impl std::fmt::Display) -> Stop {
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

    pub(super) async fn packet(&mut self) -> Result<hscale_wire::Packet, Stop> {
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
    pub(super) async fn open(&mut self) -> Result<(), Stop> {
        let part = self;
        let first = part.packet().await?;
        match first.first() {
            Some(0xff) => {
                let e = ErrPacket::decode(&first.payload).map_err(|e| part.lost(e))?;
                part.is_err = true;
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
    pub(super) async fn row(&mut self) -> Result<Option<Row>, Stop> {
        if self.is_done() {
            return Ok(None);
        }
        let p = self.packet().await?;
        if is_eof(&p.payload) {
            let (warnings, st) = decode_eof(&p.payload).map_err(|e| self.lost(e))?;
            self.status = Some(st);
            self.warnings = warnings;
            return Ok(None);
        }
        if p.first() == Some(0xff) {
            let e = ErrPacket::decode(&p.payload).map_err(|e| self.lost(e))?;
            self.is_err = true;
            return Err(Stop::Server(e));
        }
        decode_row(&p.payload, self.columns.len())
            .map(Some)
            .map_err(|e| self.lost(e))
    }

    /// Whether the part's answer was read to its end (its EOF or error).
    pub(super) fn is_done(&self) -> bool {
        self.status.is_some() || self.is_err
    }

    /// Read what is left, so the connection can serve again.
    pub(super) async fn drain(&mut self) -> Result<(), Stop> {
        while self.row().await?.is_some() {}
        Ok(())
    }
}
