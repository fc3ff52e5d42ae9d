//! The interpreter: every subgraph of a model with its tensors, nodes and execution plan,
//! plus signatures and the error reporter.
//!
//! - `subgraph.rs`: the tensor table (the C-visible `TfLiteTensor` array), nodes,
//!   prepare/invoke, arena allocation through `crate::memory`.
//! - `builder.rs`: model + resolver → subgraphs (TFLite's InterpreterBuilder).
//! - `context.rs`: the functions stored in `TfLiteContext` (ResizeTensor, ReportError, ...).
//! - `node_ops.rs`: calling a node's init/prepare/invoke/free, for plain registrations and
//!   for `TfLiteOperator`s defined from C.

pub mod builder;
pub mod context;
pub mod node_ops;
pub mod subgraph;

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
}

impl Default for InterpreterConfig {
    fn default() -> Self {
        InterpreterConfig {
            num_threads: -1,
            reporter: stderr_reporter(),
            preserve_intermediates: false,
            enable_cancellation: false,
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
    // Declared last so it is dropped last: subgraphs point into the model's buffers.
    _model: Arc<Model>,
}

impl Interpreter {
    /// Builds every subgraph of `model`, resolving each operator with `resolver`.
    pub fn new(model: Arc<Model>, resolver: &dyn OpFinder, config: InterpreterConfig) -> Result<Interpreter> {
        let cancelled = Arc::new(AtomicBool::new(false));
        let subgraphs = builder::build_subgraphs(&model, resolver, &config, &cancelled)?;
        let signatures = builder::read_signatures(&model);
        let mut interp = Interpreter { subgraphs, signatures, config, cancelled, _model: model };
        interp.link_subgraphs();
        Ok(interp)
    }

    /// Gives every subgraph a pointer to its siblings (for control-flow kernels and
    /// AcquireSubgraphContext); re-done whenever the set changes.
    fn link_subgraphs(&mut self) {
        let ptrs: Vec<*mut Subgraph> = self.subgraphs.iter_mut().map(|s| &mut **s as *mut Subgraph).collect();
        for s in &mut self.subgraphs {
            s.set_siblings(ptrs.clone());
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
        self.primary_mut().allocate_tensors()
    }

    /// Runs the primary subgraph.
    pub fn invoke(&mut self) -> Result<()> {
        self.cancelled.store(false, Ordering::SeqCst);
        self.primary_mut().invoke()
    }

    /// Applies `delegate` to the primary subgraph (see `Subgraph::apply_delegate`).
    pub fn modify_graph_with_delegate(&mut self, delegate: *mut crate::abi::types::TfLiteDelegate) -> Result<()> {
        self.primary_mut().apply_delegate(delegate)
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
