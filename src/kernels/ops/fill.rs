//! SHAPE, RANK, FILL, ZEROS_LIKE and RANGE (TFLite `kernels/shape.cc`, `rank.cc`,
//! `fill.cc`, `zeros_like.cc`, `range.cc`): tensors generated from shapes or scalars.
//!
//! SHAPE writes the input's dimensions as int32 or int64 (`out_type`), RANK the input's
//! rank as an int32 scalar. FILL repeats a scalar value over the shape given by a 1-D
//! int32/int64 `dims` tensor (quantized values keep their scale and zero point).
//! ZEROS_LIKE (float32, int32, int64). RANGE (int32, int64, float32) with TFLite's size
//! formula and accumulation (`value += delta`). FILL's `dims` and RANGE's scalars decide
//! the output shape: when they are not constant the output is dynamic and is sized in
//! Eval (see `shape_util::plan_declared_output`).

use crate::abi::builtin_op_data::TfLiteShapeParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, check_out_shape, check_type, in_op, int_values, known_at_prepare, op_error, plan_declared_output,
    settle_output_shape, to_i32, with_elem_type,
};

/// The SHAPE registration.
pub fn shape_registration() -> TfLiteRegistration {
    kernel::registration::<Shape>(TfLiteBuiltinOperator::kTfLiteBuiltinShape)
}

/// The RANK registration.
pub fn rank_registration() -> TfLiteRegistration {
    kernel::registration::<Rank>(TfLiteBuiltinOperator::kTfLiteBuiltinRank)
}

/// The FILL registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Fill>(TfLiteBuiltinOperator::kTfLiteBuiltinFill)
}

/// The ZEROS_LIKE registration.
pub fn zeros_like_registration() -> TfLiteRegistration {
    kernel::registration::<ZerosLike>(TfLiteBuiltinOperator::kTfLiteBuiltinZerosLike)
}

/// The RANGE registration.
pub fn range_registration() -> TfLiteRegistration {
    kernel::registration::<Range>(TfLiteBuiltinOperator::kTfLiteBuiltinRange)
}

// ---------------------------------------------------------------------------------------
// SHAPE / RANK
// ---------------------------------------------------------------------------------------

const SHAPE: &str = "SHAPE";
const RANK: &str = "RANK";

fn shape_out_type(p: &TfLiteShapeParams) -> Result<TfLiteType> {
    match p.out_type {
        t @ (TfLiteType::kTfLiteInt32 | TfLiteType::kTfLiteInt64) => Ok(t),
        other => Err(op_error(SHAPE, format!("output type {} is not supported", other.name()))),
    }
}

/// SHAPE; its State is empty (the output type is in the options, the values are the
/// input's dimensions).
struct Shape;

impl BuiltinKernel for Shape {
    const NAME: &'static str = SHAPE;
    type Params = TfLiteShapeParams;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteShapeParams) -> Result<()> {
        check_arity(ctx, SHAPE, 1, 1, 1)?;
        let input = ctx.input(0).map_err(in_op(SHAPE))?;
        ctx.set_output_type(0, shape_out_type(p)?).map_err(in_op(SHAPE))?;
        ctx.resize_output(0, &[input.shape.len() as i32]).map_err(in_op(SHAPE))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteShapeParams, _: &mut ()) -> Result<()> {
        check_arity(ctx, SHAPE, 1, 1, 1)?;
        let input = ctx.input(0).map_err(in_op(SHAPE))?;
        let mut out = ctx.output(0).map_err(in_op(SHAPE))?;
        check_out_shape(SHAPE, out.shape, &[input.shape.len() as i32])?;
        match out.dtype {
            TfLiteType::kTfLiteInt32 => out.data_mut::<i32>()?.copy_from_slice(input.shape),
            TfLiteType::kTfLiteInt64 => {
                for (o, &d) in out.data_mut::<i64>()?.iter_mut().zip(input.shape) {
                    *o = i64::from(d);
                }
            }
            other => return Err(op_error(SHAPE, format!("output type {} is not supported", other.name()))),
        }
        Ok(())
    }
}

/// RANK; its State is empty (the value is the input's rank).
struct Rank;

