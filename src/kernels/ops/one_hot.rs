//! ONE_HOT (TFLite `kernels/one_hot.cc`).
//!
//! Inputs: `indices` (int32 or int64), `depth` (one int32 value, >= 0), `on_value` and
//! `off_value` (one value each, of the output type: float32, int16, int32, int64, int8,
//! uint8 or bool). The output inserts a dimension of size `depth` at `axis` (-1: last) and
//! holds `on_value` where the index (truncated to int32, as TFLite does) equals the
//! position along it, `off_value` elsewhere. A non-constant `depth` must give the shape
//! the model declares (see `shape_util::plan_declared_output`).

use crate::abi::builtin_op_data::TfLiteOneHotParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
    with_elem_type,
};

const OP: &str = "ONE_HOT";

/// The ONE_HOT registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<OneHot>(TfLiteBuiltinOperator::kTfLiteBuiltinOneHot)
}

/// `OneHotComputeImpl`: `indices` split as `[prefix][suffix]` around the new axis.
pub fn one_hot<T: Copy>(indices: &[i64], prefix: usize, depth: usize, on: T, off: T, out: &mut [T]) -> Result<()> {
    let suffix = indices.len().checked_div(prefix).unwrap_or(0);
    if prefix.checked_mul(depth).and_then(|v| v.checked_mul(suffix)) != Some(out.len())
        || suffix * prefix != indices.len()
    {
        crate::bail!("output holds {} values for {} indices and depth {depth}", out.len(), indices.len());
    }
    let mut o = 0;
    for i in 0..prefix {
        for j in 0..depth {
            for k in 0..suffix {
                out[o] = if indices[i * suffix + k] as i32 as i64 == j as i64 { on } else { off };
                o += 1;
            }
        }
    }
    Ok(())
}

struct Operands<'a> {
    indices: TensorView<'a>,
    depth: TensorView<'a>,
    on: TensorView<'a>,
    axis: usize,
}

fn operands<'a>(ctx: &OpCtx<'a>, p: &Option<TfLiteOneHotParams>) -> Result<Operands<'a>> {
    check_arity(ctx, OP, 4, 4, 1)?;
    let indices = ctx.input(0).map_err(in_op(OP))?;
    let depth = ctx.input(1).map_err(in_op(OP))?;
    let on = ctx.input(2).map_err(in_op(OP))?;
    let off = ctx.input(3).map_err(in_op(OP))?;
    ctx.output(0).map_err(in_op(OP))?;
    use TfLiteType::*;
    if !matches!(
        on.dtype,
        kTfLiteFloat32 | kTfLiteInt16 | kTfLiteInt32 | kTfLiteInt64 | kTfLiteInt8 | kTfLiteUInt8 | kTfLiteBool
    ) {
        return Err(op_error(OP, format!("output type {} is not supported", on.dtype.name())));
    }
    if off.dtype != on.dtype {
        return Err(op_error(OP, "on_value and off_value must have the same type"));
    }
    if !matches!(indices.dtype, kTfLiteInt32 | kTfLiteInt64) {
        return Err(op_error(OP, format!("indices type {} is not int32 or int64", indices.dtype.name())));
    }
    if depth.dtype != kTfLiteInt32 || depth.num_elements() != 1 || on.num_elements() != 1 || off.num_elements() != 1 {
        return Err(op_error(OP, "depth (int32), on_value and off_value must hold one value each"));
    }
    if indices.shape.iter().any(|&d| d < 0) {
        return Err(op_error(OP, "negative dimension"));
    }
    let p = p.unwrap_or(TfLiteOneHotParams { axis: -1 });
    let rank = indices.shape.len() as i64;
    let axis = if p.axis == -1 { rank } else { p.axis as i64 };
    if axis < 0 || axis > rank {
        return Err(op_error(OP, format!("axis {} is out of range for output rank {}", p.axis, rank + 1)));
    }
    Ok(Operands { indices, depth, on, axis: axis as usize })
}

fn output_shape(ops: &Operands<'_>) -> Result<Vec<i32>> {
    let depth = int_values(&ops.depth, false).map_err(in_op(OP))?[0];
    if depth < 0 {
        return Err(op_error(OP, format!("depth {depth} must not be negative")));
    }
    let mut shape = ops.indices.shape.to_vec();
    shape.insert(ops.axis, depth as i32);
    let n = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d as usize));
    if n.is_none_or(|n| n > isize::MAX as usize / 8) {
        return Err(op_error(OP, "output too large"));
    }
    Ok(shape)
}

