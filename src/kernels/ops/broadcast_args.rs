//! BROADCAST_ARGS (TFLite `kernels/broadcast_args.cc`, `reference/broadcast_args.h`): the
//! numpy broadcast of two shapes given as 1-D int32 or int64 tensors.
//!
//! The output (the inputs' type) has as many entries as the longer shape. Dimensions
//! are matched from the right; a dimension of 1 takes the other's, and unequal
//! dimensions, neither 1, are an error (TFLite aborts). As in TFLite, each dimension
//! passes through an `int`, so int64 values are truncated to 32 bits.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, int_values, op_error};

const OP: &str = "BROADCAST_ARGS";

/// The BROADCAST_ARGS registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<BroadcastArgs>(TfLiteBuiltinOperator::kTfLiteBuiltinBroadcastArgs)
}

/// The broadcast of shapes `a` and `b` (each dimension truncated to 32 bits first).
pub fn broadcast_args(a: &[i64], b: &[i64]) -> Result<Vec<i64>> {
    let n = a.len().max(b.len());
    let at = |s: &[i64], back: usize| if back < s.len() { s[s.len() - 1 - back] as i32 } else { 1 };
    let mut out = vec![0i64; n];
    for back in 0..n {
        let (x, y) = (at(a, back), at(b, back));
        out[n - 1 - back] = i64::from(if x == 1 {
            y
        } else if y == 1 || x == y {
            x
        } else {
            crate::bail!("shapes {a:?} and {b:?} do not broadcast: dimensions {x} and {y}");
        });
    }
    Ok(out)
}

/// BROADCAST_ARGS; stateless.
struct BroadcastArgs;

impl BuiltinKernel for BroadcastArgs {
    const NAME: &'static str = OP;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        check_arity(ctx, OP, 2, 2, 1)?;
        let a = ctx.input(0).map_err(in_op(OP))?;
        let b = ctx.input(1).map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?;
        if !matches!(a.dtype, TfLiteType::kTfLiteInt32 | TfLiteType::kTfLiteInt64) {
            return Err(op_error(OP, format!("type {} is not int32 or int64", a.dtype.name())));
        }
        if b.dtype != a.dtype || out.dtype != a.dtype {
            return Err(op_error(OP, "inputs and output must have one type"));
        }
        if a.shape.len() != 1 || b.shape.len() != 1 || a.shape[0] < 0 || b.shape[0] < 0 {
            return Err(op_error(OP, "both shapes must be 1-D tensors"));
        }
        ctx.resize_output(0, &[a.shape[0].max(b.shape[0])]).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let a = int_values(&ctx.input(0).map_err(in_op(OP))?, false).map_err(in_op(OP))?;
        let b = int_values(&ctx.input(1).map_err(in_op(OP))?, false).map_err(in_op(OP))?;
        let shape = broadcast_args(&a, &b).map_err(in_op(OP))?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        if out.num_elements() != shape.len() {
            return Err(op_error(OP, "output size differs from the longer shape's"));
        }
        if out.dtype == TfLiteType::kTfLiteInt64 {
            out.data_mut::<i64>()?.copy_from_slice(&shape);
        } else {
            for (o, &d) in out.data_mut::<i32>()?.iter_mut().zip(&shape) {
                *o = d as i32;
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
    fn shapes() {
        assert_eq!(broadcast_args(&[2, 1, 3], &[4, 1]).unwrap(), [2, 4, 3]);
        assert_eq!(broadcast_args(&[], &[5]).unwrap(), [5]);
        assert_eq!(broadcast_args(&[0], &[1]).unwrap(), [0]);
        assert!(broadcast_args(&[2, 3], &[4]).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteInt64, &[2], &[7i64, 1], None, false);
        let b = g.tensor(kTfLiteInt64, &[3], &[2i64, 1, 5], None, false);
        let o = g.output(kTfLiteInt64, None);
        assert_eq!(g.run::<()>(&registration(), &[a, b], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i64>(o), vec![2, 7, 5]);
        let c = g.tensor(kTfLiteInt64, &[1], &[3i64], None, false);
        let o2 = g.output(kTfLiteInt64, None);
        assert_eq!(g.run::<()>(&registration(), &[b, c], &[o2], None), TfLiteStatus::kTfLiteError);
    }
}