impl BuiltinKernel for Rank {
    const NAME: &'static str = RANK;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        check_arity(ctx, RANK, 1, 1, 1)?;
        ctx.set_output_type(0, TfLiteType::kTfLiteInt32).map_err(in_op(RANK))?;
        ctx.resize_output(0, &[]).map_err(in_op(RANK))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        check_arity(ctx, RANK, 1, 1, 1)?;
        let input = ctx.input(0).map_err(in_op(RANK))?;
        let mut out = ctx.output(0).map_err(in_op(RANK))?;
        let o = out.data_mut::<i32>().map_err(in_op(RANK))?;
        if o.len() != 1 {
            return Err(op_error(RANK, "the output must be a scalar"));
        }
        o[0] = input.shape.len() as i32;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// FILL / ZEROS_LIKE
// ---------------------------------------------------------------------------------------

const FILL: &str = "FILL";
const ZEROS_LIKE: &str = "ZEROS_LIKE";

fn fill_operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, FILL, 2, 2, 1)?;
    let dims = ctx.input(0).map_err(in_op(FILL))?;
    let value = ctx.input(1).map_err(in_op(FILL))?;
    if dims.shape.len() != 1 {
        return Err(op_error(FILL, "dims must be a vector"));
    }
    use TfLiteType::*;
    check_type(FILL, "dims", dims.dtype, &[kTfLiteInt32, kTfLiteInt64])?;
    if !value.shape.is_empty() {
        return Err(op_error(FILL, "value must be a scalar"));
    }
    check_type(
        FILL,
        "value",
        value.dtype,
        &[kTfLiteInt8, kTfLiteInt16, kTfLiteInt32, kTfLiteInt64, kTfLiteFloat16, kTfLiteFloat32, kTfLiteBool],
    )?;
    Ok((dims, value))
}

fn fill_shape(dims: &TensorView<'_>) -> Result<Vec<i32>> {
    int_values(dims, false)?
        .into_iter()
        .map(|d| {
            if d < 0 {
                crate::bail!("fill dimensions must be >= 0, got {d}");
            }
            to_i32(d, "dimension")
        })
        .collect::<Result<Vec<_>>>()
        .map_err(in_op(FILL))
}

/// FILL; its State is the output shape when `dims` is constant (`None` when the output is
/// dynamic and sized in Invoke from `dims`' values).
struct Fill;

impl BuiltinKernel for Fill {
    const NAME: &'static str = FILL;
    type Params = ();
    type State = Option<Vec<i32>>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<Vec<i32>>> {
        let (dims, value) = fill_operands(ctx)?;
        ctx.set_output_type(0, value.dtype).map_err(in_op(FILL))?;
        let out = ctx.output(0).map_err(in_op(FILL))?;
        let (vq, oq) = (value.quant(), out.quant());
        if vq.scale != oq.scale || vq.zero_point != oq.zero_point {
            return Err(op_error(FILL, "the output must have the value's scale and zero point"));
        }
        if value.dtype == TfLiteType::kTfLiteInt16 && vq.zero_point != 0 {
            return Err(op_error(FILL, "int16 zero point must be 0"));
        }
        if !known_at_prepare(&dims) {
            plan_declared_output(ctx, FILL, 0)?;
            return Ok(None);
        }
        let shape = fill_shape(&dims)?;
        ctx.resize_output(0, &shape).map_err(in_op(FILL))?;
        Ok(Some(shape))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), shape: &mut Option<Vec<i32>>) -> Result<()> {
        let (dims, value) = fill_operands(ctx)?;
        match shape {
            Some(shape) => settle_output_shape(ctx, FILL, 0, "dims values", shape)?,
            None => settle_output_shape(ctx, FILL, 0, "dims values", &fill_shape(&dims)?)?,
        }
        let mut out = ctx.output(0).map_err(in_op(FILL))?;
        with_elem_type!(value.dtype, FILL, T => {
            let v = value.data::<T>()?[0];
            out.data_mut::<T>()?.fill(v);
            Ok(())
        })
        .map_err(in_op(FILL))
    }
}

/// ZEROS_LIKE; its State is empty (nothing to derive beyond the output shape).
struct ZerosLike;

