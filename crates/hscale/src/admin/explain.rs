//! `HSCALE EXPLAIN <statement>`: the plan the router makes for it, as
//! rows of (backend, operation, SQL).

use hscale_route::router::{Plan, StatementKind};

use super::{backend_names, cols, AdminOutput};
use crate::error::ProxyError;
use crate::runtime::Context;

pub(super) fn run(
    ctx: &Context,
    session_db: Option<&str>,
    statement: &str,
) -> Result<AdminOutput, ProxyError> {
    let names = backend_names(ctx);
    let d = ctx.partitioning.dictionary();
    let rows = match hscale_route::router::plan(statement, session_db, &d) {
        Plan::Passthrough => vec![vec![
            Some(names[0].to_string()),
            Some("passthrough".to_string()),
            Some(statement.to_string()),
        ]],
        Plan::Refuse(why) => return Err(ProxyError::Refused(why)),
        Plan::DropTable(t) => vec![vec![
            Some(names[0].to_string()),
            Some(format!(
                "drop every partition of {t} and its dictionary entry"
            )),
            Some(statement.to_string()),
        ]],
        Plan::ShowTables { db, .. } => vec![vec![
            Some(names[0].to_string()),
            Some(format!(
                "tables of {db} with partitioned tables shown as one"
            )),
            Some(statement.to_string()),
        ]],
        Plan::GlobalWrite { table, sql } => names
            .iter()
            .map(|n| {
                vec![
                    Some(n.to_string()),
                    Some(format!("copy of global table {table}")),
                    Some(sql.clone()),
                ]
            })
            .collect(),
        Plan::DropGlobal(t) => vec![vec![
            Some("every backend".to_string()),
            Some(format!("drop every copy of global table {t} and its entry")),
            Some(statement.to_string()),
        ]],
        Plan::Merge(m) => {
            let mut rows: Vec<Vec<Option<String>>> = Vec::new();
            if let hscale_route::router::Mode::Group(g) = &m.mode {
                rows.push(vec![
                    Some(names[g.meta.0.backend].to_string()),
                    Some("column definitions".to_string()),
                    Some(g.meta.1.clone()),
                ]);
            }
            for ship in &m.ship {
                for (t, sql) in &ship.sources {
                    rows.push(vec![
                        Some(names[t.backend].to_string()),
                        Some(format!(
                            "ship into temporary table {} on every part",
                            ship.temp
                        )),
                        Some(sql.clone()),
                    ]);
                }
            }
            for (t, sql) in &m.parts {
                rows.push(vec![
                    Some(names[t.backend].to_string()),
                    Some(format!("fragment: {}", t.physical_table)),
                    Some(sql.clone()),
                ]);
            }
            rows.push(vec![
                Some("proxy".to_string()),
                Some("merge".to_string()),
                Some(merge_description(&m)),
            ]);
            rows
        }
        Plan::Relabeled {
            target,
            sql,
            from,
            to,
        } => vec![vec![
            Some(names[target.backend].to_string()),
            Some(format!("single partition, {from} shown as {to}")),
            Some(sql),
        ]],
        Plan::RenameTable { from, to } => vec![vec![
            Some(names[0].to_string()),
            Some(format!(
                "rename every partition of {from} to {to} and its dictionary entry"
            )),
            Some(statement.to_string()),
        ]],
        Plan::ShowCreate(t) => vec![vec![
            Some(names[0].to_string()),
            Some(format!("definition of {t} from its default partition")),
            Some(statement.to_string()),
        ]],
        Plan::Targets { kind, parts } => {
            let how = match (kind, parts.len()) {
                (_, 1) => "single partition",
                (StatementKind::Select, _) => "concatenate rows",
                (StatementKind::Schema, _) => "on every partition",
                (_, _) => "add up affected rows",
            };
            parts
                .into_iter()
                .map(|(t, sql)| {
                    vec![
                        Some(names[t.backend].to_string()),
                        Some(format!("{how}: {}", t.physical_table)),
                        Some(sql),
                    ]
                })
                .collect()
        }
    };
    Ok(AdminOutput::Rows {
        columns: cols(&["backend", "operation", "sql"]),
        rows,
    })
}

/// What the proxy does with the partitions' rows, for HSCALE EXPLAIN.
fn merge_description(m: &hscale_route::router::MergePlan) -> String {
    use hscale_route::router::{Mode, Output};
    let mut steps = Vec::new();
    match &m.mode {
        Mode::Sort { .. } if m.order.is_empty() => {
            steps.push(format!("concatenate {} partitions", m.parts.len()))
        }
        Mode::Sort { .. } => steps.push(format!(
            "k-way merge of {} sorted partitions on {} key(s)",
            m.parts.len(),
            m.order.len()
        )),
        Mode::Group(g) => {
            let aggs: Vec<&str> = g
                .outputs
                .iter()
                .filter_map(|o| match o {
                    Output::Key(_) => None,
                    Output::Count(_) => Some("COUNT (sum of counts)"),
                    Output::Sum(_) => Some("SUM (sum of sums)"),
                    Output::Min(_) => Some("MIN"),
                    Output::Max(_) => Some("MAX"),
                    Output::Avg { .. } => Some("AVG (sum of sums / sum of counts)"),
                    Output::BitAnd(_) => Some("BIT_AND"),
                    Output::BitOr(_) => Some("BIT_OR"),
                    Output::BitXor(_) => Some("BIT_XOR"),
                    Output::CountDistinct(_) => Some("COUNT(DISTINCT) (distinct values gathered)"),
                    Output::GroupConcat { .. } => Some("GROUP_CONCAT (partial lists joined)"),
                })
                .collect();
            steps.push(format!(
                "combine partial groups of {} fragments on {} key(s){}{}",
                m.parts.len(),
                g.keys.len(),
                if aggs.is_empty() { "" } else { ": " },
                aggs.join(", ")
            ));
            if !m.order.is_empty() {
                steps.push(format!("sort on {} key(s)", m.order.len()));
            }
        }
    }
    if m.offset > 0 {
        steps.push(format!("skip {}", m.offset));
    }
    if let Some(l) = m.limit {
        steps.push(format!("limit {l}"));
    }
    steps.join("; ")
}
