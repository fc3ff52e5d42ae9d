//! REVERSE_SEQUENCE (TFLite `kernels/reverse_sequence.cc`, `reference_ops::ReverseSequence`).
//!
//! For each index `b` along `batch_dim`, the first `seq_lengths[b]` elements along
//! `seq_dim` are reversed and the rest copied. Input float32, uint8, int16, int32 or
//! int64; lengths int32 or int64, one per batch entry. A length of 0 or below leaves the
//! slice unchanged (as TFLite's loop does); one above the sequence dimension is an
//! error (TFLite checks only the first).

use crate::abi::builtin_op_data::TfLiteReverseSequenceParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, int_values, op_error, with_elem_type};

const OP: &str = "REVERSE_SEQUENCE";

/// The REVERSE_SEQUENCE registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<ReverseSequence>(TfLiteBuiltinOperator::kTfLiteBuiltinReverseSequence)
}

/// Reverses `input` (shape `shape`) as described above into `out`.
pub fn reverse_sequence<T: Copy>(
    input: &[T],
    shape: &[usize],
    lengths: &[i64],
    seq_dim: usize,
    batch_dim: usize,
    out: &mut [T],
) -> Result<()> {
    let n: usize = shape.iter().product();
    if input.len() != n || out.len() != n || seq_dim >= shape.len() || batch_dim >= shape.len() {
        crate::bail!("buffers of {} and {} elements for shape {shape:?}", input.len(), out.len());
    }
    if lengths.len() != shape[batch_dim] || lengths.iter().any(|&l| l > shape[seq_dim] as i64) {
        crate::bail!("sequence lengths {lengths:?} do not fit dimension {seq_dim} of {shape:?}");
    }
    let seq_stride: usize = shape[seq_dim + 1..].iter().product();
    let batch_stride: usize = shape[batch_dim + 1..].iter().product();
    for (i, &x) in input.iter().enumerate() {
        let q = i / seq_stride % shape[seq_dim];
        let b = i / batch_stride % shape[batch_dim];
        let len = lengths[b];
        let dst = if (q as i64) < len { i - q * seq_stride + (len as usize - 1 - q) * seq_stride } else { i };
        out[dst] = x;
    }
    Ok(())
}

/// REVERSE_SEQUENCE; stateless.
struct ReverseSequence;

fn dims(p: &TfLiteReverseSequenceParams, rank: usize) -> Result<(usize, usize)> {
    let (s, b) = (p.seq_dim, p.batch_dim);
    if s < 0 || b < 0 || s == b || s as usize >= rank || b as usize >= rank {
        return Err(op_error(OP, format!("seq_dim {s} and batch_dim {b} must be distinct dimensions of rank {rank}")));
    }
    Ok((s as usize, b as usize))
}

impl BuiltinKernel for ReverseSequence {
    const NAME: &'static str = OP;
    type Params = TfLiteReverseSequenceParams;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &TfLiteReverseSequenceParams) -> Result<()> {
        check_arity(ctx, OP, 2, 2, 1)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        let lengths = ctx.input(1).map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?;
        if lengths.shape.len() != 1 {
            return Err(op_error(OP, "seq_lengths must be 1-D"));
        }
        use TfLiteType::*;
        if !matches!(input.dtype, kTfLiteInt32 | kTfLiteFloat32 | kTfLiteUInt8 | kTfLiteInt16 | kTfLiteInt64) {
            return Err(op_error(OP, format!("type {} is not supported", input.dtype.name())));
        }
        if !matches!(lengths.dtype, kTfLiteInt32 | kTfLiteInt64) {
            return Err(op_error(OP, format!("seq_lengths type {} is not supported", lengths.dtype.name())));
        }
        if out.dtype != input.dtype {
            return Err(op_error(OP, "output type differs from the input type"));
        }
        if input.shape.iter().any(|&d| d < 0) {
            return Err(op_error(OP, "negative dimension"));
        }
        ctx.resize_output(0, input.shape).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteReverseSequenceParams, _: &mut ()) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?;
        let lengths = int_values(&ctx.input(1).map_err(in_op(OP))?, false).map_err(in_op(OP))?;
        let (seq_dim, batch_dim) = dims(p, input.shape.len())?;
        let shape: Vec<usize> = input.shape.iter().map(|&d| d as usize).collect();
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        with_elem_type!(input.dtype, OP, T => {
            reverse_sequence::<T>(input.data::<T>()?, &shape, &lengths, seq_dim, batch_dim, out.data_mut::<T>()?)
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
    fn reverses_prefixes() {
        // [batch 2, seq 4]: the first 3 and 0 elements reversed.
        let x = [1, 2, 3, 4, 5, 6, 7, 8];
        let mut o = [0; 8];
        reverse_sequence(&x, &[2, 4], &[3, 0], 1, 0, &mut o).unwrap();
        assert_eq!(o, [3, 2, 1, 4, 5, 6, 7, 8]);
        // [seq 3, batch 2]: batch 1 reverses all three.
        let x = [1, 2, 3, 4, 5, 6];
        let mut o = [0; 6];
        reverse_sequence(&x, &[3, 2], &[1, 3], 0, 1, &mut o).unwrap();
        assert_eq!(o, [1, 6, 3, 4, 5, 2]);
        assert!(reverse_sequence(&x, &[3, 2], &[1, 4], 0, 1, &mut o).is_err());
        reverse_sequence::<u8>(&[], &[0, 2], &[], 1, 0, &mut []).unwrap();
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt16, &[2, 3], &[1i16, 2, 3, 4, 5, 6], None, false);
        let l = g.tensor(kTfLiteInt64, &[2], &[2i64, 3], None, false);
        let o = g.output(kTfLiteInt16, None);
        let p = TfLiteReverseSequenceParams { seq_dim: 1, batch_dim: 0 };
        assert_eq!(g.run(&registration(), &[x, l], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i16>(o), vec![2, 1, 3, 6, 5, 4]);
        let o2 = g.output(kTfLiteInt16, None);
        let same = TfLiteReverseSequenceParams { seq_dim: 1, batch_dim: 1 };
        assert_eq!(g.run(&registration(), &[x, l], &[o2], Some(same)), TfLiteStatus::kTfLiteError);
    }
}