impl BuiltinKernel for ZerosLike {
    const NAME: &'static str = ZEROS_LIKE;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        check_arity(ctx, ZEROS_LIKE, 1, 1, 1)?;
        let input = ctx.input(0).map_err(in_op(ZEROS_LIKE))?;
        use TfLiteType::*;
        check_type(ZEROS_LIKE, "input", input.dtype, &[kTfLiteInt64, kTfLiteInt32, kTfLiteFloat32])?;
        ctx.set_output_type(0, input.dtype).map_err(in_op(ZEROS_LIKE))?;
        ctx.resize_output(0, input.shape).map_err(in_op(ZEROS_LIKE))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        check_arity(ctx, ZEROS_LIKE, 1, 1, 1)?;
        let input = ctx.input(0).map_err(in_op(ZEROS_LIKE))?;
        let mut out = ctx.output(0).map_err(in_op(ZEROS_LIKE))?;
        check_out_shape(ZEROS_LIKE, out.shape, input.shape)?;
        with_elem_type!(out.dtype, ZEROS_LIKE, T => {
            out.data_mut::<T>()?.fill(T::default());
            Ok(())
        })
        .map_err(in_op(ZEROS_LIKE))
    }
}

// ---------------------------------------------------------------------------------------
// RANGE
// ---------------------------------------------------------------------------------------

const RANGE: &str = "RANGE";

/// RANGE's element count for integers: `ceil(|limit - start| / |delta|)`.
pub fn range_size_int(start: i64, limit: i64, delta: i64) -> Result<usize> {
    if delta == 0 {
        crate::bail!("delta must not be 0");
    }
    if !((start >= limit && delta < 0) || (start <= limit && delta > 0)) {
        crate::bail!("start {start}, limit {limit} and delta {delta} give a negative size");
    }
    let span = (i128::from(limit) - i128::from(start)).abs();
    let d = i128::from(delta).abs();
    let n = (span + d - 1) / d;
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= i32::MAX as usize)
        .ok_or_else(|| crate::error::Error::new("range too large"))
}

/// RANGE's element count for floats: `ceil(|(limit - start) / delta|)`, in `f32`.
pub fn range_size_f32(start: f32, limit: f32, delta: f32) -> Result<usize> {
    if delta == 0.0 {
        crate::bail!("delta must not be 0");
    }
    if !((start >= limit && delta < 0.0) || (start <= limit && delta > 0.0)) {
        crate::bail!("start {start}, limit {limit} and delta {delta} give a negative size");
    }
    let n = ((limit - start) / delta).abs().ceil();
    if !(n >= 0.0 && n <= i32::MAX as f32) {
        crate::bail!("range size {n} is invalid");
    }
    Ok(n as usize)
}

fn range_operands<'a>(ctx: &OpCtx<'a>) -> Result<[TensorView<'a>; 3]> {
    check_arity(ctx, RANGE, 3, 3, 1)?;
    let t = [ctx.input(0), ctx.input(1), ctx.input(2)];
    let [a, b, c] = t;
    let t = [a.map_err(in_op(RANGE))?, b.map_err(in_op(RANGE))?, c.map_err(in_op(RANGE))?];
    for x in &t {
        if !x.shape.is_empty() {
            return Err(op_error(RANGE, "start, limit and delta must be scalars"));
        }
        if x.dtype != t[0].dtype {
            return Err(op_error(RANGE, "start, limit and delta must have the same type"));
        }
    }
    use TfLiteType::*;
    check_type(RANGE, "input", t[0].dtype, &[kTfLiteFloat32, kTfLiteInt32, kTfLiteInt64])?;
    Ok(t)
}

