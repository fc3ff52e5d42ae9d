//! MUL (TFLite `kernels/mul.cc`, reference kernels `reference/mul.h`,
//! `reference/integer_ops/mul.h`).
//!
//! Types: float32, int32, int64 and unquantized int16 (wrapping product, fused activation
//! as a clamp), quantized uint8 / int8 / int16 (one output multiplier
//! `scale1 * scale2 / scale_out`; int16 needs zero points of 0). All with numpy
//! broadcasting. Not supported: int16 inputs with an 8-bit output, uint32, complex64.

use crate::abi::builtin_op_data::{TfLiteFusedActivation, TfLiteMulParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType, kTfLiteInplaceOpInput0Shared, kTfLiteInplaceOpInput1Shared};
use crate::error::{Error, Result};
use crate::kernels::activation::{
    activation_range_f32, activation_range_i16, activation_range_i32, activation_range_i64, activation_range_quantized,
    clamp_min_max,
};
use crate::kernels::api::{OpCtx, QuantParams};
use crate::kernels::binary::{
    BinaryOperands, QuantArith, binary_f32, binary_operands, binary_operands_in_place, check_output, is_quantized,
    run_binary, run_binary_f32, run_binary_q8, with_op,
};
use crate::kernels::broadcast::broadcast_binary;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{multiply_by_quantized_multiplier, try_quantize_multiplier};
use crate::microkernels::f32_vbinary::BinaryOp;
use crate::microkernels::qs8_vbinary::{Input, QBinaryOp, QBinaryParams, Rescale};

const OP: &str = "MUL";

/// The MUL registration.
pub fn registration() -> TfLiteRegistration {
    TfLiteRegistration {
        // mul.cc: the output may take either input's memory (LiteRT's in-place MUL).
        inplace_operator: kTfLiteInplaceOpInput0Shared | kTfLiteInplaceOpInput1Shared,
        ..kernel::registration::<Mul>(TfLiteBuiltinOperator::kTfLiteBuiltinMul)
    }
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// Float MUL: `clamp(a * b)` to the fused activation's range.
pub fn mul_f32(
    a: &[f32],
    a_shape: &[i32],
    b: &[f32],
    b_shape: &[i32],
    out: &mut [f32],
    out_shape: &[i32],
    act: TfLiteFusedActivation,
) -> Result<()> {
    binary_f32(BinaryOp::Mul, a, a_shape, b, b_shape, out, out_shape, activation_range_f32(act), 1)
}

macro_rules! int_mul {
    ($name:ident, $t:ty, $range:ident) => {
        #[doc = concat!("Unquantized `", stringify!($t), "` MUL: wrapping product, clamped to the activation range.")]
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
                clamp_min_max(x.wrapping_mul(y), lo, hi)
            })
        }
    };
}
int_mul!(mul_i32, i32, activation_range_i32);
int_mul!(mul_i64, i64, activation_range_i64);
int_mul!(mul_i16, i16, activation_range_i16);

/// Parameters of a quantized MUL (`ArithmeticParams` as mul.cc fills them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantMulParams {
    pub input1_offset: i32,
    pub input2_offset: i32,
    pub output_offset: i32,
    pub output_multiplier: i32,
    pub output_shift: i32,
    pub act_min: i32,
    pub act_max: i32,
}

impl QuantMulParams {
    /// As mul.cc's Prepare: the real multiplier `s1 * s2 / so` is computed in `f32` (as
    /// the C++ expression is) and quantized with `QuantizeMultiplier`. int16 requires zero
    /// points of 0 (the product could overflow otherwise).
    pub fn new(
        dtype: TfLiteType,
        in1: QuantParams,
        in2: QuantParams,
        out: QuantParams,
        act: TfLiteFusedActivation,
    ) -> Result<QuantMulParams> {
        let (act_min, act_max) = activation_range_quantized(act, dtype, out.scale, out.zero_point)?;
        if dtype == TfLiteType::kTfLiteInt16 && (in1.zero_point != 0 || in2.zero_point != 0 || out.zero_point != 0) {
            return Err(Error::new(format!(
                "int16 zero points must be 0 (got {}, {} and {})",
                in1.zero_point, in2.zero_point, out.zero_point
            )));
        }
        let real = f64::from(in1.scale * in2.scale / out.scale);
        let (output_multiplier, output_shift) = try_quantize_multiplier(real)
            .map_err(|e| Error::new(format!("scales {} * {} / {}: {}", in1.scale, in2.scale, out.scale, e.message)))?;
        Ok(QuantMulParams {
            input1_offset: in1.zero_point.wrapping_neg(),
            input2_offset: in2.zero_point.wrapping_neg(),
            output_offset: out.zero_point,
            output_multiplier,
            output_shift,
            act_min,
            act_max,
        })
    }

