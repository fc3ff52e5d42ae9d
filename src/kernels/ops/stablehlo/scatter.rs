//! STABLEHLO_SCATTER (TFLite `kernels/stablehlo_scatter.cc`): the operand with windows
//! of `updates` combined into it at positions read from `scatter_indices`, as
//! StableHLO's `scatter`.
//!
//! Each update element's scatter coordinates (the update dimensions not in
//! `update_window_dims`) pick an index vector from `scatter_indices` (along
//! `index_vector_dim`), which `scatter_dims_to_operand_dims` places in the operand; its
//! window coordinates, with a 0 inserted at each of `inserted_window_dims`, are added.
//! Updates landing outside the operand are dropped (TFLite follows StableHLO's reference
//! interpreter; TFLite only checks the upper bound, here a negative position is dropped
//! too). Updates apply in row-major order of `updates`.
//!
//! The combination comes from the update computation subgraph, as TFLite reads it: no
//! op replaces the value; a single STABLEHLO_ADD, STABLEHLO_MULTIPLY, STABLEHLO_MAXIMUM
//! or STABLEHLO_MINIMUM combines the old value with the update, with the elementwise
//! ops' arithmetic (`kernels::ops::stablehlo::elementwise`). Types as TFLite:
//! float16/32/64, int8/16/32/64, uint8/16/32/64 operands; int32 or int64 indices.

use super::elementwise::{Arith, Kind};
use crate::abi::builtin_op_data::TfLiteStablehloScatterParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator as Op;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{Element, OpCtx};
use crate::kernels::float_conv::{f16_to_f32, f32_to_f16};
use crate::kernels::graph::calls_of;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "STABLEHLO_SCATTER";

/// The STABLEHLO_SCATTER registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Scatter>(Op::kTfLiteBuiltinStablehloScatter)
}

/// How an update combines with the operand's value (`None`: it replaces it).
pub type Combine = Option<Kind>;

/// The combination the update computation subgraph's ops name (TFLite's
/// `GetComputationType`).
pub fn combine_of_codes(codes: &[i32]) -> Result<Combine> {
    match codes {
        [] => Ok(None),
        [c] => [
            (Op::kTfLiteBuiltinStablehloAdd, Kind::Add),
            (Op::kTfLiteBuiltinStablehloMultiply, Kind::Mul),
            (Op::kTfLiteBuiltinStablehloMaximum, Kind::Max),
            (Op::kTfLiteBuiltinStablehloMinimum, Kind::Min),
        ]
        .iter()
        .find(|(o, _)| *o as i32 == *c)
        .map(|&(_, k)| Some(k))
        .ok_or_else(|| Error::new("only update, add, multiply, maximum and minimum computations are supported")),
        _ => Err(Error::new(format!("only one op is allowed in the update computation, it holds {}", codes.len()))),
    }
}

/// A scatter, checked against its shapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScatterPlan {
    pub operand_shape: Vec<usize>,
    pub indices_shape: Vec<usize>,
    pub updates_shape: Vec<usize>,
    pub index_vector_dim: usize,
    pub to_operand: Vec<usize>,
    /// For each update dimension: `Some(d)` if it is a window dimension walking operand
    /// dimension `d`, `None` if it is a scatter dimension.
    pub window_operand_dim: Vec<Option<usize>>,
}

fn list(v: &[i64], n: i32, what: &str) -> Result<Vec<i64>> {
    let n = usize::try_from(n).ok().filter(|&n| n <= v.len());
    Ok(v[..n.ok_or_else(|| Error::new(format!("{what} has a bad length")))?].to_vec())
}

fn dim_in(v: i64, rank: usize, what: &str) -> Result<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&d| d < rank)
        .ok_or_else(|| Error::new(format!("{what} {v} is out of range (rank {rank})")))
}

