//! Fixed-point arithmetic for quantized kernels, bit-exact with TFLite's default build.
//!
//! TFLite represents a real multiplier `m` as a Q0.31 significand and a power-of-two
//! exponent (`quantization_util.cc`), and rescales integers with gemmlowp's
//! `SaturatingRoundingDoublingHighMul` followed by `RoundingDivideByPOT` (`common.h`).
//! The default TFLite build leaves `TFLITE_SINGLE_ROUNDING` undefined, so
//! [`multiply_by_quantized_multiplier`] rounds twice (once in the high multiply, once in the
//! shift), exactly as that build does; kernels must use these helpers, never an
//! "equivalent" single rounding, or results drift by one step.
//!
//! Where TFLite aborts (`TFLITE_CHECK`) on an impossible multiplier, the checked functions
//! here return an error instead.

use crate::abi::types::TfLiteType;
use crate::error::{Error, Result};

/// `std::frexp` for doubles: `x = m * 2^e` with `0.5 <= |m| < 1`, or `(x, 0)` for zero,
/// infinities and NaN.
pub fn frexp(x: f64) -> (f64, i32) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    let bits = x.to_bits();
    let exp_field = ((bits >> 52) & 0x7ff) as i32;
    if exp_field == 0 {
        // Subnormal: scale into the normal range first (2^54 is exact).
        let (m, e) = frexp(x * f64::from_bits(0x4350_0000_0000_0000));
        return (m, e - 54);
    }
    // Keep sign and fraction; set the exponent so the value lies in [0.5, 1).
    let m = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (m, exp_field - 1022)
}

/// TFLite's `QuantizeMultiplier`: `m ≈ multiplier * 2^(shift - 31)` with the multiplier in
/// Q0.31 (`[2^30, 2^31)` in magnitude, or 0).
///
/// Includes TFLite's edge cases: a significand that rounds up to 2^31 is halved (and the
/// shift incremented), and multipliers below about 2^-31 flush to `(0, 0)`. Non-finite
/// input (which TFLite does not handle) also gives `(0, 0)`; use
/// [`try_quantize_multiplier`] to reject it.
pub fn quantize_multiplier(m: f64) -> (i32, i32) {
    if m == 0.0 || !m.is_finite() {
        return (0, 0);
    }
    let (q, mut shift) = frexp(m);
    // TfLiteRound is std::round: half away from zero, as f64::round.
    let mut q_fixed = (q * (1u64 << 31) as f64).round() as i64;
    if q_fixed == 1i64 << 31 {
        q_fixed /= 2;
        shift += 1;
    }
    if shift < -31 {
        shift = 0;
        q_fixed = 0;
    }
    (q_fixed as i32, shift)
}

/// [`quantize_multiplier`], rejecting NaN and infinities (for example a zero output scale).
pub fn try_quantize_multiplier(m: f64) -> Result<(i32, i32)> {
    if !m.is_finite() {
        return Err(Error::new(format!("invalid quantization multiplier {m}")));
    }
    Ok(quantize_multiplier(m))
}

/// TFLite's `QuantizeMultiplierSmallerThanOneExp`: requires `0 < m < 1` (TFLite aborts
/// otherwise; this returns an error) and returns `(multiplier, left_shift <= 0)`.
pub fn quantize_multiplier_smaller_than_one_exp(m: f64) -> Result<(i32, i32)> {
    if !(m > 0.0 && m < 1.0) {
        return Err(Error::new(format!("quantization multiplier {m} is not in (0, 1)")));
    }
    let (q, shift) = quantize_multiplier(m);
    if shift > 0 {
        return Err(Error::new(format!("quantization multiplier {m} rounds to 1 or more")));
    }
    Ok((q, shift))
}

/// TFLite's `QuantizeMultiplierGreaterThanOne`: requires `m > 1` and returns
/// `(multiplier, left_shift >= 0)`.
pub fn quantize_multiplier_greater_than_one(m: f64) -> Result<(i32, i32)> {
    if !(m > 1.0 && m.is_finite()) {
        return Err(Error::new(format!("quantization multiplier {m} is not greater than 1")));
    }
    let (q, shift) = quantize_multiplier(m);
    if shift < 0 {
        return Err(Error::new(format!("quantization multiplier {m} has a negative shift")));
    }
    Ok((q, shift))
}

