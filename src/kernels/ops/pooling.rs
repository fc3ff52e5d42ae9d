//! AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D (TFLite `kernels/pooling.cc`; reference
//! kernels `reference/pooling.h`, `reference/integer_ops/pooling.h`).
//!
//! AVERAGE and MAX pooling take float32, uint8, int8 and int16 (the quantized outputs use
//! the input's scale and zero point, as TFLite assumes); L2 pooling takes float32 only.
//! The window (filter size, stride, SAME / VALID padding) is clamped to the image; the
//! average divides by the number of pixels inside it (integers round half away from zero);
//! the fused activation clamps.
//!
//! [`Variant::Optimized`] walks each output pixel's window once and accumulates whole
//! channel vectors in the reference order, so its results are identical to
//! [`Variant::Reference`]'s.

use super::conv_common::{
    ConvGeom, check_len, checked_product, compute_padding_height_width, dim, parallel_rows, positive_param,
    recommended_threads, threads_for,
};
use crate::abi::builtin_op_data::TfLitePoolParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::activation::{activation_range_f32, activation_range_quantized, clamp_min_max, cpp_max};
use crate::kernels::api::OpCtx;
use crate::kernels::cancel::Cancel;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::QuantInt;
use crate::microkernels::{f32_maxpool, table};

/// Which pooling an op computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    Average,
    Max,
    L2,
}

impl PoolKind {
    const fn name(self) -> &'static str {
        match self {
            PoolKind::Average => "AVERAGE_POOL_2D",
            PoolKind::Max => "MAX_POOL_2D",
            PoolKind::L2 => "L2_POOL_2D",
        }
    }
}

/// Which implementation computes a pooling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Reference,
    Optimized,
}

/// The AVERAGE_POOL_2D registration.
pub fn average_pool_registration() -> TfLiteRegistration {
    kernel::registration::<Pool<AVERAGE>>(TfLiteBuiltinOperator::kTfLiteBuiltinAveragePool2d)
}

/// The MAX_POOL_2D registration.
pub fn max_pool_registration() -> TfLiteRegistration {
    kernel::registration::<Pool<MAX>>(TfLiteBuiltinOperator::kTfLiteBuiltinMaxPool2d)
}

/// The L2_POOL_2D registration.
pub fn l2_pool_registration() -> TfLiteRegistration {
    kernel::registration::<Pool<L2>>(TfLiteBuiltinOperator::kTfLiteBuiltinL2Pool2d)
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// The most input pixels per window that float max pooling hands to the microkernel (as
/// offsets, a row's windows at a time).
const MAX_POOL_TAPS: usize = 256;

/// The clamped window of output pixel `(oy, ox)`: filter rows and columns inside the image.
#[inline]
fn window(g: &ConvGeom, oy: usize, ox: usize) -> (core::ops::Range<usize>, core::ops::Range<usize>, isize, isize) {
    let y0 = (oy * g.stride_h) as isize - g.pad_h as isize;
    let x0 = (ox * g.stride_w) as isize - g.pad_w as isize;
    let fy = (-y0).max(0) as usize..(g.f_h as isize).min(g.in_h as isize - y0).max(0) as usize;
    let fx = (-x0).max(0) as usize..(g.f_w as isize).min(g.in_w as isize - x0).max(0) as usize;
    (fy, fx, y0, x0)
}

fn check(g: &ConvGeom, input: usize, out: usize) -> Result<()> {
    check_len("input", input, g.input_len())?;
    check_len("output", out, g.output_len())?;
    if g.in_c != g.out_c {
        return Err(Error::new("pooling keeps the channel count"));
    }
    Ok(())
}

/// Visits every output pixel: `f(output_pixel_index, b, oy, ox)`.
fn for_each_pixel(g: &ConvGeom, mut f: impl FnMut(usize, usize, usize, usize) -> Result<()>) -> Result<()> {
    let mut o = 0;
    for b in 0..g.batches {
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                f(o, b, oy, ox)?;
                o += 1;
            }
        }
    }
    Ok(())
}

