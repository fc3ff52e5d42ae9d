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
unsafe fn rows25(channels: usize, taps: usize, ind: &[*const f32], weights: &[f32], out: &mut [f32], clamp: (f32, f32)) {
    debug_assert_eq!(taps, 25);
    // SAFETY: the caller's contract, which includes that the CPU has AVX2 and FMA.
    unsafe { rows::<25>(channels, taps, ind, weights, out, clamp) }
}

/// # Safety
/// See [`super::DwRowKernel`].
unsafe fn rows_any(channels: usize, taps: usize, ind: &[*const f32], weights: &[f32], out: &mut [f32], clamp: (f32, f32)) {
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

/// The kernel for `T` taps (`T == 0`: any count, given by `taps`). Vector `v` of a block
/// (`v` in `0..V`, lanes `8v..8v+8`) reads its input at channel offset `c + 8v` through
/// `load(v, pointer)`, which is a full or masked load as the block needs.
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
    let (lo, hi) = (_mm256_set1_ps(clamp.0), _mm256_set1_ps(clamp.1));
    let full_end = channels / TILE * TILE;
    let rem = channels - full_end;
    // The tail's last vector holds `rem` or `rem - 8` channels.
    let tail_mask = lane_mask(if rem > LANES { rem - LANES } else { rem });
    let full = _mm256_set1_epi32(-1);
    let ind = ind.as_ptr();
    let w0 = weights.as_ptr();
    let pixels = out.len() / channels;
    for p in 0..pixels {
        // SAFETY (whole loop body): the contract gives `taps` tap pointers per pixel, so
        // `ind + p * taps + t` is in `ind`; each tap pointer reads `channels` values, and
        // the loads below cover channels `c..c + 16` with `c + 16 <= full_end <= channels`,
        // or in the tail `full_end..channels` (full vector only where 8 channels remain,
        // masked lanes are not read); the weights hold `packed_len` values: `full_end / 16`
        // blocks of `16 * (taps + 1)`, then one of `width * (taps + 1)` for the tail;
        // `out + p * channels` is followed by `channels` values of pixel `p`.
        unsafe {
            let px = ind.add(p * taps);
            let o = out.as_mut_ptr().add(p * channels);
            let mut w = w0;
            let mut c = 0;
            while c < full_end {
                let (a0, a1) = block2::<false>(px, taps, c, w, full);
                _mm256_storeu_ps(o.add(c), clamp_to(a0, lo, hi));
                _mm256_storeu_ps(o.add(c + LANES), clamp_to(a1, lo, hi));
                w = w.add(TILE * (taps + 1));
                c += TILE;
            }
            if rem > LANES {
                let (a0, a1) = block2::<true>(px, taps, c, w, tail_mask);
                _mm256_storeu_ps(o.add(c), clamp_to(a0, lo, hi));
                _mm256_maskstore_ps(o.add(c + LANES), tail_mask, clamp_to(a1, lo, hi));
            } else if rem > 0 {
                let a = block1(px, taps, c, w, tail_mask);
                _mm256_maskstore_ps(o.add(c), tail_mask, clamp_to(a, lo, hi));
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

/// Sums one pixel's 16-channel block at channel `c` (weights `w`, width 16): lanes 0..8
/// loaded in full, lanes 8..16 in full or, if `MASKED`, under `mask2`. Returns the two
/// unclamped vectors.
///
/// # Safety
/// `px` holds `taps` pointers each readable at channels `c..c + 8` and at `c + 8..c + 16`
/// (the lanes of `mask2` if `MASKED`); `w` holds `16 * (taps + 1)` values; the CPU has
/// AVX2 and FMA.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn block2<const MASKED: bool>(
    px: *const *const f32,
    taps: usize,
    c: usize,
    w: *const f32,
    mask2: __m256i,
) -> (__m256, __m256) {
    // SAFETY: the function's contract; every offset below stays inside the `w` block
    // (`16 * (t + 2) <= 16 * taps` in the paired loop, `16 * (taps + 1)` in all).
    unsafe {
        let mut a0 = _mm256_loadu_ps(w);
        let mut a1 = _mm256_loadu_ps(w.add(LANES));
        let mut b0 = _mm256_setzero_ps();
        let mut b1 = _mm256_setzero_ps();
        let mut wt = w.add(TILE);
        let mut t = 0;
        while t + 2 <= taps {
            let x = (*px.add(t)).add(c);
            let y = (*px.add(t + 1)).add(c);
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(wt), a0);
            a1 = _mm256_fmadd_ps(load_hi::<MASKED>(x.add(LANES), mask2), _mm256_loadu_ps(wt.add(LANES)), a1);
            b0 = _mm256_fmadd_ps(_mm256_loadu_ps(y), _mm256_loadu_ps(wt.add(TILE)), b0);
            b1 = _mm256_fmadd_ps(load_hi::<MASKED>(y.add(LANES), mask2), _mm256_loadu_ps(wt.add(TILE + LANES)), b1);
            wt = wt.add(2 * TILE);
            t += 2;
        }
        if t < taps {
            let x = (*px.add(t)).add(c);
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(wt), a0);
            a1 = _mm256_fmadd_ps(load_hi::<MASKED>(x.add(LANES), mask2), _mm256_loadu_ps(wt.add(LANES)), a1);
        }
        (_mm256_add_ps(a0, b0), _mm256_add_ps(a1, b1))
    }
}

/// Sums one pixel's 8-channel tail block at channel `c` (weights `w`, width 8), input
/// lanes under `mask`.
///
/// # Safety
/// `px` holds `taps` pointers each readable at the lanes of `mask` from channel `c`; `w`
/// holds `8 * (taps + 1)` values; the CPU has AVX2 and FMA.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn block1(px: *const *const f32, taps: usize, c: usize, w: *const f32, mask: __m256i) -> __m256 {
    // SAFETY: the function's contract; offsets stay inside the `w` block.
    unsafe {
        let mut a = _mm256_loadu_ps(w);
        let mut b = _mm256_setzero_ps();
        let mut wt = w.add(LANES);
        let mut t = 0;
        while t + 2 <= taps {
            let x = (*px.add(t)).add(c);
            let y = (*px.add(t + 1)).add(c);
            a = _mm256_fmadd_ps(_mm256_maskload_ps(x, mask), _mm256_loadu_ps(wt), a);
            b = _mm256_fmadd_ps(_mm256_maskload_ps(y, mask), _mm256_loadu_ps(wt.add(LANES)), b);
            wt = wt.add(2 * LANES);
            t += 2;
        }
        if t < taps {
            let x = (*px.add(t)).add(c);
            a = _mm256_fmadd_ps(_mm256_maskload_ps(x, mask), _mm256_loadu_ps(wt), a);
        }
        _mm256_add_ps(a, b)
    }
}
