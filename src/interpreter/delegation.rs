//! Applying delegates to a subgraph, as TFLite's `Subgraph` does
//! (`ModifyGraphWithDelegate`, `ReplaceNodeSubsetsWithDelegateKernels`,
//! `PreviewDelegatePartitioning`, undo / redo / remove of all delegates, buffer handles).
//!
//! - While a delegate's `Prepare` runs, the subgraph's context carries the real
//!   delegate-only functions (`context::install_delegate_functions`); otherwise they are
//!   the "forbidden" stubs. The switch nests (`AcquireSubgraphContext`).
//! - `replace_node_subsets` partitions the execution plan (`crate::delegate::partition`)
//!   and replaces every delegated subset by one new node whose `builtin_data` (and
//!   `init` buffer) is a malloc'ed `TfLiteDelegateParams` (`TfLiteOpaqueDelegateParams`
//!   for opaque delegates) followed by its three int arrays. Replaced nodes stay in the
//!   node table but leave the plan; delegate nodes are appended after the model's nodes.
//! - An opaque delegate's kernel `TfLiteOperator` is owned by the subgraph from the call
//!   on (one per builtin code / custom name / version; a second one with the same key is
//!   freed and the first used).
//! - Failure semantics: a `Prepare` that fails removes every delegate of the subgraph and
//!   yields kTfLiteDelegateError; a delegate that does not allow dynamic tensors leaves
//!   the graph "invokable and immutable": a resize undoes all delegates and the next
//!   `allocate_tensors` applies them again.

use super::node_ops;
use super::subgraph::{NodeEntry, State, Subgraph};
use crate::abi::arrays::*;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::*;
use crate::delegate::partition::{self, Graph, NodeSubset, PlanNode, SubsetKind};
use crate::error::{Error, Result};
use core::ffi::{c_char, c_int, c_void};

const DELEGATE_CODE: i32 = TfLiteBuiltinOperator::kTfLiteBuiltinDelegate as i32;
const ALLOW_DYNAMIC_TENSORS: i64 = TfLiteDelegateFlags::kTfLiteDelegateFlagsAllowDynamicTensors as i64;
const REQUIRE_PROPAGATED_SHAPES: i64 = TfLiteDelegateFlags::kTfLiteDelegateFlagsRequirePropagatedShapes as i64;
const HINT_FULLY_DELEGATED: i64 = TfLiteDelegateFlags::kTfLiteDelegateFlagsHintFullyDelegatedToSingleDelegate as i64;

/// What a subgraph keeps about delegation.
#[derive(Default)]
pub struct Delegation {
    /// Nesting depth of the delegate context (0: the forbidden stubs are installed).
    pub(crate) depth: u32,
    /// Execution-plan arrays handed out by `GetExecutionPlan` (malloc'ed). The newest
    /// stays valid until the next call or the subgraph's end; older ones until the
    /// delegate context is left.
    plan_arrays: Vec<*mut TfLiteIntArray>,
    /// What the last `PreviewDelegatePartitioning` returned (arrays malloc'ed); freed at
    /// the next call and when the delegate context is left.
    preview: Vec<TfLiteDelegateParams>,
    /// The plan before the first delegate was applied (empty: none applied).
    pub(crate) pre_delegation_plan: Vec<i32>,
    /// Delegates applied, in order (owned by the application).
    pub(crate) applied: Vec<*mut TfLiteDelegate>,
    /// True after `undo_all_delegates` until they are applied again.
    undone: bool,
    /// Kernel operators of opaque delegates, owned here.
    #[allow(clippy::vec_box, reason = "nodes point at the operators")]
    operators: Vec<Box<TfLiteOperator>>,
    /// Set by `TfLiteOpaqueContextMarkSubgraphAsDelegationSkippable`: the interpreter
    /// does not apply delegates to this subgraph.
    pub(crate) skippable: bool,
}

impl Delegation {
    fn free_preview(&mut self) {
        for p in self.preview.drain(..) {
            // SAFETY: the preview arrays were malloc'ed by `preview_partitioning` and are
            // owned here; the application was told they live until the next call.
            unsafe {
                int_array_free(p.nodes_to_replace);
                int_array_free(p.input_tensors);
                int_array_free(p.output_tensors);
            }
        }
    }

    /// Frees every handed-out plan array but the newest.
    fn free_old_plan_arrays(&mut self) {
        let keep = self.plan_arrays.pop();
        for a in self.plan_arrays.drain(..) {
            // SAFETY: malloc'ed by `execution_plan_array`, owned here.
            unsafe { int_array_free(a) };
        }
        self.plan_arrays.extend(keep);
    }
}

