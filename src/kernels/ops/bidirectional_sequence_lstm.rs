//! BIDIRECTIONAL_SEQUENCE_LSTM (TFLite `kernels/bidirectional_sequence_lstm.cc`, stepping
//! with `lstm_eval.cc`'s `EvalFloat` / `EvalHybrid` as UNIDIRECTIONAL_SEQUENCE_LSTM does,
//! in `lstm.rs`).
//!
//! Two LSTM cells over one sequence: the forward cell walks the time steps in order, the
//! backward one in reverse, each with its own output and cell state (variable tensors
//! updated in place). Inputs (48, `-1` for absent optional ones): 0 the input
//! `[batch, time, n_input]` (`[time, batch, n_input]` when `time_major`); 1-17 the forward
//! cell as LSTM's inputs 1-17 (input-to-gate and recurrent-to-gate weights, peepholes,
//! gate biases, projection weights and bias; no layer normalization, no diagonal
//! recurrent weights); 18-34 the backward cell likewise; 35/36 the forward output and
//! cell states, 37/38 the backward ones; 39 an optional aux input; 40-43 the forward
//! aux-input-to-{input, forget, cell, output} weights `[n_cell, n_aux]`, 44-47 the backward
//! ones. Outputs: the forward and backward sequences, or with `merge_outputs` one output
//! whose rows hold the forward values then the backward ones.
//!
//! As TFLite checks it, both cells have the same `n_cell` and `n_output` (each cell's
//! tensors are checked against both cells' sizes). The aux input: with aux weights both
//! cells add `W_aux·aux` to each gate (stacked layers with cross links); without them the
//! backward cell reads the aux input in place of the input (stacked without cross links),
//! so it must have the input's shape.
//!
//! Types: float32 (version 1); hybrid (versions 2 and 3: float32 activations, int8
//! weights with per-tensor scales, each step's input, aux input and output state quantized
//! per batch row, symmetrically or with `asymmetric_quantize_inputs`).
//!
//! Refused at Prepare: a merged batch-major output with more than one batch row (TFLite
//! offsets each batch row's states by the merged row size there, reading and writing past
//! the state tensors), and uint8 weights (which TFLite's hybrid kernel reads as int8).

use super::lstm::{self, Dims, Gate, HybridSums, Params, Pass, Rec, Weights};
use crate::abi::builtin_op_data::TfLiteBidirectionalSequenceLSTMParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{in_op, op_error};

const OP: &str = "BIDIRECTIONAL_SEQUENCE_LSTM";

/// The BIDIRECTIONAL_SEQUENCE_LSTM registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<BidiLstm>(TfLiteBuiltinOperator::kTfLiteBuiltinBidirectionalSequenceLstm)
}

const N_INPUTS: usize = 48;
const INPUT: usize = 0;
/// First input of each cell's 17 tensors, laid out as LSTM's inputs 1-17.
const FW: usize = 1;
const BW: usize = 18;
// Offsets within a cell's block.
const INPUT_TO_GATE: [usize; 4] = [0, 1, 2, 3];
const RECURRENT_TO_GATE: [usize; 4] = [4, 5, 6, 7];
/// Peephole weights per gate (the cell gate has none).
const CELL_TO_GATE: [Option<usize>; 4] = [Some(8), Some(9), None, Some(10)];
const GATE_BIAS: [usize; 4] = [11, 12, 13, 14];
const PROJECTION_WEIGHTS: usize = 15;
const PROJECTION_BIAS: usize = 16;
/// Output and cell state of each cell.
const FW_STATES: [usize; 2] = [35, 36];
const BW_STATES: [usize; 2] = [37, 38];
const AUX_INPUT: usize = 39;
/// First aux-input-to-gate weights of each cell (input, forget, cell, output).
const FW_AUX: usize = 40;
const BW_AUX: usize = 44;
const G_INPUT: usize = 0;
const GATE_NAMES: [&str; 4] = ["input", "forget", "cell", "output"];

/// How the aux input is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Aux {
    None,
    /// Both cells add `W_aux·aux` (rows of the given size).
    CrossLinks(usize),
    /// The backward cell reads the aux input as its input.
    BackwardInput,
}

/// What Prepare works out once.
struct Plan {
    p: Params,
    d: Dims,
    hybrid: bool,
    aux: Aux,
    merged: bool,
    /// Each cell's weight row sums (asymmetric hybrid with constant weights).
    sums: Option<[HybridSums; 2]>,
}

struct BidiLstm;

