//! GATHER, TILE and BROADCAST_TO (TFLite `kernels/gather.cc`, `reference/gather.h`,
//! `tile.cc`, `broadcast_to.cc`).
//!
//! GATHER: positions int16/int32/int64, `axis` and `batch_dims` from the params (negative
//! values count from the end); a negative or out-of-range position is an error, as in
//! TFLite. TILE repeats the input `multiples[d]` times along each dimension; BROADCAST_TO
//! broadcasts it to a shape of rank at most 8 (numpy rules). TILE's multiples and
//! BROADCAST_TO's shape determine the output shape: non-constant ones make the output
//! dynamic, sized in Eval (see `shape_util::plan_declared_output`).

use crate::abi::builtin_op_data::TfLiteGatherParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, check_type, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
    to_i32, with_elem_type,
};

/// The GATHER registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Gather>(TfLiteBuiltinOperator::kTfLiteBuiltinGather)
}

/// The TILE registration.
pub fn tile_registration() -> TfLiteRegistration {
    kernel::registration::<Tile>(TfLiteBuiltinOperator::kTfLiteBuiltinTile)
}

/// The BROADCAST_TO registration.
pub fn broadcast_to_registration() -> TfLiteRegistration {
    kernel::registration::<BroadcastTo>(TfLiteBuiltinOperator::kTfLiteBuiltinBroadcastTo)
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// GATHER's geometry (`reference_ops::Gather`): sizes of the batch, outer, axis, inner and
/// coordinate blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GatherGeometry {
    pub batch: usize,
    pub outer: usize,
    pub axis_size: usize,
    pub inner: usize,
    pub coords: usize,
}

/// Output shape and geometry of GATHER.
pub fn gather_plan(input: &[i32], positions: &[i32], axis: i32, batch_dims: i32) -> Result<(Vec<i32>, GatherGeometry)> {
    let rank = input.len() as i32;
    let axis = if axis < 0 { axis + rank } else { axis };
    if axis < 0 || axis >= rank {
        crate::bail!("axis {axis} is out of range for rank {rank}");
    }
    let prank = positions.len() as i32;
    let batch_dims = if batch_dims < 0 { batch_dims + prank } else { batch_dims };
    if batch_dims < 0 || batch_dims > axis || batch_dims >= rank || batch_dims > prank {
        crate::bail!("batch_dims {batch_dims} is out of range (axis {axis}, ranks {rank} and {prank})");
    }
    let (axis, bd) = (axis as usize, batch_dims as usize);
    if input[..bd] != positions[..bd] {
        crate::bail!("the first {bd} dimensions of {input:?} and {positions:?} differ");
    }
    if input.iter().chain(positions).any(|&d| d < 0) {
        crate::bail!("negative dimension");
    }
    let mut shape = input[..axis].to_vec();
    shape.extend_from_slice(&positions[bd..]);
    shape.extend_from_slice(&input[axis + 1..]);
    let p = |s: &[i32]| s.iter().map(|&d| d as usize).product::<usize>();
    Ok((
        shape,
        GatherGeometry {
            batch: p(&input[..bd]),
            outer: p(&input[bd..axis]),
            axis_size: input[axis] as usize,
            inner: p(&input[axis + 1..]),
            coords: p(&positions[bd..]),
        },
    ))
}

/// GATHER on slices; positions already widened to `i64`.
pub fn gather<T: Copy>(input: &[T], positions: &[i64], g: &GatherGeometry, out: &mut [T]) -> Result<()> {
    let n_in = g.batch * g.outer * g.axis_size * g.inner;
    let n_out = g.batch * g.outer * g.coords * g.inner;
    if input.len() != n_in || out.len() != n_out || positions.len() != g.batch * g.coords {
        crate::bail!("buffer sizes do not match the gather geometry");
    }
    if let Some(&bad) = positions.iter().find(|&&p| p < 0 || p as usize >= g.axis_size) {
        crate::bail!("position {bad} is out of range for an axis of size {}", g.axis_size);
    }
    for b in 0..g.batch {
        for o in 0..g.outer {
            for i in 0..g.coords {
                let c = positions[b * g.coords + i] as usize;
                let from = ((b * g.outer + o) * g.axis_size + c) * g.inner;
                let to = ((b * g.outer + o) * g.coords + i) * g.inner;
                out[to..to + g.inner].copy_from_slice(&input[from..from + g.inner]);
            }
        }
    }
    Ok(())
}

