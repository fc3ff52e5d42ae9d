//! float32 logistic (sigmoid) over a slice, `y = 1 / (1 + exp(-x))`, and the
//! exponentials of a softmax row, `y = exp((x - max) * beta)`: both exponentials of
//! arguments `<= 0`, computed alike.
//!
//! Every table computes them the same way, so the SIMD kernels match their scalar twin
//! to rounding: `e = exp(z)` for `z <= 0` by range reduction (`z = n ln2 + r`,
//! `|r| <= ln2/2`) and a degree-6 polynomial, 0 below -87.3 (where `exp` underflows).
//! The sigmoid takes `z = -|x|`, then `f = e / (1 + e)`, and `1 - f` for positive `x`.
//! Results are within a few ulp of the exact ones; NaN stays NaN.

#[cfg(target_arch = "x86_64")]
pub mod avx2;
#[cfg(target_arch = "x86_64")]
pub mod avx512;
pub mod scalar;

/// A sigmoid kernel: `out[i] = sigmoid(input[i])` for equal-length slices.
pub type SigmoidFn = fn(input: &[f32], out: &mut [f32]);

/// An exponential kernel: `out[i] = exp((input[i] - sub) * scale)` for equal-length
/// slices, every argument `<= 0` (or NaN).
pub type ExpFn = fn(input: &[f32], sub: f32, scale: f32, out: &mut [f32]);

/// Constants shared by every table.
pub(crate) mod consts {
    pub(in crate::microkernels::f32_vsigmoid) const LOG2E: f32 = std::f32::consts::LOG2_E;
    /// ln 2 split in two so that `n * LN2_HI` is exact for the `n` that occur.
    pub(in crate::microkernels::f32_vsigmoid) const LN2_HI: f32 = 0.693_145_75;
    pub(in crate::microkernels::f32_vsigmoid) const LN2_LO: f32 = 1.428_606_8e-6;
    /// Below this, `exp` underflows to (near) zero; the kernels return 0 there.
    pub(in crate::microkernels::f32_vsigmoid) const CUTOFF: f32 = -87.336_55;
    pub(in crate::microkernels::f32_vsigmoid) const C2: f32 = 0.5;
    pub(in crate::microkernels::f32_vsigmoid) const C3: f32 = 1.0 / 6.0;
    pub(in crate::microkernels::f32_vsigmoid) const C4: f32 = 1.0 / 24.0;
    pub(in crate::microkernels::f32_vsigmoid) const C5: f32 = 1.0 / 120.0;
    pub(in crate::microkernels::f32_vsigmoid) const C6: f32 = 1.0 / 720.0;
}

/// Computes `sigmoid` of `input` into `out` with `table`'s kernel. Errors (nothing
/// written) when the lengths differ.
pub fn sigmoid(table: &super::Table, input: &[f32], out: &mut [f32]) -> crate::error::Result<()> {
    if input.len() != out.len() {
        return Err(crate::error::Error::new(format!("sigmoid of {} values into {} outputs", input.len(), out.len())));
    }
    (table.f32_vsigmoid)(input, out);
    Ok(())
}

