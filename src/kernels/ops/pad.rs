//! PAD and PADV2 (TFLite `kernels/pad.cc`, `reference/pad.h`).
//!
//! Paddings are an int32 or int64 `[rank, 2]` tensor (before, after; both `>= 0`), rank at
//! most 5. The pad value is PADV2's scalar input 2, or 0 for float/int32/int64 and the
//! output's zero point for quantized uint8/int8/int16 (a PADV2 constant must then share
//! the output's scale and zero point). The output shape depends on the paddings' values;
//! non-constant paddings make the output dynamic, sized in Eval (see
//! `shape_util::plan_declared_output`).

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, check_type, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
    with_elem_type,
};
use crate::kernels::threadpool::elementwise::elementwise_threads;
use crate::kernels::threadpool::{parallel_chunks_mut, recommended_threads};

const MAX_RANK: usize = 5;

/// The PAD registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Pad<false>>(TfLiteBuiltinOperator::kTfLiteBuiltinPad)
}

/// The PADV2 registration.
pub fn padv2_registration() -> TfLiteRegistration {
    kernel::registration::<Pad<true>>(TfLiteBuiltinOperator::kTfLiteBuiltinPadv2)
}

/// The `(before, after)` paddings per dimension, checked: `rank` rows, values in
/// `[0, i32::MAX]`.
pub fn paddings_from(values: &[i64], paddings_shape: &[i32], rank: usize) -> Result<Vec<(usize, usize)>> {
    if paddings_shape.len() != 2 || paddings_shape[0] as usize != rank || paddings_shape[1] != 2 {
        crate::bail!("paddings shape {paddings_shape:?} must be [{rank}, 2]");
    }
    if values.len() != rank * 2 {
        crate::bail!("paddings hold {} values, need {}", values.len(), rank * 2);
    }
    values
        .chunks_exact(2)
        .map(|p| {
            if p[0] < 0 || p[1] < 0 || p[0] > i64::from(i32::MAX) || p[1] > i64::from(i32::MAX) {
                crate::bail!("paddings {p:?} must be between 0 and INT32_MAX");
            }
            Ok((p[0] as usize, p[1] as usize))
        })
        .collect()
}

/// The padded shape.
pub fn padded_shape(input_shape: &[i32], pads: &[(usize, usize)]) -> Result<Vec<i32>> {
    input_shape
        .iter()
        .zip(pads)
        .map(|(&d, &(b, a))| {
            (d as i64 + b as i64 + a as i64)
                .try_into()
                .map_err(|_| Error::new(format!("padded dimension of {d} with ({b}, {a}) is too large")))
        })
        .collect()
}

/// `out` = `input` (shape `input_shape`) surrounded by `pads` of `value`. Every output
/// element is written once: the dimensions after the last padded one are copied as one
/// contiguous block per position of the padded ones (a whole `W * C` row when only the
/// spatial dimensions of NHWC are padded).
pub fn pad<T: Copy + Send + Sync>(
    input: &[T],
    input_shape: &[i32],
    pads: &[(usize, usize)],
    value: T,
    out: &mut [T],
    threads: usize,
) -> Result<()> {
    pad_planned(&pad_plan(input_shape, pads)?, input, value, out, threads)
}

/// The block plan of a pad: element counts and the dimensions up to the last padded one
/// (those after it are copied as one block).
#[derive(Debug)]
struct PadPlan {
    n_in: usize,
    n_out: usize,
    /// The input has rank 0.
    scalar: bool,
    shape: Vec<usize>,
    pads: Vec<(usize, usize)>,
}

fn pad_plan(input_shape: &[i32], pads: &[(usize, usize)]) -> Result<PadPlan> {
    let out_shape = padded_shape(input_shape, pads)?;
    let n_out: usize = out_shape.iter().map(|&d| d as usize).product();
    let n_in: usize = input_shape.iter().map(|&d| d.max(0) as usize).product();
    if pads.len() != input_shape.len() {
        crate::bail!("pad: {} paddings for rank {}", pads.len(), input_shape.len());
    }
    let last = pads.iter().rposition(|&(b, a)| b != 0 || a != 0).unwrap_or(0);
    let shape: Vec<usize> = input_shape.iter().map(|&d| d.max(0) as usize).collect();
    let (shape, pads) =
        if shape.is_empty() { (shape, pads.to_vec()) } else { (shape[..=last].to_vec(), pads[..=last].to_vec()) };
    Ok(PadPlan { n_in, n_out, scalar: input_shape.is_empty(), shape, pads })
}

