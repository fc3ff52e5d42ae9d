//! The full-integer UNIDIRECTIONAL_SEQUENCE_LSTM (TFLite's 8x8_16 kernel:
//! `PopulateQuantizedLstmParams8x8_16`, `PopulatePrecomputedZPTimesWeightsWithBias` and
//! `lstm_eval.cc`'s `LstmStepInteger8x8_16` with the portable `tensor_utils`), bit-exact.
//!
//! int8 input, weights and output state, int16 cell state (a power-of-two scale), int32
//! biases, int16 peepholes. Gates are int16 in Q3.12 before their activation and Q0.15
//! after it: each gate accumulates `bias + W·x` and `R·h` (zero points folded into the
//! biases), each rescaled by its effective multiplier; sigmoid and tanh are gemmlowp's
//! int16 fixed-point ones. The non-layer-norm gate scale is 2^-12 (TFLite's default);
//! the fifth intermediate tensor gives the hidden (pre-projection) scale and zero point.

use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::quant::{
    checked_log2, multiply_by_quantized_multiplier as mbqm, quantize_multiplier, rounding_divide_by_pot,
};
use crate::kernels::shape_util::op_error;

use super::lstm::{Dims, Params};

const OP: &str = "UNIDIRECTIONAL_SEQUENCE_LSTM";

/// One gate's effective multipliers and biases.
#[derive(Clone, Debug, Default)]
struct GateParams {
    input_scale: (i32, i32),
    recurrent_scale: (i32, i32),
    cell_scale: (i32, i32),
    input_bias: Vec<i32>,
    recurrent_bias: Vec<i32>,
}

/// TFLite's `IntegerLstmParameter` (the parts the 8x8_16 step uses).
#[derive(Clone, Debug)]
pub struct IntegerParams {
    gates: [GateParams; 4],
    hidden_scale: (i32, i32),
    hidden_zp: i32,
    proj_scale: (i32, i32),
    proj_bias: Vec<i32>,
    cell_scale: i32,
    quantized_cell_clip: i16,
    quantized_proj_clip: i8,
    output_state_zp: i32,
}

fn qm(x: f64) -> (i32, i32) {
    quantize_multiplier(x)
}

fn scale(t: &TensorView<'_>) -> f32 {
    t.quant().scale
}

/// `PrecomputeZeroPointTimesWeightWithBias`: `bias + zero_point * row_sum(weights)`.
fn zp_times_weights_with_bias(
    zero_point: i32,
    weights: &TensorView<'_>,
    bias: Option<&TensorView<'_>>,
) -> Result<Vec<i32>> {
    let rows = weights.shape.first().copied().unwrap_or(0).max(0) as usize;
    let cols = weights.shape.get(1).copied().unwrap_or(0).max(0) as usize;
    let w = weights.data::<i8>()?;
    let mut out = match bias {
        Some(b) => b.data::<i32>()?.to_vec(),
        None => vec![0; rows],
    };
    if out.len() != rows || w.len() != rows * cols {
        return Err(Error::new("weights and bias sizes do not match"));
    }
    if zero_point != 0 {
        for r in 0..rows {
            let sum: i32 = w[r * cols..(r + 1) * cols].iter().map(|&v| i32::from(v)).sum();
            out[r] = out[r].wrapping_add(sum.wrapping_mul(zero_point));
        }
    }
    Ok(out)
}

