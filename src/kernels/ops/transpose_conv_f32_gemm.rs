//! Float32 transposed convolution on the GEMM microkernels, by phases: output pixels
//! whose coordinates agree modulo the stride are reached by the same filter taps, so each
//! phase is an ordinary convolution over the input with a subset of the filter (packed
//! once per node, per phase). Every output element is written once, from the bias, with
//! no scatter and no scratch accumulator. Used by TRANSPOSE_CONV and MediaPipe's
//! Convolution2DTransposeBias for float32.
//!
//! When filter columns never overlap (`f_w <= stride_w`), each input pixel of a row feeds
//! its own run of `f_w` output pixels, so the column phases merge: one GEMM per output
//! row whose rows are the input pixels and whose `f_w * out_c` columns are that whole
//! run, written in place with a row stride of `stride_w * out_c`. When rows never
//! overlap either (e.g. a 2x2 stride-2 upsampling), all phases merge: one GEMM per input
//! row, of `f_h * f_w * out_c` columns, whose results are copied out to the `f_h` output
//! rows they reach. A few output channels then still make a GEMM of useful width (one
//! output channel by phases would be GEMMs one column wide).

use super::conv_common::{parallel_rows, threads_for};
use super::transpose_conv::TransposeGeom;
use crate::error::{Error, Result};
use crate::kernels::api::TensorView;
use crate::microkernels::f32_gemm::{self, PAD, PackedGemm, RowTaps};
use crate::microkernels::table;
use core::ops::Range;

/// One phase: the filter rows `fys` and columns `fxs` that reach its output pixels, and
/// those taps packed (`None` when no tap reaches them: the output is the bias alone).
struct Phase {
    fys: Vec<usize>,
    fxs: Vec<usize>,
    packed: Option<PackedGemm>,
}

/// One row phase of the merged-column packing: the filter rows `fys` that reach its
/// output rows, and for them all `f_w` filter columns packed as `f_w * out_c` GEMM
/// columns (column `fx * out_c + oc`); `None` when no filter row reaches them.
struct RowPhase {
    fys: Vec<usize>,
    packed: Option<PackedGemm>,
}

/// How a node's filter is packed.
enum Packing {
    /// Taps never overlap (`f_h <= stride_h`, `f_w <= stride_w`): the whole filter as
    /// `f_h * f_w * out_c` GEMM columns (column `(fy * f_w + fx) * out_c + oc`), padded
    /// with zero columns to at least a narrow tile.
    Block(PackedGemm),
    /// All `stride_h * stride_w` phases, row-major by (output row, column) phase.
    Pixel(Vec<Phase>),
    /// The `stride_h` row phases, columns merged (only when `f_w <= stride_w`).
    Row(Vec<RowPhase>),
}

/// A node's packed filter and its bias.
pub struct Phases {
    packing: Packing,
    bias: Vec<f32>,
}

fn build(g: &TransposeGeom, weights: &[f32], bias: Option<&[f32]>) -> Result<Phases> {
    let want = [g.out_c, g.f_h, g.f_w, g.in_c].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if want != Some(weights.len()) {
        return Err(Error::new(format!("weights hold {} values, the geometry needs {want:?}", weights.len())));
    }
    let bias = match bias {
        Some(b) if b.len() == g.out_c => b.to_vec(),
        Some(b) => {
            return Err(Error::new(format!("bias holds {} values for {} channels", b.len(), g.out_c)));
        }
        None => vec![0.0; g.out_c],
    };
    let kernels = &table().f32_gemm;
    if g.f_h <= g.stride_h && g.f_w <= g.stride_w {
        return build_blocks(g, weights, bias);
    }
    if g.f_w <= g.stride_w {
        return build_rows(g, weights, bias);
    }
    let mut phases = Vec::with_capacity(g.stride_h * g.stride_w);
    for py in 0..g.stride_h {
        for px in 0..g.stride_w {
            // Tap fy reaches output row oy when oy + pad - fy is a multiple of the stride.
            let fys = row_taps(g, py);
            let fxs: Vec<usize> = (0..g.f_w)
                .filter(|fx| (fx + g.stride_w - (px + g.pad_w) % g.stride_w).is_multiple_of(g.stride_w))
                .collect();
            let ks = fys.len() * fxs.len();
            let packed = if ks == 0 {
                None
            } else {
                let w = |o: usize, t: usize, k: usize| {
                    let (fy, fx) = (fys[t / fxs.len()], fxs[t % fxs.len()]);
                    weights[((o * g.f_h + fy) * g.f_w + fx) * g.in_c + k]
                };
                Some(f32_gemm::pack(kernels, g.out_c, ks, g.in_c, w, Some(&bias))?)
            };
            phases.push(Phase { fys, fxs, packed });
        }
    }
    Ok(Phases { packing: Packing::Pixel(phases), bias })
}

