//! AVX-512 max pooling: 64 channels a step over every tap (four accumulators, so one
//! pass over the pointers serves four vectors), then 16 at a time, then a masked tail
//! (masked loads and stores only there: they cost more than plain ones).
//!
//! `_mm512_max_ps(x, acc)` is `x > acc ? x : acc`, which is `std::max(acc, x)`
//! (`acc < x ? x : acc`) for every input, NaNs and signed zeros included; the clamp is
//! `_mm512_min_ps(hi, _mm512_max_ps(lo, v))` for the same reason.

use super::MaxPoolKernels;
use core::arch::x86_64::*;

/// The AVX-512 table entry.
pub const KERNELS: MaxPoolKernels = MaxPoolKernels { pixels };

/// # Safety
/// The contract of [`super::MaxPoolFn`], on a CPU with AVX-512 F (the table is only
/// handed out when it is present).
unsafe fn pixels(input: *const f32, offsets: &[usize], k: usize, channels: usize, out: *mut f32, min: f32, max: f32) {
    // SAFETY: forwarded contract; the CPU features were checked when the table was chosen.
    unsafe { pixels_impl(input, offsets, k, channels, out, min, max) }
}

/// The pixel loop with the kernel's features, so that [`pixel`] inlines into it (a call
/// per pixel cost more than a 16-channel pixel's work).
#[target_feature(enable = "avx512f")]
unsafe fn pixels_impl(
    input: *const f32,
    offsets: &[usize],
    k: usize,
    channels: usize,
    out: *mut f32,
    min: f32,
    max: f32,
) {
    for (p, window) in offsets.chunks_exact(k).enumerate() {
        // SAFETY: the contract for pixel `p` (its `k` input pixels and its `channels`
        // outputs).
        unsafe { pixel(input, window, channels, out.add(p * channels), min, max) }
    }
}

/// One pixel: the contract of [`super::MaxPoolFn`] with `k = window.len()`.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn pixel(input: *const f32, window: &[usize], channels: usize, out: *mut f32, min: f32, max: f32) {
    let (lo, hi) = (_mm512_set1_ps(min), _mm512_set1_ps(max));
    let start = _mm512_set1_ps(f32::MIN);
    let mut c = 0;
    // SAFETY: every load reads channels `c..c + 16` (or the masked lanes below
    // `channels`) of an input pixel, every store writes the same channels of `out`: all within
    // the contract's `channels` values.
    unsafe {
        while c + 64 <= channels {
            let mut acc = [start; 4];
            for &o in window {
                let t = input.add(o);
                for (v, a) in acc.iter_mut().enumerate() {
                    *a = _mm512_max_ps(_mm512_loadu_ps(t.add(c + 16 * v)), *a);
                }
            }
            for (v, a) in acc.iter().enumerate() {
                _mm512_storeu_ps(out.add(c + 16 * v), _mm512_min_ps(hi, _mm512_max_ps(lo, *a)));
            }
            c += 64;
        }
        while c + 16 <= channels {
            let mut acc = start;
            for &o in window {
                acc = _mm512_max_ps(_mm512_loadu_ps(input.add(o + c)), acc);
            }
            _mm512_storeu_ps(out.add(c), _mm512_min_ps(hi, _mm512_max_ps(lo, acc)));
            c += 16;
        }
        if c < channels {
            let n = channels - c;
            let m: __mmask16 = ((1u32 << n) - 1) as __mmask16;
            let mut acc = start;
            for &o in window {
                acc = _mm512_max_ps(_mm512_maskz_loadu_ps(m, input.add(o + c)), acc);
            }
            _mm512_mask_storeu_ps(out.add(c), m, _mm512_min_ps(hi, _mm512_max_ps(lo, acc)));
        }
    }
}
