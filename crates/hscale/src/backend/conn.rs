//! One authenticated connection to a backend server, with the session state
//! it currently holds (database, SET variables, multi-statement option,
//! last insert id) and the statements prepared on it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use hscale_wire::auth::{self, CACHING_SHA2, NATIVE_PASSWORD};
use hscale_wire::charset::BACKEND_COLLATION;
use hscale_wire::consts::{cap, com};
use hscale_wire::handshake::{decode_auth_switch, HandshakeResponse, InitialHandshake};
use hscale_wire::response::{is_eof, ErrPacket, OkPacket};
use hscale_wire::resultset::ColumnInfo;
use hscale_wire::stmt::PrepareOk;
use hscale_wire::{PacketStream, WireError};
use tokio::net::TcpStream;

use crate::backend::state::SessionVars;
use crate::backend::stream::{BackendStream, BackendWatch};
use crate::backend::tls::BackendTls;
use crate::config::BackendConfig;
use crate::error::ProxyError;

mod query;
pub use query::server_error;
mod statements;

/// Capabilities the proxy asks for on backend connections. No
/// `CLIENT_DEPRECATE_EOF`: classic EOF packets carry everything, and the
/// forwarder converts them for clients that negotiated the new form.
const BACKEND_CAPS: u32 = cap::LONG_PASSWORD
    | cap::LONG_FLAG
    | cap::PROTOCOL_41
    | cap::TRANSACTIONS
    | cap::SECURE_CONNECTION
    | cap::MULTI_STATEMENTS
    | cap::MULTI_RESULTS
    | cap::PS_MULTI_RESULTS
    | cap::PLUGIN_AUTH
    | cap::PLUGIN_AUTH_LENENC_CLIENT_DATA
    | cap::LOCAL_FILES;

/// Column definitions as the server sent them, and text rows.
pub type RawResult = (Vec<Bytes>, Vec<Vec<Option<Vec<u8>>>>);

/// A whole text result read by the proxy for itself.
#[derive(Debug, Clone, Default)]
pub struct TextResult {
    pub columns: Vec<ColumnInfo>,
    pub rows: Vec<Vec<Option<Vec<u8>>>>,
}

impl TextResult {
    /// Rows as strings (lossy), for small metadata results.
    pub fn strings(&self) -> Vec<Vec<Option<String>>> {
        self.rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| v.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()))
                    .collect()
            })
            .collect()
    }
}

/// A statement prepared on this connection.
#[derive(Debug, Clone, Copy)]
pub struct BackendStatement {
    pub id: u32,
    pub prepare: PrepareOk,
    last_used: u64,
}

pub struct BackendConn {
    pub stream: PacketStream<BackendStream>,
    /// The backend's name in the config.
    pub backend: Arc<str>,
    /// The server's id for this connection (for KILL and logs).
    pub thread_id: u32,
    pub server_version: String,
    /// Connected with `CLIENT_FOUND_ROWS`.
    pub is_found_rows: bool,
    /// Set when the connection can no longer be trusted; it is then closed
    /// instead of returning to the pool.
    pub is_broken: bool,
    /// An XA branch was started here and its end (XA COMMIT or XA
    /// ROLLBACK) not confirmed: the pool closes such a connection instead
    /// of keeping or resetting it (`exec/txn/mod.rs` sets it, `txn/commit.rs`
    /// clears it).
    pub is_xa_branch: bool,
    /// `is_broken` before a streamed read began (`query_stream`): restored
    /// when the read ends, so a caller's mark survives the read.
    was_broken: bool,
    pub db: Option<String>,
    pub vars: Arc<SessionVars>,
    pub is_multi_statements: bool,
    /// The server's LAST_INSERT_ID() on this connection, as far as the
    /// proxy knows; [`UNKNOWN_INSERT_ID`] when it may have changed.
    pub last_insert_id: u64,
    /// `character_set_results = NULL` was set on this connection (row
    /// copies, `partition/copy.rs`): results come as the columns' bytes.
    pub is_results_raw: bool,
    /// The dictionary version in the connection's
    /// `@hscale_dictionary_version` (0: unset), which global tables' fence
    /// triggers check (`Bindings::sync`).
    pub marked_version: u64,
    pub last_used: Instant,
    /// `BackendWatch::defaults` when this connection's session variables
    /// were last taken from the server's globals (connect or reset).
    pub defaults: u64,
    /// `BackendWatch::address_generation` when it was opened: one opened
    /// to an address the backend no longer has is closed at checkout.
    pub address_generation: u64,
    scramble: [u8; 20],
    statements: HashMap<Arc<[u8]>, BackendStatement>,
    statement_tick: u64,
}

