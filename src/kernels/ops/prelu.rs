//! LEAKY_RELU and PRELU (TFLite `kernels/activations.cc`, `reference/leaky_relu.h`,
//! `reference/prelu.h`).
//!
//! LEAKY_RELU: float32 `x > 0 ? x : alpha * x`; uint8 / int8 / int16 (zero points 0)
//! requantize the two branches with `QuantizeMultiplier(s_in / s_out)` and
//! `QuantizeMultiplier(s_in * alpha / s_out)` (scale arithmetic in `f32`). PRELU: the
//! same with a broadcast `alpha` tensor (its broadcast with the input must be the input's
//! shape; at most 4 dimensions when shapes differ, as TFLite's reference kernel); float32,
//! uint8 and int8.

use crate::abi::builtin_op_data::TfLiteLeakyReluParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, QuantParams, TensorView, broadcast_shape};
use crate::kernels::binary::binary_f32;
use crate::kernels::broadcast::broadcast_binary;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{QuantInt, multiply_by_quantized_multiplier, try_quantize_multiplier};
use crate::kernels::shape_util::{check_arity, check_out_shape, in_op, op_error, unary_operands};
use crate::kernels::threadpool::elementwise::split_unary_f32;
use crate::kernels::threadpool::recommended_threads;
use crate::microkernels::f32_vbinary::{BinaryOp, NO_CLAMP};
use crate::microkernels::f32_vunary::{self, UnaryOp};
use crate::microkernels::table;

const LEAKY: &str = "LEAKY_RELU";
const PRELU: &str = "PRELU";

/// The LEAKY_RELU registration.
pub fn leaky_relu_registration() -> TfLiteRegistration {
    kernel::registration::<LeakyRelu>(TfLiteBuiltinOperator::kTfLiteBuiltinLeakyRelu)
}

/// The PRELU registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Prelu>(TfLiteBuiltinOperator::kTfLiteBuiltinPrelu)
}

// ---------------------------------------------------------------------------------------
// LEAKY_RELU
// ---------------------------------------------------------------------------------------

/// Quantized LEAKY_RELU parameters (`LeakyReluParams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeakyParams {
    pub input_offset: i32,
    pub output_offset: i32,
    pub multiplier_alpha: i32,
    pub shift_alpha: i32,
    pub multiplier_identity: i32,
    pub shift_identity: i32,
}

impl LeakyParams {
    /// As LeakyReluPrepare computes them.
    pub fn new(input: QuantParams, output: QuantParams, alpha: f32) -> Result<LeakyParams> {
        let (multiplier_alpha, shift_alpha) = try_quantize_multiplier(f64::from(input.scale * alpha / output.scale))?;
        let (multiplier_identity, shift_identity) = try_quantize_multiplier(f64::from(input.scale / output.scale))?;
        Ok(LeakyParams {
            input_offset: input.zero_point,
            output_offset: output.zero_point,
            multiplier_alpha,
            shift_alpha,
            multiplier_identity,
            shift_identity,
        })
    }

    /// `reference_ops::QuantizeLeakyRelu` for one value.
    pub fn apply(&self, x: i32, min: i32, max: i32) -> i32 {
        let v = x.wrapping_sub(self.input_offset);
        let (m, s) = if v >= 0 {
            (self.multiplier_identity, self.shift_identity)
        } else {
            (self.multiplier_alpha, self.shift_alpha)
        };
        self.output_offset.wrapping_add(multiply_by_quantized_multiplier(v, m, s)).clamp(min, max)
    }
}

fn leaky_quantized<T: QuantInt>(input: &[T], p: &LeakyParams, out: &mut [T]) -> Result<()> {
    if input.len() != out.len() {
        crate::bail!("input holds {} elements, output {}", input.len(), out.len());
    }
    for (o, &x) in out.iter_mut().zip(input) {
        *o = T::from_i32(p.apply(x.to_i32(), T::MIN, T::MAX));
    }
    Ok(())
}

fn leaky_params(input: &TensorView<'_>, out: &TensorView<'_>, a: f32) -> Result<Option<LeakyParams>> {
    use TfLiteType::*;
    match input.dtype {
        kTfLiteFloat32 => Ok(None),
        kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16 => {
            if input.dtype == kTfLiteInt16 && (input.quant().zero_point != 0 || out.quant().zero_point != 0) {
                return Err(op_error(LEAKY, "int16 zero points must be 0"));
            }
            Ok(Some(LeakyParams::new(input.quant(), out.quant(), a).map_err(in_op(LEAKY))?))
        }
        other => Err(op_error(LEAKY, format!("type {} is not supported", other.name()))),
    }
}

/// LEAKY_RELU; its State is the quantized branch multipliers (`None` for float32).
struct LeakyRelu;

impl BuiltinKernel for LeakyRelu {
    const NAME: &'static str = LEAKY;
    type Params = TfLiteLeakyReluParams;
    type State = Option<LeakyParams>;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteLeakyReluParams) -> Result<Option<LeakyParams>> {
        let (input, out) = unary_operands(ctx, LEAKY)?;
        let q = leaky_params(&input, &out, p.alpha)?;
        ctx.resize_output(0, input.shape).map_err(in_op(LEAKY))?;
        Ok(q)
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteLeakyReluParams, q: &mut Option<LeakyParams>) -> Result<()> {
        let (input, mut out) = unary_operands(ctx, LEAKY)?;
        check_out_shape(LEAKY, out.shape, input.shape)?;
        let a = p.alpha;
        match q {
            None => split_unary_f32(recommended_threads(ctx), input.data()?, out.data_mut()?, &|x, o| {
                f32_vunary::apply(table(), UnaryOp::LeakyRelu { alpha: a }, x, o)
            }),
            Some(q) => match input.dtype {
                TfLiteType::kTfLiteUInt8 => leaky_quantized::<u8>(input.data()?, q, out.data_mut()?),
                TfLiteType::kTfLiteInt8 => leaky_quantized::<i8>(input.data()?, q, out.data_mut()?),
                _ => leaky_quantized::<i16>(input.data()?, q, out.data_mut()?),
            },
        }
        .map_err(in_op(LEAKY))
    }
}