fn empty_window() -> Error {
    Error::new("a pooling window lies entirely outside the input")
}

/// Float average pooling, TFLite's `reference_ops::AveragePool`.
pub fn avg_pool_f32_reference(g: &ConvGeom, input: &[f32], out: &mut [f32], act: (f32, f32)) -> Result<()> {
    check(g, input.len(), out.len())?;
    let c_n = g.in_c;
    for_each_pixel(g, |o, b, oy, ox| {
        let (fy, fx, y0, x0) = window(g, oy, ox);
        for c in 0..c_n {
            let mut total = 0.0f32;
            let mut count = 0.0f32;
            for ky in fy.clone() {
                for kx in fx.clone() {
                    let (iy, ix) = ((y0 + ky as isize) as usize, (x0 + kx as isize) as usize);
                    total += input[((b * g.in_h + iy) * g.in_w + ix) * c_n + c];
                    count += 1.0;
                }
            }
            if count == 0.0 {
                return Err(empty_window());
            }
            out[o * c_n + c] = clamp_min_max(total / count, act.0, act.1);
        }
        Ok(())
    })
}

/// Rounded integer average (half away from zero), as TFLite's integer pooling.
#[inline]
fn int_average(acc: i32, count: i32) -> i32 {
    if acc > 0 { (acc + count / 2) / count } else { (acc - count / 2) / count }
}

/// Quantized average pooling (uint8, int8, int16), TFLite's `AveragePool`: rounded
/// average of the raw values, clamped to the activation range.
pub fn avg_pool_q_reference<T: QuantInt>(g: &ConvGeom, input: &[T], out: &mut [T], act: (i32, i32)) -> Result<()> {
    check(g, input.len(), out.len())?;
    let c_n = g.in_c;
    for_each_pixel(g, |o, b, oy, ox| {
        let (fy, fx, y0, x0) = window(g, oy, ox);
        for c in 0..c_n {
            let mut acc = 0i32;
            let mut count = 0i32;
            for ky in fy.clone() {
                for kx in fx.clone() {
                    let (iy, ix) = ((y0 + ky as isize) as usize, (x0 + kx as isize) as usize);
                    acc = acc.wrapping_add(input[((b * g.in_h + iy) * g.in_w + ix) * c_n + c].to_i32());
                    count += 1;
                }
            }
            if count == 0 {
                return Err(empty_window());
            }
            out[o * c_n + c] = T::from_i32(int_average(acc, count).clamp(act.0, act.1));
        }
        Ok(())
    })
}

/// Float max pooling, TFLite's `reference_ops::MaxPool` (`std::max` from the lowest float,
/// so NaN inputs are skipped).
pub fn max_pool_f32_reference(g: &ConvGeom, input: &[f32], out: &mut [f32], act: (f32, f32)) -> Result<()> {
    check(g, input.len(), out.len())?;
    let c_n = g.in_c;
    for_each_pixel(g, |o, b, oy, ox| {
        let (fy, fx, y0, x0) = window(g, oy, ox);
        for c in 0..c_n {
            let mut max = f32::MIN;
            for ky in fy.clone() {
                for kx in fx.clone() {
                    let (iy, ix) = ((y0 + ky as isize) as usize, (x0 + kx as isize) as usize);
                    max = cpp_max(max, input[((b * g.in_h + iy) * g.in_w + ix) * c_n + c]);
                }
            }
            out[o * c_n + c] = clamp_min_max(max, act.0, act.1);
        }
        Ok(())
    })
}

/// Quantized max pooling, TFLite's `MaxPool`: the largest raw value, clamped.
pub fn max_pool_q_reference<T: QuantInt>(g: &ConvGeom, input: &[T], out: &mut [T], act: (i32, i32)) -> Result<()> {
    check(g, input.len(), out.len())?;
    let c_n = g.in_c;
    for_each_pixel(g, |o, b, oy, ox| {
        let (fy, fx, y0, x0) = window(g, oy, ox);
        for c in 0..c_n {
            let mut max = T::MIN;
            for ky in fy.clone() {
                for kx in fx.clone() {
                    let (iy, ix) = ((y0 + ky as isize) as usize, (x0 + kx as isize) as usize);
                    max = max.max(input[((b * g.in_h + iy) * g.in_w + ix) * c_n + c].to_i32());
                }
            }
            out[o * c_n + c] = T::from_i32(max.clamp(act.0, act.1));
        }
        Ok(())
    })
}

