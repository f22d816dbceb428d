//! The graph's f32 vectors, in chunks of 4,096 nodes each held by reference. A node's vector never
//! changes once it is inserted (slots are never reused), so a snapshot's copy of the graph shares every
//! chunk instead of copying gigabytes while writes wait; the graph copies a chunk only when it adds to
//! one that a copy still holds (the last, partly filled one).
//!
//! A graph loaded from a snapshot file that was mapped ([`crate::mapped`]) reads its full chunks where
//! the file holds them: those vectors then cost the page cache, which the kernel can reclaim, instead
//! of the process's own memory.

use std::sync::Arc;

use crate::codec::{DecodeError, Decoder, f32s_of};
use crate::mapped::MappedFile;

/// log2 of the nodes per chunk.
const CHUNK_SHIFT: usize = 12;
const CHUNK_NODES: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK_NODES - 1;

/// One chunk's values.
#[derive(Debug, Clone)]
enum Chunk {
    /// In the process's memory.
    Owned(Arc<Vec<f32>>),
    /// A full chunk read in place from a mapped file, starting at byte `offset` (four-byte aligned).
    Mapped { file: Arc<MappedFile>, offset: usize },
}

/// Fixed-length vectors by node.
#[derive(Debug, Clone)]
pub(super) struct Rows {
    chunks: Vec<Chunk>,
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

