//! MIRROR_PAD (TFLite `kernels/mirror_pad.cc`).
//!
//! Pads each dimension with a mirror image of the input: REFLECT excludes the edge
//! element (`[1, 2, 3]` padded by 2 gives `3 2 | 1 2 3 | 2 1`), SYMMETRIC repeats it
//! (`2 1 | 1 2 3 | 3 2`); a mode other than REFLECT is SYMMETRIC, as in TFLite. Paddings are
//! an int32 or int64 `[rank, 2]` tensor; unlike TFLite (which reads out of bounds), each
//! padding must be non-negative and at most `dim - 1` (REFLECT) or `dim` (SYMMETRIC), as
//! TensorFlow requires. Any fixed-size element type works; uint8/int8/int16 must keep the
//! input's scale and zero point (int16 zero point 0). Non-constant paddings must give the
//! shape the model declares (see `shape_util::plan_declared_output`).

use crate::abi::builtin_op_data::{TfLiteMirrorPaddingMode, TfLiteMirrorPaddingParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
    with_elem_type,
};

const OP: &str = "MIRROR_PAD";

/// The MIRROR_PAD registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<MirrorPad>(TfLiteBuiltinOperator::kTfLiteBuiltinMirrorPad)
}

/// For every output position along one dimension, the input position it copies
/// (TFLite's `GetInputDimension`); `offset` is 1 for REFLECT and 0 for SYMMETRIC.
pub fn mirror_indices(size: usize, before: usize, after: usize, offset: usize) -> Result<Vec<usize>> {
    let limit = size.saturating_sub(offset);
    if (before > 0 || after > 0) && (before > limit || after > limit) {
        crate::bail!("paddings ({before}, {after}) are too large for a dimension of {size} (at most {limit})");
    }
    let total = size
        .checked_add(before)
        .and_then(|v| v.checked_add(after))
        .ok_or_else(|| Error::new("padded size overflows"))?;
    Ok((0..total)
        .map(|p| {
            if p < before {
                // Mirror of the left edge.
                before + offset - 1 - p
            } else if p - before >= size {
                let q = p - before - size;
                size - 1 - offset - q
            } else {
                p - before
            }
        })
        .collect())
}

/// `out` = `input` (shape `shape`) mirror-padded by `pads`.
pub fn mirror_pad<T: Copy>(
    input: &[T],
    shape: &[usize],
    pads: &[(usize, usize)],
    offset: usize,
    out: &mut [T],
) -> Result<()> {
    mirror_pad_planned(&mirror_plan(shape, pads, offset)?, input, out)
}

/// Every dimension's index map (output position to input position) and the input's
/// strides: all a mirror pad needs besides the data.
#[derive(Debug)]
pub struct MirrorPlan {
    maps: Vec<Vec<usize>>,
    in_strides: Vec<usize>,
    n_in: usize,
    n_out: usize,
}

/// The plan of mirror-padding an input of shape `shape` by `pads`.
pub fn mirror_plan(shape: &[usize], pads: &[(usize, usize)], offset: usize) -> Result<MirrorPlan> {
    if pads.len() != shape.len() {
        crate::bail!("{} paddings for rank {}", pads.len(), shape.len());
    }
    let maps: Vec<Vec<usize>> =
        shape.iter().zip(pads).map(|(&s, &(b, a))| mirror_indices(s, b, a, offset)).collect::<Result<_>>()?;
    let n_in: usize = shape.iter().product();
    let n_out: usize = maps.iter().map(|m| m.len()).product();
    let rank = shape.len();
    let mut in_strides = vec![1usize; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        in_strides[d] = in_strides[d + 1] * shape[d + 1];
    }
    Ok(MirrorPlan { maps, in_strides, n_in, n_out })
}

