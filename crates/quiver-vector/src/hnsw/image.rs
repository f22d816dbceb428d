//! A graph as bytes, for snapshots: everything a restart would otherwise recompute by inserting every
//! vector again, and its regions, which it would otherwise train again. The vectors are kept as they
//! were written; cosine's inverse norms and the half-precision copies are left out (they are derived
//! from the vectors at load, faster than reading them), and so are the search settings (`ef_search`,
//! `exact_below`), which belong to the running process. Decoding checks every count and neighbour
//! against the graph's size, so even a file that passes its checksum but was written wrong cannot make
//! a search index out of bounds.

use std::collections::HashMap;
use std::sync::Arc;

use quiver_core::index::SimilarityFunction;

use super::partition::Regions;
use super::rows::Rows;
use super::{Hnsw, HnswParams, inverse_norm, scale_in};
use crate::codec::{DecodeError, Decoder, Encoder};
use crate::half;
use crate::mapped::MappedFile;
use crate::score::norm;

/// Levels are drawn below this (see `Hnsw::random_level`).
const MAX_LEVEL: u8 = 16;

/// No entry point (an empty graph).
const NO_ENTRY: u32 = u32::MAX;

/// The vectors start at a multiple of this many bytes from the start of the encoding, so a mapped
/// file's vectors can be read in place as f32 values.
const VECTOR_ALIGNMENT: usize = 64;

/// Where a graph's bytes are read from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    /// The mapped file the decoder reads, from its first byte: full chunks of vectors are read there
    /// in place instead of copied.
    pub(crate) file: Option<&'a Arc<MappedFile>>,
    /// Whether the vectors were padded to [`VECTOR_ALIGNMENT`] (snapshot format 3 on; format 2 was
    /// not).
    pub(crate) is_padded: bool,
}

impl Default for Source<'_> {
    fn default() -> Self {
        Source {
            file: None,
            is_padded: true,
        }
    }
}

fn similarity_code(similarity: SimilarityFunction) -> u8 {
    match similarity {
        SimilarityFunction::Cosine => 0,
        SimilarityFunction::Euclidean => 1,
        SimilarityFunction::DotProduct => 2,
    }
}

fn invalid(message: impl Into<String>) -> DecodeError {
    DecodeError::Invalid(message.into())
}

/// What a graph derives from its vectors at load ([`Hnsw::derived`]).
#[derive(Debug)]
pub(crate) struct Derived {
    /// The graph's node count it was made for.
    nodes: usize,
    /// Cosine's inverse norms (`None` for the other similarities).
    inverse_norms: Option<Vec<f32>>,
    halves: Vec<u32>,
    max_norm: f32,
    /// Whether half precision holds every vector.
    held: bool,
    codes: crate::int8::Codes,
}

impl Hnsw {
    /// Slots the graph has room for (live, deleted, and never inserted alike).
    pub fn node_count(&self) -> usize {
        self.levels.len()
    }

    /// Whether `node` holds a vector that searches may return.
    pub fn is_live(&self, node: usize) -> bool {
        self.deleted.get(node).is_some_and(|deleted| !deleted)
    }

    /// The vector `node` was inserted with, exactly as it was given.
    pub fn node_vector(&self, node: usize) -> &[f32] {
        self.vectors.get(node)
    }

    /// Lets the kernel take back the pages of mapped snapshot files that reading the vectors touched
    /// (a load reads every vector once): they are read again from the page cache when next needed.
    pub(crate) fn release_mapped_pages(&self) {
        self.vectors.release_mapped_pages();
    }

    /// Reads the vectors that `written` (a copy of this graph, by [`Hnsw::copy_for_image`]) shares
    /// with this graph from `file` instead, where `written` was encoded with its vectors at byte
    /// `vectors_at`: the memory they held goes once the copy is dropped (see `Rows::adopt_mapped`).
    pub(crate) fn adopt_mapped(&mut self, written: &Hnsw, file: &Arc<MappedFile>, vectors_at: usize) {
        self.vectors.adopt_mapped(&written.vectors, file, vectors_at);
    }