impl Drop for Delegation {
    fn drop(&mut self) {
        self.free_preview();
        for a in self.plan_arrays.drain(..) {
            // SAFETY: malloc'ed by `execution_plan_array`, owned here.
            unsafe { int_array_free(a) };
        }
    }
}

/// True for a delegate made with `TfLiteOpaqueDelegateCreate` (TFLite's
/// `TfLiteDelegateIsOpaque`: a builder and none of the classic callbacks).
pub(crate) fn is_opaque(d: *const TfLiteDelegate) -> bool {
    // SAFETY: NULL or a live delegate (the application keeps applied delegates alive).
    unsafe { d.as_ref() }.is_some_and(|d| {
        d.Prepare.is_none()
            && d.CopyFromBufferHandle.is_none()
            && d.FreeBufferHandle.is_none()
            && !d.opaque_delegate_builder.is_null()
    })
}

/// The delegate's flags (the builder's for an opaque delegate).
pub(crate) fn delegate_flags(d: *const TfLiteDelegate) -> i64 {
    // SAFETY: NULL or a live delegate whose builder, if any, is live.
    unsafe {
        match d.as_ref() {
            Some(del) if is_opaque(d) => (*del.opaque_delegate_builder).flags,
            Some(del) => del.flags,
            None => 0,
        }
    }
}

/// Calls the delegate's `Prepare` (the builder's for an opaque delegate).
///
/// # Safety
/// `ctx` is the live context of the subgraph being delegated; `d` a live delegate.
unsafe fn call_prepare(ctx: *mut TfLiteContext, d: *mut TfLiteDelegate) -> TfLiteStatus {
    // SAFETY: per the function contract; the callbacks are the application's.
    unsafe {
        let del = &*d;
        if is_opaque(d) {
            let b = &*del.opaque_delegate_builder;
            if let Some(f) = b.Prepare {
                return f(ctx.cast(), d, b.data);
            }
        }
        match del.Prepare {
            Some(f) => f(ctx, d),
            None => TfLiteStatus::kTfLiteError,
        }
    }
}

/// Copies the delegate's buffer into `tensor` (`CopyFromBufferHandle`).
///
/// # Safety
/// `ctx` live context, `d` NULL or a live delegate, `tensor` a live tensor of `ctx`.
pub(crate) unsafe fn copy_from_buffer_handle(
    ctx: *mut TfLiteContext,
    d: *mut TfLiteDelegate,
    tensor: *mut TfLiteTensor,
) -> TfLiteStatus {
    // SAFETY: per the function contract.
    unsafe {
        let Some(del) = d.as_ref() else { return TfLiteStatus::kTfLiteError };
        if is_opaque(d) {
            let b = &*del.opaque_delegate_builder;
            if let Some(f) = b.CopyFromBufferHandle {
                return f(ctx.cast(), d, b.data, (*tensor).buffer_handle, tensor.cast());
            }
        }
        match del.CopyFromBufferHandle {
            Some(f) => f(ctx, d, (*tensor).buffer_handle, tensor),
            None => TfLiteStatus::kTfLiteError,
        }
    }
}

/// Gives a buffer handle back to its delegate (`FreeBufferHandle`); kTfLiteError when
/// the delegate has no such callback (the handle is left as it is).
///
/// # Safety
/// `ctx` live context, `d` NULL or a live delegate, `handle` writable.
pub(crate) unsafe fn free_buffer_handle(
    ctx: *mut TfLiteContext,
    d: *mut TfLiteDelegate,
    handle: *mut TfLiteBufferHandle,
) -> TfLiteStatus {
    // SAFETY: per the function contract.
    unsafe {
        let Some(del) = d.as_ref() else { return TfLiteStatus::kTfLiteError };
        if is_opaque(d) {
            let b = &*del.opaque_delegate_builder;
            if let Some(f) = b.FreeBufferHandle {
                f(ctx.cast(), d, b.data, handle);
                return TfLiteStatus::kTfLiteOk;
            }
        }
        match del.FreeBufferHandle {
            Some(f) => {
                f(ctx, d, handle);
                TfLiteStatus::kTfLiteOk
            }
            None => TfLiteStatus::kTfLiteError,
        }
    }
}

