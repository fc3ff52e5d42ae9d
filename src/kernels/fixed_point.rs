//! gemmlowp-style fixed-point maths and lookup tables for the quantized activations
//! (SOFTMAX, LOG_SOFTMAX, LOGISTIC, TANH, ELU, GELU, EXP, ...), bit-exact with TFLite:
//! `gemmlowp/fixedpoint/fixedpoint.h` (`exp_on_negative_values`,
//! `one_over_one_plus_x_for_x_in_0_1`, `Rescale`, ...), and `kernels/internal/common.h`
//! (`GetReciprocal`, `log_x_for_x_greater_than_or_equal_to_1`, `LUTPopulate`,
//! `LUTLookup`, `sigmoid_table_uint16`).
//!
//! A fixed-point value is its raw `i32` plus a number of integer bits `k` known to the
//! caller (`Q(k).(31-k)`); multiplication is `SaturatingRoundingDoublingHighMul` (integer
//! bits add up); additions wrap, as gemmlowp's do in practice.

use crate::kernels::quant::{rounding_divide_by_pot, saturating_rounding_doubling_high_mul as srdhm};

/// `SaturatingRoundingMultiplyByPOT<exponent>`: a saturating left shift for a positive
/// exponent, a rounding right shift for a negative one.
pub fn sat_rounding_mul_pot(x: i32, exponent: i32) -> i32 {
    if exponent > 0 {
        if exponent >= 31 {
            return match x.signum() {
                1 => i32::MAX,
                -1 => i32::MIN,
                _ => 0,
            };
        }
        let threshold = (1i32 << (31 - exponent)) - 1;
        if x > threshold {
            i32::MAX
        } else if x < -threshold {
            i32::MIN
        } else {
            x.wrapping_mul(1 << exponent)
        }
    } else if exponent < 0 {
        rounding_divide_by_pot(x, -exponent)
    } else {
        x
    }
}

/// `Rescale<dst>` of a value with `src` integer bits.
pub fn rescale(x: i32, src_bits: i32, dst_bits: i32) -> i32 {
    sat_rounding_mul_pot(x, src_bits - dst_bits)
}

/// gemmlowp's `RoundingHalfSum` for `i32`.
pub fn rounding_half_sum(a: i32, b: i32) -> i32 {
    let sum = i64::from(a) + i64::from(b);
    let sign = if sum >= 0 { 1 } else { -1 };
    ((sum + sign) / 2) as i32
}

/// `SaturatingAddNonGemmlowp` / `SaturatingSub` for `i32`.
pub fn saturating_add(a: i32, b: i32) -> i32 {
    a.saturating_add(b)
}

/// gemmlowp's `RoundingDivideByPOT(x, exponent)` as x86-64 executes it for any
/// `exponent`: for a negative one (undefined behaviour in C++, which TFLite reaches
/// through `MultiplyByQuantizedMultiplierSmallerThanOneExp` with a positive shift) the
/// hardware masks the shift counts to 6 bits for the 64-bit mask and 5 bits for the
/// 32-bit shift.
pub fn rounding_divide_by_pot_x86(x: i32, exponent: i32) -> i32 {
    if (0..=31).contains(&exponent) {
        return rounding_divide_by_pot(x, exponent);
    }
    let mask = 1i64.wrapping_shl(exponent as u32 & 63).wrapping_sub(1) as i32;
    let remainder = x & mask;
    let threshold = (mask >> 1) + i32::from(x < 0);
    (x >> (exponent as u32 & 31)) + i32::from(remainder > threshold)
}

/// `MultiplyByQuantizedMultiplierSmallerThanOneExp(x, m, shift)` exactly as TFLite's
/// x86-64 build computes it, including a positive `shift` (see
/// [`rounding_divide_by_pot_x86`]).
pub fn multiply_smaller_than_one_exp_x86(x: i32, multiplier: i32, shift: i32) -> i32 {
    rounding_divide_by_pot_x86(srdhm(x, multiplier), -shift)
}

