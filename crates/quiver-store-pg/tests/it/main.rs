//! The PostgreSQL stores against their domains' conformance suites, on the server that
//! `QUIVER_TEST_POSTGRES` names (default `postgres://postgres@127.0.0.1/test`; `scripts/test` makes sure
//! it answers). Each test works in a schema of its own, created here and dropped at its end.

mod admin;
mod database;
mod queue;
mod vectors;

use quiver_store_pg::PgOptions;

/// A schema of one test: the options that reach it, and its removal.
pub(crate) struct TestSchema {
    pub(crate) options: PgOptions,
}

impl TestSchema {
    /// A new, empty schema's options (the stores create the schema when they first open).
    pub(crate) fn new() -> TestSchema {
        let url = std::env::var("QUIVER_TEST_POSTGRES")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1/test".to_owned());
        let schema = format!("quiver_test_{}", uuid::Uuid::new_v4().simple());
        TestSchema {
            options: PgOptions {
                url,
                schema: Some(schema),
                pool_size: 4,
            },
        }
    }
}

impl Drop for TestSchema {
    /// Drops the schema and everything in it, also when the test failed: on a thread of its own, with a
    /// runtime of its own, since the test's runtime may be the one unwinding.
    fn drop(&mut self) {
        let Some(schema) = self.options.schema.clone() else {
            return;
        };
        let url = self.options.url.clone();
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async {
                let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
                tokio::spawn(connection);
                client
                    .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                    .await
            })
        })
        .join();
        if let Ok(Err(error)) = dropped {
            eprintln!("could not drop a test schema: {error}");
        }
    }
}
