//! An independent checker for memory plans (tflite-micro's
//! `GreedyMemoryPlanner::DoAnyBuffersOverlap`, made stricter).
//!
//! [`check_no_overlap`] re-derives, from the request alone, where every tensor
//! must hold data, and checks that the plan keeps those promises:
//!
//! * **Coverage.** Each planned tensor is live (by the plan's own
//!   `[alloc_node, dealloc_node]`) at every node that reads, writes or uses it as
//!   scratch; graph inputs and variables from node 0; graph outputs and variables
//!   to the end; graph inputs to the end when `preserve_inputs`.
//! * **Placement.** `Arena` tensors with bytes and a lifetime have an
//!   arena offset and no persistent one (and vice versa for `Persistent`);
//!   `NotPlanned` and zero-sized tensors have none; every offset is a multiple of
//!   [`DEFAULT_TENSOR_ALIGNMENT`] and every tensor ends within its arena's size.
//! * **No overlap.** Two read-write tensors whose lifetimes share a node never
//!   share a byte; persistent tensors never share a byte at all.
//!
//! It is quadratic in the number of planned tensors; that is fine for tests and
//! debug builds.

use super::DEFAULT_TENSOR_ALIGNMENT;
use super::plan::{MemoryPlan, PlanRequest, TensorKind};
use crate::error::Result;