/// `exp(a)` for `a` in `[-1/4, 0)`, `a` and the result with 0 integer bits.
pub fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i32) -> i32 {
    const CONSTANT_TERM: i32 = 1_895_147_668; // exp(-1/8)
    const ONE_THIRD: i32 = 715_827_883;
    let x = a.wrapping_add(1 << 28); // a + 1/8
    let x2 = srdhm(x, x);
    let x3 = srdhm(x2, x);
    let x4 = srdhm(x2, x2);
    let x4_over_4 = sat_rounding_mul_pot(x4, -2);
    let poly = sat_rounding_mul_pot(srdhm(x4_over_4.wrapping_add(x3), ONE_THIRD).wrapping_add(x2), -1);
    CONSTANT_TERM.wrapping_add(srdhm(CONSTANT_TERM, x.wrapping_add(poly)))
}

/// `exp(a)` for `a <= 0` with `int_bits` integer bits; the result has 0 integer bits.
pub fn exp_on_negative_values(a: i32, int_bits: i32) -> i32 {
    let frac_bits = 31 - int_bits;
    let one_quarter = 1i32 << (frac_bits - 2);
    let mask = one_quarter - 1;
    let a_mod_quarter_minus_one_quarter = (a & mask).wrapping_sub(one_quarter);
    let mut result =
        exp_on_interval_between_negative_one_quarter_and_0_excl(rescale(a_mod_quarter_minus_one_quarter, int_bits, 0));
    let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
    const BARREL: [(i32, i32); 7] = [
        (-2, 1_672_461_947),
        (-1, 1_302_514_674),
        (0, 790_015_084),
        (1, 290_630_308),
        (2, 39_332_535),
        (3, 720_401),
        (4, 242),
    ];
    for (exponent, multiplier) in BARREL {
        if int_bits > exponent {
            let shift = frac_bits + exponent;
            if remainder & (1i32 << shift) != 0 {
                result = srdhm(result, multiplier);
            }
        }
    }
    if int_bits > 5 {
        let clamp = -(1i32 << (36 - int_bits));
        if a < clamp {
            result = 0;
        }
    }
    if a == 0 { i32::MAX } else { result }
}

/// `1 / (1 + a)` for `a` in `[0, 1)`, both with 0 integer bits (Newton-Raphson).
pub fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    let half_denominator = rounding_half_sum(a, i32::MAX);
    const C48_OVER_17: i32 = 1_515_870_810;
    const CNEG32_OVER_17: i32 = -1_010_580_540;
    let mut x = C48_OVER_17.wrapping_add(srdhm(half_denominator, CNEG32_OVER_17));
    const F2_ONE: i32 = 1 << 29;
    for _ in 0..3 {
        let half_denominator_times_x = srdhm(half_denominator, x);
        let one_minus = F2_ONE.wrapping_sub(half_denominator_times_x);
        x = x.wrapping_add(rescale(srdhm(x, one_minus), 4, 2));
    }
    rescale(x, 1, 0)
}

/// TFLite's `GetReciprocal`: `(1 / x` scaled to `[0.5, 1)` with 0 integer bits,
/// `num_bits_over_unit)` for a positive `x` with `x_integer_digits` integer bits.
pub fn get_reciprocal(x: i32, x_integer_digits: i32) -> (i32, i32) {
    let headroom_plus_one = (x as u32).leading_zeros().min(31) as i32;
    let num_bits_over_unit = x_integer_digits - headroom_plus_one;
    let shifted_sum_minus_one = ((x as u32) << headroom_plus_one).wrapping_sub(1 << 31) as i32;
    (one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit)
}

/// `SaturatingRoundingMultiplyByPOTParam` (TFLite's runtime-exponent variant, `exponent >= 0`).
pub fn sat_rounding_mul_pot_param(x: i32, exponent: i32) -> i32 {
    sat_rounding_mul_pot(x, exponent.max(0))
}

