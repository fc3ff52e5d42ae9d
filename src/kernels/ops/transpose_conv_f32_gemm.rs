//! Float32 transposed convolution on the GEMM microkernels, by phases: output pixels
//! whose coordinates agree modulo the stride are reached by the same filter taps, so each
//! phase is an ordinary convolution over the input with a subset of the filter (packed
//! once per node, per phase). Every output element is written once, from the bias, with
//! no scatter and no scratch accumulator. Used by TRANSPOSE_CONV and MediaPipe's
//! Convolution2DTransposeBias for float32.

use super::conv_common::{parallel_rows, threads_for, weights_stable};
use super::transpose_conv::TransposeGeom;
use crate::error::{Error, Result};
use crate::kernels::api::TensorView;
use crate::microkernels::f32_gemm::{self, PAD, PackedGemm, RowTaps};
use crate::microkernels::table;
use core::ops::Range;
use parking_lot::Mutex;
use std::sync::Arc;

/// One phase: the filter rows `fys` and columns `fxs` that reach its output pixels, and
/// those taps packed (`None` when no tap reaches them: the output is the bias alone).
struct Phase {
    fys: Vec<usize>,
    fxs: Vec<usize>,
    packed: Option<PackedGemm>,
}

/// All `stride_h * stride_w` phases of a node, row-major by (output row, column) phase.
pub struct Phases {
    phases: Vec<Phase>,
    bias: Vec<f32>,
}

/// A node's packed phases, with what they were packed from.
#[derive(Default)]
pub struct TransposeGemmCache {
    slot: Mutex<Option<(Key, Arc<Phases>)>>,
}

type Key = (usize, usize, usize, usize, TransposeGeom);

fn build(g: &TransposeGeom, weights: &[f32], bias: Option<&[f32]>) -> Result<Phases> {
    let want = [g.out_c, g.f_h, g.f_w, g.in_c].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if want != Some(weights.len()) {
        return Err(Error::new(format!("weights hold {} values, the geometry needs {want:?}", weights.len())));
    }
    let bias = match bias {
        Some(b) if b.len() == g.out_c => b.to_vec(),
        Some(b) => return Err(Error::new(format!("bias holds {} values for {} channels", b.len(), g.out_c))),
        None => vec![0.0; g.out_c],
    };
    let kernels = &table().f32_gemm;
    let mut phases = Vec::with_capacity(g.stride_h * g.stride_w);
    for py in 0..g.stride_h {
        for px in 0..g.stride_w {
            // Tap fy reaches output row oy when oy + pad - fy is a multiple of the stride.
            let fys: Vec<usize> = (0..g.f_h).filter(|fy| (fy + g.stride_h - (py + g.pad_h) % g.stride_h) % g.stride_h == 0).collect();
            let fxs: Vec<usize> = (0..g.f_w).filter(|fx| (fx + g.stride_w - (px + g.pad_w) % g.stride_w) % g.stride_w == 0).collect();
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
    Ok(Phases { phases, bias })
}

fn key(weights: &TensorView<'_>, bias: Option<&TensorView<'_>>, g: &TransposeGeom) -> Result<Key> {
    let w = weights.raw()?;
    let (bp, bl) = match bias {
        Some(b) => {
            let r = b.raw()?;
            (r.as_ptr() as usize, r.len())
        }
        None => (0, 0),
    };
    Ok((w.as_ptr() as usize, w.len(), bp, bl, *g))
}

/// The packed phases for `weights` and `bias`: from `cache` when they keep their values
/// across runs, packed anew otherwise.
fn phases(cache: Option<&TransposeGemmCache>, g: &TransposeGeom, weights: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> Result<Arc<Phases>> {
    let bias_data = bias.map(|b| b.data::<f32>()).transpose()?;
    let stable = weights_stable(weights, bias);
    let Some(cache) = cache.filter(|_| stable) else {
        return Ok(Arc::new(build(g, weights.data::<f32>()?, bias_data)?));
    };
    let k = key(weights, bias, g)?;
    let mut slot = cache.slot.lock();
    if let Some((have, p)) = slot.as_ref() {
        if *have == k {
            return Ok(p.clone());
        }
    }
    let p = Arc::new(build(g, weights.data::<f32>()?, bias_data)?);
    *slot = Some((k, p.clone()));
    Ok(p)
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

/// Runs the transposed convolution: `act` clamps every output (the bias is in the packing).
#[allow(clippy::too_many_arguments)]
pub fn run(
    cache: Option<&TransposeGemmCache>,
    g: &TransposeGeom,
    input: &[f32],
    weights: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    out: &mut [f32],
    act: (f32, f32),
    max_threads: usize,
) -> Result<()> {
    let want_out = [g.batches, g.out_h, g.out_w, g.out_c].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if want_out != Some(out.len()) {
        return Err(Error::new(format!("output holds {} values, the geometry needs {want_out:?}", out.len())));
    }
    if out.is_empty() {
        return Ok(());
    }
    let p = phases(cache, g, weights, bias)?;
    run_phases(&p, g, input, out, act, max_threads)
}

/// Runs the transposed convolution on packed phases.
fn run_phases(p: &Phases, g: &TransposeGeom, input: &[f32], out: &mut [f32], act: (f32, f32), max_threads: usize) -> Result<()> {
    let want_out = [g.batches, g.out_h, g.out_w, g.out_c].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if want_out != Some(out.len()) || p.phases.len() != g.stride_h * g.stride_w {
        return Err(Error::new(format!("output holds {} values, the geometry needs {want_out:?}", out.len())));
    }
    let t = table();
    let row_len = g.out_w * g.out_c;
    let work = [g.batches, g.in_h, g.in_w, g.in_c, g.f_h, g.f_w, g.out_c].iter().fold(1usize, |a, &d| a.saturating_mul(d));
    let threads = threads_for(max_threads, work, g.batches * g.out_h);
    parallel_rows(threads, out, row_len, &|first, chunk: &mut [f32]| {
        for (r, orow) in chunk.chunks_mut(row_len).enumerate() {
            let row = first + r;
            let (b, oy) = (row / g.out_h, row % g.out_h);
            for px in 0..g.stride_w.min(g.out_w) {
                let phase = &p.phases[(oy % g.stride_h) * g.stride_w + px];
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
        for _ in 0..300 {
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
        assert_eq!(cases, 300);
    }
}
