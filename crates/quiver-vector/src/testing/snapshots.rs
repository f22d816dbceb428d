//! The engine over a store, restarted with graph snapshots: good, stale, corrupt, truncated and missing.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use quiver_core::index::{IndexType, SimilarityFunction};
use quiver_core::plan::PlanType;
use quiver_core::{IndexId, ManualClock, Timestamp};

use crate::Vectors;
use crate::query::{Query, QueryInput};
use crate::record::{IndexSpec, Record};
use crate::service::{IndexRef, Selection};
use crate::store::VectorStore;

const DIMENSION: usize = 8;

fn index() -> IndexRef {
    IndexRef {
        id: IndexId::random(),
        name: "snapshots".into(),
        spec: IndexSpec {
            dimension: DIMENSION,
            similarity: SimilarityFunction::Cosine,
            index_type: IndexType::Dense,
        },
        limits: PlanType::Payg.vector_limits(),
        models: crate::text::TextModels::default(),
    }
}

fn vector(i: usize, turn: f32) -> Vec<f32> {
    (0..DIMENSION)
        .map(|d| ((i * 31 + d * 7) % 17) as f32 - 8.0 + turn * d as f32)
        .collect()
}

fn records(range: std::ops::Range<usize>, turn: f32) -> Vec<Record> {
    range
        .map(|i| Record {
            id: format!("r{i}"),
            vector: Some(vector(i, turn)),
            sparse: None,
            metadata: None,
            data: None,
        })
        .collect()
}

/// The engine over a store `open` gives, with its snapshots in `dir` (its indexer does not run).
async fn engine<F, Fut>(open: &F, dir: &Path) -> Arc<Vectors>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorStore>>,
{
    Arc::new(
        Vectors::new(
            open().await,
            Arc::new(ManualClock::new(Timestamp::from_millis(1_000))),
            Arc::new(quiver_embed::Embedders::new(
                quiver_embed::ModelDir::new(dir.join("models")),
                1,
            )),
        )
        // Every file mapped, so full chunks of vectors are read in place after each load and write.
        .with_snapshot_files(crate::snapshot::Snapshots::new(dir.join("snapshots")).map_at_least(0)),
    )
}

/// Runs the engine's indexer until nothing is pending, then stops it as a shutdown does (which writes
/// the snapshots that are behind).
async fn index_and_stop(vectors: &Arc<Vectors>, index: &IndexRef) {
    let stop = tokio_util::sync::CancellationToken::new();
    let indexer = tokio::spawn(Arc::clone(vectors).run_indexer(stop.clone()));
    while vectors.info(index).await.expect("info").pending_vector_count > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    stop.cancel();
    indexer.await.expect("the indexer stops");
}

/// Per namespace: records and pending records, after a (re)load.
async fn counts(vectors: &Vectors, index: &IndexRef) -> Vec<(String, usize, usize)> {
    let info = vectors.info(index).await.expect("info");
    info.namespaces
        .into_iter()
        .map(|(name, counts)| (name, counts.vector_count, counts.pending_vector_count))
        .collect()
}

async fn nearest(vectors: &Vectors, index: &IndexRef, query: Vec<f32>) -> Vec<String> {
    let query = Query {
        input: QueryInput::Vectors {
            dense: Some(query),
            sparse: None,
        },
        top_k: 10,
        ..Query::default()
    };
    vectors
        .query(index, "", query)
        .await
        .expect("query")
        .into_iter()
        .map(|hit| hit.record.id)
        .collect()
}

fn snapshot_file(dir: &Path, index: &IndexRef, namespace: &str) -> std::path::PathBuf {
    crate::snapshot::Snapshots::new(dir.join("snapshots")).path(index.id, namespace)
}

