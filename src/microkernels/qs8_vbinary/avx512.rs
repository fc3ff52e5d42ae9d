//! AVX-512 quantized binary kernels: 16 values per vector, widened to 32-bit lanes, the
//! last few through masked loads and stores (which never touch memory outside the mask).
//!
//! The general rescaling is [`qs8_requant::avx512`](crate::microkernels::qs8_requant::avx512)'s
//! exact `srdhm` and `rounding_divide_by_pot`; the short forms of [`super::forms`] serve
//! the parameters that allow them.

use super::forms::{Elem, FloatForm, vc_forms, vv_float, vv_forms};
use super::{ADD, Input, Kernels8, MUL, QBinaryKernels, QBinaryParams, RSUB, Rescale, SUB};
use crate::microkernels::Isa;
use crate::microkernels::qs8_requant::avx512::{rounding_divide_by_pot, srdhm, srdhm_unsaturated};
use core::arch::x86_64::*;

/// Lanes `0..rem` set (`rem < 16`).
#[inline(always)]
fn tail_mask(rem: usize) -> __mmask16 {
    ((1u32 << rem) - 1) as __mmask16
}

/// 16 values at `p`, widened to `i32`.
///
/// # Safety
/// `p` readable for 16 values; the CPU has AVX-512 F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn load<T: Elem>(p: *const T) -> __m512i {
    // SAFETY: 16 bytes readable (the contract); the load is unaligned.
    let v = unsafe { _mm_loadu_si128(p.cast()) };
    if T::SIGNED { _mm512_cvtepi8_epi32(v) } else { _mm512_cvtepu8_epi32(v) }
}

/// The values of lanes in `m` at `p`, widened (the other lanes 0).
///
/// # Safety
/// `p` readable for the lanes in `m`; the CPU has AVX-512 F, BW and VL.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn load_tail<T: Elem>(p: *const T, m: __mmask16) -> __m512i {
    // SAFETY: a masked load reads only the lanes in `m` (the contract's bytes).
    let v = unsafe { _mm_maskz_loadu_epi8(m, p.cast()) };
    if T::SIGNED { _mm512_cvtepi8_epi32(v) } else { _mm512_cvtepu8_epi32(v) }
}

/// Stores the low byte of 16 lanes (a C cast of each).
///
/// # Safety
/// `p` writable for 16 values; the CPU has AVX-512 F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn store<T>(p: *mut T, v: __m512i) {
    // SAFETY: 16 bytes writable (the contract); the store is unaligned.
    unsafe { _mm_storeu_si128(p.cast(), _mm512_cvtepi32_epi8(v)) }
}

/// Stores the low byte of the lanes in `m`.
///
/// # Safety
/// `p` writable for the lanes in `m`; the CPU has AVX-512 F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn store_tail<T>(p: *mut T, m: __mmask16, v: __m512i) {
    // SAFETY: a masked store writes only the lanes in `m` (the contract's bytes).
    unsafe { _mm512_mask_cvtepi32_storeu_epi8(p.cast(), m, v) }
}

/// One input's loop-invariant vectors.
#[derive(Clone, Copy)]
struct InVec {
    offset: __m512i,
    /// General form: the multiplier and the shifts.
    mult: __m512i,
    left: __m512i,
    right: __m512i,
    /// Short form: the multiplier's high (`>> 11`) and low 11 bits, `2^(right-1)` (0 for
    /// a right shift of 0), and the shift that takes a lane's sign bit to bit 0 (31), or
    /// clears the lane (32) when nothing is rounded.
    mh: __m512i,
    ml: __m512i,
    half: __m512i,
    sign_shift: __m512i,
}

impl InVec {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new(i: &Input) -> InVec {
        let s = i.scale;
        InVec {
            offset: _mm512_set1_epi32(i.offset),
            mult: _mm512_set1_epi32(s.mult),
            left: _mm512_set1_epi32(s.left as i32),
            right: _mm512_set1_epi32(s.right as i32),
            mh: _mm512_set1_epi32(s.mult >> 11),
            ml: _mm512_set1_epi32(s.mult & 0x7ff),
            half: half(s.right),
            sign_shift: sign_shift(s.right),
        }
    }
}