    /// Bytes of the vectors read in place from mapped snapshot files rather than held in memory.
    pub fn mapped_vector_bytes(&self) -> usize {
        self.vectors.mapped_bytes()
    }

    /// A copy of everything a snapshot writes (not the half-precision copies), taken quickly so
    /// the graph's lock is let go before the slower encoding.
    pub fn copy_for_image(&self) -> Hnsw {
        Hnsw {
            similarity: self.similarity,
            dimension: self.dimension,
            params: self.params,
            level_multiplier: self.level_multiplier,
            vectors: self.vectors.clone(),
            inverse_norms: Vec::new(),
            halves: Vec::new(),
            half_words: self.half_words,
            codes: crate::int8::Codes::new(self.dimension),
            levels: self.levels.clone(),
            deleted: self.deleted.clone(),
            level0: self.level0.clone(),
            upper: self.upper.clone(),
            entry: self.entry,
            max_level: self.max_level,
            live: self.live,
            random_state: self.random_state,
            max_norm: self.max_norm,
            exact_traversal: self.exact_traversal,
            regions: self.regions.clone(),
            regions_used: true,
        }
    }

    /// Makes the inverse norms (cosine), the half-precision copies and the 8-bit codes from the
    /// vectors where they are missing (a graph decoded, or copied by [`Hnsw::copy_for_image`]), and the
    /// largest norm of a vector as ranked.
    pub(crate) fn derive_halves(&mut self) {
        if let Some(derived) = self.derived() {
            self.install(derived);
        }
    }

    /// What [`Hnsw::derive_halves`] makes, from the vectors alone (`None` where it is there), so a load
    /// can make it on another thread while it reads the records. The halves and the codes are made on
    /// two threads.
    pub(crate) fn derived(&self) -> Option<Derived> {
        let nodes = self.levels.len();
        if self.halves.len() == nodes * self.half_words {
            return None;
        }
        let inverse_norms = (self.similarity == SimilarityFunction::Cosine).then(|| {
            self.vectors
                .iter()
                .take(nodes)
                .map(inverse_norm)
                .collect::<Vec<_>>()
        });
        let scales = inverse_norms.as_deref().unwrap_or(&self.inverse_norms);
        let (halves, max_norm, held, codes) = std::thread::scope(|scope| {
            let halving = scope.spawn(|| {
                let mut halves = crate::huge::with_capacity(nodes * self.half_words);
                let mut max_norm: f32 = 0.0;
                let mut held = true;
                self.each_prepared(nodes, scales, |prepared| {
                    max_norm = max_norm.max(norm(prepared));
                    held &= half::holds(prepared);
                    half::pack_into(prepared, &mut halves);
                });
                (halves, max_norm, held)
            });
            let mut codes = crate::int8::Codes::with_capacity(self.dimension, nodes);
            self.each_prepared(nodes, scales, |prepared| codes.push(prepared));
            let (halves, max_norm, held) = halving
                .join()
                .expect("deriving the half-precision copies panicked");
            (halves, max_norm, held, codes)
        });
        Some(Derived {
            nodes,
            inverse_norms,
            halves,
            max_norm,
            held,
            codes,
        })
    }

    /// Takes what [`Hnsw::derived`] made of this graph's vectors.
    ///
    /// # Panics
    /// `derived` was made for a graph of another size.
    pub(crate) fn install(&mut self, derived: Derived) {
        let nodes = self.levels.len();
        assert_eq!(derived.nodes, nodes, "derived from a graph of another size");
        if let Some(inverse_norms) = derived.inverse_norms {
            self.inverse_norms = inverse_norms;
        }
        self.halves = derived.halves;
        self.max_norm = derived.max_norm;
        self.exact_traversal = !derived.held;
        self.codes = derived.codes;
        self.halves.resize(nodes * self.half_words, 0);
    }

