//! Measurement behind a trait, clocks, and the deterministic fakes used to test the
//! selection logic without a GPU.
//!
//! - [`Profiler`]: one timed launch of the kernel with a given local size, in ns (on
//!   OpenCL: a profiling queue, `CL_PROFILING_COMMAND_END - START`). The OpenCL
//!   implementation lives with the delegate; the tuner only sees this trait.
//! - [`Clock`]: wall time for budgets. Budgets count *wall* time, not event time: PoCL
//!   JIT-compiles every new local size outside the event (100-500 ms each).
//! - [`FakeProfiler`] + [`FakeClock`]: a synthetic cost function (e.g. a
//!   [`Landscape`]) times seeded multiplicative log-normal noise, optional outliers
//!   (x100 and x0.01), a per-launch overhead and a one-time "JIT" cost per local size;
//!   every call advances the fake clock by what it would have cost.
//! - [`ReplayProfiler`]: replays recorded samples per local size (e.g. from a PoCL or GPU
//!   run), so real distributions become deterministic tests.
//! - [`XorShift64`]: the tiny seeded RNG behind all of it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::candidates::{WorkGroup, divide_round_up};
use crate::error::{Error, Result};

/// One timed launch of a kernel with local size `candidate`: elapsed device time in ns,
/// or why it could not run (e.g. `CL_INVALID_WORK_GROUP_SIZE`).
pub trait Profiler {
    fn time(&mut self, candidate: WorkGroup) -> Result<f64>;
}

/// Wall clock in ns since an arbitrary origin.
pub trait Clock {
    fn now_ns(&self) -> u64;
}

/// The real clock (monotonic).
#[derive(Clone, Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    pub fn new() -> Self {
        SystemClock { origin: Instant::now() }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// A clock that only moves when told to; clones share the same time.
#[derive(Clone, Debug, Default)]
pub struct FakeClock {
    ns: Arc<AtomicU64>,
}

impl FakeClock {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn advance(&self, ns: u64) {
        let _ = self.ns.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| Some(v.saturating_add(ns)));
    }
    pub fn advance_f64(&self, ns: f64) {
        if ns.is_finite() && ns > 0.0 {
            self.advance(ns.min(u64::MAX as f64) as u64);
        }
    }
}

impl Clock for FakeClock {
    fn now_ns(&self) -> u64 {
        self.ns.load(Ordering::SeqCst)
    }
}

/// splitmix64 step (seed scrambler).
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Marsaglia's xorshift64 with a splitmix64-scrambled seed (never zero).
#[derive(Clone, Debug)]
pub struct XorShift64 {
    state: u64,
}

impl XorShift64 {
    pub fn new(seed: u64) -> Self {
        let s = splitmix64(seed);
        XorShift64 { state: if s == 0 { 0x2545_F491_4F6C_DD1D } else { s } }
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }
    /// Uniform in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform integer in `[0, n)`; 0 for `n == 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }
    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64(); // (0, 1]
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        if items.is_empty() {
            return None;
        }
        Some(items[self.below(items.len() as u64) as usize])
    }
}

/// A synthetic, GPU-like cost of launching a kernel over `grid` with a given local size.
///
/// `t = groups * lanes * ns_per_lane * coalescing(x) * size(total) * tail(groups) *
/// rugged(wg) / compute_units + groups * group_overhead_ns / compute_units`, where
/// `lanes` rounds the group up to the SIMD width (partial warps waste lanes), `groups`
/// includes padding, `tail` is the last-wave imbalance over the compute units,
/// `coalescing` penalises narrow x (uncoalesced loads), `size` is a log-quadratic
/// preference around a sweet-spot total (register pressure vs. scheduling), and
/// `rugged` a fixed per-local-size log-normal factor (cache/bank effects nobody models)
/// so that no analytic score predicts the optimum exactly.
#[derive(Clone, Debug, PartialEq)]
pub struct Landscape {
    pub grid: WorkGroup,
    pub ns_per_lane: f64,
    pub simd_width: usize,
    pub compute_units: usize,
    pub coalesce_x: usize,
    pub coalesce_penalty: f64,
    pub sweet_total: usize,
    pub size_penalty: f64,
    pub group_overhead_ns: f64,
    pub rugged_sigma: f64,
    pub rugged_seed: u64,
}

impl Landscape {
    /// A random landscape for `grid` drawn from `rng` (parameters within ranges that
    /// give best/worst ratios of a few x, as measured on PoCL: 1.8x-11x).
    pub fn random(grid: WorkGroup, rng: &mut XorShift64) -> Self {
        Landscape {
            grid,
            ns_per_lane: 0.5 + 2.0 * rng.next_f64(),
            simd_width: rng.pick(&[8, 16, 32, 64]).unwrap_or(32),
            compute_units: rng.pick(&[2, 4, 8, 16, 40]).unwrap_or(8),
            coalesce_x: rng.pick(&[1, 4, 8, 16, 32]).unwrap_or(8),
            coalesce_penalty: 0.05 + 0.25 * rng.next_f64(),
            sweet_total: rng.pick(&[32, 64, 128, 256, 512]).unwrap_or(128),
            size_penalty: 0.01 + 0.05 * rng.next_f64(),
            group_overhead_ns: 20.0 + 500.0 * rng.next_f64(),
            rugged_sigma: 0.02 + 0.08 * rng.next_f64(),
            rugged_seed: rng.next_u64(),
        }
    }

