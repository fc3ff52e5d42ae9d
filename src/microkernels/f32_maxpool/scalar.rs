//! Portable max pooling: the oracle of the SIMD kernel.

use super::MaxPoolKernels;

/// The scalar table entry.
pub const KERNELS: MaxPoolKernels = MaxPoolKernels { pixels };

/// # Safety
/// The contract of [`super::MaxPoolFn`].
unsafe fn pixels(input: *const f32, offsets: &[usize], k: usize, channels: usize, out: *mut f32, min: f32, max: f32) {
    for (p, window) in offsets.chunks_exact(k).enumerate() {
        // SAFETY: `out` holds `channels` writable floats per pixel, overlapping no tap
        // (the contract).
        let out = unsafe { core::slice::from_raw_parts_mut(out.add(p * channels), channels) };
        out.fill(f32::MIN);
        for &o in window {
            // SAFETY: `input + o` points to `channels` readable floats (the contract).
            let x = unsafe { core::slice::from_raw_parts(input.add(o), channels) };
            out.iter_mut().zip(x).for_each(|(a, &x)| *a = if *a < x { x } else { *a });
        }
        for a in out.iter_mut() {
            let v = if *a < min { min } else { *a };
            *a = if max < v { max } else { v };
        }
    }
}
