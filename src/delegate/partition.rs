//! Splitting an execution plan into independent node subsets (TFLite's
//! `PartitionGraphIntoIndependentNodeSubsets`).
//!
//! Given the nodes of the execution plan (in plan order) and the set of nodes a
//! delegate wants, the plan is cut into subsets such that
//! 1. every subset holds only delegated or only non-delegated nodes;
//! 2. the subsets are in topological order: running them one after the other, each
//!    node's inputs are ready when its subset runs;
//! 3. nodes of the same kind are gathered into as few subsets as the data dependencies
//!    allow (greedily: a ready node joins the current subset even if an earlier node
//!    of the plan is still waiting).
//!
//! The walk is epoch by epoch: an epoch collects every ready node of its kind (the
//! kind of the first ready node it meets), repeating over the plan until nothing more
//! becomes ready; then the next epoch starts. A tensor is ready when no node of the
//! plan produces it (graph inputs, constants) or when its producer has been placed.
//!
//! Each subset also records the tensors it reads that another subset (or the outside)
//! produces (`input_tensors`, constants and graph inputs included) and the tensors it
//! produces that another subset or the graph's outputs read (`output_tensors`), both
//! sorted and without duplicates — what a delegate kernel receives in
//! `TfLiteDelegateParams`.
//!
//! Nodes that might have side effects are kept in plan order relative to each other by
//! control edges when partitioning greedily (as TFLite does).

use core::fmt;

/// The tensor index TFLite uses for an absent optional input or output.
const OPTIONAL_TENSOR: i32 = -1;

/// One node of the execution plan as the partitioner sees it.
#[derive(Clone, Copy, Debug)]
pub struct PlanNode<'a> {
    /// The node's index in the node table (what `nodes_to_delegate` names).
    pub index: i32,
    /// Tensor indices the node reads (`-1`: absent optional input).
    pub inputs: &'a [i32],
    /// Tensor indices the node writes (`-1`: absent optional output).
    pub outputs: &'a [i32],
    /// The node may have side effects (resource tensors, control flow): such nodes keep
    /// their relative order when partitioning greedily.
    pub might_have_side_effect: bool,
}

/// The graph to partition.
#[derive(Clone, Debug)]
pub struct Graph<'a> {
    /// Number of tensors; every tensor index must be below it.
    pub num_tensors: usize,
    /// Number of nodes in the node table; every index in `nodes_to_delegate` must be
    /// below it (the table may hold nodes that are not in the plan).
    pub num_nodes: usize,
    /// The execution plan, in order.
    pub plan: Vec<PlanNode<'a>>,
    /// The graph's output tensors (they become outputs of the subset producing them).
    pub outputs: &'a [i32],
}

/// Whether a subset's nodes go to the delegate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubsetKind {
    /// Nodes that stay as they are (TFLite's `kTfNonPartition`).
    NotDelegated,
    /// Nodes the delegate takes (TFLite's `kTfPartition`).
    Delegated,
}

/// One subset of the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSubset {
    pub kind: SubsetKind,
    /// Node indices (node-table indices) in the order they run.
    pub nodes: Vec<i32>,
    /// Tensors read from outside the subset, sorted, unique.
    pub input_tensors: Vec<i32>,
    /// Tensors produced here and read outside (or graph outputs), sorted, unique.
    pub output_tensors: Vec<i32>,
}

/// How to partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Gather a ready node into the current subset even if plan-earlier nodes are still
    /// waiting (TFLite's default). When false, a subset ends at the first node that
    /// cannot join it, so plan order is preserved.
    pub greedy: bool,
    /// One node per subset (TFLite's "disable delegate node fusion").
    pub disable_fusion: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { greedy: true, disable_fusion: false }
    }
}

/// Why a partition could not be made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartitionError {
    /// A node index in `nodes_to_delegate` is outside the node table.
    InvalidNode(i32),
    /// A node refers to a tensor index outside the tensor table.
    InvalidTensor { node: i32, tensor: i32 },
    /// Some nodes can never run (an input is produced by no node that can run before
    /// it: a cycle, or a plan that reads a tensor before writing it).
    Unschedulable(Vec<i32>),
    /// A graph output index is outside the tensor table.
    InvalidOutput(i32),
}

