//! AVX-512 depthwise kernels: 16 channels (one vector) per block, the last block's
//! channels under a lane mask (`__mmask16`), so no block is padded on the input side.
//!
//! Both kernel shapes (tap pointers per pixel, and a fixed tap offset from a base that
//! steps per pixel) share one loop: each 16-channel block's weights are loaded once per
//! call (held in registers when the tap count is known), then the pixels stream through
//! a few at a time. Stride-1 runs with at most 16 channels (a divisor of 16) are one flat
//! array per tap, so a vector covers `16 / channels` whole pixels: the 8-channel layers
//! at full resolution use every lane and build no pointer at all.

use super::DwKernels;
use crate::microkernels::Isa;
use core::arch::x86_64::*;

/// Lanes of a vector: the channel block width, and the packing's padding unit.
const LANES: usize = 16;

pub const KERNELS: DwKernels = DwKernels {
    isa: Isa::Avx512,
    channel_tile: LANES,
    channel_subtile: LANES,
    taps9: rows9,
    taps25: rows25,
    any: rows_any,
    direct: Some(direct),
};

/// # Safety
/// See [`super::DwRowKernel`] (`taps == 9`).
unsafe fn rows9(channels: usize, taps: usize, ind: &[*const f32], weights: &[f32], out: &mut [f32], clamp: (f32, f32)) {
    debug_assert_eq!(taps, 9);
    let src = Indirect { ind: ind.as_ptr(), taps: 9 };
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512.
    unsafe { rows::<9, 4, _>(channels, 9, src, out.len() / channels, weights.as_ptr(), out.as_mut_ptr(), clamp) }
}

/// # Safety
/// See [`super::DwRowKernel`] (`taps == 25`).
unsafe fn rows25(channels: usize, taps: usize, ind: &[*const f32], weights: &[f32], out: &mut [f32], clamp: (f32, f32)) {
    debug_assert_eq!(taps, 25);
    let src = Indirect { ind: ind.as_ptr(), taps: 25 };
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512.
    unsafe { rows::<25, 2, _>(channels, 25, src, out.len() / channels, weights.as_ptr(), out.as_mut_ptr(), clamp) }
}

/// # Safety
/// See [`super::DwRowKernel`].
unsafe fn rows_any(channels: usize, taps: usize, ind: &[*const f32], weights: &[f32], out: &mut [f32], clamp: (f32, f32)) {
    let src = Indirect { ind: ind.as_ptr(), taps };
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512.
    unsafe { rows::<0, 4, _>(channels, taps, src, out.len() / channels, weights.as_ptr(), out.as_mut_ptr(), clamp) }
}

/// # Safety
/// See [`super::DwDirectKernel`].
unsafe fn direct(
    channels: usize,
    offsets: &[usize],
    base: *const f32,
    px_step: usize,
    weights: &[f32],
    out: &mut [f32],
    clamp: (f32, f32),
) {
    let taps = offsets.len();
    let pixels = out.len() / channels;
    let src = Direct { base, px_step, off: offsets.as_ptr() };
    let flat = px_step == channels && LANES % channels == 0;
    let (w, o) = (weights.as_ptr(), out.as_mut_ptr());
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512; a flat run
    // is `pixels` contiguous pixels per tap, which is what `flat` reads.
    unsafe {
        match (taps, flat) {
            (9, true) => flat_rows::<9, 4>(channels, base, offsets.as_ptr(), pixels * channels, w, o, clamp),
            (25, true) => flat_rows::<25, 2>(channels, base, offsets.as_ptr(), pixels * channels, w, o, clamp),
            (9, false) => rows::<9, 4, _>(channels, 9, src, pixels, w, o, clamp),
            (25, false) => rows::<25, 2, _>(channels, 25, src, pixels, w, o, clamp),
            _ => rows::<0, 4, _>(channels, taps, src, pixels, w, o, clamp),
        }
    }
}

/// Where pixel `p`'s tap `t` reads its channels.
trait Taps: Copy {
    /// # Safety
    /// `p` and `t` are within the source's pixels and taps.
    unsafe fn at(self, p: usize, t: usize) -> *const f32;
}

