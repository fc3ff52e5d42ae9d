//! int8 depthwise convolution microkernels (depth multiplier 1, NHWC, per-channel int8
//! filters, int32 bias), bit-exact with TFLite's reference `DepthwiseConvPerChannel`.
//!
//! TFLite computes, per output channel `c`,
//! `acc = bias[c] + sum over in-image taps t of (x_t - zp_in) * w[t][c]`, then requantizes.
//! Here the input zero point is folded out of the inner loop: taps in the padding read a
//! row filled with `zp_in` (so `x_t - zp_in = 0`, as if skipped), and [`pack`] stores
//! `bias[c] - zp_in * sum_t w[t][c]` as the requantization bias, so a kernel sums only
//! `x_t * w_t` over every tap. All of it wraps mod 2^32, where the two forms are equal, so
//! the result is TFLite's whatever the values.
//!
//! Packed weights ([`PackedDw`]): per block of 16 channels, `taps` rows of 16 values
//! sign-extended to `i32` (channels past the last one are zero), followed by the
//! requantization tables of [`ChannelRequant`] (adjusted bias, multiplier, shifts).
//!
//! A kernel computes a run of output pixels of one output row. It gets one pointer per
//! tap to the run's first pixel and a pixel step: tap `t` of pixel `p` reads the
//! `channels` values at `taps[t] + p * step`. Inside the image that is a real input row;
//! taps whose filter row is above or below the image point at the zero-point row (long
//! enough for the whole run), and pixels whose taps leave the image on the left or right
//! run one at a time with those taps on the zero-point row. The kernels walk 16-channel
//! blocks in the outer loop (weights and requantization parameters stay in registers)
//! and the run's pixels in the inner one.
//!
//! [`run_rows`] is the safe driver: it checks every length against the geometry and
//! builds each call's tap pointers from bounds-checked slices of the input.

#[cfg(target_arch = "x86_64")]
pub mod avx512;
pub mod scalar;

use super::Isa;
use super::f32_dwconv::DwGeom;
use super::packed::Packed;
use super::qs8_requant::{ChannelRequant, LANES};
use crate::error::{Error, Result};

/// A row kernel.
///
/// `kernel(channels, taps, step, weights, requant, output)` computes
/// `pixels = output.len() / channels` output pixels, pixel `p` reading its tap `t` from
/// `taps[t] + p * step` and writing `output[p * channels..(p + 1) * channels]`.
///
/// # Safety
/// - `channels > 0`, `output.len()` is a multiple of `channels`, `taps` is not empty and
///   has the tap count the kernel was made for (any count for the general kernel);
/// - for every pixel `p` and tap `t`, `taps[t] + p * step` is readable for `channels`
///   consecutive `i8`s, which nothing writes during the call;
/// - `weights.len() >= channels.div_ceil(16) * 16 * taps.len()` in [`pack`]'s layout and
///   `requant.padded_channels() >= channels.div_ceil(16) * 16`;
/// - the CPU has the table's instruction set.
pub type DwKernel = unsafe fn(usize, &[*const i8], usize, &[i32], &ChannelRequant, &mut [i8]);

/// The int8 depthwise kernels of one instruction set. Only this module makes them (the
/// fields are private), and [`run_rows`] checks that the CPU has `isa` before it calls
/// one, so no safe code can run a kernel the CPU lacks.
#[derive(Clone, Copy)]
pub struct DwKernels {
    /// The instruction set the kernels need.
    isa: Isa,
    /// Kernel for 9 taps (3x3 filters).
    taps9: DwKernel,
    /// Kernel for 25 taps (5x5 filters).
    taps25: DwKernel,
    /// Kernel for any tap count.
    any: DwKernel,
}

impl DwKernels {
    /// The kernel for `taps` filter taps.
    fn kernel(&self, taps: usize) -> DwKernel {
        match taps {
            9 => self.taps9,
            25 => self.taps25,
            _ => self.any,
        }
    }

