//! MAXIMUM, MINIMUM, DIV, SQUARED_DIFFERENCE and POW (TFLite
//! `kernels/maximum_minimum.cc`, `div.cc`, `reference/div.h`, `squared_difference.cc`,
//! `pow.cc`), with numpy broadcasting.
//!
//! MAXIMUM / MINIMUM compare raw values (TFLite does not rescale quantized inputs):
//! float32, uint8, int8, int16, int32, int64. DIV: float32 and int32 with the fused
//! activation (division by zero is an error where TFLite would trap), and uint8 with the
//! reference kernel's fixed-point reciprocal. SQUARED_DIFFERENCE: float32, int32, and int8
//! with TFLite's rescaling (7 bits of headroom). POW: float32 (`powf`) and int32 (through
//! `double`, as C++ `std::pow(int, int)`; negative exponents are an error, as in TFLite).

use crate::abi::builtin_op_data::{TfLiteDivParams, TfLiteFusedActivation};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType, kTfLiteInplaceOpInput0Shared, kTfLiteInplaceOpInput1Shared};
use crate::error::{Error, Result};
use crate::kernels::activation::{
    activation_range_f32, activation_range_i32, activation_range_quantized, clamp_min_max,
};
use crate::kernels::api::{OpCtx, QuantParams};
use crate::kernels::binary::{
    BinaryOperands, binary_f32, binary_operands, binary_operands_in_place, run_binary, run_binary_f32, with_op,
};
use crate::kernels::broadcast::broadcast_binary;
use crate::kernels::fixed_point::{get_reciprocal, multiply_smaller_than_one_exp_x86};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{
    multiply_by_quantized_multiplier_greater_than_one, multiply_by_quantized_multiplier_smaller_than_one_exp,
    quantize_multiplier_smaller_than_one_exp, try_quantize_multiplier,
};
use crate::kernels::shape_util::{check_out_shape, in_op, op_error};
use crate::microkernels::f32_vbinary::{BinaryOp, NO_CLAMP};

/// The ops of this file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arith {
    Maximum,
    Minimum,
    Div,
    SquaredDifference,
    Pow,
}

impl Arith {
    const fn name(self) -> &'static str {
        match self {
            Arith::Maximum => "MAXIMUM",
            Arith::Minimum => "MINIMUM",
            Arith::Div => "DIV",
            Arith::SquaredDifference => "SQUARED_DIFFERENCE",
            Arith::Pow => "POW",
        }
    }

    fn supports(self, t: TfLiteType) -> bool {
        use TfLiteType::*;
        match self {
            Arith::Maximum | Arith::Minimum => {
                matches!(t, kTfLiteFloat32 | kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16 | kTfLiteInt32 | kTfLiteInt64)
            }
            Arith::Div => matches!(t, kTfLiteFloat32 | kTfLiteInt32 | kTfLiteUInt8),
            Arith::SquaredDifference => matches!(t, kTfLiteFloat32 | kTfLiteInt32 | kTfLiteInt8),
            Arith::Pow => matches!(t, kTfLiteFloat32 | kTfLiteInt32),
        }
    }
}

/// The MAXIMUM registration.
pub fn maximum_registration() -> TfLiteRegistration {
    kernel::registration::<ArithKernel<MAXIMUM>>(TfLiteBuiltinOperator::kTfLiteBuiltinMaximum)
}

/// The MINIMUM registration.
pub fn minimum_registration() -> TfLiteRegistration {
    kernel::registration::<ArithKernel<MINIMUM>>(TfLiteBuiltinOperator::kTfLiteBuiltinMinimum)
}

/// The SQUARED_DIFFERENCE registration.
pub fn squared_difference_registration() -> TfLiteRegistration {
    kernel::registration::<ArithKernel<SQUARED_DIFFERENCE>>(TfLiteBuiltinOperator::kTfLiteBuiltinSquaredDifference)
}

/// The POW registration.
pub fn pow_registration() -> TfLiteRegistration {
    kernel::registration::<ArithKernel<POW>>(TfLiteBuiltinOperator::kTfLiteBuiltinPow)
}

