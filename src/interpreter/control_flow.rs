//! What the control-flow and variable kernels (IF, WHILE, CALL_ONCE, the resource
//! variable ops) need from the interpreter, behind the kernels' narrow `SubgraphCalls`
//! trait: reaching a sibling subgraph safely, giving its inputs the shapes and types of
//! the caller's tensors, copying tensor data between subgraphs, the shared resources.
//!
//! Unlike TFLite, which aliases the callee's inputs and outputs to the caller's buffers
//! where it can, values are always copied (deep copies): simpler, and a callee never
//! writes into memory it does not own.
//!
//! Safety of the calls: a callee is a different subgraph from the caller (checked), and
//! a subgraph that is already running (`busy`, set by `allocate_tensors` and `invoke`)
//! cannot be entered again, so a model whose subgraphs call each other in a cycle gets
//! an error instead of endless recursion; `MAX_CALL_DEPTH` bounds nesting besides.

use super::context::subgraph_from_context;
use super::subgraph::{Subgraph, dynamic_realloc};
use crate::abi::arrays::{OwnedIntArray, int_array_slice};
use crate::abi::types::*;
use crate::error::{Error, Result};
use crate::kernels::graph::{SubgraphCalls, SubgraphIndex};
use crate::kernels::resources::SharedState;
use crate::model::validate::tensor_bytes;
use std::sync::{Arc, Mutex};

/// The deepest chain of nested subgraph calls allowed.
pub(crate) const MAX_CALL_DEPTH: usize = 32;

impl Subgraph {
    /// This subgraph's index among its siblings (the model's subgraph index).
    pub fn own_index(&self) -> Option<usize> {
        self.siblings.iter().position(|&p| std::ptr::eq(p, self))
    }

    /// Number of subgraphs in the interpreter.
    pub fn sibling_count(&self) -> usize {
        self.siblings.len()
    }

    /// Sibling subgraph `index`, for a control-flow op of this subgraph (`what` names the
    /// operand in errors). It must exist, differ from this subgraph and not be running.
    pub fn callee(&self, index: i32, what: &str) -> Result<*mut Subgraph> {
        let target = usize::try_from(index)
            .ok()
            .and_then(|i| self.siblings.get(i).copied())
            .ok_or_else(|| Error::new(format!("{what} {index} is out of range ({} subgraphs)", self.siblings.len())))?;
        if std::ptr::eq(target, self) {
            return Err(Error::new(format!("{what} {index} is the calling subgraph itself (recursion)")));
        }
        // SAFETY: siblings are live subgraphs of the same interpreter, distinct from `self`.
        let t = unsafe { &*target };
        if t.busy {
            return Err(Error::new(format!("{what} {index} is already running (recursive subgraph calls)")));
        }
        if self.call_depth + 1 > MAX_CALL_DEPTH {
            return Err(Error::new(format!("subgraph calls nest deeper than {MAX_CALL_DEPTH}")));
        }
        Ok(target)
    }

    /// Marks `callee` as called from this subgraph (for the nesting bound).
    pub fn enter_call(&self, callee: &mut Subgraph) {
        callee.call_depth = self.call_depth + 1;
    }