/// `log_x_for_x_greater_than_or_equal_to_1_impl<output_int_bits, input_int_bits>`.
pub fn log_x_for_x_greater_than_or_equal_to_1(input: i32, input_int_bits: i32, output_int_bits: i32) -> i32 {
    let accum_bits = output_int_bits + 1;
    const LOG_2: i32 = 1_488_522_236;
    const SQRT_SQRT_HALF: i32 = 1_805_811_301;
    const SQRT_HALF: i32 = 1_518_500_250;
    const ONE_QUARTER: i32 = 536_870_912;
    const ALPHA_N: i32 = 117_049_297;
    const ALPHA_D: i32 = 127_690_142;
    const ALPHA_I: i32 = 1_057_819_769;
    const ALPHA_F: i32 = 638_450_708;
    let shifted_quarter = rescale(ONE_QUARTER, 0, accum_bits);
    let z_a = input;
    let z_a_headroom_plus_1 = (z_a as u32).leading_zeros() as i32;
    let r_a_tmp = sat_rounding_mul_pot_param(z_a, z_a_headroom_plus_1 - 1);
    let r_a_raw = sat_rounding_mul_pot_param(srdhm(r_a_tmp, SQRT_HALF), 1);
    let z_a_pow_2_adj = saturating_add(
        sat_rounding_mul_pot_param(input_int_bits - z_a_headroom_plus_1, 31 - accum_bits),
        shifted_quarter,
    );
    let z_b = srdhm(z_a, SQRT_HALF);
    let z_b_headroom = (z_b as u32).leading_zeros() as i32 - 1;
    let r_b_raw = sat_rounding_mul_pot_param(z_a, z_b_headroom);
    let z_b_pow_2_adj =
        sat_rounding_mul_pot_param(input_int_bits - z_b_headroom, 31 - accum_bits).saturating_sub(shifted_quarter);
    let r = r_a_raw.min(r_b_raw);
    let z_pow_2_adj = z_a_pow_2_adj.max(z_b_pow_2_adj);
    let p = rounding_half_sum(r, SQRT_SQRT_HALF);
    let mut q = r.wrapping_sub(SQRT_SQRT_HALF);
    q = q.wrapping_add(q);
    let common_sq = srdhm(q, q);
    let num = srdhm(q, r).wrapping_add(srdhm(srdhm(q, common_sq), ALPHA_N));
    let denom_minus_one_0 =
        srdhm(p, ALPHA_I.wrapping_add(q).wrapping_add(srdhm(ALPHA_D, common_sq))).wrapping_add(srdhm(ALPHA_F, q));
    let recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one_0);
    let num_scaled = rescale(num, 0, accum_bits);
    rescale(srdhm(z_pow_2_adj, LOG_2).wrapping_add(srdhm(num_scaled, recip_denom)), accum_bits, output_int_bits)
}

/// TFLite's `CalculateInputRadius(input_integer_bits, input_left_shift, total_signed_bits)`.
pub fn calculate_input_radius(input_integer_bits: i32, input_left_shift: i32, total_signed_bits: i32) -> i32 {
    let max_input_rescaled =
        1.0 * f64::from((1i32 << input_integer_bits) - 1) * (1i64 << (total_signed_bits - input_integer_bits)) as f64
            / (1i64 << input_left_shift.clamp(0, 62)) as f64;
    max_input_rescaled.floor() as i32
}

/// `LUTPopulateInt8`: the 256-entry table of `transform` for uint8 / int8, indexed by the
/// input's bits reinterpreted as `u8` (int8 tables are ordered 0..127, -128..-1).
pub fn lut_populate_8bit(
    signed: bool,
    input_scale: f32,
    input_zero_point: i32,
    output_scale: f32,
    output_zero_point: i32,
    transform: impl Fn(f32) -> f32,
) -> [u8; 256] {
    let mut lut = [0u8; 256];
    let inverse_scale = 1.0f32 / output_scale;
    let (minval, maxval) = if signed { (-128i32, 127i32) } else { (0, 255) };
    for val in minval..=maxval {
        let dequantized = input_scale * (val - input_zero_point) as f32;
        let transformed = transform(dequantized);
        let rescaled = (transformed * inverse_scale).round();
        let quantized = crate::kernels::float_conv::cvtt_f32_i32(rescaled + output_zero_point as f32);
        let q = quantized.min(maxval).max(minval);
        lut[(val as u8) as usize] = q as u8;
    }
    lut
}

