//! VAR_HANDLE, READ_VARIABLE and ASSIGN_VARIABLE (TFLite `kernels/var_handle.cc`,
//! `read_variable.cc`, `assign_variable.cc`): resource variables.
//!
//! A variable is named by (container, shared_name); VAR_HANDLE outputs its id (an int32
//! in a resource tensor), the same id in every subgraph of the interpreter. The values
//! live in the interpreter's shared state (`kernels::resources`), so they persist
//! across invokes and are visible from every subgraph (a WHILE body assigns, the main
//! graph reads). Reading a variable that was never assigned is an error.

use crate::abi::builtin_op_data::TfLiteVarHandleParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::graph::{SubgraphCalls, calls_of};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::resources::ResourceVariable;
use crate::kernels::shape_util::{check_arity, op_error};
use std::ffi::CStr;

/// The VAR_HANDLE registration.
pub fn var_handle_registration() -> TfLiteRegistration {
    kernel::registration::<VarHandle>(TfLiteBuiltinOperator::kTfLiteBuiltinVarHandle)
}

/// The READ_VARIABLE registration.
pub fn read_variable_registration() -> TfLiteRegistration {
    kernel::registration::<ReadVariable>(TfLiteBuiltinOperator::kTfLiteBuiltinReadVariable)
}

/// The ASSIGN_VARIABLE registration.
pub fn assign_variable_registration() -> TfLiteRegistration {
    kernel::registration::<AssignVariable>(TfLiteBuiltinOperator::kTfLiteBuiltinAssignVariable)
}

/// VAR_HANDLE: its state is the variable's (container, shared_name), read from the
/// options once.
struct VarHandle;

impl BuiltinKernel for VarHandle {
    const NAME: &'static str = VAR_HANDLE;
    type Params = TfLiteVarHandleParams;
    type State = (String, String);

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteVarHandleParams) -> Result<(String, String)> {
        var_handle_prepare(ctx)?;
        Ok((c_str(p.container), c_str(p.shared_name)))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteVarHandleParams, name: &mut (String, String)) -> Result<()> {
        var_handle_eval(ctx, name)
    }
}

/// READ_VARIABLE: no state (the value lives in the interpreter's resources).
struct ReadVariable;

impl BuiltinKernel for ReadVariable {
    const NAME: &'static str = READ_VARIABLE;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        read_variable_prepare(ctx)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        read_variable_eval(ctx)
    }
}

/// ASSIGN_VARIABLE: no state (the value lives in the interpreter's resources).
struct AssignVariable;

impl BuiltinKernel for AssignVariable {
    const NAME: &'static str = ASSIGN_VARIABLE;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        assign_variable_prepare(ctx)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        assign_variable_eval(ctx)
    }
}

const VAR_HANDLE: &str = "VAR_HANDLE";
const READ_VARIABLE: &str = "READ_VARIABLE";
const ASSIGN_VARIABLE: &str = "ASSIGN_VARIABLE";

fn this_subgraph(ctx: &OpCtx<'_>, op: &str) -> Result<Box<dyn SubgraphCalls>> {
    calls_of(ctx, op)
}

fn c_str(p: *const core::ffi::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-NULL params strings point at NUL-terminated flatbuffer strings inside
    // the model, which outlives the interpreter.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn var_handle_prepare(ctx: &OpCtx<'_>) -> Result<()> {
    check_arity(ctx, VAR_HANDLE, 0, 0, 1)?;
    let out = ctx.output(0).map_err(|e| op_error(VAR_HANDLE, e.message))?;
    if !matches!(out.dtype, TfLiteType::kTfLiteResource | TfLiteType::kTfLiteInt32) {
        return Err(op_error(VAR_HANDLE, format!("output type {} is not a resource", out.dtype.name())));
    }
    ctx.set_output_dynamic(0).map_err(|e| op_error(VAR_HANDLE, e.message))
}

