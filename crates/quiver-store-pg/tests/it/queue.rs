use std::sync::Arc;

use quiver_queue::QueueStore;
use quiver_store_pg::PgQueueStore;

use crate::TestSchema;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_queue_store_passes_the_conformance_suite() {
    let schema = TestSchema::new();
    let store = PgQueueStore::open(&schema.options)
        .await
        .expect("the store opens");
    quiver_queue::testing::conformance(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_queue_store_keeps_acknowledged_writes_across_a_restart() {
    let schema = TestSchema::new();
    let open = || async {
        let store = PgQueueStore::open(&schema.options)
            .await
            .expect("the store opens");
        Arc::new(store) as Arc<dyn QueueStore>
    };
    quiver_queue::testing::restart_keeps_every_acknowledged_write(open).await;
}
