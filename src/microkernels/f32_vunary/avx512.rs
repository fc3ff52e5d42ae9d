//! AVX-512 unary kernels: 32 values per step, then 16, then the last few through masked
//! loads and stores (which never touch memory outside the mask).

use super::{SIXTH, UnaryKernels};
use crate::microkernels::Isa;
use core::arch::x86_64::*;

/// Lanes `0..rem` set (`rem < 16`).
#[inline(always)]
fn tail_mask(rem: usize) -> __mmask16 {
    ((1u32 << rem) - 1) as __mmask16
}

macro_rules! unary_kernel {
    ($name:ident, |$x:ident, $p:ident, $q:ident| $body:expr) => {
        /// # Safety
        /// See [`crate::microkernels::f32_vunary::UnaryFn`].
        #[target_feature(enable = "avx512f")]
        unsafe fn $name(n: usize, x: *const f32, o: *mut f32, p: f32, q: f32) {
            #[inline]
            #[target_feature(enable = "avx512f")]
            fn f($x: __m512, $p: __m512, $q: __m512) -> __m512 {
                $body
            }
            // SAFETY: every access is below `n` (masked for the tail).
            unsafe {
                let (vp, vq) = (_mm512_set1_ps(p), _mm512_set1_ps(q));
                let mut i = 0;
                while i + 32 <= n {
                    let r0 = f(_mm512_loadu_ps(x.add(i)), vp, vq);
                    let r1 = f(_mm512_loadu_ps(x.add(i + 16)), vp, vq);
                    _mm512_storeu_ps(o.add(i), r0);
                    _mm512_storeu_ps(o.add(i + 16), r1);
                    i += 32;
                }
                if i + 16 <= n {
                    _mm512_storeu_ps(o.add(i), f(_mm512_loadu_ps(x.add(i)), vp, vq));
                    i += 16;
                }
                if i < n {
                    let m = tail_mask(n - i);
                    _mm512_mask_storeu_ps(o.add(i), m, f(_mm512_maskz_loadu_ps(m, x.add(i)), vp, vq));
                }
            }
        }
    };
}

// `std::max(x, lo)` is `max_ps(lo, x)` and `std::min(y, hi)` is `min_ps(hi, y)`: NaN passes.
unary_kernel!(clamp, |x, lo, hi| _mm512_min_ps(hi, _mm512_max_ps(lo, x)));
unary_kernel!(hard_swish, |x, _p, _q| {
    let t = _mm512_max_ps(_mm512_add_ps(x, _mm512_set1_ps(3.0)), _mm512_setzero_ps());
    let t = _mm512_min_ps(t, _mm512_set1_ps(6.0));
    _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(SIXTH)), t)
});
unary_kernel!(leaky_relu, |x, alpha, _q| _mm512_mask_blend_ps(
    _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, _mm512_setzero_ps()),
    _mm512_mul_ps(x, alpha),
    x
));

/// The AVX-512 unary kernels (only reachable through the AVX-512 table).
pub const KERNELS: UnaryKernels = UnaryKernels { isa: Isa::Avx512, clamp, hard_swish, leaky_relu };