/// The filter rows that reach output rows of row phase `py` (`oy % stride_h == py`): tap
/// `fy` reaches output row `oy` when `oy + pad - fy` is a multiple of the stride.
fn row_taps(g: &TransposeGeom, py: usize) -> Vec<usize> {
    (0..g.f_h).filter(|fy| (fy + g.stride_h - (py + g.pad_h) % g.stride_h).is_multiple_of(g.stride_h)).collect()
}

/// The merged-column packing (`f_w <= stride_w`, checked by the caller).
fn build_rows(g: &TransposeGeom, weights: &[f32], bias: Vec<f32>) -> Result<Phases> {
    let kernels = &table().f32_gemm;
    let n = g.f_w * g.out_c;
    // Fewer columns than a narrow tile are packed as a whole tile (zero weights past
    // `n`): the kernels then store whole vectors, into a scratch row (see `merged_row`).
    let cols = n.max(kernels.narrow.nr);
    // Column `fx * out_c + oc` carries output channel `oc`'s bias.
    let tiled: Vec<f32> = (0..cols).map(|j| if j < n { bias[j % g.out_c] } else { 0.0 }).collect();
    let mut rows = Vec::with_capacity(g.stride_h);
    for py in 0..g.stride_h {
        let fys = row_taps(g, py);
        let packed = if fys.is_empty() {
            None
        } else {
            let w = |j: usize, t: usize, k: usize| {
                let (fx, o) = (j / g.out_c, j % g.out_c);
                if j < n { weights[((o * g.f_h + fys[t]) * g.f_w + fx) * g.in_c + k] } else { 0.0 }
            };
            Some(f32_gemm::pack(kernels, cols, fys.len(), g.in_c, w, Some(&tiled))?)
        };
        rows.push(RowPhase { fys, packed });
    }
    Ok(Phases { packing: Packing::Row(rows), bias })
}

/// The block packing (`f_h <= stride_h`, `f_w <= stride_w`, checked by the caller).
fn build_blocks(g: &TransposeGeom, weights: &[f32], bias: Vec<f32>) -> Result<Phases> {
    let kernels = &table().f32_gemm;
    let n = g.f_h * g.f_w * g.out_c;
    let cols = n.max(kernels.narrow.nr);
    let tiled: Vec<f32> = (0..cols).map(|j| if j < n { bias[j % g.out_c] } else { 0.0 }).collect();
    let w = |j: usize, _t: usize, k: usize| {
        let (tap, o) = (j / g.out_c, j % g.out_c);
        if j < n { weights[((o * g.f_h + tap / g.f_w) * g.f_w + tap % g.f_w) * g.in_c + k] } else { 0.0 }
    };
    let packed = f32_gemm::pack(kernels, cols, 1, g.in_c, w, Some(&tiled))?;
    Ok(Phases { packing: Packing::Block(packed), bias })
}

/// The output pixels `ox = px + j * stride_w` of output row `oy` (batch `b`) of one phase,
/// as GEMM rows `j`.
struct PhaseRow<'a> {
    g: &'a TransposeGeom,
    phase: &'a Phase,
    b: usize,
    oy: usize,
    px: usize,
}

impl RowTaps for PhaseRow<'_> {
    fn taps_per_row(&self) -> usize {
        self.phase.fys.len() * self.phase.fxs.len()
    }

    fn fill(&self, rows: Range<usize>, offsets: &mut [usize]) {
        let g = self.g;
        let ks = self.taps_per_row();
        for (j, row) in rows.zip(offsets.chunks_exact_mut(ks)) {
            let ox = self.px + j * g.stride_w;
            let mut t = 0;
            for &fy in &self.phase.fys {
                // In this phase oy + pad - fy is a multiple of the stride (or negative).
                let ty = (self.oy + g.pad_h) as isize - fy as isize;
                let iy = ty / g.stride_h as isize;
                let y_ok = ty >= 0 && (iy as usize) < g.in_h;
                for &fx in &self.phase.fxs {
                    let tx = (ox + g.pad_w) as isize - fx as isize;
                    let ix = tx / g.stride_w as isize;
                    row[t] = if y_ok && tx >= 0 && (ix as usize) < g.in_w {
                        ((self.b * g.in_h + iy as usize) * g.in_w + ix as usize) * g.in_c
                    } else {
                        PAD
                    };
                    t += 1;
                }
            }
        }
    }
}

