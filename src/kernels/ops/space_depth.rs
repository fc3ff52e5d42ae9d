//! DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND (TFLite
//! `kernels/depth_to_space.cc`, `space_to_depth.cc`, `space_to_batch_nd.cc`,
//! `batch_to_space_nd.cc` and the matching `reference/*.h`).
//!
//! All four only move elements, so every fixed-size element type works (TFLite lists
//! float32, uint8, int8, int32, int64, plus int16 for the ND ops); quantized values keep
//! their scale and zero point. DEPTH_TO_SPACE / SPACE_TO_DEPTH take a rank-4 NHWC input and
//! a positive `block_size`. SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND take a rank-3 (NHC) or
//! rank-4 (NHWC) input, an int32 `block_shape` `[spatial]` and `paddings` / `crops`
//! `[spatial, 2]`; SPACE_TO_BATCH_ND pads with 0, or with the output zero point for
//! quantized types (uint8/int8/int16 must keep the input's scale and zero point, as TFLite
//! checks). Non-constant `block_shape` / `paddings` / `crops` must give the shape the
//! model declares (see `shape_util::plan_declared_output`).

use crate::abi::builtin_op_data::{TfLiteDepthToSpaceParams, TfLiteSpaceToDepthParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
    with_elem_type,
};

/// The DEPTH_TO_SPACE registration.
pub fn depth_to_space_registration() -> TfLiteRegistration {
    kernel::registration::<DepthToSpace>(TfLiteBuiltinOperator::kTfLiteBuiltinDepthToSpace)
}

/// The SPACE_TO_DEPTH registration.
pub fn space_to_depth_registration() -> TfLiteRegistration {
    kernel::registration::<SpaceToDepth>(TfLiteBuiltinOperator::kTfLiteBuiltinSpaceToDepth)
}

/// The SPACE_TO_BATCH_ND registration.
pub fn space_to_batch_nd_registration() -> TfLiteRegistration {
    kernel::registration::<Nd<true>>(TfLiteBuiltinOperator::kTfLiteBuiltinSpaceToBatchNd)
}

/// The BATCH_TO_SPACE_ND registration.
pub fn batch_to_space_nd_registration() -> TfLiteRegistration {
    kernel::registration::<Nd<false>>(TfLiteBuiltinOperator::kTfLiteBuiltinBatchToSpaceNd)
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// An NHWC shape as `usize`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nhwc {
    pub n: usize,
    pub h: usize,
    pub w: usize,
    pub c: usize,
}

impl Nhwc {
    fn len(&self) -> Option<usize> {
        self.n.checked_mul(self.h)?.checked_mul(self.w)?.checked_mul(self.c)
    }
}

fn check_len(what: &str, got: usize, want: Option<usize>) -> Result<()> {
    if want != Some(got) {
        crate::bail!("{what} holds {got} elements, expected {want:?}");
    }
    Ok(())
}

/// `reference_ops::DepthToSpace`: `input` `[n, h, w, c * b * b]` to `out` `[n, h * b,
/// w * b, c]` (`o` is the output shape).
pub fn depth_to_space<T: Copy>(input: &[T], o: Nhwc, block: usize, out: &mut [T]) -> Result<()> {
    check_len("output", out.len(), o.len())?;
    if block == 0 || !o.h.is_multiple_of(block) || !o.w.is_multiple_of(block) {
        crate::bail!("block size {block} does not divide the output {o:?}");
    }
    let (ih, iw, ic) = (o.h / block, o.w / block, o.c * block * block);
    check_len("input", input.len(), Nhwc { n: o.n, h: ih, w: iw, c: ic }.len())?;
    if out.is_empty() {
        // Nothing to move (and no pixel loop over a zero-channel tensor's huge shape).
        return Ok(());
    }
    let mut i = 0;
    for b in 0..o.n {
        for oy in 0..o.h {
            for ox in 0..o.w {
                let d0 = ((oy % block) * block + ox % block) * o.c;
                let src = ((b * ih + oy / block) * iw + ox / block) * ic + d0;
                out[i..i + o.c].copy_from_slice(&input[src..src + o.c]);
                i += o.c;
            }
        }
    }
    Ok(())
}

