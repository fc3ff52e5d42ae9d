//! LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM, TFLite's fused LSTM ops (`kernels/lstm.cc`
//! full kernel, `unidirectional_sequence_lstm.cc`, `lstm_eval.cc`).
//!
//! Inputs (24, or 20 without layer normalization), `-1` for absent optional ones:
//! 0 input; 1-4 input-to-{input, forget, cell, output} weights `[n_cell, n_input]` (input
//! gate absent: CIFG, the input gate is `1 - forget`); 5-8 recurrent-to-gate weights
//! `[n_cell, n_output]` (or `[n_cell]`, a diagonal); 9-11 peephole cell-to-{input,
//! forget, output} weights `[n_cell]`; 12-15 gate biases `[n_cell]`; 16 projection weights
//! `[n_output, n_cell]`, 17 projection bias; 18 output state `[n_batch, n_output]` and 19
//! cell state `[n_batch, n_cell]` — variable tensors, updated in place and kept across
//! invokes; 20-23 layer-norm coefficients.
//!
//! Per time step: each gate is `act(bias + W·x + R·h (+ p ⊙ c))` (with layer norm:
//! normalized, scaled by the coefficients, then the bias added), input/forget/output
//! gates with sigmoid and the cell gate with the op's activation; `c = f ⊙ c + i ⊙ g`
//! (clipped to `cell_clip`), `h = o ⊙ act(c)`, projected (`proj_clip`) when there are
//! projection weights (with no activation, TFLite's `h` is `o ⊙ g`: it leaves the cell
//! gate's values where `act(c)` would go). The sequence op's input is
//! `[batch, time, n_input]` (or `[time, batch, n_input]` when `time_major`) and its
//! output has `n_output` in the last dimension; LSTM's input is one step `[batch, n_input]`. [`run_pass`] also walks the
//! sequence in reverse, adds aux-input weights and writes strided output rows, for
//! BIDIRECTIONAL_SEQUENCE_LSTM.
//!
//! Types: float32; hybrid (float32 activations with int8 weights: each step's input
//! and output state are quantized per batch row, symmetrically or with a zero point,
//! the integer dot products scaled back as TFLite's `tensor_utils` do); and, for the
//! sequence op, full integer (int8 activations and weights, int16 cell state, TFLite's
//! 8x8_16 kernel, in `lstm_integer.rs`). Not supported (an error at prepare): integer
//! LSTM with layer normalization, the integer single-step LSTM, and the BASIC kernel.

use super::conv_common::{asymmetric_quantize, symmetric_quantize};
use crate::abi::builtin_op_data::{
    TfLiteFusedActivation, TfLiteLSTMKernelType, TfLiteLSTMParams, TfLiteUnidirectionalSequenceLSTMParams,
};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::activation::apply_f32;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::op_error;

/// The UNIDIRECTIONAL_SEQUENCE_LSTM registration.
pub fn sequence_registration() -> TfLiteRegistration {
    kernel::registration::<SequenceLstm>(TfLiteBuiltinOperator::kTfLiteBuiltinUnidirectionalSequenceLstm)
}

/// The LSTM registration (full kernel).
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Lstm>(TfLiteBuiltinOperator::kTfLiteBuiltinLstm)
}

const SEQ: &str = "UNIDIRECTIONAL_SEQUENCE_LSTM";
const LSTM: &str = "LSTM";

const INPUT: usize = 0;
const INPUT_TO_GATE: [usize; 4] = [1, 2, 3, 4];
const RECURRENT_TO_GATE: [usize; 4] = [5, 6, 7, 8];
/// Peephole (cell-to-gate) weights per gate; the cell gate has none.
const CELL_TO_GATE: [Option<usize>; 4] = [Some(9), Some(10), None, Some(11)];
/// The three peephole tensors (input, forget, output).
const PEEPHOLES: [usize; 3] = [9, 10, 11];
const GATE_BIAS: [usize; 4] = [12, 13, 14, 15];
const PROJECTION_WEIGHTS: usize = 16;
const PROJECTION_BIAS: usize = 17;
const OUTPUT_STATE: usize = 18;
const CELL_STATE: usize = 19;
const LAYER_NORM: [usize; 4] = [20, 21, 22, 23];
// Gate order in the arrays above: input, forget, cell, output.
const G_INPUT: usize = 0;
const G_FORGET: usize = 1;
const G_CELL: usize = 2;
const G_OUTPUT: usize = 3;

/// The op's parameters, as TFLite's `TfLiteLSTMParams`.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub activation: TfLiteFusedActivation,
    pub cell_clip: f32,
    pub proj_clip: f32,
    pub time_major: bool,
    pub asymmetric_quantize_inputs: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sequence,
    Single,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sequence => SEQ,
            Kind::Single => LSTM,
        }
    }
}

/// UNIDIRECTIONAL_SEQUENCE_LSTM: its state is the [`Plan`].
struct SequenceLstm;

impl BuiltinKernel for SequenceLstm {
    const NAME: &'static str = SEQ;
    type Params = TfLiteUnidirectionalSequenceLSTMParams;
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteUnidirectionalSequenceLSTMParams) -> Result<Plan> {
        let p = Params {
            activation: p.activation,
            cell_clip: p.cell_clip,
            proj_clip: p.proj_clip,
            time_major: p.time_major,
            asymmetric_quantize_inputs: p.asymmetric_quantize_inputs,
        };
        prepare(ctx, Kind::Sequence, p)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteUnidirectionalSequenceLSTMParams, plan: &mut Plan) -> Result<()> {
        eval(ctx, Kind::Sequence, plan)
    }
}

