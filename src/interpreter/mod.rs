//! The interpreter: every subgraph of a model with its tensors, nodes and execution plan,
//! plus signatures and the error reporter.
//!
//! - `subgraph.rs`: the tensor table (the C-visible `TfLiteTensor` array), nodes,
//!   prepare/invoke, arena allocation through `crate::memory`.
//! - `builder.rs`: model + resolver → subgraphs (TFLite's InterpreterBuilder).
//! - `context.rs`: the functions stored in `TfLiteContext` (ResizeTensor, ReportError, ...).
//! - `node_ops.rs`: calling a node's init/prepare/invoke/free, for plain registrations and
//!   for `TfLiteOperator`s defined from C.
//! - `delegation.rs`: applying delegates (partitioning, delegate nodes, undo/redo,
//!   buffer handles).

pub mod builder;
pub mod context;
pub mod control_flow;
pub mod delegation;
mod fusion;
pub mod node_ops;
pub mod subgraph;
mod thread_choice;

use crate::error::{Error, Result};
use crate::model::Model;
use crate::resolver::OpFinder;
use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub use subgraph::{MemoryStats, Subgraph};

/// Where error messages go. The default prints to stderr, as TFLite's default reporter.
pub type Reporter = Arc<dyn Fn(&str) + Send + Sync>;

/// The default reporter: one line on stderr per message.
pub fn stderr_reporter() -> Reporter {
    Arc::new(|msg: &str| eprintln!("ERROR: {msg}"))
}

/// Settings fixed at interpreter creation.
#[derive(Clone)]
pub struct InterpreterConfig {
    /// Threads kernels may use (-1: unset, as TFLite).
    pub num_threads: i32,
    /// Where errors are reported.
    pub reporter: Reporter,
    /// Keep every intermediate tensor alive (debugging; TFLite's preserve_all_tensors).
    pub preserve_intermediates: bool,
    /// Whether `cancel()` is honoured.
    pub enable_cancellation: bool,
    /// Fuse standalone float activations into their producers on the CPU (`fusion.rs`);
    /// on by default, off when the environment sets `TFLITE_RS_NO_FUSION=1`.
    pub fuse_activations: bool,
    /// Run a subgraph on one thread while timing shows that faster than the configured
    /// threads (`thread_choice.rs`); on by default, off when the environment sets
    /// `TFLITE_RS_FIXED_THREADS=1`.
    pub adaptive_threads: bool,
}

impl Default for InterpreterConfig {
    fn default() -> Self {
        InterpreterConfig {
            num_threads: -1,
            reporter: stderr_reporter(),
            preserve_intermediates: false,
            enable_cancellation: false,
            fuse_activations: std::env::var_os("TFLITE_RS_NO_FUSION").is_none_or(|v| v == "0"),
            adaptive_threads: std::env::var_os("TFLITE_RS_FIXED_THREADS").is_none_or(|v| v == "0"),
        }
    }
}

/// One signature: a named entry point into a subgraph.
pub struct SignatureInfo {
    pub key: CString,
    pub subgraph: usize,
    /// (input name, tensor index), in the model's order.
    pub inputs: Vec<(CString, i32)>,
    /// (output name, tensor index).
    pub outputs: Vec<(CString, i32)>,
}

/// A model ready to run.
pub struct Interpreter {
    // Subgraphs are boxed: each owns the `TfLiteContext` whose address C code holds.
    #[allow(clippy::vec_box, reason = "stable subgraph addresses")]
    subgraphs: Vec<Box<Subgraph>>,
    signatures: Vec<SignatureInfo>,
    config: InterpreterConfig,
    cancelled: Arc<AtomicBool>,
    /// If false (the default), `invoke` copies stale outputs back from their delegate
    /// buffer handles (`TfLiteSetAllowBufferHandleOutput`).
    allow_buffer_handle_output: bool,
    // Declared last so it is dropped last: subgraphs point into the model's buffers.
    _model: Arc<Model>,
}

