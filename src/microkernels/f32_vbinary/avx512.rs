//! AVX-512 binary kernels: 32 values per step, then 16, then the last few through masked
//! loads and stores (which never touch memory outside the mask).

use super::{BinaryKernels, OpKernels};
use crate::microkernels::Isa;
use core::arch::x86_64::*;

/// Lanes `0..rem` set (`rem < 16`).
#[inline(always)]
fn tail_mask(rem: usize) -> __mmask16 {
    ((1u32 << rem) - 1) as __mmask16
}

macro_rules! op_kernels {
    ($name:ident, |$x:ident, $y:ident| $body:expr) => {
        mod $name {
            use super::tail_mask;
            use core::arch::x86_64::*;

            /// `clamp(f(x, y))`: `std::max(v, lo)` is `max_ps(lo, v)` and `std::min(v, hi)`
            /// is `min_ps(hi, v)`, so NaN passes through as in the scalar twin.
            #[inline]
            #[target_feature(enable = "avx512f")]
            fn f($x: __m512, $y: __m512, lo: __m512, hi: __m512) -> __m512 {
                _mm512_min_ps(hi, _mm512_max_ps(lo, $body))
            }

            /// # Safety
            /// See [`crate::microkernels::f32_vbinary::VvFn`].
            #[target_feature(enable = "avx512f")]
            pub unsafe fn vv(n: usize, a: *const f32, b: *const f32, o: *mut f32, lo: f32, hi: f32) {
                // SAFETY: every access is below `n` (masked for the tail); each vector is
                // loaded before the same positions are stored, so `o` may be `a` or `b`.
                unsafe {
                    let (vlo, vhi) = (_mm512_set1_ps(lo), _mm512_set1_ps(hi));
                    let mut i = 0;
                    while i + 32 <= n {
                        let r0 = f(_mm512_loadu_ps(a.add(i)), _mm512_loadu_ps(b.add(i)), vlo, vhi);
                        let r1 = f(_mm512_loadu_ps(a.add(i + 16)), _mm512_loadu_ps(b.add(i + 16)), vlo, vhi);
                        _mm512_storeu_ps(o.add(i), r0);
                        _mm512_storeu_ps(o.add(i + 16), r1);
                        i += 32;
                    }
                    if i + 16 <= n {
                        _mm512_storeu_ps(o.add(i), f(_mm512_loadu_ps(a.add(i)), _mm512_loadu_ps(b.add(i)), vlo, vhi));
                        i += 16;
                    }
                    if i < n {
                        let m = tail_mask(n - i);
                        let r = f(_mm512_maskz_loadu_ps(m, a.add(i)), _mm512_maskz_loadu_ps(m, b.add(i)), vlo, vhi);
                        _mm512_mask_storeu_ps(o.add(i), m, r);
                    }
                }
            }

            /// The scalar kernels, `c` first when `C_FIRST`.
            #[target_feature(enable = "avx512f")]
            unsafe fn scalar<const C_FIRST: bool>(n: usize, a: *const f32, c: f32, o: *mut f32, lo: f32, hi: f32) {
                // SAFETY: as in `vv`.
                unsafe {
                    let (vlo, vhi, vc) = (_mm512_set1_ps(lo), _mm512_set1_ps(hi), _mm512_set1_ps(c));
                    let g = |v: __m512| {
                        if C_FIRST { f(vc, v, vlo, vhi) } else { f(v, vc, vlo, vhi) }
                    };
                    let mut i = 0;
                    while i + 32 <= n {
                        let r0 = g(_mm512_loadu_ps(a.add(i)));
                        let r1 = g(_mm512_loadu_ps(a.add(i + 16)));
                        _mm512_storeu_ps(o.add(i), r0);
                        _mm512_storeu_ps(o.add(i + 16), r1);
                        i += 32;
                    }
                    if i + 16 <= n {
                        _mm512_storeu_ps(o.add(i), g(_mm512_loadu_ps(a.add(i))));
                        i += 16;
                    }
                    if i < n {
                        let m = tail_mask(n - i);
                        _mm512_mask_storeu_ps(o.add(i), m, g(_mm512_maskz_loadu_ps(m, a.add(i))));
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
            #[target_feature(enable = "avx512f")]
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
                    let (vlo, vhi) = (_mm512_set1_ps(lo), _mm512_set1_ps(hi));
                    let g = |v: __m512, w: __m512| {
                        if ROW_FIRST { f(w, v, vlo, vhi) } else { f(v, w, vlo, vhi) }
                    };
                    let full = cols & !15;
                    let m = tail_mask(cols - full);
                    for r in 0..rows {
                        let (ar, or) = (a.add(r * cols), o.add(r * cols));
                        let mut j = 0;
                        while j < full {
                            _mm512_storeu_ps(or.add(j), g(_mm512_loadu_ps(ar.add(j)), _mm512_loadu_ps(row.add(j))));
                            j += 16;
                        }
                        if j < cols {
                            let v = g(_mm512_maskz_loadu_ps(m, ar.add(j)), _mm512_maskz_loadu_ps(m, row.add(j)));
                            _mm512_mask_storeu_ps(or.add(j), m, v);
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

op_kernels!(add, |x, y| _mm512_add_ps(x, y));
op_kernels!(sub, |x, y| _mm512_sub_ps(x, y));
op_kernels!(mul, |x, y| _mm512_mul_ps(x, y));
op_kernels!(div, |x, y| _mm512_div_ps(x, y));
op_kernels!(max, |x, y| _mm512_max_ps(x, y));
op_kernels!(min, |x, y| _mm512_min_ps(x, y));
op_kernels!(sqr_diff, |x, y| {
    let d = _mm512_sub_ps(x, y);
    _mm512_mul_ps(d, d)
});
op_kernels!(prelu, |x, y| _mm512_mask_blend_ps(
    _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, _mm512_setzero_ps()),
    _mm512_mul_ps(x, y),
    x
));

/// The AVX-512 binary kernels (only reachable through the AVX-512 table).
pub const KERNELS: BinaryKernels = BinaryKernels {
    isa: Isa::Avx512,
    add: add::KERNELS,
    sub: sub::KERNELS,
    mul: mul::KERNELS,
    div: div::KERNELS,
    max: max::KERNELS,
    min: min::KERNELS,
    sqr_diff: sqr_diff::KERNELS,
    prelu: prelu::KERNELS,
};