impl fmt::Display for PartitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionError::InvalidNode(n) => write!(f, "node index {n} to delegate is out of range"),
            PartitionError::InvalidTensor { node, tensor } => {
                write!(f, "node {node} refers to tensor {tensor}, which is out of range")
            }
            PartitionError::Unschedulable(nodes) => write!(f, "nodes {nodes:?} can never become ready"),
            PartitionError::InvalidOutput(t) => write!(f, "graph output tensor {t} is out of range"),
        }
    }
}

impl std::error::Error for PartitionError {}

/// Epoch of a tensor nobody in the plan produces, or of a node not placed yet.
const NOT_READY: i64 = -1;
/// Epoch of a tensor that is always ready (graph input, constant, no producer).
const ALWAYS_READY: i64 = -2;

struct Partitioner<'g, 'a> {
    graph: &'g Graph<'a>,
    options: Options,
    /// Per node-table index: delegated or not.
    delegated: Vec<bool>,
    /// Per tensor: the epoch (subset index) that produces it, or a special value.
    tensor_epoch: Vec<i64>,
    /// Per plan position: the epoch it was placed in, or NOT_READY.
    node_epoch: Vec<i64>,
    /// Control edges (from plan position, to plan position), sorted.
    edges: Vec<(usize, usize)>,
    /// Per plan position: control edges still to be satisfied.
    pending_edges: Vec<usize>,
    subsets: Vec<NodeSubset>,
    /// Kind of the subset being built (None until its first node).
    current_kind: Option<SubsetKind>,
}

/// Partitions `graph`'s plan into subsets; `nodes_to_delegate` are node-table indices
/// (duplicates are fine). Returns the subsets in the order they must run.
pub fn partition(
    graph: &Graph<'_>,
    nodes_to_delegate: &[i32],
    options: Options,
) -> Result<Vec<NodeSubset>, PartitionError> {
    let mut delegated = vec![false; graph.num_nodes];
    for &n in nodes_to_delegate {
        let slot = usize::try_from(n).ok().and_then(|i| delegated.get_mut(i)).ok_or(PartitionError::InvalidNode(n))?;
        *slot = true;
    }
    let tensor_ok = |t: i32| t == OPTIONAL_TENSOR || usize::try_from(t).is_ok_and(|t| t < graph.num_tensors);
    for node in &graph.plan {
        if let Some(&bad) = node.inputs.iter().chain(node.outputs).find(|&&t| !tensor_ok(t)) {
            return Err(PartitionError::InvalidTensor { node: node.index, tensor: bad });
        }
    }
    if let Some(&bad) = graph.outputs.iter().find(|&&t| t == OPTIONAL_TENSOR || !tensor_ok(t)) {
        return Err(PartitionError::InvalidOutput(bad));
    }

    // Side-effecting nodes keep their order: an edge from each to the next one.
    let mut edges = Vec::new();
    if options.greedy {
        let mut last = None;
        for (pos, node) in graph.plan.iter().enumerate() {
            if node.might_have_side_effect {
                if let Some(prev) = last {
                    edges.push((prev, pos));
                }
                last = Some(pos);
            }
        }
    }
    let mut pending_edges = vec![0usize; graph.plan.len()];
    for &(_, to) in &edges {
        pending_edges[to] += 1;
    }

    let mut tensor_epoch = vec![ALWAYS_READY; graph.num_tensors];
    for node in &graph.plan {
        for &t in node.outputs.iter().filter(|&&t| t != OPTIONAL_TENSOR) {
            tensor_epoch[t as usize] = NOT_READY;
        }
    }

    let p = Partitioner {
        graph,
        options,
        delegated,
        tensor_epoch,
        node_epoch: vec![NOT_READY; graph.plan.len()],
        edges,
        pending_edges,
        subsets: Vec::new(),
        current_kind: None,
    };
    p.run()
}

