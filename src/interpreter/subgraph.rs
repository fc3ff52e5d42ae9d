//! One subgraph: the C-visible tensor table, the nodes, the execution plan, and the
//! prepare → plan → commit → invoke cycle.
//!
//! Memory: `allocate_tensors` prepares every node (kernels resize their outputs through
//! `context->ResizeTensor`), then hands all shapes to the arena planner
//! (`crate::memory`) once and commits one RW arena and one persistent arena, resolving
//! tensor pointers from offsets. Any resize marks the subgraph uninvokable until the next
//! `allocate_tensors`, as TFLite does.

use super::Reporter;
use super::context;
use super::delegation::Delegation;
use super::node_ops;
use crate::abi::arrays::*;
use crate::abi::types::*;
use crate::error::{Error, Result};
use crate::memory::{self, AlignedBuffer, NodeTensors, PlanRequest, TensorKind};
use crate::model::Model;
use crate::model::validate::tensor_bytes;
use core::ffi::c_void;
use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One node with the registration it runs and what it owns.
pub struct NodeEntry {
    /// The C-visible node (its arrays are malloc'ed and owned here).
    pub node: TfLiteNode,
    /// The registration (a copy; `custom_name` points into `custom_name` below).
    pub registration: TfLiteRegistration,
    /// The op's display name ("ADD", or the custom name).
    pub op_name: String,
    /// `Some(name)` for a custom op no resolver knew: a placeholder a delegate may claim.
    pub unresolved_custom: Option<String>,
    pub(crate) custom_name: Option<CString>,
    pub(crate) owns_builtin_data: bool,
    pub(crate) initialized: bool,
    /// Whether Invoke may skip the node: see [`Settled`].
    pub(crate) settled: Settled,
}

/// A node whose outputs, once computed, stay as they are until it is prepared again: our
/// DEQUANTIZE of constant weights into the persistent arena, whose kernel (as TFLite's
/// dequantize.cc) computes them at its first Invoke and returns at once after that. Invoke
/// skips such a node after its first run, which saves the per-node dispatch on models
/// with float16 weights (face_landmark: 113 of its 190 nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// Runs every Invoke.
    Never,
    /// Settles once its next run succeeds.
    AfterNextRun,
    /// Its outputs are final: skipped until it is prepared again.
    Yes,
}

impl NodeEntry {
    /// Frees what the node owns: calls the kernel's `free` on its `user_data` (once, and
    /// only for non-NULL data, as TFLite), then the node's arrays and owned builtin data
    /// (a delegate node's `TfLiteDelegateParams` block). The node must not run again.
    ///
    /// # Safety
    /// `ctx` must be the live context of the node's subgraph.
    pub(crate) unsafe fn release(&mut self, ctx: *mut TfLiteContext) {
        if self.initialized {
            // SAFETY: calling the registration's free on what its init returned, once.
            unsafe { node_ops::free(&self.registration, ctx, self.node.user_data) };
            self.initialized = false;
        }
        self.node.user_data = core::ptr::null_mut();
        // SAFETY: node arrays and owned builtin data are malloc'ed and owned by the node;
        // the pointers are cleared so a second release is harmless.
        unsafe {
            int_array_free(self.node.inputs);
            int_array_free(self.node.outputs);
            int_array_free(self.node.intermediates);
            int_array_free(self.node.temporaries);
            if self.owns_builtin_data {
                libc::free(self.node.builtin_data);
            }
        }
        self.node.inputs = core::ptr::null_mut();
        self.node.outputs = core::ptr::null_mut();
        self.node.intermediates = core::ptr::null_mut();
        self.node.temporaries = core::ptr::null_mut();
        self.node.builtin_data = core::ptr::null_mut();
        self.owns_builtin_data = false;
    }
}

/// Arena sizes after planning.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MemoryStats {
    pub arena_bytes: usize,
    pub persistent_bytes: usize,
    pub lower_bound_bytes: usize,
}

/// TFLite's subgraph states.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum State {
    /// Needs `allocate_tensors` before `invoke`.
    Uninvokable,
    /// Ready to run.
    Invokable,
    /// Ready to run, and a delegate that does not allow dynamic tensors has been
    /// applied: a resize undoes the delegates (they are re-applied at the next
    /// `allocate_tensors`).
    InvokableAndImmutable,
}

