//! Float32 convolution on the GEMM microkernels: the filter packed once per node into the
//! microkernels' layout (at Prepare for constant filters, kept in the node's state), every output pixel a GEMM row
//! whose taps point straight into the NHWC input (no im2col), rows split over threads.
//! Used by CONV_2D for ungrouped float convolutions; the fused activation is the
//! microkernels' clamp.

use super::conv_common::{ConvGeom, parallel_rows, threads_for};
use super::tile_split::TileGrid;
use crate::error::{Error, Result};
use crate::kernels::api::TensorView;
use crate::microkernels::epilogue::Epilogue;
use crate::microkernels::f32_gemm::{self, DenseRows, PackedGemm};
use crate::microkernels::shared_out::SharedOut;
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

/// The convolution on weights packed for `table`: rows split over threads, or the tiles
/// in column-block order where the weights outweigh the input (see `tile_split`).
pub fn compute(
    t: &Table,
    g: &ConvGeom,
    input: &[f32],
    packed: &PackedGemm,
    out: &mut [f32],
    act: (f32, f32),
    max_threads: usize,
) -> Result<()> {
    compute_then(t, g, input, packed, out, act, max_threads, None)
}

/// [`compute`], each finished chunk of output rows then handed to `epilogue` (where given)
/// while it is in cache. The epilogue sees output rows as GEMM rows: pixels over all
/// batches, `g.out_c` channels each.
#[allow(clippy::too_many_arguments)]
pub fn compute_then(
    t: &Table,
    g: &ConvGeom,
    input: &[f32],
    packed: &PackedGemm,
    out: &mut [f32],
    act: (f32, f32),
    max_threads: usize,
    epilogue: Option<&dyn Epilogue<f32>>,
) -> Result<()> {
    let rows = g.check_gemm_buffers(Some(input.len()), out.len(), packed.n)?;
    let n = g.out_c;
    let work = rows.saturating_mul(n).saturating_mul(packed.ks * packed.kc);
    let weights = (packed.ks * packed.kc).saturating_mul(n);
    let grid = tile_grid(t, g, packed, rows);
    let threads = threads_for(max_threads, work, grid.tiles());
    if grid.split_by_blocks(threads, weights, input.len()) {
        return compute_by_blocks(t, g, input, packed, out, act, grid, threads, epilogue);
    }
    let threads = threads_for(max_threads, work, rows);
    parallel_rows(threads, out, n, &|first, chunk: &mut [f32]| {
        gemm(t, g, input, packed, first..first + chunk.len() / n, 0..n, chunk, act, epilogue)
    })
}

/// The output's tiles for `table`'s kernels on `rows` rows.
fn tile_grid(t: &Table, g: &ConvGeom, packed: &PackedGemm, rows: usize) -> TileGrid {
    TileGrid { rows, cols: g.out_c, mr: t.f32_gemm.for_outputs(packed.n).mr, nr: packed.nr }
}

