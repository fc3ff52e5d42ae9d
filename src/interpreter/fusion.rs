//! Graph-level fusion, in three passes:
//! - a float32 RELU, RELU6 or RELU_N1_TO_1 whose only input is the sole output of a
//!   CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, SUB or MUL without a fused
//!   activation becomes that producer's fused activation (converters leave such pairs
//!   behind where an op could not carry the activation, e.g. after a quantization-aware
//!   rewrite), and a float32 PRELU after an ADD runs inside the ADD;
//! - a CONV_2D (float32, or dynamic-range with int8 weights) whose only reader is a
//!   float32 DEPTHWISE_CONV_2D runs inside that node, band by band through a scratch
//!   buffer in cache, where the tensor between them outgrows a core's L2 (the inverted
//!   bottleneck of MobileNet-style networks; see `kernels::ops::conv_then_depthwise`);
//! - a float32 or int8 CONV_2D whose only reader is an ADD (a residual block's end, with
//!   the ADD's clamp or fused PRELU) runs inside the ADD's node: the GEMM adds the
//!   residual to each chunk of output rows while it is in cache (see
//!   `kernels::ops::conv_then_add`).
//!
//! The first node of a pair leaves the execution plan, and the intermediate tensor
//! between them is neither written nor given memory: one pass over the data and one
//! buffer fewer.
//!
//! The answer is unchanged: the producers apply a fused activation as the same clamp
//! the standalone op computes, and a fused convolution computes the same values with the
//! same microkernels. Fusion runs only on our own builtin kernels (an
//! application's override of either op keeps the graph as it is), never where an
//! intermediate is observable (a subgraph input, output or variable, a tensor with a
//! second reader, `preserve_all_tensors`), and never under a delegate: it happens at
//! AllocateTensors on a subgraph no delegate touched, and is undone before a delegate
//! is applied, so delegates always see the model's graph. `TFLITE_RS_NO_FUSION=1`
//! (or `InterpreterConfig::fuse_activations = false`) switches it off.

use super::node_ops;
use super::subgraph::NodeEntry;
use super::subgraph::Subgraph;
use crate::abi::arrays::{int_array_free, int_array_from_slice, int_array_slice, int_array_slice_mut};
use crate::abi::builtin_op_data::{
    TfLiteAddParams, TfLiteConvParams, TfLiteDepthwiseConvParams, TfLiteFullyConnectedParams, TfLiteFusedActivation,
    TfLiteMulParams, TfLiteSubParams,
};
use crate::abi::builtin_ops::TfLiteBuiltinOperator as Op;
use crate::abi::types::{TfLiteAllocationType, TfLiteContext, TfLiteRegistration, TfLiteType};
use crate::kernels::ops::conv_then_add::{self, ConvThenAddParams};
use crate::kernels::ops::conv_then_depthwise::{self, ConvThenDepthwiseParams};
use crate::resolver::OpFinder;
use core::ffi::c_char;

/// One fused pair, with what undoing it restores.
pub(crate) enum Fusion {
    /// An activation (or PRELU) fused into its producer.
    Activation {
        producer: usize,
        /// The producer's own output (the activation's input).
        intermediate: i32,
        /// For a fused PRELU: the producer's registration and inputs before fusing.
        replaced: Option<(TfLiteRegistration, Vec<i32>)>,
    },
    /// A CONV_2D fused into the DEPTHWISE_CONV_2D that reads it: the depthwise node runs
    /// both (see `kernels::ops::conv_then_depthwise`).
    ConvDepthwise {
        node: usize,
        /// The depthwise node as it was.
        was: SetAsideNode,
    },
    /// A CONV_2D fused into the ADD that reads it: the ADD node runs both (see
    /// `kernels::ops::conv_then_add`).
    ConvAdd {
        node: usize,
        /// The ADD node as it was.
        was: SetAsideNode,
    },
}

/// A node's kernel, inputs, intermediates, options and name, set aside while the node
/// runs a fused pair.
pub(crate) struct SetAsideNode {
    registration: TfLiteRegistration,
    inputs: Vec<i32>,
    /// `None`: no array.
    intermediates: Option<Vec<i32>>,
    builtin_data: SetAsideOptions,
    op_name: String,
}