/// Float L2 pooling, TFLite's `reference_ops::L2Pool`: `sqrt(sum(x^2) / count)`.
pub fn l2_pool_f32_reference(g: &ConvGeom, input: &[f32], out: &mut [f32], act: (f32, f32)) -> Result<()> {
    check(g, input.len(), out.len())?;
    let c_n = g.in_c;
    for_each_pixel(g, |o, b, oy, ox| {
        let (fy, fx, y0, x0) = window(g, oy, ox);
        for c in 0..c_n {
            let mut sum = 0.0f32;
            let mut count = 0i32;
            for ky in fy.clone() {
                for kx in fx.clone() {
                    let (iy, ix) = ((y0 + ky as isize) as usize, (x0 + kx as isize) as usize);
                    let v = input[((b * g.in_h + iy) * g.in_w + ix) * c_n + c];
                    sum += v * v;
                    count += 1;
                }
            }
            out[o * c_n + c] = clamp_min_max((sum / count as f32).sqrt(), act.0, act.1);
        }
        Ok(())
    })
}

/// The optimized loop: per output pixel, `init` the channel accumulators, `step` them by
/// each input pixel of the window in reference order, then `finish(acc, count)`.
#[allow(clippy::too_many_arguments)]
fn pool_optimized<T: Copy + Sync, A: Copy + Send + Sync, O: Send>(
    g: &ConvGeom,
    input: &[T],
    out: &mut [O],
    threads: usize,
    init: A,
    step: &(impl Fn(A, T) -> A + Sync),
    finish: &(impl Fn(A, usize) -> Result<O> + Sync),
) -> Result<()> {
    check(g, input.len(), out.len())?;
    let c_n = g.in_c;
    let row_len = g.out_w * c_n;
    let rows = g.batches * g.out_h;
    let threads = threads_for(threads, out.len().saturating_mul(g.f_h * g.f_w), rows);
    let cancel = Cancel::current();
    parallel_rows(threads, out, row_len, &|first, chunk: &mut [O]| {
        let mut acc = vec![init; c_n];
        for (i, row) in chunk.chunks_mut(row_len).enumerate() {
            // A window may be far larger than the image: one row can take long.
            cancel.check()?;
            let r = first + i;
            let (b, oy) = (r / g.out_h, r % g.out_h);
            for ox in 0..g.out_w {
                let (fy, fx, y0, x0) = window(g, oy, ox);
                acc.iter_mut().for_each(|a| *a = init);
                let mut count = 0usize;
                for ky in fy.clone() {
                    for kx in fx.clone() {
                        let (iy, ix) = ((y0 + ky as isize) as usize, (x0 + kx as isize) as usize);
                        let base = ((b * g.in_h + iy) * g.in_w + ix) * c_n;
                        for (a, &x) in acc.iter_mut().zip(&input[base..base + c_n]) {
                            *a = step(*a, x);
                        }
                        count += 1;
                    }
                }
                for (o, &a) in row[ox * c_n..(ox + 1) * c_n].iter_mut().zip(acc.iter()) {
                    *o = finish(a, count)?;
                }
            }
        }
        Ok(())
    })
}