/// One pointer per pixel and tap, `taps` per pixel.
#[derive(Clone, Copy)]
struct Indirect {
    ind: *const *const f32,
    taps: usize,
}

impl Taps for Indirect {
    #[inline(always)]
    unsafe fn at(self, p: usize, t: usize) -> *const f32 {
        // SAFETY: the indirection holds `taps` pointers per pixel (the caller's contract).
        unsafe { *self.ind.add(p * self.taps + t) }
    }
}

/// A base pointer stepping `px_step` values per pixel, tap `t` at `off[t]` from it.
#[derive(Clone, Copy)]
struct Direct {
    base: *const f32,
    px_step: usize,
    off: *const usize,
}

impl Taps for Direct {
    #[inline(always)]
    unsafe fn at(self, p: usize, t: usize) -> *const f32 {
        // SAFETY: the caller's contract makes every such pixel and tap readable.
        unsafe { self.base.add(p * self.px_step + *self.off.add(t)) }
    }
}

/// `min(max(acc, lo), hi)` with NaN passing through: `maxps` / `minps` return their second
/// operand when one is NaN.
#[inline]
#[target_feature(enable = "avx512f")]
fn clamp_to(acc: __m512, lo: __m512, hi: __m512) -> __m512 {
    _mm512_min_ps(hi, _mm512_max_ps(lo, acc))
}

/// Loads 16 values, or only the lanes of `mask` if `MASKED` (the others are zero and
/// not read).
///
/// # Safety
/// `p` is readable for 16 values, or at the lanes of `mask` if `MASKED`; the CPU has
/// AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn load<const MASKED: bool>(p: *const f32, mask: __mmask16) -> __m512 {
    // SAFETY: the function's contract.
    unsafe { if MASKED { _mm512_maskz_loadu_ps(mask, p) } else { _mm512_loadu_ps(p) } }
}

/// Stores 16 values, or only the lanes of `mask` if `MASKED`.
///
/// # Safety
/// `p` is writable for 16 values, or at the lanes of `mask` if `MASKED`; the CPU has
/// AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn store<const MASKED: bool>(p: *mut f32, mask: __mmask16, v: __m512) {
    // SAFETY: the function's contract.
    unsafe { if MASKED { _mm512_mask_storeu_ps(p, mask, v) } else { _mm512_storeu_ps(p, v) } }
}

/// Lanes `0..n` set (`n <= 16`).
#[inline]
fn lane_mask(n: usize) -> __mmask16 {
    ((1u32 << n) - 1) as __mmask16
}

/// The kernel for `T` taps (`T == 0`: any count, given by `taps`), `PX` pixels per step:
/// for each 16-channel block, its weights once, then every pixel.
///
/// # Safety
/// `src` gives, for each of `pixels` pixels and `taps` taps, a pointer readable for
/// `channels` values that nothing writes during the call; `weights` is this table's
/// packing of `channels` and `taps`; `out` is writable for `pixels * channels` values;
/// `channels > 0`; the CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn rows<const T: usize, const PX: usize, S: Taps>(
    channels: usize,
    taps: usize,
    src: S,
    pixels: usize,
    weights: *const f32,
    out: *mut f32,
    clamp: (f32, f32),
) {
    let taps = if T == 0 { taps } else { T };
    let k = Block { taps, channels, lo: _mm512_set1_ps(clamp.0), hi: _mm512_set1_ps(clamp.1) };
    let full_end = channels / LANES * LANES;
    let mut c = 0;
    let mut w = weights;
    // SAFETY: (whole body) block `c` covers channels `c..c + 16` (`c + 16 <= channels`)
    // or the masked rest; its packed weights are `16 * (taps + 1)` values from `w`.
    unsafe {
        while c < full_end {
            k.run::<false, T, PX, S>(src, pixels, c, w, out, 0xffff);
            w = w.add(LANES * (taps + 1));
            c += LANES;
        }
        if c < channels {
            k.run::<true, T, PX, S>(src, pixels, c, w, out, lane_mask(channels - c));
        }
    }
}

/// What a kernel call keeps fixed over its blocks.
struct Block {
    taps: usize,
    channels: usize,
    lo: __m512,
    hi: __m512,
}