/// The input pixels `ix` of the input rows under output row `oy` (batch `b`) as GEMM rows
/// `ix`, one tap per filter row of the row phase (merged-column packing).
struct MergedRow<'a> {
    g: &'a TransposeGeom,
    fys: &'a [usize],
    b: usize,
    oy: usize,
}

impl RowTaps for MergedRow<'_> {
    fn taps_per_row(&self) -> usize {
        self.fys.len()
    }

    fn fill(&self, rows: Range<usize>, offsets: &mut [usize]) {
        let g = self.g;
        let ks = self.fys.len();
        for (ix, row) in rows.zip(offsets.chunks_exact_mut(ks)) {
            for (&fy, o) in self.fys.iter().zip(row.iter_mut()) {
                // In this row phase oy + pad - fy is a multiple of the stride (or negative).
                let ty = (self.oy + g.pad_h) as isize - fy as isize;
                let iy = ty / g.stride_h as isize;
                *o = if ty >= 0 && (iy as usize) < g.in_h && ix < g.in_w {
                    ((self.b * g.in_h + iy as usize) * g.in_w + ix) * g.in_c
                } else {
                    PAD
                };
            }
        }
    }

    fn linear_run(&self, r: usize, limit: usize, offsets: &mut [usize]) -> Option<(usize, usize)> {
        // Consecutive input pixels of one row are `in_c` apart; the callers' rows stay
        // inside the input row.
        if r.checked_add(limit)? > self.g.in_w {
            return None;
        }
        self.fill(r..r + 1, offsets);
        Some((limit, self.g.in_c))
    }
}

/// The pixels of input row `iy` (batch `b`) as GEMM rows `ix`, one tap each (block
/// packing).
struct InputRow<'a> {
    g: &'a TransposeGeom,
    b: usize,
    iy: usize,
}

impl RowTaps for InputRow<'_> {
    fn taps_per_row(&self) -> usize {
        1
    }

    fn fill(&self, rows: Range<usize>, offsets: &mut [usize]) {
        let g = self.g;
        for (ix, o) in rows.zip(offsets.iter_mut()) {
            *o = if ix < g.in_w { ((self.b * g.in_h + self.iy) * g.in_w + ix) * g.in_c } else { PAD };
        }
    }

    fn linear_run(&self, r: usize, limit: usize, offsets: &mut [usize]) -> Option<(usize, usize)> {
        if r.checked_add(limit)? > self.g.in_w {
            return None;
        }
        self.fill(r..r + 1, offsets);
        Some((limit, self.g.in_c))
    }
}

