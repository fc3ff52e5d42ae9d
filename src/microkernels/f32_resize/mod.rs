//! float32 bilinear resize, one output row at a time.
//!
//! Output pixel `x` of a row blends the pixels `x0` and `x1` of two input rows `r0` and
//! `r1` with TFLite's float expression, in its order and with no fused multiply-add, so
//! every table gives the same bits as the element-by-element reference:
//!
//! `((r0[x0]*(1-dy))*(1-dx) + (r1[x0]*dy)*(1-dx) + (r0[x1]*(1-dy))*dx + (r1[x1]*dy)*dx) + 0`
//!
//! (the final `+ 0` is the reference's rounding term for float: it turns `-0` into `+0`).

#[cfg(target_arch = "x86_64")]
pub mod avx2;
pub mod scalar;

use crate::error::{Error, Result};

/// The horizontal taps of one output pixel: element offsets (pixel index times depth) of
/// its two input pixels in a row, and the weight `dx` of the second.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct XTap {
    pub x0: usize,
    pub x1: usize,
    pub dx: f32,
}

/// The arguments of one row.
///
/// The caller guarantees (each kernel's safety contract): `r0` and `r1` are valid for
/// reading `x.x0 + depth` and `x.x1 + depth` floats for every tap `x` of `xs`, `xs` points
/// to `n` taps, `out` is valid for writing `n * depth` floats, and `depth >= 1`.
pub struct RowArgs {
    pub r0: *const f32,
    pub r1: *const f32,
    pub xs: *const XTap,
    pub n: usize,
    pub depth: usize,
    pub dy: f32,
    pub out: *mut f32,
}

/// A row kernel: see [`RowArgs`] for its contract.
pub type BilinearRowFn = unsafe fn(&RowArgs);

/// Computes one output row of `xs.len()` pixels of `depth` values from input rows `r0`
/// and `r1` with `table`'s kernel. Errors (nothing written) when a tap reads past a row
/// or `out` does not hold the row.
pub fn bilinear_row(
    table: &super::Table,
    r0: &[f32],
    r1: &[f32],
    xs: &[XTap],
    dy: f32,
    depth: usize,
    out: &mut [f32],
) -> Result<()> {
    if xs.len().checked_mul(depth) != Some(out.len()) {
        return Err(Error::new(format!(
            "a resized row of {} pixels of {depth} cannot fill {} values",
            xs.len(),
            out.len()
        )));
    }
    if depth == 0 || xs.is_empty() {
        return Ok(());
    }
    let reach = xs.iter().map(|x| x.x0.max(x.x1)).max().unwrap_or(0).saturating_add(depth);
    if reach > r0.len() || reach > r1.len() {
        return Err(Error::new(format!(
            "a resize tap reads {reach} values of rows holding {} and {}",
            r0.len(),
            r1.len()
        )));
    }
    let args =
        RowArgs { r0: r0.as_ptr(), r1: r1.as_ptr(), xs: xs.as_ptr(), n: xs.len(), depth, dy, out: out.as_mut_ptr() };
    // SAFETY: every tap's two reads end at most at `reach`, within both rows (checked
    // above); `xs` holds `n` taps; `out` holds `n * depth` values; `depth >= 1`.
    unsafe { (table.f32_resize_bilinear)(&args) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::microkernels::test_rng::Lcg;
    use crate::microkernels::{Isa, Table, available_tables};

    #[test]
    fn simd_rows_equal_the_scalar_twin_bit_for_bit() {
        let scalar = Table::for_isa(Isa::Scalar).unwrap();
        let mut rng = Lcg(0x005e_ed0f_5e5a);
        for case in 0..300 {
            let depth = [1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 33, 48][case % 12];
            let in_w = 1 + rng.below(9);
            let n = 1 + rng.below(20);
            let mut r0: Vec<f32> = (0..in_w * depth).map(|_| rng.f32()).collect();
            let r1: Vec<f32> = (0..in_w * depth).map(|_| rng.f32()).collect();
            r0[0] = -0.0;
            let xs: Vec<XTap> = (0..n)
                .map(|_| XTap {
                    x0: rng.below(in_w) * depth,
                    x1: rng.below(in_w) * depth,
                    dx: rng.below(1001) as f32 / 1000.0,
                })
                .collect();
            let dy = [0.0, 0.25, 0.5, 0.999][case % 4];
            let mut want = vec![f32::NAN; n * depth];
            bilinear_row(scalar, &r0, &r1, &xs, dy, depth, &mut want).unwrap();
            for table in available_tables() {
                let mut got = vec![f32::NAN; n * depth];
                bilinear_row(table, &r0, &r1, &xs, dy, depth, &mut got).unwrap();
                let same = got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{} depth {depth} n {n}: {got:?} vs {want:?}", table.name());
                let short = &r0[..r0.len() - 1];
                assert!(
                    bilinear_row(table, short, &r1, &xs, dy, depth, &mut got).is_err()
                        || xs.iter().all(|x| x.x0.max(x.x1) + depth < r0.len())
                );
                assert!(bilinear_row(table, &r0, &r1, &xs, dy, depth, &mut got[1..]).is_err());
            }
        }
    }

    #[test]
    fn matches_the_reference_expression() {
        let (p00, p10, p01, p11) = (0.3f32, -0.7f32, 0.11f32, 0.9f32);
        let (dx, dy) = (0.375f32, 0.8f32);
        let want = p00 * (1.0 - dy) * (1.0 - dx) + p10 * dy * (1.0 - dx) + p01 * (1.0 - dy) * dx + p11 * dy * dx + 0.0;
        for table in available_tables() {
            let mut got = [0f32];
            bilinear_row(table, &[p00, p01], &[p10, p11], &[XTap { x0: 0, x1: 1, dx }], dy, 1, &mut got).unwrap();
            assert_eq!(got[0].to_bits(), want.to_bits(), "{}", table.name());
        }
    }
}
