//! AVX2 quantized binary kernels: 8 values per vector, widened to 32-bit lanes; the last
//! few go through a small buffer on the stack (AVX2 has no masked byte loads).
//!
//! The rescaling steps are the AVX-512 ones on 8 lanes (see
//! [`qs8_requant::avx512`](crate::microkernels::qs8_requant::avx512)), with comparisons
//! giving all-ones lanes where AVX-512 gives masks; the short forms of [`super::forms`]
//! serve the parameters that allow them.

use super::forms::{Elem, vc_forms, vv_forms};
use super::{ADD, Input, Kernels8, MUL, QBinaryKernels, QBinaryParams, RSUB, Rescale, SUB};
use crate::microkernels::Isa;
use core::arch::x86_64::*;

/// 8 values at `p`, widened to `i32`.
///
/// # Safety
/// `p` readable for 8 values; the CPU has AVX2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load<T: Elem>(p: *const T) -> __m256i {
    // SAFETY: 8 bytes readable (the contract); the load is unaligned.
    let v = unsafe { _mm_loadl_epi64(p.cast()) };
    if T::SIGNED { _mm256_cvtepi8_epi32(v) } else { _mm256_cvtepu8_epi32(v) }
}

/// Stores the low byte of 8 lanes (a C cast of each).
///
/// # Safety
/// `p` writable for 8 values; the CPU has AVX2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn store<T>(p: *mut T, v: __m256i) {
    // The low byte of each lane to the first 4 bytes of its 128-bit half, then the two
    // halves' first words together.
    let low_bytes = _mm256_setr_epi8(
        0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1,
    );
    let b = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(v, low_bytes), _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0));
    // SAFETY: 8 bytes writable (the contract); the store is unaligned.
    unsafe { _mm_storel_epi64(p.cast(), _mm256_castsi256_si128(b)) }
}

/// `SaturatingRoundingDoublingHighMul` of 8 lanes (as the AVX-512 `srdhm`), saturating
/// when `SAT`: only `i32::MIN * i32::MIN` reads `i32::MIN` before it, and `i32::MIN ^ -1`
/// is `i32::MAX`.
#[inline]
#[target_feature(enable = "avx2")]
fn srdhm<const SAT: bool>(x: __m256i, m: __m256i) -> __m256i {
    let nudge = _mm256_set1_epi64x(1 << 30);
    let even = _mm256_srli_epi64::<31>(_mm256_add_epi64(_mm256_mul_epi32(x, m), nudge));
    let odd = _mm256_mul_epi32(_mm256_srli_epi64::<32>(x), _mm256_srli_epi64::<32>(m));
    let odd = _mm256_slli_epi64::<1>(_mm256_add_epi64(odd, nudge));
    let h = _mm256_blend_epi32::<0b1010_1010>(even, odd);
    if SAT { _mm256_xor_si256(h, _mm256_cmpeq_epi32(h, _mm256_set1_epi32(i32::MIN))) } else { h }
}

/// `RoundingDivideByPOT` of 8 lanes by exponents in `0..=31` (as the AVX-512 one).
#[inline]
#[target_feature(enable = "avx2")]
fn rounding_divide_by_pot(h: __m256i, right: __m256i) -> __m256i {
    let one = _mm256_set1_epi32(1);
    let mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, right), one);
    let remainder = _mm256_and_si256(h, mask);
    // All-ones (-1) lanes where `h < 0` raise the threshold by one.
    let threshold = _mm256_sub_epi32(_mm256_srai_epi32::<1>(mask), _mm256_cmpgt_epi32(_mm256_setzero_si256(), h));
    let up = _mm256_cmpgt_epi32(remainder, threshold);
    _mm256_sub_epi32(_mm256_srav_epi32(h, right), up)
}

/// `RoundingDivideByPOT(h, e)` in the short form (see [`super::forms`]).
#[inline]
#[target_feature(enable = "avx2")]
fn round_short(h: __m256i, half: __m256i, sign_shift: __m256i, e: __m256i) -> __m256i {
    let negative = _mm256_srlv_epi32(h, sign_shift);
    _mm256_srav_epi32(_mm256_sub_epi32(_mm256_add_epi32(h, half), negative), e)
}

/// `2^(e-1)`, 0 for `e = 0`, in every lane.
#[inline]
#[target_feature(enable = "avx2")]
fn half(e: u32) -> __m256i {
    _mm256_set1_epi32(if e == 0 { 0 } else { 1 << (e - 1) })
}

/// [`round_short`]'s `sign_shift` for `e`, in every lane: 31 takes the sign bit to bit 0,
/// 32 clears the lane (nothing is rounded when `e = 0`).
#[inline]
#[target_feature(enable = "avx2")]
fn sign_shift(e: u32) -> __m256i {
    _mm256_set1_epi32(if e == 0 { 32 } else { 31 })
}

