//! ATAN2 (TFLite `kernels/atan2.cc`): `atan2(y, x)` element by element.
//!
//! Inputs `y` and `x` (float32 or float64, one type) of the same rank; the output has
//! `y`'s shape. TFLite pairs the elements in flat order and checks only the ranks; here
//! `x` must also hold at least as many elements as `y` (TFLite would read past it).

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "ATAN2";

/// The ATAN2 registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Atan2>(TfLiteBuiltinOperator::kTfLiteBuiltinAtan2)
}

/// ATAN2; stateless.
struct Atan2;

fn check(ctx: &OpCtx<'_>) -> Result<TfLiteType> {
    check_arity(ctx, OP, 2, 2, 1)?;
    let y = ctx.input(0).map_err(in_op(OP))?;
    let x = ctx.input(1).map_err(in_op(OP))?;
    let out = ctx.output(0).map_err(in_op(OP))?;
    if y.shape.len() != x.shape.len() {
        return Err(op_error(OP, format!("inputs have ranks {} and {}", y.shape.len(), x.shape.len())));
    }
    if y.dtype != x.dtype || out.dtype != y.dtype {
        return Err(op_error(OP, "inputs and output must have one type"));
    }
    if !matches!(y.dtype, TfLiteType::kTfLiteFloat32 | TfLiteType::kTfLiteFloat64) {
        return Err(op_error(OP, format!("type {} is not supported", y.dtype.name())));
    }
    if y.shape.iter().chain(x.shape).any(|&d| d < 0) || x.num_elements() < y.num_elements() {
        return Err(op_error(OP, format!("x shape {:?} does not cover y shape {:?}", x.shape, y.shape)));
    }
    Ok(y.dtype)
}

impl BuiltinKernel for Atan2 {
    const NAME: &'static str = OP;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        check(ctx)?;
        let y = ctx.input(0).map_err(in_op(OP))?;
        ctx.resize_output(0, y.shape).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let t = check(ctx)?;
        let (y, x) = (ctx.input(0).map_err(in_op(OP))?, ctx.input(1).map_err(in_op(OP))?);
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        if out.num_elements() != y.num_elements() {
            return Err(op_error(OP, "output size differs from y's"));
        }
        if t == TfLiteType::kTfLiteFloat32 {
            for ((o, &a), &b) in out.data_mut::<f32>()?.iter_mut().zip(y.data::<f32>()?).zip(x.data::<f32>()?) {
                *o = a.atan2(b);
            }
        } else {
            for ((o, &a), &b) in out.data_mut::<f64>()?.iter_mut().zip(y.data::<f64>()?).zip(x.data::<f64>()?) {
                *o = a.atan2(b);
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
    fn glue() {
        let mut g = Graph::new();
        let y = g.tensor(kTfLiteFloat32, &[4], &[1f32, 1.0, -1.0, 0.0], None, false);
        let x = g.tensor(kTfLiteFloat32, &[4], &[1f32, -1.0, 0.0, -2.0], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[y, x], &[o], None), TfLiteStatus::kTfLiteOk);
        let pi = std::f32::consts::PI;
        assert_eq!(g.data::<f32>(o), vec![pi / 4.0, 3.0 * pi / 4.0, -pi / 2.0, pi]);
        let short = g.tensor(kTfLiteFloat32, &[2], &[1f32, 1.0], None, false);
        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[y, short], &[o2], None), TfLiteStatus::kTfLiteError);
        let i = g.tensor(kTfLiteInt32, &[1], &[1i32], None, false);
        let o3 = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&registration(), &[i, i], &[o3], None), TfLiteStatus::kTfLiteError);
    }
}
