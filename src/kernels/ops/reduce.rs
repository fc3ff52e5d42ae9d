//! MEAN, SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY and REDUCE_ALL (TFLite
//! `kernels/reduce.cc`, `reference/reduce.h`).
//!
//! The axis input is int32 (negative values count from the end, duplicates are
//! ignored); `keep_dims` keeps reduced dimensions as 1. Inputs are visited in row-major
//! order, as TFLite's reference `Reduce` does, so float sums round the same way. Types:
//! float32, int32 and int64 everywhere (MEAN's integer division truncates); quantized
//! uint8 / int8 / int16 MEAN with the reference kernel's integer rescaling; uint8 SUM with
//! the reference integer rescaling and int8 SUM with the builtin kernel's float rescaling
//! (TFLite's reference int8 SUM reads int8 data as uint8, which the corpus notes as a known
//! bug); int16 SUM and quantized MAX / MIN on unchanged scales; int8 / int16 PROD with
//! TFLite's per-step requantization; bool ANY / ALL. The axis decides the output shape: a
//! non-constant axis makes the output dynamic, sized in Eval (see
//! `shape_util::plan_declared_output`).

use crate::abi::builtin_op_data::TfLiteReducerParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{
    QuantInt, multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_i64, try_quantize_multiplier,
};
use crate::kernels::shape_util::{
    check_arity, in_op, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
};
use crate::microkernels::f32_vbinary::{self, BinaryOp, NO_CLAMP, Other};
use crate::microkernels::table;

/// Which reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reducer {
    Mean,
    Sum,
    Prod,
    Max,
    Min,
    Any,
    All,
}

impl Reducer {
    const fn name(self) -> &'static str {
        match self {
            Reducer::Mean => "MEAN",
            Reducer::Sum => "SUM",
            Reducer::Prod => "REDUCE_PROD",
            Reducer::Max => "REDUCE_MAX",
            Reducer::Min => "REDUCE_MIN",
            Reducer::Any => "REDUCE_ANY",
            Reducer::All => "REDUCE_ALL",
        }
    }
}

impl Reducer {
    /// The reduction a `Reduce<K>` kernel runs (`K` is the variant's index).
    const fn of(k: u8) -> Reducer {
        match k {
            0 => Reducer::Mean,
            1 => Reducer::Sum,
            2 => Reducer::Prod,
            3 => Reducer::Max,
            4 => Reducer::Min,
            5 => Reducer::Any,
            _ => Reducer::All,
        }
    }
}

macro_rules! registrations {
    ($($fn_name:ident, $kind:ident, $k:literal, $code:ident;)*) => {$(
        #[doc = concat!("The ", stringify!($kind), " registration.")]
        pub fn $fn_name() -> TfLiteRegistration {
            const { assert!(matches!(Reducer::of($k), Reducer::$kind)) };
            kernel::registration::<Reduce<$k>>(TfLiteBuiltinOperator::$code)
        }
    )*};
}

registrations! {
    mean_registration, Mean, 0, kTfLiteBuiltinMean;
    sum_registration, Sum, 1, kTfLiteBuiltinSum;
    prod_registration, Prod, 2, kTfLiteBuiltinReduceProd;
    max_registration, Max, 3, kTfLiteBuiltinReduceMax;
    min_registration, Min, 4, kTfLiteBuiltinReduceMin;
    any_registration, Any, 5, kTfLiteBuiltinReduceAny;
    all_registration, All, 6, kTfLiteBuiltinReduceAll;
}

// ---------------------------------------------------------------------------------------
// Geometry
// ---------------------------------------------------------------------------------------

/// The reduction's geometry: which input dimensions are reduced, the output shape, and
/// the number of elements reduced into each output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub reduced: Vec<bool>,
    pub out_shape: Vec<i32>,
    pub count: usize,
}

/// Resolves `axis` against `input_shape` (TFLite's `GetOutputShape` + `ResolveAxis`).
pub fn plan(input_shape: &[i32], axis: &[i32], keep_dims: bool) -> Result<Plan> {
    let rank = input_shape.len();
    if rank == 0 {
        return Ok(Plan { reduced: vec![], out_shape: vec![], count: 1 });
    }
    let mut reduced = vec![false; rank];
    for &a in axis {
        let c = if a < 0 { i64::from(a) + rank as i64 } else { i64::from(a) };
        if c < 0 || c >= rank as i64 {
            crate::bail!("axis {a} is out of range for rank {rank}");
        }
        reduced[c as usize] = true;
    }
    let out_shape = input_shape
        .iter()
        .zip(&reduced)
        .filter_map(|(&d, &r)| match (r, keep_dims) {
            (true, true) => Some(1),
            (true, false) => None,
            (false, _) => Some(d),
        })
        .collect();
    let count = input_shape.iter().zip(&reduced).filter(|(_, r)| **r).map(|(&d, _)| d.max(0) as usize).product();
    Ok(Plan { reduced, out_shape, count })
}

