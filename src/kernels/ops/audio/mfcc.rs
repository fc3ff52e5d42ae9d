//! The custom op `Mfcc` (TFLite `kernels/mfcc.cc`, `kernels/internal/mfcc.cc`,
//! `mfcc_mel_filterbank.cc`, `mfcc_dct.cc`).
//!
//! Inputs: a float32 squared-magnitude spectrogram `[audio_channels, frames, bins]` (as
//! `AudioSpectrogram` writes it) and the int32 sample rate (one value). Options
//! (FlexBuffer map, each read as an integer as TFLite does): `upper_frequency_limit`,
//! `lower_frequency_limit`, `filterbank_channel_count`, `dct_coefficient_count`. Each
//! frame's magnitudes (square roots) are summed under triangular mel-spaced filters, the
//! logs (floored at 1e-12) go through a DCT-II, and the first `dct_coefficient_count`
//! coefficients are the output `[audio_channels, frames, dct_coefficient_count]`. All in
//! double, rounded to float at the end.
//!
//! TFLite's quirks, kept: settings its filterbank or DCT refuse (no channels, a rate or
//! limits out of order, more coefficients than channels) are only an error when there is
//! a coefficient to write; when the upper limit lies past the spectrogram's last bin the
//! filterbank yields nothing and every coefficient is 0.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::flexbuffer::FlexMap;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

/// The custom op's name.
pub const OP: &str = "Mfcc";
/// The most filterbank channels accepted, so a malformed option cannot ask for a huge
/// DCT table.
const MAX_FILTERBANK_CHANNELS: i64 = 1 << 16;
const FILTERBANK_FLOOR: f64 = 1e-12;

/// The `Mfcc` registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Mfcc>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

/// The op's options, as TFLite stores them (the limits are integers made float).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MfccOptions {
    pub upper_frequency_limit: f32,
    pub lower_frequency_limit: f32,
    pub filterbank_channel_count: i32,
    pub dct_coefficient_count: i32,
}

impl MfccOptions {
    /// Reads the custom options; counts must fit an int32 and the filterbank at most
    /// [`MAX_FILTERBANK_CHANNELS`] channels, and the coefficient count not be negative.
    pub fn parse(buf: &[u8]) -> Result<MfccOptions> {
        let m = FlexMap::root_of_scalars(buf)?;
        let fb = m.get("filterbank_channel_count")?.as_i64();
        let dct = m.get("dct_coefficient_count")?.as_i64();
        if !(i64::from(i32::MIN)..=MAX_FILTERBANK_CHANNELS).contains(&fb) {
            crate::bail!("filterbank_channel_count {fb} is larger than {MAX_FILTERBANK_CHANNELS}");
        }
        if !(0..=i64::from(i32::MAX)).contains(&dct) {
            crate::bail!("dct_coefficient_count {dct} is negative or too large");
        }
        Ok(MfccOptions {
            upper_frequency_limit: m.get("upper_frequency_limit")?.as_i64() as f32,
            lower_frequency_limit: m.get("lower_frequency_limit")?.as_i64() as f32,
            filterbank_channel_count: fb as i32,
            dct_coefficient_count: dct as i32,
        })
    }
}

fn freq_to_mel(freq: f64) -> f64 {
    1127.0 * (freq / 700.0).ln_1p()
}

/// The mel filterbank and DCT for one spectrogram width and sample rate.
#[derive(Debug, Clone, PartialEq)]
pub struct MfccPlan {
    /// The width and rate it was built for.
    key: (usize, i32),
    channels: usize,
    start: usize,
    /// Last bin used; `None` when it lies past the spectrogram (no filterbank output).
    end: Option<usize>,
    /// Per bin: the channel whose falling edge it is on (-1: only the first rising edge).
    band: Vec<i64>,
    weights: Vec<f64>,
    /// `dct_coefficient_count` rows of `channels` cosines.
    cosines: Vec<f64>,
}