    fn checked_tensor(&self, index: i32) -> Result<&TfLiteTensor> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.tensors.get(i))
            .ok_or_else(|| Error::new(format!("tensor index {index} out of range")))
    }

    /// Shape and type of tensor `index`.
    pub fn shape_and_type(&self, index: i32) -> Result<(Vec<i32>, TfLiteType)> {
        let t = self.checked_tensor(index)?;
        let ty = t.data_type().ok_or_else(|| Error::new(format!("tensor {index} has an invalid type")))?;
        // SAFETY: dims is owned by the tensor.
        Ok((unsafe { int_array_slice(t.dims) }.to_vec(), ty))
    }

    /// True if tensor `index` is `kTfLiteDynamic`.
    pub fn is_dynamic_tensor(&self, index: i32) -> bool {
        self.has_dynamic_tensor(&[index])
    }

    /// Gives input tensor `index` of this (callee) subgraph `dims` and `dtype`, as
    /// TFLite's `CopyTensorsShapeAndType` with `ResizeInputTensor`: a change makes the
    /// subgraph need `allocate_tensors` again.
    pub fn set_input_shape_and_type(&mut self, index: i32, dims: &[i32], dtype: TfLiteType) -> Result<()> {
        let i = usize::try_from(index)
            .ok()
            .filter(|&i| i < self.tensors.len())
            .ok_or_else(|| Error::new(format!("tensor index {index} out of range")))?;
        if self.tensors[i].data_type() != Some(dtype) {
            if matches!(self.tensors[i].allocation(), Some(TfLiteAllocationType::kTfLiteMmapRo)) {
                return Err(Error::new(format!("subgraph input {index} is a constant")));
            }
            self.tensors[i].r#type = dtype;
            let arr = OwnedIntArray::new(dims).ok_or_else(|| Error::new("out of memory"))?;
            self.state = super::subgraph::State::Uninvokable;
            return self.resize_tensor(i, arr);
        }
        self.resize_input_tensor(index, dims)
    }

    /// Copies the shapes and types of this subgraph's tensors `src` onto `callee`'s
    /// inputs `dst` (pairwise; -1 on either side is skipped).
    pub fn copy_shapes_to_inputs(&self, src: &[i32], callee: &mut Subgraph, dst: &[i32]) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::new(format!("{} values for {} subgraph inputs", src.len(), dst.len())));
        }
        for (&s, &d) in src.iter().zip(dst) {
            if s < 0 || d < 0 {
                continue;
            }
            let (dims, ty) = self.shape_and_type(s)?;
            callee.set_input_shape_and_type(d, &dims, ty)?;
        }
        Ok(())
    }

    /// Writes `dims`/`dtype`/`data` into tensor `index` of this subgraph: a dynamic tensor
    /// takes the shape and gets memory for the data; any other must already hold exactly
    /// that many bytes of that type.
    ///
    /// `data` must not point into tensor `index`'s own memory unless it is exactly that
    /// memory (then nothing is copied).
    pub(crate) fn write_tensor(
        &mut self,
        index: i32,
        dims: &[i32],
        dtype: TfLiteType,
        data: *const u8,
        bytes: usize,
    ) -> Result<()> {
        let i = usize::try_from(index)
            .ok()
            .filter(|&i| i < self.tensors.len())
            .ok_or_else(|| Error::new(format!("tensor index {index} out of range")))?;
        let t = &self.tensors[i];
        if matches!(t.allocation(), Some(TfLiteAllocationType::kTfLiteMmapRo)) {
            return Err(Error::new(format!("tensor {index} is a constant and cannot be written")));
        }
        if t.data_type() != Some(dtype) {
            return Err(Error::new(format!(
                "tensor {index} has type {}, the value has type {}",
                t.data_type().map_or("invalid", |t| t.name()),
                dtype.name()
            )));
        }
        if matches!(t.allocation(), Some(TfLiteAllocationType::kTfLiteDynamic)) {
            // SAFETY: dims is owned by the tensor.
            let same = unsafe { int_array_slice(t.dims) } == dims;
            if !same || t.data_ptr().is_null() {
                let arr = OwnedIntArray::new(dims).ok_or_else(|| Error::new("out of memory"))?;
                self.resize_tensor(i, arr)?;
            }
            let t = &mut self.tensors[i];
            if t.bytes != bytes || t.data_ptr().is_null() {
                dynamic_realloc(t, bytes)?;
            }
        } else if t.bytes != bytes {
            return Err(Error::new(format!(
                "tensor {index} holds {} bytes, the value has {bytes} (shape {dims:?})",
                t.bytes
            )));
        }
        let t = &mut self.tensors[i];
        let dst = t.data_ptr() as *mut u8;
        if bytes == 0 || std::ptr::eq(dst, data) {
            return Ok(());
        }
        if dst.is_null() || data.is_null() {
            return Err(Error::new(format!("tensor {index}: no data to copy")));
        }
        // SAFETY: `dst` holds `bytes` writable bytes (checked above); `data` holds `bytes`
        // readable bytes (caller) and is not inside `dst` unless equal (caller).
        unsafe { core::ptr::copy(data, dst, bytes) };
        Ok(())
    }

    /// Readable data of tensor `index`: (shape, type, pointer, bytes).
    pub(crate) fn read_tensor(&mut self, index: i32) -> Result<(Vec<i32>, TfLiteType, *const u8, usize)> {
        self.ensure_tensor_data_is_readable(index)?;
        let (dims, ty) = self.shape_and_type(index)?;
        let t = self.checked_tensor(index)?;
        let expected = tensor_bytes(ty, &dims).unwrap_or(t.bytes);
        let p = t.data_ptr() as *const u8;
        if t.bytes > 0 && p.is_null() {
            return Err(Error::new(format!("tensor {index} has no data")));
        }
        if expected > t.bytes {
            return Err(Error::new(format!("tensor {index} holds {} bytes, its shape needs {expected}", t.bytes)));
        }
        Ok((dims, ty, p, t.bytes))
    }
}