fn range_size(t: &[TensorView<'_>; 3]) -> Result<usize> {
    match t[0].dtype {
        TfLiteType::kTfLiteFloat32 => {
            range_size_f32(t[0].data::<f32>()?[0], t[1].data::<f32>()?[0], t[2].data::<f32>()?[0])
        }
        _ => {
            let v = |x: &TensorView<'_>| -> Result<i64> { Ok(int_values(x, false)?[0]) };
            range_size_int(v(&t[0])?, v(&t[1])?, v(&t[2])?)
        }
    }
    .map_err(in_op(RANGE))
}

/// RANGE; its State is the element count when start, limit and delta are constant
/// (`None` when the output is dynamic and sized in Invoke from their values).
struct Range;

impl BuiltinKernel for Range {
    const NAME: &'static str = RANGE;
    type Params = ();
    type State = Option<usize>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<usize>> {
        let t = range_operands(ctx)?;
        ctx.set_output_type(0, t[0].dtype).map_err(in_op(RANGE))?;
        if !t.iter().all(known_at_prepare) {
            plan_declared_output(ctx, RANGE, 0)?;
            return Ok(None);
        }
        let n = range_size(&t)?;
        ctx.resize_output(0, &[n as i32]).map_err(in_op(RANGE))?;
        Ok(Some(n))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), size: &mut Option<usize>) -> Result<()> {
        let t = range_operands(ctx)?;
        let n = match *size {
            Some(n) => n,
            None => range_size(&t)?,
        };
        settle_output_shape(ctx, RANGE, 0, "start, limit and delta values", &[n as i32])?;
        let mut out = ctx.output(0).map_err(in_op(RANGE))?;
        match t[0].dtype {
            TfLiteType::kTfLiteFloat32 => {
                let (start, delta) = (t[0].data::<f32>()?[0], t[2].data::<f32>()?[0]);
                let mut v = start;
                for o in out.data_mut::<f32>()? {
                    *o = v;
                    v += delta;
                }
            }
            TfLiteType::kTfLiteInt32 => {
                let (start, delta) = (int_values(&t[0], false)?[0] as i32, int_values(&t[2], false)?[0] as i32);
                let mut v = start;
                for o in out.data_mut::<i32>()? {
                    *o = v;
                    v = v.wrapping_add(delta);
                }
            }
            _ => {
                let (start, delta) = (int_values(&t[0], false)?[0], int_values(&t[2], false)?[0]);
                let mut v = start;
                for o in out.data_mut::<i64>()? {
                    *o = v;
                    v = v.wrapping_add(delta);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn range_sizes() {
        assert_eq!(range_size_int(1, 11, 2).unwrap(), 5);
        assert_eq!(range_size_int(10, 0, -3).unwrap(), 4);
        assert_eq!(range_size_int(0, 0, 1).unwrap(), 0);
        assert!(range_size_int(0, 5, -1).is_err());
        assert!(range_size_int(0, 5, 0).is_err());
        assert_eq!(range_size_f32(0.0, 1.0, 0.3).unwrap(), 4);
        assert!(range_size_f32(0.0, 1.0, f32::NAN).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[2, 3], &[0.0f32; 6], None, false);
        let o = g.output(kTfLiteInt32, None);
        let p = TfLiteShapeParams { out_type: kTfLiteInt64 };
        assert_eq!(g.run(&shape_registration(), &[x], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i64>(o), vec![2, 3]);
        let r = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&rank_registration(), &[x], &[r], None), TfLiteStatus::kTfLiteOk);
        assert_eq!((g.shape(r), g.data::<i32>(r)), (vec![], vec![2]));
        let d = g.tensor(kTfLiteInt32, &[2], &[2i32, 2], None, true);
        let v = g.tensor(kTfLiteFloat32, &[], &[1.5f32], None, false);
        let f = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[d, v], &[f], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(f), vec![1.5; 4]);
        let z = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&zeros_like_registration(), &[f], &[z], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(z), vec![0.0; 4]);
        let (s, l, dl) = (
            g.tensor(kTfLiteInt32, &[], &[1i32], None, true),
            g.tensor(kTfLiteInt32, &[], &[11i32], None, true),
            g.tensor(kTfLiteInt32, &[], &[2i32], None, true),
        );
        let ro = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&range_registration(), &[s, l, dl], &[ro], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(ro), vec![1, 3, 5, 7, 9]);
        // Non-constant dims: the output is dynamic and takes its shape in Eval.
        let dd = g.tensor(kTfLiteInt32, &[2], &[2i32, 3], None, false);
        let f2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[dd, v], &[f2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!((g.shape(f2), g.data::<f32>(f2)), (vec![2, 3], vec![1.5; 6]));
        let bad = g.tensor(kTfLiteInt32, &[2], &[2i32, -3], None, false);
        let f3 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[bad, v], &[f3], None), TfLiteStatus::kTfLiteError);
    }
}
