//! The regions' data and their training, which reads no graph: centres, members and radii
//! ([`Regions`]), a copied sample ([`RegionSample`]) and k-means on it ([`TrainedRegions`]). How the
//! graph installs and searches them is in `hnsw::regions`.

use quiver_core::index::SimilarityFunction;

use crate::codec::{DecodeError, Decoder, Encoder, f32s_of};
use crate::int8;
use crate::score::{dot, squared_distance};

/// From this many live nodes on, a graph keeps regions (below it a walk or a scan serves every
/// filter well enough, and training would cost more than it saves).
pub const REGIONS_FROM: usize = 10_000;

/// How many sampled nodes a training assigns between two looks at whether to stop (see
/// [`RegionSample::train_until`]): a few milliseconds of work.
const STOP_ASKED_EVERY: usize = 4_096;

/// Nodes per region, about.
pub(super) const REGION_SIZE: usize = 100;

/// The most regions: a search scores every centre, so their count bounds what a search pays first.
pub(super) const MOST_REGIONS: usize = 1_024;

/// Sampled nodes per centre that k-means trains on.
pub(super) const SAMPLE_PER_CENTRE: usize = 16;

/// Rounds of k-means (Lloyd's): centres settle within a few on clustered data.
pub(super) const ROUNDS: usize = 4;

/// The least share of the sample's variance (about its mean) the centres must explain for searches to
/// read the regions. Regions help where the data is clustered at least as finely as they are: each
/// then stands for a cluster, and its centre ranks its members. Where a region mixes several clusters
/// (or the data has none), the nearest passing records are spread over regions whose centres do not
/// rank them, and a walk finds them better: through the service at 20,000 of the benchmark's records
/// (1,000 clusters, so five to a region) regions explained 0.15 and lost recall (0.853 where the walk
/// had 0.964 for half of the clusters kept); at 100,000 (a cluster to a region) they explained 0.7.
pub(super) const LEAST_EXPLAINED: f32 = 0.5;

/// A node no region holds yet.
pub(super) const NONE: u32 = u32::MAX;

/// The graph's partition into regions.
#[derive(Debug, Clone)]
pub(crate) struct Regions {
    /// The centres as ranked, `dimension` coordinates each: what nodes are assigned by.
    pub(super) exact: Vec<f32>,
    /// The centres' 8-bit codes, which a query's codes score.
    pub(super) codes: int8::Codes,
    /// By region: its nodes (deleted ones stay until the regions are trained again).
    pub(super) members: Vec<Vec<u32>>,
    /// By region: the farthest any of its nodes lies from its centre (prepared vectors, euclidean),
    /// which bounds how near a query its nodes can be.
    pub(super) radius: Vec<f32>,
    /// The largest radius.
    pub(super) largest_radius: f32,
    /// By node: its region, or [`NONE`].
    pub(super) region_of: Vec<u32>,
    /// Live nodes when the regions were installed.
    pub(super) built_with: usize,
    /// The share of the sample's variance the centres explain (see [`LEAST_EXPLAINED`]).
    pub(super) explained: f32,
}

impl Regions {
    pub(super) fn count(&self) -> usize {
        self.members.len()
    }

    /// Appends the regions to `encoder` (a snapshot's): their count, the share explained, the live
    /// nodes they were trained with, the centres, the radii and each region's members. The centres'
    /// codes, each node's region and the largest radius are derived again by [`Regions::decode`].
    pub(super) fn encode(&self, encoder: &mut Encoder) {
        encoder.count(self.count());
        encoder.u32(self.explained.to_bits());
        encoder.count(self.built_with);
        encoder.f32s(&self.exact);
        encoder.f32s(&self.radius);
        for members in &self.members {
            encoder.count(members.len());
            encoder.u32s(members);
        }
    }

