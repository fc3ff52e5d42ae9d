//! Requantization of int32 accumulators to 8-bit outputs, bit-exact with TFLite's default
//! (double-rounding) `MultiplyByQuantizedMultiplier`:
//!
//! `out = clamp(RoundingDivideByPOT(SaturatingRoundingDoublingHighMul((acc + bias) << left,
//! multiplier), right) + output_offset, min, max)`
//!
//! with per-channel `bias`, `multiplier`, `left = max(shift, 0)` and `right = max(-shift, 0)`.
//! [`ChannelRequant`] holds those per-channel values in tables padded to whole vectors, so
//! a SIMD kernel loads any 16 consecutive channels of a padded range; [`requant_scalar`] is
//! the oracle the vector versions are tested against.

/// Lanes every table is padded to (one 512-bit vector of `i32`).
pub(crate) const LANES: usize = 16;

/// Per-channel requantization tables (`bias`, `mult`, `left`, `right`, each
/// `padded_channels()` long, zeros past the last channel) and the output's offset and
/// clamp range.
#[derive(Clone, Debug, PartialEq)]
pub struct ChannelRequant {
    pub bias: Vec<i32>,
    pub mult: Vec<i32>,
    pub left: Vec<i32>,
    pub right: Vec<i32>,
    pub output_offset: i32,
    pub min: i32,
    pub max: i32,
    channels: usize,
}

impl ChannelRequant {
    /// Tables for `channels` channels: `mult_shift(c)` gives channel `c`'s quantized
    /// multiplier and shift (TFLite's `QuantizeMultiplier` form), `bias(c)` the value added
    /// to its accumulator first.
    pub fn new(
        channels: usize,
        mult_shift: impl Fn(usize) -> (i32, i32),
        bias: impl Fn(usize) -> i32,
        output_offset: i32,
        (min, max): (i32, i32),
    ) -> ChannelRequant {
        let padded = channels.div_ceil(LANES) * LANES;
        let mut r = ChannelRequant {
            bias: vec![0; padded],
            mult: vec![0; padded],
            left: vec![0; padded],
            right: vec![0; padded],
            output_offset,
            min,
            max,
            channels,
        };
        for c in 0..channels {
            let (m, shift) = mult_shift(c);
            r.mult[c] = m;
            // `x * (1 << left)` wraps in TFLite's build; the count is taken mod 32 there.
            r.left[c] = shift.max(0) & 31;
            r.right[c] = (-shift).clamp(0, 31);
            r.bias[c] = bias(c);
        }
        r
    }

    /// Channels covered.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Length of every table (channels rounded up to [`LANES`]).
    pub fn padded_channels(&self) -> usize {
        self.mult.len()
    }

    /// Channel `c`'s output for accumulator `acc` (the scalar oracle).
    #[inline]
    pub fn scalar(&self, c: usize, acc: i32) -> i32 {
        requant_scalar(
            acc,
            self.bias[c],
            self.mult[c],
            self.left[c],
            self.right[c],
            self.output_offset,
            self.min,
            self.max,
        )
    }
}

/// One channel's requantization: see the module documentation.
#[inline]
#[allow(clippy::too_many_arguments)]
pub fn requant_scalar(acc: i32, bias: i32, mult: i32, left: i32, right: i32, offset: i32, min: i32, max: i32) -> i32 {
    multiply_scalar(acc.wrapping_add(bias), mult, left, right).wrapping_add(offset).clamp(min, max)
}

