//! The TOML configuration: `[proxy]`, `[log]`, `[tls]`, `[metrics]`,
//! `[[users]]`, `[user_defaults]`, `[[backends]]`.
//! Loaded at start into an immutable [`Config`] shared by `Arc`; SIGHUP
//! reloads `[[users]]` and the client limits (`runtime::Live`).

use std::path::Path;

use serde::{Deserialize, Serialize};

mod problems;
mod users;

pub use users::{PriorityName, ReadFromName, UserConfig, UserLimits};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub proxy: ProxyConfig,
    #[serde(default)]
    pub log: LogConfig,
    #[serde(default)]
    pub tls: TlsConfig,
    #[serde(default)]
    pub metrics: MetricsConfig,
    #[serde(default)]
    pub users: Vec<UserConfig>,
    /// Limits for every user that does not set its own (`crate::tenant`).
    /// Left out of a written config when none is set, so that the config
    /// the playground writes also starts an older hscale.
    #[serde(default, skip_serializing_if = "UserLimits::is_unset")]
    pub user_defaults: UserLimits,
    #[serde(default)]
    pub backends: Vec<BackendConfig>,
    /// The result cache (`exec/cache.rs`); left out of a written config
    /// when off, so an older hscale still reads it.
    #[serde(default, skip_serializing_if = "CacheConfig::is_off")]
    pub cache: CacheConfig,
    /// The HTTP API (`http_api.rs`); left out of a written config when
    /// off, so an older hscale still reads it.
    #[serde(default, skip_serializing_if = "HttpConfig::is_off")]
    pub http: HttpConfig,
}

/// `[http]`: the HTTP API beside the MySQL protocol (SQL and rows by key
/// as JSON, `http_api.rs`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Address of the HTTP API, such as `"127.0.0.1:8080"`; empty (the
    /// default) serves none.
    pub listen: String,
    /// Serve HTTPS only, with `[tls]`'s certificate and key (HTTP/2 or
    /// HTTP/1.1 chosen by ALPN); a plain-HTTP client is refused.
    pub tls: bool,
    /// A session carried across requests (`"session": true`) left idle
    /// this long is closed and its transaction rolled back, in
    /// milliseconds.
    pub session_idle_ms: u64,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            listen: String::new(),
            tls: false,
            session_idle_ms: 60_000,
        }
    }
}

impl HttpConfig {
    pub fn is_off(&self) -> bool {
        self.listen.is_empty()
    }
}

/// `[cache]`: the result cache of reads of tables cached by `HSCALE
/// CACHE_TABLE` (and statements by `HSCALE CACHE_STATEMENT`), and this
/// proxy's own rules.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// The most bytes of answers the cache holds on this proxy; 0 (the
    /// default) keeps none.
    pub max_bytes: u64,
    /// `[[cache.rules]]`: tables and statements this proxy caches beside
    /// the dictionary's rules (which win where both name one); replaced
    /// by SIGHUP (`exec/cache/local_rules.rs`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<CacheRuleConfig>,
}

impl CacheConfig {
    pub fn is_off(&self) -> bool {
        self.max_bytes == 0 && self.rules.is_empty()
    }
}

/// One `[[cache.rules]]` entry: a `table` ("db.table") or a `statement`
/// (a SELECT: every statement of its fingerprint), `mode` "exact" or
/// "ttl" with `ttl_ms`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CacheRuleConfig {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub table: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub statement: String,
    pub mode: String,
    #[serde(skip_serializing_if = "is_zero")]
    pub ttl_ms: u64,
}

