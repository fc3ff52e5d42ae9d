//! RESHAPE, SQUEEZE and EXPAND_DIMS (TFLite `kernels/reshape.cc`, `squeeze.cc`,
//! `expand_dims.cc`): the output holds the input's bytes unchanged under a new shape.
//!
//! RESHAPE takes its shape from input 1 when that is a 1-D int32 tensor, else from the
//! params (`num_dimensions == 1 && shape[0] == 0` meaning a scalar); one `-1` entry is
//! inferred. When the shape tensor (or EXPAND_DIMS's axis) is not constant, TFLite sizes
//! the output's memory as the input's and settles the shape in Eval; this does the same:
//! prepare gives the output the shape the model declares for it (or the input's shape when
//! that does not hold the same number of elements), and Eval resizes it to the real one —
//! the byte count never changes, so the runtime allows that during Invoke.

use crate::abi::builtin_op_data::{
    TFLITE_RESHAPE_PARAMS_MAX_DIMENSION_COUNT, TfLiteReshapeParams, TfLiteSqueezeParams,
};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, check_same_quant, check_same_type, element_count, in_op, int_values, known_at_prepare, op_error,
    scalar_int, with_elem_type,
};

/// The RESHAPE registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Reshape>(TfLiteBuiltinOperator::kTfLiteBuiltinReshape)
}

/// The SQUEEZE registration.
pub fn squeeze_registration() -> TfLiteRegistration {
    kernel::registration::<Squeeze>(TfLiteBuiltinOperator::kTfLiteBuiltinSqueeze)
}

/// The EXPAND_DIMS registration.
pub fn expand_dims_registration() -> TfLiteRegistration {
    kernel::registration::<ExpandDims>(TfLiteBuiltinOperator::kTfLiteBuiltinExpandDims)
}

// ---------------------------------------------------------------------------------------
// Shape maths
// ---------------------------------------------------------------------------------------

/// RESHAPE's `ResizeOutput`: resolves a single `-1` from the input's element count
/// (zero-sized dimensions are left out of both products, as TFLite does) and checks that
/// the counts agree.
pub fn resolve_reshape(input_shape: &[i32], requested: &[i64]) -> Result<Vec<i32>> {
    let mut num_in: i64 = 1;
    let mut nonzero_in: i64 = 1;
    for &d in input_shape {
        if d < 0 {
            crate::bail!("input shape {input_shape:?} has a negative dimension");
        }
        num_in = num_in.saturating_mul(i64::from(d));
        if d != 0 {
            nonzero_in = nonzero_in.saturating_mul(i64::from(d));
        }
    }
    let mut out: Vec<i64> = requested.to_vec();
    let mut stretch = None;
    let mut num_out: i64 = 1;
    let mut nonzero_out: i64 = 1;
    for (i, &v) in requested.iter().enumerate() {
        if v == -1 {
            if stretch.is_some() {
                crate::bail!("shape {requested:?} has more than one -1");
            }
            stretch = Some(i);
            continue;
        }
        if v < 0 {
            crate::bail!("shape {requested:?} has a negative dimension");
        }
        if v != 0 {
            nonzero_out = nonzero_out.saturating_mul(v);
        }
        num_out = num_out.saturating_mul(v);
    }
    if let Some(s) = stretch {
        out[s] = if num_in == 0 && num_out != 0 { 0 } else { nonzero_in / nonzero_out };
        num_out = num_out.saturating_mul(out[s]);
    }
    if num_in != num_out {
        crate::bail!("cannot reshape {input_shape:?} ({num_in} elements) to {requested:?} ({num_out} elements)");
    }
    out.iter()
        .map(|&v| i32::try_from(v).map_err(|_| crate::error::Error::new(format!("dimension {v} too large"))))
        .collect()
}

/// SQUEEZE's output shape: drops the listed size-1 dimensions, or every size-1 dimension
/// when none is listed.
pub fn squeeze_shape(input_shape: &[i32], squeeze_dims: &[i32]) -> Result<Vec<i32>> {
    let rank = input_shape.len();
    if rank > 8 {
        crate::bail!("input rank {rank} is more than 8");
    }
    let mut drop = vec![false; rank];
    if squeeze_dims.is_empty() {
        for (i, &d) in input_shape.iter().enumerate() {
            drop[i] = d == 1;
        }
    } else {
        for &s in squeeze_dims {
            let cur = if s < 0 { s as i64 + rank as i64 } else { s as i64 };
            if cur < 0 || cur >= rank as i64 || input_shape[cur as usize] != 1 {
                crate::bail!("cannot squeeze dimension {s} of shape {input_shape:?}");
            }
            drop[cur as usize] = true;
        }
    }
    Ok(input_shape.iter().zip(&drop).filter(|(_, d)| !**d).map(|(&v, _)| v).collect())
}

