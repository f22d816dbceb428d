//! A connection of its own, outside the pool, for a writer on a thread of its own (see
//! [`crate::batch::Batcher::start_on_thread`]): made on first use on that thread, so that its driver runs
//! there too, and made again after it was lost (a server restart, a network fault).

use std::sync::Arc;

use quiver_core::store::StoreResult;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use crate::database::{PgDatabase, backend_error, execute_retrying};
use crate::tls::Secured;

/// One connection and the statements prepared on it.
pub(crate) struct OwnConnection {
    secured: Arc<Secured>,
    open: Option<Open>,
}

struct Open {
    client: Client,
    prepared: Vec<(String, Statement)>,
}

impl OwnConnection {
    /// A connection to `database`, made as its pool's are, on first use.
    pub(crate) fn to(database: &PgDatabase) -> OwnConnection {
        OwnConnection {
            secured: database.secured(),
            open: None,
        }
    }

    /// Runs one statement in a transaction of its own, again when it lost a deadlock, as
    /// [`crate::PgDatabase::execute_alone`] does on a pooled connection. Returns the rows it changed.
    ///
    /// # Errors
    /// No connection could be made, or the statement failed; a connection found closed is made anew by
    /// the next call.
    pub(crate) async fn execute_alone(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<u64> {
        if self.open.as_ref().is_some_and(|open| open.client.is_closed()) {
            self.open = None;
        }
        let open = match &mut self.open {
            Some(open) => open,
            None => {
                let (client, connection) = self.secured.connect().await.map_err(backend_error)?;
                tokio::spawn(async move {
                    if let Err(error) = connection.await {
                        tracing::debug!(%error, "a writer's own PostgreSQL connection ended");
                    }
                });
                self.open.insert(Open {
                    client,
                    prepared: Vec::new(),
                })
            }
        };
        let statement = match open.prepared.iter().find(|(text, _)| text == sql) {
            Some((_, statement)) => statement.clone(),
            None => {
                let statement = open.client.prepare(sql).await.map_err(backend_error)?;
                open.prepared.push((sql.to_owned(), statement.clone()));
                statement
            }
        };
        execute_retrying(&open.client, &statement, params).await
    }
}
