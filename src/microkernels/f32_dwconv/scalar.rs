//! Portable depthwise kernels: the oracle of the SIMD ones (same packing order, same
//! summation order, separate multiply and add).

use super::DwKernels;
use crate::microkernels::Isa;

/// Channels per packed block: a fixed-size inner loop the compiler can unroll.
const TILE: usize = 8;

pub const KERNELS: DwKernels = DwKernels {
    isa: Isa::Scalar,
    channel_tile: TILE,
    channel_subtile: 1,
    taps9: rows9,
    taps25: rows25,
    any: rows_any,
    direct: Some(direct),
    slide: None,
};

/// # Safety
/// See [`super::DwRowKernel`] (`taps == 9`).
unsafe fn rows9(channels: usize, taps: usize, ind: &[*const f32], weights: &[f32], out: &mut [f32], clamp: (f32, f32)) {
    debug_assert_eq!(taps, 9);
    // SAFETY: forwarded from the caller's contract.
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
    // SAFETY: forwarded from the caller's contract.
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
    // SAFETY: forwarded from the caller's contract.
    unsafe { rows::<0>(channels, taps, ind, weights, out, clamp) }
}

/// TFLite's clamp, `min(max(x, lo), hi)` with C++ `std::min` / `std::max` (NaN stays).
#[inline(always)]
fn clamp_to(x: f32, (lo, hi): (f32, f32)) -> f32 {
    let v = if x < lo { lo } else { x };
    if hi < v { hi } else { v }
}

/// One block of `n` channels (`n <= width <= TILE`) of one pixel: `x(t)` is tap `t`'s
/// input for the block's channels, `w` the block's packed weights (width `width`).
#[inline(always)]
fn block<'a>(x: impl Fn(usize) -> &'a [f32], taps: usize, width: usize, w: &[f32], out: &mut [f32], clamp: (f32, f32)) {
    let n = out.len();
    let mut a = [0.0f32; TILE];
    let mut b = [0.0f32; TILE];
    a[..n].copy_from_slice(&w[..n]);
    // Separate multiply and add (Rust never fuses `a += x * w`): the SIMD kernels' FMA
    // differs from this by one rounding per tap.
    let mut t = 0;
    while t + 2 <= taps {
        let (x0, x1) = (&x(t)[..n], &x(t + 1)[..n]);
        let (w0, w1) = (&w[width * (t + 1)..][..n], &w[width * (t + 2)..][..n]);
        for j in 0..n {
            a[j] += x0[j] * w0[j];
            b[j] += x1[j] * w1[j];
        }
        t += 2;
    }
    if t < taps {
        let (x0, w0) = (&x(t)[..n], &w[width * (t + 1)..][..n]);
        for j in 0..n {
            a[j] += x0[j] * w0[j];
        }
    }
    for j in 0..n {
        out[j] = clamp_to(a[j] + b[j], clamp);
    }
}

/// The kernel for `T` taps (`T == 0`: any count, given by `taps`).
///
/// # Safety
/// See [`super::DwRowKernel`].
#[inline(always)]
unsafe fn rows<const T: usize>(
    channels: usize,
    taps: usize,
    ind: &[*const f32],
    weights: &[f32],
    out: &mut [f32],
    clamp: (f32, f32),
) {
    let taps = if T == 0 { taps } else { T };
    for (ptrs, out_px) in ind.chunks_exact(taps).zip(out.chunks_exact_mut(channels)) {
        let mut w = weights;
        for (c0, n, width) in KERNELS.blocks(channels) {
            let (wb, rest) = w.split_at(width * (taps + 1));
            // SAFETY: each tap pointer is valid for reading `channels` values that nothing
            // writes during the call (the caller's contract), and `c0 + n <= channels`.
            let x = |t: usize| unsafe { core::slice::from_raw_parts(ptrs[t].add(c0), n) };
            block(x, taps, width, wb, &mut out_px[c0..c0 + n], clamp);
            w = rest;
        }
    }
}

/// The direct kernel: each pixel's taps at fixed offsets from a base that steps per
/// pixel, summed as the pointer kernels do.
///
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
    for (p, out_px) in out.chunks_exact_mut(channels).enumerate() {
        let px = base.wrapping_add(p * px_step);
        let mut w = weights;
        for (c0, n, width) in KERNELS.blocks(channels) {
            let (wb, rest) = w.split_at(width * (taps + 1));
            // SAFETY: pixel `p`'s tap `t` is readable for `channels` values from
            // `px + offsets[t]`, which nothing writes during the call (the caller's
            // contract), and `c0 + n <= channels`.
            let x = |t: usize| unsafe { core::slice::from_raw_parts(px.add(offsets[t] + c0), n) };
            block(x, taps, width, wb, &mut out_px[c0..c0 + n], clamp);
            w = rest;
        }
    }
}
