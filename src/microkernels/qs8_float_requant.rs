//! A float shortcut to the exact requantization of [`qs8_requant`](super::qs8_requant), for
//! layers whose accumulators are small enough, that never changes an answer.
//!
//! TFLite's `MultiplyByQuantizedMultiplier(x, m, -e)` rounds twice:
//! `t = SaturatingRoundingDoublingHighMul(x, m)` is `x * m / 2^31` rounded half up, then
//! `RoundingDivideByPOT(t, e)` is `t / 2^e` rounded half away from zero. With
//! `z = x * m / 2^(31 + e)` and `e >= 1`, that is one rounding:
//!
//! `result = floor(z + 1/2 + sign(x) * 2^-(e + 1))`
//!
//! (`t / 2^e` is `z` rounded to the nearest multiple of `2^-e`, ties up; every
//! half-integer is such a multiple, so the first rounding never carries `z` across one,
//! and lands on one exactly when `z` lies within `2^-(e + 1)` below or above it, where the
//! second rounding then goes away from zero: the nudge by `sign(x) * 2^-(e + 1)` does
//! both.) For `e = 0` it is `floor(z + 1/2)`.
//!
//! The shortcut computes `y = acc * scale + offset` in `f32` (one fused multiply-add, with
//! `scale = m / 2^(31 + e)` and `offset = bias * scale + 1/2 + output zero point` plus the
//! nudge for the sign of `acc + bias`), so that `floor(y)` is the output before clamping.
//! Every `f32` rounding on the way (of `scale`, of `offset` and of the sum) is bounded by
//! [`FloatRequant::new`]: below 1/64 for every accumulator the layer's weights allow, and
//! below a much smaller `tol` wherever `y` lies within the clamp range (widened by 2), the
//! only place the floor matters (outside it, an error below 1 leaves both values clamped
//! to the same bound).
//!
//! The offset is raised by `tol` as well, so `y` approximates `w = exact + tol` within
//! `tol`. Where the fraction `y - floor(y)` is at least `2 * tol`, `w` lies more than
//! `tol` above the integer `n = floor(y)` and below `n + 1`, so the exact value lies in
//! `(n, n + 1)` and `floor(y)` is exact once clamped; the few lanes with a smaller
//! fraction (an exact value within `tol` of an integer, on either side) are recomputed
//! exactly. One instruction gives the fraction (`vreduceps` rounding down), with no
//! absolute value to take.
//!
//! The shortcut is only built where it is valid: no left shift, multipliers not negative, and
//! accumulators below `2^24` (exact in `f32`) whose sum with the bias cannot wrap.

use super::qs8_requant::ChannelRequant;

/// Per-channel `f32` tables of the shortcut, padded as the [`ChannelRequant`] they mirror.
#[derive(Clone, Debug, PartialEq)]
pub struct FloatRequant {
    pub scale: Vec<f32>,
    /// The offsets for `acc + bias > 0` and for `acc + bias <= 0`.
    pub offset_positive: Vec<f32>,
    pub offset_negative: Vec<f32>,
    /// `-bias`: `acc > -bias` selects the positive offset.
    pub negated_bias: Vec<i32>,
    /// A lane whose `y` lies less than this above an integer is recomputed exactly (twice
    /// the error bound inside the clamp window, by which the offsets are raised).
    pub decline_below: Vec<f32>,
    /// True when the clamp's lower bound is at or above the output zero point (a fused
    /// RELU or RELU6): then every `acc + bias <= 0` gives the lower bound whichever offset
    /// it takes, so both offsets are the positive one and the kernels skip the choice.
    pub one_sided: bool,
}

/// The largest tolerance worth a shortcut: past it, too many lanes would fall back.
const MAX_TOLERANCE: f64 = 1.0 / 64.0;

