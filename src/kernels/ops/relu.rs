//! RELU, RELU6 and RELU_N1_TO_1 (TFLite `kernels/activations.cc`, `ReluEval`,
//! `Relu6Eval`, `Relu1Eval`).
//!
//! Float32 clamps (NaN passes through, as the reference loops do). Quantized uint8 / int8
//! (and int16 for RELU and RELU6, zero points 0) requantize from the input's to the
//! output's parameters with `QuantizeMultiplier(scale_in / scale_out)` and clamp to the
//! activation's bounds quantized with the output's parameters (`QuantizedReluX`).

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, QuantParams, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{QuantInt, multiply_by_quantized_multiplier, try_quantize_multiplier};
use crate::kernels::threadpool::elementwise::split_unary_f32;
use crate::kernels::threadpool::recommended_threads;
use crate::microkernels::f32_vunary::{self, UnaryOp};

/// Which member of the ReLU family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReluKind {
    /// `max(0, x)`.
    Relu,
    /// `min(max(0, x), 6)`.
    Relu6,
    /// `min(max(-1, x), 1)`.
    ReluN1To1,
}

impl ReluKind {
    const fn name(self) -> &'static str {
        match self {
            ReluKind::Relu => "RELU",
            ReluKind::Relu6 => "RELU6",
            ReluKind::ReluN1To1 => "RELU_N1_TO_1",
        }
    }

    /// Real bounds; `None` for no upper bound.
    fn bounds(self) -> (f32, Option<f32>) {
        match self {
            ReluKind::Relu => (0.0, None),
            ReluKind::Relu6 => (0.0, Some(6.0)),
            ReluKind::ReluN1To1 => (-1.0, Some(1.0)),
        }
    }

    fn supports(self, dtype: TfLiteType) -> bool {
        use TfLiteType::*;
        match self {
            ReluKind::Relu | ReluKind::Relu6 => {
                matches!(dtype, kTfLiteFloat32 | kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16)
            }
            ReluKind::ReluN1To1 => matches!(dtype, kTfLiteFloat32 | kTfLiteUInt8 | kTfLiteInt8),
        }
    }
}

/// The RELU registration.
pub fn relu_registration() -> TfLiteRegistration {
    kernel::registration::<Relu<0>>(TfLiteBuiltinOperator::kTfLiteBuiltinRelu)
}

/// The RELU registration (alias of [`relu_registration`], for the `ops::<op>::registration`
/// convention).
pub fn registration() -> TfLiteRegistration {
    relu_registration()
}

/// The RELU6 registration.
pub fn relu6_registration() -> TfLiteRegistration {
    kernel::registration::<Relu<1>>(TfLiteBuiltinOperator::kTfLiteBuiltinRelu6)
}

/// The RELU_N1_TO_1 registration.
pub fn relu_n1_to_1_registration() -> TfLiteRegistration {
    kernel::registration::<Relu<2>>(TfLiteBuiltinOperator::kTfLiteBuiltinReluN1To1)
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// Float ReLU family, with the reference kernels' comparisons (NaN passes through).
/// Runs on up to `threads` threads when the tensor is large.
pub fn relu_f32(kind: ReluKind, input: &[f32], out: &mut [f32], threads: usize) -> Result<()> {
    if input.len() != out.len() {
        return Err(Error::new(format!("input holds {} elements, output {}", input.len(), out.len())));
    }
    let (lo, hi) = kind.bounds();
    // `x > hi ? hi : x < lo ? lo : x` is `min(max(x, lo), hi)` for `lo < hi`, NaN included.
    let hi = hi.unwrap_or(f32::INFINITY);
    split_unary_f32(threads, input, out, &|x, o| {
        f32_vunary::apply(crate::microkernels::table(), UnaryOp::Clamp { lo, hi }, x, o)
    })
}

/// Parameters of a quantized ReLU (`ReluParams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuantReluParams {
    pub input_offset: i32,
    pub output_offset: i32,
    pub output_multiplier: i32,
    pub output_shift: i32,
    pub act_min: i32,
    pub act_max: i32,
}