impl IntegerParams {
    /// Computes the parameters from the node's tensors (checked by the caller).
    pub fn new(ctx: &OpCtx<'_>, p: &Params, _d: Dims) -> Result<IntegerParams> {
        let input = ctx.input(0)?;
        let cell_state = ctx.variable_input(19)?;
        let output_state = ctx.variable_input(18)?;
        let output = ctx.output(0)?;
        let opt = |i: usize| ctx.optional_input(i);
        let cifg = opt(1)?.is_none();

        let cell_scale = checked_log2(scale(&cell_state))
            .ok_or_else(|| op_error(OP, "the cell state scale must be a power of two"))?;
        let quantized_cell_clip =
            if p.cell_clip > 0.0 { (p.cell_clip / scale(&cell_state)).clamp(-32768.0, 32767.0) as i16 } else { 0 };
        let quantized_proj_clip =
            if p.proj_clip > 0.0 { (p.proj_clip / scale(&output)).clamp(-128.0, 127.0) as i8 } else { 0 };

        // Without layer norm every gate is in Q3.12: scale 2^-12, zero point 0.
        let gate_scale = (2.0f64).powi(-12) as f32;
        let hidden = ctx.intermediate(4)?;
        let hidden_scale_f = scale(&hidden);
        let hidden_zp = hidden.quant().zero_point;
        let input_scale = scale(&input);
        let output_state_scale = scale(&output_state);
        let output_state_zp = output_state.quant().zero_point;

        let mut gates: [GateParams; 4] = Default::default();
        for (g, gp) in gates.iter_mut().enumerate() {
            if g == 0 && cifg {
                continue;
            }
            let w_in = ctx.input(1 + g)?;
            let w_rec = ctx.input(5 + g)?;
            let eff_in = scale(&w_in) * input_scale / gate_scale;
            let eff_rec = scale(&w_rec) * output_state_scale / gate_scale;
            gp.input_scale = qm(f64::from(eff_in));
            gp.recurrent_scale = qm(f64::from(eff_rec));
            gp.cell_scale = qm(1.0);
            let bias = ctx.input(12 + g)?;
            gp.input_bias = zp_times_weights_with_bias(-input.quant().zero_point, &w_in, Some(&bias))?;
            gp.recurrent_bias = zp_times_weights_with_bias(-output_state_zp, &w_rec, None)?;
        }
        // Peepholes (input, forget, output gates: tensors 9, 10, 11).
        for (g, t) in [(0usize, 9usize), (1, 10), (3, 11)] {
            if g == 0 && cifg {
                continue;
            }
            if let Some(pw) = opt(t)? {
                let eff = (2.0f64).powi(cell_scale) * f64::from(scale(&pw)) / f64::from(gate_scale);
                gates[g].cell_scale = qm(f64::from(eff as f32));
            }
        }
        let eff_hidden = ((2.0f64).powi(-15) / f64::from(hidden_scale_f) * (2.0f64).powi(-15)) as f32;
        let hidden_scale = qm(f64::from(eff_hidden));
        let (proj_scale, proj_bias) = match opt(16)? {
            Some(pw) => {
                let eff = scale(&pw) * hidden_scale_f / output_state_scale;
                (qm(f64::from(eff)), zp_times_weights_with_bias(hidden_zp, &pw, opt(17)?.as_ref())?)
            }
            None => (qm(1.0), Vec::new()),
        };
        if !(0..=6).contains(&(15 + cell_scale)) {
            return Err(op_error(OP, format!("cell state scale 2^{cell_scale} is out of the supported range")));
        }
        Ok(IntegerParams {
            gates,
            hidden_scale,
            hidden_zp,
            proj_scale,
            proj_bias,
            cell_scale,
            quantized_cell_clip,
            quantized_proj_clip,
            output_state_zp,
        })
    }
}

// ---------------------------------------------------------------------------------------
// gemmlowp fixed point on int16 (fixedpoint.h instantiated for std::int16_t)
// ---------------------------------------------------------------------------------------

mod fx16 {
    /// `SaturatingRoundingDoublingHighMul<int16_t>`.
    pub fn mul(a: i16, b: i16) -> i16 {
        if a == b && a == i16::MIN {
            return i16::MAX;
        }
        let ab = i32::from(a) * i32::from(b);
        let nudge: i32 = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
        ((ab + nudge) / (1 << 15)) as i16
    }

    /// `RoundingDivideByPOT<int16_t>`.
    pub fn rdivpot(x: i16, exponent: i32) -> i16 {
        crate::kernels::quant::rounding_divide_by_pot_i16(x, exponent)
    }

    /// `SaturatingRoundingMultiplyByPOT<exponent>` on int16.
    pub fn srmulpot(x: i16, exponent: i32) -> i16 {
        if exponent > 0 {
            let threshold = (1i32 << (15 - exponent)) - 1;
            let xi = i32::from(x);
            if xi > threshold {
                i16::MAX
            } else if xi < -threshold {
                i16::MIN
            } else {
                (xi * (1 << exponent)) as i16
            }
        } else if exponent < 0 {
            rdivpot(x, -exponent)
        } else {
            x
        }
    }

