//! RNN and UNIDIRECTIONAL_SEQUENCE_RNN (TFLite `kernels/basic_rnn.cc`,
//! `unidirectional_sequence_rnn.cc`, `internal/kernel_utils.cc`'s `RnnBatchStep`).
//!
//! Inputs: 0 input (`[batch, input_size]` for RNN; `[batch, time, input_size]`, or
//! `[time, batch, input_size]` when `time_major`, for the sequence op), 1 weights
//! `[units, input_size]`, 2 recurrent weights `[units, units]`, 3 bias `[units]`, 4 the
//! hidden state `[batch, units]`, a variable tensor updated in place and kept across
//! invokes. Each step: `h = act(bias + W·x + R·h)`, written to the output too.
//!
//! Types: float32, and hybrid (float32 activations, int8 weights with a per-tensor scale;
//! input and hidden state quantized per batch row, symmetrically or with
//! `asymmetric_quantize_inputs`), as TFLite's `RnnBatchStep`.

use super::lstm::{Quantized, is_zero, matmul_acc_f32, matmul_acc_i8, row_sums};
use crate::abi::builtin_op_data::{TfLiteFusedActivation, TfLiteRNNParams, TfLiteSequenceRNNParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::activation::apply_f32;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::op_error;

/// The RNN registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Rnn>(TfLiteBuiltinOperator::kTfLiteBuiltinRnn)
}

/// The UNIDIRECTIONAL_SEQUENCE_RNN registration.
pub fn sequence_registration() -> TfLiteRegistration {
    kernel::registration::<SequenceRnn>(TfLiteBuiltinOperator::kTfLiteBuiltinUnidirectionalSequenceRnn)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Single,
    Sequence,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Single => "RNN",
            Kind::Sequence => "UNIDIRECTIONAL_SEQUENCE_RNN",
        }
    }
}

/// The options both ops share.
#[derive(Clone, Copy)]
struct Params {
    activation: TfLiteFusedActivation,
    time_major: bool,
    asymmetric: bool,
}

/// RNN: its state is the [`Plan`].
struct Rnn;

impl BuiltinKernel for Rnn {
    const NAME: &'static str = "RNN";
    type Params = TfLiteRNNParams;
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteRNNParams) -> Result<Plan> {
        let p = Params { activation: p.activation, time_major: true, asymmetric: p.asymmetric_quantize_inputs };
        prepare(ctx, Kind::Single, p)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteRNNParams, plan: &mut Plan) -> Result<()> {
        eval(ctx, Kind::Single, plan)
    }
}

/// UNIDIRECTIONAL_SEQUENCE_RNN: its state is the [`Plan`].
struct SequenceRnn;

impl BuiltinKernel for SequenceRnn {
    const NAME: &'static str = "UNIDIRECTIONAL_SEQUENCE_RNN";
    type Params = TfLiteSequenceRNNParams;
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteSequenceRNNParams) -> Result<Plan> {
        let p = Params { activation: p.activation, time_major: p.time_major, asymmetric: p.asymmetric_quantize_inputs };
        prepare(ctx, Kind::Sequence, p)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteSequenceRNNParams, plan: &mut Plan) -> Result<()> {
        eval(ctx, Kind::Sequence, plan)
    }
}

/// What Prepare works out once: the sizes, whether the weights are int8 (hybrid), the
/// weights' row sums for asymmetric input quantization (when the weights are constant),
/// and the buffers the hybrid path quantizes the input and hidden state into.
struct Plan {
    p: Params,
    batch: usize,
    time: usize,
    input_size: usize,
    units: usize,
    hybrid: bool,
    row_sums: Option<(Vec<i32>, Vec<i32>)>,
    xq: Quantized,
    hq: Quantized,
}

