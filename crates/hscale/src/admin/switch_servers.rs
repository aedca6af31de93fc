//! What a switch (switchover, failover, rejoin, and the repair of one
//! cut short) does on one server of a backend, the steps
//! `failover.rs`, `failover_main.rs` and `switch_journal.rs` are made of:
//!
//! ```text
//!  the replica:        promotable? (check_promotable), caught up with the
//!                      fenced primary and detached (caught_up_and_detached),
//!                      or, its primary down, what it received applied
//!                      (caught_up)
//!  the old primary:    read lock, read_only, its clients killed (read_lock,
//!                      kill_clients)
//!  any server:         a replica of another (replicate_from)
//!  GTID positions:     compared (gtid_rank), what one lacks (lacking)
//! ```

use crate::backend::BackendConn;
use crate::error::ProxyError;
use crate::partition::quote_str;
use crate::partition::store::{exec, server_error};

/// How long the old primary's read lock waits for running statements
/// before it kills them, and how long the replica gets to catch up.
pub(super) const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(10);

/// A switchover's replica `b` once it holds everything up to the fenced
/// primary's position `pos` (waited for at most [`CATCH_UP`]), no longer
/// replicating; refused with nothing changed when it does not get there.
pub(super) async fn caught_up_and_detached(
    b: &mut BackendConn,
    replica: &str,
    pos: &str,
) -> Result<(), ProxyError> {
    let wait = format!(
        "SELECT MASTER_GTID_WAIT({}, {})",
        quote_str(pos),
        CATCH_UP.as_secs()
    );
    if one(b, &wait).await?.as_deref() != Some("0") {
        return Err(ProxyError::Refused(format!(
            "the replica {replica} did not reach the primary's position {pos} within {} s; nothing was changed",
            CATCH_UP.as_secs()
        )));
    }
    exec(b, &["STOP SLAVE".into(), "RESET SLAVE ALL".into()]).await
}

/// The first column of the first row `sql` reads.
pub(super) async fn one(c: &mut BackendConn, sql: &str) -> Result<Option<String>, ProxyError> {
    let r = c
        .query_rows(sql)
        .await?
        .map_err(|e| server_error(c, sql, e))?;
    Ok(r.strings()
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten()))
}

/// A replica can become the primary: it replicates (both threads) and
/// keeps a binary log, which the old primary and the other replicas will
/// replicate from.
pub(super) async fn check_promotable(b: &mut BackendConn, replica: &str) -> Result<(), ProxyError> {
    if one(b, "SELECT @@GLOBAL.log_bin").await?.as_deref() != Some("1") {
        return Err(ProxyError::Refused(format!(
            "the replica {replica} keeps no binary log (log_bin, log_slave_updates): the old primary and the other replicas could not replicate from it"
        )));
    }
    let sql = "SHOW SLAVE STATUS";
    let status = b
        .query_rows(sql)
        .await?
        .map_err(|e| server_error(b, sql, e))?;
    let names: Vec<&str> = status.columns.iter().map(|c| c.name.as_str()).collect();
    let rows = status.strings();
    // No lag bound: the switch waits for it to catch up.
    let (_, why) = crate::backend::replicas::judge(&names, rows.first().map(|r| &r[..]), u64::MAX);
    match why {
        Some(why) => Err(ProxyError::Refused(format!(
            "the replica {replica} is not replicating ({why}); nothing was changed"
        ))),
        None => Ok(()),
    }
}

/// FLUSH TABLES WITH READ LOCK and read_only on the old primary, then
/// every other client connection killed: no write commits there any more,
/// not even once the lock goes with this connection (its proxy dies
/// half-way: `switch_journal.rs`). The hscale account writes despite
/// `read_only`, so a connection opened before the fence (a proxy's pooled
/// one, its heartbeat's) would write there after the lock; every
/// connection opened after it finds the server read-only
/// (`Pool::connect`) and is not used. A statement that holds the lock up
/// past [`CATCH_UP`] (a long write, an open LOCK TABLES) is killed, then
/// the lock is taken again. How many connections were killed.
pub(super) async fn read_lock(a: &mut BackendConn) -> Result<usize, ProxyError> {
    exec(
        a,
        &[format!(
            "SET SESSION lock_wait_timeout = {}",
            CATCH_UP.as_secs()
        )],
    )
    .await?;
    for attempt in 0..2 {
        let sql = "FLUSH TABLES WITH READ LOCK";
        match a.command(&BackendConn::payload_for_query(sql)).await? {
            Ok(_) => {
                exec(a, &["SET GLOBAL read_only = 1".into()]).await?;
                return kill_clients(a).await;
            }
            Err(e) if e.code == 1205 && attempt == 0 => {
                // Kill the statements that run (those waiting for the lock
                // are not writing yet, but cannot be told apart cheaply).
                let running = "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND COMMAND = 'Query' AND USER NOT IN ('system user', 'event_scheduler')";
                let r = a
                    .query_rows(running)
                    .await?
                    .map_err(|e| server_error(a, running, e))?;
                for id in r
                    .strings()
                    .into_iter()
                    .filter_map(|r| r.into_iter().next().flatten())
                {
                    let _ = a
                        .command(&BackendConn::payload_for_query(&format!("KILL {id}")))
                        .await;
                }
            }
            Err(e) => {
                a.is_broken = true;
                return Err(server_error(a, sql, e));
            }
        }
    }
    Err(ProxyError::Refused(
        "the old primary's read lock could not be taken".into(),
    ))
}

