//! What ADD, SUB and MUL share: the prepare-time checks and output shape, the quantized
//! rescaling parameters of TFLite's 8-bit (and general int16) ADD/SUB, and the int16
//! power-of-two ADD/SUB parameters; the float32 and 8-bit quantized paths on the vector
//! microkernels.

use super::broadcast::{Block, BlockKind, MAX_BROADCAST_RANK, for_each_block};
use crate::abi::types::TfLiteType;
use crate::error::{Error, Result};
use crate::kernels::activation::clamp_min_max;
use crate::kernels::api::{Element, OpCtx, QuantParams, TensorView, TensorViewMut, broadcast_shape};
use crate::kernels::quant::{
    QuantInt, checked_log2, multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_smaller_than_one_exp,
    quantize_multiplier_greater_than_one, quantize_multiplier_smaller_than_one_exp, rounding_divide_by_pot_i16,
};
use crate::kernels::threadpool::elementwise::elementwise_threads;
use crate::kernels::threadpool::{parallel_chunks_mut, recommended_threads};
use crate::microkernels;
use crate::microkernels::f32_vbinary::{self, BinaryOp, Other};
use crate::microkernels::qs8_vbinary::{self, Input, QBinaryOp, QBinaryParams, Quant8, Rescale};

/// Prefixes an error's message with the op name.
pub fn with_op(op: &'static str) -> impl Fn(Error) -> Error {
    move |e| Error::with_status(e.status, format!("{op}: {}", e.message))
}

/// The output shape of a binary elementwise op: the inputs' shape when they are equal
/// (any rank), else their numpy broadcast (rank at most [`MAX_BROADCAST_RANK`]).
pub fn binary_output_shape(op: &'static str, a: &[i32], b: &[i32]) -> Result<Vec<i32>> {
    if a == b {
        return Ok(a.to_vec());
    }
    let shape = broadcast_shape(a, b).map_err(with_op(op))?;
    if shape.len() > MAX_BROADCAST_RANK {
        return Err(Error::new(format!(
            "{op}: broadcasting {a:?} with {b:?} needs rank {}, more than the {MAX_BROADCAST_RANK} supported",
            shape.len()
        )));
    }
    Ok(shape)
}

/// The two inputs and the output of a binary op, checked as TFLite's ADD/SUB/MUL prepare
/// does: 2 inputs, 1 output, inputs of one type. Returns the output shape too.
pub struct BinaryOperands<'a> {
    pub a: TensorView<'a>,
    pub b: TensorView<'a>,
    pub out: TensorViewMut<'a>,
    pub out_shape: Vec<i32>,
    /// The input (0 or 1) the output shares memory with, when the planner made this
    /// node run in place (only from [`binary_operands_in_place`]).
    pub alias: Option<usize>,
    /// The threads the node may use.
    pub threads: usize,
}

/// Gathers and checks the operands of a binary op (see [`BinaryOperands`]).
pub fn binary_operands<'a>(ctx: &OpCtx<'a>, op: &'static str) -> Result<BinaryOperands<'a>> {
    binary_operands_of(ctx, op, 2)
}

/// [`binary_operands`] for a node with `inputs` inputs, the binary op's two first (a
/// fused node carries the fused op's operands after them).
pub fn binary_operands_of<'a>(ctx: &OpCtx<'a>, op: &'static str, inputs: usize) -> Result<BinaryOperands<'a>> {
    if ctx.num_inputs() != inputs {
        return Err(Error::new(format!("{op}: expected {inputs} inputs, got {}", ctx.num_inputs())));
    }
    if ctx.num_outputs() != 1 {
        return Err(Error::new(format!("{op}: expected 1 output, got {}", ctx.num_outputs())));
    }
    let a = ctx.input(0).map_err(with_op(op))?;
    let b = ctx.input(1).map_err(with_op(op))?;
    if a.dtype != b.dtype {
        return Err(Error::new(format!("{op}: input types differ ({} and {})", a.dtype.name(), b.dtype.name())));
    }
    let out = ctx.output(0).map_err(with_op(op))?;
    let out_shape = binary_output_shape(op, a.shape, b.shape)?;
    Ok(BinaryOperands { a, b, out, out_shape, alias: None, threads: recommended_threads(ctx) })
}

/// [`binary_operands`] for an op that can run in place (its registration has
/// `kTfLiteInplaceOpInput0Shared | kTfLiteInplaceOpInput1Shared`): notes which input
/// the output shares memory with; run it with [`run_binary`].
pub fn binary_operands_in_place<'a>(ctx: &OpCtx<'a>, op: &'static str) -> Result<BinaryOperands<'a>> {
    binary_operands_in_place_of(ctx, op, 2)
}

/// [`binary_operands_in_place`] for a node with `inputs` inputs (see [`binary_operands_of`]).
pub fn binary_operands_in_place_of<'a>(ctx: &OpCtx<'a>, op: &'static str, inputs: usize) -> Result<BinaryOperands<'a>> {
    let mut ops = binary_operands_of(ctx, op, inputs)?;
    if let Some(k) = ctx.input_sharing_output(0) {
        if ops.a.index == ops.b.index {
            return Err(Error::new(format!("{op}: cannot run in place over an input used twice")));
        }
        ops.out = ctx.output_in_place(0, k).map_err(with_op(op))?;
        ops.alias = Some(k);
    }
    Ok(ops)
}

/// Elements per tile of [`run_binary`]'s in-place path (two stack buffers of this many).
const IN_PLACE_TILE: usize = 1024;