/// A subgraph. Always boxed: `context.impl_` points back at it.
pub struct Subgraph {
    pub(crate) context: TfLiteContext,
    pub(crate) tensors: Vec<TfLiteTensor>,
    pub(super) tensor_names: Vec<Option<CString>>,
    // Boxed: C code holds `TfLiteNode*` across node additions (delegates add nodes).
    #[allow(clippy::vec_box, reason = "stable node addresses")]
    pub(crate) nodes: Vec<Box<NodeEntry>>,
    pub(crate) execution_plan: Vec<i32>,
    pub(crate) inputs: Vec<i32>,
    pub(crate) outputs: Vec<i32>,
    pub(crate) variables: Vec<i32>,
    pub(crate) name: CString,
    pub(crate) reporter: Reporter,
    pub(crate) model: Arc<Model>,
    pub(super) external_contexts: [*mut TfLiteExternalContext; 5],
    pub(super) siblings: Vec<*mut Subgraph>,
    pub(crate) preserve_intermediates: bool,
    pub(super) in_invoke: bool,
    pub(crate) state: State,
    /// Delegates applied to this subgraph and what their application owns.
    pub(super) delegation: Delegation,
    arena: AlignedBuffer,
    persistent: AlignedBuffer,
    stats: MemoryStats,
    cancelled: Arc<AtomicBool>,
    cancellation_enabled: bool,
    profile: Option<Vec<Duration>>,
    /// When each profiled node started (beside `profile`).
    profile_starts: Vec<Instant>,
    /// Execution-plan index of the first node not prepared yet (TFLite's
    /// `next_execution_plan_index_to_prepare_`): preparing stops after a node whose
    /// outputs are dynamic, and Invoke prepares the rest when it gets there.
    next_to_prepare: usize,
    /// True once a prepare found a dynamic tensor (a graph output, or an output of a
    /// prepared node), as TFLite's `HasDynamicTensors()`.
    has_dynamic_tensors: bool,
    /// Set by `resize_tensor` when a shape changes; Invoke clears it before each node.
    tensor_resized_since_op_invoke: bool,
    /// Nodes are being (re-)prepared from inside Invoke.
    preparing_in_invoke: bool,
    /// The plan the arenas hold and what it was computed from.
    committed: Option<Committed>,
    /// This subgraph is running (allocate_tensors or invoke): a control-flow op entering
    /// it again would recurse, so `callee` refuses it.
    pub(super) busy: bool,
    /// How many control-flow calls deep this subgraph's current run is.
    pub(super) call_depth: usize,
    /// Interpreter-wide state shared by every subgraph (resource variables, CALL_ONCE).
    pub(super) shared: Arc<std::sync::Mutex<crate::kernels::resources::SharedState>>,
    /// Activation nodes fused into their producers (`fusion.rs`), to undo before a
    /// delegate sees the graph.
    pub(super) fusions: Vec<super::fusion::Fusion>,
    /// The execution plan before fusing (restored by `unfuse_activations`).
    pub(super) plan_before_fusion: Vec<i32>,
    /// Whether AllocateTensors may fuse (the interpreter's `fuse_activations`).
    pub(super) allow_fusion: bool,
    /// Whether Invoke may run on one thread when that times faster (the interpreter's
    /// `adaptive_threads`), and the timing behind that choice.
    pub(super) adaptive_threads: bool,
    thread_choice: super::thread_choice::ThreadChoice,
}

/// A committed memory plan and its inputs, to tell whether a re-plan changes anything.
struct Committed {
    fingerprint: PlanFingerprint,
    plan: memory::MemoryPlan,
}

/// What a memory plan depends on besides the (fixed) graph structure.
#[derive(PartialEq)]
struct PlanFingerprint {
    bytes: Vec<usize>,
    kinds: Vec<TensorKind>,
    temporaries: Vec<Vec<i32>>,
}

impl Subgraph {
    /// An empty subgraph; the builder fills it.
    pub(crate) fn new(
        model: Arc<Model>,
        name: CString,
        reporter: Reporter,
        num_threads: i32,
        cancelled: Arc<AtomicBool>,
        cancellation_enabled: bool,
        preserve_intermediates: bool,
    ) -> Box<Subgraph> {
        let mut sg = Box::new(Subgraph {
            context: context::new_context(num_threads),
            tensors: Vec::new(),
            tensor_names: Vec::new(),
            nodes: Vec::new(),
            execution_plan: Vec::new(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            variables: Vec::new(),
            name,
            reporter,
            model,
            external_contexts: [core::ptr::null_mut(); 5],
            siblings: Vec::new(),
            preserve_intermediates,
            in_invoke: false,
            state: State::Uninvokable,
            delegation: Delegation::default(),
            arena: AlignedBuffer::new(0).unwrap_or_else(|_| unreachable!("a zero-byte buffer allocates nothing")),
            persistent: AlignedBuffer::new(0).unwrap_or_else(|_| unreachable!("a zero-byte buffer allocates nothing")),
            stats: MemoryStats::default(),
            cancelled,
            cancellation_enabled,
            profile: None,
            profile_starts: Vec::new(),
            next_to_prepare: 0,
            has_dynamic_tensors: false,
            tensor_resized_since_op_invoke: false,
            preparing_in_invoke: false,
            committed: None,
            busy: false,
            call_depth: 0,
            shared: Arc::default(),
            fusions: Vec::new(),
            plan_before_fusion: Vec::new(),
            allow_fusion: false,
            adaptive_threads: false,
            thread_choice: Default::default(),
        });
        sg.sync_context();
        sg
    }

    /// Re-points the context at this subgraph and its tensor table. Called before any
    /// C code can see the context, and whenever the table may have moved.
    pub(crate) fn sync_context(&mut self) {
        self.context.impl_ = self as *mut Subgraph as *mut c_void;
        self.context.tensors = self.tensors.as_mut_ptr();
        self.context.tensors_size = self.tensors.len();
    }

    pub(crate) fn set_siblings(&mut self, s: Vec<*mut Subgraph>) {
        self.siblings = s;
    }

    /// The context pointer C code sees.
    pub fn context_ptr(&mut self) -> *mut TfLiteContext {
        self.sync_context();
        &mut self.context
    }

    /// Input tensor indices.
    pub fn inputs(&self) -> &[i32] {
        &self.inputs
    }
    /// Output tensor indices.
    pub fn outputs(&self) -> &[i32] {
        &self.outputs
    }
    /// Variable tensor indices.
    pub fn variables(&self) -> &[i32] {
        &self.variables
    }
    /// Number of tensors.
    pub fn tensors_len(&self) -> usize {
        self.tensors.len()
    }
    /// Number of nodes.
    pub fn nodes_len(&self) -> usize {
        self.nodes.len()
    }
    /// The execution plan (node indices in order).
    pub fn execution_plan(&self) -> &[i32] {
        &self.execution_plan
    }
    /// The subgraph's name.
    pub fn name(&self) -> &CString {
        &self.name
    }
    /// The model this subgraph was built from.
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }
    /// Memory sizes of the last plan.
    pub fn memory_stats(&self) -> MemoryStats {
        self.stats
    }
    /// True once `allocate_tensors` succeeded and nothing was resized since.
    pub fn is_invokable(&self) -> bool {
        self.state != State::Uninvokable
    }
    /// Node `i` and its registration.
    pub fn node_entry(&self, i: usize) -> Option<&NodeEntry> {
        self.nodes.get(i).map(|b| &**b)
    }
    /// Node `i`, mutably.
    pub fn node_entry_mut(&mut self, i: usize) -> Option<&mut NodeEntry> {
        self.nodes.get_mut(i).map(|b| &mut **b)
    }