fn pad_planned<T: Copy + Send + Sync>(
    plan: &PadPlan,
    input: &[T],
    value: T,
    out: &mut [T],
    threads: usize,
) -> Result<()> {
    let (n_in, n_out) = (plan.n_in, plan.n_out);
    if out.len() != n_out || input.len() != n_in {
        crate::bail!("pad: buffers hold {} and {} elements, shapes need {n_in} and {n_out}", input.len(), out.len());
    }
    if n_in == 0 {
        out.fill(value);
        return Ok(());
    }
    if plan.scalar {
        out[0] = input[0];
        return Ok(());
    }
    pad_split(elementwise_threads(threads, out.len()), input, out, &plan.shape, &plan.pads, value)
}

/// [`pad_dims`], split over `t` threads along the outermost dimension of more than one
/// position (after unpadded dimensions of size one), padded or not, in contiguous runs of
/// output positions as the ops around it split their outputs: each thread then writes
/// the rows the next op's same thread reads, and reads those the previous op's same
/// thread wrote (a spatial PAD before a convolution, run on one thread, read half its
/// input from the other core and left half its output there: on distant cores that took
/// 0.13 -> 1.07 ms for pose_landmark_full's 128x128x64 pad).
fn pad_split<T: Copy + Send + Sync>(
    t: usize,
    input: &[T],
    out: &mut [T],
    shape: &[usize],
    pads: &[(usize, usize)],
    value: T,
) -> Result<()> {
    let d = shape.iter().zip(pads).take_while(|&(&n, &p)| n == 1 && p == (0, 0)).count();
    let Some((&n, &(before, after))) = shape.get(d).zip(pads.get(d)) else {
        pad_dims(input, out, shape, pads, value);
        return Ok(());
    };
    let total = before + n + after;
    if t <= 1 || total < 2 {
        pad_dims(input, out, shape, pads, value);
        return Ok(());
    }
    let (in_block, out_block) = (input.len() / n, out.len() / total);
    let per = total.div_ceil(t);
    parallel_chunks_mut(t, out, per * out_block, &|i, o| {
        // Output positions `first..first + rows` of dimension `d`; the input's lie at
        // `before..before + n` among them.
        let (first, end) = (i * per, i * per + o.len() / out_block);
        // The input's positions in this run: `lo..hi` (empty at the run's end if none).
        let lo = first.max(before).min(end);
        let hi = end.min(before + n).max(lo);
        let (head, rest) = o.split_at_mut((lo - first) * out_block);
        let (body, tail) = rest.split_at_mut((hi - lo) * out_block);
        head.fill(value);
        tail.fill(value);
        if hi > lo {
            let src = input
                .get((lo - before) * in_block..(hi - before) * in_block)
                .ok_or_else(|| Error::new("pad: split out of range"))?;
            let mut sub_shape = shape[d..].to_vec();
            let mut sub_pads = pads[d..].to_vec();
            (sub_shape[0], sub_pads[0]) = (hi - lo, (0, 0));
            pad_dims(src, body, &sub_shape, &sub_pads, value);
        }
        Ok(())
    })
}