/// Associates `buffer_handle` of `delegate` with `tensor` (TFLite's
/// `SetBufferHandleImpl`): fails if the tensor already belongs to another delegate;
/// a handle the tensor had is given back to the delegate first.
///
/// # Safety
/// `ctx` is the live context the tensor belongs to; `tensor` NULL or live; `delegate`
/// NULL or live.
pub unsafe fn set_buffer_handle(
    ctx: *mut TfLiteContext,
    tensor: *mut TfLiteTensor,
    buffer_handle: TfLiteBufferHandle,
    delegate: *mut TfLiteDelegate,
) -> Result<()> {
    // SAFETY: per the function contract.
    let Some(t) = (unsafe { tensor.as_mut() }) else { return Err(Error::new("SetBufferHandle: tensor is NULL")) };
    if !(t.delegate.is_null() || t.delegate == delegate) {
        return Err(Error::new("SetBufferHandle: the tensor already belongs to another delegate"));
    }
    t.delegate = delegate;
    if t.buffer_handle != kTfLiteNullBufferHandle {
        // SAFETY: per the function contract; the old handle belongs to `delegate`.
        let status = unsafe { free_buffer_handle(ctx, t.delegate, &mut t.buffer_handle) };
        if status != TfLiteStatus::kTfLiteOk {
            return Err(Error::with_status(
                status,
                "SetBufferHandle: the delegate cannot free the tensor's previous buffer handle",
            ));
        }
    }
    t.buffer_handle = buffer_handle;
    Ok(())
}

fn delegate_error(msg: impl Into<String>) -> Error {
    Error::with_status(TfLiteStatus::kTfLiteDelegateError, msg)
}

/// Allocates one block holding the params struct followed by its three int arrays
/// (freed with one `free`, as TFLite's `CreateDelegateParams`).
fn make_params(delegate: *mut TfLiteDelegate, subset: &NodeSubset, opaque: bool) -> Result<*mut c_void> {
    let lists = [&subset.nodes, &subset.input_tensors, &subset.output_tensors];
    let header = if opaque { size_of::<TfLiteOpaqueDelegateParams>() } else { size_of::<TfLiteDelegateParams>() };
    let mut sizes = [0usize; 3];
    for (s, l) in sizes.iter_mut().zip(lists) {
        *s = c_int::try_from(l.len())
            .ok()
            .and_then(int_array_bytes)
            .ok_or_else(|| Error::new("delegate partition too large"))?;
    }
    let total = header + sizes.iter().sum::<usize>();
    // SAFETY: malloc of a computed, non-zero size; checked for NULL below.
    let block = unsafe { libc::malloc(total) } as *mut u8;
    if block.is_null() {
        return Err(Error::new("out of memory creating delegate params"));
    }
    let mut arrays = [core::ptr::null_mut::<TfLiteIntArray>(); 3];
    let mut offset = header;
    for k in 0..3 {
        // SAFETY: `offset + sizes[k] <= total`; the header sizes (32 / 40) keep the arrays
        // 4-byte aligned inside the malloc'ed (16-aligned) block.
        unsafe {
            let a = block.add(offset) as *mut TfLiteIntArray;
            (*a).size = lists[k].len() as c_int;
            core::ptr::copy_nonoverlapping(lists[k].as_ptr(), (*a).data.as_mut_ptr(), lists[k].len());
            arrays[k] = a;
        }
        offset += sizes[k];
    }
    // SAFETY: the block starts with `header` writable bytes, suitably aligned; for an
    // opaque delegate the builder is live.
    unsafe {
        if opaque {
            (block as *mut TfLiteOpaqueDelegateParams).write(TfLiteOpaqueDelegateParams {
                delegate,
                delegate_data: (*(*delegate).opaque_delegate_builder).data,
                nodes_to_replace: arrays[0],
                input_tensors: arrays[1],
                output_tensors: arrays[2],
            });
        } else {
            (block as *mut TfLiteDelegateParams).write(TfLiteDelegateParams {
                delegate,
                nodes_to_replace: arrays[0],
                input_tensors: arrays[1],
                output_tensors: arrays[2],
            });
        }
    }
    Ok(block.cast())
}

impl Subgraph {
    /// True if a delegate is applied.
    pub fn has_delegates(&self) -> bool {
        !self.delegation.applied.is_empty()
    }

    /// True if every node of the execution plan is a delegate node.
    pub fn is_fully_delegated(&self) -> bool {
        self.execution_plan.iter().all(|&n| self.nodes.get(n as usize).is_some_and(|e| !e.node.delegate.is_null()))
    }

    /// True if `TfLiteOpaqueContextMarkSubgraphAsDelegationSkippable` marked this
    /// subgraph.
    pub fn is_delegation_skippable(&self) -> bool {
        self.delegation.skippable
    }

