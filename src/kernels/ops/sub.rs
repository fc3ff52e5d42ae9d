//! SUB (TFLite `kernels/sub.cc`, reference kernels `reference/sub.h`).
//!
//! Types: float32, int32, int64 (fused activation as a clamp), quantized uint8 / int8
//! (general rescaling, `left_shift` 20; the output multiplier may exceed 1), quantized
//! int16 (general rescaling with `left_shift` 15, or the power-of-two path when
//! `pot_scale_int16` is set and every scale is a power of two). All with numpy
//! broadcasting.

use crate::abi::builtin_op_data::{TfLiteFusedActivation, TfLiteSubParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType, kTfLiteInplaceOpInput0Shared, kTfLiteInplaceOpInput1Shared};
use crate::error::{Error, Result};
use crate::kernels::activation::{
    activation_range_f32, activation_range_i32, activation_range_i64, activation_range_quantized, clamp_min_max,
};
use crate::kernels::api::{OpCtx, QuantParams};
use crate::kernels::binary::{
    BinaryOperands, Pot16Params, QuantArith, QuantArithParams, binary_f32, binary_operands, binary_operands_in_place,
    check_output, run_binary, run_binary_f32, run_binary_q8, with_op,
};
use crate::kernels::broadcast::broadcast_binary;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::quantized_type_range;
use crate::microkernels::f32_vbinary::BinaryOp;
use crate::microkernels::qs8_vbinary::QBinaryParams;

const OP: &str = "SUB";

/// The SUB registration.
pub fn registration() -> TfLiteRegistration {
    TfLiteRegistration {
        // sub.cc: the output may take either input's memory (LiteRT's in-place SUB).
        inplace_operator: kTfLiteInplaceOpInput0Shared | kTfLiteInplaceOpInput1Shared,
        ..kernel::registration::<Sub>(TfLiteBuiltinOperator::kTfLiteBuiltinSub)
    }
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// Float SUB: `clamp(a - b)` to the fused activation's range.
pub fn sub_f32(
    a: &[f32],
    a_shape: &[i32],
    b: &[f32],
    b_shape: &[i32],
    out: &mut [f32],
    out_shape: &[i32],
    act: TfLiteFusedActivation,
) -> Result<()> {
    binary_f32(BinaryOp::Sub, a, a_shape, b, b_shape, out, out_shape, activation_range_f32(act), 1)
}

macro_rules! int_sub {
    ($name:ident, $t:ty, $range:ident) => {
        #[doc = concat!("Unquantized `", stringify!($t), "` SUB: wrapping difference, clamped to the activation range.")]
        pub fn $name(
            a: &[$t],
            a_shape: &[i32],
            b: &[$t],
            b_shape: &[i32],
            out: &mut [$t],
            out_shape: &[i32],
            act: TfLiteFusedActivation,
        ) -> Result<()> {
            let (lo, hi) = $range(act);
            broadcast_binary(a, a_shape, b, b_shape, out, out_shape, |x: $t, y: $t| {
                clamp_min_max(x.wrapping_sub(y), lo, hi)
            })
        }
    };
}
int_sub!(sub_i32, i32, activation_range_i32);
int_sub!(sub_i64, i64, activation_range_i64);

/// Quantized SUB of uint8 / int8 / int16 with general rescaling (bit-exact with TFLite's
/// `SubElementwise` / `BroadcastQuantSubSlow`): 8-bit types on the microkernels, int16 one
/// value at a time.
pub fn sub_quantized<T: QuantArith>(
    a: &[T],
    a_shape: &[i32],
    b: &[T],
    b_shape: &[i32],
    out: &mut [T],
    out_shape: &[i32],
    p: &QuantArithParams,
) -> Result<()> {
    if let Some(r) = T::on_microkernels(&p.q8_sub(), a, a_shape, b, b_shape, out, out_shape, 1) {
        return r;
    }
    broadcast_binary(a, a_shape, b, b_shape, out, out_shape, |x: T, y: T| T::from_i32(p.sub(x.to_i32(), y.to_i32())))
}

/// Quantized int16 SUB with power-of-two scales (`Sub16` / `BroadcastSub16POTSlow`).
pub fn sub_i16_pot(
    a: &[i16],
    a_shape: &[i32],
    b: &[i16],
    b_shape: &[i32],
    out: &mut [i16],
    out_shape: &[i32],
    p: &Pot16Params,
) -> Result<()> {
    broadcast_binary(a, a_shape, b, b_shape, out, out_shape, |x, y| p.sub(x, y))
}

/// How a quantized SUB is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantSub {
    /// uint8 / int8, or int16 with general scales.
    General(QuantArithParams),
    /// int16 with power-of-two scales and `pot_scale_int16`.
    Pot16(Pot16Params),
}