impl CacheRuleConfig {
    /// Its rule, `None` when `mode` and `ttl_ms` name none.
    pub fn rule(&self) -> Option<hscale_route::dictionary::CacheRule> {
        use hscale_route::dictionary::CacheRule;
        match CacheRule::parse(&self.mode, self.ttl_ms)? {
            CacheRule::Exact if self.ttl_ms > 0 => None,
            r => Some(r),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProxyConfig {
    /// TCP address for clients.
    pub listen: String,
    /// Optional unix socket path for clients.
    pub socket: Option<String>,
    /// Worker threads; 0 means one per core.
    pub workers: usize,
    /// Logged-in client connections at once; a client that logs in beyond
    /// it gets error 1040. A connection takes its slot only after it
    /// authenticated.
    pub max_connections: usize,
    /// Connections still in the handshake (not yet logged in) at once,
    /// apart from `max_connections`. When a new connection would exceed
    /// it, the oldest one still in the handshake is closed, so idle
    /// half-open connections cannot keep real clients out.
    pub max_handshakes: usize,
    /// Time a new connection has to complete its handshake and log in, in
    /// milliseconds (MariaDB's connect_timeout).
    pub handshake_timeout_ms: u64,
    /// Failed logins from one client address after which its logins are
    /// answered late (like MariaDB's connection_control); 0 turns the
    /// throttle off. A successful login clears the address's count.
    pub failed_login_threshold: u32,
    /// Delay added per failed login beyond the threshold, in milliseconds.
    pub failed_login_delay_ms: u64,
    /// Longest delay a login is answered with, in milliseconds.
    pub failed_login_max_delay_ms: u64,
    /// Time a logged-in client may stay silent between commands before
    /// its connection is closed, in milliseconds (MariaDB's wait_timeout;
    /// a session's `SET wait_timeout = <seconds>` overrides it).
    pub wait_timeout_ms: u64,
    /// Largest client command accepted, in bytes.
    pub max_allowed_packet: usize,
    /// Time a write to a client may wait for the client to read before
    /// its connection is closed, in milliseconds (MariaDB's
    /// net_write_timeout); 0 waits for ever. A client that stops reading a
    /// large result holds its backend connection no longer than this.
    pub client_write_timeout_ms: u64,
    /// Authentication plugin announced in the handshake:
    /// `mysql_native_password` or `caching_sha2_password`.
    pub auth_plugin: String,
    /// Time to connect and authenticate to a backend, in milliseconds.
    pub connect_timeout_ms: u64,
    /// Time a statement waits for a free backend connection, in milliseconds.
    pub acquire_timeout_ms: u64,
    /// Interval of backend health checks, in milliseconds.
    pub health_check_interval_ms: u64,
    /// Time a health-check ping gets before its backend counts as frozen,
    /// in milliseconds: statements to a frozen backend fail at once and
    /// reads waiting on it give up, until a probe gets an answer again.
    pub backend_ping_timeout_ms: u64,
    /// Longest wait for the next bytes of a backend's reply to a
    /// statement, in milliseconds; 0 (the default) waits as long as the
    /// statement runs (a frozen backend is still caught by the pings).
    pub backend_read_timeout_ms: u64,
    /// Prepared statements kept per backend connection (LRU beyond).
    pub backend_statement_cache: usize,
    /// How often the partition dictionary is reread from the main backend,
    /// so that changes made through other proxies arrive, in milliseconds.
    pub reload_interval_ms: u64,
    /// How long a statement that ran into a table renamed by a partition
    /// change waits for the change's new dictionary before it fails.
    pub fence_wait_ms: u64,
    /// How old the heartbeat of a running partition change may grow before
    /// another proxy takes the change over although its owner still holds
    /// its lock (the owner is stopped or cut off): it fences the owner
    /// (kills its backend connections) and rolls the change back or
    /// finishes it. In milliseconds.
    pub takeover_after_ms: u64,
    /// How long an HSCALE command or DDL statement waits for another
    /// change of its table (through any proxy) to end before it fails with
    /// 1205 naming the running operation, in milliseconds. The same
    /// command issued again waits for its twin whatever this says.
    pub change_wait_ms: u64,
    /// The most rows per second a partition change copies (0, the
    /// default: as fast as the backends go). A lower rate leaves the
    /// servers more room for the clients' writes during the copy, and
    /// makes the change last longer.
    pub change_copy_rows_per_s: u64,
    /// A change that carves keys out of a partition that keeps others
    /// (ADD_PARTITION out of the default partition) deletes the moving rows
    /// from it during its cutover, while that partition's writes wait,
    /// when at most this many rows move. When more move, the rows that stay
    /// are copied too, into a fresh table that replaces the partition's at
    /// the cutover, so no write waits for a long delete (a million rows
    /// took 7 s here) at the cost of copying them.
    pub change_delete_max_rows: u64,
    /// Which ALTER TABLEs of a partitioned table run as an online change
    /// (a shadow table per partition, copied while the table is written,
    /// one cutover): `auto` (the default) those the backend would run by
    /// copying the table with writes blocked (it refuses them with
    /// `LOCK=NONE`), `always` every ALTER TABLE that can, `off` none.
    /// Left out of a written config while `auto`, so that a config the
    /// playground writes still starts an hscale from before the setting.
    #[serde(skip_serializing_if = "OnlineSchemaChanges::is_auto")]
    pub online_schema_changes: OnlineSchemaChanges,
    /// Identical reads of several sessions share one backend execution
    /// that starts after they all arrived (`exec/coalesce.rs`). Left out
    /// of a written config while on (the default), so a config the
    /// playground writes still starts an hscale from before the setting.
    #[serde(skip_serializing_if = "is_true")]
    pub coalesce: bool,
    /// Reads a coalesced batch takes besides the one that runs it; a read
    /// beyond it runs on its own (never an error or an empty answer
    /// because of the cap). Left out of a written config at its default.
    #[serde(skip_serializing_if = "is_default_coalesce_members")]
    pub coalesce_max_members: usize,
    /// The longest a coalesced batch waits for the execution in flight
    /// before it starts anyway, closed to later reads (1,000 ms by
    /// default): one slow query or one client slow to read holds up the
    /// reads behind it no longer. Left out of a written config at its
    /// default.
    #[serde(skip_serializing_if = "is_default_turn_wait")]
    pub coalesce_turn_wait_ms: u64,
    /// Pipelined lanes per backend, worker and session state: autocommit
    /// reads of many sessions share a lane's connection, written to the
    /// server together and answered in order (`backend/lane.rs`). 0 turns
    /// them off. Left out of a written config at its default.
    #[serde(skip_serializing_if = "is_default_lanes")]
    pub pipeline_lanes: usize,
    /// How long a statement of a transaction that spans backends waits for
    /// a row lock (the branches' `innodb_lock_wait_timeout`, rounded up to
    /// whole seconds) unless the session set its own: a deadlock between
    /// backends is seen by neither server and ends only by this wait, with
    /// error 1205. 0 leaves the servers' own setting (50 s by default).
    pub cross_backend_lock_wait_ms: u64,
    /// Where tables retired by partition changes go: empty (the default)
    /// drops them; a database name keeps them there, on the backend that
    /// held them, under their retired name (`<table>_retired_g<op>`).
    pub keep_retired_db: String,
    /// Rows a merge across partitions may hold at once (groups, DISTINCT
    /// values, buffered sorted rows); past it the statement fails with an
    /// error instead of growing the proxy's memory.
    pub merge_max_rows: usize,
    /// How long the server of a partition sent ahead in a scan over
    /// several partitions waits for hscale to read its rows (its
    /// net_write_timeout while the earlier partitions reach a slow
    /// client), in milliseconds.
    pub scatter_write_timeout_ms: u64,
    /// Rows a statement may copy between backends (joins that are not
    /// co-partitioned, and reads answered by one server with copies of the
    /// partitioned tables); past it the statement fails with an error.
    pub ship_max_rows: usize,
    /// The largest file a `LOAD DATA LOCAL INFILE` into a partitioned
    /// table may send, in bytes: the proxy holds the file while it cuts it
    /// into rows for the partitions; past it the statement fails (1235)
    /// and nothing is loaded.
    pub load_data_max_bytes: usize,
    /// Statements at least this long, in bytes, are planned on a thread
    /// of their own, so the other sessions of their worker go on
    /// meanwhile (planning is linear in the statement's size).
    pub plan_offload_bytes: usize,
    /// Longest a statement planned on its own thread may take to plan, in
    /// milliseconds; past it the statement is refused (1969, as MariaDB's
    /// max_statement_time) and nothing of it runs.
    pub plan_timeout_ms: u64,
    /// After SIGTERM: how long running statements may take to finish
    /// before the proxy exits anyway, in milliseconds. Idle sessions are
    /// closed at once; new connections are refused from the start.
    pub shutdown_timeout_ms: u64,
    /// How often this proxy writes its heartbeat (and the dictionary
    /// version it holds) to `hscale.proxies` on the main backend, in
    /// milliseconds (`HSCALE SHOW PROXIES`).
    pub heartbeat_interval_ms: u64,
    /// A proxy whose last heartbeat is older than this (by the main
    /// backend's clock) is shown `stale` by `HSCALE SHOW PROXIES`, in
    /// milliseconds.
    pub proxy_stale_after_ms: u64,
    /// The row of a proxy silent for this long is deleted from
    /// `hscale.proxies` (by any proxy's heartbeat), in milliseconds.
    pub proxy_forget_after_ms: u64,
    /// A replica (`[[backends]] replicas`) serves reads only while its
    /// replication lag is at most this, in milliseconds (MariaDB reports
    /// `Seconds_Behind_Master` in whole seconds: 1000 admits a lag of
    /// one second).
    pub replica_max_lag_ms: u64,
    /// How often each replica's replication state is read (`SHOW SLAVE
    /// STATUS`), in milliseconds: a replica that stops or falls behind is
    /// left within this long.
    pub replica_check_interval_ms: u64,
    /// Automatic failover (`admin/failover.rs`): a backend's primary
    /// found down (no connect, no reply) for this long, in milliseconds,
    /// is replaced by its most advanced replica, by one proxy of the
    /// fleet. 0 (the default): off. Off by default because a failover
    /// without semi-synchronous replication can lose writes the old
    /// primary acknowledged and had not sent to any replica, and because
    /// a bound shorter than a server's restart turns every restart into a
    /// failover: the operator turns it on knowing both. Left out of a
    /// written config while 0, so that older binaries still load it.
    #[serde(skip_serializing_if = "is_zero")]
    pub failover_after_ms: u64,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            listen: "127.0.0.1:6033".into(),
            socket: None,
            workers: 0,
            max_connections: 10_000,
            max_handshakes: 1024,
            handshake_timeout_ms: 10_000,
            wait_timeout_ms: 28_800_000,
            failed_login_threshold: 0,
            failed_login_delay_ms: 1_000,
            failed_login_max_delay_ms: 30_000,
            max_allowed_packet: 64 * 1024 * 1024,
            client_write_timeout_ms: 60_000,
            auth_plugin: hscale_wire::auth::NATIVE_PASSWORD.into(),
            connect_timeout_ms: 3_000,
            acquire_timeout_ms: 10_000,
            health_check_interval_ms: 5_000,
            backend_ping_timeout_ms: 3_000,
            backend_read_timeout_ms: 0,
            backend_statement_cache: 128,
            reload_interval_ms: 1_000,
            fence_wait_ms: 5_000,
            takeover_after_ms: 10_000,
            change_wait_ms: 60_000,
            change_copy_rows_per_s: 0,
            change_delete_max_rows: 10_000,
            online_schema_changes: OnlineSchemaChanges::Auto,
            coalesce: true,
            coalesce_max_members: COALESCE_MAX_MEMBERS,
            coalesce_turn_wait_ms: COALESCE_TURN_WAIT_MS,
            pipeline_lanes: PIPELINE_LANES,
            cross_backend_lock_wait_ms: 10_000,
            keep_retired_db: String::new(),
            merge_max_rows: 1_000_000,
            ship_max_rows: 100_000,
            load_data_max_bytes: 256 << 20,
            scatter_write_timeout_ms: 3_600_000,
            shutdown_timeout_ms: 30_000,
            plan_offload_bytes: 64 * 1024,
            plan_timeout_ms: 5_000,
            heartbeat_interval_ms: 1_000,
            proxy_stale_after_ms: 10_000,
            proxy_forget_after_ms: 3_600_000,
            replica_max_lag_ms: 1_000,
            replica_check_interval_ms: 250,
            failover_after_ms: 0,
        }
    }
}

/// TLS to clients: with `cert` and `key` set the handshake offers
/// CLIENT_SSL and a client that sends an SSLRequest continues over TLS.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsConfig {
    /// PEM file with the certificate chain, the proxy's own first.
    pub cert: Option<String>,
    /// PEM file with the private key (PKCS#8, PKCS#1 or SEC1).
    pub key: Option<String>,
    /// Refuse TCP clients that do not ask for TLS (as MariaDB's
    /// require_secure_transport: error 3159 after the login). The unix
    /// socket counts as secure.
    pub require: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// A `tracing` filter such as `info` or `info,hscale::session=debug`;
    /// `RUST_LOG` overrides it.
    pub filter: String,
    /// Statements that take at least this long are logged (target
    /// `hscale::slow`, level warn) with their time, rows and text, in
    /// milliseconds; 0 (the default) logs none.
    pub slow_statement_ms: u64,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            filter: "info".into(),
            slow_statement_ms: 0,
        }
    }
}