/// Float MAX (`MAX`) or AVERAGE pooling: [`pool_optimized`]'s order of operations, bit
/// for bit, accumulating straight into each output pixel's channels, so the channel loops
/// are plain slice loops the compiler vectorises.
fn pool_f32_rows<const MAX: bool>(
    g: &ConvGeom,
    input: &[f32],
    out: &mut [f32],
    threads: usize,
    act: (f32, f32),
) -> Result<()> {
    check(g, input.len(), out.len())?;
    let c_n = g.in_c;
    let row_len = g.out_w * c_n;
    let rows = g.batches * g.out_h;
    let threads = threads_for(threads, out.len().saturating_mul(g.f_h * g.f_w), rows);
    let cancel = Cancel::current();
    let kernels = table();
    parallel_rows(threads, out, row_len, &|first, chunk: &mut [f32]| {
        // MAX: a row's windows of input pixels, all reduced by one call of the max-pool
        // microkernel (a clipped window filled out by repeating its first pixel). A window
        // inside the image is its first pixel plus the same offsets every time.
        // A window holds at most `k` input pixels; windows of more than `MAX_POOL_TAPS`
        // (a global pool of a large image) keep the plain loop, which needs no offsets.
        let mut bases = Vec::new();
        let k = g.f_h.min(g.in_h) * g.f_w.min(g.in_w);
        let by_kernel = MAX && (1..=MAX_POOL_TAPS).contains(&k);
        // (Only a filter that fits the image has windows inside it.)
        let fits = by_kernel && g.f_h <= g.in_h && g.f_w <= g.in_w;
        let within: Vec<usize> = if fits {
            (0..g.f_h).flat_map(|ky| (0..g.f_w).map(move |kx| (ky * g.in_w + kx) * c_n)).collect()
        } else {
            Vec::new()
        };
        for (i, row) in chunk.chunks_mut(row_len).enumerate() {
            // A window may be far larger than the image: one row can take long.
            cancel.check()?;
            let r = first + i;
            let (b, oy) = (r / g.out_h, r % g.out_h);
            if by_kernel {
                bases.clear();
                let mut empty = false;
                for ox in 0..g.out_w {
                    let (fy, fx, y0, x0) = window(g, oy, ox);
                    let pixel = |ky: usize, kx: usize| {
                        let (iy, ix) = ((y0 + ky as isize) as usize, (x0 + kx as isize) as usize);
                        ((b * g.in_h + iy) * g.in_w + ix) * c_n
                    };
                    if fits && fy.len() == g.f_h && fx.len() == g.f_w {
                        let at = pixel(0, 0);
                        bases.extend(within.iter().map(|&d| at + d));
                        continue;
                    }
                    let start = bases.len();
                    for ky in fy.clone() {
                        for kx in fx.clone() {
                            bases.push(pixel(ky, kx));
                        }
                    }
                    empty |= bases.len() == start;
                    let first_pixel = bases.get(start).copied().unwrap_or(0);
                    bases.resize(start + k, first_pixel);
                }
                if !empty {
                    f32_maxpool::max_pixels(kernels, input, &bases, k, c_n, row, act)?;
                    continue;
                }
            }
            for (ox, o) in row.chunks_exact_mut(c_n).enumerate() {
                let (fy, fx, y0, x0) = window(g, oy, ox);
                o.fill(if MAX { f32::MIN } else { 0.0 });
                let mut count = 0usize;
                for ky in fy.clone() {
                    for kx in fx.clone() {
                        let (iy, ix) = ((y0 + ky as isize) as usize, (x0 + kx as isize) as usize);
                        let base = ((b * g.in_h + iy) * g.in_w + ix) * c_n;
                        let src =
                            input.get(base..base + c_n).ok_or_else(|| Error::new("pooling window out of range"))?;
                        if MAX {
                            o.iter_mut().zip(src).for_each(|(a, &x)| *a = cpp_max(*a, x));
                        } else {
                            o.iter_mut().zip(src).for_each(|(a, &x)| *a += x);
                        }
                        count += 1;
                    }
                }
                if MAX {
                    o.iter_mut().for_each(|a| *a = clamp_min_max(*a, act.0, act.1));
                } else {
                    if count == 0 {
                        return Err(empty_window());
                    }
                    let n = count as f32;
                    o.iter_mut().for_each(|a| *a = clamp_min_max(*a / n, act.0, act.1));
                }
            }
        }
        Ok(())
    })
}

