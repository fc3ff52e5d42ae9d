//! GATHER_ND and SCATTER_ND (TFLite `kernels/gather_nd.cc`, `kernels/scatter_nd.cc`,
//! `reference_ops::GatherNd` / `ScatterNd`).
//!
//! GATHER_ND: `params` of rank >= 1, `indices` (int16/int32/int64) of rank >= 1 whose last
//! dimension `nd <= rank(params)`; the output is `indices.shape[:-1] + params.shape[nd:]`.
//! As TFLite, a negative index is an error and an index tuple is accepted when its flat
//! slice lies inside `params` (TFLite checks the flat range, not each coordinate).
//! SCATTER_ND: int32 `indices`, `updates`, and an int32 `shape` giving the output shape;
//! the output is zero-filled and the updates are added at their positions (duplicates
//! accumulate; bool updates are or-ed); a slice outside the output is an error. A
//! non-constant `shape` must give the shape the model declares (see
//! `shape_util::plan_declared_output`). Both move fixed-size elements of any numeric or
//! bool type (TFLite's GATHER_ND also takes strings, which this runtime does not).

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
    with_elem_type,
};

const GATHER: &str = "GATHER_ND";
const SCATTER: &str = "SCATTER_ND";

/// The GATHER_ND registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<GatherNd>(TfLiteBuiltinOperator::kTfLiteBuiltinGatherNd)
}