/// `reference_ops::SpaceToDepth`: `input` `[n, h, w, c]` (shape `s`) to `out` `[n, h / b,
/// w / b, c * b * b]`.
pub fn space_to_depth<T: Copy>(input: &[T], s: Nhwc, block: usize, out: &mut [T]) -> Result<()> {
    check_len("input", input.len(), s.len())?;
    if block == 0 || !s.h.is_multiple_of(block) || !s.w.is_multiple_of(block) {
        crate::bail!("block size {block} does not divide the input {s:?}");
    }
    let (oh, ow, oc) = (s.h / block, s.w / block, s.c * block * block);
    check_len("output", out.len(), Nhwc { n: s.n, h: oh, w: ow, c: oc }.len())?;
    if input.is_empty() {
        return Ok(());
    }
    let mut i = 0;
    for b in 0..s.n {
        for iy in 0..s.h {
            for ix in 0..s.w {
                let d0 = ((iy % block) * block + ix % block) * s.c;
                let dst = ((b * oh + iy / block) * ow + ix / block) * oc + d0;
                out[dst..dst + s.c].copy_from_slice(&input[i..i + s.c]);
                i += s.c;
            }
        }
    }
    Ok(())
}

/// Block sizes and the leading padding / crop of the (up to two) spatial dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockSpec {
    pub block_h: usize,
    pub block_w: usize,
    pub before_h: i64,
    pub before_w: i64,
}

/// `reference_ops::SpaceToBatchND` on NHWC views (`i` input, `o` output shape), padding
/// with `pad`.
pub fn space_to_batch<T: Copy>(input: &[T], i: Nhwc, spec: BlockSpec, pad: T, o: Nhwc, out: &mut [T]) -> Result<()> {
    check_len("input", input.len(), i.len())?;
    check_len("output", out.len(), o.len())?;
    if i.c != o.c || spec.block_h == 0 || spec.block_w == 0 || o.n != i.n * spec.block_h * spec.block_w {
        crate::bail!("shapes {i:?} and {o:?} do not match the blocks {spec:?}");
    }
    let d = i.c;
    if out.is_empty() {
        return Ok(());
    }
    for ob in 0..o.n {
        let ib = ob % i.n.max(1);
        let shift_w = (ob / i.n.max(1)) % spec.block_w;
        let shift_h = (ob / i.n.max(1)) / spec.block_w;
        for oy in 0..o.h {
            for ox in 0..o.w {
                let dst = ((ob * o.h + oy) * o.w + ox) * d;
                let y = (oy * spec.block_h + shift_h) as i64 - spec.before_h;
                let x = (ox * spec.block_w + shift_w) as i64 - spec.before_w;
                if y < 0 || x < 0 || y >= i.h as i64 || x >= i.w as i64 {
                    out[dst..dst + d].fill(pad);
                } else {
                    let src = ((ib * i.h + y as usize) * i.w + x as usize) * d;
                    out[dst..dst + d].copy_from_slice(&input[src..src + d]);
                }
            }
        }
    }
    Ok(())
}