    /// True (noise-free) cost in ns; finite and positive for non-zero local sizes.
    pub fn cost_ns(&self, wg: WorkGroup) -> f64 {
        if wg.contains(&0) {
            return f64::INFINITY;
        }
        let g = self.grid;
        let groups = divide_round_up(g[0], wg[0]) as f64
            * divide_round_up(g[1], wg[1]) as f64
            * divide_round_up(g[2], wg[2]) as f64;
        let total = wg[0] as f64 * wg[1] as f64 * wg[2] as f64;
        let simd = self.simd_width.max(1) as f64;
        let lanes = (total / simd).ceil() * simd;
        let cu = self.compute_units.max(1) as f64;
        let tail = (groups / cu).ceil() * cu / groups;
        let coalesce = 1.0 + self.coalesce_penalty * ((self.coalesce_x.max(1) as f64) / wg[0] as f64).log2().max(0.0);
        let dist = total.log2() - (self.sweet_total.max(1) as f64).log2();
        let size = 1.0 + self.size_penalty * dist * dist;
        let mut r =
            XorShift64::new(self.rugged_seed ^ splitmix64((wg[0] as u64) << 42 ^ (wg[1] as u64) << 21 ^ wg[2] as u64));
        let rugged = (self.rugged_sigma * r.normal()).exp();
        groups * lanes * self.ns_per_lane * coalesce * size * tail * rugged / cu + groups * self.group_overhead_ns / cu
    }
}

/// Multiplicative measurement noise: `exp(sigma * N(0,1))`, and with probability
/// `outlier_rate` an outlier factor (x100 half the time, x0.01 the other half).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseModel {
    pub sigma: f64,
    pub outlier_rate: f64,
    pub high_factor: f64,
    pub low_factor: f64,
}

impl NoiseModel {
    pub fn lognormal(sigma: f64) -> Self {
        NoiseModel { sigma, outlier_rate: 0.0, high_factor: 100.0, low_factor: 0.01 }
    }
    pub fn with_outliers(mut self, rate: f64) -> Self {
        self.outlier_rate = rate;
        self
    }
}

type CostFn = Box<dyn Fn(WorkGroup) -> f64 + Send>;

/// A fake profiler over a synthetic cost function, advancing a [`FakeClock`].
pub struct FakeProfiler {
    cost: CostFn,
    pub noise: NoiseModel,
    rng: XorShift64,
    pub clock: FakeClock,
    /// Added to the clock (not to the sample) for every launch.
    pub launch_overhead_ns: f64,
    /// Added to the clock the first time a local size is launched (PoCL's per-local-size
    /// JIT; outside the event, so not in the sample).
    pub jit_ns: f64,
    seen: HashSet<WorkGroup>,
    /// Local sizes that fail to launch.
    pub failing: HashSet<WorkGroup>,
    /// Number of `time` calls (launches), failures included.
    pub calls: usize,
    /// Launches per local size.
    pub per_candidate: HashMap<WorkGroup, usize>,
    /// The largest wall time one call consumed (for budget assertions).
    pub max_call_ns: f64,
}

impl FakeProfiler {
    pub fn new(
        cost: impl Fn(WorkGroup) -> f64 + Send + 'static,
        noise: NoiseModel,
        seed: u64,
        clock: FakeClock,
    ) -> Self {
        FakeProfiler {
            cost: Box::new(cost),
            noise,
            rng: XorShift64::new(seed),
            clock,
            launch_overhead_ns: 0.0,
            jit_ns: 0.0,
            seen: HashSet::new(),
            failing: HashSet::new(),
            calls: 0,
            per_candidate: HashMap::new(),
            max_call_ns: 0.0,
        }
    }

    pub fn from_landscape(l: Landscape, noise: NoiseModel, seed: u64, clock: FakeClock) -> Self {
        Self::new(move |wg| l.cost_ns(wg), noise, seed, clock)
    }

    /// The noise-free cost of a local size.
    pub fn true_cost(&self, wg: WorkGroup) -> f64 {
        (self.cost)(wg)
    }
}

impl Profiler for FakeProfiler {
    fn time(&mut self, candidate: WorkGroup) -> Result<f64> {
        self.calls += 1;
        *self.per_candidate.entry(candidate).or_insert(0) += 1;
        let mut wall = self.launch_overhead_ns;
        if self.seen.insert(candidate) {
            wall += self.jit_ns;
        }
        if self.failing.contains(&candidate) {
            self.clock.advance_f64(wall);
            self.max_call_ns = self.max_call_ns.max(wall);
            crate::bail!("CL_INVALID_WORK_GROUP_SIZE for {candidate:?}");
        }
        let mut t = (self.cost)(candidate) * (self.noise.sigma * self.rng.normal()).exp();
        if self.noise.outlier_rate > 0.0 && self.rng.next_f64() < self.noise.outlier_rate {
            t *= if self.rng.next_f64() < 0.5 { self.noise.high_factor } else { self.noise.low_factor };
        }
        if t.is_finite() && t > 0.0 {
            wall += t;
        }
        self.clock.advance_f64(wall);
        self.max_call_ns = self.max_call_ns.max(wall);
        Ok(t)
    }
}

