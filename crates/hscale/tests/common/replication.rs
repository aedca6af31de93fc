//! Set-up shared by the replication tests (`failover.rs`,
//! `switchover.rs`, `main_switchover.rs`), which start their own servers
//! and proxies: the proxies' configuration and a root connection.

use hscale::config::{BackendConfig, UserConfig};

/// A proxy's configuration with fast checks (replicas every 100 ms,
/// health 300 ms, reloads and heartbeats 200 ms, 1 s timeouts), two
/// workers, the admin user root without a password, and `backends`: each
/// its name, its primary's port and its replicas' ports.
pub fn config(backends: &[(&str, u16, &[u16])]) -> hscale::Config {
    let mut c = hscale::Config::parse("").unwrap();
    c.proxy.replica_check_interval_ms = 100;
    c.proxy.health_check_interval_ms = 300;
    c.proxy.reload_interval_ms = 200;
    c.proxy.heartbeat_interval_ms = 200;
    c.proxy.connect_timeout_ms = 1_000;
    c.proxy.backend_ping_timeout_ms = 1_000;
    c.proxy.workers = 2;
    c.users = vec![UserConfig {
        name: "root".into(),
        admin: true,
        ..Default::default()
    }];
    let addr = |port: u16| format!("127.0.0.1:{port}");
    c.backends = backends
        .iter()
        .map(|(name, port, replicas)| BackendConfig {
            name: (*name).into(),
            address: addr(*port),
            user: "hscale".into(),
            password: "hscale".into(),
            min_connections: 1,
            max_connections: 32,
            replicas: replicas.iter().map(|p| addr(*p)).collect(),
            ..BackendConfig::default()
        })
        .collect();
    c
}

/// A connection as root (no password) to the proxy on `port`.
pub async fn connect(port: u16) -> mysql_async::Conn {
    let o = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("root"))
        .pass(Some(""))
        .prefer_socket(false);
    mysql_async::Conn::new(o).await.unwrap()
}
