//! One-input elementwise math: EXP, LOG, SQRT, RSQRT, SQUARE, ABS, NEG, COS, FLOOR,
//! CEIL, ROUND and SIGN (TFLite `kernels/elementwise.cc`, `exp.cc`, `neg.cc`, `floor.cc`,
//! `ceil.cc`, `round.cc`, `sign.cc`).
//!
//! float32 uses the C library's single-precision functions, as TFLite's `std::` calls do;
//! ROUND rounds half to even. Integer and quantized variants, where TFLite has them:
//! EXP int8 / int16 and LOG int8 / int16 through `LUTPopulate` tables; RSQRT int8 through
//! `GetInvSqrtQuantizedMultiplierExp` (negative real inputs are an error), int16 through a
//! table; ABS int8 / int16 (quantized, rescaled when the scales differ), plain int16 and
//! int32; NEG int32 / int64 (wrapping); SIGN float64 and int32.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::fixed_point::{lut_lookup_int16, lut_populate_8bit, lut_populate_int16, rescale};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{
    multiply_by_quantized_multiplier, rounding_divide_by_pot, saturating_rounding_doubling_high_mul as srdhm,
    try_quantize_multiplier,
};
use crate::kernels::shape_util::{check_out_shape, in_op, op_error, unary_operands};

/// The ops of this file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unary {
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Square,
    Abs,
    Neg,
    Cos,
    Floor,
    Ceil,
    Round,
    Sign,
}

impl Unary {
    /// The schema's name.
    pub const fn name(self) -> &'static str {
        match self {
            Unary::Exp => "EXP",
            Unary::Log => "LOG",
            Unary::Sqrt => "SQRT",
            Unary::Rsqrt => "RSQRT",
            Unary::Square => "SQUARE",
            Unary::Abs => "ABS",
            Unary::Neg => "NEG",
            Unary::Cos => "COS",
            Unary::Floor => "FLOOR",
            Unary::Ceil => "CEIL",
            Unary::Round => "ROUND",
            Unary::Sign => "SIGN",
        }
    }

    /// The float32 function.
    pub fn f32_fn(self) -> fn(f32) -> f32 {
        match self {
            Unary::Exp => f32::exp,
            Unary::Log => f32::ln,
            Unary::Sqrt => f32::sqrt,
            Unary::Rsqrt => |x| 1.0 / x.sqrt(),
            Unary::Square => |x| x * x,
            Unary::Abs => f32::abs,
            Unary::Neg => |x| -x,
            Unary::Cos => f32::cos,
            Unary::Floor => f32::floor,
            Unary::Ceil => f32::ceil,
            Unary::Round => f32::round_ties_even,
            Unary::Sign => |x| {
                if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            },
        }
    }

    fn supports(self, t: TfLiteType) -> bool {
        use TfLiteType::*;
        match self {
            Unary::Exp | Unary::Log | Unary::Rsqrt => matches!(t, kTfLiteFloat32 | kTfLiteInt8 | kTfLiteInt16),
            Unary::Abs => matches!(t, kTfLiteFloat32 | kTfLiteInt8 | kTfLiteInt16 | kTfLiteInt32),
            Unary::Neg => matches!(t, kTfLiteFloat32 | kTfLiteInt32 | kTfLiteInt64),
            Unary::Sign => matches!(t, kTfLiteFloat32 | kTfLiteFloat64 | kTfLiteInt32),
            _ => t == kTfLiteFloat32,
        }
    }
}

macro_rules! registrations {
    ($($fn_name:ident, $kind:ident, $code:ident;)*) => {
        $(
            #[doc = concat!("The ", stringify!($kind), " registration.")]
            pub fn $fn_name() -> TfLiteRegistration {
                kernel::registration::<UnaryKernel<{ Unary::$kind as u8 }>>(TfLiteBuiltinOperator::$code)
            }
        )*

        /// The op whose discriminant is `op`.
        const fn unary_of(op: u8) -> Unary {
            $(if op == Unary::$kind as u8 {
                return Unary::$kind;
            })*
            Unary::Sign
        }
    };
}

