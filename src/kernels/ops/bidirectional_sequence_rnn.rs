//! BIDIRECTIONAL_SEQUENCE_RNN (TFLite `kernels/bidirectional_sequence_rnn.cc`, with
//! `internal/kernel_utils.cc`'s `RnnBatchStep`).
//!
//! Two basic RNN cells over one sequence: the forward cell walks the time steps in order,
//! the backward cell in reverse, each `h = act(bias + W·x [+ W_aux·aux] + R·h)` with its
//! own hidden state (a variable tensor updated in place). Inputs (12): 0 input
//! (`[batch, time, n]`, or `[time, batch, n]` when `time_major`); forward cell 1 weights
//! `[fw_units, n]`, 2 recurrent weights `[fw_units, fw_units]`, 3 bias, 4 hidden state
//! `[batch, fw_units]`; backward cell 5..8 likewise; optional 9 aux input, 10 and 11 the
//! forward and backward aux weights `[units, aux_n]` (both or neither). Outputs: the
//! forward and backward sequences, or with `merge_outputs` one output whose rows hold the
//! forward units then the backward ones.
//!
//! The aux input, as TFLite reads it: with aux weights both cells add `W_aux·aux` (stacked
//! layers with cross links); without them (stacked without cross links) the backward
//! cell reads the aux input in place of the input, in time-major layout only (TFLite's
//! batch-major walk reads the input there). TFLite steps through a time-major aux input
//! with the input's row size; here an aux input of another size is refused in that
//! layout instead of being read with the wrong stride.
//!
//! Types: float32 (version 1); hybrid (versions 2 and 3: float32 activations, int8
//! weights with per-tensor scales; each step's input, aux input and hidden state
//! quantized per batch row, symmetrically or with `asymmetric_quantize_inputs`), as
//! TFLite's hybrid `RnnBatchStep`. Two quirks of TFLite's hybrid kernel are kept: in
//! time-major layout it runs the forward and backward passes `time` times over (the
//! hidden states carry on between rounds; the outputs are the last round's), and in
//! batch-major layout it steps through the aux input with the input's row size (an aux
//! input of another size is refused there).

use super::lstm::{Quantized, is_zero, matmul_acc_f32, matmul_acc_i8, row_sums};
use crate::abi::builtin_op_data::{TfLiteBidirectionalSequenceRNNParams, TfLiteFusedActivation};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::activation::apply_f32;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{in_op, op_error};

const OP: &str = "BIDIRECTIONAL_SEQUENCE_RNN";

/// The BIDIRECTIONAL_SEQUENCE_RNN registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<BidiRnn>(TfLiteBuiltinOperator::kTfLiteBuiltinBidirectionalSequenceRnn)
}

