//! TRANSPOSE (TFLite `kernels/transpose.cc`, `reference/transpose.h`): permutes the
//! dimensions of an input of rank at most 6. `perm` is an int32 vector whose entries may
//! be negative (counted from the end); unlike TFLite, a `perm` that is not a permutation is
//! an error rather than undefined output. A non-constant `perm` makes the output dynamic,
//! sized in Eval (see `shape_util::plan_declared_output`).

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, check_type, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
    strides, with_elem_type,
};

const OP: &str = "TRANSPOSE";
const MAX_RANK: usize = 6;

/// The TRANSPOSE registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Transpose>(TfLiteBuiltinOperator::kTfLiteBuiltinTranspose)
}

/// Normalises `perm` (negative entries count from the end) and checks it is a permutation
/// of `0..rank`.
pub fn normalize_perm(perm: &[i64], rank: usize) -> Result<Vec<usize>> {
    if perm.len() != rank {
        crate::bail!("perm has {} entries, the input has rank {rank}", perm.len());
    }
    let mut seen = vec![false; rank];
    perm.iter()
        .map(|&p| {
            let q = if p < 0 { p + rank as i64 } else { p };
            if q < 0 || q >= rank as i64 {
                crate::bail!("perm entry {p} is out of bounds for rank {rank}");
            }
            if std::mem::replace(&mut seen[q as usize], true) {
                crate::bail!("perm {perm:?} repeats dimension {q}");
            }
            Ok(q as usize)
        })
        .collect()
}

/// The transposed shape.
pub fn transposed_shape(shape: &[i32], perm: &[usize]) -> Vec<i32> {
    perm.iter().map(|&p| shape[p]).collect()
}

/// `out[i_0..i_n] = input[i_perm^-1...]`: output dimension `k` walks input dimension `perm[k]`.
pub fn transpose<T: Copy>(input: &[T], shape: &[i32], perm: &[usize], out: &mut [T]) -> Result<()> {
    transpose_planned(&TransposePlan::new(shape, perm), input, out)
}

/// The walk of one transpose: the output's dimensions and the input stride each of them
/// steps.
pub struct TransposePlan {
    n: usize,
    out_dims: Vec<usize>,
    step: Vec<usize>,
}

impl TransposePlan {
    /// The plan for an input of shape `shape` and a normalised permutation `perm`.
    pub fn new(shape: &[i32], perm: &[usize]) -> TransposePlan {
        let in_strides = strides(shape);
        TransposePlan {
            n: shape.iter().map(|&d| d.max(0) as usize).product(),
            out_dims: transposed_shape(shape, perm).iter().map(|&d| d.max(0) as usize).collect(),
            step: perm.iter().map(|&p| in_strides[p]).collect(),
        }
    }
}

/// [`transpose`] along a prepared walk.
pub fn transpose_planned<T: Copy>(plan: &TransposePlan, input: &[T], out: &mut [T]) -> Result<()> {
    let n = plan.n;
    if input.len() != n || out.len() != n {
        crate::bail!("buffers hold {} and {} elements, the shape needs {n}", input.len(), out.len());
    }
    if n == 0 {
        return Ok(());
    }
    let (step, out_dims) = (&plan.step, &plan.out_dims);
    let rank = step.len();
    let mut idx = vec![0usize; rank];
    let mut src = 0usize;
    for o in out.iter_mut() {
        *o = input[src];
        for d in (0..rank).rev() {
            idx[d] += 1;
            src += step[d];
            if idx[d] < out_dims[d] {
                break;
            }
            src -= step[d] * idx[d];
            idx[d] = 0;
        }
    }
    Ok(())
}

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, OP, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(OP))?;
    let perm = ctx.input(1).map_err(in_op(OP))?;
    let out = ctx.output(0).map_err(in_op(OP))?;
    if input.shape.len() > MAX_RANK {
        return Err(op_error(OP, "only 1D-6D inputs are supported"));
    }
    if out.dtype != input.dtype {
        return Err(op_error(
            OP,
            format!("output type {} differs from the input type {}", out.dtype.name(), input.dtype.name()),
        ));
    }
    use TfLiteType::*;
    check_type(
        OP,
        "input",
        input.dtype,
        &[kTfLiteFloat32, kTfLiteInt32, kTfLiteBool, kTfLiteUInt8, kTfLiteInt8, kTfLiteInt16, kTfLiteInt64],
    )?;
    if perm.shape.len() != 1 {
        return Err(op_error(OP, "perm must be a vector"));
    }
    Ok((input, perm))
}