/// Pads dimensions `shape` (the outermost first, each non-empty; `pads` alike) of equal
/// blocks: `input` holds `product(shape)` blocks and `out` the padded count (checked by
/// [`pad`]).
fn pad_dims<T: Copy>(input: &[T], out: &mut [T], shape: &[usize], pads: &[(usize, usize)], value: T) {
    let (n, (before, after)) = (shape[0], pads[0]);
    let in_block = input.len() / n;
    let out_block = out.len() / (before + n + after);
    let (head, rest) = out.split_at_mut(before * out_block);
    let (body, tail) = rest.split_at_mut(n * out_block);
    head.fill(value);
    tail.fill(value);
    if shape.len() == 1 {
        body.copy_from_slice(input);
        return;
    }
    if shape.len() == 2 {
        // The innermost level inline: padding a pixel's channels is a few values per
        // pixel, where a `memcpy` / `memset` call and a recursive call each cost more than
        // the copy (face_landmark's 48x48 channel pad 16 -> 32: most of its time).
        // Positions of the inner dimension are blocks of `unit` values.
        let unit = in_block / shape[1];
        let before = pads[1].0 * unit;
        for (src, dst) in input.chunks_exact(in_block).zip(body.chunks_exact_mut(out_block)) {
            let (lead, rest) = dst.split_at_mut(before);
            let (mid, trail) = rest.split_at_mut(src.len());
            lead.iter_mut().for_each(|d| *d = value);
            mid.iter_mut().zip(src).for_each(|(d, &x)| *d = x);
            trail.iter_mut().for_each(|d| *d = value);
        }
        return;
    }
    for (src, dst) in input.chunks_exact(in_block).zip(body.chunks_exact_mut(out_block)) {
        pad_dims(src, dst, &shape[1..], &pads[1..], value);
    }
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

struct Operands<'a> {
    input: TensorView<'a>,
    paddings: TensorView<'a>,
    value: Option<TensorView<'a>>,
}

fn operands<'a>(ctx: &OpCtx<'a>, op: &'static str, v2: bool) -> Result<Operands<'a>> {
    let _ = v2; // PAD and PADV2 share one kernel in TFLite: both take an optional value.
    check_arity(ctx, op, 2, 3, 1)?;
    let input = ctx.input(0).map_err(in_op(op))?;
    let paddings = ctx.input(1).map_err(in_op(op))?;
    let value = ctx.optional_input(2).map_err(in_op(op))?;
    let out = ctx.output(0).map_err(in_op(op))?;
    if out.dtype != input.dtype {
        return Err(op_error(
            op,
            format!("output type {} differs from the input type {}", out.dtype.name(), input.dtype.name()),
        ));
    }
    if let Some(v) = &value
        && v.dtype != input.dtype
    {
        return Err(op_error(
            op,
            format!("pad value type {} differs from the input type {}", v.dtype.name(), input.dtype.name()),
        ));
    }
    use TfLiteType::*;
    check_type(
        op,
        "input",
        input.dtype,
        &[kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt8, kTfLiteInt16, kTfLiteInt32, kTfLiteInt64],
    )?;
    check_type(op, "paddings", paddings.dtype, &[kTfLiteInt32, kTfLiteInt64])?;
    if input.shape.len() > MAX_RANK {
        return Err(op_error(op, format!("input rank {} is more than {MAX_RANK}", input.shape.len())));
    }
    Ok(Operands { input, paddings, value })
}

fn pads_of(op: &'static str, ops: &Operands<'_>) -> Result<Vec<(usize, usize)>> {
    let values = int_values(&ops.paddings, false).map_err(in_op(op))?;
    paddings_from(&values, ops.paddings.shape, ops.input.shape.len()).map_err(in_op(op))
}

/// The output shape and block plan for `pads`.
fn shape_and_plan(op: &'static str, ops: &Operands<'_>, pads: &[(usize, usize)]) -> Result<(Vec<i32>, PadPlan)> {
    let shape = padded_shape(ops.input.shape, pads).map_err(in_op(op))?;
    Ok((shape, pad_plan(ops.input.shape, pads).map_err(in_op(op))?))
}

/// PAD (`V2` false) and PADV2 (TFLite runs both with one kernel: both take an optional
/// value). State: whether the default pad value is the output zero point, that zero
/// point, and the block plan when the paddings are constant.
struct Pad<const V2: bool>;

/// What Prepare derives for a PAD / PADV2 node.
struct PadState {
    /// uint8 / int8 / int16: the default pad value is the output zero point.
    quantized: bool,
    zero_point: i32,
    /// `None` when the paddings are only known at Invoke.
    plan: Option<PadPlan>,
}