    /// Hands each of the first `nodes` vectors as ranked (scaled by its inverse norm for cosine) to
    /// `take`, one at a time, in one buffer.
    /// `scales` are the inverse norms (empty where vectors are ranked as they are).
    fn each_prepared(&self, nodes: usize, scales: &[f32], mut take: impl FnMut(&[f32])) {
        let mut prepared = Vec::with_capacity(self.dimension);
        for (node, vector) in self.vectors.iter().take(nodes).enumerate() {
            let scale = scale_in(scales, node);
            prepared.clear();
            prepared.extend(vector.iter().map(|x| x * scale));
            take(&prepared);
        }
    }

    /// Appends the graph's bytes to `encoder`; where in its bytes the vectors start.
    pub(crate) fn encode(&self, encoder: &mut Encoder) -> usize {
        encoder.u8(similarity_code(self.similarity));
        encoder.count(self.dimension);
        encoder.count(self.params.m);
        encoder.count(self.params.ef_construction);
        encoder.u64(self.random_state);
        encoder.u32(self.entry.unwrap_or(NO_ENTRY));
        encoder.u8(self.max_level);
        encoder.count(self.levels.len());
        encoder.raw(&self.levels);
        encoder
            .bytes
            .extend(self.deleted.iter().map(|&deleted| u8::from(deleted)));
        encoder.u32s(&self.level0);
        let mut upper: Vec<(&u32, &Vec<Vec<u32>>)> = self.upper.iter().collect();
        upper.sort_unstable_by_key(|(node, _)| **node);
        encoder.count(upper.len());
        for (node, levels) in upper {
            encoder.u32(*node);
            for list in levels {
                encoder.count(list.len());
                encoder.u32s(list);
            }
        }
        encoder.pad_to(VECTOR_ALIGNMENT);
        let vectors_at = encoder.position();
        for vector in self.vectors.iter() {
            encoder.f32s(vector);
        }
        vectors_at
    }

    /// Appends the graph's regions to `encoder`: a flag, and where it is 1 the regions (see
    /// `Regions::encode`).
    pub(crate) fn encode_regions(&self, encoder: &mut Encoder) {
        match &self.regions {
            Some(regions) => {
                encoder.u8(1);
                regions.encode(encoder);
            }
            None => encoder.u8(0),
        }
    }

    /// Takes the regions [`Hnsw::encode_regions`] wrote for this graph.
    ///
    /// # Errors
    /// Bytes that end early, and regions that do not fit the graph (see `Regions::decode`).
    pub(crate) fn decode_regions(&mut self, decoder: &mut Decoder<'_>) -> Result<(), DecodeError> {
        self.regions = match decoder.u8()? {
            0 => None,
            1 => Some(Regions::decode(decoder, self.dimension, self.levels.len())?),
            flag => return Err(invalid(format!("the regions' flag is {flag}"))),
        };
        Ok(())
    }