/// Replays recorded samples per local size (cycling); unknown sizes are errors. Advances
/// an optional fake clock by each replayed sample.
pub struct ReplayProfiler {
    samples: HashMap<WorkGroup, Vec<f64>>,
    cursor: HashMap<WorkGroup, usize>,
    pub clock: Option<FakeClock>,
    pub calls: usize,
}

impl ReplayProfiler {
    pub fn new(samples: HashMap<WorkGroup, Vec<f64>>) -> Self {
        ReplayProfiler { samples, cursor: HashMap::new(), clock: None, calls: 0 }
    }

    /// Parses `x,y,z,ns` lines (blank lines and `#` comments ignored).
    pub fn from_csv(text: &str) -> Result<Self> {
        let mut samples: HashMap<WorkGroup, Vec<f64>> = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            if f.len() != 4 {
                crate::bail!("line {}: expected x,y,z,ns", i + 1);
            }
            let mut wg = [0usize; 3];
            for a in 0..3 {
                wg[a] = f[a].parse().map_err(|_| Error::new(format!("line {}: bad size {:?}", i + 1, f[a])))?;
            }
            let ns: f64 = f[3].parse().map_err(|_| Error::new(format!("line {}: bad time {:?}", i + 1, f[3])))?;
            samples.entry(wg).or_default().push(ns);
        }
        Ok(Self::new(samples))
    }
}

impl Profiler for ReplayProfiler {
    fn time(&mut self, candidate: WorkGroup) -> Result<f64> {
        self.calls += 1;
        let list = self
            .samples
            .get(&candidate)
            .filter(|l| !l.is_empty())
            .ok_or_else(|| Error::new(format!("no recorded samples for {candidate:?}")))?;
        let c = self.cursor.entry(candidate).or_insert(0);
        let t = list[*c % list.len()];
        *c += 1;
        if let Some(clock) = &self.clock {
            clock.advance_f64(t);
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorshift_is_deterministic_and_sane() {
        let mut a = XorShift64::new(42);
        let mut b = XorShift64::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut r = XorShift64::new(0);
        let n = 20_000;
        let xs: Vec<f64> = (0..n).map(|_| r.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.03, "{mean}");
        assert!((var - 1.0).abs() < 0.05, "{var}");
        assert!((0..1000).all(|_| (0.0..1.0).contains(&r.next_f64())));
    }

    #[test]
    fn fake_clock_and_profiler() {
        let clock = FakeClock::new();
        let mut p = FakeProfiler::new(|wg| (wg[0] * 100) as f64, NoiseModel::lognormal(0.0), 1, clock.clone());
        p.jit_ns = 1000.0;
        p.launch_overhead_ns = 10.0;
        assert_eq!(p.time([2, 1, 1]).unwrap(), 200.0);
        assert_eq!(clock.now_ns(), 1210);
        assert_eq!(p.time([2, 1, 1]).unwrap(), 200.0);
        assert_eq!(clock.now_ns(), 1420);
        p.failing.insert([3, 1, 1]);
        assert!(p.time([3, 1, 1]).is_err());
        assert_eq!(p.calls, 3);
    }

    #[test]
    fn landscape_is_deterministic_and_varied() {
        let mut r = XorShift64::new(7);
        let l = Landscape::random([64, 64, 16], &mut r);
        assert_eq!(l.cost_ns([8, 8, 1]), l.cost_ns([8, 8, 1]));
        assert!(l.cost_ns([0, 8, 1]).is_infinite());
        let costs: Vec<f64> = [[1, 64, 1], [8, 8, 1], [16, 16, 1], [64, 1, 16]].iter().map(|&w| l.cost_ns(w)).collect();
        assert!(costs.iter().all(|c| c.is_finite() && *c > 0.0));
        let max = costs.iter().cloned().fold(0.0, f64::max);
        let min = costs.iter().cloned().fold(f64::INFINITY, f64::min);
        assert!(max / min > 1.05);
    }

    #[test]
    fn replay() {
        let mut p = ReplayProfiler::from_csv("# x,y,z,ns\n8,8,1,100\n8,8,1,120\n4,4,1,90\n").unwrap();
        assert_eq!(p.time([8, 8, 1]).unwrap(), 100.0);
        assert_eq!(p.time([8, 8, 1]).unwrap(), 120.0);
        assert_eq!(p.time([8, 8, 1]).unwrap(), 100.0);
        assert_eq!(p.time([4, 4, 1]).unwrap(), 90.0);
        assert!(p.time([1, 1, 1]).is_err());
        assert!(ReplayProfiler::from_csv("1,2,3").is_err());
        assert!(ReplayProfiler::from_csv("a,2,3,4").is_err());
    }
}
