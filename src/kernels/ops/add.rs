//! ADD (TFLite `kernels/add.cc`, reference kernels `reference/add.h`,
//! `reference/integer_ops/add.h`).
//!
//! Types: float32, int32, int64 and unquantized int16 (fused activation as a clamp),
//! quantized uint8 / int8 (general rescaling, `left_shift` 20), quantized int16 (general
//! rescaling with `left_shift` 15 when `pot_scale_int16` is false or a scale is not a power
//! of two; otherwise the power-of-two fixed-point path). All with numpy broadcasting.

use crate::abi::builtin_op_data::{TfLiteAddParams, TfLiteFusedActivation};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType, kTfLiteInplaceOpInput0Shared, kTfLiteInplaceOpInput1Shared};
use crate::error::{Error, Result};
use crate::kernels::activation::{
    activation_range_f32, activation_range_i16, activation_range_i32, activation_range_i64, activation_range_quantized,
    clamp_min_max,
};
use crate::kernels::api::{OpCtx, QuantParams};
use crate::kernels::binary::{
    BinaryOperands, Pot16Params, QuantArith, QuantArithParams, binary_f32, binary_operands, binary_operands_in_place,
    binary_operands_in_place_of, binary_operands_of, check_output, is_quantized, run_binary, run_binary_f32,
    run_binary_q8, with_op,
};
use crate::kernels::broadcast::broadcast_binary;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::threadpool::elementwise::elementwise_threads;
use crate::kernels::threadpool::parallel_chunks_mut;
use crate::microkernels::f32_vbinary::{self, BinaryOp, NO_CLAMP, Other};
use crate::microkernels::qs8_vbinary::QBinaryParams;
use crate::microkernels::table;

const OP: &str = "ADD";

/// The ADD registration.
pub fn registration() -> TfLiteRegistration {
    TfLiteRegistration {
        // add.cc: the output may take either input's memory (LiteRT's in-place ADD).
        inplace_operator: kTfLiteInplaceOpInput0Shared | kTfLiteInplaceOpInput1Shared,
        ..kernel::registration::<Add>(TfLiteBuiltinOperator::kTfLiteBuiltinAdd)
    }
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// Float ADD: `clamp(a + b)` to the fused activation's range.
pub fn add_f32(
    a: &[f32],
    a_shape: &[i32],
    b: &[f32],
    b_shape: &[i32],
    out: &mut [f32],
    out_shape: &[i32],
    act: TfLiteFusedActivation,
) -> Result<()> {
    binary_f32(BinaryOp::Add, a, a_shape, b, b_shape, out, out_shape, activation_range_f32(act), 1)
}

macro_rules! int_add {
    ($name:ident, $t:ty, $range:ident) => {
        #[doc = concat!("Unquantized `", stringify!($t), "` ADD: wrapping sum, clamped to the activation range.")]
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
                clamp_min_max(x.wrapping_add(y), lo, hi)
            })
        }
    };
}
int_add!(add_i32, i32, activation_range_i32);
int_add!(add_i64, i64, activation_range_i64);
int_add!(add_i16, i16, activation_range_i16);

/// Quantized ADD of uint8 / int8 / int16 with general rescaling (bit-exact with TFLite's
/// `AddElementwise` / `BroadcastAdd6DSlow`): 8-bit types on the microkernels, int16 one
/// value at a time.
pub fn add_quantized<T: QuantArith>(
    a: &[T],
    a_shape: &[i32],
    b: &[T],
    b_shape: &[i32],
    out: &mut [T],
    out_shape: &[i32],
    p: &QuantArithParams,
) -> Result<()> {
    if let Some(r) = T::on_microkernels(&p.q8_add(), a, a_shape, b, b_shape, out, out_shape, 1) {
        return r;
    }
    broadcast_binary(a, a_shape, b, b_shape, out, out_shape, |x: T, y: T| T::from_i32(p.add(x.to_i32(), y.to_i32())))
}

