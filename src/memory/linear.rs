//! The trivial twin of the arena planner: no reuse at all.
//!
//! Every planned tensor gets its own 64-byte-aligned slot, in tensor-index order,
//! and the footprint is the sum of the aligned sizes (TFLite's `SimplePlanner`
//! and tflite-micro's `LinearMemoryPlanner` make the same trade). It uses the same
//! lifetimes and the same set of planned tensors as [`ArenaPlanner`], so the two
//! are directly comparable: the arena planner must never need more bytes, and
//! any plan it makes must be at least as safe as this obviously-safe one.
//!
//! The trailing padding of the last slot is counted, so that
//! `ArenaPlanner <= LinearPlanner` holds exactly (the arena planner's
//! high-water mark never exceeds the sum of aligned sizes).
//!
//! [`ArenaPlanner`]: super::ArenaPlanner

use super::DEFAULT_TENSOR_ALIGNMENT;
use super::plan::{MemoryPlan, PlanRequest, TensorKind};
use super::planner::{MemoryPlanner, compute_lifetimes, finish_plan};
use super::simple_arena::align_to;
use crate::error::{Error, Result};

/// No-reuse planner (debugging, ASan-style runs, and the reference the arena
/// planner is tested against).
#[derive(Clone, Copy, Debug, Default)]
pub struct LinearPlanner;

impl MemoryPlanner for LinearPlanner {
    fn name(&self) -> &'static str {
        "linear"
    }

    fn plan(&self, req: &PlanRequest<'_>) -> Result<MemoryPlan> {
        let lifetimes = compute_lifetimes(req)?;
        let n = req.tensor_bytes.len();
        let mut arena_offsets = vec![None; n];
        let mut persistent_offsets = vec![None; n];
        let mut arena_end = 0usize;
        let mut persistent_end = 0usize;
        for t in 0..n {
            let size = req.tensor_bytes[t];
            if lifetimes.alloc[t].is_none() || size == 0 {
                continue;
            }
            let (end, slot) = match req.tensor_kind[t] {
                TensorKind::Arena => (&mut arena_end, &mut arena_offsets[t]),
                TensorKind::Persistent => (&mut persistent_end, &mut persistent_offsets[t]),
                TensorKind::NotPlanned => continue,
            };
            let next = align_to(size, DEFAULT_TENSOR_ALIGNMENT)
                .and_then(|aligned| end.checked_add(aligned))
                .ok_or_else(|| Error::new(format!("memory plan: linear arena overflow at tensor {t}")))?;
            *slot = Some(*end);
            *end = next;
        }
        Ok(finish_plan(req, lifetimes, arena_offsets, persistent_offsets, arena_end, persistent_end))
    }
}