/// The convolution split over `threads` threads in column-block order (see [`compute`]).
#[allow(clippy::too_many_arguments)]
fn compute_by_blocks(
    t: &Table,
    g: &ConvGeom,
    input: &[f32],
    packed: &PackedGemm,
    out: &mut [f32],
    act: (f32, f32),
    grid: TileGrid,
    threads: usize,
    epilogue: Option<&dyn Epilogue<f32>>,
) -> Result<()> {
    grid.fill_by_blocks(threads, out, &|rs, cs, out, offset| {
        // SAFETY: `fill_by_blocks` hands out pieces that no other call touches.
        unsafe { gemm_shared(t, g, input, packed, rs, cs, out, offset, act, epilogue) }
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
    gemm(t, g, input, packed, rows, 0..g.out_c, out, act, None)
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
    epilogue: Option<&dyn Epilogue<f32>>,
) -> Result<()> {
    let out = SharedOut::new(out);
    // SAFETY: `out` borrows the caller's slice mutably for this call.
    unsafe { gemm_shared(t, g, input, packed, rows, cols, out, 0, act, epilogue) }
}

/// [`gemm`] into `out` from `offset` (see [`f32_gemm::igemm_shared`]).
///
/// # Safety
/// As [`f32_gemm::igemm_shared`]: no other thread touches the elements this call writes
/// while it runs.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_shared(
    t: &Table,
    g: &ConvGeom,
    input: &[f32],
    packed: &PackedGemm,
    rows: Range<usize>,
    cols: Range<usize>,
    out: SharedOut<'_, f32>,
    offset: usize,
    act: (f32, f32),
    epilogue: Option<&dyn Epilogue<f32>>,
) -> Result<()> {
    let n = g.out_c;
    // SAFETY: the caller's contract, passed on.
    unsafe {
        if g.is_dense() {
            let taps = DenseRows { stride: g.in_c };
            f32_gemm::igemm_shared(t, packed, input, &taps, rows, cols, out, offset, n, act, epilogue)
        } else {
            f32_gemm::igemm_shared(t, packed, input, &g.gemm_rows(g.in_c), rows, cols, out, offset, n, act, epilogue)
        }
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
            // A 7x7 layer with more weights than input, enough work to split (by rows or
            // by column blocks), and a 3x3 one.
            geom(1, 7, 7, 64, 96, 1, 1, 1, 1, kTfLitePaddingValid),
            geom(1, 5, 5, 24, 56, 3, 3, 1, 1, kTfLitePaddingSame),
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
                let check = |got: &[f32], how: &str| {
                    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                        assert!((a - b).abs() <= 1e-5, "{} {g:?} {how}: element {i}: {a} vs {b}", t.name());
                    }
                };
                for threads in [1, 2, 3] {
                    let mut got = vec![f32::NAN; want.len()];
                    compute(t, &g, &input, &packed, &mut got, (-0.5, 1.5), threads).unwrap();
                    check(&got, &format!("on {threads} threads"));
                    // The column-block split on any shape, whatever `compute` chose.
                    let grid = tile_grid(t, &g, &packed, g.batches * g.out_h * g.out_w);
                    let mut got = vec![f32::NAN; want.len()];
                    compute_by_blocks(t, &g, &input, &packed, &mut got, (-0.5, 1.5), grid, threads, None).unwrap();
                    check(&got, &format!("by column blocks on {threads} threads"));
                }
            }
        }
    }

    /// Adds `row * 1000 + channel` to every output: where an epilogue is handed rows and
    /// columns other than those it gets, the sums show it.
    struct MarkRowsAndColumns;

    impl Epilogue<f32> for MarkRowsAndColumns {
        fn apply(&self, rows: Range<usize>, cols: Range<usize>, out: &mut [f32]) -> Result<()> {
            assert_eq!(out.len(), rows.len() * cols.len());
            for (r, row) in rows.zip(out.chunks_exact_mut(cols.len())) {
                for (c, v) in cols.clone().zip(row) {
                    *v += (r * 1000 + c) as f32;
                }
            }
            Ok(())
        }
    }

    #[test]
    fn epilogues_see_every_output_once_at_its_row_and_column() {
        use TfLitePadding::*;
        let shapes = [
            geom(1, 9, 11, 8, 40, 1, 1, 1, 1, kTfLitePaddingValid),
            geom(2, 6, 7, 5, 17, 3, 3, 1, 1, kTfLitePaddingSame),
            // Enough weights beside a small input to split by column blocks.
            geom(1, 7, 7, 64, 96, 1, 1, 1, 1, kTfLitePaddingValid),
        ];
        for g in shapes {
            let input: Vec<f32> = (0..g.input_len().unwrap()).map(|i| (i % 7) as f32 - 3.0).collect();
            let filter: Vec<f32> = (0..g.out_c * g.f_h * g.f_w * g.in_c).map(|i| (i % 5) as f32 - 2.0).collect();
            let mut want = vec![0f32; g.output_len().unwrap()];
            conv_f32_reference(&g, &input, &filter, None, &mut want, (-1e9, 1e9)).unwrap();
            for (i, w) in want.iter_mut().enumerate() {
                *w += ((i / g.out_c) * 1000 + i % g.out_c) as f32;
            }
            for t in available_tables() {
                let packed = pack(t, &g, &filter, None).unwrap();
                let rows = g.batches * g.out_h * g.out_w;
                for threads in [1, 2, 3] {
                    let mut got = vec![f32::NAN; want.len()];
                    compute_then(t, &g, &input, &packed, &mut got, (-1e9, 1e9), threads, Some(&MarkRowsAndColumns))
                        .unwrap();
                    assert_eq!(got, want, "{} {g:?} on {threads} threads", t.name());
                    let grid = tile_grid(t, &g, &packed, rows);
                    let mut got = vec![f32::NAN; want.len()];
                    let epilogue: Option<&dyn Epilogue<f32>> = Some(&MarkRowsAndColumns);
                    compute_by_blocks(t, &g, &input, &packed, &mut got, (-1e9, 1e9), grid, threads, epilogue).unwrap();
                    assert_eq!(got, want, "{} {g:?} by column blocks on {threads} threads", t.name());
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
