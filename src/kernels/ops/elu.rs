//! ELU, GELU and RELU_0_TO_1 (TFLite `kernels/activations.cc`, `reference/elu.h`,
//! `reference/gelu.h`, `reference/reference_ops.h` `Relu0To1`).
//!
//! ELU: float32 `x < 0 ? expm1(x) : x`, int8 through a `LUTPopulate` table. GELU (exact
//! `0.5 x erfc(-x / sqrt 2)` or the tanh approximation, per `approximate`): float32
//! elementwise, uint8 / int8 through tables of TFLite's `GeluTransform*`. RELU_0_TO_1:
//! float32 clamp to [0, 1]; uint8 / int8 requantize as RELU does (`QuantizedReluX(0, 1)`).

use crate::abi::builtin_op_data::TfLiteGeluParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, QuantParams};
use crate::kernels::fixed_point::lut_populate_8bit;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{QuantInt, multiply_by_quantized_multiplier, try_quantize_multiplier};
use crate::kernels::shape_util::{check_out_shape, in_op, op_error, unary_operands};

const ELU: &str = "ELU";
const GELU: &str = "GELU";
const RELU_0_TO_1: &str = "RELU_0_TO_1";

unsafe extern "C" {
    /// The C library's `erfcf` (`std::erfc(float)`), which Rust's standard library lacks.
    safe fn erfcf(x: f32) -> f32;
}

/// The ELU registration.
pub fn elu_registration() -> TfLiteRegistration {
    kernel::registration::<Elu>(TfLiteBuiltinOperator::kTfLiteBuiltinElu)
}

/// The GELU registration.
pub fn gelu_registration() -> TfLiteRegistration {
    kernel::registration::<Gelu>(TfLiteBuiltinOperator::kTfLiteBuiltinGelu)
}

/// The RELU_0_TO_1 registration.
pub fn relu_0_to_1_registration() -> TfLiteRegistration {
    kernel::registration::<Relu0To1>(TfLiteBuiltinOperator::kTfLiteBuiltinRelu0To1)
}

/// ELU on one float.
pub fn elu_f32(x: f32) -> f32 {
    if x < 0.0 { x.exp_m1() } else { x }
}

/// `sqrt(2 / pi)` as TFLite's `kSqrt2dPi` (`M_2_SQRTPI * M_SQRT1_2` in double, to float).
const SQRT_2_OVER_PI: f32 = (core::f64::consts::FRAC_2_SQRT_PI * core::f64::consts::FRAC_1_SQRT_2) as f32;

/// TFLite's `GeluTransform`: `0.5 x erfc(-x / sqrt(2))`.
pub fn gelu_exact(x: f32) -> f32 {
    0.5 * x * erfcf(x * (-core::f64::consts::FRAC_1_SQRT_2) as f32)
}

/// TFLite's `GeluTransformApproximate`.
pub fn gelu_approximate(x: f32) -> f32 {
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh())
}

// ---------------------------------------------------------------------------------------
// ELU
// ---------------------------------------------------------------------------------------

/// ELU; its State is int8's lookup table (`None` for float32).
struct Elu;

