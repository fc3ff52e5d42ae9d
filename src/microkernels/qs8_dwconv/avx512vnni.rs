//! AVX-512 VNNI int8 depthwise kernels: `vpdpbusd` multiplies 4 unsigned input bytes by
//! 4 signed weights and adds their sum to a 32-bit lane, so one instruction does a group
//! of 4 slots of 8 channels. Per block of 32 channels and group, the 4 slots' 32 input
//! bytes (sign bit flipped: `x + 128`, unsigned) are interleaved by byte
//! (`vpunpck[lh]bw`) and then by 16-bit pair (`vpunpck[lh]wd`) into 4 vectors whose 32-bit
//! lanes each hold one channel's 4 taps (channels `4k..4k + 4` and `16 + 4k..16 + 4k + 4`
//! in vector `k`, as the weights are packed in [`Layout::Dot4x32`]). After the last group
//! two 128-bit lane shuffles put the accumulators back in channel order for the 16-lane
//! requantization.
//!
//! The 3x3 sliding kernel groups each filter column's 3 taps (and a zero), so the
//! interleaved group of input column `j` serves every pixel that reads column `j`: with
//! stride 1 each pixel interleaves one new column and reuses two, with stride 2 it
//! interleaves two and reuses one.
//!
//! The vectors are 256 bits wide: on Zen 4 a 512-bit operation costs two 256-bit ones,
//! so 32-channel blocks do the same work per channel with half the padding on channel
//! counts that are not multiples of 64.

use super::{DwKernels, DwRequant, Layout, SlideCols};
use crate::microkernels::Isa;
use crate::microkernels::qs8_float_requant::avx512::FloatLanes;
use crate::microkernels::qs8_requant::avx512 as rq512;
use core::arch::x86_64::*;

/// Channels per block.
const BLOCK: usize = 32;

pub const KERNELS: DwKernels = DwKernels {
    isa: Isa::Avx512Vnni,
    layout: Layout::Dot4x32,
    fixed: [(12, rows12), (40, rows40)],
    any: rows_any,
    slide3x3: Some(slide3x3),
};

/// # Safety
/// See [`super::DwKernel`] (`slots.len() == 12`: a 3x3 filter).
unsafe fn rows12(channels: usize, slots: &[*const i8], step: usize, weights: &[i32], rq: &DwRequant, out: &mut [i8]) {
    debug_assert_eq!(slots.len(), 12);
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512 VNNI.
    unsafe { rows::<12>(channels, slots, step, weights, rq, out) }
}

/// # Safety
/// See [`super::DwKernel`] (`slots.len() == 40`: a 5x5 filter).
unsafe fn rows40(channels: usize, slots: &[*const i8], step: usize, weights: &[i32], rq: &DwRequant, out: &mut [i8]) {
    debug_assert_eq!(slots.len(), 40);
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512 VNNI.
    unsafe { rows::<40>(channels, slots, step, weights, rq, out) }
}

/// # Safety
/// See [`super::DwKernel`].
unsafe fn rows_any(channels: usize, slots: &[*const i8], step: usize, weights: &[i32], rq: &DwRequant, out: &mut [i8]) {
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512 VNNI.
    unsafe { rows::<0>(channels, slots, step, weights, rq, out) }
}

/// The kernel for `T` slots (`T == 0`: any multiple of 4, weights read from memory per
/// pixel).
///
/// # Safety
/// See [`super::DwKernel`]; `T == 0` or `T == slots.len()`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
unsafe fn rows<const T: usize>(
    channels: usize,
    slots: &[*const i8],
    step: usize,
    weights: &[i32],
    rq: &DwRequant,
    out: &mut [i8],
) {
    let pixels = out.len() / channels;
    let (s, w, o) = (slots.as_ptr(), weights.as_ptr(), out.as_mut_ptr());
    // SAFETY: the caller's contract; `blocks` calls `f` on whole blocks of channels.
    unsafe {
        blocks(channels, |c0, mask, masked| match (masked, mode(rq)) {
            (true, EXACT) => block::<T, true, EXACT>(slots.len(), s, step, w, rq, o, channels, pixels, c0, mask),
            (true, FLOAT) => block::<T, true, FLOAT>(slots.len(), s, step, w, rq, o, channels, pixels, c0, mask),
            (true, _) => block::<T, true, ONE_SIDED>(slots.len(), s, step, w, rq, o, channels, pixels, c0, mask),
            (false, EXACT) => block::<T, false, EXACT>(slots.len(), s, step, w, rq, o, channels, pixels, c0, mask),
            (false, FLOAT) => block::<T, false, FLOAT>(slots.len(), s, step, w, rq, o, channels, pixels, c0, mask),
            (false, _) => block::<T, false, ONE_SIDED>(slots.len(), s, step, w, rq, o, channels, pixels, c0, mask),
        })
    }
}