/// Kill every client connection of the old primary but this one (not the
/// server's own threads, nor its replicas' binlog dumps); how many.
pub(super) async fn kill_clients(a: &mut BackendConn) -> Result<usize, ProxyError> {
    let sql = "SELECT ID FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() \
               AND COMMAND NOT IN ('Binlog Dump', 'Daemon', 'Slave_IO', 'Slave_SQL', 'Slave_worker') \
               AND USER NOT IN ('system user', 'event_scheduler')";
    let r = a
        .query_rows(sql)
        .await?
        .map_err(|e| server_error(a, sql, e))?;
    let mut killed = 0;
    for id in r
        .strings()
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
    {
        // Gone already: 1094.
        if let Ok(Ok(_)) = a
            .command(&BackendConn::payload_for_query(&format!(
                "KILL CONNECTION {id}"
            )))
            .await
        {
            killed += 1;
        }
    }
    Ok(killed)
}

/// Make `c` a read-only replica of `primary` (GTID replication, the
/// backend's account), from `from` (its own last position, for an old
/// primary) or from where it is.
pub(super) async fn replicate_from(
    c: &mut BackendConn,
    primary: &str,
    cfg: &crate::config::BackendConfig,
    from: Option<&str>,
) -> Result<(), ProxyError> {
    let (host, port) = primary.rsplit_once(':').unwrap_or((primary, "3306"));
    let mut sql = vec![
        "STOP SLAVE".to_string(),
        "SET GLOBAL read_only = 1".to_string(),
    ];
    if let Some(pos) = from {
        sql.push(format!("SET GLOBAL gtid_slave_pos = {}", quote_str(pos)));
    }
    sql.push(format!(
        "CHANGE MASTER TO MASTER_HOST = {}, MASTER_PORT = {}, MASTER_USER = {}, MASTER_PASSWORD = {}, MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1",
        quote_str(host.trim_start_matches('[').trim_end_matches(']')),
        port.parse::<u16>().unwrap_or(3306),
        quote_str(&cfg.user),
        quote_str(&cfg.password)
    ));
    sql.push("START SLAVE".into());
    exec(c, &sql).await
}

/// A replica of a primary that is down: its I/O thread stopped, what it
/// received applied; the connection and its position (`Gtid_IO_Pos`, what
/// it received, which is what it has now).
pub(super) async fn caught_up(
    pool: &crate::backend::Pool,
    address: &str,
) -> Result<(BackendConn, String), ProxyError> {
    let mut c = pool.connect_to(address).await?;
    // (Its SQL thread started: a failover cut short stopped it.)
    exec(
        &mut c,
        &[
            "STOP SLAVE IO_THREAD".into(),
            "START SLAVE SQL_THREAD".into(),
        ],
    )
    .await?;
    let sql = "SHOW SLAVE STATUS";
    let status = c
        .query_rows(sql)
        .await?
        .map_err(|e| server_error(&c, sql, e))?;
    let at = status
        .columns
        .iter()
        .position(|col| col.name.eq_ignore_ascii_case("Gtid_IO_Pos"));
    let received = status
        .strings()
        .into_iter()
        .next()
        .and_then(|r| at.and_then(|i| r.get(i).cloned().flatten()))
        .ok_or_else(|| ProxyError::Refused(format!("{address} is not a replica")))?;
    let wait = format!(
        "SELECT MASTER_GTID_WAIT({}, {})",
        quote_str(&received),
        CATCH_UP.as_secs()
    );
    if one(&mut c, &wait).await?.as_deref() != Some("0") {
        return Err(ProxyError::Refused(format!(
            "{address} did not apply what it received ({received}) within {} s",
            CATCH_UP.as_secs()
        )));
    }
    Ok((c, received))
}

/// The GTIDs of `pos` (a server's `@@gtid_binlog_pos`, `domain-server-seq`
/// each) that `state` (another server's `@@gtid_binlog_state`: the last
/// sequence number per domain and server) does not hold: what the first
/// server wrote that the second lacks. Empty: the first may replicate
/// from the second from its own position.
pub(super) fn lacking(pos: &str, state: &str) -> Vec<String> {
    let split = |g: &str| {
        let g = g.trim();
        let (ds, seq) = g.rsplit_once('-')?;
        Some((ds.to_string(), seq.parse::<u64>().ok()?))
    };
    let held: Vec<(String, u64)> = state.split(',').filter_map(split).collect();
    pos.split(',')
        .filter(|g| !g.trim().is_empty())
        .filter(|g| match split(g) {
            Some((ds, seq)) => !held.iter().any(|(h, n)| *h == ds && *n >= seq),
            None => true,
        })
        .map(|g| g.trim().to_string())
        .collect()
}

/// How far a GTID position (`domain-server-seq,...`) is: the sum of its
/// domains' sequence numbers (replicas of one primary share its domains).
pub(super) fn gtid_rank(pos: &str) -> u64 {
    pos.split(',')
        .filter_map(|g| g.trim().rsplit('-').next()?.parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::{gtid_rank, lacking};

    #[test]
    fn positions_compare_by_sequence() {
        assert!(gtid_rank("0-1-120") > gtid_rank("0-1-119"));
        assert!(gtid_rank("0-2-121") > gtid_rank("0-1-120"));
        assert_eq!(gtid_rank(""), 0);
        assert_eq!(gtid_rank("0-1-5,1-1-7"), 12);
    }

    #[test]
    fn what_a_server_wrote_that_another_lacks() {
        // The old primary's heartbeat after the fence (0-1-181) while the
        // new one went on (0-2-183): it cannot replicate from it.
        assert_eq!(lacking("0-1-181", "0-1-180,0-2-183"), vec!["0-1-181"]);
        assert!(lacking("0-1-180", "0-1-180,0-2-183").is_empty());
        assert!(lacking("0-1-12", "0-1-180").is_empty());
        assert!(lacking("", "0-1-1").is_empty());
        assert_eq!(lacking("0-1-3,1-1-9", "0-1-3"), vec!["1-1-9"]);
    }
}
