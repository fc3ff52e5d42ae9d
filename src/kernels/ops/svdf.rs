//! SVDF (TFLite `kernels/svdf.cc`, `internal/reference/svdf.h`): a fully connected layer
//! factorised into a feature filter and a time filter over a memory of past activations.
//!
//! Inputs: 0 input `[batch, input_size]`, 1 weights_feature `[num_filters, input_size]`,
//! 2 weights_time `[num_filters, memory_size]`, 3 optional bias `[num_units]`, 4 the state
//! `[batch, memory_size * num_filters]`, a variable tensor kept across invokes. Output
//! `[batch, num_units]` with `num_units = num_filters / rank`.
//!
//! Each invoke shifts the whole state left by one element, writes the feature filter's
//! answer for this step into the last memory slot of every filter, takes each filter's
//! dot product with its time weights, sums `rank` consecutive filters per unit, adds the
//! bias and applies the activation.
//!
//! Types, as TFLite: float32; hybrid (float32 input, state, bias and output, int8 weights
//! with per-tensor scales, the input quantized per batch row, symmetrically or with
//! `asymmetric_quantize_inputs`); full integer (int8 input and output, int8
//! weights_feature, int16 weights_time and state, int32 bias; ReLU only, which is checked
//! at Invoke and otherwise only clamps to int8). TFLite reads uint8 weights as int8, and so
//! does this kernel.

use std::borrow::Cow;

use super::lstm::{Quantized, is_zero, matmul_acc_f32, matmul_acc_i8, row_sums};
use crate::abi::builtin_op_data::{TfLiteFusedActivation, TfLiteSVDFParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::activation::apply_f32;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{multiply_by_quantized_multiplier, try_quantize_multiplier};
use crate::kernels::shape_util::op_error;

const NAME: &str = "SVDF";

/// The SVDF registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Svdf>(TfLiteBuiltinOperator::kTfLiteBuiltinSvdf)
}

/// The sizes every path shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    pub batch: usize,
    pub input_size: usize,
    pub num_filters: usize,
    pub rank: usize,
    pub memory: usize,
}

impl Dims {
    fn units(&self) -> usize {
        self.num_filters / self.rank
    }
}

/// Which computation the tensor types select.
enum Kind {
    Float,
    /// Float activations, int8 weights; `row_sums` of weights_feature (asymmetric inputs,
    /// computed at the first Invoke as TFLite does) and the dequantized time weights
    /// (also computed once).
    Hybrid {
        xq: Quantized,
        row_sums: Option<Vec<i32>>,
        weights_time: Option<Vec<f32>>,
    },
    /// Full integer with the two requantization multipliers and the zero points.
    Integer {
        scale_1: (i32, i32),
        scale_2: (i32, i32),
        input_zp: i32,
        output_zp: i32,
        output_temp: Vec<i32>,
    },
}

/// What Prepare works out.
struct Plan {
    d: Dims,
    kind: Kind,
    scratch_f32: Vec<f32>,
    scratch_i32: Vec<i32>,
}

struct Svdf;

impl BuiltinKernel for Svdf {
    const NAME: &'static str = NAME;
    type Params = TfLiteSVDFParams;
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteSVDFParams) -> Result<Plan> {
        prepare(ctx, p).map_err(|e| op_error(NAME, e.message))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteSVDFParams, plan: &mut Plan) -> Result<()> {
        eval(ctx, p, plan).map_err(|e| op_error(NAME, e.message))
    }
}

fn dim(t: &TensorView<'_>, i: usize) -> usize {
    t.shape.get(i).map_or(0, |&v| v.max(0) as usize)
}

fn require_rank(t: &TensorView<'_>, rank: usize, what: &str) -> Result<()> {
    if t.shape.len() != rank {
        return Err(Error::new(format!("{what} must have rank {rank}, not shape {:?}", t.shape)));
    }
    Ok(())
}

fn require_type(t: &TensorView<'_>, allowed: &[TfLiteType], what: &str) -> Result<()> {
    if !allowed.contains(&t.dtype) {
        return Err(Error::new(format!(
            "{what} has type {}, which this configuration does not accept",
            t.dtype.name()
        )));
    }
    Ok(())
}

