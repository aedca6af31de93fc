#![allow(clippy::unwrap_used)]
//! The compressed protocol (`CLIENT_COMPRESS`, zlib) to clients (issue 10,
//! item 7), with drivers that use it: the mariadb CLI `--compress`,
//! mysql_async with compression and Connector/J `useCompression=true`.
//! Each runs through a relay that counts the bytes hscale sends, so a
//! driver that silently fell back to the plain protocol fails the test.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::raw::{Raw, CLIENT_CAPS};
use common::*;
use hscale_wire::consts::cap;
use mysql_async::prelude::*;

fn port() -> u16 {
    cluster(1).proxy_port
}

/// A TCP relay to hscale on a port of its own: how many bytes hscale sent
/// to the relay's clients.
struct Relay {
    port: u16,
    from_proxy: Arc<AtomicUsize>,
}

impl Relay {
    fn start(target: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let from_proxy = Arc::new(AtomicUsize::new(0));
        let count = from_proxy.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let server = TcpStream::connect(("127.0.0.1", target)).unwrap();
                let (c, s) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || pump(c, s, None));
                let count = count.clone();
                std::thread::spawn(move || pump(server, client, Some(count)));
            }
        });
        Relay { port, from_proxy }
    }

    fn bytes(&self) -> usize {
        self.from_proxy.load(Ordering::SeqCst)
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream, count: Option<Arc<AtomicUsize>>) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        if let Some(c) = &count {
            c.fetch_add(n, Ordering::SeqCst);
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e} (run `make deps`)"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed with {}:\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

fn mariadb(port: u16, args: &[&str]) -> String {
    run(Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{port}"),
            "-uroot",
            "--batch",
            "--skip-ssl",
        ])
        .args(args))
}

/// `mariadb --compress`: the client's status names the compressed
/// protocol; a script gives the same output as without it, in a tenth of
/// the bytes.
#[test]
fn mariadb_cli_compress() {
    let status = mariadb(port(), &["--compress", "-e", "status"]);
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("Protocol:") && l.contains("Compressed")),
        "{status}"
    );
    let script = "CREATE DATABASE IF NOT EXISTS compress_cli; USE compress_cli; \
                  DROP TABLE IF EXISTS t; CREATE TABLE t (id INT PRIMARY KEY, v MEDIUMTEXT); \
                  INSERT INTO t VALUES (1, REPEAT('ab', 100000)), (2, 'x'), (3, NULL); \
                  SELECT id, LENGTH(v), v FROM t ORDER BY id; SELECT @@max_allowed_packet; \
                  DROP DATABASE compress_cli";
    let plain_relay = Relay::start(port());
    let plain = mariadb(plain_relay.port, &["-e", script]);
    let relay = Relay::start(port());
    let compressed = mariadb(relay.port, &["--compress", "-e", script]);
    assert_eq!(compressed, plain);
    assert!(plain.contains("200000"), "{}", &plain[..200]);
    assert!(
        relay.bytes() * 10 < plain_relay.bytes(),
        "compressed {} bytes, plain {}",
        relay.bytes(),
        plain_relay.bytes()
    );
}

