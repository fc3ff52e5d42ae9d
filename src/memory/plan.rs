//! The planner's input ([`PlanRequest`]) and output ([`MemoryPlan`]) types, and the
//! plan's debug view ([`MemoryPlan::timeline`]).
//!
//! A request describes one subgraph the way TFLite's `GraphInfo` does for its
//! `ArenaPlanner`: the byte size and allocation kind of every tensor, the nodes in
//! execution-plan order, and the subgraph's inputs, outputs and variables. Tensor
//! indices are `i32` because that is how TFLite stores them; `-1`
//! (`kTfLiteOptionalTensor`) means "optional input, absent".

use std::fmt;

use super::DEFAULT_TENSOR_ALIGNMENT;

/// Where a tensor's memory comes from, as far as the planner is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorKind {
    /// `kTfLiteArenaRw`: planned into the read-write arena, memory reused once the
    /// tensor is dead.
    Arena,
    /// `kTfLiteArenaRwPersistent` (variables, kernel-owned state such as a
    /// DEQUANTIZE of constant weights): planned into the persistent arena, never
    /// freed.
    Persistent,
    /// Everything the planner leaves alone: constants (`kTfLiteMmapRo`,
    /// `kTfLitePersistentRo`), dynamic and custom tensors. They get no offset.
    NotPlanned,
}

/// The tensor lists of one node. Indices of `-1` are optional tensors that are
/// absent; they are skipped.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeTensors<'a> {
    pub inputs: &'a [i32],
    pub outputs: &'a [i32],
    /// `TfLiteNode::intermediates`. TFLite's ArenaPlanner never allocates them
    /// (kernels only read their quantization parameters), so they are validated
    /// and otherwise ignored, exactly like TFLite.
    pub intermediates: &'a [i32],
    /// Kernel scratch tensors: live only while their node runs.
    pub temporaries: &'a [i32],
    /// The node's `TfLiteRegistration::inplace_operator` bits (`kTfLiteInplaceOp*`):
    /// which inputs its output may share memory with. 0: none.
    pub inplace: u64,
}

/// Everything the planner needs to know about one subgraph.
#[derive(Clone, Copy, Debug)]
pub struct PlanRequest<'a> {
    /// Size in bytes of every tensor in the subgraph.
    pub tensor_bytes: &'a [usize],
    /// Allocation kind of every tensor; must have the same length as `tensor_bytes`.
    pub tensor_kind: &'a [TensorKind],
    /// The nodes, in execution-plan order. Node `i` of the plan is `nodes[i]`.
    pub nodes: &'a [NodeTensors<'a>],
    pub graph_inputs: &'a [i32],
    pub graph_outputs: &'a [i32],
    pub variables: &'a [i32],
    /// Keep graph inputs alive to the end of `Invoke` (TFLite interpreter: `true`).
    pub preserve_inputs: bool,
    /// Never free anything (debugging; TFLite interpreter: `false`).
    pub preserve_intermediates: bool,
    /// Per tensor: true when it must never share memory with another tensor
    /// (delegate buffer handles and the like), whatever the in-place rules say.
    /// Empty: no tensor is excluded.
    pub no_sharing: &'a [bool],
}

/// The result of planning: an offset per tensor in one of two arenas, plus the
/// lifetimes the plan was computed from.
///
/// `arena_bytes` is TFLite's high-water mark, `max(offset + size)` over the
/// read-write arena. Every offset is a multiple of [`DEFAULT_TENSOR_ALIGNMENT`];
/// the total itself is *not* rounded up (TFLite does not round it either, and the
/// arena base pointer is 64-byte aligned, so every tensor pointer is aligned).
/// This keeps the figure byte-comparable with LiteRT's arena size.
#[derive(Clone, PartialEq)]
pub struct MemoryPlan {
    /// Per tensor: offset in the read-write arena (kind `Arena`, size > 0, and the
    /// tensor is allocated by some node or is a graph input/variable).
    pub arena_offsets: Vec<Option<usize>>,
    /// Per tensor: offset in the persistent arena (kind `Persistent`, size > 0).
    pub persistent_offsets: Vec<Option<usize>>,
    /// High-water mark of the read-write arena.
    pub arena_bytes: usize,
    /// High-water mark of the persistent arena.
    pub persistent_bytes: usize,
    /// Max over nodes of the live read-write bytes (see `lower_bound.rs`).
    pub lower_bound_bytes: usize,
    /// Node at which each tensor becomes live (`None`: never allocated).
    /// Computed for every tensor, as TFLite does, including `NotPlanned` ones
    /// (e.g. a dynamic output still has a producing node); only planned kinds get
    /// offsets.
    pub alloc_node: Vec<Option<usize>>,
    /// Last node at which each tensor is live (`None`: never freed; always `None`
    /// for `Persistent` tensors).
    pub dealloc_node: Vec<Option<usize>>,
    /// Copy of the request's tensor sizes, for [`MemoryPlan::timeline`] and checks.
    pub tensor_bytes: Vec<usize>,
    /// Copy of the request's tensor kinds, for [`MemoryPlan::timeline`] and checks.
    pub tensor_kind: Vec<TensorKind>,
    /// Number of nodes in the execution plan.
    pub num_nodes: usize,
    /// Per tensor: the tensor whose memory it shares (in-place sharing, TFLite's
    /// `actual_tensor_id_`), or `None`. An alias has its root's offset and lifetime.
    pub alias_of: Vec<Option<usize>>,
}