/// EXPAND_DIMS's output shape: a 1 inserted at `axis` (in `[-rank-1, rank]`).
pub fn expand_dims_shape(input_shape: &[i32], axis: i64) -> Result<Vec<i32>> {
    let rank = input_shape.len() as i64;
    let a = if axis < 0 { rank + 1 + axis } else { axis };
    if a < 0 || a > rank {
        crate::bail!("axis {axis} is out of range for an input of rank {rank}");
    }
    let mut out = input_shape.to_vec();
    out.insert(a as usize, 1);
    Ok(out)
}

/// Copies the input's elements to the output unchanged.
fn copy_data(op: &'static str, input: &TensorView<'_>, ctx: &OpCtx<'_>) -> Result<()> {
    let mut out = ctx.output(0).map_err(in_op(op))?;
    if out.num_elements() != input.num_elements() {
        return Err(op_error(
            op,
            format!("output holds {} elements, input {}", out.num_elements(), input.num_elements()),
        ));
    }
    with_elem_type!(input.dtype, op, T => {
        out.data_mut::<T>()?.copy_from_slice(input.data::<T>()?);
        Ok(())
    })
    .map_err(in_op(op))
}

// ---------------------------------------------------------------------------------------
// RESHAPE
// ---------------------------------------------------------------------------------------

const RESHAPE: &str = "RESHAPE";

/// Where RESHAPE's requested shape comes from.
enum ShapeSource<'a> {
    Tensor(TensorView<'a>),
    Params(Vec<i64>),
}

fn reshape_source<'a>(ctx: &OpCtx<'a>, p: &Option<TfLiteReshapeParams>) -> Result<ShapeSource<'a>> {
    if ctx.num_inputs() == 2 {
        let shape = ctx.input(1).map_err(in_op(RESHAPE))?;
        if shape.shape.len() == 1 && shape.dtype == TfLiteType::kTfLiteInt32 {
            return Ok(ShapeSource::Tensor(shape));
        }
    }
    let p = p.as_ref().ok_or_else(|| op_error(RESHAPE, "no shape tensor and no builtin params"))?;
    let n = usize::try_from(p.num_dimensions)
        .ok()
        .filter(|&n| n <= TFLITE_RESHAPE_PARAMS_MAX_DIMENSION_COUNT)
        .ok_or_else(|| op_error(RESHAPE, format!("params have {} dimensions", p.num_dimensions)))?;
    let n = if n == 1 && p.shape[0] == 0 { 0 } else { n };
    Ok(ShapeSource::Params(p.shape[..n].iter().map(|&v| i64::from(v)).collect()))
}

fn reshape_target(input: &TensorView<'_>, src: &ShapeSource<'_>) -> Result<Vec<i32>> {
    match src {
        ShapeSource::Tensor(t) => resolve_reshape(input.shape, &int_values(t, false)?),
        ShapeSource::Params(v) => resolve_reshape(input.shape, v),
    }
    .map_err(in_op(RESHAPE))
}

/// A shape for an output whose real shape is only known in Eval: the one it has (the
/// model's) when it holds `count` elements, else `fallback`.
fn provisional_shape(ctx: &OpCtx<'_>, count: usize, fallback: &[i32]) -> Result<Vec<i32>> {
    let out = ctx.output(0)?;
    Ok(if element_count(out.shape).ok() == Some(count) { out.shape.to_vec() } else { fallback.to_vec() })
}

/// RESHAPE; its State is the output shape when it is known at Prepare (from constant
/// shape values or the params), `None` when the shape tensor is only known at Invoke.
struct Reshape;