/// The DIV registration: div.cc lets the output take either input's memory (LiteRT's
/// in-place DIV).
pub fn div_registration() -> TfLiteRegistration {
    TfLiteRegistration {
        inplace_operator: kTfLiteInplaceOpInput0Shared | kTfLiteInplaceOpInput1Shared,
        ..kernel::registration::<DivKernel>(TfLiteBuiltinOperator::kTfLiteBuiltinDiv)
    }
}

// ---------------------------------------------------------------------------------------
// Quantized maths
// ---------------------------------------------------------------------------------------

/// uint8 DIV parameters (`div.cc` Prepare).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DivParams {
    pub input1_offset: i32,
    pub input2_offset: i32,
    pub output_offset: i32,
    pub output_multiplier: i32,
    pub output_shift: i32,
    pub act_min: i32,
    pub act_max: i32,
}

impl DivParams {
    /// `QuantizeMultiplier(s1 / (s2 * s_out))` (in `f32`) and the activation range.
    pub fn new(in1: QuantParams, in2: QuantParams, out: QuantParams, act: TfLiteFusedActivation) -> Result<DivParams> {
        let (act_min, act_max) = activation_range_quantized(act, TfLiteType::kTfLiteUInt8, out.scale, out.zero_point)?;
        let (output_multiplier, output_shift) =
            try_quantize_multiplier(f64::from(in1.scale / (in2.scale * out.scale)))?;
        Ok(DivParams {
            input1_offset: in1.zero_point.wrapping_neg(),
            input2_offset: in2.zero_point.wrapping_neg(),
            output_offset: out.zero_point,
            output_multiplier,
            output_shift,
            act_min,
            act_max,
        })
    }

    /// One quotient (`DivElementwise`); `None` when the divisor's real value is zero.
    pub fn div(&self, x: i32, y: i32) -> Option<i32> {
        let mut a = self.input1_offset.wrapping_add(x);
        let mut b = self.input2_offset.wrapping_add(y);
        if b == 0 {
            return None;
        }
        if b < 0 {
            a = a.wrapping_neg();
            b = b.wrapping_neg();
        }
        let (inv, recip_shift) = get_reciprocal(b, 31);
        let headroom = if a >= 0 { a.leading_zeros() as i32 - 1 } else { (!a).leading_zeros() as i32 - 1 };
        let unscaled = multiply_by_quantized_multiplier_greater_than_one(a, inv, headroom);
        let total_shift = self.output_shift - recip_shift - headroom;
        let r = self.output_offset.wrapping_add(multiply_smaller_than_one_exp_x86(
            unscaled,
            self.output_multiplier,
            total_shift,
        ));
        Some(r.max(self.act_min).min(self.act_max))
    }
}

/// int8 SQUARED_DIFFERENCE parameters (`squared_difference.cc` Prepare).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqDiffParams {
    pub input1_offset: i32,
    pub input2_offset: i32,
    pub output_offset: i32,
    pub input1_multiplier: i32,
    pub input1_shift: i32,
    pub input2_multiplier: i32,
    pub input2_shift: i32,
    pub output_multiplier: i32,
    pub output_shift: i32,
}

const SQ_LEFT_SHIFT: i32 = 7;

impl SqDiffParams {
    /// As Prepare computes them (`2 * max(s1, s2)` in `f32`, the rest in `f64`).
    pub fn new(in1: QuantParams, in2: QuantParams, out: QuantParams) -> Result<SqDiffParams> {
        for zp in [in1.zero_point, in2.zero_point, out.zero_point] {
            if !(-128..=127).contains(&zp) {
                crate::bail!("zero point {zp} is outside the int8 range");
            }
        }
        let twice_max = f64::from(2.0f32 * crate::kernels::activation::cpp_max(in1.scale, in2.scale));
        let real1 = f64::from(in1.scale) / twice_max;
        let real2 = f64::from(in2.scale) / twice_max;
        let real_out = (twice_max * twice_max) / f64::from((1i32 << (SQ_LEFT_SHIFT * 2)) as f32 * out.scale);
        let (input1_multiplier, input1_shift) = quantize_multiplier_smaller_than_one_exp(real1)?;
        let (input2_multiplier, input2_shift) = quantize_multiplier_smaller_than_one_exp(real2)?;
        let (output_multiplier, output_shift) = quantize_multiplier_smaller_than_one_exp(real_out)?;
        Ok(SqDiffParams {
            input1_offset: -in1.zero_point,
            input2_offset: -in2.zero_point,
            output_offset: out.zero_point,
            input1_multiplier,
            input1_shift,
            input2_multiplier,
            input2_shift,
            output_multiplier,
            output_shift,
        })
    }

