//! AVX2 binary kernels: 16 values per step, then 8, then the last few through masked
//! loads and stores (which never touch memory outside the mask).

use super::{BinaryKernels, OpKernels};
use crate::microkernels::Isa;
use core::arch::x86_64::*;

/// Lanes `0..rem` set (`rem < 8`).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn tail_mask(rem: usize) -> __m256i {
    _mm256_cmpgt_epi32(_mm256_set1_epi32(rem as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
}

macro_rules! op_kernels {
    ($name:ident, |$x:ident, $y:ident| $body:expr) => {
        mod $name {
            use super::tail_mask;
            use core::arch::x86_64::*;

            /// `clamp(f(x, y))`: `std::max(v, lo)` is `max_ps(lo, v)` and `std::min(v, hi)`
            /// is `min_ps(hi, v)`, so NaN passes through as in the scalar twin.
            #[inline]
            #[target_feature(enable = "avx2,fma")]
            fn f($x: __m256, $y: __m256, lo: __m256, hi: __m256) -> __m256 {
                _mm256_min_ps(hi, _mm256_max_ps(lo, $body))
            }

            /// # Safety
            /// See [`crate::microkernels::f32_vbinary::VvFn`].
            #[target_feature(enable = "avx2,fma")]
            pub unsafe fn vv(n: usize, a: *const f32, b: *const f32, o: *mut f32, lo: f32, hi: f32) {
                // SAFETY: every access is below `n` (masked for the tail); each vector is
                // loaded before the same positions are stored, so `o` may be `a` or `b`.
                unsafe {
                    let (vlo, vhi) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
                    let mut i = 0;
                    while i + 16 <= n {
                        let r0 = f(_mm256_loadu_ps(a.add(i)), _mm256_loadu_ps(b.add(i)), vlo, vhi);
                        let r1 = f(_mm256_loadu_ps(a.add(i + 8)), _mm256_loadu_ps(b.add(i + 8)), vlo, vhi);
                        _mm256_storeu_ps(o.add(i), r0);
                        _mm256_storeu_ps(o.add(i + 8), r1);
                        i += 16;
                    }
                    if i + 8 <= n {
                        _mm256_storeu_ps(o.add(i), f(_mm256_loadu_ps(a.add(i)), _mm256_loadu_ps(b.add(i)), vlo, vhi));
                        i += 8;
                    }
                    if i < n {
                        let m = tail_mask(n - i);
                        let r = f(_mm256_maskload_ps(a.add(i), m), _mm256_maskload_ps(b.add(i), m), vlo, vhi);
                        _mm256_maskstore_ps(o.add(i), m, r);
                    }
                }
            }

            /// The scalar kernels, `c` first when `C_FIRST`.
            #[target_feature(enable = "avx2,fma")]
            unsafe fn scalar<const C_FIRST: bool>(n: usize, a: *const f32, c: f32, o: *mut f32, lo: f32, hi: f32) {
                // SAFETY: as in `vv`.
                unsafe {
                    let (vlo, vhi, vc) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi), _mm256_set1_ps(c));
                    let g = |v: __m256| {
                        if C_FIRST { f(vc, v, vlo, vhi) } else { f(v, vc, vlo, vhi) }
                    };
                    let mut i = 0;
                    while i + 16 <= n {
                        let r0 = g(_mm256_loadu_ps(a.add(i)));
                        let r1 = g(_mm256_loadu_ps(a.add(i + 8)));
                        _mm256_storeu_ps(o.add(i), r0);
                        _mm256_storeu_ps(o.add(i + 8), r1);
                        i += 16;
                    }
                    if i + 8 <= n {
                        _mm256_storeu_ps(o.add(i), g(_mm256_loadu_ps(a.add(i))));
                        i += 8;
                    }
                    if i < n {
                        let m = tail_mask(n - i);
                        _mm256_maskstore_ps(o.add(i), m, g(_mm256_maskload_ps(a.add(i), m)));
                    }
                }
            }

            /// # Safety
            /// See [`crate::microkernels::f32_vbinary::VcFn`].
            pub unsafe fn vc(n: usize, a: *const f32, c: f32, o: *mut f32, lo: f32, hi: f32) {
                // SAFETY: the caller's contract.
                unsafe { scalar::<false>(n, a, c, o, lo, hi) }
            }

            /// # Safety
            /// See [`crate::microkernels::f32_vbinary::VcFn`].
            pub unsafe fn cv(n: usize, a: *const f32, c: f32, o: *mut f32, lo: f32, hi: f32) {
                // SAFETY: the caller's contract.
                unsafe { scalar::<true>(n, a, c, o, lo, hi) }
            }

            /// The row kernels, the row first when `ROW_FIRST`.
            #[target_feature(enable = "avx2,fma")]
            unsafe fn rows<const ROW_FIRST: bool>(
                rows: usize,
                cols: usize,
                a: *const f32,
                row: *const f32,
                o: *mut f32,
                lo: f32,
                hi: f32,
            ) {
                // SAFETY: `j < cols` within `row`, `r * cols + j < rows * cols` within `a`
                // and `o` (masked for the tail); loads precede stores of the same positions.
                unsafe {
                    let (vlo, vhi) = (_mm256_set1_ps(lo), _mm256_set1_ps(hi));
                    let g = |v: __m256, w: __m256| {
                        if ROW_FIRST { f(w, v, vlo, vhi) } else { f(v, w, vlo, vhi) }
                    };
                    let full = cols & !7;
                    let m = tail_mask(cols - full);
                    for r in 0..rows {
                        let (ar, or) = (a.add(r * cols), o.add(r * cols));
                        let mut j = 0;
                        while j < full {
                            _mm256_storeu_ps(or.add(j), g(_mm256_loadu_ps(ar.add(j)), _mm256_loadu_ps(row.add(j))));
                            j += 8;
                        }
                        if j < cols {
                            let v = g(_mm256_maskload_ps(ar.add(j), m), _mm256_maskload_ps(row.add(j), m));
                            _mm256_maskstore_ps(or.add(j), m, v);
                        }
                    }
                }
            }

            /// # Safety
            /// See [`crate::microkernels::f32_vbinary::RowFn`].
            pub unsafe fn vrow(
                rows_: usize,
                cols: usize,
                a: *const f32,
                row: *const f32,
                o: *mut f32,
                lo: f32,
                hi: f32,
            ) {
                // SAFETY: the caller's contract.
                unsafe { rows::<false>(rows_, cols, a, row, o, lo, hi) }
            }

            /// # Safety
            /// See [`crate::microkernels::f32_vbinary::RowFn`].
            pub unsafe fn rowv(
                rows_: usize,
                cols: usize,
                a: *const f32,
                row: *const f32,
                o: *mut f32,
                lo: f32,
                hi: f32,
            ) {
                // SAFETY: the caller's contract.
                unsafe { rows::<true>(rows_, cols, a, row, o, lo, hi) }
            }

            pub const KERNELS: super::OpKernels = super::OpKernels { vv, vc, cv, vrow, rowv };
        }
    };
}