impl QuantReluParams {
    /// As `ReluPrepare` + `QuantizedReluX`: the multiplier `scale_in / scale_out` (an `f32`
    /// division) and the bounds `zp_out + roundf(bound / scale_out)`, within `dtype`.
    pub fn new(kind: ReluKind, dtype: TfLiteType, input: QuantParams, output: QuantParams) -> Result<QuantReluParams> {
        let (tmin, tmax) = crate::kernels::quant::quantized_type_range(dtype)
            .ok_or_else(|| Error::new(format!("type {} is not a quantized type", dtype.name())))?;
        if dtype == TfLiteType::kTfLiteInt16 && (input.zero_point != 0 || output.zero_point != 0) {
            return Err(Error::new(format!(
                "int16 zero points must be 0 (got {} and {})",
                input.zero_point, output.zero_point
            )));
        }
        let (output_multiplier, output_shift) = try_quantize_multiplier(f64::from(input.scale / output.scale))
            .map_err(|e| Error::new(format!("scales {} / {}: {}", input.scale, output.scale, e.message)))?;
        let quantize = |f: f32| output.zero_point.wrapping_add((f / output.scale).round() as i32);
        let (lo, hi) = kind.bounds();
        let act_min = tmin.max(quantize(lo));
        let act_max = match hi {
            None => tmax,
            Some(hi) => tmax.min(quantize(hi)),
        };
        Ok(QuantReluParams {
            input_offset: input.zero_point,
            output_offset: output.zero_point,
            output_multiplier,
            output_shift,
            act_min,
            act_max,
        })
    }

    /// One requantized, clamped value (reference `ReluX`).
    #[inline]
    pub fn apply(&self, x: i32) -> i32 {
        let v = self.output_offset.wrapping_add(multiply_by_quantized_multiplier(
            x.wrapping_sub(self.input_offset),
            self.output_multiplier,
            self.output_shift,
        ));
        // max then min, in this order, as the reference.
        v.max(self.act_min).min(self.act_max)
    }
}

