//! Portable sigmoid: the twin of the SIMD kernels (same steps, one value at a time).

use super::consts::*;

/// Scalar sigmoid over a slice (`input.len() == out.len()`, checked by the caller).
pub fn sigmoid(input: &[f32], out: &mut [f32]) {
    for (o, &x) in out.iter_mut().zip(input) {
        *o = one(x);
    }
}

/// Scalar `out[i] = exp((input[i] - sub) * scale)` for arguments `<= 0` (see
/// [`super::exp_shifted`]; equal lengths, checked by the caller).
pub fn exp_shifted(input: &[f32], sub: f32, scale: f32, out: &mut [f32]) {
    for (o, &x) in out.iter_mut().zip(input) {
        *o = exp_nonpositive((x - sub) * scale);
    }
}

#[inline]
fn one(x: f32) -> f32 {
    let e = exp_nonpositive(-x.abs());
    let f = e / (1.0 + e);
    if x > 0.0 { 1.0 - f } else { f }
}

/// `exp(z)` for `z <= 0` (0 below the cutoff; NaN stays NaN).
#[inline]
fn exp_nonpositive(z: f32) -> f32 {
    let n = (z * LOG2E).round_ties_even();
    let r = (z - n * LN2_HI) - n * LN2_LO;
    let p = (((((C6 * r + C5) * r + C4) * r + C3) * r + C2) * r + 1.0) * r + 1.0;
    // 2^n for n in [-126, 0]: the exponent field directly.
    let scale = f32::from_bits((((n.max(-126.0) as i32) + 127) as u32) << 23);
    if z < CUTOFF { 0.0 } else { p * scale }
}
