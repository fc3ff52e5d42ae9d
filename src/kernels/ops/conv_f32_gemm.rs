//! Float32 convolution on the GEMM microkernels: the filter packed once per node into the
//! microkernels' layout (at Prepare for constant filters, kept in the node's state), every output pixel a GEMM row
//! whose taps point straight into the NHWC input (no im2col), rows split over threads.
//! Used by CONV_2D for ungrouped float convolutions; the fused activation is the
//! microkernels' clamp.

use super::conv_common::{ConvGeom, parallel_rows, threads_for};
use crate::error::{Error, Result};
use crate::kernels::api::TensorView;
use crate::kernels::threadpool::parallel_chunks_mut;
use crate::microkernels::f32_gemm::{self, DenseRows, PackedGemm};
use crate::microkernels::{Table, table};
use core::ops::Range;

/// Packs `filter` (OHWI) and `bias` for `table`'s GEMM kernels.
pub fn pack(table: &Table, g: &ConvGeom, filter: &[f32], bias: Option<&[f32]>) -> Result<PackedGemm> {
    let ks = g.f_h * g.f_w;
    let kc = g.in_c;
    let want = g.out_c.checked_mul(ks).and_then(|v| v.checked_mul(kc));
    if want != Some(filter.len()) {
        return Err(Error::new(format!("filter has {} values, the geometry needs {want:?}", filter.len())));
    }
    let per_output = ks * kc;
    f32_gemm::pack(&table.f32_gemm, g.out_c, ks, kc, |o, t, k| filter[o * per_output + t * kc + k], bias)
}

