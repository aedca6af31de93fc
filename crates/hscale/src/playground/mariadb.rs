//! Real MariaDB servers for the playground and the tests: find the server
//! binary, initialize a data directory (once per machine, then copied),
//! start it on a loopback port, wait until it answers, stop it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// User and password the playground creates on every server for hscale.
pub const BACKEND_USER: &str = "hscale";
pub const BACKEND_PASSWORD: &str = "hscale";

/// A running MariaDB server we started.
pub struct MariaDb {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    /// Server options beyond the harness's own (`start_with`), kept for
    /// `restart` (a test may add one before it: a later option wins).
    pub extra: Vec<String>,
}

fn search_path() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for extra in ["/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin"] {
        dirs.push(PathBuf::from(extra));
    }
    dirs
}

fn find_program(names: &[&str]) -> Option<PathBuf> {
    for dir in search_path() {
        for name in names {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// The server binary, or an error saying what to install.
pub fn server_binary() -> Result<PathBuf, String> {
    find_program(&["mariadbd", "mysqld"]).ok_or_else(|| {
        "no MariaDB server found (mariadbd or mysqld on PATH or in /usr/sbin): install it with \
         `apt-get install mariadb-server` (or run `make demo`, which installs it)"
            .to_string()
    })
}

fn install_db_binary() -> Result<PathBuf, String> {
    find_program(&["mariadb-install-db", "mysql_install_db"]).ok_or_else(|| {
        "mariadb-install-db not found: install it with `apt-get install mariadb-server`".to_string()
    })
}

fn is_root() -> bool {
    nix_geteuid() == 0
}

#[allow(unsafe_code)]
fn nix_geteuid() -> u32 {
    // SAFETY: geteuid never fails and touches no memory.
    unsafe { libc::geteuid() }
}

/// A free loopback port (bound then released; the small race is acceptable
/// for tests and the playground).
pub fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// An initialized data directory, made once per machine and user and then
/// copied: mariadb-install-db takes seconds, a copy milliseconds.
fn template() -> Result<PathBuf, String> {
    // One initialization at a time within this process; across processes the
    // staging directory is unique and the final rename is atomic.
    static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = INIT.lock().unwrap_or_else(|p| p.into_inner());
    let base = std::env::temp_dir().join(format!("hscale-mariadb-template-{}", nix_geteuid()));
    if base.join("mysql").is_dir() {
        return Ok(base);
    }
    let mut r = [0u8; 4];
    let _ = getrandom::fill(&mut r);
    let staging = std::env::temp_dir().join(format!(
        "hscale-mariadb-template-{}-{}-{}",
        nix_geteuid(),
        std::process::id(),
        u32::from_le_bytes(r)
    ));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| format!("create {}: {e}", staging.display()))?;
    let mut cmd = Command::new(install_db_binary()?);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", staging.display()))
        .arg("--auth-root-authentication-method=normal")
        .arg("--skip-test-db")
        .arg("--skip-name-resolve");
    if is_root() {
        cmd.arg("--user=root");
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("run mariadb-install-db: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // Another process may have won the race; either template is fine.
    if std::fs::rename(&staging, &base).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    Ok(base)
}

const INIT_SQL: &str = "\
DROP USER IF EXISTS ''@'localhost';
DROP USER IF EXISTS ''@'%';
CREATE USER IF NOT EXISTS 'hscale'@'%' IDENTIFIED BY 'hscale';
GRANT ALL PRIVILEGES ON *.* TO 'hscale'@'%' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS 'hscale'@'localhost' IDENTIFIED BY 'hscale';
GRANT ALL PRIVILEGES ON *.* TO 'hscale'@'localhost' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
FLUSH PRIVILEGES;
";

impl MariaDb {
    /// Initialize `dir` if needed and start a server on a free port.
    pub fn start(dir: &Path) -> Result<MariaDb, String> {
        MariaDb::start_with(dir, &[])
    }

    /// [`MariaDb::start`] with extra server options (`--ssl-cert=...`).
    pub fn start_with(dir: &Path, extra: &[String]) -> Result<MariaDb, String> {
        if !dir.join("mysql").is_dir() {
            let t = template()?;
            std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
            let st = Command::new("cp")
                .arg("-a")
                .arg(format!("{}/.", t.display()))
                .arg(dir)
                .status()
                .map_err(|e| format!("cp: {e}"))?;
            if !st.success() {
                return Err(format!(
                    "copying the data directory template into {} failed",
                    dir.display()
                ));
            }
        }
        let init = dir.join("hscale-init.sql");
        std::fs::write(&init, INIT_SQL).map_err(|e| format!("write {}: {e}", init.display()))?;
        let port = free_port().map_err(|e| e.to_string())?;
        MariaDb::start_on(dir, port, extra)
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn wait_ready(&mut self, timeout: Duration) -> Result<(), String> {
        use std::io::Read;
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!(
                        "mariadbd exited with {status} while starting; its log says:\n{}",
                        self.log_tail()
                    ));
                }
            }
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut hdr = [0u8; 5];
                // The init file runs before the server accepts connections.
                if s.read_exact(&mut hdr).is_ok() && hdr[4] == 10 {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "mariadbd did not start within {timeout:?}; its log says:\n{}",
            self.log_tail()
        ))
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// The server's process id while it runs (for tests that SIGSTOP it).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Kill the server at once (for fault tests).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stop gracefully (SIGTERM), killing after 20 seconds.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            #[allow(unsafe_code)]
            // SAFETY: kill(2) on our own child's pid; no memory is touched.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGTERM);
            }
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(20) {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Start again on the same port and data directory (after `kill`/`stop`).
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        let fresh = MariaDb::start_on(&self.dir, self.port, &self.extra)?;
        *self = fresh;
        Ok(())
    }

    fn start_on(dir: &Path, port: u16, extra: &[String]) -> Result<MariaDb, String> {
        let server = server_binary()?;
        let init = dir.join("hscale-init.sql");
        // A tmpdir of its own beside the data directory: a starting server
        // deletes every `#sql*` file in its tmpdir, which in a shared /tmp
        // are the temporary tables of the other servers running there
        // ("Error on delete of '/tmp/#sql-temptable-...'").
        let tmp = PathBuf::from(format!("{}.tmp", dir.display()));
        std::fs::create_dir_all(&tmp).map_err(|e| format!("create {}: {e}", tmp.display()))?;
        let mut cmd = Command::new(server);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", dir.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", dir.join("mysqld.sock").display()))
            .arg(format!("--pid-file={}", dir.join("mysqld.pid").display()))
            .arg(format!("--log-error={}", dir.join("error.log").display()))
            .arg(format!("--init-file={}", init.display()))
            .args([
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=64M",
                "--innodb-log-file-size=32M",
                "--innodb-flush-log-at-trx-commit=2",
                "--skip-log-bin",
                "--performance-schema=OFF",
                "--max-connections=2000",
                "--max-allowed-packet=1G",
                "--max-prepared-stmt-count=100000",
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_general_ci",
                "--table-open-cache=1000",
            ])
            .args(extra);
        if is_root() {
            cmd.arg("--user=root");
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("start mariadbd: {e}"))?;
        let mut db = MariaDb {
            port,
            dir: dir.to_path_buf(),
            child: Some(child),
            extra: extra.to_vec(),
        };
        db.wait_ready(Duration::from_secs(60))?;
        Ok(db)
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        self.stop();
    }
}
