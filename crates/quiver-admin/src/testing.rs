//! The conformance suite every [`AdminStore`] backend must pass. Each backend's tests call
//! [`conformance`] with a fresh, empty store.

use std::sync::Arc;

use quiver_core::index::{IndexType, SearchRegion, SimilarityFunction, VectorRegion};
use quiver_core::plan::PlanType;
use quiver_core::{IndexId, StoreError, Timestamp};

use crate::account::{Account, Email};
use crate::catalog::{IndexKind, IndexName, IndexRecord, IndexSettings, SearchSettings, VectorSettings};
use crate::store::AdminStore;

/// Opens a store with `open`, writes an account, an index and usage, drops it, opens the same storage
/// again with `open` and checks that everything acknowledged is there, found the same ways. `open` must
/// reach the same storage each time, which starts empty.
///
/// # Panics
/// When the second store misses something the first acknowledged.
pub async fn restart_keeps_every_acknowledged_write<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Arc<dyn AdminStore>>,
{
    let owner = account("restart@conformance.test", true);
    let index = vector_index(&owner, "restart-endpoint", 1_700_000_000_000);
    let usage = crate::usage::MinuteUsage {
        queries: 3,
        vector_count: Some(9),
        ..crate::usage::MinuteUsage::default()
    };
    let first = open().await;
    first.insert_account(&owner).await.unwrap();
    first.insert_index(&index).await.unwrap();
    first
        .add_usage(vec![(index.id, 42, usage.clone())])
        .await
        .unwrap();
    drop(first);

    let second = open().await;
    assert_eq!(
        second.bootstrap_account().await.unwrap().as_ref(),
        Some(&owner),
        "the bootstrap account survives a restart"
    );
    assert_eq!(
        second
            .account_by_queue_token(&owner.queue_token)
            .await
            .unwrap()
            .as_ref(),
        Some(&owner),
        "an account survives a restart, found by its queue token"
    );
    assert_eq!(
        second.index(owner.id, index.id).await.unwrap().as_ref(),
        Some(&index)
    );
    assert_eq!(
        second.index_by_token(&index.token).await.unwrap().as_ref(),
        Some(&index),
        "an index survives a restart, found by its token"
    );
    let stored = second.usage(index.id, 42, 42).await.unwrap();
    assert_eq!(
        stored
            .iter()
            .map(|(minute, usage)| (*minute, usage.queries, usage.vector_count))
            .collect::<Vec<_>>(),
        [(42, 3, Some(9))],
        "usage survives a restart"
    );
}

/// Runs every check against `store`, which must start empty.
pub async fn conformance(store: Arc<dyn AdminStore>) {
    accounts_round_trip_and_are_found_by_email_and_id(&*store).await;
    a_taken_email_or_a_second_bootstrap_account_conflicts(&*store).await;
    indexes_round_trip_and_are_scoped_to_their_owner(&*store).await;
    index_updates_replace_the_whole_record(&*store).await;
    taken_endpoints_and_tokens_conflict(&*store).await;
    usage_merges_per_minute_and_per_slot_in_order(&*store).await;
}

