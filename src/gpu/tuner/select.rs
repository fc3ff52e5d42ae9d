//! Choosing one work group from the candidates by measuring them.
//!
//! ## TFLite's way ([`select_tflite`])
//! `ProfilingCommandQueue::GetBestWorkGroupIndex`: every candidate (duplicates included) is
//! launched **once**, back to back, and the index of the smallest time wins (first one on
//! ties). No warm-up, no repetition, no baseline, no budget. On Adreno 3xx ("can have
//! wrong numbers for some events") the average of the times below 100 s is taken and the
//! minimum is searched among times `>= 0.1 * average` only. Zero candidates is the error
//! "Can not found work_group size to launch kernel"; one candidate is taken unmeasured.
//! A single sample per candidate makes the argmin a lottery among the near-best ones and
//! lets one lucky (or broken) sample win: on PoCL its picks ranked 5th..151st by median.
//!
//! ## Ours ([`select`]) — a race with a baseline
//! 1. Candidates come deduplicated with the **baseline** (TFLite's FAST pick) first
//!    ([`super::candidates::our_candidates`]); zero → the same error, one → no measuring.
//! 2. **Warm-up and screening**, candidate by candidate (baseline first, so a budget cut
//!    still leaves the first ones measured): `warmup` untimed launches (PoCL JITs every
//!    new local size, drivers allocate lazily), then one timed sample. A screening sample
//!    below 0.1x or above 10x the screening median, or implausible, is re-taken (up to
//!    twice) so one broken event neither eliminates nor promotes a candidate. Kept: those
//!    within `screen_keep_ratio` of the best, at least the best `screen_keep_fraction` (and
//!    `screen_keep_min`), always the baseline.
//! 3. **Race**: one more sample per survivor per round, interleaved in a rotating order
//!    (A B C, B C A, …) so drift (DVFS, thermals) hits everyone alike. Implausible samples
//!    are dropped (not finite, `<= 0`, `> 100 s`, or `< 0.1 x` the round's median —
//!    TFLite's Adreno-3xx filter generalised). Once everyone has `min_samples`, a
//!    candidate is eliminated when its **median** is worse than the leader's by more than
//!    `z_eliminate` standard errors, or when it is not better than the leader while the
//!    race already resolves `indifference` (differences that small are not worth time).
//!    The noise level is estimated robustly from the data (pooled MAD of log-times), so
//!    low-noise devices finish in a few rounds and noisy ones sample more. The baseline is
//!    never eliminated. The race ends when one contender is left or at `max_samples`.
//! 4. **Duel and tie rule**: the best contender and the baseline are sampled further, and
//!    judged on these *fresh* samples only (the contender was picked for a low median, so
//!    its race samples are biased low — the winner's curse). The duel looks at the data
//!    whenever the fresh count doubles and stops when the contender is clearly beyond the
//!    tie margin, clearly not, or when the measurement is precise enough, else at
//!    `tie_max_samples`. The contender replaces the baseline only if its median is faster
//!    by more than `max(tie_min, z_tie standard errors)`; otherwise the baseline is kept.
//!    Choices are therefore stable across runs and never worse than TFLite's untuned
//!    pick beyond noise.
//! 5. **Budgets**: before every launch the clock is checked against the per-op cap
//!    (`op_budget_ns`) and the per-model deadline; the decision is then made from the
//!    samples so far. A stop by the per-op cap is a complete result (cacheable); a stop by
//!    the model deadline is not (`complete == false`: the caller should use it now and tune
//!    again later). The overrun is at most one launch.
//! 6. A candidate whose launch fails is dropped (a failing baseline hands the role to the
//!    next candidate in list order); if all fail the last error is returned.
//!
//! ## Measured on the fake profiler (tests below; 1000 seeds, 14 mobile-model grids,
//! random GPU-like landscapes, log-normal noise)
//! | noise | tuner | regret < 5 % | mean regret | launches/op |
//! |---|---|---|---|---|
//! | 10 % | ours, [`Policy::full`] | 99.7 % | 0.36 % | 903 |
//! | 10 % | TFLite single-shot | 63.8 % | 4.96 % | 85 |
//! | 10 % | ours, [`Policy::budgeted`] (300 seeds) | 93.3 % | 1.29 % | 414 |
//! | 2 % | ours, full (300 seeds) | 100 % | 0.15 % | 301 |
//! | 2 % | TFLite single-shot (300 seeds) | 94.3 % | 1.36 % | 81 |
//!
//! Pruning the list to 24 candidates *before* measuring (even shape-stratified) cost
//! more than it saved (mean regret 6.3 %, worse than single-shot): measurement-based
//! screening is the pruning that works, so no level caps the list.

use std::fmt;

use super::candidates::{DeviceInfo, NO_CANDIDATE_ERROR, WorkGroup};
use super::profiler::{Clock, Profiler};
use crate::error::{Error, Result};

/// Times above this (100 s) are treated as broken events (TFLite's Adreno-3xx rule).
pub const MAX_PLAUSIBLE_NS: f64 = 100.0 * 1e9;
/// Samples below this fraction of the round's median are discarded.
pub const LOW_OUTLIER_FRACTION: f64 = 0.1;
/// Standard error of a median relative to that of a mean (normal data): sqrt(pi/2).
const MEDIAN_SE_FACTOR: f64 = 1.253_314_137_315_500_3;
/// MAD to standard deviation (normal data).
const MAD_TO_SIGMA: f64 = 1.482_602_218_505_602;

/// No work-group candidate (TFLite's NotFound error).
pub(super) fn no_candidate() -> Error {
    Error::new(NO_CANDIDATE_ERROR)
}

/// The profiler failed (TFLite) or every candidate failed to launch (ours).
fn tuning_failed(why: impl fmt::Display) -> Error {
    Error::new(format!("{TUNING_FAILED}{why}"))
}

/// How the messages of [`tuning_failed`] begin.
const TUNING_FAILED: &str = "work-group tuning failed: ";