/// Runs `f(a, a_shape, b, b_shape, out, out_shape)` on the operands. In place (the
/// output holds input `k`'s bytes), the output is processed in tiles: each tile of the
/// shared input is copied to a stack buffer and the other input's matching elements
/// gathered (broadcast), then `f` computes the tile as a flat, same-shape operation.
/// Element-wise ops give the same results either way. Needs no memory beyond two
/// fixed stack tiles.
pub fn run_binary<T: crate::kernels::api::Element + Default>(
    ops: &mut BinaryOperands<'_>,
    mut f: impl FnMut(&[T], &[i32], &[T], &[i32], &mut [T], &[i32]) -> Result<()>,
) -> Result<()> {
    let osh = ops.out_shape.clone();
    let Some(k) = ops.alias else {
        return f(ops.a.data()?, ops.a.shape, ops.b.data()?, ops.b.shape, ops.out.data_mut()?, &osh);
    };
    let (other, other_shape) =
        if k == 0 { (ops.b.data::<T>()?, ops.b.shape) } else { (ops.a.data::<T>()?, ops.a.shape) };
    let out = ops.out.data_mut::<T>()?;
    let index = BroadcastIndex::new(other_shape, &osh)?;
    let mut own = [T::default(); IN_PLACE_TILE];
    let mut gathered = [T::default(); IN_PLACE_TILE];
    let mut start = 0;
    while start < out.len() {
        let len = IN_PLACE_TILE.min(out.len() - start);
        own[..len].copy_from_slice(&out[start..start + len]);
        let sh = [len as i32];
        // The other input's elements for this tile: a plain sub-slice when it has the
        // output's shape, the one value when it is a scalar, else gathered.
        let (theirs, theirs_shape): (&[T], [i32; 1]) = if other.len() == out.len() {
            (&other[start..start + len], sh)
        } else if other.len() == 1 {
            (other, [1])
        } else {
            for (j, g) in gathered[..len].iter_mut().enumerate() {
                *g = *other.get(index.of(start + j)).ok_or_else(|| Error::new("broadcast index out of range"))?;
            }
            (&gathered[..len], sh)
        };
        let tile = &mut out[start..start + len];
        if k == 0 {
            f(&own[..len], &sh, theirs, &theirs_shape, tile, &sh)?;
        } else {
            f(theirs, &theirs_shape, &own[..len], &sh, tile, &sh)?;
        }
        start += len;
    }
    Ok(())
}

/// float32 `out = clamp(op(a, b))` over the broadcast of `a_shape` and `b_shape` to
/// `out_shape`, on the vector microkernels: a same-shape pair, a scalar operand and a
/// per-channel row each take one kernel call; other broadcasts one call per innermost run.
/// A block long enough is split over up to `threads` threads.
#[allow(clippy::too_many_arguments)]
pub fn binary_f32(
    op: BinaryOp,
    a: &[f32],
    a_shape: &[i32],
    b: &[f32],
    b_shape: &[i32],
    out: &mut [f32],
    out_shape: &[i32],
    clamp: (f32, f32),
    threads: usize,
) -> Result<()> {
    let table = microkernels::table();
    let out_len = out.len();
    for_each_block((a_shape, a.len()), (b_shape, b.len()), (out_shape, out_len), |blk| {
        let o = out.get_mut(blk.out..blk.out + blk.len).ok_or_else(out_of_range)?;
        let (x, x_is_second, other) = block_operands(blk, a, b)?;
        let Some((t, chunk)) = split(threads, o.len(), other) else {
            return f32_vbinary::apply(table, op, x, x_is_second, other, o, clamp);
        };
        parallel_chunks_mut(t, o, chunk, &|i, o| {
            let (x, other) = chunk_operands(x, other, i * chunk, o.len())?;
            f32_vbinary::apply(table, op, x, x_is_second, other, o, clamp)
        })
    })
}

/// Threads and chunk length to split a block of `len` values over, if it is worth it:
/// chunks start at a row's first value when the other operand is a repeated row.
fn split(threads: usize, len: usize, other: Other<'_>) -> Option<(usize, usize)> {
    split_units(threads, len, if let Other::Row(r) = other { r.len() } else { 1 })
}

/// [`split`] for chunks of whole `unit`s of values.
fn split_units(threads: usize, len: usize, unit: usize) -> Option<(usize, usize)> {
    let t = elementwise_threads(threads, len);
    let unit = unit.max(1);
    let chunk = len.div_ceil(t).div_ceil(unit) * unit;
    (t > 1 && chunk < len).then_some((t, chunk))
}

/// The operands of the chunk of `len` values at `at` of a block.
fn chunk_operands<'s>(x: &'s [f32], other: Other<'s>, at: usize, len: usize) -> Result<(&'s [f32], Other<'s>)> {
    let x = x.get(at..at + len).ok_or_else(out_of_range)?;
    let other = match other {
        Other::Vector(v) => Other::Vector(v.get(at..at + len).ok_or_else(out_of_range)?),
        other => other,
    };
    Ok((x, other))
}

fn out_of_range() -> Error {
    Error::new("broadcast block out of range")
}