/// How a kernel requantizes: exactly, or with the float shortcut (see
/// `qs8_float_requant`), in its one-sided form or not.
const EXACT: u8 = 0;
const FLOAT: u8 = 1;
const ONE_SIDED: u8 = 2;

fn mode(rq: &DwRequant) -> u8 {
    match &rq.float {
        None => EXACT,
        Some(f) if f.one_sided => ONE_SIDED,
        Some(_) => FLOAT,
    }
}

/// Calls `f(c0, mask, masked)` for each block of 32 channels: the full ones unmasked, then
/// the remaining channels (if any) under `mask`.
#[inline(always)]
fn blocks(channels: usize, mut f: impl FnMut(usize, __mmask32, bool)) {
    let full = channels / BLOCK;
    for b in 0..full {
        f(b * BLOCK, !0, false);
    }
    let rest = channels - full * BLOCK;
    if rest > 0 {
        f(full * BLOCK, ((1u64 << rest) - 1) as __mmask32, true);
    }
}

/// A block's requantization: its two halves' parameters and the output's, and with the
/// float shortcut (`MODE != EXACT`) its two halves' float tables.
#[derive(Clone, Copy)]
struct Requant<const MODE: u8> {
    lo: rq512::Lanes,
    hi: rq512::Lanes,
    offset: __m512i,
    min: __m512i,
    max: __m512i,
    float: Option<[FloatLanes; 2]>,
    min16: __m512i,
    max16: __m512i,
}

