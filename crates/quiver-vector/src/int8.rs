//! 8-bit copies of vectors for the search walk: a quarter of the f32 bytes, half of the half-precision
//! copy's.
//!
//! Each vector is scaled by its own largest coordinate (`scale = max |x| / 127`) and rounded, so no
//! training pass is needed and any distribution keeps its full 8-bit range. A query is rounded the same
//! way to 16 bits (`max |q| / QUERY_RANGE`): its rounding is 2^-6 of the vector's, so what a distance gets
//! wrong is the vector's rounding, at most half a step per coordinate. The walk ranks by these distances;
//! its candidates are ranked again by the half-precision copies and then by the f32 vectors, so the
//! answer's order and scores stay exact.
//!
//! A code holds [`LANES`]-coordinate steps, zero-padded; the query's padding is zero too.

/// Coordinates per kernel step; codes and query codes are multiples of this.
pub const LANES: usize = 32;

/// The largest query code: 2^13 - 1. A kernel step adds two products of at most 8,191 x 127 to each
/// 32-bit lane, so a lane holds [`STEPS_PER_SUM`] steps before the kernel moves its sums to 64 bits.
const QUERY_RANGE: f32 = 8_191.0;

/// Kernel steps whose products a 32-bit lane can add without overflow: 2^31 / (2 x 8,191 x 127) is 1,032.
const STEPS_PER_SUM: usize = 1_024;

/// The largest vector code.
const CODE_RANGE: f32 = 127.0;

/// Bytes a `dimension`-long vector's code takes.
pub fn code_len(dimension: usize) -> usize {
    dimension.div_ceil(LANES) * LANES
}

/// Appends `vector`'s code (padded with zeros to [`code_len`]) to `out`; the scale that turns a code's
/// dot product back into the vector's.
pub fn quantize_into(vector: &[f32], out: &mut Vec<i8>) -> f32 {
    let scale = step(vector, CODE_RANGE);
    let start = out.len();
    out.resize(start + code_len(vector.len()), 0);
    for (code, x) in out[start..].iter_mut().zip(vector) {
        *code = nearest(x / scale, CODE_RANGE) as i8;
    }
    scale
}

/// 1.5 x 2^23: a whole number of magnitude below 2^22 added to it lies in the sum's low mantissa bits.
const ROUNDER: f32 = 12_582_912.0;

/// `value` held within `range` (at most 2^22) and rounded to the nearest whole number, ties to even:
/// the sum with [`ROUNDER`] rounds it (as every f32 addition does), and its bits less the rounder's
/// are the number. `f32::round` and a float-to-integer cast are a library call and a checked
/// conversion per value on the baseline x86-64 target, which made most of a vector's quantizing; these
/// are a few vector instructions for several values at once. A NaN gives a meaningless code (a vector
/// holding one is refused before it is indexed).
#[inline]
fn nearest(value: f32, range: f32) -> i32 {
    let sum = value.clamp(-range, range) + ROUNDER;
    sum.to_bits() as i32 - ROUNDER.to_bits() as i32
}

/// The step that maps `values`' largest magnitude to `range` (1 for a zero or non-finite vector).
/// The largest magnitude is found among the values' bits with the sign cleared, which order as the
/// magnitudes do (a NaN above infinity): an integer maximum the compiler takes several values at a
/// time, where `f32::max` went one value at a time.
fn step(values: &[f32], range: f32) -> f32 {
    let largest = f32::from_bits(
        values
            .iter()
            .map(|x| x.to_bits() & 0x7fff_ffff)
            .max()
            .unwrap_or(0),
    );
    if largest > 0.0 && largest.is_finite() {
        largest / range
    } else {
        1.0
    }
}

/// The codes of a graph's vectors, by node, with their scales.
#[derive(Debug, Clone, Default)]
pub struct Codes {
    bytes: Vec<i8>,
    /// By node: the code's scale and the vector's squared norm (for euclidean distances).
    scales: Vec<(f32, f32)>,
    len: usize,
    /// The largest scale of any code set (bounds what a distance gets wrong; see [`Query::typical_error`]).
    largest_scale: f32,
}