    /// Installs the delegate-only context functions (nests).
    pub(crate) fn switch_to_delegate_context(&mut self) {
        if self.delegation.depth == 0 {
            super::context::install_delegate_functions(&mut self.context);
        }
        self.delegation.depth += 1;
    }

    /// Leaves the delegate context; at the outermost level the forbidden stubs come back
    /// and the partitioning preview is freed. False if the context was not switched.
    pub(crate) fn switch_to_kernel_context(&mut self) -> bool {
        match self.delegation.depth {
            0 => false,
            1 => {
                super::context::install_forbidden_functions(&mut self.context);
                self.delegation.free_preview();
                self.delegation.free_old_plan_arrays();
                self.delegation.depth = 0;
                true
            }
            _ => {
                self.delegation.depth -= 1;
                true
            }
        }
    }

    /// True if an applied delegate asked for shapes propagated through the original
    /// (pre-delegation) plan.
    pub(crate) fn delegates_require_propagated_shapes(&self) -> bool {
        !self.delegation.pre_delegation_plan.is_empty()
            && self.delegation.applied.iter().any(|&d| delegate_flags(d) & REQUIRE_PROPAGATED_SHAPES != 0)
    }

    /// Re-plans memory from scratch (TFLite's `EnsureMemoryAllocations`).
    fn ensure_memory_allocations(&mut self) -> Result<()> {
        self.state = State::Uninvokable;
        self.allocate_tensors()?;
        if self.state == State::Uninvokable {
            return Err(Error::new("allocating tensors after delegation left the graph uninvokable"));
        }
        Ok(())
    }

    /// Removes every delegate after a failure and returns the error to give back
    /// (kTfLiteDelegateError, as TFLite).
    fn restore_after_failure(&mut self) -> Error {
        if let Err(e) = self.remove_all_delegates() {
            return e;
        }
        delegate_error("Restored original execution plan after delegate application failure.")
    }

    /// Applies `delegate` (TFLite's `Subgraph::ModifyGraphWithDelegate`): its `Prepare`
    /// runs with the delegate context functions available and may replace nodes.
    /// Errors: kTfLiteDelegateError when `Prepare` (or re-allocating afterwards) fails —
    /// every delegate of the subgraph is then removed and the graph runs on the CPU;
    /// kTfLiteApplicationError when a delegate that needs static shapes meets dynamic
    /// tensors; other statuses when preparing the graph for the delegate fails.
    ///
    /// # Safety
    /// `delegate` must be NULL or a live delegate (with a live builder if it has one)
    /// that outlives the subgraph, as TFLite requires.
    pub unsafe fn modify_graph_with_delegate(&mut self, delegate: *mut TfLiteDelegate) -> Result<()> {
        if delegate.is_null() {
            return Err(delegate_error("Null delegate."));
        }
        if !self.fusions.is_empty() {
            // Delegates see the model's graph: the CPU-only fusions are undone, and the
            // graph must be prepared again.
            self.unfuse_activations();
            self.state = State::Uninvokable;
        }
        self.redo_all_delegates()?;
        let flags = delegate_flags(delegate);
        let dynamic_ok = flags & ALLOW_DYNAMIC_TENSORS != 0;
        let single = flags & HINT_FULLY_DELEGATED != 0;
        let pre_state = self.state;

        if self.state == State::InvokableAndImmutable {
            // A static-shape delegate was applied already: shapes are propagated.
            self.state = State::Uninvokable;
        } else if !dynamic_ok && !single {
            let plan = self.execution_plan.clone();
            if self.prepare_ops(&plan)? {
                self.ensure_memory_allocations()?;
                return Err(Error::with_status(
                    TfLiteStatus::kTfLiteApplicationError,
                    "Attempting to use a delegate that only supports static-sized tensors with a graph that has dynamic-sized tensors.",
                ));
            }
        }
        if self.delegation.applied.is_empty() {
            self.delegation.pre_delegation_plan = self.execution_plan.clone();
        }

        self.switch_to_delegate_context();
        let ctx = self.context_ptr();
        // SAFETY: the application's live delegate with this subgraph's live context; the
        // delegate reaches the subgraph only through `ctx`.
        let status = unsafe { call_prepare(ctx, delegate) };
        self.sync_context();
        self.switch_to_kernel_context();
        if status != TfLiteStatus::kTfLiteOk {
            return Err(self.restore_after_failure());
        }

        if single && !self.is_fully_delegated() {
            return Err(Error::with_status(
                TfLiteStatus::kTfLiteApplicationError,
                "Hint fully delegated to single delegate is set, but the graph is not fully delegated.",
            ));
        }

        if !dynamic_ok {
            if !single && let Err(e) = self.ensure_memory_allocations() {
                self.report(&e.message);
                return Err(self.restore_after_failure());
            }
            self.state = State::InvokableAndImmutable;
        } else if pre_state == State::InvokableAndImmutable {
            let plan = self.execution_plan.clone();
            match self.prepare_ops(&plan) {
                Err(e) => {
                    self.report(&e.message);
                    return Err(self.restore_after_failure());
                }
                Ok(true) => {
                    self.remove_all_delegates()?;
                    return Err(Error::with_status(
                        TfLiteStatus::kTfLiteApplicationError,
                        "Cannot allow dynamic tensors due to previous delegation, resetting to original execution plan.",
                    ));
                }
                Ok(false) => {}
            }
            if let Err(e) = self.ensure_memory_allocations() {
                self.report(&e.message);
                return Err(self.restore_after_failure());
            }
            self.state = State::InvokableAndImmutable;
        } else if pre_state == State::Invokable
            && let Err(e) = self.ensure_memory_allocations()
        {
            self.report(&e.message);
            return Err(self.restore_after_failure());
        }
        self.delegation.applied.push(delegate);
        Ok(())
    }