/// `reference_ops::BatchToSpaceND` on NHWC views (`before_*` are the leading crops).
pub fn batch_to_space<T: Copy + Default>(input: &[T], i: Nhwc, spec: BlockSpec, o: Nhwc, out: &mut [T]) -> Result<()> {
    check_len("input", input.len(), i.len())?;
    check_len("output", out.len(), o.len())?;
    if i.c != o.c || spec.block_h == 0 || spec.block_w == 0 || i.n != o.n * spec.block_h * spec.block_w {
        crate::bail!("shapes {i:?} and {o:?} do not match the blocks {spec:?}");
    }
    out.fill(T::default());
    let d = i.c;
    if input.is_empty() || out.is_empty() {
        // Nothing to move (and no pixel loop over a zero-channel tensor's huge shape).
        return Ok(());
    }
    for ib in 0..i.n {
        let ob = ib % o.n.max(1);
        let off = ib / o.n.max(1);
        for iy in 0..i.h {
            let y = (iy * spec.block_h + off / spec.block_w) as i64 - spec.before_h;
            if y < 0 || y >= o.h as i64 {
                continue;
            }
            for ix in 0..i.w {
                let x = (ix * spec.block_w + off % spec.block_w) as i64 - spec.before_w;
                if x < 0 || x >= o.w as i64 {
                    continue;
                }
                let src = ((ib * i.h + iy) * i.w + ix) * d;
                let dst = ((ob * o.h + y as usize) * o.w + x as usize) * d;
                out[dst..dst + d].copy_from_slice(&input[src..src + d]);
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// DEPTH_TO_SPACE / SPACE_TO_DEPTH glue
// ---------------------------------------------------------------------------------------

const D2S: &str = "DEPTH_TO_SPACE";
const S2D: &str = "SPACE_TO_DEPTH";

fn nhwc(op: &str, shape: &[i32]) -> Result<Nhwc> {
    if shape.len() != 4 || shape.iter().any(|&d| d < 0) {
        return Err(op_error(op, format!("input must be a rank-4 shape, is {shape:?}")));
    }
    Ok(Nhwc { n: shape[0] as usize, h: shape[1] as usize, w: shape[2] as usize, c: shape[3] as usize })
}

fn block_size(b: i32, op: &str) -> Result<usize> {
    if b > 0 { Ok(b as usize) } else { Err(op_error(op, format!("block_size must be positive, is {:?}", Some(b)))) }
}

/// (input, input shape, output shape) of DEPTH_TO_SPACE or SPACE_TO_DEPTH.
fn d2s_plan<'a>(ctx: &OpCtx<'a>, op: &'static str, block: i32) -> Result<(TensorView<'a>, Nhwc, Nhwc)> {
    check_arity(ctx, op, 1, 1, 1)?;
    let input = ctx.input(0).map_err(in_op(op))?;
    let out = ctx.output(0).map_err(in_op(op))?;
    if out.dtype != input.dtype {
        return Err(op_error(
            op,
            format!("output type {} differs from the input type {}", out.dtype.name(), input.dtype.name()),
        ));
    }
    let s = nhwc(op, input.shape)?;
    let b = block_size(block, op)?;
    let o = if op == D2S {
        let bb = b.checked_mul(b).ok_or_else(|| op_error(op, "block size too large"))?;
        if s.c % bb != 0 {
            return Err(op_error(op, format!("input depth {} is not a multiple of block_size^2 = {bb}", s.c)));
        }
        Nhwc { n: s.n, h: s.h.saturating_mul(b), w: s.w.saturating_mul(b), c: s.c / bb }
    } else {
        if s.h % b != 0 || s.w % b != 0 {
            return Err(op_error(
                op,
                format!("input height {} and width {} must be multiples of block_size {b}", s.h, s.w),
            ));
        }
        let c = b.checked_mul(b).and_then(|bb| bb.checked_mul(s.c)).unwrap_or(usize::MAX);
        Nhwc { n: s.n, h: s.h / b, w: s.w / b, c }
    };
    if [o.h, o.w, o.c].iter().any(|&d| d > i32::MAX as usize) || o.len().is_none() {
        return Err(op_error(op, "output too large"));
    }
    Ok((input, s, o))
}

fn shape_of(o: Nhwc) -> [i32; 4] {
    [o.n as i32, o.h as i32, o.w as i32, o.c as i32]
}

/// The input and output views and the block size of a DEPTH_TO_SPACE / SPACE_TO_DEPTH.
#[derive(Clone, Copy)]
struct D2sPlan {
    s: Nhwc,
    o: Nhwc,
    block: usize,
}

fn d2s_prepare(ctx: &OpCtx<'_>, op: &'static str, block: i32) -> Result<D2sPlan> {
    let (_, s, o) = d2s_plan(ctx, op, block)?;
    ctx.resize_output(0, &shape_of(o)).map_err(in_op(op))?;
    Ok(D2sPlan { s, o, block: block_size(block, op)? })
}

fn d2s_eval(ctx: &OpCtx<'_>, op: &'static str, plan: D2sPlan) -> Result<()> {
    let input = ctx.input(0).map_err(in_op(op))?;
    let mut out = ctx.output(0).map_err(in_op(op))?;
    let D2sPlan { s, o, block: b } = plan;
    with_elem_type!(input.dtype, op, T => {
        if op == D2S {
            depth_to_space::<T>(input.data::<T>()?, o, b, out.data_mut::<T>()?)
        } else {
            space_to_depth::<T>(input.data::<T>()?, s, b, out.data_mut::<T>()?)
        }
    })
    .map_err(in_op(op))
}

/// DEPTH_TO_SPACE; its State is the NHWC views of input and output and the block size.
struct DepthToSpace;

impl BuiltinKernel for DepthToSpace {
    const NAME: &'static str = D2S;
    type Params = TfLiteDepthToSpaceParams;
    type State = D2sPlan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteDepthToSpaceParams) -> Result<D2sPlan> {
        d2s_prepare(ctx, D2S, p.block_size)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteDepthToSpaceParams, plan: &mut D2sPlan) -> Result<()> {
        d2s_eval(ctx, D2S, *plan)
    }
}

/// SPACE_TO_DEPTH; its State is the NHWC views of input and output and the block size.
struct SpaceToDepth;

impl BuiltinKernel for SpaceToDepth {
    const NAME: &'static str = S2D;
    type Params = TfLiteSpaceToDepthParams;
    type State = D2sPlan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteSpaceToDepthParams) -> Result<D2sPlan> {
        d2s_prepare(ctx, S2D, p.block_size)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteSpaceToDepthParams, plan: &mut D2sPlan) -> Result<()> {
        d2s_eval(ctx, S2D, *plan)
    }
}

// ---------------------------------------------------------------------------------------
// SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND glue
// ---------------------------------------------------------------------------------------

const S2B: &str = "SPACE_TO_BATCH_ND";
const B2S: &str = "BATCH_TO_SPACE_ND";

struct NdOperands<'a> {
    input: TensorView<'a>,
    block: TensorView<'a>,
    pads: TensorView<'a>,
}

