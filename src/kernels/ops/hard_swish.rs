//! HARD_SWISH (TFLite `kernels/activations.cc` `HardSwishPrepare` / `HardSwishEval`,
//! `reference/hard_swish.h`): `x * relu6(x + 3) / 6`.
//!
//! float32 on the vector microkernels (a multiply by 1/6 where the reference loop
//! divides by 6: equal within rounding); uint8 / int8 with TFLite's 16-bit fixed-point pipeline
//! (input on a "hires" scale of `input_scale / 128`, the ReLU-ish factor on a
//! `3 / 32768` scale, int16 multipliers from `DownScaleInt32ToInt16Multiplier`), bit-exact.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, QuantParams};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{QuantInt, rounding_divide_by_pot_i16, try_quantize_multiplier};
use crate::kernels::shape_util::{check_out_shape, in_op, op_error, unary_operands};
use crate::kernels::threadpool::elementwise::split_unary_f32;
use crate::kernels::threadpool::recommended_threads;
use crate::microkernels::f32_vunary::{self, UnaryOp};
use crate::microkernels::table;

const OP: &str = "HARD_SWISH";

/// The HARD_SWISH registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<HardSwish>(TfLiteBuiltinOperator::kTfLiteBuiltinHardSwish)
}

/// Float hard swish as the reference loop computes it (C++ `std::min`/`std::max`).
pub fn hard_swish_f32(x: f32) -> f32 {
    let r = x + 3.0;
    let r = if 0.0 < r { r } else { 0.0 };
    let r = if r < 6.0 { r } else { 6.0 };
    x * r / 6.0
}

/// TFLite's `HardSwishParams`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HardSwishParams {
    pub input_zero_point: i16,
    pub output_zero_point: i16,
    pub reluish_multiplier_fixedpoint_int16: i16,
    pub reluish_multiplier_exponent: i32,
    pub output_multiplier_fixedpoint_int16: i16,
    pub output_multiplier_exponent: i32,
}

/// `DownScaleInt32ToInt16Multiplier`.
fn downscale(m: i32) -> i16 {
    const ROUNDING: i32 = 1 << 15;
    if m >= i32::MAX - ROUNDING {
        return i16::MAX;
    }
    ((m.max(0) + ROUNDING) >> 16) as i16
}

