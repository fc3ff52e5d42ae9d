//! A CONV_2D whose only reader is an ADD, run as one node (the CPU's graph fusion makes
//! it, see `interpreter::fusion`; it is never resolved from a model).
//!
//! Residual blocks end this way: a convolution, then its output added to the block's
//! input (and, in BlazeFace-style networks, a PRELU after the sum, which the fusion has
//! already put inside the ADD). Run apart, the ADD is one more pass over memory: it reads
//! the convolution's output back and the residual, writes the sum, and waits for every
//! thread at both ends. Here the convolution's GEMM hands each chunk of output rows,
//! while it is still in cache, to an epilogue that adds the residual's rows (then applies
//! the PRELU): the convolution's output is never written out alone, and the tensor
//! between the two ops gets no memory.
//!
//! The answer is bit for bit the unfused one: the convolution's values come from the same
//! microkernels with the same packed weights (int8 ones requantized to the convolution
//! output's scale, as the unfused op stores them), and the epilogue runs the ADD's (and
//! PRELU's) own elementwise microkernels on them, with the operands in the ADD's order and
//! the ADD's clamp or rescaling. Float32 (an ungrouped convolution with float32 weights,
//! the ADD with any fused activation or PRELU) or int8 (an ungrouped convolution on the
//! 8-bit GEMM kernels, the ADD with its fused activation), and a residual of the
//! convolution output's shape.

use super::add::{QuantAdd, quant_add_params};
use super::conv_2d::{self, Kind, Quant8Params};
use super::conv_common::{ConvGeom, PackSlot};
use super::conv_f32_gemm;
use super::conv_qs8_gemm;
use crate::abi::builtin_op_data::{TfLiteAddParams, TfLiteConvParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::activation::activation_range_f32;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel, BuiltinParams};
use crate::kernels::threadpool::recommended_threads;
use crate::microkernels::epilogue::Epilogue;
use crate::microkernels::f32_gemm::PackedGemm;
use crate::microkernels::f32_vbinary::{self, BinaryOp, NO_CLAMP, Other};
use crate::microkernels::qs8_gemm::{PackedQs8Gemm, Qs8GemmKernels};
use crate::microkernels::qs8_vbinary::{self, QBinaryParams};
use crate::microkernels::table;
use core::ops::Range;

const OP: &str = "CONV_2D+ADD";

/// The fused node's options: the convolution's, and what the ADD adds to them. The fusion
/// allocates it for the node (it keeps it for as long as the node is fused) in place of
/// the ADD node's options.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ConvThenAddParams {
    pub conv: TfLiteConvParams,
    pub add: TfLiteAddParams,
    /// Whether the residual is the ADD's first operand (the convolution's output then is
    /// its second).
    pub residual_first: bool,
}

// SAFETY: the only nodes whose kernel is `ConvThenAdd` are the ones the fusion builds,
// and it points their `builtin_data` at this struct.
unsafe impl BuiltinParams for ConvThenAddParams {}

/// The registration the fusion gives the pair's ADD node. Inputs: the convolution's
/// input, filter and bias (`-1`: none), the residual, and (for a float ADD with a fused
/// PRELU) the PRELU's per-channel alphas; output: the ADD's output; intermediate 0: the
/// convolution's output (for its type and quantization; it gets no memory).
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<ConvThenAdd>(TfLiteBuiltinOperator::kTfLiteBuiltinAdd)
}

/// Whether a convolution with this input and filter type, and this CPU, can run fused:
/// float32, or int8 where the 8-bit GEMM kernels exist (the fusion asks before fusing).
pub fn runs(input: TfLiteType, filter: TfLiteType) -> bool {
    match (input, filter) {
        (TfLiteType::kTfLiteFloat32, TfLiteType::kTfLiteFloat32) => true,
        (TfLiteType::kTfLiteInt8, TfLiteType::kTfLiteInt8) => table().qs8_gemm.is_some(),
        _ => false,
    }
}

struct ConvThenAdd;

struct State {
    geom: ConvGeom,
    conv: ConvState,
    out_shape: [i32; 4],
}

/// The convolution's packed weights and the ADD's parameters, by type.
enum ConvState {
    F32 { conv_act: (f32, f32), add_clamp: (f32, f32), packed: PackSlot<PackedGemm> },
    Int8(Box<Int8Conv>),
}

/// An int8 convolution's kernels, requantization and packed weights, and the ADD's
/// rescaling.
struct Int8Conv {
    kernels: &'static Qs8GemmKernels,
    quant: Quant8Params,
    add: QBinaryParams,
    packed: PackSlot<PackedQs8Gemm>,
    /// The input with its pixels padded to the kernels' channel count, where they need that.
    padded_input: Vec<i8>,
}

