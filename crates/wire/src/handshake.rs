//! The connection phase: the server's initial handshake (protocol v10), the
//! client's handshake response, the SSL request and auth-switch packets.

use bytes::{BufMut, BytesMut};

use crate::buf::{put_lenenc_bytes, put_null_terminated, Reader};
use crate::consts::cap;
use crate::WireError;

/// The server's first packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialHandshake {
    pub server_version: String,
    pub connection_id: u32,
    pub scramble: [u8; 20],
    pub capabilities: u32,
    pub collation: u8,
    pub status: u16,
    pub auth_plugin: String,
}

impl InitialHandshake {
    pub fn encode(&self) -> BytesMut {
        let mut b = BytesMut::with_capacity(128);
        b.put_u8(10);
        put_null_terminated(&mut b, self.server_version.as_bytes());
        b.put_u32_le(self.connection_id);
        b.put_slice(&self.scramble[..8]);
        b.put_u8(0);
        b.put_u16_le(self.capabilities as u16);
        b.put_u8(self.collation);
        b.put_u16_le(self.status);
        b.put_u16_le((self.capabilities >> 16) as u16);
        b.put_u8(21); // length of auth-plugin-data: 20 bytes + NUL
        b.put_slice(&[0u8; 10]);
        b.put_slice(&self.scramble[8..]);
        b.put_u8(0);
        put_null_terminated(&mut b, self.auth_plugin.as_bytes());
        b
    }

    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(payload);
        let protocol = r.u8()?;
        if protocol != 10 {
            return Err(WireError::Malformed(
                "unsupported handshake protocol version",
            ));
        }
        let server_version = String::from_utf8_lossy(r.null_terminated()?).into_owned();
        let connection_id = r.u32()?;
        let mut scramble = [0u8; 20];
        scramble[..8].copy_from_slice(r.take(8)?);
        r.skip(1)?;
        let cap_low = r.u16()? as u32;
        let collation = r.u8()?;
        let status = r.u16()?;
        let cap_high = r.u16()? as u32;
        let capabilities = cap_low | (cap_high << 16);
        let auth_len = r.u8()? as usize;
        r.skip(10)?;
        if capabilities & cap::SECURE_CONNECTION != 0 {
            let n = auth_len.saturating_sub(8).max(13);
            let part2 = r.take(n)?;
            scramble[8..20].copy_from_slice(&part2[..12]);
        }
        let auth_plugin = if capabilities & cap::PLUGIN_AUTH != 0 {
            String::from_utf8_lossy(r.null_terminated_or_rest()).into_owned()
        } else {
            String::new()
        };
        Ok(InitialHandshake {
            server_version,
            connection_id,
            scramble,
            capabilities,
            collation,
            status,
            auth_plugin,
        })
    }
}

/// The client's answer to the initial handshake (protocol 41 only).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HandshakeResponse {
    pub capabilities: u32,
    pub max_packet: u32,
    pub collation: u8,
    pub user: String,
    pub auth_response: Vec<u8>,
    pub database: Option<String>,
    pub auth_plugin: Option<String>,
}

/// The first 32 bytes of a handshake response, sent alone when the client
/// wants TLS.
pub const SSL_REQUEST_LEN: usize = 32;

impl HandshakeResponse {
    pub fn decode(payload: &[u8]) -> Result<Self, WireError> {
        let mut r = Reader::new(payload);
        let capabilities = r.u32()?;
        if capabilities & cap::PROTOCOL_41 == 0 {
            return Err(WireError::Malformed("client does not speak protocol 4.1"));
        }
        let max_packet = r.u32()?;
        let collation = r.u8()?;
        r.skip(23)?;
        let user = String::from_utf8_lossy(r.null_terminated()?).into_owned();
        let auth_response = if capabilities & cap::PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
            r.lenenc_bytes()?.to_vec()
        } else if capabilities & cap::SECURE_CONNECTION != 0 {
            let n = r.u8()? as usize;
            r.take(n)?.to_vec()
        } else {
            r.null_terminated()?.to_vec()
        };
        let database = if capabilities & cap::CONNECT_WITH_DB != 0 && !r.is_empty() {
            let db = r.null_terminated_or_rest();
            (!db.is_empty()).then(|| String::from_utf8_lossy(db).into_owned())
        } else {
            None
        };
        let auth_plugin = if capabilities & cap::PLUGIN_AUTH != 0 && !r.is_empty() {
            Some(String::from_utf8_lossy(r.null_terminated_or_rest()).into_owned())
        } else {
            None
        };
        // Connection attributes, if any, are ignored.
        Ok(HandshakeResponse {
            capabilities,
            max_packet,
            collation,
            user,
            auth_response,
            database,
            auth_plugin,
        })
    }

    pub fn encode(&self) -> BytesMut {
        let mut b = BytesMut::with_capacity(128);
        let mut caps = self.capabilities;
        if self.database.is_some() {
            caps |= cap::CONNECT_WITH_DB;
        }
        b.put_u32_le(caps);
        b.put_u32_le(self.max_packet);
        b.put_u8(self.collation);
        b.put_slice(&[0u8; 23]);
        put_null_terminated(&mut b, self.user.as_bytes());
        if caps & cap::PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
            put_lenenc_bytes(&mut b, &self.auth_response);
        } else {
            b.put_u8(self.auth_response.len() as u8);
            b.put_slice(&self.auth_response);
        }
        if let Some(db) = &self.database {
            put_null_terminated(&mut b, db.as_bytes());
        }
        if caps & cap::PLUGIN_AUTH != 0 {
            let plugin = self.auth_plugin.as_deref().unwrap_or("");
            put_null_terminated(&mut b, plugin.as_bytes());
        }
        b
    }
}