/// `2^(e-1)`, 0 for `e = 0`, in every lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn half(e: u32) -> __m512i {
    _mm512_set1_epi32(if e == 0 { 0 } else { 1 << (e - 1) })
}

/// [`round_short`]'s `sign_shift` for `e`, in every lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn sign_shift(e: u32) -> __m512i {
    _mm512_set1_epi32(if e == 0 { 32 } else { 31 })
}

/// `RoundingDivideByPOT(h, e)` as `(h + half - [h < 0]) >> e`, with `half = 2^(e-1)` and
/// `sign_shift` 31 for `e >= 1`, `half = 0` and `sign_shift` 32 (no correction) for
/// `e = 0`. Exact when `h + half` does not overflow.
#[inline]
#[target_feature(enable = "avx512f")]
fn round_short(h: __m512i, half: __m512i, sign_shift: __m512i, e: __m512i) -> __m512i {
    let negative = _mm512_srlv_epi32(h, sign_shift);
    _mm512_srav_epi32(_mm512_sub_epi32(_mm512_add_epi32(h, half), negative), e)
}

/// `i.scaled(x)` of 16 lanes, in the short form when `SHORT` (see [`super::forms`]).
#[inline]
#[target_feature(enable = "avx512f")]
fn scale_in<const SHORT: bool>(x: __m512i, i: &InVec) -> __m512i {
    let v = _mm512_add_epi32(x, i.offset);
    if SHORT {
        let lo = _mm512_mullo_epi32(v, i.ml);
        let lo = _mm512_srai_epi32::<11>(_mm512_add_epi32(lo, _mm512_set1_epi32(1 << 10)));
        let h = _mm512_add_epi32(_mm512_mullo_epi32(v, i.mh), lo);
        round_short(h, i.half, i.sign_shift, i.right)
    } else {
        rounding_divide_by_pot(srdhm(_mm512_sllv_epi32(v, i.left), i.mult), i.right)
    }
}

/// The output's loop-invariant vectors.
#[derive(Clone, Copy)]
struct OutVec {
    mult: __m512i,
    left: __m512i,
    right: __m512i,
    half: __m512i,
    sign_shift: __m512i,
    offset: __m512i,
    min: __m512i,
    max: __m512i,
}

impl OutVec {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new(p: &QBinaryParams) -> OutVec {
        let Rescale { mult, left, right } = p.out;
        OutVec {
            mult: _mm512_set1_epi32(mult),
            left: _mm512_set1_epi32(left as i32),
            right: _mm512_set1_epi32(right as i32),
            half: half(right),
            sign_shift: sign_shift(right),
            offset: _mm512_set1_epi32(p.output_offset),
            min: _mm512_set1_epi32(p.min),
            max: _mm512_set1_epi32(p.max),
        }
    }
}

/// `p.out.apply(raw)` of 16 lanes, in the short form when `SHORT` (see [`super::forms`]).
#[inline]
#[target_feature(enable = "avx512f")]
fn rescale_out<const SHORT: bool>(raw: __m512i, o: &OutVec) -> __m512i {
    if SHORT {
        round_short(srdhm_unsaturated(raw, o.mult), o.half, o.sign_shift, o.right)
    } else {
        rounding_divide_by_pot(srdhm(_mm512_sllv_epi32(raw, o.left), o.mult), o.right)
    }
}

/// `p.finish(raw)` of 16 lanes.
#[inline]
#[target_feature(enable = "avx512f")]
fn finish<const SHORT: bool>(raw: __m512i, o: &OutVec) -> __m512i {
    let v = rescale_out::<SHORT>(raw, o);
    _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(v, o.offset), o.min), o.max)
}

/// The output offset and clamp range for [`finish_packed`].
#[derive(Clone, Copy)]
struct PackVec {
    offset: __m512i,
    min: __m512i,
    max: __m512i,
}

