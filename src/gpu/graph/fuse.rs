//! Elementwise fusion ("linking"): an elementwise launch whose input is produced by
//! exactly one earlier launch, and read by nothing else, becomes part of that launch's
//! epilogue. A residual `conv → add(·, skip) → relu` chain runs as one kernel that writes
//! only the final tensor: fewer launches, and the intermediate tensors never touch memory.

use std::collections::{HashMap, HashSet};

use super::*;

/// What fusion did, for the benchmark's report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FusionStats {
    pub launches_before: usize,
    pub launches_after: usize,
}

/// Fuses elementwise launches into their producers. `keep` are tensors that must stay
/// materialised (the partition's outputs).
pub fn fuse(ops: Vec<Op>, gtensors: &HashMap<TensorId, GTensor>, keep: &HashSet<TensorId>) -> (Vec<Op>, FusionStats) {
    let before = ops.len();
    let mut readers: HashMap<TensorId, usize> = HashMap::new();
    for op in &ops {
        for t in op.reads() {
            *readers.entry(t).or_default() += 1;
        }
    }
    let mut out: Vec<Op> = Vec::with_capacity(ops.len());
    for q in ops {
        let q = match try_fuse(q, &mut out, gtensors, keep, &readers) {
            None => continue,
            Some(q) => q,
        };
        out.push(q);
    }
    let stats = FusionStats { launches_before: before, launches_after: out.len() };
    (out, stats)
}

/// The swapped form of a binary step (`a op b` computed as `b op' a`).
fn swapped(code: i32) -> Option<i32> {
    Some(match code {
        step::ADD | step::MUL | step::MAX | step::MIN | step::SQUARED_DIFF => code,
        step::SUB => step::RSUB,
        step::RSUB => step::SUB,
        step::DIV => step::RDIV,
        step::RDIV => step::DIV,
        _ => return None,
    })
}

/// Fuses `q` into an earlier launch of `done` (returning None), or gives it back.
fn try_fuse(
    q: Op,
    done: &mut [Op],
    gtensors: &HashMap<TensorId, GTensor>,
    keep: &HashSet<TensorId>,
    readers: &HashMap<TensorId, usize>,
) -> Option<Op> {
    let OpKind::CopyBroadcast { src, strides: s } = q.kind else { return Some(q) };
    if q.steps.is_empty() || q.region != q.out_shape || q.origin != [0; 4] {
        return Some(q);
    }
    let full = strides(q.out_shape);
    // Candidates for the fused-into tensor: the source, or a same-shaped operand of the
    // first (binary) step with the operation swapped.
    let mut options = Vec::new();
    if s == full {
        options.push((src, q.steps.clone()));
    }
    if let Some(Step { code, operand: Some((u, us)), node }) = q.steps.first().cloned()
        && us == full
        && s == full
        && let Some(c) = swapped(code)
    {
        let mut steps = q.steps.clone();
        steps[0] = Step { code: c, operand: Some((src, full)), node };
        options.push((u, steps));
    }
    for (t, steps) in options {
        if keep.contains(&t) || readers.get(&t) != Some(&1) {
            continue;
        }
        if gtensors.get(&t).is_none_or(|g| g.constant.is_some() || g.shape != q.out_shape) {
            continue;
        }
        let producers: Vec<usize> = (0..done.len()).filter(|&i| done[i].out == t).collect();
        let &[pi] = producers.as_slice() else { continue };
        let p = &done[pi];
        if p.region != p.out_shape || p.out_shape != q.out_shape {
            continue;
        }
        // Every operand must exist when the producer runs.
        let ready = steps
            .iter()
            .filter_map(|st| st.operand.map(|(o, _)| o))
            .all(|o| gtensors.get(&o).is_some_and(|g| g.constant.is_some()) || !done[pi..].iter().any(|d| d.out == o));
        if !ready {
            continue;
        }
        let p = &mut done[pi];
        p.steps.extend(steps);
        p.out = q.out;
        p.nodes.extend(q.nodes.iter().copied());
        return None;
    }
    Some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: Shape4) -> GTensor {
        GTensor { shape, constant: None }
    }

    fn conv(src: TensorId, out: TensorId, s: Shape4) -> Op {
        Op {
            kind: OpKind::Conv1x1 { src, in_c: s[3], weights: vec![0.0; s[3] * s[3]], bias: vec![0.0; s[3]] },
            out,
            out_shape: s,
            region: s,
            origin: [0; 4],
            steps: Vec::new(),
            nodes: vec![out],
        }
    }

    fn add(a: TensorId, b: TensorId, out: TensorId, s: Shape4) -> Op {
        Op {
            kind: OpKind::CopyBroadcast { src: a, strides: strides(s) },
            out,
            out_shape: s,
            region: s,
            origin: [0; 4],
            steps: vec![Step { code: step::SUB, operand: Some((b, strides(s))), node: out }],
            nodes: vec![out],
        }
    }

    #[test]
    fn residual_sub_fuses_into_the_later_producer_with_swapped_operands() {
        let s = [1, 4, 4, 8];
        let g: HashMap<_, _> = (0..5).map(|i| (i, t(s))).collect();
        // 1 = conv(0); 2 = conv(1); 3 = 1 - 2: the SUB fuses into conv #2 as RSUB(1).
        let ops = vec![conv(0, 1, s), conv(1, 2, s), add(1, 2, 3, s)];
        let (fused, stats) = fuse(ops, &g, &HashSet::from([3]));
        assert_eq!(stats, FusionStats { launches_before: 3, launches_after: 2 });
        assert_eq!(fused[1].out, 3);
        assert_eq!(fused[1].steps[0].code, step::RSUB);
        assert_eq!(fused[1].steps[0].operand, Some((1, strides(s))));
        assert_eq!(fused[1].nodes, vec![2, 3]);
    }

    #[test]
    fn outputs_and_shared_tensors_are_not_fused() {
        let s = [1, 2, 2, 4];
        let g: HashMap<_, _> = (0..6).map(|i| (i, t(s))).collect();
        // 1 is a partition output: the relu must stay separate.
        let mut relu = add(1, 0, 2, s);
        relu.steps = vec![Step { code: step::RELU, operand: None, node: 2 }];
        let (fused, _) = fuse(vec![conv(0, 1, s), relu.clone()], &g, &HashSet::from([1, 2]));
        assert_eq!(fused.len(), 2);
        // 1 read twice: no fusion either.
        let mut relu2 = relu.clone();
        relu2.out = 3;
        let (fused, _) = fuse(vec![conv(0, 1, s), relu, relu2], &g, &HashSet::from([2, 3]));
        assert_eq!(fused.len(), 3);
    }
}