fn var_handle_eval(ctx: &OpCtx<'_>, (container, shared_name): &(String, String)) -> Result<()> {
    let out = ctx.output(0).map_err(|e| op_error(VAR_HANDLE, e.message))?;
    let (index, dtype) = (out.index as i32, out.dtype);
    let mut g = this_subgraph(ctx, VAR_HANDLE)?;
    let id = g.shared().lock().unwrap_or_else(|e| e.into_inner()).resource_id(container, shared_name);
    g.write(index, &[], dtype, &id.to_le_bytes()).map_err(|e| op_error(VAR_HANDLE, e.message))
}

/// The resource id held by a resource (or int32) tensor with one element.
fn resource_id(t: &TensorView<'_>, op: &str) -> Result<i32> {
    if !matches!(t.dtype, TfLiteType::kTfLiteResource | TfLiteType::kTfLiteInt32) {
        return Err(op_error(op, format!("the resource input has type {}", t.dtype.name())));
    }
    let raw = t.raw()?;
    let b: [u8; 4] =
        raw.get(..4).and_then(|b| b.try_into().ok()).ok_or_else(|| op_error(op, "the resource input holds no id"))?;
    Ok(i32::from_le_bytes(b))
}

fn check_resource_input(ctx: &OpCtx<'_>, op: &str) -> Result<()> {
    let r = ctx.input(0).map_err(|e| op_error(op, e.message))?;
    if !matches!(r.dtype, TfLiteType::kTfLiteResource | TfLiteType::kTfLiteInt32) || r.num_elements() != 1 {
        return Err(op_error(op, "the first input must be one resource id"));
    }
    Ok(())
}

fn read_variable_prepare(ctx: &OpCtx<'_>) -> Result<()> {
    check_arity(ctx, READ_VARIABLE, 1, 1, 1)?;
    check_resource_input(ctx, READ_VARIABLE)?;
    let out = ctx.output(0).map_err(|e| op_error(READ_VARIABLE, e.message))?;
    if out.shape.is_empty() {
        ctx.set_output_dynamic(0).map_err(|e| op_error(READ_VARIABLE, e.message))?;
    }
    Ok(())
}

fn read_variable_eval(ctx: &OpCtx<'_>) -> Result<()> {
    let id = resource_id(&ctx.input(0)?, READ_VARIABLE)?;
    let out = ctx.output(0).map_err(|e| op_error(READ_VARIABLE, e.message))?;
    let (index, dtype) = (out.index as i32, out.dtype);
    let mut g = this_subgraph(ctx, READ_VARIABLE)?;
    // The variable is cloned out of the lock, so writing the output cannot touch it.
    let var = g.shared().lock().unwrap_or_else(|e| e.into_inner()).variable(id).cloned();
    let var = var.ok_or_else(|| op_error(READ_VARIABLE, format!("resource variable {id} was never assigned")))?;
    if var.dtype != dtype {
        return Err(op_error(
            READ_VARIABLE,
            format!("the variable has type {}, the output {}", var.dtype.name(), dtype.name()),
        ));
    }
    g.write(index, &var.dims, dtype, &var.data).map_err(|e| op_error(READ_VARIABLE, e.message))
}

fn assign_variable_prepare(ctx: &OpCtx<'_>) -> Result<()> {
    check_arity(ctx, ASSIGN_VARIABLE, 2, 2, 0)?;
    check_resource_input(ctx, ASSIGN_VARIABLE)
}

fn assign_variable_eval(ctx: &OpCtx<'_>) -> Result<()> {
    let id = resource_id(&ctx.input(0)?, ASSIGN_VARIABLE)?;
    let value = ctx.input(1).map_err(|e| op_error(ASSIGN_VARIABLE, e.message))?;
    if value.dtype.element_size().is_none() {
        return Err(op_error(ASSIGN_VARIABLE, format!("values of type {} are not supported", value.dtype.name())));
    }
    let var = ResourceVariable { dtype: value.dtype, dims: value.shape.to_vec(), data: value.raw()?.to_vec() };
    let shared = this_subgraph(ctx, ASSIGN_VARIABLE)?.shared();
    shared.lock().unwrap_or_else(|e| e.into_inner()).assign(id, var);
    Ok(())
}