/// The first scale and zero point of a tensor's affine quantization (TFLite requires it
/// for every tensor of the full-integer path).
fn affine(t: &TensorView<'_>, what: &str) -> Result<(f32, i32)> {
    match t.affine_quant() {
        Some((scales, zps, _)) if !scales.is_empty() => Ok((scales[0], zps.first().copied().unwrap_or(0))),
        _ => Err(Error::new(format!("{what} must be quantized"))),
    }
}

fn prepare(ctx: &OpCtx<'_>, p: &TfLiteSVDFParams) -> Result<Plan> {
    if ctx.num_inputs() != 5 || ctx.num_outputs() != 1 {
        return Err(Error::new(format!(
            "expects 5 inputs and 1 output, got {} and {}",
            ctx.num_inputs(),
            ctx.num_outputs()
        )));
    }
    let input = ctx.input(0)?;
    let wf = ctx.input(1)?;
    let wt = ctx.input(2)?;
    let bias = ctx.optional_input(3)?;
    let state = ctx.variable_input(4)?;
    let output = ctx.output(0)?;
    require_type(&input, &[TfLiteType::kTfLiteFloat32, TfLiteType::kTfLiteInt8], "the input")?;
    require_rank(&input, 2, "the input")?;
    require_rank(&wf, 2, "weights_feature")?;
    require_rank(&wt, 2, "weights_time")?;
    if p.rank <= 0 {
        return Err(Error::new(format!("rank must be positive, not {}", p.rank)));
    }
    let d = Dims {
        batch: dim(&input, 0),
        input_size: dim(&input, 1),
        num_filters: dim(&wf, 0),
        rank: p.rank as usize,
        memory: dim(&wt, 1),
    };
    if !d.num_filters.is_multiple_of(d.rank) {
        return Err(Error::new(format!("{} filters are not a multiple of rank {}", d.num_filters, d.rank)));
    }
    if dim(&wf, 1) != d.input_size || dim(&wt, 0) != d.num_filters {
        return Err(Error::new(format!(
            "weights_feature {:?} and weights_time {:?} do not fit input {:?}",
            wf.shape, wt.shape, input.shape
        )));
    }
    if d.memory == 0 {
        return Err(Error::new("weights_time has no memory (its second dimension is 0)"));
    }
    if let Some(b) = &bias
        && b.shape != [d.units() as i32]
    {
        return Err(Error::new(format!("the bias must be [{}], not {:?}", d.units(), b.shape)));
    }
    let state_len = d
        .memory
        .checked_mul(d.num_filters)
        .filter(|&n| i32::try_from(n).is_ok())
        .ok_or_else(|| Error::new("the state is too large"))?;
    if state.shape != [d.batch as i32, state_len as i32] {
        return Err(Error::new(format!("the state must be [{}, {state_len}], not {:?}", d.batch, state.shape)));
    }
    let out_shape = [d.batch as i32, d.units() as i32];
    let bf = d.batch * d.num_filters;
    let weight_types = [TfLiteType::kTfLiteInt8, TfLiteType::kTfLiteUInt8];
    let kind = match (input.dtype, wf.dtype) {
        (TfLiteType::kTfLiteFloat32, TfLiteType::kTfLiteFloat32) => {
            require_type(&wt, &[TfLiteType::kTfLiteFloat32], "weights_time")?;
            check_float_tensors(&bias, &state, &output)?;
            Kind::Float
        }
        (TfLiteType::kTfLiteFloat32, TfLiteType::kTfLiteInt8 | TfLiteType::kTfLiteUInt8) => {
            require_type(&wt, &weight_types, "weights_time")?;
            check_float_tensors(&bias, &state, &output)?;
            Kind::Hybrid { xq: Quantized::new(d.batch, d.input_size), row_sums: None, weights_time: None }
        }
        (TfLiteType::kTfLiteInt8, TfLiteType::kTfLiteInt8 | TfLiteType::kTfLiteUInt8) => {
            require_type(&wt, &[TfLiteType::kTfLiteInt16], "weights_time")?;
            require_type(&state, &[TfLiteType::kTfLiteInt16], "the state")?;
            require_type(&output, &[TfLiteType::kTfLiteInt8], "the output")?;
            if let Some(b) = &bias {
                require_type(b, &[TfLiteType::kTfLiteInt32], "the bias")?;
            }
            let (input_scale, input_zp) = affine(&input, "the input")?;
            let (wf_scale, _) = affine(&wf, "weights_feature")?;
            let (state_scale, _) = affine(&state, "the state")?;
            let (wt_scale, _) = affine(&wt, "weights_time")?;
            let (output_scale, output_zp) = affine(&output, "the output")?;
            // TFLite forms both products in float before widening them to double.
            let s1 = input_scale * wf_scale / state_scale;
            let s2 = state_scale * wt_scale / output_scale;
            Kind::Integer {
                scale_1: try_quantize_multiplier(f64::from(s1))?,
                scale_2: try_quantize_multiplier(f64::from(s2))?,
                input_zp,
                output_zp,
                output_temp: vec![0; d.batch * d.units()],
            }
        }
        (i, w) => {
            return Err(Error::new(format!(
                "an input of type {} with weights_feature of type {} is not supported",
                i.name(),
                w.name()
            )));
        }
    };
    ctx.resize_output(0, &out_shape)?;
    let (scratch_f32, scratch_i32) = match kind {
        Kind::Integer { .. } => (Vec::new(), vec![0; bf]),
        _ => (vec![0.0; bf], Vec::new()),
    };
    Ok(Plan { d, kind, scratch_f32, scratch_i32 })
}