async fn usage_merges_per_minute_and_per_slot_in_order(store: &dyn AdminStore) {
    use crate::usage::MinuteUsage;
    let index = IndexId::random();
    let minute = |queries: u64, vector_count: Option<u64>| MinuteUsage {
        queries,
        vector_count,
        ..MinuteUsage::default()
    };
    store
        .add_usage(vec![
            (index, 11, minute(2, None)),
            (index, 10, minute(1, Some(5))),
        ])
        .await
        .unwrap();
    store
        .add_usage(vec![(index, 11, minute(3, Some(7)))])
        .await
        .unwrap();
    let stored = store.usage(index, 10, 11).await.unwrap();
    assert_eq!(stored.len(), 2);
    assert_eq!(
        (stored[0].0, stored[0].1.queries, stored[0].1.vector_count),
        (10, 1, Some(5))
    );
    assert_eq!(
        (stored[1].0, stored[1].1.queries, stored[1].1.vector_count),
        (11, 5, Some(7)),
        "merged"
    );
    assert!(store.usage(index, 12, 20).await.unwrap().is_empty());
    assert!(store.usage(IndexId::random(), 0, 100).await.unwrap().is_empty());

    // Slots of 12 minutes roll the same minutes up, in minute order: the latest snapshot wins.
    store.add_usage(vec![(index, 12, minute(4, None))]).await.unwrap();
    let slots = store.usage_slots(index, 0, 12).await.unwrap();
    let summary: Vec<_> = slots
        .iter()
        .map(|(slot, usage)| (*slot, usage.queries, usage.vector_count))
        .collect();
    assert_eq!(summary, vec![(0, 6, Some(7)), (12, 4, None)]);
    assert_eq!(store.usage_slots(index, 12, 24).await.unwrap().len(), 1);
}

fn email(text: &str) -> Email {
    Email::try_from(text.to_owned()).unwrap()
}

fn account(address: &str, is_bootstrap: bool) -> Account {
    Account::generate(
        email(address),
        Timestamp::from_millis(1_700_000_000_000),
        is_bootstrap,
    )
}

fn vector_index(owner: &Account, endpoint: &str, created_at: i64) -> IndexRecord {
    IndexRecord {
        id: IndexId::random(),
        account_id: owner.id,
        name: IndexName::try_from(format!("index {endpoint}")).unwrap(),
        endpoint: endpoint.to_owned(),
        plan: PlanType::Free,
        token: crate::account::new_token(),
        read_only_token: crate::account::new_token(),
        created_at: Timestamp::from_millis(created_at),
        settings: IndexSettings::VectorV1(VectorSettings {
            region: VectorRegion::EuWest1,
            similarity_function: SimilarityFunction::DotProduct,
            dimension_count: 3,
            index_type: IndexType::Hybrid,
            embedding_model: None,
            sparse_embedding_model: None,
        }),
    }
}

async fn accounts_round_trip_and_are_found_by_email_and_id(store: &dyn AdminStore) {
    let root = account("root@conformance.test", true);
    store.insert_account(&root).await.unwrap();
    assert_eq!(
        store
            .account_by_email("root@conformance.test")
            .await
            .unwrap()
            .as_ref(),
        Some(&root)
    );
    assert_eq!(store.account_by_id(root.id).await.unwrap().as_ref(), Some(&root));
    assert_eq!(store.bootstrap_account().await.unwrap().as_ref(), Some(&root));
    assert!(
        store
            .account_by_email("ROOT@conformance.test")
            .await
            .unwrap()
            .is_none()
    );

    let mut changed = root.clone();
    changed.api_key = "rotated".into();
    assert!(store.update_account(&changed).await.unwrap());
    assert_eq!(
        store.account_by_id(root.id).await.unwrap().unwrap().api_key,
        "rotated"
    );
    let stranger = account("stranger@conformance.test", false);
    assert!(!store.update_account(&stranger).await.unwrap());
}

async fn a_taken_email_or_a_second_bootstrap_account_conflicts(store: &dyn AdminStore) {
    let twin = account("root@conformance.test", false);
    assert!(matches!(
        store.insert_account(&twin).await,
        Err(StoreError::Conflict(_))
    ));
    let second_root = account("other-root@conformance.test", true);
    assert!(matches!(
        store.insert_account(&second_root).await,
        Err(StoreError::Conflict(_))
    ));
    let user = account("user@conformance.test", false);
    store.insert_account(&user).await.unwrap();
    let emails: Vec<String> = store
        .accounts()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.email.to_string())
        .collect();
    assert_eq!(emails, ["root@conformance.test", "user@conformance.test"]);
}

