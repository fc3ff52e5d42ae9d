//! Scalar conversions as TFLite's x86-64 build performs them: IEEE half and bfloat16
//! to and from `f32` (Eigen's `half_to_float`, `float_to_half_rtne`,
//! `float_to_bfloat16_rtne`), and C++ `static_cast` from floating point to integers, which
//! compiles to `cvttss2si`/`cvttsd2si`: truncation toward zero, and the "integer indefinite"
//! value (the type's minimum) for NaN and out-of-range inputs, instead of Rust's
//! saturating `as`. Narrow integer targets go through a 32-bit (or, for `uint32`, a
//! 64-bit) conversion and keep the low bits, as the generated code does.

/// IEEE binary16 bits to `f32` (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = if exp == 0 {
        if man == 0 {
            sign
        } else {
            // Subnormal: normalise.
            let mut e: i32 = 1;
            let mut m = man;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            let m = m & 0x3ff;
            sign | (((e + 127 - 15) as u32) << 23) | (m << 13)
        }
    } else if exp == 0x1f {
        sign | 0x7f80_0000 | (man << 13)
    } else {
        sign | ((exp + 127 - 15) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

/// `f32` to IEEE binary16 bits, rounding to nearest even; NaN becomes a quiet NaN.
pub fn f32_to_f16(f: f32) -> u16 {
    let x = f.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let abs = x & 0x7fff_ffff;
    if abs > 0x7f80_0000 {
        return sign | 0x7e00;
    }
    if abs < 0x3880_0000 {
        // Result is subnormal or zero: scale into the subnormal range with RNE.
        let v = f32::from_bits(abs) * f32::from_bits(0x4b80_0000); // * 2^24
        // v is now in units of 2^-24; round half to even.
        let r = v.round_ties_even();
        return sign | (r as u16);
    }
    // Normal: rebias and round the 13 dropped mantissa bits to nearest even; anything that
    // rounds past 65504 (including infinity) becomes infinity.
    let mant_odd = (abs >> 13) & 1;
    let rounded = abs.wrapping_add(0xfff + mant_odd);
    let h = (rounded >> 13).wrapping_sub((127 - 15) << 10);
    if h >= 0x7c00 {
        return sign | 0x7c00;
    }
    sign | h as u16
}

/// bfloat16 bits to `f32` (exact).
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}

/// `f32` to bfloat16 bits, rounding to nearest even; NaN becomes `0x7fc0` (with sign).
pub fn f32_to_bf16(f: f32) -> u16 {
    if f.is_nan() {
        return if f.is_sign_negative() { 0xffc0 } else { 0x7fc0 };
    }
    let x = f.to_bits();
    let lsb = (x >> 16) & 1;
    ((x.wrapping_add(0x7fff + lsb)) >> 16) as u16
}

/// `static_cast<int32_t>(f)` for an `f32` on x86-64.
pub fn cvtt_f32_i32(f: f32) -> i32 {
    if (-2_147_483_648.0..2_147_483_648.0).contains(&f) { f as i32 } else { i32::MIN }
}

/// `static_cast<int64_t>(f)` for an `f32` on x86-64.
pub fn cvtt_f32_i64(f: f32) -> i64 {
    // 2^63 exactly.
    let limit = i64::MAX as f32;
    if (-limit..limit).contains(&f) { f as i64 } else { i64::MIN }
}

/// `static_cast<int32_t>(d)` for an `f64` on x86-64.
pub fn cvtt_f64_i32(d: f64) -> i32 {
    // Truncation toward zero keeps (-2^31 - 1, 2^31) in range.
    if d > -2_147_483_649.0 && d < 2_147_483_648.0 { d as i32 } else { i32::MIN }
}

/// `static_cast<int64_t>(d)` for an `f64` on x86-64.
pub fn cvtt_f64_i64(d: f64) -> i64 {
    // 2^63 exactly.
    let limit = i64::MAX as f64;
    if (-limit..limit).contains(&d) { d as i64 } else { i64::MIN }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_round_trip() {
        for (f, h) in [
            (0.0f32, 0x0000u16),
            (-0.0, 0x8000),
            (1.0, 0x3c00),
            (-2.0, 0xc000),
            (65504.0, 0x7bff),
            (0.5, 0x3800),
            (6.103_515_6e-5, 0x0400),
            (5.960_464_5e-8, 0x0001),
            (f32::INFINITY, 0x7c00),
            (1.0e6, 0x7c00),
        ] {
            assert_eq!(f32_to_f16(f), h, "{f}");
            assert_eq!(f16_to_f32(h), if f == 1.0e6 { f32::INFINITY } else { f }, "{h:#x}");
        }
        // Every half converts back to itself.
        for h in 0u16..=0xffff {
            let f = f16_to_f32(h);
            if f.is_nan() {
                assert!(f16_to_f32(f32_to_f16(f)).is_nan());
            } else {
                assert_eq!(f32_to_f16(f), h, "{h:#x}");
            }
        }
        // Ties to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(f32_to_f16(65519.0), 0x7bff);
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
    }

    #[test]
    fn bfloat_and_truncation() {
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(bf16_to_f32(0x3f80), 1.0);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80); // tie to even
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(f32_to_bf16(f32::NAN), 0x7fc0);
        assert_eq!(cvtt_f32_i32(-2.7), -2);
        assert_eq!(cvtt_f32_i32(f32::NAN), i32::MIN);
        assert_eq!(cvtt_f32_i32(3e9), i32::MIN);
        assert_eq!(cvtt_f32_i64(-3e19), i64::MIN);
        assert_eq!(cvtt_f64_i32(2147483647.9), i32::MAX);
        assert_eq!(cvtt_f64_i32(-2147483648.9), i32::MIN);
        assert_eq!(cvtt_f64_i64(1e300), i64::MIN);
    }
}