/// Copies tensor `src` of `from` into tensor `dst` of `to` (shape too, for a dynamic
/// destination). `from` and `to` may be the same subgraph.
///
/// # Safety
/// `from` and `to` must be live subgraphs; no reference to either is held across the call.
pub unsafe fn copy_tensor(from: *mut Subgraph, src: i32, to: *mut Subgraph, dst: i32) -> Result<()> {
    if std::ptr::eq(from, to) && src == dst {
        return Ok(());
    }
    // SAFETY: per the function contract; the borrow ends before `to` is used.
    let (dims, ty, p, bytes) = unsafe { (*from).read_tensor(src)? };
    if std::ptr::eq(from, to) {
        // Same subgraph, different tensors: copy through a buffer so that a reallocation
        // of `dst` cannot invalidate the source (and they never overlap then).
        // SAFETY: `p` holds `bytes` readable bytes (read_tensor).
        let tmp = if bytes == 0 { Vec::new() } else { unsafe { core::slice::from_raw_parts(p, bytes) }.to_vec() };
        // SAFETY: per the function contract.
        return unsafe { (*to).write_tensor(dst, &dims, ty, tmp.as_ptr(), bytes) };
    }
    // SAFETY: distinct subgraphs own distinct memory; `p` stays valid because writing
    // `to` never touches `from`'s tensors.
    unsafe { (*to).write_tensor(dst, &dims, ty, p, bytes) }
}

/// Copies tensors `src` of `from` pairwise into tensors `dst` of `to` (-1 skipped).
///
/// # Safety
/// As [`copy_tensor`].
pub unsafe fn copy_tensors(from: *mut Subgraph, src: &[i32], to: *mut Subgraph, dst: &[i32]) -> Result<()> {
    if src.len() != dst.len() {
        return Err(Error::new(format!("{} values for {} tensors", src.len(), dst.len())));
    }
    for (&s, &d) in src.iter().zip(dst) {
        if s < 0 || d < 0 {
            continue;
        }
        // SAFETY: forwarded contract.
        unsafe { copy_tensor(from, s, to, d)? };
    }
    Ok(())
}

/// The running subgraph as the kernels see it ([`SubgraphCalls`]): subgraphs by index,
/// tensors by index and value.
struct RunningSubgraph(*mut Subgraph);

/// Installed into the kernel layer by [`super::Interpreter::new`].
///
/// # Safety
/// `context` is the live context of a subgraph of a live interpreter, passed to one of
/// its kernels (so the subgraph and its siblings stay alive while the kernel runs).
pub(crate) unsafe fn calls_of(context: *mut TfLiteContext) -> Option<Box<dyn SubgraphCalls>> {
    if context.is_null() {
        return None;
    }
    // Only a context a subgraph made has that subgraph behind `impl_`; such a context
    // resizes tensors with the subgraph's own callback. A kernel run on another context
    // (a test harness, an embedder's) gets "outside an interpreter" instead.
    // SAFETY: per the function contract the context is live.
    let resize = unsafe { (*context).ResizeTensor };
    let ours: unsafe extern "C" fn(*mut TfLiteContext, *mut TfLiteTensor, *mut TfLiteIntArray) -> TfLiteStatus =
        super::context::resize_tensor;
    if resize.map(|f| f as usize) != Some(ours as usize) {
        return None;
    }
    // SAFETY: per the function contract, and the context is a subgraph's (checked above).
    let this = unsafe { subgraph_from_context(context) }?;
    Some(Box::new(RunningSubgraph(this)))
}

impl RunningSubgraph {
    /// The running subgraph.
    fn this(&self) -> &Subgraph {
        // SAFETY: `calls_of`'s contract: live while the kernel runs; no other reference to
        // it is used by the kernel meanwhile.
        unsafe { &*self.0 }
    }

    /// Subgraph `sg` of the interpreter (the running one included).
    fn at(&self, sg: SubgraphIndex) -> Result<*mut Subgraph> {
        self.this().siblings.get(sg).copied().ok_or_else(|| {
            Error::new(format!("subgraph {sg} is out of range ({} subgraphs)", self.this().siblings.len()))
        })
    }