fn perm_of(input: &TensorView<'_>, perm: &TensorView<'_>) -> Result<Vec<usize>> {
    normalize_perm(&int_values(perm, false)?, input.shape.len()).map_err(in_op(OP))
}

/// TRANSPOSE; its State is the walk (output dimensions and input steps) of the
/// normalised permutation when `perm` is constant (`None` when it is only known at Invoke).
struct Transpose;

impl BuiltinKernel for Transpose {
    const NAME: &'static str = OP;
    type Params = ();
    type State = Option<TransposePlan>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<TransposePlan>> {
        let (input, perm) = operands(ctx)?;
        if !known_at_prepare(&perm) {
            plan_declared_output(ctx, OP, 0)?;
            return Ok(None);
        }
        let p = perm_of(&input, &perm)?;
        ctx.resize_output(0, &transposed_shape(input.shape, &p)).map_err(in_op(OP))?;
        Ok(Some(TransposePlan::new(input.shape, &p)))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), state: &mut Option<TransposePlan>) -> Result<()> {
        let input = ctx.input(0)?;
        let dynamic;
        let plan = match state {
            Some(plan) => &*plan,
            None => {
                let p = perm_of(&input, &ctx.input(1)?)?;
                settle_output_shape(ctx, OP, 0, "perm values", &transposed_shape(input.shape, &p))?;
                dynamic = TransposePlan::new(input.shape, &p);
                &dynamic
            }
        };
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        with_elem_type!(input.dtype, OP, T => transpose_planned::<T>(plan, input.data::<T>()?, out.data_mut::<T>()?))
            .map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;

    fn naive(input: &[i32], shape: &[i32], perm: &[usize]) -> Vec<i32> {
        let os = transposed_shape(shape, perm);
        let is = strides(shape);
        let n = input.len();
        (0..n)
            .map(|flat| {
                let mut rem = flat;
                let mut src = 0;
                for d in (0..os.len()).rev() {
                    let c = rem % os[d] as usize;
                    rem /= os[d] as usize;
                    src += c * is[perm[d]];
                }
                input[src]
            })
            .collect()
    }

    #[test]
    fn matches_naive() {
        for (shape, perm) in [
            (vec![2, 3], vec![1, 0]),
            (vec![2, 3, 4], vec![2, 0, 1]),
            (vec![1, 2, 3, 4], vec![0, 3, 1, 2]),
            (vec![2, 1, 3, 2, 2], vec![4, 3, 2, 1, 0]),
            (vec![5], vec![0]),
        ] {
            let n: i32 = shape.iter().product();
            let input: Vec<i32> = (0..n).collect();
            let mut out = vec![0; n as usize];
            transpose(&input, &shape, &perm, &mut out).unwrap();
            assert_eq!(out, naive(&input, &shape, &perm), "{shape:?} {perm:?}");
        }
        assert_eq!(normalize_perm(&[-1, 0], 2).unwrap(), vec![1, 0]);
        assert!(normalize_perm(&[0, 0], 2).is_err());
        assert!(normalize_perm(&[0, 2], 2).is_err());
        assert!(normalize_perm(&[0], 2).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(TfLiteType::kTfLiteFloat32, &[2, 3], &[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], None, false);
        let p = g.tensor(TfLiteType::kTfLiteInt32, &[2], &[1i32, 0], None, true);
        let o = g.output(TfLiteType::kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[x, p], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![3, 2]);
        assert_eq!(g.data::<f32>(o), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        let bad = g.tensor(TfLiteType::kTfLiteInt32, &[2], &[1i32, 1], None, true);
        let o2 = g.output(TfLiteType::kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[x, bad], &[o2], None), TfLiteStatus::kTfLiteError);
    }
}