impl MfccPlan {
    /// TFLite's `Mfcc::Initialize`; `None` where its filterbank or DCT refuses the settings.
    pub fn new(opts: &MfccOptions, bins: usize, rate: i32) -> Option<MfccPlan> {
        let (lower, upper) = (f64::from(opts.lower_frequency_limit), f64::from(opts.upper_frequency_limit));
        let fb = opts.filterbank_channel_count;
        let dct = opts.dct_coefficient_count;
        if fb < 1 || rate <= 0 || bins < 2 || lower < 0.0 || upper <= lower || dct < 1 || dct > fb {
            return None;
        }
        let (fb, dct) = (fb as usize, dct as usize);
        let mel_low = freq_to_mel(lower);
        let spacing = (freq_to_mel(upper) - mel_low) / (fb + 1) as f64;
        let centers: Vec<f64> = (0..=fb).map(|i| mel_low + spacing * (i + 1) as f64).collect();
        let hz_per_bin = 0.5 * f64::from(rate) / (bins - 1) as f64;
        // Truncating conversions, as C++'s `static_cast<int>` (saturating where it is not defined).
        let start = (1.5 + lower / hz_per_bin) as i64;
        let end = (upper / hz_per_bin) as i64;
        let used = |i: usize| (i as i64) >= start && (i as i64) <= end;
        let mut band = vec![-2i64; bins];
        let mut channel = 0usize;
        for (i, b) in band.iter_mut().enumerate() {
            if used(i) {
                let melf = freq_to_mel(i as f64 * hz_per_bin);
                while channel < fb && centers[channel] < melf {
                    channel += 1;
                }
                *b = channel as i64 - 1;
            }
        }
        let weights = (0..bins)
            .map(|i| {
                if !used(i) {
                    return 0.0;
                }
                let melf = freq_to_mel(i as f64 * hz_per_bin);
                match usize::try_from(band[i]) {
                    Ok(c) => (centers[c + 1] - melf) / (centers[c + 1] - centers[c]),
                    Err(_) => (centers[0] - melf) / (centers[0] - mel_low),
                }
            })
            .collect();
        let norm = (2.0 / fb as f64).sqrt();
        let arg = 4.0 * 1f64.atan() / fb as f64;
        let mut cosines = Vec::with_capacity(dct * fb);
        for i in 0..dct {
            for j in 0..fb {
                cosines.push(norm * (i as f64 * arg * (j as f64 + 0.5)).cos());
            }
        }
        Some(MfccPlan {
            key: (bins, rate),
            channels: fb,
            start: start.max(0) as usize,
            end: usize::try_from(end).ok().filter(|&e| e < bins),
            band,
            weights,
            cosines,
        })
    }

    /// The coefficients of one frame (`bins` squared magnitudes) into `out`; `mel` is
    /// scratch of `channels` values.
    pub fn frame(&self, input: &[f32], mel: &mut [f64], out: &mut [f32]) {
        let Some(end) = self.end else {
            // TFLite's filterbank gives no values; the DCT of nothing is all zeros.
            out.fill(0.0);
            return;
        };
        mel.fill(0.0);
        let used = self.start..end + 1;
        let bins = input.get(used.clone()).unwrap_or(&[]);
        let weights = self.weights.get(used.clone()).unwrap_or(&[]);
        let bands = self.band.get(used).unwrap_or(&[]);
        for ((&x, &w), &c) in bins.iter().zip(weights).zip(bands) {
            let spec = f64::from(x).sqrt();
            let weighted = spec * w;
            if c >= 0 {
                mel[c as usize] += weighted;
            }
            if c + 1 < self.channels as i64 {
                mel[(c + 1) as usize] += spec - weighted;
            }
        }
        for v in mel.iter_mut() {
            *v = v.max(FILTERBANK_FLOOR).ln();
        }
        for (o, row) in out.iter_mut().zip(self.cosines.chunks_exact(self.channels)) {
            let mut sum = 0.0f64;
            for (c, m) in row.iter().zip(mel.iter()) {
                sum += c * m;
            }
            *o = sum as f32;
        }
    }
}

/// `Mfcc` of `input` (`frames` rows of `bins` values) into `out` (`frames` rows of
/// `dct_coefficient_count`); `plan` is reused when it was built for the same width and rate.
pub fn mfcc(
    input: &[f32],
    bins: usize,
    rate: i32,
    opts: &MfccOptions,
    plan: &mut Option<MfccPlan>,
    out: &mut [f32],
) -> Result<()> {
    let dct = opts.dct_coefficient_count.max(0) as usize;
    let frames = input.len().checked_div(bins).unwrap_or(0);
    if frames * bins != input.len() || out.len() != frames * dct {
        crate::bail!("input holds {} values and the output {}, not {frames} frames", input.len(), out.len());
    }
    if out.is_empty() {
        return Ok(());
    }
    if plan.as_ref().is_none_or(|p| p.key != (bins, rate)) {
        *plan = MfccPlan::new(opts, bins, rate);
    }
    let Some(p) = plan.as_ref() else {
        crate::bail!(
            "the filterbank or DCT refuses {bins} spectrogram bins at sample rate {rate} with options {opts:?}"
        );
    };
    let mut mel = vec![0f64; p.channels];
    for (x, o) in input.chunks_exact(bins).zip(out.chunks_exact_mut(dct)) {
        p.frame(x, &mut mel, o);
    }
    Ok(())
}

