//! The conformance suite of [`VectorStore`]: what every backend must do, written against the trait
//! alone. A backend runs it with a store over empty storage:
//!
//! ```ignore
//! #[tokio::test]
//! async fn my_store_passes_the_conformance_suite() {
//!     quiver_vector::testing::conformance(Arc::new(my_store().await)).await;
//! }
//! ```
//!
//! Each check panics with what the contract says when the store breaks it.
//!
//! [`restart_keeps_every_acknowledged_write`] checks what a store keeps across a restart, and
//! [`snapshots_bring_graphs_back`] (module `snapshots`) that the engine over it comes back from its
//! graph snapshots, and from bad ones.

mod snapshots;

pub use snapshots::snapshots_bring_graphs_back;

use std::sync::Arc;

use quiver_core::IndexId;
use serde_json::json;

use crate::record::{Record, SparseVector, StoredRecord};
use crate::store::{Change, VectorStore};

/// Opens a store with `open`, writes records (and deletes one, and empties a namespace), drops it,
/// opens the same storage again with `open` and checks that the index loads as it was left. `open` must
/// reach the same storage each time, which starts empty.
///
/// # Panics
/// When the second store misses something the first acknowledged.
pub async fn restart_keeps_every_acknowledged_write<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Arc<dyn VectorStore>>,
{
    let index = IndexId::random();
    let first = open().await;
    first
        .apply(
            index,
            vec![
                put("", vec![record("kept", 1), record("gone", 2)]),
                put("emptied", vec![record("x", 3)]),
            ],
        )
        .await
        .expect("apply succeeds");
    first
        .apply(
            index,
            vec![
                Change::Delete {
                    namespace: String::new(),
                    ids: vec!["gone".into()],
                },
                Change::Reset {
                    namespace: "emptied".into(),
                },
            ],
        )
        .await
        .expect("apply succeeds");
    drop(first);

    let second = open().await;
    assert_eq!(
        load(&*second, index).await,
        vec![
            (String::new(), vec![record("kept", 1)]),
            ("emptied".to_owned(), Vec::new()),
        ],
        "an index loads after a restart as its acknowledged changes left it"
    );
}

/// Runs every check against `store`, which must start empty.
///
/// # Panics
/// When the store breaks its contract.
pub async fn conformance(store: Arc<dyn VectorStore>) {
    an_unknown_index_loads_empty(&*store).await;
    records_round_trip_exactly_and_load_in_sequence_order(&*store).await;
    a_put_of_an_existing_id_replaces_it(&*store).await;
    changes_apply_in_order_in_one_call(&*store).await;
    reset_empties_a_namespace_that_stays(&*store).await;
    namespaces_are_dropped_and_renamed_with_their_records(&*store).await;
    indexes_are_isolated_and_dropped_whole(&*store).await;
}

fn record(id: &str, sequence: u64) -> StoredRecord {
    StoredRecord {
        sequence,
        record: Record {
            id: id.to_owned(),
            vector: Some(vec![0.1, -2.5, f32::MIN_POSITIVE, 3.0e-7]),
            sparse: None,
            metadata: None,
            data: None,
        },
    }
}

fn put(namespace: &str, records: Vec<StoredRecord>) -> Change {
    Change::Put {
        namespace: namespace.to_owned(),
        records,
    }
}

/// What `load` answers, namespaces by name, after checking that `load_in_parts` sends the same.
async fn load(store: &dyn VectorStore, index: IndexId) -> Vec<(String, Vec<StoredRecord>)> {
    let mut namespaces = store.load(index).await.expect("load succeeds");
    namespaces.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        load_in_parts(store, index).await,
        namespaces,
        "load_in_parts sends exactly what load answers"
    );
    namespaces
}

/// The parts `load_in_parts` sends, taken one at a time, merged by namespace and put in sequence order.
async fn load_in_parts(store: &dyn VectorStore, index: IndexId) -> Vec<(String, Vec<StoredRecord>)> {
    let (sender, mut parts) = tokio::sync::mpsc::channel(1);
    let receiving = async {
        let mut namespaces: std::collections::BTreeMap<String, Vec<StoredRecord>> = Default::default();
        while let Some((name, records)) = parts.recv().await {
            namespaces.entry(name).or_default().extend(records);
        }
        namespaces
    };
    let (sent, namespaces) = tokio::join!(store.load_in_parts(index, sender), receiving);
    sent.expect("load_in_parts succeeds");
    namespaces
        .into_iter()
        .map(|(name, mut records)| {
            records.sort_by_key(|stored| stored.sequence);
            (name, records)
        })
        .collect()
}