    /// One squared difference.
    pub fn apply(&self, x: i32, y: i32) -> i8 {
        let a = self.input1_offset.wrapping_add(x).wrapping_mul(1 << SQ_LEFT_SHIFT);
        let b = self.input2_offset.wrapping_add(y).wrapping_mul(1 << SQ_LEFT_SHIFT);
        let a = multiply_by_quantized_multiplier_smaller_than_one_exp(a, self.input1_multiplier, self.input1_shift);
        let b = multiply_by_quantized_multiplier_smaller_than_one_exp(b, self.input2_multiplier, self.input2_shift);
        let d = a.wrapping_sub(b);
        let r = multiply_by_quantized_multiplier_smaller_than_one_exp(
            d.wrapping_mul(d),
            self.output_multiplier,
            self.output_shift,
        )
        .wrapping_add(self.output_offset);
        r.clamp(-128, 127) as i8
    }
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

fn operands<'a>(ctx: &OpCtx<'a>, kind: Arith) -> Result<BinaryOperands<'a>> {
    let op = kind.name();
    let ops = if kind == Arith::Div { binary_operands_in_place(ctx, op)? } else { binary_operands(ctx, op)? };
    if !kind.supports(ops.a.dtype) {
        return Err(op_error(op, format!("type {} is not supported", ops.a.dtype.name())));
    }
    Ok(ops)
}

/// What Prepare derives for an op of this file: the clamp or quantized parameters of the
/// variants that have them.
enum Plan {
    /// Nothing derived (MAXIMUM, MINIMUM, POW, float32 / int32 SQUARED_DIFFERENCE).
    Plain,
    /// float32 DIV, clamped to the activation's range.
    DivF32((f32, f32)),
    /// int32 DIV, clamped to the activation's range.
    DivI32((i32, i32)),
    /// uint8 DIV.
    DivU8(DivParams),
    /// int8 SQUARED_DIFFERENCE.
    SqDiffI8(SqDiffParams),
}

fn prepare(ctx: &OpCtx<'_>, kind: Arith, act: TfLiteFusedActivation) -> Result<Plan> {
    let op = kind.name();
    let ops = operands(ctx, kind)?;
    ctx.set_output_type(0, ops.a.dtype).map_err(in_op(op))?;
    let out = ctx.output(0)?;
    let plan = match (kind, ops.a.dtype) {
        (Arith::Div, TfLiteType::kTfLiteFloat32) => Plan::DivF32(activation_range_f32(act)),
        (Arith::Div, TfLiteType::kTfLiteInt32) => Plan::DivI32(activation_range_i32(act)),
        (Arith::Div, _) => {
            Plan::DivU8(DivParams::new(ops.a.quant(), ops.b.quant(), out.quant(), act).map_err(in_op(op))?)
        }
        (Arith::SquaredDifference, TfLiteType::kTfLiteInt8) => {
            Plan::SqDiffI8(SqDiffParams::new(ops.a.quant(), ops.b.quant(), out.quant()).map_err(in_op(op))?)
        }
        _ => Plan::Plain,
    };
    ctx.resize_output(0, &ops.out_shape).map_err(in_op(op))?;
    Ok(plan)
}

const MAXIMUM: u8 = 0;
const MINIMUM: u8 = 1;
const SQUARED_DIFFERENCE: u8 = 2;
const POW: u8 = 3;

const fn arith_of(op: u8) -> Arith {
    match op {
        MAXIMUM => Arith::Maximum,
        MINIMUM => Arith::Minimum,
        SQUARED_DIFFERENCE => Arith::SquaredDifference,
        _ => Arith::Pow,
    }
}

