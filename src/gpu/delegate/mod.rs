//! The OpenCL GPU delegate as a `TfLiteDelegate` (what `TfLiteGpuDelegateV2Create`
//! returns).
//!
//! Prepare (TFLite's `DelegatePrepare`): read every node of the execution plan, lower
//! it (which checks op, version, types, shapes and options), partition the supported
//! nodes, keep the `max_delegated_partitions` largest and replace them with delegate
//! kernels. Kernel init (`DelegateKernel::Prepare` in TFLite): lower the partition again,
//! fuse, plan device memory, bind and tune every launch (tuning cache in
//! `serialization_dir`). Invoke: copy inputs in, run, copy outputs out.

pub mod context;
pub mod options;

use core::ffi::{c_char, c_void};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use parking_lot::Mutex;

use crate::abi::types::*;
use crate::error::{Error, Result};
use crate::gpu::cl::{ClEnv, Partition};
use crate::gpu::graph::lower::{Lowering, dequantize};
use crate::gpu::graph::{NodeDesc, TensorDesc, TensorId, fuse, plan};
use crate::gpu::tuner::{LoadStatus, TuneCache, TuneStats, Tuner, TunerConfig};
use context::report;
pub use options::{Settings, TfLiteGpuDelegateOptionsV2};

/// What the benchmark prints about a delegate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuReport {
    pub device: String,
    pub partitions: usize,
    /// Nodes in the execution plan the delegate last saw, and how many it runs.
    pub nodes_total: usize,
    pub nodes_delegated: usize,
    /// Kernel launches per Invoke, and how many there were before fusion.
    pub launches: usize,
    pub launches_unfused: usize,
    /// Device buffer bytes (planned + constants) and what unshared tensors would take.
    pub arena_bytes: usize,
    pub unshared_bytes: usize,
    pub tune: TuneStats,
    /// Wall time of all kernel inits (lowering, upload, tuning).
    pub init_ns: u64,
    pub program_build_ns: u64,
    /// How the tuning cache loaded ("missing", "loaded N entries", ...).
    pub cache: String,
}

struct State {
    nodes: HashMap<i32, NodeDesc>,
    tensors: HashMap<TensorId, TensorDesc>,
    known: HashMap<TensorId, Vec<f32>>,
    report: GpuReport,
}

/// The delegate. `base` must stay the first field: the `TfLiteDelegate*` handed out is a
/// pointer to it, and `base.data_` points back to the whole struct.
#[repr(C)]
pub struct GpuDelegate {
    pub base: TfLiteDelegate,
    settings: Settings,
    env: ClEnv,
    tuner: Mutex<Tuner>,
    state: Mutex<State>,
}

/// Addresses of the live delegates (how a `TfLiteDelegate*` is recognised as ours).
static LIVE: Mutex<std::collections::BTreeSet<usize>> = Mutex::new(std::collections::BTreeSet::new());

impl Drop for GpuDelegate {
    fn drop(&mut self) {
        LIVE.lock().remove(&(self as *mut GpuDelegate as usize));
    }
}

const KERNEL_NAME: &core::ffi::CStr = c"TfLiteGpuDelegateV2";

impl GpuDelegate {
    /// Opens OpenCL and builds the kernels; the error says why no delegate can exist.
    pub fn create(settings: Settings) -> Result<Box<GpuDelegate>> {
        let env = ClEnv::open()?;
        let scope = "tflite-rs-gpu-tuning";
        let (cache, status) = match &settings.cache_path {
            Some(p) => TuneCache::load(p, scope),
            None => (TuneCache::new(scope), LoadStatus::Missing),
        };
        let cache_note = match (&settings.cache_path, status) {
            (None, _) => "off".to_string(),
            (Some(p), s) => format!("{} ({s:?})", p.display()),
        };
        let tuner = Tuner::new(TunerConfig::for_level(settings.level), env.info, &env.device_id, &env.driver, cache);
        let report = GpuReport {
            device: env.device_id.clone(),
            program_build_ns: env.build_ns,
            cache: cache_note,
            ..Default::default()
        };
        let mut d = Box::new(GpuDelegate {
            base: TfLiteDelegate {
                data_: core::ptr::null_mut(),
                Prepare: Some(delegate_prepare),
                CopyFromBufferHandle: None,
                CopyToBufferHandle: None,
                FreeBufferHandle: None,
                // As TFLite's GPU delegate (our profiler times the delegate kernel as one op).
                flags: TfLiteDelegateFlags::kTfLiteDelegateFlagsPerOperatorProfiling as i64,
                opaque_delegate_builder: core::ptr::null_mut(),
            },
            settings,
            env,
            tuner: Mutex::new(tuner),
            state: Mutex::new(State { nodes: HashMap::new(), tensors: HashMap::new(), known: HashMap::new(), report }),
        });
        let me: *mut GpuDelegate = &mut *d;
        d.base.data_ = me.cast();
        LIVE.lock().insert(me as usize);
        Ok(d)
    }