/// TFLite's choice from single samples (`GetBestWorkGroupIndex`): argmin, first on ties;
/// with `possible_bug_with_events` (Adreno 3xx) only among times `>= 0.1 x` the average of
/// the times below 100 s. Index 0 when nothing qualifies.
pub fn tflite_best_index(times_ns: &[f64], possible_bug_with_events: bool) -> usize {
    let mut min_index = 0;
    let mut min_time = f64::MAX;
    if possible_bug_with_events {
        let plausible: Vec<f64> = times_ns.iter().copied().filter(|&t| t < MAX_PLAUSIBLE_NS).collect();
        let average = plausible.iter().sum::<f64>() / plausible.len() as f64;
        for (i, &t) in times_ns.iter().enumerate() {
            if t < min_time && t >= 0.1 * average {
                min_index = i;
                min_time = t;
            }
        }
    } else {
        for (i, &t) in times_ns.iter().enumerate() {
            if t < min_time {
                min_index = i;
                min_time = t;
            }
        }
    }
    min_index
}

/// TFLite's selection: no candidate → error; one → index 0 unmeasured; else every
/// candidate timed once in list order and [`tflite_best_index`]. A profiler error aborts
/// (TFLite's `RETURN_IF_ERROR`).
pub fn select_tflite(candidates: &[WorkGroup], profiler: &mut dyn Profiler, device: &DeviceInfo) -> Result<usize> {
    match candidates.len() {
        0 => return Err(no_candidate()),
        1 => return Ok(0),
        _ => {}
    }
    let mut times = Vec::with_capacity(candidates.len());
    for &c in candidates {
        times.push(profiler.time(c).map_err(tuning_failed)?);
    }
    Ok(tflite_best_index(&times, device.is_adreno3xx()))
}

/// Knobs of [`select`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    /// Untimed launches per candidate before measuring.
    pub warmup: usize,
    /// Screening keeps candidates whose single sample is within this ratio of the best...
    pub screen_keep_ratio: f64,
    /// ...and at least this fraction of them (by rank)...
    pub screen_keep_fraction: f64,
    /// ...and at least this many.
    pub screen_keep_min: usize,
    /// Race: differences below this (relative) are not worth resolving; a candidate not
    /// faster than the leader is dropped once the race resolves this much.
    pub indifference: f64,
    /// Samples per candidate before statistical elimination starts.
    pub min_samples: usize,
    /// Race cap: samples per candidate.
    pub max_samples: usize,
    /// Duel cap: samples of the baseline and the best contender.
    pub tie_max_samples: usize,
    /// Elimination threshold in standard errors of the difference of log-medians.
    pub z_eliminate: f64,
    /// The duel stops early when the difference is this many standard errors beyond (or
    /// short of) the tie margin.
    pub z_stop: f64,
    /// The contender must beat the baseline by this many standard errors...
    pub z_tie: f64,
    /// ...and by at least this relative margin (0.02 = 2 %).
    pub tie_min: f64,
    /// Noise level (log-sd) assumed when it cannot be estimated yet.
    pub prior_sigma: f64,
    /// Wall-time cap per op (ns); reaching it ends tuning with a complete result.
    pub op_budget_ns: Option<u64>,
}

impl Policy {
    /// Thorough tuning (SUSTAINED_SPEED).
    pub fn full() -> Self {
        Policy {
            warmup: 1,
            screen_keep_ratio: 1.3,
            screen_keep_fraction: 0.25,
            screen_keep_min: 4,
            indifference: 0.02,
            min_samples: 3,
            max_samples: 96,
            tie_max_samples: 256,
            z_eliminate: 3.0,
            z_stop: 3.0,
            z_tie: 2.0,
            tie_min: 0.02,
            prior_sigma: 0.1,
            op_budget_ns: None,
        }
    }

    /// Cheaper tuning (BALANCED): fewer samples, per-op cap of 200 ms.
    pub fn budgeted() -> Self {
        Policy {
            screen_keep_fraction: 0.15,
            screen_keep_min: 3,
            max_samples: 24,
            tie_max_samples: 48,
            op_budget_ns: Some(200_000_000),
            ..Policy::full()
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::full()
    }
}

/// How [`select`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// One candidate: taken without measuring.
    Single,
    /// The fastest by median (the baseline itself, or a contender clearly faster than it).
    Fastest,
    /// A contender was faster but not clearly: the baseline was kept (tie rule).
    KeptBaseline,
    /// Nothing was measured before the deadline: the baseline, untuned.
    Untimed,
}

/// Per-candidate measurement summary.
#[derive(Clone, Debug, PartialEq)]
pub struct CandidateStats {
    pub work_group: WorkGroup,
    pub samples: usize,
    pub median_ns: Option<f64>,
    pub failed: bool,
}

/// The outcome of [`select`].
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    /// Index into the candidate list.
    pub index: usize,
    pub work_group: WorkGroup,
    pub baseline_index: usize,
    pub decision: Decision,
    /// Profiler calls, warm-ups and failures included.
    pub launches: usize,
    /// False when the model deadline cut tuning short (use now, tune again later).
    pub complete: bool,
    pub median_ns: Option<f64>,
    pub baseline_median_ns: Option<f64>,
    /// Wall time spent (by the given clock).
    pub elapsed_ns: u64,
    pub stats: Vec<CandidateStats>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Model,
    Op,
}

fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 { s[n / 2] } else { 0.5 * (s[n / 2 - 1] + s[n / 2]) })
}

fn plausible(t: f64) -> bool {
    t.is_finite() && t > 0.0 && t <= MAX_PLAUSIBLE_NS
}

struct Race<'a> {
    cands: &'a [WorkGroup],
    profiler: &'a mut dyn Profiler,
    clock: &'a dyn Clock,
    model_deadline: Option<u64>,
    op_deadline: Option<u64>,
    samples: Vec<Vec<f64>>,
    failed: Vec<bool>,
    /// Timed (non-warm-up) launches per candidate.
    attempts: Vec<usize>,
    launches: usize,
    last_error: Option<String>,
    stop: Option<Stop>,
}

/// Re-takes of a suspicious screening sample.
const SCREEN_RETRIES: usize = 2;

/// Timed launches without a single plausible sample after which a candidate is dropped.
const MAX_IMPLAUSIBLE_ATTEMPTS: usize = 3;