/// `Ok(())` when `plan` is a valid plan for `req`; otherwise the first problem found.
pub fn check_no_overlap(req: &PlanRequest<'_>, plan: &MemoryPlan) -> Result<()> {
    let n = req.tensor_bytes.len();
    if req.tensor_kind.len() != n
        || [plan.arena_offsets.len(), plan.persistent_offsets.len(), plan.alloc_node.len(), plan.dealloc_node.len()]
            .iter()
            .any(|&len| len != n)
    {
        crate::bail!("plan and request disagree on the number of tensors");
    }
    let index = |raw: i32| usize::try_from(raw).ok().filter(|&t| t < n);
    let live_at = |t: usize, node: usize| {
        plan.alloc_node[t].is_some_and(|a| a <= node) && plan.dealloc_node[t].is_none_or(|d| node <= d)
    };
    let planned = |t: usize| plan.offset_of(t).is_some();

    // Coverage.
    for (i, node) in req.nodes.iter().enumerate() {
        for &raw in node.inputs.iter().chain(node.outputs).chain(node.temporaries) {
            if let Some(t) = index(raw)
                && planned(t)
                && !live_at(t, i)
            {
                crate::bail!("tensor {t} is used by node {i} but not live there");
            }
        }
    }
    let check_ends = |list: &[i32], what: &str, from_start: bool, to_end: bool| {
        for t in list.iter().filter_map(|&raw| index(raw)) {
            if !planned(t) {
                continue;
            }
            if from_start && plan.alloc_node[t] != Some(0) {
                crate::bail!("{what} tensor {t} is not live from node 0");
            }
            if to_end && plan.dealloc_node[t].is_some() {
                crate::bail!("{what} tensor {t} is freed before the end");
            }
        }
        Ok(())
    };
    check_ends(req.graph_inputs, "graph input", true, req.preserve_inputs)?;
    check_ends(req.graph_outputs, "graph output", false, true)?;
    check_ends(req.variables, "variable", true, true)?;

    // Placement.
    let mut rw = Vec::new();
    let mut persistent = Vec::new();
    for t in 0..n {
        let size = req.tensor_bytes[t];
        let has_life = plan.alloc_node[t].is_some();
        let (want_rw, want_persistent) = match req.tensor_kind[t] {
            TensorKind::Arena => (has_life && size > 0, false),
            TensorKind::Persistent => (false, has_life && size > 0),
            TensorKind::NotPlanned => (false, false),
        };
        let (got_rw, got_persistent) = (plan.arena_offsets[t], plan.persistent_offsets[t]);
        if got_rw.is_some() != want_rw || got_persistent.is_some() != want_persistent {
            crate::bail!(
                "tensor {t} ({:?}, {size} bytes, alloc {:?}): arena offset {got_rw:?}, \
                 persistent offset {got_persistent:?}",
                req.tensor_kind[t],
                plan.alloc_node[t]
            );
        }
        for (offset, total, list) in
            [(got_rw, plan.arena_bytes, &mut rw), (got_persistent, plan.persistent_bytes, &mut persistent)]
        {
            let Some(offset) = offset else { continue };
            if offset % DEFAULT_TENSOR_ALIGNMENT != 0 {
                crate::bail!("tensor {t}: offset {offset} is not aligned");
            }
            if offset.checked_add(size).is_none_or(|end| end > total) {
                crate::bail!("tensor {t}: [{offset}, +{size}) exceeds the arena ({total})");
            }
            list.push((t, offset, size));
        }
    }

    // No overlap.
    let overlap_in_time = |a: usize, b: usize| {
        let (fa, fb) = (plan.alloc_node[a], plan.alloc_node[b]);
        let (la, lb) = (plan.dealloc_node[a], plan.dealloc_node[b]);
        match (fa, fb) {
            (Some(fa), Some(fb)) => la.is_none_or(|la| fb <= la) && lb.is_none_or(|lb| fa <= lb),
            _ => false,
        }
    };
    // In-place aliases share their root's bytes on purpose: same root, same offset.
    let root = |t: usize| plan.alias_of.get(t).copied().flatten().unwrap_or(t);
    for t in 0..n {
        if let Some(r) = plan.alias_of.get(t).copied().flatten() {
            let same = r < n
                && plan.arena_offsets[t] == plan.arena_offsets[r]
                && req.tensor_bytes[t] == req.tensor_bytes[r]
                && plan.alloc_node[t] == plan.alloc_node[r]
                && plan.dealloc_node[t] == plan.dealloc_node[r];
            if !same {
                crate::bail!("tensor {t} aliases {r} but does not share its bytes and lifetime");
            }
        }
    }
    for (list, always) in [(&rw, false), (&persistent, true)] {
        for (i, &(a, oa, sa)) in list.iter().enumerate() {
            for &(b, ob, sb) in &list[i + 1..] {
                if root(a) == root(b) {
                    continue;
                }
                let bytes_overlap = oa < ob + sb && ob < oa + sa;
                if bytes_overlap && (always || overlap_in_time(a, b)) {
                    crate::bail!("tensors {a} [{oa}, +{sa}) and {b} [{ob}, +{sb}) overlap while both live");
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::linear::LinearPlanner;
    use super::super::planner::{MemoryPlanner, plan_memory};
    use super::super::simple_arena::align_to;
    use super::super::test_graphs::{TestGraph, XorShift, random_graph};
    use super::*;

    fn chain() -> TestGraph {
        let mut g = TestGraph::new();
        let x = g.arena(64);
        let a = g.arena(64);
        let b = g.arena(64);
        let c = g.arena(64);
        g.inputs = vec![x];
        g.outputs = vec![c];
        g.node(&[x], &[a]);
        g.node(&[a], &[b]);
        g.node(&[b], &[c]);
        g
    }

    #[test]
    fn checker_rejects_broken_plans() {
        let g = chain();
        g.with_request(|req| {
            let good = plan_memory(req).expect("plan");
            check_no_overlap(req, &good).expect("valid");
            // a [0,1] and b [1,2] are live together at node 1.
            let mut bad = good.clone();
            bad.arena_offsets[2] = bad.arena_offsets[1];
            let err = check_no_overlap(req, &bad).expect_err("overlap must be caught");
            assert!(err.message.contains("overlap"), "{err}");
            // b is read at node 2: freeing it at node 1 breaks coverage.
            let mut bad = good.clone();
            bad.dealloc_node[2] = Some(1);
            assert!(check_no_overlap(req, &bad).is_err());
            // The preserved input must live to the end.
            let mut bad = good.clone();
            bad.dealloc_node[0] = Some(0);
            assert!(check_no_overlap(req, &bad).is_err());
            // Misaligned, out of the arena, missing, or in the wrong arena.
            for corrupt in [
                |p: &mut MemoryPlan| p.arena_offsets[3] = p.arena_offsets[3].map(|o| o + 8),
                |p: &mut MemoryPlan| p.arena_bytes -= 1,
                |p: &mut MemoryPlan| p.arena_offsets[1] = None,
                |p: &mut MemoryPlan| p.persistent_offsets[1] = Some(0),
            ] {
                let mut bad = good.clone();
                corrupt(&mut bad);
                assert!(check_no_overlap(req, &bad).is_err(), "{bad:?}");
            }
        });
    }

    #[test]
    fn checker_rejects_overlapping_persistent_tensors() {
        let mut g = chain();
        let v0 = g.tensor(64, TensorKind::Persistent);
        let v1 = g.tensor(64, TensorKind::Persistent);
        g.variables = vec![v0, v1];
        g.with_request(|req| {
            let mut plan = plan_memory(req).expect("plan");
            check_no_overlap(req, &plan).expect("valid");
            plan.persistent_offsets[5] = plan.persistent_offsets[4];
            assert!(check_no_overlap(req, &plan).is_err());
        });
    }

    /// The planner's invariants on 200 seeded random graphs: valid plans (no
    /// overlap while live, coverage, alignment), bound <= arena <= sum of aligned
    /// sizes, and never worse than the no-reuse planner.
    #[test]
    fn random_graphs_satisfy_the_invariants() {
        let mut rng = XorShift::new(0x5eed_0001_f848_7e68);
        let mut reused_somewhere = 0;
        for case in 0..200 {
            let g = random_graph(&mut rng);
            g.with_request(|req| {
                let arena = plan_memory(req).unwrap_or_else(|e| panic!("case {case}: {e}"));
                check_no_overlap(req, &arena).unwrap_or_else(|e| panic!("case {case}: {e}\n{arena:?}"));
                let linear = LinearPlanner.plan(req).expect("linear plan");
                check_no_overlap(req, &linear).expect("valid linear plan");

                let aligned_sum: usize = (0..g.bytes.len())
                    .filter(|&t| arena.arena_offsets[t].is_some())
                    .map(|t| align_to(g.bytes[t], DEFAULT_TENSOR_ALIGNMENT).unwrap_or(0))
                    .sum();
                assert!(
                    arena.arena_bytes >= arena.lower_bound_bytes,
                    "case {case}: arena below the lower bound\n{arena:?}"
                );
                assert!(arena.arena_bytes <= aligned_sum, "case {case}\n{arena:?}");
                assert_eq!(linear.arena_bytes, aligned_sum, "case {case}");
                assert!(arena.arena_bytes <= linear.arena_bytes, "case {case}");
                assert_eq!(arena.lower_bound_bytes, linear.lower_bound_bytes);
                assert_eq!(arena.alloc_node, linear.alloc_node);
                // Persistent tensors are stacked, whatever the order.
                let persistent: usize = (0..g.bytes.len())
                    .filter(|&t| arena.persistent_offsets[t].is_some())
                    .map(|t| align_to(g.bytes[t], DEFAULT_TENSOR_ALIGNMENT).unwrap_or(0))
                    .sum();
                assert!(arena.persistent_bytes <= persistent);
                assert!(persistent - arena.persistent_bytes < DEFAULT_TENSOR_ALIGNMENT);
                if arena.arena_bytes < aligned_sum.saturating_sub(DEFAULT_TENSOR_ALIGNMENT) {
                    reused_somewhere += 1;
                }
            });
        }
        // The generator must exercise reuse, or the test proves little.
        assert!(reused_somewhere > 50, "only {reused_somewhere} graphs reused memory");
    }
}