/// The quantized SUB parameters as sub.cc's Prepare computes them
/// (`PrepareGeneralSubOp` / `PrepareInt16SubOpPOT`).
pub fn quant_sub_params(
    dtype: TfLiteType,
    in1: QuantParams,
    in2: QuantParams,
    out: QuantParams,
    act: TfLiteFusedActivation,
    pot_scale_int16: bool,
) -> Result<QuantSub> {
    let (tmin, tmax) = quantized_type_range(dtype)
        .ok_or_else(|| Error::new(format!("type {} is not a quantized SUB type", dtype.name())))?;
    let range = activation_range_quantized(act, dtype, out.scale, out.zero_point)?;
    let int16 = dtype == TfLiteType::kTfLiteInt16;
    if int16 && (in1.zero_point != 0 || in2.zero_point != 0 || out.zero_point != 0) {
        return Err(Error::new(format!(
            "int16 zero points must be 0 (got {}, {} and {})",
            in1.zero_point, in2.zero_point, out.zero_point
        )));
    }
    if int16 && pot_scale_int16 && Pot16Params::log2_scales(in1, in2, out).is_some() {
        return Ok(QuantSub::Pot16(Pot16Params::new(in1, in2, out, range)?));
    }
    for (zp, what) in [(in1.zero_point, "input 1"), (in2.zero_point, "input 2"), (out.zero_point, "output")] {
        if !(tmin..=tmax).contains(&zp) {
            return Err(Error::new(format!("{what} zero point {zp} is outside the {} range", dtype.name())));
        }
    }
    let left_shift = if int16 { 15 } else { 20 };
    Ok(QuantSub::General(QuantArithParams::new(in1, in2, out, left_shift, range, true)?))
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

/// The kernel to run, chosen at Prepare from the types, quantization and activation as
/// sub.cc does.
enum Plan {
    /// float32, clamped to the activation's range.
    F32((f32, f32)),
    I32,
    I64,
    /// uint8 / int8 on the microkernels.
    Quant8(QBinaryParams),
    /// int16.
    Quant(QuantSub),
}

fn plan(ops: &BinaryOperands<'_>, p: &TfLiteSubParams) -> Result<Plan> {
    Ok(match ops.a.dtype {
        TfLiteType::kTfLiteFloat32 => Plan::F32(activation_range_f32(p.activation)),
        TfLiteType::kTfLiteInt32 => Plan::I32,
        TfLiteType::kTfLiteInt64 => Plan::I64,
        dt @ (TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 | TfLiteType::kTfLiteInt16) => {
            match quant_sub_params(dt, ops.a.quant(), ops.b.quant(), ops.out.quant(), p.activation, p.pot_scale_int16)
                .map_err(with_op(OP))?
            {
                QuantSub::General(q) if dt != TfLiteType::kTfLiteInt16 => Plan::Quant8(q.q8_sub()),
                q => Plan::Quant(q),
            }
        }
        other => return Err(Error::new(format!("{OP}: type {} is not supported", other.name()))),
    })
}

/// SUB; its State is the [`Plan`]: the variant for the input type with the float clamp or
/// the quantized rescaling parameters.
struct Sub;

impl BuiltinKernel for Sub {
    const NAME: &'static str = OP;
    type Params = TfLiteSubParams;
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteSubParams) -> Result<Plan> {
        let ops = binary_operands(ctx, OP)?;
        ctx.set_output_type(0, ops.b.dtype).map_err(with_op(OP))?;
        let plan = plan(&ops, p)?;
        ctx.resize_output(0, &ops.out_shape).map_err(with_op(OP))?;
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteSubParams, plan: &mut Plan) -> Result<()> {
        let mut ops = binary_operands_in_place(ctx, OP)?;
        check_output(OP, &ops, ops.a.dtype)?;
        let act = p.activation;
        match plan {
            Plan::F32(clamp) => run_binary_f32(&mut ops, BinaryOp::Sub, *clamp),
            Plan::I32 => run_binary::<i32>(&mut ops, |a, ash, b, bsh, o, osh| sub_i32(a, ash, b, bsh, o, osh, act)),
            Plan::I64 => run_binary::<i64>(&mut ops, |a, ash, b, bsh, o, osh| sub_i64(a, ash, b, bsh, o, osh, act)),
            Plan::Quant8(q) => match ops.a.dtype {
                TfLiteType::kTfLiteUInt8 => run_binary_q8::<u8>(&mut ops, q),
                _ => run_binary_q8::<i8>(&mut ops, q),
            },
            Plan::Quant(QuantSub::General(q)) => {
                run_binary::<i16>(&mut ops, |a, ash, b, bsh, o, osh| sub_quantized(a, ash, b, bsh, o, osh, q))
            }
            Plan::Quant(QuantSub::Pot16(q)) => {
                run_binary::<i16>(&mut ops, |a, ash, b, bsh, o, osh| sub_i16_pot(a, ash, b, bsh, o, osh, q))
            }
        }
        .map_err(with_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TfLiteFusedActivation::*;

    fn qp(scale: f32, zero_point: i32) -> QuantParams {
        QuantParams { scale, zero_point }
    }

    #[test]
    fn float_broadcast_and_activation() {
        let a = [-2.0f32, 0.2, 0.7, 0.8];
        let b = [0.1f32];
        let mut out = [0.0f32; 4];
        sub_f32(&a, &[1, 2, 2, 1], &b, &[1], &mut out, &[1, 2, 2, 1], kTfLiteActNone).unwrap();
        assert_eq!(out, [-2.1, 0.2 - 0.1, 0.7 - 0.1, 0.8 - 0.1]);
        sub_f32(&a, &[4], &b, &[], &mut out, &[4], kTfLiteActReluN1To1).unwrap();
        assert_eq!(out, [-1.0, 0.2 - 0.1, 0.7 - 0.1, 0.8 - 0.1]);
        // [2,1,3] - [1,4,1]
        let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [1.0f32, 2.0, 3.0, 4.0];
        let mut out = [0.0f32; 24];
        sub_f32(&a, &[2, 1, 3], &b, &[1, 4, 1], &mut out, &[2, 4, 3], kTfLiteActRelu).unwrap();
        assert_eq!(&out[..6], &[0.0, 1.0, 2.0, 0.0, 0.0, 1.0]);
        assert_eq!(&out[21..], &[0.0, 1.0, 2.0]);
    }

    #[test]
    fn int32_and_int64() {
        let mut out = [0i32; 3];
        sub_i32(&[5, -7, 100], &[3], &[10], &[1], &mut out, &[3], kTfLiteActRelu).unwrap();
        assert_eq!(out, [0, 0, 90]);
        let mut out = [0i64; 2];
        sub_i64(&[i64::MIN, 3], &[2], &[1, 1], &[2], &mut out, &[2], kTfLiteActNone).unwrap();
        assert_eq!(out, [i64::MAX, 2]);
    }

    #[test]
    fn uint8_sub() {
        let s = 1.0f32 / 128.0;
        let QuantSub::General(p) =
            quant_sub_params(TfLiteType::kTfLiteUInt8, qp(s, 128), qp(s, 128), qp(s, 128), kTfLiteActNone, false)
                .unwrap()
        else {
            panic!()
        };
        let mut out = [0u8; 4];
        // (q - 128) / 128: {0.5, 0.25, -1, 0.9} - {0.25, 0.5, 0.5, -0.5}
        sub_quantized(&[192u8, 160, 0, 243], &[4], &[160u8, 192, 192, 64], &[4], &mut out, &[4], &p).unwrap();
        assert_eq!(out, [160, 96, 0, 255]);
    }

    #[test]
    fn int8_sub_with_relu_broadcast() {
        let QuantSub::General(p) =
            quant_sub_params(TfLiteType::kTfLiteInt8, qp(0.1, 0), qp(0.2, 1), qp(0.1, -5), kTfLiteActRelu, false)
                .unwrap()
        else {
            panic!()
        };
        assert_eq!(p.act_min, -5);
        let mut out = [0i8; 4];
        // a = {10, 20, 30, 40} -> {1, 2, 3, 4}; b = {6} -> 1.0; a - b = {0, 1, 2, 3} -> q {-5, 5, 15, 25}.
        sub_quantized(&[10i8, 20, 30, 40], &[2, 2], &[6i8], &[1], &mut out, &[2, 2], &p).unwrap();
        assert_eq!(out, [-5, 5, 15, 25]);
    }

    #[test]
    fn int16() {
        let s = 2f32.powi(-10);
        let q = quant_sub_params(TfLiteType::kTfLiteInt16, qp(s, 0), qp(s / 4.0, 0), qp(s, 0), kTfLiteActNone, true)
            .unwrap();
        let QuantSub::Pot16(pp) = q else { panic!("{q:?}") };
        let mut out = [0i16; 3];
        // b is shifted right by 2: 10 -> 3 (2.5 rounds away from zero), -6 -> -2 (-1.5 -> -2).
        sub_i16_pot(&[100, 0, -32768], &[3], &[10, -6, 4], &[3], &mut out, &[3], &pp).unwrap();
        assert_eq!(out, [97, 2, -32768]);
        let QuantSub::General(g) =
            quant_sub_params(TfLiteType::kTfLiteInt16, qp(s, 0), qp(s, 0), qp(s, 0), kTfLiteActNone, false).unwrap()
        else {
            panic!()
        };
        sub_quantized::<i16>(&[100, 0, -32768], &[3], &[10, -6, 4], &[3], &mut out, &[3], &g).unwrap();
        assert_eq!(out, [90, 6, -32768]);
        assert!(
            quant_sub_params(TfLiteType::kTfLiteInt16, qp(s, 2), qp(s, 0), qp(s, 0), kTfLiteActNone, false).is_err()
        );
    }

    #[test]
    fn zero_point_out_of_range() {
        let e = quant_sub_params(TfLiteType::kTfLiteInt8, qp(0.1, 200), qp(0.1, 0), qp(0.1, 0), kTfLiteActNone, false)
            .unwrap_err();
        assert!(e.message.contains("zero point"), "{}", e.message);
    }

    #[test]
    fn registration_glue() {
        use crate::abi::types::TfLiteStatus;
        use crate::kernels::test_util::{Graph, qp};
        use TfLiteType::*;
        let reg = registration();
        assert_eq!(reg.builtin_code, TfLiteBuiltinOperator::kTfLiteBuiltinSub as i32);
        let params = |activation| Some(TfLiteSubParams { activation, pot_scale_int16: true });
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteFloat32, &[2, 2], &[1.0f32, 2.0, 3.0, 4.0], None, false);
        let b = g.tensor(kTfLiteFloat32, &[2], &[0.5f32, 5.0], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[a, b], &[o], params(kTfLiteActNone)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 2]);
        assert_eq!(g.data::<f32>(o), vec![0.5, -3.0, 2.5, -1.0]);

        let qa = g.tensor(kTfLiteUInt8, &[3], &[130u8, 128, 200], Some(qp(0.5, 128)), false);
        let qb = g.tensor(kTfLiteUInt8, &[], &[129u8], Some(qp(0.5, 128)), false);
        let qo = g.output(kTfLiteUInt8, Some(qp(0.5, 128)));
        assert_eq!(g.run(&reg, &[qa, qb], &[qo], params(kTfLiteActRelu)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<u8>(qo), vec![129, 128, 199]);

        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[a, qa], &[o2], params(kTfLiteActNone)), TfLiteStatus::kTfLiteError);
        assert_eq!(g.run(&reg, &[a, b, b], &[o2], params(kTfLiteActNone)), TfLiteStatus::kTfLiteError);
        // int16 needs zero points of 0.
        let ha = g.tensor(kTfLiteInt16, &[1], &[1i16], Some(qp(0.5, 3)), false);
        let ho = g.output(kTfLiteInt16, Some(qp(0.5, 0)));
        assert_eq!(g.run(&reg, &[ha, ha], &[ho], params(kTfLiteActNone)), TfLiteStatus::kTfLiteError);
    }
}
