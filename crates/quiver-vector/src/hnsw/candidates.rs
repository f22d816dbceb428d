//! What graph walks pass around: candidates ordered by distance, and which nodes a walk may return.

use std::cmp::Ordering;

/// A candidate: (distance, node). Ordered by distance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Near(pub(crate) f32, pub(crate) u32);

impl Eq for Near {}
impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Near {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then_with(|| self.1.cmp(&other.1))
    }
}

/// Which nodes a beam search may return.
#[derive(Clone, Copy)]
pub(crate) enum Accept<'a> {
    /// Every node, deleted ones included (building the graph: deleted nodes stay waypoints).
    Any,
    /// Live nodes.
    Live,
    /// Live nodes that pass a filter; rejected nodes are bridges to their neighbours.
    Filter(&'a dyn Fn(usize) -> bool),
    /// Live nodes that pass a filter most nodes pass; rejected nodes are walked through like any other,
    /// only not returned (no bridges: they would add distances without adding passing regions).
    Mostly(&'a dyn Fn(usize) -> bool),
}

/// Where a beam search starts: a node, and passing nodes to start from as well where the filter
/// rejects that node (see `Hnsw::search_level`).
#[derive(Clone, Copy)]
pub(crate) struct Start<'a> {
    pub(crate) entry: Near,
    pub(crate) seeds: &'a [u32],
}

impl Start<'_> {
    /// From `entry` alone.
    pub(crate) fn at(entry: Near) -> Start<'static> {
        Start { entry, seeds: &[] }
    }
}

/// What a search ranks nodes by on its way: the half-precision copies (as the build does, and for
/// euclidean distance), with a padded query, or the 8-bit codes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Probe<'a> {
    Half(&'a [f32]),
    Int8(&'a crate::int8::Query),
}
