//! STABLEHLO_GATHER (TFLite `kernels/stablehlo_gather.cc`): slices of the operand at
//! start indices read from a tensor, as StableHLO's `gather`.
//!
//! For each output element, its batch coordinates (the output dimensions not in
//! `offset_dims`) pick an index vector from `start_indices` (along `index_vector_dim`),
//! which `start_index_map` scatters into a start position of the operand; its offset
//! coordinates (those in `offset_dims`) are the position inside the slice, with a 0
//! inserted at each of `collapsed_slice_dims`. Start positions are clamped so the whole
//! slice fits, as TFLite does (`min(start, dim - slice_size)`); TFLite leaves a negative
//! start unclamped and reads outside the operand, here it is clamped to 0 as StableHLO
//! specifies.
//!
//! Types as TFLite: float16/32/64, int8/16/32/64, uint8/16/32/64 operands; int32 or
//! int64 indices. Every option is validated against the shapes at Prepare (TFLite trusts
//! them); `index_vector_dim` must be a dimension of `start_indices`, as TFLite reads it.

use crate::abi::builtin_op_data::TfLiteStablehloGatherParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, element_count, in_op, op_error, with_elem_type};

const OP: &str = "STABLEHLO_GATHER";

/// The STABLEHLO_GATHER registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Gather>(TfLiteBuiltinOperator::kTfLiteBuiltinStablehloGather)
}

/// A gather, checked against its operand and index shapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GatherPlan {
    pub operand_shape: Vec<usize>,
    pub indices_shape: Vec<usize>,
    pub index_vector_dim: usize,
    pub start_index_map: Vec<usize>,
    pub slice_sizes: Vec<usize>,
    /// For each output dimension: `Some(k)` if it is the k-th slice (offset) dimension.
    pub offset_of: Vec<Option<usize>>,
    /// The operand dimension each offset dimension walks (collapsed ones skipped).
    pub offset_operand_dim: Vec<usize>,
    pub out_shape: Vec<usize>,
}

fn list(v: &[i64], n: i32, what: &str) -> Result<Vec<i64>> {
    let n = usize::try_from(n).ok().filter(|&n| n <= v.len());
    let n = n.ok_or_else(|| Error::new(format!("{what} has a bad length")))?;
    Ok(v[..n].to_vec())
}

fn dim_in(v: i64, rank: usize, what: &str) -> Result<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&d| d < rank)
        .ok_or_else(|| Error::new(format!("{what} {v} is out of range (rank {rank})")))
}

/// Checks the options against the shapes (StableHLO's constraints) and derives the plan.
pub fn gather_plan(operand: &[i32], indices: &[i32], p: &TfLiteStablehloGatherParams) -> Result<GatherPlan> {
    let op_rank = operand.len();
    let offset_dims = list(&p.offset_dims, p.num_offset_dims, "offset_dims")?;
    let collapsed = list(&p.collapsed_slice_dims, p.num_collapsed_slice_dims, "collapsed_slice_dims")?;
    let start_map = list(&p.start_index_map, p.num_start_index_map, "start_index_map")?;
    let sizes = list(&p.slice_sizes, p.num_slice_sizes, "slice_sizes")?;
    let ivd = dim_in(p.index_vector_dim, indices.len(), "index_vector_dim")?;
    if sizes.len() != op_rank {
        crate::bail!("{} slice sizes for an operand of rank {op_rank}", sizes.len());
    }
    if indices.iter().chain(operand).any(|&d| d < 0) {
        crate::bail!("negative dimension");
    }
    let slice_sizes: Vec<usize> = sizes
        .iter()
        .zip(operand)
        .map(|(&s, &d)| usize::try_from(s).ok().filter(|&s| s <= d as usize))
        .collect::<Option<_>>()
        .ok_or_else(|| Error::new(format!("slice sizes {sizes:?} do not fit the operand {operand:?}")))?;
    let mut is_collapsed = vec![false; op_rank];
    for &c in &collapsed {
        let c = dim_in(c, op_rank, "collapsed_slice_dims entry")?;
        if std::mem::replace(&mut is_collapsed[c], true) || slice_sizes[c] > 1 {
            crate::bail!("collapsed dimension {c} is repeated or has a slice size above 1");
        }
    }
    if indices[ivd] as usize != start_map.len() {
        crate::bail!("index vectors have {} entries, start_index_map {}", indices[ivd], start_map.len());
    }
    let mut mapped = vec![false; op_rank];
    let start_index_map = start_map
        .iter()
        .map(|&d| {
            let d = dim_in(d, op_rank, "start_index_map entry")?;
            if std::mem::replace(&mut mapped[d], true) {
                crate::bail!("start_index_map repeats dimension {d}");
            }
            Ok(d)
        })
        .collect::<Result<Vec<_>>>()?;
    let offset_operand_dim: Vec<usize> = (0..op_rank).filter(|&d| !is_collapsed[d]).collect();
    if offset_dims.len() != offset_operand_dim.len() {
        crate::bail!(
            "{} offset dims, but {} uncollapsed slice dimensions",
            offset_dims.len(),
            offset_operand_dim.len()
        );
    }
    let out_rank = offset_dims.len() + indices.len() - 1;
    let mut offset_of = vec![None; out_rank];
    let mut prev = -1i64;
    for (k, &o) in offset_dims.iter().enumerate() {
        let d = dim_in(o, out_rank, "offset_dims entry")?;
        if o <= prev {
            crate::bail!("offset_dims must be sorted and distinct");
        }
        prev = o;
        offset_of[d] = Some(k);
    }
    let batch_dims: Vec<usize> = (0..indices.len()).filter(|&d| d != ivd).collect();
    let mut out_shape = Vec::with_capacity(out_rank);
    let mut b = 0;
    for slot in &offset_of {
        match slot {
            Some(k) => out_shape.push(slice_sizes[offset_operand_dim[*k]]),
            None => {
                out_shape.push(indices[batch_dims[b]] as usize);
                b += 1;
            }
        }
    }
    Ok(GatherPlan {
        operand_shape: operand.iter().map(|&d| d as usize).collect(),
        indices_shape: indices.iter().map(|&d| d as usize).collect(),
        index_vector_dim: ivd,
        start_index_map,
        slice_sizes,
        offset_of,
        offset_operand_dim,
        out_shape,
    })
}