impl BuiltinKernel for BidiLstm {
    const NAME: &'static str = OP;
    type Params = TfLiteBidirectionalSequenceLSTMParams;
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteBidirectionalSequenceLSTMParams) -> Result<Plan> {
        let mut plan = check(ctx, p)?;
        let input = ctx.input(INPUT).map_err(in_op(OP))?;
        let n_out = i32::try_from(plan.d.n_output).map_err(|_| op_error(OP, "n_output too large"))?;
        let row = |units: i32| vec![input.shape[0], input.shape[1], units];
        if plan.merged {
            let both = n_out.checked_mul(2).ok_or_else(|| op_error(OP, "n_output too large"))?;
            ctx.set_output_type(0, TfLiteType::kTfLiteFloat32).map_err(in_op(OP))?;
            ctx.resize_output(0, &row(both)).map_err(in_op(OP))?;
        } else {
            for o in 0..2 {
                ctx.set_output_type(o, TfLiteType::kTfLiteFloat32).map_err(in_op(OP))?;
                ctx.resize_output(o, &row(n_out)).map_err(in_op(OP))?;
            }
        }
        // The gates' values: one node temporary shared by the two passes.
        let bytes = lstm::gate_buffer_len(&plan.p, plan.d)
            .and_then(|n| n.checked_mul(4))
            .ok_or_else(|| op_error(OP, "gate buffer size overflow"))?;
        ctx.request_temporaries(&[bytes]).map_err(in_op(OP))?;
        if plan.hybrid && plan.p.asymmetric_quantize_inputs && weights_constant(ctx)? {
            plan.sums = Some(row_sums(ctx, &plan)?);
        }
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteBidirectionalSequenceLSTMParams, plan: &mut Plan) -> Result<()> {
        eval(ctx, plan)
    }
}

fn dim(t: &TensorView<'_>, i: usize) -> usize {
    t.shape.get(i).map_or(0, |&d| d.max(0) as usize)
}

fn ensure(cond: bool, msg: impl FnOnce() -> String) -> Result<()> {
    if cond { Ok(()) } else { Err(op_error(OP, msg())) }
}

fn is_shape(t: &TensorView<'_>, want: &[usize]) -> bool {
    t.shape.len() == want.len() && t.shape.iter().zip(want).all(|(&a, &b)| a >= 0 && a as usize == b)
}

fn cell_name(base: usize) -> &'static str {
    if base == FW { "forward" } else { "backward" }
}

/// Checks one cell's 17 tensors against the sizes (TFLite's
/// `CheckLstmTensorDimensionsAndTypes`); returns whether it is a CIFG cell.
fn check_cell(ctx: &OpCtx<'_>, base: usize, d: &Dims, wtype: TfLiteType) -> Result<bool> {
    let name = cell_name(base);
    let (nc, ni, no) = (d.n_cell, d.n_input, d.n_output);
    let get = |i: usize| ctx.optional_input(base + i).map_err(in_op(OP));
    let cifg = get(INPUT_TO_GATE[G_INPUT])?.is_none();
    ensure(cifg == get(RECURRENT_TO_GATE[G_INPUT])?.is_none(), || {
        format!("the {name} input-to-input and recurrent-to-input weights must be both present or both absent")
    })?;
    for g in 0..4 {
        let (w, r) = (get(INPUT_TO_GATE[g])?, get(RECURRENT_TO_GATE[g])?);
        let (w, r) = match (w, r) {
            (Some(w), Some(r)) => (w, r),
            _ if g == G_INPUT => continue,
            _ => return Err(op_error(OP, format!("the {name} {} gate weights are missing", GATE_NAMES[g]))),
        };
        ensure(is_shape(&w, &[nc, ni]) && w.dtype == wtype, || {
            format!(
                "the {name} input-to-{} weights must be {} [{nc}, {ni}], not {} {:?}",
                GATE_NAMES[g],
                wtype.name(),
                w.dtype.name(),
                w.shape
            )
        })?;
        ensure(is_shape(&r, &[nc, no]) && r.dtype == wtype, || {
            format!(
                "the {name} recurrent-to-{} weights must be {} [{nc}, {no}], not {} {:?}",
                GATE_NAMES[g],
                wtype.name(),
                r.dtype.name(),
                r.shape
            )
        })?;
    }
    let mut peepholes = [false; 4];
    for g in 0..4 {
        let Some(i) = CELL_TO_GATE[g] else { continue };
        if let Some(w) = get(i)? {
            ensure(is_shape(&w, &[nc]) && w.dtype == wtype, || {
                format!("the {name} {} peephole weights must be {} [{nc}]", GATE_NAMES[g], wtype.name())
            })?;
            peepholes[g] = true;
        }
    }
    let [pi, pf, _, po] = peepholes;
    ensure(((pi || cifg) && pf && po) || (!pi && !pf && !po), || {
        format!("the {name} peephole weights must be all present or all absent")
    })?;
    for g in 0..4 {
        match get(GATE_BIAS[g])? {
            None if g == G_INPUT && cifg => {}
            Some(_) if g == G_INPUT && cifg => {
                return Err(op_error(OP, format!("the {name} CIFG cell must not have an input gate bias")));
            }
            None => return Err(op_error(OP, format!("the {name} {} gate bias is missing", GATE_NAMES[g]))),
            Some(b) => ensure(is_shape(&b, &[nc]) && b.dtype == TfLiteType::kTfLiteFloat32, || {
                format!("the {name} {} gate bias must be float32 [{nc}]", GATE_NAMES[g])
            })?,
        }
    }
    let pw = get(PROJECTION_WEIGHTS)?;
    let pb = get(PROJECTION_BIAS)?;
    match &pw {
        Some(w) => ensure(is_shape(w, &[no, nc]) && w.dtype == wtype, || {
            format!("the {name} projection weights must be {} [{no}, {nc}]", wtype.name())
        })?,
        None => {
            ensure(pb.is_none(), || format!("the {name} projection bias needs projection weights"))?;
            ensure(no == nc, || format!("without projection n_output ({no}) must equal n_cell ({nc})"))?;
        }
    }
    if let Some(b) = &pb {
        ensure(is_shape(b, &[no]) && b.dtype == TfLiteType::kTfLiteFloat32, || {
            format!("the {name} projection bias must be float32 [{no}]")
        })?;
    }
    Ok(cifg)
}

