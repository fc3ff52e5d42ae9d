//! Device memory: every runtime tensor of a partition gets an offset in one buffer.
//!
//! Lifetimes come from the launch order after fusion (fused-away tensors need no memory
//! at all); placement is greedy by size with best fit, TFLite's GREEDY_BY_SIZE offsets
//! strategy (`AssignOffsetsToTensors`), which on the CPU arena reaches the lower bound on
//! most graphs. Constants read by launches (step operands, concatenated constants) go to
//! a separate region after the planned one, uploaded once.

use std::collections::{HashMap, HashSet};

use super::*;
use crate::error::{Error, Result};

/// Offsets and sizes are in floats; every tensor starts on a 64-byte boundary.
pub(crate) const ALIGN_FLOATS: usize = 16;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryPlan {
    /// Offset (in floats) of every tensor launches touch, constants included.
    pub offsets: HashMap<TensorId, usize>,
    /// Floats of the planned (shared) region.
    pub planned: usize,
    /// Floats all runtime tensors would take without sharing.
    pub unshared: usize,
    /// Constants in the constant region, in placement order.
    pub constants: Vec<TensorId>,
    /// Floats of the whole buffer.
    pub total: usize,
}

fn aligned(n: usize) -> usize {
    n.div_ceil(ALIGN_FLOATS) * ALIGN_FLOATS
}

/// Plans the buffer for `ops`; `inputs` are written before the first launch, `outputs`
/// read after the last.
pub fn plan(
    ops: &[Op],
    gtensors: &HashMap<TensorId, GTensor>,
    inputs: &[TensorId],
    outputs: &[TensorId],
) -> Result<MemoryPlan> {
    let mut first: HashMap<TensorId, usize> = HashMap::new();
    let mut last: HashMap<TensorId, usize> = HashMap::new();
    let mut constants = Vec::new();
    let mut seen_const = HashSet::new();
    fn touch(first: &mut HashMap<TensorId, usize>, last: &mut HashMap<TensorId, usize>, t: TensorId, at: usize) {
        first.entry(t).and_modify(|f| *f = (*f).min(at)).or_insert(at);
        last.entry(t).and_modify(|l| *l = (*l).max(at)).or_insert(at);
    }
    let n = ops.len();
    for (i, op) in ops.iter().enumerate() {
        for t in op.reads().into_iter().chain([op.out]) {
            let g = gtensors.get(&t).ok_or_else(|| Error::new(format!("tensor {t} has no shape")))?;
            if g.constant.is_some() {
                if seen_const.insert(t) {
                    constants.push(t);
                }
            } else {
                touch(&mut first, &mut last, t, i + 1);
            }
        }
    }
    for &t in inputs {
        if first.contains_key(&t) {
            touch(&mut first, &mut last, t, 0);
        }
    }
    for &t in outputs {
        if first.contains_key(&t) {
            touch(&mut first, &mut last, t, n + 1);
        }
    }
    let size = |t: TensorId| aligned(elements(gtensors[&t].shape));
    let mut order: Vec<TensorId> = first.keys().copied().collect();
    order.sort_by_key(|&t| (std::cmp::Reverse(size(t)), first[&t], t));
    let mut placed: Vec<(usize, usize, usize, usize)> = Vec::new(); // offset, size, first, last
    let mut offsets = HashMap::new();
    let mut planned = 0usize;
    let mut unshared = 0usize;
    for t in order {
        let (sz, f, l) = (size(t), first[&t], last[&t]);
        unshared += sz;
        let mut live: Vec<(usize, usize)> =
            placed.iter().filter(|p| p.2 <= l && f <= p.3).map(|p| (p.0, p.1)).collect();
        live.sort();
        let (mut best, mut best_gap, mut cursor) = (None, usize::MAX, 0usize);
        for (off, s) in live {
            if off >= cursor {
                let gap = off - cursor;
                if gap >= sz && gap < best_gap {
                    best = Some(cursor);
                    best_gap = gap;
                }
            }
            cursor = cursor.max(off + s);
        }
        let off = best.unwrap_or(cursor);
        placed.push((off, sz, f, l));
        planned = planned.max(off + sz);
        offsets.insert(t, off);
    }
    let mut total = planned;
    for &c in &constants {
        offsets.insert(c, total);
        total += size(c);
    }
    if total > (i32::MAX as usize) {
        crate::bail!("the partition needs {total} floats of device memory, more than 32-bit offsets address");
    }
    Ok(MemoryPlan { offsets, planned, unshared, constants, total })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(src: TensorId, out: TensorId, s: Shape4) -> Op {
        Op {
            kind: OpKind::CopyBroadcast { src, strides: strides(s) },
            out,
            out_shape: s,
            region: s,
            origin: [0; 4],
            steps: vec![Step { code: step::RELU, operand: None, node: 0 }],
            nodes: vec![0],
        }
    }

    #[test]
    fn chain_reuses_memory_and_never_overlaps_live_tensors() {
        let s = [1, 1, 1, 64];
        let g: HashMap<_, _> = (0..5).map(|i| (i, GTensor { shape: s, constant: None })).collect();
        let ops: Vec<Op> = (0..4).map(|i| copy(i, i + 1, s)).collect();
        let p = plan(&ops, &g, &[0], &[4]).unwrap();
        assert_eq!(p.unshared, 5 * 64);
        // 0 lives [0,1], 1 [1,2], 2 [2,3], 3 [3,4], 4 [4,5]: two slots... but 0 and 4 are
        // pinned to the ends; pairs that are live together must not overlap.
        assert!(p.planned <= 3 * 64, "{}", p.planned);
        for a in 0..5 {
            for b in (a + 1)..5 {
                let live_together = b == a + 1;
                if live_together {
                    let (oa, ob) = (p.offsets[&a], p.offsets[&b]);
                    assert!(oa + 64 <= ob || ob + 64 <= oa, "{a} and {b} overlap");
                }
            }
        }
    }

    #[test]
    fn constants_go_after_the_planned_region() {
        let s = [1, 1, 1, 4];
        let mut g: HashMap<_, _> = (0..2).map(|i| (i, GTensor { shape: s, constant: None })).collect();
        g.insert(9, GTensor { shape: s, constant: Some(vec![1.0; 4]) });
        let mut op = copy(0, 1, s);
        op.steps = vec![Step { code: step::ADD, operand: Some((9, strides(s))), node: 0 }];
        let p = plan(&[op], &g, &[0], &[1]).unwrap();
        assert_eq!(p.constants, vec![9]);
        assert_eq!(p.offsets[&9], p.planned);
        assert_eq!(p.total, p.planned + 16);
    }
}
