//! SPARSE_TO_DENSE (TFLite `kernels/sparse_to_dense.cc`, reference `SparseToDense`): a
//! dense tensor of shape `output_shape` filled with `default_value`, then `values`
//! written at `indices` (in order, so a repeated index keeps its last value).
//!
//! Indices are int32 or int64: a scalar or vector of positions in a 1-D output, or an
//! `[n, rank]` matrix of coordinates (rank up to 4). Values (float32, int32, int64, int8,
//! uint8; the default value's type) are a vector, one per index, or a scalar, which
//! TFLite accepts only for a single index. A constant `output_shape` sizes the output at
//! Prepare; otherwise the output is dynamic and sized in Invoke. As in TFLite the
//! `validate_indices` option is not read, but every index is checked against the output
//! shape (TFLite writes out of bounds instead).

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{Element, OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, check_type, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
    to_i32,
};
use std::borrow::Cow;

const OP: &str = "SPARSE_TO_DENSE";
/// TFLite's reference kernel works on outputs of up to 4 dimensions.
const MAX_DIMS: usize = 4;

/// The SPARSE_TO_DENSE registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<SparseToDense>(TfLiteBuiltinOperator::kTfLiteBuiltinSparseToDense)
}

/// Fills `out` (row-major, shape `shape`) with `default`, then writes `values[i]` (or
/// `values[0]` for every index when `scalar`) at the `i`-th index: `indices` holds
/// `shape.len()` coordinates per index. An index outside the shape is an error.
pub fn sparse_to_dense<T: Copy>(
    indices: &[i64],
    values: &[T],
    scalar: bool,
    default: T,
    shape: &[i32],
    out: &mut [T],
) -> Result<()> {
    let rank = shape.len();
    let size: usize = shape.iter().map(|&d| d.max(0) as usize).product();
    if out.len() != size || rank == 0 || !indices.len().is_multiple_of(rank) {
        return Err(Error::new("indices, output shape and output do not match"));
    }
    let count = indices.len() / rank;
    if values.is_empty() && count > 0 || !scalar && values.len() < count {
        return Err(Error::new(format!("{count} indices but {} values", values.len())));
    }
    out.fill(default);
    for (i, index) in indices.chunks_exact(rank).enumerate() {
        let mut offset = 0usize;
        for (&c, &d) in index.iter().zip(shape) {
            if c < 0 || c >= i64::from(d) {
                return Err(Error::new(format!("index {index:?} is out of bounds of the output shape {shape:?}")));
            }
            offset = offset * d as usize + c as usize;
        }
        out[offset] = if scalar { values[0] } else { values[i] };
    }
    Ok(())
}

/// The checked inputs: indices, output_shape, values, default_value.
struct Operands<'a> {
    indices: TensorView<'a>,
    output_shape: TensorView<'a>,
    values: TensorView<'a>,
    default_value: TensorView<'a>,
}

