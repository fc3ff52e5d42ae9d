//! float32 max pooling: each output pixel's channels as the maximum over the input pixels
//! of its window (reached through an offset each into the input, as XNNPACK's max-pool
//! kernels reach theirs through pointers), then clamped to the activation range.
//!
//! Every table gives TFLite's bits: the maximum starts at `f32::MIN` and takes each input
//! value as `std::max(acc, x)` does (`acc < x ? x : acc`: a NaN input is skipped, an
//! equal value keeps the earlier one), and the clamp is `std::min(std::max(v, lo), hi)`.

#[cfg(target_arch = "x86_64")]
pub mod avx512;
pub mod scalar;
#[cfg(test)]
mod tests;

use crate::error::{Error, Result};

/// A max-pool kernel: `out` holds `pixels = offsets.len() / k` output pixels of
/// `channels` values, pixel `p`'s maximum taken over the input pixels at `input +
/// offsets[p * k..(p + 1) * k]`.
///
/// # Safety
/// `k >= 1` divides `offsets.len()`; `input + o` points to `channels` readable floats for
/// every offset `o`, and `out` to `offsets.len() / k * channels` writable ones,
/// overlapping none of them.
pub type MaxPoolFn =
    unsafe fn(input: *const f32, offsets: &[usize], k: usize, channels: usize, out: *mut f32, min: f32, max: f32);

/// The max-pool kernel of one table.
pub struct MaxPoolKernels {
    pub pixels: MaxPoolFn,
}

/// Output pixels `out` (`channels` values each) as the maximum over their input pixels,
/// clamped to `(min, max)`, with `table`'s kernel: pixel `p` reads the `k` pixels of
/// `input` starting at `offsets[p * k..(p + 1) * k]`. A window of fewer pixels repeats
/// one of them: repeating an input never changes a maximum taken this way. Errors
/// (nothing written) when a pixel lies past `input` or the sizes disagree.
pub fn max_pixels(
    table: &super::Table,
    input: &[f32],
    offsets: &[usize],
    k: usize,
    channels: usize,
    out: &mut [f32],
    (min, max): (f32, f32),
) -> Result<()> {
    if k == 0 || !offsets.len().is_multiple_of(k) || offsets.len() / k * channels != out.len() {
        return Err(Error::new(format!(
            "max pooling: {} window pixels in groups of {k} for {} outputs of {channels}",
            offsets.len(),
            out.len()
        )));
    }
    // One check for all: the furthest pixel ends inside `input`.
    let furthest = offsets.iter().copied().max().unwrap_or(0);
    if furthest.checked_add(channels).is_none_or(|end| end > input.len()) {
        return Err(Error::new("max pooling window reads past the input"));
    }
    if channels == 0 {
        return Ok(());
    }
    // SAFETY: `k >= 1` divides `offsets.len()`; every offset is at most the furthest, so
    // `input + o` starts `channels` readable values (checked above); `out` holds
    // `offsets.len() / k * channels` writable values (checked above) and, as a `&mut`,
    // overlaps none of them.
    unsafe { (table.f32_maxpool.pixels)(input.as_ptr(), offsets, k, channels, out.as_mut_ptr(), min, max) };
    Ok(())
}