    /// `Rescale<dst>` from `src` integer bits.
    pub fn rescale(x: i16, src: i32, dst: i32) -> i16 {
        srmulpot(x, src - dst)
    }

    /// A 32-bit constant as the int16 constant (`RescaleConstantInitializer`).
    pub fn constant(v: i32) -> i16 {
        crate::kernels::quant::rounding_divide_by_pot(v, 16) as i16
    }

    /// `FixedPoint::One()` with `int_bits` integer bits.
    pub fn one(int_bits: i32) -> i16 {
        if int_bits == 0 { i16::MAX } else { 1 << (15 - int_bits) }
    }

    /// `RoundingHalfSum<int16_t>`.
    pub fn rounding_half_sum(a: i16, b: i16) -> i16 {
        let sum = i32::from(a) + i32::from(b);
        let sign = if sum >= 0 { 1 } else { -1 };
        ((sum + sign) / 2) as i16
    }

    /// `SaturatingAdd<int16_t>`.
    pub fn sat_add(a: i16, b: i16) -> i16 {
        (i32::from(a) + i32::from(b)).clamp(-32768, 32767) as i16
    }

    fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i16) -> i16 {
        let constant_term = constant(1895147668);
        let constant_1_over_3 = constant(715827883);
        let x = a.wrapping_add(1 << 12); // + 1/8 (ConstantPOT<-3> in Q0.15)
        let x2 = mul(x, x);
        let x3 = mul(x2, x);
        let x4 = mul(x2, x2);
        let x4_over_4 = srmulpot(x4, -2);
        let t = srmulpot(mul(x4_over_4.wrapping_add(x3), constant_1_over_3).wrapping_add(x2), -1);
        sat_add(constant_term, mul(constant_term, x.wrapping_add(t)))
    }

    /// `exp_on_negative_values` for an input with `int_bits` integer bits (result Q0.15).
    pub fn exp_on_negative_values(a: i16, int_bits: i32) -> i16 {
        let frac = 15 - int_bits;
        let one_quarter: i16 = 1 << (frac - 2);
        let mask = one_quarter.wrapping_sub(1);
        let a_mod_quarter_minus_one_quarter = (a & mask).wrapping_sub(one_quarter);
        let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(rescale(
            a_mod_quarter_minus_one_quarter,
            int_bits,
            0,
        ));
        let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
        for (exponent, multiplier) in
            [(-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308), (2, 39332535), (3, 720401), (4, 242)]
        {
            if int_bits > exponent {
                let shift = frac + exponent;
                let bit = (1i32 << shift) as i16;
                if remainder & bit != 0 {
                    result = mul(result, constant(multiplier));
                }
            }
        }
        if int_bits > 5 {
            let clamp_b = 36 - int_bits;
            let clamp = constant(-(1i32 << clamp_b));
            if a < clamp {
                result = 0;
            }
        }
        if a == 0 { one(0) } else { result }
    }

    fn newton_reciprocal_x2(half_denominator: i16) -> i16 {
        // F2 values: 48/17 and -32/17.
        let c48 = constant(1515870810);
        let cneg32 = constant(-1010580540);
        let mut x = c48.wrapping_add(mul(half_denominator, cneg32));
        for _ in 0..3 {
            let hdx = mul(half_denominator, x);
            let one_minus = one(2).wrapping_sub(hdx);
            x = x.wrapping_add(rescale(mul(x, one_minus), 4, 2));
        }
        x
    }

    /// `one_over_one_plus_x_for_x_in_0_1` (Q0.15 in and out).
    pub fn one_over_one_plus_x(a: i16) -> i16 {
        let x = newton_reciprocal_x2(rounding_half_sum(a, one(0)));
        rescale(x, 1, 0) // ExactMulByPot<-1> then Rescale<0>
    }

    /// `one_minus_x_over_one_plus_x_for_x_in_0_1`.
    pub fn one_minus_x_over_one_plus_x(a: i16) -> i16 {
        let x = newton_reciprocal_x2(rounding_half_sum(a, one(0)));
        rescale(x.wrapping_sub(one(2)), 2, 0)
    }

    /// `gemmlowp::logistic` of a value with `int_bits` integer bits (result Q0.15).
    pub fn logistic(a: i16, int_bits: i32) -> i16 {
        let positive = a > 0;
        let abs_input = if positive { a } else { a.wrapping_neg() };
        let result_if_positive = one_over_one_plus_x(exp_on_negative_values(abs_input.wrapping_neg(), int_bits));
        let result_if_negative = one(0).wrapping_sub(result_if_positive);
        if a == 0 {
            constant(1 << 30)
        } else if positive {
            result_if_positive
        } else {
            result_if_negative
        }
    }

    /// `gemmlowp::tanh` of a value with `int_bits` integer bits (result Q0.15).
    pub fn tanh(a: i16, int_bits: i32) -> i16 {
        let negative = a < 0;
        let n = if negative { a } else { a.wrapping_neg() };
        // neg_tanh_on_negative_values: ExactMulByPot<1> adds an integer bit.
        let t = one_minus_x_over_one_plus_x(exp_on_negative_values(n, int_bits + 1));
        if a == 0 {
            0
        } else if negative {
            t.wrapping_neg()
        } else {
            t
        }
    }
}