impl Race<'_> {
    fn time_left(&mut self) -> bool {
        if self.stop.is_some() {
            return false;
        }
        let now = self.clock.now_ns();
        if self.model_deadline.is_some_and(|d| now >= d) {
            self.stop = Some(Stop::Model);
        } else if self.op_deadline.is_some_and(|d| now >= d) {
            self.stop = Some(Stop::Op);
        }
        self.stop.is_none()
    }

    fn launch(&mut self, i: usize) -> Option<f64> {
        if !self.time_left() {
            return None;
        }
        self.launches += 1;
        match self.profiler.time(self.cands[i]) {
            Ok(t) => Some(t),
            Err(e) => {
                self.failed[i] = true;
                self.last_error = Some(e.message);
                None
            }
        }
    }

    /// One launch per alive candidate starting at `rotation`; records plausible samples
    /// unless `warmup`.
    fn round(&mut self, alive: &[usize], rotation: usize, warmup: bool) {
        let n = alive.len();
        let mut got = Vec::with_capacity(n);
        for k in 0..n {
            let i = alive[(k + rotation) % n];
            if self.failed[i] {
                continue;
            }
            if !self.time_left() {
                break;
            }
            if let Some(t) = self.launch(i) {
                if !warmup {
                    self.attempts[i] += 1;
                }
                if plausible(t) {
                    got.push((i, t));
                }
            }
        }
        if warmup {
            return;
        }
        let times: Vec<f64> = got.iter().map(|g| g.1).collect();
        let floor = if times.len() >= 2 { median(&times).unwrap_or(0.0) * LOW_OUTLIER_FRACTION } else { 0.0 };
        for (i, t) in got {
            if t >= floor {
                self.samples[i].push(t);
            }
        }
        for &i in alive {
            if self.attempts[i] >= MAX_IMPLAUSIBLE_ATTEMPTS && self.samples[i].is_empty() && !self.failed[i] {
                self.failed[i] = true;
                self.last_error = Some(format!("no plausible timing for {:?}", self.cands[i]));
            }
        }
    }

    fn median_of(&self, i: usize) -> Option<f64> {
        median(&self.samples[i])
    }

    /// Pooled robust log-sd of the candidates in `set` (those with >= 2 samples).
    fn sigma(&self, set: &[usize]) -> Option<f64> {
        pooled_sigma(set.iter().map(|&i| self.samples[i].as_slice()))
    }

    /// The noise level from every candidate's samples: a property of the device and the
    /// kernel, estimated far better from hundreds of residuals than from one pair.
    fn sigma_all(&self) -> Option<f64> {
        pooled_sigma(self.samples.iter().map(Vec::as_slice))
    }

    fn se(&self, sigma: f64, i: usize, j: usize) -> f64 {
        se_of(sigma, self.samples[i].len(), self.samples[j].len())
    }

    fn first_working(&self) -> Option<usize> {
        (0..self.cands.len()).find(|&i| !self.failed[i])
    }
}

/// Pooled robust log-sd (MAD of log residuals around each set's median) of the sets with
/// at least 2 samples; `None` with fewer than 2 residuals.
fn pooled_sigma<'s>(sets: impl Iterator<Item = &'s [f64]>) -> Option<f64> {
    let mut res = Vec::new();
    for s in sets {
        if s.len() < 2 {
            continue;
        }
        let Some(m) = median(s) else { continue };
        let lm = m.ln();
        let mut r: Vec<f64> = s.iter().map(|&t| (t.ln() - lm).abs()).collect();
        if r.len() % 2 == 1 {
            // The median itself has residual 0; it carries no spread information.
            if let Some(z) = r.iter().position(|&v| v == 0.0) {
                r.swap_remove(z);
            }
        }
        res.extend(r);
    }
    if res.len() < 2 {
        return None;
    }
    median(&res).map(|m| m * MAD_TO_SIGMA)
}

/// Standard error of the difference of two log-medians of `ni` and `nj` samples.
fn se_of(sigma: f64, ni: usize, nj: usize) -> f64 {
    MEDIAN_SE_FACTOR * sigma * (1.0 / ni.max(1) as f64 + 1.0 / nj.max(1) as f64).sqrt()
}

