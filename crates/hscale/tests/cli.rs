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

/// The proxy's code runs from anonymous memory on 2 MB pages
/// (`huge_text.rs`): the middle of the binary's executable mapping is
/// replaced by an anonymous executable one, on huge pages when the kernel
/// has transparent huge pages on (`always` or `madvise`), and statements
/// are answered as before.
#[test]
fn the_proxys_code_runs_from_huge_pages() {
    let p = playground("1");
    let pid = p.child.id();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    let exe = exe.to_string_lossy().to_string();
    let lines: Vec<&str> = maps.lines().collect();
    // An anonymous r-xp mapping right after one of the binary's r-xp ones.
    let moved = lines.windows(2).find_map(|w| {
        let is_exe_text = w[0].contains(" r-xp ") && w[0].ends_with(exe.as_str());
        let fields: Vec<&str> = w[1].split_whitespace().collect();
        let is_anon_text = fields.len() == 5 && fields[1] == "r-xp" && fields[4] == "0";
        (is_exe_text && is_anon_text).then(|| fields[0].to_string())
    });
    let moved = moved.unwrap_or_else(|| panic!("no moved text in\n{maps}"));
    let (a, b) = moved.split_once('-').unwrap();
    let (a, b) = (
        usize::from_str_radix(a, 16).unwrap(),
        usize::from_str_radix(b, 16).unwrap(),
    );
    assert_eq!(a % (2 << 20), 0, "{moved}");
    assert_eq!(b % (2 << 20), 0, "{moved}");
    let thp =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if !thp.contains("[never]") && !thp.is_empty() {
        let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap();
        let huge_kb: usize = smaps
            .lines()
            .skip_while(|l| !l.starts_with(&format!("{a:x}-")))
            .find_map(|l| l.strip_prefix("AnonHugePages:"))
            .map(|v| v.trim().trim_end_matches("kB").trim().parse().unwrap())
            .unwrap();
        assert!(
            huge_kb >= 2048,
            "AnonHugePages {huge_kb} kB of {moved} (THP {thp})"
        );
    }
    let out = Command::new("mariadb")
        .args([
            "-h127.0.0.1",
            &format!("-P{}", p.port),
            "-uroot",
            "--batch",
            "--skip-ssl",
            "-N",
            "-e",
        ])
        .arg("SELECT COUNT(*) FROM demo.orders")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "100\n");
    stop(p);
}
