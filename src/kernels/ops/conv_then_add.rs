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
//! microkernels with the same packed weights, and the epilogue runs the ADD's (and
//! PRELU's) own elementwise microkernels on them, with the operands in the ADD's order and
//! the ADD's clamp. Float32, an ungrouped convolution with float32 weights, and a residual
//! of the convolution output's shape.

use super::conv_2d;
use super::conv_common::{ConvGeom, PackSlot};
use super::conv_f32_gemm;
use crate::abi::builtin_op_data::{TfLiteConvParams, TfLiteFusedActivation};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::activation::activation_range_f32;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel, BuiltinParams};
use crate::kernels::threadpool::recommended_threads;
use crate::microkernels::f32_gemm::{Epilogue, PackedGemm};
use crate::microkernels::f32_vbinary::{self, BinaryOp, NO_CLAMP, Other};
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
    /// The ADD's fused activation.
    pub add_activation: TfLiteFusedActivation,
    /// Whether the residual is the ADD's first operand (the convolution's output then is
    /// its second).
    pub residual_first: bool,
}

// SAFETY: the only nodes whose kernel is `ConvThenAdd` are the ones the fusion builds,
// and it points their `builtin_data` at this struct.
unsafe impl BuiltinParams for ConvThenAddParams {}

/// The registration the fusion gives the pair's ADD node. Inputs: the convolution's
/// input, filter and bias (`-1`: none), the residual, and (for an ADD with a fused PRELU)
/// the PRELU's per-channel alphas; output: the ADD's output.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<ConvThenAdd>(TfLiteBuiltinOperator::kTfLiteBuiltinAdd)
}

struct ConvThenAdd;

struct State {
    geom: ConvGeom,
    conv_act: (f32, f32),
    add_clamp: (f32, f32),
    packed: PackSlot<PackedGemm>,
    out_shape: [i32; 4],
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

fn pack(g: &ConvGeom, filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> Result<PackedGemm> {
    conv_f32_gemm::pack_weights(g, filter, bias)
}

impl BuiltinKernel for ConvThenAdd {
    const NAME: &'static str = OP;
    type Params = ConvThenAddParams;
    type State = State;

    fn prepare(ctx: &OpCtx<'_>, p: &ConvThenAddParams) -> Result<State> {
        let (input, filter, bias, residual, alphas) = operands(ctx)?;
        let output = ctx.output(0)?;
        let (geom, kind) = conv_2d::plan(&p.conv, &input, &filter, bias.as_ref(), &output)?;
        let conv_act = match kind {
            conv_2d::Kind::F32 { act } if geom.f_c == geom.in_c && filter.dtype == TfLiteType::kTfLiteFloat32 => act,
            _ => return Err(Error::new(format!("{OP}: only an ungrouped float32 convolution fuses"))),
        };
        let out_shape = geom.output_shape(OP)?;
        if residual.dtype != TfLiteType::kTfLiteFloat32 || residual.shape != out_shape {
            return Err(Error::new(format!(
                "{OP}: the residual is {} {:?}, the convolution's output float32 {out_shape:?}",
                residual.dtype.name(),
                residual.shape
            )));
        }
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
        let packed = PackSlot::prepare(&filter, bias.as_ref(), || pack(&geom, &filter, bias.as_ref()))?;
        ctx.resize_output(0, &out_shape)?;
        Ok(State { geom, conv_act, add_clamp: activation_range_f32(p.add_activation), packed, out_shape })
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
        let alphas = alphas.as_ref().map(|a| a.data::<f32>()).transpose()?;
        let residual = residual.data::<f32>()?;
        let out = out.data_mut::<f32>()?;
        let channels = st.geom.out_c;
        if residual.len() != out.len() || alphas.is_some_and(|a| a.len() != channels) {
            return Err(Error::new(format!("{OP}: residual or alphas do not match the output")));
        }
        if out.is_empty() {
            return Ok(());
        }
        let mut fresh = None;
        let packed = st.packed.get(&filter, bias.as_ref(), &mut fresh, || pack(&st.geom, &filter, bias.as_ref()))?;
        let epilogue =
            AddResidual { residual, channels, residual_first: p.residual_first, clamp: st.add_clamp, alphas };
        let threads = recommended_threads(ctx);
        conv_f32_gemm::compute_then(
            table(),
            &st.geom,
            input.data::<f32>()?,
            packed,
            out,
            st.conv_act,
            threads,
            Some(&epilogue),
        )
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

impl AddResidual<'_> {
    /// Adds the residual to `out`, rows of `cols` from GEMM row `first` (rows whole when
    /// `cols` is every channel), then applies the PRELU.
    fn add(&self, first: usize, cols: Range<usize>, out: &mut [f32]) -> Result<()> {
        let t = table();
        let n = self.channels;
        // `out` is whole rows, or part of one row: the residual's span lies at the same place.
        let residual = first
            .checked_mul(n)
            .and_then(|v| v.checked_add(cols.start))
            .and_then(|s| self.residual.get(s..s.checked_add(out.len())?))
            .ok_or_else(|| Error::new(format!("{OP}: rows from {first} lie outside the residual")))?;
        // The convolution's output is the ADD's second operand when the residual is its first.
        f32_vbinary::apply_in_place(t, BinaryOp::Add, out, self.residual_first, Other::Vector(residual), self.clamp)?;
        if let Some(alphas) = self.alphas {
            let alphas = alphas.get(cols.clone()).ok_or_else(|| Error::new(format!("{OP}: columns {cols:?}")))?;
            f32_vbinary::apply_in_place(t, BinaryOp::Prelu, out, false, Other::Row(alphas), NO_CLAMP)?;
        }
        Ok(())
    }
}

impl Epilogue for AddResidual<'_> {
    fn apply(&self, rows: Range<usize>, cols: Range<usize>, out: &mut [f32]) -> Result<()> {
        if cols.len() == self.channels {
            return self.add(rows.start, cols, out);
        }
        // A block of columns: the residual's rows are `channels` apart, the block's are not.
        for (r, row) in rows.zip(out.chunks_exact_mut(cols.len().max(1))) {
            self.add(r, cols.clone(), row)?;
        }
        Ok(())
    }
}