/// Our selection (see the module docs). `baseline` indexes the baseline in `candidates`
/// (0 for [`super::candidates::our_candidates`] lists); `model_deadline` is an absolute
/// time of `clock` after which tuning must stop (the per-model budget).
pub fn select(
    candidates: &[WorkGroup],
    baseline: usize,
    profiler: &mut dyn Profiler,
    clock: &dyn Clock,
    policy: &Policy,
    model_deadline: Option<u64>,
) -> Result<Selection> {
    let n = candidates.len();
    if n == 0 {
        return Err(no_candidate());
    }
    let mut b = if baseline < n { baseline } else { 0 };
    if n == 1 {
        return Ok(Selection {
            index: 0,
            work_group: candidates[0],
            baseline_index: 0,
            decision: Decision::Single,
            launches: 0,
            complete: true,
            median_ns: None,
            baseline_median_ns: None,
            elapsed_ns: 0,
            stats: vec![CandidateStats { work_group: candidates[0], samples: 0, median_ns: None, failed: false }],
        });
    }
    let start = clock.now_ns();
    let mut race = Race {
        cands: candidates,
        profiler,
        clock,
        model_deadline,
        op_deadline: policy.op_budget_ns.map(|d| start.saturating_add(d)),
        samples: vec![Vec::new(); n],
        failed: vec![false; n],
        attempts: vec![0; n],
        launches: 0,
        last_error: None,
        stop: None,
    };

    // Baseline first, then list order.
    let mut alive: Vec<usize> = std::iter::once(b).chain((0..n).filter(|&i| i != b)).collect();
    let fix_baseline = |race: &Race, alive: &mut Vec<usize>, b: &mut usize| {
        alive.retain(|&i| !race.failed[i]);
        if race.failed[*b]
            && let Some(nb) = race.first_working()
        {
            *b = nb;
            if !alive.contains(&nb) {
                alive.insert(0, nb);
            }
        }
    };

    // 2-3. Warm-up and one screening sample, candidate by candidate (baseline first), so a
    // budget cut still leaves the first candidates measured.
    let mut first: Vec<Option<f64>> = vec![None; n];
    for &i in &alive {
        for _ in 0..policy.warmup {
            if race.launch(i).is_none() {
                break;
            }
        }
        if race.failed[i] {
            continue;
        }
        if let Some(t) = race.launch(i) {
            race.attempts[i] += 1;
            first[i] = Some(t);
        }
        if race.stop.is_some() {
            break;
        }
    }
    // Screening samples far from the others (< 0.1x or > 10x the median, or implausible)
    // are re-taken once: one broken event must not eliminate (or promote) a candidate.
    let plausible_firsts: Vec<f64> = first.iter().flatten().copied().filter(|&t| plausible(t)).collect();
    let screen_median = median(&plausible_firsts);
    let suspicious = |t: f64| {
        !plausible(t) || screen_median.is_some_and(|m| t < LOW_OUTLIER_FRACTION * m || t > m / LOW_OUTLIER_FRACTION)
    };
    for &i in &alive {
        let Some(mut t) = first[i] else { continue };
        // Up to SCREEN_RETRIES re-takes while suspicious; a candidate that stays high is
        // genuinely slow (its smallest time is kept), one that stays low or broken is not
        // recorded (it gets no screening rank).
        let mut highs: Vec<f64> = Vec::new();
        let mut retries = 0;
        while suspicious(t) && retries < SCREEN_RETRIES {
            if plausible(t) && screen_median.is_some_and(|m| t > m) {
                highs.push(t);
            }
            retries += 1;
            match race.launch(i) {
                Some(t2) => {
                    race.attempts[i] += 1;
                    t = t2;
                }
                None => break,
            }
        }
        if !suspicious(t) {
            race.samples[i].push(t);
        } else {
            if plausible(t) && screen_median.is_some_and(|m| t > m) {
                highs.push(t);
            }
            if let Some(h) = highs.into_iter().min_by(f64::total_cmp) {
                race.samples[i].push(h);
            }
        }
    }
    fix_baseline(&race, &mut alive, &mut b);
    if race.stop.is_none() {
        let mut ranked: Vec<(usize, f64)> =
            alive.iter().filter_map(|&i| race.samples[i].first().map(|&t| (i, t))).collect();
        ranked.sort_by(|x, y| x.1.total_cmp(&y.1).then(x.0.cmp(&y.0)));
        let best = ranked.first().map(|r| r.1).unwrap_or(f64::INFINITY);
        let keep_n = policy.screen_keep_min.max((policy.screen_keep_fraction * ranked.len() as f64).ceil() as usize);
        let mut keep: Vec<usize> = ranked
            .iter()
            .enumerate()
            .filter(|(rank, r)| *rank < keep_n || r.1 <= policy.screen_keep_ratio * best)
            .map(|(_, r)| r.0)
            .collect();
        if !keep.contains(&b) {
            keep.push(b);
        }
        keep.sort_unstable_by_key(|&i| (i != b, i));
        alive = keep;
    }

    // 4. Race.
    let mut round_no = 1;
    let max_rounds = 4 * policy.max_samples + 8;
    while race.stop.is_none() && alive.len() > 2 && round_no <= max_rounds {
        if alive.iter().all(|&i| race.samples[i].len() >= policy.max_samples) {
            break;
        }
        race.round(&alive, round_no, false);
        round_no += 1;
        fix_baseline(&race, &mut alive, &mut b);
        if alive.iter().all(|&i| race.samples[i].len() >= policy.min_samples.max(2)) {
            let sigma = race.sigma(&alive).unwrap_or(policy.prior_sigma);
            let meds: Vec<(usize, f64)> = alive.iter().filter_map(|&i| race.median_of(i).map(|m| (i, m))).collect();
            if let Some(&(leader, lm)) = meds.iter().min_by(|x, y| x.1.total_cmp(&y.1)) {
                // Clearly worse than the leader, or (indifference zone) not better than the
                // leader while the measurement resolves differences of `indifference`: such a
                // candidate is at most that much faster than the leader, not worth more time.
                let indifferent = (1.0 + policy.indifference).ln();
                let eliminated: Vec<usize> = meds
                    .iter()
                    .filter(|&&(i, m)| {
                        let zse = policy.z_eliminate * race.se(sigma, i, leader);
                        let d = m.ln() - lm.ln();
                        i != b && i != leader && (d > zse || (d >= 0.0 && zse < indifferent))
                    })
                    .map(|r| r.0)
                    .collect();
                alive.retain(|i| !eliminated.contains(i));
            }
        }
    }

    // The best contender (not the baseline) by median.
    let best_contender = |race: &Race, alive: &[usize], b: usize| -> Option<(usize, f64)> {
        alive
            .iter()
            .filter(|&&i| i != b && !race.failed[i])
            .filter_map(|&i| race.median_of(i).map(|m| (i, m)))
            .min_by(|x, y| x.1.total_cmp(&y.1).then(x.0.cmp(&y.0)))
    };

    // 5. Duel between the baseline and the best contender, judged on fresh samples only
    // (the contender was selected for a low median: its earlier samples are biased low).
    // The difference is looked at when the fresh sample count doubles, stopping early
    // only when it is beyond `z_stop` standard errors or when the tie margin is resolved.
    let mut duel: Option<(usize, usize, usize)> = None; // (contender, fresh start b, fresh start c)
    if race.stop.is_none()
        && let Some((c, _)) = best_contender(&race, &alive, b)
    {
        let (sb, sc) = (race.samples[b].len(), race.samples[c].len());
        duel = Some((c, sb, sc));
        let pair = [b, c];
        let first_look = policy.min_samples.max(2);
        let mut next_look = first_look;
        let mut r = round_no;
        let last_round = round_no + 4 * policy.tie_max_samples + 8;
        loop {
            if race.failed[b] || race.failed[c] || r > last_round {
                break;
            }
            let fb = &race.samples[b][sb..];
            let fc = &race.samples[c][sc..];
            if fb.len() >= policy.tie_max_samples && fc.len() >= policy.tie_max_samples {
                break;
            }
            if fb.len().min(fc.len()) >= next_look {
                next_look = next_look.saturating_mul(2);
                if let (Some(mb), Some(mc)) = (median(fb), median(fc)) {
                    let sigma = race.sigma_all().unwrap_or(policy.prior_sigma);
                    let se = se_of(sigma, fb.len(), fc.len());
                    let d = mb.ln() - mc.ln();
                    // Stop when the contender is clearly beyond the tie margin, clearly
                    // not, or when the measurement is precise enough (the tie margin is at
                    // least twice the noise margin, so a true difference well inside the
                    // margin rarely measures outside). Testing against the margin, not
                    // against zero, keeps optional stopping from inflating switches.
                    let thr = (1.0 + policy.tie_min).ln();
                    let clearly_faster = d - policy.z_stop * se > thr;
                    let clearly_not = d + policy.z_stop * se < thr;
                    if clearly_faster || clearly_not || 2.0 * policy.z_tie * se <= thr {
                        break;
                    }
                }
            }
            race.round(&pair, r, false);
            r += 1;
            if race.stop.is_some() {
                break;
            }
        }
        fix_baseline(&race, &mut alive, &mut b);
    }

    // 6. Decide.
    if race.failed.iter().all(|&f| f) {
        return Err(tuning_failed(race.last_error.as_deref().unwrap_or("every candidate failed")));
    }
    let complete = race.stop != Some(Stop::Model);
    let mb_all = race.median_of(b);
    // The samples the decision is based on: the duel's fresh ones when there are enough.
    let (contender, fresh) = match duel {
        Some((c, sb, sc)) if !race.failed[c] && c != b => {
            let enough =
                race.samples[b].len() >= sb + policy.min_samples && race.samples[c].len() >= sc + policy.min_samples;
            (Some(c), if enough { Some((sb, sc)) } else { None })
        }
        _ => (best_contender(&race, &alive, b).map(|x| x.0), None),
    };
    let (index, decision) = match (mb_all, contender) {
        (None, _) => (b, Decision::Untimed),
        (Some(_), None) => (b, Decision::Fastest),
        (Some(_), Some(c)) => {
            let (sb, sc) = fresh.unwrap_or((0, 0));
            let fb = &race.samples[b][sb..];
            let fc = &race.samples[c][sc..];
            match (median(fb), median(fc)) {
                (Some(mb), Some(mc)) => {
                    let sigma = race.sigma_all().unwrap_or(policy.prior_sigma);
                    let margin = (1.0 + policy.tie_min).ln().max(policy.z_tie * se_of(sigma, fb.len(), fc.len()));
                    let d = mb.ln() - mc.ln();
                    if d > margin {
                        (c, Decision::Fastest)
                    } else if d > 0.0 {
                        (b, Decision::KeptBaseline)
                    } else {
                        (b, Decision::Fastest)
                    }
                }
                _ => (b, Decision::Fastest),
            }
        }
    };
    let complete = complete && decision != Decision::Untimed;
    let stats = (0..n)
        .map(|i| CandidateStats {
            work_group: candidates[i],
            samples: race.samples[i].len(),
            median_ns: race.median_of(i),
            failed: race.failed[i],
        })
        .collect();
    Ok(Selection {
        index,
        work_group: candidates[index],
        baseline_index: b,
        decision,
        launches: race.launches,
        complete,
        median_ns: race.median_of(index),
        baseline_median_ns: mb_all,
        elapsed_ns: clock.now_ns().saturating_sub(start),
        stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::tuner::candidates::{
        CandidateOptions, DeviceInfo, GpuVendor, KernelInfo, get_work_group, our_candidates,
        work_groups_aligned_to_grid,
    };
    use crate::gpu::tuner::profiler::{FakeClock, FakeProfiler, Landscape, NoiseModel, XorShift64};

    fn cands(list: &[[usize; 3]]) -> Vec<WorkGroup> {
        list.to_vec()
    }

    /// Profiler over a table of true costs indexed by x (y = z = 1).
    /// Whether tuning failed because of the profiler (not for want of a candidate).
    fn tuning_failure<T>(r: Result<T>) -> bool {
        r.is_err_and(|e| e.message.starts_with(TUNING_FAILED))
    }

    fn table_profiler(costs: Vec<f64>, sigma: f64, seed: u64) -> (FakeProfiler, FakeClock) {
        let clock = FakeClock::new();
        let p = FakeProfiler::new(
            move |wg| costs.get(wg[0]).copied().unwrap_or(f64::INFINITY),
            NoiseModel::lognormal(sigma),
            seed,
            clock.clone(),
        );
        (p, clock)
    }

    #[test]
    fn no_candidate_is_the_tflite_error() {
        let (mut p, clock) = table_profiler(vec![1.0], 0.0, 0);
        let d = DeviceInfo::new([1024; 3]);
        let e = select_tflite(&[], &mut p, &d).unwrap_err();
        assert_eq!(e.to_string(), "Can not found work_group size to launch kernel");
        let e = select(&[], 0, &mut p, &clock, &Policy::full(), None).unwrap_err();
        assert_eq!(e.to_string(), "Can not found work_group size to launch kernel");
        assert_eq!(p.calls, 0);
    }

    #[test]
    fn single_candidate_is_not_measured() {
        let (mut p, clock) = table_profiler(vec![1.0, 5.0], 0.1, 0);
        let d = DeviceInfo::new([1024; 3]);
        assert_eq!(select_tflite(&[[1, 1, 1]], &mut p, &d).unwrap(), 0);
        let s = select(&[[1, 1, 1]], 0, &mut p, &clock, &Policy::full(), None).unwrap();
        assert_eq!((s.index, s.decision, s.launches, s.complete), (0, Decision::Single, 0, true));
        assert_eq!(p.calls, 0);
        assert_eq!(clock.now_ns(), 0);
    }

    #[test]
    fn tflite_single_shot_rules() {
        assert_eq!(tflite_best_index(&[5.0, 3.0, 3.0, 4.0], false), 1);
        // Adreno 3xx: a bogus tiny time and a > 100 s time are ignored.
        let t = [5.0e6, 0.01e6, 4.0e6, 200.0e9, 6.0e6];
        assert_eq!(tflite_best_index(&t, false), 1);
        assert_eq!(tflite_best_index(&t, true), 2);
        assert_eq!(tflite_best_index(&[f64::NAN, f64::NAN], true), 0);
        // Duplicates are all timed: (1,1,1) x 3 -> three launches.
        let (mut p, _) = table_profiler(vec![0.0, 2.0, 1.0], 0.0, 0);
        let d = DeviceInfo::new([1024; 3]);
        assert_eq!(select_tflite(&cands(&[[1, 1, 1], [2, 1, 1], [1, 1, 1], [1, 1, 1]]), &mut p, &d).unwrap(), 1);
        assert_eq!(p.calls, 4);
        // An error aborts.
        p.failing.insert([2, 1, 1]);
        assert!(tuning_failure(select_tflite(&cands(&[[1, 1, 1], [2, 1, 1]]), &mut p, &d)));
        let adreno = DeviceInfo::new([1024; 3]).with_vendor(GpuVendor::Adreno { model: 330 });
        assert!(adreno.is_adreno3xx());
    }

    #[test]
    fn noise_free_returns_true_argmin() {
        let mut rng = XorShift64::new(3);
        for seed in 0..50u64 {
            let costs: Vec<f64> = (0..40).map(|_| 1000.0 + 9000.0 * rng.next_f64()).collect();
            let list: Vec<WorkGroup> = (1..40).map(|x| [x, 1, 1]).collect();
            let best = (0..list.len()).min_by(|&a, &b| costs[list[a][0]].total_cmp(&costs[list[b][0]])).unwrap();
            let (mut p, clock) = table_profiler(costs.clone(), 0.0, seed);
            let pol = Policy { tie_min: 0.0, ..Policy::full() };
            let s = select(&list, 0, &mut p, &clock, &pol, None).unwrap();
            assert_eq!(s.index, best);
            assert!(s.launches < 4 * list.len(), "{}", s.launches);
            let (mut p, _) = table_profiler(costs.clone(), 0.0, seed);
            assert_eq!(select_tflite(&list, &mut p, &DeviceInfo::new([1024; 3])).unwrap(), best);
            // Default tie rule: the true best, or the baseline when within 2 % of it (the
            // baseline is set 1 % above the best in odd seeds to exercise that branch).
            let mut costs = costs.clone();
            if seed % 2 == 1 {
                costs[list[0][0]] = costs[list[best][0]] * 1.01;
            }
            let (mut p, clock) = table_profiler(costs.clone(), 0.0, seed);
            let s = select(&list, 0, &mut p, &clock, &Policy::full(), None).unwrap();
            let ratio = costs[list[0][0]] / costs[list[best][0]] - 1.0;
            if ratio > 0.0201 {
                assert_eq!(s.index, best);
                assert_eq!(s.decision, Decision::Fastest);
            } else {
                assert_eq!(s.index, 0, "ratio {ratio}");
                if seed % 2 == 1 {
                    assert_eq!(s.decision, Decision::KeptBaseline);
                }
            }
        }
    }

    #[test]
    fn tie_rule_keeps_the_baseline() {
        let list: Vec<WorkGroup> = (1..=20).map(|x| [x, 1, 1]).collect();
        // Everyone equal: the baseline must stay (stability across runs).
        let mut kept = 0;
        for seed in 0..200 {
            let (mut p, clock) = table_profiler(vec![1e5; 21], 0.1, seed);
            let s = select(&list, 0, &mut p, &clock, &Policy::full(), None).unwrap();
            kept += usize::from(s.index == 0);
        }
        println!("flat landscape, 10% noise: baseline kept in {kept}/200 seeds");
        assert!(kept >= 194, "{kept}");
        // A contender 1 % faster: still the baseline (within the tie margin).
        let mut costs = vec![1e5; 21];
        costs[7] = 0.99e5;
        let mut kept = 0;
        for seed in 0..200 {
            let (mut p, clock) = table_profiler(costs.clone(), 0.02, seed);
            let s = select(&list, 0, &mut p, &clock, &Policy::full(), None).unwrap();
            kept += usize::from(s.index == 0);
        }
        println!("contender 1% faster, 2% noise: baseline kept in {kept}/200 seeds");
        assert!(kept >= 194, "{kept}");
        // A contender 30 % faster wins every time.
        costs[7] = 0.7e5;
        for seed in 0..200 {
            let (mut p, clock) = table_profiler(costs.clone(), 0.1, seed);
            let s = select(&list, 0, &mut p, &clock, &Policy::full(), None).unwrap();
            assert_eq!(s.index, 6);
            assert_eq!(s.decision, Decision::Fastest);
        }
    }

    #[test]
    fn outliers_never_win() {
        // x100 and x0.01 outliers at 5 %: the 2x slower candidates never win.
        let list: Vec<WorkGroup> = (1..=30).map(|x| [x, 1, 1]).collect();
        let costs: Vec<f64> = (0..=30).map(|x| if x == 13 { 1e5 } else { 2e5 }).collect();
        let mut found = 0;
        for seed in 0..300 {
            let clock = FakeClock::new();
            let c2 = costs.clone();
            let mut p = FakeProfiler::new(
                move |wg| c2[wg[0]],
                NoiseModel::lognormal(0.05).with_outliers(0.05),
                seed,
                clock.clone(),
            );
            let s = select(&list, 0, &mut p, &clock, &Policy::full(), None).unwrap();
            // A slow candidate never wins; only the baseline may be kept, when the fast one's
            // screening samples were all outliers (three x100 in a row).
            assert!(s.work_group == [13, 1, 1] || s.work_group == [1, 1, 1], "seed {seed}: {:?}", s.work_group);
            found += usize::from(s.work_group == [13, 1, 1]);
        }
        println!("outliers (5%, x100/x0.01): the fast candidate found in {found}/300 seeds");
        assert!(found >= 297, "{found}");
    }

    #[test]
    fn failing_candidates_are_skipped() {
        let list: Vec<WorkGroup> = (1..=6).map(|x| [x, 1, 1]).collect();
        let costs = vec![0.0, 5e4, 4e4, 1e4, 3e4, 2e4, 6e4];
        let (mut p, clock) = table_profiler(costs.clone(), 0.0, 1);
        p.failing.insert([3, 1, 1]);
        let s = select(&list, 0, &mut p, &clock, &Policy::full(), None).unwrap();
        assert_eq!(s.work_group, [5, 1, 1]);
        assert!(s.stats[2].failed);
        // Failing baseline: the next candidate becomes the baseline.
        let (mut p, clock) = table_profiler(costs.clone(), 0.0, 1);
        p.failing.insert([1, 1, 1]);
        let s = select(&list, 0, &mut p, &clock, &Policy::full(), None).unwrap();
        assert_eq!(s.baseline_index, 1);
        assert_eq!(s.work_group, [3, 1, 1]);
        // All failing: the error.
        let (mut p, clock) = table_profiler(costs, 0.0, 1);
        for wg in &list {
            p.failing.insert(*wg);
        }
        assert!(tuning_failure(select(&list, 0, &mut p, &clock, &Policy::full(), None)));
    }

    #[test]
    fn budget_is_respected() {
        let mut rng = XorShift64::new(11);
        let grid = [64, 64, 16];
        let d = DeviceInfo::new([1024, 1024, 64]);
        let k = KernelInfo::new(1024);
        let base = get_work_group(grid, 1024);
        let list = our_candidates(grid, &d, &k, &[base], &CandidateOptions::default());
        for seed in 0..50u64 {
            let l = Landscape::random(grid, &mut rng);
            let clock = FakeClock::new();
            let mut p = FakeProfiler::from_landscape(l, NoiseModel::lognormal(0.1), seed, clock.clone());
            p.jit_ns = 2e5;
            p.launch_overhead_ns = 5e3;
            let budget = 1_000_000 + seed * 200_000;
            let pol = Policy { op_budget_ns: Some(budget), ..Policy::full() };
            let s = select(&list, 0, &mut p, &clock, &pol, None).unwrap();
            assert!(clock.now_ns() as f64 <= budget as f64 + p.max_call_ns, "{} > {budget}", clock.now_ns());
            assert!(s.complete, "an op cap is a complete result");
            // The model deadline: the same bound, but incomplete.
            let clock = FakeClock::new();
            let mut p =
                FakeProfiler::from_landscape(l_again(grid, seed), NoiseModel::lognormal(0.1), seed, clock.clone());
            p.jit_ns = 2e5;
            let s = select(&list, 0, &mut p, &clock, &Policy::full(), Some(budget)).unwrap();
            assert!(clock.now_ns() as f64 <= budget as f64 + p.max_call_ns);
            assert!(!s.complete);
        }
        // Deadline already passed: nothing measured, the baseline, untuned.
        let clock = FakeClock::new();
        clock.advance(10);
        let mut p = FakeProfiler::new(|_| 1.0, NoiseModel::lognormal(0.0), 0, clock.clone());
        let s = select(&list, 0, &mut p, &clock, &Policy::full(), Some(5)).unwrap();
        assert_eq!((s.index, s.decision, s.launches, s.complete), (0, Decision::Untimed, 0, false));
        assert_eq!(p.calls, 0);
    }

    #[test]
    fn garbage_timings_and_policies_never_panic() {
        let weird = [f64::NAN, -1.0, 0.0, f64::INFINITY, 1e12, 5e4, 1e5, 2e5];
        let policies = [
            Policy::full(),
            Policy::budgeted(),
            Policy { warmup: 0, min_samples: 0, max_samples: 0, tie_max_samples: 0, ..Policy::full() },
            Policy { screen_keep_fraction: 0.0, screen_keep_min: 0, prior_sigma: f64::NAN, ..Policy::full() },
            Policy { z_eliminate: 0.0, z_tie: 0.0, z_stop: 0.0, tie_min: -1.0, indifference: 10.0, ..Policy::full() },
        ];
        let mut rng = XorShift64::new(5);
        for seed in 0..200u64 {
            let n = 1 + rng.below(12) as usize;
            let costs: Vec<f64> = (0..=n).map(|_| rng.pick(&weird).unwrap_or(1.0)).collect();
            let list: Vec<WorkGroup> = (1..=n).map(|x| [x, 1, 1]).collect();
            for pol in &policies {
                let (mut p, clock) = table_profiler(costs.clone(), 0.1, seed);
                if seed % 3 == 0 {
                    p.failing.insert([1, 1, 1]);
                }
                match select(&list, (seed % 4) as usize, &mut p, &clock, pol, None) {
                    Ok(s) => assert!(s.index < n && list[s.index] == s.work_group),
                    Err(e) if e.message.starts_with(TUNING_FAILED) => {}
                    Err(e) => panic!("{e}"),
                }
                assert!(p.calls < 100_000);
            }
        }
    }

    fn l_again(grid: WorkGroup, seed: u64) -> Landscape {
        Landscape::random(grid, &mut XorShift64::new(seed ^ 0xABCD))
    }

    /// Grids of typical mobile-model kernels (mobilenet / face / hand / selfie shapes).
    const GRIDS: [[usize; 3]; 14] = [
        [64, 64, 16],
        [64, 64, 32],
        [256, 256, 1],
        [128, 128, 1],
        [112, 112, 8],
        [56, 56, 6],
        [28, 28, 8],
        [14, 14, 24],
        [7, 7, 80],
        [32, 32, 4],
        [16, 16, 64],
        [13, 13, 4],
        [10, 10, 30],
        [96, 96, 2],
    ];

    struct Outcome {
        ours_regret: Vec<f64>,
        tflite_regret: Vec<f64>,
        ours_launches: usize,
        tflite_launches: usize,
        ours_ns: f64,
        tflite_ns: f64,
        kept_baseline: usize,
    }

    fn run_seeds(sigma: f64, seeds: u64, policy: &Policy, opts: &CandidateOptions) -> Outcome {
        let mut o = Outcome {
            ours_regret: vec![],
            tflite_regret: vec![],
            ours_launches: 0,
            tflite_launches: 0,
            ours_ns: 0.0,
            tflite_ns: 0.0,
            kept_baseline: 0,
        };
        let d = DeviceInfo::new([1024, 1024, 64]);
        for seed in 0..seeds {
            let mut rng = XorShift64::new(seed);
            let grid = GRIDS[rng.below(GRIDS.len() as u64) as usize];
            let kmax = rng.pick(&[256, 512, 1024]).unwrap_or(1024);
            let k = KernelInfo::new(kmax);
            let land = Landscape::random(grid, &mut rng);
            let base = get_work_group(grid, kmax);
            let ours = our_candidates(grid, &d, &k, &[base], opts);
            let tfl = work_groups_aligned_to_grid(&d, &k, grid);
            let best = ours.iter().chain(tfl.iter()).map(|&w| land.cost_ns(w)).fold(f64::INFINITY, f64::min);

            let clock = FakeClock::new();
            let mut p =
                FakeProfiler::from_landscape(land.clone(), NoiseModel::lognormal(sigma), seed ^ 0x5555, clock.clone());
            let s = select(&ours, 0, &mut p, &clock, policy, None).unwrap();
            o.ours_regret.push(land.cost_ns(s.work_group) / best - 1.0);
            o.ours_launches += s.launches;
            o.ours_ns += clock.now_ns() as f64;
            o.kept_baseline += usize::from(s.decision == Decision::KeptBaseline);
            let r = land.cost_ns(s.work_group) / best - 1.0;
            if r >= 0.05 && std::env::var_os("WG_DEBUG").is_some() {
                let rank = |w: WorkGroup| ours.iter().filter(|&&x| land.cost_ns(x) < land.cost_ns(w)).count();
                println!(
                    "seed {seed} grid {grid:?} regret {:.2}% decision {:?} chosen {:?} (rank {}) baseline {:?} (true {:.2}% over best, rank {}) launches {}",
                    r * 100.0,
                    s.decision,
                    s.work_group,
                    rank(s.work_group),
                    ours[0],
                    (land.cost_ns(ours[0]) / best - 1.0) * 100.0,
                    rank(ours[0]),
                    s.launches
                );
            }

            let clock = FakeClock::new();
            let mut p =
                FakeProfiler::from_landscape(land.clone(), NoiseModel::lognormal(sigma), seed ^ 0xAAAA, clock.clone());
            let i = select_tflite(&tfl, &mut p, &d).unwrap();
            o.tflite_regret.push(land.cost_ns(tfl[i]) / best - 1.0);
            o.tflite_launches += p.calls;
            o.tflite_ns += clock.now_ns() as f64;
        }
        o
    }

    fn summarize(label: &str, o: &Outcome, seeds: u64) -> (f64, f64, f64, f64) {
        let n = seeds as f64;
        let ok = o.ours_regret.iter().filter(|&&r| r < 0.05).count() as f64 / n;
        let ok_t = o.tflite_regret.iter().filter(|&&r| r < 0.05).count() as f64 / n;
        let mean = o.ours_regret.iter().sum::<f64>() / n;
        let mean_t = o.tflite_regret.iter().sum::<f64>() / n;
        let max = o.ours_regret.iter().cloned().fold(0.0, f64::max);
        let max_t = o.tflite_regret.iter().cloned().fold(0.0, f64::max);
        println!(
            "{label}: ours: regret<5% in {:.1}% of seeds, mean regret {:.2}%, max {:.2}%, {:.0} launches/op, {:.2} ms fake time/op, baseline kept by tie rule in {} seeds",
            ok * 100.0,
            mean * 100.0,
            max * 100.0,
            o.ours_launches as f64 / n,
            o.ours_ns / n / 1e6,
            o.kept_baseline
        );
        println!(
            "{label}: TFLite single-shot: regret<5% in {:.1}% of seeds, mean regret {:.2}%, max {:.2}%, {:.0} launches/op, {:.2} ms fake time/op",
            ok_t * 100.0,
            mean_t * 100.0,
            max_t * 100.0,
            o.tflite_launches as f64 / n,
            o.tflite_ns / n / 1e6
        );
        (ok, mean, ok_t, mean_t)
    }

    /// The requirement: at 10 % noise, median-of-repeats regret < 5 % in >= 99 % of
    /// seeds, and single-shot (TFLite's way) worse on average.
    #[test]
    fn regret_at_10_percent_noise_over_1000_seeds() {
        let seeds = 1000;
        let o = run_seeds(0.10, seeds, &Policy::full(), &CandidateOptions::default());
        let (ok, mean, _ok_t, mean_t) = summarize("sigma=10%", &o, seeds);
        assert!(ok >= 0.99, "ours: regret < 5% in only {:.1}% of seeds", ok * 100.0);
        assert!(mean_t > mean, "single-shot mean regret {mean_t} <= ours {mean}");
    }

    #[test]
    fn regret_at_2_percent_noise() {
        let seeds = 300;
        let o = run_seeds(0.02, seeds, &Policy::full(), &CandidateOptions::default());
        let (ok, mean, _, mean_t) = summarize("sigma=2%", &o, seeds);
        assert!(ok >= 0.99);
        assert!(mean < mean_t);
    }

    /// The cheaper BALANCED policy (24 candidates, fewer samples): still better than
    /// single-shot on average.
    #[test]
    fn budgeted_policy_at_10_percent_noise() {
        let seeds = 300;
        let opts = CandidateOptions::default();
        let o = run_seeds(0.10, seeds, &Policy { op_budget_ns: None, ..Policy::budgeted() }, &opts);
        let (ok, mean, ok_t, mean_t) = summarize("budgeted, sigma=10%", &o, seeds);
        assert!(mean < mean_t);
        assert!(ok > ok_t);
        // For the record: a static cap of 24 candidates (shape-stratified) before measuring.
        let capped = CandidateOptions { max_candidates: Some(24), ..CandidateOptions::default() };
        let o = run_seeds(0.10, seeds, &Policy { op_budget_ns: None, ..Policy::budgeted() }, &capped);
        summarize("budgeted + cap 24, sigma=10%", &o, seeds);
    }
}