impl PackVec {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn new(p: &QBinaryParams) -> PackVec {
        PackVec {
            offset: _mm512_set1_epi16(p.output_offset as i16),
            min: _mm512_set1_epi8(p.min as i8),
            max: _mm512_set1_epi8(p.max as i8),
        }
    }
}

/// True when [`finish_packed`] gives `p.finish`'s values: the offset within `±2^14` and
/// the clamp range within `T`'s.
fn packs_exactly<T: Elem>(p: &QBinaryParams) -> bool {
    let in_range = |v: i32| (T::MIN..=T::MAX).contains(&v);
    in_range(p.min) && in_range(p.max) && (-(1 << 14)..=1 << 14).contains(&p.output_offset)
}

/// Stores the outputs of 64 rescaled lanes (`v0` first), `p.finish` done on narrow lanes
/// as XNNPACK does: packed to 16 bits with saturation, the offset added with saturation,
/// packed to `T` with saturation, then clamped. Where [`packs_exactly`] holds this is the
/// exact clamp of `v + offset`: a lane saturated at either step stays beyond `T`'s range
/// on the side of its exact value (`|offset| <= 2^14` keeps a saturated 16-bit lane
/// there), and the clamp range lies within `T`'s.
///
/// # Safety
/// `p` writable for 64 values; the CPU has AVX-512 F and BW.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn finish_packed<T: Elem>(p: *mut T, v: [__m512i; 4], o: &PackVec) {
    // Each 128-bit lane `k` of the packed bytes holds, as 32-bit words, lanes `4k..4k+4`
    // of v0, v1, v2 and v3 in turn; the permutation puts v0's first.
    let w01 = _mm512_adds_epi16(_mm512_packs_epi32(v[0], v[1]), o.offset);
    let w23 = _mm512_adds_epi16(_mm512_packs_epi32(v[2], v[3]), o.offset);
    let bytes = if T::SIGNED {
        _mm512_min_epi8(_mm512_max_epi8(_mm512_packs_epi16(w01, w23), o.min), o.max)
    } else {
        _mm512_min_epu8(_mm512_max_epu8(_mm512_packus_epi16(w01, w23), o.min), o.max)
    };
    let order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    // SAFETY: 64 bytes writable (the contract); the store is unaligned.
    unsafe { _mm512_storeu_si512(p.cast(), _mm512_permutexvar_epi32(order, bytes)) }
}

/// The raw values of one vector of `vv`.
#[inline]
#[target_feature(enable = "avx512f")]
fn vv_raw<const OP: u8, const SHORT: bool>(x: __m512i, y: __m512i, a: &InVec, b: &InVec) -> __m512i {
    match OP {
        ADD => _mm512_add_epi32(scale_in::<SHORT>(x, a), scale_in::<SHORT>(y, b)),
        SUB => _mm512_sub_epi32(scale_in::<SHORT>(x, a), scale_in::<SHORT>(y, b)),
        _ => _mm512_mullo_epi32(_mm512_add_epi32(x, a.offset), _mm512_add_epi32(y, b.offset)),
    }
}

/// The raw values of one vector of `vc`.
#[inline]
#[target_feature(enable = "avx512f")]
fn vc_raw<const OP: u8, const SHORT: bool>(x: __m512i, c: __m512i, xi: &InVec) -> __m512i {
    match OP {
        ADD => _mm512_add_epi32(scale_in::<SHORT>(x, xi), c),
        SUB => _mm512_sub_epi32(scale_in::<SHORT>(x, xi), c),
        RSUB => _mm512_sub_epi32(c, scale_in::<SHORT>(x, xi)),
        _ => _mm512_mullo_epi32(_mm512_add_epi32(x, xi.offset), c),
    }
}