impl Block {
    /// Computes the 16-channel block at channel `c` (lanes of `mask` if `MASKED`) of all
    /// `pixels` pixels, `PX` at a time; `w` is the block's packed weights.
    ///
    /// # Safety
    /// As [`rows`], for this block; `w` holds `16 * (taps + 1)` values.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn run<const MASKED: bool, const T: usize, const PX: usize, S: Taps>(
        &self,
        src: S,
        pixels: usize,
        c: usize,
        w: *const f32,
        out: *mut f32,
        mask: __mmask16,
    ) {
        // SAFETY: (whole body) the weights are read inside the block's `16 * (taps + 1)`
        // values; pixels `p..p + PX` (or `p`) are below `pixels`; the caller's contract
        // covers the rest.
        unsafe {
            let bias = _mm512_loadu_ps(w);
            // A known tap count keeps the block's weights in registers over all pixels.
            let mut held = [_mm512_setzero_ps(); T];
            for (t, h) in held.iter_mut().enumerate() {
                *h = _mm512_loadu_ps(w.add(LANES * (t + 1)));
            }
            let mut p = 0;
            while p + PX <= pixels {
                let acc = self.pixels::<MASKED, T, PX, S>(src, p, c, w, &held, bias, mask);
                for (q, a) in acc.into_iter().enumerate() {
                    store::<MASKED>(out.add((p + q) * self.channels + c), mask, clamp_to(a, self.lo, self.hi));
                }
                p += PX;
            }
            while p < pixels {
                let [a] = self.pixels::<MASKED, T, 1, S>(src, p, c, w, &held, bias, mask);
                store::<MASKED>(out.add(p * self.channels + c), mask, clamp_to(a, self.lo, self.hi));
                p += 1;
            }
        }
    }

    /// Sums `PX` pixels from pixel `p` of the block at channel `c`: bias plus the even
    /// taps in one partial sum, the odd taps in another, added at the end. Returns the
    /// unclamped sums.
    ///
    /// # Safety
    /// As [`Block::run`]; `held` are the block's tap weights when `T > 0`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn pixels<const MASKED: bool, const T: usize, const PX: usize, S: Taps>(
        &self,
        src: S,
        p: usize,
        c: usize,
        w: *const f32,
        held: &[__m512; T],
        bias: __m512,
        mask: __mmask16,
    ) -> [__m512; PX] {
        let taps = if T == 0 { self.taps } else { T };
        // SAFETY: the caller's contract; `t + 1 < taps` in the paired loop, `t < taps`
        // after it.
        unsafe {
            let mut a = [bias; PX];
            let mut b = [_mm512_setzero_ps(); PX];
            let mut t = 0;
            while t + 2 <= taps {
                let (w0, w1) = (tap_weight(w, held, t), tap_weight(w, held, t + 1));
                for q in 0..PX {
                    let x = load::<MASKED>(src.at(p + q, t).add(c), mask);
                    let y = load::<MASKED>(src.at(p + q, t + 1).add(c), mask);
                    a[q] = _mm512_fmadd_ps(x, w0, a[q]);
                    b[q] = _mm512_fmadd_ps(y, w1, b[q]);
                }
                t += 2;
            }
            if t < taps {
                let w0 = tap_weight(w, held, t);
                for (q, aq) in a.iter_mut().enumerate() {
                    *aq = _mm512_fmadd_ps(load::<MASKED>(src.at(p + q, t).add(c), mask), w0, *aq);
                }
            }
            let mut sums = a;
            for (s, bq) in sums.iter_mut().zip(b) {
                *s = _mm512_add_ps(*s, bq);
            }
            sums
        }
    }
}