/// `LUTPopulateInt16` (float version): 513 entries for int16 -> int16 lookup with
/// interpolation.
pub fn lut_populate_int16(
    input_scale: f32,
    input_zero_point: i32,
    output_scale: f32,
    output_zero_point: i32,
    transform: impl Fn(f32) -> f32,
) -> [i16; 513] {
    let mut lut = [0i16; 513];
    let input_min = input_scale * (i32::from(i16::MIN) - input_zero_point) as f32;
    let input_max = input_scale * (i32::from(i16::MAX) - input_zero_point) as f32;
    let output_min = output_scale * (i32::from(i16::MIN) - output_zero_point) as f32;
    let output_max = output_scale * (i32::from(i16::MAX) - output_zero_point) as f32;
    let nb_steps = 512;
    let step = (input_max - input_min) / nb_steps as f32;
    let half_step = step / 2.0;
    let output_scaling_inv = 65536.0f32 / (output_max - output_min);
    let (table_min, table_max) = (f32::from(i16::MIN), f32::from(i16::MAX));
    // std::min(std::max(v, table_min), table_max), then a C++ cast.
    let clamp = |v: f32| -> i16 {
        let m = if v < table_min { table_min } else { v };
        let m = if table_max < m { table_max } else { m };
        crate::kernels::float_conv::cvtt_f32_i32(m) as i16
    };
    for (i, slot) in lut.iter_mut().enumerate().take(nb_steps) {
        let val = transform(input_min + i as f32 * step);
        let val_midpoint = transform(input_min + i as f32 * step + half_step);
        let val_next = transform(input_min + (i + 1) as f32 * step);
        let sample_val = (val * output_scaling_inv).round();
        let midpoint_interp_val = ((val_next * output_scaling_inv + (val * output_scaling_inv).round()) / 2.0).round();
        let midpoint_val = (val_midpoint * output_scaling_inv).round();
        let midpoint_err = midpoint_interp_val - midpoint_val;
        let bias = (midpoint_err / 2.0).round();
        *slot = clamp(sample_val - bias);
    }
    lut[nb_steps] = clamp((transform(input_max) * output_scaling_inv).round());
    lut
}

/// `LUTPopulateInt16<double>`: the deprecated double-precision variant (softmax int16).
pub fn lut_populate_int16_f64(
    input_scale: f64,
    input_zero_point: i32,
    output_scale: f64,
    output_zero_point: i32,
    transform: impl Fn(f64) -> f64,
) -> [i16; 513] {
    let mut lut = [0i16; 513];
    let input_min = input_scale * f64::from(i32::from(i16::MIN) - input_zero_point);
    let input_max = input_scale * f64::from(i32::from(i16::MAX) - input_zero_point);
    let output_min = output_scale * f64::from(i32::from(i16::MIN) - output_zero_point);
    let output_max = output_scale * f64::from(i32::from(i16::MAX) - output_zero_point);
    let nb_steps = 512;
    let step = (input_max - input_min) / f64::from(nb_steps);
    let half_step = step / 2.0;
    let output_scaling_inv = 65536.0f64 / (output_max - output_min);
    let (table_min, table_max) = (f64::from(i16::MIN), f64::from(i16::MAX));
    let clamp = |v: f64| -> i16 {
        let m = if v < table_min { table_min } else { v };
        let m = if table_max < m { table_max } else { m };
        crate::kernels::float_conv::cvtt_f64_i32(m) as i16
    };
    for (i, slot) in lut.iter_mut().enumerate().take(nb_steps as usize) {
        let val = transform(input_min + i as f64 * step);
        let val_midpoint = transform(input_min + i as f64 * step + half_step);
        let val_next = transform(input_min + (i + 1) as f64 * step);
        let sample_val = (val * output_scaling_inv).round();
        let midpoint_interp_val = ((val_next * output_scaling_inv + (val * output_scaling_inv).round()) / 2.0).round();
        let midpoint_val = (val_midpoint * output_scaling_inv).round();
        let midpoint_err = midpoint_interp_val - midpoint_val;
        let bias = (midpoint_err / 2.0).round();
        *slot = clamp(sample_val - bias);
    }
    lut[nb_steps as usize] = clamp((transform(input_max) * output_scaling_inv).round());
    lut
}

/// `LUTLookup` for int16 with a 513-entry table: the high 9 bits index, the low 7
/// interpolate.
pub fn lut_lookup_int16(value: i16, lut: &[i16; 513]) -> i16 {
    let index = (256 + (i32::from(value) >> 7)) as usize;
    let offset = i32::from(value & 0x7f);
    let base = i32::from(lut[index]);
    let slope = i32::from(lut[index + 1]) - base;
    let delta = (slope * offset + 64) >> 7;
    (base + delta) as i16
}

/// `sigmoid_table_uint16`: `sigmoid(i / 24)` in 0.16 fixed point (TFLite's table, used by
/// the int16 LOGISTIC and TANH reference kernels).
pub(crate) const SIGMOID_TABLE_UINT16: [u16; 256] = [
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
];