fn check_float_tensors(bias: &Option<TensorView<'_>>, state: &TensorView<'_>, output: &TensorView<'_>) -> Result<()> {
    if let Some(b) = bias {
        require_type(b, &[TfLiteType::kTfLiteFloat32], "the bias")?;
    }
    require_type(state, &[TfLiteType::kTfLiteFloat32], "the state")?;
    require_type(output, &[TfLiteType::kTfLiteFloat32], "the output")
}

/// int8 data of an int8 or uint8 tensor (TFLite reads uint8 weights as int8; those are
/// copied, as a safe reinterpretation).
fn as_i8<'a>(t: &TensorView<'a>) -> Result<Cow<'a, [i8]>> {
    match t.dtype {
        TfLiteType::kTfLiteUInt8 => Ok(Cow::Owned(t.data::<u8>()?.iter().map(|&v| v as i8).collect())),
        _ => Ok(Cow::Borrowed(t.data::<i8>()?)),
    }
}

fn eval(ctx: &OpCtx<'_>, p: &TfLiteSVDFParams, plan: &mut Plan) -> Result<()> {
    let d = plan.d;
    let input = ctx.input(0)?;
    let wf = ctx.input(1)?;
    let wt = ctx.input(2)?;
    let bias = ctx.optional_input(3)?;
    let mut state = ctx.variable_input(4)?;
    let mut output = ctx.output(0)?;
    match &mut plan.kind {
        Kind::Float => {
            let bias = bias.as_ref().map(|b| b.data::<f32>()).transpose()?;
            float_step(
                d,
                wf.data::<f32>()?,
                wt.data::<f32>()?,
                bias,
                p.activation,
                input.data::<f32>()?,
                state.data_mut::<f32>()?,
                &mut plan.scratch_f32,
                output.data_mut::<f32>()?,
            );
        }
        Kind::Hybrid { xq, row_sums: sums, weights_time } => {
            let wf_data = as_i8(&wf)?;
            let wf_data = &*wf_data;
            if weights_time.is_none() {
                let scale = wt.quant().scale;
                *weights_time = Some(as_i8(&wt)?.iter().map(|&v| f32::from(v) * scale).collect());
            }
            if p.asymmetric_quantize_inputs && sums.is_none() {
                *sums = Some(row_sums(wf_data, d.num_filters, d.input_size));
            }
            let bias = bias.as_ref().map(|b| b.data::<f32>()).transpose()?;
            let weights = HybridWeights {
                feature: wf_data,
                feature_scale: wf.quant().scale,
                time: weights_time.as_deref().unwrap_or_default(),
                row_sums: if p.asymmetric_quantize_inputs { sums.as_deref() } else { None },
            };
            hybrid_step(
                d,
                &weights,
                bias,
                p.activation,
                input.data::<f32>()?,
                xq,
                state.data_mut::<f32>()?,
                &mut plan.scratch_f32,
                output.data_mut::<f32>()?,
            );
        }
        Kind::Integer { scale_1, scale_2, input_zp, output_zp, output_temp } => {
            if p.activation != TfLiteFusedActivation::kTfLiteActRelu {
                return Err(Error::new("the full-integer kernel supports only the RELU activation"));
            }
            let bias = bias.as_ref().map(|b| b.data::<i32>()).transpose()?;
            let q = IntegerQuant { scale_1: *scale_1, scale_2: *scale_2, input_zp: *input_zp, output_zp: *output_zp };
            integer_step(
                d,
                &as_i8(&wf)?,
                wt.data::<i16>()?,
                bias,
                &q,
                input.data::<i8>()?,
                state.data_mut::<i16>()?,
                &mut plan.scratch_i32,
                output_temp,
                output.data_mut::<i8>()?,
            );
        }
    }
    Ok(())
}