/// `BackendConn::last_insert_id` when the server's value is not known: no
/// session's value, so the next statement that reads it syncs it.
pub const UNKNOWN_INSERT_ID: u64 = u64::MAX;

fn lost(backend: &str, e: impl std::fmt::Display) -> ProxyError {
    ProxyError::BackendLost {
        backend: backend.to_string(),
        reason: e.to_string(),
    }
}

impl BackendConn {
    /// Connect and authenticate. Reads on the connection then follow
    /// `watch` (read timeout, frozen backend); a connect that times out
    /// marks the backend frozen.
    pub async fn connect(
        cfg: &BackendConfig,
        tls: Option<&BackendTls>,
        is_found_rows: bool,
        timeout: Duration,
        watch: &Arc<BackendWatch>,
    ) -> Result<BackendConn, ProxyError> {
        let fail = |reason: String| ProxyError::BackendConnect {
            backend: cfg.name.clone(),
            address: cfg.address.clone(),
            reason,
        };
        let fut = Self::connect_inner(cfg, tls, is_found_rows, watch);
        match tokio::time::timeout(timeout, fut).await {
            Ok(Ok(mut c)) => {
                c.stream.get_mut().watch();
                Ok(c)
            }
            Ok(Err(reason)) => Err(fail(reason)),
            Err(_) => {
                if watch.set_frozen(true) {
                    tracing::warn!(backend = %cfg.name, "backend is frozen: no handshake within the connect timeout");
                }
                Err(fail(format!("timed out after {} ms", timeout.as_millis())))
            }
        }
    }

    async fn connect_inner(
        cfg: &BackendConfig,
        tls: Option<&BackendTls>,
        is_found_rows: bool,
        watch: &Arc<BackendWatch>,
    ) -> Result<BackendConn, String> {
        let tcp = TcpStream::connect(&cfg.address)
            .await
            .map_err(|e| e.to_string())?;
        let _ = tcp.set_nodelay(true);
        let mut stream = PacketStream::new(BackendStream::new(tcp, watch.clone()));
        let first = stream.read_packet().await.map_err(|e| e.to_string())?;
        if first.first() == Some(0xff) {
            let e = ErrPacket::decode(&first.payload).map_err(|e| e.to_string())?;
            return Err(format!("{} ({})", e.message, e.code));
        }
        let hs = InitialHandshake::decode(&first.payload).map_err(|e| e.to_string())?;
        let mut caps = BACKEND_CAPS & (hs.capabilities | cap::LONG_PASSWORD);
        if is_found_rows {
            caps |= cap::FOUND_ROWS;
        }
        let mut seq = first.seq.wrapping_add(1);
        if let Some(tls) = tls {
            if hs.capabilities & cap::SSL == 0 {
                return Err(
                    "tls = true, but the server does not offer TLS (no ssl_cert/ssl_key?)".into(),
                );
            }
            caps |= cap::SSL;
            // The SSLRequest: the handshake response's first 32 bytes.
            let mut req = Vec::with_capacity(hscale_wire::handshake::SSL_REQUEST_LEN);
            req.extend_from_slice(&caps.to_le_bytes());
            req.extend_from_slice(&(1u32 << 30).to_le_bytes());
            req.push(BACKEND_COLLATION);
            req.resize(hscale_wire::handshake::SSL_REQUEST_LEN, 0);
            stream.write_payload(seq, &req);
            stream.flush().await.map_err(|e| e.to_string())?;
            seq = seq.wrapping_add(1);
            let plain = stream.into_inner();
            let upgraded = plain
                .upgrade(tls)
                .await
                .map_err(|e| format!("TLS handshake: {e}"))?;
            stream = PacketStream::new(upgraded);
        }
        let plugin = if hs.auth_plugin == CACHING_SHA2 {
            CACHING_SHA2
        } else {
            NATIVE_PASSWORD
        };
        let resp = HandshakeResponse {
            capabilities: caps,
            max_packet: 1 << 30,
            collation: BACKEND_COLLATION,
            user: cfg.user.clone(),
            auth_response: scramble_for(plugin, cfg.password.as_bytes(), &hs.scramble),
            database: None,
            auth_plugin: Some(plugin.to_string()),
        };
        stream.write_payload(seq, &resp.encode());
        stream.flush().await.map_err(|e| e.to_string())?;
        authenticate(&mut stream, cfg.password.as_bytes(), plugin, hs.scramble)
            .await
            .map_err(|e| e.to_string())?;
        Ok(BackendConn {
            stream,
            backend: Arc::from(cfg.name.as_str()),
            thread_id: hs.connection_id,
            server_version: hs.server_version,
            is_found_rows,
            is_broken: false,
            is_xa_branch: false,
            was_broken: false,
            db: None,
            vars: Arc::default(),
            is_multi_statements: true,
            last_insert_id: 0,
            is_results_raw: false,
            marked_version: 0,
            last_used: Instant::now(),
            defaults: 0,
            address_generation: 0,
            scramble: hs.scramble,
            statements: HashMap::new(),
            statement_tick: 0,
        })
    }