    /// The regions [`Regions::encode`] wrote, of a graph of `dimension` with `nodes` slots.
    ///
    /// # Errors
    /// Bytes that end early, no region, a value that is not finite, a negative radius, a member out of
    /// the graph or in two regions.
    pub(super) fn decode(
        decoder: &mut Decoder<'_>,
        dimension: usize,
        nodes: usize,
    ) -> Result<Regions, DecodeError> {
        let invalid = |message: &str| DecodeError::Invalid(message.to_owned());
        let count = decoder.count(4 * (dimension + 1) + 8)?;
        if count == 0 {
            return Err(invalid("its regions are none"));
        }
        let explained = f32::from_bits(decoder.u32()?);
        let built_with = decoder.number()?;
        let exact: Vec<f32> = f32s_of(decoder.word_bytes(count * dimension)?).collect();
        let radius: Vec<f32> = f32s_of(decoder.word_bytes(count)?).collect();
        if !exact
            .iter()
            .chain(&radius)
            .chain([&explained])
            .all(|x| x.is_finite())
        {
            return Err(invalid(
                "a region's centre, radius or share explained is not a finite number",
            ));
        }
        if radius.iter().any(|&r| r < 0.0) {
            return Err(invalid("a region's radius is negative"));
        }
        let mut region_of = vec![NONE; nodes];
        let mut members = Vec::with_capacity(count);
        for region in 0..count as u32 {
            let length = decoder.count(4)?;
            let list = decoder.u32s(length)?;
            for &node in &list {
                let slot = region_of
                    .get_mut(node as usize)
                    .ok_or_else(|| invalid("a region's member is out of range"))?;
                if *slot != NONE {
                    return Err(invalid("a node is a member of two regions"));
                }
                *slot = region;
            }
            members.push(list);
        }
        Ok(Regions {
            largest_radius: radius.iter().copied().fold(0.0, f32::max),
            codes: centre_codes(&exact, dimension),
            exact,
            members,
            radius,
            region_of,
            built_with,
            explained,
        })
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.exact.len() * 4
            + self.codes.bytes()
            + self.region_of.len() * 4
            + self.radius.len() * 4
            + self.members.iter().map(|m| m.capacity() * 4 + 24).sum::<usize>()
    }
}

/// Prepared vectors of sampled live nodes, copied out of the graph, that centres are trained on.
#[derive(Debug)]
pub struct RegionSample {
    pub(super) similarity: SimilarityFunction,
    pub(super) dimension: usize,
    pub(super) centres: usize,
    pub(super) nodes: Vec<u32>,
    pub(super) vectors: Vec<f32>,
}

/// Centres trained on a [`RegionSample`], with the region each sampled node was assigned to.
#[derive(Debug)]
pub struct TrainedRegions {
    pub(super) exact: Vec<f32>,
    pub(super) labels: Vec<(u32, u32)>,
    pub(super) explained: f32,
}

impl TrainedRegions {
    /// The share of the sample's variance about its mean that the centres explain: 1 less the mean
    /// squared distance of a sampled vector to its centre over its mean squared distance to the mean.
    /// Searches read the regions from 0.5 on.
    pub fn explained(&self) -> f32 {
        self.explained
    }
}

/// The 8-bit codes of `centres` (`dimension` coordinates each), which a query's codes score.
pub(super) fn centre_codes(centres: &[f32], dimension: usize) -> int8::Codes {
    let mut codes = int8::Codes::new(dimension);
    for centre in centres.chunks_exact(dimension.max(1)) {
        codes.push(centre);
    }
    codes
}

/// The distance that orders nodes and centres, between two prepared vectors.
pub(super) fn distance(similarity: SimilarityFunction, a: &[f32], b: &[f32]) -> f32 {
    match similarity {
        SimilarityFunction::Cosine | SimilarityFunction::DotProduct => -dot(a, b),
        SimilarityFunction::Euclidean => squared_distance(a, b),
    }
}

/// The centre nearest to `vector` among `centres` (`dimension` coordinates each), with its distance.
pub(super) fn nearest_centre(
    similarity: SimilarityFunction,
    centres: &[f32],
    dimension: usize,
    vector: &[f32],
) -> (u32, f32) {
    centres
        .chunks_exact(dimension)
        .enumerate()
        .map(|(centre, coordinates)| (centre as u32, distance(similarity, coordinates, vector)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, 0.0))
}

impl RegionSample {
    /// K-means on the sample: centres from evenly spaced sampled nodes, then `ROUNDS` rounds of
    /// assigning each sampled node to its nearest centre and moving each centre to its nodes' mean
    /// (unit length for cosine). A centre left with no node moves to the sampled node farthest from
    /// its own centre, so no region stays empty on purpose. CPU-bound, and reads no graph.
    pub fn train(&self) -> TrainedRegions {
        self.train_until(&|| false)
            .expect("a training that is never stopped ends with regions")
    }

