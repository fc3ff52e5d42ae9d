//! Graph-level fusion: a float32 RELU, RELU6 or RELU_N1_TO_1 whose only input is the
//! sole output of a CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, SUB or MUL without
//! a fused activation becomes that producer's fused activation. The producer then writes
//! the activation's output directly, the activation node leaves the execution plan, and
//! the intermediate tensor between them is neither written nor given memory: one pass
//! over the data and one buffer fewer (converters leave such pairs behind where an op
//! could not carry the activation, e.g. after a quantization-aware rewrite).
//!
//! The answer is unchanged: the producers apply a fused activation as the same clamp
//! the standalone op computes. Fusion runs only on our own builtin kernels (an
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
use crate::abi::types::{TfLiteContext, TfLiteRegistration, TfLiteType};
use crate::resolver::OpFinder;
use core::ffi::c_char;

/// One fused pair, with what undoing it restores.
pub(crate) struct Fusion {
    producer: usize,
    /// The producer's own output (the activation's input).
    intermediate: i32,
    /// For a fused PRELU: the producer's registration and inputs before fusing.
    replaced: Option<(TfLiteRegistration, Vec<i32>)>,
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

impl Subgraph {
    /// Fuses every eligible (producer, activation) pair (see the module comment). Returns
    /// how many were fused.
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
        let n_tensors = self.tensors.len();
        // Readers and the producing node of every tensor, over the execution plan.
        let mut readers = vec![0usize; n_tensors];
        let mut producer = vec![usize::MAX; n_tensors];
        for &ni in &self.execution_plan {
            let Some(e) = usize::try_from(ni).ok().and_then(|i| self.nodes.get(i)) else { return 0 };
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
        let observable = |t: i32| self.inputs.contains(&t) || self.outputs.contains(&t) || self.variables.contains(&t);
        let is_f32 = |t: i32| {
            usize::try_from(t).ok().and_then(|t| self.tensors.get(t)).is_some_and(|t| {
                t.data_type() == Some(TfLiteType::kTfLiteFloat32)
                    && t.params.scale == 0.0
                    && t.quantization.params.is_null()
            })
        };
        let dims = |t: i32| -> &[i32] {
            // SAFETY: a tensor's dims are NULL or its own live array.
            usize::try_from(t)
                .ok()
                .and_then(|t| self.tensors.get(t))
                .map_or(&[], |t| unsafe { int_array_slice(t.dims) })
        };
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
            if t == u || !is_own_kernel(&builtins, &e.registration) || observable(t) || !is_f32(t) || !is_f32(u) {
                continue;
            }
            let Some(&p) = usize::try_from(t).ok().and_then(|t| producer.get(t)) else { continue };
            if p == usize::MAX || readers[t as usize] != 1 {
                continue;
            }
            let pe = &self.nodes[p];
            // SAFETY: as above.
            let (p_ins, p_outs) = unsafe { (int_array_slice(pe.node.inputs), int_array_slice(pe.node.outputs)) };
            if p_outs != [t] || !pe.node.delegate.is_null() || !is_own_kernel(&builtins, &pe.registration) {
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
        self.plan_before_fusion = self.execution_plan.clone();
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
        self.execution_plan = self
            .plan_before_fusion
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
            self.fusions.push(Fusion { producer: p, intermediate: t, replaced });
        }
        found.len()
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
            let pe = &mut self.nodes[f.producer];
            match f.replaced {
                Some((original, inputs)) => swap_kernel(ctx, pe, original, &inputs),
                None => {
                    // SAFETY: as in `fuse_activations`.
                    if let Some(field) = unsafe { activation_field(pe.registration.builtin_code, pe.node.builtin_data) }
                    {
                        *field = TfLiteFusedActivation::kTfLiteActNone;
                    }
                }
            }
            // SAFETY: the producer owns its one-element outputs array.
            unsafe { int_array_slice_mut(pe.node.outputs)[0] = f.intermediate };
        }
        self.execution_plan = core::mem::take(&mut self.plan_before_fusion);
    }

    /// How many activation nodes are fused into their producers now.
    pub fn fused_activations(&self) -> usize {
        self.fusions.len()
    }
}