impl BuiltinKernel for Reshape {
    const NAME: &'static str = RESHAPE;
    type Params = Option<TfLiteReshapeParams>;
    type State = Option<Vec<i32>>;

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteReshapeParams>) -> Result<Option<Vec<i32>>> {
        check_arity(ctx, RESHAPE, 1, 2, 1)?;
        let input = ctx.input(0).map_err(in_op(RESHAPE))?;
        let out = ctx.output(0).map_err(in_op(RESHAPE))?;
        check_same_type(RESHAPE, &input, &out)?;
        let src = reshape_source(ctx, p)?;
        if let ShapeSource::Tensor(t) = &src
            && !known_at_prepare(t)
        {
            let shape = provisional_shape(ctx, element_count(input.shape).map_err(in_op(RESHAPE))?, input.shape)?;
            ctx.resize_output(0, &shape).map_err(in_op(RESHAPE))?;
            return Ok(None);
        }
        let shape = reshape_target(&input, &src)?;
        ctx.resize_output(0, &shape).map_err(in_op(RESHAPE))?;
        Ok(Some(shape))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &Option<TfLiteReshapeParams>, planned: &mut Option<Vec<i32>>) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(RESHAPE))?;
        if planned.is_none() {
            let shape = reshape_target(&input, &reshape_source(ctx, p)?)?;
            if ctx.output(0)?.shape != shape.as_slice() {
                ctx.resize_output(0, &shape).map_err(in_op(RESHAPE))?;
            }
        }
        copy_data(RESHAPE, &input, ctx)
    }
}

// ---------------------------------------------------------------------------------------
// SQUEEZE
// ---------------------------------------------------------------------------------------

const SQUEEZE: &str = "SQUEEZE";

fn squeeze_target(p: &Option<TfLiteSqueezeParams>, input: &TensorView<'_>) -> Result<Vec<i32>> {
    let p = p.unwrap_or_default();
    let n = usize::try_from(p.num_squeeze_dims)
        .ok()
        .filter(|&n| n <= p.squeeze_dims.len())
        .ok_or_else(|| op_error(SQUEEZE, format!("params list {} dimensions", p.num_squeeze_dims)))?;
    squeeze_shape(input.shape, &p.squeeze_dims[..n]).map_err(in_op(SQUEEZE))
}

/// SQUEEZE; the output shape is settled at Prepare, so its State is empty.
struct Squeeze;

impl BuiltinKernel for Squeeze {
    const NAME: &'static str = SQUEEZE;
    type Params = Option<TfLiteSqueezeParams>;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteSqueezeParams>) -> Result<()> {
        check_arity(ctx, SQUEEZE, 1, 1, 1)?;
        let input = ctx.input(0).map_err(in_op(SQUEEZE))?;
        let out = ctx.output(0).map_err(in_op(SQUEEZE))?;
        check_same_type(SQUEEZE, &input, &out)?;
        let shape = squeeze_target(p, &input)?;
        ctx.resize_output(0, &shape).map_err(in_op(SQUEEZE))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &Option<TfLiteSqueezeParams>, _: &mut ()) -> Result<()> {
        copy_data(SQUEEZE, &ctx.input(0).map_err(in_op(SQUEEZE))?, ctx)
    }
}

// ---------------------------------------------------------------------------------------
// EXPAND_DIMS
// ---------------------------------------------------------------------------------------

const EXPAND_DIMS: &str = "EXPAND_DIMS";

/// EXPAND_DIMS; its State is whether the axis is constant (the output shape then settled
/// at Prepare).
struct ExpandDims;