#[cfg(test)]
mod tests {
    use super::*;

    fn to_f(raw: i32, int_bits: i32) -> f64 {
        f64::from(raw) / (1u64 << (31 - int_bits)) as f64
    }
    fn from_f(x: f64, int_bits: i32) -> i32 {
        (x * (1u64 << (31 - int_bits)) as f64).round() as i32
    }

    #[test]
    fn exp_matches_float() {
        for &x in &[-0.001, -0.1, -0.25, -0.5, -1.0, -2.5, -7.0, -15.9] {
            let got = to_f(exp_on_negative_values(from_f(x, 5), 5), 0);
            assert!((got - f64::exp(x)).abs() < 1e-6, "exp({x}) = {got}");
        }
        assert_eq!(exp_on_negative_values(0, 5), i32::MAX);
        // Below -32 the 6-integer-bit variant clamps to 0.
        assert_eq!(exp_on_negative_values(from_f(-40.0, 6), 6), 0);
    }

    #[test]
    fn reciprocal_and_log() {
        for &x in &[0.0, 0.25, 0.5, 0.99] {
            let got = to_f(one_over_one_plus_x_for_x_in_0_1(from_f(x, 0)), 0);
            assert!((got - 1.0 / (1.0 + x)).abs() < 1e-6, "1/(1+{x}) = {got}");
        }
        // GetReciprocal of 3.0 in Q12: 1/3 = 0.6667 * 2^-1, num_bits_over_unit = 1.
        let (r, bits) = get_reciprocal(from_f(3.0, 12), 12);
        assert_eq!(bits, 1);
        assert!((to_f(r, 0) - 2.0 / 3.0).abs() < 1e-6);
        for &x in &[1.0, 1.5, 2.0, 10.0, 100.0, 2000.0] {
            let got = to_f(log_x_for_x_greater_than_or_equal_to_1(from_f(x, 12), 12, 5), 5);
            assert!((got - f64::ln(x)).abs() < 1e-5, "log({x}) = {got}");
        }
    }

    #[test]
    fn x86_negative_exponent() {
        assert_eq!(rounding_divide_by_pot_x86(5, 1), 3);
        // exponent -2: mask all ones, shift by 30.
        assert_eq!(rounding_divide_by_pot_x86(1000, -2), 1);
        assert_eq!(rounding_divide_by_pot_x86(-1000, -2), -1);
        assert_eq!(rounding_divide_by_pot_x86(0, -2), 1);
    }

    #[test]
    fn pot_and_radius() {
        assert_eq!(sat_rounding_mul_pot(1 << 29, 2), i32::MAX);
        assert_eq!(sat_rounding_mul_pot(-(1 << 29), 2), i32::MIN);
        assert_eq!(sat_rounding_mul_pot(3, 2), 12);
        assert_eq!(sat_rounding_mul_pot(5, -1), 3);
        assert_eq!(rounding_half_sum(3, 4), 4);
        assert_eq!(rounding_half_sum(-3, -4), -4);
        // CalculateInputRadius(5, 26, 31) = floor(31 * 2^26 / 2^26) = 31.
        assert_eq!(calculate_input_radius(5, 26, 31), 31);
        assert_eq!(calculate_input_radius(4, 0, 15), 15 * 2048);
    }

    #[test]
    fn luts() {
        // Identity on int8 with equal params.
        let lut = lut_populate_8bit(true, 0.5, 3, 0.5, 3, |x| x);
        for v in -128i32..=127 {
            assert_eq!(lut[(v as i8 as u8) as usize] as i8 as i32, v);
        }
        // int16 identity, scale 1/32768 both sides.
        let s = 1.0 / 32768.0;
        let lut = lut_populate_int16(s, 0, s, 0, |x| x);
        for v in [-32768i16, -1000, 0, 1, 77, 32767] {
            assert!((i32::from(lut_lookup_int16(v, &lut)) - i32::from(v)).abs() <= 1, "{v}");
        }
        assert_eq!(SIGMOID_TABLE_UINT16[0], 32768);
        assert_eq!(SIGMOID_TABLE_UINT16[255], 65535);
        assert_eq!(SIGMOID_TABLE_UINT16.iter().map(|&v| u64::from(v)).sum::<u64>(), 15_670_629);
    }
}
