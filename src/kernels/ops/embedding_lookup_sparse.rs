//! EMBEDDING_LOOKUP_SPARSE (TFLite `kernels/embedding_lookup_sparse.cc`).
//!
//! A sparse tensor (`ids`, `indices` `[n, lookup_rank]`, `dense_shape`) selects rows of
//! `value`; each lookup's row, times its weight, is added to the output slot its
//! indices (all but the last) name, and each slot is then combined: SUM leaves it,
//! MEAN divides it by the sum of the weights, SQRTN by the root of the sum of squared
//! weights. The output shape is `dense_shape[..lookup_rank - 1]` followed by `value`'s
//! dimensions after the first; it is set when the op runs (dynamic).
//!
//! As TFLite: a slot is combined when the lookups move on to another slot, so lookups
//! must come grouped by slot; a slot met again later is combined again, over the values
//! it already holds. Sums and divisions are in float32. An id outside `value`'s rows or an
//! index outside `dense_shape` is an error.

use crate::abi::builtin_op_data::{TfLiteCombinerType, TfLiteEmbeddingLookupSparseParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, element_count, in_op, op_error};

const OP: &str = "EMBEDDING_LOOKUP_SPARSE";

/// The EMBEDDING_LOOKUP_SPARSE registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<EmbeddingLookupSparse>(TfLiteBuiltinOperator::kTfLiteBuiltinEmbeddingLookupSparse)
}

/// The output shape: the dense shape but its last dimension, then the value's
/// dimensions but its first.
pub fn output_shape(dense_shape: &[i32], value_shape: &[i32]) -> Result<Vec<i32>> {
    if dense_shape.is_empty() {
        crate::bail!("the lookups must have rank 1 or more");
    }
    if value_shape.len() < 2 {
        crate::bail!("the value must have rank 2 or more");
    }
    if let Some(d) = dense_shape.iter().find(|&&d| d < 0) {
        crate::bail!("dense shape dimension {d} is negative");
    }
    let shape: Vec<i32> = dense_shape[..dense_shape.len() - 1].iter().chain(&value_shape[1..]).copied().collect();
    element_count(&shape)?;
    Ok(shape)
}

fn finalize(combiner: TfLiteCombinerType, count: usize, total: f32, squares: f32, slot: &mut [f32]) {
    if combiner == TfLiteCombinerType::kTfLiteCombinerTypeSum || count == 0 {
        return;
    }
    let m = if combiner == TfLiteCombinerType::kTfLiteCombinerTypeMean { total } else { squares.sqrt() };
    slot.iter_mut().for_each(|x| *x /= m);
}

/// Computes the output (`out`, of [`output_shape`]'s size). `value` is `rows` rows of
/// `embedding` values.
#[allow(clippy::too_many_arguments)]
pub fn lookup_sparse(
    combiner: TfLiteCombinerType,
    ids: &[i32],
    indices: &[i32],
    dense_shape: &[i32],
    weights: &[f32],
    value: &[f32],
    rows: usize,
    embedding: usize,
    out: &mut [f32],
) -> Result<()> {
    let rank = dense_shape.len();
    if rank == 0 || indices.len() != ids.len().saturating_mul(rank) || weights.len() != ids.len() {
        crate::bail!(
            "{} ids, {} weights and {} indices of rank {rank} do not agree",
            ids.len(),
            weights.len(),
            indices.len()
        );
    }
    if rows.checked_mul(embedding) != Some(value.len()) {
        crate::bail!("{} values do not make {rows} rows of {embedding}", value.len());
    }
    out.fill(0.0);
    let (mut current, mut count, mut total, mut squares) = (0usize, 0usize, 0f32, 0f32);
    for (i, (&id, &w)) in ids.iter().zip(weights).enumerate() {
        let row = usize::try_from(id).ok().filter(|&r| r < rows);
        let Some(row) = row else {
            crate::bail!("index out of bounds: got {id}, and bounds are [0, {}]", rows as i64 - 1);
        };
        let idx = &indices[i * rank..(i + 1) * rank];
        let mut bucket = 0usize;
        let mut stride = 1usize;
        for k in (0..rank - 1).rev() {
            let (v, d) = (idx[k], dense_shape[k]);
            if v < 0 || v >= d {
                crate::bail!("index at dimension {k} ({v}) is out of bounds [0, {d})");
            }
            // Bounded by the output's element count, checked when it was shaped.
            bucket += v as usize * stride;
            stride *= d as usize;
        }
        let offset =
            bucket.checked_mul(embedding).ok_or_else(|| crate::error::Error::new("output offset overflows"))?;
        if offset != current {
            let end = (current + embedding).min(out.len());
            finalize(combiner, count, total, squares, &mut out[current.min(end)..end]);
            (count, total, squares, current) = (0, 0.0, 0.0, offset);
        }
        count += 1;
        squares += w * w;
        total += w;
        if embedding > 0 {
            if offset + embedding > out.len() {
                crate::bail!("output slot {bucket} is out of bounds");
            }
            let src = &value[row * embedding..(row + 1) * embedding];
            for (o, &x) in out[offset..offset + embedding].iter_mut().zip(src) {
                *o += x * w;
            }
        }
    }
    let end = (current + embedding).min(out.len());
    finalize(combiner, count, total, squares, &mut out[current.min(end)..end]);
    Ok(())
}