impl FloatRequant {
    /// The shortcut for `rq`, given each real channel's bound on `|acc|` (the raw sums the
    /// kernels add the bias to); `None` when some channel does not allow it.
    pub fn new(rq: &ChannelRequant, acc_bound: impl Fn(usize) -> u64) -> Option<FloatRequant> {
        let padded = rq.padded_channels();
        let mut f = FloatRequant {
            scale: vec![0.0; padded],
            offset_positive: vec![0.5; padded],
            offset_negative: vec![0.5; padded],
            negated_bias: vec![0; padded],
            decline_below: vec![0.0; padded],
            one_sided: rq.min >= rq.output_offset,
        };
        // Padding channels (past `channels()`) are computed but never stored.
        for c in 0..rq.channels() {
            let (mult, bias) = (rq.mult[c], rq.bias[c]);
            let bound = acc_bound(c);
            // A zero multiplier (a channel of zero weights, or padding) gives the zero
            // point exactly: `y` is then the offset, half-way between integers.
            if rq.left[c] != 0 || mult < 0 || bound >= 1 << 24 || bound + u64::from(bias.unsigned_abs()) >= 1 << 31 {
                return None;
            }
            let e = rq.right[c];
            let scale = f64::from(mult) / f64::powi(2.0, 31 + e);
            let offset = f64::from(bias) * scale + 0.5 + f64::from(rq.output_offset);
            // Over every accumulator, |y - exact| <= (|acc| * scale + |offset|) * 2^-24 for
            // each of the three f32 roundings; 2^-22 covers them with room for the f64
            // error of the offsets. It must stay far below 1.
            let nudge = if e == 0 { 0.0 } else { f64::powi(2.0, -(e + 1)) };
            // (Plus 1 for the f32 rounding of the offset itself.)
            let far = offset.abs() + nudge + 1.0;
            let reach = bound as f64 * scale + far;
            if reach * f64::powi(2.0, -22) > MAX_TOLERANCE || reach > f64::from(1u32 << 22) {
                return None;
            }
            // Only lanes whose y lies within the clamp range (widened by 2) need the exact
            // floor: outside it, an error below 1 leaves both values clamped to the same
            // bound. There |exact| <= window, so |acc| * scale <= window + |offset| and the
            // three roundings (of the scale, the offset and the sum) stay below
            // (2 * window + 4 * |offset| + 3) * 2^-24: the bound `tol`, with a margin.
            let window = f64::from(rq.min.unsigned_abs().max(rq.max.unsigned_abs())) + 2.0;
            // Rounded up (by a 1/1024 margin), so the f32 tables never fall below the
            // proven bound.
            let tol = (2.0 * window + 4.0 * far + 8.0) * f64::powi(2.0, -24) * (1.0 + 1.0 / 1024.0);
            f.scale[c] = scale as f32;
            // Both offsets raised by `tol` (see the module comment); `far` has room for it.
            f.offset_positive[c] = (offset + nudge + tol) as f32;
            // One-sided: for `acc + bias <= 0` the exact output is at most the zero point
            // and the positive formula's `floor(z + 1/2 + nudge)` at most 0 (`z <= 0`, the
            // nudge at most 1/4), so both clamp to the lower bound.
            let negative_nudge = if f.one_sided { nudge } else { -nudge };
            f.offset_negative[c] = (offset + negative_nudge + tol) as f32;
            f.negated_bias[c] = -bias;
            f.decline_below[c] = (2.0 * tol * (1.0 + 1.0 / 1024.0)) as f32;
        }
        Some(f)
    }

    /// Channel `c`'s output (zero point added, before the clamp) for `acc`, or `None` when
    /// the lane must be recomputed exactly: the scalar model of the SIMD shortcut. Once
    /// clamped to the layer's range it equals the exact path's output (unclamped, it may
    /// differ by one far outside that range).
    pub fn scalar(&self, c: usize, acc: i32) -> Option<i32> {
        let offset = if acc > self.negated_bias[c] { self.offset_positive[c] } else { self.offset_negative[c] };
        let y = (acc as f32).mul_add(self.scale[c], offset);
        // Exact in f32: `|y|` stays below 2^22 (`new` checks it).
        let fraction = y - y.floor();
        if fraction < self.decline_below[c] {
            return None;
        }
        Some(y.floor() as i32)
    }
}

/// Pointers to entries `range` of each table of a [`FloatRequant`], for kernels.
#[derive(Clone, Copy)]
pub struct FloatTables {
    pub scale: *const f32,
    pub offset_positive: *const f32,
    pub offset_negative: *const f32,
    pub negated_bias: *const i32,
    pub decline_below: *const f32,
    /// Both offsets are the same (see [`FloatRequant::one_sided`]).
    pub one_sided: bool,
}

impl FloatRequant {
    /// The tables' entries `range` (which must lie within the padded channels: slicing
    /// checks it).
    #[inline]
    pub fn tables(&self, range: core::ops::Range<usize>) -> FloatTables {
        FloatTables {
            scale: self.scale[range.clone()].as_ptr(),
            offset_positive: self.offset_positive[range.clone()].as_ptr(),
            offset_negative: self.offset_negative[range.clone()].as_ptr(),
            negated_bias: self.negated_bias[range.clone()].as_ptr(),
            decline_below: self.decline_below[range].as_ptr(),
            one_sided: self.one_sided,
        }
    }
}