    /// Applies again the delegates `undo_all_delegates` took away.
    pub(crate) fn redo_all_delegates(&mut self) -> Result<()> {
        if !self.delegation.undone {
            return Ok(());
        }
        self.delegation.undone = false;
        let delegates = core::mem::take(&mut self.delegation.applied);
        for d in delegates {
            // SAFETY: these delegates were applied before under the same contract and
            // outlive the subgraph.
            unsafe { self.modify_graph_with_delegate(d)? };
        }
        Ok(())
    }

    /// Restores the pre-delegation plan: delegate nodes are freed and dropped from the
    /// node table; the delegates stay listed as applied (`redo_all_delegates`).
    pub(crate) fn undo_all_delegates(&mut self) {
        let Some(&last) = self.delegation.pre_delegation_plan.iter().max() else { return };
        let keep = usize::try_from(last).map_or(0, |l| l + 1).min(self.nodes.len());
        let ctx = self.context_ptr();
        for entry in &mut self.nodes[keep..] {
            // SAFETY: `ctx` is this subgraph's live context; the node leaves the table.
            unsafe { entry.release(ctx) };
        }
        self.nodes.truncate(keep);
        self.execution_plan = core::mem::take(&mut self.delegation.pre_delegation_plan);
        let me: *mut Subgraph = self;
        for &s in &self.siblings {
            if s == me {
                continue;
            }
            // SAFETY: siblings are the other live subgraphs of the same interpreter.
            unsafe { (*s).delegation.skippable = false };
        }
        self.delegation.skippable = false;
        self.state = State::Uninvokable;
        self.delegation.undone = true;
    }

    /// Removes every delegate and re-allocates for the CPU.
    pub fn remove_all_delegates(&mut self) -> Result<()> {
        let touched = self.delegation.undone
            || !self.delegation.applied.is_empty()
            || !self.delegation.pre_delegation_plan.is_empty();
        self.undo_all_delegates();
        self.delegation.applied.clear();
        self.delegation.undone = false;
        if touched { self.ensure_memory_allocations() } else { Ok(()) }
    }

    /// A malloc'ed copy of the execution plan for `GetExecutionPlan`, owned by the
    /// subgraph (valid at least until the delegate context is left).
    pub(crate) fn execution_plan_array(&mut self) -> *mut TfLiteIntArray {
        let a = int_array_from_slice(&self.execution_plan);
        if !a.is_null() {
            self.delegation.plan_arrays.push(a);
        }
        a
    }

    /// Node `index` and its registration (`GetNodeAndRegistration`).
    pub(crate) fn node_and_registration(&mut self, index: c_int) -> Option<(*mut TfLiteNode, *mut TfLiteRegistration)> {
        let e = self.nodes.get_mut(usize::try_from(index).ok()?)?;
        Some((&mut e.node, &mut e.registration))
    }

