#![allow(clippy::unwrap_used)]
//! A frozen backend (its mariadbd stopped with SIGSTOP: connections stay
//! open, nothing answers) is found by the health check within seconds:
//! statements waiting on it fail with a clear error, new ones fail at
//! once, statements to the other backend never wait, and it is used again
//! once it answers.

mod common;

use std::time::{Duration, Instant};

use common::*;
use mysql_async::prelude::*;

fn signal(backend: usize, sig: libc::c_int) {
    let pid = with_cluster(|c| c.servers[backend].pid()).expect("server runs");
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on a child process the harness started.
    let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(rc, 0);
}

/// Resumes the server even when the test fails half-way.
struct Resume(usize);

impl Drop for Resume {
    fn drop(&mut self) {
        signal(self.0, libc::SIGCONT);
    }
}

async fn get(
    c: &mut mysql_async::Conn,
    id: i32,
) -> (Result<Option<i32>, mysql_async::Error>, Duration) {
    let start = Instant::now();
    let r = c
        .query_first(format!("SELECT v FROM frozen_db.t WHERE id = {id}"))
        .await;
    (r, start.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_backend_is_found_and_harms_no_one_else() {
    let info = cluster(2);
    fresh_db("frozen_db").await;
    let mut setup = proxy_conn(None).await;
    setup
        .query_drop("CREATE TABLE frozen_db.t (id INT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    setup
        .query_drop("HSCALE SETUP_TABLE('frozen_db.t', 'id', 't_default', 'shard0', 'NONE()')")
        .await
        .unwrap();
    setup
        .query_drop("HSCALE ADD_PARTITION('frozen_db.t', 'p2', '2', 'shard1')")
        .await
        .unwrap();
    setup
        .query_drop("INSERT INTO frozen_db.t (id, v) VALUES (1, 10), (2, 20)")
        .await
        .unwrap();
    setup.disconnect().await.unwrap();
    drop(info);

    // A proxy of its own with quick health checks.
    let mut config = cluster_config();
    config.proxy.health_check_interval_ms = 300;
    config.proxy.backend_ping_timeout_ms = 1_000;
    config.proxy.workers = 1;
    let proxy = hscale::RunningProxy::start(config, "127.0.0.1:0").unwrap();
    let port = proxy.addr.port();
    let mut a = mysql_async::Conn::new(proxy_opts(port, None))
        .await
        .unwrap();
    let mut b = mysql_async::Conn::new(proxy_opts(port, None))
        .await
        .unwrap();
    assert_eq!(get(&mut a, 2).await.0.unwrap(), Some(20));
    assert_eq!(get(&mut b, 1).await.0.unwrap(), Some(10));

    signal(1, libc::SIGSTOP);
    let resume = Resume(1);
    // A statement on the frozen backend fails within seconds, while one
    // on the other backend is answered at once meanwhile.
    let frozen = tokio::spawn(async move {
        let r = get(&mut a, 2).await;
        (a, r)
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (r, took) = get(&mut b, 1).await;
    assert_eq!(r.unwrap(), Some(10));
    assert!(
        took < Duration::from_secs(1),
        "the healthy backend took {took:?}"
    );
    let (mut a, (r, took)) = tokio::time::timeout(Duration::from_secs(20), frozen)
        .await
        .expect("the statement on the frozen backend still waits after 20 s")
        .unwrap();
    let e = r.unwrap_err();
    assert!(matches!(code(&e), 1158 | 1429), "{e}");
    assert!(took < Duration::from_secs(8), "found frozen after {took:?}");
    eprintln!("statement on the frozen backend failed after {took:?}: {e}");
    // Now it is known to be frozen: new statements fail at once.
    let (r, took) = get(&mut a, 2).await;
    let e = r.unwrap_err();
    assert_eq!(code(&e), 1429, "{e}");
    assert!(e.to_string().contains("not answering"), "{e}");
    assert!(took < Duration::from_millis(500), "{took:?}");
    assert_eq!(get(&mut a, 1).await.0.unwrap(), Some(10));

    drop(resume);
    let start = Instant::now();
    loop {
        match get(&mut a, 2).await.0 {
            Ok(v) => {
                assert_eq!(v, Some(20));
                break;
            }
            Err(e) => {
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "still failing: {e}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    a.disconnect().await.unwrap();
    b.disconnect().await.unwrap();
}
