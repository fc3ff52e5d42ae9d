//! The max-load lower bound on the read-write arena.
//!
//! Definition (shared/design/MEMORY.md, "Summary table"): the bound is the
//! maximum, over the nodes of the execution plan, of the sum of the sizes of the
//! tensors live at that node. Sizes are raw (no alignment padding). Here a tensor
//! is live at node `s` when `alloc_node <= s <= dealloc_node`, with the lifetimes
//! the planner itself uses:
//!
//! * a node's outputs from that node, graph inputs and variables from node 0;
//! * through the last node that reads them, or to the end when never freed (graph
//!   outputs; graph inputs when `preserve_inputs`; outputs nobody reads, which
//!   TFLite never frees; everything when `preserve_intermediates`);
//! * node temporaries at their node only.
//!
//! Only `TensorKind::Arena` tensors count; the persistent arena is planned
//! separately. With `preserve_inputs` this is MEMORY.md's `LB_io` (plus our
//! temporaries, `LB_T`), "the best any planner can do without in-place sharing";
//! with `preserve_inputs = false` it is MEMORY.md's `LB` whenever every produced
//! tensor is read or is a graph output.
//!
//! Why it is a lower bound: at the peak node every live tensor needs its own
//! bytes, all at once, in the same arena. Why it is not always reachable: offsets
//! are fixed for a tensor's whole life, so fragmentation can force a bigger arena
//! (the problem is dynamic storage allocation, NP-complete).
//!
//! A graph with no nodes has one step (step 0), so its inputs still count.

/// A tensor's contribution to the bound: `bytes` live from node `first` through
/// node `last` (inclusive; `None` = to the end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveInterval {
    pub bytes: usize,
    pub first: usize,
    pub last: Option<usize>,
}

/// Max over steps `0..max(num_nodes, 1)` of the bytes live at that step.
/// Intervals reaching past the last step are clipped to it. Saturates at
/// `usize::MAX` instead of overflowing.
pub fn max_live_bytes(intervals: impl IntoIterator<Item = LiveInterval>, num_nodes: usize) -> usize {
    let steps = num_nodes.max(1);
    // Difference array: +bytes at `first`, -bytes after `last`. i128 cannot
    // overflow for fewer than 2^63 intervals of at most usize::MAX bytes each.
    let mut delta = vec![0i128; steps + 1];
    for iv in intervals {
        if iv.bytes == 0 {
            continue;
        }
        let first = iv.first.min(steps - 1);
        let last = iv.last.map_or(steps - 1, |l| l.min(steps - 1));
        if last < first {
            continue;
        }
        delta[first] += iv.bytes as i128;
        delta[last + 1] -= iv.bytes as i128;
    }
    let mut best: i128 = 0;
    let mut live: i128 = 0;
    for d in delta.iter().take(steps) {
        live += d;
        best = best.max(live);
    }
    usize::try_from(best).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(bytes: usize, first: usize, last: Option<usize>) -> LiveInterval {
        LiveInterval { bytes, first, last }
    }

    #[test]
    fn peak_of_a_chain() {
        // in (to end), a [0,1], b [1,2], c [2, end]; 3 nodes.
        let ivs = [iv(10, 0, None), iv(100, 0, Some(1)), iv(50, 1, Some(2)), iv(7, 2, None)];
        // step 0: 110, step 1: 160, step 2: 67
        assert_eq!(max_live_bytes(ivs, 3), 160);
    }

    #[test]
    fn single_node_intervals_count_only_at_their_node() {
        let ivs = [iv(100, 0, Some(0)), iv(100, 1, Some(1)), iv(100, 2, Some(2))];
        assert_eq!(max_live_bytes(ivs, 3), 100);
    }

    #[test]
    fn empty_graph_and_clipping() {
        assert_eq!(max_live_bytes([], 0), 0);
        assert_eq!(max_live_bytes([iv(5, 0, None), iv(6, 0, Some(9))], 0), 11);
        assert_eq!(max_live_bytes([iv(5, 3, Some(1))], 5), 0);
    }

    #[test]
    fn saturates_instead_of_overflowing() {
        let ivs = [iv(usize::MAX, 0, None), iv(usize::MAX, 0, None)];
        assert_eq!(max_live_bytes(ivs, 1), usize::MAX);
    }
}