// ---------------------------------------------------------------------------------------
// PRELU
// ---------------------------------------------------------------------------------------

/// Quantized PRELU parameters (`PreluParams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreluParams {
    pub input_offset: i32,
    pub alpha_offset: i32,
    pub output_offset: i32,
    pub multiplier_1: i32,
    pub shift_1: i32,
    pub multiplier_2: i32,
    pub shift_2: i32,
}

impl PreluParams {
    /// As PreluPrepare computes them.
    pub fn new(input: QuantParams, alpha: QuantParams, output: QuantParams) -> Result<PreluParams> {
        let (multiplier_1, shift_1) = try_quantize_multiplier(f64::from(input.scale / output.scale))?;
        let (multiplier_2, shift_2) = try_quantize_multiplier(f64::from(input.scale * alpha.scale / output.scale))?;
        Ok(PreluParams {
            input_offset: input.zero_point.wrapping_neg(),
            alpha_offset: alpha.zero_point.wrapping_neg(),
            output_offset: output.zero_point,
            multiplier_1,
            shift_1,
            multiplier_2,
            shift_2,
        })
    }

    /// One quantized PRELU value.
    pub fn apply(&self, x: i32, a: i32, min: i32, max: i32) -> i32 {
        let v = self.input_offset.wrapping_add(x);
        let r = if v >= 0 {
            multiply_by_quantized_multiplier(v, self.multiplier_1, self.shift_1)
        } else {
            let av = self.alpha_offset.wrapping_add(a);
            multiply_by_quantized_multiplier(v.wrapping_mul(av), self.multiplier_2, self.shift_2)
        };
        r.wrapping_add(self.output_offset).clamp(min, max)
    }
}

fn prelu_operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>, Vec<i32>)> {
    check_arity(ctx, PRELU, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(PRELU))?;
    let alpha = ctx.input(1).map_err(in_op(PRELU))?;
    if alpha.dtype != input.dtype {
        return Err(op_error(PRELU, "alpha must have the input's type"));
    }
    use TfLiteType::*;
    if !matches!(input.dtype, kTfLiteFloat32 | kTfLiteUInt8 | kTfLiteInt8) {
        return Err(op_error(PRELU, format!("type {} is not supported", input.dtype.name())));
    }
    let shape = broadcast_shape(input.shape, alpha.shape).map_err(in_op(PRELU))?;
    if shape != input.shape {
        return Err(op_error(
            PRELU,
            format!("alpha {:?} broadcasts the input {:?} to {shape:?}", alpha.shape, input.shape),
        ));
    }
    if input.shape != alpha.shape && shape.len() > 4 {
        return Err(op_error(PRELU, "broadcasting supports at most 4 dimensions"));
    }
    Ok((input, alpha, shape))
}

/// What PRELU's Prepare derives.
struct PreluState {
    /// The output shape (the input's, checked to be the broadcast of input and alpha).
    shape: Vec<i32>,
    /// The quantized multipliers and offsets (`None` for float32).
    quant: Option<PreluParams>,
}

/// PRELU; its State is the [`PreluState`]: output shape and quantized parameters.
struct Prelu;

impl BuiltinKernel for Prelu {
    const NAME: &'static str = PRELU;
    type Params = ();
    type State = PreluState;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<PreluState> {
        let (input, alpha, shape) = prelu_operands(ctx)?;
        ctx.set_output_type(0, input.dtype).map_err(in_op(PRELU))?;
        let quant = if input.dtype != TfLiteType::kTfLiteFloat32 {
            let out = ctx.output(0)?;
            Some(PreluParams::new(input.quant(), alpha.quant(), out.quant()).map_err(in_op(PRELU))?)
        } else {
            None
        };
        ctx.resize_output(0, &shape).map_err(in_op(PRELU))?;
        Ok(PreluState { shape, quant })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), state: &mut PreluState) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(PRELU))?;
        let alpha = ctx.input(1).map_err(in_op(PRELU))?;
        let mut out = ctx.output(0).map_err(in_op(PRELU))?;
        let shape = &state.shape;
        check_out_shape(PRELU, out.shape, shape)?;
        let (ish, ash) = (input.shape, alpha.shape);
        match (input.dtype, &state.quant) {
            (TfLiteType::kTfLiteFloat32, _) => binary_f32(
                BinaryOp::Prelu,
                input.data::<f32>()?,
                ish,
                alpha.data::<f32>()?,
                ash,
                out.data_mut::<f32>()?,
                shape,
                NO_CLAMP,
                recommended_threads(ctx),
            ),
            (TfLiteType::kTfLiteUInt8, Some(p)) => broadcast_binary(
                input.data::<u8>()?,
                ish,
                alpha.data::<u8>()?,
                ash,
                out.data_mut::<u8>()?,
                shape,
                |x, a| p.apply(i32::from(x), i32::from(a), 0, 255) as u8,
            ),
            (TfLiteType::kTfLiteInt8, Some(p)) => broadcast_binary(
                input.data::<i8>()?,
                ish,
                alpha.data::<i8>()?,
                ash,
                out.data_mut::<i8>()?,
                shape,
                |x, a| p.apply(i32::from(x), i32::from(a), -128, 127) as i8,
            ),
            (other, _) => Err(op_error(PRELU, format!("type {} is not supported", other.name()))),
        }
        .map_err(in_op(PRELU))
    }
}