    /// Pointer to tensor `index`, or `None` if out of range. Valid until tensors are added.
    pub fn tensor_ptr(&mut self, index: i32) -> Option<*mut TfLiteTensor> {
        let i = usize::try_from(index).ok()?;
        self.tensors.get_mut(i).map(|t| t as *mut TfLiteTensor)
    }

    /// Tensor `index`.
    pub fn tensor(&self, index: i32) -> Option<&TfLiteTensor> {
        self.tensors.get(usize::try_from(index).ok()?)
    }

    /// Index of a tensor given a pointer into the table.
    pub fn tensor_index_of(&self, t: *const TfLiteTensor) -> Option<usize> {
        let base = self.tensors.as_ptr() as usize;
        let p = t as usize;
        let sz = core::mem::size_of::<TfLiteTensor>();
        if p < base || !(p - base).is_multiple_of(sz) {
            return None;
        }
        let i = (p - base) / sz;
        (i < self.tensors.len()).then_some(i)
    }

    /// Enables per-node timing in `invoke` (read with `profile`).
    pub fn enable_profiling(&mut self, on: bool) {
        self.profile = on.then(Vec::new);
    }

    /// Per-node durations of the last invoke, in execution-plan order.
    pub fn profile(&self) -> Option<&[Duration]> {
        self.profile.as_deref()
    }

    /// Per-node (start, duration) of the last invoke, in execution-plan order (for a
    /// trace); `None` unless profiling is on.
    pub fn profile_spans(&self) -> Option<Vec<(Instant, Duration)>> {
        let d = self.profile.as_deref()?;
        Some(self.profile_starts.iter().copied().zip(d.iter().copied()).collect())
    }

    /// The memory plan of the last successful `allocate_tensors` (offsets, lifetimes,
    /// sizes, lower bound), or `None` before the first.
    pub fn memory_plan(&self) -> Option<&memory::MemoryPlan> {
        self.committed.as_ref().map(|c| &c.plan)
    }

    /// Reports a message through the interpreter's reporter.
    pub fn report(&self, msg: &str) {
        (self.reporter)(msg)
    }

    /// Appends `n` empty tensors; returns the first new index. Invalidates tensor pointers.
    pub fn add_tensors(&mut self, n: usize) -> Result<usize> {
        let first = self.tensors.len();
        if n > 1 << 24 || first + n > i32::MAX as usize {
            return Err(Error::new(format!("cannot add {n} tensors")));
        }
        for _ in 0..n {
            let mut t = TfLiteTensor::empty();
            t.dims = int_array_create(0);
            if t.dims.is_null() {
                return Err(Error::new("out of memory adding tensors"));
            }
            self.tensors.push(t);
            self.tensor_names.push(None);
        }
        self.sync_context();
        Ok(first)
    }

    /// Resizes a tensor (ResizeInputTensor semantics): marks the subgraph uninvokable when
    /// the shape changes.
    pub fn resize_input_tensor(&mut self, tensor_index: i32, dims: &[i32]) -> Result<()> {
        let i = usize::try_from(tensor_index)
            .ok()
            .filter(|&i| i < self.tensors.len())
            .ok_or_else(|| Error::new(format!("ResizeInputTensor: tensor index {tensor_index} out of range")))?;
        let delegates_applied = !self.delegation.applied.is_empty();
        let immutable = self.state == State::InvokableAndImmutable;
        if immutable && !delegates_applied {
            return Err(Error::new("ResizeInputTensor is disallowed when graph is immutable."));
        }
        let t = &self.tensors[i];
        if matches!(t.allocation(), Some(TfLiteAllocationType::kTfLiteMmapRo)) {
            return Err(Error::new(format!("ResizeInputTensor: tensor {tensor_index} is a constant")));
        }
        // SAFETY: dims is owned by the tensor.
        let same = unsafe { int_array_slice(t.dims) } == dims;
        if same && !t.data_ptr().is_null() {
            return Ok(());
        }
        let arr = OwnedIntArray::new(dims).ok_or_else(|| Error::new("out of memory"))?;
        if immutable {
            // A delegate that needs static shapes was applied: undo every delegate; the
            // next allocate_tensors applies them again to the new shapes.
            self.undo_all_delegates();
        }
        self.state = State::Uninvokable;
        self.resize_tensor(i, arr)
    }

