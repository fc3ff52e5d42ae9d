//! Float32 convolution on the GEMM microkernels: the filter packed once per node into the
//! microkernels' layout (at Prepare for constant filters), every output pixel a GEMM row
//! whose taps point straight into the NHWC input (no im2col), rows split over threads.
//! Used by CONV_2D for ungrouped float convolutions; the fused activation is the
//! microkernels' clamp.

use super::conv_common::{ConvGeom, NodeState, threads_for, parallel_rows};
use crate::error::{Error, Result};
use crate::kernels::api::TensorView;
use crate::microkernels::f32_gemm::{self, ConvRows, DenseRows, PackedGemm};
use crate::microkernels::{Table, table};
use parking_lot::Mutex;

/// A node's packed filter, with what it was packed from.
#[derive(Default)]
pub struct GemmCache {
    slot: Mutex<Option<(PackKey, std::sync::Arc<PackedGemm>)>>,
}

/// Identifies the constant data a packing was made from (location, size) and the
/// geometry it was packed for.
type PackKey = (usize, usize, usize, usize, usize, usize);

fn key(filter: &TensorView<'_>, bias: Option<&TensorView<'_>>, g: &ConvGeom) -> Result<PackKey> {
    let f = filter.raw()?;
    let b = match bias {
        Some(b) => b.raw()?.as_ptr() as usize,
        None => 0,
    };
    Ok((f.as_ptr() as usize, f.len(), b, g.out_c, g.f_h * g.f_w, g.in_c))
}

/// Packs `filter` (OHWI) and `bias` for `table`'s GEMM kernels.
fn pack(table: &Table, g: &ConvGeom, filter: &[f32], bias: Option<&[f32]>) -> Result<PackedGemm> {
    let ks = g.f_h * g.f_w;
    let kc = g.in_c;
    let want = g.out_c.checked_mul(ks).and_then(|v| v.checked_mul(kc));
    if want != Some(filter.len()) {
        return Err(Error::new(format!("filter has {} values, the geometry needs {want:?}", filter.len())));
    }
    f32_gemm::pack(&table.f32_gemm, g.out_c, ks, kc, |o, t, k| filter[(o * ks + t) * kc + k], bias)
}

/// True if filter and bias keep their values from one Invoke to the next (so the packing
/// can be kept; for model constants it is made at Prepare).
fn stable_weights(filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> bool {
    filter.is_stable_across_runs() && bias.is_none_or(|b| b.is_stable_across_runs())
}

/// True if filter and bias are model constants, whose data is there at Prepare.
fn constant_weights(filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> bool {
    filter.is_constant() && bias.is_none_or(|b| b.is_constant())
}

/// Packs a constant filter ahead of the first Invoke (called from Prepare).
pub fn prepare(state: Option<&NodeState>, g: &ConvGeom, filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> Result<()> {
    let Some(state) = state else { return Ok(()) };
    if !constant_weights(filter, bias) {
        return Ok(());
    }
    cached(&state.gemm, g, filter, bias).map(|_| ())
}

fn cached(cache: &GemmCache, g: &ConvGeom, filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> Result<std::sync::Arc<PackedGemm>> {
    let k = key(filter, bias, g)?;
    let mut slot = cache.slot.lock();
    if let Some((have, p)) = slot.as_ref() {
        if *have == k {
            return Ok(p.clone());
        }
    }
    let b = bias.map(|b| b.data::<f32>()).transpose()?;
    let p = std::sync::Arc::new(pack(table(), g, filter.data::<f32>()?, b)?);
    *slot = Some((k, p.clone()));
    Ok(p)
}

/// Runs the convolution.
#[allow(clippy::too_many_arguments)]
pub fn run(
    state: Option<&NodeState>,
    g: &ConvGeom,
    input: &[f32],
    filter: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
    out: &mut [f32],
    act: (f32, f32),
    max_threads: usize,
) -> Result<()> {
    let packed = match state {
        Some(s) if stable_weights(filter, bias) => cached(&s.gemm, g, filter, bias)?,
        _ => {
            let b = bias.map(|b| b.data::<f32>()).transpose()?;
            std::sync::Arc::new(pack(table(), g, filter.data::<f32>()?, b)?)
        }
    };
    let rows = g.batches * g.out_h * g.out_w;
    let n = g.out_c;
    if out.len() != rows * n {
        return Err(Error::new(format!("output has {} values, the geometry needs {}", out.len(), rows * n)));
    }
    let work = rows.saturating_mul(n).saturating_mul(packed.ks * packed.kc);
    let threads = threads_for(max_threads, work, rows);
    let dense = g.f_h == 1
        && g.f_w == 1
        && g.stride_h == 1
        && g.stride_w == 1
        && g.pad_h == 0
        && g.pad_w == 0
        && g.in_h == g.out_h
        && g.in_w == g.out_w;
    let t = table();
    let conv_rows = ConvRows {
        in_h: g.in_h,
        in_w: g.in_w,
        in_c: g.in_c,
        out_h: g.out_h,
        out_w: g.out_w,
        f_h: g.f_h,
        f_w: g.f_w,
        stride_h: g.stride_h,
        stride_w: g.stride_w,
        dil_h: g.dil_h,
        dil_w: g.dil_w,
        pad_h: g.pad_h,
        pad_w: g.pad_w,
    };
    parallel_rows(threads, out, n, &|first, chunk: &mut [f32]| {
        let r = first..first + chunk.len() / n;
        if dense {
            f32_gemm::igemm(t, &packed, input, &DenseRows { stride: g.in_c }, r, 0..n, chunk, n, act)
        } else {
            f32_gemm::igemm(t, &packed, input, &conv_rows, r, 0..n, chunk, n, act)
        }
    })
}