    /// The delegate behind a `TfLiteDelegate*` made by [`GpuDelegate::create`], if it is one.
    ///
    /// # Safety
    /// `d` is NULL or a live `TfLiteDelegate`.
    pub unsafe fn from_raw<'a>(d: *const TfLiteDelegate) -> Option<&'a GpuDelegate> {
        // Only addresses handed out by `create` and not yet dropped are ours; nothing is
        // read through any other pointer.
        if d.is_null() || !LIVE.lock().contains(&(d as usize)) {
            return None;
        }
        // SAFETY: a live GpuDelegate starts with its `base` (repr(C), first field).
        Some(unsafe { &*(d as *const GpuDelegate) })
    }

    pub fn report(&self) -> GpuReport {
        let mut r = self.state.lock().report.clone();
        r.tune = self.tuner.lock().stats;
        r
    }

    fn save_cache(&self) -> Result<()> {
        if let Some(p) = &self.settings.cache_path {
            // The serialization directory may not exist yet: make it (TFLite's delegate
            // fails Prepare there and falls back to the CPU).
            if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| Error::new(format!("creating the tuning cache directory {}: {e}", dir.display())))?;
            }
            self.tuner
                .lock()
                .save_cache(p)
                .map_err(|e| Error::new(format!("writing the tuning cache {}: {e}", p.display())))?;
        }
        Ok(())
    }

    pub fn cache_path(&self) -> Option<PathBuf> {
        self.settings.cache_path.clone()
    }
}

/// Chooses nodes and replaces them with delegate kernels.
unsafe extern "C" fn delegate_prepare(context: *mut TfLiteContext, delegate: *mut TfLiteDelegate) -> TfLiteStatus {
    let r = crate::ffi::catch_panic("TfLiteGpuDelegate Prepare", || {
        // SAFETY: the runtime passes the live context and this delegate.
        unsafe { prepare(context, delegate) }
    });
    match r {
        Ok(Ok(())) => TfLiteStatus::kTfLiteOk,
        Ok(Err(e)) => {
            // SAFETY: live context.
            unsafe { report(context, &format!("TfLiteGpuDelegate Prepare: {e}")) };
            TfLiteStatus::kTfLiteError
        }
        Err(panic) => {
            // SAFETY: live context.
            unsafe { report(context, &panic) };
            TfLiteStatus::kTfLiteError
        }
    }
}