/// MAXIMUM, MINIMUM, SQUARED_DIFFERENCE or POW (by `OP`); its State is the [`Plan`]
/// (int8 SQUARED_DIFFERENCE's rescaling parameters).
struct ArithKernel<const OP: u8>;

impl<const OP: u8> BuiltinKernel for ArithKernel<OP> {
    const NAME: &'static str = arith_of(OP).name();
    type Params = ();
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Plan> {
        prepare(ctx, arith_of(OP), TfLiteFusedActivation::kTfLiteActNone)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut Plan) -> Result<()> {
        eval(ctx, arith_of(OP), plan)
    }
}

/// DIV (options optional: no activation without them); its State is the [`Plan`]: the
/// activation's clamp, or uint8's multiplier, offsets and range.
struct DivKernel;

impl BuiltinKernel for DivKernel {
    const NAME: &'static str = Arith::Div.name();
    type Params = Option<TfLiteDivParams>;
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteDivParams>) -> Result<Plan> {
        prepare(ctx, Arith::Div, p.map(|p| p.activation).unwrap_or_default())
    }

    fn invoke(ctx: &OpCtx<'_>, _: &Option<TfLiteDivParams>, plan: &mut Plan) -> Result<()> {
        eval(ctx, Arith::Div, plan)
    }
}