impl Interpreter {
    /// Builds every subgraph of `model`, resolving each operator with `resolver`.
    pub fn new(model: Arc<Model>, resolver: &dyn OpFinder, config: InterpreterConfig) -> Result<Interpreter> {
        // How control-flow and variable kernels reach their subgraph (the kernel layer
        // knows only its trait).
        crate::kernels::graph::install(control_flow::calls_of);
        let cancelled = Arc::new(AtomicBool::new(false));
        let subgraphs = builder::build_subgraphs(&model, resolver, &config, &cancelled)?;
        let signatures = builder::read_signatures(&model);
        let mut interp =
            Interpreter { subgraphs, signatures, config, cancelled, allow_buffer_handle_output: false, _model: model };
        interp.link_subgraphs();
        Ok(interp)
    }

    /// Gives every subgraph a pointer to its siblings (for control-flow kernels and
    /// AcquireSubgraphContext); re-done whenever the set changes.
    fn link_subgraphs(&mut self) {
        let ptrs: Vec<*mut Subgraph> = self.subgraphs.iter_mut().map(|s| &mut **s as *mut Subgraph).collect();
        let shared = std::sync::Arc::new(std::sync::Mutex::new(crate::kernels::resources::SharedState::default()));
        for s in &mut self.subgraphs {
            s.set_siblings(ptrs.clone());
            s.shared = shared.clone();
        }
    }

    /// The primary subgraph (index 0).
    pub fn primary(&self) -> &Subgraph {
        &self.subgraphs[0]
    }

    /// The primary subgraph, mutably.
    pub fn primary_mut(&mut self) -> &mut Subgraph {
        &mut self.subgraphs[0]
    }

    /// Number of subgraphs.
    pub fn subgraph_count(&self) -> usize {
        self.subgraphs.len()
    }

    /// Subgraph `i`.
    pub fn subgraph_mut(&mut self, i: usize) -> Option<&mut Subgraph> {
        self.subgraphs.get_mut(i).map(|b| &mut **b)
    }

    /// The model's signatures.
    pub fn signatures(&self) -> &[SignatureInfo] {
        &self.signatures
    }

    /// Resizes input tensor `tensor_index` of the primary subgraph (takes effect at the
    /// next `allocate_tensors`).
    pub fn resize_input_tensor(&mut self, tensor_index: i32, dims: &[i32]) -> Result<()> {
        self.primary_mut().resize_input_tensor(tensor_index, dims)
    }

    /// Plans and allocates memory for the primary subgraph.
    pub fn allocate_tensors(&mut self) -> Result<()> {
        let planned = self.primary_mut().allocate_tensors();
        // Prepare packed the weights: the huge page they end in goes back in part.
        crate::microkernels::packed::release_spare();
        planned
    }

    /// Runs the primary subgraph; then, unless buffer-handle outputs are allowed, makes
    /// every output readable (copies stale ones back from their delegates).
    pub fn invoke(&mut self) -> Result<()> {
        self.cancelled.store(false, Ordering::SeqCst);
        let ran = self.primary_mut().invoke();
        // Some kernels pack at their first Invoke (a no-op once nothing new is packed).
        crate::microkernels::packed::release_spare();
        ran?;
        if !self.allow_buffer_handle_output {
            for k in 0..self.primary().outputs().len() {
                let o = self.primary().outputs()[k];
                if o >= 0 {
                    self.primary_mut().ensure_tensor_data_is_readable(o)?;
                }
            }
        }
        Ok(())
    }

