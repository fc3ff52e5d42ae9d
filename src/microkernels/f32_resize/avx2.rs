//! AVX2 bilinear row: eight channels per step, the remaining channels of each pixel
//! through the scalar expression.

use super::RowArgs;
use super::scalar::blend;
use core::arch::x86_64::*;

/// AVX2 bilinear row. Only reachable through the tables that exist on CPUs with AVX2.
///
/// # Safety
/// The contract of [`RowArgs`], and a CPU with AVX2.
pub unsafe fn bilinear_row(a: &RowArgs) {
    // SAFETY: the tables holding this kernel are only handed out on CPUs with AVX2; the
    // rest is the caller's contract.
    unsafe { row(a) }
}

#[target_feature(enable = "avx2")]
unsafe fn row(a: &RowArgs) {
    let depth = a.depth;
    let full = depth / 8 * 8;
    // SAFETY: by the contract, `xs` holds `n` taps, `out` holds `n * depth` values and
    // each tap's `depth` values at `x0` and `x1` lie inside both rows; every vector
    // access below covers channels `c..c + 8` with `c + 8 <= full <= depth`.
    unsafe {
        let dy = a.dy;
        let vdy = _mm256_set1_ps(dy);
        let vody = _mm256_set1_ps(1.0 - dy);
        let zero = _mm256_setzero_ps();
        for i in 0..a.n {
            let x = &*a.xs.add(i);
            let (p00, p10) = (a.r0.add(x.x0), a.r1.add(x.x0));
            let (p01, p11) = (a.r0.add(x.x1), a.r1.add(x.x1));
            let o = a.out.add(i * depth);
            let vdx = _mm256_set1_ps(x.dx);
            let vodx = _mm256_set1_ps(1.0 - x.dx);
            let mut c = 0;
            while c < full {
                let t00 = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(p00.add(c)), vody), vodx);
                let t10 = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(p10.add(c)), vdy), vodx);
                let t01 = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(p01.add(c)), vody), vdx);
                let t11 = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(p11.add(c)), vdy), vdx);
                let s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(_mm256_add_ps(t00, t10), t01), t11), zero);
                _mm256_storeu_ps(o.add(c), s);
                c += 8;
            }
            while c < depth {
                *o.add(c) = blend(*p00.add(c), *p10.add(c), *p01.add(c), *p11.add(c), dy, x.dx);
                c += 1;
            }
        }
    }
}
