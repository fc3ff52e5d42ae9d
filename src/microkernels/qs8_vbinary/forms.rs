//! The short exact forms the SIMD kernels take when the parameters allow, and the checks
//! that choose them at a kernel's entry (shared by every instruction set).
//!
//! The ADD / SUB input rescaling has a shorter exact form for the parameters every 8-bit
//! model has (`left` 20 and an offset of at most [`FAST_MAX_OFFSET`] in magnitude, so
//! `v = x + offset` is within `±1023`):
//! - `SaturatingRoundingDoublingHighMul(v << 20, m) = floor((v * m * 2^20 + 2^30) / 2^31)
//!   = floor((v * m + 2^10) / 2^11)`; with `m = mh * 2^11 + ml` (`0 <= ml < 2^11`) that is
//!   `v * mh + ((v * ml + 2^10) >> 11)`, two 32-bit products that cannot overflow
//!   (`|v * mh| < 2^30`, `|v * ml| < 2^21`), and never the saturating case;
//! - the result `h` is below `2^30 - 2^20` in magnitude, so `RoundingDivideByPOT(h, e)`
//!   (ties away from zero) is `(h + 2^(e-1) - [h < 0]) >> e` for `e >= 1` without
//!   overflow, and `h` for `e = 0` (the kernels' `round_short`).
//!
//! The output rescaling has a shorter exact form too when the raw values are known to be
//! small enough (bounded from the parameters and the 8-bit input range, see
//! [`short_output`]): no left shift, no saturation, and the same short rounding.
//!
//! Where both short forms hold, ADD and SUB also have a float form ([`vv_float`]): the
//! output plus its zero point is `floor(y)` with `y = x_a * a + x_b * b + c` in `f32`,
//! except for the lanes `y` lies within a tolerance of an integer, which the kernels
//! compute exactly. Why it holds: each input's rescaling is
//! `T(x) = RoundingDivideByPOT(SaturatingRoundingDoublingHighMul((x + offset) << 20, m), e)`,
//! two roundings of `(x + offset) * s` (`s = m / 2^(11 + e)`) to an integer, each by at
//! most 1/2 of its unit, so `|T(x) - (x + offset) * s| <= 1`; the output's is
//! `floor(raw * S + 1/2 + sign(raw) * 2^-(e_out + 1))` exactly (`S = m_out / 2^(31 +
//! e_out)`, see `qs8_float_requant`), the nudge 0 for `e_out = 0` (its ties, half-integers,
//! are declined). With `a = s_a * S`, `b = +-s_b * S` and `c` the offsets' terms plus
//! 1/2 and the zero point, `y` lies within `2 S` (the two input roundings) plus its own
//! `f32` roundings of the exact `raw * S + 1/2 + zero point`; adding the nudge, that is
//! the tolerance: where no integer lies that close to `y`, `floor(y)` is the output.

use super::{ADD, Input, MUL, QBinaryParams, SUB};

/// The largest input offset magnitude of the short ADD / SUB input rescaling: with 8-bit
/// inputs (`-128..=255`), `|x + offset| <= 1023`.
const FAST_MAX_OFFSET: i32 = 768;

/// The input left shift of the short ADD / SUB input rescaling (TFLite's 8-bit one).
const FAST_LEFT: u32 = 20;

/// An 8-bit element type: how it widens, and its range.
pub trait Elem: Copy {
    const SIGNED: bool;
    const MIN: i32;
    const MAX: i32;
}

impl Elem for i8 {
    const SIGNED: bool = true;
    const MIN: i32 = i8::MIN as i32;
    const MAX: i32 = i8::MAX as i32;
}

impl Elem for u8 {
    const SIGNED: bool = false;
    const MIN: i32 = 0;
    const MAX: i32 = u8::MAX as i32;
}

/// True when `i`'s offset keeps `x + offset` within `±1023` for every 8-bit `x`.
fn small_offset(i: &Input) -> bool {
    (-FAST_MAX_OFFSET..=FAST_MAX_OFFSET).contains(&i.offset)
}

/// True when the short input rescaling is exact for `i` (see the module documentation).
fn short_form(i: &Input) -> bool {
    i.scale.left == FAST_LEFT && small_offset(i)
}

/// The largest magnitude of `i.scaled(x)` over `T`'s values, for an input in the short
/// form: the rescaling is monotonic in `x` there (no wrapping), so it is reached at an end.
fn scaled_bound<T: Elem>(i: &Input) -> i64 {
    i64::from(i.scaled(T::MIN)).abs().max(i64::from(i.scaled(T::MAX)).abs())
}