impl<const MODE: u8> Requant<MODE> {
    /// Channels `c0..c0 + 32` of `rq`.
    ///
    /// # Safety
    /// `c0 + 32 <= rq.exact.padded_channels()`, and as many entries in each float table
    /// (present when `MODE != EXACT`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load(rq: &DwRequant, c0: usize) -> Requant<MODE> {
        let exact = &rq.exact;
        // SAFETY: the caller's contract.
        unsafe {
            Requant {
                lo: rq512::load(exact, c0),
                hi: rq512::load(exact, c0 + 16),
                offset: _mm512_set1_epi32(exact.output_offset),
                min: _mm512_set1_epi32(exact.min),
                max: _mm512_set1_epi32(exact.max),
                float: match &rq.float {
                    Some(f) if MODE != EXACT => {
                        let t = f.tables(0..f.scale.len());
                        Some([FloatLanes::load(t, c0), FloatLanes::load(t, c0 + 16)])
                    }
                    _ => None,
                },
                min16: _mm512_set1_epi16(exact.min as i16),
                max16: _mm512_set1_epi16(exact.max as i16),
            }
        }
    }

    /// 16 lanes requantized: with the float shortcut where it holds (the lanes it
    /// declines exactly), else exactly; the zero point added, not yet clamped (the float
    /// values may lie outside the clamp range, the exact ones do not).
    ///
    /// # Safety
    /// AVX-512 F and DQ available. (Not a `target_feature` function, which could not be
    /// forced inline: a call per pixel passed the sums through memory, twice as slow.)
    #[inline(always)]
    unsafe fn half(&self, acc: __m512i, high: bool) -> __m512i {
        let exact = if high { &self.hi } else { &self.lo };
        // SAFETY: the CPU features (the caller's contract).
        unsafe {
            match &self.float {
                Some(lanes) if MODE != EXACT => {
                    let lanes = &lanes[usize::from(high)];
                    let (r, declined) =
                        if MODE == ONE_SIDED { lanes.apply::<true>(acc) } else { lanes.apply::<false>(acc) };
                    if declined != 0 { self.declined_lanes(r, declined, acc, exact) } else { r }
                }
                _ => rq512::requant(acc, exact, self.offset, self.min, self.max),
            }
        }
    }

    /// `r` with the lanes in `declined` requantized exactly: out of line, as it is rare
    /// (inline, it kept the kernel from inlining its requantization, twice as slow).
    #[cold]
    #[inline(never)]
    #[target_feature(enable = "avx512f")]
    fn declined_lanes(&self, r: __m512i, declined: __mmask16, acc: __m512i, exact: &rq512::Lanes) -> __m512i {
        _mm512_mask_mov_epi32(r, declined, rq512::requant(acc, exact, self.offset, self.min, self.max))
    }

    /// Requantizes the 4 accumulators of a block (vector `k`: channels `4k..4k + 4`, then
    /// `16 + 4k..`) and stores the 32 (masked: those under `mask`) int8 outputs at `dst`.
    ///
    /// # Safety
    /// `dst` is writable for 32 bytes, or for the lanes of `mask` when `MASKED`; AVX-512
    /// F, BW, DQ and VL available (forced inline, as [`Requant::half`]).
    #[inline(always)]
    unsafe fn store<const MASKED: bool>(&self, acc: [__m256i; 4], dst: *mut i8, mask: __mmask32) {
        // SAFETY: the CPU features (the caller's contract); the stores below write what
        // the contract allows.
        unsafe { self.store_impl::<MASKED>(acc, dst, mask) }
    }

    /// [`Requant::store`]'s body.
    ///
    /// # Safety
    /// As for [`Requant::store`].
    #[inline(always)]
    unsafe fn store_impl<const MASKED: bool>(&self, acc: [__m256i; 4], dst: *mut i8, mask: __mmask32) {
        // SAFETY: the CPU features and `dst` (the caller's contract).
        unsafe {
            if !MASKED {
                // A whole block's tables are in the order of vectors 0 and 2, then 1 and 3
                // (see `Layout::table_channel`), so the accumulators go in as they are. The
                // saturating pack of the two results puts channels `0..8`, `16..24`, `8..16`,
                // `24..32` in the four 128-bit lanes, clamped there to the output range, and
                // one 64-bit permutation of the bytes restores channel order.
                let a = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(acc[0]), acc[2]);
                let b = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(acc[1]), acc[3]);
                let r = _mm512_packs_epi32(self.half(a, false), self.half(b, true));
                let r = if MODE == EXACT { r } else { _mm512_min_epi16(_mm512_max_epi16(r, self.min16), self.max16) };
                let bytes = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm512_cvtepi16_epi8(r));
                // The caller's contract.
                _mm256_storeu_si256(dst.cast(), bytes);
                return;
            }
            // The last, partial block's tables are in channel order: shuffle the 128-bit lanes
            // of vectors 0 to 3 into channels `0..16` and `16..32`.
            let a01 = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(acc[0]), acc[1]);
            let a23 = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(acc[2]), acc[3]);
            let clamp = |r| _mm512_min_epi32(_mm512_max_epi32(r, self.min), self.max);
            let r = clamp(self.half(_mm512_shuffle_i64x2::<0b10_00_10_00>(a01, a23), false));
            // Masked stores write only the lanes of `mask`.
            _mm512_mask_cvtepi32_storeu_epi8(dst, mask as __mmask16, r);
            // The upper 16 channels may all be missing.
            if (mask >> 16) != 0 {
                let r = clamp(self.half(_mm512_shuffle_i64x2::<0b11_01_11_01>(a01, a23), true));
                // As above, 16 bytes further.
                _mm512_mask_cvtepi32_storeu_epi8(dst.add(16), (mask >> 16) as __mmask16, r);
            }
        }
    }
}