/// Gives node `e` the fused kernel `reg` with `inputs`, the tensor between the pair as
/// its one intermediate (for its type and quantization; it gets no memory), `options` as
/// its options (malloc'ed as the parser's are: the node owns them, and frees them should
/// it be released while fused) and name `name`; returns what it had, or `None` (and
/// changes nothing) where memory runs out.
fn swap_in_pair<P: Copy>(
    ctx: *mut TfLiteContext,
    e: &mut NodeEntry,
    reg: TfLiteRegistration,
    inputs: &[i32],
    between: i32,
    options: P,
    name: &str,
) -> Option<SetAsideNode> {
    // SAFETY: a plain allocation of the struct's size, checked for NULL.
    let options_block = unsafe { libc::malloc(size_of::<P>()) }.cast::<P>();
    if options_block.is_null() {
        return None;
    }
    // SAFETY: a fresh allocation of the right size (malloc aligns for any fundamental type).
    unsafe { options_block.write(options) };
    let fused_intermediates = int_array_from_slice(&[between]);
    if fused_intermediates.is_null() {
        // SAFETY: allocated above, used by nothing.
        unsafe { libc::free(options_block.cast()) };
        return None;
    }
    let old_intermediates = core::mem::replace(&mut e.node.intermediates, fused_intermediates);
    // SAFETY: the node owns its intermediates array (NULL or malloc'ed), replaced here and
    // freed once.
    let intermediates = (!old_intermediates.is_null()).then(|| unsafe {
        let v = int_array_slice(old_intermediates).to_vec();
        int_array_free(old_intermediates);
        v
    });
    let registration = e.registration;
    // SAFETY: the node's arrays are owned by it and live.
    let original_inputs = unsafe { int_array_slice(e.node.inputs) }.to_vec();
    let builtin_data = SetAsideOptions(core::mem::replace(&mut e.node.builtin_data, options_block.cast()));
    swap_kernel(ctx, e, reg, inputs);
    let op_name = core::mem::replace(&mut e.op_name, name.to_string());
    Some(SetAsideNode { registration, inputs: original_inputs, intermediates, builtin_data, op_name })
}

/// Puts back what [`swap_in_pair`] set aside.
fn swap_out_pair(ctx: *mut TfLiteContext, e: &mut NodeEntry, was: SetAsideNode) {
    // SAFETY: the fused options were malloc'ed by the fusion and are freed once, here, as
    // the node's own options come back.
    unsafe { libc::free(core::mem::replace(&mut e.node.builtin_data, was.builtin_data.take())) };
    swap_kernel(ctx, e, was.registration, &was.inputs);
    // SAFETY: the fusion's intermediates array was made by `int_array_from_slice` for this
    // node and is freed once, here.
    unsafe { int_array_free(e.node.intermediates) };
    e.node.intermediates = was.intermediates.map_or(core::ptr::null_mut(), |v| int_array_from_slice(&v));
    e.op_name = was.op_name;
}

/// A node's malloc'ed options struct, set aside while the node runs with other options;
/// freed if the node is released before they are put back.
pub(crate) struct SetAsideOptions(*mut core::ffi::c_void);

impl SetAsideOptions {
    fn take(mut self) -> *mut core::ffi::c_void {
        core::mem::replace(&mut self.0, core::ptr::null_mut())
    }
}

impl Drop for SetAsideOptions {
    fn drop(&mut self) {
        // SAFETY: the pointer is the node's malloc'ed options (or NULL once taken), owned
        // here alone.
        unsafe { libc::free(self.0) };
    }
}

/// What a fused node does after its producer.
#[derive(Clone, Copy)]
enum Fused {
    /// A clamp: becomes the producer's fused activation.
    Clamp(TfLiteFusedActivation),
    /// PRELU with this tensor of per-channel alphas: the producer (an ADD) becomes an
    /// ADD-then-PRELU node.
    Prelu(i32),
}

/// The fused activation a standalone activation op stands for.
fn activation_of(code: i32) -> Option<TfLiteFusedActivation> {
    match code {
        c if c == Op::kTfLiteBuiltinRelu as i32 => Some(TfLiteFusedActivation::kTfLiteActRelu),
        c if c == Op::kTfLiteBuiltinRelu6 as i32 => Some(TfLiteFusedActivation::kTfLiteActRelu6),
        c if c == Op::kTfLiteBuiltinReluN1To1 as i32 => Some(TfLiteFusedActivation::kTfLiteActReluN1To1),
        _ => None,
    }
}

