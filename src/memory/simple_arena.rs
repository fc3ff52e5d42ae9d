//! TFLite's `SimpleMemoryArena`: the offset-assignment core of the arena planner.
//!
//! The arena does not own memory; it only hands out offsets. Each allocation
//! records `(offset, size, first_node, last_node)`: the tensor occupies bytes
//! `[offset, offset + size)` while nodes `first_node..=last_node` run (both ends
//! inclusive, so a tensor freed at node `n` still conflicts with one allocated at
//! node `n`: the node that reads it last may be writing its own output).
//!
//! `allocate` is best fit:
//!
//! 1. Walk the existing allocations in offset order (`active` is kept sorted by
//!    offset; equal offsets keep insertion order, as `std::upper_bound` does).
//! 2. Skip any allocation whose node interval does not intersect the new one:
//!    its bytes are free for us.
//! 3. Keep `current`, the end of the highest conflicting allocation seen so far.
//!    Before each conflicting allocation there is a gap
//!    `[align(current), alloc.offset)`; if the new tensor fits and the gap is the
//!    smallest so far, remember it.
//! 4. If no gap fits, append at `align(current)`, i.e. just above every
//!    conflicting allocation (not necessarily at the arena's end).
//! 5. The high-water mark is `max(offset + size)`.
//!
//! Two details are kept exactly as TFLite has them, so that our offsets equal
//! TFLite's byte for byte:
//!
//! * The gap is compared as `alloc.offset - align(current)`, but *recorded* as
//!   `alloc.offset - current` (unaligned). A later gap with the same aligned
//!   size can therefore replace an earlier one when `current` was unaligned.
//! * Zero-sized requests get offset 0 and are not recorded.
//!
//! TFLite's loop also stops early when the recorded fit is 0. That cannot happen
//! for a non-empty tensor (a fitting gap is at least `size` bytes), so it is
//! omitted here.
//!
//! Where this is not optimal: placement is greedy in the caller's order, and the
//! gap search only looks below conflicting allocations. Offset planning is
//! NP-complete (dynamic storage allocation); shared/design/MEMORY.md measures how
//! far this lands from the lower bound on real models (0 to 6.5% on MediaPipe graphs,
//! up to 25% on adversarial interval sets).

use super::DEFAULT_TENSOR_ALIGNMENT;
use crate::error::{Error, Result};

/// `last_node` of an allocation that is never freed (graph outputs, variables,
/// everything in the persistent arena).
pub const LAST_NODE_FOREVER: usize = usize::MAX;

/// One placed tensor: `[offset, offset + size)` during nodes `first_node..=last_node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArenaAlloc {
    pub offset: usize,
    pub size: usize,
    pub first_node: usize,
    pub last_node: usize,
}

impl ArenaAlloc {
    /// Whether this allocation is live at some node of `first..=last`.
    pub fn overlaps_in_time(&self, first: usize, last: usize) -> bool {
        !(self.last_node < first || self.first_node > last)
    }
}

/// Rounds `offset` up to a multiple of `alignment` (TFLite's `AlignTo`).
/// `None` on overflow or a zero alignment.
pub fn align_to(offset: usize, alignment: usize) -> Option<usize> {
    let rem = offset.checked_rem(alignment)?;
    if rem == 0 { Some(offset) } else { offset.checked_add(alignment - rem) }
}

/// Offset planner for one arena (read-write or persistent).
#[derive(Clone, Debug, Default)]
pub struct SimpleMemoryArena {
    /// Placed allocations, sorted by offset (stable for equal offsets).
    active: Vec<ArenaAlloc>,
    high_water_mark: usize,
}

impl SimpleMemoryArena {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes needed to hold every allocation made so far: `max(offset + size)`.
    pub fn high_water_mark(&self) -> usize {
        self.high_water_mark
    }

    /// The non-empty allocations made so far, in offset order.
    pub fn allocations(&self) -> &[ArenaAlloc] {
        &self.active
    }

    /// Forgets every allocation (TFLite's `ClearPlan`).
    pub fn clear(&mut self) {
        self.active.clear();
        self.high_water_mark = 0;
    }