/// Quantized ReLU family on uint8 / int8 / int16 slices.
pub fn relu_quantized<T: QuantInt>(input: &[T], out: &mut [T], p: &QuantReluParams) -> Result<()> {
    if input.len() != out.len() {
        return Err(Error::new(format!("input holds {} elements, output {}", input.len(), out.len())));
    }
    for (o, &x) in out.iter_mut().zip(input) {
        *o = T::from_i32(p.apply(x.to_i32()));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

fn operands<'a>(ctx: &OpCtx<'a>, kind: ReluKind) -> Result<(TensorView<'a>, crate::kernels::api::TensorViewMut<'a>)> {
    let op = kind.name();
    if ctx.num_inputs() != 1 || ctx.num_outputs() != 1 {
        return Err(Error::new(format!(
            "{op}: expected 1 input and 1 output, got {} and {}",
            ctx.num_inputs(),
            ctx.num_outputs()
        )));
    }
    let input = ctx.input(0).map_err(|e| Error::new(format!("{op}: {}", e.message)))?;
    let out = ctx.output(0).map_err(|e| Error::new(format!("{op}: {}", e.message)))?;
    if input.dtype != out.dtype {
        return Err(Error::new(format!(
            "{op}: output type {} differs from the input type {}",
            out.dtype.name(),
            input.dtype.name()
        )));
    }
    if !kind.supports(input.dtype) {
        return Err(Error::new(format!("{op}: type {} is not supported", input.dtype.name())));
    }
    Ok((input, out))
}

fn quant_params(kind: ReluKind, input: &TensorView<'_>, out: &TensorView<'_>) -> Result<QuantReluParams> {
    QuantReluParams::new(kind, input.dtype, input.quant(), out.quant())
        .map_err(|e| Error::new(format!("{}: {}", kind.name(), e.message)))
}

/// The kernel to run, chosen at Prepare from the input type.
enum Plan {
    F32,
    U8(QuantReluParams),
    I8(QuantReluParams),
    I16(QuantReluParams),
}

const fn kind_of(kind: u8) -> ReluKind {
    match kind {
        0 => ReluKind::Relu,
        1 => ReluKind::Relu6,
        _ => ReluKind::ReluN1To1,
    }
}

/// A member of the ReLU family (`KIND` 0: RELU, 1: RELU6, 2: RELU_N1_TO_1); its State is
/// the [`Plan`]: float, or the quantized requantization multiplier and clamp bounds.
struct Relu<const KIND: u8>;

impl<const KIND: u8> BuiltinKernel for Relu<KIND> {
    const NAME: &'static str = kind_of(KIND).name();
    type Params = ();
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Plan> {
        let kind = kind_of(KIND);
        let (input, out) = operands(ctx, kind)?;
        let plan = match input.dtype {
            TfLiteType::kTfLiteFloat32 => Plan::F32,
            TfLiteType::kTfLiteUInt8 => Plan::U8(quant_params(kind, &input, &out)?),
            TfLiteType::kTfLiteInt8 => Plan::I8(quant_params(kind, &input, &out)?),
            _ => Plan::I16(quant_params(kind, &input, &out)?),
        };
        ctx.resize_output(0, input.shape)?;
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut Plan) -> Result<()> {
        let kind = kind_of(KIND);
        let (input, mut out) = operands(ctx, kind)?;
        if out.shape != input.shape {
            return Err(Error::new(format!(
                "{}: output shape {:?} differs from the input shape {:?}",
                kind.name(),
                out.shape,
                input.shape
            )));
        }
        let r = match plan {
            Plan::F32 => relu_f32(kind, input.data()?, out.data_mut()?, recommended_threads(ctx)),
            Plan::U8(q) => relu_quantized::<u8>(input.data()?, out.data_mut()?, q),
            Plan::I8(q) => relu_quantized::<i8>(input.data()?, out.data_mut()?, q),
            Plan::I16(q) => relu_quantized::<i16>(input.data()?, out.data_mut()?, q),
        };
        r.map_err(|e| Error::new(format!("{}: {}", kind.name(), e.message)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qp(scale: f32, zero_point: i32) -> QuantParams {
        QuantParams { scale, zero_point }
    }

    #[test]
    fn float() {
        let input = [-3.0f32, -1.0, -0.5, 0.0, 0.5, 2.0, 7.0, f32::NAN];
        let mut out = [0.0f32; 8];
        relu_f32(ReluKind::Relu, &input, &mut out, 1).unwrap();
        assert_eq!(&out[..7], &[0.0, 0.0, 0.0, 0.0, 0.5, 2.0, 7.0]);
        assert!(out[7].is_nan());
        relu_f32(ReluKind::Relu6, &input, &mut out, 1).unwrap();
        assert_eq!(&out[..7], &[0.0, 0.0, 0.0, 0.0, 0.5, 2.0, 6.0]);
        relu_f32(ReluKind::ReluN1To1, &input, &mut out, 1).unwrap();
        assert_eq!(&out[..7], &[-1.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.0]);
        assert!(relu_f32(ReluKind::Relu, &input, &mut out[..2], 1).is_err());
    }

    #[test]
    fn int8_same_params() {
        // activations_test.cc QuantizedActivationsOpTest Relu6Int8 in spirit: scale 8/255-ish.
        let s = 0.0625f32;
        let p = QuantReluParams::new(ReluKind::Relu6, TfLiteType::kTfLiteInt8, qp(s, -10), qp(s, -10)).unwrap();
        assert_eq!((p.act_min, p.act_max), (-10, 86));
        let mut out = [0i8; 5];
        relu_quantized(&[-128i8, -11, -10, 50, 127], &mut out, &p).unwrap();
        assert_eq!(out, [-10, -10, -10, 50, 86]);
    }

    #[test]
    fn uint8_requantizes() {
        // Output scale twice the input's: values halve (rounding half away from zero).
        let p = QuantReluParams::new(ReluKind::Relu, TfLiteType::kTfLiteUInt8, qp(0.1, 128), qp(0.2, 0)).unwrap();
        let mut out = [0u8; 5];
        relu_quantized(&[0u8, 127, 128, 131, 255], &mut out, &p).unwrap();
        assert_eq!(out, [0, 0, 0, 2, 64]);
    }

    #[test]
    fn relu_n1_to_1_and_int16() {
        let p = QuantReluParams::new(ReluKind::ReluN1To1, TfLiteType::kTfLiteInt8, qp(0.05, 0), qp(0.05, 0)).unwrap();
        assert_eq!((p.act_min, p.act_max), (-20, 20));
        let p = QuantReluParams::new(ReluKind::Relu, TfLiteType::kTfLiteInt16, qp(0.001, 0), qp(0.001, 0)).unwrap();
        let mut out = [0i16; 3];
        relu_quantized(&[-5i16, 0, 32767], &mut out, &p).unwrap();
        assert_eq!(out, [0, 0, 32767]);
        assert!(QuantReluParams::new(ReluKind::Relu, TfLiteType::kTfLiteInt16, qp(0.001, 3), qp(0.001, 0)).is_err());
        assert!(QuantReluParams::new(ReluKind::Relu, TfLiteType::kTfLiteInt8, qp(0.1, 0), qp(0.0, 0)).is_err());
        assert!(!ReluKind::ReluN1To1.supports(TfLiteType::kTfLiteInt16));
    }

    #[test]
    fn registration_glue() {
        use crate::abi::types::TfLiteStatus;
        use crate::kernels::test_util::Graph;
        use TfLiteType::*;
        assert_eq!(relu_registration().builtin_code, TfLiteBuiltinOperator::kTfLiteBuiltinRelu as i32);
        assert_eq!(relu6_registration().builtin_code, TfLiteBuiltinOperator::kTfLiteBuiltinRelu6 as i32);
        assert_eq!(relu_n1_to_1_registration().builtin_code, TfLiteBuiltinOperator::kTfLiteBuiltinReluN1To1 as i32);
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteFloat32, &[3], &[-2.0f32, 0.5, 9.0], None, false);
        for (reg, want) in [
            (relu_registration(), [0.0f32, 0.5, 9.0]),
            (relu6_registration(), [0.0, 0.5, 6.0]),
            (relu_n1_to_1_registration(), [-1.0, 0.5, 1.0]),
        ] {
            let o = g.output(kTfLiteFloat32, None);
            assert_eq!(g.run::<()>(&reg, &[a], &[o], None), TfLiteStatus::kTfLiteOk);
            assert_eq!(g.data::<f32>(o), want.to_vec());
        }
        let q = g.tensor(kTfLiteInt8, &[3], &[-100i8, 0, 100], Some(qp(0.1, 0)), false);
        let qo = g.output(kTfLiteInt8, Some(qp(0.1, 0)));
        assert_eq!(g.run::<()>(&relu6_registration(), &[q], &[qo], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(qo), vec![0, 0, 60]);
        // int16 RELU_N1_TO_1 is not supported (as in TFLite); mixed types are an error.
        let h = g.tensor(kTfLiteInt16, &[1], &[1i16], Some(qp(0.1, 0)), false);
        let ho = g.output(kTfLiteInt16, Some(qp(0.1, 0)));
        assert_eq!(g.run::<()>(&relu_n1_to_1_registration(), &[h], &[ho], None), TfLiteStatus::kTfLiteError);
        let fo = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&relu_registration(), &[q], &[fo], None), TfLiteStatus::kTfLiteError);
    }
}