/// The full-length operand of a block, whether it is `f`'s second, and the other one.
fn block_operands<'s>(blk: Block, a: &'s [f32], b: &'s [f32]) -> Result<(&'s [f32], bool, Other<'s>)> {
    let span = |v: &'s [f32], at: usize, len: usize| v.get(at..at + len).ok_or_else(out_of_range);
    let one = |v: &'s [f32], at: usize| v.get(at).copied().ok_or_else(out_of_range);
    Ok(match blk.kind {
        BlockKind::Same => (span(a, blk.a, blk.len)?, false, Other::Vector(span(b, blk.b, blk.len)?)),
        BlockKind::BScalar => (span(a, blk.a, blk.len)?, false, Other::Scalar(one(b, blk.b)?)),
        BlockKind::AScalar => (span(b, blk.b, blk.len)?, true, Other::Scalar(one(a, blk.a)?)),
        BlockKind::BRow { cols } => (span(a, blk.a, blk.len)?, false, Other::Row(span(b, blk.b, cols)?)),
        BlockKind::ARow { cols } => (span(b, blk.b, blk.len)?, true, Other::Row(span(a, blk.a, cols)?)),
    })
}

/// Runs a float32 binary op on its operands: straight into the output, or, when the
/// output holds input `k`'s bytes (in place), over the output with the kernels reading
/// each value before writing it (the shared input has the output's shape, so it is the
/// full-length operand of every block).
pub fn run_binary_f32(ops: &mut BinaryOperands<'_>, op: BinaryOp, clamp: (f32, f32)) -> Result<()> {
    let osh = ops.out_shape.clone();
    let Some(k) = ops.alias else {
        return binary_f32(
            op,
            ops.a.data()?,
            ops.a.shape,
            ops.b.data()?,
            ops.b.shape,
            ops.out.data_mut()?,
            &osh,
            clamp,
            ops.threads,
        );
    };
    let (other, other_shape) =
        if k == 0 { (ops.b.data::<f32>()?, ops.b.shape) } else { (ops.a.data::<f32>()?, ops.a.shape) };
    let out = ops.out.data_mut::<f32>()?;
    let table = microkernels::table();
    let threads = ops.threads;
    for_each_in_place_block(k, (other, other_shape), out, &osh, |x, operand| {
        let other = match operand {
            Operand::Vector(v) => Other::Vector(v),
            Operand::Scalar(v) => Other::Scalar(v),
            Operand::Row(r) => Other::Row(r),
        };
        let Some((t, chunk)) = split(threads, x.len(), other) else {
            return f32_vbinary::apply_in_place(table, op, x, k == 1, other, clamp);
        };
        parallel_chunks_mut(t, x, chunk, &|i, x| {
            let other = match other {
                Other::Vector(v) => Other::Vector(v.get(i * chunk..i * chunk + x.len()).ok_or_else(out_of_range)?),
                other => other,
            };
            f32_vbinary::apply_in_place(table, op, x, k == 1, other, clamp)
        })
    })
}