/// Channels `c0..c0 + 32` (those under `mask` when `MASKED`) of every pixel.
///
/// # Safety
/// The kernel contract; `c0 + 32 <= channels` unless `MASKED`, and then the lanes of
/// `mask` are the channels below `channels`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[allow(clippy::too_many_arguments)]
unsafe fn block<const T: usize, const MASKED: bool, const MODE: u8>(
    slots: usize,
    slot_ptrs: *const *const i8,
    step: usize,
    weights: *const i32,
    rq: &DwRequant,
    out: *mut i8,
    channels: usize,
    pixels: usize,
    c0: usize,
    mask: __mmask32,
) {
    let n = if T == 0 { slots } else { T };
    let groups = n / 4;
    // SAFETY: the caller's contract: `n` slot pointers (a multiple of 4), `groups * 32`
    // weight words per block, the requantization tables padded to whole blocks of 32,
    // `channels` readable values per slot and pixel (of which lanes past `channels` are
    // masked off), `pixels * channels` outputs.
    unsafe {
        let w = weights.add(c0 * groups);
        // Weights of group `g`, vector `k`: `w + (g * 4 + k) * 8`. With a known slot count
        // they are loaded once per block into `wv` (registers).
        let mut wv = [[_mm256_setzero_si256(); 4]; T];
        let mut sp = [core::ptr::null::<i8>(); T];
        for (i, p) in sp.iter_mut().enumerate() {
            *p = (*slot_ptrs.add(i)).add(c0);
        }
        for (g, wg) in wv.iter_mut().take(T / 4).enumerate() {
            for (k, v) in wg.iter_mut().enumerate() {
                *v = _mm256_loadu_si256(w.add((g * 4 + k) * 8).cast());
            }
        }
        let rq = Requant::<MODE>::load(rq, c0);
        for p in 0..pixels {
            let off = p * step;
            let mut acc = [_mm256_setzero_si256(); 4];
            if T == 0 {
                for g in 0..groups {
                    let x = |i: usize| load::<MASKED>((*slot_ptrs.add(4 * g + i)).add(c0 + off), mask);
                    let q = interleave(x(0), x(1), x(2), x(3));
                    for k in 0..4 {
                        let wk = _mm256_loadu_si256(w.add((g * 4 + k) * 8).cast());
                        acc[k] = _mm256_dpbusd_epi32(acc[k], q[k], wk);
                    }
                }
            } else {
                for g in 0..T / 4 {
                    let x = |i: usize| load::<MASKED>(sp[4 * g + i].add(off), mask);
                    let q = interleave(x(0), x(1), x(2), x(3));
                    for k in 0..4 {
                        acc[k] = _mm256_dpbusd_epi32(acc[k], q[k], wv[g][k]);
                    }
                }
            }
            rq.store::<MASKED>(acc, out.add(p * channels + c0), mask);
        }
    }
}

/// # Safety
/// See [`super::DwSlideKernel`].
unsafe fn slide3x3(
    channels: usize,
    rows: &[*const i8],
    cols: SlideCols,
    weights: &[i32],
    rq: &DwRequant,
    out: &mut [i8],
) {
    debug_assert!(rows.len() == 3 && (cols.stride == 1 || cols.stride == 2));
    let pixels = out.len() / channels;
    let r = [rows[0], rows[1], rows[2]];
    let (w, o) = (weights.as_ptr(), out.as_mut_ptr());
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512 VNNI;
    // `blocks` calls `f` on whole blocks of channels.
    unsafe {
        blocks(channels, |c0, mask, masked| match (cols.stride, masked) {
            (1, false) => match mode(rq) {
                EXACT => slide_block::<1, false, EXACT>(r, cols, w, rq, o, channels, pixels, c0, mask),
                FLOAT => slide_block::<1, false, FLOAT>(r, cols, w, rq, o, channels, pixels, c0, mask),
                _ => slide_block::<1, false, ONE_SIDED>(r, cols, w, rq, o, channels, pixels, c0, mask),
            },
            (1, true) => match mode(rq) {
                EXACT => slide_block::<1, true, EXACT>(r, cols, w, rq, o, channels, pixels, c0, mask),
                FLOAT => slide_block::<1, true, FLOAT>(r, cols, w, rq, o, channels, pixels, c0, mask),
                _ => slide_block::<1, true, ONE_SIDED>(r, cols, w, rq, o, channels, pixels, c0, mask),
            },
            (_, false) => match mode(rq) {
                EXACT => slide_block::<2, false, EXACT>(r, cols, w, rq, o, channels, pixels, c0, mask),
                FLOAT => slide_block::<2, false, FLOAT>(r, cols, w, rq, o, channels, pixels, c0, mask),
                _ => slide_block::<2, false, ONE_SIDED>(r, cols, w, rq, o, channels, pixels, c0, mask),
            },
            (_, true) => match mode(rq) {
                EXACT => slide_block::<2, true, EXACT>(r, cols, w, rq, o, channels, pixels, c0, mask),
                FLOAT => slide_block::<2, true, FLOAT>(r, cols, w, rq, o, channels, pixels, c0, mask),
                _ => slide_block::<2, true, ONE_SIDED>(r, cols, w, rq, o, channels, pixels, c0, mask),
            },
        })
    }
}