impl Codes {
    /// No codes yet, for vectors of `dimension`.
    pub fn new(dimension: usize) -> Codes {
        Codes {
            bytes: Vec::new(),
            scales: Vec::new(),
            len: code_len(dimension),
            largest_scale: 0.0,
        }
    }

    /// No codes yet, for vectors of `dimension`, with room for `nodes` of them (a load derives every
    /// node's code at once: growing as they come would touch twice the memory and copy it).
    pub fn with_capacity(dimension: usize, nodes: usize) -> Codes {
        let mut codes = Codes::new(dimension);
        codes.bytes = crate::huge::with_capacity(nodes * codes.len);
        codes.scales.reserve_exact(nodes);
        codes
    }

    /// Sets `node`'s code from its vector as ranked, adding zero codes for the nodes before it that
    /// have none.
    pub fn set(&mut self, node: usize, prepared: &[f32]) {
        if self.scales.len() <= node {
            let missing = (node + 1) * self.len - self.bytes.len();
            crate::huge::reserve(&mut self.bytes, missing);
            self.scales.resize(node + 1, (1.0, 0.0));
            self.bytes.resize((node + 1) * self.len, 0);
        }
        let mut code = Vec::with_capacity(self.len);
        let scale = quantize_into(prepared, &mut code);
        self.largest_scale = self.largest_scale.max(scale);
        self.scales[node] = (scale, squared_norm(prepared));
        self.bytes[node * self.len..(node + 1) * self.len].copy_from_slice(&code);
    }

    /// Makes room for `nodes` more nodes' codes.
    pub fn reserve(&mut self, nodes: usize) {
        crate::huge::reserve(&mut self.bytes, nodes * self.len);
        self.scales.reserve(nodes);
    }

    /// Backs the room for the next `nodes` codes with memory now (see [`crate::huge::prefault`]).
    pub(crate) fn prefault(&self, nodes: usize) {
        crate::huge::prefault(&self.bytes, nodes * self.len);
    }

    /// Appends the next node's code.
    pub fn push(&mut self, prepared: &[f32]) {
        crate::huge::reserve(&mut self.bytes, self.len);
        let scale = quantize_into(prepared, &mut self.bytes);
        self.largest_scale = self.largest_scale.max(scale);
        self.scales.push((scale, squared_norm(prepared)));
    }

    /// `node`'s code, its scale and the vector's squared norm.
    #[inline]
    pub fn get(&self, node: usize) -> (&[i8], f32, f32) {
        let (scale, squared_norm) = self.scales[node];
        (
            &self.bytes[node * self.len..(node + 1) * self.len],
            scale,
            squared_norm,
        )
    }

    /// Starts loading `node`'s code and its scale, which lie in separate arrays: a search that
    /// loaded the code ahead and the scale only when scoring waited on the scale's line.
    #[inline]
    pub fn prefetch(&self, node: usize) {
        crate::score::prefetch(&self.bytes[node * self.len..(node + 1) * self.len]);
        crate::score::prefetch(&self.scales[node..=node]);
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes.len() + self.scales.len() * std::mem::size_of::<(f32, f32)>()
    }

    /// The largest scale of any code.
    pub fn largest_scale(&self) -> f32 {
        self.largest_scale
    }
}

fn squared_norm(vector: &[f32]) -> f32 {
    crate::score::dot(vector, vector)
}

/// A query rounded to 16-bit codes for [`Query::dot`].
#[derive(Debug, Clone)]
pub struct Query {
    codes: Vec<i16>,
    scale: f32,
    squared_norm: f32,
}

impl Query {
    /// Rounds `query` (of the graph's dimension).
    pub fn new(query: &[f32]) -> Query {
        let scale = step(query, QUERY_RANGE);
        let mut codes: Vec<i16> = query
            .iter()
            .map(|x| nearest(x / scale, QUERY_RANGE) as i16)
            .collect();
        codes.resize(code_len(query.len()), 0);
        Query {
            codes,
            scale,
            squared_norm: squared_norm(query),
        }
    }

