//! How the pool's threads wait for each other: poll for a bounded time, then sleep.
//!
//! Polling answers within a fraction of a microsecond, where waking a sleeping thread
//! costs a system call for the waker and tens of microseconds for the sleeper (longer in
//! a virtual machine, whose idle vCPU has to be scheduled again). But a thread that polls
//! holds a CPU: on a machine with more runnable threads than CPUs, it may hold the very
//! CPU that the thread it waits for needs, and then polling makes the wait longer, not
//! shorter. So polling stops early, and the thread sleeps, as soon as the machine shows
//! that it is busy: when a yield hands its CPU to another thread, or when the poller finds
//! it was descheduled for long (its clock jumped between two polls by more than a
//! virtual machine's host takes a vCPU away for now and then: those short pauses say
//! nothing about this machine's threads, and sleeping through them would make every
//! following op wake the thread again).

use std::time::{Duration, Instant};

/// Polls between two clock readings (one `pause` each: on Zen 4 about 1.5 µs together).
const POLLS_PER_CHECK: u32 = 64;

/// A gap this long between two clock readings means the poller did not run in between
/// for longer than a host's short steals of a vCPU: the machine had something else to run
/// on this CPU.
const DESCHEDULED: Duration = Duration::from_millis(5);

/// A yield that returns this late ran another thread: the CPU is shared.
const YIELDED: Duration = Duration::from_micros(500);

/// How often a poller offers its CPU to other runnable threads. On an idle CPU the yield
/// returns at once (a system call, well under a microsecond); on a shared one it lets the
/// thread being waited for run, and the gap it leaves ends the polling.
const YIELD_EVERY: Duration = Duration::from_micros(20);

/// Why [`poll`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Polled<T> {
    /// The condition held; here is what it returned.
    Ready(T),
    /// `limit` passed, or the poller was descheduled: the caller should sleep.
    GiveUp,
}

/// Polls `ready` until it returns `Some`, `limit` passes or the thread is found to share
/// its CPU (see the module comment).
pub(super) fn poll<T>(limit: Duration, ready: impl Fn() -> Option<T>) -> Polled<T> {
    let start = Instant::now();
    let mut last_check = start;
    let mut last_yield = start;
    loop {
        for _ in 0..POLLS_PER_CHECK {
            if let Some(v) = ready() {
                return Polled::Ready(v);
            }
            std::hint::spin_loop();
        }
        let now = Instant::now();
        if now.duration_since(last_check) >= DESCHEDULED || now.duration_since(start) >= limit {
            return ready().map_or(Polled::GiveUp, Polled::Ready);
        }
        last_check = now;
        if now.duration_since(last_yield) >= YIELD_EVERY {
            std::thread::yield_now();
            last_yield = Instant::now();
            if last_yield.duration_since(now) >= YIELDED {
                return ready().map_or(Polled::GiveUp, Polled::Ready);
            }
            last_check = last_yield;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn ready_at_once_returns_its_value() {
        assert_eq!(poll(Duration::ZERO, || Some(7)), Polled::Ready(7));
    }

    #[test]
    fn never_ready_gives_up() {
        assert_eq!(poll(Duration::from_micros(200), || None::<()>), Polled::GiveUp);
    }

    #[test]
    fn ready_after_a_while_is_seen() {
        let calls = AtomicUsize::new(0);
        let ready = || (calls.fetch_add(1, Ordering::Relaxed) >= 1000).then_some(());
        // A busy test machine may deschedule the poller: it then gives up, and polls again.
        while poll(Duration::from_secs(60), ready) == Polled::GiveUp {}
        assert!(calls.load(Ordering::Relaxed) > 1000);
    }
}
