//! Connect-and-query with and without TLS (issue 16, item 3): clients
//! that each connect, run `SELECT 1`, and disconnect, in a loop, against
//! one MariaDB directly and through hscale, in one run:
//!
//! - plain: the server directly, and hscale (plain on both sides);
//! - TLS: the server directly over TLS, hscale with TLS to the client
//!   (pooled plain backend connections), and hscale with TLS on both sides.
//!
//! Each hscale figure is given as a ratio of the direct figure in the same
//! TLS mode. Started by `bench/tls_connect.sh`; the server gets a
//! certificate from a CA made here (rcgen); the clients (mysql_async over
//! rustls) do not verify, so both sides pay the same client-side work.
//! Arguments: seconds per configuration (default 10), clients (default 8).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hscale::config::{BackendConfig, UserConfig};
use hscale::playground::mariadb::{MariaDb, BACKEND_PASSWORD, BACKEND_USER};
use mysql_async::prelude::*;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// A CA (`ca.pem`) and a server certificate for 127.0.0.1 signed by it.
fn certificates(dir: &Path) {
    std::fs::create_dir_all(dir).expect("create the certificate directory");
    let ca_key = KeyPair::generate().expect("key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca.distinguished_name.push(DnType::CommonName, "bench CA");
    let ca_cert = ca.self_signed(&ca_key).expect("CA");
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().expect("key");
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
    let cert = leaf.signed_by(&key, &issuer).expect("certificate");
    for (name, text) in [
        ("ca.pem", ca_cert.pem()),
        ("server-cert.pem", cert.pem()),
        ("server-key.pem", key.serialize_pem()),
    ] {
        std::fs::write(dir.join(name), text).expect("write a PEM file");
    }
}

fn opts(port: u16, user: &str, password: &str, tls: bool) -> mysql_async::Opts {
    let mut b = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(password))
        .prefer_socket(false);
    if tls {
        b = b.ssl_opts(Some(
            mysql_async::SslOpts::default()
                .with_danger_accept_invalid_certs(true)
                .with_danger_skip_domain_validation(true),
        ));
    }
    b.into()
}

/// Connections per second: `clients` tasks connect, `SELECT 1`,
/// disconnect, for `secs`.
async fn measure(opts: mysql_async::Opts, clients: usize, secs: u64) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (opts, done, stop) = (opts.clone(), done.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let mut c = mysql_async::Conn::new(opts.clone()).await.expect("connect");
                    c.query_drop("SELECT 1").await.expect("SELECT 1");
                    c.disconnect().await.expect("disconnect");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("client task");
    }
    done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

fn proxy(server: &MariaDb, dir: &Path, backend_tls: bool) -> hscale::RunningProxy {
    let mut c = hscale::Config::parse("").expect("defaults");
    c.proxy.listen = "127.0.0.1:0".into();
    c.users = vec![UserConfig {
        name: "root".into(),
        admin: true,
        ..Default::default()
    }];
    let (cert, key) = hscale::tls::self_signed(dir).expect("proxy certificate");
    c.tls.cert = Some(cert.display().to_string());
    c.tls.key = Some(key.display().to_string());
    c.backends = vec![BackendConfig {
        name: "main".into(),
        address: server.address(),
        user: BACKEND_USER.into(),
        password: BACKEND_PASSWORD.into(),
        min_connections: 8,
        max_connections: 64,
        tls: backend_tls,
        ca: backend_tls.then(|| dir.join("ca.pem").display().to_string()),
        ..Default::default()
    }];
    hscale::RunningProxy::start(c, "127.0.0.1:0").expect("proxy starts")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let clients: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(8);
    let dir = std::env::temp_dir().join(format!("hscale-tls-bench-{}", std::process::id()));
    certificates(&dir);
    let ssl = [
        format!("--ssl-ca={}", dir.join("ca.pem").display()),
        format!("--ssl-cert={}", dir.join("server-cert.pem").display()),
        format!("--ssl-key={}", dir.join("server-key.pem").display()),
    ];
    let server = MariaDb::start_with(&dir.join("server"), &ssl).expect("MariaDB starts");
    let plain_proxy = proxy(&server, &dir, false);
    let tls_proxy = proxy(&server, &dir, true);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (d, p) = (server.port, plain_proxy.addr.port());
    let t = tls_proxy.addr.port();
    let runs = rt.block_on(async {
        // One warm-up second each, so pools and caches are filled.
        for (port, user, pw, tls) in [
            (d, BACKEND_USER, BACKEND_PASSWORD, true),
            (p, "root", "", true),
            (t, "root", "", true),
        ] {
            measure(opts(port, user, pw, tls), clients, 1).await;
        }
        let mut out = Vec::new();
        for (label, port, user, pw, tls) in [
            ("direct, plain", d, BACKEND_USER, BACKEND_PASSWORD, false),
            ("hscale, plain", p, "root", "", false),
            ("direct, TLS", d, BACKEND_USER, BACKEND_PASSWORD, true),
            ("hscale, TLS to the client", p, "root", "", true),
            ("hscale, TLS on both sides", t, "root", "", true),
        ] {
            let rate = measure(opts(port, user, pw, tls), clients, secs).await;
            eprintln!("{label}: {rate:.0} connections/s");
            out.push((label, rate));
        }
        out
    });
    let (plain, tls) = (runs[0].1, runs[2].1);
    println!(
        "| configuration | connect + SELECT 1 + quit per second | of direct (same TLS mode) |"
    );
    println!("|---|---|---|");
    for (label, rate) in &runs {
        let base = if label.contains("TLS") { tls } else { plain };
        println!("| {label} | {rate:.0} | {:.2} |", rate / base);
    }
    println!(
        "\n{clients} clients, {secs} s per configuration, one run; TLS {} of plain directly.",
        format_args!("{:.2}", tls / plain)
    );
    drop(plain_proxy);
    drop(tls_proxy);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
