//! Whether a subgraph runs on its configured threads or on one: decided by timing whole
//! Invokes, so that more threads are never slower than one.
//!
//! Splitting an op over threads pays when the threads' cores share data cheaply. On a
//! virtual machine the host may place the vCPUs on distant cores, where reading what the
//! other core wrote costs several times a local read, and then a graph whose ops each
//! split can run slower on two threads than on one; the placement also changes while the
//! process runs. So every `ROUND` Invokes the subgraph samples both settings, first the
//! configured threads and then one thread, each for a block of Invokes whose first one
//! only warms up (after a switch the workers may have gone to sleep, and the caches hold
//! what the other setting left where), and keeps the one with the lower median of the
//! rest until the next round (switching to one thread only when it wins two rounds in a
//! row). Each sampling round costs its one-thread block; while the configured threads
//! win clearly (one thread's median at least a quarter slower), the rounds space out,
//! doubling up to `MAX_ROUND` Invokes apart, and any closer result brings them back to
//! every `ROUND`. The median, not the fastest: on distant cores two threads
//! run fast now and then but slow most of the time, and the typical Invoke is what a user
//! waits for. Ties go to one thread, which leaves the other core free. The answer does
//! not depend on it: every kernel computes each output value the same way whatever the
//! thread count (a test checks the bits).
//!
//! Only a subgraph with more than one thread configured and no delegate applied is
//! timed; `TFLITE_RS_FIXED_THREADS=1` (or `InterpreterConfig::adaptive_threads = false`)
//! keeps the configured count.

use std::time::Duration;

/// Invokes timed per setting in a sampling round (odd: the median is one of them).
const SAMPLES: u64 = 5;
/// Invokes that start a setting's block untimed.
const WARM_UP: u64 = 1;
/// A setting's block of Invokes in a sampling round.
const BLOCK: u64 = WARM_UP + SAMPLES;
/// Invokes from one sampling round to the next (the first `2 * BLOCK` of them sample)
/// while the rounds are close calls.
const ROUND: u64 = 128;
/// The widest spacing of sampling rounds, reached while the configured threads win clearly.
const MAX_ROUND: u64 = 2048;

/// The timing state of one subgraph.
#[derive(Debug)]
pub(crate) struct ThreadChoice {
    /// Invokes since this round began.
    at: u64,
    /// Invokes from this round's start to the next one's.
    round: u64,
    /// This round's Invoke times on the configured threads, and on one thread.
    samples: [Vec<Duration>; 2],
    /// The setting chosen now.
    single: bool,
    /// Whether one thread won the last round.
    single_won_last: bool,
}

impl Default for ThreadChoice {
    fn default() -> ThreadChoice {
        ThreadChoice { at: 0, round: ROUND, samples: Default::default(), single: false, single_won_last: false }
    }
}

impl ThreadChoice {
    /// True if the next Invoke should run on one thread.
    pub(crate) fn next_is_single(&self) -> bool {
        let at = self.at;
        if at < 2 * BLOCK { at >= BLOCK } else { self.single }
    }

    /// Records how long an Invoke took on the setting [`Self::next_is_single`] gave.
    pub(crate) fn record(&mut self, single: bool, took: Duration) {
        let at = self.at;
        if at < 2 * BLOCK {
            if at == 0 {
                self.samples.iter_mut().for_each(Vec::clear);
            }
            if at % BLOCK >= WARM_UP {
                self.samples[usize::from(single)].push(took);
            }
            if at == 2 * BLOCK - 1
                && let (Some(configured), Some(one)) = (median(&mut self.samples[0]), median(&mut self.samples[1]))
            {
                // A switch to one thread takes two rounds in a row: one noisy round (a
                // host taking a vCPU away during the configured threads' samples) would
                // otherwise cost a whole round of single-threaded Invokes.
                let single_won = one <= configured;
                self.single = single_won && (self.single || self.single_won_last);
                self.single_won_last = single_won;
                let clear_win = one.as_nanos() * 4 >= configured.as_nanos() * 5;
                self.round = if clear_win { (self.round * 2).min(MAX_ROUND) } else { ROUND };
            }
        }
        self.at += 1;
        if self.at >= self.round {
            self.at = 0;
        }
    }

    /// The setting the last sampling round chose (`true`: one thread).
    pub(crate) fn chose_single(&self) -> bool {
        self.single
    }
}

