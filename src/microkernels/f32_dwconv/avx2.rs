//! AVX2 + FMA depthwise kernels: 16 channels (two vectors) per step, then the remaining
//! up to 15 channels as one full and one masked vector, or one masked vector.

use super::DwKernels;
use crate::microkernels::Isa;
use core::arch::x86_64::*;

/// Channels per packed block: two 8-lane vectors.
const TILE: usize = 16;
/// Lanes of a vector; the last block is padded to a multiple of this.
const LANES: usize = 8;

pub const KERNELS: DwKernels = DwKernels {
    isa: Isa::Avx2Fma,
    channel_tile: TILE,
    channel_subtile: LANES,
    taps9: rows9,
    taps25: rows25,
    any: rows_any,
    direct: None,
    slide: None,
};

/// # Safety
/// See [`super::DwRowKernel`] (`taps == 9`).
unsafe fn rows9(channels: usize, taps: usize, ind: &[*const f32], weights: &[f32], out: &mut [f32], clamp: (f32, f32)) {
    debug_assert_eq!(taps, 9);
    // SAFETY: the caller's contract, which includes that the CPU has AVX2 and FMA.
    unsafe { rows::<9>(channels, taps, ind, weights, out, clamp) }
}

/// # Safety
/// See [`super::DwRowKernel`] (`taps == 25`).
unsafe fn rows25(
    channels: usize,
    taps: usize,
    ind: &[*const f32],
    weights: &[f32],
    out: &mut [f32],
    clamp: (f32, f32),
) {
    debug_assert_eq!(taps, 25);
    // SAFETY: the caller's contract, which includes that the CPU has AVX2 and FMA.
    unsafe { rows::<25>(channels, taps, ind, weights, out, clamp) }
}

/// # Safety
/// See [`super::DwRowKernel`].
unsafe fn rows_any(
    channels: usize,
    taps: usize,
    ind: &[*const f32],
    weights: &[f32],
    out: &mut [f32],
    clamp: (f32, f32),
) {
    // SAFETY: the caller's contract, which includes that the CPU has AVX2 and FMA.
    unsafe { rows::<0>(channels, taps, ind, weights, out, clamp) }
}

/// Lanes `0..n` set (`n <= 8`): the mask of a partial vector.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn lane_mask(n: usize) -> __m256i {
    _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
}

/// `min(max(acc, lo), hi)` with NaN passing through: `maxps` / `minps` return their second
/// operand when one is NaN.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn clamp_to(acc: __m256, lo: __m256, hi: __m256) -> __m256 {
    _mm256_min_ps(hi, _mm256_max_ps(lo, acc))
}

/// The kernel for `T` taps (`T == 0`: any count, given by `taps`): pixels two at a time
/// (each weight vector loaded once for both), then a last single pixel.
///
/// # Safety
/// See [`super::DwRowKernel`]; the CPU has AVX2 and FMA.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows<const T: usize>(
    channels: usize,
    taps: usize,
    ind: &[*const f32],
    weights: &[f32],
    out: &mut [f32],
    clamp: (f32, f32),
) {
    let taps = if T == 0 { taps } else { T };
    let k = Step {
        channels,
        taps,
        weights: weights.as_ptr(),
        lo: _mm256_set1_ps(clamp.0),
        hi: _mm256_set1_ps(clamp.1),
        // The tail's last vector holds `rem` or `rem - 8` channels.
        tail_mask: {
            let rem = channels % TILE;
            lane_mask(if rem > LANES { rem - LANES } else { rem })
        },
    };
    let pixels = out.len() / channels;
    let (ind, o) = (ind.as_ptr(), out.as_mut_ptr());
    let mut p = 0;
    while p + 2 <= pixels {
        // SAFETY: the contract gives `taps` tap pointers and `channels` outputs per pixel,
        // so pixels `p..p + 2` of `ind` and `out` exist; the rest of `Step::pixels`'
        // contract is the kernel's.
        unsafe { k.pixels::<T, 2>(ind.add(p * taps), o.add(p * channels)) };
        p += 2;
    }
    if p < pixels {
        // SAFETY: as above, for pixel `p`.
        unsafe { k.pixels::<T, 1>(ind.add(p * taps), o.add(p * channels)) };
    }
}