/// Width of the liveness bar in [`MemoryPlan::timeline`]; longer plans are scaled.
const TIMELINE_COLUMNS: usize = 64;

impl MemoryPlan {
    /// Offset of `tensor` in whichever arena holds it, and which one.
    pub fn offset_of(&self, tensor: usize) -> Option<(TensorKind, usize)> {
        if let Some(Some(off)) = self.arena_offsets.get(tensor) {
            return Some((TensorKind::Arena, *off));
        }
        if let Some(Some(off)) = self.persistent_offsets.get(tensor) {
            return Some((TensorKind::Persistent, *off));
        }
        None
    }

    /// An ASCII picture of the plan: one row per planned tensor (read-write arena by
    /// offset, then the persistent arena), with its lifetime `[alloc, dealloc]`, its
    /// offset and size, and a bar showing the nodes at which it is live.
    pub fn timeline(&self) -> String {
        let steps = self.num_nodes.max(1);
        let cols = steps.min(TIMELINE_COLUMNS);
        let mut out = String::new();
        let ratio = if self.lower_bound_bytes > 0 {
            format!("{:.3}x", self.arena_bytes as f64 / self.lower_bound_bytes as f64)
        } else {
            "-".to_string()
        };
        out.push_str(&format!(
            "memory plan: arena {} B (lower bound {} B, {}), persistent {} B, {} nodes, \
             alignment {}\n",
            self.arena_bytes,
            self.lower_bound_bytes,
            ratio,
            self.persistent_bytes,
            self.num_nodes,
            DEFAULT_TENSOR_ALIGNMENT
        ));
        out.push_str(&format!(
            "{:<6} {:>6}  {:<16} {:>12} {:>12}  live (node 0..{})\n",
            "arena",
            "tensor",
            "[alloc,dealloc]",
            "offset",
            "size",
            steps - 1
        ));

        let mut rows: Vec<(u8, usize, usize)> = Vec::new(); // (arena rank, offset, tensor)
        for t in 0..self.tensor_kind.len() {
            match self.offset_of(t) {
                Some((TensorKind::Arena, off)) => rows.push((0, off, t)),
                Some((_, off)) => rows.push((1, off, t)),
                None => {
                    // Planned kinds that got no offset: size 0, or never allocated.
                    let kind = self.tensor_kind.get(t).copied();
                    if kind != Some(TensorKind::NotPlanned) && self.alloc_node.get(t).copied().flatten().is_some() {
                        rows.push((2, 0, t));
                    }
                }
            }
        }
        rows.sort_unstable();

        for (rank, off, t) in rows {
            let alloc = self.alloc_node.get(t).copied().flatten();
            let dealloc = self.dealloc_node.get(t).copied().flatten();
            let size = self.tensor_bytes.get(t).copied().unwrap_or(0);
            let arena = match rank {
                0 => "rw",
                1 => "pers",
                _ => "none",
            };
            let interval = format!(
                "[{}, {}]",
                alloc.map_or("-".to_string(), |a| a.to_string()),
                dealloc.map_or("end".to_string(), |d| d.to_string())
            );
            let offset = if rank == 2 { "-".to_string() } else { off.to_string() };
            let mut bar = String::with_capacity(cols);
            for c in 0..cols {
                // Column c covers nodes [c*steps/cols, (c+1)*steps/cols).
                let lo = c * steps / cols;
                let hi = ((c + 1) * steps / cols).max(lo + 1) - 1;
                let live = match alloc {
                    Some(a) => a <= hi && dealloc.is_none_or(|d| d >= lo),
                    None => false,
                };
                bar.push(if live { '#' } else { '.' });
            }
            out.push_str(&format!("{arena:<6} {t:>6}  {interval:<16} {offset:>12} {size:>12}  |{bar}|\n"));
        }
        out
    }
}

impl fmt::Debug for MemoryPlan {
    /// The timeline carries every field (offsets, lifetimes, sizes, totals), so
    /// `assert_eq!` failures on plans print something a human can read.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.timeline())
    }
}

impl fmt::Display for MemoryPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.timeline())
    }
}
