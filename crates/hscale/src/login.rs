//! A client's login, the stage of its connection before its session
//! (`session/`): [`log_in`] runs the connection phase within
//! `handshake_timeout_ms`, holding a place among `max_handshakes`, and
//! answers a failed login after the failed-login throttle's delay.
//!
//! The connection phase ([`handshake`]): send the handshake, read the
//! response, check the password (mysql_native_password or
//! caching_sha2_password's fast path, switching plugins when the client
//! offers another one). With `[tls]` the greeting offers CLIENT_SSL and an
//! SSLRequest (the first 32 bytes of a response, alone, at seq 1) turns
//! the socket into TLS before the real response (seq 2).
//!
//! caching_sha2_password never needs its full exchange here: the proxy
//! knows each password, so the scrambled fast path always decides.

use std::sync::Arc;

use hscale_wire::auth::{self, CACHING_SHA2, NATIVE_PASSWORD};
use hscale_wire::consts::{cap, status};
use hscale_wire::handshake::{
    encode_auth_switch, HandshakeResponse, InitialHandshake, SSL_REQUEST_LEN,
};
use hscale_wire::{PacketStream, WireError};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::error::ProxyError;
use crate::exec::write_error;
use crate::runtime::Context;
use crate::tls::ClientStream;

/// Capabilities hscale offers clients.
pub const SERVER_CAPS: u32 = cap::LONG_PASSWORD
    | cap::FOUND_ROWS
    | cap::LONG_FLAG
    | cap::CONNECT_WITH_DB
    | cap::NO_SCHEMA
    | cap::ODBC
    | cap::LOCAL_FILES
    | cap::IGNORE_SPACE
    | cap::PROTOCOL_41
    | cap::INTERACTIVE
    | cap::IGNORE_SIGPIPE
    | cap::TRANSACTIONS
    | cap::SECURE_CONNECTION
    | cap::MULTI_STATEMENTS
    | cap::MULTI_RESULTS
    | cap::PS_MULTI_RESULTS
    | cap::PLUGIN_AUTH
    | cap::CONNECT_ATTRS
    | cap::PLUGIN_AUTH_LENENC_CLIENT_DATA
    | cap::DEPRECATE_EOF
    | cap::COMPRESS;

/// Who logged in, and what was negotiated.
#[derive(Debug, Clone)]
pub struct ClientInfo {
    pub user: String,
    /// The client's address as MariaDB names a client host in errors
    /// (its IP, or `localhost` on the unix socket); set after login.
    pub host: String,
    /// The client's host as `USER()` names it (`client_host_name`).
    pub host_name: String,
    pub is_admin: bool,
    pub capabilities: u32,
    pub collation: u8,
    pub database: Option<String>,
    /// The scramble of this connection's handshake.
    pub scramble: [u8; 20],
    /// Sequence id for the final OK (or ERR) of the connection phase.
    pub next_seq: u8,
    /// The client's TLS session, when it asked for TLS (set after login).
    pub tls: Option<crate::tls::TlsSession>,
}

fn protocol(e: WireError) -> ProxyError {
    if e.is_disconnect() {
        ProxyError::ClientGone
    } else {
        ProxyError::ClientProtocol(e)
    }
}