    /// The dot product of the query with a vector whose code is `code` and scale `scale`.
    #[inline]
    pub fn dot(&self, code: &[i8], scale: f32) -> f32 {
        dot_codes(&self.codes, code) as f32 * self.scale * scale
    }

    /// How far [`Query::dot`] strays from the exact dot product, at six standard deviations, for
    /// vectors coded with a scale of at most `largest_scale`. With x = c s + e, each rounding error
    /// `e_i` lies within half a step, a standard deviation of `s / sqrt(12)` where the errors are
    /// independent, so `q.e` has one of `|q| s / sqrt(12)`; the query's own rounding (2^-6 of the
    /// vector's step) adds `|x| / |q|` times less again, bounded by the same share. The worst case,
    /// every error aligned with the query, is about `sqrt(n)` times more, and is what rounding near-
    /// parallel vectors can come close to: callers that must order such vectors rank them by the
    /// half-precision copies.
    pub fn typical_error(&self, largest_scale: f32) -> f32 {
        let norm = self
            .codes
            .iter()
            .map(|&c| f32::from(c) * f32::from(c))
            .sum::<f32>()
            .sqrt()
            * self.scale;
        6.0 / 12.0_f32.sqrt() * largest_scale * (norm + self.codes.len() as f32 * self.scale)
    }

    /// The squared euclidean distance from the query to a vector whose code is `code`, scale `scale`
    /// and squared norm `squared_norm`: |q|^2 - 2 q.x + |x|^2, with q.x from the codes.
    #[inline]
    pub fn squared_distance(&self, code: &[i8], scale: f32, squared_norm: f32) -> f32 {
        self.squared_norm - 2.0 * self.dot(code, scale) + squared_norm
    }
}

/// The integer dot product of query codes and a vector code of the same padded length.
#[inline]
fn dot_codes(query: &[i16], code: &[i8]) -> i64 {
    #[cfg(target_arch = "x86_64")]
    match simd::kernel() {
        simd::Kernel::Avx512 => return simd::dot512(query, code),
        simd::Kernel::Avx2 => return simd::dot256(query, code),
        simd::Kernel::Portable => {}
    }
    portable_dot(query, code)
}

fn portable_dot(query: &[i16], code: &[i8]) -> i64 {
    query
        .iter()
        .zip(code)
        .map(|(&q, &c)| i64::from(q) * i64::from(c))
        .sum()
}

#[cfg(target_arch = "x86_64")]
#[expect(unsafe_code, reason = "SIMD intrinsics behind runtime feature detection")]
mod simd {
    use std::arch::x86_64::{
        __m128i, __m256i, __m512i, _mm_add_epi64, _mm_cvtsi128_si64, _mm_loadu_si128, _mm_unpackhi_epi64,
        _mm256_add_epi32, _mm256_add_epi64, _mm256_castsi256_si128, _mm256_cvtepi8_epi16,
        _mm256_cvtepi32_epi64, _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_madd_epi16,
        _mm256_setzero_si256, _mm512_add_epi32, _mm512_add_epi64, _mm512_castsi512_si256,
        _mm512_cvtepi8_epi16, _mm512_cvtepi32_epi64, _mm512_extracti64x4_epi64, _mm512_loadu_si512,
        _mm512_madd_epi16, _mm512_reduce_add_epi64, _mm512_setzero_si512,
    };

    use super::{LANES, STEPS_PER_SUM};

