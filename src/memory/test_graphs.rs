//! Test helpers: owned graphs that lend out a [`PlanRequest`], and a seeded
//! pseudo-random graph generator (xorshift64; no dependencies).

use super::plan::{NodeTensors, PlanRequest, TensorKind};

/// An owned graph description; `request` borrows it as a [`PlanRequest`].
#[derive(Clone, Debug, Default)]
pub struct TestGraph {
    pub bytes: Vec<usize>,
    pub kind: Vec<TensorKind>,
    pub node_inputs: Vec<Vec<i32>>,
    pub node_outputs: Vec<Vec<i32>>,
    pub node_intermediates: Vec<Vec<i32>>,
    pub node_temporaries: Vec<Vec<i32>>,
    pub node_inplace: Vec<u64>,
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
    pub variables: Vec<i32>,
    pub preserve_inputs: bool,
    pub preserve_intermediates: bool,
}

impl TestGraph {
    /// An empty graph with TFLite's interpreter defaults.
    pub fn new() -> Self {
        Self { preserve_inputs: true, ..Self::default() }
    }

    /// Adds a tensor and returns its index.
    pub fn tensor(&mut self, bytes: usize, kind: TensorKind) -> i32 {
        self.bytes.push(bytes);
        self.kind.push(kind);
        i32::try_from(self.bytes.len() - 1).expect("test graphs are small")
    }

    pub fn arena(&mut self, bytes: usize) -> i32 {
        self.tensor(bytes, TensorKind::Arena)
    }

    /// Appends a node; returns its index in the execution plan.
    pub fn node(&mut self, inputs: &[i32], outputs: &[i32]) -> usize {
        self.node_with_temps(inputs, outputs, &[])
    }

    pub fn node_with_temps(&mut self, inputs: &[i32], outputs: &[i32], temps: &[i32]) -> usize {
        self.node_inputs.push(inputs.to_vec());
        self.node_outputs.push(outputs.to_vec());
        self.node_intermediates.push(Vec::new());
        self.node_temporaries.push(temps.to_vec());
        self.node_inplace.push(0);
        self.node_inputs.len() - 1
    }

    /// Runs `f` on a request borrowing this graph.
    pub fn with_request<R>(&self, f: impl FnOnce(&PlanRequest<'_>) -> R) -> R {
        let nodes: Vec<NodeTensors<'_>> = (0..self.node_inputs.len())
            .map(|i| NodeTensors {
                inputs: &self.node_inputs[i],
                outputs: &self.node_outputs[i],
                intermediates: &self.node_intermediates[i],
                temporaries: &self.node_temporaries[i],
                inplace: self.node_inplace.get(i).copied().unwrap_or(0),
            })
            .collect();
        let req = PlanRequest {
            tensor_bytes: &self.bytes,
            tensor_kind: &self.kind,
            nodes: &nodes,
            graph_inputs: &self.inputs,
            graph_outputs: &self.outputs,
            variables: &self.variables,
            preserve_inputs: self.preserve_inputs,
            preserve_intermediates: self.preserve_intermediates,
            no_sharing: &[],
        };
        f(&req)
    }
}

/// xorshift64 (Marsaglia): tiny, deterministic, good enough for test data.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform-ish in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// A tensor size: sometimes 0, sometimes tiny (alignment effects), usually
    /// log-uniform up to ~16 KiB.
    pub fn size(&mut self) -> usize {
        match self.below(16) {
            0 => 0,
            1..=3 => 1 + self.below(64),
            _ => {
                let shift = self.below(14);
                (1usize << shift) + self.below(1 << shift)
            }
        }
    }
}

/// A random graph in execution order: graph inputs, constants (NotPlanned),
/// variables (Persistent), nodes reading earlier tensors (with optional `-1`s)
/// and writing fresh ones (mostly Arena, some Persistent or NotPlanned),
/// temporaries, unused tensors, and random graph outputs and planner flags.
pub fn random_graph(rng: &mut XorShift) -> TestGraph {
    let mut g = TestGraph::new();
    g.preserve_inputs = !rng.one_in(3);
    g.preserve_intermediates = rng.one_in(8);
    let mut readable: Vec<i32> = Vec::new();
    for _ in 0..rng.below(4) {
        let size = rng.size();
        let t = g.arena(size);
        g.inputs.push(t);
        readable.push(t);
    }
    for _ in 0..rng.below(3) {
        let size = rng.size();
        let t = g.tensor(size, TensorKind::NotPlanned);
        readable.push(t);
    }
    for _ in 0..rng.below(3) {
        let size = rng.size();
        let t = g.tensor(size, TensorKind::Persistent);
        g.variables.push(t);
        readable.push(t);
    }
    let mut produced: Vec<i32> = Vec::new();
    for _ in 0..rng.below(14) {
        let mut ins = Vec::new();
        for _ in 0..rng.below(4) {
            if rng.one_in(8) || readable.is_empty() {
                ins.push(-1);
            } else {
                // Prefer recent tensors, like real graphs (chains with some skips).
                let k = readable.len();
                let back = rng.below(k.min(4)).min(k - 1);
                let pick = if rng.one_in(3) { rng.below(k) } else { k - 1 - back };
                ins.push(readable[pick]);
            }
        }
        let mut outs = Vec::new();
        for _ in 0..1 + rng.below(2) {
            let kind = match rng.below(12) {
                0 => TensorKind::Persistent,
                1 => TensorKind::NotPlanned,
                _ => TensorKind::Arena,
            };
            let size = rng.size();
            let t = g.tensor(size, kind);
            outs.push(t);
        }
        if rng.one_in(10) {
            outs.push(-1);
        }
        let mut temps = Vec::new();
        for _ in 0..rng.below(3) {
            if rng.one_in(2) {
                let size = rng.size();
                temps.push(g.arena(size));
            }
        }
        g.node_with_temps(&ins, &outs, &temps);
        readable.extend(outs.iter().copied().filter(|&t| t >= 0));
        produced.extend(outs.iter().copied().filter(|&t| t >= 0));
    }
    for &t in &produced {
        if rng.one_in(4) {
            g.outputs.push(t);
        }
    }
    if let Some(&last) = produced.last()
        && !g.outputs.contains(&last)
        && !rng.one_in(4)
    {
        g.outputs.push(last);
    }
    if rng.one_in(6) && !g.inputs.is_empty() {
        let t = g.inputs[0];
        g.outputs.push(t);
    }
    for _ in 0..rng.below(2) {
        let size = rng.size();
        g.arena(size); // dangling: never produced, never allocated
    }
    g
}