/// `out[i] = input[i mod in_shape]` per dimension: TILE when `out_shape` is a multiple of
/// `in_shape`, BROADCAST_TO when `in_shape` has 1 where it broadcasts. `in_shape` is
/// right-aligned to `out_shape` (missing leading dimensions are 1).
pub fn repeat_to<T: Copy>(input: &[T], in_shape: &[i32], out_shape: &[i32], out: &mut [T]) -> Result<()> {
    let rank = out_shape.len();
    if in_shape.len() > rank {
        crate::bail!("input rank {} is higher than the output's {rank}", in_shape.len());
    }
    let mut ins = vec![1i32; rank - in_shape.len()];
    ins.extend_from_slice(in_shape);
    let n_in: usize = ins.iter().map(|&d| d.max(0) as usize).product();
    let n_out: usize = out_shape.iter().map(|&d| d.max(0) as usize).product();
    if input.len() != n_in || out.len() != n_out {
        crate::bail!("buffers hold {} and {} elements, expected {n_in} and {n_out}", input.len(), out.len());
    }
    if n_out == 0 {
        return Ok(());
    }
    if n_in == 0 {
        crate::bail!("cannot repeat an empty input into a non-empty output");
    }
    let in_strides = crate::kernels::shape_util::strides(&ins);
    let mut idx = vec![0usize; rank];
    let mut src = 0usize;
    for o in out.iter_mut() {
        *o = input[src];
        for d in (0..rank).rev() {
            idx[d] += 1;
            let id = ins[d] as usize;
            // Moving within the input dimension, or wrapping back to its start.
            if idx[d].is_multiple_of(id) {
                src -= (id - 1) * in_strides[d];
            } else {
                src += in_strides[d];
            }
            if idx[d] < out_shape[d] as usize {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// GATHER glue
// ---------------------------------------------------------------------------------------

const GATHER: &str = "GATHER";

fn gather_operands<'a>(
    ctx: &OpCtx<'a>,
    p: &Option<TfLiteGatherParams>,
) -> Result<(TensorView<'a>, TensorView<'a>, Vec<i32>, GatherGeometry)> {
    check_arity(ctx, GATHER, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(GATHER))?;
    let positions = ctx.input(1).map_err(in_op(GATHER))?;
    use TfLiteType::*;
    check_type(GATHER, "positions", positions.dtype, &[kTfLiteInt16, kTfLiteInt32, kTfLiteInt64])?;
    check_type(
        GATHER,
        "input",
        input.dtype,
        &[kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt8, kTfLiteInt16, kTfLiteInt64, kTfLiteInt32, kTfLiteBool],
    )?;
    let p = p.unwrap_or_default();
    let (shape, g) = gather_plan(input.shape, positions.shape, p.axis, p.batch_dims).map_err(in_op(GATHER))?;
    Ok((input, positions, shape, g))
}

/// GATHER; its State is the batch / outer / axis / inner / coordinate geometry.
struct Gather;

impl BuiltinKernel for Gather {
    const NAME: &'static str = GATHER;
    type Params = Option<TfLiteGatherParams>;
    type State = GatherGeometry;

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteGatherParams>) -> Result<GatherGeometry> {
        let (input, _, shape, g) = gather_operands(ctx, p)?;
        ctx.set_output_type(0, input.dtype).map_err(in_op(GATHER))?;
        ctx.resize_output(0, &shape).map_err(in_op(GATHER))?;
        Ok(g)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &Option<TfLiteGatherParams>, g: &mut GatherGeometry) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(GATHER))?;
        let positions = ctx.input(1).map_err(in_op(GATHER))?;
        let mut out = ctx.output(0).map_err(in_op(GATHER))?;
        let pos = int_values(&positions, true).map_err(in_op(GATHER))?;
        with_elem_type!(input.dtype, GATHER, T => gather::<T>(input.data::<T>()?, &pos, g, out.data_mut::<T>()?))
            .map_err(in_op(GATHER))
    }
}

// ---------------------------------------------------------------------------------------
// TILE / BROADCAST_TO glue
// ---------------------------------------------------------------------------------------

const TILE: &str = "TILE";
const BROADCAST_TO: &str = "BROADCAST_TO";