    /// Sets tensor `i`'s shape to `dims` (taking ownership) and recomputes its size.
    /// Dynamic tensors get their memory immediately; arena tensors at the next plan.
    pub(crate) fn resize_tensor(&mut self, i: usize, dims: OwnedIntArray) -> Result<()> {
        let t = self.tensors.get_mut(i).ok_or_else(|| Error::new(format!("tensor {i} out of range")))?;
        let dtype = t.data_type().ok_or_else(|| Error::new(format!("tensor {i} has an invalid type")))?;
        let bytes = tensor_bytes(dtype, dims.as_slice())?;
        let alloc = t.allocation();
        match alloc {
            Some(TfLiteAllocationType::kTfLiteArenaRw) | Some(TfLiteAllocationType::kTfLiteArenaRwPersistent) => {
                if self.in_invoke && bytes > t.bytes {
                    return Err(Error::new(format!("tensor {i} is not dynamic and cannot grow during Invoke")));
                }
                if !self.in_invoke && !self.preparing_in_invoke {
                    self.state = State::Uninvokable;
                }
            }
            Some(TfLiteAllocationType::kTfLiteDynamic) => {
                if bytes != t.bytes || t.data_ptr().is_null() {
                    dynamic_realloc(t, bytes)?;
                }
            }
            Some(TfLiteAllocationType::kTfLiteCustom) => {
                if bytes > t.bytes {
                    return Err(Error::new(format!(
                        "tensor {i}: custom allocation of {} bytes is too small for {bytes}",
                        t.bytes
                    )));
                }
            }
            _ => {
                return Err(Error::new(format!("tensor {i} cannot be resized (allocation type {:?})", alloc)));
            }
        }
        // SAFETY: the old dims array is owned by the tensor (malloc'ed) and replaced here.
        unsafe {
            if int_array_slice(t.dims) != dims.as_slice() {
                self.tensor_resized_since_op_invoke = true;
            }
            int_array_free(t.dims);
        }
        t.dims = dims.into_raw();
        if !matches!(
            t.allocation(),
            Some(TfLiteAllocationType::kTfLiteCustom) | Some(TfLiteAllocationType::kTfLiteDynamic)
        ) {
            t.bytes = bytes;
        }
        Ok(())
    }

    /// Prepares the nodes (up to the first one with dynamic outputs; Invoke prepares the
    /// rest), then plans and commits memory. Re-applies delegates that a resize undid
    /// first; does nothing when the subgraph is already invokable and no input is dynamic
    /// (as TFLite). Control-flow ops refuse to enter a subgraph that is running (calling
    /// their own subgraph, directly or not): an error, not endless recursion.
    pub fn allocate_tensors(&mut self) -> Result<()> {
        // `busy` marks the subgraph as running for control-flow ops, which refuse to call
        // a busy subgraph (`callee`); the runtime itself may nest calls (re-applying
        // delegates allocates again), so the previous value is restored.
        let was_busy = core::mem::replace(&mut self.busy, true);
        let r = self.allocate_tensors_impl();
        self.busy = was_busy;
        r
    }

    fn allocate_tensors_impl(&mut self) -> Result<()> {
        self.redo_all_delegates()?;
        if self.state != State::Uninvokable && !self.has_dynamic_tensor(&self.inputs) {
            return Ok(());
        }
        self.sync_context();
        self.fuse_activations();
        self.next_to_prepare = 0;
        self.committed = None;
        self.prepare_and_plan()?;
        self.state = State::Invokable;
        self.reset_variable_tensors()?;
        Ok(())
    }

    /// TFLite's `PrepareOpsAndTensors`: prepares from `next_to_prepare` up to and
    /// including the next node with dynamic outputs, then (re-)plans memory. From inside
    /// Invoke the tensors already computed keep their contents.
    fn prepare_and_plan(&mut self) -> Result<()> {
        let start = self.next_to_prepare;
        if start == 0 && self.delegates_require_propagated_shapes() {
            let original = self.delegation.pre_delegation_plan.clone();
            self.prepare_ops_from(&original, 0)?;
        }
        let plan = self.execution_plan.clone();
        self.next_to_prepare = self.prepare_ops_from(&plan, start)?;
        self.plan_and_commit(start)
    }

    /// True if the last prepare found dynamic tensors (TFLite's `HasDynamicTensors`).
    pub fn has_dynamic_tensors(&self) -> bool {
        self.has_dynamic_tensors
    }

    /// True if any of `indices` is a `kTfLiteDynamic` tensor.
    pub(crate) fn has_dynamic_tensor(&self, indices: &[i32]) -> bool {
        indices.iter().any(|&i| {
            usize::try_from(i)
                .ok()
                .and_then(|i| self.tensors.get(i))
                .is_some_and(|t| matches!(t.allocation(), Some(TfLiteAllocationType::kTfLiteDynamic)))
        })
    }

    /// Prepares the nodes of `plan` from the start, stopping after the first node with
    /// dynamic outputs. Returns whether the graph has dynamic tensors.
    pub(crate) fn prepare_ops(&mut self, plan: &[i32]) -> Result<bool> {
        self.prepare_ops_from(plan, 0)?;
        Ok(self.has_dynamic_tensors)
    }