fn ids(records: &[StoredRecord]) -> Vec<&str> {
    records.iter().map(|r| r.record.id.as_str()).collect()
}

async fn an_unknown_index_loads_empty(store: &dyn VectorStore) {
    assert!(
        load(store, IndexId::random()).await.is_empty(),
        "an index never written to has no namespaces"
    );
}

async fn records_round_trip_exactly_and_load_in_sequence_order(store: &dyn VectorStore) {
    let index = IndexId::random();
    let full = StoredRecord {
        sequence: 7,
        record: Record {
            id: "full".into(),
            vector: Some(vec![1.0, -0.0, 1.0e-38, 123_456.79]),
            sparse: Some(SparseVector {
                indices: vec![3, 70_000, u32::MAX >> 1],
                values: vec![0.5, -0.25, 1.0e-6],
            }),
            metadata: Some(json!({"nested": {"list": [1, "two", null]}, "unicode": "ünï"})),
            data: Some("raw text, kept as sent".into()),
        },
    };
    let bare = StoredRecord {
        sequence: 2,
        record: Record {
            id: "bare".into(),
            vector: None,
            sparse: None,
            metadata: None,
            data: None,
        },
    };
    store
        .apply(
            index,
            vec![
                put("", vec![full.clone(), bare.clone()]),
                put("other", vec![record("x", 1)]),
            ],
        )
        .await
        .expect("apply succeeds");
    let namespaces = load(store, index).await;
    let names: Vec<&str> = namespaces.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["", "other"], "a put creates its namespace");
    assert_eq!(
        namespaces[0].1,
        vec![bare, full],
        "records come back exactly as stored, ordered by sequence"
    );
}

async fn a_put_of_an_existing_id_replaces_it(store: &dyn VectorStore) {
    let index = IndexId::random();
    store
        .apply(index, vec![put("", vec![record("a", 1), record("b", 2)])])
        .await
        .expect("apply succeeds");
    let mut replacement = record("a", 1);
    replacement.record.data = Some("second".into());
    store
        .apply(index, vec![put("", vec![replacement.clone()])])
        .await
        .expect("apply succeeds");
    let namespaces = load(store, index).await;
    assert_eq!(ids(&namespaces[0].1), ["a", "b"], "no duplicate, place kept");
    assert_eq!(namespaces[0].1[0], replacement, "the later put wins");
}

async fn changes_apply_in_order_in_one_call(store: &dyn VectorStore) {
    let index = IndexId::random();
    store
        .apply(
            index,
            vec![
                put("", vec![record("a", 1), record("b", 2)]),
                Change::Delete {
                    namespace: String::new(),
                    ids: vec!["a".into(), "never-stored".into()],
                },
                put("", vec![record("c", 3)]),
            ],
        )
        .await
        .expect("apply succeeds");
    let namespaces = load(store, index).await;
    assert_eq!(
        ids(&namespaces[0].1),
        ["b", "c"],
        "changes apply in order; deleting an unknown id is no error"
    );
}

async fn reset_empties_a_namespace_that_stays(store: &dyn VectorStore) {
    let index = IndexId::random();
    store
        .apply(
            index,
            vec![put("ns", vec![record("a", 1)]), put("kept", vec![record("k", 1)])],
        )
        .await
        .expect("apply succeeds");
    store
        .apply(
            index,
            vec![Change::Reset {
                namespace: "ns".into(),
            }],
        )
        .await
        .expect("apply succeeds");
    let namespaces = load(store, index).await;
    assert_eq!(
        namespaces,
        vec![
            ("kept".to_owned(), vec![record("k", 1)]),
            ("ns".to_owned(), Vec::new())
        ],
        "a reset namespace stays, empty; others are untouched"
    );
}

async fn namespaces_are_dropped_and_renamed_with_their_records(store: &dyn VectorStore) {
    let index = IndexId::random();
    store
        .apply(
            index,
            vec![
                put("old", vec![record("a", 1), record("b", 2)]),
                put("gone", vec![record("g", 1)]),
            ],
        )
        .await
        .expect("apply succeeds");
    store
        .apply(
            index,
            vec![
                Change::DropNamespace {
                    namespace: "gone".into(),
                },
                Change::RenameNamespace {
                    from: "old".into(),
                    to: "new".into(),
                },
            ],
        )
        .await
        .expect("apply succeeds");
    let namespaces = load(store, index).await;
    assert_eq!(
        namespaces,
        vec![("new".to_owned(), vec![record("a", 1), record("b", 2)])],
        "a dropped namespace is gone with its records; a renamed one moves them"
    );
}