fn tile_shape(input: &[i32], multiples: &[i64]) -> Result<Vec<i32>> {
    if multiples.len() != input.len() {
        crate::bail!("multiples has {} entries, the input has rank {}", multiples.len(), input.len());
    }
    input
        .iter()
        .zip(multiples)
        .map(|(&d, &m)| {
            if m < 0 {
                crate::bail!("multiple {m} is negative");
            }
            to_i32(i64::from(d) * m, "tiled dimension")
        })
        .collect()
}

fn tile_operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, TILE, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(TILE))?;
    let multiples = ctx.input(1).map_err(in_op(TILE))?;
    let out = ctx.output(0).map_err(in_op(TILE))?;
    if out.dtype != input.dtype {
        return Err(op_error(TILE, "output type differs from the input type"));
    }
    use TfLiteType::*;
    check_type(TILE, "multiples", multiples.dtype, &[kTfLiteInt32, kTfLiteInt64])?;
    check_type(
        TILE,
        "input",
        input.dtype,
        &[kTfLiteInt8, kTfLiteUInt8, kTfLiteInt16, kTfLiteFloat32, kTfLiteInt32, kTfLiteInt64, kTfLiteBool],
    )?;
    Ok((input, multiples))
}

/// TILE; its State is the output shape when `multiples` is constant.
struct Tile;

impl BuiltinKernel for Tile {
    const NAME: &'static str = TILE;
    type Params = ();
    type State = Option<Vec<i32>>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<Vec<i32>>> {
        let (input, multiples) = tile_operands(ctx)?;
        if !known_at_prepare(&multiples) {
            plan_declared_output(ctx, TILE, 0)?;
            return Ok(None);
        }
        let shape =
            tile_shape(input.shape, &int_values(&multiples, false).map_err(in_op(TILE))?).map_err(in_op(TILE))?;
        ctx.resize_output(0, &shape).map_err(in_op(TILE))?;
        Ok(Some(shape))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), planned: &mut Option<Vec<i32>>) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(TILE))?;
        let dynamic;
        let shape = match planned {
            Some(s) => s.as_slice(),
            None => {
                let multiples = int_values(&ctx.input(1).map_err(in_op(TILE))?, false).map_err(in_op(TILE))?;
                dynamic = tile_shape(input.shape, &multiples).map_err(in_op(TILE))?;
                settle_output_shape(ctx, TILE, 0, "multiples", &dynamic)?;
                dynamic.as_slice()
            }
        };
        let mut out = ctx.output(0).map_err(in_op(TILE))?;
        with_elem_type!(input.dtype, TILE, T => repeat_to::<T>(input.data::<T>()?, input.shape, shape, out.data_mut::<T>()?))
            .map_err(in_op(TILE))
    }
}

/// BROADCAST_TO's output shape: `target`, checked against the input (numpy rules).
fn broadcast_to_shape(input: &[i32], target: &[i64]) -> Result<Vec<i32>> {
    if target.len() > 8 {
        crate::bail!("output rank {} is more than 8", target.len());
    }
    if input.len() > target.len() {
        crate::bail!("input rank {} is higher than the target rank {}", input.len(), target.len());
    }
    let shape = target.iter().map(|&v| to_i32(v, "dimension")).collect::<Result<Vec<_>>>()?;
    if shape.iter().any(|&d| d < 0) {
        crate::bail!("target shape {shape:?} has a negative dimension");
    }
    let off = shape.len() - input.len();
    for (i, &d) in input.iter().enumerate() {
        if d != 1 && d != shape[off + i] {
            crate::bail!("input shape {input:?} cannot be broadcast to {shape:?}");
        }
    }
    Ok(shape)
}

fn broadcast_to_operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, BROADCAST_TO, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(BROADCAST_TO))?;
    let shape = ctx.input(1).map_err(in_op(BROADCAST_TO))?;
    let out = ctx.output(0).map_err(in_op(BROADCAST_TO))?;
    if out.dtype != input.dtype {
        return Err(op_error(BROADCAST_TO, "output type differs from the input type"));
    }
    if shape.shape.len() != 1 {
        return Err(op_error(BROADCAST_TO, "shape must be a vector"));
    }
    check_type(BROADCAST_TO, "shape", shape.dtype, &[TfLiteType::kTfLiteInt32, TfLiteType::kTfLiteInt64])?;
    Ok((input, shape))
}

/// BROADCAST_TO; its State is the output shape when the shape tensor is constant.
struct BroadcastTo;

