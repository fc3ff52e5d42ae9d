//! Whether a subgraph runs on its configured threads or on one: decided by timing whole
//! Invokes, so that more threads are never slower than one.
//!
//! Splitting an op over threads pays when the threads' cores share data cheaply. On a
//! virtual machine the host may place the vCPUs on distant cores, where reading what the
//! other core wrote costs several times a local read, and then a graph whose ops each
//! split can run slower on two threads than on one; the placement also changes while the
//! process runs. So every `ROUND` Invokes the subgraph samples both settings (`SAMPLES`
//! Invokes each, alternating) and keeps the one with the lower median until the next
//! round. The median, not the fastest: on distant cores two threads run fast now and then
//! but slow most of the time, and the typical Invoke is what a user waits for. Ties go to one thread, which leaves the
//! other core free. The answer does not depend on it: every kernel computes each output
//! value the same way whatever the thread count (a test checks the bits).
//!
//! Only a subgraph with more than one thread configured and no delegate applied is
//! timed; `TFLITE_RS_FIXED_THREADS=1` (or `InterpreterConfig::adaptive_threads = false`)
//! keeps the configured count.

use std::time::Duration;

/// Invokes per setting in a sampling round (odd: the median is one of them).
const SAMPLES: u64 = 5;
/// Invokes from one sampling round to the next (the first `2 * SAMPLES` of them sample).
const ROUND: u64 = 128;

/// The timing state of one subgraph.
#[derive(Debug, Default)]
pub(crate) struct ThreadChoice {
    /// Invokes timed so far.
    invokes: u64,
    /// This round's Invoke times on the configured threads, and on one thread.
    samples: [Vec<Duration>; 2],
    /// The setting the last round chose.
    single: bool,
}

impl ThreadChoice {
    /// True if the next Invoke should run on one thread.
    pub(crate) fn next_is_single(&self) -> bool {
        let at = self.invokes % ROUND;
        if at < 2 * SAMPLES { at % 2 == 1 } else { self.single }
    }

    /// Records how long an Invoke took on the setting [`Self::next_is_single`] gave.
    pub(crate) fn record(&mut self, single: bool, took: Duration) {
        let at = self.invokes % ROUND;
        if at < 2 * SAMPLES {
            if at == 0 {
                self.samples.iter_mut().for_each(Vec::clear);
            }
            self.samples[usize::from(single)].push(took);
            if at == 2 * SAMPLES - 1
                && let (Some(configured), Some(one)) = (median(&mut self.samples[0]), median(&mut self.samples[1]))
            {
                self.single = one <= configured;
            }
        }
        self.invokes += 1;
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

    #[test]
    fn the_faster_setting_wins_each_round() {
        let mut c = ThreadChoice::default();
        // Sampling alternates, starting on the configured threads.
        assert!(!c.next_is_single());
        run(&mut c, 1, 5, 9);
        assert!(c.next_is_single());
        run(&mut c, 2 * SAMPLES - 1, 5, 9);
        assert!(!c.chose_single());
        assert!(!c.next_is_single());
        // The machine changes: one thread becomes faster; the next round notices.
        run(&mut c, ROUND - 2 * SAMPLES, 5, 3);
        assert!(!c.chose_single(), "decided only in sampling rounds");
        run(&mut c, 2 * SAMPLES, 5, 3);
        assert!(c.chose_single());
        assert!(c.next_is_single());
    }

    #[test]
    fn the_typical_invoke_counts_and_ties_go_to_one_thread() {
        let mut c = ThreadChoice::default();
        // One slow outlier on the configured threads does not decide the round.
        c.record(false, Duration::from_millis(50));
        for _ in 1..2 * SAMPLES {
            let single = c.next_is_single();
            c.record(single, Duration::from_millis(4));
        }
        assert!(c.chose_single(), "equal medians: one thread");
        // Two threads fast once but slow as a rule: one thread wins.
        let mut c = ThreadChoice::default();
        for k in 0..2 * SAMPLES {
            let single = c.next_is_single();
            let ms = if single {
                10
            } else if k == 0 {
                6
            } else {
                13
            };
            c.record(single, Duration::from_millis(ms));
        }
        assert!(c.chose_single());
    }
}