    /// Subgraph `sg`, read-only; `None` when out of range.
    fn get(&self, sg: SubgraphIndex) -> Option<&Subgraph> {
        // SAFETY: siblings are live subgraphs of the same interpreter; the reference
        // ends with the caller's use, before any mutation through another pointer.
        self.at(sg).ok().map(|p| unsafe { &*p })
    }
}

impl SubgraphCalls for RunningSubgraph {
    fn own_index(&self) -> Option<SubgraphIndex> {
        self.this().own_index()
    }

    fn enter(&mut self, index: i32, what: &str) -> Result<SubgraphIndex> {
        let callee = self.this().callee(index, what)?;
        // SAFETY: `callee` checked the target is a live sibling distinct from this one.
        self.this().enter_call(unsafe { &mut *callee });
        Ok(index as usize)
    }

    fn inputs(&self, sg: SubgraphIndex) -> Vec<i32> {
        self.get(sg).map(|s| s.inputs().to_vec()).unwrap_or_default()
    }

    fn outputs(&self, sg: SubgraphIndex) -> Vec<i32> {
        self.get(sg).map(|s| s.outputs().to_vec()).unwrap_or_default()
    }

    fn shape_and_type(&self, sg: SubgraphIndex, t: i32) -> Result<(Vec<i32>, TfLiteType)> {
        self.get(sg).ok_or_else(|| Error::new(format!("subgraph {sg} is out of range")))?.shape_and_type(t)
    }

    fn is_dynamic_tensor(&self, sg: SubgraphIndex, t: i32) -> bool {
        self.get(sg).is_some_and(|s| s.is_dynamic_tensor(t))
    }

    fn has_dynamic_tensors(&self, sg: SubgraphIndex) -> bool {
        self.get(sg).is_some_and(|s| s.has_dynamic_tensors())
    }

    fn copy_shapes_to_inputs(&mut self, src: &[i32], callee: SubgraphIndex) -> Result<()> {
        let c = self.at(callee)?;
        if std::ptr::eq(c, self.0) {
            return Err(Error::new(format!("subgraph {callee} is the calling subgraph itself (recursion)")));
        }
        // SAFETY: `c` is a live sibling distinct from the running subgraph (checked).
        let c = unsafe { &mut *c };
        let inputs = c.inputs().to_vec();
        self.this().copy_shapes_to_inputs(src, c, &inputs)
    }

    fn allocate(&mut self, callee: SubgraphIndex) -> Result<()> {
        let c = self.at(callee)?;
        // SAFETY: a live sibling; nothing else references it during the call.
        unsafe { (*c).allocate_tensors() }
    }

    fn invoke(&mut self, callee: SubgraphIndex) -> Result<()> {
        let c = self.at(callee)?;
        // SAFETY: as `allocate`.
        unsafe { (*c).invoke() }
    }

    fn copy(&mut self, from: SubgraphIndex, src: &[i32], to: SubgraphIndex, dst: &[i32]) -> Result<()> {
        let (f, t) = (self.at(from)?, self.at(to)?);
        // SAFETY: both are live subgraphs of this interpreter; no reference to either is
        // held across the call.
        unsafe { copy_tensors(f, src, t, dst) }
    }

    fn read_first_byte(&mut self, sg: SubgraphIndex, t: i32) -> Result<(Vec<i32>, TfLiteType, Option<u8>)> {
        let s = self.at(sg)?;
        // SAFETY: a live subgraph; `read_tensor` checked `p` holds `bytes` readable bytes.
        unsafe {
            let (shape, ty, p, bytes) = (*s).read_tensor(t)?;
            Ok((shape, ty, if bytes == 0 || p.is_null() { None } else { Some(*p) }))
        }
    }

    fn write(&mut self, t: i32, dims: &[i32], dtype: TfLiteType, data: &[u8]) -> Result<()> {
        // SAFETY: the running subgraph (see `this`); `data` is the caller's own buffer.
        unsafe { (*self.0).write_tensor(t, dims, dtype, data.as_ptr(), data.len()) }
    }

    fn shared(&self) -> Arc<Mutex<SharedState>> {
        self.this().shared.clone()
    }

    fn builtin_codes(&self, sg: SubgraphIndex) -> Result<Vec<i32>> {
        let s = self.get(sg).ok_or_else(|| Error::new(format!("subgraph {sg} is out of range")))?;
        Ok(s.execution_plan()
            .iter()
            .filter_map(|&n| s.node_entry(usize::try_from(n).ok()?))
            .map(|e| e.registration.builtin_code)
            .collect())
    }
}