/// # Safety
/// See [`super::VvFn`]; the CPU has AVX-512 F, BW and VL.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn vv_loop<T: Elem, const OP: u8, const SHORT: bool, const SHORT_OUT: bool, const PACK: bool>(
    n: usize,
    a: *const T,
    b: *const T,
    out: *mut T,
    p: &QBinaryParams,
) {
    let (va, vb, o, pk) = (InVec::new(&p.a), InVec::new(&p.b), OutVec::new(p), PackVec::new(p));
    // SAFETY: every access is below `n` (masked for the tail); each vector is loaded
    // before the same positions are stored, so `out` may be `a` or `b`.
    unsafe {
        let raw = |i: usize| vv_raw::<OP, SHORT>(load(a.add(i)), load(b.add(i)), &va, &vb);
        let mut i = 0;
        while PACK && i + 64 <= n {
            let v = [i, i + 16, i + 32, i + 48].map(|j| rescale_out::<SHORT_OUT>(raw(j), &o));
            finish_packed(out.add(i), v, &pk);
            i += 64;
        }
        while i + 16 <= n {
            store(out.add(i), finish::<SHORT_OUT>(raw(i), &o));
            i += 16;
        }
        if i < n {
            let m = tail_mask(n - i);
            let r = vv_raw::<OP, SHORT>(load_tail(a.add(i), m), load_tail(b.add(i), m), &va, &vb);
            store_tail(out.add(i), m, finish::<SHORT_OUT>(r, &o));
        }
    }
}

/// [`vv_loop`] in the float form `f` (see [`super::forms`]), 64 values at a time: lanes
/// the form declines, and the last values, take the short exact forms.
///
/// # Safety
/// See [`super::VvFn`]; the float form and both short forms hold for `p`, and so does
/// [`packs_exactly`]; the CPU has AVX-512 F, BW, DQ and VL.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn vv_float_loop<T: Elem, const OP: u8>(
    n: usize,
    a: *const T,
    b: *const T,
    out: *mut T,
    p: &QBinaryParams,
    f: FloatForm,
) {
    let (va, vb, o) = (InVec::new(&p.a), InVec::new(&p.b), OutVec::new(p));
    // The float values already hold the zero point.
    let pk = PackVec { offset: _mm512_setzero_si512(), ..PackVec::new(p) };
    let (fa, fb, fc, tol) =
        (_mm512_set1_ps(f.a), _mm512_set1_ps(f.b), _mm512_set1_ps(f.c), _mm512_set1_ps(f.tolerance));
    // SAFETY: every access is below `n`; each vector is loaded before the same positions
    // are stored, so `out` may be `a` or `b`.
    unsafe {
        let value = |i: usize| {
            let (x, y) = (load(a.add(i)), load(b.add(i)));
            let v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(y), fb, _mm512_fmadd_ps(_mm512_cvtepi32_ps(x), fa, fc));
            let distance = _mm512_abs_ps(_mm512_reduce_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v));
            let r = _mm512_cvt_roundps_epi32::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(v);
            let declined = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(distance, tol);
            if declined == 0 {
                r
            } else {
                let exact = _mm512_add_epi32(rescale_out::<true>(vv_raw::<OP, true>(x, y, &va, &vb), &o), o.offset);
                _mm512_mask_mov_epi32(r, declined, exact)
            }
        };
        let mut i = 0;
        while i + 64 <= n {
            let v = [i, i + 16, i + 32, i + 48].map(value);
            finish_packed(out.add(i), v, &pk);
            i += 64;
        }
        // The rest (fewer than 64 values) in the short forms.
        vv_loop::<T, OP, true, true, false>(n - i, a.add(i), b.add(i), out.add(i), p);
    }
}