/// The `activation` field of a producer's options, for the ops that have one.
///
/// # Safety
/// `data` must be NULL or the live options struct the model parser allocated for an op
/// of builtin `code`, and no other reference to it may be alive.
unsafe fn activation_field<'a>(code: i32, data: *mut core::ffi::c_void) -> Option<&'a mut TfLiteFusedActivation> {
    // SAFETY: per the contract, `data` is NULL or the parser's struct for `code`.
    unsafe {
        match code {
            c if c == Op::kTfLiteBuiltinConv2d as i32 => {
                data.cast::<TfLiteConvParams>().as_mut().map(|p| &mut p.activation)
            }
            c if c == Op::kTfLiteBuiltinDepthwiseConv2d as i32 => {
                data.cast::<TfLiteDepthwiseConvParams>().as_mut().map(|p| &mut p.activation)
            }
            c if c == Op::kTfLiteBuiltinFullyConnected as i32 => {
                data.cast::<TfLiteFullyConnectedParams>().as_mut().map(|p| &mut p.activation)
            }
            c if c == Op::kTfLiteBuiltinAdd as i32 => {
                data.cast::<TfLiteAddParams>().as_mut().map(|p| &mut p.activation)
            }
            c if c == Op::kTfLiteBuiltinSub as i32 => {
                data.cast::<TfLiteSubParams>().as_mut().map(|p| &mut p.activation)
            }
            c if c == Op::kTfLiteBuiltinMul as i32 => {
                data.cast::<TfLiteMulParams>().as_mut().map(|p| &mut p.activation)
            }
            _ => None,
        }
    }
}

