//! ARG_MAX and ARG_MIN (TFLite `kernels/arg_min_max.cc`, `reference/arg_min_max.h`): the
//! index of the largest (smallest) element along `axis`, the first one on ties. Inputs
//! float32, uint8, int8, int32 and bool; axis a one-element int32 or int64 tensor; output
//! int32 or int64 (`output_type`). A non-constant axis makes the output dynamic, sized
//! in Eval (see `shape_util::plan_declared_output`).

use crate::abi::builtin_op_data::{TfLiteArgMaxParams, TfLiteArgMinParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, check_type, in_op, known_at_prepare, normalize_axis, op_error, plan_declared_output, scalar_int,
    settle_output_shape,
};

/// The ARG_MAX registration.
pub fn arg_max_registration() -> TfLiteRegistration {
    kernel::registration::<ArgMax>(TfLiteBuiltinOperator::kTfLiteBuiltinArgMax)
}

/// The ARG_MIN registration.
pub fn arg_min_registration() -> TfLiteRegistration {
    kernel::registration::<ArgMin>(TfLiteBuiltinOperator::kTfLiteBuiltinArgMin)
}

/// `ArgMinMax` on a slice: for each (outer, inner) position, the index along the axis of
/// the element `better` than all before it (strictly), starting from index 0.
pub fn arg_min_max<T: Copy>(
    input: &[T],
    outer: usize,
    axis_size: usize,
    inner: usize,
    better: impl Fn(T, T) -> bool,
    mut store: impl FnMut(usize, usize),
) -> Result<()> {
    if input.len() != outer * axis_size * inner {
        crate::bail!("input holds {} elements, expected {}", input.len(), outer * axis_size * inner);
    }
    if axis_size == 0 {
        return Ok(());
    }
    for o in 0..outer {
        for i in 0..inner {
            let mut best = input[o * axis_size * inner + i];
            let mut best_idx = 0;
            for a in 1..axis_size {
                let v = input[(o * axis_size + a) * inner + i];
                if better(v, best) {
                    best = v;
                    best_idx = a;
                }
            }
            store(o * inner + i, best_idx);
        }
    }
    Ok(())
}

fn name(is_max: bool) -> &'static str {
    if is_max { "ARG_MAX" } else { "ARG_MIN" }
}

fn output_type(t: TfLiteType, is_max: bool) -> Result<TfLiteType> {
    match t {
        TfLiteType::kTfLiteInt32 | TfLiteType::kTfLiteInt64 => Ok(t),
        other => Err(op_error(name(is_max), format!("output type {} is not supported", other.name()))),
    }
}

fn operands<'a>(ctx: &OpCtx<'a>, is_max: bool) -> Result<(TensorView<'a>, TensorView<'a>)> {
    let op = name(is_max);
    check_arity(ctx, op, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(op))?;
    let axis = ctx.input(1).map_err(in_op(op))?;
    if axis.num_elements() != 1 {
        return Err(op_error(op, "axis must hold one value"));
    }
    use TfLiteType::*;
    check_type(op, "axis", axis.dtype, &[kTfLiteInt32, kTfLiteInt64])?;
    check_type(op, "input", input.dtype, &[kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt8, kTfLiteInt32, kTfLiteBool])?;
    if input.shape.is_empty() {
        return Err(op_error(op, "the input must have rank 1 or more"));
    }
    Ok((input, axis))
}

fn geometry(input: &TensorView<'_>, axis: &TensorView<'_>, op: &'static str) -> Result<(usize, Vec<i32>)> {
    let a = normalize_axis(scalar_int(axis).map_err(in_op(op))?, input.shape.len()).map_err(in_op(op))?;
    let mut shape = input.shape.to_vec();
    shape.remove(a);
    Ok((a, shape))
}

/// Sizes of the dimensions before, along and after the reduced axis.
#[derive(Clone, Copy)]
struct Extent {
    outer: usize,
    axis_size: usize,
    inner: usize,
}

fn extent(input: &TensorView<'_>, a: usize) -> Extent {
    let dims: Vec<usize> = input.shape.iter().map(|&d| d.max(0) as usize).collect();
    Extent { outer: dims[..a].iter().product(), axis_size: dims[a], inner: dims[a + 1..].iter().product() }
}

