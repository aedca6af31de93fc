//! CREATE [OR REPLACE] VIEW and ALTER VIEW of a view hscale keeps
//! (`hscale_route::view`, stored by `admin/views.rs`): the SELECT is
//! checked, and its column names read, by a question that reads no rows
//! (`router::view_probe`: its tables' default partitions on one backend,
//! or the planned SELECT with LIMIT 0 when no one backend holds them), so
//! a view over an unknown column or table is refused with the server's
//! error, as one server refuses it.

use crate::admin::AdminOutput;
use crate::error::ProxyError;
use crate::exec::scratch::StatementScratch;
use crate::exec::sink::{self, Answer};
use crate::exec::Bindings;
use hscale_route::router::{self, ViewDdl};
use hscale_route::view::{quote, ViewError};

impl Bindings {
    /// Keep the view `ddl` makes once its SELECT was checked; the
    /// session answers the output.
    pub async fn create_view(
        &mut self,
        mut ddl: ViewDdl,
        scratch: &mut StatementScratch,
    ) -> Result<AdminOutput, ProxyError> {
        let columns = self.view_columns(&ddl.view.select, scratch).await?;
        if let Some(list) = &ddl.view.columns {
            if list.len() != columns.len() {
                return Err(ViewError::ColumnCount.into());
            }
            ddl.view.inner = columns;
        }
        if ddl.view.definer.is_empty() {
            let user = self
                .handle
                .user
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            ddl.view.definer = format!("{}@{}", quote(&user), quote("%"));
        }
        crate::admin::views::create(&self.ctx, self.worker, ddl).await
    }

    /// The column names of `select`'s answer (an error: the server's).
    async fn view_columns(
        &mut self,
        select: &str,
        scratch: &mut StatementScratch,
    ) -> Result<Vec<String>, ProxyError> {
        let probe = {
            let dict = self.ctx.partitioning.dictionary();
            router::view_probe(select, &dict)
        };
        let columns = match probe {
            Some((backend, sql)) => {
                let mut c = self
                    .ctx
                    .pool_as(self.worker, backend, self.identity)
                    .get(false)
                    .await?;
                match c.query_rows(&sql).await? {
                    Ok(r) => r.columns,
                    Err(err) => {
                        return Err(ProxyError::Backend {
                            backend: c.backend.to_string(),
                            during: "hscale: checking the view's SELECT".into(),
                            err,
                        })
                    }
                }
            }
            None => {
                let sql = format!("SELECT * FROM ({select}) AS `hscale_view_probe` LIMIT 0");
                match sink::read(self, scratch, &sql, "CREATE VIEW", 0).await? {
                    Answer::Rows(columns, _) => columns,
                    Answer::Error(err) => {
                        return Err(ProxyError::Backend {
                            backend: "main".into(),
                            during: "hscale: checking the view's SELECT".into(),
                            err,
                        })
                    }
                    Answer::Ok(_) => Vec::new(),
                }
            }
        };
        Ok(columns.into_iter().map(|c| c.name).collect())
    }
}
