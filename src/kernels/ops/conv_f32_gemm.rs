//! Float32 convolution on the GEMM microkernels: the filter packed once per node into the
//! microkernels' layout (at Prepare for constant filters, kept in the node's state), every output pixel a GEMM row
//! whose taps point straight into the NHWC input (no im2col), rows split over threads.
//! Used by CONV_2D for ungrouped float convolutions; the fused activation is the
//! microkernels' clamp.

use super::conv_common::{ConvGeom, parallel_rows, threads_for};
use crate::error::{Error, Result};
use crate::kernels::api::TensorView;
use crate::kernels::threadpool::parallel_for;
use crate::microkernels::f32_gemm::{self, DenseRows, PackedGemm};
use crate::microkernels::{Table, cores_far_apart, table};
use core::ops::Range;
use parking_lot::Mutex;

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
///
/// Rows split over threads, each thread a contiguous run of output pixels, so that each
/// thread mostly reads the pixels it wrote in the op before. Where the weights outweigh
/// the input (the small late layers of a network and fully connected layers, mostly
/// reading weights) and that split is uneven to a tile, the tiles split in column-block
/// order instead, each thread a contiguous run of output-channel blocks over all rows:
/// each thread then reads only its share of the weights, and the split is even to a
/// tile. (A 7x7 layer's 49 rows make 7 row tiles of 7: split by rows over 2 threads,
/// one thread gets 4 against an even 3.5.) Only one output row always splits so; other
/// layers only while the threads run on nearby cores: on distant ones, reading the
/// channels the other core wrote costs more than the even split saves.
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
    let weights = (packed.ks * packed.kc).saturating_mul(n);
    let grid = tile_grid(t, g, packed, rows);
    let threads = threads_for(max_threads, work, grid.tiles());
    let by_blocks = threads > 1
        && weights > input.len()
        && (rows == 1 || (!cores_far_apart() && uneven_by_rows(rows, threads, grid.mr)));
    if by_blocks {
        return compute_by_blocks(t, g, input, packed, out, act, grid, threads);
    }
    let threads = threads_for(max_threads, work, rows);
    parallel_rows(threads, out, n, &|first, chunk: &mut [f32]| {
        compute_rows(t, g, input, packed, first..first + chunk.len() / n, chunk, act)
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
) -> Result<()> {
    let n = g.out_c;
    if grid.rows * n != out.len() {
        return Err(Error::new(format!("output has {} values, the tiles cover {}", out.len(), grid.rows * n)));
    }
    let out = f32_gemm::SharedOut::new(out);
    let first_error = Mutex::new(None);
    let first_error = &first_error;
    parallel_for(threads, threads, &move |i| {
        let tiles = grid.tiles();
        for (rs, cs) in grid.pieces(tiles * i / threads..tiles * (i + 1) / threads) {
            let offset = rs.start * n + cs.start;
            // SAFETY: each task writes the tiles of its own range of the grid, and the
            // ranges of the tasks are disjoint, so no other thread touches the elements
            // of rows `rs`, columns `cs` while this call runs.
            let r = unsafe { gemm_shared(t, g, input, packed, rs, cs, out, offset, act) };
            if let Err(e) = r {
                first_error.lock().get_or_insert(e);
                return;
            }
        }
    })?;
    match first_error.lock().take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Whether `rows` rows split by rows over `threads` threads waste more than a twentieth
/// of the slowest thread's tiles of `mr` rows.
fn uneven_by_rows(rows: usize, threads: usize, mr: usize) -> bool {
    let slowest = rows.div_ceil(threads).div_ceil(mr) * mr;
    20 * rows < 19 * threads * slowest
}

/// The output's tiles: `mr` rows by `nr` columns (the last of each partial), numbered
/// in column-block order (all row tiles of block 0, then of block 1, ...).
#[derive(Clone, Copy)]
struct TileGrid {
    rows: usize,
    cols: usize,
    mr: usize,
    nr: usize,
}

impl TileGrid {
    fn row_tiles(&self) -> usize {
        self.rows.div_ceil(self.mr)
    }

    fn tiles(&self) -> usize {
        self.row_tiles() * self.cols.div_ceil(self.nr)
    }

    /// Tiles `range` as rectangles (rows, columns): whole blocks merged into one.
    fn pieces(&self, range: Range<usize>) -> Vec<(Range<usize>, Range<usize>)> {
        let (m, mut q, end) = (self.row_tiles(), range.start, range.end.min(self.tiles()));
        let mut pieces = Vec::new();
        while q < end {
            let (block, first) = (q / m, q % m);
            if first == 0 && end - q >= m {
                let blocks = (end - q) / m;
                pieces.push((0..self.rows, block * self.nr..((block + blocks) * self.nr).min(self.cols)));
                q += blocks * m;
            } else {
                let last = (first + end - q).min(m);
                pieces.push((
                    first * self.mr..(last * self.mr).min(self.rows),
                    block * self.nr..((block + 1) * self.nr).min(self.cols),
                ));
                q += last - first;
            }
        }
        pieces
    }
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
    let out = f32_gemm::SharedOut::new(out);
    // SAFETY: `out` borrows the caller's slice mutably for this call.
    unsafe { gemm_shared(t, g, input, packed, rows, cols, out, 0, act) }
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
    out: f32_gemm::SharedOut<'_>,
    offset: usize,
    act: (f32, f32),
) -> Result<()> {
    let n = g.out_c;
    // SAFETY: the caller's contract, passed on.
    unsafe {
        if g.is_dense() {
            f32_gemm::igemm_shared(t, packed, input, &DenseRows { stride: g.in_c }, rows, cols, out, offset, n, act)
        } else {
            f32_gemm::igemm_shared(t, packed, input, &g.gemm_rows(g.in_c), rows, cols, out, offset, n, act)
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
                    compute_by_blocks(t, &g, &input, &packed, &mut got, (-0.5, 1.5), grid, threads).unwrap();
                    check(&got, &format!("by column blocks on {threads} threads"));
                }
            }
        }
    }

    #[test]
    fn tile_ranges_cover_each_tile_once() {
        for (rows, cols, mr, nr) in [(49, 96, 7, 32), (1, 1000, 7, 32), (13, 40, 5, 16), (100, 7, 8, 8), (6, 64, 7, 32)]
        {
            let grid = TileGrid { rows, cols, mr, nr };
            for threads in 1..=5 {
                let mut hits = vec![0u8; rows * cols];
                let tiles = grid.tiles();
                for i in 0..threads {
                    for (rs, cs) in grid.pieces(tiles * i / threads..tiles * (i + 1) / threads) {
                        assert!(!rs.is_empty() && !cs.is_empty() && cs.start % nr == 0);
                        for r in rs {
                            cs.clone().for_each(|c| hits[r * cols + c] += 1);
                        }
                    }
                }
                assert!(hits.iter().all(|&h| h == 1), "{rows}x{cols} in {mr}x{nr} tiles on {threads} threads");
            }
        }
    }

    #[test]
    fn uneven_row_splits_are_found() {
        // 49 rows in tiles of 7 on 2 threads: 4 tiles against 3.5.
        assert!(uneven_by_rows(49, 2, 7));
        // 196 rows: 14 tiles each.
        assert!(!uneven_by_rows(196, 2, 7));
        assert!(uneven_by_rows(1, 2, 7));
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