/// EMBEDDING_LOOKUP_SPARSE; no State (the output is shaped when the op runs).
struct EmbeddingLookupSparse;

impl BuiltinKernel for EmbeddingLookupSparse {
    const NAME: &'static str = OP;
    type Params = TfLiteEmbeddingLookupSparseParams;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &TfLiteEmbeddingLookupSparseParams) -> Result<()> {
        check_arity(ctx, OP, 5, 5, 1)?;
        use TfLiteType::*;
        let want = [
            (0, 1, kTfLiteInt32, "ids"),
            (1, 2, kTfLiteInt32, "indices"),
            (2, 1, kTfLiteInt32, "dense shape"),
            (3, 1, kTfLiteFloat32, "weights"),
        ];
        for (i, rank, ty, what) in want {
            let t = ctx.input(i).map_err(in_op(OP))?;
            if t.shape.len() != rank || t.dtype != ty {
                return Err(op_error(OP, format!("the {what} must be a {ty:?} tensor of rank {rank}", ty = ty.name())));
            }
        }
        let ids = ctx.input(0).map_err(in_op(OP))?;
        let indices = ctx.input(1).map_err(in_op(OP))?;
        let weights = ctx.input(3).map_err(in_op(OP))?;
        if indices.shape[0] != ids.shape[0] || indices.shape[0] != weights.shape[0] {
            return Err(op_error(OP, "the ids, indices and weights must have as many rows"));
        }
        let value = ctx.input(4).map_err(in_op(OP))?;
        if value.shape.len() < 2 || value.dtype != kTfLiteFloat32 {
            return Err(op_error(OP, "the value must be a float32 tensor of rank 2 or more"));
        }
        let out = ctx.output(0).map_err(in_op(OP))?;
        if out.dtype != kTfLiteFloat32 {
            return Err(op_error(OP, format!("output type {} must be float32", out.dtype.name())));
        }
        ctx.set_output_dynamic(0).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteEmbeddingLookupSparseParams, _: &mut ()) -> Result<()> {
        let ids = ctx.input(0).map_err(in_op(OP))?;
        let indices = ctx.input(1).map_err(in_op(OP))?;
        let dense = ctx.input(2).map_err(in_op(OP))?;
        let weights = ctx.input(3).map_err(in_op(OP))?;
        let value = ctx.input(4).map_err(in_op(OP))?;
        let dense_shape = dense.data::<i32>().map_err(in_op(OP))?;
        if dense_shape.len() != indices.shape[1] as usize {
            return Err(op_error(
                OP,
                format!("the dense shape has {} values, the indices {} columns", dense_shape.len(), indices.shape[1]),
            ));
        }
        let shape = output_shape(dense_shape, value.shape).map_err(|e| op_error(OP, e.message))?;
        let embedding = element_count(&value.shape[1..]).map_err(|e| op_error(OP, e.message))?;
        ctx.resize_output(0, &shape).map_err(in_op(OP))?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        lookup_sparse(
            p.combiner,
            ids.data::<i32>().map_err(in_op(OP))?,
            indices.data::<i32>().map_err(in_op(OP))?,
            dense_shape,
            weights.data::<f32>().map_err(in_op(OP))?,
            value.data::<f32>().map_err(in_op(OP))?,
            value.shape[0].max(0) as usize,
            embedding,
            out.data_mut::<f32>().map_err(in_op(OP))?,
        )
        .map_err(|e| op_error(OP, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TfLiteCombinerType::*;

    // value: 3 rows of 2.
    const VALUE: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];

    fn run(c: TfLiteCombinerType, ids: &[i32], idx: &[i32], dense: &[i32], w: &[f32]) -> Result<Vec<f32>> {
        let shape = output_shape(dense, &[3, 2])?;
        let mut out = vec![7.0; element_count(&shape)?];
        lookup_sparse(c, ids, idx, dense, w, &VALUE, 3, 2, &mut out)?;
        Ok(out)
    }

    #[test]
    fn combiners() {
        // Slot 0: rows 1 (w 2) and 2 (w 1); slot 2: row 0 (w 4); slot 1 untouched.
        let (ids, idx, dense, w) = ([1, 2, 0], [0, 0, 0, 1, 2, 0], [3, 2], [2.0, 1.0, 4.0]);
        assert_eq!(run(kTfLiteCombinerTypeSum, &ids, &idx, &dense, &w).unwrap(), vec![11.0, 14.0, 0.0, 0.0, 4.0, 8.0]);
        assert_eq!(
            run(kTfLiteCombinerTypeMean, &ids, &idx, &dense, &w).unwrap(),
            vec![11.0 / 3.0, 14.0 / 3.0, 0.0, 0.0, 1.0, 2.0]
        );
        let s = 5f32.sqrt();
        assert_eq!(
            run(kTfLiteCombinerTypeSqrtn, &ids, &idx, &dense, &w).unwrap(),
            vec![11.0 / s, 14.0 / s, 0.0, 0.0, 1.0, 2.0]
        );
    }

    #[test]
    fn a_slot_met_again_is_combined_again() {
        // Slot 0, then slot 1, then slot 0 again: slot 0 is divided by 2, then gains row 2
        // and is divided by the new group's weight.
        let out = run(kTfLiteCombinerTypeMean, &[0, 1, 2], &[0, 0, 1, 0, 0, 0], &[2, 1], &[2.0, 1.0, 4.0]).unwrap();
        assert_eq!(out, vec![(1.0 + 20.0) / 4.0, (2.0 + 24.0) / 4.0, 3.0, 4.0]);
    }

    #[test]
    fn errors() {
        assert!(run(kTfLiteCombinerTypeSum, &[3], &[0, 0], &[1, 1], &[1.0]).is_err());
        assert!(run(kTfLiteCombinerTypeSum, &[-1], &[0, 0], &[1, 1], &[1.0]).is_err());
        assert!(run(kTfLiteCombinerTypeSum, &[0], &[1, 0], &[1, 1], &[1.0]).is_err());
        assert!(run(kTfLiteCombinerTypeSum, &[0], &[-1, 0], &[1, 1], &[1.0]).is_err());
        assert!(run(kTfLiteCombinerTypeSum, &[0, 1], &[0, 0], &[1, 1], &[1.0]).is_err());
        assert!(output_shape(&[], &[3, 2]).is_err());
        assert!(output_shape(&[-2, 1], &[3, 2]).is_err());
        assert!(output_shape(&[2, 1], &[3]).is_err());
        assert!(output_shape(&[i32::MAX, i32::MAX, 1], &[3, i32::MAX, i32::MAX]).is_err());
        // No lookups: all zeros.
        assert_eq!(run(kTfLiteCombinerTypeMean, &[], &[], &[2, 4], &[]).unwrap(), vec![0.0; 4]);
    }
}