/// Float pooling of any kind, by variant.
pub fn pool_f32(
    kind: PoolKind,
    variant: Variant,
    g: &ConvGeom,
    input: &[f32],
    out: &mut [f32],
    act: (f32, f32),
    threads: usize,
) -> Result<()> {
    match (kind, variant) {
        (PoolKind::Average, Variant::Reference) => avg_pool_f32_reference(g, input, out, act),
        (PoolKind::Max, Variant::Reference) => max_pool_f32_reference(g, input, out, act),
        (PoolKind::L2, Variant::Reference) => l2_pool_f32_reference(g, input, out, act),
        (PoolKind::Average, Variant::Optimized) => pool_f32_rows::<false>(g, input, out, threads, act),
        (PoolKind::Max, Variant::Optimized) => pool_f32_rows::<true>(g, input, out, threads, act),
        (PoolKind::L2, Variant::Optimized) => {
            pool_optimized(g, input, out, threads, 0.0f32, &|a, x| a + x * x, &|a, n| {
                Ok(clamp_min_max((a / n as i32 as f32).sqrt(), act.0, act.1))
            })
        }
    }
}

/// Quantized (uint8 / int8 / int16) AVERAGE or MAX pooling, by variant.
pub fn pool_q<T: QuantInt>(
    kind: PoolKind,
    variant: Variant,
    g: &ConvGeom,
    input: &[T],
    out: &mut [T],
    act: (i32, i32),
    threads: usize,
) -> Result<()> {
    match (kind, variant) {
        (PoolKind::Average, Variant::Reference) => avg_pool_q_reference(g, input, out, act),
        (PoolKind::Max, Variant::Reference) => max_pool_q_reference(g, input, out, act),
        (PoolKind::Average, Variant::Optimized) => {
            pool_optimized(g, input, out, threads, 0i32, &|a: i32, x: T| a.wrapping_add(x.to_i32()), &|a, n| {
                if n == 0 {
                    return Err(empty_window());
                }
                Ok(T::from_i32(int_average(a, n as i32).clamp(act.0, act.1)))
            })
        }
        (PoolKind::Max, Variant::Optimized) => {
            pool_optimized(g, input, out, threads, T::MIN, &|a: i32, x: T| a.max(x.to_i32()), &|a, _| {
                Ok(T::from_i32(a.clamp(act.0, act.1)))
            })
        }
        (PoolKind::L2, _) => Err(Error::new("L2 pooling has no quantized kernel")),
    }
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

fn geometry(ctx: &OpCtx<'_>, kind: PoolKind, p: &TfLitePoolParams) -> Result<(ConvGeom, TfLiteType)> {
    let op = kind.name();
    if ctx.num_inputs() != 1 || ctx.num_outputs() != 1 {
        return Err(Error::new(format!(
            "{op}: expected 1 input and 1 output, got {} and {}",
            ctx.num_inputs(),
            ctx.num_outputs()
        )));
    }
    let input = ctx.input(0).map_err(|e| Error::new(format!("{op}: {e}")))?;
    let output = ctx.output(0).map_err(|e| Error::new(format!("{op}: {e}")))?;
    if input.shape.len() != 4 {
        return Err(Error::new(format!("{op}: input shape {:?} must have rank 4", input.shape)));
    }
    if input.dtype != output.dtype {
        return Err(Error::new(format!(
            "{op}: output type {} differs from input type {}",
            output.dtype.name(),
            input.dtype.name()
        )));
    }
    let supported = match kind {
        PoolKind::L2 => input.dtype == TfLiteType::kTfLiteFloat32,
        _ => matches!(
            input.dtype,
            TfLiteType::kTfLiteFloat32 | TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 | TfLiteType::kTfLiteInt16
        ),
    };
    if !supported {
        return Err(Error::new(format!("{op}: type {} is not supported", input.dtype.name())));
    }
    let d = |i| dim(op, "input", input.shape, i);
    let (batches, in_h, in_w, c) = (d(0)?, d(1)?, d(2)?, d(3)?);
    let stride_h = positive_param(op, "stride_height", p.stride_height)?;
    let stride_w = positive_param(op, "stride_width", p.stride_width)?;
    let f_h = positive_param(op, "filter_height", p.filter_height)?;
    let f_w = positive_param(op, "filter_width", p.filter_width)?;
    let (out_h, out_w, pad) = compute_padding_height_width(stride_h, stride_w, 1, 1, in_h, in_w, f_h, f_w, p.padding)
        .map_err(|e| Error::new(format!("{op}: {e}")))?;
    let g = ConvGeom {
        batches,
        in_h,
        in_w,
        in_c: c,
        out_h,
        out_w,
        out_c: c,
        f_h,
        f_w,
        f_c: 1,
        stride_h,
        stride_w,
        dil_h: 1,
        dil_w: 1,
        pad_h: pad.height,
        pad_w: pad.width,
    };
    g.check_index_range(op)?;
    checked_product(op, &[batches, in_h, in_w, c])?;
    checked_product(op, &[batches, out_h, out_w, c])?;
    Ok((g, input.dtype))
}

fn quant_range(ctx: &OpCtx<'_>, op: &str, p: &TfLitePoolParams, dtype: TfLiteType) -> Result<(i32, i32)> {
    let oq = ctx.output(0)?.quant();
    activation_range_quantized(p.activation, dtype, oq.scale, oq.zero_point)
        .map_err(|e| Error::new(format!("{op}: {e}")))
}

const AVERAGE: u8 = 0;
const MAX: u8 = 1;
const L2: u8 = 2;

/// AVERAGE_POOL_2D, MAX_POOL_2D or L2_POOL_2D (`K`: [`AVERAGE`], [`MAX`], [`L2`]). State:
/// the window geometry, the input type, the activation range and the output shape.
struct Pool<const K: u8>;

/// What Prepare derives for a pooling node.
struct State {
    geom: ConvGeom,
    dtype: TfLiteType,
    range: Range,
    out_shape: [i32; 4],
}

/// The fused activation's range, in the output's domain.
enum Range {
    F32((f32, f32)),
    Quant((i32, i32)),
}

const fn pool_kind(k: u8) -> PoolKind {
    match k {
        AVERAGE => PoolKind::Average,
        MAX => PoolKind::Max,
        _ => PoolKind::L2,
    }
}

impl<const K: u8> BuiltinKernel for Pool<K> {
    const NAME: &'static str = pool_kind(K).name();
    type Params = TfLitePoolParams;
    type State = State;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLitePoolParams) -> Result<State> {
        let kind = pool_kind(K);
        let op = kind.name();
        let (geom, dtype) = geometry(ctx, kind, p)?;
        let range = if dtype == TfLiteType::kTfLiteFloat32 {
            Range::F32(activation_range_f32(p.activation))
        } else {
            Range::Quant(quant_range(ctx, op, p, dtype)?)
        };
        let out_shape = geom.output_shape(op)?;
        ctx.resize_output(0, &out_shape).map_err(|e| Error::new(format!("{op}: {e}")))?;
        Ok(State { geom, dtype, range, out_shape })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLitePoolParams, state: &mut State) -> Result<()> {
        let kind = pool_kind(K);
        let op = kind.name();
        let input = ctx.input(0)?;
        let mut out = ctx.output(0)?;
        if out.shape != state.out_shape {
            return Err(Error::new(format!(
                "{op}: output shape {:?} does not match the expected {:?}",
                out.shape, state.out_shape
            )));
        }
        if input.dtype != state.dtype {
            return Err(Error::new(format!("{op}: input type changed since Prepare")));
        }
        let threads = recommended_threads(ctx);
        let (v, g) = (Variant::Optimized, &state.geom);
        match (state.dtype, &state.range) {
            (TfLiteType::kTfLiteFloat32, &Range::F32(act)) => {
                pool_f32(kind, v, g, input.data()?, out.data_mut()?, act, threads)
            }
            (TfLiteType::kTfLiteUInt8, &Range::Quant(act)) => {
                pool_q::<u8>(kind, v, g, input.data()?, out.data_mut()?, act, threads)
            }
            (TfLiteType::kTfLiteInt8, &Range::Quant(act)) => {
                pool_q::<i8>(kind, v, g, input.data()?, out.data_mut()?, act, threads)
            }
            (_, &Range::Quant(act)) => pool_q::<i16>(kind, v, g, input.data()?, out.data_mut()?, act, threads),
            _ => Err(Error::new(format!("{op}: internal error: activation range of the wrong type"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::builtin_op_data::{TfLiteFusedActivation, TfLitePadding};

    fn geom(b: usize, h: usize, w: usize, c: usize, f: usize, s: usize, pad: TfLitePadding) -> ConvGeom {
        let (oh, ow, p) = compute_padding_height_width(s, s, 1, 1, h, w, f, f, pad).unwrap();
        ConvGeom {
            batches: b,
            in_h: h,
            in_w: w,
            in_c: c,
            out_h: oh,
            out_w: ow,
            out_c: c,
            f_h: f,
            f_w: f,
            f_c: 1,
            stride_h: s,
            stride_w: s,
            dil_h: 1,
            dil_w: 1,
            pad_h: p.height,
            pad_w: p.width,
        }
    }

    #[test]
    fn tflite_float_cases() {
        // pooling_test.cc: input [1,2,4,1] = {0, 6, 2, 4, 3, 2, 10, 7}, 2x2, stride 2, VALID.
        let g = geom(1, 2, 4, 1, 2, 2, TfLitePadding::kTfLitePaddingValid);
        let input = [0.0f32, 6.0, 2.0, 4.0, 3.0, 2.0, 10.0, 7.0];
        let mut out = [0.0f32; 2];
        for v in [Variant::Reference, Variant::Optimized] {
            pool_f32(PoolKind::Average, v, &g, &input, &mut out, (f32::MIN, f32::MAX), 1).unwrap();
            assert_eq!(out, [2.75, 5.75]);
            pool_f32(PoolKind::Max, v, &g, &input, &mut out, (f32::MIN, f32::MAX), 1).unwrap();
            assert_eq!(out, [6.0, 10.0]);
            pool_f32(PoolKind::L2, v, &g, &input, &mut out, (f32::MIN, f32::MAX), 1).unwrap();
            assert_eq!(out, [3.5, 6.5]);
            pool_f32(PoolKind::Max, v, &g, &input, &mut out, (0.0, 6.0), 1).unwrap();
            assert_eq!(out, [6.0, 6.0]);
        }
    }

    #[test]
    fn quantized_rounding() {
        let g = geom(1, 2, 4, 1, 2, 2, TfLitePadding::kTfLitePaddingValid);
        let mut out = [0i8; 2];
        // Averages -2.5 -> -3 and 2.5 -> 3 (half away from zero).
        for v in [Variant::Reference, Variant::Optimized] {
            pool_q::<i8>(PoolKind::Average, v, &g, &[-2, -3, 2, 3, -2, -3, 2, 3], &mut out, (-128, 127), 1).unwrap();
            assert_eq!(out, [-3, 3]);
            pool_q::<i8>(PoolKind::Max, v, &g, &[-2, -3, 2, 3, -2, -3, 2, 3], &mut out, (0, 127), 1).unwrap();
            assert_eq!(out, [0, 3]);
        }
        let mut outu = [0u8; 2];
        pool_q::<u8>(
            PoolKind::Average,
            Variant::Reference,
            &g,
            &[1, 2, 250, 255, 1, 2, 250, 255],
            &mut outu,
            (0, 255),
            1,
        )
        .unwrap();
        assert_eq!(outu, [2, 253]);
        assert!(
            pool_q::<u8>(PoolKind::L2, Variant::Reference, &g, &[1, 2, 3, 4, 1, 2, 3, 4], &mut outu, (0, 255), 1)
                .is_err()
        );
    }

    #[test]
    fn optimized_matches_reference() {
        let mut seed = 1u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        for (b, h, w, c, f, s, pad) in [
            (1, 7, 9, 5, 3, 2, TfLitePadding::kTfLitePaddingSame),
            (2, 8, 8, 3, 2, 2, TfLitePadding::kTfLitePaddingValid),
            (1, 10, 6, 16, 3, 1, TfLitePadding::kTfLitePaddingSame),
            (1, 5, 5, 4, 5, 3, TfLitePadding::kTfLitePaddingSame),
        ] {
            let g = geom(b, h, w, c, f, s, pad);
            let n_in = g.input_len().unwrap();
            let n = g.output_len().unwrap();
            let input: Vec<f32> = (0..n_in).map(|_| (next() % 2001) as f32 / 100.0 - 10.0).collect();
            for kind in [PoolKind::Average, PoolKind::Max, PoolKind::L2] {
                let (mut a, mut o) = (vec![0.0f32; n], vec![0.0f32; n]);
                pool_f32(kind, Variant::Reference, &g, &input, &mut a, (-5.0, 8.0), 1).unwrap();
                pool_f32(kind, Variant::Optimized, &g, &input, &mut o, (-5.0, 8.0), 3).unwrap();
                assert_eq!(a, o, "{kind:?} {g:?}");
            }
            let qi: Vec<i16> = (0..n_in).map(|_| (next() % 65536) as i32 as i16).collect();
            for kind in [PoolKind::Average, PoolKind::Max] {
                let (mut a, mut o) = (vec![0i16; n], vec![0i16; n]);
                pool_q(kind, Variant::Reference, &g, &qi, &mut a, (-30000, 30000), 1).unwrap();
                pool_q(kind, Variant::Optimized, &g, &qi, &mut o, (-30000, 30000), 2).unwrap();
                assert_eq!(a, o);
            }
        }
    }

    #[test]
    fn registration_glue() {
        use crate::abi::types::TfLiteStatus;
        use crate::kernels::test_util::{Graph, qp};
        use TfLiteType::*;
        let params = |f: i32, s: i32| {
            Some(TfLitePoolParams {
                padding: TfLitePadding::kTfLitePaddingValid,
                stride_width: s,
                stride_height: s,
                filter_width: f,
                filter_height: f,
                activation: TfLiteFusedActivation::kTfLiteActNone,
                computed: Default::default(),
            })
        };
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[1, 2, 4, 1], &[0.0f32, 6.0, 2.0, 4.0, 3.0, 2.0, 10.0, 7.0], None, false);
        for (reg, want) in [
            (average_pool_registration(), [2.75f32, 5.75]),
            (max_pool_registration(), [6.0, 10.0]),
            (l2_pool_registration(), [3.5, 6.5]),
        ] {
            let o = g.output(kTfLiteFloat32, None);
            assert_eq!(g.run(&reg, &[x], &[o], params(2, 2)), TfLiteStatus::kTfLiteOk);
            assert_eq!(g.shape(o), vec![1, 1, 2, 1]);
            assert_eq!(g.data::<f32>(o), want.to_vec());
            // Bad params: zero filter, zero stride, window larger than the input (VALID).
            assert_eq!(g.run(&reg, &[x], &[o], params(0, 2)), TfLiteStatus::kTfLiteError);
            assert_eq!(g.run(&reg, &[x], &[o], params(2, 0)), TfLiteStatus::kTfLiteError);
            assert_eq!(g.run(&reg, &[x], &[o], params(5, 1)), TfLiteStatus::kTfLiteError);
        }
        // int8 average pooling; L2 refuses int8.
        let xi = g.tensor(kTfLiteInt8, &[1, 2, 4, 1], &[-2i8, -3, 2, 3, -2, -3, 2, 3], Some(qp(0.5, 0)), false);
        let o = g.output(kTfLiteInt8, Some(qp(0.5, 0)));
        assert_eq!(g.run(&average_pool_registration(), &[xi], &[o], params(2, 2)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(o), vec![-3, 3]);
        assert_eq!(g.run(&l2_pool_registration(), &[xi], &[o], params(2, 2)), TfLiteStatus::kTfLiteError);
        // Rank 3 input is refused.
        let x3 = g.tensor(kTfLiteFloat32, &[2, 4, 1], &[0.0f32; 8], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&max_pool_registration(), &[x3], &[o], params(2, 2)), TfLiteStatus::kTfLiteError);
    }
}
