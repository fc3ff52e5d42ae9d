//! IF, WHILE and CALL_ONCE (TFLite `kernels/if.cc`, `while.cc`, `call_once.cc`): ops that
//! run other subgraphs of the model.
//!
//! These are the only kernels that reach past the `TfLiteContext` into the interpreter:
//! the callee subgraphs are siblings of the node's subgraph (`interpreter::control_flow`
//! has the checked access and the copies). Values are copied into the callee's inputs and
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
use crate::interpreter::Subgraph;
use crate::interpreter::context::subgraph_from_context;
use crate::interpreter::control_flow::copy_tensors;
use crate::kernels::api::OpCtx;
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
fn this_subgraph(ctx: &OpCtx<'_>) -> Result<*mut Subgraph> {
    // SAFETY: the runtime passes a context whose `impl_` is the live subgraph running
    // the node; only a raw pointer is kept.
    unsafe { subgraph_from_context(ctx.context()) }
        .map(|s| s as *mut Subgraph)
        .ok_or_else(|| Error::new("control-flow op run outside an interpreter"))
}

/// Resolves callee `index` of `this` and records the call depth.
///
/// # Safety
/// `this` must be the live subgraph running the node.
unsafe fn callee(this: *mut Subgraph, index: i32, what: &str, op: &str) -> Result<*mut Subgraph> {
    // SAFETY: per the function contract; the callee is a distinct live sibling.
    unsafe {
        let c = (*this).callee(index, what).map_err(|e| op_error(op, e.message))?;
        (*this).enter_call(&mut *c);
        Ok(c)
    }
}

/// Gives `callee`'s inputs the shapes/types of `this`'s tensors `src`, then allocates it
/// (a no-op when nothing changed).
///
/// # Safety
/// `this` and `callee` are distinct live subgraphs.
unsafe fn prepare_callee(this: *mut Subgraph, src: &[i32], callee: *mut Subgraph, op: &str) -> Result<()> {
    // SAFETY: per the function contract.
    unsafe {
        let inputs = (*callee).inputs().to_vec();
        (*this).copy_shapes_to_inputs(src, &mut *callee, &inputs).map_err(|e| op_error(op, e.message))?;
        (*callee).allocate_tensors().map_err(|e| Error::with_status(e.status, format!("{op}: subgraph: {}", e.message)))
    }
}

/// Copies `this`'s tensors `src` into `callee`'s inputs (reshaping and re-allocating the
/// callee first if their shapes changed), runs it, and makes its outputs readable.
///
/// # Safety
/// As [`prepare_callee`].
unsafe fn run_callee(this: *mut Subgraph, src: &[i32], callee: *mut Subgraph, op: &str) -> Result<()> {
    // SAFETY: per the function contract.
    unsafe {
        prepare_callee(this, src, callee, op)?;
        let inputs = (*callee).inputs().to_vec();
        copy_tensors(this, src, callee, &inputs).map_err(|e| op_error(op, e.message))?;
        (*callee).invoke().map_err(|e| Error::with_status(e.status, format!("{op}: subgraph: {}", e.message)))
    }
}

/// Prepare-time sizing of the node's outputs: dynamic, or the (static) shapes `shapes`.
fn size_outputs(ctx: &OpCtx<'_>, op: &str, dynamic: bool, shapes: &[Vec<i32>]) -> Result<()> {
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
    let this = this_subgraph(ctx)?;
    let node_inputs = ctx.input_indices()[1..].to_vec();
    let n_out = ctx.num_outputs();
    let mut out_shapes: Vec<Vec<Vec<i32>>> = Vec::new();
    let mut dynamic = false;
    for (what, index) in
        [("then_subgraph_index", p.then_subgraph_index), ("else_subgraph_index", p.else_subgraph_index)]
    {
        // SAFETY: `this` is the live subgraph running this node; the callee is distinct.
        unsafe {
            let branch = callee(this, index, what, IF)?;
            if (*branch).inputs().len() != node_inputs.len() || (*branch).outputs().len() != n_out {
                return Err(op_error(
                    IF,
                    format!(
                        "subgraph {index} has {} inputs and {} outputs, the node passes {} and expects {n_out}",
                        (*branch).inputs().len(),
                        (*branch).outputs().len(),
                        node_inputs.len()
                    ),
                ));
            }
            prepare_callee(this, &node_inputs, branch, IF)?;
            dynamic |= (*branch).has_dynamic_tensors();
            let mut shapes = Vec::with_capacity(n_out);
            for &o in (*branch).outputs() {
                if o < 0 {
                    return Err(op_error(IF, format!("subgraph {index} has an optional output")));
                }
                shapes.push((*branch).shape_and_type(o).map_err(|e| op_error(IF, e.message))?.0);
            }
            out_shapes.push(shapes);
        }
    }
    dynamic |= out_shapes[0] != out_shapes[1];
    size_outputs(ctx, IF, dynamic, &out_shapes[0])
}