/// Visits the input in row-major order with `f(input_index, output_index, first)`, where
/// `first` marks the first input element reduced into that output.
fn visit(input_shape: &[i32], reduced: &[bool], mut f: impl FnMut(usize, usize, bool)) {
    let rank = input_shape.len();
    let n: usize = input_shape.iter().map(|&d| d.max(0) as usize).product();
    if n == 0 {
        return;
    }
    // Output stride of each input dimension (0 for reduced ones).
    let mut ostride = vec![0usize; rank];
    let mut s = 1usize;
    for d in (0..rank).rev() {
        if !reduced[d] {
            ostride[d] = s;
            s *= input_shape[d] as usize;
        }
    }
    let mut idx = vec![0usize; rank];
    let mut out = 0usize;
    let mut nonzero_reduced = 0usize;
    for i in 0..n {
        f(i, out, nonzero_reduced == 0);
        for d in (0..rank).rev() {
            let was_zero = idx[d] == 0;
            idx[d] += 1;
            out += ostride[d];
            if reduced[d] && was_zero {
                nonzero_reduced += 1;
            }
            if idx[d] < input_shape[d] as usize {
                break;
            }
            out -= ostride[d] * idx[d];
            idx[d] = 0;
            if reduced[d] {
                nonzero_reduced -= 1;
            }
        }
    }
}

fn out_len(p: &Plan) -> usize {
    p.out_shape.iter().map(|&d| d.max(0) as usize).product()
}

fn all_reduced(p: &Plan) -> bool {
    p.reduced.iter().all(|&r| r)
}

/// A generic reduction (`ReduceGeneric` / `ReduceAllDims`): outputs start at `init`,
/// except that reducing every dimension starts from the first element.
pub fn reduce_generic<T: Copy>(
    input: &[T],
    input_shape: &[i32],
    p: &Plan,
    init: T,
    f: impl Fn(T, T) -> T,
    out: &mut [T],
) -> Result<()> {
    if out.len() != out_len(p) {
        crate::bail!("output holds {} elements, expected {}", out.len(), out_len(p));
    }
    out.fill(init);
    if input.is_empty() {
        return Ok(());
    }
    if all_reduced(p) && out.len() == 1 {
        out[0] = input[1..].iter().fold(input[0], |acc, &x| f(acc, x));
        return Ok(());
    }
    visit(input_shape, &p.reduced, |i, o, _| out[o] = f(out[o], input[i]));
    Ok(())
}

/// The input as `[outer, reduced, inner]` when the reduced dimensions (ignoring those of
/// size 1) are one contiguous run, as in a spatial MEAN over NHWC's H and W.
fn contiguous_run(input_shape: &[i32], reduced: &[bool]) -> Option<(usize, usize, usize)> {
    let dims: Vec<(usize, bool)> =
        input_shape.iter().zip(reduced).filter(|(d, _)| **d != 1).map(|(&d, &r)| (d.max(0) as usize, r)).collect();
    let first = dims.iter().position(|d| d.1).unwrap_or(dims.len());
    let end = dims[first..].iter().position(|d| !d.1).map_or(dims.len(), |k| first + k);
    if dims[end..].iter().any(|d| d.1) {
        return None;
    }
    let prod = |s: &[(usize, bool)]| s.iter().map(|d| d.0).product::<usize>();
    Some((prod(&dims[..first]), prod(&dims[first..end]), prod(&dims[end..])))
}

/// Adds whole rows of an accumulator's width into it (a SIMD kernel from the table).
type AddRows<T, U> = fn(&[T], &mut [U]);

/// Adds every input element into its output's accumulator, each output's elements in
/// row-major input order (so float sums round as TFLite's reference loop does). `rows`,
/// when given, adds whole rows of `acc`'s width at once (a SIMD kernel doing the same
/// additions) where the reduced dimensions are one contiguous run.
fn accumulate<T: Copy, U: Copy>(
    input: &[T],
    input_shape: &[i32],
    p: &Plan,
    add: impl Fn(U, T) -> U,
    rows: Option<AddRows<T, U>>,
    acc: &mut [U],
) {
    match contiguous_run(input_shape, &p.reduced) {
        // Whole rows at a time: the same additions in the same order as the general walk.
        Some((outer, r, inner)) if outer * r * inner == input.len() && outer * inner == acc.len() => {
            if inner == 0 || r == 0 {
                return;
            }
            for (block, sums) in input.chunks_exact(r * inner).zip(acc.chunks_exact_mut(inner)) {
                if let Some(add_rows) = rows {
                    add_rows(block, sums);
                    continue;
                }
                for row in block.chunks_exact(inner) {
                    for (s, &x) in sums.iter_mut().zip(row) {
                        *s = add(*s, x);
                    }
                }
            }
        }
        _ => visit(input_shape, &p.reduced, |i, o, _| acc[o] = add(acc[o], input[i])),
    }
}