    /// TFLite's `PrepareOpsStartingAt`: prepares `plan[first..]` in order and stops after
    /// a node whose outputs are dynamic (or that answered kTfLiteOutputShapeNotKnown):
    /// the nodes after it cannot know their input shapes before it runs. Returns the
    /// index of the first node left unprepared. An unresolved custom op fails with
    /// kTfLiteUnresolvedOps, as TFLite's OpPrepare.
    pub(crate) fn prepare_ops_from(&mut self, plan: &[i32], first: usize) -> Result<usize> {
        if first == 0 {
            self.has_dynamic_tensors = self.has_dynamic_tensor(&self.outputs);
        }
        for (k, &ni) in plan.iter().enumerate().skip(first) {
            let Some(entry) = usize::try_from(ni).ok().and_then(|i| self.nodes.get_mut(i)) else {
                return Err(Error::new(format!("execution plan names node {ni}, which does not exist")));
            };
            if let Some(name) = &entry.unresolved_custom {
                let name = name.clone();
                self.report(&format!(
                    "Encountered unresolved custom op: {name}.\nSee instructions: https://www.tensorflow.org/lite/guide/ops_custom "
                ));
                return Err(Error::with_status(
                    TfLiteStatus::kTfLiteUnresolvedOps,
                    format!("Node number {ni} ({name}) failed to prepare."),
                ));
            }
            let entry: *mut NodeEntry = &mut **entry;
            let ctx = self.context_ptr();
            // SAFETY: `entry` points into a boxed node that stays put while C runs; the
            // kernel reaches the subgraph only through `ctx` (derived from `self` above).
            let status = unsafe { node_ops::prepare(&(*entry).registration, ctx, &mut (*entry).node) };
            self.sync_context();
            let shape_not_known = match status {
                TfLiteStatus::kTfLiteOk => false,
                TfLiteStatus::kTfLiteOutputShapeNotKnown => true,
                _ => {
                    let name = &self.nodes[ni as usize].op_name;
                    return Err(Error::with_status(status, format!("Node number {ni} ({name}) failed to prepare.")));
                }
            };
            let settles = !shape_not_known && self.settles_after_a_run(ni as usize);
            self.nodes[ni as usize].settled = if settles { Settled::AfterNextRun } else { Settled::Never };
            // SAFETY: the node's outputs array is owned by the node.
            let outs = unsafe { int_array_slice(self.nodes[ni as usize].node.outputs) };
            if shape_not_known || self.has_dynamic_tensor(outs) {
                self.has_dynamic_tensors = true;
                return Ok(k + 1);
            }
        }
        Ok(plan.len())
    }

    /// How many nodes Invoke now skips as [`Settled`].
    pub fn settled_nodes(&self) -> usize {
        self.execution_plan
            .iter()
            .filter(|&&ni| {
                usize::try_from(ni).ok().and_then(|i| self.nodes.get(i)).is_some_and(|n| n.settled == Settled::Yes)
            })
            .count()
    }

    /// Whether node `ni` is one [`Settled`] describes: our own DEQUANTIZE kernel (not an
    /// application's registration for the op) reading a constant (read-only, mapped)
    /// tensor into one in the persistent arena.
    fn settles_after_a_run(&self, ni: usize) -> bool {
        let entry = &self.nodes[ni];
        let ours = crate::kernels::ops::quantize::dequantize_registration().invoke.map(|f| f as usize);
        if ours.is_none() || entry.registration.invoke.map(|f| f as usize) != ours || !entry.node.delegate.is_null() {
            return false;
        }
        // SAFETY: the node's arrays are owned by the node.
        let (ins, outs) = unsafe { (int_array_slice(entry.node.inputs), int_array_slice(entry.node.outputs)) };
        let allocation = |t: &[i32]| match t {
            [i] => usize::try_from(*i).ok().and_then(|i| self.tensors.get(i)).and_then(|t| t.allocation()),
            _ => None,
        };
        allocation(ins) == Some(TfLiteAllocationType::kTfLiteMmapRo)
            && allocation(outs) == Some(TfLiteAllocationType::kTfLiteArenaRwPersistent)
    }