fn if_eval(ctx: &OpCtx<'_>, p: &TfLiteIfParams) -> Result<()> {
    let cond = ctx.input(0).map_err(|e| op_error(IF, e.message))?;
    let c = *cond.raw()?.first().ok_or_else(|| op_error(IF, "the condition has no data"))? != 0;
    let index = if c { p.then_subgraph_index } else { p.else_subgraph_index };
    let this = this_subgraph(ctx)?;
    let node_inputs = ctx.input_indices()[1..].to_vec();
    let node_outputs = ctx.output_indices().to_vec();
    // SAFETY: `this` is the live subgraph running this node; the branch is a distinct live
    // sibling; no reference to either is held across these calls.
    unsafe {
        let branch = callee(this, index, if c { "then_subgraph_index" } else { "else_subgraph_index" }, IF)?;
        run_callee(this, &node_inputs, branch, IF)?;
        let outs = (*branch).outputs().to_vec();
        copy_tensors(branch, &outs, this, &node_outputs).map_err(|e| op_error(IF, e.message))
    }
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

fn while_subgraphs(p: &TfLiteWhileParams, this: *mut Subgraph) -> Result<(*mut Subgraph, *mut Subgraph)> {
    if p.cond_subgraph_index == p.body_subgraph_index {
        return Err(op_error(WHILE, "the condition and body subgraphs must differ"));
    }
    // SAFETY: `this` is the live subgraph running this node.
    unsafe {
        let cond = callee(this, p.cond_subgraph_index, "cond_subgraph_index", WHILE)?;
        let body = callee(this, p.body_subgraph_index, "body_subgraph_index", WHILE)?;
        Ok((cond, body))
    }
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
    let this = this_subgraph(ctx)?;
    let (cond, body) = while_subgraphs(p, this)?;
    // SAFETY: `this`, `cond` and `body` are distinct live subgraphs (checked by `callee`
    // and above); no reference to any is held across these calls.
    unsafe {
        if (*cond).inputs().len() != n || (*cond).outputs().len() != 1 {
            return Err(op_error(WHILE, format!("the condition subgraph must take {n} inputs and give 1 output")));
        }
        if (*body).inputs().len() != n || (*body).outputs().len() != n {
            return Err(op_error(WHILE, format!("the body subgraph must take {n} inputs and give {n} outputs")));
        }
        prepare_callee(this, &node_inputs, cond, WHILE)?;
        let cond_out = (*cond).outputs()[0];
        if !(*cond).is_dynamic_tensor(cond_out) {
            let (shape, ty) = (*cond).shape_and_type(cond_out).map_err(|e| op_error(WHILE, e.message))?;
            check_cond_output(&shape, ty)?;
        }
        prepare_callee(this, &node_inputs, body, WHILE)?;
        let mut dynamic = (*body).has_dynamic_tensors();
        let mut shapes = Vec::with_capacity(n);
        let (b_in, b_out) = ((*body).inputs().to_vec(), (*body).outputs().to_vec());
        for i in 0..n {
            if b_out[i] < 0 || b_in[i] < 0 {
                return Err(op_error(WHILE, "the body subgraph has optional inputs or outputs"));
            }
            let (in_shape, in_ty) = (*body).shape_and_type(b_in[i]).map_err(|e| op_error(WHILE, e.message))?;
            let (out_shape, out_ty) = (*body).shape_and_type(b_out[i]).map_err(|e| op_error(WHILE, e.message))?;
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
}

fn while_eval(ctx: &OpCtx<'_>, p: &TfLiteWhileParams) -> Result<()> {
    let this = this_subgraph(ctx)?;
    let (cond, body) = while_subgraphs(p, this)?;
    let node_inputs = ctx.input_indices().to_vec();
    let node_outputs = ctx.output_indices().to_vec();
    // SAFETY: as in `while_prepare`.
    unsafe {
        // The loop values live in the node's outputs.
        copy_tensors(this, &node_inputs, this, &node_outputs).map_err(|e| op_error(WHILE, e.message))?;
        loop {
            run_callee(this, &node_outputs, cond, WHILE)?;
            let cond_out = (*cond).outputs()[0];
            let (shape, ty, p, bytes) = (*cond).read_tensor(cond_out).map_err(|e| op_error(WHILE, e.message))?;
            check_cond_output(&shape, ty)?;
            if bytes == 0 || p.is_null() {
                return Err(op_error(WHILE, "the condition output has no data"));
            }
            if *p == 0 {
                break;
            }
            run_callee(this, &node_outputs, body, WHILE)?;
            let outs = (*body).outputs().to_vec();
            copy_tensors(body, &outs, this, &node_outputs).map_err(|e| op_error(WHILE, e.message))?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// CALL_ONCE
// ---------------------------------------------------------------------------------------

const CALL_ONCE: &str = "CALL_ONCE";

fn call_once_prepare(ctx: &OpCtx<'_>, p: &TfLiteCallOnceParams) -> Result<()> {
    let this = this_subgraph(ctx)?;
    // SAFETY: `this` is the live subgraph running this node.
    let (own, shared) = unsafe { ((*this).own_index(), (*this).shared.clone()) };
    if usize::try_from(p.init_subgraph_index).ok() == own {
        return Err(op_error(CALL_ONCE, "the init subgraph is the calling subgraph itself"));
    }
    if let Ok(i) = usize::try_from(p.init_subgraph_index)
        && shared.lock().unwrap_or_else(|e| e.into_inner()).is_initialized(i)
    {
        return Ok(());
    }
    if ctx.num_inputs() != 0 || ctx.num_outputs() != 0 {
        return Err(op_error(CALL_ONCE, "takes no inputs and gives no outputs"));
    }
    // SAFETY: as above; the init subgraph is a distinct live sibling.
    unsafe {
        let init =
            (*this).callee(p.init_subgraph_index, "init_subgraph_index").map_err(|e| op_error(CALL_ONCE, e.message))?;
        if !(*init).inputs().is_empty() || !(*init).outputs().is_empty() {
            return Err(op_error(CALL_ONCE, "the init subgraph must have no inputs and no outputs"));
        }
    }
    Ok(())
}

fn call_once_eval(ctx: &OpCtx<'_>, p: &TfLiteCallOnceParams) -> Result<()> {
    let this = this_subgraph(ctx)?;
    // SAFETY: `this` is the live subgraph running this node.
    let shared = unsafe { (*this).shared.clone() };
    let index =
        usize::try_from(p.init_subgraph_index).map_err(|_| op_error(CALL_ONCE, "negative init subgraph index"))?;
    if shared.lock().unwrap_or_else(|e| e.into_inner()).is_initialized(index) {
        return Ok(());
    }
    // SAFETY: as above; the init subgraph is a distinct live sibling.
    unsafe {
        let init = callee(this, p.init_subgraph_index, "init_subgraph_index", CALL_ONCE)?;
        run_callee(this, &[], init, CALL_ONCE)?;
    }
    shared.lock().unwrap_or_else(|e| e.into_inner()).mark_initialized(index);
    Ok(())
}