/// Sums into a wider accumulator, in row-major input order: `buf` (the node's
/// temporary) when it is given and large enough, else a fresh vector.
fn sum_into<'b, T: Copy, U: Copy + Default>(
    input: &[T],
    input_shape: &[i32],
    p: &Plan,
    add: impl Fn(U, T) -> U,
    rows: Option<AddRows<T, U>>,
    buf: Option<&'b mut [U]>,
) -> std::borrow::Cow<'b, [U]> {
    let n = out_len(p);
    match buf.filter(|b| b.len() >= n) {
        Some(b) => {
            let acc = &mut b[..n];
            acc.fill(U::default());
            accumulate(input, input_shape, p, add, rows, acc);
            std::borrow::Cow::Borrowed(&*acc)
        }
        None => {
            let mut acc = vec![U::default(); n];
            accumulate(input, input_shape, p, add, rows, &mut acc);
            std::borrow::Cow::Owned(acc)
        }
    }
}

/// The accumulator temporary MEAN/SUM request in Prepare ([`ACC_BYTES`] per output
/// value), as `n` values of `U`; `None` when the node has none or it is too small (the
/// axis was not known at Prepare): the sums then go to the heap.
fn accumulator<'a, U: crate::kernels::api::Element>(ctx: &OpCtx<'a>, n: usize) -> Option<&'a mut [U]> {
    if ctx.temporary_indices().is_empty() {
        return None;
    }
    ctx.temporary_mut::<U>(0).ok().filter(|b| b.len() >= n)
}

/// Bytes per output value of the MEAN/SUM accumulator (the widest is i64).
const ACC_BYTES: usize = 8;

/// Float MEAN (`reference_ops::Mean<float, float>`).
pub fn mean_f32(input: &[f32], input_shape: &[i32], p: &Plan, out: &mut [f32], acc: Option<&mut [f32]>) -> Result<()> {
    if out.len() != out_len(p) {
        crate::bail!("output holds {} elements, expected {}", out.len(), out_len(p));
    }
    if input.is_empty() {
        out.fill(f32::NAN);
        return Ok(());
    }
    // Reduced dimensions in one run (a spatial MEAN over NHWC's H and W): each row of
    // `inner` values is added into the sums with the vector ADD microkernel, the same
    // additions in the same order as the general walk (starting from 0, as TFLite does).
    if let Some((outer, r, inner)) = contiguous_run(input_shape, &p.reduced)
        && outer * r * inner == input.len()
        && outer * inner == out.len()
        && inner >= 16
    {
        out.fill(0.0);
        for (rows, sums) in input.chunks_exact(r * inner).zip(out.chunks_exact_mut(inner)) {
            for row in rows.chunks_exact(inner) {
                f32_vbinary::apply_in_place(table(), BinaryOp::Add, sums, false, Other::Vector(row), NO_CLAMP)?;
            }
        }
        out.iter_mut().for_each(|o| *o /= p.count as f32);
        return Ok(());
    }
    let sums = sum_into::<f32, f32>(input, input_shape, p, |a, x| a + x, None, acc);
    for (o, &s) in out.iter_mut().zip(sums.iter()) {
        *o = s / p.count as f32;
    }
    Ok(())
}

/// Quantized MEAN or uint8 SUM (`reference_ops::QuantizedMeanOrSum`).
#[allow(clippy::too_many_arguments, reason = "mirrors TFLite's reference signature")]
pub fn quantized_mean_or_sum<T: QuantInt>(
    input: &[T],
    input_shape: &[i32],
    p: &Plan,
    input_zero_point: i32,
    multiplier: i32,
    shift: i32,
    output_zero_point: i32,
    compute_sum: bool,
    row_sums: Option<AddRows<T, i32>>,
    out: &mut [T],
    acc: Option<&mut [i32]>,
) -> Result<()> {
    if out.len() != out_len(p) {
        crate::bail!("output holds {} elements, expected {}", out.len(), out_len(p));
    }
    out.fill(T::from_i32(0));
    if input.is_empty() || p.count == 0 {
        return Ok(());
    }
    let sums = sum_into::<T, i32>(input, input_shape, p, |a, x| a.wrapping_add(x.to_i32()), row_sums, acc);
    let n = p.count as i64;
    let (mut m, mut s) = (multiplier, shift);
    if !compute_sum {
        let mut sh = 63 - (n as u64).leading_zeros() as i32;
        sh = sh.min(32).min(31 + s);
        m = ((i64::from(m) << sh.max(0)) / n) as i32;
        s -= sh;
    }
    for (o, &sum) in out.iter_mut().zip(sums.iter()) {
        let shifted = (i64::from(sum) - i64::from(input_zero_point) * n) as i32;
        let v = multiply_by_quantized_multiplier(shifted, m, s).wrapping_add(output_zero_point);
        *o = T::from_i32(v.clamp(T::MIN, T::MAX));
    }
    Ok(())
}