/// The median of `v` (the upper one of an even count), or `None` when empty.
fn median(v: &mut [Duration]) -> Option<Duration> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(choice: &mut ThreadChoice, invokes: u64, configured_ms: u64, single_ms: u64) {
        for _ in 0..invokes {
            let single = choice.next_is_single();
            choice.record(single, Duration::from_millis(if single { single_ms } else { configured_ms }));
        }
    }

    /// Runs the Invokes left before the next sampling round.
    fn to_next_round(c: &mut ThreadChoice, configured_ms: u64, single_ms: u64) {
        let left = c.round - c.at;
        run(c, left, configured_ms, single_ms);
    }

    #[test]
    fn the_faster_setting_wins_each_round() {
        let mut c = ThreadChoice::default();
        // A round samples a block on the configured threads, then a block on one.
        for k in 0..2 * BLOCK {
            assert_eq!(c.next_is_single(), k >= BLOCK, "invoke {k}");
            run(&mut c, 1, 5, 9);
        }
        assert!(!c.chose_single());
        assert!(!c.next_is_single());
        // The machine changes: one thread becomes faster; two rounds in a row show it.
        to_next_round(&mut c, 5, 3);
        assert!(!c.chose_single(), "decided only in sampling rounds");
        run(&mut c, 2 * BLOCK, 5, 3);
        assert!(!c.chose_single(), "one round is not enough");
        to_next_round(&mut c, 5, 3);
        run(&mut c, 2 * BLOCK, 5, 3);
        assert!(c.chose_single());
        assert!(c.next_is_single());
        // Back to the configured threads as soon as they win a round.
        to_next_round(&mut c, 5, 3);
        run(&mut c, 2 * BLOCK, 2, 3);
        assert!(!c.chose_single());
    }

    #[test]
    fn rounds_space_out_while_the_threads_win_clearly() {
        let mut c = ThreadChoice::default();
        let mut spacing = Vec::new();
        for _ in 0..6 {
            run(&mut c, 2 * BLOCK, 4, 9);
            spacing.push(c.round);
            to_next_round(&mut c, 4, 9);
        }
        assert_eq!(spacing, [256, 512, 1024, 2048, 2048, 2048]);
        assert!(!c.chose_single());
        // A close round (one thread 1.2x slower) brings the rounds back together.
        run(&mut c, 2 * BLOCK, 5, 6);
        assert_eq!(c.round, ROUND);
        assert!(!c.chose_single());
        to_next_round(&mut c, 4, 9);
        run(&mut c, 2 * BLOCK, 4, 9);
        assert_eq!(c.round, 2 * ROUND);
        // So does a round one thread wins.
        to_next_round(&mut c, 4, 9);
        run(&mut c, 2 * BLOCK, 4, 3);
        assert_eq!(c.round, ROUND);
    }

    /// Records one sampling round whose Invoke `k` (of `2 * BLOCK`) took `ms(k)`.
    fn round(c: &mut ThreadChoice, ms: impl Fn(u64) -> u64) {
        for k in 0..2 * BLOCK {
            let single = c.next_is_single();
            c.record(single, Duration::from_millis(ms(k)));
        }
    }

    #[test]
    fn the_typical_invoke_counts_and_ties_go_to_one_thread() {
        // One slow outlier on the configured threads does not decide the round.
        let mut c = ThreadChoice::default();
        round(&mut c, |k| if k == WARM_UP { 50 } else { 4 });
        to_next_round(&mut c, 4, 4);
        round(&mut c, |_| 4);
        assert!(c.chose_single(), "equal medians: one thread");
        // Two threads fast once but slow as a rule: one thread wins.
        let mut c = ThreadChoice::default();
        for _ in 0..2 {
            round(&mut c, |k| match k {
                k if k >= BLOCK => 10,
                k if k == WARM_UP => 6,
                _ => 13,
            });
            to_next_round(&mut c, 13, 10);
        }
        assert!(c.chose_single());
    }

    #[test]
    fn the_first_invoke_of_a_block_only_warms_up() {
        // Slow first Invokes after each switch (workers asleep) decide nothing.
        let mut c = ThreadChoice::default();
        round(&mut c, |k| match k {
            0 => 40,
            k if k == BLOCK => 1,
            k if k >= BLOCK => 9,
            _ => 5,
        });
        assert!(!c.chose_single());
    }
}
