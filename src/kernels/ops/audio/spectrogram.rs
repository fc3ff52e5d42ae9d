//! The custom op `AudioSpectrogram` (TFLite `kernels/audio_spectrogram.cc`,
//! `kernels/internal/spectrogram.cc`).
//!
//! Input: float32 audio `[samples, channels]`. Options (FlexBuffer map): `window_size`
//! (at least 2), `stride` (at least 1), `magnitude_squared`. Each channel is cut into
//! windows of `window_size` samples, `stride` apart; each window is multiplied by a
//! periodic Hann window, zero-padded to the next power of two and transformed; the output
//! `[channels, windows, fft_length / 2 + 1]` holds the squared magnitudes (rounded to
//! float), or their float square roots. The arithmetic is in double, as TFLite's.
//!
//! As TFLite's kernel, the window queue is reset once per Invoke, not per channel: the
//! samples a channel leaves after its last window start the next channel's first window.
//! A channel whose window count then differs from the first's is an error (TFLite's
//! check), so multi-channel inputs only work where the counts agree.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::flexbuffer::FlexMap;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::ops::rfft2d::FftPlan;
use crate::kernels::shape_util::{check_arity, in_op, op_error};

/// The custom op's name.
pub const OP: &str = "AudioSpectrogram";
/// The largest window accepted, so a malformed option cannot ask for a huge transform.
const MAX_WINDOW: i64 = 1 << 24;

/// The `AudioSpectrogram` registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<AudioSpectrogram>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

/// The op's options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpectrogramOptions {
    pub window_size: usize,
    pub stride: usize,
    pub magnitude_squared: bool,
}

impl SpectrogramOptions {
    /// Reads and checks the custom options (`Spectrogram::Initialize`'s conditions).
    pub fn parse(buf: &[u8]) -> Result<SpectrogramOptions> {
        let m = FlexMap::root_of_scalars(buf)?;
        let window = m.get("window_size")?.as_i64();
        let stride = m.get("stride")?.as_i64();
        if !(2..=MAX_WINDOW).contains(&window) {
            crate::bail!("window_size {window} must be in [2, {MAX_WINDOW}]");
        }
        if !(1..=i64::from(i32::MAX)).contains(&stride) {
            crate::bail!("stride {stride} must be positive");
        }
        Ok(SpectrogramOptions {
            window_size: window as usize,
            stride: stride as usize,
            magnitude_squared: m.get("magnitude_squared")?.as_bool(),
        })
    }

    /// The transform length: the window size rounded up to a power of two.
    pub fn fft_length(&self) -> usize {
        self.window_size.next_power_of_two()
    }

    /// Values per output row.
    pub fn channels(&self) -> usize {
        self.fft_length() / 2 + 1
    }

    /// Windows in `samples` samples (of one channel, from a fresh queue).
    pub fn windows(&self, samples: usize) -> usize {
        if samples < self.window_size { 0 } else { 1 + (samples - self.window_size) / self.stride }
    }
}

/// The streaming window queue and the transform (TFLite's `internal::Spectrogram`).
pub struct Spectrogram {
    opts: SpectrogramOptions,
    /// The periodic Hann window and the plan, built when the first window is complete.
    hann: Vec<f64>,
    plan: Option<FftPlan>,
    buf: Vec<[f64; 2]>,
    queue: Vec<f32>,
    to_next: usize,
}

impl Spectrogram {
    /// A fresh queue for `opts`.
    pub fn new(opts: SpectrogramOptions) -> Spectrogram {
        Spectrogram {
            opts,
            hann: Vec::new(),
            plan: None,
            buf: Vec::new(),
            queue: Vec::new(),
            to_next: opts.window_size,
        }
    }

    /// Empties the queue (`Initialize`).
    pub fn reset(&mut self) {
        self.queue.clear();
        self.to_next = self.opts.window_size;
    }

    /// Feeds `input` and appends one row of `channels()` squared magnitudes per window
    /// completed to `out`; returns the number of windows.
    pub fn squared_magnitudes(&mut self, input: &[f32], out: &mut Vec<f32>) -> Result<usize> {
        let w = self.opts.window_size;
        let mut start = 0;
        let mut rows = 0;
        loop {
            let remaining = input.len() - start;
            if self.to_next > remaining {
                self.queue.extend_from_slice(&input[start..]);
                self.to_next -= remaining;
                return Ok(rows);
            }
            self.queue.extend_from_slice(&input[start..start + self.to_next]);
            start += self.to_next;
            let excess = self.queue.len() - w;
            self.queue.drain(..excess);
            self.to_next = self.opts.stride;
            self.transform(out)?;
            rows += 1;
        }
    }

    fn transform(&mut self, out: &mut Vec<f32>) -> Result<()> {
        let (w, n) = (self.opts.window_size, self.opts.fft_length());
        if self.plan.is_none() {
            let pi = 4.0 * 1f64.atan();
            self.hann = (0..w).map(|i| 0.5 - 0.5 * ((2.0 * pi * i as f64) / w as f64).cos()).collect();
            self.plan = Some(FftPlan::new(n)?);
            self.buf = vec![[0.0; 2]; n];
        }
        for (j, b) in self.buf.iter_mut().enumerate() {
            *b = if j < w { [f64::from(self.queue[j]) * self.hann[j], 0.0] } else { [0.0; 2] };
        }
        if let Some(plan) = &self.plan {
            plan.forward(&mut self.buf);
        }
        out.extend(self.buf[..n / 2 + 1].iter().map(|c| (c[0] * c[0] + c[1] * c[1]) as f32));
        Ok(())
    }
}