/// LSTM (the full kernel; BASIC is refused at Prepare): its state is the [`Plan`].
struct Lstm;

impl BuiltinKernel for Lstm {
    const NAME: &'static str = LSTM;
    type Params = TfLiteLSTMParams;
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteLSTMParams) -> Result<Plan> {
        if p.kernel_type != TfLiteLSTMKernelType::kTfLiteLSTMFullKernel {
            return Err(op_error(LSTM, "the BASIC LSTM kernel is not supported"));
        }
        let p = Params {
            activation: p.activation,
            cell_clip: p.cell_clip,
            proj_clip: p.proj_clip,
            time_major: true,
            asymmetric_quantize_inputs: p.asymmetric_quantize_inputs,
        };
        prepare(ctx, Kind::Single, p)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteLSTMParams, plan: &mut Plan) -> Result<()> {
        eval(ctx, Kind::Single, plan)
    }
}

/// What Prepare works out once: the options, sizes and arithmetic; for the integer
/// kernel its rescaling parameters and zero-point-times-weights sums, and for the hybrid
/// one with asymmetric input quantization the weights' row sums — both when the weights
/// are model constants (otherwise Invoke derives them from the current values).
struct Plan {
    p: Params,
    d: Dims,
    mode: Mode,
    integer: Option<super::lstm_integer::IntegerParams>,
    hybrid_sums: Option<HybridSums>,
}

/// True if every weight, bias and coefficient input (all but the input and the two
/// states) is absent or a model constant.
fn weights_constant(ctx: &OpCtx<'_>) -> Result<bool> {
    for i in 1..ctx.num_inputs() {
        if i == OUTPUT_STATE || i == CELL_STATE {
            continue;
        }
        if ctx.optional_input(i)?.is_some_and(|t| !t.is_constant()) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The arithmetic the op's types select.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// float32 everything.
    Float,
    /// float32 activations, int8 weights.
    Hybrid,
    /// int8 activations and weights, int16 cell state (TFLite's 8x8_16 kernel).
    Integer,
}

/// Sizes of one invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    pub n_batch: usize,
    pub max_time: usize,
    pub n_input: usize,
    pub n_cell: usize,
    pub n_output: usize,
}

