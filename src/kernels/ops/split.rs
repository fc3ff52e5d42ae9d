//! SPLIT, SPLIT_V, PACK and UNPACK (TFLite `kernels/split.cc`, `split_v.cc`, `pack.cc`,
//! `unpack.cc`): moving slabs of elements between one tensor and several.
//!
//! SPLIT cuts `axis` (input 0, a one-element int32 tensor) into `num_splits` equal parts;
//! SPLIT_V into the sizes of input 1 (int32 or int64, at most one -1). PACK stacks
//! `values_count` same-shaped inputs along a new axis; UNPACK is its inverse. Quantized
//! PACK/UNPACK require every input and output to share the scale and zero point, as TFLite
//! does. Non-constant `axis` / `size_splits` make the outputs dynamic, sized in
//! Eval (see `shape_util::plan_declared_output`).

use crate::abi::builtin_op_data::{TfLitePackParams, TfLiteSplitParams, TfLiteSplitVParams, TfLiteUnpackParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, check_type, in_op, int_values, known_at_prepare, normalize_axis, op_error, plan_declared_output,
    scalar_int, settle_output_shape, with_elem_type,
};

/// The SPLIT registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Split>(TfLiteBuiltinOperator::kTfLiteBuiltinSplit)
}

/// The SPLIT_V registration.
pub fn split_v_registration() -> TfLiteRegistration {
    kernel::registration::<SplitV>(TfLiteBuiltinOperator::kTfLiteBuiltinSplitV)
}

/// The PACK registration.
pub fn pack_registration() -> TfLiteRegistration {
    kernel::registration::<Pack>(TfLiteBuiltinOperator::kTfLiteBuiltinPack)
}