impl Partitioner<'_, '_> {
    fn run(mut self) -> Result<Vec<NodeSubset>, PartitionError> {
        loop {
            self.subsets.push(NodeSubset {
                kind: SubsetKind::NotDelegated,
                nodes: Vec::new(),
                input_tensors: Vec::new(),
                output_tensors: Vec::new(),
            });
            self.current_kind = None;
            self.build_subset();
            if self.subsets.last().is_some_and(|s| s.nodes.is_empty()) {
                self.subsets.pop();
                break;
            }
        }
        let stuck: Vec<i32> = self
            .node_epoch
            .iter()
            .zip(&self.graph.plan)
            .filter(|(e, _)| **e == NOT_READY)
            .map(|(_, n)| n.index)
            .collect();
        if !stuck.is_empty() {
            return Err(PartitionError::Unschedulable(stuck));
        }
        for &t in self.graph.outputs {
            let epoch = self.tensor_epoch[t as usize];
            if epoch == ALWAYS_READY {
                // A graph input (or constant) that is also a graph output.
                continue;
            }
            let subset = usize::try_from(epoch).ok().and_then(|e| self.subsets.get_mut(e));
            subset.ok_or(PartitionError::InvalidOutput(t))?.output_tensors.push(t);
        }
        for s in &mut self.subsets {
            s.input_tensors.sort_unstable();
            s.input_tensors.dedup();
            s.output_tensors.sort_unstable();
            s.output_tensors.dedup();
        }
        Ok(self.subsets)
    }

    /// Fills the last subset: sweeps the plan until no node can join it.
    fn build_subset(&mut self) {
        loop {
            let mut placed_any = false;
            for pos in 0..self.graph.plan.len() {
                if self.try_place(pos) {
                    placed_any = true;
                } else if placed_any && !self.options.greedy {
                    return;
                }
            }
            if !placed_any {
                return;
            }
        }
    }