/// A weight matrix: float, or int8 with its per-tensor scale (hybrid).
#[derive(Clone, Copy)]
pub enum Mat<'a> {
    F32(&'a [f32]),
    I8(&'a [i8], f32),
}

/// Recurrent weights: a full matrix or a diagonal (float).
#[derive(Clone, Copy)]
pub enum Rec<'a> {
    Full(Mat<'a>),
    Diag(&'a [f32]),
}

/// One gate's weights.
pub struct Gate<'a> {
    pub input: Mat<'a>,
    /// Aux-input-to-gate weights (BIDIRECTIONAL_SEQUENCE_LSTM's stacked layers).
    pub aux: Option<Mat<'a>>,
    pub recurrent: Rec<'a>,
    /// Peephole weights as floats (hybrid int8 ones already multiplied by their scale).
    pub peephole: Option<Vec<f32>>,
    pub layer_norm: Option<&'a [f32]>,
    pub bias: &'a [f32],
}

/// Everything an LSTM step needs besides the activations.
pub struct Weights<'a> {
    /// Input, forget, cell, output; the input gate is `None` with CIFG.
    pub gates: [Option<Gate<'a>>; 4],
    pub projection: Option<Mat<'a>>,
    pub projection_bias: Option<&'a [f32]>,
}

fn in_op(kind: Kind) -> impl Fn(crate::error::Error) -> crate::error::Error {
    move |e| op_error(kind.name(), e.message)
}

fn check(cond: bool, kind: Kind, msg: impl FnOnce() -> String) -> Result<()> {
    if cond { Ok(()) } else { Err(op_error(kind.name(), msg())) }
}

fn dim(v: &TensorView<'_>, i: usize) -> usize {
    v.shape.get(i).map_or(0, |&d| d.max(0) as usize)
}

/// Checks every operand's shape and type (TFLite's `CheckInputTensorDimensions` and the
/// checks of Prepare) and returns the sizes and the arithmetic.
fn check_operands(ctx: &OpCtx<'_>, kind: Kind, p: &Params) -> Result<(Dims, Mode)> {
    let name = kind.name();
    let n = ctx.num_inputs();
    let use_layer_norm = match n {
        24 => ctx.optional_input(LAYER_NORM[G_FORGET]).map_err(in_op(kind))?.is_some(),
        20 => false,
        _ => return Err(op_error(name, format!("expects 20 or 24 inputs, got {n}"))),
    };
    check(ctx.num_outputs() == 1, kind, || format!("expects 1 output, got {}", ctx.num_outputs()))?;
    check(p.cell_clip >= 0.0 && p.proj_clip >= 0.0, kind, || "cell_clip and proj_clip must be >= 0".into())?;
    let input = ctx.input(INPUT).map_err(in_op(kind))?;
    let (n_batch, max_time, n_input) = match kind {
        Kind::Sequence => {
            check(input.shape.len() == 3, kind, || format!("the input must have rank 3, not {}", input.shape.len()))?;
            let (t, b) = if p.time_major { (dim(&input, 0), dim(&input, 1)) } else { (dim(&input, 1), dim(&input, 0)) };
            (b, t, dim(&input, 2))
        }
        Kind::Single => {
            check(input.shape.len() == 2, kind, || format!("the input must have rank 2, not {}", input.shape.len()))?;
            (dim(&input, 0), 1, dim(&input, 1))
        }
    };
    let mode = match input.dtype {
        TfLiteType::kTfLiteFloat32 => {
            let w = ctx.input(INPUT_TO_GATE[G_OUTPUT]).map_err(in_op(kind))?;
            match w.dtype {
                TfLiteType::kTfLiteFloat32 => Mode::Float,
                TfLiteType::kTfLiteInt8 => Mode::Hybrid,
                other => return Err(op_error(name, format!("weights of type {} are not supported", other.name()))),
            }
        }
        TfLiteType::kTfLiteInt8 if kind == Kind::Sequence => Mode::Integer,
        other => return Err(op_error(name, format!("input type {} is not supported", other.name()))),
    };
    use TfLiteType::{kTfLiteFloat32 as F32, kTfLiteInt8 as I8, kTfLiteInt16 as I16, kTfLiteInt32 as I32};
    // Types per operand kind: weights, biases, peepholes, layer norm, output state, cell state.
    let (wtype, btype, ptype, lntype, hstype, cstype) = match mode {
        Mode::Float => (F32, F32, F32, F32, F32, F32),
        Mode::Hybrid => (I8, F32, I8, F32, F32, F32),
        Mode::Integer => (I8, I32, I16, I16, I8, I16),
    };
    let hybrid = mode == Mode::Hybrid;
    let in2out = ctx.input(INPUT_TO_GATE[G_OUTPUT]).map_err(in_op(kind))?;
    check(in2out.shape.len() == 2 && dim(&in2out, 1) == n_input, kind, || {
        format!("input-to-output weights must be [n_cell, {n_input}], not {:?}", in2out.shape)
    })?;
    let n_cell = dim(&in2out, 0);
    let rec2out = ctx.input(RECURRENT_TO_GATE[G_OUTPUT]).map_err(in_op(kind))?;
    check(matches!(rec2out.shape.len(), 1 | 2) && dim(&rec2out, 0) == n_cell, kind, || {
        format!("recurrent-to-output weights must be [{n_cell}, n_output] or [{n_cell}], not {:?}", rec2out.shape)
    })?;
    let n_output = if rec2out.shape.len() == 1 { dim(&rec2out, 0) } else { dim(&rec2out, 1) };

    // Input-to-gate and recurrent-to-gate weights.
    let cifg = ctx.optional_input(INPUT_TO_GATE[G_INPUT]).map_err(in_op(kind))?.is_none();
    check(cifg == ctx.optional_input(RECURRENT_TO_GATE[G_INPUT]).map_err(in_op(kind))?.is_none(), kind, || {
        "input-to-input and recurrent-to-input weights must be both present or both absent".into()
    })?;
    for g in 0..4 {
        if g == G_INPUT && cifg {
            continue;
        }
        let w = ctx.input(INPUT_TO_GATE[g]).map_err(in_op(kind))?;
        check(w.shape == [n_cell as i32, n_input as i32] && w.dtype == wtype, kind, || {
            format!(
                "input-to-gate weights {} must be {} [{n_cell}, {n_input}], not {} {:?}",
                INPUT_TO_GATE[g],
                wtype.name(),
                w.dtype.name(),
                w.shape
            )
        })?;
        let r = ctx.input(RECURRENT_TO_GATE[g]).map_err(in_op(kind))?;
        // A diagonal multiplies the output state elementwise: n_output must be n_cell.
        let ok = if r.shape.len() == 1 {
            r.shape == [n_cell as i32]
                && n_output == n_cell
                && r.dtype == TfLiteType::kTfLiteFloat32
                && mode != Mode::Integer
        } else {
            r.shape == [n_cell as i32, n_output as i32] && r.dtype == wtype
        };
        check(ok, kind, || {
            format!(
                "recurrent-to-gate weights {} must be {} [{n_cell}, {n_output}] (or a float32 diagonal [{n_cell}]), not {} {:?}",
                RECURRENT_TO_GATE[g],
                wtype.name(),
                r.dtype.name(),
                r.shape
            )
        })?;
    }
    // Peepholes: all or none (the input one absent with CIFG).
    let peep: Vec<bool> = (0..3)
        .map(|g| ctx.optional_input(PEEPHOLES[g]).map(|t| t.is_some()))
        .collect::<Result<_>>()
        .map_err(in_op(kind))?;
    let all = (peep[0] || cifg) && peep[1] && peep[2];
    let none = !peep[0] && !peep[1] && !peep[2];
    check(all || none, kind, || "peephole weights must be all present or all absent".into())?;
    for &i in &PEEPHOLES {
        if let Some(w) = ctx.optional_input(i).map_err(in_op(kind))? {
            check(w.shape == [n_cell as i32] && w.dtype == ptype, kind, || {
                format!("peephole weights {i} must be {} [{n_cell}]", ptype.name())
            })?;
        }
    }
    // Biases.
    for (g, &bi) in GATE_BIAS.iter().enumerate() {
        let b = ctx.optional_input(bi).map_err(in_op(kind))?;
        match b {
            None if g == G_INPUT && cifg => {}
            Some(_) if g == G_INPUT && cifg => {
                return Err(op_error(name, "CIFG LSTM must not have an input gate bias"));
            }
            None => return Err(op_error(name, format!("gate bias {bi} is missing"))),
            Some(b) => check(b.shape == [n_cell as i32] && b.dtype == btype, kind, || {
                format!("gate bias {bi} must be {} [{n_cell}]", btype.name())
            })?,
        }
    }
    // Projection.
    let pw = ctx.optional_input(PROJECTION_WEIGHTS).map_err(in_op(kind))?;
    let pb = ctx.optional_input(PROJECTION_BIAS).map_err(in_op(kind))?;
    if let Some(w) = &pw {
        check(w.shape == [n_output as i32, n_cell as i32] && w.dtype == wtype, kind, || {
            format!("projection weights must be {} [{n_output}, {n_cell}]", wtype.name())
        })?;
    } else {
        check(pb.is_none(), kind, || "a projection bias needs projection weights".into())?;
        check(n_output == n_cell, kind, || {
            format!("without projection n_output ({n_output}) must equal n_cell ({n_cell})")
        })?;
    }
    if let Some(b) = &pb {
        check(b.shape == [n_output as i32] && b.dtype == btype, kind, || {
            format!("the projection bias must be {} [{n_output}]", btype.name())
        })?;
    }
    // Layer norm.
    if use_layer_norm {
        for (g, &li) in LAYER_NORM.iter().enumerate() {
            let c = ctx.optional_input(li).map_err(in_op(kind))?;
            match c {
                None if g == G_INPUT && cifg => {}
                Some(_) if g == G_INPUT && cifg => {
                    return Err(op_error(name, "CIFG LSTM must not have input layer-norm coefficients"));
                }
                None => return Err(op_error(name, format!("layer-norm coefficients {li} are missing"))),
                Some(c) => check(c.shape == [n_cell as i32] && c.dtype == lntype, kind, || {
                    format!("layer-norm coefficients {li} must be {} [{n_cell}]", lntype.name())
                })?,
            }
        }
    }
    // States.
    let hs = ctx.variable_input(OUTPUT_STATE).map_err(in_op(kind))?;
    let cs = ctx.variable_input(CELL_STATE).map_err(in_op(kind))?;
    for (s, ty, want, what) in [(&hs, hstype, n_batch * n_output, "output"), (&cs, cstype, n_batch * n_cell, "cell")] {
        check(s.dtype == ty && s.num_elements() == want, kind, || {
            format!("the {what} state must be {} with {want} elements, not {} {:?}", ty.name(), s.dtype.name(), s.shape)
        })?;
    }
    if mode == Mode::Integer {
        check(!use_layer_norm, kind, || "integer LSTM with layer normalization is not supported".into())?;
        check(ctx.intermediate_indices().len() == 5, kind, || {
            format!("integer LSTM needs 5 intermediate tensors, has {}", ctx.intermediate_indices().len())
        })?;
        let out = ctx.output(0).map_err(in_op(kind))?;
        check(out.dtype == I8, kind, || format!("the output must be int8, not {}", out.dtype.name()))?;
    }
    if hybrid {
        for g in 0..4 {
            for i in [INPUT_TO_GATE[g], RECURRENT_TO_GATE[g]] {
                if let Some(w) = ctx.optional_input(i).map_err(in_op(kind))?
                    && w.dtype == TfLiteType::kTfLiteInt8
                    && w.quant().zero_point != 0
                {
                    return Err(op_error(name, "hybrid weights must be symmetric (zero point 0)"));
                }
            }
        }
    }
    Ok((Dims { n_batch, max_time, n_input, n_cell, n_output }, mode))
}

fn prepare(ctx: &OpCtx<'_>, kind: Kind, p: Params) -> Result<Plan> {
    let (d, mode) = check_operands(ctx, kind, &p)?;
    let input = ctx.input(INPUT)?;
    let mut shape = input.shape.to_vec();
    if let Some(last) = shape.last_mut() {
        *last = i32::try_from(d.n_output).map_err(|_| op_error(kind.name(), "n_output too large"))?;
    }
    let constant = weights_constant(ctx).map_err(in_op(kind))?;
    let mut integer = None;
    let mut hybrid_sums = None;
    if mode == Mode::Integer {
        let ip = super::lstm_integer::IntegerParams::new(ctx, &p, d).map_err(in_op(kind))?;
        integer = constant.then_some(ip);
        ctx.request_temporaries(&[])?;
    } else {
        ctx.set_output_type(0, TfLiteType::kTfLiteFloat32).map_err(in_op(kind))?;
        // The gates' values: one node temporary (TFLite's `scratch_buffer`).
        let bytes = gate_buffer_len(&p, d)
            .and_then(|n| n.checked_mul(4))
            .ok_or_else(|| op_error(kind.name(), "gate buffer size overflow"))?;
        ctx.request_temporaries(&[bytes])?;
        if mode == Mode::Hybrid && p.asymmetric_quantize_inputs && constant {
            hybrid_sums = Some(HybridSums::new(&gather(ctx, kind)?, d, 0));
        }
    }
    ctx.resize_output(0, &shape).map_err(in_op(kind))?;
    Ok(Plan { p, d, mode, integer, hybrid_sums })
}

pub(crate) fn mat<'a>(t: &TensorView<'a>) -> Result<Mat<'a>> {
    Ok(match t.dtype {
        TfLiteType::kTfLiteInt8 => Mat::I8(t.data::<i8>()?, t.quant().scale),
        _ => Mat::F32(t.data::<f32>()?),
    })
}