struct Mfcc;

/// What Prepare keeps for an `Mfcc` node.
struct MfccState {
    opts: MfccOptions,
    plan: Option<MfccPlan>,
}

impl BuiltinKernel for Mfcc {
    const NAME: &'static str = OP;
    type Params = ();
    type State = MfccState;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<MfccState> {
        let opts = MfccOptions::parse(ctx.custom_initial_data()).map_err(in_op(OP))?;
        check_arity(ctx, OP, 2, 2, 1)?;
        let wav = ctx.input(0).map_err(in_op(OP))?;
        let rate = ctx.input(1).map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?;
        if wav.shape.len() != 3 || wav.shape.iter().any(|&d| d < 0) {
            return Err(op_error(OP, format!("spectrogram shape {:?} must have rank 3", wav.shape)));
        }
        if rate.num_elements() != 1 || rate.dtype != TfLiteType::kTfLiteInt32 {
            return Err(op_error(OP, "the sample rate must be one int32 value"));
        }
        if out.dtype != TfLiteType::kTfLiteFloat32 || wav.dtype != TfLiteType::kTfLiteFloat32 {
            return Err(op_error(OP, "the spectrogram and the output must be float32"));
        }
        ctx.resize_output(0, &[wav.shape[0], wav.shape[1], opts.dct_coefficient_count]).map_err(in_op(OP))?;
        Ok(MfccState { opts, plan: None })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), state: &mut MfccState) -> Result<()> {
        let wav = ctx.input(0).map_err(in_op(OP))?;
        let rate = ctx.input(1).map_err(in_op(OP))?.data::<i32>().map_err(in_op(OP))?;
        let rate = *rate.first().ok_or_else(|| op_error(OP, "the sample rate tensor is empty"))?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        let bins = wav.shape[2] as usize;
        let x = wav.data::<f32>().map_err(in_op(OP))?;
        mfcc(x, bins, rate, &state.opts, &mut state.plan, out.data_mut::<f32>()?).map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(upper: f32, lower: f32, fb: i32, dct: i32) -> MfccOptions {
        MfccOptions {
            upper_frequency_limit: upper,
            lower_frequency_limit: lower,
            filterbank_channel_count: fb,
            dct_coefficient_count: dct,
        }
    }

    #[test]
    fn mfcc_test_cc_values() {
        // 513 bins of 1.0 at 22050 Hz with TFLite's default settings; TFLite's answer.
        let o = opts(4000.0, 20.0, 40, 13);
        let input = vec![1f32; 513];
        let mut out = vec![0f32; 13];
        let mut plan = None;
        mfcc(&input, 513, 22050, &o, &mut plan, &mut out).unwrap();
        let want = [
            12.179158,
            -3.3329651,
            -0.015906803,
            -0.38394928,
            -0.015035715,
            -0.14665447,
            -0.014267743,
            -0.08065011,
            -0.013643702,
            -0.05547699,
            -0.013756781,
            -0.038550988,
            -0.013629115,
        ];
        for (a, b) in out.iter().zip(want) {
            assert!((a - b).abs() < 1e-5, "{out:?}");
        }
    }

    #[test]
    fn refused_settings() {
        let mut out = vec![0f32; 2];
        let mut plan = None;
        // More coefficients than channels: an error when there is anything to write.
        assert!(mfcc(&[1.0; 4], 4, 100, &opts(40.0, 0.0, 1, 2), &mut plan, &mut out).is_err());
        assert!(mfcc(&[], 4, 100, &opts(40.0, 0.0, 1, 2), &mut plan, &mut []).is_ok());
        // An upper limit past the last bin: zeros.
        let mut out = vec![7f32; 1];
        mfcc(&[1.0; 4], 4, 100, &opts(70.0, 0.0, 2, 1), &mut plan, &mut out).unwrap();
        assert_eq!(out, [0.0]);
        assert!(MfccOptions::parse(&[]).is_err());
    }
}