/// Prometheus metrics and query digests.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Address of the HTTP endpoint that serves `/metrics` in Prometheus's
    /// text format, such as `"127.0.0.1:9104"`; empty (the default) serves
    /// none. The counters are kept either way.
    pub listen: String,
    /// Statement fingerprints `HSCALE SHOW DIGESTS` keeps per proxy; the
    /// statements of fingerprints beyond it are counted under one
    /// `<other>` digest.
    pub max_digests: usize,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            listen: String::new(),
            max_digests: 5_000,
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_true(b: &bool) -> bool {
    *b
}

/// Members a coalesced batch takes besides its leader by default
/// (`[proxy] coalesce_max_members`, `exec/coalesce.rs`); a request beyond
/// it runs on its own.
pub const COALESCE_MAX_MEMBERS: usize = 8192;

/// `[proxy] pipeline_lanes`' default.
pub const PIPELINE_LANES: usize = 2;

fn is_default_lanes(n: &usize) -> bool {
    *n == PIPELINE_LANES
}

fn is_default_coalesce_members(n: &usize) -> bool {
    *n == COALESCE_MAX_MEMBERS
}

/// The longest a coalesced batch waits for the execution in flight before
/// it starts anyway, closed to later reads (`[proxy]
/// coalesce_turn_wait_ms`'s default, `exec/coalesce.rs`): a slow query or
/// client holds up the batch no longer.
pub const COALESCE_TURN_WAIT_MS: u64 = 1_000;