fn gather<'a>(ctx: &OpCtx<'a>, kind: Kind) -> Result<Weights<'a>> {
    let get = |i: usize| ctx.optional_input(i).map_err(in_op(kind));
    let mut gates: [Option<Gate<'a>>; 4] = [None, None, None, None];
    for (g, slot) in gates.iter_mut().enumerate() {
        let Some(w) = get(INPUT_TO_GATE[g])? else { continue };
        let r = ctx.input(RECURRENT_TO_GATE[g]).map_err(in_op(kind))?;
        let recurrent = if r.shape.len() == 1 { Rec::Diag(r.data::<f32>()?) } else { Rec::Full(mat(&r)?) };
        let peephole = match CELL_TO_GATE[g] {
            Some(i) => match get(i)? {
                Some(p) if p.dtype == TfLiteType::kTfLiteInt8 => {
                    let s = p.quant().scale;
                    Some(p.data::<i8>()?.iter().map(|&v| s * f32::from(v)).collect())
                }
                Some(p) => Some(p.data::<f32>()?.to_vec()),
                None => None,
            },
            None => None,
        };
        let layer_norm =
            if ctx.num_inputs() == 24 { get(LAYER_NORM[g])?.map(|t| t.data::<f32>()).transpose()? } else { None };
        let bias = ctx.input(GATE_BIAS[g]).map_err(in_op(kind))?.data::<f32>()?;
        *slot = Some(Gate { input: mat(&w)?, aux: None, recurrent, peephole, layer_norm, bias });
    }
    let projection = get(PROJECTION_WEIGHTS)?.map(|t| mat(&t)).transpose()?;
    let projection_bias = get(PROJECTION_BIAS)?.map(|t| t.data::<f32>()).transpose()?;
    Ok(Weights { gates, projection, projection_bias })
}

