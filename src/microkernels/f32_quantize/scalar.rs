//! Portable quantization kernels: the oracle of the SIMD ones.

use super::QuantizeKernels;

/// The scalar table entry.
pub const KERNELS: QuantizeKernels = QuantizeKernels { min_max, quantize };

/// See [`QuantizeKernels::min_max`].
pub fn min_max(values: &[f32]) -> Option<(f32, f32)> {
    let (mut lo, mut hi) = (*values.first()?, *values.first()?);
    for &v in values {
        if v.is_nan() {
            return None;
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    Some((lo, hi))
}

/// See [`QuantizeKernels::quantize`].
pub fn quantize(values: &[f32], inv: f32, offset: f32, (lo, hi): (i32, i32), out: &mut [i8]) {
    for (o, &v) in out.iter_mut().zip(values) {
        // `offset + v * inv` in float (no fused multiply-add), then rounded; a NaN casts to 0.
        let q = (offset + v * inv).round() as i32;
        *o = q.clamp(lo, hi) as i8;
    }
}