    /// The graph `encode` wrote, which must have been built for `similarity`, `dimension` and the
    /// graph-shaping parameters of `params` (its search settings are taken from `params`), read from
    /// `source`. It cannot be searched before [`Hnsw::derive_halves`]: a load first checks the graph's
    /// vectors against the records, and derives what it keeps.
    ///
    /// # Errors
    /// Bytes that end early, values out of range, and a graph built with other settings.
    pub(crate) fn decode(
        decoder: &mut Decoder<'_>,
        similarity: SimilarityFunction,
        dimension: usize,
        params: HnswParams,
        source: Source<'_>,
    ) -> Result<Hnsw, DecodeError> {
        let stored_similarity = decoder.u8()?;
        if stored_similarity != similarity_code(similarity) {
            return Err(invalid(format!(
                "it was built for another similarity function (code {stored_similarity})"
            )));
        }
        let stored_dimension = decoder.number()?;
        if stored_dimension != dimension {
            return Err(invalid(format!(
                "it was built for dimension {stored_dimension}, the index has {dimension}"
            )));
        }
        let (m, ef_construction) = (decoder.number()?, decoder.number()?);
        if m != params.m || ef_construction != params.ef_construction {
            return Err(invalid(format!(
                "it was built with M {m} and efConstruction {ef_construction}, this build uses {} and {}",
                params.m, params.ef_construction
            )));
        }
        let mut graph = Hnsw::new(similarity, dimension, params);
        graph.random_state = decoder.u64()?;
        let entry = decoder.u32()?;
        graph.max_level = decoder.u8()?;
        let nodes = decoder.count(2 + 4 * graph.stride() + 4 * dimension)?;
        let node_limit = u32::try_from(nodes).map_err(|_| invalid("it has more nodes than a graph holds"))?;
        graph.levels = decoder.bytes(nodes)?.to_vec();
        if graph.levels.iter().any(|&level| level > MAX_LEVEL) {
            return Err(invalid("a node's level is out of range"));
        }
        graph.deleted = decoder.bytes(nodes)?.iter().map(|&byte| byte != 0).collect();
        graph.level0 = crate::huge::with_capacity(nodes * graph.stride());
        decoder.u32s_into(nodes * graph.stride(), &mut graph.level0)?;
        let stride = graph.stride();
        for list in graph.level0.chunks_exact(stride) {
            let count = list[0] as usize;
            if count >= stride || list[1..=count].iter().any(|&n| n >= node_limit) {
                return Err(invalid("a level-0 neighbour list is out of range"));
            }
        }
        let upper_nodes = decoder.count(4)?;
        let mut upper = HashMap::with_capacity(upper_nodes);
        for _ in 0..upper_nodes {
            let node = decoder.u32()?;
            let level = *graph
                .levels
                .get(node as usize)
                .ok_or_else(|| invalid("an upper-level node is out of range"))?;
            let mut lists = Vec::with_capacity(level as usize);
            for _ in 0..level {
                let length = decoder.count(4)?;
                if length > m {
                    return Err(invalid("an upper-level neighbour list is too long"));
                }
                let list = decoder.u32s(length)?;
                if list.iter().any(|&n| n >= node_limit) {
                    return Err(invalid("an upper-level neighbour is out of range"));
                }
                lists.push(list);
            }
            upper.insert(node, lists);
        }
        let levelled = graph.levels.iter().filter(|&&level| level > 0).count();
        if upper.len() != levelled {
            return Err(invalid("the upper levels do not match the nodes' levels"));
        }
        graph.upper = upper;
        graph.entry = match entry {
            NO_ENTRY => None,
            node if node < node_limit && graph.levels[node as usize] == graph.max_level => Some(node),
            _ => return Err(invalid("the entry point is out of range")),
        };
        if source.is_padded {
            decoder.skip_padding(VECTOR_ALIGNMENT)?;
        }
        graph.vectors = Rows::decode(decoder, dimension, nodes, source.file)?;
        graph.live = graph.deleted.iter().filter(|deleted| !**deleted).count();
        Ok(graph)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dense::DenseIndex;

    fn graph(count: usize) -> Hnsw {
        let params = HnswParams {
            exact_below: 0,
            ..HnswParams::default()
        };
        let mut graph = Hnsw::new(SimilarityFunction::Cosine, 8, params);
        for slot in 0..count {
            let vector: Vec<f32> = (0..8).map(|d| ((slot * 31 + d * 7) % 17) as f32 - 8.0).collect();
            graph.insert(slot, &vector);
        }
        graph.remove(3);
        graph
    }

    fn decoded(bytes: &[u8], params: HnswParams) -> Result<Hnsw, DecodeError> {
        Hnsw::decode(
            &mut Decoder::new(bytes),
            SimilarityFunction::Cosine,
            8,
            params,
            Source::default(),
        )
    }

    #[test]
    fn a_decoded_graph_is_the_graph_that_was_encoded() {
        let original = graph(3_000);
        let mut encoder = Encoder::default();
        original.encode(&mut encoder);
        let mut restored = decoded(&encoder.bytes, original.params).unwrap();
        restored.derive_halves();
        assert_eq!(restored.levels, original.levels);
        assert_eq!(restored.deleted, original.deleted);
        assert_eq!(restored.level0, original.level0);
        assert_eq!(restored.upper, original.upper);
        assert_eq!(restored.halves, original.halves, "the halves are derived exactly");
        assert_eq!(
            (restored.entry, restored.max_level, restored.live),
            (original.entry, original.max_level, original.live)
        );
        let query = [1.0, -2.0, 0.5, 3.0, 0.0, 1.0, -1.0, 2.0];
        assert_eq!(restored.search_all(&query, 10), original.search_all(&query, 10));
    }

    #[test]
    fn a_decoded_graph_of_vectors_half_precision_cannot_hold_ranks_by_its_vectors_again() {
        let params = HnswParams {
            exact_below: 0,
            ..HnswParams::default()
        };
        let mut original = Hnsw::new(SimilarityFunction::Euclidean, 8, params);
        for slot in 0..3_000 {
            let vector: Vec<f32> = (0..8)
                .map(|d| (((slot * 31 + d * 7) % 17) as f32 - 8.0) * 1e6)
                .collect();
            original.insert(slot, &vector);
        }
        assert!(original.exact_traversal);
        let mut encoder = Encoder::default();
        original.encode(&mut encoder);
        let mut restored = Hnsw::decode(
            &mut Decoder::new(&encoder.bytes),
            SimilarityFunction::Euclidean,
            8,
            params,
            Source::default(),
        )
        .unwrap();
        restored.derive_halves();
        assert!(restored.exact_traversal, "derived again from the vectors");
        let query = [1e6, -2e6, 5e5, 3e6, 0.0, 1e6, -1e6, 2e6];
        assert_eq!(restored.search_all(&query, 10), original.search_all(&query, 10));
    }

    #[test]
    fn a_graph_built_otherwise_or_out_of_range_is_refused() {
        let original = graph(50);
        let mut encoder = Encoder::default();
        original.encode(&mut encoder);
        let other_m = HnswParams {
            m: 8,
            ..original.params
        };
        assert!(decoded(&encoder.bytes, other_m).is_err());
        assert!(
            Hnsw::decode(
                &mut Decoder::new(&encoder.bytes),
                SimilarityFunction::Cosine,
                9,
                original.params,
                Source::default()
            )
            .is_err()
        );
        // A level-0 neighbour past the last node (the first list's first neighbour).
        let mut bytes = encoder.bytes.clone();
        let level0_start = 1 + 8 * 3 + 8 + 4 + 1 + 8 + 50 + 50;
        bytes[level0_start + 4..level0_start + 8].copy_from_slice(&50_u32.to_le_bytes());
        assert!(matches!(
            decoded(&bytes, original.params),
            Err(DecodeError::Invalid(_))
        ));
        for cut in [0, 10, encoder.bytes.len() / 2, encoder.bytes.len() - 1] {
            assert!(
                decoded(&encoder.bytes[..cut], original.params).is_err(),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn vectors_start_on_an_aligned_byte_and_an_unpadded_format_2_graph_still_decodes() {
        let original = graph(300);
        let encodings: Vec<Vec<u8>> = (0..VECTOR_ALIGNMENT)
            .map(|prefix| {
                let mut encoder = Encoder::default();
                encoder.bytes.resize(prefix, 7);
                original.encode(&mut encoder);
                encoder.bytes
            })
            .collect();
        let vector_bytes = 300 * 8 * 4;
        for bytes in &encodings {
            assert_eq!((bytes.len() - vector_bytes) % VECTOR_ALIGNMENT, 0);
        }
        // One prefix makes the padding empty: that encoding is the unpadded layout format 2 wrote.
        let (prefix, bytes) = encodings
            .iter()
            .enumerate()
            .min_by_key(|(prefix, bytes)| bytes.len() - prefix)
            .unwrap();
        let mut decoder = Decoder::new(bytes);
        decoder.bytes(prefix).unwrap();
        let unpadded = Source {
            file: None,
            is_padded: false,
        };
        let restored = Hnsw::decode(
            &mut decoder,
            SimilarityFunction::Cosine,
            8,
            original.params,
            unpadded,
        )
        .unwrap();
        assert!(restored.vectors.iter().eq(original.vectors.iter()));
        assert_eq!(restored.level0, original.level0);
    }

    /// `graph` and its regions encoded, and where the regions start.
    fn encoded_with_regions(graph: &Hnsw) -> (Vec<u8>, usize) {
        let mut encoder = Encoder::default();
        graph.encode(&mut encoder);
        let regions_at = encoder.bytes.len();
        graph.encode_regions(&mut encoder);
        (encoder.bytes, regions_at)
    }

    fn decoded_with_regions(bytes: &[u8], params: HnswParams) -> Result<Hnsw, DecodeError> {
        let mut decoder = Decoder::new(bytes);
        let mut graph = Hnsw::decode(
            &mut decoder,
            SimilarityFunction::Cosine,
            8,
            params,
            Source::default(),
        )?;
        graph.decode_regions(&mut decoder)?;
        graph.derive_halves();
        Ok(graph)
    }

    #[test]
    fn a_graph_keeps_its_regions_through_its_image_and_one_without_regions_has_none() {
        let mut original = graph(3_000);
        let (bytes, _) = encoded_with_regions(&original);
        assert!(
            decoded_with_regions(&bytes, original.params)
                .unwrap()
                .regions
                .is_none()
        );

        original.train_regions().expect("trained");
        let (bytes, _) = encoded_with_regions(&original);
        let restored = decoded_with_regions(&bytes, original.params).unwrap();
        let (before, after) = (
            original.regions.as_ref().unwrap(),
            restored.regions.as_ref().unwrap(),
        );
        assert_eq!(after.exact, before.exact);
        assert_eq!(after.members, before.members);
        assert_eq!(after.radius, before.radius);
        assert_eq!(after.largest_radius, before.largest_radius);
        assert_eq!(after.region_of, before.region_of);
        assert_eq!(
            (after.built_with, after.explained),
            (before.built_with, before.explained)
        );
        assert_eq!(restored.wants_regions(), original.wants_regions());
        // The centres' codes are derived again: region searches answer alike.
        let query = [1.0, -2.0, 0.5, 3.0, 0.0, 1.0, -1.0, 2.0];
        let prepared = crate::dense::ExactIndex::prepare(SimilarityFunction::Cosine, &query);
        let accept = |node: u32| node % 7 == 2;
        assert_eq!(
            restored.search_regions(&prepared, 10, accept),
            original.search_regions(&prepared, 10, accept)
        );
        assert!(
            original
                .search_regions(&prepared, 10, accept)
                .is_some_and(|found| found.len() == 10)
        );
    }

    #[test]
    fn regions_that_do_not_fit_the_graph_are_refused() {
        let mut original = graph(3_000);
        original.train_regions().expect("trained");
        let (bytes, regions_at) = encoded_with_regions(&original);
        let regions = original.regions.as_ref().unwrap();
        let count = regions.count();
        // Flag, count, share explained, live nodes trained with, centres, radii.
        let radii_at = regions_at + 1 + 8 + 4 + 8 + count * 8 * 4;
        let first_members_at = radii_at + count * 4;
        // Region 0's first member, and region 1's (after region 0's length and members).
        let first_member_at = first_members_at + 8;
        let second_region_member_at = first_member_at + regions.members[0].len() * 4 + 8;
        let changed = |at: usize, value: &[u8]| {
            let mut bytes = bytes.clone();
            bytes[at..at + value.len()].copy_from_slice(value);
            bytes
        };
        let second_region_member: [u8; 4] = bytes[second_region_member_at..second_region_member_at + 4]
            .try_into()
            .unwrap();
        let cases = [
            ("a flag other than 0 or 1", changed(regions_at, &[2])),
            ("no region", changed(regions_at + 1, &0_u64.to_le_bytes())),
            (
                "a member past the last node",
                changed(first_member_at, &3_000_u32.to_le_bytes()),
            ),
            (
                "a member of two regions",
                changed(first_member_at, &second_region_member),
            ),
            (
                "a radius that is not a number",
                changed(radii_at, &f32::NAN.to_le_bytes()),
            ),
            ("a negative radius", changed(radii_at, &(-1.0_f32).to_le_bytes())),
            ("cut short", bytes[..bytes.len() - 1].to_vec()),
        ];
        for (case, bytes) in cases {
            assert!(decoded_with_regions(&bytes, original.params).is_err(), "{case}");
        }
    }
}