/// One cell's weight matrices: float32, or int8 with their scales (hybrid) and, for
/// asymmetric input quantization, their row sums.
pub enum Mats<'a> {
    F32 { w: &'a [f32], r: &'a [f32], aux: Option<&'a [f32]> },
    I8 { w: (&'a [i8], f32), r: (&'a [i8], f32), aux: Option<(&'a [i8], f32)>, sums: Option<[Vec<i32>; 3]> },
}

/// One cell.
pub struct Cell<'a> {
    pub mats: Mats<'a>,
    pub bias: &'a [f32],
    pub input_size: usize,
    /// The aux input's row size (0 without aux weights).
    pub aux_size: usize,
    pub units: usize,
}

/// Per-step buffers: the accumulated rows and the hybrid path's quantized copies.
pub struct Scratch {
    acc: Vec<f32>,
    xq: Quantized,
    aq: Quantized,
    hq: Quantized,
    asymmetric: bool,
}

impl Scratch {
    /// Buffers for steps of up to `rows` rows of cells up to `units` wide.
    pub fn new(rows: usize, input_size: usize, aux_size: usize, units: usize, asymmetric: bool) -> Scratch {
        Scratch {
            acc: vec![0.0; rows * units],
            xq: Quantized::new(rows, input_size),
            aq: Quantized::new(rows, aux_size),
            hq: Quantized::new(rows, units),
            asymmetric,
        }
    }
}

impl<'a> Cell<'a> {
    /// The row sums asymmetric hybrid steps subtract (of the input, aux and recurrent
    /// weights); nothing for float weights or symmetric quantization.
    pub fn with_row_sums(mut self, asymmetric: bool) -> Cell<'a> {
        let (n, an, u) = (self.input_size, self.aux_size, self.units);
        if let Mats::I8 { w, r, aux, sums } = &mut self.mats
            && asymmetric
        {
            let a = aux.map_or_else(Vec::new, |a| row_sums(a.0, u, an));
            *sums = Some([row_sums(w.0, u, n), a, row_sums(r.0, u, u)]);
        }
        self
    }

    /// `RnnBatchStep` over `nb` rows: `x` (and `aux`) hold `nb` rows, `h` the `nb` hidden
    /// rows; row `b` of the result goes to `h` and to `out[b * out_stride..][..units]`.
    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &self,
        nb: usize,
        x: &[f32],
        aux: Option<&[f32]>,
        h: &mut [f32],
        out: &mut [f32],
        out_stride: usize,
        act: TfLiteFusedActivation,
        sc: &mut Scratch,
    ) {
        let (n, an, u) = (self.input_size, self.aux_size, self.units);
        let aux = aux.filter(|_| an > 0);
        let acc = &mut sc.acc[..nb * u];
        for row in acc.chunks_exact_mut(u.max(1)) {
            row.copy_from_slice(&self.bias[..row.len()]);
        }
        match &self.mats {
            Mats::F32 { w, r, aux: aw } => {
                matmul_acc_f32(w, u, n, x, nb, acc);
                if let (Some(aw), Some(ax)) = (aw, aux) {
                    matmul_acc_f32(aw, u, an, ax, nb, acc);
                }
                matmul_acc_f32(r, u, u, h, nb, acc);
            }
            Mats::I8 { w, r, aux: aw, sums } => {
                let sum = |i: usize| sums.as_ref().map(|s| s[i].as_slice());
                if !is_zero(&x[..nb * n]) {
                    sc.xq.quantize(x, nb, n, sc.asymmetric);
                    matmul_acc_i8(w.0, w.1, u, n, &sc.xq, sum(0), nb, acc);
                }
                if let (Some(aw), Some(ax)) = (aw, aux)
                    && !is_zero(&ax[..nb * an])
                {
                    sc.aq.quantize(ax, nb, an, sc.asymmetric);
                    matmul_acc_i8(aw.0, aw.1, u, an, &sc.aq, sum(1), nb, acc);
                }
                if !is_zero(&h[..nb * u]) {
                    sc.hq.quantize(h, nb, u, sc.asymmetric);
                    matmul_acc_i8(r.0, r.1, u, u, &sc.hq, sum(2), nb, acc);
                }
            }
        }
        for v in acc.iter_mut() {
            *v = apply_f32(*v, act);
        }
        h[..nb * u].copy_from_slice(acc);
        for b in 0..nb {
            out[b * out_stride..b * out_stride + u].copy_from_slice(&acc[b * u..(b + 1) * u]);
        }
    }
}

/// How the aux input is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Aux {
    None,
    /// Both cells add `W_aux·aux`.
    CrossLinks,
    /// The backward cell reads the aux input as its input (time-major only).
    BackwardInput,
}

/// The sizes and arithmetic Prepare checked.
pub struct Plan {
    batch: usize,
    time: usize,
    input_size: usize,
    aux_size: usize,
    fw_units: usize,
    bw_units: usize,
    aux: Aux,
    hybrid: bool,
    asymmetric: bool,
}

struct BidiRnn;

fn dim(s: &[i32], i: usize) -> usize {
    s.get(i).map_or(0, |&v| v.max(0) as usize)
}

fn check_type(what: &str, t: &TensorView<'_>, want: TfLiteType) -> Result<()> {
    if t.dtype != want {
        return Err(op_error(OP, format!("{what} must be {}, not {}", want.name(), t.dtype.name())));
    }
    Ok(())
}