/// ONE_HOT; its State holds the normalised axis, the number of index rows before it, and
/// the output shape when `depth` is constant.
struct OneHot;

/// What Prepare derives for a ONE_HOT node.
struct OneHotPlan {
    axis: usize,
    /// Product of the index dimensions before `axis`.
    prefix: usize,
    /// The output shape; `None` when `depth` is only known at Invoke.
    shape: Option<Vec<i32>>,
}

impl BuiltinKernel for OneHot {
    const NAME: &'static str = OP;
    type Params = Option<TfLiteOneHotParams>;
    type State = OneHotPlan;

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteOneHotParams>) -> Result<OneHotPlan> {
        let ops = operands(ctx, p)?;
        ctx.set_output_type(0, ops.on.dtype).map_err(in_op(OP))?;
        let prefix: usize = ops.indices.shape[..ops.axis].iter().map(|&d| d as usize).product();
        let shape = if known_at_prepare(&ops.depth) {
            let shape = output_shape(&ops)?;
            ctx.resize_output(0, &shape).map_err(in_op(OP))?;
            Some(shape)
        } else {
            plan_declared_output(ctx, OP, 0)?;
            None
        };
        Ok(OneHotPlan { axis: ops.axis, prefix, shape })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &Option<TfLiteOneHotParams>, plan: &mut OneHotPlan) -> Result<()> {
        let indices = ctx.input(0).map_err(in_op(OP))?;
        let (on, off) = (ctx.input(2).map_err(in_op(OP))?, ctx.input(3).map_err(in_op(OP))?);
        let depth = match &plan.shape {
            Some(shape) => shape[plan.axis] as usize,
            None => {
                let ops = Operands { indices, depth: ctx.input(1).map_err(in_op(OP))?, on, axis: plan.axis };
                let shape = output_shape(&ops)?;
                settle_output_shape(ctx, OP, 0, "depth value", &shape)?;
                shape[plan.axis] as usize
            }
        };
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        if out.dtype != on.dtype {
            return Err(op_error(OP, "output type differs from on_value's"));
        }
        let idx = int_values(&indices, false).map_err(in_op(OP))?;
        let prefix = plan.prefix;
        with_elem_type!(on.dtype, OP, T => {
            let (a, b) = (on.data::<T>()?[0], off.data::<T>()?[0]);
            if prefix == 0 { Ok(()) } else { one_hot::<T>(&idx, prefix, depth, a, b, out.data_mut::<T>()?) }
        })
        .map_err(|e: Error| op_error(OP, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn compute() {
        // one_hot_test.cc BasicFloat: indices [0,1,2], depth 3.
        let mut out = [0f32; 9];
        one_hot(&[0, 1, 2], 3, 3, 1.0, 0.0, &mut out).unwrap();
        assert_eq!(out, [1., 0., 0., 0., 1., 0., 0., 0., 1.]);
        // Axis 0: prefix 1.
        let mut out = [0i32; 6];
        one_hot(&[1, 5], 1, 3, 7, -1, &mut out).unwrap();
        assert_eq!(out, [-1, -1, 7, -1, -1, -1]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let idx = g.tensor(kTfLiteInt64, &[2], &[2i64, 0], None, false);
        let depth = g.tensor(kTfLiteInt32, &[], &[3i32], None, true);
        let on = g.tensor(kTfLiteInt8, &[], &[5i8], None, true);
        let off = g.tensor(kTfLiteInt8, &[], &[0i8], None, true);
        let o = g.output(kTfLiteInt8, None);
        let p = TfLiteOneHotParams { axis: -1 };
        assert_eq!(g.run(&registration(), &[idx, depth, on, off], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 3]);
        assert_eq!(g.data::<i8>(o), vec![0, 0, 5, 5, 0, 0]);
        let o2 = g.output(kTfLiteInt8, None);
        let bad = TfLiteOneHotParams { axis: 3 };
        assert_eq!(g.run(&registration(), &[idx, depth, on, off], &[o2], Some(bad)), TfLiteStatus::kTfLiteError);
    }
}