fn is_default_turn_wait(ms: &u64) -> bool {
    *ms == COALESCE_TURN_WAIT_MS
}

/// `[proxy] online_schema_changes = "auto" | "always" | "off"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnlineSchemaChanges {
    Auto,
    Always,
    Off,
}

impl OnlineSchemaChanges {
    pub fn is_auto(&self) -> bool {
        *self == OnlineSchemaChanges::Auto
    }
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendConfig {
    pub name: String,
    pub address: String,
    pub user: String,
    #[serde(default)]
    pub password: String,
    #[serde(default = "default_min")]
    pub min_connections: usize,
    #[serde(default = "default_max")]
    pub max_connections: usize,
    /// Reach this backend over TLS, verifying its certificate against `ca`
    /// (`backend/tls.rs`).
    #[serde(default)]
    pub tls: bool,
    /// PEM file of the CA certificate(s) the backend's certificate must
    /// chain to; required with `tls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// A client certificate (PEM chain) and its key, for backend accounts
    /// that `REQUIRE X509`; both or neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The name the backend's certificate must carry; unset: the host of
    /// `address` (an IP address is matched against the IP SANs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Replicas of this backend (MariaDB replication from it), as
    /// addresses reached with the same user, password and TLS settings.
    /// Reads may go to them by an explicit choice (`[[users]] read_from`,
    /// `SET hscale_read_from`; `backend/replicas.rs`). Left out of a
    /// written config when empty, so it still starts an older hscale.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<String>,
}

impl Default for BackendConfig {
    fn default() -> Self {
        BackendConfig {
            name: String::new(),
            address: String::new(),
            user: String::new(),
            password: String::new(),
            min_connections: default_min(),
            max_connections: default_max(),
            tls: false,
            ca: None,
            cert: None,
            key: None,
            server_name: None,
            replicas: Vec::new(),
        }
    }
}

fn default_min() -> usize {
    1
}
fn default_max() -> usize {
    64
}

impl std::fmt::Debug for BackendConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendConfig")
            .field("name", &self.name)
            .field("address", &self.address)
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .field("min_connections", &self.min_connections)
            .field("max_connections", &self.max_connections)
            .field("tls", &self.tls)
            .field("ca", &self.ca)
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field("server_name", &self.server_name)
            .field("replicas", &self.replicas)
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("{path}: invalid configuration:\n  - {}", problems.join("\n  - "))]
    Invalid { path: String, problems: Vec<String> },
}