/// The node's operands: convolution input, filter and bias, the residual, the alphas.
type Operands<'a> = (TensorView<'a>, TensorView<'a>, Option<TensorView<'a>>, TensorView<'a>, Option<TensorView<'a>>);

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<Operands<'a>> {
    let n = ctx.num_inputs();
    if !(n == 4 || n == 5) || ctx.num_outputs() != 1 {
        return Err(Error::new(format!(
            "{OP}: expected 4 or 5 inputs and 1 output, got {n} and {}",
            ctx.num_outputs()
        )));
    }
    let alphas = if n == 5 { Some(ctx.input(4)?) } else { None };
    Ok((ctx.input(0)?, ctx.input(1)?, ctx.optional_input(2)?, ctx.input(3)?, alphas))
}

impl BuiltinKernel for ConvThenAdd {
    const NAME: &'static str = OP;
    type Params = ConvThenAddParams;
    type State = State;

    fn prepare(ctx: &OpCtx<'_>, p: &ConvThenAddParams) -> Result<State> {
        let (input, filter, bias, residual, alphas) = operands(ctx)?;
        let mid = ctx.intermediate(0)?;
        let (geom, kind) = conv_2d::plan(&p.conv, &input, &filter, bias.as_ref(), &mid)?;
        let out_shape = geom.output_shape(OP)?;
        if residual.dtype != mid.dtype || residual.shape != out_shape || geom.f_c != geom.in_c {
            return Err(Error::new(format!(
                "{OP}: the residual is {} {:?}, the ungrouped convolution's output {} {out_shape:?}",
                residual.dtype.name(),
                residual.shape,
                mid.dtype.name()
            )));
        }
        let conv = match kind {
            Kind::F32 { act } if filter.dtype == TfLiteType::kTfLiteFloat32 => {
                if let Some(a) = &alphas
                    && (a.dtype != TfLiteType::kTfLiteFloat32 || a.num_elements() != geom.out_c)
                {
                    return Err(Error::new(format!(
                        "{OP}: a fused PRELU needs {} float32 alphas, got {} {:?}",
                        geom.out_c,
                        a.dtype.name(),
                        a.shape
                    )));
                }
                let packed = PackSlot::prepare(&filter, bias.as_ref(), || {
                    conv_f32_gemm::pack_weights(&geom, &filter, bias.as_ref())
                })?;
                ConvState::F32 { conv_act: act, add_clamp: activation_range_f32(p.add.activation), packed }
            }
            Kind::Quant8(quant) if input.dtype == TfLiteType::kTfLiteInt8 && alphas.is_none() => {
                let kernels = table()
                    .qs8_gemm
                    .filter(|_| conv_qs8_gemm::input_zero_point(&quant).is_some())
                    .ok_or_else(|| Error::new(format!("{OP}: no 8-bit GEMM kernels for this convolution")))?;
                let output = ctx.output(0)?;
                let (a, b) = if p.residual_first { (&residual, &mid) } else { (&mid, &residual) };
                let add = match quant_add_params(
                    TfLiteType::kTfLiteInt8,
                    a.quant(),
                    b.quant(),
                    output.quant(),
                    p.add.activation,
                    p.add.pot_scale_int16,
                )? {
                    QuantAdd::General(q) => q.q8_add(),
                    QuantAdd::Pot16(_) => return Err(Error::new(format!("{OP}: an int16 ADD does not fuse"))),
                };
                let packed = PackSlot::prepare(&filter, bias.as_ref(), || {
                    conv_qs8_gemm::pack_weights(kernels, &geom, &filter, bias.as_ref(), &quant)
                })?;
                ConvState::Int8(Box::new(Int8Conv { kernels, quant, add, packed, padded_input: Vec::new() }))
            }
            _ => return Err(Error::new(format!("{OP}: only a float32 or int8 convolution fuses"))),
        };
        ctx.set_output_type(0, mid.dtype)?;
        ctx.resize_output(0, &out_shape)?;
        Ok(State { geom, conv, out_shape })
    }

