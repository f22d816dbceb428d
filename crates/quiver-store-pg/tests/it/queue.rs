use quiver_store_pg::PgQueueStore;

use crate::TestSchema;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_url_group_store_passes_its_suite() {
    let schema = TestSchema::new();
    let store = PgQueueStore::open(&schema.options)
        .await
        .expect("the store opens");
    quiver_queue::testing::url_group_store(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_waiter_store_passes_its_suite() {
    let schema = TestSchema::new();
    let store = PgQueueStore::open(&schema.options)
        .await
        .expect("the store opens");
    quiver_queue::testing::waiter_store(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_schedule_store_passes_its_suite() {
    let schema = TestSchema::new();
    let store = PgQueueStore::open(&schema.options)
        .await
        .expect("the store opens");
    quiver_queue::testing::schedule_store(&store).await;
}