/// One input's loop-invariant vectors (as the AVX-512 kernels').
#[derive(Clone, Copy)]
struct InVec {
    offset: __m256i,
    mult: __m256i,
    left: __m256i,
    right: __m256i,
    mh: __m256i,
    ml: __m256i,
    half: __m256i,
    sign_shift: __m256i,
}

impl InVec {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn new(i: &Input) -> InVec {
        let s = i.scale;
        InVec {
            offset: _mm256_set1_epi32(i.offset),
            mult: _mm256_set1_epi32(s.mult),
            left: _mm256_set1_epi32(s.left as i32),
            right: _mm256_set1_epi32(s.right as i32),
            mh: _mm256_set1_epi32(s.mult >> 11),
            ml: _mm256_set1_epi32(s.mult & 0x7ff),
            half: half(s.right),
            sign_shift: sign_shift(s.right),
        }
    }
}

/// `i.scaled(x)` of 8 lanes, in the short form when `SHORT`.
#[inline]
#[target_feature(enable = "avx2")]
fn scale_in<const SHORT: bool>(x: __m256i, i: &InVec) -> __m256i {
    let v = _mm256_add_epi32(x, i.offset);
    if SHORT {
        let lo = _mm256_mullo_epi32(v, i.ml);
        let lo = _mm256_srai_epi32::<11>(_mm256_add_epi32(lo, _mm256_set1_epi32(1 << 10)));
        let h = _mm256_add_epi32(_mm256_mullo_epi32(v, i.mh), lo);
        round_short(h, i.half, i.sign_shift, i.right)
    } else {
        rounding_divide_by_pot(srdhm::<true>(_mm256_sllv_epi32(v, i.left), i.mult), i.right)
    }
}

/// The output's loop-invariant vectors.
#[derive(Clone, Copy)]
struct OutVec {
    mult: __m256i,
    left: __m256i,
    right: __m256i,
    half: __m256i,
    sign_shift: __m256i,
    offset: __m256i,
    min: __m256i,
    max: __m256i,
}

impl OutVec {
    #[inline]
    #[target_feature(enable = "avx2")]
    fn new(p: &QBinaryParams) -> OutVec {
        let Rescale { mult, left, right } = p.out;
        OutVec {
            mult: _mm256_set1_epi32(mult),
            left: _mm256_set1_epi32(left as i32),
            right: _mm256_set1_epi32(right as i32),
            half: half(right),
            sign_shift: sign_shift(right),
            offset: _mm256_set1_epi32(p.output_offset),
            min: _mm256_set1_epi32(p.min),
            max: _mm256_set1_epi32(p.max),
        }
    }
}

/// `p.finish(raw)` of 8 lanes, in the short form when `SHORT`.
#[inline]
#[target_feature(enable = "avx2")]
fn finish<const SHORT: bool>(raw: __m256i, o: &OutVec) -> __m256i {
    let v = if SHORT {
        round_short(srdhm::<false>(raw, o.mult), o.half, o.sign_shift, o.right)
    } else {
        rounding_divide_by_pot(srdhm::<true>(_mm256_sllv_epi32(raw, o.left), o.mult), o.right)
    };
    _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(v, o.offset), o.min), o.max)
}

/// One vector of `vv`.
#[inline]
#[target_feature(enable = "avx2")]
fn vv_step<const OP: u8, const SHORT: bool, const SHORT_OUT: bool>(
    x: __m256i,
    y: __m256i,
    a: &InVec,
    b: &InVec,
    o: &OutVec,
) -> __m256i {
    let raw = match OP {
        ADD => _mm256_add_epi32(scale_in::<SHORT>(x, a), scale_in::<SHORT>(y, b)),
        SUB => _mm256_sub_epi32(scale_in::<SHORT>(x, a), scale_in::<SHORT>(y, b)),
        _ => _mm256_mullo_epi32(_mm256_add_epi32(x, a.offset), _mm256_add_epi32(y, b.offset)),
    };
    finish::<SHORT_OUT>(raw, o)
}

/// One vector of `vc`.
#[inline]
#[target_feature(enable = "avx2")]
fn vc_step<const OP: u8, const SHORT: bool, const SHORT_OUT: bool>(
    x: __m256i,
    c: __m256i,
    xi: &InVec,
    o: &OutVec,
) -> __m256i {
    let raw = match OP {
        ADD => _mm256_add_epi32(scale_in::<SHORT>(x, xi), c),
        SUB => _mm256_sub_epi32(scale_in::<SHORT>(x, xi), c),
        RSUB => _mm256_sub_epi32(c, scale_in::<SHORT>(x, xi)),
        _ => _mm256_mullo_epi32(_mm256_add_epi32(x, xi.offset), c),
    };
    finish::<SHORT_OUT>(raw, o)
}

