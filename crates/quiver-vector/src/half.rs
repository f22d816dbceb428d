//! Half-precision (IEEE 754 binary16) copies of vectors for graph traversal.
//!
//! A graph walk is bound by memory: each step reads a neighbour's whole vector from RAM. Halves read
//! half the bytes, and their rounding (a relative 2^-11 per coordinate) moves a distance far less than the
//! gaps the walk decides on. The graph's build walks by them; a query walks by 8-bit codes
//! ([`crate::int8`]) and ranks the walk's candidates by the halves. The graph re-ranks its final
//! candidates with the f32 vectors, so the order it returns is exact.
//!
//! A packed vector holds its halves two per `u32`, zero-padded to a multiple of [`LANES`] coordinates; a
//! query is an f32 slice padded the same way ([`pad_query`]).

/// Coordinates per kernel step; packed vectors and padded queries are multiples of this.
pub const LANES: usize = 16;

/// Coordinates a `dimension`-long vector takes once padded.
pub fn padded(dimension: usize) -> usize {
    dimension.div_ceil(LANES) * LANES
}

/// `u32` words a packed vector of `dimension` takes.
pub fn packed_words(dimension: usize) -> usize {
    padded(dimension) / 2
}

/// The nearest binary16 value to `value` (ties to even), as bits.
pub fn to_half(value: f32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32;
    let mantissa = bits & 0x7f_ffff;
    if exponent == 0xff {
        // Infinity stays infinite; NaN stays a (quiet) NaN.
        return sign | 0x7c00 | if mantissa == 0 { 0 } else { 0x200 };
    }
    let biased = exponent - 127 + 15;
    if biased >= 0x1f {
        return sign | 0x7c00;
    }
    if biased <= 0 {
        // Subnormal in binary16 (or zero): the value is `mantissa16 * 2^-24`.
        if biased < -10 {
            return sign;
        }
        let full = mantissa | 0x80_0000;
        let shift = (14 - biased) as u32;
        return sign | round_shifted(full, shift) as u16;
    }
    let truncated = ((biased as u32) << 10) | (mantissa >> 13);
    // A carry out of the mantissa moves to the next exponent, up to infinity: both are correct.
    sign | round_with(truncated, mantissa & 0x1fff, 0x1000) as u16
}

/// `full >> shift`, rounded to nearest with ties to even.
fn round_shifted(full: u32, shift: u32) -> u32 {
    round_with(full >> shift, full & ((1 << shift) - 1), 1 << (shift - 1))
}

fn round_with(truncated: u32, remainder: u32, midpoint: u32) -> u32 {
    if remainder > midpoint || (remainder == midpoint && truncated & 1 == 1) {
        truncated + 1
    } else {
        truncated
    }
}

/// The f32 value of binary16 `bits` (exact).
pub fn from_half(bits: u16) -> f32 {
    let sign = u32::from(bits & 0x8000) << 16;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    match exponent {
        0 => {
            let magnitude = mantissa as f32 / (1 << 24) as f32;
            if sign == 0 { magnitude } else { -magnitude }
        }
        0x1f => f32::from_bits(sign | 0x7f80_0000 | (mantissa << 13)),
        _ => f32::from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13)),
    }
}

/// Appends the packed halves of `vector` (padded with zeros) to `out`: eight at a time by the CPU's
/// conversion (F16C) where it has one, which rounds as [`to_half`] does.
pub fn pack_into(vector: &[f32], out: &mut Vec<u32>) {
    let start = out.len();
    out.resize(start + packed_words(vector.len()), 0);
    let words = &mut out[start..];
    #[cfg(target_arch = "x86_64")]
    if simd::has_f16c() {
        simd::pack_words_f16c(vector, words);
        return;
    }
    pack_words(vector, words);
}

/// Fills `words` with the halves of `vector`, two a word, and zeros past its end, one value at a time.
fn pack_words(vector: &[f32], words: &mut [u32]) {
    let half = |i: usize| u32::from(to_half(vector.get(i).copied().unwrap_or(0.0)));
    for (at, word) in words.iter_mut().enumerate() {
        *word = half(2 * at) | (half(2 * at + 1) << 16);
    }
}

/// `query` followed by zeros up to its padded length.
pub fn pad_query(query: &[f32]) -> Vec<f32> {
    let mut padded_query = query.to_vec();
    padded_query.resize(padded(query.len()), 0.0);
    padded_query
}

/// Whether half precision holds `vector` well enough to rank it by: its largest magnitude neither
/// overflows the format (65,504 is its largest finite value) nor sinks to where most of its
/// components would keep few bits or none (subnormals start at 2^-14). A zero vector is held.
pub fn holds(vector: &[f32]) -> bool {
    let largest = vector.iter().fold(0.0_f32, |largest, x| largest.max(x.abs()));
    largest == 0.0 || (2f32.powi(-10)..=32_768.0).contains(&largest)
}