/// Run the connection phase up to (not including) the final OK.
/// `is_local`: the unix socket, secure without TLS.
pub async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut PacketStream<ClientStream<S>>,
    ctx: &Context,
    client_hosts: &[&str],
    is_local: bool,
    server_version: &str,
    connection_id: u32,
) -> Result<ClientInfo, (ProxyError, u8)> {
    let config = &ctx.config;
    let scramble = auth::new_scramble();
    let capabilities = match ctx.tls {
        Some(_) => SERVER_CAPS | cap::SSL,
        None => SERVER_CAPS,
    };
    let hs = InitialHandshake {
        server_version: server_version.to_string(),
        connection_id,
        scramble,
        capabilities,
        collation: hscale_wire::charset::BACKEND_COLLATION,
        status: status::AUTOCOMMIT,
        auth_plugin: config.proxy.auth_plugin.clone(),
    };
    stream.write_payload(0, &hs.encode());
    stream.flush().await.map_err(|e| (protocol(e), 1))?;
    let (mut payload, mut seq) = stream
        .read_payload(1, 64 * 1024)
        .await
        .map_err(|e| (protocol(e), 2))?;
    if payload.len() == SSL_REQUEST_LEN {
        let Some(acceptor) = &ctx.tls else {
            let e = ProxyError::Tls("no certificate configured ([tls] cert, key)".into());
            return Err((e, seq.wrapping_add(1)));
        };
        let early = stream.take_buffered();
        if let Err(e) = stream.get_mut().upgrade(acceptor, early).await {
            // Nothing can be answered: the client speaks TLS records now.
            tracing::debug!(connection_id, error = %e, "TLS handshake with a client failed");
            return Err((ProxyError::ClientGone, 0));
        }
        (payload, seq) = stream
            .read_payload(seq.wrapping_add(1), 64 * 1024)
            .await
            .map_err(|e| (protocol(e), seq.wrapping_add(2)))?;
    }
    let next = seq.wrapping_add(1);
    let resp = HandshakeResponse::decode(&payload).map_err(|e| (protocol(e), next))?;
    let denied = || ProxyError::AccessDenied {
        user: resp.user.clone(),
    };
    let mut info = ClientInfo {
        user: resp.user.clone(),
        host: String::new(),
        host_name: String::new(),
        is_admin: false,
        capabilities: resp.capabilities & capabilities,
        collation: resp.collation,
        database: resp.database.clone(),
        scramble,
        next_seq: next,
        tls: None,
    };
    let plugin = resp.auth_plugin.as_deref().unwrap_or(NATIVE_PASSWORD);
    let (plugin, response) = if plugin == NATIVE_PASSWORD || plugin == CACHING_SHA2 {
        (plugin.to_string(), resp.auth_response.clone())
    } else {
        // Ask the client to use our plugin with the same scramble.
        let want = config.proxy.auth_plugin.clone();
        stream.write_payload(info.next_seq, &encode_auth_switch(&want, &scramble));
        stream.flush().await.map_err(|e| (protocol(e), 0))?;
        let (data, seq) = stream
            .read_payload(info.next_seq.wrapping_add(1), 4096)
            .await
            .map_err(|e| (protocol(e), 0))?;
        info.next_seq = seq.wrapping_add(1);
        (want, data.to_vec())
    };
    // Users as SIGHUP last loaded them.
    let live = ctx.live();
    let user = live.user(&resp.user);
    let password = user.map(|u| u.password.as_bytes()).unwrap_or_default();
    let response: &[u8] = if response == [0] { &[] } else { &response };
    let ok = user.is_some_and(|u| u.is_host_allowed(client_hosts))
        && auth::verify(&plugin, password, &scramble, response).unwrap_or(false);
    if !ok {
        return Err((denied(), info.next_seq));
    }
    // As MariaDB's require_secure_transport: checked once the user is known.
    if config.tls.require && !is_local && !stream.get_ref().is_tls() {
        return Err((ProxyError::SecureTransportRequired, info.next_seq));
    }
    if plugin == CACHING_SHA2 {
        // caching_sha2_password fast path: "fast auth success", then OK.
        stream.write_payload(info.next_seq, &[0x01, 0x03]);
        info.next_seq = info.next_seq.wrapping_add(1);
    }
    info.is_admin = user.is_some_and(|u| u.admin);
    Ok(info)
}

/// The handshake, within `handshake_timeout_ms` and holding a place among
/// `max_handshakes`; a failed login answered (after the failed-login
/// throttle's delay). `None`: the connection closes.
pub async fn log_in<S: AsyncRead + AsyncWrite + Unpin>(
    client: &mut PacketStream<ClientStream<S>>,
    ctx: &Arc<Context>,
    peer: &str,
    is_local: bool,
    connection_id: u32,
) -> Option<ClientInfo> {
    let version = ctx.server_version();
    // The handshake holds a place among `max_handshakes`, not a client
    // slot, and has `handshake_timeout_ms` to finish.
    let ticket = ctx.handshake_ticket();
    let limit = std::time::Duration::from_millis(ctx.live().proxy.handshake_timeout_ms);
    let addr = peer.parse::<std::net::SocketAddr>().ok().map(|a| a.ip());
    // The names an account's host part is matched against (the server
    // matches the resolved name and the IP).
    let host_name = client_host_name(
        peer,
        ctx.resolves_names
            .load(std::sync::atomic::Ordering::Relaxed),
    );
    let ip = addr.map(|a| a.to_string());
    let client_hosts: Vec<&str> = std::iter::once(host_name.as_str())
        .chain(ip.as_deref())
        .collect();
    let login = tokio::select! {
        r = async {
            let r = tokio::time::timeout(limit, handshake(client, ctx, &client_hosts, is_local, &version, connection_id)).await.ok()?;
            // The failed-login throttle: the answer waits, still holding
            // its handshake place.
            let delay = match &r {
                Ok(_) => ctx.login_delay(addr, true),
                Err((ProxyError::AccessDenied { .. }, _)) => ctx.login_delay(addr, false),
                Err(_) => std::time::Duration::ZERO,
            };
            if !delay.is_zero() {
                tracing::info!(peer, connection_id, delay_ms = delay.as_millis() as u64, "failed-login throttle: answering late");
                tokio::time::sleep(delay).await;
            }
            Some(r)
        } => r,
        _ = ticket.evicted() => None,
    };
    drop(ticket);
    match login {
        Some(Ok(info)) => Some(info),
        Some(Err((e, seq))) => {
            tracing::info!(peer, connection_id, error = %e, "login failed");
            if !matches!(e, ProxyError::ClientGone) {
                write_error(client, seq, &e).await;
            }
            None
        }
        None => {
            // As MariaDB at connect_timeout: the connection is closed.
            tracing::debug!(peer, connection_id, "closing: no login within the handshake timeout, or too many connections in the handshake");
            None
        }
    }
}

/// The client's host as a server names it in `USER()`: `localhost` for
/// the unix socket, and for a loopback address when the server resolves
/// names (its `skip_name_resolve` OFF); else the IP. (Other addresses are
/// not looked up: a server resolving names would show their name.)
pub fn client_host_name(peer: &str, resolves_names: bool) -> String {
    match peer.parse::<std::net::SocketAddr>() {
        Ok(a) if resolves_names && a.ip().is_loopback() => "localhost".into(),
        Ok(a) => a.ip().to_string(),
        Err(_) => "localhost".into(),
    }
}