fn eval(ctx: &OpCtx<'_>, kind: Arith, plan: &Plan) -> Result<()> {
    let op = kind.name();
    let mut ops = operands(ctx, kind)?;
    check_out_shape(op, ops.out.shape, &ops.out_shape)?;
    if ops.out.dtype != ops.a.dtype {
        return Err(op_error(op, "output type differs from the input type"));
    }
    let osh = ops.out_shape.clone();
    let threads = ops.threads;
    let (a, b) = (ops.a, ops.b);
    let out = &mut ops.out;
    macro_rules! bin {
        ($t:ty, $f:expr) => {
            broadcast_binary(a.data::<$t>()?, a.shape, b.data::<$t>()?, b.shape, out.data_mut::<$t>()?, &osh, $f)
        };
    }
    use TfLiteType::*;
    let r = match kind {
        Arith::Maximum | Arith::Minimum => {
            if a.num_elements() == 0 || b.num_elements() == 0 {
                return Ok(());
            }
            let is_max = kind == Arith::Maximum;
            macro_rules! mm {
                ($t:ty) => {
                    if is_max {
                        bin!($t, |x: $t, y: $t| if x > y { x } else { y })
                    } else {
                        bin!($t, |x: $t, y: $t| if x < y { x } else { y })
                    }
                };
            }
            match a.dtype {
                kTfLiteFloat32 => {
                    let op = if is_max { BinaryOp::Max } else { BinaryOp::Min };
                    binary_f32(op, a.data()?, a.shape, b.data()?, b.shape, out.data_mut()?, &osh, NO_CLAMP, threads)
                }
                kTfLiteUInt8 => mm!(u8),
                kTfLiteInt8 => mm!(i8),
                kTfLiteInt16 => mm!(i16),
                kTfLiteInt32 => mm!(i32),
                _ => mm!(i64),
            }
        }
        // In place (the output may hold an input's bytes): divisors are checked before
        // the output is written, and `run_binary` computes tile by tile.
        Arith::Div => match plan {
            Plan::DivF32(clamp) => run_binary_f32(&mut ops, BinaryOp::Div, *clamp),
            Plan::DivI32((lo, hi)) => {
                if b.data::<i32>()?.contains(&0) {
                    return Err(op_error(op, "integer division by zero"));
                }
                let (lo, hi) = (*lo, *hi);
                let f = |x: i32, y: i32| clamp_min_max(x.wrapping_div(y), lo, hi);
                run_binary::<i32>(&mut ops, |x, xs, y, ys, o, os| broadcast_binary(x, xs, y, ys, o, os, f))
            }
            Plan::DivU8(p) => {
                let zero = b.data::<u8>()?.iter().any(|&y| p.input2_offset.wrapping_add(i32::from(y)) == 0);
                if zero {
                    return Err(op_error(op, "division by zero"));
                }
                let f = |x: u8, y: u8| p.div(i32::from(x), i32::from(y)).unwrap_or(0) as u8;
                run_binary::<u8>(&mut ops, |x, xs, y, ys, o, os| broadcast_binary(x, xs, y, ys, o, os, f))
            }
            _ => Err(op_error(op, "invoked with another op's plan")),
        },
        Arith::SquaredDifference => match a.dtype {
            kTfLiteFloat32 => binary_f32(
                BinaryOp::SquaredDifference,
                a.data()?,
                a.shape,
                b.data()?,
                b.shape,
                out.data_mut()?,
                &osh,
                NO_CLAMP,
                threads,
            ),
            kTfLiteInt32 => bin!(i32, |x: i32, y: i32| {
                let d = x.wrapping_sub(y);
                d.wrapping_mul(d)
            }),
            _ => match plan {
                Plan::SqDiffI8(p) => bin!(i8, |x: i8, y: i8| p.apply(i32::from(x), i32::from(y))),
                _ => Err(op_error(op, "invoked with another op's plan")),
            },
        },
        Arith::Pow => match a.dtype {
            kTfLiteFloat32 => bin!(f32, f32::powf),
            _ => {
                if b.data::<i32>()?.iter().any(|&v| v < 0) {
                    return Err(op_error(op, "POW does not support negative value for int32"));
                }
                bin!(i32, |x: i32, y: i32| crate::kernels::float_conv::cvtt_f64_i32(f64::from(x).powf(f64::from(y))))
            }
        },
    };
    r.map_err(|e: Error| with_op(op)(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn div_uint8() {
        // div_test.cc style: scale 1/255 everywhere... here 0.1 / 0.1 with output 0.1.
        let p = DivParams::new(qp(0.1, 0), qp(0.1, 0), qp(0.1, 0), TfLiteFusedActivation::kTfLiteActNone).unwrap();
        assert_eq!(p.div(60, 20), Some(30)); // 6.0 / 2.0 = 3.0
        assert_eq!(p.div(10, 30), Some(3)); // 1 / 3 = 0.333
        assert_eq!(p.div(10, 0), None);
    }

    #[test]
    fn squared_difference_int8() {
        let p = SqDiffParams::new(qp(0.1, 0), qp(0.1, 0), qp(0.1, 0)).unwrap();
        assert_eq!(p.apply(30, 10), 40); // (3 - 1)^2 = 4.0
        assert_eq!(p.apply(-10, 10), 40);
        assert_eq!(p.apply(5, 5), 0);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteFloat32, &[3], &[1.0f32, -2.0, 9.0], None, false);
        let b = g.tensor(kTfLiteFloat32, &[], &[2.0f32], None, true);
        for (reg, want) in [
            (maximum_registration(), [2.0f32, 2.0, 9.0]),
            (minimum_registration(), [1.0, -2.0, 2.0]),
            (squared_difference_registration(), [1.0, 16.0, 49.0]),
            (pow_registration(), [1.0, 4.0, 81.0]),
        ] {
            let o = g.output(kTfLiteFloat32, None);
            assert_eq!(g.run::<()>(&reg, &[a, b], &[o], None), TfLiteStatus::kTfLiteOk);
            assert_eq!(g.data::<f32>(o), want.to_vec());
        }
        let o = g.output(kTfLiteFloat32, None);
        let p = TfLiteDivParams { activation: TfLiteFusedActivation::kTfLiteActRelu };
        assert_eq!(g.run(&div_registration(), &[a, b], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o), vec![0.5, 0.0, 4.5]);
        let i = g.tensor(kTfLiteInt32, &[2], &[7i32, -7], None, false);
        let z = g.tensor(kTfLiteInt32, &[2], &[2i32, 0], None, false);
        let o = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<TfLiteDivParams>(&div_registration(), &[i, z], &[o], None), TfLiteStatus::kTfLiteError);
        let two = g.tensor(kTfLiteInt32, &[], &[2i32], None, false);
        let o = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<TfLiteDivParams>(&div_registration(), &[i, two], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(o), vec![3, -3]);
        let o = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&pow_registration(), &[i, two], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(o), vec![49, 49]);
    }
}