registrations! {
    exp_registration, Exp, kTfLiteBuiltinExp;
    log_registration, Log, kTfLiteBuiltinLog;
    sqrt_registration, Sqrt, kTfLiteBuiltinSqrt;
    rsqrt_registration, Rsqrt, kTfLiteBuiltinRsqrt;
    square_registration, Square, kTfLiteBuiltinSquare;
    abs_registration, Abs, kTfLiteBuiltinAbs;
    neg_registration, Neg, kTfLiteBuiltinNeg;
    cos_registration, Cos, kTfLiteBuiltinCos;
    floor_registration, Floor, kTfLiteBuiltinFloor;
    ceil_registration, Ceil, kTfLiteBuiltinCeil;
    round_registration, Round, kTfLiteBuiltinRound;
    sign_registration, Sign, kTfLiteBuiltinSign;
}

// ---------------------------------------------------------------------------------------
// Quantized maths
// ---------------------------------------------------------------------------------------

/// TFLite's `GetInvSqrtQuantizedMultiplierExp` (with `reverse_shift = -1`): a Q0.31
/// multiplier and left shift for `1 / sqrt(input)`.
pub fn inv_sqrt_multiplier_exp(input: i32) -> (i32, i32) {
    if input <= 1 {
        return (i32::MAX, 0);
    }
    let mut input = input;
    let mut shift = 11i32;
    while input >= (1 << 29) {
        input /= 4;
        shift += 1;
    }
    let max_left_shift_bits = (input as u32).leading_zeros() as i32 - 1;
    let left_shift_bit_pairs = max_left_shift_bits / 2 - 1;
    shift -= left_shift_bit_pairs;
    input <<= 2 * left_shift_bit_pairs;
    // Newton-Raphson in Q3.28.
    let half_input = rounding_divide_by_pot(input >> 1, 1);
    const HALF_THREE: i32 = (1 << 28) + (1 << 27);
    let mut x: i32 = 1 << 28;
    for _ in 0..5 {
        let x3 = rescale(srdhm(srdhm(x, x), x), 9, 3);
        x = rescale(srdhm(HALF_THREE, x).wrapping_sub(srdhm(half_input, x3)), 6, 3);
    }
    const HALF_SQRT_2: i32 = 1_518_500_250;
    let mut raw = srdhm(x, HALF_SQRT_2);
    if shift < 0 {
        raw = raw.wrapping_shl((-shift) as u32);
        shift = 0;
    }
    (raw, -shift)
}

/// Quantized RSQRT of one int8 value (`RsqrtEvalQuantizedInt8`); `None` for a negative
/// real input.
pub fn rsqrt_int8_one(x: i32, input_offset: i32, output_offset: i32, multiplier: i32, shift: i32) -> Option<i8> {
    if x < input_offset {
        return None;
    }
    let value = x - input_offset;
    if value == 0 {
        return Some(i8::MAX);
    }
    const K_SHIFT: i32 = 20;
    let (m, s) = inv_sqrt_multiplier_exp(value);
    let data = multiply_by_quantized_multiplier(1, m, s + K_SHIFT);
    let out = multiply_by_quantized_multiplier(data, multiplier, shift - K_SHIFT).wrapping_add(output_offset);
    Some(out.clamp(-128, 127) as i8)
}