/// Writes 5,000 records to the default namespace (more than a chunk of vectors, which a mapped file
/// holds in place) and 500 to another, lets the indexer build their graphs
/// and stop (writing snapshots), and restarts the engine over the same storage and snapshot directory
/// `dir` four times: with sound snapshots (nothing pending, the same answers), after writes the
/// snapshot does not hold (only those pending), with a corrupt snapshot and with a truncated one (that
/// namespace rebuilt from the store, the other still from its snapshot), after a namespace is renamed
/// (its graph saved under the new name), and with none. `open` must reach the same storage each time.
///
/// # Panics
/// When a restart misses a record, trusts a bad snapshot or does not use a good one.
pub async fn snapshots_bring_graphs_back<F, Fut>(open: F, dir: &Path)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorStore>>,
{
    let index = index();
    let first = engine(&open, dir).await;
    for batch in 0..5 {
        first
            .upsert(&index, "", records(batch * 1_000..(batch + 1) * 1_000, 0.0))
            .await
            .expect("upsert");
    }
    first
        .upsert(&index, "other", records(0..500, 0.5))
        .await
        .expect("upsert");
    index_and_stop(&first, &index).await;
    let probes: Vec<Vec<f32>> = (0..20).map(|i| vector(i * 97, 0.25)).collect();
    let mut answers = Vec::new();
    for probe in &probes {
        answers.push(nearest(&first, &index, probe.clone()).await);
    }
    drop(first);
    assert!(
        snapshot_file(dir, &index, "").exists(),
        "a shutdown writes the snapshots"
    );

    let second = engine(&open, dir).await;
    assert_eq!(
        counts(&second, &index).await,
        [(String::new(), 5_000, 0), ("other".to_owned(), 500, 0)],
        "every graph comes back from its snapshot"
    );
    for (probe, answer) in probes.iter().zip(&answers) {
        assert_eq!(&nearest(&second, &index, probe.clone()).await, answer);
    }
    // Writes the snapshot does not hold: 100 new records, 50 changed, 50 deleted; no shutdown follows.
    second
        .upsert(&index, "", records(5_000..5_100, 0.0))
        .await
        .expect("upsert");
    let mut changed = records(0..50, 0.0);
    for record in &mut changed {
        record.vector = Some(probes[0].clone());
    }
    second.upsert(&index, "", changed).await.expect("upsert");
    let deleted: Vec<String> = (50..100).map(|i| format!("r{i}")).collect();
    second
        .delete(&index, "", Selection::Ids(deleted.clone()))
        .await
        .expect("delete");
    drop(second);

    let third = engine(&open, dir).await;
    assert_eq!(
        counts(&third, &index).await,
        [(String::new(), 5_050, 150), ("other".to_owned(), 500, 0)],
        "what changed after the snapshot is pending; the rest comes from it"
    );
    let found = nearest(&third, &index, probes[0].clone()).await;
    assert!(
        found
            .iter()
            .all(|id| id[1..].parse::<usize>().is_ok_and(|i| i < 50)),
        "changed records are found where they are now: {found:?}"
    );
    let fetched = third.fetch(&index, "", &deleted).await.expect("fetch");
    assert!(
        fetched.iter().all(Option::is_none),
        "deleted records stay deleted"
    );
    drop(third);

    let default_file = snapshot_file(dir, &index, "");
    let mut bytes = std::fs::read(&default_file).expect("the snapshot is there");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&default_file, &bytes).expect("the snapshot is damaged");
    let other_file = snapshot_file(dir, &index, "other");
    let whole = std::fs::read(&other_file).expect("the snapshot is there");
    std::fs::write(&other_file, &whole[..whole.len() / 2]).expect("the snapshot is cut short");
    let fourth = engine(&open, dir).await;
    assert_eq!(
        counts(&fourth, &index).await,
        [(String::new(), 5_050, 5_050), ("other".to_owned(), 500, 500)],
        "a corrupt or truncated snapshot is not used"
    );
    let found = nearest(&fourth, &index, probes[0].clone()).await;
    assert!(
        found
            .iter()
            .all(|id| id[1..].parse::<usize>().is_ok_and(|i| i < 50))
    );
    index_and_stop(&fourth, &index).await;
    drop(fourth);

    let fifth = engine(&open, dir).await;
    assert_eq!(
        counts(&fifth, &index).await,
        [(String::new(), 5_050, 0), ("other".to_owned(), 500, 0)],
        "the rebuilt graphs were written again"
    );
    // A renamed namespace's graph is written under its new name, and the old name's file goes.
    fifth
        .rename_namespace(&index, "other", "renamed", false)
        .await
        .expect("rename");
    index_and_stop(&fifth, &index).await;
    drop(fifth);
    let renamed = engine(&open, dir).await;
    assert_eq!(
        counts(&renamed, &index).await,
        [(String::new(), 5_050, 0), ("renamed".to_owned(), 500, 0)],
        "a renamed namespace's graph comes back from its snapshot"
    );
    assert!(!snapshot_file(dir, &index, "other").exists());
    drop(renamed);
    std::fs::remove_dir_all(dir.join("snapshots")).expect("the snapshots are removed");
    let sixth = engine(&open, dir).await;
    assert_eq!(
        counts(&sixth, &index).await,
        [(String::new(), 5_050, 5_050), ("renamed".to_owned(), 500, 500)],
        "without snapshots every graph is built from the store"
    );
    assert_eq!(nearest(&sixth, &index, probes[1].clone()).await.len(), 10);
}