/// The largest magnitude of `x + i.offset` over `T`'s values, for a small offset.
fn offset_bound<T: Elem>(i: &Input) -> i64 {
    i64::from(T::MIN + i.offset).abs().max(i64::from(T::MAX + i.offset).abs())
}

/// True when every raw value of magnitude at most `r` takes the short output rescaling
/// exactly: no left shift; `|raw| < 2^31`, so `raw` is never `i32::MIN` (no saturation);
/// and `|h| + 2^(e-1) < 2^31` for `h = SaturatingRoundingDoublingHighMul(raw, m)`, whose
/// magnitude is at most `(r * |m|) / 2^31 + 1`, so the short rounding does not overflow.
fn short_output(p: &QBinaryParams, r: i64) -> bool {
    let o = p.out;
    if o.left != 0 || r >= 1 << 31 {
        return false;
    }
    let h = ((r * i64::from(o.mult).abs()) >> 31) + 1;
    let half = if o.right == 0 { 0 } else { 1i64 << (o.right - 1) };
    h + half < 1 << 31
}

/// Whether a `vv` kernel of op `OP` may take the short input and the short output forms.
pub fn vv_forms<T: Elem, const OP: u8>(p: &QBinaryParams) -> (bool, bool) {
    let short = OP != MUL && short_form(&p.a) && short_form(&p.b);
    let bound = if short {
        Some(scaled_bound::<T>(&p.a) + scaled_bound::<T>(&p.b))
    } else if OP == MUL && small_offset(&p.a) && small_offset(&p.b) {
        Some(offset_bound::<T>(&p.a) * offset_bound::<T>(&p.b))
    } else {
        None
    };
    (short, bound.is_some_and(|r| short_output(p, r)))
}

/// Whether a `vc` kernel of op `OP` with `x`'s parameters `xi` and the value `c` may take
/// the short input and the short output forms.
pub fn vc_forms<T: Elem, const OP: u8>(xi: &Input, c: i32, p: &QBinaryParams) -> (bool, bool) {
    let short = OP != MUL && short_form(xi);
    let bound = if short {
        Some(scaled_bound::<T>(xi) + i64::from(c).abs())
    } else if OP == MUL && small_offset(xi) {
        Some(offset_bound::<T>(xi) * i64::from(c).abs())
    } else {
        None
    };
    (short, bound.is_some_and(|r| short_output(p, r)))
}

/// The float form of an ADD or SUB `vv` kernel (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub struct FloatForm {
    pub a: f32,
    pub b: f32,
    pub c: f32,
    pub tolerance: f32,
}

/// The largest tolerance worth the float form: past it, too many lanes would be declined.
const MAX_FLOAT_TOLERANCE: f64 = 1.0 / 256.0;

/// The float form of a `vv` kernel of op `OP` with `p`, where it holds.
pub fn vv_float<T: Elem, const OP: u8>(p: &QBinaryParams) -> Option<FloatForm> {
    if OP != ADD && OP != SUB || vv_forms::<T, OP>(p) != (true, true) {
        return None;
    }
    let (ia, ib, o) = (p.a.scale, p.b.scale, p.out);
    if ia.mult < 0 || ib.mult < 0 || o.mult < 0 || o.left != 0 {
        return None;
    }
    let pow2 = |e: u32| f64::powi(2.0, e as i32);
    let out_scale = f64::from(o.mult) / pow2(31 + o.right);
    let a = f64::from(ia.mult) / pow2(11 + ia.right) * out_scale;
    let b = f64::from(ib.mult) / pow2(11 + ib.right) * out_scale * if OP == SUB { -1.0 } else { 1.0 };
    let c = f64::from(p.a.offset) * a + f64::from(p.b.offset) * b + 0.5 + f64::from(p.output_offset);
    // Every term's magnitude, for the f32 roundings: of `a`, `b` and `c` themselves and of
    // the two fused multiply-adds, each at most 2^-24 of `reach`.
    let x = f64::from(T::MIN.unsigned_abs().max(T::MAX.unsigned_abs()));
    let reach = x * (a.abs() + b.abs()) + c.abs();
    let nudge = if o.right == 0 { 0.0 } else { pow2(o.right + 1).recip() };
    let tolerance = 2.0 * out_scale + 6.0 * reach * f64::powi(2.0, -24) + nudge;
    if tolerance > MAX_FLOAT_TOLERANCE || reach > f64::from(1u32 << 22) {
        return None;
    }
    // Rounded up, so the f32 tolerance is never below the proven one.
    Some(FloatForm { a: a as f32, b: b as f32, c: c as f32, tolerance: (tolerance * (1.0 + 1.0 / 1024.0)) as f32 })
}