    /// `invoke`, falling back to the CPU when it fails with delegates applied (TFLite's
    /// `InvokeWithCPUFallback`): the inputs are kept, every delegate is removed and the
    /// graph runs again. Returns `Ok(true)` when that fallback ran (successfully).
    pub fn invoke_with_cpu_fallback(&mut self) -> Result<bool> {
        match self.invoke() {
            Ok(()) => return Ok(false),
            Err(e) if e.status == crate::abi::types::TfLiteStatus::kTfLiteCancelled || !self.has_delegates() => {
                return Err(e);
            }
            Err(e) => self.report(&e.message),
        }
        self.report("Invoke() failed in the presence of delegation. Retrying without.");
        let inputs = self.primary().inputs().to_vec();
        let mut saved = Vec::with_capacity(inputs.len());
        for &i in &inputs {
            self.primary_mut().ensure_tensor_data_is_readable(i)?;
            let t = self.primary().tensor(i).ok_or_else(|| Error::new(format!("input tensor {i} out of range")))?;
            let p = t.data_ptr() as *const u8;
            saved.push(if p.is_null() {
                Vec::new()
            } else {
                // SAFETY: a live tensor's data holds `bytes` readable bytes.
                unsafe { std::slice::from_raw_parts(p, t.bytes) }.to_vec()
            });
        }
        self.remove_all_delegates()?;
        for (&i, bytes) in inputs.iter().zip(&saved) {
            let Some(t) = self.primary_mut().tensor_ptr(i) else { continue };
            // SAFETY: a live tensor; we copy at most its `bytes` into its data.
            unsafe {
                let dst = (*t).data_ptr() as *mut u8;
                if !dst.is_null() {
                    core::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len().min((*t).bytes));
                }
            }
        }
        self.invoke()?;
        Ok(true)
    }

    /// Applies `delegate` to every subgraph that is not marked skippable (TFLite's
    /// `Interpreter::ModifyGraphWithDelegate`). On kTfLiteDelegateError every delegate is
    /// removed from every subgraph, leaving the model runnable on the CPU.
    ///
    /// # Safety
    /// `delegate` must be NULL or a live delegate that outlives the interpreter.
    pub unsafe fn modify_graph_with_delegate(
        &mut self,
        delegate: *mut crate::abi::types::TfLiteDelegate,
    ) -> Result<()> {
        let mut result = Ok(());
        for sg in &mut self.subgraphs {
            if sg.is_delegation_skippable() || sg.name().to_bytes().starts_with(b"VALIDATION:") {
                continue;
            }
            // SAFETY: forwarded contract.
            result = unsafe { sg.modify_graph_with_delegate(delegate) };
            if result.is_err() {
                break;
            }
        }
        if let Err(e) = &result
            && e.status == crate::abi::types::TfLiteStatus::kTfLiteDelegateError
        {
            self.remove_all_delegates()?;
        }
        result
    }

    /// Removes every delegate from every subgraph.
    pub fn remove_all_delegates(&mut self) -> Result<()> {
        for sg in &mut self.subgraphs {
            sg.remove_all_delegates()?;
        }
        Ok(())
    }

    /// True if a delegate is applied to the primary subgraph.
    pub fn has_delegates(&self) -> bool {
        self.primary().has_delegates()
    }

    /// Whether `invoke` may leave outputs in delegate buffers (default false).
    pub fn set_allow_buffer_handle_output(&mut self, allow: bool) {
        self.allow_buffer_handle_output = allow;
    }

    /// Zeroes every variable tensor of every subgraph.
    pub fn reset_variable_tensors(&mut self) -> Result<()> {
        for s in &mut self.subgraphs {
            s.reset_variable_tensors()?;
        }
        Ok(())
    }

    /// Asks a running `invoke` to stop at the next node boundary.
    pub fn cancel(&self) -> Result<()> {
        if !self.config.enable_cancellation {
            return Err(Error::new("Cancellation is not enabled for this interpreter"));
        }
        self.cancelled.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// The shared cancellation flag (signature runners use it too).
    pub fn cancellation_flag(&self) -> Arc<AtomicBool> {
        self.cancelled.clone()
    }

    /// The configuration the interpreter was built with.
    pub fn config(&self) -> &InterpreterConfig {
        &self.config
    }

    /// Reports a message through the interpreter's reporter.
    pub fn report(&self, msg: &str) {
        (self.config.reporter)(msg)
    }
}