/// Checks the options against the shapes (StableHLO's constraints) and derives the plan.
pub fn scatter_plan(
    operand: &[i32],
    indices: &[i32],
    updates: &[i32],
    p: &TfLiteStablehloScatterParams,
) -> Result<ScatterPlan> {
    if operand.iter().chain(indices).chain(updates).any(|&d| d < 0) {
        crate::bail!("negative dimension");
    }
    let op_rank = operand.len();
    let window_dims = list(&p.update_window_dims, p.num_update_window_dims, "update_window_dims")?;
    let inserted = list(&p.inserted_window_dims, p.num_inserted_window_dims, "inserted_window_dims")?;
    let to_op =
        list(&p.scatter_dims_to_operand_dims, p.num_scatter_dims_to_operand_dims, "scatter_dims_to_operand_dims")?;
    let ivd = dim_in(p.index_vector_dim, indices.len(), "index_vector_dim")?;
    if window_dims.len() + inserted.len() != op_rank {
        crate::bail!(
            "{} window and {} inserted dimensions for an operand of rank {op_rank}",
            window_dims.len(),
            inserted.len()
        );
    }
    let mut is_inserted = vec![false; op_rank];
    for &d in &inserted {
        let d = dim_in(d, op_rank, "inserted_window_dims entry")?;
        if std::mem::replace(&mut is_inserted[d], true) {
            crate::bail!("inserted_window_dims repeats {d}");
        }
    }
    let window_operand: Vec<usize> = (0..op_rank).filter(|&d| !is_inserted[d]).collect();
    let mut window_operand_dim = vec![None; updates.len()];
    let mut prev = -1i64;
    for (k, &w) in window_dims.iter().enumerate() {
        let d = dim_in(w, updates.len(), "update_window_dims entry")?;
        if w <= prev {
            crate::bail!("update_window_dims must be sorted and distinct");
        }
        prev = w;
        window_operand_dim[d] = Some(window_operand[k]);
    }
    // The scatter dimensions of `updates` are the batch dimensions of `scatter_indices`.
    let batch: Vec<i32> = indices.iter().enumerate().filter(|&(d, _)| d != ivd).map(|(_, &n)| n).collect();
    let upd_batch: Vec<i32> =
        updates.iter().zip(&window_operand_dim).filter(|(_, w)| w.is_none()).map(|(&n, _)| n).collect();
    if batch != upd_batch {
        crate::bail!(
            "the updates' scatter dimensions {upd_batch:?} differ from the indices' batch dimensions {batch:?}"
        );
    }
    if indices[ivd] as usize != to_op.len() {
        crate::bail!("index vectors have {} entries, scatter_dims_to_operand_dims {}", indices[ivd], to_op.len());
    }
    let mut mapped = vec![false; op_rank];
    let to_operand = to_op
        .iter()
        .map(|&d| {
            let d = dim_in(d, op_rank, "scatter_dims_to_operand_dims entry")?;
            if std::mem::replace(&mut mapped[d], true) {
                crate::bail!("scatter_dims_to_operand_dims repeats {d}");
            }
            Ok(d)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ScatterPlan {
        operand_shape: operand.iter().map(|&d| d as usize).collect(),
        indices_shape: indices.iter().map(|&d| d as usize).collect(),
        updates_shape: updates.iter().map(|&d| d as usize).collect(),
        index_vector_dim: ivd,
        to_operand,
        window_operand_dim,
    })
}

fn row_strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// `out` (holding the operand) with `updates` combined in by `f` (`None`: replaced).
pub fn scatter<T: Copy>(
    out: &mut [T],
    indices: &[i64],
    updates: &[T],
    plan: &ScatterPlan,
    f: Option<fn(T, T) -> T>,
) -> Result<()> {
    if out.len() != plan.operand_shape.iter().product::<usize>()
        || indices.len() != plan.indices_shape.iter().product::<usize>()
        || updates.len() != plan.updates_shape.iter().product::<usize>()
    {
        crate::bail!("buffer sizes do not match the shapes");
    }
    if updates.is_empty() {
        return Ok(());
    }
    let op_strides = row_strides(&plan.operand_shape);
    let ix_strides = row_strides(&plan.indices_shape);
    let rank = plan.updates_shape.len();
    let mut idx = vec![0usize; rank];
    let mut pos = vec![0i64; plan.operand_shape.len()];
    for &u in updates {
        let mut base = 0usize;
        let mut b = 0;
        pos.fill(0);
        for (d, w) in plan.window_operand_dim.iter().enumerate() {
            match w {
                Some(od) => pos[*od] += idx[d] as i64,
                None => {
                    if b == plan.index_vector_dim {
                        b += 1;
                    }
                    base += idx[d] * ix_strides[b];
                    b += 1;
                }
            }
        }
        for (k, &od) in plan.to_operand.iter().enumerate() {
            pos[od] = pos[od].saturating_add(indices[base + k * ix_strides[plan.index_vector_dim]]);
        }
        let inside = pos.iter().zip(&plan.operand_shape).all(|(&p, &n)| p >= 0 && (p as u64) < n as u64);
        if inside {
            let at: usize = pos.iter().zip(&op_strides).map(|(&p, &s)| p as usize * s).sum();
            out[at] = match f {
                Some(f) => f(out[at], u),
                None => u,
            };
        }
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < plan.updates_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

fn run_typed<T: Element>(ctx: &OpCtx<'_>, plan: &ScatterPlan, idx: &[i64], f: Option<fn(T, T) -> T>) -> Result<()> {
    let operand = ctx.input(0)?;
    let updates = ctx.input(2)?;
    let mut out = ctx.output(0)?;
    let o = out.data_mut::<T>()?;
    o.copy_from_slice(operand.data::<T>()?);
    scatter(o, idx, updates.data::<T>()?, plan, f)
}

fn typed<T: Arith>(ctx: &OpCtx<'_>, plan: &ScatterPlan, idx: &[i64], c: Combine) -> Result<()> {
    let f = match c {
        Some(k) => Some(T::apply(k).ok_or_else(|| Error::new("unsupported computation"))?),
        None => None,
    };
    run_typed::<T>(ctx, plan, idx, f)
}

/// STABLEHLO_SCATTER; its State is the plan and the combination.
struct Scatter;

impl BuiltinKernel for Scatter {
    const NAME: &'static str = OP;
    type Params = TfLiteStablehloScatterParams;
    type State = (ScatterPlan, Combine);

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteStablehloScatterParams) -> Result<(ScatterPlan, Combine)> {
        use TfLiteType::*;
        check_arity(ctx, OP, 3, 3, 1)?;
        let operand = ctx.input(0).map_err(in_op(OP))?;
        let indices = ctx.input(1).map_err(in_op(OP))?;
        let updates = ctx.input(2).map_err(in_op(OP))?;
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
        if updates.dtype != operand.dtype || out.dtype != operand.dtype {
            return Err(op_error(OP, "the operand, updates and output types must agree"));
        }
        let plan = scatter_plan(operand.shape, indices.shape, updates.shape, p).map_err(|e| op_error(OP, e.message))?;
        let g = calls_of(ctx, OP)?;
        let sg = usize::try_from(p.update_computation_subgraph_index).map_err(|_| {
            op_error(
                OP,
                format!("update computation subgraph index {} is negative", p.update_computation_subgraph_index),
            )
        })?;
        let codes = g.builtin_codes(sg).map_err(|e| op_error(OP, e.message))?;
        let combine = combine_of_codes(&codes).map_err(|e| op_error(OP, e.message))?;
        ctx.resize_output(0, operand.shape).map_err(in_op(OP))?;
        Ok((plan, combine))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteStablehloScatterParams, s: &mut (ScatterPlan, Combine)) -> Result<()> {
        use TfLiteType::*;
        let (plan, c) = (&s.0, s.1);
        let indices = ctx.input(1).map_err(in_op(OP))?;
        let idx: Vec<i64> = match indices.dtype {
            kTfLiteInt32 => super::values_of::<i32>(&indices).map_err(in_op(OP))?.into_iter().map(i64::from).collect(),
            _ => super::values_of::<i64>(&indices).map_err(in_op(OP))?,
        };
        let dtype = ctx.input(0).map_err(in_op(OP))?.dtype;
        match dtype {
            kTfLiteFloat16 => {
                let f: Option<fn(u16, u16) -> u16> = match c {
                    None => None,
                    Some(Kind::Add) => Some(|a, b| f32_to_f16(f16_to_f32(a) + f16_to_f32(b))),
                    Some(Kind::Mul) => Some(|a, b| f32_to_f16(f16_to_f32(a) * f16_to_f32(b))),
                    Some(Kind::Max) => Some(|a, b| if f16_to_f32(a) < f16_to_f32(b) { b } else { a }),
                    Some(_) => Some(|a, b| if f16_to_f32(b) < f16_to_f32(a) { b } else { a }),
                };
                run_typed::<u16>(ctx, plan, &idx, f)
            }
            kTfLiteFloat32 => typed::<f32>(ctx, plan, &idx, c),
            kTfLiteFloat64 => typed::<f64>(ctx, plan, &idx, c),
            kTfLiteInt8 => typed::<i8>(ctx, plan, &idx, c),
            kTfLiteInt16 => typed::<i16>(ctx, plan, &idx, c),
            kTfLiteInt32 => typed::<i32>(ctx, plan, &idx, c),
            kTfLiteInt64 => typed::<i64>(ctx, plan, &idx, c),
            kTfLiteUInt8 => typed::<u8>(ctx, plan, &idx, c),
            kTfLiteUInt16 => typed::<u16>(ctx, plan, &idx, c),
            kTfLiteUInt32 => typed::<u32>(ctx, plan, &idx, c),
            kTfLiteUInt64 => typed::<u64>(ctx, plan, &idx, c),
            other => Err(Error::new(format!("type {} is not supported", other.name()))),
        }
        .map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(window: &[i64], inserted: &[i64], to_op: &[i64], ivd: i64) -> TfLiteStablehloScatterParams {
        let mut p = TfLiteStablehloScatterParams::default();
        p.update_window_dims[..window.len()].copy_from_slice(window);
        p.num_update_window_dims = window.len() as i32;
        p.inserted_window_dims[..inserted.len()].copy_from_slice(inserted);
        p.num_inserted_window_dims = inserted.len() as i32;
        p.scatter_dims_to_operand_dims[..to_op.len()].copy_from_slice(to_op);
        p.num_scatter_dims_to_operand_dims = to_op.len() as i32;
        p.index_vector_dim = ivd;
        p
    }

    #[test]
    fn rows_added_and_out_of_bounds_dropped() {
        // Operand 3x2; update rows at indices [2, 0, 2, 7, -1]: rows 2 and 0, 2 twice.
        let p = params(&[1], &[0], &[0], 1);
        let plan = scatter_plan(&[3, 2], &[5, 1], &[5, 2], &p).unwrap();
        let mut out = [0i32; 6];
        let add = i32::apply(Kind::Add);
        scatter(&mut out, &[2, 0, 2, 7, -1], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], &plan, add).unwrap();
        assert_eq!(out, [3, 4, 0, 0, 6, 8]);
        let mut out = [0i32; 6];
        scatter(&mut out, &[2, 0, 2, 7, -1], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], &plan, None).unwrap();
        assert_eq!(out, [3, 4, 0, 0, 5, 6], "the later update replaces");
    }

    #[test]
    fn windows_past_the_edge_are_partly_dropped() {
        // 1-D operand of 4, windows of 2 at starts [3, 1].
        let p = params(&[1], &[], &[0], 1);
        let plan = scatter_plan(&[4], &[2, 1], &[2, 2], &p).unwrap();
        let mut out = [0i8; 4];
        scatter(&mut out, &[3, 1], &[1, 2, 3, 4], &plan, None).unwrap();
        assert_eq!(out, [0, 3, 4, 1]);
    }

    #[test]
    fn bad_options_are_errors() {
        assert!(scatter_plan(&[3, 2], &[5, 1], &[5, 2], &params(&[1], &[0], &[0], 2)).is_err());
        assert!(scatter_plan(&[3, 2], &[5, 1], &[5, 2], &params(&[1], &[], &[0], 1)).is_err());
        assert!(scatter_plan(&[3, 2], &[5, 1], &[4, 2], &params(&[1], &[0], &[0], 1)).is_err());
        assert!(scatter_plan(&[3, 2], &[5, 2], &[5, 2], &params(&[1], &[0], &[0], 1)).is_err());
        assert!(scatter_plan(&[3, 2], &[5, 1], &[5, 2], &params(&[1], &[0], &[3], 1)).is_err());
        assert!(scatter_plan(&[3, 2], &[5, 1], &[5, 2], &params(&[5], &[0], &[0], 1)).is_err());
        assert_eq!(combine_of_codes(&[]).unwrap(), None);
        assert_eq!(combine_of_codes(&[Op::kTfLiteBuiltinStablehloMinimum as i32]).unwrap(), Some(Kind::Min));
        assert!(combine_of_codes(&[Op::kTfLiteBuiltinAdd as i32]).is_err());
        assert!(combine_of_codes(&[1, 2]).is_err());
    }
}
