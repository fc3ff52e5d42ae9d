//! WHERE (TFLite `kernels/where.cc`): the coordinates of the true (non-zero) elements of
//! a condition tensor.
//!
//! The condition is bool, float32, int64, int32, int8, uint8 or uint32 (version 2 added
//! the non-bool types; a float element is true when it compares unequal to zero, so NaN
//! counts and -0.0 does not). The int64 output has shape `[num_true, rank]`, the
//! coordinates in row-major order. When the condition is not constant the output is
//! dynamic and sized at Invoke. A scalar condition fails at Invoke, as in TFLite.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, check_type, in_op, known_at_prepare, op_error, plan_declared_output, to_i32,
};

const OP: &str = "WHERE";
const COND_TYPES: [TfLiteType; 7] = [
    TfLiteType::kTfLiteBool,
    TfLiteType::kTfLiteFloat32,
    TfLiteType::kTfLiteInt64,
    TfLiteType::kTfLiteInt32,
    TfLiteType::kTfLiteInt8,
    TfLiteType::kTfLiteUInt8,
    TfLiteType::kTfLiteUInt32,
];

/// The WHERE registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Where>(TfLiteBuiltinOperator::kTfLiteBuiltinWhere)
}

/// Which elements of `cond` are true: non-zero, whatever its type.
pub fn truth(cond: &TensorView<'_>) -> Result<Vec<bool>> {
    use TfLiteType::*;
    fn nz<T: Copy + PartialEq + Default>(v: &[T]) -> Vec<bool> {
        v.iter().map(|&x| x != T::default()).collect()
    }
    Ok(match cond.dtype {
        kTfLiteBool | kTfLiteUInt8 => nz(cond.data::<u8>()?),
        kTfLiteInt8 => nz(cond.data::<i8>()?),
        kTfLiteInt32 => nz(cond.data::<i32>()?),
        kTfLiteUInt32 => nz(cond.data::<u32>()?),
        kTfLiteInt64 => nz(cond.data::<i64>()?),
        kTfLiteFloat32 => nz(cond.data::<f32>()?),
        other => return Err(op_error(OP, format!("condition type {} is not supported", other.name()))),
    })
}

/// `SelectTrueCoords`: writes the coordinates (in `shape`) of every true element of
/// `mask`, in row-major order, into `out` (`[num_true, rank]`).
pub fn select_true_coords(mask: &[bool], shape: &[usize], out: &mut [i64]) -> Result<()> {
    let rank = shape.len();
    let n: usize = shape.iter().product();
    let count = mask.iter().filter(|&&b| b).count();
    if mask.len() != n || out.len() != count * rank {
        crate::bail!("{} condition values for shape {shape:?}, output holds {}", mask.len(), out.len());
    }
    let mut idx = vec![0usize; rank];
    let mut rows = out.chunks_exact_mut(rank.max(1));
    for &b in mask {
        if b && rank > 0
            && let Some(row) = rows.next()
        {
            for (o, &i) in row.iter_mut().zip(&idx) {
                *o = i as i64;
            }
        }
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

fn output_shape(mask: &[bool], rank: usize) -> Result<[i32; 2]> {
    let count = mask.iter().filter(|&&b| b).count();
    Ok([to_i32(count as i64, "true count").map_err(in_op(OP))?, rank as i32])
}

/// WHERE; its State holds the condition shape as sizes.
struct Where;

impl BuiltinKernel for Where {
    const NAME: &'static str = OP;
    type Params = ();
    type State = Vec<usize>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Vec<usize>> {
        check_arity(ctx, OP, 1, 1, 1)?;
        let cond = ctx.input(0).map_err(in_op(OP))?;
        ctx.output(0).map_err(in_op(OP))?;
        if cond.shape.iter().any(|&d| d < 0) {
            return Err(op_error(OP, "negative dimension"));
        }
        ctx.set_output_type(0, TfLiteType::kTfLiteInt64).map_err(in_op(OP))?;
        if known_at_prepare(&cond) {
            let shape = output_shape(&truth(&cond)?, cond.shape.len())?;
            ctx.resize_output(0, &shape).map_err(in_op(OP))?;
        } else {
            check_type(OP, "condition", cond.dtype, &COND_TYPES)?;
            plan_declared_output(ctx, OP, 0)?;
        }
        Ok(cond.shape.iter().map(|&d| d as usize).collect())
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), shape: &mut Vec<usize>) -> Result<()> {
        let cond = ctx.input(0).map_err(in_op(OP))?;
        let mask = truth(&cond)?;
        let out = ctx.output(0).map_err(in_op(OP))?;
        if out.is_dynamic() {
            ctx.resize_output(0, &output_shape(&mask, shape.len())?).map_err(in_op(OP))?;
        }
        if shape.is_empty() {
            return Err(op_error(OP, "the condition must have rank > 0"));
        }
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        if out.dtype != TfLiteType::kTfLiteInt64 {
            return Err(op_error(OP, "output must be int64"));
        }
        select_true_coords(&mask, shape, out.data_mut::<i64>()?).map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn coords() {
        let mut o = [0i64; 6];
        select_true_coords(&[false, true, true, false, false, true], &[2, 3], &mut o).unwrap();
        assert_eq!(o, [0, 1, 0, 2, 1, 2]);
        select_true_coords(&[false, false], &[2, 1], &mut []).unwrap();
        select_true_coords(&[], &[0, 4], &mut []).unwrap();
        assert!(select_true_coords(&[true], &[1], &mut []).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let c = g.tensor(kTfLiteFloat32, &[2, 2], &[0.0f32, -0.0, f32::NAN, 2.0], None, false);
        let o = g.output(kTfLiteInt64, None);
        assert_eq!(g.run::<()>(&registration(), &[c], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 2]);
        assert_eq!(g.data::<i64>(o), vec![1, 0, 1, 1]);
        let k = g.tensor(kTfLiteInt32, &[3], &[0i32, 7, 0], None, true);
        let o2 = g.output(kTfLiteInt64, None);
        assert_eq!(g.run::<()>(&registration(), &[k], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o2), vec![1, 1]);
        assert_eq!(g.data::<i64>(o2), vec![1]);
        let s = g.tensor(kTfLiteBool, &[], &[1u8], None, false);
        let o3 = g.output(kTfLiteInt64, None);
        assert_eq!(g.run::<()>(&registration(), &[s], &[o3], None), TfLiteStatus::kTfLiteError);
        let h = g.tensor(kTfLiteInt16, &[1], &[1i16], None, false);
        let o4 = g.output(kTfLiteInt64, None);
        assert_eq!(g.run::<()>(&registration(), &[h], &[o4], None), TfLiteStatus::kTfLiteError);
    }
}
