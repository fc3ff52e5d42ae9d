//! ADD_N (TFLite `kernels/add_n.cc`, `reference/add_n.h`).
//!
//! The elementwise sum of two or more float32 or int32 tensors of one shape. Each element
//! sums the inputs in order starting from 0, as TFLite's reference kernel (and its
//! optimized kernel with one thread); int32 sums wrap.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{in_op, op_error};

const OP: &str = "ADD_N";

/// The ADD_N registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<AddN>(TfLiteBuiltinOperator::kTfLiteBuiltinAddN)
}

/// `out[i] = 0 + inputs[0][i] + inputs[1][i] + ...` with `add`.
pub fn add_n<T: Copy + Default>(inputs: &[&[T]], out: &mut [T], add: impl Fn(T, T) -> T) -> Result<()> {
    if let Some(bad) = inputs.iter().find(|x| x.len() != out.len()) {
        crate::bail!("an input holds {} elements, the output {}", bad.len(), out.len());
    }
    for (i, o) in out.iter_mut().enumerate() {
        let mut acc = T::default();
        for x in inputs {
            acc = add(acc, x[i]);
        }
        *o = acc;
    }
    Ok(())
}

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<Vec<TensorView<'a>>> {
    let n = ctx.num_inputs();
    if n < 2 {
        return Err(op_error(OP, format!("expected at least 2 inputs, got {n}")));
    }
    if ctx.num_outputs() != 1 {
        return Err(op_error(OP, format!("expected 1 output, got {}", ctx.num_outputs())));
    }
    let inputs: Vec<TensorView<'a>> = (0..n).map(|i| ctx.input(i).map_err(in_op(OP))).collect::<Result<_>>()?;
    let first = &inputs[0];
    if !matches!(first.dtype, TfLiteType::kTfLiteFloat32 | TfLiteType::kTfLiteInt32) {
        return Err(op_error(OP, format!("type {} is not supported (float32, int32)", first.dtype.name())));
    }
    for x in &inputs[1..] {
        if x.dtype != first.dtype || x.shape != first.shape {
            return Err(op_error(OP, "all inputs must have the same type and shape"));
        }
    }
    ctx.output(0).map_err(in_op(OP))?;
    Ok(inputs)
}

/// ADD_N; its State is empty (the sum depends on nothing but the operands).
struct AddN;

impl BuiltinKernel for AddN {
    const NAME: &'static str = OP;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        let inputs = operands(ctx)?;
        ctx.set_output_type(0, inputs[0].dtype).map_err(in_op(OP))?;
        ctx.resize_output(0, inputs[0].shape).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let inputs = operands(ctx)?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        if out.shape != inputs[0].shape || out.dtype != inputs[0].dtype {
            return Err(op_error(OP, "output was not prepared for these inputs"));
        }
        let r = if inputs[0].dtype == TfLiteType::kTfLiteFloat32 {
            let xs: Vec<&[f32]> = inputs.iter().map(|t| t.data::<f32>()).collect::<Result<_>>()?;
            add_n(&xs, out.data_mut::<f32>()?, |a, b| a + b)
        } else {
            let xs: Vec<&[i32]> = inputs.iter().map(|t| t.data::<i32>()).collect::<Result<_>>()?;
            add_n(&xs, out.data_mut::<i32>()?, i32::wrapping_add)
        };
        r.map_err(|e| op_error(OP, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn sums() {
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteFloat32, &[2], &[1f32, 2.], None, false);
        let b = g.tensor(kTfLiteFloat32, &[2], &[0.5f32, -2.], None, false);
        let c = g.tensor(kTfLiteFloat32, &[2], &[3f32, 4.], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[a, b, c], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o), vec![4.5, 4.0]);
        let d = g.tensor(kTfLiteFloat32, &[3], &[1f32, 2., 3.], None, false);
        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[a, d], &[o2], None), TfLiteStatus::kTfLiteError);
        let o3 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[a], &[o3], None), TfLiteStatus::kTfLiteError);
    }
}