fn row_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Runs `plan` on `operand` with start indices `indices` (as i64).
pub fn gather<T: Copy>(operand: &[T], indices: &[i64], plan: &GatherPlan, out: &mut [T]) -> Result<()> {
    let n_out: usize = plan.out_shape.iter().product();
    if operand.len() != plan.operand_shape.iter().product::<usize>()
        || indices.len() != plan.indices_shape.iter().product::<usize>()
        || out.len() != n_out
    {
        crate::bail!("buffer sizes do not match the shapes");
    }
    if n_out == 0 {
        return Ok(());
    }
    let op_strides = row_strides(&plan.operand_shape);
    let ix_strides = row_strides(&plan.indices_shape);
    let rank = plan.out_shape.len();
    let mut idx = vec![0usize; rank];
    let mut start = vec![0usize; plan.operand_shape.len()];
    for o in out.iter_mut() {
        // Position in start_indices of the index vector: batch coordinates in order,
        // skipping index_vector_dim.
        let mut base = 0usize;
        let mut b = 0;
        let mut at = 0usize;
        for (d, slot) in plan.offset_of.iter().enumerate() {
            if slot.is_none() {
                if b == plan.index_vector_dim {
                    b += 1;
                }
                base += idx[d] * ix_strides[b];
                b += 1;
            }
        }
        start.fill(0);
        for (k, &od) in plan.start_index_map.iter().enumerate() {
            let v = indices[base + k * ix_strides[plan.index_vector_dim]];
            let hi = (plan.operand_shape[od] - plan.slice_sizes[od]) as i64;
            start[od] = v.clamp(0, hi) as usize;
        }
        for (d, slot) in plan.offset_of.iter().enumerate() {
            if let Some(k) = slot {
                let od = plan.offset_operand_dim[*k];
                start[od] += idx[d];
            }
        }
        for (s, st) in start.iter().zip(&op_strides) {
            at += s * st;
        }
        *o = operand[at];
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < plan.out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

/// STABLEHLO_GATHER; its State is the plan.
struct Gather;

impl BuiltinKernel for Gather {
    const NAME: &'static str = OP;
    type Params = TfLiteStablehloGatherParams;
    type State = GatherPlan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteStablehloGatherParams) -> Result<GatherPlan> {
        use TfLiteType::*;
        check_arity(ctx, OP, 2, 2, 1)?;
        let operand = ctx.input(0).map_err(in_op(OP))?;
        let indices = ctx.input(1).map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?;
        if !matches!(indices.dtype, kTfLiteInt32 | kTfLiteInt64) {
            return Err(op_error(OP, format!("index type {} is not supported", indices.dtype.name())));
        }
        let supported = [
            kTfLiteFloat16,
            kTfLiteFloat32,
            kTfLiteFloat64,
            kTfLiteInt8,
            kTfLiteInt16,
            kTfLiteInt32,
            kTfLiteInt64,
            kTfLiteUInt8,
            kTfLiteUInt16,
            kTfLiteUInt32,
            kTfLiteUInt64,
        ];
        if !supported.contains(&operand.dtype) {
            return Err(op_error(OP, format!("operand type {} is not supported", operand.dtype.name())));
        }
        if out.dtype != operand.dtype {
            return Err(op_error(OP, "the output type differs from the operand's"));
        }
        let plan = gather_plan(operand.shape, indices.shape, p).map_err(|e| op_error(OP, e.message))?;
        let dims: Vec<i32> = plan.out_shape.iter().map(|&d| d as i32).collect();
        element_count(&dims).map_err(|e| op_error(OP, e.message))?;
        ctx.resize_output(0, &dims).map_err(in_op(OP))?;
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteStablehloGatherParams, plan: &mut GatherPlan) -> Result<()> {
        let operand = ctx.input(0).map_err(in_op(OP))?;
        let indices = ctx.input(1).map_err(in_op(OP))?;
        let idx: Vec<i64> = match indices.dtype {
            TfLiteType::kTfLiteInt32 => {
                super::values_of::<i32>(&indices).map_err(in_op(OP))?.into_iter().map(i64::from).collect()
            }
            _ => super::values_of::<i64>(&indices).map_err(in_op(OP))?,
        };
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        with_elem_type!(operand.dtype, OP, T => gather::<T>(operand.data::<T>()?, &idx, plan, out.data_mut::<T>()?))
            .map_err(|e: Error| op_error(OP, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(offset: &[i64], collapsed: &[i64], map: &[i64], ivd: i64, sizes: &[i64]) -> TfLiteStablehloGatherParams {
        let mut p = TfLiteStablehloGatherParams::default();
        p.offset_dims[..offset.len()].copy_from_slice(offset);
        p.num_offset_dims = offset.len() as i32;
        p.collapsed_slice_dims[..collapsed.len()].copy_from_slice(collapsed);
        p.num_collapsed_slice_dims = collapsed.len() as i32;
        p.start_index_map[..map.len()].copy_from_slice(map);
        p.num_start_index_map = map.len() as i32;
        p.index_vector_dim = ivd;
        p.slice_sizes[..sizes.len()].copy_from_slice(sizes);
        p.num_slice_sizes = sizes.len() as i32;
        p
    }

    #[test]
    fn rows_by_index() {
        // Operand 3x2, gather rows [2, 0] (like tf.gather axis 0).
        let p = params(&[1], &[0], &[0], 1, &[1, 2]);
        let plan = gather_plan(&[3, 2], &[2, 1], &p).unwrap();
        assert_eq!(plan.out_shape, vec![2, 2]);
        let mut out = [0; 4];
        gather(&[1, 2, 3, 4, 5, 6], &[2, 0], &plan, &mut out).unwrap();
        assert_eq!(out, [5, 6, 1, 2]);
    }

    #[test]
    fn starts_are_clamped() {
        // Slices of 2 from a 5-vector: start 4 becomes 3, start -3 becomes 0.
        let p = params(&[1], &[], &[0], 1, &[2]);
        let plan = gather_plan(&[5], &[3, 1], &p).unwrap();
        assert_eq!(plan.out_shape, vec![3, 2]);
        let mut out = [0; 6];
        gather(&[10, 11, 12, 13, 14], &[4, -3, 1], &plan, &mut out).unwrap();
        assert_eq!(out, [13, 14, 10, 11, 11, 12]);
    }

    #[test]
    fn bad_options_are_errors() {
        assert!(gather_plan(&[3, 2], &[2, 1], &params(&[1], &[0], &[0], 2, &[1, 2])).is_err(), "index_vector_dim");
        assert!(gather_plan(&[3, 2], &[2, 1], &params(&[1], &[0], &[5], 1, &[1, 2])).is_err(), "start_index_map");
        assert!(gather_plan(&[3, 2], &[2, 1], &params(&[1], &[0], &[0], 1, &[1, 3])).is_err(), "slice too big");
        assert!(gather_plan(&[3, 2], &[2, 1], &params(&[1], &[0], &[0], 1, &[2, 2])).is_err(), "collapsed size");
        assert!(gather_plan(&[3, 2], &[2, 1], &params(&[4], &[0], &[0], 1, &[1, 2])).is_err(), "offset dim");
        assert!(gather_plan(&[3, 2], &[2, 2], &params(&[1], &[0], &[0], 1, &[1, 2])).is_err(), "vector size");
        let mut p = params(&[1], &[0], &[0], 1, &[1, 2]);
        p.num_offset_dims = 100;
        assert!(gather_plan(&[3, 2], &[2, 1], &p).is_err());
    }
}