/// # Safety
/// `context` is live and in delegate Prepare; `delegate` was made by `GpuDelegate::create`.
unsafe fn prepare(context: *mut TfLiteContext, delegate: *mut TfLiteDelegate) -> Result<()> {
    // SAFETY: by the caller's contract.
    let me = unsafe { GpuDelegate::from_raw(delegate) }.ok_or_else(|| Error::new("not a GPU delegate"))?;
    // SAFETY: in Prepare.
    let plan = unsafe { context::execution_plan(context) }?;
    let mut nodes = Vec::new();
    for &i in &plan {
        // SAFETY: in Prepare; `i` comes from the execution plan.
        nodes.push(unsafe { context::node(context, i) }?);
    }
    // SAFETY: live context.
    let tensors = unsafe { context::tensors_of(context, &nodes) }?;
    // DEQUANTIZE of a constant is known before any Invoke (fp16 weights).
    let dq = crate::abi::builtin_ops::TfLiteBuiltinOperator::kTfLiteBuiltinDequantize as i32;
    let mut known = HashMap::new();
    for n in nodes.iter().filter(|n| n.op == dq && n.inputs.len() == 1 && n.outputs.len() == 1) {
        if let Some(Ok(v)) = tensors.get(&n.inputs[0]).map(dequantize) {
            known.insert(n.outputs[0], v);
        }
    }
    let mut lowering = Lowering::new(&tensors, &known);
    let supported: Vec<i32> = nodes.iter().filter(|n| lowering.add_node(n).is_ok()).map(|n| n.index).collect();
    drop(lowering);
    let chosen = largest_partitions(context, &supported, me.settings.max_partitions)?;
    {
        let mut st = me.state.lock();
        st.nodes = nodes.into_iter().map(|n| (n.index, n)).collect();
        st.tensors = tensors;
        st.known = known;
        st.report.nodes_total = plan.len();
    }
    if chosen.is_empty() {
        return Ok(());
    }
    let reg = TfLiteRegistration {
        init: Some(kernel_init),
        free: Some(kernel_free),
        prepare: Some(kernel_prepare),
        invoke: Some(kernel_invoke),
        profiling_string: None,
        builtin_code: crate::abi::builtin_ops::TfLiteBuiltinOperator::kTfLiteBuiltinDelegate as i32,
        custom_name: KERNEL_NAME.as_ptr(),
        version: 1,
        registration_external: core::ptr::null_mut(),
        async_kernel: None,
        inplace_operator: 0,
    };
    let list =
        crate::abi::arrays::OwnedIntArray::new(&chosen).ok_or_else(|| Error::new("node list allocation failed"))?;
    // SAFETY: live context in Prepare.
    let replace = unsafe { (*context).ReplaceNodeSubsetsWithDelegateKernels }
        .ok_or_else(|| Error::new("ReplaceNodeSubsetsWithDelegateKernels is missing"))?;
    // SAFETY: a valid registration, a live node list and this delegate.
    match unsafe { replace(context, reg, list.as_ptr(), delegate) } {
        TfLiteStatus::kTfLiteOk => Ok(()),
        _ => Err(Error::new("replacing the nodes with GPU kernels failed")),
    }
}

/// TFLite's GetOpsToReplace: the supported nodes of the `max` largest partitions.
fn largest_partitions(context: *mut TfLiteContext, supported: &[i32], max: usize) -> Result<Vec<i32>> {
    if supported.is_empty() {
        return Ok(Vec::new());
    }
    let list =
        crate::abi::arrays::OwnedIntArray::new(supported).ok_or_else(|| Error::new("node list allocation failed"))?;
    // SAFETY: live context in Prepare.
    let preview = unsafe { (*context).PreviewDelegatePartitioning }
        .ok_or_else(|| Error::new("PreviewDelegatePartitioning is missing"))?;
    let mut params: *mut TfLiteDelegateParams = core::ptr::null_mut();
    let mut count = 0;
    // SAFETY: valid out-pointers; the runtime owns the returned array.
    if unsafe { preview(context, list.as_ptr(), &mut params, &mut count) } != TfLiteStatus::kTfLiteOk {
        crate::bail!("PreviewDelegatePartitioning failed");
    }
    let mut parts: Vec<Vec<i32>> = (0..count.max(0) as usize)
        // SAFETY: `count` params returned by the runtime, each with a live node array.
        .map(|i| unsafe { context::ints((*params.add(i)).nodes_to_replace) })
        .collect();
    parts.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let mut chosen: Vec<i32> = parts.into_iter().take(max).flatten().collect();
    chosen.sort_unstable();
    Ok(chosen)
}

/// Per-partition kernel state (the node's `user_data`).
struct Kernel {
    partition: Partition,
    delegate: *const GpuDelegate,
    /// Canonical shapes the partition was built for (checked in Prepare).
    shapes: Vec<(TensorId, Vec<i32>)>,
}

