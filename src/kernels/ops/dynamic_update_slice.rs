//! DYNAMIC_UPDATE_SLICE (TFLite `kernels/dynamic_update_slice.cc`, XLA's semantics).
//!
//! Inputs: `operand` (rank at most 8), `update` (same rank and type, no dimension larger
//! than the operand's) and `start_indices` (1-D int32 or int64, one entry per operand
//! dimension). The output is the operand with the update written at the start indices,
//! each clamped into `[0, operand_dim - update_dim]` so that the update always fits. Any
//! fixed-size element type is moved unchanged (quantized values included).

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, int_values, op_error, with_elem_type};

const OP: &str = "DYNAMIC_UPDATE_SLICE";
const MAX_RANK: usize = 8;

/// The DYNAMIC_UPDATE_SLICE registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<DynamicUpdateSlice>(TfLiteBuiltinOperator::kTfLiteBuiltinDynamicUpdateSlice)
}

/// The start indices clamped so that an update of `ushape` fits in `shape`.
pub fn clamp_starts(start: &[i64], shape: &[usize], ushape: &[usize]) -> Vec<usize> {
    start
        .iter()
        .zip(shape.iter().zip(ushape))
        .map(|(&s, (&d, &u))| s.clamp(0, d.saturating_sub(u) as i64) as usize)
        .collect()
}