/// Output rows `first..` (`chunk`, whole rows) of the block packing: each input row's
/// GEMM (all its pixels, every tap) once into `scratch`, then each output row it reaches
/// copies its filter row's runs out.
#[allow(clippy::too_many_arguments)]
fn block_rows(
    g: &TransposeGeom,
    packed: &PackedGemm,
    bias: &[f32],
    input: &[f32],
    first: usize,
    chunk: &mut [f32],
    scratch: &mut [f32],
    act: (f32, f32),
) -> Result<()> {
    let (sh, sw) = (g.stride_h, g.stride_w);
    let run = g.f_w * g.out_c;
    let wide = packed.n;
    let row_len = g.out_w * g.out_c;
    // Every output pixel lies in exactly one input pixel's block only when the blocks
    // tile the output; otherwise the pixels outside every block start from the bias.
    let tiled = g.f_h == sh && g.f_w == sw && g.out_h + g.pad_h <= g.in_h * sh && g.out_w + g.pad_w <= g.in_w * sw;
    if !tiled {
        for px in chunk.chunks_exact_mut(g.out_c) {
            for (v, &bv) in px.iter_mut().zip(bias) {
                *v = bv.max(act.0).min(act.1);
            }
        }
    }
    let t = table();
    // Input pixel ix feeds output pixels ix * sw - pad .. + f_w; the runs lying wholly
    // inside the row are `whole`.
    let pad = g.pad_w;
    let lo = pad.div_ceil(sw).min(g.in_w);
    let hi = if g.out_w + pad >= g.f_w { ((g.out_w + pad - g.f_w) / sw + 1).min(g.in_w) } else { 0 };
    let whole = lo..hi.max(lo);
    let scratch = &mut scratch[..g.in_w * wide];
    let mut done: Option<(usize, usize)> = None;
    for (r, orow) in chunk.chunks_mut(row_len).enumerate() {
        let (b, oy) = ((first + r) / g.out_h, (first + r) % g.out_h);
        let (iy, fy) = ((oy + g.pad_h) / sh, (oy + g.pad_h) % sh);
        if fy >= g.f_h || iy >= g.in_h {
            continue;
        }
        if done != Some((b, iy)) {
            let taps = InputRow { g, b, iy };
            f32_gemm::igemm(t, packed, input, &taps, 0..g.in_w, 0..wide, scratch, wide, act)?;
            done = Some((b, iy));
        }
        let at = fy * run;
        if !whole.is_empty() {
            let dst = &mut orow[(whole.start * sw - pad) * g.out_c..];
            copy_runs(&scratch[whole.start * wide + at..], wide, whole.len(), dst, sw * g.out_c, run);
        }
        // Runs cut by the row's ends: their inside pixels.
        for ix in (0..whole.start).chain(whole.end..g.in_w) {
            let start = (ix * sw) as isize - pad as isize;
            if start >= g.out_w as isize {
                break;
            }
            let src = &scratch[ix * wide + at..][..run];
            for (fx, px) in src.chunks_exact(g.out_c).enumerate() {
                let ox = start + fx as isize;
                if ox >= 0 && (ox as usize) < g.out_w {
                    orow[ox as usize * g.out_c..][..g.out_c].copy_from_slice(px);
                }
            }
        }
    }
    Ok(())
}

/// Copies the first `n` values of `rows` rows of `src`, `width` apart, to `dst` rows
/// `stride` apart (fewer when either runs out). Runs of a few values are copied as
/// fixed-size arrays: a `memcpy` call per run would cost more than the copy.
fn copy_runs(src: &[f32], width: usize, rows: usize, dst: &mut [f32], stride: usize, n: usize) {
    fn fixed<const N: usize>(src: &[f32], width: usize, rows: usize, dst: &mut [f32], stride: usize) {
        for (s, d) in src.chunks(width).take(rows).zip(dst.chunks_mut(stride)) {
            if let (Some(s), Some(d)) = (s.first_chunk::<N>(), d.first_chunk_mut::<N>()) {
                *d = *s;
            }
        }
    }
    match n {
        1 => fixed::<1>(src, width, rows, dst, stride),
        2 => fixed::<2>(src, width, rows, dst, stride),
        3 => fixed::<3>(src, width, rows, dst, stride),
        4 => fixed::<4>(src, width, rows, dst, stride),
        _ => {
            for (s, d) in src.chunks(width).take(rows).zip(dst.chunks_mut(stride)) {
                let m = n.min(d.len()).min(s.len());
                d[..m].copy_from_slice(&s[..m]);
            }
        }
    }
}