impl BuiltinKernel for Elu {
    const NAME: &'static str = ELU;
    type Params = ();
    type State = Option<Box<[u8; 256]>>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<Box<[u8; 256]>>> {
        let (input, out) = unary_operands(ctx, ELU)?;
        let lut = match input.dtype {
            TfLiteType::kTfLiteFloat32 => None,
            TfLiteType::kTfLiteInt8 => {
                let (qi, qo) = (input.quant(), out.quant());
                Some(Box::new(lut_populate_8bit(true, qi.scale, qi.zero_point, qo.scale, qo.zero_point, elu_f32)))
            }
            other => return Err(op_error(ELU, format!("type {} is not supported", other.name()))),
        };
        ctx.resize_output(0, input.shape).map_err(in_op(ELU))?;
        Ok(lut)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), lut: &mut Option<Box<[u8; 256]>>) -> Result<()> {
        let (input, mut out) = unary_operands(ctx, ELU)?;
        check_out_shape(ELU, out.shape, input.shape)?;
        match (input.dtype, lut) {
            (TfLiteType::kTfLiteFloat32, _) => {
                for (o, &x) in out.data_mut::<f32>()?.iter_mut().zip(input.data::<f32>()?) {
                    *o = elu_f32(x);
                }
            }
            (TfLiteType::kTfLiteInt8, Some(lut)) => {
                for (o, &x) in out.data_mut::<i8>()?.iter_mut().zip(input.data::<i8>()?) {
                    *o = lut[x as u8 as usize] as i8;
                }
            }
            (other, _) => return Err(op_error(ELU, format!("type {} is not supported", other.name()))),
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// GELU
// ---------------------------------------------------------------------------------------

/// How a GELU node computes, chosen at Prepare.
enum GeluPlan {
    /// float32: the exact or approximate function.
    F32(fn(f32) -> f32),
    /// int8 / uint8: the function's lookup table.
    Lut(Box<[u8; 256]>),
}

/// GELU (options optional: exact without them); its State is the [`GeluPlan`]: the
/// function for float32, the lookup table for 8-bit types.
struct Gelu;

impl BuiltinKernel for Gelu {
    const NAME: &'static str = GELU;
    type Params = Option<TfLiteGeluParams>;
    type State = GeluPlan;

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteGeluParams>) -> Result<GeluPlan> {
        let (input, out) = unary_operands(ctx, GELU)?;
        let f: fn(f32) -> f32 = if p.is_some_and(|p| p.approximate) { gelu_approximate } else { gelu_exact };
        let (qi, qo) = (input.quant(), out.quant());
        use TfLiteType::*;
        let plan = match input.dtype {
            kTfLiteFloat32 => GeluPlan::F32(f),
            kTfLiteInt8 => {
                GeluPlan::Lut(Box::new(lut_populate_8bit(true, qi.scale, qi.zero_point, qo.scale, qo.zero_point, f)))
            }
            kTfLiteUInt8 => {
                GeluPlan::Lut(Box::new(lut_populate_8bit(false, qi.scale, qi.zero_point, qo.scale, qo.zero_point, f)))
            }
            other => return Err(op_error(GELU, format!("type {} is not supported", other.name()))),
        };
        ctx.resize_output(0, input.shape).map_err(in_op(GELU))?;
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &Option<TfLiteGeluParams>, plan: &mut GeluPlan) -> Result<()> {
        let (input, mut out) = unary_operands(ctx, GELU)?;
        check_out_shape(GELU, out.shape, input.shape)?;
        match (input.dtype, plan) {
            (TfLiteType::kTfLiteFloat32, GeluPlan::F32(f)) => {
                for (o, &x) in out.data_mut::<f32>()?.iter_mut().zip(input.data::<f32>()?) {
                    *o = f(x);
                }
            }
            (TfLiteType::kTfLiteInt8, GeluPlan::Lut(lut)) => {
                for (o, &x) in out.data_mut::<i8>()?.iter_mut().zip(input.data::<i8>()?) {
                    *o = lut[x as u8 as usize] as i8;
                }
            }
            (TfLiteType::kTfLiteUInt8, GeluPlan::Lut(lut)) => {
                for (o, &x) in out.data_mut::<u8>()?.iter_mut().zip(input.data::<u8>()?) {
                    *o = lut[x as usize];
                }
            }
            (other, _) => return Err(op_error(GELU, format!("type {} is not supported", other.name()))),
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// RELU_0_TO_1
// ---------------------------------------------------------------------------------------

/// Quantized RELU_0_TO_1 parameters (`ReluParams` from `ReluPrepare` + `QuantizedReluX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Relu01Params {
    pub input_offset: i32,
    pub output_offset: i32,
    pub multiplier: i32,
    pub shift: i32,
    pub act_min: i32,
    pub act_max: i32,
}

impl Relu01Params {
    /// The parameters for an output of range `[tmin, tmax]`.
    pub fn new(input: QuantParams, output: QuantParams, tmin: i32, tmax: i32) -> Result<Relu01Params> {
        let (multiplier, shift) = try_quantize_multiplier(f64::from(input.scale / output.scale))?;
        let q = |f: f32| output.zero_point.wrapping_add((f / output.scale).round() as i32);
        Ok(Relu01Params {
            input_offset: input.zero_point,
            output_offset: output.zero_point,
            multiplier,
            shift,
            act_min: tmin.max(q(0.0)),
            act_max: tmax.min(q(1.0)),
        })
    }

    /// `reference_ops::ReluX` for one value.
    pub fn apply(&self, x: i32) -> i32 {
        let v = self.output_offset.wrapping_add(multiply_by_quantized_multiplier(
            x.wrapping_sub(self.input_offset),
            self.multiplier,
            self.shift,
        ));
        v.max(self.act_min).min(self.act_max)
    }
}

fn relu01_quantized<T: QuantInt>(input: &[T], p: &Relu01Params, out: &mut [T]) {
    for (o, &x) in out.iter_mut().zip(input) {
        *o = T::from_i32(p.apply(x.to_i32()));
    }
}

/// RELU_0_TO_1; its State is the quantized requantization and clamp parameters (`None`
/// for float32).
struct Relu0To1;

impl BuiltinKernel for Relu0To1 {
    const NAME: &'static str = RELU_0_TO_1;
    type Params = ();
    type State = Option<Relu01Params>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<Relu01Params>> {
        let (input, out) = unary_operands(ctx, RELU_0_TO_1)?;
        let (qi, qo) = (input.quant(), out.quant());
        let p = match input.dtype {
            TfLiteType::kTfLiteFloat32 => None,
            TfLiteType::kTfLiteUInt8 => Some(Relu01Params::new(qi, qo, 0, 255).map_err(in_op(RELU_0_TO_1))?),
            TfLiteType::kTfLiteInt8 => Some(Relu01Params::new(qi, qo, -128, 127).map_err(in_op(RELU_0_TO_1))?),
            other => return Err(op_error(RELU_0_TO_1, format!("type {} is not supported", other.name()))),
        };
        ctx.resize_output(0, input.shape).map_err(in_op(RELU_0_TO_1))?;
        Ok(p)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), p: &mut Option<Relu01Params>) -> Result<()> {
        let (input, mut out) = unary_operands(ctx, RELU_0_TO_1)?;
        check_out_shape(RELU_0_TO_1, out.shape, input.shape)?;
        if input.num_elements() != out.num_elements() {
            return Err(op_error(RELU_0_TO_1, "input and output sizes differ"));
        }
        match (input.dtype, p) {
            (TfLiteType::kTfLiteFloat32, _) => {
                for (o, &x) in out.data_mut::<f32>()?.iter_mut().zip(input.data::<f32>()?) {
                    // `x > 1 ? 1 : x < 0 ? 0 : x`; NaN passes through, as in TFLite.
                    *o = x.clamp(0.0, 1.0);
                }
            }
            (TfLiteType::kTfLiteUInt8, Some(p)) => relu01_quantized::<u8>(input.data()?, p, out.data_mut()?),
            (TfLiteType::kTfLiteInt8, Some(p)) => relu01_quantized::<i8>(input.data()?, p, out.data_mut()?),
            (other, _) => return Err(op_error(RELU_0_TO_1, format!("type {} is not supported", other.name()))),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn functions() {
        assert_eq!(elu_f32(2.0), 2.0);
        assert!((elu_f32(-1.0) - (-0.632_120_56)).abs() < 1e-6);
        assert!((gelu_exact(1.0) - 0.841_344_7).abs() < 1e-6);
        assert!((gelu_approximate(1.0) - 0.841_192).abs() < 1e-5);
        assert_eq!(gelu_exact(0.0), 0.0);
        assert!((SQRT_2_OVER_PI - 0.797_884_6).abs() < 1e-7);
    }

    #[test]
    fn relu01() {
        let p = Relu01Params::new(qp(0.01, 0), qp(1.0 / 255.0, -128), -128, 127).unwrap();
        assert_eq!(p.act_min, -128);
        assert_eq!(p.act_max, 127);
        assert_eq!(p.apply(-50), -128);
        assert_eq!(p.apply(120), 127);
        // 0.5 is 127.5 output steps, but the f32 scale ratio 0.01 / (1/255) is just below 2.55.
        assert_eq!(p.apply(50), -128 + 127);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt8, &[3], &[-100i8, 0, 100], Some(qp(0.05, 0)), false);
        let o = g.output(kTfLiteInt8, Some(qp(0.05, 0)));
        assert_eq!(g.run::<()>(&elu_registration(), &[x], &[o], None), TfLiteStatus::kTfLiteOk);
        let v = g.data::<i8>(o);
        assert_eq!(v[1..], [0, 100]);
        assert_eq!(v[0], ((-5.0f32).exp_m1() / 0.05).round() as i8);
        let o2 = g.output(kTfLiteInt8, Some(qp(0.05, 0)));
        assert_eq!(
            g.run(&gelu_registration(), &[x], &[o2], Some(TfLiteGeluParams { approximate: false })),
            TfLiteStatus::kTfLiteOk
        );
        assert_eq!(g.data::<i8>(o2)[2], 100);
        let f = g.tensor(kTfLiteFloat32, &[3], &[-1.0f32, 0.5, 2.0], None, false);
        let o3 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&relu_0_to_1_registration(), &[f], &[o3], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o3), vec![0.0, 0.5, 1.0]);
    }
}