/// What a kernel call keeps fixed over its pixels.
struct Step {
    channels: usize,
    taps: usize,
    weights: *const f32,
    lo: __m256,
    hi: __m256,
    tail_mask: __m256i,
}

impl Step {
    /// Computes `PX` consecutive pixels over all channels: tap pointers from `px`
    /// (`taps` per pixel), outputs from `o` (`channels` per pixel).
    ///
    /// # Safety
    /// `px` holds `PX * taps` pointers, each readable for `channels` values; `o` is
    /// writable for `PX * channels` values; `weights` holds the packing of `channels` and
    /// `taps` for [`KERNELS`]; the CPU has AVX2 and FMA.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn pixels<const T: usize, const PX: usize>(&self, px: *const *const f32, o: *mut f32) {
        // A constant tap count lets the compiler unroll the tap loops.
        let (channels, taps) = (self.channels, if T == 0 { self.taps } else { T });
        let full_end = channels / TILE * TILE;
        let rem = channels - full_end;
        let full = _mm256_set1_epi32(-1);
        let (lo, hi) = (self.lo, self.hi);
        // SAFETY: (whole body) the loads cover channels `c..c + 16` with
        // `c + 16 <= full_end <= channels`, or in the tail `full_end..channels` (a full
        // vector only where 8 channels remain, masked lanes are not read); the weights are
        // `full_end / 16` blocks of `16 * (taps + 1)`, then one of `width * (taps + 1)`;
        // output pixel `q` is `channels` values from `o + q * channels`.
        unsafe {
            let mut w = self.weights;
            let mut c = 0;
            while c < full_end {
                let acc = block2::<false, T, PX>(px, taps, c, w, full);
                for (q, (a0, a1)) in acc.into_iter().enumerate() {
                    let oq = o.add(q * channels + c);
                    _mm256_storeu_ps(oq, clamp_to(a0, lo, hi));
                    _mm256_storeu_ps(oq.add(LANES), clamp_to(a1, lo, hi));
                }
                w = w.add(TILE * (taps + 1));
                c += TILE;
            }
            if rem > LANES {
                let acc = block2::<true, T, PX>(px, taps, c, w, self.tail_mask);
                for (q, (a0, a1)) in acc.into_iter().enumerate() {
                    let oq = o.add(q * channels + c);
                    _mm256_storeu_ps(oq, clamp_to(a0, lo, hi));
                    _mm256_maskstore_ps(oq.add(LANES), self.tail_mask, clamp_to(a1, lo, hi));
                }
            } else if rem > 0 {
                let acc = block1::<T, PX>(px, taps, c, w, self.tail_mask);
                for (q, a) in acc.into_iter().enumerate() {
                    _mm256_maskstore_ps(o.add(q * channels + c), self.tail_mask, clamp_to(a, lo, hi));
                }
            }
        }
    }
}

/// Loads a block's second vector: in full, or if `MASKED` the lanes of `mask` (full
/// blocks use plain loads, which are faster than masked ones).
///
/// # Safety
/// `p` is readable for 8 values, or at the lanes of `mask` if `MASKED`; the CPU has AVX2.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn load_hi<const MASKED: bool>(p: *const f32, mask: __m256i) -> __m256 {
    // SAFETY: the function's contract.
    unsafe { if MASKED { _mm256_maskload_ps(p, mask) } else { _mm256_loadu_ps(p) } }
}

