//! The rows of `information_schema.PROCESSLIST` through hscale: one per
//! hscale client session, from what each publishes in its `SessionHandle`
//! (`session/processlist.rs`), as a derived table that
//! `exec/rewrite.rs` puts in place of the server's. As on a server, a
//! client without the right to see others (hscale's `admin`, the PROCESS
//! privilege of a server) sees only its own user's sessions.

use std::fmt::Write;

use hscale_wire::consts::com;

use super::Bindings;

/// The longest statement text shown; a server shows all of it, but the
/// rewritten statement must stay well under the backend's packet limit.
const MAX_INFO: usize = 64 * 1024;

/// The sessions this client may see, as the rows of
/// `information_schema.PROCESSLIST`: a `SELECT ... UNION ALL ...`
/// with MariaDB's columns, ordered by id.
pub fn processlist_table(bindings: &Bindings, is_admin: bool, user: &str) -> String {
    let mut sessions = bindings.ctx.sessions();
    // The session itself (registered after its login).
    if !sessions.iter().any(|(id, _)| *id == bindings.connection_id) {
        sessions.push((bindings.connection_id, bindings.handle.clone()));
    }
    sessions.sort_by_key(|(id, _)| *id);
    let now = std::time::Instant::now();
    let mut sql = String::new();
    for (id, handle) in &sessions {
        let name = handle
            .user
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if !is_admin && name != user {
            continue;
        }
        let a = handle.activity();
        let elapsed = now.saturating_duration_since(a.since);
        if !sql.is_empty() {
            sql.push_str(" UNION ALL ");
        }
        let _ = write!(sql, "SELECT CAST({id} AS UNSIGNED) AS ID, ");
        text(&mut sql, Some(name.as_bytes()));
        sql.push_str(" AS USER, ");
        text(&mut sql, Some(handle.host.as_bytes()));
        sql.push_str(" AS HOST, ");
        text(&mut sql, a.db.as_deref().map(str::as_bytes));
        let state = if a.command == "Sleep" {
            ""
        } else {
            "executing"
        };
        let _ = write!(
            sql,
            " AS DB, '{}' AS COMMAND, CAST({} AS SIGNED) AS TIME, '{state}' AS STATE, ",
            a.command,
            elapsed.as_secs()
        );
        let info = a.info.as_ref().map(|i| {
            let b = i.as_bytes();
            &b[..b.len().min(MAX_INFO)]
        });
        text(&mut sql, info);
        let _ = write!(
            sql,
            " AS INFO, CAST({}.{:03} AS DECIMAL(22,3)) AS TIME_MS, 0 AS STAGE, 0 AS MAX_STAGE, \
             CAST(0 AS DECIMAL(7,3)) AS PROGRESS, 0 AS MEMORY_USED, 0 AS MAX_MEMORY_USED, \
             0 AS EXAMINED_ROWS, 0 AS QUERY_ID, ",
            elapsed.as_millis(),
            elapsed.subsec_micros() % 1000
        );
        match info {
            Some(b) => hex(&mut sql, b),
            None => sql.push_str("NULL"),
        }
        sql.push_str(" AS INFO_BINARY, 0 AS TID");
    }
    sql
}

/// `SHOW [FULL] PROCESSLIST` as a SELECT over [`processlist_table`]:
/// a server's columns, the statement cut to 100 characters unless FULL.
pub fn show_processlist(bindings: &Bindings, is_admin: bool, user: &str, is_full: bool) -> String {
    let info = if is_full { "INFO" } else { "LEFT(INFO, 100)" };
    format!(
        "SELECT ID AS Id, USER AS User, HOST AS Host, DB AS db, COMMAND AS Command, \
         TIME AS Time, STATE AS State, {info} AS Info, PROGRESS AS Progress \
         FROM ({}) AS p ORDER BY ID",
        processlist_table(bindings, is_admin, user)
    )
}

/// `bytes` as an SQL string in utf8mb4 (a hex literal: any byte is safe),
/// or NULL.
fn text(sql: &mut String, bytes: Option<&[u8]>) {
    match bytes {
        Some(b) => {
            sql.push_str("CONVERT(");
            hex(sql, b);
            sql.push_str(" USING utf8mb4)");
        }
        None => sql.push_str("NULL"),
    }
}

/// `bytes` as a hex literal.
fn hex(sql: &mut String, bytes: &[u8]) {
    sql.push_str("X'");
    for b in bytes {
        let _ = write!(sql, "{b:02X}");
    }
    sql.push('\'');
}

/// The name a server gives command `cmd` in PROCESSLIST.
pub fn command_name(cmd: u8) -> &'static str {
    match cmd {
        com::QUERY => "Query",
        com::INIT_DB => "Init DB",
        com::FIELD_LIST => "Field List",
        com::STATISTICS => "Statistics",
        com::PROCESS_KILL => "Kill",
        com::PING => "Ping",
        com::CHANGE_USER => "Change user",
        com::STMT_PREPARE => "Prepare",
        com::STMT_EXECUTE => "Execute",
        com::STMT_SEND_LONG_DATA => "Long Data",
        com::STMT_CLOSE => "Close stmt",
        com::STMT_RESET => "Reset stmt",
        com::SET_OPTION => "Set option",
        com::STMT_FETCH => "Fetch",
        com::RESET_CONNECTION => "Reset connection",
        com::QUIT => "Quit",
        _ => "Query",
    }
}