/// Computes `exp((input[i] - sub) * scale)` into `out` with `table`'s kernel, for a
/// softmax row (`sub` its maximum, `scale` its beta). Errors (nothing written) when the
/// lengths differ, or when `scale` is not finite and positive: only then is every
/// argument `<= 0` for `sub >= input[i]`, the range the kernels compute.
pub fn exp_shifted(
    table: &super::Table,
    input: &[f32],
    sub: f32,
    scale: f32,
    out: &mut [f32],
) -> crate::error::Result<()> {
    if input.len() != out.len() {
        return Err(crate::error::Error::new(format!("exp of {} values into {} outputs", input.len(), out.len())));
    }
    if !(scale.is_finite() && scale > 0.0) {
        return Err(crate::error::Error::new(format!("exp kernels take a finite positive scale, not {scale}")));
    }
    (table.f32_vexp)(input, sub, scale, out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::microkernels::{Isa, Table, available_tables};

    fn exact(x: f32) -> f32 {
        (1.0 / (1.0 + (-(x as f64)).exp())) as f32
    }

    #[test]
    fn close_to_exact_and_simd_matches_scalar() {
        let mut xs: Vec<f32> = (-2000..=2000).map(|i| i as f32 * 0.0137).collect();
        xs.extend([0.0, -0.0, 1e-8, -1e-8, 15.0, 16.7, 17.0, -9.0, -20.0, -87.0, -88.0, -100.0, 88.0, 1e30, -1e30]);
        xs.extend([f32::INFINITY, f32::NEG_INFINITY]);
        let scalar = Table::for_isa(Isa::Scalar).unwrap();
        let mut want = vec![0f32; xs.len()];
        sigmoid(scalar, &xs, &mut want).unwrap();
        for (&x, &y) in xs.iter().zip(&want) {
            let e = exact(x);
            assert!((y - e).abs() <= 4.0 * f32::EPSILON * e.max(f32::MIN_POSITIVE) + 1e-37, "x {x}: {y} vs {e}");
        }
        for table in available_tables() {
            // Every length up to a few vectors, so every tail is taken.
            for len in [0, 1, 7, 8, 9, 15, 16, 17, 31, 33, xs.len()] {
                let mut got = vec![f32::NAN; len];
                sigmoid(table, &xs[..len], &mut got).unwrap();
                for (i, (&g, &w)) in got.iter().zip(&want[..len]).enumerate() {
                    assert!((g - w).abs() <= 2.0 * f32::EPSILON * w.abs(), "{} x {}: {g} vs {w}", table.name(), xs[i]);
                }
            }
            let mut nan = [0f32; 3];
            sigmoid(table, &[f32::NAN, 1.0, f32::NAN], &mut nan).unwrap();
            assert!(nan[0].is_nan() && nan[2].is_nan() && (nan[1] - exact(1.0)).abs() < 1e-6);
            assert!(sigmoid(table, &[1.0], &mut []).is_err());
        }
    }

    #[test]
    fn shifted_exp_is_close_to_exact_and_simd_matches_scalar() {
        let mut xs: Vec<f32> = (-3000..=0).map(|i| i as f32 * 0.0311).collect();
        xs.extend([0.0, -0.0, -1e-8, -87.0, -87.3, -88.0, -100.0, -1e30, f32::NEG_INFINITY, f32::NAN]);
        let (sub, scale) = (0.75, 1.3);
        let xs: Vec<f32> = xs.iter().map(|x| x + sub).collect();
        let scalar = Table::for_isa(Isa::Scalar).unwrap();
        let mut want = vec![0f32; xs.len()];
        exp_shifted(scalar, &xs, sub, scale, &mut want).unwrap();
        for (&x, &y) in xs.iter().zip(&want) {
            let z = (x - sub) * scale;
            if z.is_nan() {
                assert!(y.is_nan(), "x {x}: {y}");
                continue;
            }
            let e = (z as f64).exp() as f32;
            // Exact to a few ulp; flushed to 0 where the result would be subnormal.
            assert!((y - e).abs() <= 4.0 * f32::EPSILON * e + 2.0 * f32::MIN_POSITIVE, "z {z}: {y} vs {e}");
        }
        for table in available_tables() {
            for len in [0, 1, 7, 8, 9, 15, 16, 17, 31, 33, xs.len()] {
                let mut got = vec![f32::NAN; len];
                exp_shifted(table, &xs[..len], sub, scale, &mut got).unwrap();
                for (i, (&g, &w)) in got.iter().zip(&want[..len]).enumerate() {
                    let same = g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= 2.0 * f32::EPSILON * w.abs();
                    assert!(same, "{} x {}: {g} vs {w}", table.name(), xs[i]);
                }
            }
            assert!(exp_shifted(table, &[1.0], 0.0, 1.0, &mut []).is_err());
            assert!(exp_shifted(table, &[1.0], 0.0, -1.0, &mut [0.0]).is_err());
            assert!(exp_shifted(table, &[1.0], 0.0, f32::INFINITY, &mut [0.0]).is_err());
        }
    }
}