fn eval(ctx: &OpCtx<'_>, kind: Kind, plan: &Plan) -> Result<()> {
    let (p, d) = (plan.p, plan.d);
    if plan.mode == Mode::Integer {
        let computed;
        let ip = match &plan.integer {
            Some(ip) => ip,
            None => {
                computed = super::lstm_integer::IntegerParams::new(ctx, &p, d).map_err(in_op(kind))?;
                &computed
            }
        };
        return super::lstm_integer::eval(ctx, &p, d, ip).map_err(in_op(kind));
    }
    let hybrid = plan.mode == Mode::Hybrid;
    let w = gather(ctx, kind)?;
    let computed;
    let sums = match &plan.hybrid_sums {
        Some(s) => Some(s),
        None if hybrid && p.asymmetric_quantize_inputs => {
            computed = HybridSums::new(&w, d, 0);
            Some(&computed)
        }
        None => None,
    };
    let input = ctx.input(INPUT)?.data::<f32>()?;
    let mut hs = ctx.variable_input(OUTPUT_STATE)?;
    let mut cs = ctx.variable_input(CELL_STATE)?;
    let mut out = ctx.output(0)?;
    let want_out = d.n_batch * d.max_time * d.n_output;
    let output = out.data_mut::<f32>()?;
    if output.len() != want_out || input.len() != d.n_batch * d.max_time * d.n_input {
        return Err(op_error(kind.name(), "the input or output size does not match the shapes Prepare saw"));
    }
    let gate_buf = ctx.temporary_mut::<f32>(0)?;
    run(&w, &p, d, hybrid, sums, input, hs.data_mut::<f32>()?, cs.data_mut::<f32>()?, output, Some(gate_buf));
    Ok(())
}

/// Floats of the gate buffer [`run`] uses: four gates of `n_cell` values for each row
/// stepped at once (all batch rows when time-major, one otherwise).
pub fn gate_buffer_len(p: &Params, d: Dims) -> Option<usize> {
    let rows = if p.time_major { d.n_batch } else { 1 };
    rows.checked_mul(d.n_cell)?.checked_mul(4)
}

// ---------------------------------------------------------------------------------------
// The computation (slices only)
// ---------------------------------------------------------------------------------------

/// Per-batch-row quantized copy of a float batch of vectors (hybrid).
pub(crate) struct Quantized {
    pub(crate) q: Vec<i8>,
    pub(crate) scale: Vec<f32>,
    pub(crate) zero_point: Vec<i32>,
}

impl Quantized {
    pub(crate) fn new(n_batch: usize, n: usize) -> Quantized {
        Quantized { q: vec![0; n_batch * n], scale: vec![1.0; n_batch], zero_point: vec![0; n_batch] }
    }

    /// TFLite's `BatchQuantizeFloats`.
    pub(crate) fn quantize(&mut self, values: &[f32], n_batch: usize, n: usize, asymmetric: bool) {
        for b in 0..n_batch {
            let (src, dst) = (&values[b * n..(b + 1) * n], &mut self.q[b * n..(b + 1) * n]);
            if asymmetric {
                let (s, z) = asymmetric_quantize(src, dst);
                self.scale[b] = s;
                self.zero_point[b] = z;
            } else {
                self.scale[b] = symmetric_quantize(src, dst);
                self.zero_point[b] = 0;
            }
        }
    }
}

/// TFLite's `IsZeroVector`.
pub(crate) fn is_zero(v: &[f32]) -> bool {
    v.iter().all(|&x| x == 0.0)
}

/// Row sums of an int8 matrix (TFLite's `ReductionSumVector`).
pub(crate) fn row_sums(m: &[i8], rows: usize, cols: usize) -> Vec<i32> {
    (0..rows).map(|r| m[r * cols..(r + 1) * cols].iter().map(|&v| i32::from(v)).sum()).collect()
}

/// `out[b, r] += M[r, :] · x[b, :]` for a float matrix.
pub(crate) fn matmul_acc_f32(m: &[f32], rows: usize, cols: usize, x: &[f32], n_batch: usize, out: &mut [f32]) {
    for b in 0..n_batch {
        let xb = &x[b * cols..(b + 1) * cols];
        for r in 0..rows {
            let row = &m[r * cols..(r + 1) * cols];
            let mut dot = 0.0f32;
            for (a, v) in row.iter().zip(xb) {
                dot += a * v;
            }
            out[b * rows + r] += dot;
        }
    }
}