/// The SCATTER_ND registration.
pub fn scatter_nd_registration() -> TfLiteRegistration {
    kernel::registration::<ScatterNd>(TfLiteBuiltinOperator::kTfLiteBuiltinScatterNd)
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// Row-major element counts below each of the first `nd` dimensions of `shape`
/// (`dims_to_count`), or `None` when a dimension is 0.
fn dims_to_count(shape: &[usize], nd: usize) -> Option<Vec<usize>> {
    let mut remain: usize = shape.iter().product();
    let mut v = Vec::with_capacity(nd);
    for &d in &shape[..nd] {
        remain = remain.checked_div(d)?;
        v.push(remain);
    }
    Some(v)
}

/// The flat position of index tuple `idx` with `counts`, or `None` if it overflows or is
/// negative.
fn flat_pos(idx: &[i64], counts: &[usize]) -> Option<i64> {
    idx.iter().zip(counts).try_fold(0i64, |acc, (&i, &c)| acc.checked_add(i.checked_mul(c as i64)?))
}

/// `reference_ops::GatherNd`: `indices` flattened to `[n_slices][nd]`.
pub fn gather_nd<T: Copy>(
    params: &[T],
    params_shape: &[usize],
    indices: &[i64],
    nd: usize,
    out: &mut [T],
) -> Result<()> {
    if nd > params_shape.len() {
        crate::bail!("index depth {nd} exceeds the params rank {}", params_shape.len());
    }
    let n_slices = if nd == 0 {
        out.len().checked_div(params.len()).unwrap_or(0)
    } else {
        indices.len().checked_div(nd).unwrap_or(0)
    };
    let slice: usize = params_shape[nd..].iter().product();
    if params.len() != params_shape.iter().product::<usize>() {
        crate::bail!("params hold {} elements for shape {params_shape:?}", params.len());
    }
    if n_slices.checked_mul(slice) != Some(out.len()) || (nd > 0 && indices.len() != n_slices * nd) {
        crate::bail!("output holds {} elements, expected {n_slices} slices of {slice}", out.len());
    }
    if n_slices == 0 || slice == 0 {
        return Ok(());
    }
    if let Some(bad) = indices.iter().find(|&&i| i < 0) {
        crate::bail!("negative index {bad}");
    }
    let counts = dims_to_count(params_shape, nd).ok_or_else(|| Error::new("params have a zero dimension"))?;
    for i in 0..n_slices {
        let from = flat_pos(&indices[i * nd..(i + 1) * nd], &counts);
        match from {
            Some(f) if f >= 0 && (f as u64).checked_add(slice as u64).is_some_and(|e| e <= params.len() as u64) => {
                let f = f as usize;
                out[i * slice..(i + 1) * slice].copy_from_slice(&params[f..f + slice]);
            }
            _ => crate::bail!(
                "index {:?} is out of bounds for params of shape {params_shape:?}",
                &indices[i * nd..(i + 1) * nd]
            ),
        }
    }
    Ok(())
}

/// `reference_ops::ScatterNd`: `indices` flattened to `[n_slices][nd]`, `updates` holding
/// `n_slices` slices of `out_shape[nd..]`; `add` accumulates (wrapping for integers, an
/// `or` for bools as C++'s `bool += bool`).
pub fn scatter_nd<T: Copy + Default>(
    indices: &[i64],
    nd: usize,
    updates: &[T],
    out_shape: &[usize],
    out: &mut [T],
    add: impl Fn(T, T) -> T,
) -> Result<()> {
    if nd == 0 || nd > out_shape.len() {
        crate::bail!("index depth {nd} must be between 1 and the output rank {}", out_shape.len());
    }
    if out.len() != out_shape.iter().product::<usize>() {
        crate::bail!("output holds {} elements for shape {out_shape:?}", out.len());
    }
    let n_slices = indices.len() / nd;
    let slice: usize = out_shape[nd..].iter().product();
    if n_slices.checked_mul(slice).is_none_or(|v| v > updates.len()) {
        crate::bail!("{n_slices} slices of {slice} need more than the {} updates", updates.len());
    }
    out.fill(T::default());
    if n_slices == 0 || slice == 0 {
        return Ok(());
    }
    let counts = dims_to_count(out_shape, nd).ok_or_else(|| Error::new("the output has a zero dimension"))?;
    for i in 0..n_slices {
        let idx = &indices[i * nd..(i + 1) * nd];
        let to = match flat_pos(idx, &counts) {
            Some(t) if t >= 0 && (t as u64) + slice as u64 <= out.len() as u64 => t as usize,
            _ => crate::bail!("index {idx:?} is out of bounds for output shape {out_shape:?}"),
        };
        let src = &updates[i * slice..(i + 1) * slice];
        for (o, &u) in out[to..to + slice].iter_mut().zip(src) {
            *o = add(*o, u);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// GATHER_ND glue
// ---------------------------------------------------------------------------------------

fn gather_operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>, Vec<i32>)> {
    check_arity(ctx, GATHER, 2, 2, 1)?;
    let params = ctx.input(0).map_err(in_op(GATHER))?;
    let indices = ctx.input(1).map_err(in_op(GATHER))?;
    ctx.output(0).map_err(in_op(GATHER))?;
    use TfLiteType::*;
    if !matches!(
        params.dtype,
        kTfLiteFloat32 | kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16 | kTfLiteInt64 | kTfLiteInt32 | kTfLiteBool
    ) {
        return Err(op_error(GATHER, format!("params of type {} are not supported", params.dtype.name())));
    }
    if !matches!(indices.dtype, kTfLiteInt16 | kTfLiteInt32 | kTfLiteInt64) {
        return Err(op_error(GATHER, format!("indices of type {} are not supported", indices.dtype.name())));
    }
    let (pr, ir) = (params.shape.len(), indices.shape.len());
    if pr < 1 || ir < 1 {
        return Err(op_error(GATHER, "params and indices must be at least vectors"));
    }
    if params.shape.iter().chain(indices.shape).any(|&d| d < 0) {
        return Err(op_error(GATHER, "negative dimension"));
    }
    let nd = indices.shape[ir - 1] as usize;
    if nd > pr {
        return Err(op_error(GATHER, format!("index depth {nd} exceeds the params rank {pr}")));
    }
    let mut shape: Vec<i32> = indices.shape[..ir - 1].to_vec();
    shape.extend_from_slice(&params.shape[nd..]);
    Ok((params, indices, shape))
}

/// GATHER_ND; its State holds the params shape as sizes and the index depth.
struct GatherNd;

/// What Prepare derives for a GATHER_ND node.
struct GatherNdPlan {
    pshape: Vec<usize>,
    /// Length of each index tuple (the indices' last dimension).
    nd: usize,
}

impl BuiltinKernel for GatherNd {
    const NAME: &'static str = GATHER;
    type Params = ();
    type State = GatherNdPlan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<GatherNdPlan> {
        let (params, indices, shape) = gather_operands(ctx)?;
        ctx.set_output_type(0, params.dtype).map_err(in_op(GATHER))?;
        ctx.resize_output(0, &shape).map_err(in_op(GATHER))?;
        Ok(GatherNdPlan {
            pshape: params.shape.iter().map(|&d| d as usize).collect(),
            nd: *indices.shape.last().unwrap_or(&0) as usize,
        })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut GatherNdPlan) -> Result<()> {
        let params = ctx.input(0).map_err(in_op(GATHER))?;
        let indices = ctx.input(1).map_err(in_op(GATHER))?;
        let mut out = ctx.output(0).map_err(in_op(GATHER))?;
        if params.num_elements() == 0 && indices.num_elements() != 0 {
            return Err(op_error(GATHER, "cannot gather from empty params"));
        }
        let idx = int_values(&indices, true).map_err(in_op(GATHER))?;
        with_elem_type!(params.dtype, GATHER, T => {
            gather_nd::<T>(params.data::<T>()?, &plan.pshape, &idx, plan.nd, out.data_mut::<T>()?)
        })
        .map_err(|e: Error| op_error(GATHER, e.message))
    }
}

// ---------------------------------------------------------------------------------------
// SCATTER_ND glue
// ---------------------------------------------------------------------------------------

fn scatter_operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, SCATTER, 3, 3, 1)?;
    let indices = ctx.input(0).map_err(in_op(SCATTER))?;
    let updates = ctx.input(1).map_err(in_op(SCATTER))?;
    let shape = ctx.input(2).map_err(in_op(SCATTER))?;
    ctx.output(0).map_err(in_op(SCATTER))?;
    use TfLiteType::*;
    if !matches!(updates.dtype, kTfLiteFloat32 | kTfLiteUInt8 | kTfLiteBool | kTfLiteInt8 | kTfLiteInt64 | kTfLiteInt32)
    {
        return Err(op_error(SCATTER, format!("updates of type {} are not supported", updates.dtype.name())));
    }
    if indices.dtype != kTfLiteInt32 || shape.dtype != kTfLiteInt32 {
        return Err(op_error(
            SCATTER,
            format!("indices and shape must be int32, are {} and {}", indices.dtype.name(), shape.dtype.name()),
        ));
    }
    if indices.shape.iter().chain(updates.shape).any(|&d| d < 0) {
        return Err(op_error(SCATTER, "negative dimension"));
    }
    Ok((indices, updates, shape))
}

/// TFLite's `CheckShapes` and the output shape.
fn scatter_shape(indices: &TensorView<'_>, updates: &TensorView<'_>, shape: &TensorView<'_>) -> Result<Vec<i32>> {
    let (is, us) = (indices.shape, updates.shape);
    if is.is_empty() || us.is_empty() || shape.shape.len() != 1 {
        return Err(op_error(SCATTER, "indices and updates must be at least vectors and shape a vector"));
    }
    let values = int_values(shape, false).map_err(in_op(SCATTER))?;
    if values.iter().any(|&d| d < 0 || d > i32::MAX as i64) {
        return Err(op_error(SCATTER, format!("shape {values:?} has an invalid dimension")));
    }
    let outer = is.len() - 1;
    let ix = is[outer] as usize;
    if us.len() < outer || is[..outer] != us[..outer] {
        return Err(op_error(SCATTER, format!("indices {is:?} and updates {us:?} differ in their outer dimensions")));
    }
    if ix > values.len() || us.len() - outer != values.len() - ix {
        return Err(op_error(SCATTER, format!("updates {us:?} do not match shape {values:?} with index depth {ix}")));
    }
    for i in 0..us.len() - outer {
        if us[outer + i] as i64 != values[ix + i] {
            return Err(op_error(SCATTER, format!("updates {us:?} do not match shape {values:?}")));
        }
    }
    Ok(values.iter().map(|&d| d as i32).collect())
}

/// SCATTER_ND; its State holds the index depth and, when the shape tensor is constant,
/// the output shape as sizes.
struct ScatterNd;

/// What Prepare derives for a SCATTER_ND node.
struct ScatterPlan {
    /// Length of each index tuple (the indices' last dimension).
    nd: usize,
    /// `None` when the shape tensor is only known at Invoke.
    oshape: Option<Vec<usize>>,
}

impl BuiltinKernel for ScatterNd {
    const NAME: &'static str = SCATTER;
    type Params = ();
    type State = ScatterPlan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<ScatterPlan> {
        let (indices, updates, shape) = scatter_operands(ctx)?;
        ctx.set_output_type(0, updates.dtype).map_err(in_op(SCATTER))?;
        let nd = *indices.shape.last().unwrap_or(&0) as usize;
        if !known_at_prepare(&shape) {
            plan_declared_output(ctx, SCATTER, 0)?;
            return Ok(ScatterPlan { nd, oshape: None });
        }
        let s = scatter_shape(&indices, &updates, &shape)?;
        ctx.resize_output(0, &s).map_err(in_op(SCATTER))?;
        Ok(ScatterPlan { nd, oshape: Some(s.iter().map(|&d| d as usize).collect()) })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut ScatterPlan) -> Result<()> {
        let indices = ctx.input(0).map_err(in_op(SCATTER))?;
        let updates = ctx.input(1).map_err(in_op(SCATTER))?;
        let dynamic;
        let oshape = match &plan.oshape {
            Some(s) => s.as_slice(),
            None => {
                let s = scatter_shape(&indices, &updates, &ctx.input(2).map_err(in_op(SCATTER))?)?;
                settle_output_shape(ctx, SCATTER, 0, "shape values", &s)?;
                dynamic = s.iter().map(|&d| d as usize).collect::<Vec<_>>();
                dynamic.as_slice()
            }
        };
        let mut out = ctx.output(0).map_err(in_op(SCATTER))?;
        if out.dtype != updates.dtype {
            return Err(op_error(SCATTER, "output type differs from the updates type"));
        }
        let nd = plan.nd;
        let idx = int_values(&indices, false).map_err(in_op(SCATTER))?;
        use TfLiteType::*;
        let r = match updates.dtype {
            kTfLiteFloat32 => {
                scatter_nd(&idx, nd, updates.data::<f32>()?, oshape, out.data_mut::<f32>()?, |a, b| a + b)
            }
            kTfLiteBool => scatter_nd(&idx, nd, updates.data::<u8>()?, oshape, out.data_mut::<u8>()?, |a, b| {
                u8::from(a != 0 || b != 0)
            }),
            kTfLiteUInt8 => {
                scatter_nd(&idx, nd, updates.data::<u8>()?, oshape, out.data_mut::<u8>()?, u8::wrapping_add)
            }
            kTfLiteInt8 => scatter_nd(&idx, nd, updates.data::<i8>()?, oshape, out.data_mut::<i8>()?, i8::wrapping_add),
            kTfLiteInt32 => {
                scatter_nd(&idx, nd, updates.data::<i32>()?, oshape, out.data_mut::<i32>()?, i32::wrapping_add)
            }
            _ => scatter_nd(&idx, nd, updates.data::<i64>()?, oshape, out.data_mut::<i64>()?, i64::wrapping_add),
        };
        r.map_err(|e| op_error(SCATTER, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn gather() {
        // gather_nd_test.cc ElementIndexingIntoMatrix: params [[1.1,1.2],[2.1,2.2]],
        // indices [[0,0],[1,1]] -> [1.1, 2.2].
        let p = [1.1f32, 1.2, 2.1, 2.2];
        let mut out = [0f32; 2];
        gather_nd(&p, &[2, 2], &[0, 0, 1, 1], 2, &mut out).unwrap();
        assert_eq!(out, [1.1, 2.2]);
        // SliceIndexingIntoMatrix: indices [[1],[0]] -> rows swapped.
        let mut out = [0f32; 4];
        gather_nd(&p, &[2, 2], &[1, 0], 1, &mut out).unwrap();
        assert_eq!(out, [2.1, 2.2, 1.1, 1.2]);
        // Negative and out-of-range indices are errors.
        assert!(gather_nd(&p, &[2, 2], &[-1, 0], 1, &mut out).is_err());
        assert!(gather_nd(&p, &[2, 2], &[2, 0], 1, &mut out).is_err());
    }

    #[test]
    fn scatter() {
        // scatter_nd_test.cc ScatterElementIntoVector: indices [[4],[3],[1],[7]],
        // updates [9,10,11,12], shape [8].
        let mut out = [0f32; 8];
        let add = |a: f32, b: f32| a + b;
        scatter_nd(&[4, 3, 1, 7], 1, &[9f32, 10., 11., 12.], &[8], &mut out, add).unwrap();
        assert_eq!(out, [0., 11., 0., 10., 9., 0., 0., 12.]);
        // Duplicates accumulate.
        scatter_nd(&[1, 1], 1, &[1f32, 2.], &[8], &mut out, add).unwrap();
        assert_eq!(out[1], 3.0);
        assert!(scatter_nd(&[8], 1, &[1f32], &[8], &mut out, add).is_err());
        // Bools or.
        let mut b = [0u8; 2];
        scatter_nd(&[0, 0], 1, &[1u8, 1], &[2], &mut b, |x, y| u8::from(x != 0 || y != 0)).unwrap();
        assert_eq!(b, [1, 0]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let idx = g.tensor(kTfLiteInt32, &[2, 1], &[1i32, 0], None, false);
        let upd = g.tensor(kTfLiteInt32, &[2, 3], &[1i32, 2, 3, 4, 5, 6], None, false);
        let shape = g.tensor(kTfLiteInt32, &[2], &[3i32, 3], None, true);
        let o = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&scatter_nd_registration(), &[idx, upd, shape], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(o), vec![4, 5, 6, 1, 2, 3, 0, 0, 0]);
        let bad_shape = g.tensor(kTfLiteInt32, &[2], &[3i32, 4], None, true);
        let o2 = g.output(kTfLiteInt32, None);
        assert_eq!(
            g.run::<()>(&scatter_nd_registration(), &[idx, upd, bad_shape], &[o2], None),
            TfLiteStatus::kTfLiteError
        );
        let o3 = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&registration(), &[upd, idx], &[o3], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o3), vec![2, 3]);
        assert_eq!(g.data::<i32>(o3), vec![4, 5, 6, 1, 2, 3]);
    }
}
