//! REVERSE_V2 (TFLite `kernels/reverse.cc`).
//!
//! Reverses an input of rank at most 8 along the axes listed in a 1-D int32 tensor
//! (negative axes count from the end). TFLite only accepts axes that form a contiguous
//! run; any set of distinct axes works here (a repeated axis is an error, as in
//! TensorFlow). Any fixed-size element type is moved unchanged.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, int_values, op_error, strides, with_elem_type};

const OP: &str = "REVERSE_V2";
const MAX_RANK: usize = 8;

/// The REVERSE_V2 registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Reverse>(TfLiteBuiltinOperator::kTfLiteBuiltinReverseV2)
}

/// `out` = `input` (shape `shape`) reversed along every dimension `d` with `flip[d]`.
pub fn reverse<T: Copy>(input: &[T], shape: &[usize], flip: &[bool], out: &mut [T]) -> Result<()> {
    let n: usize = shape.iter().product();
    if input.len() != n || out.len() != n || flip.len() != shape.len() {
        crate::bail!("buffers hold {} and {} elements, the shape {shape:?} needs {n}", input.len(), out.len());
    }
    if n == 0 {
        return Ok(());
    }
    let rank = shape.len();
    let dims: Vec<i32> = shape.iter().map(|&d| d as i32).collect();
    let st = strides(&dims);
    let mut idx = vec![0usize; rank];
    for o in out.iter_mut() {
        let src: usize = (0..rank).map(|d| (if flip[d] { shape[d] - 1 - idx[d] } else { idx[d] }) * st[d]).sum();
        *o = input[src];
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, OP, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(OP))?;
    let axis = ctx.input(1).map_err(in_op(OP))?;
    let out = ctx.output(0).map_err(in_op(OP))?;
    if axis.shape.len() != 1 || axis.dtype != TfLiteType::kTfLiteInt32 {
        return Err(op_error(OP, "axis must be a 1-D int32 tensor"));
    }
    if input.shape.len() > MAX_RANK || input.shape.iter().any(|&d| d < 0) {
        return Err(op_error(OP, format!("input shape {:?} must have rank at most {MAX_RANK}", input.shape)));
    }
    if axis.num_elements() > input.shape.len() {
        return Err(op_error(OP, "more axes than input dimensions"));
    }
    if out.dtype != input.dtype {
        return Err(op_error(OP, "output type differs from the input type"));
    }
    Ok((input, axis))
}

fn flips(input: &TensorView<'_>, axis: &TensorView<'_>) -> Result<Vec<bool>> {
    let rank = input.shape.len() as i64;
    let mut flip = vec![false; input.shape.len()];
    for a in int_values(axis, false).map_err(in_op(OP))? {
        let a2 = if a < 0 { a + rank } else { a };
        if a2 < 0 || a2 >= rank {
            return Err(op_error(OP, format!("axis {a} is out of range for rank {rank}")));
        }
        if std::mem::replace(&mut flip[a2 as usize], true) {
            return Err(op_error(OP, format!("axis {a} is repeated")));
        }
    }
    Ok(flip)
}

/// REVERSE_V2; its State holds the input shape as sizes and, when the axes are constant,
/// which dimensions are flipped.
struct Reverse;

/// What Prepare derives for a REVERSE_V2 node.
struct ReversePlan {
    shape: Vec<usize>,
    /// The flipped dimensions; `None` when the axis tensor is only known at Invoke.
    flip: Option<Vec<bool>>,
}

impl BuiltinKernel for Reverse {
    const NAME: &'static str = OP;
    type Params = ();
    type State = ReversePlan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<ReversePlan> {
        let (input, axis) = operands(ctx)?;
        ctx.resize_output(0, input.shape).map_err(in_op(OP))?;
        let flip = if axis.is_constant() { Some(flips(&input, &axis)?) } else { None };
        Ok(ReversePlan { shape: input.shape.iter().map(|&d| d as usize).collect(), flip })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut ReversePlan) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?;
        let dynamic;
        let flip = match &plan.flip {
            Some(f) => f.as_slice(),
            None => {
                dynamic = flips(&input, &ctx.input(1).map_err(in_op(OP))?)?;
                dynamic.as_slice()
            }
        };
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        with_elem_type!(input.dtype, OP, T => {
            reverse::<T>(input.data::<T>()?, &plan.shape, flip, out.data_mut::<T>()?)
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
    fn reverses() {
        let x = [1, 2, 3, 4, 5, 6];
        let mut o = [0; 6];
        reverse(&x, &[2, 3], &[false, true], &mut o).unwrap();
        assert_eq!(o, [3, 2, 1, 6, 5, 4]);
        reverse(&x, &[2, 3], &[true, false], &mut o).unwrap();
        assert_eq!(o, [4, 5, 6, 1, 2, 3]);
        reverse(&x, &[2, 3], &[true, true], &mut o).unwrap();
        assert_eq!(o, [6, 5, 4, 3, 2, 1]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt16, &[2, 2], &[1i16, 2, 3, 4], None, false);
        let axis = g.tensor(kTfLiteInt32, &[1], &[-1i32], None, true);
        let o = g.output(kTfLiteInt16, None);
        assert_eq!(g.run::<()>(&registration(), &[x, axis], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i16>(o), vec![2, 1, 4, 3]);
        let rep = g.tensor(kTfLiteInt32, &[2], &[1i32, -1], None, true);
        let o2 = g.output(kTfLiteInt16, None);
        assert_eq!(g.run::<()>(&registration(), &[x, rep], &[o2], None), TfLiteStatus::kTfLiteError);
    }
}