    /// Plans memory for the current shapes and points every arena tensor into it. With
    /// `first_unrun > 0` (a re-plan inside Invoke, before execution-plan node
    /// `first_unrun` runs), nothing happens if the shapes the plan depends on did not
    /// change; otherwise every tensor already computed and still needed keeps its
    /// contents (moved to its new place when the plan moves it).
    fn plan_and_commit(&mut self, first_unrun: usize) -> Result<()> {
        let n = self.tensors.len();
        let mut bytes = Vec::with_capacity(n);
        let mut kinds = Vec::with_capacity(n);
        for t in &self.tensors {
            bytes.push(t.bytes);
            kinds.push(match t.allocation() {
                Some(TfLiteAllocationType::kTfLiteArenaRw) => TensorKind::Arena,
                Some(TfLiteAllocationType::kTfLiteArenaRwPersistent) => TensorKind::Persistent,
                _ => TensorKind::NotPlanned,
            });
        }
        // SAFETY (for the slices below): node arrays are owned by the nodes and not
        // modified while planning.
        let node_arrays: Vec<[&[i32]; 4]> = self
            .execution_plan
            .iter()
            .map(|&ni| {
                let node = &self.nodes[ni as usize].node;
                // SAFETY: see above.
                unsafe {
                    [
                        int_array_slice(node.inputs),
                        int_array_slice(node.outputs),
                        int_array_slice(node.intermediates),
                        int_array_slice(node.temporaries),
                    ]
                }
            })
            .collect();
        let fingerprint =
            PlanFingerprint { bytes, kinds, temporaries: node_arrays.iter().map(|a| a[3].to_vec()).collect() };
        if first_unrun > 0 && self.committed.as_ref().is_some_and(|c| c.fingerprint == fingerprint) {
            return Ok(());
        }
        let nodes: Vec<NodeTensors<'_>> = node_arrays
            .iter()
            .zip(&self.execution_plan)
            .map(|(a, &ni)| NodeTensors {
                inputs: a[0],
                outputs: a[1],
                intermediates: a[2],
                temporaries: a[3],
                inplace: self.nodes[ni as usize].registration.inplace_operator,
            })
            .collect();
        // Tensors a delegate owns a buffer for never share memory in place.
        let no_sharing: Vec<bool> =
            self.tensors.iter().map(|t| t.buffer_handle != kTfLiteNullBufferHandle || !t.delegate.is_null()).collect();
        let req = PlanRequest {
            tensor_bytes: &fingerprint.bytes,
            tensor_kind: &fingerprint.kinds,
            nodes: &nodes,
            graph_inputs: &self.inputs,
            graph_outputs: &self.outputs,
            variables: &self.variables,
            preserve_inputs: true,
            preserve_intermediates: self.preserve_intermediates,
            no_sharing: &no_sharing,
        };
        let plan = memory::plan_memory(&req)?;

        // Inside Invoke: the tensors computed so far (graph inputs, variables, persistent
        // tensors, outputs of the nodes that ran) that are still needed keep their data.
        // They are all live now, so neither plan overlaps any two of them.
        let mut keep = vec![false; n];
        let old = self.committed.take();
        if first_unrun > 0 {
            let mut written = vec![false; n];
            let mut needed = vec![false; n];
            let mark = |v: &mut Vec<bool>, ts: &[i32]| {
                for &t in ts {
                    if let Some(x) = usize::try_from(t).ok().and_then(|t| v.get_mut(t)) {
                        *x = true;
                    }
                }
            };
            for set in [&self.inputs, &self.variables] {
                mark(&mut written, set);
                mark(&mut needed, set);
            }
            mark(&mut needed, &self.outputs);
            for (k, a) in node_arrays.iter().enumerate() {
                if k < first_unrun {
                    mark(&mut written, a[1]);
                } else {
                    mark(&mut needed, a[0]);
                }
            }
            for i in 0..n {
                keep[i] = match fingerprint.kinds[i] {
                    TensorKind::Persistent => true,
                    TensorKind::Arena => written[i] && needed[i],
                    TensorKind::NotPlanned => false,
                };
            }
        }
        drop(node_arrays);
        let moved = |kind: TensorKind, i: usize| -> bool {
            let Some(o) = &old else { return true };
            match kind {
                TensorKind::Arena => o.plan.arena_offsets.get(i) != plan.arena_offsets.get(i),
                TensorKind::Persistent => o.plan.persistent_offsets.get(i) != plan.persistent_offsets.get(i),
                TensorKind::NotPlanned => false,
            }
        };
        let kept_moved = |kind: TensorKind| (0..n).any(|i| keep[i] && fingerprint.kinds[i] == kind && moved(kind, i));
        let arena_fits = self.arena.len() >= plan.arena_bytes && self.arena.len() <= plan.arena_bytes.saturating_mul(2);
        let new_arena = !arena_fits || kept_moved(TensorKind::Arena);
        let new_persistent = self.persistent.len() != plan.persistent_bytes || kept_moved(TensorKind::Persistent);
        let mut old_arena = None;
        let mut old_persistent = None;
        if new_arena {
            let fresh = AlignedBuffer::new(plan.arena_bytes)?;
            old_arena = Some(core::mem::replace(&mut self.arena, fresh));
        }
        if new_persistent {
            let fresh = AlignedBuffer::new(plan.persistent_bytes)?;
            old_persistent = Some(core::mem::replace(&mut self.persistent, fresh));
        }
        let arena_base = self.arena.as_mut_ptr();
        let pers_base = self.persistent.as_mut_ptr();
        for (i, t) in self.tensors.iter_mut().enumerate() {
            let kind = fingerprint.kinds[i];
            let ptr = match kind {
                TensorKind::Arena => plan.arena_offsets[i].map(|o| {
                    // SAFETY: the planner placed [o, o+bytes) inside arena_bytes.
                    unsafe { arena_base.add(o) }
                }),
                TensorKind::Persistent => plan.persistent_offsets[i].map(|o| {
                    // SAFETY: as above, inside persistent_bytes.
                    unsafe { pers_base.add(o) }
                }),
                TensorKind::NotPlanned => continue,
            };
            let new_ptr = ptr.map_or(core::ptr::null_mut(), |p| p as *mut c_void);
            let src = t.data_ptr() as *const u8;
            let buffer_replaced = match kind {
                TensorKind::Arena => old_arena.is_some(),
                _ => old_persistent.is_some(),
            };
            if keep[i] && buffer_replaced && !src.is_null() && !new_ptr.is_null() {
                let old_bytes = old.as_ref().map_or(0, |o| o.fingerprint.bytes.get(i).copied().unwrap_or(0));
                // SAFETY: `src` points at the tensor's old bytes in the replaced buffer
                // (alive until after this loop); the destination holds `bytes` in the
                // new buffer; two different allocations never overlap.
                unsafe { core::ptr::copy_nonoverlapping(src, new_ptr as *mut u8, old_bytes.min(t.bytes)) };
            }
            t.data.data = new_ptr;
        }
        drop(old_arena);
        drop(old_persistent);
        self.stats = MemoryStats {
            arena_bytes: plan.arena_bytes,
            persistent_bytes: plan.persistent_bytes,
            lower_bound_bytes: plan.lower_bound_bytes,
        };
        self.committed = Some(Committed { fingerprint, plan });
        Ok(())
    }