/// Writes `scratch[b * F + f]` into the last memory slot of filter `f` of batch `b`.
fn store_activations<T: Copy>(state: &mut [T], scratch: &[T], memory: usize) {
    for (i, &v) in scratch.iter().enumerate() {
        state[i * memory + memory - 1] = v;
    }
}

/// The time filter, the rank reduction, the bias and the activation
/// (`ApplyTimeWeightsBiasAndActivation`).
fn apply_time_weights(
    d: Dims,
    weights_time: &[f32],
    bias: Option<&[f32]>,
    act: TfLiteFusedActivation,
    state: &[f32],
    scratch: &mut [f32],
    output: &mut [f32],
) {
    let m = d.memory;
    for (i, s) in scratch.iter_mut().enumerate() {
        let f = i % d.num_filters;
        let (w, st) = (&weights_time[f * m..(f + 1) * m], &state[i * m..(i + 1) * m]);
        let mut dot = 0.0f32;
        for (a, b) in w.iter().zip(st) {
            dot += a * b;
        }
        *s = dot;
    }
    let units = d.units();
    for (i, o) in output.iter_mut().enumerate() {
        let mut sum = 0.0f32;
        for v in &scratch[i * d.rank..(i + 1) * d.rank] {
            sum += v;
        }
        *o = sum;
    }
    if let Some(bias) = bias {
        for row in output.chunks_exact_mut(units.max(1)) {
            for (o, b) in row.iter_mut().zip(bias) {
                *o += b;
            }
        }
    }
    for o in output.iter_mut() {
        *o = apply_f32(*o, act);
    }
}

/// One float step.
#[allow(clippy::too_many_arguments, reason = "mirrors TFLite's EvalFloatSVDF")]
pub fn float_step(
    d: Dims,
    weights_feature: &[f32],
    weights_time: &[f32],
    bias: Option<&[f32]>,
    act: TfLiteFusedActivation,
    input: &[f32],
    state: &mut [f32],
    scratch: &mut [f32],
    output: &mut [f32],
) {
    if !state.is_empty() {
        state.copy_within(1.., 0);
    }
    scratch.fill(0.0);
    matmul_acc_f32(weights_feature, d.num_filters, d.input_size, input, d.batch, scratch);
    store_activations(state, scratch, d.memory);
    apply_time_weights(d, weights_time, bias, act, state, scratch, output);
}

/// The int8 weights of the hybrid path, with the time weights already dequantized.
pub struct HybridWeights<'a> {
    pub feature: &'a [i8],
    pub feature_scale: f32,
    pub time: &'a [f32],
    /// Row sums of `feature` when the input is quantized asymmetrically.
    pub row_sums: Option<&'a [i32]>,
}