/// One output row `orow` (batch `b`, row `oy`) of the merged-column packing; `scratch`
/// holds `in_w` rows of the packed width.
#[allow(clippy::too_many_arguments)]
fn merged_row(
    g: &TransposeGeom,
    rp: &RowPhase,
    bias: &[f32],
    input: &[f32],
    b: usize,
    oy: usize,
    orow: &mut [f32],
    scratch: &mut [f32],
    act: (f32, f32),
) -> Result<()> {
    let fill_bias = |o: &mut [f32]| {
        for px in o.chunks_exact_mut(g.out_c) {
            for (v, &bv) in px.iter_mut().zip(bias) {
                *v = bv.max(act.0).min(act.1);
            }
        }
    };
    let Some(packed) = &rp.packed else {
        fill_bias(orow);
        return Ok(());
    };
    let (sw, fw, pad) = (g.stride_w, g.f_w, g.pad_w);
    let n = fw * g.out_c;
    let t = table();
    let taps = MergedRow { g, fys: &rp.fys, b, oy };
    // Input pixel ix feeds output pixels ix * sw - pad .. + fw; the runs lying wholly
    // inside the row are `whole`.
    let lo = pad.div_ceil(sw).min(g.in_w);
    let hi = if g.out_w + pad >= fw { ((g.out_w + pad - fw) / sw + 1).min(g.in_w) } else { 0 };
    let whole = lo..hi.max(lo);
    // Pixels no whole run writes (gaps between runs, the row's ends) start from the bias.
    if fw < sw || whole.len() * fw != g.out_w {
        fill_bias(orow);
    }
    if !whole.is_empty() {
        let dst = &mut orow[(whole.start * sw - pad) * g.out_c..];
        if packed.n == n {
            f32_gemm::igemm(t, packed, input, &taps, whole.clone(), 0..n, dst, sw * g.out_c, act)?;
        } else {
            // Padded columns: whole tiles into the scratch, then the `n` real ones out.
            let wide = packed.n;
            let tmp = &mut scratch[..whole.len() * wide];
            f32_gemm::igemm(t, packed, input, &taps, whole.clone(), 0..wide, tmp, wide, act)?;
            copy_runs(tmp, wide, whole.len(), dst, sw * g.out_c, n);
        }
    }
    // Runs cut by the row's ends: computed aside, their inside pixels copied.
    for ix in (0..whole.start).chain(whole.end..g.in_w) {
        let start = (ix * sw) as isize - pad as isize;
        if start >= g.out_w as isize {
            break;
        }
        if start + fw as isize <= 0 {
            continue;
        }
        let run = &mut scratch[..packed.n];
        f32_gemm::igemm(t, packed, input, &taps, ix..ix + 1, 0..packed.n, run, packed.n, act)?;
        for (fx, px) in run[..n].chunks_exact(g.out_c).enumerate() {
            let ox = start + fx as isize;
            if ox >= 0 && (ox as usize) < g.out_w {
                orow[ox as usize * g.out_c..][..g.out_c].copy_from_slice(px);
            }
        }
    }
    Ok(())
}

