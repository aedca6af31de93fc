//! Table maintenance on a partitioned table (`Plan::Maintenance`):
//! CHECKSUM, ANALYZE, CHECK, OPTIMIZE and REPAIR TABLE run on every
//! partition, one after another, and are answered as one server holding
//! the table answers, with the server's column definitions and the
//! client's table name in the `Table` column.
//!
//! - CHECKSUM TABLE: one server's checksum is the sum of its rows'
//!   checksums modulo 2^32 (`handler::calculate_checksum`: `stats.checksum
//!   += row_crc` in an `ha_checksum`), so the partitions' checksums added
//!   modulo 2^32 are the table's; NULL (QUICK on a table without a live
//!   checksum) when a partition answers NULL.
//! - The others: each distinct row once, in the order the partitions
//!   first answered it (every partition saying `status OK` is one row, as
//!   one table's is; a partition reporting a problem adds its row).

use hscale_route::router::Maintenance;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{send, Exec};
use crate::error::ProxyError;

type Row = Vec<Option<Vec<u8>>>;

/// The partitions' CHECKSUM TABLE values (second column) added as one
/// server adds its rows' checksums: modulo 2^32, NULL if any is NULL.
fn summed_checksum(rows: &[Row]) -> Option<Vec<u8>> {
    let mut sum: u32 = 0;
    for row in rows {
        let value = row.get(1)?.as_deref()?;
        let n: u64 = std::str::from_utf8(value).ok()?.parse().ok()?;
        sum = sum.wrapping_add(n as u32);
    }
    Some(sum.to_string().into_bytes())
}

/// Each distinct row once, in first-seen order.
fn distinct(rows: Vec<Row>) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::with_capacity(rows.len());
    for row in rows {
        if !out.contains(&row) {
            out.push(row);
        }
    }
    out
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Exec<'_, S> {
    pub(super) async fn run_maintenance(&mut self, m: &Maintenance) -> Result<(), ProxyError> {
        let mut defs = Vec::new();
        let mut rows: Vec<Row> = Vec::new();
        for (target, sql) in &m.parts {
            let mut conn = match self.b.lease(target.backend, false).await? {
                Ok(c) => c,
                Err(err) => return self.write_server_error(1, &err).await,
            };
            match conn.query_raw(sql).await {
                Ok(Ok((d, r))) => {
                    self.b.give_back(conn);
                    defs = d;
                    rows.extend(r);
                }
                Ok(Err(err)) => {
                    self.b.give_back(conn);
                    return self.write_server_error(1, &err).await;
                }
                Err(e) => return Err(self.b.backend_lost(conn, e.to_string())),
            }
        }
        let name = format!("{}.{}", m.table.db, m.table.table).into_bytes();
        let rows: Vec<Row> = if m.is_checksum {
            vec![vec![Some(name), summed_checksum(&rows)]]
        } else {
            distinct(
                rows.into_iter()
                    .map(|mut row| {
                        if let Some(table) = row.first_mut() {
                            *table = Some(name.clone());
                        }
                        row
                    })
                    .collect(),
            )
        };
        let st = self.b.status();
        let mut header = self.reply(1).columns(defs.len());
        for d in &defs {
            header.column_def(d);
        }
        let mut out = header.rows(st);
        for row in &rows {
            let cells: Vec<Option<&[u8]>> = row.iter().map(|c| c.as_deref()).collect();
            out.text_row(&cells);
        }
        let n = out.count();
        send(out.finish(st, 0)).await?;
        self.scratch.note.rows += n;
        self.scratch.note.is_result = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(table: &str, value: Option<&str>) -> Row {
        vec![
            Some(table.as_bytes().to_vec()),
            value.map(|v| v.as_bytes().to_vec()),
        ]
    }

    #[test]
    fn checksums_add_modulo_2_to_the_32() {
        let rows = [row("a", Some("4294967295")), row("b", Some("2"))];
        assert_eq!(summed_checksum(&rows), Some(b"1".to_vec()));
        let rows = [row("a", Some("7")), row("b", None)];
        assert_eq!(summed_checksum(&rows), None);
        assert_eq!(summed_checksum(&[]), Some(b"0".to_vec()));
    }

    #[test]
    fn distinct_rows_keep_first_seen_order() {
        let rows = vec![
            row("t", Some("OK")),
            row("t", Some("bad")),
            row("t", Some("OK")),
        ];
        assert_eq!(
            distinct(rows),
            vec![row("t", Some("OK")), row("t", Some("bad"))]
        );
    }
}
