use std::sync::Arc;

use quiver_store_pg::PgVectorStore;
use quiver_vector::VectorStore;

use crate::TestSchema;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_vector_store_passes_the_conformance_suite() {
    let schema = TestSchema::new();
    let store = PgVectorStore::open(&schema.options)
        .await
        .expect("the store opens");
    quiver_vector::testing::conformance(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_vector_store_keeps_acknowledged_writes_across_a_restart() {
    let schema = TestSchema::new();
    let open = || async {
        let store = PgVectorStore::open(&schema.options)
            .await
            .expect("the store opens");
        Arc::new(store) as Arc<dyn VectorStore>
    };
    quiver_vector::testing::restart_keeps_every_acknowledged_write(open).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphs_come_back_from_their_snapshots_over_the_postgres_store() {
    let schema = TestSchema::new();
    let dir = tempfile::tempdir().unwrap();
    let open = || async {
        let store = PgVectorStore::open(&schema.options)
            .await
            .expect("the store opens");
        Arc::new(store) as Arc<dyn VectorStore>
    };
    quiver_vector::testing::snapshots_bring_graphs_back(open, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_vector_store_keeps_an_ordered_feed_of_writes() {
    let schema = TestSchema::new();
    let store = PgVectorStore::open(&schema.options)
        .await
        .expect("the store opens");
    quiver_vector::testing::change_feed(&store).await;
}