impl HardSwishParams {
    /// As HardSwishPrepare computes them (the scale arithmetic in `f32`).
    pub fn new(input: QuantParams, output: QuantParams) -> Result<HardSwishParams> {
        let hires_input_scale = (1.0f32 / 128.0) * input.scale;
        let reluish_scale = 3.0f32 / 32768.0;
        let output_multiplier = hires_input_scale / output.scale;
        let (om, oe) = try_quantize_multiplier(f64::from(output_multiplier))?;
        if oe > 0 {
            crate::bail!("output multiplier {output_multiplier} is too large (exponent {oe})");
        }
        let reluish_multiplier = hires_input_scale / reluish_scale;
        let (rm, re) = try_quantize_multiplier(f64::from(reluish_multiplier))?;
        Ok(HardSwishParams {
            input_zero_point: input.zero_point as i16,
            output_zero_point: output.zero_point as i16,
            reluish_multiplier_fixedpoint_int16: downscale(rm),
            reluish_multiplier_exponent: re,
            output_multiplier_fixedpoint_int16: downscale(om),
            output_multiplier_exponent: oe,
        })
    }
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul` for `int16`.
fn srdhm16(a: i16, b: i16) -> i16 {
    if a == b && a == i16::MIN {
        return i16::MAX;
    }
    let ab = i32::from(a) * i32::from(b);
    let nudge = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    ((ab + nudge) / (1 << 15)) as i16
}

/// hard_swish.h's `SaturatingDoublingHighMul` (no rounding).
fn sdhm16(a: i16, b: i16) -> i16 {
    if a == b && a == i16::MIN {
        return i16::MAX;
    }
    ((i32::from(a) * i32::from(b)) / (1 << 15)) as i16
}

/// hard_swish.h's `SaturatingLeftShift`.
fn sat_left_shift16(v: i16, amount: i32) -> i16 {
    let r = i64::from(v) * (1i64 << amount.clamp(0, 40));
    r.clamp(i64::from(i16::MIN), i64::from(i16::MAX)) as i16
}

/// One quantized hard swish (the reference kernel's int16 pipeline).
pub fn hard_swish_quantized_one(x: i32, p: &HardSwishParams, min: i32, max: i32) -> i32 {
    let input_value = x.wrapping_sub(i32::from(p.input_zero_point)) as i16;
    let hires = i32::from(input_value).wrapping_mul(1 << 7) as i16;
    let preshift_out = srdhm16(hires, p.output_multiplier_fixedpoint_int16);
    let mut reluish = hires;
    if p.reluish_multiplier_exponent > 0 {
        reluish = sat_left_shift16(reluish, p.reluish_multiplier_exponent - 1);
    }
    reluish = srdhm16(reluish, p.reluish_multiplier_fixedpoint_int16);
    if p.reluish_multiplier_exponent > 0 {
        reluish = sat_left_shift16(reluish, 1);
    }
    if p.reluish_multiplier_exponent < 0 {
        reluish = rounding_divide_by_pot_i16(reluish, -p.reluish_multiplier_exponent);
    }
    reluish = ((i32::from(reluish) + (1 << 15)) >> 1) as i16;
    let preshift_output_value = sdhm16(reluish, preshift_out);
    let mut out = rounding_divide_by_pot_i16(preshift_output_value, -p.output_multiplier_exponent);
    out = (i32::from(out) + i32::from(p.output_zero_point)) as i16;
    i32::from(out).min(max).max(min)
}

/// Quantized hard swish on uint8 / int8 slices.
pub fn hard_swish_quantized<T: QuantInt>(input: &[T], p: &HardSwishParams, out: &mut [T]) -> Result<()> {
    if input.len() != out.len() {
        crate::bail!("input holds {} elements, output {}", input.len(), out.len());
    }
    for (o, &x) in out.iter_mut().zip(input) {
        *o = T::from_i32(hard_swish_quantized_one(x.to_i32(), p, T::MIN, T::MAX));
    }
    Ok(())
}

fn params_for(input: QuantParams, output: QuantParams) -> Result<HardSwishParams> {
    HardSwishParams::new(input, output).map_err(in_op(OP))
}

/// HARD_SWISH; its State is the quantized fixed-point parameters (`None` for float32).
struct HardSwish;

impl BuiltinKernel for HardSwish {
    const NAME: &'static str = OP;
    type Params = ();
    type State = Option<HardSwishParams>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<HardSwishParams>> {
        let (input, out) = unary_operands(ctx, OP)?;
        let p = match input.dtype {
            TfLiteType::kTfLiteFloat32 => None,
            TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 => Some(params_for(input.quant(), out.quant())?),
            other => return Err(op_error(OP, format!("type {} is not supported", other.name()))),
        };
        ctx.resize_output(0, input.shape).map_err(in_op(OP))?;
        Ok(p)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), p: &mut Option<HardSwishParams>) -> Result<()> {
        let (input, mut out) = unary_operands(ctx, OP)?;
        check_out_shape(OP, out.shape, input.shape)?;
        match (input.dtype, p) {
            (TfLiteType::kTfLiteFloat32, _) => {
                split_unary_f32(recommended_threads(ctx), input.data()?, out.data_mut()?, &|x, o| {
                    f32_vunary::apply(table(), UnaryOp::HardSwish, x, o)
                })
            }
            (TfLiteType::kTfLiteUInt8, Some(p)) => hard_swish_quantized::<u8>(input.data()?, p, out.data_mut()?),
            (TfLiteType::kTfLiteInt8, Some(p)) => hard_swish_quantized::<i8>(input.data()?, p, out.data_mut()?),
            (other, _) => Err(op_error(OP, format!("type {} is not supported", other.name()))),
        }
        .map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};

    #[test]
    fn float() {
        assert_eq!(hard_swish_f32(-4.0), -0.0);
        assert_eq!(hard_swish_f32(4.0), 4.0);
        assert_eq!(hard_swish_f32(0.0), 0.0);
        assert!((hard_swish_f32(1.0) - 4.0 / 6.0).abs() < 1e-7);
    }

    #[test]
    fn int8_close_to_float() {
        let (qi, qo) = (qp(0.05, -10), qp(0.04, -100));
        let p = HardSwishParams::new(qi, qo).unwrap();
        for x in -128i32..=127 {
            let got = hard_swish_quantized_one(x, &p, -128, 127);
            let xf = (x - qi.zero_point) as f32 * qi.scale;
            let want = (hard_swish_f32(xf) / qo.scale).round() as i32 + qo.zero_point;
            assert!((got - want.clamp(-128, 127)).abs() <= 1, "{x}: {got} vs {want}");
        }
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(TfLiteType::kTfLiteFloat32, &[2], &[-1.0f32, 1.0], None, false);
        let o = g.output(TfLiteType::kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[x], &[o], None), TfLiteStatus::kTfLiteOk);
        let q = g.tensor(TfLiteType::kTfLiteInt16, &[1], &[1i16], Some(qp(0.1, 0)), false);
        let qo = g.output(TfLiteType::kTfLiteInt16, Some(qp(0.1, 0)));
        assert_eq!(g.run::<()>(&registration(), &[q], &[qo], None), TfLiteStatus::kTfLiteError);
    }
}