/// True if `reg` is this runtime's own kernel for its builtin code and version (not an
/// application's override, not a delegate kernel): its callbacks are the ones in the
/// builtin table. Both come from the same table-building code, so they hold the same
/// addresses; should a build ever give one function two addresses, the pair is simply
/// not fused. An application's functions live outside this library and never compare
/// equal to ours.
fn is_own_kernel(builtins: &crate::resolver::OpResolver, reg: &TfLiteRegistration) -> bool {
    macro_rules! same {
        ($a:expr, $b:expr) => {
            match ($a, $b) {
                (Some(a), Some(b)) => core::ptr::fn_addr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
        };
    }
    reg.registration_external.is_null()
        && builtins.find_builtin(reg.builtin_code, reg.version).is_some_and(|own| {
            same!(own.init, reg.init)
                && same!(own.free, reg.free)
                && same!(own.prepare, reg.prepare)
                && same!(own.invoke, reg.invoke)
        })
}

/// Gives node `e` the kernel `reg` with inputs `inputs`: frees what the old kernel's
/// `init` made, then runs the new one's (builtin params as the buffer, as TFLite does).
fn swap_kernel(ctx: *mut TfLiteContext, e: &mut NodeEntry, reg: TfLiteRegistration, inputs: &[i32]) {
    // SAFETY: `ctx` is the node's live subgraph context; `user_data` came from the current
    // registration's `init` (freed once, here); the new `init` gets what the builder gives.
    unsafe {
        if e.initialized {
            node_ops::free(&e.registration, ctx, e.node.user_data);
        }
        e.registration = reg;
        e.node.user_data = node_ops::init(&e.registration, ctx, e.node.builtin_data as *const c_char, 0);
        e.initialized = true;
    }
    let arr = int_array_from_slice(inputs);
    if !arr.is_null() {
        // SAFETY: the node owns its malloc'ed inputs array, replaced here.
        unsafe { int_array_free(e.node.inputs) };
        e.node.inputs = arr;
    }
}

/// Readers and the producing node of every tensor, over `plan`; `None` if the plan
/// names a node that does not exist.
fn readers_and_producers(s: &Subgraph, plan: &[i32]) -> Option<(Vec<usize>, Vec<usize>)> {
    let n_tensors = s.tensors.len();
    let mut readers = vec![0usize; n_tensors];
    let mut producer = vec![usize::MAX; n_tensors];
    for &ni in plan {
        let e = usize::try_from(ni).ok().and_then(|i| s.nodes.get(i))?;
        // SAFETY: the node's arrays are owned by it and live.
        let (ins, outs) = unsafe { (int_array_slice(e.node.inputs), int_array_slice(e.node.outputs)) };
        for &t in ins {
            if let Some(r) = usize::try_from(t).ok().and_then(|t| readers.get_mut(t)) {
                *r += 1;
            }
        }
        for &t in outs {
            if let Some(p) = usize::try_from(t).ok().and_then(|t| producer.get_mut(t)) {
                *p = ni as usize;
            }
        }
    }
    Some((readers, producer))
}

impl Subgraph {
    /// Tensor `t`, if the index names one.
    fn tensor_at(&self, t: i32) -> Option<&crate::abi::types::TfLiteTensor> {
        usize::try_from(t).ok().and_then(|t| self.tensors.get(t))
    }

    /// True if `t` is seen outside the plan: a subgraph input, output or variable.
    fn observable(&self, t: i32) -> bool {
        self.inputs.contains(&t) || self.outputs.contains(&t) || self.variables.contains(&t)
    }

    /// True if `t` is a float32 tensor without quantization.
    fn is_plain_f32(&self, t: i32) -> bool {
        self.tensor_at(t).is_some_and(|t| {
            t.data_type() == Some(TfLiteType::kTfLiteFloat32)
                && t.params.scale == 0.0
                && t.quantization.params.is_null()
        })
    }

    /// `t`'s dims (empty for a bad index or NULL dims).
    fn dims_of(&self, t: i32) -> &[i32] {
        // SAFETY: a tensor's dims are NULL or its own live array.
        self.tensor_at(t).map_or(&[], |t| unsafe { int_array_slice(t.dims) })
    }

    /// Fuses every eligible pair (see the module comment): activations into their
    /// producers, then convolutions into the depthwise convolutions and the ADDs that read
    /// them.
    /// Returns how many pairs were fused.
    pub(crate) fn fuse_activations(&mut self) -> usize {
        if !self.fusions.is_empty()
            || self.preserve_intermediates
            || self.has_delegates()
            || !self.delegation.pre_delegation_plan.is_empty()
            || !self.allow_fusion
        {
            return 0;
        }
        // Built per pass (once per AllocateTensors that fuses): a few microseconds, and no
        // process-wide table for leak checkers to report.
        let builtins = crate::resolver::builtin::builtin_op_resolver();
        let original_plan = self.execution_plan.clone();
        let fused =
            self.fuse_activation_pairs(&builtins) + self.fuse_conv_depthwise(&builtins) + self.fuse_conv_add(&builtins);
        if fused > 0 {
            self.plan_before_fusion = original_plan;
        }
        fused
    }

    /// Fuses every (producer, activation) pair.
    fn fuse_activation_pairs(&mut self, builtins: &crate::resolver::OpResolver) -> usize {
        let Some((readers, producer)) = readers_and_producers(self, &self.execution_plan) else { return 0 };
        let (observable, is_f32, dims) = (|t| self.observable(t), |t| self.is_plain_f32(t), |t| self.dims_of(t));
        // Float32 alphas with one value per channel of `t` (all other dims 1).
        let per_channel_alphas = |a: i32, t: i32| {
            let (ad, td) = (dims(a), dims(t));
            is_f32(a)
                && !ad.is_empty()
                && td.last() == ad.last()
                && td.last().is_some_and(|&c| c > 0)
                && ad[..ad.len() - 1].iter().all(|&d| d == 1)
        };
        let prelu = Op::kTfLiteBuiltinPrelu as i32;
        let mut found = Vec::new();
        for (pos, &ni) in self.execution_plan.iter().enumerate() {
            let act_node = ni as usize;
            let e = &self.nodes[act_node];
            // SAFETY: the node's arrays are owned by it and live.
            let (ins, outs) = unsafe { (int_array_slice(e.node.inputs), int_array_slice(e.node.outputs)) };
            let (t, u, fused) = match (activation_of(e.registration.builtin_code), ins, outs) {
                (Some(act), &[t], &[u]) => (t, u, Fused::Clamp(act)),
                (None, &[t, a], &[u]) if e.registration.builtin_code == prelu && per_channel_alphas(a, t) => {
                    (t, u, Fused::Prelu(a))
                }
                _ => continue,
            };
            if t == u || !is_own_kernel(builtins, &e.registration) || observable(t) || !is_f32(t) || !is_f32(u) {
                continue;
            }
            let Some(&p) = usize::try_from(t).ok().and_then(|t| producer.get(t)) else { continue };
            if p == usize::MAX || readers[t as usize] != 1 {
                continue;
            }
            let pe = &self.nodes[p];
            // SAFETY: as above.
            let (p_ins, p_outs) = unsafe { (int_array_slice(pe.node.inputs), int_array_slice(pe.node.outputs)) };
            if p_outs != [t] || !pe.node.delegate.is_null() || !is_own_kernel(builtins, &pe.registration) {
                continue;
            }
            match fused {
                Fused::Clamp(_) => {
                    // SAFETY: the producer's builtin data is the parser's struct for its
                    // code; nothing else references it while the subgraph is not running.
                    let field = unsafe { activation_field(pe.registration.builtin_code, pe.node.builtin_data) };
                    if field.is_none_or(|f| *f != TfLiteFusedActivation::kTfLiteActNone) {
                        continue;
                    }
                }
                Fused::Prelu(_) => {
                    // The fused node runs where the PRELU ran (its alphas may be made
                    // after the ADD, e.g. dequantized just before the PRELU), so the ADD's
                    // inputs must not change in between: no variables.
                    if pe.registration.builtin_code != Op::kTfLiteBuiltinAdd as i32
                        || p_ins.len() != 2
                        || p_ins.iter().any(|i| self.variables.contains(i))
                    {
                        continue;
                    }
                }
            }
            found.push((p, act_node, pos, t, u, fused));
        }
        if found.is_empty() {
            return 0;
        }
        let plan_before = self.execution_plan.clone();
        // The new plan: a fused clamp's node leaves it; a fused PRELU's slot runs the
        // producer (now ADD-then-PRELU) and the producer's own slot goes.
        let mut slot_of = std::collections::HashMap::new();
        for &(p, act_node, _, _, _, fused) in &found {
            match fused {
                Fused::Clamp(_) => slot_of.insert(act_node, None),
                Fused::Prelu(_) => {
                    slot_of.insert(p, None);
                    slot_of.insert(act_node, Some(p))
                }
            };
        }
        self.execution_plan = plan_before
            .iter()
            .filter_map(|&ni| match slot_of.get(&(ni as usize)) {
                None => Some(ni),
                Some(runs) => runs.map(|p| p as i32),
            })
            .collect();
        for &(p, _, _, t, u, fused) in &found {
            let ctx = self.context_ptr();
            let pe = &mut self.nodes[p];
            let mut replaced = None;
            match fused {
                Fused::Clamp(act) => {
                    // SAFETY: checked above; the subgraph is not running.
                    if let Some(field) = unsafe { activation_field(pe.registration.builtin_code, pe.node.builtin_data) }
                    {
                        *field = act;
                    }
                }
                Fused::Prelu(alphas) => {
                    // SAFETY: the producer's inputs array is its own live array.
                    let inputs = unsafe { int_array_slice(pe.node.inputs) }.to_vec();
                    let mut with_alphas = inputs.clone();
                    with_alphas.push(alphas);
                    let reg = TfLiteRegistration {
                        builtin_code: pe.registration.builtin_code,
                        version: pe.registration.version,
                        ..crate::kernels::ops::add::add_prelu_registration()
                    };
                    let original = pe.registration;
                    swap_kernel(ctx, pe, reg, &with_alphas);
                    replaced = Some((original, inputs));
                }
            }
            // SAFETY: the producer owns its outputs array (one element, checked above).
            unsafe { int_array_slice_mut(pe.node.outputs)[0] = u };
            self.fusions.push(Fusion::Activation { producer: p, intermediate: t, replaced });
        }
        found.len()
    }

    /// Fuses every float32 CONV_2D whose output only a DEPTHWISE_CONV_2D (depth
    /// multiplier 1) reads into that depthwise node, which then runs both (see
    /// `kernels::ops::conv_then_depthwise`); the convolution's node leaves the plan and
    /// the tensor between them gets no memory. Both filters and biases must be model
    /// constants, and the convolution's input no variable (the fused node reads it where
    /// the depthwise node ran). The convolution's filter may be int8 (a dynamic-range
    /// layer) where the CPU has the 8-bit kernels that run it.
    fn fuse_conv_depthwise(&mut self, builtins: &crate::resolver::OpResolver) -> usize {
        let Some((readers, producer)) = readers_and_producers(self, &self.execution_plan) else { return 0 };
        let (observable, is_f32, dims) = (|t| self.observable(t), |t| self.is_plain_f32(t), |t| self.dims_of(t));
        let constant_f32 = |t: i32| {
            is_f32(t) && self.tensor_at(t).is_some_and(|t| t.allocation() == Some(TfLiteAllocationType::kTfLiteMmapRo))
        };
        let absent_or_constant_f32 = |t: Option<&i32>| t.is_none_or(|&t| t == -1 || constant_f32(t));
        let hybrid_kernels = crate::microkernels::table().qs8_gemm.is_some();
        let constant_int8 = |t: i32| {
            self.tensor_at(t).is_some_and(|t| {
                t.data_type() == Some(TfLiteType::kTfLiteInt8)
                    && t.allocation() == Some(TfLiteAllocationType::kTfLiteMmapRo)
            })
        };
        let conv_filter_fuses = |t: i32| constant_f32(t) || (hybrid_kernels && constant_int8(t));
        let (conv_code, dw_code) = (Op::kTfLiteBuiltinConv2d as i32, Op::kTfLiteBuiltinDepthwiseConv2d as i32);
        let mut found = Vec::new();
        for &ni in &self.execution_plan {
            let d = ni as usize;
            let de = &self.nodes[d];
            if de.registration.builtin_code != dw_code
                || !de.node.delegate.is_null()
                || !de.owns_builtin_data
                || de.node.builtin_data.is_null()
                || !is_own_kernel(builtins, &de.registration)
            {
                continue;
            }
            // SAFETY: the node's arrays are owned by it and live.
            let (d_ins, d_outs) = unsafe { (int_array_slice(de.node.inputs), int_array_slice(de.node.outputs)) };
            let (&[t, wf, ..], &[u]) = (d_ins, d_outs) else { continue };
            if d_ins.len() > 3
                || !is_f32(t)
                || observable(t)
                || !constant_f32(wf)
                || !absent_or_constant_f32(d_ins.get(2))
            {
                continue;
            }
            let Some(&p) = usize::try_from(t).ok().and_then(|t| producer.get(t)) else { continue };
            if p == usize::MAX || readers[t as usize] != 1 {
                continue;
            }
            let pe = &self.nodes[p];
            if pe.registration.builtin_code != conv_code
                || !pe.node.delegate.is_null()
                || pe.node.builtin_data.is_null()
                || !is_own_kernel(builtins, &pe.registration)
            {
                continue;
            }
            // SAFETY: as above.
            let (p_ins, p_outs) = unsafe { (int_array_slice(pe.node.inputs), int_array_slice(pe.node.outputs)) };
            let &[x, cf, ..] = p_ins else { continue };
            if p_outs != [t]
                || p_ins.len() > 3
                || x == u
                || !is_f32(x)
                || self.variables.contains(&x)
                || !conv_filter_fuses(cf)
                || !absent_or_constant_f32(p_ins.get(2))
            {
                continue;
            }
            // Ungrouped, and depth multiplier 1: the depthwise filter has one channel per
            // convolution filter.
            let (xd, cfd, wfd) = (dims(x), dims(cf), dims(wf));
            if xd.len() != 4 || cfd.len() != 4 || wfd.len() != 4 || xd[3] != cfd[3] || wfd[0] != 1 || wfd[3] != cfd[0] {
                continue;
            }
            // Only where keeping the intermediate out of memory pays (see the kernel).
            let elements =
                dims(t).iter().try_fold(1usize, |n, &d| usize::try_from(d).ok().and_then(|d| n.checked_mul(d)));
            if !elements.is_some_and(conv_then_depthwise::pays_off) {
                continue;
            }
            let bias = |ins: &[i32]| ins.get(2).copied().unwrap_or(-1);
            let inputs = [x, cf, bias(p_ins), wf, bias(d_ins)];
            found.push((p, d, t, inputs));
        }
        let mut fused = 0;
        for (p, d, t, inputs) in found {
            // SAFETY: both nodes' builtin data are the parser's options structs for their
            // codes (checked non-NULL above), not referenced elsewhere while not running.
            let params = unsafe {
                ConvThenDepthwiseParams {
                    conv: *self.nodes[p].node.builtin_data.cast::<TfLiteConvParams>(),
                    depthwise: *self.nodes[d].node.builtin_data.cast::<TfLiteDepthwiseConvParams>(),
                }
            };
            let ctx = self.context_ptr();
            let reg = conv_then_depthwise::registration();
            let name = "CONV_2D+DEPTHWISE_CONV_2D";
            let Some(was) = swap_in_pair(ctx, &mut self.nodes[d], reg, &inputs, t, params, name) else { continue };
            self.execution_plan.retain(|&ni| ni as usize != p);
            self.fusions.push(Fusion::ConvDepthwise { node: d, was });
            fused += 1;
        }
        fused
    }

    /// Fuses every float32 or int8 CONV_2D whose output only an ADD reads, as one operand
    /// of the same shape and type as the other, into that ADD node (with its fused
    /// activation, or a float ADD's fused PRELU), which then runs both (see
    /// `kernels::ops::conv_then_add`); the convolution's node leaves the plan and the
    /// tensor between them gets no memory. No operand may be a variable: the fused node
    /// reads them where the convolution or the ADD ran (weights a DEQUANTIZE makes are
    /// packed at the first Invoke, as CONV_2D does). Returns how many pairs were fused.
    fn fuse_conv_add(&mut self, builtins: &crate::resolver::OpResolver) -> usize {
        let Some((readers, producer)) = readers_and_producers(self, &self.execution_plan) else { return 0 };
        let (observable, is_f32, dims) = (|t| self.observable(t), |t| self.is_plain_f32(t), |t| self.dims_of(t));
        let (conv_code, add_code) = (Op::kTfLiteBuiltinConv2d as i32, Op::kTfLiteBuiltinAdd as i32);
        let add_prelu = crate::kernels::ops::add::add_prelu_registration();
        let is_add_prelu = |reg: &TfLiteRegistration| match (reg.invoke, add_prelu.invoke) {
            (Some(a), Some(b)) => reg.registration_external.is_null() && core::ptr::fn_addr_eq(a, b),
            _ => false,
        };
        // Float32, or int8 quantized per tensor: the two kinds of activations that fuse.
        let activation_type = |t: i32| {
            let tensor = self.tensor_at(t)?;
            match tensor.data_type()? {
                TfLiteType::kTfLiteFloat32 if is_f32(t) => Some(TfLiteType::kTfLiteFloat32),
                TfLiteType::kTfLiteInt8 if tensor.params.scale > 0.0 => Some(TfLiteType::kTfLiteInt8),
                _ => None,
            }
        };
        let data_type = |t: i32| self.tensor_at(t).and_then(|t| t.data_type());
        // The convolution producing `t` for the ADD `u = t + r` (or `r + t`), if it fuses:
        // its node and inputs (input, filter, bias or -1).
        let fusable_conv = |t: i32, r: i32, u: i32| -> Option<(usize, [i32; 3])> {
            let ty = activation_type(t)?;
            if t == r || r == u || observable(t) || activation_type(r) != Some(ty) || activation_type(u) != Some(ty) {
                return None;
            }
            let (td, rd, ud) = (dims(t), dims(r), dims(u));
            if td.len() != 4 || td != rd || td != ud {
                return None;
            }
            let p = *usize::try_from(t).ok().and_then(|t| producer.get(t))?;
            if p == usize::MAX || readers[t as usize] != 1 {
                return None;
            }
            let pe = &self.nodes[p];
            if pe.registration.builtin_code != conv_code
                || !pe.node.delegate.is_null()
                || pe.node.builtin_data.is_null()
                || !is_own_kernel(builtins, &pe.registration)
            {
                return None;
            }
            // SAFETY: the node's arrays are owned by it and live.
            let (p_ins, p_outs) = unsafe { (int_array_slice(pe.node.inputs), int_array_slice(pe.node.outputs)) };
            let &[x, cf, ..] = p_ins else { return None };
            let bias = p_ins.get(2).copied().unwrap_or(-1);
            let bias_type =
                if ty == TfLiteType::kTfLiteInt8 { TfLiteType::kTfLiteInt32 } else { TfLiteType::kTfLiteFloat32 };
            let fuses = p_outs == [t]
                && p_ins.len() <= 3
                && x != u
                && activation_type(x) == Some(ty)
                && [x, cf, bias].iter().all(|t| !self.variables.contains(t))
                && data_type(cf).is_some_and(|f| conv_then_add::runs(ty, f))
                && (bias == -1 || data_type(bias) == Some(bias_type));
            // Ungrouped: the filter reads every input channel.
            let (xd, cfd) = (dims(x), dims(cf));
            (fuses && xd.len() == 4 && cfd.len() == 4 && xd[3] == cfd[3]).then_some((p, [x, cf, bias]))
        };
        // Each node's position in the plan.
        let mut position = vec![usize::MAX; self.nodes.len()];
        for (i, &ni) in self.execution_plan.iter().enumerate() {
            if let Some(p) = usize::try_from(ni).ok().and_then(|n| position.get_mut(n)) {
                *p = i;
            }
        }
        // Whether tensor `r` holds its value at plan position `at`: made before it (or by
        // no node) and no variable.
        let ready_at = |r: i32, at: usize| {
            !self.variables.contains(&r)
                && usize::try_from(r)
                    .ok()
                    .and_then(|r| producer.get(r))
                    .is_some_and(|&p| p == usize::MAX || position[p] < at)
        };
        let mut found = Vec::new();
        for &ni in &self.execution_plan {
            let a = ni as usize;
            let ae = &self.nodes[a];
            if ae.registration.builtin_code != add_code
                || !ae.node.delegate.is_null()
                || !ae.owns_builtin_data
                || ae.node.builtin_data.is_null()
                || !(is_own_kernel(builtins, &ae.registration) || is_add_prelu(&ae.registration))
            {
                continue;
            }
            // SAFETY: the node's arrays are owned by it and live.
            let (a_ins, a_outs) = unsafe { (int_array_slice(ae.node.inputs), int_array_slice(ae.node.outputs)) };
            let (&[i0, i1, ..], &[u]) = (a_ins, a_outs) else { continue };
            // A fused PRELU: float32 only (it fuses only there).
            let alphas = match a_ins.len() {
                2 => None,
                3 if is_add_prelu(&ae.registration) && is_f32(u) => Some(a_ins[2]),
                _ => continue,
            };
            // Either operand may be the convolution's output; the first that fuses does.
            let Some((p, conv_inputs, residual, residual_first)) = [(i0, i1, false), (i1, i0, true)]
                .into_iter()
                .find_map(|(t, r, first)| fusable_conv(t, r, u).map(|(p, ins)| (p, ins, r, first)))
            else {
                continue;
            };
            // SAFETY: both nodes' builtin data are the parser's options structs for their
            // codes (checked non-NULL above), not referenced elsewhere while not running.
            let params = unsafe {
                ConvThenAddParams {
                    conv: *self.nodes[p].node.builtin_data.cast::<TfLiteConvParams>(),
                    add: *ae.node.builtin_data.cast::<TfLiteAddParams>(),
                    residual_first,
                }
            };
            let mut inputs = conv_inputs.to_vec();
            inputs.push(residual);
            inputs.extend(alphas);
            // The fused node runs where the convolution ran if the ADD's other operands
            // are ready there: its output then simply takes the place of the
            // convolution's, and no tensor lives longer than before. Else it runs where
            // the ADD ran, and the convolution's input lives until then in place of its
            // output: only if it is no larger (a long skip connection from a wide tensor
            // would otherwise keep it).
            let early = inputs[3..].iter().all(|&t| ready_at(t, position[p]));
            let bytes = |t: i32| self.tensor_at(t).map_or(usize::MAX, |t| t.bytes);
            let conv_output = if residual_first { i1 } else { i0 };
            if early || bytes(conv_inputs[0]) <= bytes(conv_output) {
                found.push((p, a, params, inputs, conv_output, early));
            }
        }
        let mut fused = 0;
        for (p, a, params, inputs, between, early) in found {
            let ctx = self.context_ptr();
            let reg = conv_then_add::registration();
            let Some(was) = swap_in_pair(ctx, &mut self.nodes[a], reg, &inputs, between, params, "CONV_2D+ADD") else {
                continue;
            };
            let (stays, goes) = if early { (p, a) } else { (a, p) };
            self.execution_plan.retain(|&ni| ni as usize != goes);
            for ni in self.execution_plan.iter_mut().filter(|ni| **ni as usize == stays) {
                *ni = a as i32;
            }
            self.fusions.push(Fusion::ConvAdd { node: a, was });
            fused += 1;
        }
        fused
    }

    /// Restores the graph every fusion changed (before a delegate sees it).
    pub(crate) fn unfuse_activations(&mut self) {
        // Undo in reverse order of fusing: earliest plan position first, each put back
        // into the plan as it was when that pair was fused.
        if self.fusions.is_empty() {
            return;
        }
        while let Some(f) = self.fusions.pop() {
            let ctx = self.context_ptr();
            match f {
                Fusion::Activation { producer, intermediate, replaced } => {
                    let pe = &mut self.nodes[producer];
                    match replaced {
                        Some((original, inputs)) => swap_kernel(ctx, pe, original, &inputs),
                        None => {
                            let code = pe.registration.builtin_code;
                            // SAFETY: as in `fuse_activation_pairs`.
                            if let Some(field) = unsafe { activation_field(code, pe.node.builtin_data) } {
                                *field = TfLiteFusedActivation::kTfLiteActNone;
                            }
                        }
                    }
                    // SAFETY: the producer owns its one-element outputs array.
                    unsafe { int_array_slice_mut(pe.node.outputs)[0] = intermediate };
                }
                Fusion::ConvDepthwise { node, was } | Fusion::ConvAdd { node, was } => {
                    swap_out_pair(ctx, &mut self.nodes[node], was)
                }
            }
        }
        self.execution_plan = core::mem::take(&mut self.plan_before_fusion);
    }

    /// How many activation nodes are fused into their producers now.
    pub fn fused_activations(&self) -> usize {
        self.fusions.iter().filter(|f| matches!(f, Fusion::Activation { .. })).count()
    }

    /// How many convolutions are fused into the depthwise convolutions that read them.
    pub fn fused_conv_depthwise(&self) -> usize {
        self.fusions.iter().filter(|f| matches!(f, Fusion::ConvDepthwise { .. })).count()
    }

    /// How many convolutions are fused into the ADDs that read them.
    pub fn fused_conv_add(&self) -> usize {
        self.fusions.iter().filter(|f| matches!(f, Fusion::ConvAdd { .. })).count()
    }
}