/// Quantized int16 ADD with power-of-two scales (TFLite's LSTM-oriented path).
pub fn add_i16_pot(
    a: &[i16],
    a_shape: &[i32],
    b: &[i16],
    b_shape: &[i32],
    out: &mut [i16],
    out_shape: &[i32],
    p: &Pot16Params,
) -> Result<()> {
    broadcast_binary(a, a_shape, b, b_shape, out, out_shape, |x, y| p.add(x, y))
}

/// How a quantized ADD is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuantAdd {
    /// uint8 / int8, or int16 with general scales.
    General(QuantArithParams),
    /// int16 with power-of-two scales and `pot_scale_int16`.
    Pot16(Pot16Params),
}

/// The quantized ADD parameters as add.cc's Prepare computes them.
pub fn quant_add_params(
    dtype: TfLiteType,
    in1: QuantParams,
    in2: QuantParams,
    out: QuantParams,
    act: TfLiteFusedActivation,
    pot_scale_int16: bool,
) -> Result<QuantAdd> {
    let range = activation_range_quantized(act, dtype, out.scale, out.zero_point)?;
    match dtype {
        TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 => {
            Ok(QuantAdd::General(QuantArithParams::new(in1, in2, out, 20, range, false)?))
        }
        TfLiteType::kTfLiteInt16 => {
            if in1.zero_point != 0 || in2.zero_point != 0 || out.zero_point != 0 {
                return Err(Error::new(format!(
                    "int16 zero points must be 0 (got {}, {} and {})",
                    in1.zero_point, in2.zero_point, out.zero_point
                )));
            }
            let pot = pot_scale_int16 && Pot16Params::log2_scales(in1, in2, out).is_some();
            if pot {
                Ok(QuantAdd::Pot16(Pot16Params::new(in1, in2, out, range)?))
            } else {
                Ok(QuantAdd::General(QuantArithParams::new(in1, in2, out, 15, range, false)?))
            }
        }
        other => Err(Error::new(format!("type {} is not a quantized ADD type", other.name()))),
    }
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

/// The kernel to run, chosen at Prepare from the types, quantization and activation as
/// add.cc does.
enum Plan {
    /// float32, clamped to the activation's range.
    F32((f32, f32)),
    I32,
    I64,
    I16,
    /// uint8 / int8 on the microkernels.
    Quant8(QBinaryParams),
    /// int16.
    Quant(QuantAdd),
}

fn plan(ops: &BinaryOperands<'_>, p: &TfLiteAddParams) -> Result<Plan> {
    Ok(match ops.a.dtype {
        TfLiteType::kTfLiteFloat32 => Plan::F32(activation_range_f32(p.activation)),
        TfLiteType::kTfLiteInt32 => Plan::I32,
        TfLiteType::kTfLiteInt64 => Plan::I64,
        TfLiteType::kTfLiteInt16 if !is_quantized(&ops.a) => Plan::I16,
        dt @ (TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 | TfLiteType::kTfLiteInt16) => {
            match quant_add_params(dt, ops.a.quant(), ops.b.quant(), ops.out.quant(), p.activation, p.pot_scale_int16)
                .map_err(with_op(OP))?
            {
                QuantAdd::General(q) if dt != TfLiteType::kTfLiteInt16 => Plan::Quant8(q.q8_add()),
                q => Plan::Quant(q),
            }
        }
        other => return Err(Error::new(format!("{OP}: type {} is not supported", other.name()))),
    })
}

struct Add;

impl BuiltinKernel for Add {
    const NAME: &'static str = OP;
    type Params = TfLiteAddParams;
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteAddParams) -> Result<Plan> {
        let ops = binary_operands(ctx, OP)?;
        ctx.set_output_type(0, ops.b.dtype).map_err(with_op(OP))?;
        let plan = plan(&ops, p)?;
        ctx.resize_output(0, &ops.out_shape).map_err(with_op(OP))?;
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteAddParams, plan: &mut Plan) -> Result<()> {
        let mut ops = binary_operands_in_place(ctx, OP)?;
        check_output(OP, &ops, ops.a.dtype)?;
        let act = p.activation;
        match plan {
            Plan::F32(clamp) => run_binary_f32(&mut ops, BinaryOp::Add, *clamp),
            Plan::I32 => run_binary::<i32>(&mut ops, |a, ash, b, bsh, o, osh| add_i32(a, ash, b, bsh, o, osh, act)),
            Plan::I64 => run_binary::<i64>(&mut ops, |a, ash, b, bsh, o, osh| add_i64(a, ash, b, bsh, o, osh, act)),
            Plan::I16 => run_binary::<i16>(&mut ops, |a, ash, b, bsh, o, osh| add_i16(a, ash, b, bsh, o, osh, act)),
            Plan::Quant8(q) => match ops.a.dtype {
                TfLiteType::kTfLiteUInt8 => run_binary_q8::<u8>(&mut ops, q),
                _ => run_binary_q8::<i8>(&mut ops, q),
            },
            Plan::Quant(QuantAdd::General(q)) => {
                run_binary::<i16>(&mut ops, |a, ash, b, bsh, o, osh| add_quantized(a, ash, b, bsh, o, osh, q))
            }
            Plan::Quant(QuantAdd::Pot16(q)) => {
                run_binary::<i16>(&mut ops, |a, ash, b, bsh, o, osh| add_i16_pot(a, ash, b, bsh, o, osh, q))
            }
        }
        .map_err(with_op(OP))
    }
}