/// `rem < 8` values of `p` copied into a buffer of 8 (the rest zero).
///
/// # Safety
/// `p` readable for `rem` values.
#[inline(always)]
unsafe fn tail_in<T: Elem + Default>(p: *const T, rem: usize) -> [T; 8] {
    let mut buf = [T::default(); 8];
    // SAFETY: `rem <= 8` values readable (the contract) into a buffer of 8.
    unsafe { core::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), rem) };
    buf
}

/// # Safety
/// See [`super::VvFn`]; the CPU has AVX2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn vv_loop<T: Elem + Default, const OP: u8, const SHORT: bool, const SHORT_OUT: bool>(
    n: usize,
    a: *const T,
    b: *const T,
    out: *mut T,
    p: &QBinaryParams,
) {
    let (va, vb, o) = (InVec::new(&p.a), InVec::new(&p.b), OutVec::new(p));
    // SAFETY: every access is below `n` (the tail through buffers); each vector is loaded
    // before the same positions are stored, so `out` may be `a` or `b`.
    unsafe {
        let mut i = 0;
        while i + 8 <= n {
            store(out.add(i), vv_step::<OP, SHORT, SHORT_OUT>(load(a.add(i)), load(b.add(i)), &va, &vb, &o));
            i += 8;
        }
        if i < n {
            let rem = n - i;
            let (ta, tb) = (tail_in(a.add(i), rem), tail_in(b.add(i), rem));
            let mut to = [T::default(); 8];
            store(to.as_mut_ptr(), vv_step::<OP, SHORT, SHORT_OUT>(load(ta.as_ptr()), load(tb.as_ptr()), &va, &vb, &o));
            core::ptr::copy_nonoverlapping(to.as_ptr(), out.add(i), rem);
        }
    }
}

/// # Safety
/// See [`super::VcFn`]; the CPU has AVX2.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn vc_loop<T: Elem + Default, const OP: u8, const SHORT: bool, const SHORT_OUT: bool>(
    n: usize,
    x: *const T,
    c: i32,
    out: *mut T,
    xi: &Input,
    p: &QBinaryParams,
) {
    let (vx, vc, o) = (InVec::new(xi), _mm256_set1_epi32(c), OutVec::new(p));
    // SAFETY: as in `vv_loop`.
    unsafe {
        let mut i = 0;
        while i + 8 <= n {
            store(out.add(i), vc_step::<OP, SHORT, SHORT_OUT>(load(x.add(i)), vc, &vx, &o));
            i += 8;
        }
        if i < n {
            let rem = n - i;
            let tx = tail_in(x.add(i), rem);
            let mut to = [T::default(); 8];
            store(to.as_mut_ptr(), vc_step::<OP, SHORT, SHORT_OUT>(load(tx.as_ptr()), vc, &vx, &o));
            core::ptr::copy_nonoverlapping(to.as_ptr(), out.add(i), rem);
        }
    }
}

/// # Safety
/// See [`super::VvFn`].
#[target_feature(enable = "avx2")]
unsafe fn vv<T: Elem + Default, const OP: u8>(n: usize, a: *const T, b: *const T, out: *mut T, p: &QBinaryParams) {
    let (short, short_out) = vv_forms::<T, OP>(p);
    // SAFETY: the caller's contract is the loops'.
    unsafe {
        match (short, short_out) {
            (true, true) => vv_loop::<T, OP, true, true>(n, a, b, out, p),
            (true, false) => vv_loop::<T, OP, true, false>(n, a, b, out, p),
            (false, true) => vv_loop::<T, OP, false, true>(n, a, b, out, p),
            (false, false) => vv_loop::<T, OP, false, false>(n, a, b, out, p),
        }
    }
}

/// # Safety
/// See [`super::VcFn`].
#[target_feature(enable = "avx2")]
unsafe fn vc<T: Elem + Default, const OP: u8>(
    n: usize,
    x: *const T,
    c: i32,
    out: *mut T,
    xi: &Input,
    p: &QBinaryParams,
) {
    let (short, short_out) = vc_forms::<T, OP>(xi, c, p);
    // SAFETY: the caller's contract is the loops'.
    unsafe {
        match (short, short_out) {
            (true, true) => vc_loop::<T, OP, true, true>(n, x, c, out, xi, p),
            (true, false) => vc_loop::<T, OP, true, false>(n, x, c, out, xi, p),
            (false, true) => vc_loop::<T, OP, false, true>(n, x, c, out, xi, p),
            (false, false) => vc_loop::<T, OP, false, false>(n, x, c, out, xi, p),
        }
    }
}

const fn kernels<T: Elem + Default>() -> Kernels8<T> {
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

/// The AVX2 table's kernels.
pub(crate) const KERNELS: QBinaryKernels =
    QBinaryKernels { isa: Isa::Avx2Fma, s8: kernels::<i8>(), u8: kernels::<u8>() };