/// `AudioSpectrogram` of `input` (`[samples, channels]`, row-major) into `out`
/// (`[channels, windows, channels()]`).
pub fn spectrogram(
    input: &[f32],
    samples: usize,
    channels: usize,
    opts: SpectrogramOptions,
    out: &mut [f32],
) -> Result<()> {
    let rows = opts.windows(samples);
    let width = opts.channels();
    if input.len() != samples * channels || out.len() != channels * rows * width {
        crate::bail!(
            "input holds {} values and the output {}; the shapes need {} and {}",
            input.len(),
            out.len(),
            samples * channels,
            channels * rows * width
        );
    }
    let mut s = Spectrogram::new(opts);
    let mut column = vec![0f32; samples];
    let mut rows_out = Vec::with_capacity(rows * width);
    for c in 0..channels {
        for (i, v) in column.iter_mut().enumerate() {
            *v = input[i * channels + c];
        }
        rows_out.clear();
        let got = s.squared_magnitudes(&column, &mut rows_out)?;
        if got != rows {
            crate::bail!(
                "channel {c} gives {got} windows, expected {rows}: the window queue carries over between channels"
            );
        }
        let dst = &mut out[c * rows * width..(c + 1) * rows * width];
        if opts.magnitude_squared {
            dst.copy_from_slice(&rows_out);
        } else {
            for (d, &v) in dst.iter_mut().zip(&rows_out) {
                *d = v.sqrt();
            }
        }
    }
    Ok(())
}

struct AudioSpectrogram;

impl BuiltinKernel for AudioSpectrogram {
    const NAME: &'static str = OP;
    type Params = ();
    type State = SpectrogramOptions;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<SpectrogramOptions> {
        let opts = SpectrogramOptions::parse(ctx.custom_initial_data()).map_err(in_op(OP))?;
        check_arity(ctx, OP, 1, 1, 1)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?;
        if input.shape.len() != 2 || input.shape.iter().any(|&d| d < 0) {
            return Err(op_error(OP, format!("input shape {:?} must be [samples, channels]", input.shape)));
        }
        if out.dtype != TfLiteType::kTfLiteFloat32 || input.dtype != TfLiteType::kTfLiteFloat32 {
            return Err(op_error(OP, "input and output must be float32"));
        }
        let rows = opts.windows(input.shape[0] as usize);
        let shape = [input.shape[1], rows as i32, opts.channels() as i32];
        ctx.resize_output(0, &shape).map_err(in_op(OP))?;
        Ok(opts)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), opts: &mut SpectrogramOptions) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        let (samples, channels) = (input.shape[0] as usize, input.shape[1] as usize);
        spectrogram(input.data::<f32>()?, samples, channels, *opts, out.data_mut::<f32>()?).map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(window_size: usize, stride: usize, magnitude_squared: bool) -> SpectrogramOptions {
        SpectrogramOptions { window_size, stride, magnitude_squared }
    }

    #[test]
    fn shapes() {
        let o = opts(5, 2, true);
        assert_eq!(o.fft_length(), 8);
        assert_eq!(o.channels(), 5);
        assert_eq!(o.windows(4), 0);
        assert_eq!(o.windows(5), 1);
        assert_eq!(o.windows(10), 3);
    }

    #[test]
    fn one_window() {
        // A window of 4 ones: Hann [0, .5, 1, .5], whose DFT is [2, -1, 0].
        let mut out = vec![0f32; 3];
        spectrogram(&[1.0; 4], 4, 1, opts(4, 1, true), &mut out).unwrap();
        assert!((out[0] - 4.0).abs() < 1e-6 && (out[1] - 1.0).abs() < 1e-6 && out[2].abs() < 1e-6, "{out:?}");
        spectrogram(&[1.0; 4], 4, 1, opts(4, 1, false), &mut out).unwrap();
        assert!((out[0] - 2.0).abs() < 1e-6 && (out[1] - 1.0).abs() < 1e-6, "{out:?}");
    }

    #[test]
    fn queue_carries_over_between_channels() {
        // Two channels, 5 samples, window 2, stride 2: the first channel leaves one
        // sample, so the second gives 3 windows where the first gave 2.
        let mut out = vec![0f32; 2 * 2 * 2];
        assert!(spectrogram(&[0.0; 10], 5, 2, opts(2, 2, true), &mut out).is_err());
        // With 4 samples nothing is left over.
        let x = [1f32, 0., 0., 0., 0., 3., 0., 4.];
        let mut out = vec![0f32; 2 * 2 * 2];
        spectrogram(&x, 4, 2, opts(2, 2, true), &mut out).unwrap();
        // Hann of length 2 is [0, 1]: each window keeps its second sample.
        assert_eq!(out, [0., 0., 0., 0., 0., 0., 16., 16.]);
    }

    #[test]
    fn options() {
        assert!(SpectrogramOptions::parse(&[]).is_err());
    }
}
