//! AVX-512 int8 depthwise kernels (the `mul32` scheme): each slot's (tap's) 16 input bytes are
//! sign-extended to 32-bit lanes (`vpmovsxbd`), multiplied by the slot's weights
//! (`vpmulld`) and added to the accumulators; 16 channels per block, the last block's
//! channels under a lane mask. A block's weights and requantization parameters are loaded
//! once per call (held in registers when the tap count is known), then the run's pixels
//! stream through them.

use super::{DwKernels, DwRequant, Layout};
use crate::microkernels::Isa;
use crate::microkernels::qs8_requant::{LANES, avx512 as rq512};
use core::arch::x86_64::*;

pub const KERNELS: DwKernels = DwKernels {
    isa: Isa::Avx512,
    layout: Layout::Wide16,
    fixed: [(9, rows9), (25, rows25)],
    any: rows_any,
    slide3x3: None,
};

/// # Safety
/// See [`super::DwKernel`] (`slots.len() == 9`).
unsafe fn rows9(channels: usize, slots: &[*const i8], step: usize, weights: &[i32], rq: &DwRequant, out: &mut [i8]) {
    debug_assert_eq!(slots.len(), 9);
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512.
    unsafe { rows::<9>(channels, slots, step, weights, rq, out) }
}

/// # Safety
/// See [`super::DwKernel`] (`slots.len() == 25`).
unsafe fn rows25(channels: usize, slots: &[*const i8], step: usize, weights: &[i32], rq: &DwRequant, out: &mut [i8]) {
    debug_assert_eq!(slots.len(), 25);
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512.
    unsafe { rows::<25>(channels, slots, step, weights, rq, out) }
}

/// # Safety
/// See [`super::DwKernel`].
unsafe fn rows_any(channels: usize, slots: &[*const i8], step: usize, weights: &[i32], rq: &DwRequant, out: &mut [i8]) {
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512.
    unsafe { rows::<0>(channels, slots, step, weights, rq, out) }
}

/// The kernel for `T` slots (`T == 0`: any count, weights read from memory per pixel).
///
/// # Safety
/// See [`super::DwKernel`]; `T == 0` or `T == slots.len()`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn rows<const T: usize>(
    channels: usize,
    slots: &[*const i8],
    step: usize,
    weights: &[i32],
    rq: &DwRequant,
    out: &mut [i8],
) {
    let pixels = out.len() / channels;
    let full = channels / LANES;
    let (t, w, o) = (slots.as_ptr(), weights.as_ptr(), out.as_mut_ptr());
    // SAFETY: the caller's contract; block `b` covers channels `16 * b..` (all 16 of
    // them below `full`, the remaining ones under the mask after it).
    unsafe {
        for b in 0..full {
            block::<T, false>(slots.len(), t, step, w, rq, o, channels, pixels, b * LANES, 0xFFFF);
        }
        let rest = channels - full * LANES;
        if rest > 0 {
            let mask = ((1u32 << rest) - 1) as __mmask16;
            block::<T, true>(slots.len(), t, step, w, rq, o, channels, pixels, full * LANES, mask);
        }
    }
}

/// Channels `c0..c0 + 16` (those under `mask` when `MASKED`) of every pixel.
///
/// # Safety
/// The kernel contract; `c0 + 16 <= channels` unless `MASKED`, and then the lanes of
/// `mask` are the channels below `channels`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
#[allow(clippy::too_many_arguments)]
unsafe fn block<const T: usize, const MASKED: bool>(
    slots: usize,
    slot_ptrs: *const *const i8,
    step: usize,
    weights: *const i32,
    rq: &DwRequant,
    out: *mut i8,
    channels: usize,
    pixels: usize,
    c0: usize,
    mask: __mmask16,
) {
    let n = if T == 0 { slots } else { T };
    // SAFETY: the caller's contract: `n` tap pointers, `n * 16` weights per block, the
    // requantization tables padded to whole blocks, `channels` readable values per tap and
    // pixel (of which lanes past `channels` are masked off), `pixels * channels` outputs.
    unsafe {
        let w = weights.add(c0 * n);
        let mut wv = [_mm512_setzero_si512(); T];
        let mut tp = [core::ptr::null::<i8>(); T];
        for i in 0..T {
            wv[i] = _mm512_loadu_si512(w.add(i * LANES).cast());
            tp[i] = (*slot_ptrs.add(i)).add(c0);
        }
        let rq = &rq.exact;
        let lanes = rq512::load(rq, c0);
        let offset = _mm512_set1_epi32(rq.output_offset);
        let (min, max) = (_mm512_set1_epi32(rq.min), _mm512_set1_epi32(rq.max));
        for p in 0..pixels {
            let off = p * step;
            let mut acc0 = _mm512_setzero_si512();
            let mut acc1 = _mm512_setzero_si512();
            if T == 0 {
                for i in 0..n {
                    let x = load::<MASKED>((*slot_ptrs.add(i)).add(c0 + off), mask);
                    let prod = _mm512_mullo_epi32(x, _mm512_loadu_si512(w.add(i * LANES).cast()));
                    if i % 2 == 0 {
                        acc0 = _mm512_add_epi32(acc0, prod);
                    } else {
                        acc1 = _mm512_add_epi32(acc1, prod);
                    }
                }
            } else {
                for i in 0..T {
                    let prod = _mm512_mullo_epi32(load::<MASKED>(tp[i].add(off), mask), wv[i]);
                    if i % 2 == 0 {
                        acc0 = _mm512_add_epi32(acc0, prod);
                    } else {
                        acc1 = _mm512_add_epi32(acc1, prod);
                    }
                }
            }
            let r = rq512::requant(_mm512_add_epi32(acc0, acc1), &lanes, offset, min, max);
            let dst = out.add(p * channels + c0);
            if MASKED {
                _mm512_mask_cvtepi32_storeu_epi8(dst, mask, r);
            } else {
                _mm_storeu_si128(dst.cast(), _mm512_cvtepi32_epi8(r));
            }
        }
    }
}

/// 16 input bytes at `p` (those under `mask` when `MASKED`), sign-extended to 32 bits.
///
/// # Safety
/// `p` is readable for 16 bytes, or for the lanes of `mask` when `MASKED`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn load<const MASKED: bool>(p: *const i8, mask: __mmask16) -> __m512i {
    // SAFETY: the caller's contract; a masked load reads only the lanes of `mask`.
    let x = unsafe { if MASKED { _mm_maskz_loadu_epi8(mask, p) } else { _mm_loadu_si128(p.cast()) } };
    _mm512_cvtepi8_epi32(x)
}