    /// The instruction set these kernels need.
    pub fn isa(&self) -> Isa {
        self.isa
    }
}

/// Depthwise weights packed for the kernels, with the zero-point-adjusted requantization.
#[derive(Clone, Debug)]
pub struct PackedDw {
    channels: usize,
    taps: usize,
    weights: Packed<i32>,
    requant: ChannelRequant,
    zero_point: i8,
}

impl PackedDw {
    /// Channels packed.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Filter taps packed.
    pub fn taps(&self) -> usize {
        self.taps
    }

    /// The input zero point folded into the bias (what padding reads).
    pub fn zero_point(&self) -> i8 {
        self.zero_point
    }

    /// Bytes held by the packed weights and tables.
    pub fn bytes(&self) -> usize {
        self.weights.bytes() + 4 * 4 * self.requant.padded_channels()
    }
}

/// Packs int8 depthwise weights: `weights(tap, channel)` for taps in row-major filter
/// order, `bias` (zero when absent) with one value per channel, the input zero point
/// `input_zero_point` (folded into the bias; it must be an int8 value), each channel's
/// quantized multiplier and shift from `mult_shift` (TFLite's `QuantizeMultiplier` form),
/// and the output zero point and clamp range (within `-128..=127`).
#[allow(clippy::too_many_arguments)]
pub fn pack(
    channels: usize,
    taps: usize,
    weights: impl Fn(usize, usize) -> i8,
    bias: Option<&[i32]>,
    input_zero_point: i32,
    mult_shift: impl Fn(usize) -> (i32, i32),
    output_offset: i32,
    (min, max): (i32, i32),
) -> Result<PackedDw> {
    if channels == 0 || taps == 0 {
        return Err(Error::new(format!(
            "int8 depthwise weights need channels and taps, got {channels} channels and {taps} taps"
        )));
    }
    if let Some(b) = bias
        && b.len() != channels
    {
        return Err(Error::new(format!("bias has {} values for {channels} channels", b.len())));
    }
    let zero_point = i8::try_from(input_zero_point)
        .map_err(|_| Error::new(format!("input zero point {input_zero_point} is not an int8 value")))?;
    if min > max || min < i8::MIN as i32 || max > i8::MAX as i32 {
        return Err(Error::new(format!("int8 clamp range [{min}, {max}] is not within [-128, 127]")));
    }
    let padded = channels.div_ceil(LANES) * LANES;
    let len = padded.checked_mul(taps).ok_or_else(|| {
        Error::new(format!("packed depthwise weights for {channels} channels and {taps} taps overflow"))
    })?;
    let mut data = Vec::new();
    data.try_reserve_exact(len)
        .map_err(|_| Error::new(format!("cannot allocate {len} packed int8 depthwise weights")))?;
    let mut sums = vec![0i32; channels];
    for c0 in (0..channels).step_by(LANES) {
        for t in 0..taps {
            for j in 0..LANES {
                let c = c0 + j;
                if c < channels {
                    let w = weights(t, c) as i32;
                    sums[c] = sums[c].wrapping_add(w);
                    data.push(w);
                } else {
                    data.push(0);
                }
            }
        }
    }
    debug_assert_eq!(data.len(), len);
    let requant = ChannelRequant::new(
        channels,
        mult_shift,
        |c| bias.map_or(0, |b| b[c]).wrapping_sub(input_zero_point.wrapping_mul(sums[c])),
        output_offset,
        (min, max),
    );
    Ok(PackedDw { channels, taps, weights: Packed::new(data), requant, zero_point })
}

