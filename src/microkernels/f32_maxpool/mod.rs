//! float32 max pooling, one output pixel at a time: each channel's maximum over the input
//! pixels of the pixel's window (reached through one pointer each, as XNNPACK's max-pool
//! kernels reach theirs), then clamped to the activation range.
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

/// A max-pool kernel: `out` holds `pixels = taps.len() / k` output pixels of `channels`
/// values, pixel `p`'s maximum taken over `taps[p * k..(p + 1) * k]`.
///
/// # Safety
/// `k >= 1` divides `taps.len()`; each tap points to `channels` readable floats and `out`
/// to `taps.len() / k * channels` writable ones, overlapping none of them.
pub type MaxPoolFn = unsafe fn(taps: &[*const f32], k: usize, channels: usize, out: *mut f32, min: f32, max: f32);

/// The max-pool kernel of one table.
pub struct MaxPoolKernels {
    pub pixels: MaxPoolFn,
}

/// Output pixels `out` (`channels` values each) as the maximum over their input pixels,
/// clamped to `(min, max)`, with `table`'s kernel: pixel `p` reads the `k` pixels of
/// `input` starting at `bases[p * k..(p + 1) * k]`. A window of fewer pixels repeats one
/// of them: repeating an input never changes a maximum taken this way. `taps` is scratch
/// for the pointers. Errors (nothing written) when a pixel lies past `input` or the
/// sizes disagree.
#[allow(clippy::too_many_arguments)]
pub fn max_pixels(
    table: &super::Table,
    input: &[f32],
    bases: &[usize],
    k: usize,
    channels: usize,
    out: &mut [f32],
    taps: &mut Vec<*const f32>,
    (min, max): (f32, f32),
) -> Result<()> {
    if k == 0 || !bases.len().is_multiple_of(k) || bases.len() / k * channels != out.len() {
        return Err(Error::new(format!(
            "max pooling: {} window pixels in groups of {k} for {} outputs of {channels}",
            bases.len(),
            out.len()
        )));
    }
    taps.clear();
    for &b in bases {
        let pixel = b.checked_add(channels).and_then(|end| input.get(b..end));
        taps.push(pixel.ok_or_else(|| Error::new("max pooling window reads past the input"))?.as_ptr());
    }
    if channels == 0 {
        return Ok(());
    }
    // SAFETY: `k >= 1` divides `taps.len()`; every pointer starts `channels` readable
    // values of `input` (checked above); `out` holds `taps.len() / k * channels` writable
    // values (checked above) and, as a `&mut`, overlaps none of them.
    unsafe { (table.f32_maxpool.pixels)(taps, k, channels, out.as_mut_ptr(), min, max) };
    Ok(())
}