/// Packs `filter` (OHWI) and `bias` for this CPU's GEMM kernels.
pub fn pack_weights(g: &ConvGeom, filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> Result<PackedGemm> {
    let b = bias.map(|b| b.data::<f32>()).transpose()?;
    pack(table(), g, filter.data::<f32>()?, b)
}

/// The convolution on weights packed for `table`.
pub fn compute(
    t: &Table,
    g: &ConvGeom,
    input: &[f32],
    packed: &PackedGemm,
    out: &mut [f32],
    act: (f32, f32),
    max_threads: usize,
) -> Result<()> {
    let rows = g.check_gemm_buffers(Some(input.len()), out.len(), packed.n)?;
    let n = g.out_c;
    let work = rows.saturating_mul(n).saturating_mul(packed.ks * packed.kc);
    if rows == 1 {
        // One output row (a fully connected layer on one batch row, or a convolution down
        // to one pixel, both mostly reading weights): split the output channels instead, in
        // whole packed blocks.
        let nr = packed.nr;
        let threads = threads_for(max_threads, work, n.div_ceil(nr));
        let per = n.div_ceil(nr).div_ceil(threads) * nr;
        return parallel_chunks_mut(threads, out, per, &|i, chunk: &mut [f32]| {
            gemm(t, g, input, packed, 0..1, i * per..i * per + chunk.len(), chunk, act)
        });
    }
    let threads = threads_for(max_threads, work, rows);
    parallel_rows(threads, out, n, &|first, chunk: &mut [f32]| {
        compute_rows(t, g, input, packed, first..first + chunk.len() / n, chunk, act)
    })
}

/// Output rows `rows` (pixels over all batches) of the convolution, on the calling
/// thread, into `out` (exactly those rows, `g.out_c` values each).
pub fn compute_rows(
    t: &Table,
    g: &ConvGeom,
    input: &[f32],
    packed: &PackedGemm,
    rows: Range<usize>,
    out: &mut [f32],
    act: (f32, f32),
) -> Result<()> {
    gemm(t, g, input, packed, rows, 0..g.out_c, out, act)
}

/// Output rows `rows`, channels `cols` of the convolution into `out` (rows `g.out_c`
/// apart): dense rows where the convolution is a plain matrix product, else each row's
/// window taps.
#[allow(clippy::too_many_arguments)]
fn gemm(
    t: &Table,
    g: &ConvGeom,
    input: &[f32],
    packed: &PackedGemm,
    rows: Range<usize>,
    cols: Range<usize>,
    out: &mut [f32],
    act: (f32, f32),
) -> Result<()> {
    let n = g.out_c;
    if g.is_dense() {
        f32_gemm::igemm(t, packed, input, &DenseRows { stride: g.in_c }, rows, cols, out, n, act)
    } else {
        f32_gemm::igemm(t, packed, input, &g.gemm_rows(g.in_c), rows, cols, out, n, act)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::builtin_op_data::TfLitePadding;
    use crate::kernels::ops::conv_2d::conv_f32_reference;
    use crate::kernels::ops::conv_common::test_conv_geom;
    use crate::microkernels::available_tables;

    #[allow(clippy::too_many_arguments)]
    fn geom(
        b: usize,
        h: usize,
        w: usize,
        c: usize,
        oc: usize,
        fh: usize,
        fw: usize,
        s: usize,
        d: usize,
        pad: TfLitePadding,
    ) -> ConvGeom {
        test_conv_geom(b, h, w, c, oc, fh, fw, c, s, d, pad)
    }

    #[test]
    fn every_table_matches_the_reference_loop() {
        use TfLitePadding::*;
        let shapes = [
            geom(1, 5, 7, 3, 4, 3, 3, 1, 1, kTfLitePaddingSame),
            geom(2, 9, 6, 5, 11, 3, 2, 2, 1, kTfLitePaddingSame),
            geom(1, 8, 8, 4, 9, 3, 3, 1, 2, kTfLitePaddingValid),
            geom(1, 10, 9, 16, 17, 1, 1, 1, 1, kTfLitePaddingValid),
            geom(1, 7, 7, 2, 8, 5, 5, 2, 1, kTfLitePaddingSame),
            geom(1, 6, 13, 8, 24, 3, 3, 1, 3, kTfLitePaddingSame),
            geom(1, 12, 12, 8, 1, 3, 3, 1, 1, kTfLitePaddingSame),
            geom(2, 6, 6, 32, 40, 1, 1, 2, 1, kTfLitePaddingValid),
            geom(1, 4, 4, 20, 3, 3, 3, 1, 1, kTfLitePaddingValid),
            // One output pixel from a 3x3 window, enough work to split its channels.
            geom(1, 3, 3, 32, 600, 3, 3, 1, 1, kTfLitePaddingValid),
        ];
        let mut seed = 7u64;
        let mut val = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) % 2001) as f32 / 1000.0 - 1.0
        };
        for g in shapes {
            let input: Vec<f32> = (0..g.input_len().unwrap()).map(|_| val()).collect();
            let filter: Vec<f32> = (0..g.out_c * g.f_h * g.f_w * g.in_c).map(|_| val()).collect();
            let bias: Vec<f32> = (0..g.out_c).map(|_| val()).collect();
            let mut want = vec![0f32; g.output_len().unwrap()];
            conv_f32_reference(&g, &input, &filter, Some(&bias), &mut want, (-0.5, 1.5)).unwrap();
            for t in available_tables() {
                let packed = pack(t, &g, &filter, Some(&bias)).unwrap();
                for threads in [1, 2, 3] {
                    let mut got = vec![f32::NAN; want.len()];
                    compute(t, &g, &input, &packed, &mut got, (-0.5, 1.5), threads).unwrap();
                    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                        assert!((a - b).abs() <= 1e-5, "{} {g:?}: element {i}: {a} vs {b}", t.name());
                    }
                }
            }
        }
    }

    #[test]
    fn mismatched_sizes_are_errors() {
        let g = geom(1, 3, 3, 1, 1, 2, 2, 1, 1, TfLitePadding::kTfLitePaddingValid);
        let t = table();
        assert!(pack(t, &g, &[0.0; 3], None).is_err());
        let packed = pack(t, &g, &[0.0; 4], None).unwrap();
        let mut out = [0.0f32; 3];
        assert!(compute(t, &g, &[0.0; 9], &packed, &mut out, (0.0, 1.0), 1).is_err());
        let mut out = [0.0f32; 4];
        assert!(compute(t, &g, &[0.0; 8], &packed, &mut out, (0.0, 1.0), 1).is_err());
        compute(t, &g, &[0.0; 9], &packed, &mut out, (0.0, 1.0), 1).unwrap();
    }
}
