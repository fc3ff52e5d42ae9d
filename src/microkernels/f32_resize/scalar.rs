//! Portable bilinear row: the twin of the SIMD kernels (same expression, one value at a
//! time).

use super::RowArgs;

/// The reference expression for one value (see the module documentation).
#[inline(always)]
pub(super) fn blend(p00: f32, p10: f32, p01: f32, p11: f32, dy: f32, dx: f32) -> f32 {
    p00 * (1.0 - dy) * (1.0 - dx) + p10 * dy * (1.0 - dx) + p01 * (1.0 - dy) * dx + p11 * dy * dx + 0.0
}

/// Scalar bilinear row.
///
/// # Safety
/// The contract of [`RowArgs`].
pub unsafe fn bilinear_row(a: &RowArgs) {
    // SAFETY: by the contract, `xs` holds `n` taps, `out` holds `n * depth` values and
    // each tap's `depth` values at `x0` and `x1` lie inside both rows.
    unsafe {
        let xs = core::slice::from_raw_parts(a.xs, a.n);
        let out = core::slice::from_raw_parts_mut(a.out, a.n * a.depth);
        for (x, o) in xs.iter().zip(out.chunks_exact_mut(a.depth)) {
            let p00 = core::slice::from_raw_parts(a.r0.add(x.x0), a.depth);
            let p10 = core::slice::from_raw_parts(a.r1.add(x.x0), a.depth);
            let p01 = core::slice::from_raw_parts(a.r0.add(x.x1), a.depth);
            let p11 = core::slice::from_raw_parts(a.r1.add(x.x1), a.depth);
            for c in 0..a.depth {
                o[c] = blend(p00[c], p10[c], p01[c], p11[c], a.dy, x.dx);
            }
        }
    }
}