/// The shortcut on 16 lanes of AVX-512.
#[cfg(target_arch = "x86_64")]
pub mod avx512 {
    use super::FloatTables;
    use core::arch::x86_64::*;

    impl FloatTables {
        /// The lanes of `fraction` (channels `col..col + 16`) below the decline threshold,
        /// loaded here rather than held: a kernel with many sums live checks once per tile.
        ///
        /// # Safety
        /// The threshold table holds `col + 16` values; AVX-512 F available.
        #[inline]
        #[target_feature(enable = "avx512f")]
        pub unsafe fn declined_at(&self, col: usize, fraction: __m512) -> __mmask16 {
            // SAFETY: the contract; an unaligned load.
            let below = unsafe { _mm512_loadu_ps(self.decline_below.add(col)) };
            _mm512_cmp_ps_mask::<_CMP_LT_OQ>(fraction, below)
        }
    }

    /// One vector's tables: 16 channels, loaded once and applied to many accumulators.
    #[derive(Clone, Copy)]
    pub struct FloatLanes {
        scale: __m512,
        offset_positive: __m512,
        offset_negative: __m512,
        negated_bias: __m512i,
        decline_below: __m512,
    }

    impl FloatLanes {
        /// # Safety
        /// The five tables hold `col + 16` values each; AVX-512 F available.
        #[inline]
        #[target_feature(enable = "avx512f")]
        pub unsafe fn load(t: FloatTables, col: usize) -> FloatLanes {
            // SAFETY: the tables hold `col + 16` values (the contract); unaligned loads.
            unsafe {
                FloatLanes {
                    scale: _mm512_loadu_ps(t.scale.add(col)),
                    offset_positive: _mm512_loadu_ps(t.offset_positive.add(col)),
                    offset_negative: _mm512_loadu_ps(t.offset_negative.add(col)),
                    negated_bias: _mm512_loadu_si512(t.negated_bias.add(col).cast()),
                    decline_below: _mm512_loadu_ps(t.decline_below.add(col)),
                }
            }
        }

        /// `floor(acc * scale + offset)` per lane (the output plus its zero point, before the
        /// clamp), and the lanes whose fraction is below `decline_below`, which must be recomputed
        /// exactly: [`super::FloatRequant::scalar`] lane by lane. `ONE_SIDED`: the two offsets
        /// are equal (the tables say so), and the positive one is taken.
        ///
        /// # Safety
        /// The CPU has AVX-512 F and DQ.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq")]
        pub fn apply<const ONE_SIDED: bool>(&self, acc: __m512i) -> (__m512i, __mmask16) {
            let (r, fraction) = self.value::<ONE_SIDED>(acc);
            (r, self.declined(fraction))
        }