/// Sums the 16-channel block at channel `c` (weights `w`, width 16) of `PX` pixels (tap
/// pointers `px`, `taps` per pixel, or `T` if not 0): lanes 0..8 loaded in full, lanes 8..16 in full or, if
/// `MASKED`, under `mask2`. Returns each pixel's two unclamped vectors.
///
/// # Safety
/// `px` holds `PX * taps` pointers each readable at channels `c..c + 8` and at
/// `c + 8..c + 16` (the lanes of `mask2` if `MASKED`); `w` holds `16 * (taps + 1)` values;
/// the CPU has AVX2 and FMA.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn block2<const MASKED: bool, const T: usize, const PX: usize>(
    px: *const *const f32,
    taps: usize,
    c: usize,
    w: *const f32,
    mask2: __m256i,
) -> [(__m256, __m256); PX] {
    let taps = if T == 0 { taps } else { T };
    // SAFETY: the function's contract; every weight offset stays inside the `w` block
    // (`16 * (t + 3) <= 16 * (taps + 1)` in the paired loop).
    unsafe {
        let mut a0 = [_mm256_loadu_ps(w); PX];
        let mut a1 = [_mm256_loadu_ps(w.add(LANES)); PX];
        let mut b0 = [_mm256_setzero_ps(); PX];
        let mut b1 = [_mm256_setzero_ps(); PX];
        let mut wt = w.add(TILE);
        let mut t = 0;
        while t + 2 <= taps {
            let (w00, w01) = (_mm256_loadu_ps(wt), _mm256_loadu_ps(wt.add(LANES)));
            let (w10, w11) = (_mm256_loadu_ps(wt.add(TILE)), _mm256_loadu_ps(wt.add(TILE + LANES)));
            for q in 0..PX {
                let x = (*px.add(q * taps + t)).add(c);
                let y = (*px.add(q * taps + t + 1)).add(c);
                a0[q] = _mm256_fmadd_ps(_mm256_loadu_ps(x), w00, a0[q]);
                a1[q] = _mm256_fmadd_ps(load_hi::<MASKED>(x.add(LANES), mask2), w01, a1[q]);
                b0[q] = _mm256_fmadd_ps(_mm256_loadu_ps(y), w10, b0[q]);
                b1[q] = _mm256_fmadd_ps(load_hi::<MASKED>(y.add(LANES), mask2), w11, b1[q]);
            }
            wt = wt.add(2 * TILE);
            t += 2;
        }
        if t < taps {
            let (w00, w01) = (_mm256_loadu_ps(wt), _mm256_loadu_ps(wt.add(LANES)));
            for q in 0..PX {
                let x = (*px.add(q * taps + t)).add(c);
                a0[q] = _mm256_fmadd_ps(_mm256_loadu_ps(x), w00, a0[q]);
                a1[q] = _mm256_fmadd_ps(load_hi::<MASKED>(x.add(LANES), mask2), w01, a1[q]);
            }
        }
        core::array::from_fn(|q| (_mm256_add_ps(a0[q], b0[q]), _mm256_add_ps(a1[q], b1[q])))
    }
}

/// Sums the 8-channel tail block at channel `c` (weights `w`, width 8) of `PX` pixels,
/// input lanes under `mask`.
///
/// # Safety
/// `px` holds `PX * taps` pointers each readable at the lanes of `mask` from channel `c`;
/// `w` holds `8 * (taps + 1)` values; the CPU has AVX2 and FMA.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn block1<const T: usize, const PX: usize>(
    px: *const *const f32,
    taps: usize,
    c: usize,
    w: *const f32,
    mask: __m256i,
) -> [__m256; PX] {
    let taps = if T == 0 { taps } else { T };
    // SAFETY: the function's contract; weight offsets stay inside the `w` block.
    unsafe {
        let mut a = [_mm256_loadu_ps(w); PX];
        let mut b = [_mm256_setzero_ps(); PX];
        let mut wt = w.add(LANES);
        let mut t = 0;
        while t + 2 <= taps {
            let (w0, w1) = (_mm256_loadu_ps(wt), _mm256_loadu_ps(wt.add(LANES)));
            for q in 0..PX {
                let x = (*px.add(q * taps + t)).add(c);
                let y = (*px.add(q * taps + t + 1)).add(c);
                a[q] = _mm256_fmadd_ps(_mm256_maskload_ps(x, mask), w0, a[q]);
                b[q] = _mm256_fmadd_ps(_mm256_maskload_ps(y, mask), w1, b[q]);
            }
            wt = wt.add(2 * LANES);
            t += 2;
        }
        if t < taps {
            let w0 = _mm256_loadu_ps(wt);
            for (q, aq) in a.iter_mut().enumerate() {
                let x = (*px.add(q * taps + t)).add(c);
                *aq = _mm256_fmadd_ps(_mm256_maskload_ps(x, mask), w0, *aq);
            }
        }
        core::array::from_fn(|q| _mm256_add_ps(a[q], b[q]))
    }
}
