//! Bounds-checked strided matrix products over `gemm-f32` (AVX-512 / FMA kernels picked at run time).
//!
//! A matrix is a view into a slice: `offset`, `rows x cols`, and the distance between neighbouring rows
//! and columns. Every view is checked to lie inside its slice before the kernel runs, so callers stay safe.

use gemm_common::Parallelism;

/// A read-only strided view of `rows x cols` floats.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub(crate) data: &'a [f32],
    pub(crate) offset: usize,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) row_stride: usize,
    pub(crate) col_stride: usize,
}

impl<'a> View<'a> {
    /// A dense row-major matrix.
    pub(crate) fn rows(data: &'a [f32], rows: usize, cols: usize) -> Self {
        View {
            data,
            offset: 0,
            rows,
            cols,
            row_stride: cols,
            col_stride: 1,
        }
    }

    /// The transpose of this view (no copy).
    pub(crate) fn t(self) -> Self {
        View {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..self
        }
    }

    fn fits(&self, len: usize) -> bool {
        self.rows == 0
            || self.cols == 0
            || self.offset + (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride < len
    }
}

/// `dst[offset..]` (strided by `row_stride`, unit columns) `= keep * dst + scale * a * b`.
///
/// `keep` false ignores what `dst` held. Panics when the shapes disagree or a view leaves its slice.
pub(crate) fn matmul(
    dst: &mut [f32],
    offset: usize,
    row_stride: usize,
    keep: bool,
    a: View<'_>,
    b: View<'_>,
    scale: f32,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(b.rows, k, "inner dimensions differ");
    let out = View {
        data: &[],
        offset,
        rows: m,
        cols: n,
        row_stride,
        col_stride: 1,
    };
    assert!(
        out.fits(dst.len()) && a.fits(a.data.len()) && b.fits(b.data.len()),
        "view out of bounds"
    );
    if m == 0 || n == 0 {
        return;
    }
    let gemm = gemm_f32::gemm::f32::get_gemm_fn();
    let stride = |s: usize| isize::try_from(s).expect("stride fits isize");
    #[expect(
        unsafe_code,
        reason = "the kernel takes raw pointers; every view was bounds-checked above"
    )]
    // SAFETY: each view's last element lies inside its slice (checked above); `dst` is borrowed mutably,
    // so it cannot alias `a` or `b`.
    unsafe {
        gemm(
            m,
            n,
            k,
            dst.as_mut_ptr().add(offset),
            1,
            stride(row_stride),
            keep,
            a.data.as_ptr().add(a.offset),
            stride(a.col_stride),
            stride(a.row_stride),
            b.data.as_ptr().add(b.offset),
            stride(b.col_stride),
            stride(b.row_stride),
            1.0,
            scale,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}

/// `out[i][j] += a[i] . w[j]` for the `m` rows of `a` (`m x k`) and the `n` rows of `w` (`n x k`), all
/// row-major: a linear layer for a few tokens. Returns false (and does nothing) where the CPU lacks
/// AVX-512; the caller then uses [`matmul`].
///
/// For a handful of rows, the general kernels read the weights several times over; this streams each
/// weight row once and applies it to every token (measured: 8 tokens x 384 -> 1536 in 175 us with
/// `gemm-f32`, see BENCHMARKS.md for the gain).
pub(crate) fn few_rows_linear(out: &mut [f32], a: &[f32], w: &[f32], m: usize, k: usize, n: usize) -> bool {
    assert!(
        a.len() >= m * k && w.len() >= n * k && out.len() >= m * n,
        "operands too short"
    );
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        for first in (0..m).step_by(8) {
            let rows = (m - first).min(8);
            let a = &a[first * k..(first + rows) * k];
            let out = &mut out[first * n..(first + rows) * n];
            #[expect(
                unsafe_code,
                reason = "AVX-512 intrinsics, called only where the CPU has them"
            )]
            // SAFETY: AVX-512F is present (checked above); the kernels read `a`, `w` and write `out`
            // only inside the lengths asserted above (`rows x k`, `n x k`, `rows x n`).
            unsafe {
                match rows {
                    1 => avx512::tile::<1>(out, a, w, k, n),
                    2 => avx512::tile::<2>(out, a, w, k, n),
                    3 => avx512::tile::<3>(out, a, w, k, n),
                    4 => avx512::tile::<4>(out, a, w, k, n),
                    5 => avx512::tile::<5>(out, a, w, k, n),
                    6 => avx512::tile::<6>(out, a, w, k, n),
                    7 => avx512::tile::<7>(out, a, w, k, n),
                    _ => avx512::tile::<8>(out, a, w, k, n),
                }
            }
        }
        return true;
    }
    false
}

