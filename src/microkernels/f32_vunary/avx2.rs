//! AVX2 unary kernels: 16 values per step, then 8, then the last few through masked
//! loads and stores (which never touch memory outside the mask).

use super::{SIXTH, UnaryKernels};
use crate::microkernels::Isa;
use core::arch::x86_64::*;

/// Lanes `0..rem` set (`rem < 8`).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn tail_mask(rem: usize) -> __m256i {
    _mm256_cmpgt_epi32(_mm256_set1_epi32(rem as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
}

macro_rules! unary_kernel {
    ($name:ident, |$x:ident, $p:ident, $q:ident| $body:expr) => {
        /// # Safety
        /// See [`crate::microkernels::f32_vunary::UnaryFn`].
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $name(n: usize, x: *const f32, o: *mut f32, p: f32, q: f32) {
            #[inline]
            #[target_feature(enable = "avx2,fma")]
            fn f($x: __m256, $p: __m256, $q: __m256) -> __m256 {
                $body
            }
            // SAFETY: every access is below `n` (masked for the tail).
            unsafe {
                let (vp, vq) = (_mm256_set1_ps(p), _mm256_set1_ps(q));
                let mut i = 0;
                while i + 16 <= n {
                    let r0 = f(_mm256_loadu_ps(x.add(i)), vp, vq);
                    let r1 = f(_mm256_loadu_ps(x.add(i + 8)), vp, vq);
                    _mm256_storeu_ps(o.add(i), r0);
                    _mm256_storeu_ps(o.add(i + 8), r1);
                    i += 16;
                }
                if i + 8 <= n {
                    _mm256_storeu_ps(o.add(i), f(_mm256_loadu_ps(x.add(i)), vp, vq));
                    i += 8;
                }
                if i < n {
                    let m = tail_mask(n - i);
                    _mm256_maskstore_ps(o.add(i), m, f(_mm256_maskload_ps(x.add(i), m), vp, vq));
                }
            }
        }
    };
}

// `std::max(x, lo)` is `max_ps(lo, x)` and `std::min(y, hi)` is `min_ps(hi, y)`: NaN passes.
unary_kernel!(clamp, |x, lo, hi| _mm256_min_ps(hi, _mm256_max_ps(lo, x)));
unary_kernel!(hard_swish, |x, _p, _q| {
    let t = _mm256_max_ps(_mm256_add_ps(x, _mm256_set1_ps(3.0)), _mm256_setzero_ps());
    let t = _mm256_min_ps(t, _mm256_set1_ps(6.0));
    _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(SIXTH)), t)
});
unary_kernel!(leaky_relu, |x, alpha, _q| _mm256_blendv_ps(
    _mm256_mul_ps(x, alpha),
    x,
    _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_setzero_ps())
));

/// The AVX2 unary kernels (only reachable through the AVX2-capable tables).
pub const KERNELS: UnaryKernels = UnaryKernels { isa: Isa::Avx2Fma, clamp, hard_swish, leaky_relu };