    /// Places plan position `pos` in the current subset if it is ready and of the
    /// subset's kind.
    fn try_place(&mut self, pos: usize) -> bool {
        let epoch = self.subsets.len() - 1;
        if self.options.disable_fusion && !self.subsets[epoch].nodes.is_empty() {
            return false;
        }
        if self.node_epoch[pos] != NOT_READY {
            return false;
        }
        let node = self.graph.plan[pos];
        let inputs = || node.inputs.iter().copied().filter(|&t| t != OPTIONAL_TENSOR);
        if inputs().any(|t| self.tensor_epoch[t as usize] == NOT_READY) {
            return false;
        }
        if self.pending_edges[pos] != 0 {
            return false;
        }
        let kind = if self.delegated[node.index as usize] { SubsetKind::Delegated } else { SubsetKind::NotDelegated };
        let current = *self.current_kind.get_or_insert(kind);
        if current != kind {
            return false;
        }
        let epoch_i = epoch as i64;
        self.node_epoch[pos] = epoch_i;
        self.subsets[epoch].kind = kind;
        self.subsets[epoch].nodes.push(node.index);
        for &t in node.outputs.iter().filter(|&&t| t != OPTIONAL_TENSOR) {
            self.tensor_epoch[t as usize] = epoch_i;
        }
        for t in inputs() {
            let from = self.tensor_epoch[t as usize];
            if from != epoch_i {
                self.subsets[epoch].input_tensors.push(t);
                if from >= 0 {
                    self.subsets[from as usize].output_tensors.push(t);
                }
            }
        }
        let first = self.edges.partition_point(|&(from, _)| from < pos);
        for &(from, to) in &self.edges[first..] {
            if from != pos {
                break;
            }
            self.pending_edges[to] -= 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (inputs, outputs) per node; node i is at plan position i unless `plan` says
    /// otherwise.
    struct G {
        nodes: Vec<(Vec<i32>, Vec<i32>)>,
        side_effects: Vec<usize>,
        num_tensors: usize,
        outputs: Vec<i32>,
    }

    impl G {
        fn new(num_tensors: usize, nodes: &[(&[i32], &[i32])], outputs: &[i32]) -> G {
            G {
                nodes: nodes.iter().map(|(i, o)| (i.to_vec(), o.to_vec())).collect(),
                side_effects: Vec::new(),
                num_tensors,
                outputs: outputs.to_vec(),
            }
        }
        fn graph(&self, plan: &[i32]) -> Graph<'_> {
            Graph {
                num_tensors: self.num_tensors,
                num_nodes: self.nodes.len(),
                plan: plan
                    .iter()
                    .map(|&i| PlanNode {
                        index: i,
                        inputs: &self.nodes[i as usize].0,
                        outputs: &self.nodes[i as usize].1,
                        might_have_side_effect: self.side_effects.contains(&(i as usize)),
                    })
                    .collect(),
                outputs: &self.outputs,
            }
        }
        fn all(&self) -> Vec<i32> {
            (0..self.nodes.len() as i32).collect()
        }
    }

    fn subset(kind: SubsetKind, nodes: &[i32], inputs: &[i32], outputs: &[i32]) -> NodeSubset {
        NodeSubset { kind, nodes: nodes.to_vec(), input_tensors: inputs.to_vec(), output_tensors: outputs.to_vec() }
    }
    use SubsetKind::{Delegated as D, NotDelegated as N};

    /// The demo model f(x) = sin(x) + x + sin(2x), as in sin_add_mul.tflite:
    /// 0 SIN(t0)->t2, 1 ADD(t2,t0)->t3, 2 MUL(t0,t1)->t4, 3 SIN(t4)->t5, 4 ADD(t3,t5)->t6.
    fn demo_model() -> G {
        G::new(7, &[(&[0], &[2]), (&[2, 0], &[3]), (&[0, 1], &[4]), (&[4], &[5]), (&[3, 5], &[6])], &[6])
    }

    #[test]
    fn demo_model_sin_delegate_gives_four_subsets() {
        let g = demo_model();
        let s = partition(&g.graph(&g.all()), &[0, 3], Options::default()).unwrap();
        assert_eq!(
            s,
            vec![
                subset(D, &[0], &[0], &[2]),
                subset(N, &[1, 2], &[0, 1, 2], &[3, 4]),
                subset(D, &[3], &[4], &[5]),
                subset(N, &[4], &[3, 5], &[6]),
            ]
        );
    }

    #[test]
    fn nothing_delegated_is_one_subset() {
        let g = demo_model();
        let s = partition(&g.graph(&g.all()), &[], Options::default()).unwrap();
        assert_eq!(s, vec![subset(N, &[0, 1, 2, 3, 4], &[0, 1], &[6])]);
    }

    #[test]
    fn everything_delegated_is_one_subset() {
        let g = demo_model();
        let s = partition(&g.graph(&g.all()), &[4, 3, 2, 1, 0, 0], Options::default()).unwrap();
        assert_eq!(s, vec![subset(D, &[0, 1, 2, 3, 4], &[0, 1], &[6])]);
    }

    /// TFLite's FP16 test graph (8 nodes; the delegate takes the ADDs 1, 3, 7):
    /// 0 DEQ(t1)->t2, 1 ADD(t0,t2)->t3, 2 DEQ(t4)->t5, 3 ADD(t3,t5)->t6,
    /// 4 DEQ(t7)->t8, 5 MUL(t6,t8)->t9, 6 DEQ(t10)->t11, 7 ADD(t9,t11)->t12.
    fn chain8() -> G {
        G::new(
            13,
            &[
                (&[1], &[2]),
                (&[0, 2], &[3]),
                (&[4], &[5]),
                (&[3, 5], &[6]),
                (&[7], &[8]),
                (&[6, 8], &[9]),
                (&[10], &[11]),
                (&[9, 11], &[12]),
            ],
            &[12],
        )
    }

    #[test]
    fn chain_of_eight_with_adds_delegated() {
        let g = chain8();
        let s = partition(&g.graph(&g.all()), &[1, 3, 7], Options::default()).unwrap();
        assert_eq!(
            s,
            vec![
                subset(N, &[0, 2, 4, 6], &[1, 4, 7, 10], &[2, 5, 8, 11]),
                subset(D, &[1, 3], &[0, 2, 5], &[6]),
                subset(N, &[5], &[6, 8], &[9]),
                subset(D, &[7], &[9, 11], &[12]),
            ]
        );
        // 4 kept nodes + 1 + 1 + 1 delegate nodes: a plan of 7.
        let plan_len: usize = s.iter().map(|s| if s.kind == D { 1 } else { s.nodes.len() }).sum();
        assert_eq!(plan_len, 7);
    }

    #[test]
    fn non_greedy_keeps_plan_order() {
        let g = chain8();
        let s = partition(&g.graph(&g.all()), &[1, 3, 7], Options { greedy: false, disable_fusion: false }).unwrap();
        let nodes: Vec<(SubsetKind, Vec<i32>)> = s.into_iter().map(|s| (s.kind, s.nodes)).collect();
        assert_eq!(
            nodes,
            vec![(N, vec![0]), (D, vec![1]), (N, vec![2]), (D, vec![3]), (N, vec![4, 5, 6]), (D, vec![7]),]
        );
    }

    #[test]
    fn disable_fusion_gives_one_node_per_subset() {
        let g = demo_model();
        let s = partition(&g.graph(&g.all()), &[0, 3], Options { greedy: true, disable_fusion: true }).unwrap();
        assert_eq!(s.len(), 5);
        assert!(s.iter().all(|s| s.nodes.len() == 1));
        assert_eq!(s.iter().flat_map(|s| s.nodes.clone()).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn side_effects_keep_their_order() {
        // Two independent chains: 0 (side effect) -> 1, 2 (side effect) -> 3, with 0 and 3
        // delegated. Without the control edge, 2 could join the first CPU subset before 0.
        let mut g = G::new(6, &[(&[0], &[1]), (&[1], &[2]), (&[0], &[3]), (&[3], &[4])], &[2, 4]);
        let free = partition(&g.graph(&g.all()), &[0], Options::default()).unwrap();
        assert_eq!(free[0].nodes, vec![0]);
        // Delegate node 1 only: greedy start is node 0 (CPU) and node 2 joins it.
        let s = partition(&g.graph(&g.all()), &[1], Options::default()).unwrap();
        assert_eq!(s[0].nodes, vec![0, 2, 3]);
        g.side_effects = vec![1, 2];
        let s = partition(&g.graph(&g.all()), &[1], Options::default()).unwrap();
        // Node 2 must wait for node 1 now.
        assert_eq!(s[0].nodes, vec![0]);
        assert_eq!(s[1].nodes, vec![1]);
        assert_eq!(s[2].nodes, vec![2, 3]);
    }

    #[test]
    fn plan_order_not_node_order() {
        // The plan may list nodes out of table order (e.g. after an earlier delegation);
        // subsets name node-table indices.
        let g = demo_model();
        let s = partition(&g.graph(&[2, 0, 1, 3, 4]), &[3], Options::default()).unwrap();
        assert_eq!(s[0], subset(N, &[2, 0, 1], &[0, 1], &[3, 4]));
        assert_eq!(s[1], subset(D, &[3], &[4], &[5]));
    }

    #[test]
    fn input_that_is_also_output() {
        let g = G::new(2, &[(&[0], &[1])], &[1, 0]);
        let s = partition(&g.graph(&[0]), &[0], Options::default()).unwrap();
        assert_eq!(s, vec![subset(D, &[0], &[0], &[1])]);
    }

    #[test]
    fn optional_tensors_are_ignored() {
        let g = G::new(3, &[(&[0, -1], &[1]), (&[1, -1], &[2])], &[2]);
        let s = partition(&g.graph(&[0, 1]), &[1], Options::default()).unwrap();
        assert_eq!(s, vec![subset(N, &[0], &[0], &[1]), subset(D, &[1], &[1], &[2])]);
    }

    #[test]
    fn errors() {
        let g = demo_model();
        assert_eq!(partition(&g.graph(&g.all()), &[5], Options::default()), Err(PartitionError::InvalidNode(5)));
        assert_eq!(partition(&g.graph(&g.all()), &[-1], Options::default()), Err(PartitionError::InvalidNode(-1)));
        let bad = G::new(2, &[(&[0], &[7])], &[1]);
        assert_eq!(
            partition(&bad.graph(&[0]), &[], Options::default()),
            Err(PartitionError::InvalidTensor { node: 0, tensor: 7 })
        );
        // A cycle: 0 reads what 1 writes and the other way round.
        let cyc = G::new(3, &[(&[1], &[2]), (&[2], &[1])], &[2]);
        assert_eq!(
            partition(&cyc.graph(&[0, 1]), &[0], Options::default()),
            Err(PartitionError::Unschedulable(vec![0, 1]))
        );
        let out = G::new(2, &[(&[0], &[1])], &[9]);
        assert_eq!(partition(&out.graph(&[0]), &[], Options::default()), Err(PartitionError::InvalidOutput(9)));
        assert!(!PartitionError::InvalidNode(5).to_string().is_empty());
    }

    #[test]
    fn nodes_outside_the_plan_can_be_named() {
        // Node 1 is in the table but not in the plan: delegating it changes nothing.
        let g = demo_model();
        let s = partition(&g.graph(&[0]), &[1], Options::default()).unwrap();
        // t2 is read by no node of the plan and is no graph output.
        assert_eq!(s, vec![subset(N, &[0], &[0], &[])]);
    }
}