/// How many indices the indices tensor holds (a scalar is one).
fn index_count(indices: &TensorView<'_>) -> usize {
    match indices.shape.first() {
        Some(&n) if !indices.shape.is_empty() => n.max(0) as usize,
        _ => 1,
    }
}

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<Operands<'a>> {
    check_arity(ctx, OP, 4, 4, 1)?;
    let input = |i| ctx.input(i).map_err(in_op(OP));
    let (indices, output_shape, values, default_value) = (input(0)?, input(1)?, input(2)?, input(3)?);
    use TfLiteType::*;
    if indices.shape.len() > 2 {
        return Err(op_error(OP, format!("indices must have rank 0 to 2, got {}", indices.shape.len())));
    }
    if output_shape.shape.len() != 1 {
        return Err(op_error(OP, "output_shape must be a vector"));
    }
    if values.shape.len() > 1 {
        return Err(op_error(OP, "values must be a scalar or a vector"));
    }
    if default_value.num_elements() != 1 {
        return Err(op_error(OP, "default_value must have one element"));
    }
    check_type(OP, "indices", indices.dtype, &[kTfLiteInt32, kTfLiteInt64])?;
    check_type(OP, "output_shape", output_shape.dtype, &[kTfLiteInt32, kTfLiteInt64])?;
    check_type(OP, "values", values.dtype, &[kTfLiteInt32, kTfLiteInt64, kTfLiteInt8, kTfLiteUInt8, kTfLiteFloat32])?;
    if default_value.dtype != values.dtype {
        return Err(op_error(OP, "default_value must have the values' type"));
    }
    let rank = output_shape.num_elements();
    let scalar_values = values.shape.is_empty();
    if indices.shape.len() < 2 {
        if scalar_values && indices.num_elements() != 1 {
            return Err(op_error(OP, "scalar values need exactly one index"));
        }
        if rank != 1 {
            return Err(op_error(OP, "with scalar or vector indices, output_shape must have one element"));
        }
    } else {
        if indices.shape[1] as usize != rank {
            return Err(op_error(OP, "the indices' second dimension must be the output's rank"));
        }
        if scalar_values && indices.shape[0] != 1 {
            return Err(op_error(OP, "scalar values need exactly one index"));
        }
    }
    if rank > MAX_DIMS {
        return Err(op_error(OP, format!("the output rank must be at most {MAX_DIMS}, got {rank}")));
    }
    if !scalar_values && values.num_elements() < index_count(&indices) {
        return Err(op_error(OP, "there must be a value for every index"));
    }
    Ok(Operands { indices, output_shape, values, default_value })
}

/// The output shape that `output_shape`'s values give.
fn dense_shape(output_shape: &TensorView<'_>) -> Result<Vec<i32>> {
    int_values(output_shape, false)?
        .into_iter()
        .map(|d| {
            if d < 0 {
                crate::bail!("output dimensions must be >= 0, got {d}");
            }
            to_i32(d, "output dimension")
        })
        .collect::<Result<Vec<_>>>()
        .map_err(in_op(OP))
}

/// The elements of `t`, borrowed when aligned for `T`, else decoded from `width`-byte
/// chunks with `decode`.
fn typed<'a, T: Element>(t: &TensorView<'a>, width: usize, decode: impl Fn(&[u8]) -> T) -> Result<Cow<'a, [T]>> {
    if let Ok(v) = t.data::<T>() {
        return Ok(Cow::Borrowed(v));
    }
    let raw = t.raw()?;
    let n = t.num_elements();
    if raw.len() < n.saturating_mul(width) {
        return Err(Error::new(format!("tensor {} holds too few bytes", t.index)));
    }
    Ok(Cow::Owned(raw[..n * width].chunks_exact(width).map(decode).collect()))
}

/// SPARSE_TO_DENSE; its State is the output shape when `output_shape` is constant
/// (`None` when the output is dynamic and sized in Invoke).
struct SparseToDense;