impl<const V2: bool> BuiltinKernel for Pad<V2> {
    const NAME: &'static str = if V2 { "PADV2" } else { "PAD" };
    type Params = ();
    type State = PadState;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<PadState> {
        let op = Self::NAME;
        let ops = operands(ctx, op, V2)?;
        let oq = ctx.output(0).map_err(in_op(op))?.quant();
        if let Some(v) = &ops.value
            && v.num_elements() != 1
        {
            return Err(op_error(op, format!("pad value holds {} elements, expected 1", v.num_elements())));
        }
        let quantized =
            matches!(ops.input.dtype, TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 | TfLiteType::kTfLiteInt16);
        if quantized
            && let Some(v) = &ops.value
            && (v.quant().zero_point != oq.zero_point || v.quant().scale != oq.scale)
        {
            return Err(op_error(op, "the pad value must have the output's scale and zero point"));
        }
        let plan = if known_at_prepare(&ops.paddings) {
            let (shape, plan) = shape_and_plan(op, &ops, &pads_of(op, &ops)?)?;
            ctx.resize_output(0, &shape).map_err(in_op(op))?;
            Some(plan)
        } else {
            plan_declared_output(ctx, op, 0)?;
            None
        };
        Ok(PadState { quantized, zero_point: oq.zero_point, plan })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), state: &mut PadState) -> Result<()> {
        let op = Self::NAME;
        let input = ctx.input(0).map_err(in_op(op))?;
        let value = ctx.optional_input(2).map_err(in_op(op))?;
        let dynamic;
        let plan = match &state.plan {
            Some(p) => p,
            None => {
                let ops = Operands { input, paddings: ctx.input(1).map_err(in_op(op))?, value };
                let (shape, plan) = shape_and_plan(op, &ops, &pads_of(op, &ops)?)?;
                settle_output_shape(ctx, op, 0, "paddings", &shape)?;
                dynamic = plan;
                &dynamic
            }
        };
        let mut out = ctx.output(0).map_err(in_op(op))?;
        let (quantized, zp) = (state.quantized, state.zero_point);
        with_elem_type!(input.dtype, op, T => {
            let pad_value: T = match &value {
                Some(v) => v.data::<T>()?[0],
                None => zero_value::<T>(quantized, zp)?,
            };
            pad_planned::<T>(plan, input.data::<T>()?, pad_value, out.data_mut::<T>()?, recommended_threads(ctx))
        })
        .map_err(in_op(op))
    }
}

/// Element types that can hold a zero point.
trait FromZeroPoint: Sized + Default {
    fn from_zero_point(zp: i32) -> Option<Self>;
}
macro_rules! from_zp_int {
    ($($t:ty),*) => {$(
        impl FromZeroPoint for $t {
            fn from_zero_point(zp: i32) -> Option<Self> { <$t>::try_from(zp).ok() }
        }
    )*};
}
from_zp_int!(i8, u8, i16, u16, i32, u32, i64, u64);
impl FromZeroPoint for f32 {
    fn from_zero_point(zp: i32) -> Option<Self> {
        Some(zp as f32)
    }
}
impl FromZeroPoint for f64 {
    fn from_zero_point(zp: i32) -> Option<Self> {
        Some(f64::from(zp))
    }
}