/// A stride-1 run of pixels read as flat arrays: tap `t`'s
/// inputs for the whole run are the `len` contiguous values at `base + off[t]`, and the
/// weight of flat position `j` is that of channel `j % channels`, so one vector holds
/// `16 / channels` pixels. `VX` vectors per step.
///
/// # Safety
/// `channels` divides 16; for each tap `t < T`, `base + off[t]` is readable for `len`
/// values that nothing writes during the call; `len` is a multiple of `channels`;
/// `weights` is this table's packing of `channels` and `T` taps (one 16-wide block);
/// `out` is writable for `len` values; the CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn flat_rows<const T: usize, const VX: usize>(
    channels: usize,
    base: *const f32,
    off: *const usize,
    len: usize,
    weights: *const f32,
    out: *mut f32,
    clamp: (f32, f32),
) {
    let (lo, hi) = (_mm512_set1_ps(clamp.0), _mm512_set1_ps(clamp.1));
    // SAFETY: (whole body) the weights are one block of `16 * (T + 1)` values; vector
    // `v` reads and writes flat positions `16 * v..16 * v + 16` (the last one masked to
    // `len`), inside every tap's `len` values and the output.
    unsafe {
        // Lane `j` takes channel `j % channels` of the block.
        let mut idx = [0i32; LANES];
        for (j, i) in idx.iter_mut().enumerate() {
            *i = (j % channels) as i32;
        }
        let idx = _mm512_loadu_si512(idx.as_ptr().cast());
        let bias = _mm512_permutexvar_ps(idx, _mm512_loadu_ps(weights));
        let mut wv = [_mm512_setzero_ps(); T];
        let mut x: [*const f32; T] = [base; T];
        for t in 0..T {
            wv[t] = _mm512_permutexvar_ps(idx, _mm512_loadu_ps(weights.add(LANES * (t + 1))));
            x[t] = base.add(*off.add(t));
        }
        let mut v = 0;
        while v + VX * LANES <= len {
            let mut r = [_mm512_setzero_ps(); VX];
            for (q, rq) in r.iter_mut().enumerate() {
                *rq = flat_vector::<false, T>(&x, &wv, bias, v + q * LANES, 0xffff, lo, hi);
            }
            for (q, rq) in r.into_iter().enumerate() {
                _mm512_storeu_ps(out.add(v + q * LANES), rq);
            }
            v += VX * LANES;
        }
        while v + LANES <= len {
            _mm512_storeu_ps(out.add(v), flat_vector::<false, T>(&x, &wv, bias, v, 0xffff, lo, hi));
            v += LANES;
        }
        if v < len {
            let mask = lane_mask(len - v);
            _mm512_mask_storeu_ps(out.add(v), mask, flat_vector::<true, T>(&x, &wv, bias, v, mask, lo, hi));
        }
    }
}

/// The tap-`t` weights of the block at `w`: from `held` when the tap count `T` is known,
/// else loaded.
///
/// # Safety
/// `w` holds `16 * (t + 2)` values at least; `t < T` when `T > 0`; the CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn tap_weight<const T: usize>(w: *const f32, held: &[__m512; T], t: usize) -> __m512 {
    // SAFETY: the function's contract.
    if T == 0 { unsafe { _mm512_loadu_ps(w.add(LANES * (t + 1))) } } else { held[t] }
}

/// One clamped vector of a flat run at flat position `v`: `x[t]` is tap `t`'s inputs,
/// `wv[t]` its weights spread over the lanes; only the lanes of `mask` are read if
/// `MASKED`.
///
/// # Safety
/// Each `x[t]` is readable at positions `v..v + 16` (the lanes of `mask` if `MASKED`);
/// the CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn flat_vector<const MASKED: bool, const T: usize>(
    x: &[*const f32; T],
    wv: &[__m512; T],
    bias: __m512,
    v: usize,
    mask: __mmask16,
    lo: __m512,
    hi: __m512,
) -> __m512 {
    // SAFETY: the function's contract; `t + 1 < T` in the paired loop.
    unsafe {
        let mut a = bias;
        let mut b = _mm512_setzero_ps();
        let mut t = 0;
        while t + 2 <= T {
            a = _mm512_fmadd_ps(load::<MASKED>(x[t].add(v), mask), wv[t], a);
            b = _mm512_fmadd_ps(load::<MASKED>(x[t + 1].add(v), mask), wv[t + 1], b);
            t += 2;
        }
        if t < T {
            a = _mm512_fmadd_ps(load::<MASKED>(x[t].add(v), mask), wv[t], a);
        }
        clamp_to(_mm512_add_ps(a, b), lo, hi)
    }
}