/// `out` = `operand` (shape `shape`) with `update` (shape `ushape`) written at `start`
/// (clamped as XLA does).
pub fn dynamic_update_slice<T: Copy>(
    operand: &[T],
    shape: &[usize],
    update: &[T],
    ushape: &[usize],
    start: &[i64],
    out: &mut [T],
) -> Result<()> {
    let rank = shape.len();
    if ushape.len() != rank || start.len() != rank || shape.iter().zip(ushape).any(|(d, u)| u > d) {
        crate::bail!("update shape {ushape:?} and {} start indices do not fit operand shape {shape:?}", start.len());
    }
    let n: usize = shape.iter().product();
    let un: usize = ushape.iter().product();
    if operand.len() != n || out.len() != n || update.len() != un {
        crate::bail!(
            "buffers hold {}, {} and {} elements for shapes {shape:?} and {ushape:?}",
            operand.len(),
            update.len(),
            out.len()
        );
    }
    out.copy_from_slice(operand);
    if un == 0 {
        return Ok(());
    }
    let at = clamp_starts(start, shape, ushape);
    let mut ostride = vec![1usize; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        ostride[d] = ostride[d + 1] * shape[d + 1];
    }
    // Rows along the last dimension are contiguous in both buffers: copy them whole.
    let row = if rank == 0 { 1 } else { ushape[rank - 1] };
    let outer = rank.saturating_sub(1);
    let mut idx = vec![0usize; outer];
    for src in update.chunks_exact(row) {
        let base: usize = (0..rank).map(|d| (at[d] + if d < outer { idx[d] } else { 0 }) * ostride[d]).sum();
        out[base..base + row].copy_from_slice(src);
        for d in (0..outer).rev() {
            idx[d] += 1;
            if idx[d] < ushape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, OP, 3, 3, 1)?;
    let operand = ctx.input(0).map_err(in_op(OP))?;
    let update = ctx.input(1).map_err(in_op(OP))?;
    let start = ctx.input(2).map_err(in_op(OP))?;
    ctx.output(0).map_err(in_op(OP))?;
    let rank = operand.shape.len();
    if rank > MAX_RANK || operand.shape.iter().chain(update.shape).any(|&d| d < 0) {
        return Err(op_error(OP, format!("operand shape {:?} must have rank at most {MAX_RANK}", operand.shape)));
    }
    if start.shape.len() != 1 || start.shape[0] as usize != rank {
        return Err(op_error(
            OP,
            format!("start indices must be 1-D with {rank} entries, got shape {:?}", start.shape),
        ));
    }
    if update.shape.len() != rank || update.shape.iter().zip(operand.shape).any(|(u, d)| u > d) {
        return Err(op_error(
            OP,
            format!("update shape {:?} does not fit in operand shape {:?}", update.shape, operand.shape),
        ));
    }
    if update.dtype != operand.dtype {
        return Err(op_error(OP, "update type differs from the operand type"));
    }
    if !matches!(start.dtype, TfLiteType::kTfLiteInt32 | TfLiteType::kTfLiteInt64) {
        return Err(op_error(OP, format!("start indices type {} is not int32 or int64", start.dtype.name())));
    }
    Ok((operand, update, start))
}

fn sizes(shape: &[i32]) -> Vec<usize> {
    shape.iter().map(|&d| d as usize).collect()
}

/// DYNAMIC_UPDATE_SLICE; its State holds the operand and update shapes as sizes.
struct DynamicUpdateSlice;

/// What Prepare derives for a DYNAMIC_UPDATE_SLICE node.
struct DusPlan {
    shape: Vec<usize>,
    ushape: Vec<usize>,
}

impl BuiltinKernel for DynamicUpdateSlice {
    const NAME: &'static str = OP;
    type Params = ();
    type State = DusPlan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<DusPlan> {
        let (operand, update, _) = operands(ctx)?;
        ctx.set_output_type(0, operand.dtype).map_err(in_op(OP))?;
        ctx.resize_output(0, operand.shape).map_err(in_op(OP))?;
        Ok(DusPlan { shape: sizes(operand.shape), ushape: sizes(update.shape) })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut DusPlan) -> Result<()> {
        let operand = ctx.input(0).map_err(in_op(OP))?;
        let update = ctx.input(1).map_err(in_op(OP))?;
        let start = int_values(&ctx.input(2).map_err(in_op(OP))?, false).map_err(in_op(OP))?;
        if start.len() != plan.shape.len() {
            return Err(op_error(OP, "start indices changed size since Prepare"));
        }
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        with_elem_type!(operand.dtype, OP, T => {
            dynamic_update_slice::<T>(
                operand.data::<T>()?,
                &plan.shape,
                update.data::<T>()?,
                &plan.ushape,
                &start,
                out.data_mut::<T>()?,
            )
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
    fn updates_and_clamps() {
        let x: Vec<i32> = (0..12).collect();
        let mut o = [0; 12];
        dynamic_update_slice(&x, &[3, 4], &[-1, -2, -3, -4], &[2, 2], &[1, 1], &mut o).unwrap();
        assert_eq!(o, [0, 1, 2, 3, 4, -1, -2, 7, 8, -3, -4, 11]);
        // Starts past the end, or negative, are clamped so the update fits.
        dynamic_update_slice(&x, &[3, 4], &[-1, -2, -3, -4], &[2, 2], &[9, -5], &mut o).unwrap();
        assert_eq!(o, [0, 1, 2, 3, -1, -2, 6, 7, -3, -4, 10, 11]);
        // The whole operand replaced; a scalar; an empty update.
        dynamic_update_slice(&[1, 2], &[2], &[5, 6], &[2], &[7], &mut o[..2]).unwrap();
        assert_eq!(o[..2], [5, 6]);
        dynamic_update_slice(&[1], &[], &[9], &[], &[], &mut o[..1]).unwrap();
        assert_eq!(o[0], 9);
        dynamic_update_slice(&[1, 2], &[2], &[], &[0], &[1], &mut o[..2]).unwrap();
        assert_eq!(o[..2], [1, 2]);
        assert!(dynamic_update_slice(&[1, 2], &[2], &[1, 2, 3], &[3], &[0], &mut o[..2]).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt8, &[2, 3], &[1i8, 2, 3, 4, 5, 6], None, false);
        let u = g.tensor(kTfLiteInt8, &[1, 2], &[-1i8, -2], None, false);
        let s = g.tensor(kTfLiteInt64, &[2], &[1i64, 4], None, false);
        let o = g.output(kTfLiteInt8, None);
        assert_eq!(g.run::<()>(&registration(), &[x, u, s], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 3]);
        assert_eq!(g.data::<i8>(o), vec![1, 2, 3, 4, -1, -2]);
        let big = g.tensor(kTfLiteInt8, &[3, 1], &[0i8; 3], None, false);
        let o2 = g.output(kTfLiteInt8, None);
        assert_eq!(g.run::<()>(&registration(), &[x, big, s], &[o2], None), TfLiteStatus::kTfLiteError);
        let short = g.tensor(kTfLiteInt32, &[1], &[0i32], None, false);
        let o3 = g.output(kTfLiteInt8, None);
        assert_eq!(g.run::<()>(&registration(), &[x, u, short], &[o3], None), TfLiteStatus::kTfLiteError);
    }
}
