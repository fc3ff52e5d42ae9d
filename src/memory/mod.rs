//! Static memory planning for a subgraph: TFLite's `ArenaPlanner`.
//!
//! Intermediate tensors are not allocated one by one. Before the first `Invoke`,
//! the planner works out when each tensor is live and gives it an offset in one
//! big arena, reusing the bytes of tensors that are dead by then; the interpreter
//! then makes one allocation per arena and points each tensor at
//! `base + offset`. The read-write arena holds activations and kernel
//! temporaries; a second, persistent arena holds tensors that are never freed
//! (variables and other `kTfLiteArenaRwPersistent` tensors).
//!
//! Modules, one job each:
//!
//! - [`plan`]: the request and result types, and the plan's ASCII timeline.
//! - [`planner`]: lifetimes from reference counts, TFLite's placement order, and
//!   [`ArenaPlanner`] / [`plan_memory`] (the step-by-step algorithm is there).
//! - [`simple_arena`]: TFLite's `SimpleMemoryArena`, the best-fit offset picker.
//! - [`linear`]: [`LinearPlanner`], the no-reuse twin used as a reference.
//! - [`lower_bound`]: the max-load lower bound the arena is judged against.
//! - [`verify`]: [`check_no_overlap`], an independent validity check for plans.
//! - [`aligned_buffer`]: [`AlignedBuffer`], the 64-byte-aligned memory a plan is
//!   committed into.
//!
//! This module depends on nothing else in the crate but its error type, so it can be
//! tested and reused on its own.
//!
//! Typical use:
//!
//! ```ignore
//! let plan = plan_memory(&request)?;
//! let mut arena = AlignedBuffer::new(plan.arena_bytes)?;
//! for t in 0..num_tensors {
//!     if let Some(off) = plan.arena_offsets[t] {
//!         tensor[t].data = arena.ptr_at(off, sizes[t])?;
//!     }
//! }
//! ```

pub mod aligned_buffer;
pub mod linear;
pub mod lower_bound;
pub mod plan;
pub mod plan_svg;
pub mod planner;
pub mod simple_arena;
pub mod verify;

#[cfg(test)]
mod test_graphs;

/// Alignment of every tensor offset and of each arena's base
/// (TFLite's `kDefaultTensorAlignment` and `kDefaultArenaAlignment`).
pub const DEFAULT_TENSOR_ALIGNMENT: usize = 64;

pub use aligned_buffer::AlignedBuffer;
pub use linear::LinearPlanner;
pub use lower_bound::{LiveInterval, max_live_bytes};
pub use plan::{MemoryPlan, NodeTensors, PlanRequest, TensorKind};
pub use planner::{ArenaPlanner, Lifetimes, MemoryPlanner, compute_lifetimes, plan_memory, plan_memory_classic};
pub use simple_arena::{ArenaAlloc, LAST_NODE_FOREVER, SimpleMemoryArena, align_to};
pub use verify::check_no_overlap;