/// Checks the aux input and weights; returns how the aux input is used.
fn check_aux(ctx: &OpCtx<'_>, input: &TensorView<'_>, nc: usize, wtype: TfLiteType, cifg: [bool; 2]) -> Result<Aux> {
    let get = |i: usize| ctx.optional_input(i).map_err(in_op(OP));
    let aux_input = get(AUX_INPUT)?;
    // Forget, cell and output aux weights of both cells: all or none.
    let mut present = Vec::new();
    for base in [FW_AUX, BW_AUX] {
        for g in 1..4 {
            present.push(get(base + g)?.is_some());
        }
    }
    let any = present.iter().any(|&p| p);
    ensure(!any || present.iter().all(|&p| p), || {
        "the forget, cell and output aux weights of both cells must be all present or all absent".into()
    })?;
    let Some(a) = aux_input else {
        ensure(!any, || "aux weights are given without an aux input".into())?;
        return Ok(Aux::None);
    };
    ensure(a.dtype == TfLiteType::kTfLiteFloat32 && a.shape.len() == 3, || {
        format!("the aux input must be a float32 tensor of rank 3, not {} {:?}", a.dtype.name(), a.shape)
    })?;
    if !any {
        ensure(a.shape == input.shape, || {
            format!(
                "the aux input {:?} read by the backward cell must have the input's shape {:?}",
                a.shape, input.shape
            )
        })?;
        return Ok(Aux::BackwardInput);
    }
    ensure(a.shape[..2] == input.shape[..2], || {
        format!("the aux input {:?} must match the input {:?} but for its last dimension", a.shape, input.shape)
    })?;
    let na = dim(&a, 2);
    for (k, base) in [FW_AUX, BW_AUX].into_iter().enumerate() {
        for (g, gate) in GATE_NAMES.iter().enumerate() {
            let name = cell_name(if k == 0 { FW } else { BW });
            match get(base + g)? {
                // TFLite reads the input gate's aux weights whenever the cell has an input gate.
                None if g == G_INPUT && !cifg[k] => {
                    return Err(op_error(OP, format!("the {name} aux-input-to-input weights are missing")));
                }
                // (A CIFG cell's input-gate aux weights are checked, then never read.)
                None => {}
                Some(w) => ensure(is_shape(&w, &[nc, na]) && w.dtype == wtype, || {
                    format!(
                        "the {name} aux-input-to-{gate} weights must be {} [{nc}, {na}], not {} {:?}",
                        wtype.name(),
                        w.dtype.name(),
                        w.shape
                    )
                })?,
            }
        }
    }
    Ok(Aux::CrossLinks(na))
}

fn check(ctx: &OpCtx<'_>, p: &TfLiteBidirectionalSequenceLSTMParams) -> Result<Plan> {
    use TfLiteType::{kTfLiteFloat32 as F32, kTfLiteInt8 as I8};
    let outs = if p.merge_outputs { 1 } else { 2 };
    ensure(ctx.num_inputs() == N_INPUTS && ctx.num_outputs() == outs, || {
        format!("expects {N_INPUTS} inputs and {outs} output(s), got {} and {}", ctx.num_inputs(), ctx.num_outputs())
    })?;
    ensure(p.cell_clip >= 0.0 && p.proj_clip >= 0.0, || "cell_clip and proj_clip must be >= 0".into())?;
    let input = ctx.input(INPUT).map_err(in_op(OP))?;
    ensure(input.dtype == F32 && input.shape.len() == 3, || {
        format!("the input must be a float32 tensor of rank 3, not {} {:?}", input.dtype.name(), input.shape)
    })?;
    let (lead0, lead1, n_input) = (dim(&input, 0), dim(&input, 1), dim(&input, 2));
    let in2out = ctx.input(FW + INPUT_TO_GATE[3]).map_err(in_op(OP))?;
    let wtype = in2out.dtype;
    ensure(wtype == F32 || wtype == I8, || format!("weights of type {} are not supported", wtype.name()))?;
    let hybrid = wtype == I8;
    ensure(in2out.shape.len() == 2, || {
        format!("the forward input-to-output weights must have rank 2, not {:?}", in2out.shape)
    })?;
    let n_cell = dim(&in2out, 0);
    let rec2out = ctx.input(FW + RECURRENT_TO_GATE[3]).map_err(in_op(OP))?;
    ensure(rec2out.shape.len() == 2, || {
        format!("the forward recurrent-to-output weights must have rank 2, not {:?}", rec2out.shape)
    })?;
    let n_output = dim(&rec2out, 1);
    let time_major = p.time_major;
    let (max_time, n_batch) = if time_major { (lead0, lead1) } else { (lead1, lead0) };
    let d = Dims { n_batch, max_time, n_input, n_cell, n_output };
    let cifg = [check_cell(ctx, FW, &d, wtype)?, check_cell(ctx, BW, &d, wtype)?];
    for (states, name) in [(FW_STATES, "forward"), (BW_STATES, "backward")] {
        for (i, what, n) in [(states[0], "output", n_output), (states[1], "cell", n_cell)] {
            let s = ctx.variable_input(i).map_err(in_op(OP))?;
            let want = n_batch.checked_mul(n).ok_or_else(|| op_error(OP, "state size overflow"))?;
            ensure(s.dtype == F32 && s.num_elements() == want, || {
                format!(
                    "the {name} {what} state must be float32 with {want} elements, not {} {:?}",
                    s.dtype.name(),
                    s.shape
                )
            })?;
        }
    }
    if p.merge_outputs && !time_major {
        ensure(n_batch <= 1, || {
            "a merged batch-major output supports one batch row only (TFLite offsets the states by the merged row size)"
                .into()
        })?;
    }
    if hybrid {
        for i in (1..=34).chain(40..=47) {
            if let Some(w) = ctx.optional_input(i).map_err(in_op(OP))?
                && w.dtype == I8
                && w.quant().zero_point != 0
            {
                return Err(op_error(OP, format!("hybrid weights must be symmetric (zero point 0); input {i} is not")));
            }
        }
    }
    let aux = check_aux(ctx, &input, n_cell, wtype, cifg)?;
    let params = Params {
        activation: p.activation,
        cell_clip: p.cell_clip,
        proj_clip: p.proj_clip,
        time_major,
        asymmetric_quantize_inputs: hybrid && p.asymmetric_quantize_inputs,
    };
    Ok(Plan { p: params, d, hybrid, aux, merged: p.merge_outputs, sums: None })
}