fn nd_operands<'a>(ctx: &OpCtx<'a>, op: &'static str) -> Result<NdOperands<'a>> {
    check_arity(ctx, op, 3, 3, 1)?;
    let input = ctx.input(0).map_err(in_op(op))?;
    let block = ctx.input(1).map_err(in_op(op))?;
    let pads = ctx.input(2).map_err(in_op(op))?;
    let out = ctx.output(0).map_err(in_op(op))?;
    let rank = input.shape.len();
    if !(3..=4).contains(&rank) || input.shape.iter().any(|&d| d < 0) {
        return Err(op_error(op, format!("input must have rank 3 or 4, has shape {:?}", input.shape)));
    }
    if out.dtype != input.dtype {
        return Err(op_error(
            op,
            format!("output type {} differs from the input type {}", out.dtype.name(), input.dtype.name()),
        ));
    }
    use TfLiteType::*;
    if matches!(input.dtype, kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16) {
        let (a, b) = (input.quant(), out.quant());
        if a.scale != b.scale || a.zero_point != b.zero_point {
            return Err(op_error(op, "input and output must have the same scale and zero point"));
        }
        if input.dtype == kTfLiteInt16 && a.zero_point != 0 {
            return Err(op_error(op, "int16 zero points must be 0"));
        }
    }
    let spatial = rank - 2;
    if block.shape != [spatial as i32] {
        return Err(op_error(op, format!("block_shape must have shape [{spatial}], has {:?}", block.shape)));
    }
    if pads.shape != [spatial as i32, 2] {
        return Err(op_error(op, format!("paddings / crops must have shape [{spatial}, 2], have {:?}", pads.shape)));
    }
    Ok(NdOperands { input, block, pads })
}