/// The UNPACK registration.
pub fn unpack_registration() -> TfLiteRegistration {
    kernel::registration::<Unpack>(TfLiteBuiltinOperator::kTfLiteBuiltinUnpack)
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// Splits `input` (shape `shape`) along `axis` into parts of `sizes` (summing to the axis).
pub fn split<T: Copy>(input: &[T], shape: &[i32], axis: usize, sizes: &[usize], outs: &mut [&mut [T]]) -> Result<()> {
    let outer: usize = shape[..axis].iter().map(|&d| d as usize).product();
    let inner: usize = shape[axis + 1..].iter().map(|&d| d as usize).product();
    if sizes.iter().sum::<usize>() != shape[axis] as usize || outs.len() != sizes.len() {
        crate::bail!("split sizes {sizes:?} do not cover dimension {axis} of {shape:?}");
    }
    if input.len() != outer * shape[axis] as usize * inner {
        crate::bail!("input holds {} elements, its shape {shape:?} needs more", input.len());
    }
    for (o, &s) in outs.iter().zip(sizes) {
        if o.len() != outer * s * inner {
            crate::bail!("output holds {} elements, expected {}", o.len(), outer * s * inner);
        }
    }
    let mut pos = 0;
    for k in 0..outer {
        for (o, &s) in outs.iter_mut().zip(sizes) {
            let n = s * inner;
            o[k * n..(k + 1) * n].copy_from_slice(&input[pos..pos + n]);
            pos += n;
        }
    }
    Ok(())
}

/// Stacks same-shaped inputs (each `outer * inner` elements) along a new axis with the
/// given outer size.
pub fn pack<T: Copy>(inputs: &[&[T]], outer: usize, out: &mut [T]) -> Result<()> {
    let Some(first) = inputs.first() else { crate::bail!("no inputs") };
    if outer == 0 || first.len() % outer != 0 {
        if first.is_empty() && out.is_empty() {
            return Ok(());
        }
        crate::bail!("inputs of {} elements cannot have outer size {outer}", first.len());
    }
    let inner = first.len() / outer;
    if inputs.iter().any(|i| i.len() != first.len()) || out.len() != first.len() * inputs.len() {
        crate::bail!("inputs and output sizes do not match");
    }
    let mut pos = 0;
    for k in 0..outer {
        for i in inputs {
            out[pos..pos + inner].copy_from_slice(&i[k * inner..(k + 1) * inner]);
            pos += inner;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// SPLIT / SPLIT_V glue
// ---------------------------------------------------------------------------------------

fn split_types(op: &str, t: TfLiteType) -> Result<()> {
    use TfLiteType::*;
    check_type(op, "input", t, &[kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt8, kTfLiteInt16, kTfLiteInt32, kTfLiteInt64])
}

/// Output shapes of splitting `shape` along `axis` into `sizes`.
fn split_shapes(shape: &[i32], axis: usize, sizes: &[usize]) -> Vec<Vec<i32>> {
    sizes
        .iter()
        .map(|&s| {
            let mut v = shape.to_vec();
            v[axis] = s as i32;
            v
        })
        .collect()
}

fn even_sizes(op: &str, shape: &[i32], axis: usize, n: usize) -> Result<Vec<usize>> {
    let d = shape[axis] as usize;
    if n == 0 || !d.is_multiple_of(n) {
        return Err(op_error(op, format!("cannot split dimension {axis} of size {d} evenly into {n}")));
    }
    Ok(vec![d / n; n])
}

/// SPLIT_V's sizes: one -1 takes the remainder; the sum must be the axis size.
pub fn split_v_sizes(splits: &[i64], dim: i32) -> Result<Vec<usize>> {
    let mut minus_one = None;
    let mut sum: i64 = 0;
    for (i, &s) in splits.iter().enumerate() {
        if s == -1 {
            if minus_one.replace(i).is_some() {
                crate::bail!("size_splits contains more than one -1");
            }
        } else if s < 0 {
            crate::bail!("size_splits entry {s} is negative");
        } else {
            sum = sum.saturating_add(s);
        }
    }
    let dim = i64::from(dim);
    let mut out: Vec<i64> = splits.to_vec();
    match minus_one {
        Some(i) => {
            if sum > dim {
                crate::bail!("the sum of size_splits ({sum}) exceeds the dimension ({dim})");
            }
            out[i] = dim - sum;
        }
        None if sum != dim => crate::bail!("size_splits sum to {sum}, the dimension is {dim}"),
        None => {}
    }
    Ok(out.into_iter().map(|v| v as usize).collect())
}

struct SplitPlan<'a> {
    input: TensorView<'a>,
    axis: usize,
    sizes: Vec<usize>,
}

fn split_plan<'a>(ctx: &OpCtx<'a>, v: bool, num_splits: i32) -> Result<(SplitPlan<'a>, bool)> {
    let op = if v { "SPLIT_V" } else { "SPLIT" };
    let (input, axis_t, splits_t) = if v {
        check_arity(ctx, op, 3, 3, ctx.num_outputs().max(1))?;
        (ctx.input(0).map_err(in_op(op))?, ctx.input(2).map_err(in_op(op))?, Some(ctx.input(1).map_err(in_op(op))?))
    } else {
        check_arity(ctx, op, 2, 2, ctx.num_outputs().max(1))?;
        (ctx.input(1).map_err(in_op(op))?, ctx.input(0).map_err(in_op(op))?, None)
    };
    split_types(op, input.dtype)?;
    if usize::try_from(num_splits).ok() != Some(ctx.num_outputs()) {
        return Err(op_error(op, format!("num_splits {num_splits} differs from the {} outputs", ctx.num_outputs())));
    }
    let mut known = known_at_prepare(&axis_t);
    if let Some(s) = &splits_t {
        known &= known_at_prepare(s);
        if s.shape.len() != 1 || s.num_elements() != ctx.num_outputs() {
            return Err(op_error(op, "size_splits must be a vector with one entry per output"));
        }
    }
    let axis = normalize_axis(scalar_int(&axis_t).map_err(in_op(op))?, input.shape.len()).map_err(in_op(op))?;
    let sizes = match &splits_t {
        Some(s) => split_v_sizes(&int_values(s, false).map_err(in_op(op))?, input.shape[axis]).map_err(in_op(op))?,
        None => even_sizes(op, input.shape, axis, ctx.num_outputs())?,
    };
    Ok((SplitPlan { input, axis, sizes }, known))
}

/// The split axis and part sizes.
type SplitSizes = (usize, Vec<usize>);

fn split_prepare_impl(ctx: &OpCtx<'_>, v: bool, num_splits: i32) -> Result<Option<SplitSizes>> {
    let op = if v { "SPLIT_V" } else { "SPLIT" };
    check_arity(ctx, op, if v { 3 } else { 2 }, if v { 3 } else { 2 }, ctx.num_outputs().max(1))?;
    let input_type = if v { ctx.input(0) } else { ctx.input(1) }.map_err(in_op(op))?.dtype;
    for i in 0..ctx.num_outputs() {
        ctx.set_output_type(i, input_type).map_err(in_op(op))?;
    }
    let axis_known = known_at_prepare(&if v { ctx.input(2) } else { ctx.input(0) }.map_err(in_op(op))?);
    let splits_known = !v || known_at_prepare(&ctx.input(1).map_err(in_op(op))?);
    if !(axis_known && splits_known) {
        // The axis / sizes are only readable in Eval: plan the declared shapes.
        for i in 0..ctx.num_outputs() {
            plan_declared_output(ctx, op, i)?;
        }
        return Ok(None);
    }
    let (p, _) = split_plan(ctx, v, num_splits)?;
    for (i, s) in split_shapes(p.input.shape, p.axis, &p.sizes).iter().enumerate() {
        ctx.resize_output(i, s).map_err(in_op(op))?;
    }
    Ok(Some((p.axis, p.sizes)))
}

fn split_eval_impl(ctx: &OpCtx<'_>, v: bool, num_splits: i32, planned: &Option<SplitSizes>) -> Result<()> {
    let op = if v { "SPLIT_V" } else { "SPLIT" };
    let dynamic;
    let (input, (axis, sizes)) = match planned {
        Some(plan) => (if v { ctx.input(0) } else { ctx.input(1) }.map_err(in_op(op))?, plan),
        None => {
            let (p, _) = split_plan(ctx, v, num_splits)?;
            let shapes = split_shapes(p.input.shape, p.axis, &p.sizes);
            for (i, s) in shapes.iter().enumerate() {
                settle_output_shape(ctx, op, i, "axis / size_splits values", s)?;
            }
            dynamic = (p.axis, p.sizes);
            (p.input, &dynamic)
        }
    };
    let mut outs = (0..ctx.num_outputs()).map(|i| ctx.output(i)).collect::<Result<Vec<_>>>().map_err(in_op(op))?;
    for o in &outs {
        if o.dtype != input.dtype {
            return Err(op_error(op, "output types differ from the input type"));
        }
    }
    with_elem_type!(input.dtype, op, T => {
        let mut slices = outs.iter_mut().map(|o| o.data_mut::<T>()).collect::<Result<Vec<_>>>()?;
        split::<T>(input.data::<T>()?, input.shape, *axis, sizes, &mut slices)
    })
    .map_err(in_op(op))
}

/// SPLIT; its State is the axis and part sizes when the axis is constant.
struct Split;

impl BuiltinKernel for Split {
    const NAME: &'static str = "SPLIT";
    type Params = TfLiteSplitParams;
    type State = Option<SplitSizes>;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteSplitParams) -> Result<Option<SplitSizes>> {
        split_prepare_impl(ctx, false, p.num_splits)
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteSplitParams, planned: &mut Option<SplitSizes>) -> Result<()> {
        split_eval_impl(ctx, false, p.num_splits, planned)
    }
}

/// SPLIT_V; its State is the axis and part sizes when the axis and sizes are constant.
struct SplitV;

impl BuiltinKernel for SplitV {
    const NAME: &'static str = "SPLIT_V";
    type Params = TfLiteSplitVParams;
    type State = Option<SplitSizes>;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteSplitVParams) -> Result<Option<SplitSizes>> {
        split_prepare_impl(ctx, true, p.num_splits)
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteSplitVParams, planned: &mut Option<SplitSizes>) -> Result<()> {
        split_eval_impl(ctx, true, p.num_splits, planned)
    }
}

