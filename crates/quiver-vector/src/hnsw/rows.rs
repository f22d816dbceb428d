//! The graph's f32 vectors, in chunks of 4,096 nodes each held by reference. A node's vector never
//! changes once it is inserted (slots are never reused), so a snapshot's copy of the graph shares every
//! chunk instead of copying gigabytes while writes wait; the graph copies a chunk only when it adds to
//! one that a copy still holds (the last, partly filled one).

use std::sync::Arc;

use crate::codec::{DecodeError, Decoder};

/// log2 of the nodes per chunk.
const CHUNK_SHIFT: usize = 12;
const CHUNK_NODES: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK_NODES - 1;

/// Fixed-length vectors by node.
#[derive(Debug, Clone)]
pub(super) struct Rows {
    chunks: Vec<Arc<Vec<f32>>>,
    dimension: usize,
    len: usize,
}

impl Rows {
    pub(super) fn new(dimension: usize) -> Rows {
        Rows {
            chunks: Vec::new(),
            dimension,
            len: 0,
        }
    }

    /// `nodes` rows of `dimension` read from `decoder` (values back to back), a chunk at a time.
    pub(super) fn decode(
        decoder: &mut Decoder<'_>,
        dimension: usize,
        nodes: usize,
    ) -> Result<Rows, DecodeError> {
        let mut rows = Rows::new(dimension);
        while rows.len < nodes {
            let take = CHUNK_NODES.min(nodes - rows.len);
            let mut values = decoder.f32s(take * dimension)?;
            values.reserve_exact(CHUNK_NODES * dimension - values.len());
            rows.chunks.push(Arc::new(values));
            rows.len += take;
        }
        Ok(rows)
    }

    /// Nodes held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(super) fn get(&self, node: usize) -> &[f32] {
        let start = (node & CHUNK_MASK) * self.dimension;
        &self.chunks[node >> CHUNK_SHIFT][start..start + self.dimension]
    }

    /// Appends the next node's vector.
    pub(super) fn push(&mut self, vector: &[f32]) {
        debug_assert_eq!(vector.len(), self.dimension);
        if self.len & CHUNK_MASK == 0 {
            self.chunks
                .push(Arc::new(Vec::with_capacity(CHUNK_NODES * self.dimension)));
        }
        if let Some(last) = self.chunks.last_mut() {
            Arc::make_mut(last).extend_from_slice(vector);
        }
        self.len += 1;
    }

    /// Every node's vector, in node order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &[f32]> {
        (0..self.len()).map(|node| self.get(node))
    }

    /// Bytes of the vectors.
    pub(super) fn bytes(&self) -> usize {
        self.len * self.dimension * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_shares_full_chunks_and_keeps_its_rows_when_the_original_grows() {
        let mut rows = Rows::new(2);
        for node in 0..CHUNK_NODES + 10 {
            rows.push(&[node as f32, -(node as f32)]);
        }
        let copy = rows.clone();
        assert!(
            Arc::ptr_eq(&rows.chunks[0], &copy.chunks[0]),
            "a full chunk is shared"
        );
        for node in CHUNK_NODES + 10..2 * CHUNK_NODES + 5 {
            rows.push(&[node as f32, -(node as f32)]);
        }
        assert_eq!(copy.len(), CHUNK_NODES + 10);
        assert_eq!(
            copy.get(CHUNK_NODES + 9),
            [(CHUNK_NODES + 9) as f32, -((CHUNK_NODES + 9) as f32)]
        );
        assert_eq!(
            rows.get(2 * CHUNK_NODES + 4),
            [(2 * CHUNK_NODES + 4) as f32, -((2 * CHUNK_NODES + 4) as f32)]
        );
        assert_eq!(rows.iter().count(), 2 * CHUNK_NODES + 5);
        let flat: Vec<f32> = copy.iter().flatten().copied().collect();
        let mut encoder = crate::codec::Encoder::default();
        encoder.f32s(&flat);
        let mut decoded = Rows::decode(&mut Decoder::new(&encoder.bytes), 2, copy.len()).unwrap();
        assert!(decoded.iter().eq(copy.iter()));
        decoded.push(&[1.0, 2.0]);
        assert_eq!(
            decoded.get(copy.len()),
            [1.0, 2.0],
            "a decoded last chunk takes more rows"
        );
    }
}