/// Packs `weights` and `bias` for `g` (for [`compute`]).
pub fn pack(g: &TransposeGeom, weights: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> Result<Phases> {
    let bias_data = bias.map(|b| b.data::<f32>()).transpose()?;
    build(g, weights.data::<f32>()?, bias_data)
}

/// Runs the transposed convolution on weights packed by [`pack`] for `g`: `act` clamps
/// every output (the bias is in the packing).
pub fn compute(
    p: &Phases,
    g: &TransposeGeom,
    input: &[f32],
    out: &mut [f32],
    act: (f32, f32),
    max_threads: usize,
) -> Result<()> {
    let want_out = [g.batches, g.out_h, g.out_w, g.out_c].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if want_out != Some(out.len()) {
        return Err(Error::new(format!("output holds {} values, the geometry needs {want_out:?}", out.len())));
    }
    let want_in = [g.batches, g.in_h, g.in_w, g.in_c].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if want_in != Some(input.len()) {
        return Err(Error::new(format!("input holds {} values, the geometry needs {want_in:?}", input.len())));
    }
    if out.is_empty() {
        return Ok(());
    }
    run_phases(p, g, input, out, act, max_threads)
}

/// Runs the transposed convolution on packed phases.
fn run_phases(
    p: &Phases,
    g: &TransposeGeom,
    input: &[f32],
    out: &mut [f32],
    act: (f32, f32),
    max_threads: usize,
) -> Result<()> {
    let want_out = [g.batches, g.out_h, g.out_w, g.out_c].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let phases_ok = match &p.packing {
        Packing::Pixel(ph) => ph.len() == g.stride_h * g.stride_w,
        Packing::Row(rows) => rows.len() == g.stride_h && g.f_w <= g.stride_w,
        Packing::Block(packed) => g.f_h <= g.stride_h && g.f_w <= g.stride_w && packed.n >= g.f_h * g.f_w * g.out_c,
    };
    if want_out != Some(out.len()) || !phases_ok || p.bias.len() != g.out_c {
        return Err(Error::new(format!("output holds {} values, the geometry needs {want_out:?}", out.len())));
    }
    let t = table();
    let row_len = g.out_w * g.out_c;
    let work =
        [g.batches, g.in_h, g.in_w, g.in_c, g.f_h, g.f_w, g.out_c].iter().fold(1usize, |a, &d| a.saturating_mul(d));
    let threads = threads_for(max_threads, work, g.batches * g.out_h);
    let phases = match &p.packing {
        Packing::Pixel(ph) => ph,
        Packing::Block(packed) => {
            return parallel_rows(threads, out, row_len, &|first, chunk: &mut [f32]| {
                let mut scratch = vec![0f32; g.in_w * packed.n];
                block_rows(g, packed, &p.bias, input, first, chunk, &mut scratch, act)
            });
        }
        Packing::Row(rows) => {
            return parallel_rows(threads, out, row_len, &|first, chunk: &mut [f32]| {
                // Padded packings take whole rows through the scratch, others only the
                // runs cut by the row's ends.
                let packings = rows.iter().filter_map(|r| r.packed.as_ref());
                let width = packings.clone().map(|p| p.n).max().unwrap_or(0);
                let padded = packings.clone().any(|p| p.n != g.f_w * g.out_c);
                let mut scratch = vec![0f32; if padded { width * g.in_w.max(1) } else { width }];
                for (r, orow) in chunk.chunks_mut(row_len).enumerate() {
                    let row = first + r;
                    let (b, oy) = (row / g.out_h, row % g.out_h);
                    merged_row(g, &rows[oy % g.stride_h], &p.bias, input, b, oy, orow, &mut scratch, act)?;
                }
                Ok(())
            });
        }
    };
    parallel_rows(threads, out, row_len, &|first, chunk: &mut [f32]| {
        for (r, orow) in chunk.chunks_mut(row_len).enumerate() {
            let row = first + r;
            let (b, oy) = (row / g.out_h, row % g.out_h);
            for px in 0..g.stride_w.min(g.out_w) {
                let phase = &phases[(oy % g.stride_h) * g.stride_w + px];
                let count = (g.out_w - px).div_ceil(g.stride_w);
                let dst = &mut orow[px * g.out_c..];
                match &phase.packed {
                    Some(packed) => {
                        let taps = PhaseRow { g, phase, b, oy, px };
                        f32_gemm::igemm(t, packed, input, &taps, 0..count, 0..g.out_c, dst, g.stride_w * g.out_c, act)?;
                    }
                    None => {
                        for j in 0..count {
                            let o = &mut dst[j * g.stride_w * g.out_c..][..g.out_c];
                            for (v, &bv) in o.iter_mut().zip(&p.bias) {
                                *v = bv.max(act.0).min(act.1);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::ops::transpose_conv::{FloatOps, transpose_conv_reference};

    #[test]
    fn phases_match_the_reference_scatter() {
        let mut seed = 0x2545f4914f6cdd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut cases = 0;
        for _ in 0..600 {
            let f_h = 1 + (next() % 5) as usize;
            let f_w = 1 + (next() % 5) as usize;
            let stride_h = 1 + (next() % 3) as usize;
            let stride_w = 1 + (next() % 3) as usize;
            let in_h = 1 + (next() % 6) as usize;
            let in_w = 1 + (next() % 6) as usize;
            let full_h = (in_h - 1) * stride_h + f_h;
            let full_w = (in_w - 1) * stride_w + f_w;
            let pad_h = (next() % f_h as u64) as usize;
            let pad_w = (next() % f_w as u64) as usize;
            let out_h = full_h.saturating_sub(pad_h + (next() % 2) as usize).max(1);
            let out_w = full_w.saturating_sub(pad_w + (next() % 2) as usize).max(1);
            let g = TransposeGeom {
                batches: 1 + (next() % 2) as usize,
                in_h,
                in_w,
                in_c: [1, 3, 8, 17][(next() % 4) as usize],
                out_h,
                out_w,
                out_c: [1, 2, 9, 16, 20][(next() % 5) as usize],
                f_h,
                f_w,
                stride_h,
                stride_w,
                pad_h,
                pad_w,
            };
            let val = |v: u64| (v % 2001) as f32 / 1000.0 - 1.0;
            let input: Vec<f32> = (0..g.batches * in_h * in_w * g.in_c).map(|_| val(next())).collect();
            let weights: Vec<f32> = (0..g.out_c * f_h * f_w * g.in_c).map(|_| val(next())).collect();
            let bias: Vec<f32> = (0..g.out_c).map(|_| val(next())).collect();
            let act = (-2.5, 2.0);
            let ops = FloatOps { bias: Some(&bias), bias_first: false, act };
            let mut want = vec![0f32; g.batches * out_h * out_w * g.out_c];
            transpose_conv_reference(&g, &ops, &input, &weights, &mut want).unwrap();
            let phases = build(&g, &weights, Some(&bias)).unwrap();
            for threads in [1, 2] {
                let mut got = vec![f32::NAN; want.len()];
                run_phases(&phases, &g, &input, &mut got, act, threads).unwrap();
                for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                    assert!((a - b).abs() <= 1e-4, "{g:?}: element {i}: {a} vs {b}");
                }
            }
            cases += 1;
        }
        assert_eq!(cases, 600);
    }
}