// ---------------------------------------------------------------------------------------
// PACK / UNPACK glue
// ---------------------------------------------------------------------------------------

const PACK: &str = "PACK";
const UNPACK: &str = "UNPACK";

/// PACK's checked inputs, axis and output shape.
fn pack_plan<'a>(ctx: &OpCtx<'a>, p: &TfLitePackParams) -> Result<(Vec<TensorView<'a>>, usize, Vec<i32>)> {
    if usize::try_from(p.values_count).ok() != Some(ctx.num_inputs()) || ctx.num_inputs() == 0 {
        return Err(op_error(
            PACK,
            format!("values_count {} differs from the {} inputs", p.values_count, ctx.num_inputs()),
        ));
    }
    check_arity(ctx, PACK, 1, usize::MAX, 1)?;
    let inputs = (0..ctx.num_inputs()).map(|i| ctx.input(i)).collect::<Result<Vec<_>>>().map_err(in_op(PACK))?;
    let t0 = &inputs[0];
    use TfLiteType::*;
    check_type(
        PACK,
        "input",
        t0.dtype,
        &[kTfLiteInt32, kTfLiteFloat32, kTfLiteUInt8, kTfLiteUInt32, kTfLiteInt8, kTfLiteInt16, kTfLiteInt64],
    )?;
    let rank = t0.shape.len() as i64 + 1;
    let axis = if p.axis < 0 { i64::from(p.axis) + rank } else { i64::from(p.axis) };
    if axis < 0 || axis >= rank {
        return Err(op_error(PACK, format!("axis {} is out of range", p.axis)));
    }
    for t in &inputs {
        if t.shape != t0.shape || t.dtype != t0.dtype {
            return Err(op_error(PACK, "inputs must have the same shape and type"));
        }
    }
    let mut shape = t0.shape.to_vec();
    shape.insert(axis as usize, inputs.len() as i32);
    Ok((inputs, axis as usize, shape))
}