#[cfg(target_arch = "x86_64")]
#[expect(unsafe_code, reason = "AVX-512 intrinsics behind run-time feature detection")]
mod avx512 {
    use std::arch::x86_64::{
        __m512, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_reduce_add_ps, _mm512_setzero_ps,
    };

    /// `out[r][j] += a[r] . w[j]` for `R` rows of `a`, two rows of `w` at a time.
    ///
    /// # Safety
    /// The CPU has AVX-512F; `a` holds `R x k`, `w` holds `n x k` and `out` holds `R x n` floats.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile<const R: usize>(out: &mut [f32], a: &[f32], w: &[f32], k: usize, n: usize) {
        let chunks = k / 16;
        let (ap, wp) = (a.as_ptr(), w.as_ptr());
        let mut j = 0;
        while j < n {
            let second = j + 1 < n;
            let mut acc0: [__m512; R] = [_mm512_setzero_ps(); R];
            let mut acc1: [__m512; R] = [_mm512_setzero_ps(); R];
            for c in 0..chunks {
                // SAFETY (all loads): c * 16 + 16 <= k, rows j and j + 1 < n of `w`, rows r < R of `a`.
                let w0 = unsafe { _mm512_loadu_ps(wp.add(j * k + c * 16)) };
                let w1 = if second {
                    unsafe { _mm512_loadu_ps(wp.add((j + 1) * k + c * 16)) }
                } else {
                    _mm512_setzero_ps()
                };
                for r in 0..R {
                    let x = unsafe { _mm512_loadu_ps(ap.add(r * k + c * 16)) };
                    acc0[r] = _mm512_fmadd_ps(x, w0, acc0[r]);
                    acc1[r] = _mm512_fmadd_ps(x, w1, acc1[r]);
                }
            }
            for r in 0..R {
                let row = &a[r * k..(r + 1) * k];
                let tail = |wrow: &[f32]| -> f32 {
                    row[chunks * 16..]
                        .iter()
                        .zip(&wrow[chunks * 16..])
                        .map(|(x, y)| x * y)
                        .sum()
                };
                out[r * n + j] += _mm512_reduce_add_ps(acc0[r]) + tail(&w[j * k..(j + 1) * k]);
                if second {
                    out[r * n + j + 1] += _mm512_reduce_add_ps(acc1[r]) + tail(&w[(j + 1) * k..(j + 2) * k]);
                }
            }
            j += 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        out
    }

    #[test]
    fn products_match_the_naive_loop_for_plain_transposed_and_accumulated_operands() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.11).cos()).collect();
        let want = naive(&a, &b, m, k, n);

        let mut got = vec![0.0; m * n];
        matmul(
            &mut got,
            0,
            n,
            false,
            View::rows(&a, m, k),
            View::rows(&b, k, n),
            1.0,
        );
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-5);
        }

        // b stored transposed (n x k), read through a transposed view; accumulate onto 1.0 with scale 2.
        let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
        let mut acc = vec![1.0; m * n];
        matmul(
            &mut acc,
            0,
            n,
            true,
            View::rows(&a, m, k),
            View::rows(&bt, n, k).t(),
            2.0,
        );
        for (g, w) in acc.iter().zip(&want) {
            assert!((g - (1.0 + 2.0 * w)).abs() < 1e-5);
        }
    }

    #[test]
    fn the_few_rows_kernel_matches_the_general_one() {
        for (m, k, n) in [(1, 48, 5), (3, 50, 4), (8, 384, 7), (11, 33, 2)] {
            let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.13).sin()).collect();
            let w: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.07).cos()).collect();
            let mut general = vec![0.5; m * n];
            matmul(
                &mut general,
                0,
                n,
                true,
                View::rows(&a, m, k),
                View::rows(&w, n, k).t(),
                1.0,
            );
            let mut few = vec![0.5; m * n];
            if few_rows_linear(&mut few, &a, &w, m, k, n) {
                for (g, f) in general.iter().zip(&few) {
                    assert!((g - f).abs() < 1e-4, "{m}x{k}x{n}: {g} vs {f}");
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "view out of bounds")]
    fn a_view_past_its_slice_is_refused() {
        let a = vec![0.0; 6];
        let mut out = vec![0.0; 4];
        matmul(
            &mut out,
            0,
            2,
            false,
            View::rows(&a, 2, 4),
            View::rows(&a, 4, 2),
            1.0,
        );
    }
}