        /// [`FloatLanes::apply`]'s value, and each lane's fraction `y - floor(y)`.
        ///
        /// # Safety
        /// The CPU has AVX-512 F and DQ.
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq")]
        pub fn value<const ONE_SIDED: bool>(&self, acc: __m512i) -> (__m512i, __m512) {
            let offset = if ONE_SIDED {
                self.offset_positive
            } else {
                let positive = _mm512_cmpgt_epi32_mask(acc, self.negated_bias);
                _mm512_mask_blend_ps(positive, self.offset_negative, self.offset_positive)
            };
            let y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), self.scale, offset);
            // `y - floor(y)` (rounded down, no fraction bits kept) in one instruction.
            let fraction = _mm512_reduce_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(y);
            (_mm512_cvt_roundps_epi32::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(y), fraction)
        }

        /// The lanes whose fraction is below the decline threshold.
        ///
        /// # Safety
        /// The CPU has AVX-512 F.
        #[inline]
        #[target_feature(enable = "avx512f")]
        pub fn declined(&self, fraction: __m512) -> __mmask16 {
            _mm512_cmp_ps_mask::<_CMP_LT_OQ>(fraction, self.decline_below)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::microkernels::qs8_requant::multiply_scalar;
    use crate::microkernels::test_rng::Lcg;

    /// The exact path before its clamp: the requantized value plus the zero point.
    fn exact(rq: &ChannelRequant, c: usize, acc: i32) -> i32 {
        multiply_scalar(acc.wrapping_add(rq.bias[c]), rq.mult[c], rq.left[c], rq.right[c])
            .wrapping_add(rq.output_offset)
    }

    #[test]
    fn agrees_with_the_exact_path_or_declines() {
        let mut rng = Lcg(0x000f_10a7);
        let mut declined = 0usize;
        let mut total = 0usize;
        for case in 0..400 {
            let bound = 1 + u64::from(rng.next() % (1 << (10 + case % 14)));
            let e = case % 16;
            let m = (1 << 30) + (rng.next() >> 2) as i32;
            let bias = (rng.next() as i32) >> (8 + case % 20);
            let zp = rng.below(256) as i32 - 128;
            // Full int8 outputs, and narrow clamp ranges (a fused RELU6 or RELU_N1_TO_1).
            let range = [(-128, 127), (zp.max(-128), (zp + 20).min(127)), ((zp - 3).max(-128), (zp + 3).min(127))]
                [(case % 3) as usize];
            let rq = ChannelRequant::new(1, |_| (m, -e), |_| bias, zp, range);
            let Some(f) = FloatRequant::new(&rq, |_| bound) else { continue };
            let b = bound as i64;
            // Random accumulators, and ones on the boundaries of both roundings.
            let mut accs: Vec<i64> = (0..2000).map(|_| i64::from(rng.next() % (2 * bound as u32 + 1)) - b).collect();
            for k in -40i64..40 {
                // x * m near (2k + 1) * 2^(30 + e) (a tie of the second rounding) and near
                // (2k + 1) * 2^30 (of the first), nudged by -2..2.
                for target in [(2 * k + 1) << (30 + e), (2 * k + 1) << 30] {
                    let x = target / i64::from(m) - i64::from(bias);
                    for d in -2..=2 {
                        accs.push(x + d);
                    }
                }
            }
            for acc in accs.into_iter().filter(|a| a.abs() <= b) {
                let acc = acc as i32;
                total += 1;
                match f.scalar(0, acc) {
                    Some(v) => assert_eq!(
                        v.clamp(rq.min, rq.max),
                        exact(&rq, 0, acc).clamp(rq.min, rq.max),
                        "acc {acc} bias {bias} m {m} e {e} zp {zp} range {range:?}"
                    ),
                    None => declined += 1,
                }
            }
        }
        assert!(total > 100_000, "{total} accumulators tried");
        assert!(declined * 20 < total, "{declined} of {total} declined");
    }

    #[test]
    fn zero_multipliers_give_the_zero_point() {
        // A channel of zero weights (and the padding past the last channel) has the
        // multiplier 0: TFLite's output is the zero point, clamped, for every sum.
        for (zp, range) in [(-5, (-128, 127)), (-128, (-128, 127)), (3, (3, 127)), (10, (-20, 5))] {
            let rq = ChannelRequant::new(2, |c| [(0, 0), (1 << 30, -3)][c], |c| [1234, -5][c], zp, range);
            let f = FloatRequant::new(&rq, |_| 1 << 16).expect("the shortcut holds");
            for acc in [-(1 << 16), -1000, -1, 0, 1, 77, 1 << 16] {
                let got = f.scalar(0, acc).map(|v| v.clamp(rq.min, rq.max));
                assert_eq!(got, Some(exact(&rq, 0, acc).clamp(rq.min, rq.max)), "acc {acc} zp {zp}");
                assert_eq!(got, Some(zp.clamp(range.0, range.1)));
            }
        }
    }

    #[test]
    fn declined_where_it_cannot_be_exact() {
        let rq = ChannelRequant::new(2, |c| [(1 << 30, 1), (1 << 30, -8)][c], |_| 0, 0, (-128, 127));
        assert!(FloatRequant::new(&rq, |_| 1000).is_none(), "a left shift");
        let rq = ChannelRequant::new(1, |_| (1 << 30, -8), |_| 0, 0, (-128, 127));
        assert!(FloatRequant::new(&rq, |_| 1 << 24).is_none(), "accumulators too large for f32");
        assert!(FloatRequant::new(&rq, |_| 1 << 20).is_some());
        let rq = ChannelRequant::new(1, |_| (1 << 30, -1), |_| 0, 0, (-128, 127));
        assert!(FloatRequant::new(&rq, |_| (1 << 23) - 1).is_none(), "an error bound too wide to pay");
    }
}