/// What an in-place block reads besides the output: a span of the other input, one of
/// its values, or one of its rows (repeated).
enum Operand<'a, T> {
    Vector(&'a [T]),
    Scalar(T),
    Row(&'a [T]),
}

/// Walks the broadcast of a binary op whose output holds input `k`'s bytes (in place):
/// `f` gets each block of the output and what the block reads of the other input. The
/// shared input has the output's shape, so it is the full-length operand of every block;
/// anything else is an error.
fn for_each_in_place_block<T: Copy>(
    k: usize,
    (other, other_shape): (&[T], &[i32]),
    out: &mut [T],
    out_shape: &[i32],
    mut f: impl FnMut(&mut [T], Operand<'_, T>) -> Result<()>,
) -> Result<()> {
    let out_len = out.len();
    let (own, theirs) = ((out_shape, out_len), (other_shape, other.len()));
    let (a_side, b_side) = if k == 0 { (own, theirs) } else { (theirs, own) };
    let not_shaped = || Error::new("an input shared with the output must have the output's shape");
    for_each_block(a_side, b_side, (out_shape, out_len), |blk| {
        let (own_at, at) = if k == 0 { (blk.a, blk.b) } else { (blk.b, blk.a) };
        if own_at != blk.out {
            return Err(not_shaped());
        }
        let x = out.get_mut(blk.out..blk.out + blk.len).ok_or_else(out_of_range)?;
        let span = |len: usize| other.get(at..at + len).ok_or_else(out_of_range);
        let operand = match (blk.kind, k) {
            (BlockKind::Same, _) => Operand::Vector(span(blk.len)?),
            (BlockKind::BScalar, 0) | (BlockKind::AScalar, 1) => Operand::Scalar(span(1)?[0]),
            (BlockKind::BRow { cols }, 0) | (BlockKind::ARow { cols }, 1) => Operand::Row(span(cols)?),
            _ => return Err(not_shaped()),
        };
        f(x, operand)
    })
}

/// 8-bit quantized `out = op(a, b)` over the broadcast of `a_shape` and `b_shape` to
/// `out_shape`, on the microkernels: a same-shape pair and a scalar operand each take one
/// kernel call, a per-channel row one call per row, other broadcasts one call per innermost
/// run. A block long enough is split over up to `threads` threads.
#[allow(clippy::too_many_arguments)]
pub fn binary_q8<T: Quant8>(
    p: &QBinaryParams,
    a: &[T],
    a_shape: &[i32],
    b: &[T],
    b_shape: &[i32],
    out: &mut [T],
    out_shape: &[i32],
    threads: usize,
) -> Result<()> {
    let table = microkernels::table();
    let out_len = out.len();
    for_each_block((a_shape, a.len()), (b_shape, b.len()), (out_shape, out_len), |blk| {
        let o = out.get_mut(blk.out..blk.out + blk.len).ok_or_else(out_of_range)?;
        let (x, x_is_second, other) = block_operands_q8(blk, a, b)?;
        let Some((t, chunk)) = split_units(threads, o.len(), row_len(other)) else {
            return qs8_vbinary::apply(table, p, x, x_is_second, other, o);
        };
        parallel_chunks_mut(t, o, chunk, &|i, o| {
            let x = x.get(i * chunk..i * chunk + o.len()).ok_or_else(out_of_range)?;
            qs8_vbinary::apply(table, p, x, x_is_second, chunk_other(other, i * chunk, o.len())?, o)
        })
    })
}

/// The length of a repeated row (chunks of a split start at a row), else 1.
fn row_len<T>(other: qs8_vbinary::Other<'_, T>) -> usize {
    if let qs8_vbinary::Other::Row(r) = other { r.len() } else { 1 }
}

/// The other operand of the chunk of `len` values at `at` of a block.
fn chunk_other<T>(other: qs8_vbinary::Other<'_, T>, at: usize, len: usize) -> Result<qs8_vbinary::Other<'_, T>> {
    Ok(match other {
        qs8_vbinary::Other::Vector(v) => qs8_vbinary::Other::Vector(v.get(at..at + len).ok_or_else(out_of_range)?),
        other => other,
    })
}

/// [`block_operands`] for the 8-bit kernels.
#[allow(clippy::type_complexity)]
fn block_operands_q8<'s, T: Copy>(
    blk: Block,
    a: &'s [T],
    b: &'s [T],
) -> Result<(&'s [T], bool, qs8_vbinary::Other<'s, T>)> {
    use qs8_vbinary::Other as O;
    let span = |v: &'s [T], at: usize, len: usize| v.get(at..at + len).ok_or_else(out_of_range);
    let one = |v: &'s [T], at: usize| v.get(at).copied().ok_or_else(out_of_range);
    Ok(match blk.kind {
        BlockKind::Same => (span(a, blk.a, blk.len)?, false, O::Vector(span(b, blk.b, blk.len)?)),
        BlockKind::BScalar => (span(a, blk.a, blk.len)?, false, O::Scalar(one(b, blk.b)?)),
        BlockKind::AScalar => (span(b, blk.b, blk.len)?, true, O::Scalar(one(a, blk.a)?)),
        BlockKind::BRow { cols } => (span(a, blk.a, blk.len)?, false, O::Row(span(b, blk.b, cols)?)),
        BlockKind::ARow { cols } => (span(b, blk.b, blk.len)?, true, O::Row(span(a, blk.a, cols)?)),
    })
}

/// Runs an 8-bit quantized binary op on its operands, in place as [`run_binary_f32`] does
/// when the output holds an input's bytes.
pub fn run_binary_q8<T: Quant8 + Element>(ops: &mut BinaryOperands<'_>, p: &QBinaryParams) -> Result<()> {
    use qs8_vbinary::Other as O;
    let osh = ops.out_shape.clone();
    let threads = ops.threads;
    let Some(k) = ops.alias else {
        let (a, b) = (ops.a.data::<T>()?, ops.b.data::<T>()?);
        return binary_q8(p, a, ops.a.shape, b, ops.b.shape, ops.out.data_mut()?, &osh, threads);
    };
    let (other, other_shape) =
        if k == 0 { (ops.b.data::<T>()?, ops.b.shape) } else { (ops.a.data::<T>()?, ops.a.shape) };
    let out = ops.out.data_mut::<T>()?;
    let table = microkernels::table();
    for_each_in_place_block(k, (other, other_shape), out, &osh, |x, operand| {
        let other = match operand {
            Operand::Vector(v) => O::Vector(v),
            Operand::Scalar(v) => O::Scalar(v),
            Operand::Row(r) => O::Row(r),
        };
        let Some((t, chunk)) = split_units(threads, x.len(), row_len(other)) else {
            return qs8_vbinary::apply_in_place(table, p, x, k == 1, other);
        };
        parallel_chunks_mut(t, x, chunk, &|i, x| {
            qs8_vbinary::apply_in_place(table, p, x, k == 1, chunk_other(other, i * chunk, x.len())?)
        })
    })
}

/// Element types of the quantized ADD, SUB and MUL: uint8 and int8 run on the
/// microkernels, int16 one value at a time.
pub trait QuantArith: QuantInt + Element + Default {
    /// `p` over the broadcast on the microkernels (see [`binary_q8`]), or `None` for a type
    /// they do not cover.
    #[allow(clippy::too_many_arguments)]
    fn on_microkernels(
        p: &QBinaryParams,
        a: &[Self],
        a_shape: &[i32],
        b: &[Self],
        b_shape: &[i32],
        out: &mut [Self],
        out_shape: &[i32],
        threads: usize,
    ) -> Option<Result<()>>;
}

macro_rules! quant_arith_8bit {
    ($t:ty) => {
        impl QuantArith for $t {
            fn on_microkernels(
                p: &QBinaryParams,
                a: &[$t],
                a_shape: &[i32],
                b: &[$t],
                b_shape: &[i32],
                out: &mut [$t],
                out_shape: &[i32],
                threads: usize,
            ) -> Option<Result<()>> {
                Some(binary_q8(p, a, a_shape, b, b_shape, out, out_shape, threads))
            }
        }
    };
}
quant_arith_8bit!(u8);
quant_arith_8bit!(i8);

impl QuantArith for i16 {
    fn on_microkernels(
        _: &QBinaryParams,
        _: &[i16],
        _: &[i32],
        _: &[i16],
        _: &[i32],
        _: &mut [i16],
        _: &[i32],
        _: usize,
    ) -> Option<Result<()>> {
        None
    }
}

/// Maps a flat output index to the flat index of an input broadcast to the output.
struct BroadcastIndex {
    /// Per output dimension, innermost first: (output size, input stride or 0).
    dims: Vec<(usize, usize)>,
}

impl BroadcastIndex {
    fn new(input: &[i32], output: &[i32]) -> Result<Self> {
        if input.len() > output.len() {
            return Err(Error::new(format!("shape {input:?} does not broadcast to {output:?}")));
        }
        let pad = output.len() - input.len();
        let mut dims = Vec::with_capacity(output.len());
        let mut stride = 1usize;
        for i in (0..output.len()).rev() {
            let o = usize::try_from(output[i]).map_err(|_| Error::new("negative dimension"))?;
            let d = if i < pad {
                1
            } else {
                usize::try_from(input[i - pad]).map_err(|_| Error::new("negative dimension"))?
            };
            if d != o && d != 1 {
                return Err(Error::new(format!("shape {input:?} does not broadcast to {output:?}")));
            }
            dims.push((o, if d == 1 { 0 } else { stride }));
            stride = stride.saturating_mul(d);
        }
        Ok(BroadcastIndex { dims })
    }

    fn of(&self, mut flat: usize) -> usize {
        let mut at = 0;
        for &(size, stride) in &self.dims {
            let size = size.max(1);
            at += (flat % size) * stride;
            flat /= size;
        }
        at
    }
}

/// Eval-time check that the output was prepared for the inputs' current shapes and type.
pub fn check_output(op: &'static str, ops: &BinaryOperands<'_>, dtype: TfLiteType) -> Result<()> {
    if ops.out.dtype != dtype {
        return Err(Error::new(format!("{op}: output has type {}, expected {}", ops.out.dtype.name(), dtype.name())));
    }
    if ops.out.shape != ops.out_shape.as_slice() {
        return Err(Error::new(format!(
            "{op}: output shape {:?} does not match the inputs' broadcast shape {:?}",
            ops.out.shape, ops.out_shape
        )));
    }
    Ok(())
}

/// True if a tensor carries quantization parameters (affine, or a legacy nonzero scale).
pub fn is_quantized(t: &TensorView<'_>) -> bool {
    t.affine_quant().is_some() || t.quant().scale != 0.0
}

/// Rescaling parameters of TFLite's general quantized ADD and SUB (`ArithmeticParams`):
/// both inputs are brought to a common scale of `2 * max(scale1, scale2)` with
/// `left_shift` bits of headroom (20 for 8-bit, 15 for int16), added or subtracted, then
/// rescaled to the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantArithParams {
    pub left_shift: i32,
    pub input1_offset: i32,
    pub input1_multiplier: i32,
    pub input1_shift: i32,
    pub input2_offset: i32,
    pub input2_multiplier: i32,
    pub input2_shift: i32,
    pub output_offset: i32,
    pub output_multiplier: i32,
    pub output_shift: i32,
    pub act_min: i32,
    pub act_max: i32,
}

impl QuantArithParams {
    /// The parameters as add.cc / sub.cc compute them. The scale arithmetic is done in
    /// `f32` where TFLite's is (`2 * std::max(float, float)`, `(1 << shift) * float`).
    /// With `output_multiplier_may_exceed_one` (SUB) a real output multiplier above 1 is
    /// quantized with a left shift; otherwise (ADD) it is an error, where TFLite aborts.
    pub fn new(
        in1: QuantParams,
        in2: QuantParams,
        out: QuantParams,
        left_shift: i32,
        (act_min, act_max): (i32, i32),
        output_multiplier_may_exceed_one: bool,
    ) -> Result<QuantArithParams> {
        let twice_max_input_scale = f64::from(2.0f32 * crate::kernels::activation::cpp_max(in1.scale, in2.scale));
        let real1 = f64::from(in1.scale) / twice_max_input_scale;
        let real2 = f64::from(in2.scale) / twice_max_input_scale;
        let real_out = twice_max_input_scale / f64::from(2f32.powi(left_shift) * out.scale);
        let (input1_multiplier, input1_shift) = quantize_multiplier_smaller_than_one_exp(real1)
            .map_err(|e| Error::new(format!("input 1 scale {}: {}", in1.scale, e.message)))?;
        let (input2_multiplier, input2_shift) = quantize_multiplier_smaller_than_one_exp(real2)
            .map_err(|e| Error::new(format!("input 2 scale {}: {}", in2.scale, e.message)))?;
        let (output_multiplier, output_shift) = if output_multiplier_may_exceed_one && real_out > 1.0 {
            quantize_multiplier_greater_than_one(real_out)
        } else {
            quantize_multiplier_smaller_than_one_exp(real_out)
        }
        .map_err(|e| Error::new(format!("output scale {}: {}", out.scale, e.message)))?;
        Ok(QuantArithParams {
            left_shift,
            input1_offset: in1.zero_point.wrapping_neg(),
            input1_multiplier,
            input1_shift,
            input2_offset: in2.zero_point.wrapping_neg(),
            input2_multiplier,
            input2_shift,
            output_offset: out.zero_point,
            output_multiplier,
            output_shift,
            act_min,
            act_max,
        })
    }

    /// The microkernels' parameters of the same ADD: each input is `(x + offset) <<
    /// left_shift` rescaled with `MultiplyByQuantizedMultiplierSmallerThanOneExp`, and so is
    /// the sum (see [`Self::add`]).
    pub fn q8_add(&self) -> QBinaryParams {
        self.q8(QBinaryOp::Add, Rescale::smaller_than_one(self.output_multiplier, self.output_shift, 0))
    }

    /// The microkernels' parameters of the same SUB: the inputs as [`Self::q8_add`], the
    /// difference rescaled with the general multiply (see [`Self::sub`]).
    pub fn q8_sub(&self) -> QBinaryParams {
        self.q8(QBinaryOp::Sub, Rescale::general(self.output_multiplier, self.output_shift))
    }

    fn q8(&self, op: QBinaryOp, out: Rescale) -> QBinaryParams {
        let input = |offset: i32, mult: i32, shift: i32| Input {
            offset,
            scale: Rescale::smaller_than_one(mult, shift, self.left_shift),
        };
        QBinaryParams {
            op,
            a: input(self.input1_offset, self.input1_multiplier, self.input1_shift),
            b: input(self.input2_offset, self.input2_multiplier, self.input2_shift),
            out,
            output_offset: self.output_offset,
            min: self.act_min,
            max: self.act_max,
        }
    }

    #[inline]
    fn scaled_inputs(&self, x: i32, y: i32) -> (i32, i32) {
        let shift = 1i32.wrapping_shl(self.left_shift as u32);
        let x = self.input1_offset.wrapping_add(x).wrapping_mul(shift);
        let y = self.input2_offset.wrapping_add(y).wrapping_mul(shift);
        (
            multiply_by_quantized_multiplier_smaller_than_one_exp(x, self.input1_multiplier, self.input1_shift),
            multiply_by_quantized_multiplier_smaller_than_one_exp(y, self.input2_multiplier, self.input2_shift),
        )
    }

    /// One quantized sum (reference `AddElementwise` / `AddFunc`).
    #[inline]
    pub fn add(&self, x: i32, y: i32) -> i32 {
        let (x, y) = self.scaled_inputs(x, y);
        let raw = multiply_by_quantized_multiplier_smaller_than_one_exp(
            x.wrapping_add(y),
            self.output_multiplier,
            self.output_shift,
        )
        .wrapping_add(self.output_offset);
        clamp_min_max(raw, self.act_min, self.act_max)
    }

    /// One quantized difference (reference `SubElementwise`). TFLite rescales the output
    /// with `MultiplyByQuantizedMultiplierSmallerThanOneExp` even when the multiplier was
    /// quantized with a positive shift (undefined behaviour in C++); this uses the general
    /// multiply, which equals it for every shift TFLite handles.
    #[inline]
    pub fn sub(&self, x: i32, y: i32) -> i32 {
        let (x, y) = self.scaled_inputs(x, y);
        let raw = multiply_by_quantized_multiplier(x.wrapping_sub(y), self.output_multiplier, self.output_shift)
            .wrapping_add(self.output_offset);
        clamp_min_max(raw, self.act_min, self.act_max)
    }
}

/// Parameters of the int16 ADD/SUB path for power-of-two scales and zero zero-points
/// (LSTM-style fixed point): each input is shifted right by its scale's exponent
/// difference with the output, then the results are added or subtracted with saturation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pot16Params {
    /// `log2(scale1) - log2(scale_out)`, `<= 0`.
    pub input1_shift: i32,
    /// `log2(scale2) - log2(scale_out)`, `<= 0`.
    pub input2_shift: i32,
    pub act_min: i32,
    pub act_max: i32,
}