/// Checks that the sizes are positive and that every length and coordinate the driver
/// forms fits in `isize`.
fn check_geom(g: &DwGeom) -> Result<()> {
    let dims = [
        g.batches, g.in_h, g.in_w, g.channels, g.out_h, g.out_w, g.k_h, g.k_w, g.stride_h, g.stride_w, g.dil_h, g.dil_w,
    ];
    if dims.contains(&0) {
        return Err(Error::new(format!("depthwise geometry has a zero size or step: {g:?}")));
    }
    let limit = isize::MAX as usize / 4;
    let far = |out: usize, stride: usize, k: usize, dil: usize, pad: usize| {
        (out - 1).checked_mul(stride)?.checked_add((k - 1).checked_mul(dil)?)?.checked_add(pad)?.checked_add(1)
    };
    let lens = [
        g.input_len(),
        g.output_len(),
        g.rows().checked_mul(g.k_h),
        far(g.out_h, g.stride_h, g.k_h, g.dil_h, g.pad_top),
        far(g.out_w, g.stride_w, g.k_w, g.dil_w, g.pad_left).and_then(|w| w.checked_mul(g.channels)),
        g.k_h.checked_mul(g.k_w),
    ];
    if lens.iter().any(|l| l.is_none_or(|v| v > limit)) {
        return Err(Error::new(format!("depthwise geometry overflows: {g:?}")));
    }
    Ok(())
}

/// Output pixels per kernel call: the input rows a call reads (taps rows of this many
/// pixels) stay in L1 while the kernel revisits them for each 16-channel block.
const PIXELS_PER_CALL: usize = 64;

/// Computes output rows `first_row..first_row + output.len() / g.row_len()` (rows over all
/// batches, `batches * out_h` in all) of the int8 depthwise convolution of `input` (NHWC,
/// the whole tensor) with `packed` (made by [`pack`] for `g.channels` and `g.taps()`).
pub fn run_rows(
    kernels: &DwKernels,
    g: &DwGeom,
    input: &[i8],
    packed: &PackedDw,
    first_row: usize,
    output: &mut [i8],
) -> Result<()> {
    if !kernels.isa.is_available() {
        return Err(Error::new(format!("this CPU cannot run the {} int8 depthwise kernels", kernels.isa.name())));
    }
    check_geom(g)?;
    let (c, taps, row_len) = (g.channels, g.taps(), g.row_len());
    if Some(input.len()) != g.input_len() {
        return Err(Error::new(format!(
            "depthwise input has {} values, the geometry needs {:?}",
            input.len(),
            g.input_len()
        )));
    }
    let padded = c.div_ceil(LANES) * LANES;
    if packed.channels != c
        || packed.taps != taps
        || Some(packed.weights.len()) != padded.checked_mul(taps)
        || packed.requant.padded_channels() != padded
        || [&packed.requant.bias, &packed.requant.left, &packed.requant.right].iter().any(|t| t.len() != padded)
    {
        return Err(Error::new(format!(
            "packed int8 depthwise weights for {} channels and {} taps do not fit {c} channels and {taps} taps",
            packed.channels, packed.taps
        )));
    }
    if !output.len().is_multiple_of(row_len) {
        return Err(Error::new(format!("depthwise output of {} values is not whole rows of {row_len}", output.len())));
    }
    let rows = output.len() / row_len;
    if first_row.checked_add(rows).is_none_or(|end| end > g.rows()) {
        return Err(Error::new(format!("depthwise rows {first_row}+{rows} exceed the {} output rows", g.rows())));
    }
    let kernel = kernels.kernel(taps);
    let step = g.stride_w * c;
    let max_run = PIXELS_PER_CALL.min(g.out_w);
    // The zero-point row: long enough for a whole run of pixels stepping through it.
    let zeros = vec![packed.zero_point; (max_run - 1) * step + c];
    let batch_len = g.in_h * g.in_w * c;
    let in_row_len = g.in_w * c;
    let (inner_lo, inner_hi) = inner_columns(g);
    let mut tap_rows: Vec<Option<&[i8]>> = vec![None; g.k_h];
    let mut ptrs: Vec<*const i8> = vec![zeros.as_ptr(); taps];
    let call = Call { kernel, c, step, packed };
    for (i, out_row) in output.chunks_exact_mut(row_len).enumerate() {
        let r = first_row + i;
        let (b, oy) = (r / g.out_h, r % g.out_h);
        let image = &input[b * batch_len..(b + 1) * batch_len];
        for (ky, slot) in tap_rows.iter_mut().enumerate() {
            let iy = (oy * g.stride_h + ky * g.dil_h).checked_sub(g.pad_top);
            *slot = iy.filter(|&y| y < g.in_h).map(|y| &image[y * in_row_len..(y + 1) * in_row_len]);
        }
        // Pixels with a tap left or right of the image, one at a time.
        for ox in (0..inner_lo.min(g.out_w)).chain(inner_hi.max(inner_lo).min(g.out_w)..g.out_w) {
            for (ky, row) in tap_rows.iter().enumerate() {
                for kx in 0..g.k_w {
                    let ix = (ox * g.stride_w + kx * g.dil_w).checked_sub(g.pad_left).filter(|&x| x < g.in_w);
                    let px = row.zip(ix).and_then(|(row, x)| row.get(x * c..(x + 1) * c));
                    ptrs[ky * g.k_w + kx] = px.map_or(zeros.as_ptr(), |s| s.as_ptr());
                }
            }
            call.run(&ptrs, &mut out_row[ox * c..(ox + 1) * c]);
        }
        // The other pixels in runs: each tap steps through one real row (or the zeros).
        let mut ox0 = inner_lo;
        while ox0 < inner_hi {
            let n = (inner_hi - ox0).min(max_run);
            let need = (n - 1) * step + c;
            for (ky, row) in tap_rows.iter().enumerate() {
                for kx in 0..g.k_w {
                    let span = match row {
                        Some(row) => {
                            let start = ox0 * g.stride_w + kx * g.dil_w - g.pad_left;
                            row.get(start * c..).and_then(|s| s.get(..need))
                        }
                        None => zeros.get(..need),
                    };
                    let span = span.ok_or_else(|| {
                        Error::new(format!("depthwise run at row {oy} column {ox0} leaves the input"))
                    })?;
                    ptrs[ky * g.k_w + kx] = span.as_ptr();
                }
            }
            call.run(&ptrs, &mut out_row[ox0 * c..(ox0 + n) * c]);
            ox0 += n;
        }
    }
    Ok(())
}