    /// True if the node may have side effects (TFLite's `OpMightHaveSideEffect`).
    pub(crate) fn op_might_have_side_effect(&self, code: i32, inputs: &[i32], outputs: &[i32]) -> bool {
        use TfLiteBuiltinOperator as B;
        let resource = inputs.iter().chain(outputs).any(|&t| {
            usize::try_from(t)
                .ok()
                .and_then(|t| self.tensors.get(t))
                .is_some_and(|t| t.r#type == TfLiteType::kTfLiteResource)
        });
        resource
            || [B::kTfLiteBuiltinIf as i32, B::kTfLiteBuiltinWhile as i32, B::kTfLiteBuiltinCallOnce as i32]
                .contains(&code)
    }

    fn partition_plan(&self, nodes_to_replace: &[i32]) -> Result<Vec<NodeSubset>> {
        let plan = self
            .execution_plan
            .iter()
            .map(|&ni| {
                let e = &self.nodes[ni as usize];
                PlanNode {
                    index: ni,
                    // SAFETY: node arrays are owned by the nodes and not changed while
                    // partitioning.
                    inputs: unsafe { int_array_slice(e.node.inputs) },
                    // SAFETY: as above.
                    outputs: unsafe { int_array_slice(e.node.outputs) },
                    might_have_side_effect: e.node.might_have_side_effect,
                }
            })
            .collect();
        let graph =
            Graph { num_tensors: self.tensors.len(), num_nodes: self.nodes.len(), plan, outputs: &self.outputs };
        // Keeping every tensor needs one node per subset (TFLite disables node fusion).
        let options = partition::Options { greedy: true, disable_fusion: self.preserve_intermediates };
        partition::partition(&graph, nodes_to_replace, options)
            .map_err(|e| Error::new(format!("Partitioning the graph for the delegate failed: {e}")))
    }

    /// Takes ownership of an opaque delegate's kernel operator; returns the operator
    /// the nodes will use (an earlier one with the same code, name and version wins and
    /// `op` is freed, as in TFLite).
    fn adopt_operator(&mut self, op: *mut TfLiteOperator) -> *mut TfLiteOperator {
        // SAFETY: `op` is a live operator from `TfLiteOperatorCreate` (a `Box`) whose
        // ownership the caller hands over.
        let o = unsafe { &*op };
        if let Some(existing) = self
            .delegation
            .operators
            .iter_mut()
            .find(|e| e.builtin_code == o.builtin_code && e.custom_name == o.custom_name && e.version == o.version)
        {
            let existing: *mut TfLiteOperator = &mut **existing;
            if existing != op {
                // SAFETY: ownership was handed over and nothing else refers to `op`.
                drop(unsafe { Box::from_raw(op) });
            }
            return existing;
        }
        // SAFETY: as above; from now on the subgraph owns it.
        self.delegation.operators.push(unsafe { Box::from_raw(op) });
        op
    }

    /// `ReplaceNodeSubsetsWithDelegateKernels`: each delegated subset of the plan becomes
    /// one node running `registration` (init gets the subset's params).
    pub(crate) fn replace_node_subsets(
        &mut self,
        mut registration: TfLiteRegistration,
        nodes_to_replace: *const TfLiteIntArray,
        delegate: *mut TfLiteDelegate,
    ) -> Result<()> {
        registration.builtin_code = DELEGATE_CODE;
        // SAFETY: NULL or the live operator the delegate passed.
        if let Some(op) = unsafe { registration.registration_external.as_mut() } {
            op.builtin_code = DELEGATE_CODE;
        }
        let opaque = is_opaque(delegate);
        if opaque {
            if registration.registration_external.is_null() {
                return Err(delegate_error(
                    "For a delegate with the 'opaque_delegate_builder' field set, the delegate kernel's TfLiteRegistration object must have the 'registration_external' field set.",
                ));
            }
            registration.registration_external = self.adopt_operator(registration.registration_external);
        }
        if nodes_to_replace.is_null() {
            return Err(Error::new("ReplaceNodeSubsetsWithDelegateKernels: nodes_to_replace is NULL"));
        }
        // SAFETY: a live int array from the delegate, read during this call.
        let nodes = unsafe { int_array_slice(nodes_to_replace) }.to_vec();
        if nodes.is_empty() {
            return Ok(());
        }
        let subsets = self.partition_plan(&nodes)?;
        self.execution_plan.clear();
        for subset in &subsets {
            match subset.kind {
                SubsetKind::NotDelegated => self.execution_plan.extend_from_slice(&subset.nodes),
                SubsetKind::Delegated => {
                    let params = make_params(delegate, subset, opaque)?;
                    let index = self.add_delegate_node(subset, &registration, params)?;
                    for &t in &subset.output_tensors {
                        let tensor = &mut self.tensors[t as usize];
                        if !(tensor.delegate.is_null() || tensor.delegate == delegate) {
                            return Err(Error::new(format!(
                                "tensor {t} is already owned by another delegate (tensor->delegate == nullptr || tensor->delegate == delegate was not true)"
                            )));
                        }
                        tensor.delegate = delegate;
                    }
                    self.nodes[index].node.delegate = delegate;
                }
            }
        }
        Ok(())
    }

    /// Appends a delegate node for `subset` (TFLite's `AddNodeWithParameters` with the
    /// params as builtin data) and calls its `init`. Takes ownership of `params`.
    fn add_delegate_node(
        &mut self,
        subset: &NodeSubset,
        registration: &TfLiteRegistration,
        params: *mut c_void,
    ) -> Result<usize> {
        if self.state == State::InvokableAndImmutable {
            // SAFETY: `params` came from malloc and is ours.
            unsafe { libc::free(params) };
            return Err(Error::new("AddNodeWithParameters is disallowed when graph is immutable."));
        }
        self.state = State::Uninvokable;
        // SAFETY: NULL or a NUL-terminated name the delegate keeps alive (as TFLite, the
        // registration is copied with its name pointer).
        let name = unsafe { registration.custom_name.as_ref() }
            // SAFETY: non-NULL, NUL-terminated (see above).
            .map(|_| unsafe { std::ffi::CStr::from_ptr(registration.custom_name) }.to_string_lossy().into_owned())
            .unwrap_or_else(|| "DELEGATE".to_string());
        let side_effect = self.op_might_have_side_effect(DELEGATE_CODE, &subset.input_tensors, &subset.output_tensors);
        let mut entry = Box::new(NodeEntry {
            node: TfLiteNode {
                inputs: int_array_from_slice(&subset.input_tensors),
                outputs: int_array_from_slice(&subset.output_tensors),
                intermediates: int_array_create(0),
                temporaries: int_array_create(0),
                user_data: core::ptr::null_mut(),
                builtin_data: params,
                custom_initial_data: core::ptr::null(),
                custom_initial_data_size: 0,
                delegate: core::ptr::null_mut(),
                might_have_side_effect: side_effect,
            },
            registration: *registration,
            op_name: name,
            unresolved_custom: None,
            custom_name: None,
            owns_builtin_data: true,
            initialized: false,
            settled: crate::interpreter::subgraph::Settled::Never,
        });
        let n = &entry.node;
        if n.inputs.is_null() || n.outputs.is_null() || n.intermediates.is_null() || n.temporaries.is_null() {
            let ctx = self.context_ptr();
            // SAFETY: frees what the entry owns; nothing was initialised.
            unsafe { entry.release(ctx) };
            return Err(Error::new("out of memory adding a delegate node"));
        }
        let index = self.nodes.len();
        self.nodes.push(entry);
        let ctx = self.context_ptr();
        let e: *mut NodeEntry = &mut *self.nodes[index];
        // SAFETY: the delegate kernel's init with its params as the buffer (length 0, as
        // TFLite passes builtin data); `e` is boxed and stays put while C runs.
        let user_data = unsafe { node_ops::init(&(*e).registration, ctx, params as *const c_char, 0) };
        self.sync_context();
        let e = &mut self.nodes[index];
        e.node.user_data = user_data;
        e.initialized = true;
        self.execution_plan.push(index as i32);
        Ok(index)
    }

    /// `PreviewDelegatePartitioning`: the delegated subsets `nodes_to_replace` would give,
    /// as params owned by the subgraph (valid until the next call or the end of the
    /// delegate's Prepare).
    ///
    /// # Safety
    /// `nodes_to_replace` NULL or a live int array; the out-pointers NULL or writable.
    pub(crate) unsafe fn preview_partitioning(
        &mut self,
        nodes_to_replace: *const TfLiteIntArray,
        out: *mut *mut TfLiteDelegateParams,
        num: *mut c_int,
    ) -> Result<()> {
        // Read the request first: it may be an array of the previous preview.
        // SAFETY: per the function contract.
        let nodes = (!nodes_to_replace.is_null()).then(|| unsafe { int_array_slice(nodes_to_replace) }.to_vec());
        self.delegation.free_preview();
        if out.is_null() || num.is_null() {
            return Err(Error::new("PreviewDelegatePartitioning: NULL output pointer"));
        }
        // SAFETY: checked non-NULL, writable per the contract.
        unsafe {
            *out = core::ptr::null_mut();
            *num = 0;
        }
        let Some(nodes) = nodes else {
            return Err(Error::new("PreviewDelegatePartitioning: nodes_to_replace is NULL"));
        };
        if nodes.is_empty() {
            return Ok(());
        }
        let subsets = self.partition_plan(&nodes)?;
        for s in subsets.iter().filter(|s| s.kind == SubsetKind::Delegated) {
            let p = TfLiteDelegateParams {
                delegate: core::ptr::null_mut(),
                nodes_to_replace: int_array_from_slice(&s.nodes),
                input_tensors: int_array_from_slice(&s.input_tensors),
                output_tensors: int_array_from_slice(&s.output_tensors),
            };
            let failed = p.nodes_to_replace.is_null() || p.input_tensors.is_null() || p.output_tensors.is_null();
            self.delegation.preview.push(p);
            if failed {
                self.delegation.free_preview();
                return Err(Error::new("out of memory previewing the partitioning"));
            }
        }
        // SAFETY: checked non-NULL above.
        unsafe {
            *out = self.delegation.preview.as_mut_ptr();
            *num = self.delegation.preview.len() as c_int;
        }
        Ok(())
    }

    /// Makes tensor `index`'s data current: if it is stale, its delegate copies it from
    /// the buffer handle (`EnsureTensorDataIsReadable`).
    pub fn ensure_tensor_data_is_readable(&mut self, index: i32) -> Result<()> {
        let i = usize::try_from(index)
            .ok()
            .filter(|&i| i < self.tensors.len())
            .ok_or_else(|| Error::new(format!("EnsureTensorDataIsReadable: tensor index {index} out of range")))?;
        if !self.tensors[i].data_is_stale {
            return Ok(());
        }
        let t = &self.tensors[i];
        if t.delegate.is_null() || t.buffer_handle == kTfLiteNullBufferHandle {
            return Err(Error::new(format!(
                "tensor {index} is stale but has no delegate buffer handle to read it from"
            )));
        }
        let d = t.delegate;
        let ctx = self.context_ptr();
        let t: *mut TfLiteTensor = &mut self.tensors[i];
        // SAFETY: the tensor's live delegate with this subgraph's context and tensor.
        let status = unsafe { copy_from_buffer_handle(ctx, d, t) };
        self.sync_context();
        self.tensors[i].data_is_stale = false;
        if status == TfLiteStatus::kTfLiteOk {
            Ok(())
        } else {
            Err(Error::with_status(status, format!("CopyFromBufferHandle failed for tensor {index}")))
        }
    }

    /// Before node `ni` runs: inputs written by another delegate and marked stale are
    /// copied back from their buffer handles.
    pub(crate) fn refresh_stale_inputs(&mut self, ni: usize) -> Result<()> {
        let node_delegate = self.nodes[ni].node.delegate;
        // SAFETY: the node's inputs array is owned by the node (re-read below: no copy on
        // this per-node path).
        let count = unsafe { int_array_slice(self.nodes[ni].node.inputs) }.len();
        for k in 0..count {
            // SAFETY: as above; the array is not changed by `ensure_tensor_data_is_readable`.
            let t = unsafe { int_array_slice(self.nodes[ni].node.inputs) }[k];
            let Some(tensor) = usize::try_from(t).ok().and_then(|i| self.tensors.get(i)) else { continue };
            if !tensor.delegate.is_null() && tensor.delegate != node_delegate && tensor.data_is_stale {
                self.ensure_tensor_data_is_readable(t)?;
            }
        }
        Ok(())
    }

    /// The context of sibling subgraph `index` switched to its delegate functions
    /// (`AcquireSubgraphContext`); `None` if out of range.
    ///
    /// # Safety
    /// `me` is a live subgraph; no reference to it or its siblings is held.
    pub(crate) unsafe fn acquire_sibling_context(
        me: *mut Subgraph,
        index: c_int,
        acquire: bool,
    ) -> Option<*mut TfLiteContext> {
        // SAFETY: per the function contract; the borrow ends before the sibling is used.
        let siblings: &Vec<*mut Subgraph> = unsafe { &(*me).siblings };
        let target = usize::try_from(index).ok().and_then(|i| siblings.get(i).copied())?;
        // SAFETY: siblings are live subgraphs of the same interpreter (possibly `me`).
        unsafe {
            if acquire {
                (*target).switch_to_delegate_context();
            } else if !(*target).switch_to_kernel_context() {
                return None;
            }
            Some((*target).context_ptr())
        }
    }

    /// Marks sibling `index` (> 0) as skipped by delegation; false if out of range.
    pub fn mark_sibling_delegation_skippable(&mut self, index: c_int) -> bool {
        let Some(&target) = usize::try_from(index).ok().filter(|&i| i > 0).and_then(|i| self.siblings.get(i)) else {
            return false;
        };
        if std::ptr::eq(target, self) {
            self.delegation.skippable = true;
        } else {
            // SAFETY: siblings are live subgraphs of the same interpreter, distinct from
            // `self` here.
            unsafe { (*target).delegation.skippable = true };
        }
        true
    }
}