/// True if every weight and bias (all inputs but the input, the states and the aux input)
/// is absent or a model constant.
fn weights_constant(ctx: &OpCtx<'_>) -> Result<bool> {
    for i in (1..=34).chain(40..=47) {
        if ctx.optional_input(i).map_err(in_op(OP))?.is_some_and(|t| !t.is_constant()) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One cell's weights; `aux` the first of its aux weights when they are used.
fn gather<'a>(ctx: &OpCtx<'a>, base: usize, aux: Option<usize>) -> Result<Weights<'a>> {
    let get = |i: usize| ctx.optional_input(i).map_err(in_op(OP));
    let f32s = |t: TensorView<'a>| t.data::<f32>().map_err(in_op(OP));
    let mut gates: [Option<Gate<'a>>; 4] = [None, None, None, None];
    for (g, slot) in gates.iter_mut().enumerate() {
        let (Some(w), Some(r)) = (get(base + INPUT_TO_GATE[g])?, get(base + RECURRENT_TO_GATE[g])?) else { continue };
        let peephole = match CELL_TO_GATE[g].map(|i| get(base + i)).transpose()?.flatten() {
            Some(t) if t.dtype == TfLiteType::kTfLiteInt8 => {
                let s = t.quant().scale;
                Some(t.data::<i8>().map_err(in_op(OP))?.iter().map(|&v| s * f32::from(v)).collect())
            }
            Some(t) => Some(f32s(t)?.to_vec()),
            None => None,
        };
        let aux = match aux {
            Some(a) => get(a + g)?.map(|t| lstm::mat(&t)).transpose().map_err(in_op(OP))?,
            None => None,
        };
        let bias = f32s(ctx.input(base + GATE_BIAS[g]).map_err(in_op(OP))?)?;
        *slot = Some(Gate {
            input: lstm::mat(&w).map_err(in_op(OP))?,
            aux,
            recurrent: Rec::Full(lstm::mat(&r).map_err(in_op(OP))?),
            peephole,
            layer_norm: None,
            bias,
        });
    }
    let projection = get(base + PROJECTION_WEIGHTS)?.map(|t| lstm::mat(&t)).transpose().map_err(in_op(OP))?;
    let projection_bias = get(base + PROJECTION_BIAS)?.map(f32s).transpose()?;
    Ok(Weights { gates, projection, projection_bias })
}

/// Both cells' weights.
fn cells<'a>(ctx: &OpCtx<'a>, plan: &Plan) -> Result<[Weights<'a>; 2]> {
    let cross = matches!(plan.aux, Aux::CrossLinks(_));
    Ok([gather(ctx, FW, cross.then_some(FW_AUX))?, gather(ctx, BW, cross.then_some(BW_AUX))?])
}

fn aux_size(plan: &Plan) -> usize {
    if let Aux::CrossLinks(n) = plan.aux { n } else { 0 }
}

fn row_sums(ctx: &OpCtx<'_>, plan: &Plan) -> Result<[HybridSums; 2]> {
    let [fw, bw] = cells(ctx, plan)?;
    let na = aux_size(plan);
    Ok([HybridSums::new(&fw, plan.d, na), HybridSums::new(&bw, plan.d, na)])
}