async fn indexes_round_trip_and_are_scoped_to_their_owner(store: &dyn AdminStore) {
    let root = store
        .account_by_email("root@conformance.test")
        .await
        .unwrap()
        .unwrap();
    let user = store
        .account_by_email("user@conformance.test")
        .await
        .unwrap()
        .unwrap();
    let older = vector_index(&root, "calm-otter-10001", 1_000);
    let newer = vector_index(&root, "calm-otter-10002", 2_000);
    let search = IndexRecord {
        settings: IndexSettings::SearchV1(SearchSettings {
            region: SearchRegion::UsCentral1,
            input_enrichment_enabled: true,
        }),
        ..vector_index(&root, "calm-otter-10003", 3_000)
    };
    for record in [&newer, &older, &search] {
        store.insert_index(record).await.unwrap();
    }
    let listed = store.indexes(root.id, IndexKind::Vector).await.unwrap();
    assert_eq!(
        listed,
        [older.clone(), newer.clone()],
        "vector indexes, oldest first"
    );
    assert_eq!(
        store.indexes(root.id, IndexKind::Search).await.unwrap(),
        std::slice::from_ref(&search)
    );
    assert!(
        store
            .indexes(user.id, IndexKind::Vector)
            .await
            .unwrap()
            .is_empty()
    );

    assert_eq!(
        store.index(root.id, older.id).await.unwrap().as_ref(),
        Some(&older)
    );
    assert!(
        store.index(user.id, older.id).await.unwrap().is_none(),
        "another owner's index is invisible"
    );
    assert!(
        !store.delete_index(user.id, older.id).await.unwrap(),
        "another owner cannot delete it"
    );
    assert_eq!(
        store.index_by_token(&older.token).await.unwrap().as_ref(),
        Some(&older)
    );
    assert_eq!(
        store
            .index_by_token(&older.read_only_token)
            .await
            .unwrap()
            .as_ref(),
        Some(&older)
    );
    assert!(store.index_by_token("no such token").await.unwrap().is_none());

    assert!(store.delete_index(root.id, newer.id).await.unwrap());
    assert!(store.index(root.id, newer.id).await.unwrap().is_none());
    assert!(!store.delete_index(root.id, newer.id).await.unwrap());
}

async fn index_updates_replace_the_whole_record(store: &dyn AdminStore) {
    let root = store
        .account_by_email("root@conformance.test")
        .await
        .unwrap()
        .unwrap();
    let user = store
        .account_by_email("user@conformance.test")
        .await
        .unwrap()
        .unwrap();
    let mut record = store.indexes(root.id, IndexKind::Vector).await.unwrap().remove(0);
    let old_token = record.token.clone();
    record.name = IndexName::try_from("renamed".to_owned()).unwrap();
    record.plan = PlanType::Fixed;
    record.token = "fresh-token".into();
    record.account_id = user.id;
    assert!(store.update_index(&record).await.unwrap());
    assert_eq!(
        store.index(user.id, record.id).await.unwrap().as_ref(),
        Some(&record)
    );
    assert!(
        store.index(root.id, record.id).await.unwrap().is_none(),
        "the index moved to its new owner"
    );
    assert!(
        store.index_by_token(&old_token).await.unwrap().is_none(),
        "an old token stops working"
    );
    let ghost = vector_index(&root, "calm-otter-10009", 9_000);
    assert!(!store.update_index(&ghost).await.unwrap());
}

async fn taken_endpoints_and_tokens_conflict(store: &dyn AdminStore) {
    let root = store
        .account_by_email("root@conformance.test")
        .await
        .unwrap()
        .unwrap();
    let same_endpoint = vector_index(&root, "calm-otter-10003", 4_000);
    match store.insert_index(&same_endpoint).await {
        Err(StoreError::Conflict(_)) => {}
        other => panic!("a taken endpoint must conflict, got {other:?}"),
    }
    let mut same_token = vector_index(&root, "calm-otter-10004", 4_000);
    same_token.token = "fresh-token".into();
    assert!(matches!(
        store.insert_index(&same_token).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        store.indexes(root.id, IndexKind::Vector).await.unwrap().len(),
        0,
        "nothing half-written"
    );
}