/// `RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << left, mult), right)`: TFLite's
/// `MultiplyByQuantizedMultiplier` with the shift split into its left and right parts
/// (each taken mod 32; the shift wraps as in TFLite's build).
#[inline(always)]
pub fn multiply_scalar(x: i32, mult: i32, left: i32, right: i32) -> i32 {
    rounding_divide_by_pot_scalar(srdhm_scalar(x.wrapping_shl(left as u32), mult), right)
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul`: `(x * m + nudge) / 2^31` truncated
/// toward zero, with the nudge 2^30 for a non-negative product and 1 - 2^30 for a negative
/// one; `i32::MIN * i32::MIN` saturates to `i32::MAX`.
#[inline(always)]
pub fn srdhm_scalar(x: i32, mult: i32) -> i32 {
    if x == i32::MIN && mult == i32::MIN {
        i32::MAX
    } else {
        let ab = x as i64 * mult as i64;
        let nudge = if ab >= 0 { 1i64 << 30 } else { 1 - (1i64 << 30) };
        ((ab + nudge) / (1i64 << 31)) as i32
    }
}

/// gemmlowp's `RoundingDivideByPOT`: `h / 2^right` rounded to nearest, ties away from zero
/// (`right` taken mod 32).
#[inline(always)]
pub fn rounding_divide_by_pot_scalar(h: i32, right: i32) -> i32 {
    let e = right as u32 & 31;
    let mask = (1u32.wrapping_shl(e).wrapping_sub(1)) as i32;
    let remainder = h & mask;
    let threshold = (mask >> 1) + i32::from(h < 0);
    (h >> e) + i32::from(remainder > threshold)
}

/// AVX-512 requantization of 16 lanes.
#[cfg(target_arch = "x86_64")]
pub mod avx512 {
    use core::arch::x86_64::*;

    /// One vector's per-lane parameters (16 consecutive channels of a [`super::ChannelRequant`]).
    #[derive(Clone, Copy)]
    pub struct Lanes {
        pub bias: __m512i,
        pub mult: __m512i,
        pub left: __m512i,
        pub right: __m512i,
    }

    /// Loads channels `c..c + 16` of `rq`'s tables.
    ///
    /// # Safety
    /// `c + 16 <= rq.padded_channels()`, on a CPU with AVX-512 F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub unsafe fn load(rq: &super::ChannelRequant, c: usize) -> Lanes {
        debug_assert!(c + 16 <= rq.padded_channels());
        // SAFETY: each table holds `padded_channels()` values and `c + 16` is within it
        // (the contract); the loads are unaligned.
        unsafe {
            Lanes {
                bias: _mm512_loadu_si512(rq.bias.as_ptr().add(c).cast()),
                mult: _mm512_loadu_si512(rq.mult.as_ptr().add(c).cast()),
                left: _mm512_loadu_si512(rq.left.as_ptr().add(c).cast()),
                right: _mm512_loadu_si512(rq.right.as_ptr().add(c).cast()),
            }
        }
    }

    /// Requantizes 16 accumulators, lane by lane exactly as [`super::requant_scalar`].
    ///
    /// # Safety
    /// The CPU has AVX-512 F (a safe call needs a caller with that feature enabled).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub fn requant(acc: __m512i, p: &Lanes, offset: __m512i, min: __m512i, max: __m512i) -> __m512i {
        let x = _mm512_sllv_epi32(_mm512_add_epi32(acc, p.bias), p.left);
        let v = rounding_divide_by_pot(srdhm(x, p.mult), p.right);
        let v = _mm512_add_epi32(v, offset);
        _mm512_min_epi32(_mm512_max_epi32(v, min), max)
    }

    /// `SaturatingRoundingDoublingHighMul` of 16 lanes, exactly as [`super::srdhm_scalar`].
    ///
    /// # Safety
    /// The CPU has AVX-512 F (a safe call needs a caller with that feature enabled).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub fn srdhm(x: __m512i, m: __m512i) -> __m512i {
        // The unsaturated value lies in `[-2^31 + 1, 2^31 - 1]` for every pair but
        // `i32::MIN * i32::MIN`, whose `2^31` truncates to `i32::MIN`: a lane reading
        // `i32::MIN` is exactly the saturating case.
        let h = srdhm_unsaturated(x, m);
        let sat = _mm512_cmpeq_epi32_mask(h, _mm512_set1_epi32(i32::MIN));
        _mm512_mask_mov_epi32(h, sat, _mm512_set1_epi32(i32::MAX))
    }

    /// [`srdhm`] for lanes where `x` and `m` are never both `i32::MIN` (a caller that
    /// knows it saves the saturation).
    ///
    /// The high multiply uses `(x * m + 2^30) >> 31` (arithmetic shift) for both signs of
    /// the product: for a negative product `p`, C++'s truncating `(p + 1 - 2^30) / 2^31`
    /// equals `floor((p + 2^30) / 2^31)`, so one formula serves both nudges. With `m` the
    /// same in every lane, the shift of `m` is loop-invariant.
    ///
    /// # Safety
    /// The CPU has AVX-512 F (a safe call needs a caller with that feature enabled).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub fn srdhm_unsaturated(x: __m512i, m: __m512i) -> __m512i {
        let nudge = _mm512_set1_epi64(1 << 30);
        // Even lanes: the 64-bit products of lanes 0, 2, ...; odd lanes: of 1, 3, ...
        let even = _mm512_srli_epi64::<31>(_mm512_add_epi64(_mm512_mul_epi32(x, m), nudge));
        let odd = _mm512_mul_epi32(_mm512_srli_epi64::<32>(x), _mm512_srli_epi64::<32>(m));
        // Shifting the odd sum left by one puts bits 31..62 in the lane's high half.
        let odd = _mm512_slli_epi64::<1>(_mm512_add_epi64(odd, nudge));
        _mm512_mask_blend_epi32(0xAAAA, even, odd)
    }

    /// `RoundingDivideByPOT` of 16 lanes by per-lane exponents in `0..=31`, exactly as
    /// [`super::rounding_divide_by_pot_scalar`].
    ///
    /// # Safety
    /// The CPU has AVX-512 F (a safe call needs a caller with that feature enabled).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub fn rounding_divide_by_pot(h: __m512i, right: __m512i) -> __m512i {
        let one = _mm512_set1_epi32(1);
        let mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, right), one);
        let remainder = _mm512_and_si512(h, mask);
        let half = _mm512_srai_epi32::<1>(mask);
        let negative = _mm512_cmplt_epi32_mask(h, _mm512_setzero_si512());
        let threshold = _mm512_mask_add_epi32(half, negative, half, one);
        let shifted = _mm512_srav_epi32(h, right);
        let up = _mm512_cmpgt_epi32_mask(remainder, threshold);
        _mm512_mask_add_epi32(shifted, up, shifted, one)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::quant::multiply_by_quantized_multiplier;
    use crate::microkernels::test_rng::Lcg;

    /// Accumulators, multipliers and shifts that reach every rounding branch.
    fn cases() -> Vec<(i32, i32, i32, i32)> {
        let mut rng = Lcg(99);
        let edges = [0, 1, -1, 2, -2, i32::MAX, i32::MIN, i32::MIN + 1, 1 << 30, -(1 << 30), 12345, -12345];
        let mults = [0, 1, 1 << 30, i32::MAX, 1_518_500_250, i32::MIN, -(1 << 30), 1_073_741_825];
        let shifts = [-31, -20, -8, -1, 0, 1, 3, 31];
        let mut v = Vec::new();
        for &a in &edges {
            for &m in &mults {
                for &s in &shifts {
                    v.push((a, 0, m, s));
                }
            }
        }
        for _ in 0..20000 {
            let a = rng.next() as i32 >> (rng.next() % 24);
            let b = (rng.next() as i32) >> 12;
            let m = (1 << 30) + (rng.next() >> 2) as i32;
            let s = (rng.next() % 40) as i32 - 32;
            v.push((a, b, m, s));
        }
        v
    }

    #[test]
    fn scalar_matches_tflite_formula() {
        for (acc, bias, m, s) in cases() {
            let rq = ChannelRequant::new(1, |_| (m, s), |_| bias, 3, (-128, 127));
            let want = multiply_by_quantized_multiplier(acc.wrapping_add(bias), m, s).wrapping_add(3).clamp(-128, 127);
            assert_eq!(rq.scalar(0, acc), want, "acc {acc} bias {bias} mult {m} shift {s}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx512_matches_scalar() {
        use core::arch::x86_64::*;
        if !crate::microkernels::Isa::Avx512.is_available() {
            eprintln!("skipping: no AVX-512 on this CPU");
            return;
        }
        let cases = cases();
        for chunk in cases.chunks(16) {
            let n = chunk.len();
            let rq = ChannelRequant::new(n, |c| (chunk[c].2, chunk[c].3), |c| chunk[c].1, -5, (i32::MIN, i32::MAX));
            let mut acc = [0i32; 16];
            for (a, c) in acc.iter_mut().zip(chunk) {
                *a = c.0;
            }
            let mut got = [0i32; 16];
            // SAFETY: AVX-512 F is available (checked above); the tables are 16 long.
            unsafe {
                let p = avx512::load(&rq, 0);
                let v = _mm512_loadu_si512(acc.as_ptr().cast());
                let r = avx512::requant(
                    v,
                    &p,
                    _mm512_set1_epi32(rq.output_offset),
                    _mm512_set1_epi32(rq.min),
                    _mm512_set1_epi32(rq.max),
                );
                _mm512_storeu_si512(got.as_mut_ptr().cast(), r);
            }
            for c in 0..n {
                assert_eq!(got[c], rq.scalar(c, acc[c]), "case {:?}", chunk[c]);
            }
        }
    }
}