    /// Cheap liveness check before handing out an idle connection: a dead
    /// peer shows as EOF, and a server going down may have sent an error.
    pub fn is_alive_quick(&self) -> bool {
        self.stream.get_ref().is_alive_quick()
    }

    /// After an OK the proxy read itself (its own statements: a journal
    /// row's AUTO_INCREMENT id, ...): an id in it means the server's
    /// LAST_INSERT_ID() here may have changed, to that id or not (an
    /// explicit AUTO_INCREMENT value is reported but does not change it).
    /// Unknown, so the next session that reads it here sets its own
    /// first (`Bindings::sync`); a caller that knows the value sets it
    /// after this.
    fn note_insert_id(&mut self, id: u64) {
        if id != 0 {
            self.last_insert_id = UNKNOWN_INSERT_ID;
        }
    }

    /// Send a command and read a simple response: OK, EOF or ERR; result
    /// sets are read and discarded. `Ok(Err(..))` is the server's error.
    pub async fn command(
        &mut self,
        payload: &[u8],
    ) -> Result<Result<OkPacket, ErrPacket>, ProxyError> {
        let r = self.command_inner(payload).await;
        if r.is_err() {
            self.is_broken = true;
        }
        r
    }

    async fn command_inner(
        &mut self,
        payload: &[u8],
    ) -> Result<Result<OkPacket, ErrPacket>, ProxyError> {
        let name = self.backend.clone();
        self.stream
            .send_command(payload)
            .await
            .map_err(|e| lost(&name, e))?;
        self.read_response_inner().await
    }

    /// Send several queries in one write, without waiting for their
    /// replies (pipelined): read them after with [`Self::read_response`],
    /// one per query, in order. A server runs them one after the other,
    /// as if each had been sent after the previous reply.
    pub async fn send_queries(&mut self, sqls: &[String]) -> Result<(), ProxyError> {
        for sql in sqls {
            self.stream.queue_command(&Self::payload_for_query(sql));
        }
        if let Err(e) = self.stream.flush().await {
            self.is_broken = true;
            return Err(lost(&self.backend, e));
        }
        Ok(())
    }

    /// The OK or ERR answering a command already sent (see `command`).
    pub async fn read_response(&mut self) -> Result<Result<OkPacket, ErrPacket>, ProxyError> {
        let r = self.read_response_inner().await;
        if r.is_err() {
            self.is_broken = true;
        }
        r
    }

    /// The answer of one statement of a multi-statement query: exactly one
    /// OK or ERR packet (after an ERR the server runs nothing more of the
    /// query). Anything else is a protocol error.
    pub async fn read_one_reply(&mut self) -> Result<Result<OkPacket, ErrPacket>, ProxyError> {
        let r = async {
            let p = self.read().await?;
            let proto = |reason: String| ProxyError::BackendProtocol {
                backend: self.backend.to_string(),
                reason,
            };
            match p.first() {
                Some(0x00) => Ok(Ok(
                    OkPacket::decode(&p.payload).map_err(|e| proto(e.to_string()))?
                )),
                Some(0xff) => Ok(Err(
                    ErrPacket::decode(&p.payload).map_err(|e| proto(e.to_string()))?
                )),
                _ => Err(proto(
                    "expected the OK of a statement that opens a transaction".into(),
                )),
            }
        }
        .await;
        if r.is_err() {
            self.is_broken = true;
        }
        r
    }

    async fn read_response_inner(&mut self) -> Result<Result<OkPacket, ErrPacket>, ProxyError> {
        let name = self.backend.clone();
        loop {
            let p = self.read().await?;
            let proto = |e: WireError| ProxyError::BackendProtocol {
                backend: name.to_string(),
                reason: e.to_string(),
            };
            match p.first() {
                Some(0x00) => {
                    let ok = OkPacket::decode(&p.payload).map_err(proto)?;
                    self.note_insert_id(ok.last_insert_id);
                    if ok.status & hscale_wire::consts::status::MORE_RESULTS_EXISTS == 0 {
                        return Ok(Ok(ok));
                    }
                }
                Some(0xff) => return Ok(Err(ErrPacket::decode(&p.payload).map_err(proto)?)),
                Some(0xfe) if is_eof(&p.payload) => {
                    let (warnings, status) =
                        hscale_wire::response::decode_eof(&p.payload).map_err(proto)?;
                    return Ok(Ok(OkPacket {
                        status,
                        warnings,
                        ..OkPacket::default()
                    }));
                }
                _ => {
                    // A result set: skip column definitions and rows.
                    let more = self.drain_result_set().await?;
                    if !more {
                        return Ok(Ok(OkPacket::default()));
                    }
                }
            }
        }
    }

