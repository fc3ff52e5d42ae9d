//! Fused activations as TFLite applies them (`kernel_util.h` `CalculateActivationRange`,
//! `kernel_util.cc` `CalculateActivationRangeQuantized`, `common.h`
//! `ActivationFunctionWithMinMax`, `tensor_utils` `ApplyActivationToVector`).
//!
//! Ops with a fused activation (ADD, MUL, FULLY_CONNECTED, ...) clamp to a range: for
//! `Tanh`, `SignBit` and `Sigmoid` that range is the whole type, so those ops ignore them,
//! exactly as TFLite does. Only recurrent kernels apply them as functions ([`apply_f32`]).

use crate::abi::builtin_op_data::TfLiteFusedActivation;
use crate::abi::types::TfLiteType;
use crate::error::{Error, Result};
use crate::kernels::quant::{quantize_value, quantized_type_range};

/// `std::max` (`a < b ? b : a`): keeps `a` when the comparison is false, so a NaN `a`
/// passes through, unlike `f32::max`.
#[inline]
pub fn cpp_max<T: PartialOrd>(a: T, b: T) -> T {
    if a < b { b } else { a }
}

/// `std::min` (`b < a ? b : a`): a NaN `a` passes through.
#[inline]
pub fn cpp_min<T: PartialOrd>(a: T, b: T) -> T {
    if b < a { b } else { a }
}

/// `ActivationFunctionWithMinMax`: `min(max(x, lo), hi)` with C++ semantics (NaN stays NaN).
#[inline]
pub fn clamp_min_max<T: PartialOrd>(x: T, lo: T, hi: T) -> T {
    cpp_min(cpp_max(x, lo), hi)
}

/// `CalculateActivationRange<float>`: the clamp range of a fused activation.
pub fn activation_range_f32(act: TfLiteFusedActivation) -> (f32, f32) {
    use TfLiteFusedActivation::*;
    match act {
        kTfLiteActRelu => (0.0, f32::MAX),
        kTfLiteActRelu6 => (0.0, 6.0),
        kTfLiteActReluN1To1 => (-1.0, 1.0),
        kTfLiteActNone | kTfLiteActTanh | kTfLiteActSignBit | kTfLiteActSigmoid => (f32::MIN, f32::MAX),
    }
}

macro_rules! int_range {
    ($name:ident, $t:ty) => {
        #[doc = concat!("`CalculateActivationRange<", stringify!($t), ">` (unquantized integers).")]
        pub fn $name(act: TfLiteFusedActivation) -> ($t, $t) {
            use TfLiteFusedActivation::*;
            match act {
                kTfLiteActRelu => (0, <$t>::MAX),
                kTfLiteActRelu6 => (0, 6),
                kTfLiteActReluN1To1 => (-1, 1),
                kTfLiteActNone | kTfLiteActTanh | kTfLiteActSignBit | kTfLiteActSigmoid => (<$t>::MIN, <$t>::MAX),
            }
        }
    };
}
int_range!(activation_range_i16, i16);
int_range!(activation_range_i32, i32);
int_range!(activation_range_i64, i64);

/// `CalculateActivationRangeQuantized`: the clamp range, in quantized units of an output
/// with `scale` and `zero_point`, intersected with the range of `dtype` (uint8, int8 or
/// int16; other types are an error, as in TFLite).
pub fn activation_range_quantized(
    act: TfLiteFusedActivation,
    dtype: TfLiteType,
    scale: f32,
    zero_point: i32,
) -> Result<(i32, i32)> {
    use TfLiteFusedActivation::*;
    let (qmin, qmax) = quantized_type_range(dtype)
        .ok_or_else(|| Error::new(format!("no quantized activation range for type {}", dtype.name())))?;
    let q = |f: f32| quantize_value(scale, zero_point, f);
    let (lo, hi) = match act {
        kTfLiteActRelu => (qmin.max(q(0.0)?), qmax),
        kTfLiteActRelu6 => (qmin.max(q(0.0)?), qmax.min(q(6.0)?)),
        kTfLiteActReluN1To1 => (qmin.max(q(-1.0)?), qmax.min(q(1.0)?)),
        kTfLiteActNone | kTfLiteActTanh | kTfLiteActSignBit | kTfLiteActSigmoid => (qmin, qmax),
    };
    // A zero point outside the type's range (or a negative scale) leaves nothing to clamp
    // to; the kernels' clamps need lo <= hi.
    if lo > hi {
        return Err(Error::new(format!(
            "fused activation {} is empty for a {} output with scale {scale} and zero point {zero_point}",
            activation_name(act),
            dtype.name()
        )));
    }
    Ok((lo, hi))
}

/// Applies a fused activation to one float as a function (TFLite's
/// `ApplyActivationToVector`): the ReLU family clamps (NaN passes through), `Tanh` is
/// `tanh`, `SignBit` is 1.0 for a set sign bit (including -0.0) and 0.0 otherwise,
/// `Sigmoid` is `1 / (1 + exp(-x))`.
pub fn apply_f32(x: f32, act: TfLiteFusedActivation) -> f32 {
    use TfLiteFusedActivation::*;
    match act {
        kTfLiteActNone => x,
        kTfLiteActRelu | kTfLiteActRelu6 | kTfLiteActReluN1To1 => {
            let (lo, hi) = activation_range_f32(act);
            clamp_min_max(x, lo, hi)
        }
        kTfLiteActTanh => x.tanh(),
        kTfLiteActSignBit => {
            if x.is_sign_negative() {
                1.0
            } else {
                0.0
            }
        }
        kTfLiteActSigmoid => 1.0 / (1.0 + (-x).exp()),
    }
}