/// int8 SUM as TFLite's builtin (optimized) kernel computes it: the integer sum rescaled
/// in `f32`.
#[allow(clippy::too_many_arguments, reason = "mirrors TFLite's optimized signature")]
pub fn int8_sum_builtin(
    input: &[i8],
    input_shape: &[i32],
    p: &Plan,
    input_scale: f32,
    input_zero_point: i32,
    output_scale: f32,
    output_zero_point: i32,
    out: &mut [i8],
    acc: Option<&mut [i32]>,
) -> Result<()> {
    if out.len() != out_len(p) {
        crate::bail!("output holds {} elements, expected {}", out.len(), out_len(p));
    }
    if input.is_empty() || p.count == 0 {
        return Ok(());
    }
    let sums =
        sum_into::<i8, i32>(input, input_shape, p, |a, x| a.wrapping_add(i32::from(x)), Some(table().qs8_rsum.i8), acc);
    let scale = input_scale / output_scale;
    let bias = (-input_zero_point) as f32 * scale * p.count as f32;
    for (o, &sum) in out.iter_mut().zip(sums.iter()) {
        let v = crate::kernels::float_conv::cvtt_f32_i32((sum as f32 * scale + bias).round())
            .wrapping_add(output_zero_point);
        *o = v.clamp(-128, 127) as i8;
    }
    Ok(())
}