op_kernels!(add, |x, y| _mm256_add_ps(x, y));
op_kernels!(sub, |x, y| _mm256_sub_ps(x, y));
op_kernels!(mul, |x, y| _mm256_mul_ps(x, y));
op_kernels!(div, |x, y| _mm256_div_ps(x, y));
op_kernels!(max, |x, y| _mm256_max_ps(x, y));
op_kernels!(min, |x, y| _mm256_min_ps(x, y));
op_kernels!(sqr_diff, |x, y| {
    let d = _mm256_sub_ps(x, y);
    _mm256_mul_ps(d, d)
});
op_kernels!(prelu, |x, y| _mm256_blendv_ps(
    _mm256_mul_ps(x, y),
    x,
    _mm256_cmp_ps::<_CMP_GE_OQ>(x, _mm256_setzero_ps())
));

/// The AVX2 binary kernels (only reachable through the AVX2-capable tables).
pub const KERNELS: BinaryKernels = BinaryKernels {
    isa: Isa::Avx2Fma,
    add: add::KERNELS,
    sub: sub::KERNELS,
    mul: mul::KERNELS,
    div: div::KERNELS,
    max: max::KERNELS,
    min: min::KERNELS,
    sqr_diff: sqr_diff::KERNELS,
    prelu: prelu::KERNELS,
};