/// One kernel with what stays the same across its calls.
struct Call<'a> {
    kernel: DwKernel,
    c: usize,
    step: usize,
    packed: &'a PackedDw,
}

impl Call<'_> {
    /// Runs the kernel on the pixels of `out` with tap pointers `ptrs`, each of which the
    /// caller took from a slice holding `(pixels - 1) * step + c` values.
    fn run(&self, ptrs: &[*const i8], out: &mut [i8]) {
        debug_assert!(out.len().is_multiple_of(self.c) && !out.is_empty());
        // SAFETY: the CPU has the kernels' instruction set (checked by `run_rows`); `c > 0`
        // (checked by `check_geom`); `out` holds whole pixels of `c` values; `ptrs` has
        // one pointer per tap and the kernel was chosen for that count; each pointer is the
        // start of a slice of `(pixels - 1) * step + c` values of the input or of the
        // zero-point row (for a single pixel, of `c` values), both borrowed immutably for
        // the whole call while `out` is a distinct `&mut`; the weights and requantization
        // tables have the lengths of `c` channels and these taps (checked by `run_rows`).
        unsafe { (self.kernel)(self.c, ptrs, self.step, &self.packed.weights, &self.packed.requant, out) };
    }
}

/// The output columns `lo..hi` whose taps all read real input columns (`lo >= hi` when
/// there are none).
fn inner_columns(g: &DwGeom) -> (usize, usize) {
    let lo = g.pad_left.div_ceil(g.stride_w);
    let reach = (g.k_w - 1) * g.dil_w + 1;
    let hi = match (g.in_w + g.pad_left).checked_sub(reach) {
        Some(last_start) => (last_start / g.stride_w + 1).min(g.out_w),
        None => 0,
    };
    (lo, hi)
}

#[cfg(test)]
mod tests;