impl Pot16Params {
    /// The power-of-two path applies when every scale is a power of two (`CheckedLog2`).
    pub fn log2_scales(in1: QuantParams, in2: QuantParams, out: QuantParams) -> Option<(i32, i32, i32)> {
        Some((checked_log2(in1.scale)?, checked_log2(in2.scale)?, checked_log2(out.scale)?))
    }

    /// Checks TFLite's constraints: zero points 0, only one input shifted, no left shifts.
    pub fn new(
        in1: QuantParams,
        in2: QuantParams,
        out: QuantParams,
        (act_min, act_max): (i32, i32),
    ) -> Result<Pot16Params> {
        if in1.zero_point != 0 || in2.zero_point != 0 || out.zero_point != 0 {
            return Err(Error::new("int16 power-of-two path needs zero points of 0"));
        }
        let (l1, l2, lo) = Self::log2_scales(in1, in2, out)
            .ok_or_else(|| Error::new("int16 power-of-two path needs power-of-two scales"))?;
        let (s1, s2) = (l1 - lo, l2 - lo);
        if !(s1 == 0 || s2 == 0) || s1 > 0 || s2 > 0 {
            return Err(Error::new(format!(
                "int16 power-of-two path: unsupported input shifts {s1} and {s2} (one must be 0, both <= 0)"
            )));
        }
        Ok(Pot16Params { input1_shift: s1, input2_shift: s2, act_min, act_max })
    }