/// The output shape and the NHWC views of the input and output.
fn nd_plan(op: &'static str, ops: &NdOperands<'_>) -> Result<(Vec<i32>, Nhwc, BlockSpec, Nhwc)> {
    let blocks = int_values(&ops.block, false).map_err(in_op(op))?;
    let pads = int_values(&ops.pads, false).map_err(in_op(op))?;
    let shape = ops.input.shape;
    let rank = shape.len();
    let spatial = rank - 2;
    if blocks.iter().any(|&b| b <= 0 || b > i32::MAX as i64) {
        return Err(op_error(op, format!("block_shape {blocks:?} must be positive")));
    }
    if pads.iter().any(|&p| p < i32::MIN as i64 || p > i32::MAX as i64) {
        return Err(op_error(op, format!("paddings / crops {pads:?} must fit in int32")));
    }
    let mut out: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let mut batch = shape[0] as i64;
    for d in 0..spatial {
        let (b, p0, p1) = (blocks[d], pads[2 * d], pads[2 * d + 1]);
        let size = shape[d + 1] as i64;
        if op == S2B {
            let padded = size + p0 + p1;
            if padded < 0 || padded % b != 0 {
                return Err(op_error(
                    op,
                    format!("padded size {padded} of dimension {} is not a multiple of block {b}", d + 1),
                ));
            }
            out[d + 1] = padded / b;
            batch = batch.checked_mul(b).ok_or_else(|| op_error(op, "output batch too large"))?;
        } else {
            if p0 < 0 || p1 < 0 {
                return Err(op_error(op, format!("crops {pads:?} must not be negative")));
            }
            if batch % b != 0 {
                return Err(op_error(op, format!("batch {batch} is not a multiple of block {b}")));
            }
            batch /= b;
            let full = size * b;
            let cropped = full - p0 - p1;
            if cropped < 0 {
                return Err(op_error(op, format!("crops {p0} + {p1} exceed dimension {} of size {full}", d + 1)));
            }
            out[d + 1] = cropped;
        }
    }
    out[0] = batch;
    if out.iter().any(|&d| d > i32::MAX as i64) {
        return Err(op_error(op, "output too large"));
    }
    let out: Vec<i32> = out.iter().map(|&d| d as i32).collect();
    let view = |s: &[i32]| {
        if s.len() == 4 {
            Nhwc { n: s[0] as usize, h: s[1] as usize, w: s[2] as usize, c: s[3] as usize }
        } else {
            Nhwc { n: s[0] as usize, h: s[1] as usize, w: 1, c: s[2] as usize }
        }
    };
    let spec = BlockSpec {
        block_h: blocks[0] as usize,
        block_w: if spatial == 2 { blocks[1] as usize } else { 1 },
        before_h: pads[0],
        before_w: if spatial == 2 { pads[2] } else { 0 },
    };
    let (iv, ov) = (view(shape), view(&out));
    if iv.len().is_none() || ov.len().is_none() {
        return Err(op_error(op, "tensor too large"));
    }
    Ok((out, iv, spec, ov))
}

/// The NHWC views of input and output and the block spec of an ND op.
type NdPlan = (Nhwc, BlockSpec, Nhwc);

/// SPACE_TO_BATCH_ND (`S2B_` true) and BATCH_TO_SPACE_ND; the State is the NHWC views
/// of input and output and the block spec when `block_shape` and the paddings / crops
/// are constant (`None` when they are only known at Invoke).
struct Nd<const S2B_: bool>;