/// PACK; its State is the number of slabs each input is cut into (the product of the
/// dimensions before the axis).
struct Pack;

impl BuiltinKernel for Pack {
    const NAME: &'static str = PACK;
    type Params = TfLitePackParams;
    type State = usize;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLitePackParams) -> Result<usize> {
        let (inputs, axis, shape) = pack_plan(ctx, p)?;
        let out = ctx.output(0).map_err(in_op(PACK))?;
        if out.dtype != inputs[0].dtype {
            return Err(op_error(PACK, "output type differs from the input type"));
        }
        for t in &inputs {
            let (a, b) = (t.quant(), out.quant());
            if a.zero_point != b.zero_point || a.scale != b.scale {
                return Err(op_error(PACK, "inputs must have the output's scale and zero point"));
            }
        }
        ctx.resize_output(0, &shape).map_err(in_op(PACK))?;
        Ok(inputs[0].shape[..axis].iter().map(|&d| d as usize).product())
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLitePackParams, outer: &mut usize) -> Result<()> {
        let inputs = (0..ctx.num_inputs()).map(|i| ctx.input(i)).collect::<Result<Vec<_>>>().map_err(in_op(PACK))?;
        let mut out = ctx.output(0).map_err(in_op(PACK))?;
        let dtype = inputs[0].dtype;
        with_elem_type!(dtype, PACK, T => {
            let ins = inputs.iter().map(|t| t.data::<T>()).collect::<Result<Vec<_>>>()?;
            pack::<T>(&ins, *outer, out.data_mut::<T>()?)
        })
        .map_err(in_op(PACK))
    }
}

fn unpack_plan<'a>(ctx: &OpCtx<'a>, p: &TfLiteUnpackParams) -> Result<(TensorView<'a>, usize, Vec<i32>)> {
    check_arity(ctx, UNPACK, 1, 1, ctx.num_outputs())?;
    if usize::try_from(p.num).ok() != Some(ctx.num_outputs()) {
        return Err(op_error(UNPACK, format!("num {} differs from the {} outputs", p.num, ctx.num_outputs())));
    }
    let input = ctx.input(0).map_err(in_op(UNPACK))?;
    if input.num_elements() == 0 {
        return Err(op_error(UNPACK, "the input is empty"));
    }
    use TfLiteType::*;
    check_type(
        UNPACK,
        "input",
        input.dtype,
        &[kTfLiteInt32, kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt8, kTfLiteInt16, kTfLiteBool],
    )?;
    let axis = normalize_axis(i64::from(p.axis), input.shape.len()).map_err(in_op(UNPACK))?;
    if input.shape[axis] != p.num {
        return Err(op_error(UNPACK, format!("num {} differs from dimension {axis} ({})", p.num, input.shape[axis])));
    }
    let mut shape = input.shape.to_vec();
    shape.remove(axis);
    Ok((input, axis, shape))
}

/// UNPACK; its State is the normalised axis and the part sizes along it (all 1).
struct Unpack;