/// mysql_async with compression: results and commands past 16 MiB (frames
/// and packets split at different places), text and prepared, as the
/// server answers them directly.
#[test]
fn mysql_async_with_compression() {
    let info = cluster(1);
    let relay = Relay::start(info.proxy_port);
    rt().block_on(async {
        let opts = |port| -> mysql_async::Opts {
            mysql_async::OptsBuilder::from_opts(proxy_opts(port, Some("mysql")))
                .compression(mysql_async::Compression::default())
                .into()
        };
        let mut c = mysql_async::Conn::new(opts(relay.port)).await.unwrap();
        let mut direct = mysql_async::Conn::new(
            mysql_async::OptsBuilder::from_opts(backend_opts(info.backend_ports[0], Some("mysql")))
                .compression(mysql_async::Compression::default()),
        )
        .await
        .unwrap();
        let start = relay.bytes();
        let big: String = c
            .query_first("SELECT REPEAT('a', 4000000)")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(big.len(), 4_000_000);
        assert!(
            relay.bytes() - start < 400_000,
            "{} bytes for a 4 MB result: not compressed",
            relay.bytes() - start
        );
        // 20 MB each way: several packets and several frames.
        let param: Vec<u8> = (0..20_000_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
            .collect();
        for conn in [&mut c, &mut direct] {
            let (len, md5): (u64, String) = conn
                .exec_first("SELECT LENGTH(?), MD5(?)", (&param, &param))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(len, 20_000_000);
            let back: Vec<u8> = conn
                .query_first(format!("SELECT REPEAT(CAST('{md5}' AS BINARY), 700000)"))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(back.len(), 22_400_000);
        }
        let sql = "SELECT seq, SHA2(seq, 256) FROM seq_1_to_20000";
        let proxied: Vec<(u64, String)> = c.query(sql).await.unwrap();
        let served: Vec<(u64, String)> = direct.query(sql).await.unwrap();
        assert_eq!(proxied, served);
        let proxied: Vec<(u64, String)> = c.exec(sql, ()).await.unwrap();
        assert_eq!(proxied, served);
        let id: u64 = c
            .query_first("SELECT CONNECTION_ID()")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(id, u64::from(c.id()));
        c.disconnect().await.unwrap();
        direct.disconnect().await.unwrap();
    });
}

/// Connector/J with useCompression=true, both prepare modes.
#[test]
fn jdbc_use_compression() {
    let relay = Relay::start(port());
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/jdbc");
    run(Command::new("mvn").current_dir(dir).args([
        "-q",
        "-B",
        "dependency:copy-dependencies",
        "-DoutputDirectory=target/lib",
    ]));
    // Another test binary may compile the same classes at the same time.
    let classes = format!("target/classes-compress-{}", std::process::id());
    std::fs::create_dir_all(format!("{dir}/{classes}")).unwrap();
    run(Command::new("javac").current_dir(dir).args([
        "-d",
        &classes,
        "-cp",
        "target/lib/*",
        "src/main/java/JdbcCheck.java",
    ]));
    let out = run(Command::new("java").current_dir(dir).args([
        "-cp",
        &format!("{classes}:target/lib/*"),
        "JdbcCheck",
        "127.0.0.1",
        &relay.port.to_string(),
        "information_schema",
        "compress",
    ]));
    let _ = std::fs::remove_dir_all(format!("{dir}/{classes}"));
    assert!(out.contains("jdbc compress ok"), "{out}");
    // Two 4 MB results and two 1 MB parameters' answers.
    assert!(
        relay.bytes() < 1_000_000,
        "{} bytes: not compressed",
        relay.bytes()
    );
}

/// zstd (`CLIENT_ZSTD_COMPRESSION_ALGORITHM`, MySQL 8's bit 26) is offered
/// exactly as the backend offers it: MariaDB does not, so neither does
/// hscale. A client that asks for zstd alone, as a MySQL 8 client with
/// `--compression-algorithms=zstd` does, logs in as with the server and is
/// answered uncompressed; one that asks for both gets zlib.
#[test]
fn zstd_is_offered_as_the_server_offers_it() {
    const ZSTD: u32 = 1 << 26;
    let info = cluster(1);
    rt().block_on(async {
        let backend = Raw::open(info.backend_ports[0])
            .await
            .handshake
            .capabilities;
        let proxy = Raw::open(info.proxy_port).await.handshake.capabilities;
        assert_eq!(backend & ZSTD, 0, "the backend offers zstd: {backend:#x}");
        assert_eq!(proxy & ZSTD, backend & ZSTD, "hscale {proxy:#x}");
        assert_ne!(proxy & cap::COMPRESS, 0, "zlib offered");
        // zstd alone: the plain protocol, on the backend and through hscale.
        for (port, user, password) in [
            (info.backend_ports[0], "hscale", "hscale"),
            (info.proxy_port, "root", ""),
        ] {
            let (mut c, ok) = Raw::login(port, user, password, CLIENT_CAPS | ZSTD).await;
            assert_eq!(ok.first(), Some(0), "login on port {port}");
            let rows = c.query("SELECT REPEAT('z', 1000)").await.unwrap();
            assert_eq!(rows[0][0].as_deref(), Some("z".repeat(1000).as_str()));
        }
    });
    // zstd and zlib: zlib, as with --compress alone.
    let relay = Relay::start(info.proxy_port);
    rt().block_on(async {
        let (c, ok) = Raw::login(relay.port, "root", "", CLIENT_CAPS | ZSTD | cap::COMPRESS).await;
        assert_eq!(ok.first(), Some(0));
        let before = relay.bytes();
        let mut z = hscale_wire::PacketStream::new(hscale_wire::compress::Compressed::new(
            c.s.into_inner(),
        ));
        z.write_payload(0, b"\x03SELECT REPEAT('z', 100000)");
        z.flush().await.unwrap();
        // Column count, definition, EOF, the row, EOF.
        let mut packets = Vec::new();
        for _ in 0..5 {
            packets.push(z.read_packet().await.unwrap().payload);
        }
        let row = hscale_wire::resultset::decode_row(&packets[3], 1).unwrap();
        assert_eq!(row[0].as_deref(), Some("z".repeat(100_000).as_bytes()));
        let sent = relay.bytes() - before;
        assert!(sent < 10_000, "{sent} bytes for 100 KB: not compressed");
    });
}
