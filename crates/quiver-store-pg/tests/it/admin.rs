use std::sync::Arc;

use quiver_admin::AdminStore;
use quiver_store_pg::PgAdminStore;

use crate::TestSchema;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_admin_store_passes_the_conformance_suite() {
    let schema = TestSchema::new();
    let store = PgAdminStore::open(&schema.options)
        .await
        .expect("the store opens");
    quiver_admin::testing::conformance(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_admin_store_keeps_acknowledged_writes_across_a_restart() {
    let schema = TestSchema::new();
    let open = || async {
        let store = PgAdminStore::open(&schema.options)
            .await
            .expect("the store opens");
        Arc::new(store) as Arc<dyn AdminStore>
    };
    quiver_admin::testing::restart_keeps_every_acknowledged_write(open).await;
}