impl BuiltinKernel for BroadcastTo {
    const NAME: &'static str = BROADCAST_TO;
    type Params = ();
    type State = Option<Vec<i32>>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<Vec<i32>>> {
        let (input, shape) = broadcast_to_operands(ctx)?;
        if !known_at_prepare(&shape) {
            plan_declared_output(ctx, BROADCAST_TO, 0)?;
            return Ok(None);
        }
        let s = broadcast_to_shape(input.shape, &int_values(&shape, false).map_err(in_op(BROADCAST_TO))?)
            .map_err(in_op(BROADCAST_TO))?;
        ctx.resize_output(0, &s).map_err(in_op(BROADCAST_TO))?;
        Ok(Some(s))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), planned: &mut Option<Vec<i32>>) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(BROADCAST_TO))?;
        let dynamic;
        let s = match planned {
            Some(s) => s.as_slice(),
            None => {
                let target =
                    int_values(&ctx.input(1).map_err(in_op(BROADCAST_TO))?, false).map_err(in_op(BROADCAST_TO))?;
                dynamic = broadcast_to_shape(input.shape, &target).map_err(in_op(BROADCAST_TO))?;
                settle_output_shape(ctx, BROADCAST_TO, 0, "shape values", &dynamic)?;
                dynamic.as_slice()
            }
        };
        let mut out = ctx.output(0).map_err(in_op(BROADCAST_TO))?;
        with_elem_type!(input.dtype, BROADCAST_TO, T => repeat_to::<T>(input.data::<T>()?, input.shape, s, out.data_mut::<T>()?))
            .map_err(in_op(BROADCAST_TO))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn gather_axis1_and_batch_dims() {
        let input: Vec<i32> = (0..6).collect(); // [2,3]
        let (shape, g) = gather_plan(&[2, 3], &[2], 1, 0).unwrap();
        assert_eq!(shape, vec![2, 2]);
        let mut out = vec![0; 4];
        gather(&input, &[2, 0], &g, &mut out).unwrap();
        assert_eq!(out, [2, 0, 5, 3]);
        assert!(gather(&input, &[3, 0], &g, &mut out).is_err());
        assert!(gather(&input, &[-1, 0], &g, &mut out).is_err());
        // batch_dims 1: positions [2,1] pick per-row.
        let (shape, g) = gather_plan(&[2, 3], &[2, 1], 1, 1).unwrap();
        assert_eq!(shape, vec![2, 1]);
        let mut out = vec![0; 2];
        gather(&input, &[1, 2], &g, &mut out).unwrap();
        assert_eq!(out, [1, 5]);
        assert!(gather_plan(&[2, 3], &[2], 2, 0).is_err());
        assert!(gather_plan(&[2, 3], &[3, 1], 1, 1).is_err());
    }

    #[test]
    fn tile_and_broadcast() {
        let mut out = vec![0; 12];
        repeat_to(&[1, 2, 3], &[1, 3], &[2, 6], &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]);
        let mut out = vec![0; 6];
        repeat_to(&[1, 2], &[2, 1], &[2, 3], &mut out).unwrap();
        assert_eq!(out, [1, 1, 1, 2, 2, 2]);
        let mut out = vec![0; 8];
        repeat_to(&[1, 2, 3, 4], &[2, 2], &[4, 2], &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4, 1, 2, 3, 4]);
        let mut out = vec![0; 6];
        repeat_to(&[7, 8, 9], &[3], &[2, 3], &mut out).unwrap();
        assert_eq!(out, [7, 8, 9, 7, 8, 9]);
        assert!(broadcast_to_shape(&[2, 3], &[3, 3]).is_err());
        assert_eq!(broadcast_to_shape(&[3], &[2, 3]).unwrap(), vec![2, 3]);
        assert!(tile_shape(&[2], &[-1]).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[3], &[1.0f32, 2.0, 3.0], None, false);
        let pos = g.tensor(kTfLiteInt64, &[2], &[2i64, 2], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<TfLiteGatherParams>(&registration(), &[x, pos], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o), vec![3.0, 3.0]);
        let m = g.tensor(kTfLiteInt32, &[1], &[2i32], None, true);
        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&tile_registration(), &[x, m], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o2), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
        let s = g.tensor(kTfLiteInt32, &[2], &[2i32, 3], None, true);
        let o3 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&broadcast_to_registration(), &[x, s], &[o3], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o3), vec![2, 3]);
    }
}