    #[inline]
    fn scaled(&self, x: i16, y: i16) -> (i32, i32) {
        (
            i32::from(rounding_divide_by_pot_i16(x, -self.input1_shift)),
            i32::from(rounding_divide_by_pot_i16(y, -self.input2_shift)),
        )
    }

    /// Saturating fixed-point sum, clamped to the activation range.
    #[inline]
    pub fn add(&self, x: i16, y: i16) -> i16 {
        let (x, y) = self.scaled(x, y);
        clamp_min_max(clamp_min_max(x + y, i16::MIN as i32, i16::MAX as i32), self.act_min, self.act_max) as i16
    }

    /// Saturating fixed-point difference, clamped to the activation range.
    #[inline]
    pub fn sub(&self, x: i16, y: i16) -> i16 {
        let (x, y) = self.scaled(x, y);
        clamp_min_max(clamp_min_max(x - y, i16::MIN as i32, i16::MAX as i32), self.act_min, self.act_max) as i16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qp(scale: f32, zero_point: i32) -> QuantParams {
        QuantParams { scale, zero_point }
    }

    #[test]
    fn float_split_over_threads_matches_one_thread() {
        // Large enough to split: the same shape, a scalar, a per-channel row (chunks start
        // at a row) and a broadcast of both sides.
        let n = 35 * (3 * crate::kernels::threadpool::elementwise::MIN_ELEMENTS_PER_THREAD / 35 + 1);
        let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.01 - 3.0).collect();
        let row: Vec<f32> = (0..35).map(|i| i as f32 * 0.1 - 1.0).collect();
        let full = [1, n as i32 / 35, 35];
        for (b, bsh) in [(a.clone(), full.to_vec()), (vec![0.5], vec![1]), (row.clone(), vec![35])] {
            for op in [BinaryOp::Sub, BinaryOp::Prelu] {
                let mut one = vec![0f32; n];
                let mut two = vec![0f32; n];
                binary_f32(op, &a, &full, &b, &bsh, &mut one, &full, (-2.0, 5.0), 1).unwrap();
                binary_f32(op, &a, &full, &b, &bsh, &mut two, &full, (-2.0, 5.0), 2).unwrap();
                assert_eq!(one, two, "{op:?} {bsh:?}");
                binary_f32(op, &b, &bsh, &a, &full, &mut two, &full, (-2.0, 5.0), 2).unwrap();
                binary_f32(op, &b, &bsh, &a, &full, &mut one, &full, (-2.0, 5.0), 1).unwrap();
                assert_eq!(one, two, "{op:?} {bsh:?} swapped");
            }
        }
    }