    /// Places `size` bytes live during nodes `first_node..=last_node` and returns
    /// the offset. `alignment` must be a power of two no larger than
    /// [`DEFAULT_TENSOR_ALIGNMENT`], because the arena's base pointer is only
    /// aligned that much (TFLite: `alignment <= arena_alignment_`).
    pub fn allocate(&mut self, size: usize, alignment: usize, first_node: usize, last_node: usize) -> Result<usize> {
        if !alignment.is_power_of_two() || alignment > DEFAULT_TENSOR_ALIGNMENT {
            crate::bail!("alignment {alignment} must be a power of two <= {DEFAULT_TENSOR_ALIGNMENT}");
        }
        if first_node > last_node {
            crate::bail!("empty node interval [{first_node}, {last_node}]");
        }
        if size == 0 {
            // TFLite: offset 0, not recorded; the tensor's data pointer stays NULL.
            return Ok(0);
        }
        let overflow = || Error::new(format!("arena offset overflow placing {size} bytes"));

        let mut best: Option<(usize, usize)> = None; // (offset, recorded fit)
        let mut current = 0usize;
        for alloc in &self.active {
            if !alloc.overlaps_in_time(first_node, last_node) {
                continue;
            }
            let aligned = align_to(current, alignment).ok_or_else(overflow)?;
            let end = aligned.checked_add(size).ok_or_else(overflow)?;
            if end <= alloc.offset {
                let gap = alloc.offset - aligned;
                if best.is_none_or(|(_, fit)| gap < fit) {
                    // Recorded from the unaligned `current`, exactly as TFLite does.
                    best = Some((aligned, alloc.offset.saturating_sub(current)));
                }
            }
            let alloc_end = alloc.offset.checked_add(alloc.size).ok_or_else(overflow)?;
            current = current.max(alloc_end);
        }
        let offset = match best {
            Some((offset, _)) => offset,
            None => align_to(current, alignment).ok_or_else(overflow)?,
        };
        let end = offset.checked_add(size).ok_or_else(overflow)?;
        self.high_water_mark = self.high_water_mark.max(end);

        // std::upper_bound on offset: after every allocation with offset <= ours.
        let at = self.active.partition_point(|a| a.offset <= offset);
        self.active.insert(at, ArenaAlloc { offset, size, first_node, last_node });
        Ok(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: usize = DEFAULT_TENSOR_ALIGNMENT;

    #[test]
    fn align_to_rounds_up_and_reports_overflow() {
        assert_eq!(align_to(0, 64), Some(0));
        assert_eq!(align_to(1, 64), Some(64));
        assert_eq!(align_to(64, 64), Some(64));
        assert_eq!(align_to(65, 64), Some(128));
        assert_eq!(align_to(usize::MAX, 64), None);
        assert_eq!(align_to(5, 0), None);
    }

    #[test]
    fn appends_when_everything_overlaps() {
        let mut arena = SimpleMemoryArena::new();
        assert_eq!(arena.allocate(10, A, 0, 5), Ok(0));
        assert_eq!(arena.allocate(100, A, 0, 5), Ok(64));
        assert_eq!(arena.allocate(1, A, 3, 3), Ok(192));
        assert_eq!(arena.high_water_mark(), 193);
    }

    #[test]
    fn reuses_memory_of_tensors_dead_in_time() {
        let mut arena = SimpleMemoryArena::new();
        assert_eq!(arena.allocate(256, A, 0, 1), Ok(0));
        // [2, 3] does not meet [0, 1]: the first allocation's bytes are free.
        assert_eq!(arena.allocate(256, A, 2, 3), Ok(0));
        // Inclusive ends: [1, 2] meets both.
        assert_eq!(arena.allocate(64, A, 1, 2), Ok(256));
        assert_eq!(arena.high_water_mark(), 320);
    }

    #[test]
    fn best_fit_prefers_the_smaller_gap() {
        // Layout at node 5:  [0,64) big gap [64,320) X [320,384) small gap [384,512) Y
        let mut arena = SimpleMemoryArena::new();
        let long = |arena: &mut SimpleMemoryArena, size| arena.allocate(size, A, 0, 10);
        assert_eq!(long(&mut arena, 64), Ok(0)); // anchor at 0
        assert_eq!(arena.allocate(256, A, 0, 1), Ok(64)); // dies early -> big hole
        assert_eq!(long(&mut arena, 64), Ok(320));
        assert_eq!(arena.allocate(128, A, 0, 1), Ok(384)); // dies early -> small hole
        assert_eq!(long(&mut arena, 64), Ok(512));
        // 100 bytes at node 5 fit both holes; best fit takes the 128-byte one.
        assert_eq!(arena.allocate(100, A, 5, 6), Ok(384));
        // 200 bytes only fit the 256-byte hole.
        assert_eq!(arena.allocate(200, A, 5, 6), Ok(64));
        // 300 bytes fit nowhere: appended above the highest conflicting allocation.
        assert_eq!(arena.allocate(300, A, 5, 6), Ok(576));
        assert_eq!(arena.high_water_mark(), 876);
    }

    #[test]
    fn first_equal_gap_kept_when_current_is_aligned() {
        let mut arena = SimpleMemoryArena::new();
        assert_eq!(arena.allocate(64, A, 0, 9), Ok(0));
        assert_eq!(arena.allocate(128, A, 0, 0), Ok(64));
        assert_eq!(arena.allocate(64, A, 0, 9), Ok(192));
        assert_eq!(arena.allocate(128, A, 0, 0), Ok(256));
        assert_eq!(arena.allocate(64, A, 0, 9), Ok(384));
        // Two equal 128-byte holes at 64 and 256: the first one wins.
        assert_eq!(arena.allocate(128, A, 1, 1), Ok(64));
    }

    #[test]
    fn tflite_unaligned_fit_quirk_is_reproduced() {
        // A 1-byte long-lived tensor leaves `current` unaligned (1), so the first
        // hole [64, 192) is recorded with fit 191 although its aligned size is 128.
        // The second hole of aligned size 128 then wins (128 < 191). This is what
        // TFLite does; a "clean" best fit would keep the first hole.
        let mut arena = SimpleMemoryArena::new();
        assert_eq!(arena.allocate(1, A, 0, 9), Ok(0));
        assert_eq!(arena.allocate(128, A, 0, 0), Ok(64));
        assert_eq!(arena.allocate(64, A, 0, 9), Ok(192));
        assert_eq!(arena.allocate(128, A, 0, 0), Ok(256));
        assert_eq!(arena.allocate(64, A, 0, 9), Ok(384));
        assert_eq!(arena.allocate(128, A, 1, 1), Ok(256));
    }

    #[test]
    fn every_offset_is_aligned() {
        let mut arena = SimpleMemoryArena::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for i in 0..200usize {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let size = (seed % 1000) as usize + 1;
            let first = i % 17;
            let last = first + (seed as usize >> 20) % 5;
            let off = arena.allocate(size, A, first, last).expect("allocate");
            assert_eq!(off % A, 0, "offset {off} not aligned");
        }
        for a in arena.allocations() {
            assert_eq!(a.offset % A, 0);
        }
    }

    #[test]
    fn smaller_alignments_are_honoured() {
        let mut arena = SimpleMemoryArena::new();
        assert_eq!(arena.allocate(3, 4, 0, 0), Ok(0));
        assert_eq!(arena.allocate(3, 4, 0, 0), Ok(4));
        assert_eq!(arena.allocate(3, 1, 0, 0), Ok(7));
    }

    #[test]
    fn zero_size_is_not_recorded() {
        let mut arena = SimpleMemoryArena::new();
        assert_eq!(arena.allocate(0, A, 0, 3), Ok(0));
        assert!(arena.allocations().is_empty());
        assert_eq!(arena.high_water_mark(), 0);
    }

    #[test]
    fn bad_arguments_are_errors_not_panics() {
        let mut arena = SimpleMemoryArena::new();
        assert!(arena.allocate(8, 0, 0, 0).is_err());
        assert!(arena.allocate(8, 48, 0, 0).is_err());
        assert!(arena.allocate(8, 128, 0, 0).is_err());
        assert!(arena.allocate(8, A, 3, 2).is_err());
        assert_eq!(arena.allocate(usize::MAX - 10, A, 0, 0), Ok(0));
        assert!(arena.allocate(usize::MAX - 10, A, 0, 0).is_err());
        arena.clear();
        assert_eq!(arena.high_water_mark(), 0);
    }
}
