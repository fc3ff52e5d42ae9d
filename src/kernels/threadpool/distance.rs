//! How far apart the cores of the pool's threads are, measured now and then.
//!
//! Splitting an op leaves half its output in the worker's cache, and the ops after it
//! (most of which run on one thread) read it from there. On cores that share a cache
//! that is nearly free, but when the threads run on cores far apart (different chiplets
//! or sockets, which a virtual machine's vCPUs may become at any moment as the host moves
//! them) a cache line written by the other core costs several times a local one, and a
//! split op loses more in the ops after it than it saves. The round trip of one cache
//! line between the two threads tells the cases apart (about 60 ns on near cores, over
//! 300 ns on far ones), and it is cheap enough to measure a few times a second.

use super::pool::pool;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A cache-line round trip slower than this marks the cores as far apart. Placements
/// measuring up to about 250 ns still gained fully from splitting; the slow ones measured
/// 330 ns and more.
const FAR_ROUND_TRIP: Duration = Duration::from_nanos(300);

/// How long a measurement stays valid (the host moves vCPUs every few seconds at most).
const VALID_FOR: Duration = Duration::from_millis(200);

/// Round trips per measurement (a few microseconds on near cores, ~10 µs on far ones).
const ROUND_TRIPS: u64 = 32;

/// Round trips timed together (see [`ping`]).
const GROUP: u64 = 8;

/// How long the measuring side waits for the other to show up (a sleeping worker takes
/// tens of microseconds to wake) and for each answer.
const ARRIVAL_LIMIT: Duration = Duration::from_micros(300);
const ANSWER_LIMIT: Duration = Duration::from_micros(50);

/// The value of the shared word that ends a measurement.
const ENDED: u64 = u64::MAX;

struct State {
    /// Nanoseconds since `origin` when the last measurement started (0: never).
    measured_at: AtomicU64,
    /// 1 if the last measurement found the cores far apart.
    far: AtomicU64,
    origin: Instant,
}

fn state() -> &'static State {
    static S: OnceLock<State> = OnceLock::new();
    S.get_or_init(|| State { measured_at: AtomicU64::new(0), far: AtomicU64::new(0), origin: Instant::now() })
}

/// Whether the pool's threads run on cores far apart, measured again when the last
/// measurement is older than [`VALID_FOR`].
pub(super) fn cores_far_apart() -> bool {
    let s = state();
    let now = s.origin.elapsed().as_nanos() as u64 + 1;
    let last = s.measured_at.load(Ordering::Relaxed);
    let stale = last == 0 || now.saturating_sub(last) > VALID_FOR.as_nanos() as u64;
    // One thread measures; the others use the last answer meanwhile.
    if stale
        && s.measured_at.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        && let Some(rt) = round_trip()
    {
        s.far.store(u64::from(rt > FAR_ROUND_TRIP), Ordering::Relaxed);
    }
    s.far.load(Ordering::Relaxed) == 1
}

/// The mean round trip of a cache line between the calling thread and a worker, or
/// `None` if no worker took part in time.
fn round_trip() -> Option<Duration> {
    let word = AtomicU64::new(0);
    let result = AtomicU64::new(0);
    let pool = pool();
    // Not from inside another job (its submitter holds the pool): nobody would answer.
    let _submitting = pool.submit.try_lock()?;
    if pool.ensure_workers(1) == 0 {
        return None;
    }
    // Task 0 (the caller's share) measures, task 1 (the worker's) answers. If the worker
    // does not come, the caller runs task 1 itself after giving up, which then ends at once.
    pool.run(1, 2, &|task| {
        if task == 0 {
            if let Some(rt) = ping(&word) {
                result.store(rt.as_nanos() as u64 + 1, Ordering::Relaxed);
            }
        } else {
            pong(&word);
        }
    });
    match result.load(Ordering::Relaxed) {
        0 => None,
        ns => Some(Duration::from_nanos(ns - 1)),
    }
}

/// Waits until `word` holds `want`; false if the measurement ended or `limit` passed
/// first.
fn wait_for(word: &AtomicU64, want: u64, limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        for _ in 0..64 {
            match word.load(Ordering::Acquire) {
                v if v == want => return true,
                ENDED => return false,
                _ => {}
            }
            std::hint::spin_loop();
        }
        if start.elapsed() > limit {
            return false;
        }
    }
}

/// The measuring side: waits for the answerer to arrive (it sets 1), then sends even
/// values and waits for each one plus one.
fn ping(word: &AtomicU64) -> Option<Duration> {
    if !wait_for(word, 1, ARRIVAL_LIMIT) && word.compare_exchange(0, ENDED, Ordering::AcqRel, Ordering::Acquire).is_ok()
    {
        return None;
    }
    // Timed in groups, keeping the fastest group: an answerer preempted for a moment
    // slows one group, not the verdict (a mean over all trips read such blips as far).
    let mut fastest = Duration::MAX;
    let mut start = Instant::now();
    for i in 1..=ROUND_TRIPS {
        word.store(2 * i, Ordering::Release);
        if !wait_for(word, 2 * i + 1, ANSWER_LIMIT) {
            word.store(ENDED, Ordering::Release);
            return None;
        }
        if i % GROUP == 0 {
            fastest = fastest.min(start.elapsed() / GROUP as u32);
            start = Instant::now();
        }
    }
    word.store(ENDED, Ordering::Release);
    Some(fastest)
}

/// The answering side: announces itself, then answers every even value with the next
/// odd one until the measurement ends (or goes quiet: the end value is not awaited).
fn pong(word: &AtomicU64) {
    if word.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_err() {
        return;
    }
    let mut next = 2;
    while wait_for(word, next, ARRIVAL_LIMIT) {
        word.store(next + 1, Ordering::Release);
        next += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_is_measured_or_skipped_without_hanging() {
        for _ in 0..20 {
            if let Some(rt) = round_trip() {
                assert!(rt < Duration::from_millis(1), "{rt:?}");
            }
        }
        cores_far_apart();
    }

    #[test]
    fn an_answerer_without_a_measurer_returns() {
        let word = AtomicU64::new(ENDED);
        pong(&word);
        let word = AtomicU64::new(0);
        pong(&word);
        assert_eq!(word.load(Ordering::Relaxed), 1);
    }
}