    async fn read(&mut self) -> Result<hscale_wire::Packet, ProxyError> {
        let name = &self.backend;
        self.stream.read_packet().await.map_err(|e| lost(name, e))
    }

    /// After a column-count packet: skip to the end of the result set.
    /// Returns whether more results follow.
    async fn drain_result_set(&mut self) -> Result<bool, ProxyError> {
        let mut eofs = 0;
        loop {
            let p = self.read().await?;
            if p.first() == Some(0xff) {
                return Ok(false);
            }
            if is_eof(&p.payload) {
                eofs += 1;
                if eofs == 2 {
                    let (_, status) =
                        hscale_wire::response::decode_eof(&p.payload).unwrap_or((0, 0));
                    return Ok(status & hscale_wire::consts::status::MORE_RESULTS_EXISTS != 0);
                }
            }
        }
    }

    /// Give the connection the character set of its handshake again
    /// (utf8mb4) when a session left another on it (a pooled connection
    /// keeps a session's `SET NAMES latin1` until the next session's
    /// sync): the proxy's own queries read and write UTF-8 text, and a
    /// dictionary read in latin1 would route by mangled partition values.
    pub async fn ensure_utf8(&mut self) -> Result<(), ProxyError> {
        let Some(vars) = self.vars.without_charset() else {
            return Ok(());
        };
        let sql = "SET NAMES utf8mb4 COLLATE utf8mb4_general_ci";
        if let Err(err) = self.command(&Self::payload_for_query(sql)).await? {
            self.is_broken = true;
            return Err(ProxyError::Backend {
                backend: self.backend.to_string(),
                during: format!("hscale: {sql}"),
                err,
            });
        }
        self.vars = Arc::new(vars);
        Ok(())
    }

    /// Give every session variable a client's session left on this
    /// connection its global default again: a pooled connection keeps a
    /// session's SET items until the next session's sync, and the proxy's
    /// own statements are written for the server's defaults (under a
    /// session's ANSI_QUOTES `SHOW CREATE TABLE` names tables in double
    /// quotes, under NO_BACKSLASH_ESCAPES the proxy's quoted strings keep
    /// their escapes, in its time zone TIMESTAMPs read as other instants).
    /// Nothing to send when no session left any (`Pool::get`,
    /// `Pool::get_own`).
    pub async fn own_session(&mut self) -> Result<(), ProxyError> {
        if self.vars.is_empty() {
            return Ok(());
        }
        for sql in SessionVars::default().sync_sql(&self.vars) {
            if let Err(err) = self.command(&Self::payload_for_query(&sql)).await? {
                self.is_broken = true;
                return Err(ProxyError::Backend {
                    backend: self.backend.to_string(),
                    during: format!("hscale: {sql}"),
                    err,
                });
            }
        }
        self.vars = Arc::default();
        Ok(())
    }

    /// A packet from this backend that does not decode.
    pub fn protocol_error(&self, e: WireError) -> ProxyError {
        ProxyError::BackendProtocol {
            backend: self.backend.to_string(),
            reason: e.to_string(),
        }
    }

    pub async fn ping(&mut self) -> Result<(), ProxyError> {
        match self.command(&[com::PING]).await? {
            Ok(_) => Ok(()),
            Err(e) => Err(lost(&self.backend, e.message)),
        }
    }