fn check_shape(what: &str, t: &TensorView<'_>, want: &[usize]) -> Result<()> {
    if t.shape.len() != want.len() || t.shape.iter().zip(want).any(|(&a, &b)| a as usize != b || a < 0) {
        return Err(op_error(OP, format!("{what} must have shape {want:?}, not {:?}", t.shape)));
    }
    Ok(())
}

fn check(ctx: &OpCtx<'_>, p: &TfLiteBidirectionalSequenceRNNParams) -> Result<Plan> {
    use TfLiteType::{kTfLiteFloat32 as F32, kTfLiteInt8 as I8};
    let outs = if p.merge_outputs { 1 } else { 2 };
    if ctx.num_inputs() != 12 || ctx.num_outputs() != outs {
        return Err(op_error(
            OP,
            format!("expects 12 inputs and {outs} outputs, got {} and {}", ctx.num_inputs(), ctx.num_outputs()),
        ));
    }
    let get = |i: usize| ctx.input(i).map_err(in_op(OP));
    let input = get(0)?;
    check_type("the input", &input, F32)?;
    if input.shape.len() != 3 {
        return Err(op_error(OP, format!("the input must have rank 3, not {}", input.shape.len())));
    }
    let (batch, time) = if p.time_major {
        (dim(input.shape, 1), dim(input.shape, 0))
    } else {
        (dim(input.shape, 0), dim(input.shape, 1))
    };
    let n = dim(input.shape, 2);
    let (fw_w, bw_w) = (get(1)?, get(5)?);
    let wtype = fw_w.dtype;
    if wtype != F32 && wtype != I8 {
        return Err(op_error(OP, format!("weights of type {} are not supported", wtype.name())));
    }
    let (fw_units, bw_units) = (dim(fw_w.shape, 0), dim(bw_w.shape, 0));
    for (name, w, r, b, units) in
        [("forward", fw_w, get(2)?, get(3)?, fw_units), ("backward", bw_w, get(6)?, get(7)?, bw_units)]
    {
        check_type(&format!("the {name} weights"), &w, wtype)?;
        check_type(&format!("the {name} recurrent weights"), &r, wtype)?;
        check_type(&format!("the {name} bias"), &b, F32)?;
        check_shape(&format!("the {name} weights"), &w, &[units, n])?;
        check_shape(&format!("the {name} recurrent weights"), &r, &[units, units])?;
        check_shape(&format!("the {name} bias"), &b, &[units])?;
    }
    for (name, i, units) in [("forward", 4, fw_units), ("backward", 8, bw_units)] {
        let h = ctx.variable_input(i).map_err(in_op(OP))?;
        check_type(&format!("the {name} hidden state"), &h, F32)?;
        check_shape(&format!("the {name} hidden state"), &h, &[batch, units])?;
    }
    let hybrid = wtype == I8;
    let aux_input = ctx.optional_input(9).map_err(in_op(OP))?;
    let fw_aux = ctx.optional_input(10).map_err(in_op(OP))?;
    let bw_aux = ctx.optional_input(11).map_err(in_op(OP))?;
    let (aux, aux_size) = match (&aux_input, &fw_aux, &bw_aux) {
        (_, Some(_), None) | (_, None, Some(_)) => {
            return Err(op_error(OP, "the forward and backward aux weights must be given together"));
        }
        (None, Some(_), Some(_)) => return Err(op_error(OP, "aux weights are given without an aux input")),
        (Some(a), Some(fa), Some(ba)) => {
            check_type("the aux input", a, F32)?;
            check_type("the forward aux weights", fa, wtype)?;
            check_type("the backward aux weights", ba, wtype)?;
            let an = dim(a.shape, 2);
            if a.shape.len() != 3 || a.shape[..2] != input.shape[..2] {
                return Err(op_error(
                    OP,
                    format!(
                        "the aux input {:?} must match the input {:?} but for its last dimension",
                        a.shape, input.shape
                    ),
                ));
            }
            check_shape("the forward aux weights", fa, &[fw_units, an])?;
            check_shape("the backward aux weights", ba, &[bw_units, an])?;
            // TFLite steps through the aux input with the input's row size there.
            if (p.time_major || hybrid) && an != n && an != 0 {
                return Err(op_error(
                    OP,
                    format!("an aux input of size {an} (not the input's {n}) is not supported in this layout"),
                ));
            }
            (Aux::CrossLinks, an)
        }
        (Some(a), None, None) if p.time_major => {
            check_type("the aux input", a, F32)?;
            if a.shape != input.shape {
                return Err(op_error(
                    OP,
                    format!(
                        "the aux input {:?} read by the backward cell must match the input {:?}",
                        a.shape, input.shape
                    ),
                ));
            }
            (Aux::BackwardInput, 0)
        }
        _ => (Aux::None, 0),
    };
    Ok(Plan {
        batch,
        time,
        input_size: n,
        aux_size,
        fw_units,
        bw_units,
        aux,
        hybrid,
        asymmetric: hybrid && p.asymmetric_quantize_inputs,
    })
}