impl Config {
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: p.clone(),
            source,
        })?;
        let cfg = Config::parse(&text).map_err(|message| ConfigError::Parse {
            path: p.clone(),
            message,
        })?;
        let problems = cfg.problems();
        if problems.is_empty() {
            Ok(cfg)
        } else {
            Err(ConfigError::Invalid { path: p, problems })
        }
    }

    pub fn parse(text: &str) -> Result<Config, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    pub fn worker_threads(&self) -> usize {
        if self.proxy.workers == 0 {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        } else {
            self.proxy.workers
        }
    }

    pub fn user(&self, name: &str) -> Option<&UserConfig> {
        self.users.iter().find(|u| u.name == name)
    }

    /// The distinct backend accounts of `[[users]]` (`backend_user`,
    /// `backend_password`), in order of first use: identity `i + 1` in
    /// [`Config::identity`]; identity 0 is the proxy's own account.
    pub fn backend_identities(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for u in &self.users {
            if let Some(name) = &u.backend_user {
                let id = (name.clone(), u.backend_password.clone());
                if !out.contains(&id) {
                    out.push(id);
                }
            }
        }
        out
    }

    /// The backend identity user `name`'s statements run as: 0 for the
    /// proxy's own account, else one plus its place in
    /// [`Config::backend_identities`].
    pub fn identity(&self, name: &str) -> usize {
        let Some(u) = self.user(name) else { return 0 };
        let Some(backend_user) = &u.backend_user else {
            return 0;
        };
        self.backend_identities()
            .iter()
            .position(|(n, p)| n == backend_user && *p == u.backend_password)
            .map_or(0, |i| i + 1)
    }
}

#[cfg(test)]
mod tests;