    /// Bring the connection back to a fresh session: `COM_CHANGE_USER`
    /// clears everything, the current database included.
    pub async fn change_user(&mut self, cfg: &BackendConfig) -> Result<(), ProxyError> {
        let plugin = NATIVE_PASSWORD;
        let mut b = BytesMut::with_capacity(64);
        b.put_u8(com::CHANGE_USER);
        b.put_slice(cfg.user.as_bytes());
        b.put_u8(0);
        let auth = scramble_for(plugin, cfg.password.as_bytes(), &self.scramble);
        b.put_u8(auth.len() as u8);
        b.put_slice(&auth);
        b.put_u8(0); // no database
        b.put_u16_le(BACKEND_COLLATION as u16);
        b.put_slice(plugin.as_bytes());
        b.put_u8(0);
        let name = self.backend.clone();
        let r = async {
            self.stream
                .send_command(&b)
                .await
                .map_err(|e| e.to_string())?;
            authenticate(
                &mut self.stream,
                cfg.password.as_bytes(),
                plugin,
                self.scramble,
            )
            .await
        }
        .await;
        if let Err(e) = r {
            self.is_broken = true;
            return Err(lost(&name, e));
        }
        // The server keeps the client's options (COM_SET_OPTION's
        // multi-statements) across COM_CHANGE_USER: `is_multi_statements`
        // stays as it was. Session variables start again from the globals
        // and the character set from the collation sent above.
        self.db = None;
        self.vars = Arc::default();
        self.last_insert_id = 0;
        self.is_results_raw = false;
        self.marked_version = 0;
        self.statements.clear();
        Ok(())
    }

    /// `COM_RESET_CONNECTION`: rolls back, drops temporary tables, releases
    /// locks, clears user variables and prepared statements; keeps the
    /// database and the multi-statements option, and gives back the
    /// character set of the handshake (utf8mb4_general_ci).
    pub async fn reset(&mut self) -> Result<(), ProxyError> {
        match self.command(&[com::RESET_CONNECTION]).await? {
            Ok(_) => {
                self.vars = Arc::default();
                self.last_insert_id = 0;
                self.is_results_raw = false;
                self.marked_version = 0;
                self.statements.clear();
                Ok(())
            }
            Err(e) => {
                self.is_broken = true;
                Err(lost(&self.backend, e.message))
            }
        }
    }

    /// Send a packet that has no response (COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE).
    pub async fn send_no_response(&mut self, payload: &[u8]) -> Result<(), ProxyError> {
        if let Err(e) = self.stream.send_command(payload).await {
            self.is_broken = true;
            return Err(lost(&self.backend, e));
        }
        Ok(())
    }

    pub fn payload_for_query(sql: &str) -> Bytes {
        let mut b = BytesMut::with_capacity(1 + sql.len());
        b.put_u8(com::QUERY);
        b.put_slice(sql.as_bytes());
        b.freeze()
    }
}

fn scramble_for(plugin: &str, password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if plugin == CACHING_SHA2 {
        auth::sha2_scramble(password, scramble)
    } else {
        auth::native_scramble(password, scramble)
    }
}

/// The rest of the authentication exchange after the handshake response (or
/// COM_CHANGE_USER): auth switches, caching_sha2 fast and full auth.
async fn authenticate(
    stream: &mut PacketStream<BackendStream>,
    password: &[u8],
    mut plugin: &str,
    mut scramble: [u8; 20],
) -> Result<(), String> {
    loop {
        let p = stream.read_packet().await.map_err(|e| e.to_string())?;
        let next = p.seq.wrapping_add(1);
        match p.first() {
            Some(0x00) => return Ok(()),
            Some(0xff) => {
                let e = ErrPacket::decode(&p.payload).map_err(|e| e.to_string())?;
                return Err(format!("{} ({})", e.message, e.code));
            }
            Some(0xfe) => {
                let (new_plugin, data) =
                    decode_auth_switch(&p.payload).map_err(|e| e.to_string())?;
                plugin = match new_plugin.as_str() {
                    NATIVE_PASSWORD => NATIVE_PASSWORD,
                    CACHING_SHA2 => CACHING_SHA2,
                    other => return Err(format!("unsupported authentication plugin {other:?}")),
                };
                if data.len() >= 20 {
                    scramble.copy_from_slice(&data[..20]);
                }
                stream.write_payload(next, &scramble_for(plugin, password, &scramble));
                stream.flush().await.map_err(|e| e.to_string())?;
            }
            Some(0x01) if plugin == CACHING_SHA2 => match p.payload.get(1) {
                Some(3) => {} // fast auth succeeded; OK follows
                Some(4) => {
                    // Full authentication without TLS: ask for the RSA key.
                    stream.write_payload(next, &[2]);
                    stream.flush().await.map_err(|e| e.to_string())?;
                    let key = stream.read_packet().await.map_err(|e| e.to_string())?;
                    let pem = key.payload.get(1..).unwrap_or_default();
                    let enc = auth::sha2_rsa_encrypt(password, &scramble, pem)?;
                    stream.write_payload(key.seq.wrapping_add(1), &enc);
                    stream.flush().await.map_err(|e| e.to_string())?;
                }
                _ => return Err("unexpected caching_sha2_password message".into()),
            },
            _ => return Err("unexpected packet during authentication".into()),
        }
    }
}