    /// `nodes` rows of `dimension` read from `decoder` (values back to back), a chunk at a time. Where
    /// the decoder reads `file` and a full chunk's values are four-byte aligned in it, the chunk reads
    /// them there; every other chunk is copied.
    pub(super) fn decode(
        decoder: &mut Decoder<'_>,
        dimension: usize,
        nodes: usize,
        file: Option<&Arc<MappedFile>>,
    ) -> Result<Rows, DecodeError> {
        let mut rows = Rows::new(dimension);
        while rows.len < nodes {
            let take = CHUNK_NODES.min(nodes - rows.len);
            let bytes = decoder.word_bytes(take * dimension)?;
            let in_place = file
                .filter(|_| take == CHUNK_NODES)
                .and_then(|file| Some((file, file.offset_of(bytes)?)))
                .filter(|(file, offset)| file.holds_f32s_at(*offset, take * dimension));
            let chunk = match in_place {
                Some((file, offset)) => Chunk::Mapped {
                    file: Arc::clone(file),
                    offset,
                },
                None => {
                    let mut values = Vec::with_capacity(CHUNK_NODES * dimension);
                    values.extend(f32s_of(bytes));
                    Chunk::Owned(Arc::new(values))
                }
            };
            rows.chunks.push(chunk);
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
        match &self.chunks[node >> CHUNK_SHIFT] {
            Chunk::Owned(values) => &values[start..start + self.dimension],
            Chunk::Mapped { file, offset } => file.f32s(offset + start * 4, self.dimension),
        }
    }

    /// Backs the room for the next `nodes` vectors in the last chunk with memory now (see
    /// [`crate::huge::prefault`]); a chunk not allocated yet is not.
    pub(super) fn prefault(&self, nodes: usize) {
        if self.len & CHUNK_MASK != 0
            && let Some(Chunk::Owned(last)) = self.chunks.last()
        {
            crate::huge::prefault(last, nodes * self.dimension);
        }
    }

    /// Appends the next node's vector.
    pub(super) fn push(&mut self, vector: &[f32]) {
        debug_assert_eq!(vector.len(), self.dimension);
        if self.len & CHUNK_MASK == 0 {
            self.chunks.push(Chunk::Owned(Arc::new(Vec::with_capacity(
                CHUNK_NODES * self.dimension,
            ))));
        }
        // Only full chunks are mapped, so a partly filled last chunk is always owned.
        if let Some(Chunk::Owned(last)) = self.chunks.last_mut() {
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

    /// Bytes of the vectors read in place from mapped files.
    pub(super) fn mapped_bytes(&self) -> usize {
        let mapped = self
            .chunks
            .iter()
            .filter(|chunk| matches!(chunk, Chunk::Mapped { .. }))
            .count();
        mapped * CHUNK_NODES * self.dimension * 4
    }

    /// Reads each full chunk that `written` shares with these rows (the same memory, or the same place
    /// in the same file) from `file` instead, where `written`'s vectors were encoded back to back from
    /// byte `vectors_at`. Sharing proves the values are the same: a chunk's values never change once
    /// it is full. The chunks' memory goes when `written` lets go of it too, and a file no chunk reads
    /// any more is unmapped.
    pub(super) fn adopt_mapped(&mut self, written: &Rows, file: &Arc<MappedFile>, vectors_at: usize) {
        let chunk_values = CHUNK_NODES * self.dimension;
        let full = written.len / CHUNK_NODES;
        for (number, (chunk, copy)) in self.chunks.iter_mut().zip(&written.chunks).take(full).enumerate() {
            let offset = vectors_at + number * chunk_values * 4;
            if !file.holds_f32s_at(offset, chunk_values) {
                break;
            }
            let is_shared = match (&*chunk, copy) {
                (Chunk::Owned(ours), Chunk::Owned(theirs)) => Arc::ptr_eq(ours, theirs),
                (
                    Chunk::Mapped {
                        file: ours,
                        offset: at,
                    },
                    Chunk::Mapped {
                        file: theirs,
                        offset: their_at,
                    },
                ) => Arc::ptr_eq(ours, theirs) && at == their_at,
                _ => false,
            };
            if is_shared {
                *chunk = Chunk::Mapped {
                    file: Arc::clone(file),
                    offset,
                };
            }
        }
    }

    /// Lets the kernel take back the mapped files' pages that reading them touched (see
    /// [`MappedFile::release_pages`]).
    pub(super) fn release_mapped_pages(&self) {
        let mut released: Option<&Arc<MappedFile>> = None;
        for chunk in &self.chunks {
            if let Chunk::Mapped { file, .. } = chunk
                && !released.is_some_and(|done| Arc::ptr_eq(done, file))
            {
                file.release_pages();
                released = Some(file);
            }
        }
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
            matches!((&rows.chunks[0], &copy.chunks[0]),
                (Chunk::Owned(a), Chunk::Owned(b)) if Arc::ptr_eq(a, b)),
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
        let mut decoded = Rows::decode(&mut Decoder::new(&encoder.bytes), 2, copy.len(), None).unwrap();
        assert!(decoded.iter().eq(copy.iter()));
        decoded.push(&[1.0, 2.0]);
        assert_eq!(
            decoded.get(copy.len()),
            [1.0, 2.0],
            "a decoded last chunk takes more rows"
        );
    }

    #[test]
    fn full_chunks_of_a_mapped_file_are_read_in_place_and_the_rest_is_copied_and_grows() {
        let nodes = CHUNK_NODES + 3;
        let mut encoder = crate::codec::Encoder::default();
        encoder.u8(1);
        encoder.pad_to(4);
        let values: Vec<f32> = (0..nodes * 2).map(|n| n as f32).collect();
        encoder.f32s(&values);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows");
        std::fs::write(&path, &encoder.bytes).unwrap();
        let file = Arc::new(MappedFile::open(&std::fs::File::open(&path).unwrap()).unwrap());
        let mut decoder = Decoder::new(file.bytes());
        decoder.u8().unwrap();
        decoder.skip_padding(4).unwrap();
        let mut rows = Rows::decode(&mut decoder, 2, nodes, Some(&file)).unwrap();
        assert!(matches!(rows.chunks[0], Chunk::Mapped { offset: 4, .. }));
        assert!(
            matches!(rows.chunks[1], Chunk::Owned(_)),
            "a partial chunk is copied"
        );
        assert_eq!(rows.mapped_bytes(), CHUNK_NODES * 2 * 4);
        rows.release_mapped_pages();
        assert_eq!(rows.get(7), [14.0, 15.0]);
        assert_eq!(rows.get(CHUNK_NODES + 2), &values[nodes * 2 - 2..]);
        rows.push(&[-1.0, -2.0]);
        assert_eq!(rows.get(nodes), [-1.0, -2.0]);
        assert!(
            rows.iter()
                .flatten()
                .copied()
                .take(nodes * 2)
                .eq(values.iter().copied())
        );

        // Values that are not four-byte aligned in the file are copied.
        let mut decoder = Decoder::new(file.bytes());
        decoder.bytes(2).unwrap();
        let shifted = Rows::decode(&mut decoder, 2, CHUNK_NODES, Some(&file)).unwrap();
        assert_eq!(shifted.mapped_bytes(), 0);
    }
}