/// `COM_CHANGE_USER` as sent by a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeUser {
    pub user: String,
    pub auth_response: Vec<u8>,
    pub database: Option<String>,
    pub collation: Option<u8>,
    pub auth_plugin: Option<String>,
}

impl ChangeUser {
    /// Decode the payload after the command byte.
    pub fn decode(body: &[u8], client_caps: u32) -> Result<Self, WireError> {
        let mut r = Reader::new(body);
        let user = String::from_utf8_lossy(r.null_terminated()?).into_owned();
        let auth_response = if client_caps & cap::SECURE_CONNECTION != 0 {
            let n = r.u8()? as usize;
            r.take(n)?.to_vec()
        } else {
            r.null_terminated()?.to_vec()
        };
        let db = r.null_terminated_or_rest();
        let database = (!db.is_empty()).then(|| String::from_utf8_lossy(db).into_owned());
        let collation = if r.remaining() >= 2 {
            Some(r.u16()? as u8)
        } else {
            None
        };
        let auth_plugin = if client_caps & cap::PLUGIN_AUTH != 0 && !r.is_empty() {
            Some(String::from_utf8_lossy(r.null_terminated_or_rest()).into_owned())
        } else {
            None
        };
        Ok(ChangeUser {
            user,
            auth_response,
            database,
            collation,
            auth_plugin,
        })
    }
}

/// An auth-switch request: `0xFE`, plugin name, plugin data.
pub fn encode_auth_switch(plugin: &str, data: &[u8]) -> BytesMut {
    let mut b = BytesMut::with_capacity(2 + plugin.len() + data.len() + 1);
    b.put_u8(0xfe);
    put_null_terminated(&mut b, plugin.as_bytes());
    b.put_slice(data);
    b.put_u8(0);
    b
}

/// Decode an auth-switch request (payload starting with `0xFE`).
pub fn decode_auth_switch(payload: &[u8]) -> Result<(String, Vec<u8>), WireError> {
    let mut r = Reader::new(payload);
    if r.u8()? != 0xfe {
        return Err(WireError::Malformed("not an auth switch request"));
    }
    let plugin = String::from_utf8_lossy(r.null_terminated_or_rest()).into_owned();
    let mut data = r.rest().to_vec();
    if data.last() == Some(&0) {
        data.pop();
    }
    Ok((plugin, data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn handshake_round_trip() {
        let h = InitialHandshake {
            server_version: "5.5.5-10.11.6-MariaDB".into(),
            connection_id: 42,
            scramble: *b"abcdefghijklmnopqrst",
            capabilities: cap::PROTOCOL_41
                | cap::SECURE_CONNECTION
                | cap::PLUGIN_AUTH
                | cap::DEPRECATE_EOF,
            collation: 45,
            status: 2,
            auth_plugin: "mysql_native_password".into(),
        };
        assert_eq!(InitialHandshake::decode(&h.encode()).unwrap(), h);
    }

    #[test]
    fn response_round_trip() {
        let r = HandshakeResponse {
            capabilities: cap::PROTOCOL_41
                | cap::SECURE_CONNECTION
                | cap::PLUGIN_AUTH
                | cap::PLUGIN_AUTH_LENENC_CLIENT_DATA
                | cap::CONNECT_WITH_DB,
            max_packet: 1 << 24,
            collation: 45,
            user: "root".into(),
            auth_response: vec![1; 20],
            database: Some("test".into()),
            auth_plugin: Some("mysql_native_password".into()),
        };
        assert_eq!(HandshakeResponse::decode(&r.encode()).unwrap(), r);
    }

    proptest! {
        #[test]
        fn decoders_never_panic(data in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = InitialHandshake::decode(&data);
            let _ = HandshakeResponse::decode(&data);
            let _ = ChangeUser::decode(&data, u32::MAX);
            let _ = ChangeUser::decode(&data, 0);
            let _ = decode_auth_switch(&data);
        }
    }
}