impl BuiltinKernel for BidiRnn {
    const NAME: &'static str = OP;
    type Params = TfLiteBidirectionalSequenceRNNParams;
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteBidirectionalSequenceRNNParams) -> Result<Plan> {
        let plan = check(ctx, p)?;
        let row = |units: usize| -> Vec<i32> {
            let (a, b) = if p.time_major { (plan.time, plan.batch) } else { (plan.batch, plan.time) };
            vec![a as i32, b as i32, units as i32]
        };
        if p.merge_outputs {
            ctx.resize_output(0, &row(plan.fw_units + plan.bw_units)).map_err(in_op(OP))?;
        } else {
            ctx.resize_output(0, &row(plan.fw_units)).map_err(in_op(OP))?;
            ctx.resize_output(1, &row(plan.bw_units)).map_err(in_op(OP))?;
        }
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteBidirectionalSequenceRNNParams, plan: &mut Plan) -> Result<()> {
        let fw = cell(ctx, plan, [1, 2, 3, 10], plan.fw_units)?;
        let bw = cell(ctx, plan, [5, 6, 7, 11], plan.bw_units)?;
        let aux_input = if plan.aux == Aux::None { None } else { Some(f32_input(ctx, 9)?) };
        let mut fw_h = ctx.variable_input(4).map_err(in_op(OP))?;
        let mut bw_h = ctx.variable_input(8).map_err(in_op(OP))?;
        let mut out0 = ctx.output(0).map_err(in_op(OP))?;
        let mut out1 = if p.merge_outputs { None } else { Some(ctx.output(1).map_err(in_op(OP))?) };
        let bw_out = match out1.as_mut() {
            Some(o) => Some(o.data_mut::<f32>().map_err(in_op(OP))?),
            None => None,
        };
        let io = Io {
            input: f32_input(ctx, 0)?,
            aux_input,
            fw_h: fw_h.data_mut::<f32>().map_err(in_op(OP))?,
            bw_h: bw_h.data_mut::<f32>().map_err(in_op(OP))?,
            fw_out: out0.data_mut::<f32>().map_err(in_op(OP))?,
            bw_out,
        };
        run(plan, &fw, &bw, p.time_major, p.activation, io)
    }
}

/// Float32 input `i`.
fn f32_input<'a>(ctx: &OpCtx<'a>, i: usize) -> Result<&'a [f32]> {
    ctx.input(i).and_then(|t| t.data::<f32>()).map_err(in_op(OP))
}

/// Int8 input `i` with its scale.
fn i8_input<'a>(ctx: &OpCtx<'a>, i: usize) -> Result<(&'a [i8], f32)> {
    let t = ctx.input(i).map_err(in_op(OP))?;
    Ok((t.data::<i8>().map_err(in_op(OP))?, t.quant().scale))
}

/// One cell from its inputs (weights, recurrent weights, bias, aux weights).
fn cell<'a>(ctx: &OpCtx<'a>, plan: &Plan, [w, r, b, a]: [usize; 4], units: usize) -> Result<Cell<'a>> {
    let cross = plan.aux == Aux::CrossLinks;
    let mats = if plan.hybrid {
        let aux = if cross { Some(i8_input(ctx, a)?) } else { None };
        Mats::I8 { w: i8_input(ctx, w)?, r: i8_input(ctx, r)?, aux, sums: None }
    } else {
        let aux = if cross { Some(f32_input(ctx, a)?) } else { None };
        Mats::F32 { w: f32_input(ctx, w)?, r: f32_input(ctx, r)?, aux }
    };
    let c = Cell { mats, bias: f32_input(ctx, b)?, input_size: plan.input_size, aux_size: plan.aux_size, units };
    Ok(c.with_row_sums(plan.asymmetric))
}