/// Channels `c0..c0 + 32` (those under `mask` when `MASKED`) of every pixel, stride `S`.
///
/// # Safety
/// The sliding kernel contract; `c0 + 32 <= channels` unless `MASKED`, and then the lanes
/// of `mask` are the channels below `channels`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[allow(clippy::too_many_arguments)]
unsafe fn slide_block<const S: usize, const MASKED: bool, const MODE: u8>(
    rows: [*const i8; 3],
    cols: SlideCols,
    weights: *const i32,
    rq: &DwRequant,
    out: *mut i8,
    channels: usize,
    pixels: usize,
    c0: usize,
    mask: __mmask32,
) {
    // SAFETY: the caller's contract: 3 groups (filter columns) of 4 weight vectors per
    // block, the requantization tables padded to whole blocks of 32, each row readable for
    // `cols.width` columns of `channels` values (lanes past `channels` masked off; other
    // columns are not read), `pixels * channels` outputs.
    unsafe {
        let w = weights.add(c0 * 3);
        let mut wv = [[_mm256_setzero_si256(); 4]; 3];
        for (kx, wk) in wv.iter_mut().enumerate() {
            for (k, v) in wk.iter_mut().enumerate() {
                *v = _mm256_loadu_si256(w.add((kx * 4 + k) * 8).cast());
            }
        }
        let rq = Requant::<MODE>::load(rq, c0);
        let (r0, r1, r2) = (rows[0].add(c0), rows[1].add(c0), rows[2].add(c0));
        let z = _mm256_setzero_si256();
        // A column outside the image: the zero point (sign bit flipped) in all 3 rows.
        let zp = _mm256_set1_epi8(cols.zero_point ^ i8::MIN);
        let padding = interleave(zp, zp, zp, z);
        // Input column `j`'s 3 rows, interleaved (with a zero for the dummy slot).
        let column = |j: isize| {
            if j < 0 || j as usize >= cols.width {
                return padding;
            }
            let o = j as usize * channels;
            interleave(
                load::<MASKED>(r0.add(o), mask),
                load::<MASKED>(r1.add(o), mask),
                load::<MASKED>(r2.add(o), mask),
                z,
            )
        };
        let dot = |acc: [__m256i; 4], q: [__m256i; 4], w: [__m256i; 4]| {
            [
                _mm256_dpbusd_epi32(acc[0], q[0], w[0]),
                _mm256_dpbusd_epi32(acc[1], q[1], w[1]),
                _mm256_dpbusd_epi32(acc[2], q[2], w[2]),
                _mm256_dpbusd_epi32(acc[3], q[3], w[3]),
            ]
        };
        // Pixel `p` reads columns `j`, `j + 1` and `j + 2` for `j = first + p * S`.
        let mut j = cols.first;
        let mut c0v = column(j);
        let mut c1v = if S == 1 { column(j + 1) } else { c0v };
        for p in 0..pixels {
            if S == 2 {
                c1v = column(j + 1);
            }
            let c2v = column(j + 2);
            let acc = dot(dot(dot([z; 4], c0v, wv[0]), c1v, wv[1]), c2v, wv[2]);
            rq.store::<MASKED>(acc, out.add(p * channels + c0), mask);
            if S == 1 {
                (c0v, c1v) = (c1v, c2v);
            } else {
                c0v = c2v;
            }
            j += S as isize;
        }
    }
}

/// 32 input bytes at `p` (those under `mask` when `MASKED`, zeros elsewhere) with their
/// sign bit flipped: `x + 128` as unsigned bytes.
///
/// # Safety
/// `p` is readable for 32 bytes, or for the lanes of `mask` when `MASKED`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn load<const MASKED: bool>(p: *const i8, mask: __mmask32) -> __m256i {
    // SAFETY: the caller's contract; a masked load reads only the lanes of `mask`.
    let x = unsafe { if MASKED { _mm256_maskz_loadu_epi8(mask, p) } else { _mm256_loadu_si256(p.cast()) } };
    _mm256_xor_si256(x, _mm256_set1_epi8(i8::MIN))
}

/// The bytes of 4 tap vectors interleaved so that 32-bit lane `j` of each 128-bit half
/// of vector `k` holds channel `4k + j` of that half from taps `a, b, c, d`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn interleave(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> [__m256i; 4] {
    let (ab_lo, ab_hi) = (_mm256_unpacklo_epi8(a, b), _mm256_unpackhi_epi8(a, b));
    let (cd_lo, cd_hi) = (_mm256_unpacklo_epi8(c, d), _mm256_unpackhi_epi8(c, d));
    [
        _mm256_unpacklo_epi16(ab_lo, cd_lo),
        _mm256_unpackhi_epi16(ab_lo, cd_lo),
        _mm256_unpacklo_epi16(ab_hi, cd_hi),
        _mm256_unpackhi_epi16(ab_hi, cd_hi),
    ]
}
