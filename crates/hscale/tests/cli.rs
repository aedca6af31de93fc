#![allow(clippy::unwrap_used)]
//! The binary itself: `hscale check` and `hscale playground`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_hscale");

#[test]
fn check_names_every_problem() {
    let dir = std::env::temp_dir().join(format!("hscale-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[proxy]\nlisten = \"localhost\"\n[[backends]]\nname = \"main\"\naddress = \"127.0.0.1:3306\"\nuser = \"\"\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["check", "--config"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("listen = \"localhost\""), "{err}");
    assert!(err.contains("no [[users]]"), "{err}");
    assert!(err.contains("user is empty"), "{err}");
    let typo = dir.join("typo.toml");
    std::fs::write(&typo, "[proxy]\nworkers = 2\nmax_conections = 5\n").unwrap();
    let out = Command::new(BIN)
        .args(["check", "--config"])
        .arg(&typo)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown field `max_conections`"));
    let good = dir.join("good.toml");
    std::fs::write(
        &good,
        "[[users]]\nname = \"app\"\npassword = \"p\"\n[[backends]]\nname = \"main\"\naddress = \"127.0.0.1:3306\"\nuser = \"hscale\"\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["check", "--config"])
        .arg(&good)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A playground child, SIGTERMed if the test panics (it would keep its
/// servers, and any lock file the test runner holds, forever).
struct Playground {
    child: std::process::Child,
    port: String,
}

impl Drop for Playground {
    fn drop(&mut self) {
        if std::thread::panicking() {
            #[allow(unsafe_code)]
            // SAFETY: kill(2) on our own child.
            unsafe {
                libc::kill(self.child.id() as i32, libc::SIGTERM);
            }
            let _ = self.child.wait();
        }
    }
}

/// `hscale playground --demo` with this many backends, once it printed
/// `ready:`.
fn playground(shards: &str) -> Playground {
    let mut child = Command::new(BIN)
        .args([
            "playground",
            "--shards",
            shards,
            "--listen",
            "127.0.0.1:0",
            "--demo",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    if !line.starts_with("ready: mariadb -h127.0.0.1 -P") {
        // Say why the playground did not come up (it exited, or wrote to stderr).
        let _ = child.kill();
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
        panic!("no ready line: {line:?}; stderr: {err}");
    }
    let port = line
        .trim()
        .rsplit("-P")
        .next()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    Playground { child, port }
}

/// SIGTERM: the playground stops its servers and exits 0; its stderr.
fn stop(mut p: Playground) -> String {
    let mut stderr = String::new();
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(p.child.id() as i32, libc::SIGTERM);
    }
    let status = p.child.wait().unwrap();
    std::io::Read::read_to_string(&mut p.child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    stderr
}

#[test]
fn the_demos_printed_statements_work_as_printed() {
    let p = playground("4");
    // Exactly what `make demo` prints, through the mariadb CLI.
    let mut cli = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{}", p.port),
            "-uroot",
            "--batch",
            "--skip-ssl",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        &mut cli.stdin.take().unwrap(),
        hscale::playground::DEMO_TRY.as_bytes(),
    )
    .unwrap();
    let out = cli.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The move ended, and the operations list shows it done.
    let moved = text
        .lines()
        .find(|l| l.contains("MOVE_PARTITION") && l.contains("demo.visits"));
    assert!(
        moved.is_some_and(|l| l.to_ascii_lowercase().contains("done")),
        "{text}"
    );
    // The partition sits on shard0 now.
    let out = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{}", p.port),
            "-uroot",
            "--batch",
            "--skip-ssl",
            "-N",
            "-e",
            "HSCALE SHOW PARTITIONS('demo.visits')",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.lines()
            .any(|l| l.starts_with("demo.visits\tm07\t") && l.contains("\tshard0\t")),
        "{text}"
    );
    stop(p);
}

#[test]
fn playground_prints_ready_answers_and_cleans_up() {
    let p = playground("1");
    let port = p.port.clone();
    let out = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{port}"),
            "-uroot",
            "--batch",
            "--skip-ssl",
            "-e",
        ])
        .arg("SELECT 1; SELECT COUNT(*) FROM demo.orders")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "1\n1\nCOUNT(*)\n100\n"
    );
    // The demo is sharded: visits by month, products global.
    let out = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{port}"),
            "-uroot",
            "--batch",
            "--skip-ssl",
            "-N",
            "-e",
        ])
        .arg("HSCALE SHOW PARTITIONS('demo.visits'); SELECT COUNT(*) FROM demo.visits WHERE visited_on >= '2024-09-01'; HSCALE SHOW TABLES")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("demo.visits\tm0") && l.contains("\t2024-0"))
            .count(),
        3,
        "{text}"
    );
    assert!(lines.contains(&"960"), "{text}");
    assert!(text.contains("demo.products"), "{text}");
    // SIGTERM stops the servers and removes the temporary directory.
    let stderr = stop(p);
    let dir = stderr
        .split("data in ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap()
        .to_string();
    assert!(
        !std::path::Path::new(&dir).exists(),
        "{dir} was not removed"
    );
}