/// `out` = `input` mirror-padded as `plan` says.
pub fn mirror_pad_planned<T: Copy>(plan: &MirrorPlan, input: &[T], out: &mut [T]) -> Result<()> {
    let (maps, in_strides, n_in, n_out) = (&plan.maps, &plan.in_strides, plan.n_in, plan.n_out);
    if input.len() != n_in || out.len() != n_out {
        crate::bail!("buffers hold {} and {} elements, expected {n_in} and {n_out}", input.len(), out.len());
    }
    if n_out == 0 {
        return Ok(());
    }
    let rank = maps.len();
    if rank == 0 {
        out[0] = input[0];
        return Ok(());
    }
    // Walk the output's outer positions; copy each innermost row through its index map.
    let inner = &maps[rank - 1];
    let mut idx = vec![0usize; rank - 1];
    for orow in out.chunks_mut(inner.len()) {
        let base: usize = (0..rank - 1).map(|d| maps[d][idx[d]] * in_strides[d]).sum();
        for (o, &i) in orow.iter_mut().zip(inner) {
            *o = input[base + i];
        }
        for d in (0..rank - 1).rev() {
            idx[d] += 1;
            if idx[d] < maps[d].len() {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

fn offset(p: &TfLiteMirrorPaddingParams) -> usize {
    if p.mode == TfLiteMirrorPaddingMode::kTfLiteMirrorPaddingReflect { 1 } else { 0 }
}

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, OP, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(OP))?;
    let pads = ctx.input(1).map_err(in_op(OP))?;
    let out = ctx.output(0).map_err(in_op(OP))?;
    if out.dtype != input.dtype {
        return Err(op_error(
            OP,
            format!("output type {} differs from the input type {}", out.dtype.name(), input.dtype.name()),
        ));
    }
    if input.shape.iter().any(|&d| d < 0) {
        return Err(op_error(OP, format!("input shape {:?} has a negative dimension", input.shape)));
    }
    let rank = input.shape.len() as i32;
    if pads.shape != [rank, 2] {
        return Err(op_error(OP, format!("paddings must have shape [{rank}, 2], have {:?}", pads.shape)));
    }
    use TfLiteType::*;
    if matches!(input.dtype, kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16) {
        let (a, b) = (input.quant(), out.quant());
        if a.scale != b.scale || a.zero_point != b.zero_point {
            return Err(op_error(OP, "input and output must have the same scale and zero point"));
        }
        if input.dtype == kTfLiteInt16 && a.zero_point != 0 {
            return Err(op_error(OP, "int16 zero points must be 0"));
        }
    }
    Ok((input, pads))
}

/// `(before, after)` paddings per dimension and the output shape.
type Plan = (Vec<(usize, usize)>, Vec<i32>);

/// The paddings and the output shape, checked.
fn plan(off: usize, input: &TensorView<'_>, pads: &TensorView<'_>) -> Result<Plan> {
    let v = int_values(pads, false).map_err(in_op(OP))?;
    let mut pairs = Vec::with_capacity(input.shape.len());
    let mut shape = Vec::with_capacity(input.shape.len());
    for (d, p) in v.chunks_exact(2).enumerate() {
        let size = input.shape[d] as i64;
        let limit = size - off as i64;
        if p[0] < 0 || p[1] < 0 || ((p[0] > 0 || p[1] > 0) && (p[0] > limit || p[1] > limit)) {
            return Err(op_error(
                OP,
                format!("paddings {p:?} of dimension {d} (size {size}) must be between 0 and {}", limit.max(0)),
            ));
        }
        let total = size + p[0] + p[1];
        if total > i32::MAX as i64 {
            return Err(op_error(OP, "output too large"));
        }
        pairs.push((p[0] as usize, p[1] as usize));
        shape.push(total as i32);
    }
    Ok((pairs, shape))
}

/// The index maps of `input` padded by the paddings `pads` holds, and the output shape.
fn maps_of(off: usize, input: &TensorView<'_>, pads: &TensorView<'_>) -> Result<(MirrorPlan, Vec<i32>)> {
    let (pairs, shape) = plan(off, input, pads)?;
    let dims: Vec<usize> = input.shape.iter().map(|&d| d as usize).collect();
    Ok((mirror_plan(&dims, &pairs, off).map_err(|e: Error| op_error(OP, e.message))?, shape))
}

/// MIRROR_PAD; its State is the per-dimension index maps when the paddings are constant.
struct MirrorPad;

impl BuiltinKernel for MirrorPad {
    const NAME: &'static str = OP;
    type Params = TfLiteMirrorPaddingParams;
    type State = Option<MirrorPlan>;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteMirrorPaddingParams) -> Result<Option<MirrorPlan>> {
        let (input, pads) = operands(ctx)?;
        if !known_at_prepare(&pads) {
            plan_declared_output(ctx, OP, 0)?;
            return Ok(None);
        }
        let (plan, shape) = maps_of(offset(p), &input, &pads)?;
        ctx.resize_output(0, &shape).map_err(in_op(OP))?;
        Ok(Some(plan))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteMirrorPaddingParams, state: &mut Option<MirrorPlan>) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?;
        let dynamic;
        let plan = match state {
            Some(plan) => &*plan,
            None => {
                let (plan, shape) = maps_of(offset(p), &input, &ctx.input(1).map_err(in_op(OP))?)?;
                settle_output_shape(ctx, OP, 0, "paddings", &shape)?;
                dynamic = plan;
                &dynamic
            }
        };
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        with_elem_type!(input.dtype, OP, T => mirror_pad_planned::<T>(plan, input.data::<T>()?, out.data_mut::<T>()?))
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
    fn indices() {
        assert_eq!(mirror_indices(3, 2, 2, 1).unwrap(), vec![2, 1, 0, 1, 2, 1, 0]);
        assert_eq!(mirror_indices(3, 2, 2, 0).unwrap(), vec![1, 0, 0, 1, 2, 2, 1]);
        assert_eq!(mirror_indices(3, 3, 0, 0).unwrap(), vec![2, 1, 0, 0, 1, 2]);
        assert!(mirror_indices(3, 3, 0, 1).is_err());
        assert!(mirror_indices(3, 0, 4, 0).is_err());
        assert_eq!(mirror_indices(0, 0, 0, 1).unwrap(), Vec::<usize>::new());
    }

    #[test]
    fn two_d() {
        // mirror_pad_test.cc PadBothSides_Reflect: [[1,2,3],[4,5,6]] by [[1,1],[1,1]].
        let mut out = vec![0i32; 20];
        mirror_pad(&[1, 2, 3, 4, 5, 6], &[2, 3], &[(1, 1), (1, 1)], 1, &mut out).unwrap();
        assert_eq!(out, [5, 4, 5, 6, 5, 2, 1, 2, 3, 2, 5, 4, 5, 6, 5, 2, 1, 2, 3, 2]);
        // PadBothSides_Symmetric.
        mirror_pad(&[1, 2, 3, 4, 5, 6], &[2, 3], &[(1, 1), (1, 1)], 0, &mut out).unwrap();
        assert_eq!(out, [1, 1, 2, 3, 3, 1, 1, 2, 3, 3, 4, 4, 5, 6, 6, 4, 4, 5, 6, 6]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[3], &[1f32, 2., 3.], None, false);
        let p = g.tensor(kTfLiteInt64, &[1, 2], &[2i64, 1], None, true);
        let o = g.output(kTfLiteFloat32, None);
        let params = TfLiteMirrorPaddingParams { mode: TfLiteMirrorPaddingMode::kTfLiteMirrorPaddingReflect };
        assert_eq!(g.run(&registration(), &[x, p], &[o], Some(params)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o), vec![3., 2., 1., 2., 3., 2.]);
        let big = g.tensor(kTfLiteInt32, &[1, 2], &[3i32, 0], None, true);
        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&registration(), &[x, big], &[o2], Some(params)), TfLiteStatus::kTfLiteError);
        let neg = g.tensor(kTfLiteInt32, &[1, 2], &[-1i32, 0], None, true);
        let o3 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&registration(), &[x, neg], &[o3], Some(params)), TfLiteStatus::kTfLiteError);
    }
}