    /// The widest kernel this CPU runs.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) enum Kernel {
        /// A step in one instruction of each kind: AVX-512F and BW (16-bit lanes).
        Avx512,
        /// A step in two of each: AVX2.
        Avx2,
        /// The plain loop.
        Portable,
    }

    /// Which kernel to use (checked once).
    #[inline]
    pub(super) fn kernel() -> Kernel {
        static KERNEL: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
        *KERNEL.get_or_init(|| {
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") {
                Kernel::Avx512
            } else if is_x86_feature_detected!("avx2") {
                Kernel::Avx2
            } else {
                Kernel::Portable
            }
        })
    }

    /// As `dot_avx2`, a 32-coordinate step in one widening, one multiply-add and one add: half the
    /// instructions, and so about half the time of a code already in the cache.
    #[target_feature(enable = "avx512f,avx512bw")]
    fn dot_avx512(query: &[i16], code: &[i8]) -> i64 {
        let steps = query.len().min(code.len()) / LANES;
        let (pq, pc) = (query.as_ptr().cast::<__m512i>(), code.as_ptr().cast::<__m256i>());
        let mut total = 0_i64;
        let mut from = 0;
        while from < steps {
            let until = steps.min(from + STEPS_PER_SUM);
            let mut sum = _mm512_setzero_si512();
            // SAFETY: step `s` reads query[32s..32s+32] (one 64-byte load) and code[32s..32s+32] (one
            // 32-byte load); `s < steps` keeps both inside their slices.
            unsafe {
                for step in from..until {
                    let widened = _mm512_cvtepi8_epi16(_mm256_loadu_si256(pc.add(step)));
                    sum = _mm512_add_epi32(sum, _mm512_madd_epi16(_mm512_loadu_si512(pq.add(step)), widened));
                }
            }
            // Each lane holds two products a step, as each lane of `dot_avx2`'s sums does.
            let low = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(sum));
            let high = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(sum));
            total += _mm512_reduce_add_epi64(_mm512_add_epi64(low, high));
            from = until;
        }
        total
    }

    #[inline]
    pub(super) fn dot512(query: &[i16], code: &[i8]) -> i64 {
        // SAFETY: callers check `kernel()` first.
        unsafe { dot_avx512(query, code) }
    }

    #[target_feature(enable = "avx2")]
    fn dot_avx2(query: &[i16], code: &[i8]) -> i64 {
        let steps = query.len().min(code.len()) / LANES;
        let (pq, pc) = (query.as_ptr().cast::<__m256i>(), code.as_ptr().cast::<__m128i>());
        let mut total = 0_i64;
        let mut from = 0;
        while from < steps {
            let until = steps.min(from + STEPS_PER_SUM);
            let (mut first, mut second) = (_mm256_setzero_si256(), _mm256_setzero_si256());
            // SAFETY: step `s` reads query[32s..32s+32] (two 32-byte loads) and code[32s..32s+32]
            // (two 16-byte loads); `s < steps` keeps both inside their slices.
            unsafe {
                for step in from..until {
                    let a = _mm256_cvtepi8_epi16(_mm_loadu_si128(pc.add(2 * step)));
                    first =
                        _mm256_add_epi32(first, _mm256_madd_epi16(_mm256_loadu_si256(pq.add(2 * step)), a));
                    let b = _mm256_cvtepi8_epi16(_mm_loadu_si128(pc.add(2 * step + 1)));
                    second = _mm256_add_epi32(
                        second,
                        _mm256_madd_epi16(_mm256_loadu_si256(pq.add(2 * step + 1)), b),
                    );
                }
            }
            // Each lane of `first` and `second` holds at most STEPS_PER_SUM steps' products; they are
            // added in 64 bits.
            let wide = |lanes: __m256i| {
                _mm256_add_epi64(
                    _mm256_cvtepi32_epi64(_mm256_castsi256_si128(lanes)),
                    _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(lanes)),
                )
            };
            let sum = _mm256_add_epi64(wide(first), wide(second));
            let pair = _mm_add_epi64(_mm256_castsi256_si128(sum), _mm256_extracti128_si256::<1>(sum));
            total += _mm_cvtsi128_si64(pair) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(pair, pair));
            from = until;
        }
        total
    }

    #[inline]
    pub(super) fn dot256(query: &[i16], code: &[i8]) -> i64 {
        // SAFETY: callers check `kernel()` first; an AVX-512 CPU has AVX2.
        unsafe { dot_avx2(query, code) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_matches_the_plain_loop_and_the_rounding_stays_within_half_a_step() {
        for dimension in [1, 31, 32, 33, 100, 384, 1536, 3072] {
            let vector: Vec<f32> = (0..dimension).map(|i| (i as f32 * 0.37).sin()).collect();
            let query: Vec<f32> = (0..dimension).map(|i| (i as f32 * 0.11).cos()).collect();
            let mut code = Vec::new();
            let scale = quantize_into(&vector, &mut code);
            assert_eq!(code.len(), code_len(dimension));
            let rounded = Query::new(&query);
            let plain = portable_dot(&rounded.codes, &code);
            assert_eq!(dot_codes(&rounded.codes, &code), plain, "kernel at {dimension}");
            #[cfg(target_arch = "x86_64")]
            {
                let kernel = simd::kernel();
                if kernel != simd::Kernel::Portable {
                    assert_eq!(simd::dot256(&rounded.codes, &code), plain, "AVX2 at {dimension}");
                }
                if kernel == simd::Kernel::Avx512 {
                    assert_eq!(
                        simd::dot512(&rounded.codes, &code),
                        plain,
                        "AVX-512 at {dimension}"
                    );
                }
            }
            let exact: f32 = query.iter().zip(&vector).map(|(q, x)| q * x).sum();
            let l1: f32 = query.iter().map(|q| q.abs()).sum();
            // Half a step of each vector coordinate, plus the query's own (far smaller) rounding.
            let bound = l1 * scale / 2.0 + dimension as f32 * rounded.scale;
            let error = (rounded.dot(&code, scale) - exact).abs();
            assert!(
                error <= bound,
                "dimension {dimension}: error {error} above {bound}"
            );
        }
    }

    #[test]
    fn values_round_to_the_nearest_whole_number_ties_to_even_within_the_range() {
        let cases = [
            (0.0, 0),
            (0.4, 0),
            (0.6, 1),
            (-0.6, -1),
            (2.5, 2),
            (3.5, 4),
            (-2.5, -2),
            (126.7, 127),
            (300.0, 127),
            (-300.0, -127),
        ];
        for (value, expected) in cases {
            assert_eq!(nearest(value, CODE_RANGE), expected, "{value}");
        }
        assert_eq!(nearest(-8_190.6, QUERY_RANGE), -8_191);
        assert_eq!(
            step(&[1.0, -254.0, 3.0], CODE_RANGE),
            2.0,
            "the largest magnitude, of either sign"
        );
    }

    #[test]
    fn the_largest_codes_do_not_overflow_at_any_dimension() {
        // Every coordinate at the largest code, query and vector alike: the integer sum passes 2^31
        // from 2,065 coordinates on, and 32-bit lanes would overflow past 33,000.
        for dimension in [3_072, 40_000] {
            let ones = vec![1.0_f32; dimension];
            let mut code = Vec::new();
            let scale = quantize_into(&ones, &mut code);
            let query = Query::new(&ones);
            assert_eq!(dot_codes(&query.codes, &code), dimension as i64 * 8_191 * 127);
            #[cfg(target_arch = "x86_64")]
            if simd::kernel() != simd::Kernel::Portable {
                assert_eq!(simd::dot256(&query.codes, &code), dimension as i64 * 8_191 * 127);
            }
            let dot = query.dot(&code, scale);
            assert!(
                (dot - dimension as f32).abs() < 1e-3 * dimension as f32,
                "{dot} at {dimension}"
            );
        }
    }

    #[test]
    fn a_zero_vector_codes_as_zeros() {
        let mut code = Vec::new();
        assert_eq!(quantize_into(&[0.0; 40], &mut code), 1.0);
        assert!(code.iter().all(|&c| c == 0));
        assert_eq!(Query::new(&[0.0; 40]).dot(&code, 1.0), 0.0);
    }
}
