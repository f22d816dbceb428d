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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_that_nodes_add_to_one_minute_at_once_is_all_counted() {
    let schema = TestSchema::new();
    let nodes = [
        PgAdminStore::open(&schema.options)
            .await
            .expect("the store opens"),
        PgAdminStore::open(&schema.options)
            .await
            .expect("the store opens"),
    ];
    let index = quiver_core::IndexId::random();
    let one_query = quiver_admin::usage::MinuteUsage {
        queries: 1,
        ..quiver_admin::usage::MinuteUsage::default()
    };
    let mut adding = tokio::task::JoinSet::new();
    for round in 0..40 {
        let node = nodes[round % 2].clone();
        let usage = one_query.clone();
        adding.spawn(async move {
            node.add_usage(vec![(index, 100, usage.clone()), (index, 101, usage)])
                .await
        });
    }
    while let Some(added) = adding.join_next().await {
        added.expect("the task ends").expect("usage is added");
    }
    let minutes = nodes[0].usage(index, 100, 101).await.unwrap();
    let queries: Vec<(i64, u64)> = minutes
        .iter()
        .map(|(minute, usage)| (*minute, usage.queries))
        .collect();
    assert_eq!(queries, [(100, 40), (101, 40)], "no addition is lost to another");
    let slots = nodes[1].usage_slots(index, 96, 96).await.unwrap();
    assert_eq!(slots.len(), 1);
    assert_eq!(
        slots[0].1.queries, 80,
        "nor to the slot both minutes roll up into"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daily_quotas_count_the_usage_every_node_metered() {
    use std::time::Duration;

    use quiver_admin::limits::Limiter;
    use quiver_admin::meter::{Meter, UsageEvent, UsageKind};
    use quiver_core::plan::{Limit, PlanType};
    use quiver_core::{Clock, IndexId, ManualClock};

    let schema = TestSchema::new();
    let clock = ManualClock::starting_now();
    // Two nodes: each with its own pool, meter and limiter over the one database.
    let node = || async {
        let store: Arc<dyn AdminStore> = Arc::new(
            PgAdminStore::open(&schema.options)
                .await
                .expect("the store opens"),
        );
        let meter = Arc::new(Meter::new(store, Arc::new(clock.clone())));
        let limiter = Limiter::new(Arc::clone(&meter), Arc::new(clock.clone()), false)
            .resync_every(Duration::from_secs(5));
        (meter, limiter)
    };
    let (first_meter, first) = node().await;
    let (_, second) = node().await;
    let index = IndexId::random();
    let mut limits = PlanType::Free.vector_limits();
    limits.max_daily_queries = Limit::AtMost(10);
    // The second node starts counting the day before the first node's usage.
    second
        .admit(index, UsageKind::Query, &limits)
        .await
        .expect("admitted");
    for _ in 0..8 {
        first
            .admit(index, UsageKind::Query, &limits)
            .await
            .expect("admitted");
        first_meter.record(UsageEvent {
            index,
            kind: UsageKind::Query,
            latency: Duration::from_millis(1),
            bytes: 10,
            snapshot: None,
        });
    }
    first_meter.flush().await.expect("the first node flushes");
    clock.advance(Duration::from_secs(6));
    second
        .admit(index, UsageKind::Query, &limits)
        .await
        .expect("9 of 10");
    second
        .admit(index, UsageKind::Query, &limits)
        .await
        .expect("10 of 10");
    assert!(
        second.admit(index, UsageKind::Query, &limits).await.is_err(),
        "the 11th query of the day is refused, counting both nodes' (now {})",
        clock.now()
    );
}
