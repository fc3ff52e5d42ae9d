//! IF, WHILE and CALL_ONCE (TFLite `kernels/if.cc`, `while.cc`, `call_once.cc`): ops that
//! run other subgraphs of the model.
//!
//! The callee subgraphs are siblings of the node's subgraph, reached through the narrow
//! `kernels::graph::SubgraphCalls` trait (the interpreter implements it, with the checked
//! access and the copies, in `interpreter::control_flow`). Values are copied into the callee's inputs and
//! out of its outputs. When the callee's outputs have shapes Prepare cannot know (dynamic
//! tensors in the callee, IF branches with different output shapes, a WHILE body that
//! changes the shapes of the loop values), the node's outputs are dynamic and take the
//! shapes of the values at Eval, as in TFLite.
//!
//! Errors, never crashes or endless recursion: subgraph indices out of range, a node
//! calling its own subgraph (directly or through others), operand counts that differ from
//! the callee's inputs/outputs, and type or size mismatches.

use crate::abi::builtin_op_data::{TfLiteCallOnceParams, TfLiteIfParams, TfLiteWhileParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::graph::{SubgraphCalls, SubgraphIndex, calls_of};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::op_error;

/// The IF registration.
pub fn if_registration() -> TfLiteRegistration {
    kernel::registration::<If>(TfLiteBuiltinOperator::kTfLiteBuiltinIf)
}

/// The WHILE registration.
pub fn while_registration() -> TfLiteRegistration {
    kernel::registration::<While>(TfLiteBuiltinOperator::kTfLiteBuiltinWhile)
}

/// The CALL_ONCE registration.
pub fn call_once_registration() -> TfLiteRegistration {
    kernel::registration::<CallOnce>(TfLiteBuiltinOperator::kTfLiteBuiltinCallOnce)
}

/// Kernels of this file: no state of their own (the callee subgraphs keep theirs).
macro_rules! subgraph_kernel {
    ($kernel:ident, $name:expr, $params:ty, $prepare:ident, $eval:ident) => {
        #[doc = concat!("The ", $name, " kernel.")]
        struct $kernel;

        impl BuiltinKernel for $kernel {
            const NAME: &'static str = $name;
            type Params = $params;
            type State = ();

            fn prepare(ctx: &OpCtx<'_>, p: &$params) -> Result<()> {
                $prepare(ctx, p)
            }

            fn invoke(ctx: &OpCtx<'_>, p: &$params, _: &mut ()) -> Result<()> {
                $eval(ctx, p)
            }
        }
    };
}
subgraph_kernel!(If, "IF", TfLiteIfParams, if_prepare, if_eval);
subgraph_kernel!(While, "WHILE", TfLiteWhileParams, while_prepare, while_eval);
subgraph_kernel!(CallOnce, "CALL_ONCE", TfLiteCallOnceParams, call_once_prepare, call_once_eval);

/// The subgraph running this node.
fn this_subgraph(ctx: &OpCtx<'_>, op: &str) -> Result<Box<dyn SubgraphCalls>> {
    calls_of(ctx, op)
}

/// The running subgraph's own index (to copy between its own tensors).
pub(crate) fn own_index(g: &dyn SubgraphCalls, op: &str) -> Result<SubgraphIndex> {
    g.own_index().ok_or_else(|| op_error(op, "the running subgraph is not part of the model"))
}

/// Resolves callee `index` and records the call depth.
fn callee(g: &mut dyn SubgraphCalls, index: i32, what: &str, op: &str) -> Result<SubgraphIndex> {
    g.enter(index, what).map_err(|e| op_error(op, e.message))
}

/// Gives `callee`'s inputs the shapes/types of the running subgraph's tensors `src`,
/// then allocates it (a no-op when nothing changed).
fn prepare_callee(g: &mut dyn SubgraphCalls, src: &[i32], callee: SubgraphIndex, op: &str) -> Result<()> {
    g.copy_shapes_to_inputs(src, callee).map_err(|e| op_error(op, e.message))?;
    g.allocate(callee).map_err(|e| Error::with_status(e.status, format!("{op}: subgraph: {}", e.message)))
}

/// Copies the running subgraph's tensors `src` into `callee`'s inputs (reshaping and
/// re-allocating the callee first if their shapes changed), runs it, and makes its
/// outputs readable.
pub(crate) fn run_callee(g: &mut dyn SubgraphCalls, src: &[i32], callee: SubgraphIndex, op: &str) -> Result<()> {
    prepare_callee(g, src, callee, op)?;
    let own = own_index(g, op)?;
    let inputs = g.inputs(callee);
    g.copy(own, src, callee, &inputs).map_err(|e| op_error(op, e.message))?;
    g.invoke(callee).map_err(|e| Error::with_status(e.status, format!("{op}: subgraph: {}", e.message)))
}

/// Prepare-time sizing of the node's outputs: dynamic, or the (static) shapes `shapes`.
pub(crate) fn size_outputs(ctx: &OpCtx<'_>, op: &str, dynamic: bool, shapes: &[Vec<i32>]) -> Result<()> {
    for (i, &o) in ctx.output_indices().iter().enumerate() {
        if o < 0 {
            continue;
        }
        if dynamic {
            ctx.set_output_dynamic(i).map_err(|e| op_error(op, e.message))?;
        } else {
            ctx.resize_output(i, &shapes[i]).map_err(|e| op_error(op, e.message))?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// IF
// ---------------------------------------------------------------------------------------

const IF: &str = "IF";

fn if_prepare(ctx: &OpCtx<'_>, p: &TfLiteIfParams) -> Result<()> {
    if ctx.num_inputs() == 0 {
        return Err(op_error(IF, "needs the condition input"));
    }
    let cond = ctx.input(0).map_err(|e| op_error(IF, e.message))?;
    if cond.dtype != TfLiteType::kTfLiteBool || cond.num_elements() != 1 {
        return Err(op_error(IF, "the condition must be a single bool"));
    }
    let mut g = this_subgraph(ctx, IF)?;
    let node_inputs = ctx.input_indices()[1..].to_vec();
    let n_out = ctx.num_outputs();
    let mut out_shapes: Vec<Vec<Vec<i32>>> = Vec::new();
    let mut dynamic = false;
    for (what, index) in
        [("then_subgraph_index", p.then_subgraph_index), ("else_subgraph_index", p.else_subgraph_index)]
    {
        let branch = callee(&mut *g, index, what, IF)?;
        let (b_in, b_out) = (g.inputs(branch), g.outputs(branch));
        if b_in.len() != node_inputs.len() || b_out.len() != n_out {
            return Err(op_error(
                IF,
                format!(
                    "subgraph {index} has {} inputs and {} outputs, the node passes {} and expects {n_out}",
                    b_in.len(),
                    b_out.len(),
                    node_inputs.len()
                ),
            ));
        }
        prepare_callee(&mut *g, &node_inputs, branch, IF)?;
        dynamic |= g.has_dynamic_tensors(branch);
        let mut shapes = Vec::with_capacity(n_out);
        for &o in &b_out {
            if o < 0 {
                return Err(op_error(IF, format!("subgraph {index} has an optional output")));
            }
            shapes.push(g.shape_and_type(branch, o).map_err(|e| op_error(IF, e.message))?.0);
        }
        out_shapes.push(shapes);
    }
    dynamic |= out_shapes[0] != out_shapes[1];
    size_outputs(ctx, IF, dynamic, &out_shapes[0])
}

fn if_eval(ctx: &OpCtx<'_>, p: &TfLiteIfParams) -> Result<()> {
    let cond = ctx.input(0).map_err(|e| op_error(IF, e.message))?;
    let c = *cond.raw()?.first().ok_or_else(|| op_error(IF, "the condition has no data"))? != 0;
    let index = if c { p.then_subgraph_index } else { p.else_subgraph_index };
    let mut g = this_subgraph(ctx, IF)?;
    let node_inputs = ctx.input_indices()[1..].to_vec();
    let node_outputs = ctx.output_indices().to_vec();
    let branch = callee(&mut *g, index, if c { "then_subgraph_index" } else { "else_subgraph_index" }, IF)?;
    run_callee(&mut *g, &node_inputs, branch, IF)?;
    let own = own_index(&*g, IF)?;
    let outs = g.outputs(branch);
    g.copy(branch, &outs, own, &node_outputs).map_err(|e| op_error(IF, e.message))
}

// ---------------------------------------------------------------------------------------
// WHILE
// ---------------------------------------------------------------------------------------

const WHILE: &str = "WHILE";

/// TFLite's `CheckCondOutput`: a bool scalar or a one-element vector.
fn check_cond_output(shape: &[i32], ty: TfLiteType) -> Result<()> {
    if ty != TfLiteType::kTfLiteBool || !(shape.is_empty() || shape == [1]) {
        return Err(op_error(
            WHILE,
            format!("the condition subgraph must output one bool, not {} {shape:?}", ty.name()),
        ));
    }
    Ok(())
}

fn while_subgraphs(p: &TfLiteWhileParams, g: &mut dyn SubgraphCalls) -> Result<(SubgraphIndex, SubgraphIndex)> {
    if p.cond_subgraph_index == p.body_subgraph_index {
        return Err(op_error(WHILE, "the condition and body subgraphs must differ"));
    }
    let cond = callee(g, p.cond_subgraph_index, "cond_subgraph_index", WHILE)?;
    let body = callee(g, p.body_subgraph_index, "body_subgraph_index", WHILE)?;
    Ok((cond, body))
}

fn while_prepare(ctx: &OpCtx<'_>, p: &TfLiteWhileParams) -> Result<()> {
    let n = ctx.num_inputs();
    if ctx.num_outputs() != n {
        return Err(op_error(WHILE, format!("{n} inputs but {} outputs", ctx.num_outputs())));
    }
    let node_inputs = ctx.input_indices().to_vec();
    if node_inputs.iter().chain(ctx.output_indices()).any(|&t| t < 0) {
        return Err(op_error(WHILE, "optional inputs or outputs are not supported"));
    }
    let mut g = this_subgraph(ctx, WHILE)?;
    let (cond, body) = while_subgraphs(p, &mut *g)?;
    if g.inputs(cond).len() != n || g.outputs(cond).len() != 1 {
        return Err(op_error(WHILE, format!("the condition subgraph must take {n} inputs and give 1 output")));
    }
    let (b_in, b_out) = (g.inputs(body), g.outputs(body));
    if b_in.len() != n || b_out.len() != n {
        return Err(op_error(WHILE, format!("the body subgraph must take {n} inputs and give {n} outputs")));
    }
    prepare_callee(&mut *g, &node_inputs, cond, WHILE)?;
    let cond_out = g.outputs(cond)[0];
    if !g.is_dynamic_tensor(cond, cond_out) {
        let (shape, ty) = g.shape_and_type(cond, cond_out).map_err(|e| op_error(WHILE, e.message))?;
        check_cond_output(&shape, ty)?;
    }
    prepare_callee(&mut *g, &node_inputs, body, WHILE)?;
    let mut dynamic = g.has_dynamic_tensors(body);
    let mut shapes = Vec::with_capacity(n);
    for i in 0..n {
        if b_out[i] < 0 || b_in[i] < 0 {
            return Err(op_error(WHILE, "the body subgraph has optional inputs or outputs"));
        }
        let (in_shape, in_ty) = g.shape_and_type(body, b_in[i]).map_err(|e| op_error(WHILE, e.message))?;
        let (out_shape, out_ty) = g.shape_and_type(body, b_out[i]).map_err(|e| op_error(WHILE, e.message))?;
        if in_ty != out_ty {
            return Err(op_error(
                WHILE,
                format!("body input {i} has type {}, output {i} has type {}", in_ty.name(), out_ty.name()),
            ));
        }
        if in_shape != out_shape {
            // [] and [1] hold the same single value (TFLite's exception).
            let first = |s: &[i32]| s.first().copied().unwrap_or(0);
            if first(&in_shape) + first(&out_shape) != 1 {
                dynamic = true;
            }
        }
        shapes.push(out_shape);
    }
    size_outputs(ctx, WHILE, dynamic, &shapes)
}

fn while_eval(ctx: &OpCtx<'_>, p: &TfLiteWhileParams) -> Result<()> {
    let mut g = this_subgraph(ctx, WHILE)?;
    let (cond, body) = while_subgraphs(p, &mut *g)?;
    let own = own_index(&*g, WHILE)?;
    let node_inputs = ctx.input_indices().to_vec();
    let node_outputs = ctx.output_indices().to_vec();
    // The loop values live in the node's outputs.
    g.copy(own, &node_inputs, own, &node_outputs).map_err(|e| op_error(WHILE, e.message))?;
    loop {
        run_callee(&mut *g, &node_outputs, cond, WHILE)?;
        let cond_out = g.outputs(cond)[0];
        let (shape, ty, first) = g.read_first_byte(cond, cond_out).map_err(|e| op_error(WHILE, e.message))?;
        check_cond_output(&shape, ty)?;
        match first {
            None => return Err(op_error(WHILE, "the condition output has no data")),
            Some(0) => break,
            Some(_) => {}
        }
        run_callee(&mut *g, &node_outputs, body, WHILE)?;
        let outs = g.outputs(body);
        g.copy(body, &outs, own, &node_outputs).map_err(|e| op_error(WHILE, e.message))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// CALL_ONCE
// ---------------------------------------------------------------------------------------

const CALL_ONCE: &str = "CALL_ONCE";

fn call_once_prepare(ctx: &OpCtx<'_>, p: &TfLiteCallOnceParams) -> Result<()> {
    let mut g = this_subgraph(ctx, CALL_ONCE)?;
    if usize::try_from(p.init_subgraph_index).ok() == g.own_index() {
        return Err(op_error(CALL_ONCE, "the init subgraph is the calling subgraph itself"));
    }
    if let Ok(i) = usize::try_from(p.init_subgraph_index)
        && g.shared().lock().unwrap_or_else(|e| e.into_inner()).is_initialized(i)
    {
        return Ok(());
    }
    if ctx.num_inputs() != 0 || ctx.num_outputs() != 0 {
        return Err(op_error(CALL_ONCE, "takes no inputs and gives no outputs"));
    }
    let init = callee(&mut *g, p.init_subgraph_index, "init_subgraph_index", CALL_ONCE)?;
    if !g.inputs(init).is_empty() || !g.outputs(init).is_empty() {
        return Err(op_error(CALL_ONCE, "the init subgraph must have no inputs and no outputs"));
    }
    Ok(())
}

fn call_once_eval(ctx: &OpCtx<'_>, p: &TfLiteCallOnceParams) -> Result<()> {
    let mut g = this_subgraph(ctx, CALL_ONCE)?;
    let shared = g.shared();
    let index =
        usize::try_from(p.init_subgraph_index).map_err(|_| op_error(CALL_ONCE, "negative init subgraph index"))?;
    if shared.lock().unwrap_or_else(|e| e.into_inner()).is_initialized(index) {
        return Ok(());
    }
    let init = callee(&mut *g, p.init_subgraph_index, "init_subgraph_index", CALL_ONCE)?;
    run_callee(&mut *g, &[], init, CALL_ONCE)?;
    shared.lock().unwrap_or_else(|e| e.into_inner()).mark_initialized(index);
    Ok(())
}