/// The int16 activations as 64K-entry tables, built from the exact functions on first
/// use: logistic of Q3.12 (index 0) and tanh with 0..=6 integer bits (indices 1..=7).
fn activation_table(which: usize) -> &'static [i16] {
    static TABLES: [std::sync::OnceLock<Vec<i16>>; 8] = [const { std::sync::OnceLock::new() }; 8];
    TABLES[which].get_or_init(|| {
        (0..65536u32)
            .map(|i| {
                let x = (i as u16) as i16;
                if which == 0 { fx16::logistic(x, 3) } else { fx16::tanh(x, which as i32 - 1) }
            })
            .collect()
    })
}

/// `ApplySigmoid` (Q3.12 → Q0.15) through the table.
fn sigmoid_q3(x: i16) -> i16 {
    activation_table(0)[usize::from(x as u16)]
}

/// `ApplyTanh(int_bits, ..)` (Q`int_bits` → Q0.15) through the table; `int_bits` in 0..=6.
fn tanh_q(x: i16, int_bits: i32) -> i16 {
    activation_table(1 + int_bits.clamp(0, 6) as usize)[usize::from(x as u16)]
}

// ---------------------------------------------------------------------------------------
// The integer tensor_utils routines and the step
// ---------------------------------------------------------------------------------------

/// `MatrixBatchVectorMultiplyAccumulate` (int8 input, int32 bias, int16/int8 output):
/// `out = clamp(out + zp + mbqm(bias + W·x))`.
#[allow(clippy::too_many_arguments, reason = "mirrors the tensor_utils routine")]
fn mbvma<T: Copy + Into<i32> + TryFrom<i32>>(
    x: &[i8],
    bias: &[i32],
    w: &[i8],
    (m, s): (i32, i32),
    n_batch: usize,
    n_in: usize,
    n_out: usize,
    zp: i32,
    out: &mut [T],
    (lo, hi): (i32, i32),
) {
    for b in 0..n_batch {
        for r in 0..n_out {
            let mut acc = bias[r];
            let row = &w[r * n_in..(r + 1) * n_in];
            for (c, &wv) in row.iter().enumerate() {
                acc = acc.wrapping_add(i32::from(x[b * n_in + c]) * i32::from(wv));
            }
            let mut acc = mbqm(acc, m, s);
            acc = acc.wrapping_add(zp);
            acc = acc.wrapping_add(out[b * n_out + r].into());
            let v = acc.clamp(lo, hi);
            if let Ok(v) = T::try_from(v) {
                out[b * n_out + r] = v;
            }
        }
    }
}