/// The data one Invoke reads and writes; `bw_out` is `None` when the outputs are merged
/// (both cells write `fw_out`).
pub struct Io<'a> {
    pub input: &'a [f32],
    pub aux_input: Option<&'a [f32]>,
    pub fw_h: &'a mut [f32],
    pub bw_h: &'a mut [f32],
    pub fw_out: &'a mut [f32],
    pub bw_out: Option<&'a mut [f32]>,
}

/// One cell over the whole sequence, forward or in `reverse`: `x` (rows of the cell's
/// input size) and `aux` (rows of `aux_size`) in the op's layout; the step output of batch
/// row `b` at time `s` goes to `out[off + (b, s) * step..][..units]`.
#[allow(clippy::too_many_arguments)]
fn pass(
    cell: &Cell<'_>,
    reverse: bool,
    time_major: bool,
    (batch, time): (usize, usize),
    x: &[f32],
    aux: Option<&[f32]>,
    h: &mut [f32],
    out: &mut [f32],
    (off, step): (usize, usize),
    act: TfLiteFusedActivation,
    sc: &mut Scratch,
) {
    let (n, an, u) = (cell.input_size, cell.aux_size, cell.units);
    let order = |s: usize| if reverse { time - 1 - s } else { s };
    if time_major {
        for s in (0..time).map(order) {
            let xs = &x[s * batch * n..(s + 1) * batch * n];
            let a = aux.map(|a| &a[s * batch * an..(s + 1) * batch * an]);
            cell.step(batch, xs, a, h, &mut out[off + s * step * batch..], step, act, sc);
        }
    } else {
        for b in 0..batch {
            let hb = &mut h[b * u..(b + 1) * u];
            for s in (0..time).map(order) {
                let k = b * time + s;
                let a = aux.map(|a| &a[k * an..(k + 1) * an]);
                cell.step(1, &x[k * n..(k + 1) * n], a, hb, &mut out[off + k * step..], step, act, sc);
            }
        }
    }
}