/// The hybrid product: `out[b, r] += float(M[r]·xq[b] - row_sum[r] * zp[b]) * (sf[b] *
/// scale)` (TFLite's `MatrixBatchVectorMultiplyAccumulate` with scaling factors).
#[allow(clippy::too_many_arguments, reason = "mirrors the tensor_utils routine")]
pub(crate) fn matmul_acc_i8(
    m: &[i8],
    scale: f32,
    rows: usize,
    cols: usize,
    x: &Quantized,
    sums: Option<&[i32]>,
    n_batch: usize,
    out: &mut [f32],
) {
    for b in 0..n_batch {
        let xb = &x.q[b * cols..(b + 1) * cols];
        let s = x.scale[b] * scale;
        let zp = x.zero_point[b];
        for r in 0..rows {
            let row = &m[r * cols..(r + 1) * cols];
            let mut dot: i32 = row.iter().zip(xb).map(|(&a, &v)| i32::from(a) * i32::from(v)).sum();
            if let Some(sums) = sums {
                dot = dot.wrapping_sub(sums[r].wrapping_mul(zp));
            }
            out[b * rows + r] += dot as f32 * s;
        }
    }
}

/// What one step computes the gates from.
struct StepInputs<'s> {
    x: &'s [f32],
    x_zero: bool,
    xq: &'s Quantized,
    /// The aux input's rows and their size (none: no aux input).
    aux: Option<(&'s [f32], usize)>,
    a_zero: bool,
    aq: &'s Quantized,
    h_zero: bool,
    hq: &'s Quantized,
}

/// Row sums per gate matrix (asymmetric hybrid only): [gate][input, recurrent, aux].
type GateSums = [[Option<Vec<i32>>; 3]; 4];

/// Row sums of a hybrid LSTM's int8 weights, for asymmetric input quantization: per
/// gate, of its input and its recurrent weights, and of the projection weights.
pub struct HybridSums {
    gates: GateSums,
    projection: Option<Vec<i32>>,
}

impl HybridSums {
    /// `n_aux`: the aux input's row size (0 without one).
    pub(crate) fn new(w: &Weights<'_>, d: Dims, n_aux: usize) -> HybridSums {
        let (nc, ni, no) = (d.n_cell, d.n_input, d.n_output);
        let mut gates: GateSums = Default::default();
        for (g, gate) in w.gates.iter().enumerate() {
            let Some(gate) = gate else { continue };
            if let Mat::I8(m, _) = gate.input {
                gates[g][0] = Some(row_sums(m, nc, ni));
            }
            if let Rec::Full(Mat::I8(m, _)) = gate.recurrent {
                gates[g][1] = Some(row_sums(m, nc, no));
            }
            if let Some(Mat::I8(m, _)) = gate.aux {
                gates[g][2] = Some(row_sums(m, nc, n_aux));
            }
        }
        let projection = match w.projection {
            Some(Mat::I8(m, _)) => Some(row_sums(m, no, nc)),
            _ => None,
        };
        HybridSums { gates, projection }
    }
}

/// No row sums: symmetric input quantization, or float weights.
const NO_SUMS: [Option<Vec<i32>>; 3] = [None, None, None];

#[allow(clippy::too_many_arguments, reason = "one gate of one step, as lstm_eval's CalculateLstmGate*")]
fn gate(
    g: &Gate<'_>,
    sums: &[Option<Vec<i32>>; 3],
    act: TfLiteFusedActivation,
    d: Dims,
    nb: usize,
    s: &StepInputs<'_>,
    h: &[f32],
    c: Option<&[f32]>,
    hybrid: bool,
    out: &mut [f32],
) {
    let nc = d.n_cell;
    for b in 0..nb {
        let o = &mut out[b * nc..(b + 1) * nc];
        if g.layer_norm.is_some() {
            o.fill(0.0);
        } else {
            o.copy_from_slice(g.bias);
        }
    }
    if !s.x_zero {
        match g.input {
            Mat::F32(m) => matmul_acc_f32(m, nc, d.n_input, s.x, nb, out),
            Mat::I8(m, sc) => matmul_acc_i8(m, sc, nc, d.n_input, s.xq, sums[0].as_deref(), nb, out),
        }
    }
    if let (Some(m), Some((a, na))) = (g.aux, s.aux)
        && !s.a_zero
    {
        match m {
            Mat::F32(m) => matmul_acc_f32(m, nc, na, a, nb, out),
            Mat::I8(m, sc) => matmul_acc_i8(m, sc, nc, na, s.aq, sums[2].as_deref(), nb, out),
        }
    }
    // Float LSTMs always add the recurrent term; hybrid ones skip an all-zero state.
    if !hybrid || !s.h_zero {
        match g.recurrent {
            Rec::Diag(w) => {
                for b in 0..nb {
                    for r in 0..nc {
                        out[b * nc + r] += w[r] * h[b * d.n_output + r];
                    }
                }
            }
            Rec::Full(Mat::F32(m)) => matmul_acc_f32(m, nc, d.n_output, h, nb, out),
            Rec::Full(Mat::I8(m, sc)) => matmul_acc_i8(m, sc, nc, d.n_output, s.hq, sums[1].as_deref(), nb, out),
        }
    }
    if let (Some(p), Some(c)) = (&g.peephole, c) {
        for b in 0..nb {
            for r in 0..nc {
                out[b * nc + r] += p[r] * c[b * nc + r];
            }
        }
    }
    if let Some(ln) = g.layer_norm {
        for b in 0..nb {
            let o = &mut out[b * nc..(b + 1) * nc];
            mean_stddev_normalize(o);
            for r in 0..nc {
                o[r] = ln[r] * o[r] + g.bias[r];
            }
        }
    }
    for v in out[..nb * nc].iter_mut() {
        *v = apply_f32(*v, act);
    }
}