impl BuiltinKernel for Unpack {
    const NAME: &'static str = UNPACK;
    type Params = TfLiteUnpackParams;
    type State = SplitSizes;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteUnpackParams) -> Result<SplitSizes> {
        let (input, axis, shape) = unpack_plan(ctx, p)?;
        for i in 0..ctx.num_outputs() {
            let out = ctx.output(i).map_err(in_op(UNPACK))?;
            if out.dtype != input.dtype {
                return Err(op_error(UNPACK, "output types must equal the input type"));
            }
            let (a, b) = (input.quant(), out.quant());
            if a.zero_point != b.zero_point || a.scale != b.scale {
                return Err(op_error(UNPACK, "outputs must have the input's scale and zero point"));
            }
            ctx.resize_output(i, &shape).map_err(in_op(UNPACK))?;
        }
        Ok((axis, vec![1usize; ctx.num_outputs()]))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteUnpackParams, plan: &mut SplitSizes) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(UNPACK))?;
        let mut outs =
            (0..ctx.num_outputs()).map(|i| ctx.output(i)).collect::<Result<Vec<_>>>().map_err(in_op(UNPACK))?;
        let (axis, sizes) = (plan.0, &plan.1);
        with_elem_type!(input.dtype, UNPACK, T => {
            let mut slices = outs.iter_mut().map(|o| o.data_mut::<T>()).collect::<Result<Vec<_>>>()?;
            split::<T>(input.data::<T>()?, input.shape, axis, sizes, &mut slices)
        })
        .map_err(in_op(UNPACK))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn split_and_pack() {
        let input: Vec<i32> = (0..12).collect(); // [2,6]
        let (mut a, mut b) = (vec![0; 4], vec![0; 8]);
        split(&input, &[2, 6], 1, &[2, 4], &mut [&mut a, &mut b]).unwrap();
        assert_eq!(a, [0, 1, 6, 7]);
        assert_eq!(b, [2, 3, 4, 5, 8, 9, 10, 11]);
        let mut out = vec![0; 12];
        pack(&[&a[..], &[9, 9, 9, 9][..], &a[..]], 2, &mut out).unwrap();
        assert_eq!(out, [0, 1, 9, 9, 0, 1, 6, 7, 9, 9, 6, 7]);
        assert_eq!(split_v_sizes(&[2, -1, 1], 6).unwrap(), vec![2, 3, 1]);
        assert!(split_v_sizes(&[2, -1, -1], 6).is_err());
        assert!(split_v_sizes(&[2, 2], 6).is_err());
        assert!(split_v_sizes(&[7, -1], 6).is_err());
        assert!(split_v_sizes(&[-2, 8], 6).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let axis = g.tensor(kTfLiteInt32, &[], &[-1i32], None, true);
        let x = g.tensor(kTfLiteFloat32, &[2, 2], &[1.0f32, 2.0, 3.0, 4.0], None, false);
        let (o1, o2) = (g.output(kTfLiteFloat32, None), g.output(kTfLiteFloat32, None));
        let p = TfLiteSplitParams { num_splits: 2 };
        assert_eq!(g.run(&registration(), &[axis, x], &[o1, o2], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!((g.shape(o1), g.data::<f32>(o1)), (vec![2, 1], vec![1.0, 3.0]));
        assert_eq!(g.data::<f32>(o2), vec![2.0, 4.0]);
        let bad = TfLiteSplitParams { num_splits: 3 };
        assert_eq!(g.run(&registration(), &[axis, x], &[o1, o2], Some(bad)), TfLiteStatus::kTfLiteError);
        let packed = g.output(kTfLiteFloat32, None);
        let pp = TfLitePackParams { values_count: 2, axis: 1 };
        assert_eq!(g.run(&pack_registration(), &[o1, o2], &[packed], Some(pp)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(packed), vec![2, 2, 1]);
        assert_eq!(g.data::<f32>(packed), vec![1.0, 2.0, 3.0, 4.0]);
        let (u1, u2) = (g.output(kTfLiteFloat32, None), g.output(kTfLiteFloat32, None));
        let up = TfLiteUnpackParams { num: 2, axis: 0 };
        assert_eq!(g.run(&unpack_registration(), &[x], &[u1, u2], Some(up)), TfLiteStatus::kTfLiteOk);
        assert_eq!((g.shape(u1), g.data::<f32>(u2)), (vec![2], vec![3.0, 4.0]));
    }
}
