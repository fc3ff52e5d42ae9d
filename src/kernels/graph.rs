//! What the ops that run other subgraphs or keep state across invokes (IF, WHILE,
//! CALL_ONCE, VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE) need from the interpreter, as a
//! narrow trait the interpreter implements. Kernels see subgraphs only by index and
//! tensors only by index and value; they never hold the interpreter's types or pointers.
//!
//! The interpreter installs how to reach the subgraph behind a `TfLiteContext`
//! ([`install`]) when it is first created; a kernel asks for it with [`calls_of`].

use super::api::OpCtx;
use super::resources::SharedState;
use crate::abi::types::{TfLiteContext, TfLiteType};
use crate::error::{Error, Result};
use std::sync::{Arc, Mutex, OnceLock};

/// A subgraph of the model, by index.
pub type SubgraphIndex = usize;

/// The subgraph running a node, and what it may do with its sibling subgraphs.
pub trait SubgraphCalls {
    /// This subgraph's index in the model.
    fn own_index(&self) -> Option<SubgraphIndex>;

    /// Checks that sibling `index` may be called from here (it exists, is not this
    /// subgraph, is not already running, and the nesting stays bounded) and records the
    /// call's depth. `what` names the operand in errors.
    fn enter(&mut self, index: i32, what: &str) -> Result<SubgraphIndex>;

    /// Input tensor indices of subgraph `sg`.
    fn inputs(&self, sg: SubgraphIndex) -> Vec<i32>;

    /// Output tensor indices of subgraph `sg`.
    fn outputs(&self, sg: SubgraphIndex) -> Vec<i32>;

    /// Shape and type of tensor `t` of subgraph `sg`.
    fn shape_and_type(&self, sg: SubgraphIndex, t: i32) -> Result<(Vec<i32>, TfLiteType)>;

    /// True if tensor `t` of subgraph `sg` is dynamic (its shape is known only at Eval).
    fn is_dynamic_tensor(&self, sg: SubgraphIndex, t: i32) -> bool;

    /// True if subgraph `sg` has dynamic tensors after its last allocation.
    fn has_dynamic_tensors(&self, sg: SubgraphIndex) -> bool;

    /// Gives `callee`'s inputs the shapes and types of this subgraph's tensors `src`
    /// (pairwise; a change makes the callee need allocating again).
    fn copy_shapes_to_inputs(&mut self, src: &[i32], callee: SubgraphIndex) -> Result<()>;

    /// Allocates subgraph `callee`'s tensors (a no-op when nothing changed).
    fn allocate(&mut self, callee: SubgraphIndex) -> Result<()>;

    /// Runs subgraph `callee`.
    fn invoke(&mut self, callee: SubgraphIndex) -> Result<()>;

    /// Copies the values (and, into dynamic tensors, the shapes) of tensors `src` of
    /// subgraph `from` into tensors `dst` of subgraph `to`, pairwise (-1 skipped).
    fn copy(&mut self, from: SubgraphIndex, src: &[i32], to: SubgraphIndex, dst: &[i32]) -> Result<()>;

    /// The first byte of tensor `t` of subgraph `sg` (a condition), with its shape and
    /// type; `None` when the tensor holds no bytes.
    fn read_first_byte(&mut self, sg: SubgraphIndex, t: i32) -> Result<(Vec<i32>, TfLiteType, Option<u8>)>;

    /// Writes `dims`, `dtype` and `data` into tensor `t` of this subgraph (a dynamic
    /// tensor takes the shape; any other must already hold that many bytes).
    fn write(&mut self, t: i32, dims: &[i32], dtype: TfLiteType, data: &[u8]) -> Result<()>;

    /// The state every subgraph of the interpreter shares: resource variables and which
    /// init subgraphs have run.
    fn shared(&self) -> Arc<Mutex<SharedState>>;

    /// The builtin operator codes of subgraph `sg`'s nodes in execution order (the
    /// StableHLO ops whose body is a one-op subgraph run that op natively, as TFLite).
    fn builtin_codes(&self, sg: SubgraphIndex) -> Result<Vec<i32>>;
}

/// How the interpreter reaches the subgraph behind a context.
///
/// # Safety
/// Called only with the live context the runtime passed to a kernel.
pub type CallsOf = unsafe fn(*mut TfLiteContext) -> Option<Box<dyn SubgraphCalls>>;

static CALLS_OF: OnceLock<CallsOf> = OnceLock::new();

/// Called by the interpreter (once per process; later calls are ignored).
pub fn install(calls_of: CallsOf) {
    let _ = CALLS_OF.set(calls_of);
}

/// The subgraph running `ctx`'s node; an error for a context no interpreter made.
pub fn calls_of(ctx: &OpCtx<'_>, op: &str) -> Result<Box<dyn SubgraphCalls>> {
    let f = CALLS_OF.get().ok_or_else(|| outside(op))?;
    // SAFETY: an `OpCtx` holds the live context the runtime passed to the kernel.
    unsafe { f(ctx.context()) }.ok_or_else(|| outside(op))
}

fn outside(op: &str) -> Error {
    Error::new(format!("{op}: run outside an interpreter (no subgraph to call)"))
}
