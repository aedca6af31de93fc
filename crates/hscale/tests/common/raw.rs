//! A minimal raw-protocol client for tests that must send exact bytes.

#![allow(dead_code)]

use hscale_wire::auth;
use hscale_wire::consts::cap;
use hscale_wire::handshake::{HandshakeResponse, InitialHandshake};
use hscale_wire::{Packet, PacketStream};
use tokio::net::TcpStream;

pub struct Raw {
    pub s: PacketStream<TcpStream>,
    pub handshake: InitialHandshake,
}

pub const CLIENT_CAPS: u32 = cap::LONG_PASSWORD
    | cap::PROTOCOL_41
    | cap::SECURE_CONNECTION
    | cap::PLUGIN_AUTH
    | cap::TRANSACTIONS
    | cap::MULTI_RESULTS
    | cap::MULTI_STATEMENTS;

impl Raw {
    /// Connect and read the server's handshake only.
    pub async fn open(port: u16) -> Raw {
        let tcp = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        let mut s = PacketStream::new(tcp);
        let p = tokio::time::timeout(std::time::Duration::from_secs(20), s.read_packet())
            .await
            .expect("no handshake within 20 s")
            .expect("handshake");
        let handshake = InitialHandshake::decode(&p.payload).expect("decode handshake");
        Raw { s, handshake }
    }

    /// Connect and log in with mysql_native_password; returns the server's
    /// final packet (OK or ERR) payload too.
    pub async fn login(port: u16, user: &str, password: &str, caps: u32) -> (Raw, Packet) {
        Raw::login_as(port, user, password, caps, 45).await
    }

    /// [`Raw::login`] naming handshake collation `collation`.
    pub async fn login_as(
        port: u16,
        user: &str,
        password: &str,
        caps: u32,
        collation: u8,
    ) -> (Raw, Packet) {
        let mut r = Raw::open(port).await;
        let resp = HandshakeResponse {
            capabilities: caps,
            max_packet: 1 << 24,
            collation,
            user: user.into(),
            auth_response: auth::native_scramble(password.as_bytes(), &r.handshake.scramble),
            database: None,
            auth_plugin: Some(auth::NATIVE_PASSWORD.into()),
        };
        r.s.write_payload(1, &resp.encode());
        r.s.flush().await.unwrap();
        let p = tokio::time::timeout(std::time::Duration::from_secs(20), r.s.read_packet())
            .await
            .expect("no auth result within 20 s")
            .expect("auth result");
        (r, p)
    }

    pub async fn send(&mut self, seq: u8, payload: &[u8]) {
        self.s.write_payload(seq, payload);
        self.s.flush().await.unwrap();
    }

    pub async fn read(&mut self) -> Option<Packet> {
        tokio::time::timeout(std::time::Duration::from_secs(10), self.s.read_packet())
            .await
            .expect("no answer within 10 s")
            .ok()
    }

    /// Run a text query (the client did not ask for DEPRECATE_EOF) and
    /// read its answer: the rows of each result set as strings, or the
    /// error code. Several result sets (multi-statements) are read in turn.
    pub async fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, u16> {
        let mut payload = vec![hscale_wire::consts::com::QUERY];
        payload.extend_from_slice(sql.as_bytes());
        self.send(0, &payload).await;
        let mut rows = Vec::new();
        loop {
            let first = self.read().await.expect("answer");
            let status = match first.first() {
                Some(0xff) => return Err(err_code(&first.payload).unwrap_or(0)),
                Some(0x00) => {
                    hscale_wire::response::OkPacket::decode(&first.payload)
                        .expect("OK")
                        .status
                }
                _ => {
                    let n = hscale_wire::buf::Reader::new(&first.payload)
                        .lenenc()
                        .expect("column count") as usize;
                    for _ in 0..=n {
                        self.read().await.expect("column definition or EOF");
                    }
                    loop {
                        let p = self.read().await.expect("row");
                        if p.first() == Some(0xff) {
                            return Err(err_code(&p.payload).unwrap_or(0));
                        }
                        if hscale_wire::response::is_eof(&p.payload) {
                            break hscale_wire::response::decode_eof(&p.payload)
                                .expect("EOF")
                                .1;
                        }
                        let row = hscale_wire::resultset::decode_row(&p.payload, n).expect("row");
                        rows.push(
                            row.into_iter()
                                .map(|v| v.map(|b| String::from_utf8_lossy(&b).into_owned()))
                                .collect(),
                        );
                    }
                }
            };
            if status & hscale_wire::consts::status::MORE_RESULTS_EXISTS == 0 {
                return Ok(rows);
            }
        }
    }

    /// Read packets until the connection closes (or 10 s pass); true if it closed.
    pub async fn is_closed(&mut self) -> bool {
        loop {
            match tokio::time::timeout(std::time::Duration::from_secs(10), self.s.read_packet())
                .await
            {
                Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }
}

/// The error code of an ERR payload.
pub fn err_code(payload: &[u8]) -> Option<u16> {
    hscale_wire::response::ErrPacket::decode(payload)
        .ok()
        .map(|e| e.code)
}