    /// [`RegionSample::train`], given up (`None`) once `stop` says so: it is asked before each round
    /// and every `STOP_ASKED_EVERY` (4,096) nodes assigned. A shutdown asks it: a training that ends
    /// as the process stops would hold the stop up (about 10 s after a million vectors were indexed,
    /// BENCHMARKS.md, session 37), and a graph whose snapshot has no regions trains them at its next
    /// start.
    pub fn train_until(&self, stop: &dyn Fn() -> bool) -> Option<TrainedRegions> {
        let (dimension, similarity) = (self.dimension, self.similarity);
        let points = self.nodes.len();
        let mut exact = Vec::with_capacity(self.centres * dimension);
        for centre in 0..self.centres {
            let point = centre * points / self.centres;
            exact.extend_from_slice(&self.vectors[point * dimension..(point + 1) * dimension]);
        }
        let mut assigned = vec![(0_u32, 0.0_f32); points];
        for round in 0..=ROUNDS {
            for (point, slot) in assigned.iter_mut().enumerate() {
                if point % STOP_ASKED_EVERY == 0 && stop() {
                    return None;
                }
                let vector = &self.vectors[point * dimension..(point + 1) * dimension];
                *slot = nearest_centre(similarity, &exact, dimension, vector);
            }
            if round == ROUNDS {
                break;
            }
            let mut sums = vec![0.0_f64; self.centres * dimension];
            let mut counts = vec![0_usize; self.centres];
            for (point, &(centre, _)) in assigned.iter().enumerate() {
                let vector = &self.vectors[point * dimension..(point + 1) * dimension];
                let sum = &mut sums[centre as usize * dimension..(centre as usize + 1) * dimension];
                sum.iter_mut().zip(vector).for_each(|(s, &x)| *s += f64::from(x));
                counts[centre as usize] += 1;
            }
            let mut farthest: Vec<usize> = (0..points).collect();
            farthest.sort_unstable_by(|&a, &b| assigned[b].1.total_cmp(&assigned[a].1));
            let mut reseeds = farthest.into_iter();
            for centre in 0..self.centres {
                let target = &mut exact[centre * dimension..(centre + 1) * dimension];
                if counts[centre] == 0 {
                    if let Some(point) = reseeds.next() {
                        target.copy_from_slice(&self.vectors[point * dimension..(point + 1) * dimension]);
                    }
                    continue;
                }
                let sum = &sums[centre * dimension..(centre + 1) * dimension];
                let count = counts[centre] as f64;
                target
                    .iter_mut()
                    .zip(sum)
                    .for_each(|(t, &s)| *t = (s / count) as f32);
                if similarity == SimilarityFunction::Cosine {
                    let length = crate::score::norm(target);
                    if length > 0.0 {
                        target.iter_mut().for_each(|t| *t /= length);
                    }
                }
            }
        }
        let labels = self
            .nodes
            .iter()
            .zip(&assigned)
            .map(|(&node, &(centre, _))| (node, centre))
            .collect();
        let explained = self.explained(&exact, &assigned);
        Some(TrainedRegions {
            exact,
            labels,
            explained,
        })
    }

    /// The share of the sample's variance that `centres` explain, each point assigned as `assigned`.
    fn explained(&self, centres: &[f32], assigned: &[(u32, f32)]) -> f32 {
        let dimension = self.dimension;
        let points = self.nodes.len().max(1) as f64;
        let mut mean = vec![0.0_f64; dimension];
        for vector in self.vectors.chunks_exact(dimension) {
            mean.iter_mut()
                .zip(vector)
                .for_each(|(m, &x)| *m += f64::from(x) / points);
        }
        let mean: Vec<f32> = mean.into_iter().map(|m| m as f32).collect();
        let (mut total, mut within) = (0.0_f64, 0.0_f64);
        for (vector, &(centre, _)) in self.vectors.chunks_exact(dimension).zip(assigned) {
            let centre = &centres[centre as usize * dimension..(centre as usize + 1) * dimension];
            total += f64::from(squared_distance(vector, &mean));
            within += f64::from(squared_distance(vector, centre));
        }
        if total > 0.0 {
            (1.0 - within / total) as f32
        } else {
            0.0
        }
    }
}