async fn indexes_are_isolated_and_dropped_whole(store: &dyn VectorStore) {
    let (first, second) = (IndexId::random(), IndexId::random());
    for index in [first, second] {
        store
            .apply(
                index,
                vec![
                    put("", vec![record("same-id", 1)]),
                    put("ns", vec![record("n", 1)]),
                ],
            )
            .await
            .expect("apply succeeds");
    }
    store
        .apply(
            first,
            vec![Change::Delete {
                namespace: String::new(),
                ids: vec!["same-id".into()],
            }],
        )
        .await
        .expect("apply succeeds");
    assert_eq!(
        ids(&load(store, second).await[0].1),
        ["same-id"],
        "a change to one index leaves another alone"
    );
    store.drop_index(first).await.expect("drop succeeds");
    assert!(
        load(store, first).await.is_empty(),
        "a dropped index has nothing left"
    );
    assert_eq!(
        load(store, second).await.len(),
        2,
        "the other index keeps its namespaces"
    );
    store
        .drop_index(IndexId::random())
        .await
        .expect("dropping an index that never existed is no error");
}

/// The suite of a store that several nodes share ([`VectorStore::feed`]): every write takes the next
/// position of its index's feed; a write based on an old position is refused; the feed gives each
/// write's changes in order, with records as they now stand; a snapshot says where it stands.
///
/// # Panics
/// When the store has no feed, or breaks its contract.
pub async fn change_feed(store: &dyn VectorStore) {
    use crate::store::FEED_BEHIND;
    let feed = store.feed().expect("a shared store has a feed");
    let index = IndexId::random();
    let (empty, start) = feed.load_at(index).await.expect("load succeeds");
    assert!(
        empty.is_empty() && start == 0,
        "an index never written to stands at 0"
    );
    let first = feed
        .apply_after(index, vec![put("", vec![record("a", 1), record("b", 2)])], 0)
        .await
        .expect("a write on the head succeeds");
    assert_eq!(first, 1, "the first write takes position 1");
    store
        .apply(index, vec![put("n", vec![record("c", 1)])])
        .await
        .expect("apply succeeds");
    let stale = feed
        .apply_after(index, vec![put("", vec![record("z", 9)])], first)
        .await
        .expect_err("a write based on an old position is refused");
    assert!(
        matches!(&stale, quiver_core::StoreError::Conflict(what) if what == FEED_BEHIND),
        "{stale:?}"
    );
    let third = feed
        .apply_after(
            index,
            vec![Change::Delete {
                namespace: String::new(),
                ids: vec!["a".into()],
            }],
            2,
        )
        .await
        .expect("a write on the head succeeds");
    assert_eq!(third, 3);
    let writes = feed
        .changes_after(index, 0, 10)
        .await
        .expect("the feed reads")
        .expect("the feed reaches back to the start");
    let positions: Vec<u64> = writes.iter().map(|(at, _)| *at).collect();
    assert_eq!(
        positions,
        [1, 2, 3],
        "every write once, in order; the refused one left nothing"
    );
    let Some(Change::Put { records, .. }) = writes[0].1.first() else {
        panic!("the first write is a put, not {:?}", writes[0].1);
    };
    let put_now = ids(records);
    assert_eq!(put_now, ["b"], "a put comes back as its records now stand");
    assert!(
        writes[0]
            .1
            .iter()
            .any(|c| matches!(c, Change::Delete { ids, .. } if ids == &["a".to_owned()])),
        "a record deleted since comes back deleted"
    );
    let later = feed
        .changes_after(index, 2, 10)
        .await
        .expect("reads")
        .expect("reaches");
    assert_eq!(later.len(), 1, "the feed starts after the position asked");
    let (snapshot, at) = feed.load_at(index).await.expect("load succeeds");
    assert_eq!(at, 3, "a snapshot stands at the latest write");
    assert_eq!(snapshot.len(), 2);
    let heads = feed.heads(&[index, IndexId::random()]).await.expect("heads read");
    assert_eq!(heads, [(index, 3)], "indexes never written to have no head");
    store.drop_index(index).await.expect("drop succeeds");
    let (gone, at) = feed.load_at(index).await.expect("load succeeds");
    assert!(gone.is_empty() && at == 0, "a dropped index starts over");
}