fn run(
    plan: &Plan,
    fw: &Cell<'_>,
    bw: &Cell<'_>,
    time_major: bool,
    act: TfLiteFusedActivation,
    io: Io<'_>,
) -> Result<()> {
    let Plan { batch, time, input_size: n, aux_size: an, fw_units: fu, bw_units: bu, aux, hybrid, asymmetric } = *plan;
    let merged = io.bw_out.is_none();
    let step = if merged { fu + bu } else { fu };
    let aux_len = if aux == Aux::CrossLinks { batch * time * an } else { batch * time * n };
    let ok = io.input.len() == batch * time * n
        && io.aux_input.is_none_or(|a| a.len() == aux_len)
        && io.fw_h.len() == batch * fu
        && io.bw_h.len() == batch * bu
        && io.fw_out.len() == batch * time * step
        && io.bw_out.as_ref().is_none_or(|o| o.len() == batch * time * bu);
    if !ok {
        return Err(op_error(OP, "tensor sizes do not match the shapes checked at Prepare"));
    }
    let Io { input, aux_input, fw_h, bw_h, fw_out, mut bw_out } = io;
    let cross = if aux == Aux::CrossLinks { aux_input } else { None };
    let bw_input = match (aux, aux_input) {
        (Aux::BackwardInput, Some(a)) => a,
        _ => input,
    };
    let rows = if time_major { batch } else { 1 };
    let mut sc = Scratch::new(rows, n, an, fu.max(bu), asymmetric);
    let bt = (batch, time);
    // TFLite's hybrid time-major kernel repeats both passes once per time step.
    let rounds = if hybrid && time_major { time } else { 1 };
    for _ in 0..rounds {
        pass(fw, false, time_major, bt, input, cross, fw_h, fw_out, (0, step), act, &mut sc);
        match bw_out.as_deref_mut() {
            Some(o) => pass(bw, true, time_major, bt, bw_input, cross, bw_h, o, (0, bu), act, &mut sc),
            None => pass(bw, true, time_major, bt, bw_input, cross, bw_h, fw_out, (fu, step), act, &mut sc),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use TfLiteFusedActivation::*;

    /// A one-unit cell over one input: `[w, r, bias]`, with optional aux weight.
    fn cell<'a>(c: &'a [f32; 3], aux: Option<&'a [f32]>) -> Cell<'a> {
        Cell {
            mats: Mats::F32 { w: &c[0..1], r: &c[1..2], aux },
            bias: &c[2..3],
            input_size: 1,
            aux_size: usize::from(aux.is_some()),
            units: 1,
        }
    }

    fn plan(batch: usize, time: usize) -> Plan {
        Plan {
            batch,
            time,
            input_size: 1,
            aux_size: 0,
            fw_units: 1,
            bw_units: 1,
            aux: Aux::None,
            hybrid: false,
            asymmetric: false,
        }
    }

    // Forward h = x + 0.5 h, backward h = 2 x + h + 1, both from h = 0.
    const FW: [f32; 3] = [1.0, 0.5, 0.0];
    const BW: [f32; 3] = [2.0, 1.0, 1.0];

    #[test]
    fn separate_outputs_time_major() {
        let (fw, bw) = (cell(&FW, None), cell(&BW, None));
        let (mut fh, mut bh, mut fo, mut bo) = ([0.0], [0.0], [0.0; 2], [0.0; 2]);
        let io = Io {
            input: &[1.0, 2.0],
            aux_input: None,
            fw_h: &mut fh,
            bw_h: &mut bh,
            fw_out: &mut fo,
            bw_out: Some(&mut bo),
        };
        run(&plan(1, 2), &fw, &bw, true, kTfLiteActNone, io).unwrap();
        assert_eq!(fo, [1.0, 2.5]);
        // Backward: t1 = 2*2 + 0 + 1 = 5, then t0 = 2*1 + 5 + 1 = 8.
        assert_eq!(bo, [8.0, 5.0]);
        assert_eq!((fh, bh), ([2.5], [8.0]));
    }

    #[test]
    fn merged_batch_major_two_rows() {
        let (fw, bw) = (cell(&FW, None), cell(&BW, None));
        let (mut fh, mut bh, mut out) = ([0.0; 2], [0.0; 2], [0.0; 8]);
        // Batch row 0 is [1, 2] over time, row 1 is [-1, 0].
        let io = Io {
            input: &[1.0, 2.0, -1.0, 0.0],
            aux_input: None,
            fw_h: &mut fh,
            bw_h: &mut bh,
            fw_out: &mut out,
            bw_out: None,
        };
        run(&plan(2, 2), &fw, &bw, false, kTfLiteActRelu, io).unwrap();
        // Row 1 forward: relu(-1) = 0, then 0; backward: t1 = 0 + 0 + 1 = 1, t0 = -2 + 1 + 1 = 0.
        assert_eq!(out, [1.0, 8.0, 2.5, 5.0, 0.0, 0.0, 0.0, 1.0]);
    }

    #[test]
    fn aux_cross_links_and_backward_input() {
        let (fw, bw) = (cell(&FW, Some(&[3.0])), cell(&BW, Some(&[3.0])));
        let mut p = plan(1, 1);
        p.aux = Aux::CrossLinks;
        p.aux_size = 1;
        let (mut fh, mut bh, mut fo, mut bo) = ([0.0], [0.0], [0.0], [0.0]);
        let io = Io {
            input: &[1.0],
            aux_input: Some(&[2.0]),
            fw_h: &mut fh,
            bw_h: &mut bh,
            fw_out: &mut fo,
            bw_out: Some(&mut bo),
        };
        run(&p, &fw, &bw, true, kTfLiteActNone, io).unwrap();
        assert_eq!((fo, bo), ([7.0], [9.0]));
        // Without aux weights the backward cell reads the aux input instead.
        let (fw, bw) = (cell(&FW, None), cell(&BW, None));
        let mut p = plan(1, 1);
        p.aux = Aux::BackwardInput;
        let (mut fh, mut bh, mut fo, mut bo) = ([0.0], [0.0], [0.0], [0.0]);
        let io = Io {
            input: &[1.0],
            aux_input: Some(&[2.0]),
            fw_h: &mut fh,
            bw_h: &mut bh,
            fw_out: &mut fo,
            bw_out: Some(&mut bo),
        };
        run(&p, &fw, &bw, true, kTfLiteActNone, io).unwrap();
        assert_eq!((fo, bo), ([1.0], [5.0]));
    }

    #[test]
    fn hybrid_close_to_float_and_time_major_rounds() {
        // Weights that int8 holds exactly (scale 0.5): w = 1, r = 0.5; a zero input row
        // skips its product.
        let w = [2i8];
        let r = [1i8];
        let c = Cell {
            mats: Mats::I8 { w: (&w, 0.5), r: (&r, 0.5), aux: None, sums: None },
            bias: &[0.0],
            input_size: 1,
            aux_size: 0,
            units: 1,
        };
        let mut p = plan(1, 2);
        p.hybrid = true;
        let (mut fh, mut bh, mut fo, mut bo) = ([0.0], [0.0], [0.0; 2], [0.0; 2]);
        let io = Io {
            input: &[1.0, 0.0],
            aux_input: None,
            fw_h: &mut fh,
            bw_h: &mut bh,
            fw_out: &mut fo,
            bw_out: Some(&mut bo),
        };
        run(&p, &c, &c.with_sums_none(), false, kTfLiteActNone, io).unwrap();
        // Forward: 1, then 0.5; backward: t1 = 0, t0 = 1.
        assert!((fo[0] - 1.0).abs() < 1e-2 && (fo[1] - 0.5).abs() < 1e-2, "{fo:?}");
        assert!(bo[1].abs() < 1e-6 && (bo[0] - 1.0).abs() < 1e-2, "{bo:?}");
        // Time-major: both passes run twice, the states carrying over.
        let (mut fh, mut bh, mut fo, mut bo) = ([0.0], [0.0], [0.0; 2], [0.0; 2]);
        let io = Io {
            input: &[1.0, 0.0],
            aux_input: None,
            fw_h: &mut fh,
            bw_h: &mut bh,
            fw_out: &mut fo,
            bw_out: Some(&mut bo),
        };
        run(&p, &c, &c.with_sums_none(), true, kTfLiteActNone, io).unwrap();
        // Second forward round starts from h = 0.5: 1 + 0.25 = 1.25, then 0.625.
        assert!((fo[0] - 1.25).abs() < 2e-2 && (fo[1] - 0.625).abs() < 2e-2, "{fo:?}");
    }

    #[test]
    fn sizes_are_checked_and_empty_runs() {
        let (fw, bw) = (cell(&FW, None), cell(&BW, None));
        let (mut fh, mut bh, mut fo, mut bo) = ([0.0], [0.0], [0.0; 2], [0.0; 2]);
        let io =
            Io { input: &[1.0], aux_input: None, fw_h: &mut fh, bw_h: &mut bh, fw_out: &mut fo, bw_out: Some(&mut bo) };
        assert!(run(&plan(1, 2), &fw, &bw, true, kTfLiteActNone, io).is_err());
        let io =
            Io { input: &[], aux_input: None, fw_h: &mut fh, bw_h: &mut bh, fw_out: &mut [], bw_out: Some(&mut []) };
        run(&plan(1, 0), &fw, &bw, false, kTfLiteActNone, io).unwrap();
    }

    impl Cell<'_> {
        fn with_sums_none(&self) -> Cell<'_> {
            let mats = match &self.mats {
                Mats::F32 { w, r, aux } => Mats::F32 { w, r, aux: *aux },
                Mats::I8 { w, r, aux, .. } => Mats::I8 { w: *w, r: *r, aux: *aux, sums: None },
            };
            Cell { mats, bias: self.bias, input_size: self.input_size, aux_size: self.aux_size, units: self.units }
        }
    }
}