/// (batch, time, input_size, units, hybrid), checked as TFLite's Prepare.
fn check(ctx: &OpCtx<'_>, kind: Kind, p: &Params) -> Result<(usize, usize, usize, usize, bool)> {
    let name = kind.name();
    let err = |m: String| op_error(name, m);
    if ctx.num_inputs() != 5 || ctx.num_outputs() != 1 {
        return Err(err(format!("expects 5 inputs and 1 output, got {} and {}", ctx.num_inputs(), ctx.num_outputs())));
    }
    let input = ctx.input(0).map_err(|e| err(e.message))?;
    let w = ctx.input(1).map_err(|e| err(e.message))?;
    let r = ctx.input(2).map_err(|e| err(e.message))?;
    let bias = ctx.input(3).map_err(|e| err(e.message))?;
    let h = ctx.variable_input(4).map_err(|e| err(e.message))?;
    let d = |s: &[i32], i: usize| s.get(i).map_or(0, |&v| v.max(0) as usize);
    let (batch, time, input_size) = match kind {
        Kind::Single => {
            if input.shape.len() != 2 {
                return Err(err(format!("the input must have rank 2, not {}", input.shape.len())));
            }
            (d(input.shape, 0), 1, d(input.shape, 1))
        }
        Kind::Sequence => {
            if input.shape.len() != 3 {
                return Err(err(format!("the input must have rank 3, not {}", input.shape.len())));
            }
            let (b, t) = if p.time_major {
                (d(input.shape, 1), d(input.shape, 0))
            } else {
                (d(input.shape, 0), d(input.shape, 1))
            };
            (b, t, d(input.shape, 2))
        }
    };
    let units = d(w.shape, 0);
    if w.shape.len() != 2 || d(w.shape, 1) != input_size {
        return Err(err(format!("weights must be [units, {input_size}], not {:?}", w.shape)));
    }
    if r.shape != [units as i32, units as i32] || bias.shape != [units as i32] {
        return Err(err(format!(
            "recurrent weights must be [{units}, {units}] and the bias [{units}], not {:?} and {:?}",
            r.shape, bias.shape
        )));
    }
    if h.shape != [batch as i32, units as i32] || h.dtype != TfLiteType::kTfLiteFloat32 {
        return Err(err(format!("the hidden state must be float32 [{batch}, {units}], not {:?}", h.shape)));
    }
    if input.dtype != TfLiteType::kTfLiteFloat32 || bias.dtype != TfLiteType::kTfLiteFloat32 {
        return Err(err("the input and bias must be float32".into()));
    }
    if w.dtype != r.dtype {
        return Err(err("weights and recurrent weights must have the same type".into()));
    }
    let hybrid = match w.dtype {
        TfLiteType::kTfLiteFloat32 => false,
        TfLiteType::kTfLiteInt8 => true,
        other => return Err(err(format!("weights of type {} are not supported", other.name()))),
    };
    Ok((batch, time, input_size, units, hybrid))
}

fn prepare(ctx: &OpCtx<'_>, kind: Kind, p: Params) -> Result<Plan> {
    let (batch, time, input_size, units, hybrid) = check(ctx, kind, &p)?;
    let shape: Vec<i32> = match kind {
        Kind::Single => vec![batch as i32, units as i32],
        Kind::Sequence if p.time_major => vec![time as i32, batch as i32, units as i32],
        Kind::Sequence => vec![batch as i32, time as i32, units as i32],
    };
    ctx.set_output_type(0, TfLiteType::kTfLiteFloat32).map_err(|e| op_error(kind.name(), e.message))?;
    ctx.resize_output(0, &shape).map_err(|e| op_error(kind.name(), e.message))?;
    let (w, r) = (ctx.input(1)?, ctx.input(2)?);
    let row_sums = if hybrid && p.asymmetric && w.is_constant() && r.is_constant() {
        Some((row_sums(w.data::<i8>()?, units, input_size), row_sums(r.data::<i8>()?, units, units)))
    } else {
        None
    };
    let rows = if p.time_major { batch } else { 1 };
    Ok(Plan {
        p,
        batch,
        time,
        input_size,
        units,
        hybrid,
        row_sums,
        xq: Quantized::new(rows, input_size),
        hq: Quantized::new(rows, units),
    })
}