/// The default pad value: 0, or the output zero point for quantized types (checked to fit).
fn zero_value<T: FromZeroPoint>(quantized: bool, zero_point: i32) -> Result<T> {
    if !quantized {
        return Ok(T::default());
    }
    T::from_zero_point(zero_point)
        .ok_or_else(|| Error::new(format!("output zero point {zero_point} does not fit the type")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn pad_2d() {
        // pad_test.cc SimpleConstTest: [1,2,2,1] padded by [[0,0],[1,1],[1,1],[0,0]].
        let mut out = [9.0f32; 16];
        pad(&[1.0, 2.0, 3.0, 4.0], &[1, 2, 2, 1], &[(0, 0), (1, 1), (1, 1), (0, 0)], 0.0, &mut out, 1).unwrap();
        assert_eq!(out, [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let mut o = [0i32; 5];
        pad(&[7, 8], &[2], &[(2, 1)], -1, &mut o, 1).unwrap();
        assert_eq!(o, [-1, -1, 7, 8, -1]);
        assert!(paddings_from(&[1, -1], &[1, 2], 1).is_err());
        assert!(paddings_from(&[1, 1], &[2, 1], 1).is_err());
    }

    /// The element-by-element definition: the output index minus the before-paddings,
    /// read from the input when inside it.
    fn pad_by_index(input: &[i32], shape: &[i32], pads: &[(usize, usize)], value: i32) -> Vec<i32> {
        let out_shape = padded_shape(shape, pads).unwrap();
        let n: usize = out_shape.iter().map(|&d| d as usize).product();
        (0..n)
            .map(|mut i| {
                let mut src = 0usize;
                let mut inside = true;
                for d in (0..shape.len()).rev() {
                    let o = i % out_shape[d] as usize;
                    i /= out_shape[d] as usize;
                    let stride: usize = shape[d + 1..].iter().map(|&v| v as usize).product();
                    match o.checked_sub(pads[d].0) {
                        Some(x) if x < shape[d] as usize => src += x * stride,
                        _ => inside = false,
                    }
                }
                if inside { input[src] } else { value }
            })
            .collect()
    }

    #[test]
    fn every_padding_pattern_matches_the_definition() {
        let mut seed = 7u64;
        let mut next = move |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        for _ in 0..400 {
            let rank = next(5) + 1;
            let shape: Vec<i32> = (0..rank).map(|_| next(4) as i32 + usize::from(next(8) != 0) as i32).collect();
            let pads: Vec<(usize, usize)> = (0..rank).map(|_| (next(3) * next(2), next(3) * next(2))).collect();
            let n: usize = shape.iter().map(|&d| d as usize).product();
            let input: Vec<i32> = (1..=n as i32).collect();
            let want = pad_by_index(&input, &shape, &pads, -1);
            let mut got = vec![7i32; want.len()];
            pad(&input, &shape, &pads, -1, &mut got, 1).unwrap();
            assert_eq!(got, want, "shape {shape:?} pads {pads:?}");
            // The same split over threads (as large tensors are), with the leading size-1
            // dimensions the split looks past.
            let last = pads.iter().rposition(|&(b, a)| b != 0 || a != 0).unwrap_or(0);
            let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
            if n > 0 {
                for t in [2, 3, 5] {
                    let mut got = vec![7i32; want.len()];
                    pad_split(t, &input, &mut got, &dims[..=last], &pads[..=last], -1).unwrap();
                    assert_eq!(got, want, "{t} threads: shape {shape:?} pads {pads:?}");
                }
            }
        }
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt8, &[2], &[5i8, 6], Some(qp(0.5, -3)), false);
        let p = g.tensor(kTfLiteInt32, &[1, 2], &[1i32, 2], None, true);
        let o = g.output(kTfLiteInt8, Some(qp(0.5, -3)));
        assert_eq!(g.run::<()>(&registration(), &[x, p], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(o), vec![-3, 5, 6, -3, -3]);
        let v = g.tensor(kTfLiteInt8, &[], &[7i8], Some(qp(0.5, -3)), true);
        let o2 = g.output(kTfLiteInt8, Some(qp(0.5, -3)));
        assert_eq!(g.run::<()>(&padv2_registration(), &[x, p, v], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(o2), vec![7, 5, 6, 7, 7]);
        // Non-constant paddings: the output is dynamic and takes its shape in Eval.
        let pd = g.tensor(kTfLiteInt32, &[1, 2], &[1i32, 2], None, false);
        let o3 = g.output(kTfLiteInt8, Some(qp(0.5, -3)));
        assert_eq!(g.run::<()>(&registration(), &[x, pd], &[o3], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(o3), vec![-3, 5, 6, -3, -3]);
    }
}