fn eval(ctx: &OpCtx<'_>, plan: &Plan) -> Result<()> {
    let (p, d) = (plan.p, plan.d);
    let weights = cells(ctx, plan)?;
    let computed;
    let sums = match &plan.sums {
        Some(s) => Some(s),
        None if plan.hybrid && p.asymmetric_quantize_inputs => {
            computed = row_sums(ctx, plan)?;
            Some(&computed)
        }
        None => None,
    };
    let f32_input = |i: usize| ctx.input(i).and_then(|t| t.data::<f32>()).map_err(in_op(OP));
    let input = f32_input(INPUT)?;
    let aux_input = if plan.aux == Aux::None { None } else { Some(f32_input(AUX_INPUT)?) };
    let na = aux_size(plan);
    let mut out0 = ctx.output(0).map_err(in_op(OP))?;
    let mut out1 = if plan.merged { None } else { Some(ctx.output(1).map_err(in_op(OP))?) };
    let (nb, nt, ni, nc, no) = (d.n_batch, d.max_time, d.n_input, d.n_cell, d.n_output);
    let stride = if plan.merged { 2 * no } else { no };
    let rows = nb * nt;
    let ok = input.len() == rows * ni
        && aux_input.is_none_or(|a| a.len() == if na > 0 { rows * na } else { rows * ni })
        && out0.data_mut::<f32>().map_err(in_op(OP))?.len() == rows * stride;
    ensure(ok, || "tensor sizes do not match the shapes checked at Prepare".into())?;
    let gate_buf = ctx.temporary_mut::<f32>(0).map_err(in_op(OP))?;
    let cross = aux_input.filter(|_| na > 0).map(|a| (a, na));
    let bw_input = match (plan.aux, aux_input) {
        (Aux::BackwardInput, Some(a)) => a,
        _ => input,
    };
    for (k, states) in [FW_STATES, BW_STATES].into_iter().enumerate() {
        let mut hs = ctx.variable_input(states[0]).map_err(in_op(OP))?;
        let mut cs = ctx.variable_input(states[1]).map_err(in_op(OP))?;
        let (h, c) = (hs.data_mut::<f32>().map_err(in_op(OP))?, cs.data_mut::<f32>().map_err(in_op(OP))?);
        ensure(h.len() == nb * no && c.len() == nb * nc, || {
            "the state sizes do not match the shapes Prepare saw".into()
        })?;
        let (x, output, off) = match (k, out1.as_mut()) {
            (0, _) => (input, out0.data_mut::<f32>().map_err(in_op(OP))?, 0),
            (_, Some(o)) => (bw_input, o.data_mut::<f32>().map_err(in_op(OP))?, 0),
            (_, None) => (bw_input, out0.data_mut::<f32>().map_err(in_op(OP))?, no),
        };
        let out_stride = if plan.merged { stride } else { no };
        ensure(output.len() == rows * out_stride, || "the output size does not match the shapes Prepare saw".into())?;
        let pass = Pass { reverse: k == 1, aux: cross, out_offset: off, out_stride };
        let s = sums.map(|s| &s[k]);
        lstm::run_pass(&weights[k], &p, d, plan.hybrid, s, x, &pass, h, c, output, Some(&mut gate_buf[..]));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::builtin_op_data::TfLiteFusedActivation::{self, *};
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::ops::lstm::Mat;
    use crate::kernels::test_util::{Graph, qp};

    fn sigmoid(x: f32) -> f32 {
        1.0 / (1.0 + (-x).exp())
    }

    /// Deterministic values in [-0.5, 0.5).
    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n as u32)
            .map(|i| ((i.wrapping_mul(2654435761).wrapping_add(seed * 97)) % 1000) as f32 / 1000.0 - 0.5)
            .collect()
    }

    /// Float weights of a full (non-CIFG) cell: input, aux and recurrent matrices and biases.
    struct Owned {
        w: [Vec<f32>; 4],
        a: [Vec<f32>; 4],
        r: [Vec<f32>; 4],
        b: [Vec<f32>; 4],
    }

    fn owned(d: Dims, na: usize) -> Owned {
        let (nc, ni, no) = (d.n_cell, d.n_input, d.n_output);
        let mk = |n: usize, s: u32| -> [Vec<f32>; 4] { core::array::from_fn(|g| values(n, s + g as u32)) };
        Owned { w: mk(nc * ni, 1), a: mk(nc * na, 11), r: mk(nc * no, 21), b: mk(nc, 31) }
    }

    fn weights(o: &Owned, aux: bool) -> Weights<'_> {
        let gates = core::array::from_fn(|g| {
            Some(Gate {
                input: Mat::F32(&o.w[g]),
                aux: aux.then_some(Mat::F32(&o.a[g])),
                recurrent: Rec::Full(Mat::F32(&o.r[g])),
                peephole: None,
                layer_norm: None,
                bias: &o.b[g],
            })
        });
        Weights { gates, projection: None, projection_bias: None }
    }

    fn params(time_major: bool, activation: TfLiteFusedActivation) -> Params {
        Params { activation, cell_clip: 0.0, proj_clip: 0.0, time_major, asymmetric_quantize_inputs: false }
    }

    /// One pass from zero states; returns the output.
    fn pass(w: &Weights<'_>, p: &Params, d: Dims, x: &[f32], pass: &Pass<'_>, out_len: usize) -> Vec<f32> {
        let mut h = vec![0.0; d.n_batch * d.n_output];
        let mut c = vec![0.0; d.n_batch * d.n_cell];
        let mut out = vec![0.0; out_len];
        lstm::run_pass(w, p, d, false, None, x, pass, &mut h, &mut c, &mut out, None);
        out
    }

    fn plain(no: usize) -> Pass<'static> {
        Pass { reverse: false, aux: None, out_offset: 0, out_stride: no }
    }

    /// Reverses the time axis of `[batch, time, n]` (or `[time, batch, n]`) rows.
    fn reverse_time(v: &[f32], d: Dims, n: usize, time_major: bool) -> Vec<f32> {
        let (nb, nt) = (d.n_batch, d.max_time);
        let mut r = vec![0.0; v.len()];
        for b in 0..nb {
            for t in 0..nt {
                let (src, dst) =
                    if time_major { (t * nb + b, (nt - 1 - t) * nb + b) } else { (b * nt + t, b * nt + nt - 1 - t) };
                r[dst * n..(dst + 1) * n].copy_from_slice(&v[src * n..(src + 1) * n]);
            }
        }
        r
    }

    const D: Dims = Dims { n_batch: 2, max_time: 3, n_input: 2, n_cell: 3, n_output: 3 };

    #[test]
    fn reverse_pass_is_the_forward_pass_of_the_reversed_sequence() {
        let o = owned(D, 0);
        let w = weights(&o, false);
        let x = values(D.n_batch * D.max_time * D.n_input, 5);
        for time_major in [false, true] {
            let p = params(time_major, kTfLiteActTanh);
            let n = D.n_batch * D.max_time * D.n_output;
            let back = pass(&w, &p, D, &x, &Pass { reverse: true, ..plain(D.n_output) }, n);
            let xr = reverse_time(&x, D, D.n_input, time_major);
            let fwd = pass(&w, &p, D, &xr, &plain(D.n_output), n);
            assert_eq!(back, reverse_time(&fwd, D, D.n_output, time_major), "time_major {time_major}");
        }
    }

    #[test]
    fn merged_output_holds_each_half_at_its_offset() {
        let o = owned(D, 0);
        let w = weights(&o, false);
        let x = values(D.n_batch * D.max_time * D.n_input, 7);
        let rows = D.n_batch * D.max_time;
        for time_major in [false, true] {
            let p = params(time_major, kTfLiteActTanh);
            let alone = pass(&w, &p, D, &x, &plain(D.n_output), rows * D.n_output);
            let stride = 2 * D.n_output;
            let merged =
                pass(&w, &p, D, &x, &Pass { out_offset: D.n_output, out_stride: stride, ..plain(0) }, rows * stride);
            for r in 0..rows {
                assert_eq!(&merged[r * stride..r * stride + D.n_output], &[0.0; 3]);
                assert_eq!(
                    &merged[r * stride + D.n_output..(r + 1) * stride],
                    &alone[r * D.n_output..(r + 1) * D.n_output]
                );
            }
        }
    }

    #[test]
    fn aux_weights_act_as_extra_input_columns() {
        let na = 2;
        let o = owned(D, na);
        let x = values(D.n_batch * D.max_time * D.n_input, 3);
        let aux = values(D.n_batch * D.max_time * na, 4);
        // The same cell over the rows [x | aux] with the weights [W | W_aux].
        let wide = Dims { n_input: D.n_input + na, ..D };
        let cat: [Vec<f32>; 4] = core::array::from_fn(|g| {
            (0..D.n_cell)
                .flat_map(|r| {
                    let w = &o.w[g][r * D.n_input..(r + 1) * D.n_input];
                    w.iter().chain(&o.a[g][r * na..(r + 1) * na]).copied().collect::<Vec<_>>()
                })
                .collect()
        });
        let xcat: Vec<f32> = (0..D.n_batch * D.max_time)
            .flat_map(|k| {
                x[k * D.n_input..(k + 1) * D.n_input]
                    .iter()
                    .chain(&aux[k * na..(k + 1) * na])
                    .copied()
                    .collect::<Vec<_>>()
            })
            .collect();
        let wide_owned = Owned { w: cat, a: o.a.clone(), r: o.r.clone(), b: o.b.clone() };
        let n = D.n_batch * D.max_time * D.n_output;
        for time_major in [false, true] {
            let p = params(time_major, kTfLiteActTanh);
            let with_aux = pass(&weights(&o, true), &p, D, &x, &Pass { aux: Some((&aux, na)), ..plain(D.n_output) }, n);
            let concat = pass(&weights(&wide_owned, false), &p, wide, &xcat, &plain(D.n_output), n);
            for (a, b) in with_aux.iter().zip(&concat) {
                assert!((a - b).abs() < 1e-6, "{a} vs {b}");
            }
        }
    }

    /// Biases only (zero weights), one unit: the gates are constants.
    const BIAS: [f32; 4] = [0.5, -0.3, 0.8, 0.2];

    fn bias_only(act: TfLiteFusedActivation) -> [f32; 2] {
        let z = [0.0f32];
        let b: [[f32; 1]; 4] = BIAS.map(|v| [v]);
        let gates = core::array::from_fn(|g| {
            Some(Gate {
                input: Mat::F32(&z),
                aux: None,
                recurrent: Rec::Full(Mat::F32(&z)),
                peephole: None,
                layer_norm: None,
                bias: &b[g],
            })
        });
        let w = Weights { gates, projection: None, projection_bias: None };
        let d = Dims { n_batch: 1, max_time: 2, n_input: 1, n_cell: 1, n_output: 1 };
        let out = pass(&w, &params(true, act), d, &[1.0, -1.0], &plain(1), 2);
        [out[0], out[1]]
    }

    #[test]
    fn bias_only_steps_by_hand() {
        let (i, f, g, o) = (sigmoid(BIAS[0]), sigmoid(BIAS[1]), BIAS[2].tanh(), sigmoid(BIAS[3]));
        let c1 = i * g;
        let c2 = f * c1 + i * g;
        let out = bias_only(kTfLiteActTanh);
        assert!((out[0] - o * c1.tanh()).abs() < 1e-6);
        assert!((out[1] - o * c2.tanh()).abs() < 1e-6);
        // Without an activation TFLite's output is the output gate times the cell gate.
        let out = bias_only(kTfLiteActNone);
        assert!((out[0] - o * BIAS[2]).abs() < 1e-6 && (out[1] - o * BIAS[2]).abs() < 1e-6);
    }

    // ---- The op through its registration ------------------------------------------------

    use TfLiteType::{kTfLiteFloat32 as F32, kTfLiteInt8 as I8};

    /// A one-unit bidirectional LSTM model, bias-only weights (see `BIAS`).
    struct Model {
        g: Graph,
        inputs: Vec<i32>,
        outputs: Vec<i32>,
        params: TfLiteBidirectionalSequenceLSTMParams,
    }

    fn model(batch: i32, time: i32, time_major: bool, merge: bool, hybrid: bool) -> Model {
        let mut g = Graph::new();
        let lead = if time_major { [time, batch] } else { [batch, time] };
        let n = (batch * time) as usize;
        let mut inputs = vec![g.tensor(F32, &[lead[0], lead[1], 1], &vec![1.0f32; n], None, false)];
        for _ in 0..2 {
            for _ in 0..8 {
                inputs.push(if hybrid {
                    g.tensor(I8, &[1, 1], &[0i8], Some(qp(0.1, 0)), true)
                } else {
                    g.tensor(F32, &[1, 1], &[0.0f32], None, true)
                });
            }
            inputs.extend([-1, -1, -1]);
            for b in BIAS {
                inputs.push(g.tensor(F32, &[1], &[b], None, true));
            }
            inputs.extend([-1, -1]);
        }
        let state_rows = if time_major { lead[1] } else { lead[0] };
        for _ in 0..4 {
            inputs.push(g.variable(F32, &[state_rows, 1], &vec![0.0; state_rows as usize]));
        }
        inputs.extend([-1; 9]);
        let outputs = if merge { vec![g.output(F32, None)] } else { vec![g.output(F32, None), g.output(F32, None)] };
        let params = TfLiteBidirectionalSequenceLSTMParams {
            activation: kTfLiteActTanh,
            cell_clip: 0.0,
            proj_clip: 0.0,
            merge_outputs: merge,
            time_major,
            asymmetric_quantize_inputs: false,
        };
        Model { g, inputs, outputs, params }
    }

    impl Model {
        fn run(&mut self) -> TfLiteStatus {
            let (ins, outs, p) = (self.inputs.clone(), self.outputs.clone(), self.params);
            self.g.run(&registration(), &ins, &outs, Some(p))
        }
    }

    #[test]
    fn runs_both_directions() {
        let (i, f, g, o) = (sigmoid(BIAS[0]), sigmoid(BIAS[1]), BIAS[2].tanh(), sigmoid(BIAS[3]));
        let (h1, h2) = (o * (i * g).tanh(), o * (f * i * g + i * g).tanh());
        for (time_major, merge) in [(false, false), (true, false), (true, true), (false, true)] {
            let mut m = model(1, 2, time_major, merge, false);
            assert_eq!(m.run(), TfLiteStatus::kTfLiteOk);
            let got: Vec<f32> = m.outputs.iter().flat_map(|&o| m.g.data::<f32>(o)).collect();
            // Forward h1 then h2; backward starts at the last step: h2 at step 0, h1 at step 1.
            // Separate: [fw t0, fw t1], [bw t0, bw t1]; merged: [fw t0, bw t0], [fw t1, bw t1];
            // the same sequence of values either way.
            let want = [h1, h2, h2, h1];
            for (a, b) in got.iter().zip(&want) {
                assert!((a - b).abs() < 1e-6, "{time_major} {merge}: {got:?} vs {want:?}");
            }
            let lead = if time_major { [2, 1] } else { [1, 2] };
            assert_eq!(m.g.shape(m.outputs[0]), [lead[0], lead[1], if merge { 2 } else { 1 }]);
        }
    }

    #[test]
    fn hybrid_runs_with_zero_weights() {
        let (i, f, g, o) = (sigmoid(BIAS[0]), sigmoid(BIAS[1]), BIAS[2].tanh(), sigmoid(BIAS[3]));
        let (h1, h2) = (o * (i * g).tanh(), o * (f * i * g + i * g).tanh());
        for time_major in [false, true] {
            let mut m = model(2, 2, time_major, false, true);
            assert_eq!(m.run(), TfLiteStatus::kTfLiteOk);
            // Two batch rows of two steps with constant gates.
            let want = if time_major { [h1, h1, h2, h2] } else { [h1, h2, h1, h2] };
            let fw = m.g.data::<f32>(m.outputs[0]);
            assert!(fw.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6), "{fw:?}");
        }
    }

    fn fails(mut m: Model) {
        assert_eq!(m.run(), TfLiteStatus::kTfLiteError);
    }

    #[test]
    fn refuses_malformed_nodes() {
        // Wrong input count.
        let mut m = model(1, 2, false, false, false);
        m.inputs.pop();
        fails(m);
        // Wrong output count for the merge option.
        let mut m = model(1, 2, false, false, false);
        m.params.merge_outputs = true;
        fails(m);
        // A missing mandatory tensor (the forward input-to-forget weights).
        let mut m = model(1, 2, false, false, false);
        m.inputs[2] = -1;
        fails(m);
        // A missing gate bias of the backward cell.
        let mut m = model(1, 2, false, false, false);
        m.inputs[BW + GATE_BIAS[2]] = -1;
        fails(m);
        // Mismatched shapes: backward recurrent weights of another size.
        let mut m = model(1, 2, false, false, false);
        m.inputs[BW + RECURRENT_TO_GATE[1]] = m.g.tensor(F32, &[1, 2], &[0.0f32; 2], None, true);
        fails(m);
        // Mismatched types: float input weights among int8 ones.
        let mut m = model(1, 2, false, false, true);
        m.inputs[FW + INPUT_TO_GATE[1]] = m.g.tensor(F32, &[1, 1], &[0.0f32], None, true);
        fails(m);
        // A state of the wrong size.
        let mut m = model(2, 2, false, false, false);
        m.inputs[BW_STATES[1]] = m.g.variable(F32, &[1, 1], &[0.0]);
        fails(m);
        // A state that is not a variable tensor.
        let mut m = model(1, 2, false, false, false);
        m.inputs[FW_STATES[0]] = m.g.tensor(F32, &[1, 1], &[0.0f32], None, false);
        fails(m);
        // Half the peepholes.
        let mut m = model(1, 2, false, false, false);
        m.inputs[FW + 9] = m.g.tensor(F32, &[1], &[0.0f32], None, true);
        fails(m);
        // Negative clipping.
        let mut m = model(1, 2, false, false, false);
        m.params.cell_clip = -1.0;
        fails(m);
        // A rank-2 input.
        let mut m = model(1, 2, false, false, false);
        m.inputs[0] = m.g.tensor(F32, &[2, 1], &[0.0f32; 2], None, false);
        fails(m);
    }

    #[test]
    fn refuses_bad_aux_inputs() {
        // Aux weights without an aux input.
        let mut m = model(1, 2, false, false, false);
        for i in 40..48 {
            m.inputs[i] = m.g.tensor(F32, &[1, 1], &[0.0f32], None, true);
        }
        fails(m);
        // Only some aux weights.
        let mut m = model(1, 2, false, false, false);
        m.inputs[AUX_INPUT] = m.g.tensor(F32, &[1, 2, 1], &[0.0f32; 2], None, false);
        m.inputs[41] = m.g.tensor(F32, &[1, 1], &[0.0f32], None, true);
        fails(m);
        // The backward cell's input (no aux weights) of another shape.
        let mut m = model(1, 2, false, false, false);
        m.inputs[AUX_INPUT] = m.g.tensor(F32, &[1, 2, 3], &[0.0f32; 6], None, false);
        fails(m);
        // Aux weights whose columns do not match the aux input.
        let mut m = model(1, 2, false, false, false);
        m.inputs[AUX_INPUT] = m.g.tensor(F32, &[1, 2, 2], &[0.0f32; 4], None, false);
        for i in 40..48 {
            m.inputs[i] = m.g.tensor(F32, &[1, 3], &[0.0f32; 3], None, true);
        }
        fails(m);
        // The same with matching weights runs.
        let mut m = model(1, 2, false, false, false);
        m.inputs[AUX_INPUT] = m.g.tensor(F32, &[1, 2, 2], &[0.5f32; 4], None, false);
        for i in 40..48 {
            m.inputs[i] = m.g.tensor(F32, &[1, 2], &[0.1f32; 2], None, true);
        }
        assert_eq!(m.run(), TfLiteStatus::kTfLiteOk);
    }

    #[test]
    fn refuses_what_tflite_reads_out_of_bounds() {
        // Merged batch-major float output with two batch rows.
        fails(model(2, 2, false, true, false));
        assert_eq!(model(1, 2, false, true, false).run(), TfLiteStatus::kTfLiteOk);
        fails(model(2, 2, false, true, true));
        assert_eq!(model(2, 2, true, true, true).run(), TfLiteStatus::kTfLiteOk);
        // uint8 weights.
        let mut m = model(1, 2, false, false, false);
        for i in (FW..FW + 8).chain(BW..BW + 8) {
            m.inputs[i] = m.g.tensor(TfLiteType::kTfLiteUInt8, &[1, 1], &[0u8], Some(qp(0.1, 0)), true);
        }
        fails(m);
    }
}