/// Weights of one RNN: float, or int8 with their scales and (asymmetric) row sums.
enum Weights<'a> {
    F32(&'a [f32], &'a [f32]),
    I8 { w: &'a [i8], w_scale: f32, r: &'a [i8], r_scale: f32, sums: Option<(&'a [i32], &'a [i32])> },
}

struct Step<'a> {
    weights: Weights<'a>,
    bias: &'a [f32],
    input_size: usize,
    units: usize,
    p: Params,
    xq: &'a mut Quantized,
    hq: &'a mut Quantized,
}

impl Step<'_> {
    /// `RnnBatchStep` over `nb` rows: `out = act(bias + W·x + R·h)`, `h = out`.
    fn run(&mut self, nb: usize, x: &[f32], h: &mut [f32], out: &mut [f32]) {
        let (n, u) = (self.input_size, self.units);
        for b in 0..nb {
            out[b * u..(b + 1) * u].copy_from_slice(self.bias);
        }
        match &self.weights {
            Weights::F32(w, r) => {
                matmul_acc_f32(w, u, n, x, nb, out);
                matmul_acc_f32(r, u, u, h, nb, out);
            }
            Weights::I8 { w, w_scale, r, r_scale, sums } => {
                if !is_zero(x) {
                    self.xq.quantize(x, nb, n, self.p.asymmetric);
                    matmul_acc_i8(w, *w_scale, u, n, self.xq, sums.map(|s| s.0), nb, out);
                }
                if !is_zero(h) {
                    self.hq.quantize(h, nb, u, self.p.asymmetric);
                    matmul_acc_i8(r, *r_scale, u, u, self.hq, sums.map(|s| s.1), nb, out);
                }
            }
        }
        for v in out[..nb * u].iter_mut() {
            *v = apply_f32(*v, self.p.activation);
        }
        h[..nb * u].copy_from_slice(&out[..nb * u]);
    }
}

fn eval(ctx: &OpCtx<'_>, kind: Kind, plan: &mut Plan) -> Result<()> {
    let Plan { p, batch, time, input_size, units, hybrid, ref row_sums, ref mut xq, ref mut hq } = *plan;
    let w = ctx.input(1)?;
    let r = ctx.input(2)?;
    let computed_sums;
    let weights = if hybrid {
        let (wd, rd) = (w.data::<i8>()?, r.data::<i8>()?);
        let sums = match row_sums {
            Some((ws, rs)) => Some((ws.as_slice(), rs.as_slice())),
            None if p.asymmetric => {
                computed_sums = (super::lstm::row_sums(wd, units, input_size), super::lstm::row_sums(rd, units, units));
                Some((computed_sums.0.as_slice(), computed_sums.1.as_slice()))
            }
            None => None,
        };
        Weights::I8 { w: wd, w_scale: w.quant().scale, r: rd, r_scale: r.quant().scale, sums }
    } else {
        Weights::F32(w.data::<f32>()?, r.data::<f32>()?)
    };
    let input = ctx.input(0)?.data::<f32>()?;
    let mut hs = ctx.variable_input(4)?;
    let h = hs.data_mut::<f32>()?;
    let mut out = ctx.output(0)?;
    let output = out.data_mut::<f32>()?;
    if input.len() != batch * time * input_size || output.len() != batch * time * units {
        return Err(op_error(kind.name(), "input or output size does not match the shapes"));
    }
    let mut step = Step { weights, bias: ctx.input(3)?.data::<f32>()?, input_size, units, p, xq, hq };
    if p.time_major {
        for t in 0..time {
            step.run(
                batch,
                &input[t * batch * input_size..(t + 1) * batch * input_size],
                h,
                &mut output[t * batch * units..(t + 1) * batch * units],
            );
        }
    } else {
        for b in 0..batch {
            for t in 0..time {
                let k = b * time + t;
                step.run(
                    1,
                    &input[k * input_size..(k + 1) * input_size],
                    &mut h[b * units..(b + 1) * units],
                    &mut output[k * units..(k + 1) * units],
                );
            }
        }
    }
    Ok(())
}