/// `output_min` of LOG's table: the real value of the type's minimum.
fn log_output_min(t: TfLiteType, zero_point: i32, scale: f32) -> f32 {
    let min = if t == TfLiteType::kTfLiteInt8 { i32::from(i8::MIN) } else { i32::from(i16::MIN) };
    (min - zero_point) as f32 * scale
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

/// True for the tensors `GenericPrepare` treats as quantized (int8, or int16 with
/// quantization parameters).
fn quantized(t: &TensorView<'_>) -> bool {
    t.dtype == TfLiteType::kTfLiteInt8 || (t.dtype == TfLiteType::kTfLiteInt16 && t.affine_quant().is_some())
}

fn check(kind: Unary, input: &TensorView<'_>, out: &TensorView<'_>) -> Result<()> {
    let op = kind.name();
    if !kind.supports(input.dtype) {
        return Err(op_error(op, format!("type {} is not supported", input.dtype.name())));
    }
    let elementwise_q = matches!(kind, Unary::Log | Unary::Rsqrt | Unary::Abs) && quantized(input);
    if elementwise_q && (input.affine_quant().is_none() || out.affine_quant().is_none()) {
        return Err(op_error(op, "quantized input and output need affine quantization"));
    }
    let int16_zero_points = match kind {
        Unary::Exp => input.dtype == TfLiteType::kTfLiteInt16,
        Unary::Log | Unary::Rsqrt | Unary::Abs => elementwise_q && input.dtype == TfLiteType::kTfLiteInt16,
        _ => false,
    };
    if int16_zero_points && (input.quant().zero_point != 0 || out.quant().zero_point != 0) {
        return Err(op_error(op, "int16 zero points must be 0"));
    }
    if kind == Unary::Exp && input.dtype == TfLiteType::kTfLiteInt16 && input.quant().scale == 0.0 {
        return Err(op_error(op, "int16 input needs a scale"));
    }
    Ok(())
}

/// What Prepare derives for the quantized variants: tables and multipliers.
enum Plan {
    /// Nothing derived (float, plain integer variants).
    Plain,
    /// Quantized ABS: the multiplier of `s_in / s_out`, `None` when the scales are equal.
    AbsQuant(Option<(i32, i32)>),
    /// int8 EXP / LOG: the 256-entry table.
    Lut8(Box<[u8; 256]>),
    /// int16 EXP / LOG / RSQRT: the 513-entry interpolated table.
    Lut16(Box<[i16; 513]>),
    /// int8 RSQRT: the output multiplier of `1 / (sqrt(s_in) * s_out)`.
    RsqrtI8((i32, i32)),
}

fn plan(kind: Unary, input: &TensorView<'_>, out: &TensorView<'_>) -> Result<Plan> {
    let (qi, qo) = (input.quant(), out.quant());
    use TfLiteType::*;
    Ok(match (kind, input.dtype) {
        (Unary::Abs, kTfLiteInt8 | kTfLiteInt16) if quantized(input) => {
            let needs_rescale = qi.scale != qo.scale;
            let rescale =
                if needs_rescale { Some(try_quantize_multiplier(f64::from(qi.scale / qo.scale))?) } else { None };
            Plan::AbsQuant(rescale)
        }
        (Unary::Exp, kTfLiteInt8) => {
            Plan::Lut8(Box::new(lut_populate_8bit(true, qi.scale, qi.zero_point, qo.scale, qo.zero_point, f32::exp)))
        }
        (Unary::Log, kTfLiteInt8) => {
            let output_min = log_output_min(kTfLiteInt8, qo.zero_point, qo.scale);
            Plan::Lut8(Box::new(lut_populate_8bit(true, qi.scale, qi.zero_point, qo.scale, qo.zero_point, move |v| {
                if v <= 0.0 { output_min } else { v.ln() }
            })))
        }
        (Unary::Exp | Unary::Log | Unary::Rsqrt, kTfLiteInt16) => Plan::Lut16(Box::new(match kind {
            Unary::Exp => lut_populate_int16(qi.scale, qi.zero_point, qo.scale, qo.zero_point, f32::exp),
            Unary::Log => {
                let output_min = log_output_min(kTfLiteInt16, qo.zero_point, qo.scale);
                lut_populate_int16(qi.scale, qi.zero_point, qo.scale, qo.zero_point, move |v| {
                    if v <= 0.0 { output_min } else { v.ln() }
                })
            }
            _ => {
                let out_scale = qo.scale;
                lut_populate_int16(qi.scale, qi.zero_point, qo.scale, qo.zero_point, move |v| {
                    if v <= 0.0 { f32::from(i16::MAX) * out_scale } else { 1.0 / v.sqrt() }
                })
            }
        })),
        (Unary::Rsqrt, kTfLiteInt8) => Plan::RsqrtI8(rsqrt_multiplier(qi.scale, qo.scale)?),
        _ => Plan::Plain,
    })
}

/// One of this file's ops (`OP` is its [`Unary`] discriminant); its State is the [`Plan`]:
/// the lookup table or multiplier of the quantized variants.
struct UnaryKernel<const OP: u8>;

impl<const OP: u8> BuiltinKernel for UnaryKernel<OP> {
    const NAME: &'static str = unary_of(OP).name();
    type Params = ();
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Plan> {
        let kind = unary_of(OP);
        let (input, out) = unary_operands(ctx, kind.name())?;
        check(kind, &input, &out)?;
        let plan = plan(kind, &input, &out).map_err(in_op(kind.name()))?;
        ctx.resize_output(0, input.shape).map_err(in_op(kind.name()))?;
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut Plan) -> Result<()> {
        eval(ctx, unary_of(OP), plan)
    }
}

/// `SetRsqrtOutputMultiplier`: `1 / (sqrt(s_in) * s_out)`.
fn rsqrt_multiplier(input_scale: f32, output_scale: f32) -> Result<(i32, i32)> {
    try_quantize_multiplier(1.0 / f64::from(input_scale.sqrt() * output_scale))
}

fn map<T: crate::kernels::api::Element, U: crate::kernels::api::Element>(
    input: &[T],
    out: &mut [U],
    f: impl Fn(T) -> U,
) -> Result<()> {
    if input.len() != out.len() {
        crate::bail!("input holds {} elements, output {}", input.len(), out.len());
    }
    for (o, &x) in out.iter_mut().zip(input) {
        *o = f(x);
    }
    Ok(())
}

fn eval(ctx: &OpCtx<'_>, kind: Unary, plan: &Plan) -> Result<()> {
    let op = kind.name();
    let (input, mut out) = unary_operands(ctx, op)?;
    check_out_shape(op, out.shape, input.shape)?;
    let (qi, qo) = (input.quant(), out.quant());
    use TfLiteType::*;
    let r = match (kind, input.dtype) {
        (_, kTfLiteFloat32) => map(input.data::<f32>()?, out.data_mut::<f32>()?, kind.f32_fn()),
        (Unary::Sign, kTfLiteFloat64) => map(input.data::<f64>()?, out.data_mut::<f64>()?, |x| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        }),
        (Unary::Sign, kTfLiteInt32) => map(input.data::<i32>()?, out.data_mut::<i32>()?, i32::signum),
        (Unary::Neg, kTfLiteInt32) => map(input.data::<i32>()?, out.data_mut::<i32>()?, i32::wrapping_neg),
        (Unary::Neg, kTfLiteInt64) => map(input.data::<i64>()?, out.data_mut::<i64>()?, i64::wrapping_neg),
        (Unary::Abs, kTfLiteInt32) => map(input.data::<i32>()?, out.data_mut::<i32>()?, i32::wrapping_abs),
        (Unary::Abs, kTfLiteInt16) if !quantized(&input) => {
            map(input.data::<i16>()?, out.data_mut::<i16>()?, |x| i32::from(x).abs() as i16)
        }
        (Unary::Abs, kTfLiteInt8 | kTfLiteInt16) => {
            let Plan::AbsQuant(rescale) = *plan else { return Err(op_error(op, "invoked without its plan")) };
            let f = |x: i32, min: i32, max: i32| -> i32 {
                let v = x.wrapping_sub(qi.zero_point).wrapping_abs();
                let o = match rescale {
                    Some((m, s)) => multiply_by_quantized_multiplier(v, m, s),
                    None => v,
                };
                o.wrapping_add(qo.zero_point).clamp(min, max)
            };
            if input.dtype == kTfLiteInt8 {
                map(input.data::<i8>()?, out.data_mut::<i8>()?, |x| f(i32::from(x), -128, 127) as i8)
            } else {
                map(input.data::<i16>()?, out.data_mut::<i16>()?, |x| f(i32::from(x), -32768, 32767) as i16)
            }
        }
        (Unary::Exp | Unary::Log, kTfLiteInt8) => {
            let Plan::Lut8(lut) = plan else { return Err(op_error(op, "invoked without its table")) };
            map(input.data::<i8>()?, out.data_mut::<i8>()?, |x| lut[x as u8 as usize] as i8)
        }
        (Unary::Exp | Unary::Log | Unary::Rsqrt, kTfLiteInt16) => {
            let Plan::Lut16(lut) = plan else { return Err(op_error(op, "invoked without its table")) };
            let x = input.data::<i16>()?;
            if kind == Unary::Rsqrt && x.iter().any(|&v| i32::from(v) < qi.zero_point) {
                return Err(op_error(op, "Rsqrt is only defined for positive values"));
            }
            map(x, out.data_mut::<i16>()?, |v| lut_lookup_int16(v, lut))
        }
        (Unary::Rsqrt, kTfLiteInt8) => {
            let Plan::RsqrtI8((m, s)) = *plan else { return Err(op_error(op, "invoked without its multiplier")) };
            let x = input.data::<i8>()?;
            let o = out.data_mut::<i8>()?;
            if x.len() != o.len() {
                return Err(op_error(op, "input and output sizes differ"));
            }
            for (oc, &v) in o.iter_mut().zip(x) {
                *oc = rsqrt_int8_one(i32::from(v), qi.zero_point, qo.zero_point, m, s)
                    .ok_or_else(|| op_error(op, "Rsqrt is only defined for positive values"))?;
            }
            Ok(())
        }
        (_, other) => Err(Error::new(format!("type {} is not supported", other.name()))),
    };
    r.map_err(in_op(op))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};

    use TfLiteType::*;

    #[test]
    fn float_functions() {
        let r = Unary::Round.f32_fn();
        assert_eq!([r(0.5), r(1.5), r(2.5), r(-0.5), r(-1.5), r(2.4)], [0.0, 2.0, 2.0, -0.0, -2.0, 2.0]);
        let s = Unary::Sign.f32_fn();
        assert_eq!([s(-3.0), s(0.0), s(2.0)], [-1.0, 0.0, 1.0]);
        assert_eq!(s(f32::NAN), 0.0);
        assert_eq!(Unary::Rsqrt.f32_fn()(4.0), 0.5);
        assert_eq!(Unary::Square.f32_fn()(-3.0), 9.0);
    }

    #[test]
    fn inv_sqrt() {
        for v in [2, 3, 4, 100, 12345, 1 << 20, (1 << 30) + 7] {
            let (m, s) = inv_sqrt_multiplier_exp(v);
            let got = f64::from(m) / f64::from(1u32 << 31) * 2f64.powi(s);
            let want = 1.0 / f64::from(v).sqrt();
            assert!((got / want - 1.0).abs() < 1e-5, "{v}: {got} vs {want}");
        }
        assert_eq!(inv_sqrt_multiplier_exp(1), (i32::MAX, 0));
    }

    #[test]
    fn rsqrt_int8() {
        let (m, s) = rsqrt_multiplier(0.25, 1.0 / 64.0).unwrap();
        // Input 4 * 0.25 = 1 -> 1 -> 64 steps; input 16 -> 4 -> 0.5 -> 32 steps.
        assert_eq!(rsqrt_int8_one(4, 0, 0, m, s), Some(64));
        assert_eq!(rsqrt_int8_one(16, 0, 0, m, s), Some(32));
        assert_eq!(rsqrt_int8_one(0, 0, 0, m, s), Some(127));
        assert_eq!(rsqrt_int8_one(-1, 0, 0, m, s), None);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[3], &[-1.5f32, 0.25, 2.5], None, false);
        for (reg, want) in [
            (abs_registration(), [1.5f32, 0.25, 2.5]),
            (neg_registration(), [1.5, -0.25, -2.5]),
            (floor_registration(), [-2.0, 0.0, 2.0]),
            (ceil_registration(), [-1.0, 1.0, 3.0]),
            (round_registration(), [-2.0, 0.0, 2.0]),
            (sign_registration(), [-1.0, 1.0, 1.0]),
            (square_registration(), [2.25, 0.0625, 6.25]),
        ] {
            let o = g.output(kTfLiteFloat32, None);
            assert_eq!(g.run::<()>(&reg, &[x], &[o], None), TfLiteStatus::kTfLiteOk);
            assert_eq!(g.data::<f32>(o), want.to_vec());
        }
        let q = g.tensor(kTfLiteInt8, &[3], &[-10i8, 0, 10], Some(qp(0.1, 0)), false);
        let qo = g.output(kTfLiteInt8, Some(qp(0.1, 0)));
        assert_eq!(g.run::<()>(&abs_registration(), &[q], &[qo], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(qo), vec![10, 0, 10]);
        let eo = g.output(kTfLiteInt8, Some(qp(0.05, -128)));
        assert_eq!(g.run::<()>(&exp_registration(), &[q], &[eo], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(eo)[1], -128 + 20);
        let ro = g.output(kTfLiteInt8, Some(qp(0.1, 0)));
        assert_eq!(g.run::<()>(&rsqrt_registration(), &[q], &[ro], None), TfLiteStatus::kTfLiteError);
        let i = g.tensor(kTfLiteInt32, &[2], &[3i32, -4], None, false);
        let io = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&sqrt_registration(), &[i], &[io], None), TfLiteStatus::kTfLiteError);
    }
}