unsafe extern "C" fn kernel_init(context: *mut TfLiteContext, buffer: *const c_char, _length: usize) -> *mut c_void {
    let r = crate::ffi::catch_panic("TfLiteGpuDelegate Init", || {
        // SAFETY: for delegate kernels the runtime passes a live TfLiteDelegateParams.
        unsafe { init(buffer as *const TfLiteDelegateParams) }
    });
    match r {
        Ok(Ok((k, warning))) => {
            if let Some(w) = warning {
                // SAFETY: live context.
                unsafe { report(context, &format!("TfLiteGpuDelegate Init: warning: {w}")) };
            }
            Box::into_raw(Box::new(k)).cast()
        }
        Ok(Err(e)) => {
            // SAFETY: live context.
            unsafe { report(context, &format!("TfLiteGpuDelegate Init: {e}")) };
            core::ptr::null_mut()
        }
        Err(panic) => {
            // SAFETY: live context.
            unsafe { report(context, &panic) };
            core::ptr::null_mut()
        }
    }
}

/// The kernel, and a warning when the tuning cache could not be written (the results
/// then last only as long as the delegate: a warning, never a failure).
///
/// # Safety
/// `params` is NULL or a live `TfLiteDelegateParams` of a GPU delegate.
unsafe fn init(params: *const TfLiteDelegateParams) -> Result<(Kernel, Option<String>)> {
    let t0 = Instant::now();
    // SAFETY: by the caller's contract.
    let p = unsafe { params.as_ref() }.ok_or_else(|| Error::new("no delegate params"))?;
    // SAFETY: the params' delegate is the one whose Prepare replaced these nodes.
    let me = unsafe { GpuDelegate::from_raw(p.delegate) }.ok_or_else(|| Error::new("not a GPU delegate"))?;
    // SAFETY: live arrays of the params.
    let (ids, inputs, outputs) =
        unsafe { (context::ints(p.nodes_to_replace), context::ints(p.input_tensors), context::ints(p.output_tensors)) };
    let mut st = me.state.lock();
    let nodes: Vec<NodeDesc> = ids
        .iter()
        .map(|i| st.nodes.get(i).cloned().ok_or_else(|| Error::new(format!("node {i} was not seen in Prepare"))))
        .collect::<Result<_>>()?;
    let mut lowering = Lowering::new(&st.tensors, &st.known);
    for n in &nodes {
        lowering.add_node(n).map_err(|e| Error::new(format!("node {}: {e}", n.index)))?;
    }
    let (gtensors, ops) = (lowering.gtensors, lowering.ops);
    let keep: HashSet<TensorId> = outputs.iter().copied().collect();
    let (ops, fstats) = fuse::fuse(ops, &gtensors, &keep);
    let memory = plan::plan(&ops, &gtensors, &inputs, &outputs)?;
    let partition = {
        let mut tuner = me.tuner.lock();
        Partition::build(&me.env, &mut tuner, &ops, &gtensors, &memory, &inputs, &outputs)?
    };
    let shapes =
        inputs.iter().chain(&outputs).filter_map(|t| st.tensors.get(t).map(|d| (*t, d.dims.clone()))).collect();
    let r = &mut st.report;
    r.partitions += 1;
    r.nodes_delegated += nodes.len();
    r.launches += fstats.launches_after;
    r.launches_unfused += fstats.launches_before;
    r.arena_bytes += partition.arena_bytes;
    r.unshared_bytes += memory.unshared * 4 + (memory.total - memory.planned) * 4;
    drop(st);
    let warning = me.save_cache().err().map(|e| format!("{e}; the tuning results are not kept for the next run"));
    me.state.lock().report.init_ns += t0.elapsed().as_nanos() as u64;
    Ok((Kernel { partition, delegate: me, shapes }, warning))
}

unsafe extern "C" fn kernel_free(context: *mut TfLiteContext, buffer: *mut c_void) {
    if !buffer.is_null() {
        // SAFETY: live context.
        let report_panic = |panic: &str| unsafe { report(context, panic) };
        crate::ffi::guard("TfLiteGpuDelegate Free", (), report_panic, || {
            // SAFETY: made by Box::into_raw in kernel_init; the runtime frees it once.
            drop(unsafe { Box::from_raw(buffer.cast::<Kernel>()) })
        });
    }
}