/// The activation's TFLite spelling, for error messages.
pub fn activation_name(act: TfLiteFusedActivation) -> &'static str {
    use TfLiteFusedActivation::*;
    match act {
        kTfLiteActNone => "NONE",
        kTfLiteActRelu => "RELU",
        kTfLiteActReluN1To1 => "RELU_N1_TO_1",
        kTfLiteActRelu6 => "RELU6",
        kTfLiteActTanh => "TANH",
        kTfLiteActSignBit => "SIGN_BIT",
        kTfLiteActSigmoid => "SIGMOID",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TfLiteFusedActivation::*;

    #[test]
    fn an_empty_quantized_activation_range_is_an_error() {
        // Found by the mutation test: a zero point far outside int8 made RELU's range
        // [zero_point, 127], and a kernel's clamp panicked on min > max.
        let e = activation_range_quantized(kTfLiteActRelu, TfLiteType::kTfLiteInt8, 0.5, 2_143_289_344).unwrap_err();
        assert!(e.message.contains("RELU") && e.message.contains("zero point"), "{}", e.message);
        assert!(activation_range_quantized(kTfLiteActRelu6, TfLiteType::kTfLiteInt8, -0.5, 0).is_err());
        assert_eq!(activation_range_quantized(kTfLiteActRelu, TfLiteType::kTfLiteInt8, 0.5, -3).unwrap(), (-3, 127));
    }

    #[test]
    fn float_ranges() {
        assert_eq!(activation_range_f32(kTfLiteActNone), (f32::MIN, f32::MAX));
        assert_eq!(activation_range_f32(kTfLiteActRelu), (0.0, f32::MAX));
        assert_eq!(activation_range_f32(kTfLiteActRelu6), (0.0, 6.0));
        assert_eq!(activation_range_f32(kTfLiteActReluN1To1), (-1.0, 1.0));
        assert_eq!(activation_range_f32(kTfLiteActTanh), (f32::MIN, f32::MAX));
        assert_eq!(activation_range_i32(kTfLiteActRelu6), (0, 6));
        assert_eq!(activation_range_i32(kTfLiteActNone), (i32::MIN, i32::MAX));
        assert_eq!(activation_range_i64(kTfLiteActRelu), (0, i64::MAX));
        assert_eq!(activation_range_i16(kTfLiteActReluN1To1), (-1, 1));
    }

    #[test]
    fn quantized_ranges() {
        // uint8, scale 0.1, zp 10: relu6 = [10, 70].
        assert_eq!(activation_range_quantized(kTfLiteActRelu6, TfLiteType::kTfLiteUInt8, 0.1, 10).unwrap(), (10, 70));
        // Clamped to the type: int8 scale 0.01 zp 0, relu6 would be 600.
        assert_eq!(activation_range_quantized(kTfLiteActRelu6, TfLiteType::kTfLiteInt8, 0.01, 0).unwrap(), (0, 127));
        assert_eq!(
            activation_range_quantized(kTfLiteActRelu, TfLiteType::kTfLiteInt8, 0.5, -128).unwrap(),
            (-128, 127)
        );
        assert_eq!(
            activation_range_quantized(kTfLiteActRelu, TfLiteType::kTfLiteInt8, 0.5, -100).unwrap(),
            (-100, 127)
        );
        assert_eq!(activation_range_quantized(kTfLiteActReluN1To1, TfLiteType::kTfLiteInt8, 0.25, 0).unwrap(), (-4, 4));
        assert_eq!(
            activation_range_quantized(kTfLiteActNone, TfLiteType::kTfLiteInt16, 1.0, 0).unwrap(),
            (-32768, 32767)
        );
        assert_eq!(activation_range_quantized(kTfLiteActTanh, TfLiteType::kTfLiteUInt8, 1.0, 0).unwrap(), (0, 255));
        assert!(activation_range_quantized(kTfLiteActNone, TfLiteType::kTfLiteFloat32, 1.0, 0).is_err());
        assert!(activation_range_quantized(kTfLiteActRelu6, TfLiteType::kTfLiteInt8, 0.0, 0).is_err());
    }

    #[test]
    fn apply() {
        assert_eq!(apply_f32(-3.0, kTfLiteActRelu), 0.0);
        assert_eq!(apply_f32(7.5, kTfLiteActRelu6), 6.0);
        assert_eq!(apply_f32(-7.5, kTfLiteActReluN1To1), -1.0);
        assert_eq!(apply_f32(0.25, kTfLiteActReluN1To1), 0.25);
        assert_eq!(apply_f32(-2.0, kTfLiteActNone), -2.0);
        assert_eq!(apply_f32(0.0, kTfLiteActTanh), 0.0);
        assert!((apply_f32(1.0, kTfLiteActTanh) - 0.761_594_2).abs() < 1e-6);
        assert_eq!(apply_f32(-0.0, kTfLiteActSignBit), 1.0);
        assert_eq!(apply_f32(2.0, kTfLiteActSignBit), 0.0);
        assert_eq!(apply_f32(0.0, kTfLiteActSigmoid), 0.5);
        assert!(apply_f32(f32::NAN, kTfLiteActRelu).is_nan());
    }

    #[test]
    fn clamp_keeps_nan() {
        assert!(clamp_min_max(f32::NAN, 0.0, 6.0).is_nan());
        assert_eq!(clamp_min_max(3, 0, 2), 2);
        assert_eq!(cpp_max(1.0f32, 2.0), 2.0);
        assert_eq!(cpp_min(1.0f32, 2.0), 1.0);
    }
}