/// Prepare of both ops; the extent when the axis is constant, `None` otherwise.
fn prepare(ctx: &OpCtx<'_>, is_max: bool, out_type: TfLiteType) -> Result<Option<Extent>> {
    let op = name(is_max);
    let (input, axis) = operands(ctx, is_max)?;
    ctx.set_output_type(0, output_type(out_type, is_max)?).map_err(in_op(op))?;
    if !known_at_prepare(&axis) {
        plan_declared_output(ctx, op, 0)?;
        return Ok(None);
    }
    let (a, shape) = geometry(&input, &axis, op)?;
    ctx.resize_output(0, &shape).map_err(in_op(op))?;
    Ok(Some(extent(&input, a)))
}

fn eval(ctx: &OpCtx<'_>, is_max: bool, planned: Option<Extent>) -> Result<()> {
    let op = name(is_max);
    let input = ctx.input(0).map_err(in_op(op))?;
    let e = match planned {
        Some(e) => e,
        None => {
            let (a, shape) = geometry(&input, &ctx.input(1).map_err(in_op(op))?, op)?;
            settle_output_shape(ctx, op, 0, "axis value", &shape)?;
            extent(&input, a)
        }
    };
    let mut out = ctx.output(0).map_err(in_op(op))?;
    let Extent { outer, axis_size, inner } = e;
    macro_rules! run {
        ($t:ty, $o:ty) => {{
            let o = out.data_mut::<$o>()?;
            if o.len() != outer * inner {
                return Err(op_error(op, "output size mismatch"));
            }
            let better: fn($t, $t) -> bool = if is_max { |x, y| x > y } else { |x, y| x < y };
            arg_min_max::<$t>(input.data::<$t>()?, outer, axis_size, inner, better, |k, v| o[k] = v as $o)
        }};
    }
    macro_rules! by_input {
        ($o:ty) => {
            match input.dtype {
                TfLiteType::kTfLiteFloat32 => run!(f32, $o),
                TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteBool => run!(u8, $o),
                TfLiteType::kTfLiteInt8 => run!(i8, $o),
                _ => run!(i32, $o),
            }
        };
    }
    let r = if out.dtype == TfLiteType::kTfLiteInt64 { by_input!(i64) } else { by_input!(i32) };
    r.map_err(in_op(op))
}

/// ARG_MAX; its State holds the outer / axis / inner extents when the axis is constant.
struct ArgMax;

impl BuiltinKernel for ArgMax {
    const NAME: &'static str = "ARG_MAX";
    type Params = TfLiteArgMaxParams;
    type State = Option<Extent>;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteArgMaxParams) -> Result<Option<Extent>> {
        prepare(ctx, true, p.output_type)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteArgMaxParams, e: &mut Option<Extent>) -> Result<()> {
        eval(ctx, true, *e)
    }
}

/// ARG_MIN; its State holds the outer / axis / inner extents when the axis is constant.
struct ArgMin;

impl BuiltinKernel for ArgMin {
    const NAME: &'static str = "ARG_MIN";
    type Params = TfLiteArgMinParams;
    type State = Option<Extent>;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteArgMinParams) -> Result<Option<Extent>> {
        prepare(ctx, false, p.output_type)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteArgMinParams, e: &mut Option<Extent>) -> Result<()> {
        eval(ctx, false, *e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn values() {
        let x = [1.0f32, 5.0, 5.0, 2.0, 0.0, 7.0]; // [2,3]
        let mut out = [0usize; 2];
        arg_min_max(&x, 2, 3, 1, |a, b| a > b, |k, v| out[k] = v).unwrap();
        assert_eq!(out, [1, 2]);
        let mut out = [0usize; 3];
        arg_min_max(&x, 1, 2, 3, |a, b| a < b, |k, v| out[k] = v).unwrap();
        assert_eq!(out, [0, 1, 0]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt8, &[2, 2], &[3i8, -1, 0, 9], None, false);
        let a = g.tensor(kTfLiteInt64, &[], &[1i64], None, true);
        let o = g.output(kTfLiteInt32, None);
        let p = TfLiteArgMaxParams { output_type: kTfLiteInt64 };
        assert_eq!(g.run(&arg_max_registration(), &[x, a], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i64>(o), vec![0, 1]);
        let o2 = g.output(kTfLiteInt32, None);
        let p = TfLiteArgMinParams { output_type: kTfLiteInt32 };
        assert_eq!(g.run(&arg_min_registration(), &[x, a], &[o2], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(o2), vec![1, 0]);
        let bad = TfLiteArgMinParams { output_type: kTfLiteFloat32 };
        assert_eq!(g.run(&arg_min_registration(), &[x, a], &[o2], Some(bad)), TfLiteStatus::kTfLiteError);
    }
}