/// Dot product of a padded f32 query with a packed vector.
#[inline]
pub fn dot(query: &[f32], packed: &[u32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    match simd::level() {
        simd::Level::Avx512 => return simd::dot512(query, packed),
        simd::Level::Avx2 => return simd::dot256(query, packed),
        simd::Level::Portable => {}
    }
    portable_dot(query, packed)
}

/// Squared euclidean distance between a padded f32 query and a packed vector.
#[inline]
pub fn squared_distance(query: &[f32], packed: &[u32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    match simd::level() {
        simd::Level::Avx512 => return simd::squared_distance512(query, packed),
        simd::Level::Avx2 => return simd::squared_distance256(query, packed),
        simd::Level::Portable => {}
    }
    portable_squared_distance(query, packed)
}

fn unpacked(packed: &[u32]) -> impl Iterator<Item = f32> + '_ {
    packed
        .iter()
        .flat_map(|word| [from_half(*word as u16), from_half((word >> 16) as u16)])
}

fn portable_dot(query: &[f32], packed: &[u32]) -> f32 {
    query.iter().zip(unpacked(packed)).map(|(q, c)| q * c).sum()
}

fn portable_squared_distance(query: &[f32], packed: &[u32]) -> f32 {
    query
        .iter()
        .zip(unpacked(packed))
        .map(|(q, c)| (q - c) * (q - c))
        .sum()
}

#[cfg(target_arch = "x86_64")]
#[expect(unsafe_code, reason = "SIMD intrinsics behind runtime feature detection")]
mod simd {
    use super::LANES;
    use crate::score::simd::horizontal_sum;
    pub(super) use crate::score::simd::{Level, level};
    use std::arch::x86_64::{
        __m128i, __m256i, _MM_FROUND_TO_NEAREST_INT, _mm_loadu_si128, _mm_storeu_si128, _mm256_add_ps,
        _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps, _mm256_sub_ps,
        _mm512_add_ps, _mm512_cvtph_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_reduce_add_ps,
        _mm512_setzero_ps, _mm512_sub_ps,
    };

    /// Whether the CPU converts f32 to half precision itself (F16C, with AVX for its registers).
    #[inline]
    pub(super) fn has_f16c() -> bool {
        std::arch::is_x86_feature_detected!("f16c") && std::arch::is_x86_feature_detected!("avx")
    }

    /// [`super::pack_words`] eight values at a time; the last few (and the padding) one at a time.
    #[inline]
    pub(super) fn pack_words_f16c(vector: &[f32], words: &mut [u32]) {
        // SAFETY: callers check `has_f16c()` first.
        unsafe { pack_f16c(vector, words) }
    }

    #[target_feature(enable = "avx,f16c")]
    fn pack_f16c(vector: &[f32], words: &mut [u32]) {
        let chunks = vector.chunks_exact(8);
        let (tail, whole) = (chunks.remainder(), vector.len() / 8);
        for (chunk, out) in chunks.zip(words.chunks_exact_mut(4)) {
            // SAFETY: `chunk` holds eight f32 values (32 bytes read) and `out` four words (16 bytes
            // written); the conversion rounds to nearest, ties to even, as `to_half`.
            unsafe {
                let halves = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(chunk.as_ptr()));
                _mm_storeu_si128(out.as_mut_ptr().cast::<__m128i>(), halves);
            }
        }
        super::pack_words(tail, &mut words[whole * 4..]);
    }

    /// Whole 16-lane steps both operands cover.
    fn steps(query: &[f32], packed: &[u32]) -> usize {
        query.len().min(packed.len() * 2) / LANES
    }

    #[target_feature(enable = "avx512f")]
    fn dot_avx512(query: &[f32], packed: &[u32]) -> f32 {
        let steps = steps(query, packed);
        let (pq, pp) = (query.as_ptr(), packed.as_ptr().cast::<__m256i>());
        let (mut first, mut second) = (_mm512_setzero_ps(), _mm512_setzero_ps());
        let mut step = 0;
        // SAFETY: step `s` reads query[16s..16s+16] and packed words [8s..8s+8] (32 bytes), and
        // `step < steps` keeps both inside their slices.
        unsafe {
            while step + 2 <= steps {
                let a = _mm512_cvtph_ps(std::ptr::read_unaligned(pp.add(step)));
                first = _mm512_fmadd_ps(_mm512_loadu_ps(pq.add(step * LANES)), a, first);
                let b = _mm512_cvtph_ps(std::ptr::read_unaligned(pp.add(step + 1)));
                second = _mm512_fmadd_ps(_mm512_loadu_ps(pq.add((step + 1) * LANES)), b, second);
                step += 2;
            }
            if step < steps {
                let a = _mm512_cvtph_ps(std::ptr::read_unaligned(pp.add(step)));
                first = _mm512_fmadd_ps(_mm512_loadu_ps(pq.add(step * LANES)), a, first);
            }
        }
        _mm512_reduce_add_ps(_mm512_add_ps(first, second))
    }

    #[target_feature(enable = "avx512f")]
    fn squared_distance_avx512(query: &[f32], packed: &[u32]) -> f32 {
        let steps = steps(query, packed);
        let (pq, pp) = (query.as_ptr(), packed.as_ptr().cast::<__m256i>());
        let (mut first, mut second) = (_mm512_setzero_ps(), _mm512_setzero_ps());
        let mut step = 0;
        // SAFETY: as in `dot_avx512`.
        unsafe {
            while step + 2 <= steps {
                let a = _mm512_cvtph_ps(std::ptr::read_unaligned(pp.add(step)));
                let d = _mm512_sub_ps(_mm512_loadu_ps(pq.add(step * LANES)), a);
                first = _mm512_fmadd_ps(d, d, first);
                let b = _mm512_cvtph_ps(std::ptr::read_unaligned(pp.add(step + 1)));
                let e = _mm512_sub_ps(_mm512_loadu_ps(pq.add((step + 1) * LANES)), b);
                second = _mm512_fmadd_ps(e, e, second);
                step += 2;
            }
            if step < steps {
                let a = _mm512_cvtph_ps(std::ptr::read_unaligned(pp.add(step)));
                let d = _mm512_sub_ps(_mm512_loadu_ps(pq.add(step * LANES)), a);
                first = _mm512_fmadd_ps(d, d, first);
            }
        }
        _mm512_reduce_add_ps(_mm512_add_ps(first, second))
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    fn dot_avx2(query: &[f32], packed: &[u32]) -> f32 {
        let halves = steps(query, packed) * 2;
        let (pq, pp) = (query.as_ptr(), packed.as_ptr().cast::<__m128i>());
        let (mut first, mut second) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        // SAFETY: half-step `h` reads query[8h..8h+8] and packed words [4h..4h+4] (16 bytes); `h` stays
        // below twice the whole 16-lane steps both slices cover.
        unsafe {
            for h in (0..halves).step_by(2) {
                let a = _mm256_cvtph_ps(_mm_loadu_si128(pp.add(h)));
                first = _mm256_fmadd_ps(_mm256_loadu_ps(pq.add(h * 8)), a, first);
                let b = _mm256_cvtph_ps(_mm_loadu_si128(pp.add(h + 1)));
                second = _mm256_fmadd_ps(_mm256_loadu_ps(pq.add((h + 1) * 8)), b, second);
            }
        }
        horizontal_sum(_mm256_add_ps(first, second))
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    fn squared_distance_avx2(query: &[f32], packed: &[u32]) -> f32 {
        let halves = steps(query, packed) * 2;
        let (pq, pp) = (query.as_ptr(), packed.as_ptr().cast::<__m128i>());
        let (mut first, mut second) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        // SAFETY: as in `dot_avx2`.
        unsafe {
            for h in (0..halves).step_by(2) {
                let a = _mm256_cvtph_ps(_mm_loadu_si128(pp.add(h)));
                let d = _mm256_sub_ps(_mm256_loadu_ps(pq.add(h * 8)), a);
                first = _mm256_fmadd_ps(d, d, first);
                let b = _mm256_cvtph_ps(_mm_loadu_si128(pp.add(h + 1)));
                let e = _mm256_sub_ps(_mm256_loadu_ps(pq.add((h + 1) * 8)), b);
                second = _mm256_fmadd_ps(e, e, second);
            }
        }
        horizontal_sum(_mm256_add_ps(first, second))
    }

    #[inline]
    pub(super) fn dot512(query: &[f32], packed: &[u32]) -> f32 {
        // SAFETY: callers check `level()` first, so the CPU has AVX-512F.
        unsafe { dot_avx512(query, packed) }
    }

    #[inline]
    pub(super) fn squared_distance512(query: &[f32], packed: &[u32]) -> f32 {
        // SAFETY: callers check `level()` first, so the CPU has AVX-512F.
        unsafe { squared_distance_avx512(query, packed) }
    }

    #[inline]
    pub(super) fn dot256(query: &[f32], packed: &[u32]) -> f32 {
        // SAFETY: callers check `level()` first, so the CPU has AVX2, FMA and F16C.
        unsafe { dot_avx2(query, packed) }
    }

    #[inline]
    pub(super) fn squared_distance256(query: &[f32], packed: &[u32]) -> f32 {
        // SAFETY: callers check `level()` first, so the CPU has AVX2, FMA and F16C.
        unsafe { squared_distance_avx2(query, packed) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpus_conversion_packs_as_the_portable_rounding_does() {
        #[cfg(target_arch = "x86_64")]
        if simd::has_f16c() {
            // Every 65,537th bit pattern (all exponents, so subnormals, overflow and ties), with
            // infinities and zeros, in vectors of every length up to 40 (whole steps and tails).
            let values: Vec<f32> = (0..=u32::MAX / 65_537)
                .map(|i| f32::from_bits(i.wrapping_mul(65_537)))
                .filter(|value| !value.is_nan())
                .chain([
                    0.0,
                    -0.0,
                    f32::INFINITY,
                    f32::NEG_INFINITY,
                    65_520.0,
                    65_519.0,
                    2.0_f32.powi(-25),
                ])
                .collect();
            for length in 0..=40 {
                for vector in values.chunks(length.max(1)).take(2_000) {
                    let vector = &vector[..length.min(vector.len())];
                    let words = packed_words(vector.len());
                    let (mut kernel, mut portable) = (vec![7; words], vec![7; words]);
                    simd::pack_words_f16c(vector, &mut kernel);
                    pack_words(vector, &mut portable);
                    assert_eq!(kernel, portable, "{vector:?}");
                }
            }
        }
    }

    #[test]
    fn every_half_value_round_trips_through_f32() {
        for bits in 0..=u16::MAX {
            let value = from_half(bits);
            if value.is_nan() {
                assert!(from_half(to_half(value)).is_nan());
            } else {
                assert_eq!(to_half(value), bits, "bits {bits:#06x} ({value})");
            }
        }
    }

    #[test]
    fn conversion_rounds_to_the_nearest_half() {
        // Midway between 1.0 and the next half (1 + 2^-10): ties go to the even mantissa.
        assert_eq!(to_half(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(to_half(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(
            to_half(65_520.0),
            0x7c00,
            "rounds past the largest half to infinity"
        );
        assert_eq!(
            to_half(2f32.powi(-25)),
            0,
            "halfway to the smallest subnormal rounds to even zero"
        );
        assert_eq!(to_half(2f32.powi(-25) * 1.5), 1);
        let mut state = 0x1234_5678_u32;
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            // Magnitudes from 2^-27 (below the smallest subnormal) up to 2^15, either sign.
            let exponent = 100 + state % 42;
            let value = f32::from_bits((state & 0x8000_0000) | (exponent << 23) | (state >> 9 & 0x7f_ffff));
            let bits = to_half(value);
            let error = (from_half(bits) - value).abs();
            for neighbour in [bits.wrapping_sub(1), bits.wrapping_add(1)] {
                let other = from_half(neighbour);
                assert!(
                    other.is_nan() || error <= (other - value).abs(),
                    "{value} -> {} but {other} is nearer",
                    from_half(bits)
                );
            }
        }
    }

    #[test]
    fn kernels_match_plain_loops_over_the_rounded_values() {
        for dimension in [1, 15, 16, 17, 100, 384, 1536] {
            let vector: Vec<f32> = (0..dimension).map(|i| (i as f32 * 0.37).sin()).collect();
            let query = pad_query(
                &(0..dimension)
                    .map(|i| (i as f32 * 0.11).cos())
                    .collect::<Vec<_>>(),
            );
            let mut packed = Vec::new();
            pack_into(&vector, &mut packed);
            assert_eq!(packed.len(), packed_words(dimension));
            let rounded: Vec<f32> = vector.iter().map(|x| from_half(to_half(*x))).collect();
            let plain_dot: f32 = query.iter().zip(&rounded).map(|(q, c)| q * c).sum();
            let plain_distance: f32 = query
                .iter()
                .zip(rounded.iter().chain(std::iter::repeat(&0.0)))
                .map(|(q, c)| (q - c) * (q - c))
                .sum();
            let tolerance = 1e-4 * dimension as f32;
            assert!(
                (dot(&query, &packed) - plain_dot).abs() < tolerance,
                "dot at {dimension}"
            );
            assert!((portable_dot(&query, &packed) - plain_dot).abs() < tolerance);
            assert!((squared_distance(&query, &packed) - plain_distance).abs() < tolerance);
            assert!((portable_squared_distance(&query, &packed) - plain_distance).abs() < tolerance);
            #[cfg(target_arch = "x86_64")]
            if is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c")
            {
                assert!(
                    (simd::dot256(&query, &packed) - plain_dot).abs() < tolerance,
                    "avx2 dot at {dimension}"
                );
                assert!((simd::squared_distance256(&query, &packed) - plain_distance).abs() < tolerance);
            }
        }
    }
}