impl<const S2B_: bool> BuiltinKernel for Nd<S2B_> {
    const NAME: &'static str = if S2B_ { S2B } else { B2S };
    type Params = ();
    type State = Option<NdPlan>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<NdPlan>> {
        let op = Self::NAME;
        let ops = nd_operands(ctx, op)?;
        if !known_at_prepare(&ops.block) || !known_at_prepare(&ops.pads) {
            plan_declared_output(ctx, op, 0)?;
            return Ok(None);
        }
        let (shape, iv, spec, ov) = nd_plan(op, &ops)?;
        ctx.resize_output(0, &shape).map_err(in_op(op))?;
        Ok(Some((iv, spec, ov)))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), planned: &mut Option<NdPlan>) -> Result<()> {
        let op = Self::NAME;
        let input = ctx.input(0).map_err(in_op(op))?;
        let (iv, spec, ov) = match *planned {
            Some(plan) => plan,
            None => {
                let (shape, iv, spec, ov) = nd_plan(op, &nd_operands(ctx, op)?)?;
                settle_output_shape(ctx, op, 0, "block_shape and paddings", &shape)?;
                (iv, spec, ov)
            }
        };
        let mut out = ctx.output(0).map_err(in_op(op))?;
        let zp = out.quant().zero_point;
        use TfLiteType::*;
        let r = if op == S2B {
            match input.dtype {
                kTfLiteUInt8 => {
                    let pad = u8::try_from(zp).map_err(|_| op_error(op, "zero point out of range"))?;
                    space_to_batch(input.data::<u8>()?, iv, spec, pad, ov, out.data_mut::<u8>()?)
                }
                kTfLiteInt8 => {
                    let pad = i8::try_from(zp).map_err(|_| op_error(op, "zero point out of range"))?;
                    space_to_batch(input.data::<i8>()?, iv, spec, pad, ov, out.data_mut::<i8>()?)
                }
                dt => with_elem_type!(dt, op, T => {
                    space_to_batch::<T>(input.data::<T>()?, iv, spec, T::default(), ov, out.data_mut::<T>()?)
                }),
            }
        } else {
            with_elem_type!(input.dtype, op, T => {
                batch_to_space::<T>(input.data::<T>()?, iv, spec, ov, out.data_mut::<T>()?)
            })
        };
        r.map_err(|e: Error| op_error(op, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn depth_space_round_trip() {
        // depth_to_space_test.cc SimpleTest: [1,1,1,8] block 2 -> [1,2,2,2].
        let x: Vec<f32> = (1..=8).map(|v| v as f32).collect();
        let o = Nhwc { n: 1, h: 2, w: 2, c: 2 };
        let mut out = vec![0f32; 8];
        depth_to_space(&x, o, 2, &mut out).unwrap();
        assert_eq!(out, x);
        // [1,1,2,4] block 2 -> [1,2,4,1].
        let o = Nhwc { n: 1, h: 2, w: 4, c: 1 };
        depth_to_space(&x, o, 2, &mut out).unwrap();
        assert_eq!(out, [1., 2., 5., 6., 3., 4., 7., 8.]);
        let mut back = vec![0f32; 8];
        space_to_depth(&out, o, 2, &mut back).unwrap();
        assert_eq!(back, x);
        assert!(space_to_depth(&out, Nhwc { n: 1, h: 2, w: 3, c: 1 }, 2, &mut back).is_err());
    }

    #[test]
    fn zero_channel_tensors_with_huge_shapes_return_at_once() {
        // A malformed model's [16384004, 3, 147458, 0] input: no value to move, so no
        // pixel loop (7e12 empty steps: this test would not end).
        let spec = BlockSpec { block_h: 2, block_w: 1, before_h: 0, before_w: 0 };
        let i = Nhwc { n: 16384004, h: 3, w: 147458, c: 0 };
        let o = Nhwc { n: 8192002, h: 6, w: 147458, c: 0 };
        batch_to_space::<f32>(&[], i, spec, o, &mut []).unwrap();
        space_to_batch::<f32>(&[], o, spec, 0.0, i, &mut []).unwrap();
        depth_to_space::<f32>(&[], Nhwc { n: 1 << 20, h: 1 << 12, w: 1 << 12, c: 0 }, 2, &mut []).unwrap();
        space_to_depth::<f32>(&[], Nhwc { n: 1 << 20, h: 1 << 12, w: 1 << 12, c: 0 }, 2, &mut []).unwrap();
    }

    #[test]
    fn space_batch_round_trip() {
        // space_to_batch_nd_test.cc SimplePaddingConstTest: [1,5,2,1] block [3,2],
        // paddings [[1,0],[2,0]] -> [6,2,2,1].
        let x: Vec<f32> = (1..=10).map(|v| v as f32).collect();
        let i = Nhwc { n: 1, h: 5, w: 2, c: 1 };
        let o = Nhwc { n: 6, h: 2, w: 2, c: 1 };
        let spec = BlockSpec { block_h: 3, block_w: 2, before_h: 1, before_w: 2 };
        let mut out = vec![9f32; 24];
        space_to_batch(&x, i, spec, 0.0, o, &mut out).unwrap();
        assert_eq!(
            out,
            [0., 0., 0., 5., 0., 0., 0., 6., 0., 1., 0., 7., 0., 2., 0., 8., 0., 3., 0., 9., 0., 4., 0., 10.]
        );
        // And back, cropping the padding.
        let mut back = vec![0f32; 10];
        batch_to_space(&out, o, spec, i, &mut back).unwrap();
        assert_eq!(back, x);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt8, &[1, 2, 2, 1], &[1i8, 2, 3, 4], Some(qp(0.5, -3)), false);
        let block = g.tensor(kTfLiteInt32, &[2], &[2i32, 2], None, true);
        let pads = g.tensor(kTfLiteInt32, &[2, 2], &[0i32, 0, 0, 2], None, true);
        let o = g.output(kTfLiteInt8, Some(qp(0.5, -3)));
        assert_eq!(
            g.run::<()>(&space_to_batch_nd_registration(), &[x, block, pads], &[o], None),
            TfLiteStatus::kTfLiteOk
        );
        assert_eq!(g.shape(o), vec![4, 1, 2, 1]);
        assert_eq!(g.data::<i8>(o), vec![1, -3, 2, -3, 3, -3, 4, -3]);
        // Different output quantization is refused.
        let o2 = g.output(kTfLiteInt8, Some(qp(0.25, -3)));
        assert_eq!(
            g.run::<()>(&space_to_batch_nd_registration(), &[x, block, pads], &[o2], None),
            TfLiteStatus::kTfLiteError
        );
        // Zero block is refused.
        let zero = g.tensor(kTfLiteInt32, &[2], &[0i32, 2], None, true);
        let o3 = g.output(kTfLiteInt8, Some(qp(0.5, -3)));
        assert_eq!(
            g.run::<()>(&batch_to_space_nd_registration(), &[x, zero, pads], &[o3], None),
            TfLiteStatus::kTfLiteError
        );
        // DEPTH_TO_SPACE with a block that does not divide the depth.
        let o4 = g.output(kTfLiteInt8, Some(qp(0.5, -3)));
        let p = TfLiteDepthToSpaceParams { block_size: 2 };
        assert_eq!(g.run(&depth_to_space_registration(), &[x], &[o4], Some(p)), TfLiteStatus::kTfLiteError);
        let o5 = g.output(kTfLiteInt8, Some(qp(0.5, -3)));
        let p = TfLiteSpaceToDepthParams { block_size: 2 };
        assert_eq!(g.run(&space_to_depth_registration(), &[x], &[o5], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o5), vec![1, 1, 1, 4]);
        assert_eq!(g.data::<i8>(o5), vec![1, 2, 3, 4]);
    }
}