    /// One quantized op on two widened values.
    type ScalarOp<'a> = dyn Fn(i32, i32) -> i32 + 'a;

    /// The 8-bit ADD, SUB and MUL on the microkernels against the scalar formulas over
    /// the same broadcast, for one element type.
    fn q8_matches_scalar<T: QuantArith + Quant8 + PartialEq + std::fmt::Debug>(from: fn(u32) -> T, signed: bool) {
        use crate::kernels::ops::mul::QuantMulParams;
        use crate::microkernels::test_rng::Lcg;
        let big = 3 * crate::kernels::threadpool::elementwise::MIN_ELEMENTS_PER_THREAD as i32;
        let shapes: [(&[i32], &[i32]); 12] = [
            (&[2, 3, 4, 5], &[2, 3, 4, 5]),
            (&[2, 3, 4, 5], &[1]),
            (&[], &[2, 3, 4, 5]),
            (&[2, 3, 4, 5], &[5]),
            (&[4, 5], &[2, 3, 4, 5]),
            (&[2, 1, 4, 5], &[2, 3, 1, 5]),
            (&[2, 3, 4, 1], &[1, 1, 1, 5]),
            (&[4, 1], &[1, 4]),
            (&[1, big, 3], &[1, big, 3]),
            (&[1, big, 3], &[3]),
            (&[1], &[1, big, 3]),
            (&[big, 1], &[big, 3]),
        ];
        let dtype = if signed { TfLiteType::kTfLiteInt8 } else { TfLiteType::kTfLiteUInt8 };
        let (lo, hi) = if signed { (-128, 127) } else { (0, 255) };
        let mut rng = Lcg(42);
        for (ash, bsh) in shapes {
            let osh = binary_output_shape("TEST", ash, bsh).unwrap();
            let count = |s: &[i32]| s.iter().product::<i32>() as usize;
            let a: Vec<T> = (0..count(ash)).map(|_| from(rng.next())).collect();
            let b: Vec<T> = (0..count(bsh)).map(|_| from(rng.next())).collect();
            let n = count(&osh);
            let scale = |rng: &mut Lcg| (rng.next() % 1000 + 1) as f32 / 4000.0;
            let zp = |rng: &mut Lcg| lo + (rng.next() % 256) as i32;
            let (in1, in2) = (qp(scale(&mut rng), zp(&mut rng)), qp(scale(&mut rng), zp(&mut rng)));
            let out = qp(scale(&mut rng), zp(&mut rng));
            let act = (lo.max(out.zero_point - 50), hi);
            let arith = |subtract| QuantArithParams::new(in1, in2, out, 20, act, subtract);
            let add = arith(false).unwrap();
            let sub = arith(true).unwrap();
            let mul = QuantMulParams::new(
                dtype,
                in1,
                in2,
                out,
                crate::abi::builtin_op_data::TfLiteFusedActivation::kTfLiteActRelu,
            )
            .unwrap();
            let cases: [(QBinaryParams, &ScalarOp<'_>); 3] = [
                (add.q8_add(), &|x, y| add.add(x, y)),
                (sub.q8_sub(), &|x, y| sub.sub(x, y)),
                (mul.q8(), &|x, y| mul.mul(x, y)),
            ];
            for (p, scalar) in cases {
                let mut want = vec![from(0); n];
                crate::kernels::broadcast::broadcast_binary(&a, ash, &b, bsh, &mut want, &osh, |x: T, y: T| {
                    T::from_i32(scalar(x.to_i32(), y.to_i32()))
                })
                .unwrap();
                for threads in [1, 2] {
                    let mut got = vec![from(0); n];
                    binary_q8(&p, &a, ash, &b, bsh, &mut got, &osh, threads).unwrap();
                    assert!(got == want, "{:?} {ash:?} {bsh:?} {threads} threads", p.op);
                }
            }
        }
    }

    #[test]
    fn int8_on_microkernels_matches_scalar() {
        q8_matches_scalar::<i8>(|v| v as i8, true);
    }

    #[test]
    fn uint8_on_microkernels_matches_scalar() {
        q8_matches_scalar::<u8>(|v| v as u8, false);
    }

    #[test]
    fn q8_shapes_are_checked() {
        let p = QuantArithParams::new(qp(0.5, 0), qp(0.5, 0), qp(0.5, 0), 20, (-128, 127), false).unwrap().q8_add();
        let mut out = [0i8; 6];
        assert!(binary_q8(&p, &[1i8; 6], &[2, 3], &[1i8; 2], &[2], &mut out, &[2, 3], 1).is_err());
        assert!(binary_q8(&p, &[1i8; 6], &[2, 3], &[1i8; 3], &[3], &mut out[..5], &[2, 3], 1).is_err());
        binary_q8(&p, &[1i8; 6], &[2, 3], &[1i8, 2, 3], &[3], &mut out, &[2, 3], 2).unwrap();
        assert_eq!(out, [2, 3, 4, 2, 3, 4]);
    }

    #[test]
    fn output_shape() {
        assert_eq!(binary_output_shape("ADD", &[2, 3], &[2, 3]).unwrap(), vec![2, 3]);
        assert_eq!(binary_output_shape("ADD", &[2, 1, 3], &[1, 4, 1]).unwrap(), vec![2, 4, 3]);
        assert_eq!(binary_output_shape("ADD", &[1, 1, 1, 1, 1, 1, 1, 2], &[1, 1, 1, 1, 1, 1, 1, 2]).unwrap().len(), 8);
        let e = binary_output_shape("ADD", &[2, 3], &[4, 3]).unwrap_err();
        assert!(e.message.starts_with("ADD:"), "{}", e.message);
        let e = binary_output_shape("MUL", &[1, 1, 1, 1, 1, 1, 2], &[2, 1]).unwrap_err();
        assert!(e.message.contains("rank 7"), "{}", e.message);
    }

    #[test]
    fn add_params_equal_scales() {
        // Equal scales: each input multiplier is 0.5, output 2*s / (2^20 * s) = 2^-19.
        let p = QuantArithParams::new(qp(0.5, 3), qp(0.5, -2), qp(0.5, 1), 20, (0, 255), false).unwrap();
        assert_eq!((p.input1_multiplier, p.input1_shift), (1 << 30, 0));
        assert_eq!((p.input2_multiplier, p.input2_shift), (1 << 30, 0));
        assert_eq!((p.output_multiplier, p.output_shift), (1 << 30, -18));
        assert_eq!((p.input1_offset, p.input2_offset, p.output_offset), (-3, 2, 1));
        // (5-3) + (4+2) = 8, plus output zero point 1.
        assert_eq!(p.add(5, 4), 9);
        assert_eq!(p.sub(5, 4), 0); // 2 - 6 = -4 + 1 = -3, clamped to 0
    }

    #[test]
    fn add_params_reject_zero_scale() {
        assert!(QuantArithParams::new(qp(0.0, 0), qp(0.5, 0), qp(0.5, 0), 20, (0, 255), false).is_err());
        assert!(QuantArithParams::new(qp(0.5, 0), qp(0.5, 0), qp(0.0, 0), 20, (0, 255), false).is_err());
        // A tiny output scale: the real output multiplier exceeds 1. ADD refuses, SUB copes.
        assert!(QuantArithParams::new(qp(1.0, 0), qp(1.0, 0), qp(1e-8, 0), 20, (-128, 127), false).is_err());
        let p = QuantArithParams::new(qp(1.0, 0), qp(1.0, 0), qp(1e-8, 0), 20, (-128, 127), true).unwrap();
        assert!(p.output_shift > 0);
        assert_eq!(p.sub(1, 0), 127);
    }

    #[test]
    fn pot16() {
        let s = 2f32.powi(-15);
        let p = Pot16Params::new(qp(s, 0), qp(s * 0.5, 0), qp(s, 0), (-32768, 32767)).unwrap();
        assert_eq!((p.input1_shift, p.input2_shift), (0, -1));
        assert_eq!(p.add(100, 51), 100 + 26); // 51/2 = 25.5 -> 26
        assert_eq!(p.add(32000, 2000), 32767); // saturates
        assert_eq!(p.sub(-32000, 2000), -32768);
        assert!(Pot16Params::new(qp(0.3, 0), qp(s, 0), qp(s, 0), (-32768, 32767)).is_err());
        assert!(Pot16Params::new(qp(s, 1), qp(s, 0), qp(s, 0), (-32768, 32767)).is_err());
        // Left shifts are refused.
        assert!(Pot16Params::new(qp(s * 2.0, 0), qp(s, 0), qp(s, 0), (-32768, 32767)).is_err());
    }
}