/// TFLite's `CheckedLog2`: `Some(round(log2(x)))` if `x` is (within 1e-3 in the exponent)
/// a power of two, computed in `f32` as TFLite does.
pub fn checked_log2(x: f32) -> Option<i32> {
    let x_log2 = x.ln() * (1.0f32 / 2.0f32.ln());
    let rounded = x_log2.round();
    let frac = x_log2 - rounded;
    if frac.abs() < 1e-3 { Some(rounded as i32) } else { None }
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul`: the high 32 bits of `2*a*b`, rounded
/// to nearest; the single overflowing case `i32::MIN * i32::MIN` saturates to `i32::MAX`.
pub fn saturating_rounding_doubling_high_mul(a: i32, b: i32) -> i32 {
    if a == b && a == i32::MIN {
        return i32::MAX;
    }
    let ab = a as i64 * b as i64;
    let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
    // Integer division truncates toward zero, as in C++.
    ((ab + nudge) / (1i64 << 31)) as i32
}

/// gemmlowp's `RoundingDivideByPOT`: `x / 2^exponent` rounded to nearest, ties away from
/// zero. `exponent` must be in `0..=31` (it is clamped there).
pub fn rounding_divide_by_pot(x: i32, exponent: i32) -> i32 {
    let e = exponent.clamp(0, 31) as u32;
    let mask = ((1i64 << e) - 1) as i32;
    let remainder = x & mask;
    let threshold = (mask >> 1) + i32::from(x < 0);
    (x >> e) + i32::from(remainder > threshold)
}

/// gemmlowp's `RoundingDivideByPOT` instantiated for `int16_t` (the int16 power-of-two
/// ADD/SUB paths), with its 16-bit mask and wrap-around exactly as the C++ template.
pub fn rounding_divide_by_pot_i16(x: i16, exponent: i32) -> i16 {
    let e = exponent.clamp(0, 31) as u32;
    let mask = ((1i64 << e) - 1) as i16;
    let remainder = x & mask;
    let threshold = (mask >> 1).wrapping_add(i16::from(x < 0));
    ((i32::from(x) >> e) as i16).wrapping_add(i16::from(remainder > threshold))
}

/// TFLite's `MultiplyByQuantizedMultiplier(int32_t, int32_t, int)` in the default
/// (double-rounding) build: `x * m * 2^(shift - 31)`, rounded twice.
pub fn multiply_by_quantized_multiplier(x: i32, quantized_multiplier: i32, shift: i32) -> i32 {
    let left_shift = shift.max(0);
    let right_shift = (-shift).max(0);
    rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(
            x.wrapping_mul(1i32.wrapping_shl(left_shift as u32)),
            quantized_multiplier,
        ),
        right_shift,
    )
}

/// TFLite's `MultiplyByQuantizedMultiplier(int64_t, int32_t, int)` (used by the 16x8
/// kernels): the multiplier is reduced to 16 bits and the product rounded once.
pub fn multiply_by_quantized_multiplier_i64(x: i64, quantized_multiplier: i32, shift: i32) -> i32 {
    let reduced: i64 =
        if quantized_multiplier < 0x7FFF_0000 { ((quantized_multiplier as i64) + (1 << 15)) >> 16 } else { 0x7FFF };
    let total_shift = (15 - shift).clamp(1, 62) as u32;
    let rounded = x.wrapping_mul(reduced).wrapping_add(1i64 << (total_shift - 1));
    (rounded >> total_shift) as i32
}

/// TFLite's `MultiplyByQuantizedMultiplierSmallerThanOneExp` (double rounding):
/// `left_shift` is `<= 0`.
pub fn multiply_by_quantized_multiplier_smaller_than_one_exp(
    x: i32,
    quantized_multiplier: i32,
    left_shift: i32,
) -> i32 {
    rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, quantized_multiplier), -left_shift)
}

/// TFLite's `MultiplyByQuantizedMultiplierGreaterThanOne` (double rounding):
/// `left_shift` is `>= 0`.
pub fn multiply_by_quantized_multiplier_greater_than_one(x: i32, quantized_multiplier: i32, left_shift: i32) -> i32 {
    let shifted = x.wrapping_mul(1i32.wrapping_shl(left_shift.max(0) as u32));
    saturating_rounding_doubling_high_mul(shifted, quantized_multiplier)
}

/// kernel_util's `Quantize`: `zero_point + round(f / scale)`, computed in `f32`; an error
/// if the rounded value does not fit an `int32` (including a zero or NaN scale).
pub fn quantize_value(scale: f32, zero_point: i32, f: f32) -> Result<i32> {
    let tmp = (f / scale).round();
    let fits = tmp >= i32::MIN as f32 && tmp <= i32::MAX as f32;
    if !fits {
        return Err(Error::new(format!("cannot quantize {f} with scale {scale}: out of the int32 range")));
    }
    zero_point
        .checked_add(tmp as i32)
        .ok_or_else(|| Error::new(format!("cannot quantize {f}: zero point {zero_point} overflows")))
}

/// Integer element types of quantized tensors (uint8, int8, int16).
pub trait QuantInt: Copy + Send + Sync + 'static {
    /// The smallest value, as `i32`.
    const MIN: i32;
    /// The largest value, as `i32`.
    const MAX: i32;
    /// The TFLite type of tensors holding this element.
    const DTYPE: TfLiteType;
    /// Widens to `i32`.
    fn to_i32(self) -> i32;
    /// Narrows an `i32` already clamped to `MIN..=MAX` (a C `static_cast`).
    fn from_i32(v: i32) -> Self;
}

macro_rules! quant_int {
    ($t:ty, $dt:ident) => {
        impl QuantInt for $t {
            const MIN: i32 = <$t>::MIN as i32;
            const MAX: i32 = <$t>::MAX as i32;
            const DTYPE: TfLiteType = TfLiteType::$dt;
            #[inline]
            fn to_i32(self) -> i32 {
                self as i32
            }
            #[inline]
            fn from_i32(v: i32) -> Self {
                v as $t
            }
        }
    };
}
quant_int!(u8, kTfLiteUInt8);
quant_int!(i8, kTfLiteInt8);
quant_int!(i16, kTfLiteInt16);

/// The `[min, max]` range of a quantized type, or `None` for other types.
pub fn quantized_type_range(dtype: TfLiteType) -> Option<(i32, i32)> {
    match dtype {
        TfLiteType::kTfLiteUInt8 => Some((u8::MIN as i32, u8::MAX as i32)),
        TfLiteType::kTfLiteInt8 => Some((i8::MIN as i32, i8::MAX as i32)),
        TfLiteType::kTfLiteInt16 => Some((i16::MIN as i32, i16::MAX as i32)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frexp_matches_c() {
        assert_eq!(frexp(1.0), (0.5, 1));
        assert_eq!(frexp(0.5), (0.5, 0));
        assert_eq!(frexp(0.25), (0.5, -1));
        assert_eq!(frexp(3.0), (0.75, 2));
        assert_eq!(frexp(-3.0), (-0.75, 2));
        assert_eq!(frexp(0.0), (0.0, 0));
        // Smallest subnormal: 2^-1074 = 0.5 * 2^-1073.
        assert_eq!(frexp(f64::from_bits(1)), (0.5, -1073));
        let (m, e) = frexp(1e-310);
        assert!((0.5..1.0).contains(&m));
        assert_eq!(m * 2f64.powi(e + 100), 1e-310 * 2f64.powi(100));
    }

    #[test]
    fn quantize_multiplier_known_values() {
        assert_eq!(quantize_multiplier(0.5), (1 << 30, 0));
        assert_eq!(quantize_multiplier(0.25), (1 << 30, -1));
        assert_eq!(quantize_multiplier(1.0), (1 << 30, 1));
        assert_eq!(quantize_multiplier(2.0), (1 << 30, 2));
        assert_eq!(quantize_multiplier(0.0), (0, 0));
        assert_eq!(quantize_multiplier(0.75), (0x6000_0000, 0));
        // 1/3: 0.666.. * 2^31 rounds to 1431655765, shift -1.
        assert_eq!(quantize_multiplier(1.0 / 3.0), (1_431_655_765, -1));
        // Negative multipliers keep their sign in the significand.
        assert_eq!(quantize_multiplier(-0.5), (-(1 << 30), 0));
    }

    #[test]
    fn quantize_multiplier_rounds_up_to_two_pow_31() {
        // Just below 1: the significand rounds to 2^31, is halved, and the shift grows.
        let m = 1.0 - 1e-12;
        assert_eq!(quantize_multiplier(m), (1 << 30, 1));
        assert!(quantize_multiplier_smaller_than_one_exp(m).is_err());
    }

    #[test]
    fn quantize_multiplier_flushes_tiny_values() {
        assert_eq!(quantize_multiplier(2f64.powi(-40)), (0, 0));
        // 2^-32 = 0.5 * 2^-31 is the smallest kept.
        assert_eq!(quantize_multiplier(2f64.powi(-32)), (1 << 30, -31));
        assert_eq!(quantize_multiplier(f64::NAN), (0, 0));
        assert!(try_quantize_multiplier(f64::INFINITY).is_err());
    }

    #[test]
    fn smaller_and_greater_than_one() {
        assert_eq!(quantize_multiplier_smaller_than_one_exp(0.25).unwrap(), (1 << 30, -1));
        assert!(quantize_multiplier_smaller_than_one_exp(1.0).is_err());
        assert!(quantize_multiplier_smaller_than_one_exp(0.0).is_err());
        assert_eq!(quantize_multiplier_greater_than_one(4.0).unwrap(), (1 << 30, 3));
        assert!(quantize_multiplier_greater_than_one(0.5).is_err());
    }

    #[test]
    fn checked_log2_values() {
        assert_eq!(checked_log2(1.0), Some(0));
        assert_eq!(checked_log2(0.5), Some(-1));
        assert_eq!(checked_log2(2f32.powi(-15)), Some(-15));
        assert_eq!(checked_log2(1024.0), Some(10));
        assert_eq!(checked_log2(0.3), None);
    }

    #[test]
    fn srdhm() {
        assert_eq!(saturating_rounding_doubling_high_mul(i32::MIN, i32::MIN), i32::MAX);
        assert_eq!(saturating_rounding_doubling_high_mul(1 << 30, 1 << 30), 1 << 29);
        assert_eq!(saturating_rounding_doubling_high_mul(i32::MAX, i32::MAX), i32::MAX - 1);
        assert_eq!(saturating_rounding_doubling_high_mul(i32::MIN, i32::MAX), -i32::MAX);
        // 100 * 0.5 (Q31) = 50.
        assert_eq!(saturating_rounding_doubling_high_mul(100, 1 << 30), 50);
        // Ties: 3 * 0.5 = 1.5 -> 2, but -3 * 0.5 = -1.5 -> -1 (gemmlowp's negative nudge is
        // 1 - 2^30, and the division truncates toward zero).
        assert_eq!(saturating_rounding_doubling_high_mul(3, 1 << 30), 2);
        assert_eq!(saturating_rounding_doubling_high_mul(-3, 1 << 30), -1);
        assert_eq!(saturating_rounding_doubling_high_mul(-5, 1 << 30), -2); // -2.5 -> -2
        assert_eq!(saturating_rounding_doubling_high_mul(-7, 0x6000_0000), -5); // -5.25 -> -5
        assert_eq!(saturating_rounding_doubling_high_mul(0, i32::MIN), 0);
    }

    #[test]
    fn rdbpot_rounds_half_away_from_zero() {
        assert_eq!(rounding_divide_by_pot(5, 1), 3); // 2.5 -> 3
        assert_eq!(rounding_divide_by_pot(-5, 1), -3); // -2.5 -> -3
        assert_eq!(rounding_divide_by_pot(4, 1), 2);
        assert_eq!(rounding_divide_by_pot(7, 2), 2); // 1.75 -> 2
        assert_eq!(rounding_divide_by_pot(-7, 2), -2);
        assert_eq!(rounding_divide_by_pot(6, 2), 2); // 1.5 -> 2
        assert_eq!(rounding_divide_by_pot(-6, 2), -2); // -1.5 -> -2
        assert_eq!(rounding_divide_by_pot(5, 2), 1); // 1.25 -> 1
        assert_eq!(rounding_divide_by_pot(-5, 2), -1);
        assert_eq!(rounding_divide_by_pot(12345, 0), 12345);
        assert_eq!(rounding_divide_by_pot(i32::MAX, 31), 1);
        assert_eq!(rounding_divide_by_pot(i32::MIN, 31), -1);
        assert_eq!(rounding_divide_by_pot(i32::MIN, 30), -2);
    }

    #[test]
    fn rdbpot_i16_matches_i32_for_small_exponents() {
        for x in [-32768i16, -32767, -5, -4, -3, -1, 0, 1, 3, 5, 1000, 32767] {
            for e in 0..=15 {
                assert_eq!(rounding_divide_by_pot_i16(x, e) as i32, rounding_divide_by_pot(x as i32, e), "x={x} e={e}");
            }
        }
        // With 16 or more the 16-bit mask wraps to all ones, as in the C++ template.
        assert_eq!(rounding_divide_by_pot_i16(-5, 16), -1);
        assert_eq!(rounding_divide_by_pot_i16(5, 16), 1);
    }

    #[test]
    fn mbqm_double_rounding() {
        let (m, s) = quantize_multiplier(0.5);
        assert_eq!(multiply_by_quantized_multiplier(100, m, s), 50);
        assert_eq!(multiply_by_quantized_multiplier(3, m, s), 2);
        let (m, s) = quantize_multiplier(3.0);
        assert_eq!(multiply_by_quantized_multiplier(7, m, s), 21);
        let (m, s) = quantize_multiplier(0.1);
        assert_eq!(multiply_by_quantized_multiplier(1000, m, s), 100);
        assert_eq!(multiply_by_quantized_multiplier(-1000, m, s), -100);
        // Double rounding differs from single rounding: x = 1, m = 0.75 * 2^-1 = 0.375
        // (Q31 0x60000000, shift -1): SRDHM(1, 0x60000000) = round(0.75) = 1, then
        // RDBPOT(1, 1) = round(0.5) = 1; single rounding would give round(0.375) = 0.
        assert_eq!(multiply_by_quantized_multiplier(1, 0x6000_0000, -1), 1);
    }

    #[test]
    fn mbqm_variants_agree() {
        let (m, s) = quantize_multiplier(0.3);
        for x in [-100000, -777, -1, 0, 1, 555, 99999] {
            assert_eq!(
                multiply_by_quantized_multiplier(x, m, s),
                multiply_by_quantized_multiplier_smaller_than_one_exp(x, m, s)
            );
        }
        let (m, s) = quantize_multiplier(5.5);
        for x in [-1000, -1, 0, 1, 1000] {
            assert_eq!(
                multiply_by_quantized_multiplier(x, m, s),
                multiply_by_quantized_multiplier_greater_than_one(x, m, s)
            );
        }
    }

    #[test]
    fn mbqm_i64() {
        let (m, s) = quantize_multiplier(0.5);
        assert_eq!(multiply_by_quantized_multiplier_i64(100, m, s), 50);
        assert_eq!(multiply_by_quantized_multiplier_i64(1 << 40, m, s - 10), 1 << 29);
        let (m, s) = quantize_multiplier(0.25);
        assert_eq!(multiply_by_quantized_multiplier_i64(-6, m, s), -1); // -1.5 -> -1 (round half up)
    }

    #[test]
    fn quantize_value_matches_kernel_util() {
        assert_eq!(quantize_value(0.5, 10, 6.0).unwrap(), 22);
        assert_eq!(quantize_value(0.1, -128, 0.0).unwrap(), -128);
        assert_eq!(quantize_value(0.5, 0, 1.25).unwrap(), 3); // 2.5 -> 3
        assert!(quantize_value(0.0, 0, 6.0).is_err());
        assert!(quantize_value(1e-30, 0, 6.0).is_err());
    }
}