/// TFLite's `MeanStddevNormalization` on one vector.
fn mean_stddev_normalize(v: &mut [f32]) {
    let n = v.len() as f32;
    let mut sum = 0.0f32;
    for &x in v.iter() {
        sum += x;
    }
    let mean = sum / n;
    let mut sq = 0.0f32;
    for &x in v.iter() {
        let d = x - mean;
        sq += d * d;
    }
    let variance = sq / n;
    let inv = 1.0 / (variance + 1e-8).sqrt();
    for x in v.iter_mut() {
        *x = (*x - mean) * inv;
    }
}

/// Scratch memory for the steps.
struct Scratch<'a> {
    gates: [&'a mut [f32]; 4],
    xq: Quantized,
    aq: Quantized,
    hq: Quantized,
    pq: Quantized,
    /// The weights' row sums (hybrid with asymmetric input quantization only).
    sums: Option<&'a HybridSums>,
}

/// Gate `g`'s row sums, or none.
fn gate_sums(sums: Option<&HybridSums>, g: usize) -> &[Option<Vec<i32>>; 3] {
    sums.map_or(&NO_SUMS, |s| &s.gates[g])
}

/// One LSTM step over `nb` batch rows (TFLite's `LstmStepFloat` / `LstmStepHybrid`):
/// `aux` holds the step's aux input rows and their size; row `b` of the result goes to
/// `out[b * out_stride..][..n_output]`.
#[allow(clippy::too_many_arguments, reason = "one step, as lstm_eval's LstmStep*")]
fn step(
    w: &Weights<'_>,
    p: &Params,
    d: Dims,
    hybrid: bool,
    nb: usize,
    x: &[f32],
    aux: Option<(&[f32], usize)>,
    h: &mut [f32],
    c: &mut [f32],
    out: &mut [f32],
    out_stride: usize,
    sc: &mut Scratch<'_>,
) {
    let (nc, no) = (d.n_cell, d.n_output);
    let x_zero = is_zero(x);
    let h_zero = is_zero(h);
    let a_zero = aux.is_none_or(|(a, na)| is_zero(&a[..nb * na]));
    if hybrid {
        if !x_zero {
            sc.xq.quantize(x, nb, d.n_input, p.asymmetric_quantize_inputs);
        }
        if let Some((a, na)) = aux
            && !a_zero
        {
            sc.aq.quantize(a, nb, na, p.asymmetric_quantize_inputs);
        }
        if !h_zero {
            sc.hq.quantize(h, nb, no, p.asymmetric_quantize_inputs);
        }
    }
    let sums = sc.sums;
    let [gi, gf, gc, go] = &mut sc.gates;
    {
        let s = StepInputs { x, x_zero, xq: &sc.xq, aux, a_zero, aq: &sc.aq, h_zero, hq: &sc.hq };
        if let Some(g) = &w.gates[G_INPUT] {
            gate(
                g,
                gate_sums(sums, G_INPUT),
                TfLiteFusedActivation::kTfLiteActSigmoid,
                d,
                nb,
                &s,
                h,
                Some(c),
                hybrid,
                gi,
            );
        }
        if let Some(g) = &w.gates[G_FORGET] {
            gate(
                g,
                gate_sums(sums, G_FORGET),
                TfLiteFusedActivation::kTfLiteActSigmoid,
                d,
                nb,
                &s,
                h,
                Some(c),
                hybrid,
                gf,
            );
        }
        if let Some(g) = &w.gates[G_CELL] {
            gate(g, gate_sums(sums, G_CELL), p.activation, d, nb, &s, h, None, hybrid, gc);
        }
    }
    // c = f ⊙ c + i ⊙ g (CIFG: i = 1 - f), clipped.
    let cifg = w.gates[G_INPUT].is_none();
    for k in 0..nb * nc {
        let mut v = gf[k] * c[k];
        let i = if cifg { 1.0 - gf[k] } else { gi[k] };
        v += gc[k] * i;
        if p.cell_clip > 0.0 {
            v = v.clamp(-p.cell_clip, p.cell_clip);
        }
        c[k] = v;
    }
    {
        let s = StepInputs { x, x_zero, xq: &sc.xq, aux, a_zero, aq: &sc.aq, h_zero, hq: &sc.hq };
        if let Some(g) = &w.gates[G_OUTPUT] {
            gate(
                g,
                gate_sums(sums, G_OUTPUT),
                TfLiteFusedActivation::kTfLiteActSigmoid,
                d,
                nb,
                &s,
                h,
                Some(c),
                hybrid,
                go,
            );
        }
    }
    // h = o ⊙ act(c), projected. TFLite writes act(c) over the cell gate's values, except
    // that with no activation it writes nothing: h is then o ⊙ (cell gate), kept here.
    let tmp = gc; // the cell gate's values are no longer needed
    for k in 0..nb * nc {
        let a =
            if p.activation == TfLiteFusedActivation::kTfLiteActNone { tmp[k] } else { apply_f32(c[k], p.activation) };
        tmp[k] = go[k] * a;
    }
    match w.projection {
        Some(m) => {
            for b in 0..nb {
                let hb = &mut h[b * no..(b + 1) * no];
                match w.projection_bias {
                    Some(pb) => hb.copy_from_slice(pb),
                    None => hb.fill(0.0),
                }
            }
            match m {
                Mat::F32(m) => matmul_acc_f32(m, no, nc, &tmp[..nb * nc], nb, h),
                Mat::I8(m, s) => {
                    if !is_zero(&tmp[..nb * nc]) {
                        sc.pq.quantize(&tmp[..nb * nc], nb, nc, p.asymmetric_quantize_inputs);
                        matmul_acc_i8(m, s, no, nc, &sc.pq, sc.sums.and_then(|s| s.projection.as_deref()), nb, h);
                    }
                }
            }
            if p.proj_clip > 0.0 {
                for v in h[..nb * no].iter_mut() {
                    *v = v.clamp(-p.proj_clip, p.proj_clip);
                }
            }
        }
        None => h[..nb * no].copy_from_slice(&tmp[..nb * no]),
    }
    for b in 0..nb {
        out[b * out_stride..b * out_stride + no].copy_from_slice(&h[b * no..(b + 1) * no]);
    }
}