/// The registration of ADD with a PRELU fused after it: the CPU's graph fusion gives it to
/// an ADD node whose only reader is a float32 PRELU with per-channel alphas (see
/// `interpreter::fusion`); it is never resolved from a model. Input 2 holds the alphas.
pub fn add_prelu_registration() -> TfLiteRegistration {
    TfLiteRegistration {
        inplace_operator: kTfLiteInplaceOpInput0Shared | kTfLiteInplaceOpInput1Shared,
        ..kernel::registration::<AddPrelu>(TfLiteBuiltinOperator::kTfLiteBuiltinAdd)
    }
}

/// ADD then PRELU in one node; its state is the ADD's clamp and the channel count the
/// alphas (input 2, one per channel) must have.
struct AddPrelu;

/// What Prepare keeps for an ADD with a fused PRELU.
struct AddPreluState {
    clamp: (f32, f32),
    channels: usize,
}

impl BuiltinKernel for AddPrelu {
    const NAME: &'static str = OP;
    type Params = TfLiteAddParams;
    type State = AddPreluState;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteAddParams) -> Result<AddPreluState> {
        let ops = binary_operands_of(ctx, OP, 3)?;
        let alpha = ctx.input(2)?;
        let f32t = TfLiteType::kTfLiteFloat32;
        let channels = ops.out_shape.last().map_or(0, |&c| c.max(0) as usize);
        if ops.a.dtype != f32t || alpha.dtype != f32t || alpha.num_elements() != channels || channels == 0 {
            return Err(Error::new(format!(
                "{OP}: a fused PRELU needs float32 operands and {channels} alphas, got {} {:?}",
                alpha.dtype.name(),
                alpha.shape
            )));
        }
        ctx.set_output_type(0, f32t).map_err(with_op(OP))?;
        ctx.resize_output(0, &ops.out_shape).map_err(with_op(OP))?;
        Ok(AddPreluState { clamp: activation_range_f32(p.activation), channels })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteAddParams, state: &mut AddPreluState) -> Result<()> {
        let mut ops = binary_operands_in_place_of(ctx, OP, 3)?;
        check_output(OP, &ops, TfLiteType::kTfLiteFloat32)?;
        let alphas = ctx.input(2)?.data::<f32>()?;
        if alphas.len() != state.channels {
            return Err(Error::new(format!("{OP}: {} alphas for {} channels", alphas.len(), state.channels)));
        }
        run_binary_f32(&mut ops, BinaryOp::Add, state.clamp).map_err(with_op(OP))?;
        let out = ops.out.data_mut::<f32>()?;
        let row = state.channels;
        let threads = elementwise_threads(ops.threads, out.len());
        let per = out.len().div_ceil(threads).div_ceil(row) * row;
        let alpha = Other::Row(alphas);
        parallel_chunks_mut(threads, out, per.max(row), &|_, chunk: &mut [f32]| {
            f32_vbinary::apply_in_place(table(), BinaryOp::Prelu, chunk, false, alpha, NO_CLAMP)
        })
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
    fn float_broadcast() {
        // [2,1,3] + [1,4,1] -> [2,4,3]
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [10.0, 20.0, 30.0, 40.0];
        let mut out = [0.0f32; 24];
        add_f32(&a, &[2, 1, 3], &b, &[1, 4, 1], &mut out, &[2, 4, 3], kTfLiteActNone).unwrap();
        assert_eq!(&out[0..6], &[11.0, 12.0, 13.0, 21.0, 22.0, 23.0]);
        assert_eq!(&out[21..24], &[44.0, 45.0, 46.0]);
    }

    #[test]
    fn float_activations() {
        // From TFLite's add_test.cc (FloatAddOpModel, ActivationRELU_N1_TO_1).
        let a = [-2.0, 0.2, 0.7, 0.8];
        let b = [0.1, 0.2, 0.3, 0.5];
        let mut out = [0.0f32; 4];
        add_f32(&a, &[1, 2, 2, 1], &b, &[1, 2, 2, 1], &mut out, &[1, 2, 2, 1], kTfLiteActReluN1To1).unwrap();
        assert_eq!(out, [-1.0, 0.4, 1.0, 1.0]);
        add_f32(&a, &[4], &b, &[4], &mut out, &[4], kTfLiteActRelu).unwrap();
        assert_eq!(out, [0.0, 0.4, 0.7 + 0.3, 0.8 + 0.5]);
    }

    #[test]
    fn int32_with_activation() {
        let a = [-20, 2, 7, 8];
        let b = [1, 2, 3, 5];
        let mut out = [0i32; 4];
        add_i32(&a, &[4], &b, &[4], &mut out, &[4], kTfLiteActRelu6).unwrap();
        assert_eq!(out, [0, 4, 6, 6]);
        add_i32(&[i32::MAX], &[1], &[1], &[1], &mut out[..1], &[1], kTfLiteActNone).unwrap();
        assert_eq!(out[0], i32::MIN); // wraps, as the C++ does in practice
    }

    /// Quantizes `x` for uint8 with the given params, as TFLite's tests do.
    fn q_u8(x: f32, scale: f32, zp: i32) -> u8 {
        ((x / scale).round() as i32 + zp).clamp(0, 255) as u8
    }

    #[test]
    fn uint8_matches_tfliteop_test() {
        // add_test.cc QuantizedTestsNoActivation: range [-1, 1] (scale 2/255, zp 128).
        let scale = 2.0 / 255.0;
        let zp = 128;
        let cases = [
            ([0.1f32, 0.2, 0.3, 0.4], [0.6f32, 0.4, 0.3, 0.1], [0.7f32, 0.6, 0.6, 0.5]),
            ([-0.8, 0.2, 0.4, 0.7], [0.6, 0.4, 0.5, 0.8], [-0.2, 0.6, 0.9, 1.0]),
        ];
        let QuantAdd::General(p) = quant_add_params(
            TfLiteType::kTfLiteUInt8,
            qp(scale, zp),
            qp(scale, zp),
            qp(scale, zp),
            kTfLiteActNone,
            false,
        )
        .unwrap() else {
            panic!("expected the general path")
        };
        for (a, b, want) in cases {
            let qa: Vec<u8> = a.iter().map(|&x| q_u8(x, scale, zp)).collect();
            let qb: Vec<u8> = b.iter().map(|&x| q_u8(x, scale, zp)).collect();
            let mut out = [0u8; 4];
            add_quantized(&qa, &[4], &qb, &[4], &mut out, &[4], &p).unwrap();
            for (o, w) in out.iter().zip(want) {
                let got = (*o as i32 - zp) as f32 * scale;
                assert!((got - w).abs() <= scale, "got {got}, want {w}");
            }
        }
    }

    #[test]
    fn uint8_zero_point_zero() {
        // Scale 1/255 (~0.003922), zp 0: 1/255 + 3/255 -> 4 exactly; larger values check
        // the rescaling: output scale 3x the input scale gives (a + b) / 3 rounded.
        let s = 0.003_922f32;
        let QuantAdd::General(p) =
            quant_add_params(TfLiteType::kTfLiteUInt8, qp(s, 0), qp(s, 0), qp(s, 0), kTfLiteActNone, false).unwrap()
        else {
            panic!()
        };
        let mut out = [0u8; 3];
        add_quantized(&[1u8, 3, 200], &[3], &[3u8, 9, 100], &[3], &mut out, &[3], &p).unwrap();
        assert_eq!(out, [4, 12, 255]);
        let QuantAdd::General(p) =
            quant_add_params(TfLiteType::kTfLiteUInt8, qp(s, 0), qp(s, 0), qp(3.0 * s, 0), kTfLiteActNone, false)
                .unwrap()
        else {
            panic!()
        };
        add_quantized(&[1u8, 3, 200], &[3], &[2u8, 9, 100], &[3], &mut out, &[3], &p).unwrap();
        assert_eq!(out, [1, 4, 100]);
    }

    #[test]
    fn int8_broadcast_with_relu() {
        let s = 0.05f32;
        let QuantAdd::General(p) =
            quant_add_params(TfLiteType::kTfLiteInt8, qp(s, -10), qp(s, 5), qp(2.0 * s, 0), kTfLiteActRelu, false)
                .unwrap()
        else {
            panic!()
        };
        assert_eq!((p.act_min, p.act_max), (0, 127));
        // a: [2, 2] = {-10, 0, 10, 30} -> real {0, 0.5, 1.0, 2.0}; b: [2] = {5, -15} -> {0, -1}.
        let mut out = [0i8; 4];
        add_quantized(&[-10i8, 0, 10, 30], &[2, 2], &[5i8, -15], &[2], &mut out, &[2, 2], &p).unwrap();
        // Sums {0, -0.5, 1.0, 1.0} at scale 0.1: {0, -5 -> relu 0, 10, 10}.
        assert_eq!(out, [0, 0, 10, 10]);
    }

    #[test]
    fn int16_paths() {
        let s = 2f32.powi(-12);
        let pot =
            quant_add_params(TfLiteType::kTfLiteInt16, qp(s, 0), qp(s, 0), qp(s, 0), kTfLiteActNone, true).unwrap();
        assert!(matches!(pot, QuantAdd::Pot16(_)));
        let general =
            quant_add_params(TfLiteType::kTfLiteInt16, qp(s, 0), qp(s, 0), qp(s, 0), kTfLiteActNone, false).unwrap();
        let QuantAdd::General(g) = general else { panic!() };
        assert_eq!(g.left_shift, 15);
        let mut out = [0i16; 3];
        add_quantized::<i16>(&[100, -2000, 30000], &[3], &[23, 1000, 5000], &[3], &mut out, &[3], &g).unwrap();
        assert_eq!(out, [123, -1000, 32767]);
        let QuantAdd::Pot16(pp) = pot else { panic!() };
        add_i16_pot(&[100, -2000, 30000], &[3], &[23, 1000, 5000], &[3], &mut out, &[3], &pp).unwrap();
        assert_eq!(out, [123, -1000, 32767]);
        // Nonzero zero point refused; non-power-of-two scales fall back to general.
        assert!(
            quant_add_params(TfLiteType::kTfLiteInt16, qp(s, 1), qp(s, 0), qp(s, 0), kTfLiteActNone, true).is_err()
        );
        assert!(matches!(
            quant_add_params(TfLiteType::kTfLiteInt16, qp(0.3, 0), qp(0.3, 0), qp(0.3, 0), kTfLiteActNone, true)
                .unwrap(),
            QuantAdd::General(_)
        ));
    }

    #[test]
    fn mismatched_sizes_are_errors() {
        let mut out = [0.0f32; 2];
        let e = add_f32(&[1.0, 2.0], &[2], &[1.0, 2.0, 3.0], &[3], &mut out, &[2], kTfLiteActNone).unwrap_err();
        assert!(!e.message.is_empty());
        assert!(
            quant_add_params(TfLiteType::kTfLiteFloat32, qp(1.0, 0), qp(1.0, 0), qp(1.0, 0), kTfLiteActNone, false)
                .is_err()
        );
    }

    #[test]
    fn registration_glue() {
        use crate::abi::types::TfLiteStatus;
        use crate::kernels::test_util::{Graph, qp};
        use TfLiteType::*;
        let reg = registration();
        assert_eq!(reg.builtin_code, TfLiteBuiltinOperator::kTfLiteBuiltinAdd as i32);
        let params = || Some(TfLiteAddParams { activation: kTfLiteActNone, pot_scale_int16: true });
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteFloat32, &[2, 1, 3], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], None, false);
        let b = g.tensor(kTfLiteFloat32, &[1, 4, 1], &[10.0f32, 20.0, 30.0, 40.0], None, true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[a, b], &[o], params()), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 4, 3]);
        let out = g.data::<f32>(o);
        assert_eq!(&out[..3], &[11.0, 12.0, 13.0]);
        assert_eq!(&out[21..], &[44.0, 45.0, 46.0]);

        // int8, quantized with different scales.
        let qa = g.tensor(kTfLiteInt8, &[2], &[20i8, -20], Some(qp(0.1, 0)), false);
        let qb = g.tensor(kTfLiteInt8, &[1], &[10i8], Some(qp(0.2, 0)), false);
        let qo = g.output(kTfLiteInt8, Some(qp(0.1, 0)));
        assert_eq!(g.run(&reg, &[qa, qb], &[qo], params()), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(qo), vec![40, 0]);

        // int32 with RELU.
        let ia = g.tensor(kTfLiteInt32, &[3], &[-5i32, 0, 5], None, false);
        let io = g.output(kTfLiteInt32, None);
        let relu = Some(TfLiteAddParams { activation: kTfLiteActRelu, pot_scale_int16: true });
        assert_eq!(g.run(&reg, &[ia, ia], &[io], relu), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(io), vec![0, 0, 10]);

        // Errors, never panics: wrong input count, mixed types, missing params,
        // shapes that do not broadcast, unsupported type.
        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[a], &[o2], params()), TfLiteStatus::kTfLiteError);
        assert_eq!(g.run(&reg, &[a, qa], &[o2], params()), TfLiteStatus::kTfLiteError);
        assert_eq!(g.run::<TfLiteAddParams>(&reg, &[a, b], &[o2], None), TfLiteStatus::kTfLiteError);
        let c = g.tensor(kTfLiteFloat32, &[2], &[1.0f32, 2.0], None, false);
        assert_eq!(g.run(&reg, &[a, c], &[o2], params()), TfLiteStatus::kTfLiteError);
        let s = g.tensor(kTfLiteBool, &[1], &[1u8], None, false);
        let so = g.output(kTfLiteBool, None);
        assert_eq!(g.run(&reg, &[s, s], &[so], params()), TfLiteStatus::kTfLiteError);
    }
}