    /// The microkernels' parameters of the same MUL.
    pub fn q8(&self) -> QBinaryParams {
        QBinaryParams {
            op: QBinaryOp::Mul,
            a: Input { offset: self.input1_offset, scale: Rescale::default() },
            b: Input { offset: self.input2_offset, scale: Rescale::default() },
            out: Rescale::general(self.output_multiplier, self.output_shift),
            output_offset: self.output_offset,
            min: self.act_min,
            max: self.act_max,
        }
    }

    /// One quantized product (reference `MulElementwise`).
    #[inline]
    pub fn mul(&self, x: i32, y: i32) -> i32 {
        let x = self.input1_offset.wrapping_add(x);
        let y = self.input2_offset.wrapping_add(y);
        let raw = multiply_by_quantized_multiplier(x.wrapping_mul(y), self.output_multiplier, self.output_shift)
            .wrapping_add(self.output_offset);
        clamp_min_max(raw, self.act_min, self.act_max)
    }
}

/// Quantized MUL of uint8 / int8 / int16 (bit-exact with TFLite's `MulElementwise` /
/// `BroadcastMul6DSlow`): 8-bit types on the microkernels, int16 one value at a time.
pub fn mul_quantized<T: QuantArith>(
    a: &[T],
    a_shape: &[i32],
    b: &[T],
    b_shape: &[i32],
    out: &mut [T],
    out_shape: &[i32],
    p: &QuantMulParams,
) -> Result<()> {
    if let Some(r) = T::on_microkernels(&p.q8(), a, a_shape, b, b_shape, out, out_shape, 1) {
        return r;
    }
    broadcast_binary(a, a_shape, b, b_shape, out, out_shape, |x: T, y: T| T::from_i32(p.mul(x.to_i32(), y.to_i32())))
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

/// The kernel to run, chosen at Prepare from the types, quantization and activation as
/// mul.cc does.
enum Plan {
    /// float32, clamped to the activation's range.
    F32((f32, f32)),
    I32,
    I64,
    I16,
    /// uint8 / int8 on the microkernels.
    Quant8(QBinaryParams),
    /// int16.
    Quant(QuantMulParams),
}

fn plan(ops: &BinaryOperands<'_>, p: &TfLiteMulParams) -> Result<Plan> {
    let dt = ops.a.dtype;
    if ops.out.dtype != dt {
        return Err(Error::new(format!(
            "{OP}: {} inputs with a {} output are not supported",
            dt.name(),
            ops.out.dtype.name()
        )));
    }
    Ok(match dt {
        TfLiteType::kTfLiteFloat32 => Plan::F32(activation_range_f32(p.activation)),
        TfLiteType::kTfLiteInt32 => Plan::I32,
        TfLiteType::kTfLiteInt64 => Plan::I64,
        TfLiteType::kTfLiteInt16 if !is_quantized(&ops.out) => Plan::I16,
        TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 | TfLiteType::kTfLiteInt16 => {
            let q = QuantMulParams::new(dt, ops.a.quant(), ops.b.quant(), ops.out.quant(), p.activation)
                .map_err(with_op(OP))?;
            if dt == TfLiteType::kTfLiteInt16 { Plan::Quant(q) } else { Plan::Quant8(q.q8()) }
        }
        other => return Err(Error::new(format!("{OP}: type {} is not supported", other.name()))),
    })
}

/// MUL; its State is the [`Plan`]: the variant for the input type with the float clamp or
/// the quantized output multiplier and activation range.
struct Mul;

impl BuiltinKernel for Mul {
    const NAME: &'static str = OP;
    type Params = TfLiteMulParams;
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteMulParams) -> Result<Plan> {
        let ops = binary_operands(ctx, OP)?;
        let plan = plan(&ops, p)?;
        ctx.resize_output(0, &ops.out_shape).map_err(with_op(OP))?;
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteMulParams, plan: &mut Plan) -> Result<()> {
        let mut ops = binary_operands_in_place(ctx, OP)?;
        check_output(OP, &ops, ops.a.dtype)?;
        let act = p.activation;
        match plan {
            Plan::F32(clamp) => run_binary_f32(&mut ops, BinaryOp::Mul, *clamp),
            Plan::I32 => run_binary::<i32>(&mut ops, |a, ash, b, bsh, o, osh| mul_i32(a, ash, b, bsh, o, osh, act)),
            Plan::I64 => run_binary::<i64>(&mut ops, |a, ash, b, bsh, o, osh| mul_i64(a, ash, b, bsh, o, osh, act)),
            Plan::I16 => run_binary::<i16>(&mut ops, |a, ash, b, bsh, o, osh| mul_i16(a, ash, b, bsh, o, osh, act)),
            Plan::Quant8(q) => match ops.a.dtype {
                TfLiteType::kTfLiteUInt8 => run_binary_q8::<u8>(&mut ops, q),
                _ => run_binary_q8::<i8>(&mut ops, q),
            },
            Plan::Quant(q) => {
                run_binary::<i16>(&mut ops, |a, ash, b, bsh, o, osh| mul_quantized(a, ash, b, bsh, o, osh, q))
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
    fn float() {
        // mul_test.cc FloatMulOpModel NoActivation / ActivationRELU_N1_TO_1.
        let a = [-2.0f32, 0.2, 0.7, 0.8];
        let b = [0.1f32, 0.2, 0.3, 0.5];
        let mut out = [0.0f32; 4];
        mul_f32(&a, &[1, 2, 2, 1], &b, &[1, 2, 2, 1], &mut out, &[1, 2, 2, 1], kTfLiteActNone).unwrap();
        assert_eq!(out, [-2.0 * 0.1, 0.2 * 0.2, 0.7 * 0.3, 0.8 * 0.5]);
        mul_f32(&a, &[4], &[5.0], &[1], &mut out, &[4], kTfLiteActReluN1To1).unwrap();
        assert_eq!(out, [-1.0, 1.0, 1.0, 1.0]);
        // [2,1,3] * [1,4,1]
        let mut out = [0.0f32; 24];
        mul_f32(
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            &[2, 1, 3],
            &[1.0, 2.0, 3.0, 4.0],
            &[1, 4, 1],
            &mut out,
            &[2, 4, 3],
            kTfLiteActRelu6,
        )
        .unwrap();
        assert_eq!(&out[..6], &[1.0, 2.0, 3.0, 2.0, 4.0, 6.0]);
        assert_eq!(&out[21..], &[6.0, 6.0, 6.0]);
    }

    #[test]
    fn ints() {
        let mut out = [0i32; 4];
        mul_i32(&[-20, 2, 7, 8], &[4], &[1, 2, 3, 5], &[4], &mut out, &[4], kTfLiteActRelu6).unwrap();
        assert_eq!(out, [0, 4, 6, 6]);
        mul_i32(&[1 << 20], &[1], &[1 << 12], &[1], &mut out[..1], &[1], kTfLiteActNone).unwrap();
        assert_eq!(out[0], 0); // 2^32 wraps to 0
        let mut out = [0i64; 2];
        mul_i64(&[3, -4], &[2], &[1 << 40], &[], &mut out, &[2], kTfLiteActNone).unwrap();
        assert_eq!(out, [3 << 40, -4 << 40]);
    }

    #[test]
    fn int8_known_vector() {
        // mul_test.cc QuantizedMulOpTest NoActivationInt8 in spirit: range [-1, 1]
        // (scale 2/255, zp 0 for int8 symmetric-ish), checked against exact rounding.
        let s = 1.0f32 / 127.0;
        let p = QuantMulParams::new(TfLiteType::kTfLiteInt8, qp(s, 0), qp(s, 0), qp(s, 0), kTfLiteActNone).unwrap();
        let a = [-102i8, 25, 89, 102]; // {-0.8, 0.2, 0.7, 0.8} * 127, rounded
        let b = [76i8, 51, 38, 64]; // {0.6, 0.4, 0.3, 0.5}
        let mut out = [0i8; 4];
        mul_quantized(&a, &[4], &b, &[4], &mut out, &[4], &p).unwrap();
        // q = a*b/127 rounded: -61.04 -> -61, 10.04 -> 10, 26.6 -> 27, 51.4 -> 51.
        assert_eq!(out, [-61, 10, 27, 51]);
    }

    #[test]
    fn uint8_with_offsets_and_activation() {
        let p =
            QuantMulParams::new(TfLiteType::kTfLiteUInt8, qp(0.5, 128), qp(0.25, 10), qp(0.125, 100), kTfLiteActRelu)
                .unwrap();
        assert_eq!((p.output_multiplier, p.output_shift), (1 << 30, 1));
        assert_eq!(p.act_min, 100);
        let mut out = [0u8; 4];
        // (130-128) * (14-10) = 8 at scale 0.5*0.25 = 0.125, the output scale -> 108.
        mul_quantized(&[130u8, 126, 200, 128], &[4], &[14u8], &[1], &mut out, &[4], &p).unwrap();
        // 126: -2 * 4 = -8 -> 92 -> relu 100; 200: 72 * 4 = 288 -> 388 -> 255; 128: 0 -> 100.
        assert_eq!(out, [108, 100, 255, 100]);
    }

    #[test]
    fn int16() {
        let s = 1.0f32 / 32768.0;
        let p = QuantMulParams::new(TfLiteType::kTfLiteInt16, qp(s, 0), qp(s, 0), qp(s, 0), kTfLiteActNone).unwrap();
        let mut out = [0i16; 3];
        mul_quantized::<i16>(&[16384, -32768, 3], &[3], &[16384, -32768, 3], &[3], &mut out, &[3], &p).unwrap();
        assert_eq!(out, [8192, 32767, 0]);
        assert!(QuantMulParams::new(TfLiteType::kTfLiteInt16, qp(s, 1), qp(s, 0), qp(s, 0), kTfLiteActNone).is_err());
        assert!(QuantMulParams::new(TfLiteType::kTfLiteInt8, qp(s, 0), qp(s, 0), qp(0.0, 0), kTfLiteActNone).is_err());
    }

    #[test]
    fn registration_glue() {
        use crate::abi::types::TfLiteStatus;
        use crate::kernels::test_util::{Graph, qp};
        use TfLiteType::*;
        let reg = registration();
        assert_eq!(reg.builtin_code, TfLiteBuiltinOperator::kTfLiteBuiltinMul as i32);
        let params = |activation| Some(TfLiteMulParams { activation });
        let mut g = Graph::new();
        // Rank 5 broadcast.
        let a = g.tensor(kTfLiteFloat32, &[2, 1, 1, 1, 2], &[1.0f32, 2.0, 3.0, 4.0], None, false);
        let b = g.tensor(kTfLiteFloat32, &[1, 1, 3, 1, 1], &[1.0f32, 10.0, 100.0], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[a, b], &[o], params(kTfLiteActNone)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 1, 3, 1, 2]);
        assert_eq!(g.data::<f32>(o), vec![1.0, 2.0, 10.0, 20.0, 100.0, 200.0, 3.0, 4.0, 30.0, 40.0, 300.0, 400.0]);

        let qa = g.tensor(kTfLiteInt8, &[2], &[10i8, -10], Some(qp(0.1, 0)), false);
        let qb = g.tensor(kTfLiteInt8, &[2], &[20i8, 20], Some(qp(0.1, 0)), false);
        let qo = g.output(kTfLiteInt8, Some(qp(0.05, 0)));
        assert_eq!(g.run(&reg, &[qa, qb], &[qo], params(kTfLiteActNone)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(qo), vec![40, -40]);

        // An int8 output for int16 inputs is not supported; a mismatch is an error.
        let ha = g.tensor(kTfLiteInt16, &[1], &[1i16], Some(qp(0.5, 0)), false);
        let ho = g.output(kTfLiteInt8, Some(qp(0.5, 0)));
        assert_eq!(g.run(&reg, &[ha, ha], &[ho], params(kTfLiteActNone)), TfLiteStatus::kTfLiteError);
        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<TfLiteMulParams>(&reg, &[a, b], &[o2], None), TfLiteStatus::kTfLiteError);
    }
}