    fn invoke(ctx: &OpCtx<'_>, p: &ConvThenAddParams, st: &mut State) -> Result<()> {
        let (input, filter, bias, residual, alphas) = operands(ctx)?;
        let mut out = ctx.output(0)?;
        if out.shape != st.out_shape {
            return Err(Error::new(format!(
                "{OP}: output shape {:?} does not match the expected {:?}",
                out.shape, st.out_shape
            )));
        }
        if st.geom.output_len() == Some(0) {
            return Ok(());
        }
        let threads = recommended_threads(ctx);
        let g = &st.geom;
        let channels = g.out_c;
        match &mut st.conv {
            ConvState::F32 { conv_act, add_clamp, packed } => {
                let alphas = alphas.as_ref().map(|a| a.data::<f32>()).transpose()?;
                let residual = residual.data::<f32>()?;
                let out = out.data_mut::<f32>()?;
                if residual.len() != out.len() || alphas.is_some_and(|a| a.len() != channels) {
                    return Err(Error::new(format!("{OP}: residual or alphas do not match the output")));
                }
                let mut fresh = None;
                let packed = packed.get(&filter, bias.as_ref(), &mut fresh, || {
                    conv_f32_gemm::pack_weights(g, &filter, bias.as_ref())
                })?;
                let epilogue =
                    AddResidual { residual, channels, residual_first: p.residual_first, clamp: *add_clamp, alphas };
                let input = input.data::<f32>()?;
                conv_f32_gemm::compute_then(table(), g, input, packed, out, *conv_act, threads, Some(&epilogue))
            }
            ConvState::Int8(c) => {
                let Int8Conv { kernels, quant, add, packed, padded_input } = &mut **c;
                let residual = residual.data::<i8>()?;
                let out = out.data_mut::<i8>()?;
                if residual.len() != out.len() {
                    return Err(Error::new(format!("{OP}: the residual does not match the output")));
                }
                let mut fresh = None;
                let packed = packed.get(&filter, bias.as_ref(), &mut fresh, || {
                    conv_qs8_gemm::pack_weights(kernels, g, &filter, bias.as_ref(), quant)
                })?;
                let epilogue = AddResidualInt8 { residual, channels, residual_first: p.residual_first, add };
                let input = input.data::<i8>()?;
                conv_qs8_gemm::compute_then(kernels, g, input, packed, out, threads, padded_input, Some(&epilogue))
            }
        }
    }
}

/// The ADD (and PRELU) on finished rows of the convolution's output.
struct AddResidual<'a> {
    /// The residual, laid out as the output: `channels` values per GEMM row.
    residual: &'a [f32],
    channels: usize,
    residual_first: bool,
    clamp: (f32, f32),
    alphas: Option<&'a [f32]>,
}

impl Epilogue<f32> for AddResidual<'_> {
    fn apply(&self, rows: Range<usize>, cols: Range<usize>, out: &mut [f32]) -> Result<()> {
        let t = table();
        for_each_span(rows, cols, self.channels, out, |first, cols, span| {
            let residual = residual_span(self.residual, self.channels, first, cols.clone(), span.len())?;
            // The convolution's output is the ADD's second operand when the residual is its first.
            let (add, second) = (BinaryOp::Add, self.residual_first);
            f32_vbinary::apply_in_place(t, add, span, second, Other::Vector(residual), self.clamp)?;
            if let Some(alphas) = self.alphas {
                let alphas = alphas.get(cols.clone()).ok_or_else(|| Error::new(format!("{OP}: columns {cols:?}")))?;
                f32_vbinary::apply_in_place(t, BinaryOp::Prelu, span, false, Other::Row(alphas), NO_CLAMP)?;
            }
            Ok(())
        })
    }
}

/// The int8 ADD on finished rows of the convolution's output.
struct AddResidualInt8<'a> {
    /// The residual, laid out as the output: `channels` values per GEMM row.
    residual: &'a [i8],
    channels: usize,
    residual_first: bool,
    add: &'a QBinaryParams,
}

impl Epilogue<i8> for AddResidualInt8<'_> {
    fn apply(&self, rows: Range<usize>, cols: Range<usize>, out: &mut [i8]) -> Result<()> {
        for_each_span(rows, cols, self.channels, out, |first, cols, span| {
            let residual = residual_span(self.residual, self.channels, first, cols, span.len())?;
            // The convolution's output is the ADD's second operand when the residual is its first.
            qs8_vbinary::apply_in_place(
                table(),
                self.add,
                span,
                self.residual_first,
                qs8_vbinary::Other::Vector(residual),
            )
        })
    }
}

/// Calls `f` on spans of `out` (rows `rows`, columns `cols` of a `channels`-wide output,
/// back to back) whose residual is one span: all of `out` when its rows are whole, else
/// row by row. `f` gets the span's first row, its columns and the span.
fn for_each_span<T, F>(rows: Range<usize>, cols: Range<usize>, channels: usize, out: &mut [T], mut f: F) -> Result<()>
where
    F: FnMut(usize, Range<usize>, &mut [T]) -> Result<()>,
{
    if cols.len() == channels {
        return f(rows.start, cols, out);
    }
    for (r, row) in rows.zip(out.chunks_exact_mut(cols.len().max(1))) {
        f(r, cols.clone(), row)?;
    }
    Ok(())
}

/// The residual's span for `len` outputs from row `first`, column `cols.start`.
fn residual_span<T>(residual: &[T], channels: usize, first: usize, cols: Range<usize>, len: usize) -> Result<&[T]> {
    first
        .checked_mul(channels)
        .and_then(|v| v.checked_add(cols.start))
        .and_then(|s| residual.get(s..s.checked_add(len)?))
        .ok_or_else(|| Error::new(format!("{OP}: rows from {first} lie outside the residual")))
}
