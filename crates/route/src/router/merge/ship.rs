//! Tables copied into a temporary table next to each fragment before it
//! runs: partitioned tables a join cannot read by partition, and
//! unpartitioned tables joined with partitions on other backends.

use std::collections::BTreeSet;

use crate::dictionary::{PartitionedTable, TableName, Target};
use crate::BackendId;

/// A table shipped to every part: its rows (read from `sources`) are
/// inserted into the temporary table `temp` (in database `db`), created
/// like `like` (`db`, table, backend).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ship {
    pub db: String,
    pub temp: String,
    pub like: (BackendId, String),
    pub sources: Vec<(Target, String)>,
}

impl Ship {
    /// The `n`-th shipped table of a statement: partitioned `table` (named
    /// in database `db`), read from the partitions `allowed` (none or an
    /// empty set: all of them).
    pub(in crate::router) fn partitioned(
        n: usize,
        db: &str,
        table: &PartitionedTable,
        allowed: Option<&BTreeSet<Target>>,
    ) -> Ship {
        let sources = match allowed {
            Some(set) if !set.is_empty() => set.iter().cloned().collect(),
            _ => table.all_targets(),
        };
        Ship {
            db: db.to_string(),
            temp: format!("hscale_ship_{n}"),
            like: (table.default_backend, table.default_table.clone()),
            sources: sources
                .into_iter()
                .map(|t| {
                    let q = select_all(db, &t.physical_table);
                    (t, q)
                })
                .collect(),
        }
    }

    /// The `n`-th shipped table: an unpartitioned table on the main backend.
    pub(in crate::router) fn plain(n: usize, name: &TableName) -> Ship {
        Ship {
            db: name.db.clone(),
            temp: format!("hscale_ship_{n}"),
            like: (BackendId::MAIN, name.table.clone()),
            sources: vec![(
                Target {
                    backend: BackendId::MAIN,
                    physical_table: name.table.clone(),
                },
                select_all(&name.db, &name.table),
            )],
        }
    }
}

fn select_all(db: &str, table: &str) -> String {
    format!(
        "SELECT * FROM `{}`.`{}`",
        db.replace('`', "``"),
        table.replace('`', "``")
    )
}