/// Quantized REDUCE_PROD (`reference_ops::QuantizedReduceProd`).
#[allow(clippy::too_many_arguments, reason = "mirrors TFLite's reference signature")]
pub fn quantized_prod<T: QuantInt>(
    input: &[T],
    input_shape: &[i32],
    p: &Plan,
    input_zero_point: i32,
    output_zero_point: i32,
    multiplier: i32,
    shift: i32,
    out: &mut [T],
) -> Result<()> {
    if out.len() != out_len(p) {
        crate::bail!("output holds {} elements, expected {}", out.len(), out_len(p));
    }
    if input.is_empty() {
        return Ok(());
    }
    let mut acc = vec![0i32; out.len()];
    visit(input_shape, &p.reduced, |i, o, first| {
        let v = input[i].to_i32() - input_zero_point;
        acc[o] = if first {
            v
        } else {
            multiply_by_quantized_multiplier_i64(i64::from(acc[o]) * i64::from(v), multiplier, shift)
        };
    });
    for (o, a) in out.iter_mut().zip(acc) {
        let v = multiply_by_quantized_multiplier_i64(i64::from(a), multiplier, shift).wrapping_add(output_zero_point);
        *o = T::from_i32(v.clamp(T::MIN, T::MAX));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

fn operands<'a>(ctx: &OpCtx<'a>, kind: Reducer) -> Result<(TensorView<'a>, TensorView<'a>)> {
    let op = kind.name();
    check_arity(ctx, op, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(op))?;
    let axis = ctx.input(1).map_err(in_op(op))?;
    let out = ctx.output(0).map_err(in_op(op))?;
    if axis.dtype != TfLiteType::kTfLiteInt32 {
        return Err(op_error(op, "axis must be int32"));
    }
    if out.dtype != input.dtype {
        return Err(op_error(
            op,
            format!("output type {} differs from the input type {}", out.dtype.name(), input.dtype.name()),
        ));
    }
    use TfLiteType::*;
    let ok = match kind {
        Reducer::Any | Reducer::All => input.dtype == kTfLiteBool,
        Reducer::Mean | Reducer::Sum | Reducer::Max | Reducer::Min => {
            matches!(
                input.dtype,
                kTfLiteFloat32 | kTfLiteInt32 | kTfLiteInt64 | kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16
            )
        }
        Reducer::Prod => {
            matches!(input.dtype, kTfLiteFloat32 | kTfLiteInt32 | kTfLiteInt64)
                || (matches!(input.dtype, kTfLiteInt8 | kTfLiteInt16) && input.affine_quant().is_some())
        }
    };
    if !ok {
        return Err(op_error(op, format!("type {} is not supported", input.dtype.name())));
    }
    let (qi, qo) = (input.quant(), out.quant());
    if input.dtype == kTfLiteInt16 && (qi.zero_point != 0 || qo.zero_point != 0) {
        return Err(op_error(op, "int16 zero points must be 0"));
    }
    let same_params = match kind {
        Reducer::Max | Reducer::Min => true,
        Reducer::Sum => input.dtype == kTfLiteInt16,
        _ => false,
    };
    if same_params
        && matches!(input.dtype, kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16)
        && (qi.scale != qo.scale || qi.zero_point != qo.zero_point)
    {
        return Err(op_error(op, "the output must have the input's scale and zero point"));
    }
    Ok((input, axis))
}

fn plan_of(kind: Reducer, keep_dims: bool, input: &TensorView<'_>, axis: &TensorView<'_>) -> Result<Plan> {
    let axes: Vec<i32> = crate::kernels::shape_util::int_values(axis, false)?
        .into_iter()
        .map(|a| a.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
        .collect();
    plan(input.shape, &axes, keep_dims).map_err(in_op(kind.name()))
}

fn prepare(ctx: &OpCtx<'_>, kind: Reducer, keep_dims: bool) -> Result<ReduceState> {
    let (input, axis) = operands(ctx, kind)?;
    let out = ctx.output(0).map_err(in_op(kind.name()))?;
    use TfLiteType::*;
    let mean_multiplier = match (kind, input.dtype) {
        (Reducer::Mean, kTfLiteFloat32 | kTfLiteInt32 | kTfLiteInt64) => None,
        (Reducer::Mean, _) | (Reducer::Sum, kTfLiteUInt8) => Some(mean_multiplier(&input, &out)?),
        _ => None,
    };
    if !known_at_prepare(&axis) {
        ctx.request_temporaries(&[])?;
        plan_declared_output(ctx, kind.name(), 0)?;
        return Ok(ReduceState { plan: None, mean_multiplier, prod_multiplier: None });
    }
    let p = plan_of(kind, keep_dims, &input, &axis)?;
    // MEAN and quantized SUM accumulate output-sized sums: a node temporary (TFLite's
    // `temp_sum`), when the axis is known now.
    let sums = match kind {
        Reducer::Mean => true,
        Reducer::Sum => matches!(input.dtype, TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8),
        _ => false,
    };
    let temps = if sums {
        vec![
            out_len(&p)
                .checked_mul(ACC_BYTES)
                .ok_or_else(|| Error::new(format!("{}: accumulator size overflow", kind.name())))?,
        ]
    } else {
        Vec::new()
    };
    ctx.request_temporaries(&temps)?;
    ctx.resize_output(0, &p.out_shape).map_err(in_op(kind.name()))?;
    let prod_multiplier = if kind == Reducer::Prod && matches!(input.dtype, kTfLiteInt8 | kTfLiteInt16) {
        prod_multiplier(kind.name(), &input, &ctx.output(0).map_err(in_op(kind.name()))?)?
    } else {
        None
    };
    Ok(ReduceState { plan: Some(p), mean_multiplier, prod_multiplier })
}

fn mean_multiplier(input: &TensorView<'_>, out: &crate::kernels::api::TensorViewMut<'_>) -> Result<(i32, i32)> {
    try_quantize_multiplier(f64::from(input.quant().scale) / f64::from(out.quant().scale))
}

/// The quantized PROD's rescaling of the product of `n_in / n_out` values; `None` when
/// there is nothing to compute.
fn prod_multiplier(
    op: &'static str,
    input: &TensorView<'_>,
    out: &crate::kernels::api::TensorViewMut<'_>,
) -> Result<Option<(i32, i32)>> {
    let (n_in, n_out) = (input.num_elements(), out.num_elements());
    if n_in == 0 || n_out == 0 {
        return Ok(None);
    }
    let (qi, qo) = (input.quant(), out.quant());
    let reduced = (n_in / n_out) as f64;
    let scaling = f64::from(qi.scale) / f64::from(qo.scale).powf(1.0 / reduced);
    try_quantize_multiplier(scaling).map(Some).map_err(in_op(op))
}

/// What Prepare derives for a reduction node.
struct ReduceState {
    /// The reduced dimensions and output shape; `None` when the axis is only known at
    /// Invoke.
    plan: Option<Plan>,
    /// Quantized MEAN and uint8 SUM: the input-to-output rescaling.
    mean_multiplier: Option<(i32, i32)>,
    /// Quantized PROD with a known axis: the rescaling of each product.
    prod_multiplier: Option<(i32, i32)>,
}

/// The reduction `Reducer::of(K)`; its State holds the reduction plan and the quantized
/// multipliers (see [`ReduceState`]).
struct Reduce<const K: u8>;

impl<const K: u8> BuiltinKernel for Reduce<K> {
    const NAME: &'static str = Reducer::of(K).name();
    type Params = Option<TfLiteReducerParams>;
    type State = ReduceState;

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteReducerParams>) -> Result<ReduceState> {
        prepare(ctx, Reducer::of(K), p.is_some_and(|p| p.keep_dims))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &Option<TfLiteReducerParams>, st: &mut ReduceState) -> Result<()> {
        eval(ctx, Reducer::of(K), p.is_some_and(|p| p.keep_dims), st)
    }
}

fn eval(ctx: &OpCtx<'_>, kind: Reducer, keep_dims: bool, st: &ReduceState) -> Result<()> {
    let op = kind.name();
    let input = ctx.input(0).map_err(in_op(op))?;
    let dynamic;
    let p = match &st.plan {
        Some(p) => p,
        None => {
            let (input, axis) = operands(ctx, kind)?;
            dynamic = plan_of(kind, keep_dims, &input, &axis)?;
            settle_output_shape(ctx, op, 0, "axis values", &dynamic.out_shape)?;
            &dynamic
        }
    };
    let mut out = ctx.output(0).map_err(in_op(op))?;
    let sh = input.shape;
    let (qi, qo) = (input.quant(), out.quant());
    use TfLiteType::*;
    let r = match (kind, input.dtype) {
        (Reducer::Mean, kTfLiteFloat32) => {
            mean_f32(input.data()?, sh, p, out.data_mut()?, accumulator(ctx, out_len(p)))
        }
        (Reducer::Mean, kTfLiteInt32) => {
            let o = out.data_mut::<i32>()?;
            let acc = accumulator(ctx, out_len(p));
            let sums = sum_into::<i32, i64>(input.data()?, sh, p, |a, x| a.wrapping_add(i64::from(x)), None, acc);
            int_mean(o, &sums, p.count, |v| v as i32)
        }
        (Reducer::Mean, kTfLiteInt64) => {
            let o = out.data_mut::<i64>()?;
            let acc = accumulator(ctx, out_len(p));
            let sums = sum_into::<i64, i64>(input.data()?, sh, p, i64::wrapping_add, None, acc);
            int_mean(o, &sums, p.count, |v| v)
        }
        (Reducer::Mean, _) | (Reducer::Sum, kTfLiteUInt8) => {
            let (m, s) = st.mean_multiplier.ok_or_else(|| Error::new("no MEAN multiplier was prepared"))?;
            let sum = kind == Reducer::Sum;
            match input.dtype {
                kTfLiteUInt8 => quantized_mean_or_sum::<u8>(
                    input.data()?,
                    sh,
                    p,
                    qi.zero_point,
                    m,
                    s,
                    qo.zero_point,
                    sum,
                    Some(table().qs8_rsum.u8),
                    out.data_mut()?,
                    accumulator(ctx, out_len(p)),
                ),
                kTfLiteInt8 => quantized_mean_or_sum::<i8>(
                    input.data()?,
                    sh,
                    p,
                    qi.zero_point,
                    m,
                    s,
                    qo.zero_point,
                    sum,
                    Some(table().qs8_rsum.i8),
                    out.data_mut()?,
                    accumulator(ctx, out_len(p)),
                ),
                _ => quantized_mean_or_sum::<i16>(
                    input.data()?,
                    sh,
                    p,
                    qi.zero_point,
                    m,
                    s,
                    qo.zero_point,
                    sum,
                    None,
                    out.data_mut()?,
                    accumulator(ctx, out_len(p)),
                ),
            }
        }
        (Reducer::Sum, kTfLiteInt8) => {
            let acc = accumulator(ctx, out_len(p));
            int8_sum_builtin(
                input.data()?,
                sh,
                p,
                qi.scale,
                qi.zero_point,
                qo.scale,
                qo.zero_point,
                out.data_mut()?,
                acc,
            )
        }
        (Reducer::Prod, kTfLiteInt8 | kTfLiteInt16) => {
            let planned = st.prod_multiplier;
            let Some((m, s)) = planned.map_or_else(|| prod_multiplier(op, &input, &out), |m| Ok(Some(m)))? else {
                return Ok(());
            };
            if input.dtype == kTfLiteInt8 {
                quantized_prod::<i8>(input.data()?, sh, p, qi.zero_point, qo.zero_point, m, s, out.data_mut()?)
            } else {
                quantized_prod::<i16>(input.data()?, sh, p, qi.zero_point, qo.zero_point, m, s, out.data_mut()?)
            }
        }
        (_, dt) => generic(kind, dt, &input, p, &mut out),
    };
    r.map_err(in_op(op))
}

fn int_mean<T: Copy>(out: &mut [T], sums: &[i64], count: usize, cast: impl Fn(i64) -> T) -> Result<()> {
    if out.len() != sums.len() {
        crate::bail!("output size mismatch");
    }
    for (o, &s) in out.iter_mut().zip(sums) {
        if count == 0 {
            // An empty reduction: TFLite fills MEAN's output with the type's quiet NaN (0).
            *o = cast(0);
            continue;
        }
        *o = cast(s / count as i64);
    }
    Ok(())
}

/// The plain reductions (`EvalGeneric`): SUM / PROD / MAX / MIN on any numeric type and
/// ANY / ALL on bool.
fn generic(
    kind: Reducer,
    dt: TfLiteType,
    input: &TensorView<'_>,
    p: &Plan,
    out: &mut crate::kernels::api::TensorViewMut<'_>,
) -> Result<()> {
    let sh = input.shape;
    macro_rules! numeric {
        ($t:ty, $add:expr, $mul:expr) => {{
            let (init, f): ($t, fn($t, $t) -> $t) = match kind {
                Reducer::Sum => (0 as $t, $add),
                Reducer::Prod => (1 as $t, $mul),
                Reducer::Max => (<$t>::MIN, |c, x| if x > c { x } else { c }),
                Reducer::Min => (<$t>::MAX, |c, x| if x < c { x } else { c }),
                _ => return Err(Error::new("unsupported reduction")),
            };
            reduce_generic::<$t>(input.data()?, sh, p, init, f, out.data_mut()?)
        }};
    }
    use TfLiteType::*;
    match dt {
        kTfLiteFloat32 => numeric!(f32, |c, x| x + c, |c, x| x * c),
        kTfLiteInt32 => numeric!(i32, |c: i32, x: i32| x.wrapping_add(c), |c: i32, x: i32| x.wrapping_mul(c)),
        kTfLiteInt64 => numeric!(i64, |c: i64, x: i64| x.wrapping_add(c), |c: i64, x: i64| x.wrapping_mul(c)),
        kTfLiteUInt8 => numeric!(u8, |c: u8, x: u8| x.wrapping_add(c), |c: u8, x: u8| x.wrapping_mul(c)),
        kTfLiteInt8 => numeric!(i8, |c: i8, x: i8| x.wrapping_add(c), |c: i8, x: i8| x.wrapping_mul(c)),
        kTfLiteInt16 => numeric!(i16, |c: i16, x: i16| x.wrapping_add(c), |c: i16, x: i16| x.wrapping_mul(c)),
        kTfLiteBool => {
            let (init, f): (u8, fn(u8, u8) -> u8) = match kind {
                Reducer::Any => (0, |c, x| u8::from(x != 0 || c != 0)),
                Reducer::All => (1, |c, x| u8::from(x != 0 && c != 0)),
                _ => return Err(Error::new("unsupported reduction")),
            };
            reduce_generic::<u8>(input.data()?, sh, p, init, f, out.data_mut()?)
        }
        other => Err(Error::new(format!("type {} is not supported", other.name()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn plans() {
        let p = plan(&[2, 3, 4], &[1, -1], false).unwrap();
        assert_eq!((p.out_shape.clone(), p.count), (vec![2], 12));
        let p = plan(&[2, 3, 4], &[1, 1], true).unwrap();
        assert_eq!((p.out_shape.clone(), p.count), (vec![2, 1, 4], 3));
        assert!(plan(&[2, 3], &[2], false).is_err());
        assert_eq!(plan(&[], &[0], false).unwrap().out_shape, Vec::<i32>::new());
    }

    /// The row-at-a-time path adds exactly what the general walk adds, in the same order.
    #[test]
    fn contiguous_runs_match_the_general_walk() {
        let shapes: [(&[i32], &[i32]); 6] = [
            (&[1, 7, 5, 3], &[1, 2]),
            (&[2, 3, 4], &[2]),
            (&[2, 3, 4], &[0]),
            (&[4, 1, 3, 1], &[0, 1]),
            (&[2, 3, 4, 5], &[1, 3]),
            (&[3, 0, 2], &[1]),
        ];
        for (shape, axis) in shapes {
            let p = plan(shape, axis, true).unwrap();
            let n: usize = shape.iter().map(|&d| d as usize).product();
            let x: Vec<f32> = (0..n).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.013_7).collect();
            let mut fast = vec![0f32; out_len(&p)];
            accumulate(&x, shape, &p, |a: f32, v: f32| a + v, None, &mut fast);
            let mut slow = vec![0f32; out_len(&p)];
            visit(shape, &p.reduced, |i, o, _| slow[o] += x[i]);
            assert_eq!(
                fast.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                slow.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "{shape:?} {axis:?}"
            );
        }
        assert!(contiguous_run(&[2, 3, 4, 5], &[false, true, false, true]).is_none());
        assert_eq!(contiguous_run(&[1, 7, 7, 8], &[false, true, true, false]), Some((1, 49, 8)));
    }

    #[test]
    fn sums_and_means() {
        let x: Vec<f32> = (0..24).map(|v| v as f32).collect();
        let p = plan(&[2, 3, 4], &[1], false).unwrap();
        let mut out = vec![0.0f32; 8];
        reduce_generic(&x, &[2, 3, 4], &p, 0.0, |c, v| v + c, &mut out).unwrap();
        assert_eq!(&out[..4], &[12.0, 15.0, 18.0, 21.0]);
        mean_f32(&x, &[2, 3, 4], &p, &mut out, None).unwrap();
        assert_eq!(&out[..4], &[4.0, 5.0, 6.0, 7.0]);
        let pa = plan(&[2, 3, 4], &[0, 1, 2], false).unwrap();
        let mut one = [0.0f32];
        reduce_generic(&x, &[2, 3, 4], &pa, f32::MIN, |c, v| if v > c { v } else { c }, &mut one).unwrap();
        assert_eq!(one[0], 23.0);
    }

    #[test]
    fn float_mean_by_rows_matches_the_general_walk_bit_for_bit() {
        // NHWC spatial means (the row-at-a-time path) against a fold from 0 in input order,
        // with negative zeros, a NaN and an infinity among the values.
        for (shape, axis) in [([2, 5, 3, 20], [1, 2]), ([1, 7, 7, 33], [1, 2]), ([3, 4, 2, 16], [1, 2])] {
            let n: usize = shape.iter().map(|&d| d as usize).product();
            let mut x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 0.37 - 180.0).collect();
            x[3] = -0.0;
            x[n / 2] = f32::NAN;
            x[n - 5] = f32::INFINITY;
            let p = plan(&shape, &axis, false).unwrap();
            let (h, w, c) = (shape[1] as usize, shape[2] as usize, shape[3] as usize);
            let mut got = vec![0.0f32; shape[0] as usize * c];
            mean_f32(&x, &shape, &p, &mut got, None).unwrap();
            for (o, &g) in got.iter().enumerate() {
                let (b, ch) = (o / c, o % c);
                let sum = (0..h * w).fold(0.0f32, |a, k| a + x[(b * h * w + k) * c + ch]);
                let want = sum / (h * w) as f32;
                assert_eq!(g.to_bits(), want.to_bits(), "{shape:?} output {o}: {g} vs {want}");
            }
        }
    }

    #[test]
    fn quantized_spatial_means_on_the_row_kernel_match_the_plain_loop() {
        // NHWC spatial MEAN and SUM (the row-sum microkernel's path) against the same
        // reduction without it, on int8 and uint8 with zero points at the types' limits.
        let (m, s) = crate::kernels::quant::quantize_multiplier(0.8);
        for (shape, axes) in [([1, 7, 7, 1280], [1, 2]), ([2, 3, 5, 19], [1, 2]), ([1, 4, 4, 3], [1, 2])] {
            let p = plan(&shape, &axes, false).unwrap();
            let n: usize = shape.iter().map(|&d| d as usize).product();
            let bytes: Vec<u8> = (0..n).map(|i| (i * 73 % 256) as u8).collect();
            let signed: Vec<i8> = bytes.iter().map(|&b| b as i8).collect();
            for sum in [false, true] {
                for zp in [-128, 0, 127] {
                    let (mut fast, mut plain) = (vec![0i8; out_len(&p)], vec![0i8; out_len(&p)]);
                    let k = Some(table().qs8_rsum.i8);
                    quantized_mean_or_sum::<i8>(&signed, &shape, &p, zp, m, s, 3, sum, k, &mut fast, None).unwrap();
                    quantized_mean_or_sum::<i8>(&signed, &shape, &p, zp, m, s, 3, sum, None, &mut plain, None).unwrap();
                    assert_eq!(fast, plain, "int8 {shape:?} sum {sum} zp {zp}");
                }
                let (mut fast, mut plain) = (vec![0u8; out_len(&p)], vec![0u8; out_len(&p)]);
                let k = Some(table().qs8_rsum.u8);
                quantized_mean_or_sum::<u8>(&bytes, &shape, &p, 255, m, s, 3, sum, k, &mut fast, None).unwrap();
                quantized_mean_or_sum::<u8>(&bytes, &shape, &p, 255, m, s, 3, sum, None, &mut plain, None).unwrap();
                assert_eq!(fast, plain, "uint8 {shape:?} sum {sum}");
            }
        }
    }

    #[test]
    fn quantized_mean() {
        // 4 values of 10 with zp 2: mean 8 real steps; same scales -> 8 + out zp 0.
        let p = plan(&[1, 4], &[1], false).unwrap();
        let (m, s) = crate::kernels::quant::quantize_multiplier(1.0);
        let mut out = [0i8];
        quantized_mean_or_sum::<i8>(&[10, 10, 10, 10], &[1, 4], &p, 2, m, s, 0, false, None, &mut out, None).unwrap();
        assert_eq!(out, [8]);
        quantized_mean_or_sum::<i8>(&[10, 10, 11, 11], &[1, 4], &p, 0, m, s, 0, false, None, &mut out, None).unwrap();
        assert_eq!(out, [11]); // 10.5 rounds up
        let mut u = [0u8];
        quantized_mean_or_sum::<u8>(&[1, 2, 3, 4], &[1, 4], &p, 0, m, s, 0, true, None, &mut u, None).unwrap();
        assert_eq!(u, [10]);
    }

    #[test]
    fn prod_int8() {
        let p = plan(&[3], &[0], false).unwrap();
        let (m, s) = crate::kernels::quant::quantize_multiplier(1.0);
        let mut out = [0i8];
        quantized_prod::<i8>(&[2, 3, 4], &[3], &p, 0, 0, m, s, &mut out).unwrap();
        assert_eq!(out, [24]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[2, 2], &[1.0f32, 2.0, 3.0, 4.0], None, false);
        let a = g.tensor(kTfLiteInt32, &[1], &[0i32], None, true);
        let o = g.output(kTfLiteFloat32, None);
        let keep = TfLiteReducerParams { keep_dims: true };
        assert_eq!(g.run(&sum_registration(), &[x, a], &[o], Some(keep)), TfLiteStatus::kTfLiteOk);
        assert_eq!((g.shape(o), g.data::<f32>(o)), (vec![1, 2], vec![4.0, 6.0]));
        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<TfLiteReducerParams>(&max_registration(), &[x, a], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o2), vec![3.0, 4.0]);
        let q = g.tensor(kTfLiteInt8, &[2], &[1i8, 2], Some(qp(0.5, 0)), false);
        let qo = g.output(kTfLiteInt8, Some(qp(0.25, 0)));
        assert_eq!(g.run::<TfLiteReducerParams>(&max_registration(), &[q, a], &[qo], None), TfLiteStatus::kTfLiteError);
        let bad = g.tensor(kTfLiteInt32, &[1], &[5i32], None, true);
        let o3 = g.output(kTfLiteFloat32, None);
        assert_eq!(
            g.run::<TfLiteReducerParams>(&mean_registration(), &[x, bad], &[o3], None),
            TfLiteStatus::kTfLiteError
        );
    }
}