impl BuiltinKernel for ExpandDims {
    const NAME: &'static str = EXPAND_DIMS;
    type Params = ();
    type State = bool;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<bool> {
        check_arity(ctx, EXPAND_DIMS, 2, 2, 1)?;
        let input = ctx.input(0).map_err(in_op(EXPAND_DIMS))?;
        let axis = ctx.input(1).map_err(in_op(EXPAND_DIMS))?;
        ctx.set_output_type(0, input.dtype).map_err(in_op(EXPAND_DIMS))?;
        let out = ctx.output(0).map_err(in_op(EXPAND_DIMS))?;
        check_same_quant(EXPAND_DIMS, &input, &out)?;
        if input.dtype == TfLiteType::kTfLiteInt16 && input.quant().zero_point != 0 {
            return Err(op_error(EXPAND_DIMS, "int16 zero point must be 0"));
        }
        let constant = known_at_prepare(&axis);
        let shape = if constant {
            expand_dims_shape(input.shape, scalar_int(&axis).map_err(in_op(EXPAND_DIMS))?)
                .map_err(in_op(EXPAND_DIMS))?
        } else {
            let mut fallback = input.shape.to_vec();
            fallback.insert(0, 1);
            provisional_shape(ctx, element_count(input.shape).map_err(in_op(EXPAND_DIMS))?, &fallback)?
        };
        ctx.resize_output(0, &shape).map_err(in_op(EXPAND_DIMS))?;
        Ok(constant)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), constant: &mut bool) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(EXPAND_DIMS))?;
        if !*constant {
            let axis = ctx.input(1).map_err(in_op(EXPAND_DIMS))?;
            let shape = expand_dims_shape(input.shape, scalar_int(&axis).map_err(in_op(EXPAND_DIMS))?)
                .map_err(in_op(EXPAND_DIMS))?;
            if ctx.output(0)?.shape != shape.as_slice() {
                ctx.resize_output(0, &shape).map_err(in_op(EXPAND_DIMS))?;
            }
        }
        copy_data(EXPAND_DIMS, &input, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn reshape_shapes() {
        assert_eq!(resolve_reshape(&[2, 3, 4], &[4, -1, 2]).unwrap(), vec![4, 3, 2]);
        assert_eq!(resolve_reshape(&[2, 3], &[6]).unwrap(), vec![6]);
        assert_eq!(resolve_reshape(&[1], &[]).unwrap(), Vec::<i32>::new());
        assert_eq!(resolve_reshape(&[0, 3], &[-1, 3]).unwrap(), vec![0, 3]);
        assert_eq!(resolve_reshape(&[0, 3], &[3, -1]).unwrap(), vec![3, 0]);
        assert!(resolve_reshape(&[2, 3], &[4, -1]).is_err());
        assert!(resolve_reshape(&[2, 3], &[-1, -1]).is_err());
        assert!(resolve_reshape(&[2, 3], &[7]).is_err());
        assert!(resolve_reshape(&[2, 3], &[-2, 3]).is_err());
    }

    #[test]
    fn squeeze_and_expand_shapes() {
        assert_eq!(squeeze_shape(&[1, 3, 1, 2], &[]).unwrap(), vec![3, 2]);
        assert_eq!(squeeze_shape(&[1, 3, 1, 2], &[-2]).unwrap(), vec![1, 3, 2]);
        assert!(squeeze_shape(&[1, 3], &[1]).is_err());
        assert!(squeeze_shape(&[1, 3], &[5]).is_err());
        assert_eq!(expand_dims_shape(&[2, 3], 0).unwrap(), vec![1, 2, 3]);
        assert_eq!(expand_dims_shape(&[2, 3], -1).unwrap(), vec![2, 3, 1]);
        assert_eq!(expand_dims_shape(&[2, 3], 2).unwrap(), vec![2, 3, 1]);
        assert!(expand_dims_shape(&[2, 3], 3).is_err());
        assert!(expand_dims_shape(&[2, 3], -4).is_err());
    }

    #[test]
    fn reshape_glue() {
        let mut g = Graph::new();
        let data: Vec<f32> = (0..6).map(|v| v as f32).collect();
        let x = g.tensor(kTfLiteFloat32, &[2, 3], &data, None, false);
        let s = g.tensor(kTfLiteInt32, &[2], &[3i32, -1], None, true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<TfLiteReshapeParams>(&registration(), &[x, s], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![3, 2]);
        assert_eq!(g.data::<f32>(o), data);
        // Shape from params.
        let o2 = g.output(kTfLiteFloat32, None);
        let p = TfLiteReshapeParams { shape: [-1, 0, 0, 0, 0, 0, 0, 0], num_dimensions: 1 };
        assert_eq!(g.run(&registration(), &[x], &[o2], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o2), vec![6]);
        // Non-constant shape tensor: settled in Eval.
        let sd = g.tensor(kTfLiteInt32, &[3], &[1i32, 3, 2], None, false);
        let o3 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<TfLiteReshapeParams>(&registration(), &[x, sd], &[o3], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o3), vec![1, 3, 2]);
        // Bad shapes.
        let bad = g.tensor(kTfLiteInt32, &[1], &[7i32], None, true);
        let o4 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<TfLiteReshapeParams>(&registration(), &[x, bad], &[o4], None), TfLiteStatus::kTfLiteError);
    }

    #[test]
    fn squeeze_expand_glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt8, &[1, 2, 1], &[5i8, -3], None, false);
        let o = g.output(kTfLiteInt8, None);
        assert_eq!(g.run::<TfLiteSqueezeParams>(&squeeze_registration(), &[x], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2]);
        assert_eq!(g.data::<i8>(o), vec![5, -3]);
        let a = g.tensor(kTfLiteInt64, &[], &[-1i64], None, true);
        let o2 = g.output(kTfLiteInt8, None);
        assert_eq!(g.run::<()>(&expand_dims_registration(), &[x, a], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o2), vec![1, 2, 1, 1]);
        let bad = g.tensor(kTfLiteInt32, &[], &[9i32], None, true);
        let o3 = g.output(kTfLiteInt8, None);
        assert_eq!(g.run::<()>(&expand_dims_registration(), &[x, bad], &[o3], None), TfLiteStatus::kTfLiteError);
    }
}
