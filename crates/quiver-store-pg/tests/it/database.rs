use quiver_store_pg::PgDatabase;

use crate::TestSchema;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_starting_together_migrate_once() {
    let schema = TestSchema::new();
    let opened = open_four_at_once(&schema).await;
    assert!(opened.iter().all(Result::is_ok), "{opened:?}");
    let database = opened.into_iter().next().unwrap().unwrap();
    let applied: i64 = database
        .client()
        .await
        .unwrap()
        .query_one("SELECT COUNT(*) FROM schema_migrations WHERE version = 1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(applied, 1, "the first migration is applied once");
}

/// Four nodes open the same fresh schema at once.
async fn open_four_at_once(schema: &TestSchema) -> Vec<Result<PgDatabase, quiver_core::StoreError>> {
    let opens = (0..4).map(|_| {
        let options = schema.options.clone();
        tokio::spawn(async move { PgDatabase::open(&options).await })
    });
    let mut opened = Vec::new();
    for open in opens.collect::<Vec<_>>() {
        opened.push(open.await.expect("the task ends"));
    }
    opened
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_from_a_newer_build_is_refused() {
    let schema = TestSchema::new();
    let database = PgDatabase::open(&schema.options).await.unwrap();
    database
        .client()
        .await
        .unwrap()
        .execute(
            "INSERT INTO schema_migrations (version, name) VALUES (999, 'from the future')",
            &[],
        )
        .await
        .unwrap();
    let refused = PgDatabase::open(&schema.options).await.unwrap_err();
    assert!(
        refused.to_string().contains("newer than this build knows"),
        "{refused}"
    );
}