/// How one pass over the sequence reads and writes beyond the input: the direction, the
/// aux input, and where each output row goes (`out_offset` into rows of `out_stride`
/// floats: the forward and backward halves of a merged bidirectional output).
pub struct Pass<'s> {
    pub reverse: bool,
    /// The aux input (in the input's layout) and its row size.
    pub aux: Option<(&'s [f32], usize)>,
    pub out_offset: usize,
    pub out_stride: usize,
}

/// Runs the whole sequence forward, as UNIDIRECTIONAL_SEQUENCE_LSTM and LSTM do (see
/// [`run_pass`]).
#[allow(clippy::too_many_arguments, reason = "the whole op on slices")]
pub fn run(
    w: &Weights<'_>,
    p: &Params,
    d: Dims,
    hybrid: bool,
    sums: Option<&HybridSums>,
    input: &[f32],
    h: &mut [f32],
    c: &mut [f32],
    output: &mut [f32],
    gate_buf: Option<&mut [f32]>,
) {
    let pass = Pass { reverse: false, aux: None, out_offset: 0, out_stride: d.n_output };
    run_pass(w, p, d, hybrid, sums, input, &pass, h, c, output, gate_buf);
}

/// Runs the whole sequence (TFLite's `EvalFloat` / `EvalHybrid`), in time order or
/// reversed: time-major inputs step all batch rows at once, batch-major ones one row at a
/// time. `input`, the aux input, `output` (`n_batch * max_time` rows of
/// `pass.out_stride`, `pass.out_offset + n_output <= out_stride`) and the states must
/// have the sizes `d` gives (checked by the caller). `gate_buf` holds the four gates'
/// values ([`gate_buffer_len`] floats: the node's temporary, TFLite's `scratch_buffer`);
/// `None` allocates it.
#[allow(clippy::too_many_arguments, reason = "the whole op on slices")]
pub fn run_pass(
    w: &Weights<'_>,
    p: &Params,
    d: Dims,
    hybrid: bool,
    sums: Option<&HybridSums>,
    input: &[f32],
    pass: &Pass<'_>,
    h: &mut [f32],
    c: &mut [f32],
    output: &mut [f32],
    gate_buf: Option<&mut [f32]>,
) {
    let (nb, nc, ni, no, t_max) = (d.n_batch, d.n_cell, d.n_input, d.n_output, d.max_time);
    let (off, stride) = (pass.out_offset, pass.out_stride);
    let na = pass.aux.map_or(0, |(_, na)| na);
    let rows = if p.time_major { nb } else { 1 };
    let n = rows * nc;
    let mut owned = Vec::new();
    let buf = match gate_buf {
        Some(b) if b.len() >= 4 * n => &mut b[..4 * n],
        _ => {
            owned.resize(4 * n, 0.0f32);
            &mut owned[..]
        }
    };
    // Every gate value is written before it is read (the gate kernels set their rows; a
    // gate the layer lacks is never read), but start from zeros as the heap buffer did.
    buf.fill(0.0);
    let (g0, rest) = buf.split_at_mut(n);
    let (g1, rest) = rest.split_at_mut(n);
    let (g2, g3) = rest.split_at_mut(n);
    let mut sc = Scratch {
        gates: [g0, g1, g2, g3],
        xq: Quantized::new(rows, ni),
        aq: Quantized::new(rows, na),
        hq: Quantized::new(rows, no),
        pq: Quantized::new(rows, nc),
        sums,
    };
    let order = |t: usize| if pass.reverse { t_max - 1 - t } else { t };
    if p.time_major {
        for t in (0..t_max).map(order) {
            let x = &input[t * nb * ni..(t + 1) * nb * ni];
            let a = pass.aux.map(|(a, na)| (&a[t * nb * na..(t + 1) * nb * na], na));
            let o = &mut output[t * nb * stride + off..];
            step(w, p, d, hybrid, nb, x, a, h, c, o, stride, &mut sc);
        }
    } else {
        for b in 0..nb {
            for t in (0..t_max).map(order) {
                let k = b * t_max + t;
                let x = &input[k * ni..(k + 1) * ni];
                let a = pass.aux.map(|(a, na)| (&a[k * na..(k + 1) * na], na));
                let o = &mut output[k * stride + off..];
                let (hb, cb) = (&mut h[b * no..(b + 1) * no], &mut c[b * nc..(b + 1) * nc]);
                step(w, p, d, hybrid, 1, x, a, hb, cb, o, stride, &mut sc);
            }
        }
    }
}