    /// Resets every variable tensor (TFLite's `ResetVariableTensor`): int8 ones to their
    /// zero point, the others to zero bytes.
    pub fn reset_variable_tensors(&mut self) -> Result<()> {
        for &v in &self.variables {
            if let Some(t) = self.tensors.get_mut(v as usize) {
                let p = t.data_ptr();
                if !p.is_null() && t.bytes > 0 {
                    let value =
                        if t.data_type() == Some(TfLiteType::kTfLiteInt8) { t.params.zero_point as u8 } else { 0 };
                    // SAFETY: a variable's data points to `bytes` writable bytes of the
                    // persistent arena (or dynamic memory).
                    unsafe { core::ptr::write_bytes(p as *mut u8, value, t.bytes) };
                }
            }
        }
        Ok(())
    }

    /// Runs the execution plan. Nodes after one whose outputs are dynamic are prepared
    /// (and memory re-planned) when Invoke reaches them, and again whenever such a node
    /// changed the shape of its outputs, as TFLite does.
    pub fn invoke(&mut self) -> Result<()> {
        if self.state == State::Uninvokable {
            return Err(Error::new("Invoke called on model that is not ready."));
        }
        let was_busy = core::mem::replace(&mut self.busy, true);
        // Threads: the configured count or one, whichever the timing found faster.
        let configured = self.context.recommended_num_threads;
        let timed = self.adaptive_threads && configured > 1 && !self.has_delegates();
        let single = timed && self.thread_choice.next_is_single();
        if single {
            self.context.recommended_num_threads = 1;
        }
        let start = Instant::now();
        // Long kernels poll the cancellation flag themselves (see `kernels::cancel`).
        let flag = self.cancellation_enabled.then(|| self.cancelled.clone());
        let r = crate::kernels::cancel::with_flag(flag, || self.invoke_impl());
        let took = start.elapsed();
        self.context.recommended_num_threads = configured;
        if timed && r.is_ok() {
            self.thread_choice.record(single, took);
        }
        self.busy = was_busy;
        self.in_invoke = false;
        self.preparing_in_invoke = false;
        r
    }

    /// True if the last timing round found one thread faster than the configured count
    /// (see `thread_choice.rs`).
    pub fn runs_single_threaded(&self) -> bool {
        self.thread_choice.chose_single()
    }

    fn invoke_impl(&mut self) -> Result<()> {
        let plan = self.execution_plan.clone();
        if let Some(p) = &mut self.profile {
            p.clear();
            self.profile_starts.clear();
        }
        for (k, &ni) in plan.iter().enumerate() {
            if k == self.next_to_prepare {
                self.preparing_in_invoke = true;
                let r = self.prepare_and_plan();
                self.preparing_in_invoke = false;
                r?;
                if self.next_to_prepare <= k {
                    return Err(Error::new(format!("preparing node {ni} during Invoke made no progress")));
                }
            }
            if self.cancellation_enabled && self.cancelled.swap(false, Ordering::SeqCst) {
                return Err(crate::kernels::cancel::cancelled());
            }
            if self.nodes[ni as usize].settled == Settled::Yes {
                if let Some(p) = &mut self.profile {
                    p.push(std::time::Duration::ZERO);
                    self.profile_starts.push(Instant::now());
                }
                continue;
            }
            self.refresh_stale_inputs(ni as usize)?;
            self.check_inputs_have_data(ni as usize)?;
            // The clock is read only for a profile (a call per node otherwise).
            let start = self.profile.is_some().then(Instant::now);
            let ctx = self.context_ptr();
            let entry: *mut NodeEntry = &mut *self.nodes[ni as usize];
            self.in_invoke = true;
            self.tensor_resized_since_op_invoke = false;
            // SAFETY: as in `prepare_ops_from`.
            let status = unsafe { node_ops::invoke(&(*entry).registration, ctx, &mut (*entry).node) };
            self.in_invoke = false;
            self.sync_context();
            if let (Some(p), Some(start)) = (&mut self.profile, start) {
                p.push(start.elapsed());
                self.profile_starts.push(start);
            }
            if status == TfLiteStatus::kTfLiteCancelled {
                self.cancelled.store(false, Ordering::SeqCst);
                return Err(crate::kernels::cancel::cancelled());
            }
            if status != TfLiteStatus::kTfLiteOk {
                let name = &self.nodes[ni as usize].op_name;
                return Err(Error::with_status(status, format!("Node number {ni} ({name}) failed to invoke.")));
            }
            let node = &mut self.nodes[ni as usize];
            if node.settled == Settled::AfterNextRun {
                node.settled = Settled::Yes;
            }
            if self.state == State::Uninvokable {
                return Err(Error::new(format!("Node number {ni} resized a tensor during Invoke")));
            }
            // A dynamic output changed shape: the nodes after this one are prepared
            // again before they run (TFLite's Invoke).
            if self.tensor_resized_since_op_invoke && k + 1 < self.next_to_prepare {
                // SAFETY: the node's outputs array is owned by the node.
                let outs = unsafe { int_array_slice(self.nodes[ni as usize].node.outputs) };
                if self.has_dynamic_tensor(outs) {
                    self.next_to_prepare = k + 1;
                }
            }
        }
        Ok(())
    }

    fn check_inputs_have_data(&self, ni: usize) -> Result<()> {
        // SAFETY: the node's inputs array is owned by the node.
        let ins = unsafe { int_array_slice(self.nodes[ni].node.inputs) };
        for &i in ins {
            if i < 0 {
                continue;
            }
            let Some(t) = self.tensors.get(i as usize) else {
                return Err(Error::new(format!("node {ni} input {i} out of range")));
            };
            if t.bytes > 0 && t.data_ptr().is_null() && t.buffer_handle == kTfLiteNullBufferHandle {
                return Err(Error::new(format!("Input tensor {i} lacks data")));
            }
        }
        Ok(())
    }