struct Tensors<'a> {
    w_in: [Option<&'a [i8]>; 4],
    w_rec: [Option<&'a [i8]>; 4],
    peephole: [Option<&'a [i16]>; 4],
    proj: Option<&'a [i8]>,
}

#[allow(clippy::too_many_arguments, reason = "one gate, as CalculateLstmGateInteger8x8_16")]
fn gate(
    g: usize,
    t: &Tensors<'_>,
    ip: &IntegerParams,
    d: Dims,
    nb: usize,
    x: &[i8],
    h: &[i8],
    c: &[i16],
    tanh: bool,
    out: &mut [i16],
) {
    let gp = &ip.gates[g];
    let nc = d.n_cell;
    let out = &mut out[..nb * nc];
    out.fill(0);
    let range = (-32768, 32767);
    if let Some(w) = t.w_in[g] {
        mbvma(x, &gp.input_bias, w, gp.input_scale, nb, d.n_input, nc, 0, out, range);
    }
    if let Some(w) = t.w_rec[g] {
        mbvma(h, &gp.recurrent_bias, w, gp.recurrent_scale, nb, d.n_output, nc, 0, out, range);
    }
    if let Some(p) = t.peephole[g] {
        // VectorBatchVectorCwiseProductAccumulate over n_output elements (TFLite passes
        // n_output; peepholes imply n_output == n_cell here).
        for b in 0..nb {
            for v in 0..d.n_output.min(nc) {
                let prod = mbqm(i32::from(p[v]) * i32::from(c[b * nc + v]), gp.cell_scale.0, gp.cell_scale.1);
                let o = &mut out[b * nc + v];
                *o = (prod + i32::from(*o)).clamp(-32768, 32767) as i16;
            }
        }
    }
    for v in out.iter_mut() {
        *v = if tanh { tanh_q(*v, 3) } else { sigmoid_q3(*v) };
    }
}

/// `CwiseMul` with a power-of-two shift to int16 (truncating cast, as the C++).
fn cwise_mul_shift(a: i16, b: i16, shift: i32) -> i16 {
    rounding_divide_by_pot(i32::from(a) * i32::from(b), shift) as i16
}

struct Scratch {
    gates: [Vec<i16>; 4],
    tanh_c: Vec<i16>,
    hidden: Vec<i8>,
}

#[allow(clippy::too_many_arguments, reason = "one step, as LstmStepInteger8x8_16")]
fn step(
    t: &Tensors<'_>,
    ip: &IntegerParams,
    d: Dims,
    nb: usize,
    x: &[i8],
    h: &mut [i8],
    c: &mut [i16],
    out: &mut [i8],
    sc: &mut Scratch,
) {
    let (nc, no) = (d.n_cell, d.n_output);
    let cifg = t.w_in[0].is_none();
    let [gi, gf, gg, go] = &mut sc.gates;
    if !cifg {
        gate(0, t, ip, d, nb, x, h, c, false, gi);
    }
    gate(1, t, ip, d, nb, x, h, c, false, gf);
    gate(2, t, ip, d, nb, x, h, c, true, gg);
    // UpdateLstmCellInteger.
    let shift = 30 + ip.cell_scale;
    for k in 0..nb * nc {
        let fc = cwise_mul_shift(gf[k], c[k], 15);
        let ig = if cifg {
            cwise_mul_shift(i16::MAX.wrapping_sub(gf[k]), gg[k], shift)
        } else {
            cwise_mul_shift(gi[k], gg[k], shift)
        };
        let mut v = (i32::from(fc) + i32::from(ig)).clamp(-32768, 32767) as i16;
        if ip.quantized_cell_clip > 0 {
            v = v.clamp(-ip.quantized_cell_clip, ip.quantized_cell_clip);
        }
        c[k] = v;
    }
    gate(3, t, ip, d, nb, x, h, c, false, go);
    // CalculateLstmOutputInteger8x8_16.
    let int_bits = 15 + ip.cell_scale;
    for (t, &cv) in sc.tanh_c[..nb * nc].iter_mut().zip(c.iter()) {
        *t = tanh_q(cv, int_bits);
    }
    let cwise_to_i8 = |k: usize, zp: i32| -> i8 {
        let v = mbqm(i32::from(go[k]) * i32::from(sc.tanh_c[k]), ip.hidden_scale.0, ip.hidden_scale.1);
        (v + zp).clamp(-128, 127) as i8
    };
    match t.proj {
        Some(w) => {
            for k in 0..nb * nc {
                sc.hidden[k] = cwise_to_i8(k, -ip.hidden_zp);
            }
            h[..nb * no].fill(0);
            mbvma(&sc.hidden, &ip.proj_bias, w, ip.proj_scale, nb, nc, no, ip.output_state_zp, h, (-128, 127));
            if ip.quantized_proj_clip > 0 {
                for v in h[..nb * no].iter_mut() {
                    *v = (*v).clamp(-ip.quantized_proj_clip, ip.quantized_proj_clip);
                }
            }
        }
        None => {
            for (k, v) in h[..nb * no].iter_mut().enumerate() {
                *v = cwise_to_i8(k, ip.hidden_zp);
            }
        }
    }
    out[..nb * no].copy_from_slice(&h[..nb * no]);
}

/// Runs the integer sequence LSTM (`EvalInteger8x8_16`).
pub fn eval(ctx: &OpCtx<'_>, p: &Params, d: Dims, ip: &IntegerParams) -> Result<()> {
    let get = |i: usize| -> Result<Option<&[i8]>> { ctx.optional_input(i)?.map(|t| t.data::<i8>()).transpose() };
    let get16 = |i: usize| -> Result<Option<&[i16]>> { ctx.optional_input(i)?.map(|t| t.data::<i16>()).transpose() };
    let t = Tensors {
        w_in: [get(1)?, get(2)?, get(3)?, get(4)?],
        w_rec: [get(5)?, get(6)?, get(7)?, get(8)?],
        peephole: [get16(9)?, get16(10)?, None, get16(11)?],
        proj: get(16)?,
    };
    let input = ctx.input(0)?.data::<i8>()?;
    let mut hs = ctx.variable_input(18)?;
    let mut cs = ctx.variable_input(19)?;
    let mut out = ctx.output(0)?;
    let (h, c, output) = (hs.data_mut::<i8>()?, cs.data_mut::<i16>()?, out.data_mut::<i8>()?);
    let (nb, nc, ni, no, t_max) = (d.n_batch, d.n_cell, d.n_input, d.n_output, d.max_time);
    if input.len() != nb * t_max * ni || output.len() != nb * t_max * no {
        return Err(op_error(OP, "input or output size does not match the shapes"));
    }
    let rows = if p.time_major { nb } else { 1 };
    let mut sc = Scratch {
        gates: [vec![0; rows * nc], vec![0; rows * nc], vec![0; rows * nc], vec![0; rows * nc]],
        tanh_c: vec![0; rows * nc],
        hidden: vec![0; rows * nc],
    };
    if p.time_major {
        for s in 0..t_max {
            step(
                &t,
                ip,
                d,
                nb,
                &input[s * nb * ni..(s + 1) * nb * ni],
                h,
                c,
                &mut output[s * nb * no..(s + 1) * nb * no],
                &mut sc,
            );
        }
    } else {
        for b in 0..nb {
            for s in 0..t_max {
                let k = b * t_max + s;
                step(
                    &t,
                    ip,
                    d,
                    1,
                    &input[k * ni..(k + 1) * ni],
                    &mut h[b * no..(b + 1) * no],
                    &mut c[b * nc..(b + 1) * nc],
                    &mut output[k * no..(k + 1) * no],
                    &mut sc,
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fx16;

    #[test]
    fn fixed_point_activations_track_the_real_functions() {
        for raw in (-32768i32..32768).step_by(97) {
            let x = raw as i16;
            let real = f64::from(x) / 4096.0; // Q3.12
            let s = f64::from(fx16::logistic(x, 3)) / 32768.0;
            assert!((s - 1.0 / (1.0 + (-real).exp())).abs() < 2e-3, "logistic({real}) = {s}");
            let t = f64::from(fx16::tanh(x, 3)) / 32768.0;
            assert!((t - real.tanh()).abs() < 2e-3, "tanh({real}) = {t}");
        }
        assert_eq!(fx16::logistic(0, 3), 16384);
        assert_eq!(fx16::tanh(0, 3), 0);
        for raw in (-32768i32..32768).step_by(31) {
            let x = raw as i16;
            assert_eq!(super::sigmoid_q3(x), fx16::logistic(x, 3));
            assert_eq!(super::tanh_q(x, 1), fx16::tanh(x, 1));
        }
    }
}