/// One hybrid step: the input quantized per batch row, the feature filter in int8.
#[allow(clippy::too_many_arguments, reason = "mirrors TFLite's EvalHybridSVDF")]
pub(crate) fn hybrid_step(
    d: Dims,
    w: &HybridWeights<'_>,
    bias: Option<&[f32]>,
    act: TfLiteFusedActivation,
    input: &[f32],
    xq: &mut Quantized,
    state: &mut [f32],
    scratch: &mut [f32],
    output: &mut [f32],
) {
    if !state.is_empty() {
        state.copy_within(1.., 0);
    }
    scratch.fill(0.0);
    if !is_zero(input) {
        xq.quantize(input, d.batch, d.input_size, w.row_sums.is_some());
        matmul_acc_i8(w.feature, w.feature_scale, d.num_filters, d.input_size, xq, w.row_sums, d.batch, scratch);
    }
    store_activations(state, scratch, d.memory);
    apply_time_weights(d, w.time, bias, act, state, scratch, output);
}

/// The full-integer path's requantization: `(multiplier, shift)` from input and feature
/// weights to the state, from state and time weights to the output, and zero points.
pub struct IntegerQuant {
    pub scale_1: (i32, i32),
    pub scale_2: (i32, i32),
    pub input_zp: i32,
    pub output_zp: i32,
}