impl BuiltinKernel for SparseToDense {
    const NAME: &'static str = OP;
    type Params = ();
    type State = Option<Vec<i32>>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<Vec<i32>>> {
        let ops = operands(ctx)?;
        ctx.set_output_type(0, ops.values.dtype).map_err(in_op(OP))?;
        if !known_at_prepare(&ops.output_shape) {
            plan_declared_output(ctx, OP, 0)?;
            return Ok(None);
        }
        let shape = dense_shape(&ops.output_shape)?;
        ctx.resize_output(0, &shape).map_err(in_op(OP))?;
        Ok(Some(shape))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), state: &mut Option<Vec<i32>>) -> Result<()> {
        let ops = operands(ctx)?;
        let shape = match state {
            Some(shape) => shape.clone(),
            None => dense_shape(&ops.output_shape)?,
        };
        settle_output_shape(ctx, OP, 0, "output_shape values", &shape)?;
        let indices = int_values(&ops.indices, false).map_err(in_op(OP))?;
        let scalar = ops.values.shape.is_empty();
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        // Constant values or default values may sit in the model at any 4-byte offset:
        // read them byte-wise when a typed view would be misaligned.
        macro_rules! run {
            ($T:ty) => {{
                const W: usize = core::mem::size_of::<$T>();
                let read = |t| typed(t, W, |c: &[u8]| <$T>::from_ne_bytes(c.try_into().unwrap_or_default()));
                let values = read(&ops.values)?;
                let default = read(&ops.default_value)?;
                let default = *default.first().ok_or_else(|| Error::new("default_value is empty"))?;
                sparse_to_dense::<$T>(&indices, &values, scalar, default, &shape, out.data_mut::<$T>()?)
            }};
        }
        let r: Result<()> = (|| match ops.values.dtype {
            TfLiteType::kTfLiteFloat32 => run!(f32),
            TfLiteType::kTfLiteInt32 => run!(i32),
            TfLiteType::kTfLiteInt64 => run!(i64),
            TfLiteType::kTfLiteInt8 => run!(i8),
            TfLiteType::kTfLiteUInt8 => run!(u8),
            other => Err(Error::new(format!("values type {} is not supported", other.name()))),
        })();
        r.map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn scatters_over_default() {
        let mut o = [0i32; 6];
        sparse_to_dense(&[0, 1, 1, 2, 0, 1], &[7, 8, 9], false, -1, &[2, 3], &mut o).unwrap();
        // The repeated index [0, 1] keeps its last value.
        assert_eq!(o, [-1, 9, -1, -1, -1, 8]);
        let mut o = [0.0f32; 4];
        sparse_to_dense(&[2], &[5.0], true, 1.5, &[4], &mut o).unwrap();
        assert_eq!(o, [1.5, 1.5, 5.0, 1.5]);
        let mut e: [u8; 0] = [];
        sparse_to_dense(&[], &[], false, 0u8, &[0], &mut e).unwrap();
    }

    #[test]
    fn refuses_out_of_bounds() {
        let mut o = [0i8; 3];
        assert!(sparse_to_dense(&[3], &[1i8], false, 0, &[3], &mut o).is_err());
        assert!(sparse_to_dense(&[-1], &[1i8], false, 0, &[3], &mut o).is_err());
        assert!(sparse_to_dense(&[0, 1], &[1i8], false, 0, &[3], &mut o).is_err());
        let mut e: [i8; 0] = [];
        assert!(sparse_to_dense(&[0], &[1i8], false, 0, &[0], &mut e).is_err());
    }

    fn run(constant_shape: bool, idx: &[i64], idx_shape: &[i32], dense: &[i32]) -> (TfLiteStatus, Vec<i32>, Vec<f32>) {
        let mut g = Graph::new();
        let i = g.tensor(kTfLiteInt64, idx_shape, idx, None, true);
        let s = g.tensor(kTfLiteInt32, &[dense.len() as i32], dense, None, constant_shape);
        let n = idx_shape.first().copied().unwrap_or(1) as usize;
        let vals: Vec<f32> = (0..n).map(|k| k as f32 + 1.0).collect();
        let v = g.tensor(kTfLiteFloat32, &[n as i32], &vals, None, false);
        let d = g.tensor(kTfLiteFloat32, &[], &[-0.5f32], None, false);
        let o = g.output(kTfLiteFloat32, None);
        let st = g.run(&registration(), &[i, s, v, d], &[o], None::<()>);
        if st != TfLiteStatus::kTfLiteOk {
            return (st, vec![], vec![]);
        }
        (st, g.shape(o), g.data::<f32>(o))
    }

    #[test]
    fn glue_constant_and_dynamic_shapes() {
        for constant in [true, false] {
            let (st, shape, data) = run(constant, &[1, 0, 0, 2], &[2, 2], &[2, 3]);
            assert_eq!(st, TfLiteStatus::kTfLiteOk);
            assert_eq!(shape, vec![2, 3]);
            assert_eq!(data, vec![-0.5, -0.5, 2.0, 1.0, -0.5, -0.5]);
        }
        // Out of bounds, negative dimension, index width not the output rank.
        assert_eq!(run(true, &[5], &[1], &[3]).0, TfLiteStatus::kTfLiteError);
        assert_eq!(run(false, &[0], &[1], &[-3]).0, TfLiteStatus::kTfLiteError);
        assert_eq!(run(true, &[0, 0], &[1, 2], &[3]).0, TfLiteStatus::kTfLiteError);
        assert_eq!(run(true, &[0; 5], &[1, 5], &[1; 5]).0, TfLiteStatus::kTfLiteError);
    }
}