    /// Gives tensor `index` memory the application owns (`kTfLiteCustom`).
    pub fn set_custom_allocation(
        &mut self,
        index: i32,
        data: *mut c_void,
        bytes: usize,
        skip_align_check: bool,
    ) -> Result<()> {
        let i = usize::try_from(index)
            .ok()
            .filter(|&i| i < self.tensors.len())
            .ok_or_else(|| Error::new(format!("SetCustomAllocationForTensor: tensor index {index} out of range")))?;
        if data.is_null() {
            return Err(Error::new("SetCustomAllocationForTensor: allocation data is NULL"));
        }
        if !skip_align_check && !(data as usize).is_multiple_of(memory::DEFAULT_TENSOR_ALIGNMENT) {
            return Err(Error::new("SetCustomAllocationForTensor: allocation is not 64-byte aligned"));
        }
        let t = &mut self.tensors[i];
        match t.allocation() {
            Some(TfLiteAllocationType::kTfLiteArenaRw)
            | Some(TfLiteAllocationType::kTfLiteArenaRwPersistent)
            | Some(TfLiteAllocationType::kTfLiteCustom) => {}
            _ => return Err(Error::new("SetCustomAllocationForTensor: tensor is not arena-allocated")),
        }
        if bytes < t.bytes {
            return Err(Error::new(format!(
                "SetCustomAllocationForTensor: {bytes} bytes is less than the tensor's {}",
                t.bytes
            )));
        }
        t.allocation_type = TfLiteAllocationType::kTfLiteCustom;
        t.data.data = data;
        t.bytes = bytes.min(t.bytes.max(bytes));
        self.state = State::Uninvokable;
        Ok(())
    }
}

/// Reallocates a dynamic tensor's malloc'ed buffer (as `TfLiteTensorRealloc`).
pub(crate) fn dynamic_realloc(t: &mut TfLiteTensor, bytes: usize) -> Result<()> {
    let old = t.data_ptr();
    // SAFETY: dynamic tensor data is always NULL or a malloc allocation owned by the
    // tensor; realloc(NULL, n) is malloc. At least 1 byte so the pointer is non-NULL.
    let p = unsafe { libc::realloc(old, bytes.max(1)) };
    if p.is_null() {
        return Err(Error::new(format!("out of memory allocating {bytes} bytes")));
    }
    t.data.data = p;
    t.bytes = bytes;
    Ok(())
}

impl Drop for Subgraph {
    fn drop(&mut self) {
        self.sync_context();
        let ctx: *mut TfLiteContext = &mut self.context;
        for entry in &mut self.nodes {
            // SAFETY: `ctx` is this subgraph's live context.
            unsafe { entry.release(ctx) };
        }
        // Buffer handles go back to their delegates (which must still be alive, as TFLite
        // requires), then the tensors' own memory.
        for i in 0..self.tensors.len() {
            if self.tensors[i].buffer_handle != kTfLiteNullBufferHandle {
                let t: *mut TfLiteTensor = &mut self.tensors[i];
                // SAFETY: `t` is a live tensor of this subgraph; its delegate is the one the
                // handle belongs to.
                unsafe {
                    let _ = super::delegation::free_buffer_handle(ctx, (*t).delegate, &mut (*t).buffer_handle);
                }
            }
        }
        for t in &mut self.tensors {
            // SAFETY: every tensor owns its dims, dims_signature, quantization params and,
            // when dynamic, its data (all malloc'ed by us or by C through our helpers).
            unsafe { free_tensor_contents(t) };
        }
    }
}

/// Frees what a tensor owns (dims, signature, quantization, sparsity, dynamic data).
///
/// # Safety
/// `t`'s owned pointers must be NULL or malloc'ed and not used afterwards.
pub unsafe fn free_tensor_contents(t: &mut TfLiteTensor) {
    // SAFETY: per the function contract.
    unsafe {
        int_array_free(t.dims);
        t.dims = core::ptr::null_mut();
        int_array_free(t.dims_signature as *mut TfLiteIntArray);
        t.dims_signature = core::ptr::null();
        free_quantization(&mut t.quantization);
        crate::c_api::common::sparsity_free(t.sparsity);
        t.sparsity = core::ptr::null_mut();
        if matches!(t.allocation(), Some(TfLiteAllocationType::kTfLiteDynamic)) {
            libc::free(t.data_ptr());
            t.data.data = core::ptr::null_mut();
        }
    }
}

/// Frees affine quantization params (TfLiteQuantizationFree).
///
/// # Safety
/// `q.params` must be NULL or a malloc'ed `TfLiteAffineQuantization` with malloc'ed arrays.
pub unsafe fn free_quantization(q: &mut TfLiteQuantization) {
    // SAFETY: per the function contract.
    unsafe {
        let ty = core::ptr::addr_of!(q.r#type).cast::<i32>().read();
        if ty == TfLiteQuantizationType::kTfLiteAffineQuantization as i32 && !q.params.is_null() {
            let aq = q.params as *mut TfLiteAffineQuantization;
            libc::free((*aq).scale.cast());
            libc::free((*aq).zero_point.cast());
        }
        libc::free(q.params);
        q.params = core::ptr::null_mut();
        q.r#type = TfLiteQuantizationType::kTfLiteNoQuantization;
    }
}