/// One full-integer step (`EvalIntegerSVDF`).
#[allow(clippy::too_many_arguments, reason = "mirrors TFLite's EvalIntegerSVDF")]
pub fn integer_step(
    d: Dims,
    weights_feature: &[i8],
    weights_time: &[i16],
    bias: Option<&[i32]>,
    q: &IntegerQuant,
    input: &[i8],
    state: &mut [i16],
    scratch: &mut [i32],
    output_temp: &mut [i32],
    output: &mut [i8],
) {
    let (m, n_in) = (d.memory, d.input_size);
    if !state.is_empty() {
        state.copy_within(1.., 0);
    }
    for b in 0..d.batch {
        let x = &input[b * n_in..(b + 1) * n_in];
        for f in 0..d.num_filters {
            let row = &weights_feature[f * n_in..(f + 1) * n_in];
            let mut dot = 0i32;
            for (&w, &v) in row.iter().zip(x) {
                dot = dot.wrapping_add(i32::from(w).wrapping_mul(i32::from(v).wrapping_sub(q.input_zp)));
            }
            let v = multiply_by_quantized_multiplier(dot, q.scale_1.0, q.scale_1.1);
            state[(b * d.num_filters + f) * m + m - 1] = v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16;
        }
    }
    for (i, s) in scratch.iter_mut().enumerate() {
        let f = i % d.num_filters;
        let (w, st) = (&weights_time[f * m..(f + 1) * m], &state[i * m..(i + 1) * m]);
        *s = w.iter().zip(st).fold(0i32, |acc, (&a, &b)| acc.wrapping_add(i32::from(a) * i32::from(b)));
    }
    for (i, o) in output_temp.iter_mut().enumerate() {
        *o = scratch[i * d.rank..(i + 1) * d.rank].iter().fold(0i32, |acc, &v| acc.wrapping_add(v));
    }
    if let Some(bias) = bias {
        for row in output_temp.chunks_exact_mut(d.units().max(1)) {
            for (o, &b) in row.iter_mut().zip(bias) {
                *o = o.wrapping_add(b);
            }
        }
    }
    for (o, &x) in output.iter_mut().zip(output_temp.iter()) {
        let v = multiply_by_quantized_multiplier(x, q.scale_2.0, q.scale_2.1).wrapping_add(q.output_zp);
        *o = v.clamp(-128, 127) as i8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::builtin_op_data::TfLiteFusedActivation::{kTfLiteActNone, kTfLiteActRelu};

    fn dims(batch: usize, input_size: usize, num_filters: usize, rank: usize, memory: usize) -> Dims {
        Dims { batch, input_size, num_filters, rank, memory }
    }

    #[test]
    fn float_two_steps_remember_the_first() {
        // One filter, memory 2: the output is wt[0] * a(t-1) + wt[1] * a(t).
        let d = dims(1, 2, 1, 1, 2);
        let (wf, wt) = ([1.0f32, 2.0], [10.0f32, 1.0]);
        let mut state = [0.0f32; 2];
        let (mut scratch, mut out) = ([0.0f32; 1], [0.0f32; 1]);
        float_step(d, &wf, &wt, Some(&[0.5]), kTfLiteActNone, &[1.0, 1.0], &mut state, &mut scratch, &mut out);
        assert_eq!(state, [0.0, 3.0]);
        assert_eq!(out, [3.5]);
        float_step(d, &wf, &wt, Some(&[0.5]), kTfLiteActNone, &[2.0, 0.0], &mut state, &mut scratch, &mut out);
        assert_eq!(state, [3.0, 2.0]);
        assert_eq!(out, [32.5]);
    }

    #[test]
    fn float_rank_sums_filters_and_relu_clamps() {
        // Two filters of rank 2 make one unit; memory 1.
        let d = dims(2, 1, 2, 2, 1);
        let (wf, wt) = ([1.0f32, -3.0], [1.0f32, 1.0]);
        let mut state = [0.0f32; 4];
        let (mut scratch, mut out) = ([0.0f32; 4], [0.0f32; 2]);
        float_step(d, &wf, &wt, None, kTfLiteActRelu, &[1.0, -1.0], &mut state, &mut scratch, &mut out);
        assert_eq!(state, [1.0, -3.0, -1.0, 3.0]);
        assert_eq!(out, [0.0, 2.0]);
    }

    #[test]
    fn hybrid_matches_float_on_exact_values() {
        let d = dims(1, 2, 2, 1, 2);
        let wf = [127i8, -127, 64, 0];
        let wt = [1.0f32, 0.5, -1.0, 2.0];
        let w = HybridWeights { feature: &wf, feature_scale: 1.0 / 127.0, time: &wt, row_sums: None };
        let mut xq = Quantized::new(1, 2);
        let mut state = [0.0f32; 4];
        let (mut scratch, mut out) = ([0.0f32; 2], [0.0f32; 2]);
        hybrid_step(d, &w, None, kTfLiteActNone, &[1.0, 0.0], &mut xq, &mut state, &mut scratch, &mut out);
        // Filter 0: 127/127 * 1 = 1; filter 1: 64/127.
        assert!((state[1] - 1.0).abs() < 1e-6 && (state[3] - 64.0 / 127.0).abs() < 1e-6);
        assert!((out[0] - 0.5).abs() < 1e-6 && (out[1] - 2.0 * 64.0 / 127.0).abs() < 1e-6);
        // A zero input writes zeros into the new slot and skips quantization.
        hybrid_step(d, &w, None, kTfLiteActNone, &[0.0, 0.0], &mut xq, &mut state, &mut scratch, &mut out);
        assert_eq!(state[1], 0.0);
        assert!((out[0] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn integer_step_requantizes_and_clamps() {
        let d = dims(1, 2, 1, 1, 2);
        // Multipliers of 1/2 and 1: (2^30, 0) and (2^30, 1).
        let q = IntegerQuant { scale_1: (1 << 30, 0), scale_2: (1 << 30, 1), input_zp: 1, output_zp: -3 };
        let mut state = [5i16, 7];
        let (mut scratch, mut temp, mut out) = ([0i32; 1], [0i32; 1], [0i8; 1]);
        integer_step(d, &[2, 4], &[3, 1], Some(&[10]), &q, &[3, 1], &mut state, &mut scratch, &mut temp, &mut out);
        // dot = 2 * 2 + 4 * 0 = 4 -> 2; state [7, 2]; 3 * 7 + 2 = 23 + 10 = 33; 33 - 3 = 30.
        assert_eq!(state, [7, 2]);
        assert_eq!(out, [30]);
        integer_step(
            d,
            &[127, 127],
            &[3, 1],
            Some(&[1000]),
            &q,
            &[127, 127],
            &mut state,
            &mut scratch,
            &mut temp,
            &mut out,
        );
        assert_eq!(out, [127]);
    }
}
