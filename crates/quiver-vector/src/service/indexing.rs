//! The indexer's rounds: batches of pending vectors moved into their graphs under the namespaces'
//! locks.

use std::collections::BTreeMap;
use std::sync::RwLock;

use crate::hnsw::{INSERT_BATCH, Linking};
use crate::namespace::Namespace;

use super::{read, write};

/// Moves up to [`INSERT_BATCH`] of each namespace's pending vectors into its graph, a batch at a time
/// (a small graph takes small batches, see [`crate::hnsw::Hnsw::batch_size`]); returns how many
/// vectors the batches took from the pending lists (0 once nothing is pending).
pub(super) fn index_chunk(namespaces: &RwLock<BTreeMap<String, Namespace>>) -> usize {
    let mut moved = 0;
    loop {
        let batch = index_batch(namespaces);
        moved += batch;
        if batch == 0 || moved >= INSERT_BATCH {
            return moved;
        }
    }
}

/// Moves a batch of each namespace's pending vectors into its graph (see
/// [`Namespace::begin_indexing`]): appended under the write lock, their neighbours chosen under the
/// read lock (queries run meanwhile; writes wait), linked under the write lock. Returns how many
/// vectors the batches took from the pending lists, those removed while in flight included.
fn index_batch(namespaces: &RwLock<BTreeMap<String, Namespace>>) -> usize {
    let begun: Vec<String> = write(namespaces)
        .iter_mut()
        .filter_map(|(name, namespace)| namespace.begin_indexing(INSERT_BATCH).then(|| name.clone()))
        .collect();
    if begun.is_empty() {
        return 0;
    }
    let chosen: Vec<(String, Linking)> = {
        let namespaces = read(namespaces);
        begun
            .into_iter()
            .filter_map(|name| {
                let linking = namespaces.get(&name)?.choose_indexing()?;
                Some((name, linking))
            })
            .collect()
    };
    // A namespace dropped or replaced meanwhile has no batch in flight and takes nothing; one renamed
    // finishes its batch when it next begins one.
    let mut namespaces = write(namespaces);
    chosen
        .into_iter()
        .map(|(name, linking)| {
            namespaces
                .get_mut(&name)
                .map_or(0, |n| n.finish_indexing(linking))
        })
        .sum()
}