/// # Safety
/// `node` is NULL or a live node whose user_data is NULL or a `Kernel`.
unsafe fn kernel_of<'a>(node: *mut TfLiteNode) -> Result<&'a mut Kernel> {
    // SAFETY: by the caller's contract.
    let n = unsafe { node.as_mut() }.ok_or_else(|| Error::new("no node"))?;
    // SAFETY: user_data is what kernel_init returned.
    unsafe { n.user_data.cast::<Kernel>().as_mut() }.ok_or_else(|| Error::new("the GPU partition failed to initialise"))
}

unsafe extern "C" fn kernel_prepare(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus {
    let r = crate::ffi::catch_panic("TfLiteGpuDelegate Prepare", || -> Result<()> {
        // SAFETY: the runtime passes this kernel's live node.
        let k = unsafe { kernel_of(node) }?;
        for (t, dims) in &k.shapes {
            // SAFETY: live context; the index is checked.
            let tp = unsafe { &*context::tensor_ptr(context, *t)? };
            // SAFETY: the tensor's live shape.
            if unsafe { context::ints(tp.dims) } != *dims {
                crate::bail!("tensor {t} changed shape after the GPU delegate was applied");
            }
        }
        Ok(())
    });
    finish(context, "Prepare", r)
}

/// `r` is the step's result, or the report of its panic.
fn finish(context: *mut TfLiteContext, what: &str, r: std::result::Result<Result<()>, String>) -> TfLiteStatus {
    let msg = match r {
        Ok(Ok(())) => return TfLiteStatus::kTfLiteOk,
        Ok(Err(e)) => format!("TfLiteGpuDelegate {what}: {e}"),
        Err(panic) => panic,
    };
    // SAFETY: live context from the runtime.
    unsafe { report(context, &msg) };
    TfLiteStatus::kTfLiteError
}

unsafe extern "C" fn kernel_invoke(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus {
    let r = crate::ffi::catch_panic("TfLiteGpuDelegate Invoke", || -> Result<()> {
        // SAFETY: the runtime passes this kernel's live node.
        let k = unsafe { kernel_of(node) }?;
        // SAFETY: the delegate outlives the interpreters it is applied to (TFLite contract).
        let me = unsafe { &*k.delegate };
        let bytes = |t: TensorId, n: usize| -> Result<*mut TfLiteTensor> {
            // SAFETY: live context; index checked.
            let tp = unsafe { context::tensor_ptr(context, t) }?;
            // SAFETY: a live tensor.
            let (raw, len) = unsafe { ((*tp).data.raw, (*tp).bytes) };
            if raw.is_null() || len != n * 4 {
                crate::bail!("tensor {t} has no data or {len} bytes instead of {}", n * 4);
            }
            Ok(tp)
        };
        let mut ins: Vec<&[u8]> = Vec::new();
        for (t, n) in k.partition.inputs() {
            let tp = bytes(t, n)?;
            // SAFETY: checked above: `bytes` readable bytes at `data.raw`.
            ins.push(unsafe { core::slice::from_raw_parts((*tp).data.raw as *const u8, n * 4) });
        }
        let mut outs: Vec<&mut [u8]> = Vec::new();
        let out_list: Vec<(TensorId, usize)> = k.partition.outputs().collect();
        for (t, n) in out_list {
            let tp = bytes(t, n)?;
            // SAFETY: checked above; output tensors are distinct from inputs and from each
            // other (a partition's outputs are produced inside it), so the borrows do not
            // alias.
            outs.push(unsafe { core::slice::from_raw_parts_mut((*tp).data.raw as *mut u8, n * 4) });
        }
        k.partition.run(&me.env, &ins, &mut outs)
    });
    finish(context, "Invoke", r)
}

/// Creates the delegate, or says why not.
pub fn create(options: &TfLiteGpuDelegateOptionsV2) -> Result<Box<GpuDelegate>> {
    // SAFETY: the C caller passes NULL or NUL-terminated strings.
    let settings = unsafe { Settings::from_options(options) }?;
    GpuDelegate::create(settings)
}
