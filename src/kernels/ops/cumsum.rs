//! CUMSUM (TFLite `kernels/cumsum.cc`, `reference/cumsum.h`).
//!
//! Cumulative sum of a float32, int32 or int64 input (rank >= 1) along the axis given by
//! a one-element int32 tensor (negative counts from the end), with `exclusive` (each
//! output excludes its own element) and `reverse` (sum from the end). Sums run in element
//! order from 0, as TFLite's loop; integer sums wrap.

use crate::abi::builtin_op_data::TfLiteCumsumParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, int_values, op_error};

const OP: &str = "CUMSUM";

/// The CUMSUM registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Cumsum>(TfLiteBuiltinOperator::kTfLiteBuiltinCumsum)
}

/// Values CUMSUM adds.
pub trait CumsumElem: Copy + Default {
    fn add(self, other: Self) -> Self;
}

impl CumsumElem for f32 {
    #[inline]
    fn add(self, other: f32) -> f32 {
        self + other
    }
}
impl CumsumElem for i32 {
    #[inline]
    fn add(self, other: i32) -> i32 {
        self.wrapping_add(other)
    }
}
impl CumsumElem for i64 {
    #[inline]
    fn add(self, other: i64) -> i64 {
        self.wrapping_add(other)
    }
}

/// `reference_ops::CumSum` over `shape` along `axis`.
pub fn cumsum<T: CumsumElem>(
    input: &[T],
    shape: &[usize],
    axis: usize,
    exclusive: bool,
    reverse: bool,
    out: &mut [T],
) -> Result<()> {
    if axis >= shape.len() {
        crate::bail!("axis {axis} is out of range for rank {}", shape.len());
    }
    let n: usize = shape.iter().product();
    if input.len() != n || out.len() != n {
        crate::bail!("buffers hold {} and {} elements, the shape {shape:?} needs {n}", input.len(), out.len());
    }
    let outer: usize = shape[..axis].iter().product();
    let depth = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    for o in 0..outer {
        for i in 0..inner {
            let mut acc = T::default();
            for d in 0..depth {
                let d = if reverse { depth - 1 - d } else { d };
                let idx = (o * depth + d) * inner + i;
                if exclusive {
                    out[idx] = acc;
                    acc = acc.add(input[idx]);
                } else {
                    acc = acc.add(input[idx]);
                    out[idx] = acc;
                }
            }
        }
    }
    Ok(())
}

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, OP, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(OP))?;
    let axis = ctx.input(1).map_err(in_op(OP))?;
    let out = ctx.output(0).map_err(in_op(OP))?;
    use TfLiteType::*;
    if !matches!(input.dtype, kTfLiteFloat32 | kTfLiteInt32 | kTfLiteInt64) {
        return Err(op_error(OP, format!("input type {} is not supported", input.dtype.name())));
    }
    if out.dtype != input.dtype {
        return Err(op_error(OP, "output type differs from the input type"));
    }
    if axis.dtype != kTfLiteInt32 || axis.num_elements() != 1 {
        return Err(op_error(OP, "axis must be a one-element int32 tensor"));
    }
    if input.shape.is_empty() || input.shape.iter().any(|&d| d < 0) {
        return Err(op_error(OP, format!("input shape {:?} must have rank 1 or more", input.shape)));
    }
    Ok((input, axis))
}

/// The axis `axis_t` names, normalised against the input's rank.
fn axis_of(input: &TensorView<'_>, axis_t: &TensorView<'_>) -> Result<usize> {
    let rank = input.shape.len() as i64;
    let a = int_values(axis_t, false).map_err(in_op(OP))?[0];
    let a = if a < 0 { a + rank } else { a };
    if a < 0 || a >= rank {
        return Err(op_error(OP, format!("invalid axis {a} for rank {rank}")));
    }
    Ok(a as usize)
}

/// CUMSUM; its State holds the input shape as sizes and, when the axis tensor is
/// constant, the normalised axis.
struct Cumsum;

/// What Prepare derives for a CUMSUM node.
struct CumsumPlan {
    shape: Vec<usize>,
    /// `None` when the axis is only known at Invoke.
    axis: Option<usize>,
}

impl BuiltinKernel for Cumsum {
    const NAME: &'static str = OP;
    type Params = Option<TfLiteCumsumParams>;
    type State = CumsumPlan;

    fn prepare(ctx: &OpCtx<'_>, _: &Option<TfLiteCumsumParams>) -> Result<CumsumPlan> {
        let (input, axis_t) = operands(ctx)?;
        ctx.resize_output(0, input.shape).map_err(in_op(OP))?;
        let axis = if axis_t.is_constant() { Some(axis_of(&input, &axis_t)?) } else { None };
        Ok(CumsumPlan { shape: input.shape.iter().map(|&d| d as usize).collect(), axis })
    }

    fn invoke(ctx: &OpCtx<'_>, p: &Option<TfLiteCumsumParams>, plan: &mut CumsumPlan) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?;
        let a = match plan.axis {
            Some(a) => a,
            None => axis_of(&input, &ctx.input(1).map_err(in_op(OP))?)?,
        };
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        let p = p.unwrap_or_default();
        let (shape, ex, rev) = (&plan.shape, p.exclusive, p.reverse);
        let r = match input.dtype {
            TfLiteType::kTfLiteFloat32 => cumsum(input.data::<f32>()?, shape, a, ex, rev, out.data_mut::<f32>()?),
            TfLiteType::kTfLiteInt32 => cumsum(input.data::<i32>()?, shape, a, ex, rev, out.data_mut::<i32>()?),
            _ => cumsum(input.data::<i64>()?, shape, a, ex, rev, out.data_mut::<i64>()?),
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
        // cumsum_test.cc: [[1,2,3,4],[5,6,7,8]] along axis 1.
        let x = [1, 2, 3, 4, 5, 6, 7, 8];
        let mut o = [0i32; 8];
        cumsum(&x, &[2, 4], 1, false, false, &mut o).unwrap();
        assert_eq!(o, [1, 3, 6, 10, 5, 11, 18, 26]);
        cumsum(&x, &[2, 4], 0, false, false, &mut o).unwrap();
        assert_eq!(o, [1, 2, 3, 4, 6, 8, 10, 12]);
        cumsum(&x, &[2, 4], 1, true, false, &mut o).unwrap();
        assert_eq!(o, [0, 1, 3, 6, 0, 5, 11, 18]);
        cumsum(&x, &[2, 4], 1, false, true, &mut o).unwrap();
        assert_eq!(o, [10, 9, 7, 4, 26, 21, 15, 8]);
        cumsum(&x, &[2, 4], 1, true, true, &mut o).unwrap();
        assert_eq!(o, [9, 7, 4, 0, 21, 15, 8, 0]);
        assert!(cumsum(&x, &[2, 4], 2, false, false, &mut o).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[3], &[1f32, 2., 3.], None, false);
        let axis = g.tensor(kTfLiteInt32, &[], &[-1i32], None, true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(
            g.run(&registration(), &[x, axis], &[o], Some(TfLiteCumsumParams::default())),
            TfLiteStatus::kTfLiteOk
        );
        assert_eq!(g.data::<f32>(o), vec![1., 3., 6.]);
        let bad = g.tensor(kTfLiteInt32, &[], &[1i32], None, true);
        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(
            g.run(&registration(), &[x, bad], &[o2], Some(TfLiteCumsumParams::default())),
            TfLiteStatus::kTfLiteError
        );
    }
}