/// # Safety
/// See [`super::VcFn`]; the CPU has AVX-512 F, BW and VL.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn vc_loop<T: Elem, const OP: u8, const SHORT: bool, const SHORT_OUT: bool, const PACK: bool>(
    n: usize,
    x: *const T,
    c: i32,
    out: *mut T,
    xi: &Input,
    p: &QBinaryParams,
) {
    let (vx, vc, o, pk) = (InVec::new(xi), _mm512_set1_epi32(c), OutVec::new(p), PackVec::new(p));
    // SAFETY: as in `vv_loop`.
    unsafe {
        let raw = |i: usize| vc_raw::<OP, SHORT>(load(x.add(i)), vc, &vx);
        let mut i = 0;
        while PACK && i + 64 <= n {
            let v = [i, i + 16, i + 32, i + 48].map(|j| rescale_out::<SHORT_OUT>(raw(j), &o));
            finish_packed(out.add(i), v, &pk);
            i += 64;
        }
        while i + 16 <= n {
            store(out.add(i), finish::<SHORT_OUT>(raw(i), &o));
            i += 16;
        }
        if i < n {
            let m = tail_mask(n - i);
            store_tail(out.add(i), m, finish::<SHORT_OUT>(vc_raw::<OP, SHORT>(load_tail(x.add(i), m), vc, &vx), &o));
        }
    }
}

/// # Safety
/// See [`super::VvFn`]; the CPU has AVX-512 F, BW, DQ and VL (the table's).
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn vv<T: Elem, const OP: u8>(n: usize, a: *const T, b: *const T, out: *mut T, p: &QBinaryParams) {
    let (short, short_out) = vv_forms::<T, OP>(p);
    // The packed finish only where the short forms are taken: the common, fast case.
    let pack = short_out && packs_exactly::<T>(p);
    // SAFETY: the caller's contract is the loops'; the float loop's forms are checked.
    unsafe {
        if let Some(f) = vv_float::<T, OP>(p).filter(|_| pack) {
            return vv_float_loop::<T, OP>(n, a, b, out, p, f);
        }
        match (short, short_out, pack) {
            (true, true, true) => vv_loop::<T, OP, true, true, true>(n, a, b, out, p),
            (true, true, false) => vv_loop::<T, OP, true, true, false>(n, a, b, out, p),
            (true, false, _) => vv_loop::<T, OP, true, false, false>(n, a, b, out, p),
            (false, true, true) => vv_loop::<T, OP, false, true, true>(n, a, b, out, p),
            (false, true, false) => vv_loop::<T, OP, false, true, false>(n, a, b, out, p),
            (false, false, _) => vv_loop::<T, OP, false, false, false>(n, a, b, out, p),
        }
    }
}

/// # Safety
/// See [`super::VcFn`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn vc<T: Elem, const OP: u8>(n: usize, x: *const T, c: i32, out: *mut T, xi: &Input, p: &QBinaryParams) {
    let (short, short_out) = vc_forms::<T, OP>(xi, c, p);
    let pack = short_out && packs_exactly::<T>(p);
    // SAFETY: the caller's contract is the loops'.
    unsafe {
        match (short, short_out, pack) {
            (true, true, true) => vc_loop::<T, OP, true, true, true>(n, x, c, out, xi, p),
            (true, true, false) => vc_loop::<T, OP, true, true, false>(n, x, c, out, xi, p),
            (true, false, _) => vc_loop::<T, OP, true, false, false>(n, x, c, out, xi, p),
            (false, true, true) => vc_loop::<T, OP, false, true, true>(n, x, c, out, xi, p),
            (false, true, false) => vc_loop::<T, OP, false, true, false>(n, x, c, out, xi, p),
            (false, false, _) => vc_loop::<T, OP, false, false, false>(n, x, c, out, xi, p),
        }
    }
}

const fn kernels<T: Elem>() -> Kernels8<T> {
    Kernels8 {
        add_vv: vv::<T, ADD>,
        sub_vv: vv::<T, SUB>,
        mul_vv: vv::<T, MUL>,
        add_vc: vc::<T, ADD>,
        sub_vc: vc::<T, SUB>,
        rsub_vc: vc::<T, RSUB>,
        mul_vc: vc::<T, MUL>,
    }
}

/// The AVX-512 table's kernels.
pub(crate) const KERNELS: QBinaryKernels =
    QBinaryKernels { isa: Isa::Avx512, s8: kernels::<i8>(), u8: kernels::<u8>() };
