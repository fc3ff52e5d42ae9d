//! The persistent worker threads and how a job is handed to them.
//!
//! A job runs while its submitter waits, so its tasks may borrow from the submitter's
//! stack. The tasks are cut into one contiguous share per thread, the submitter's first,
//! and each thread runs its own share from the front: a kernel whose consecutive ops
//! split their outputs alike then finds its input in its own core's cache, which matters
//! when the cores are far apart (a cache line written by another core costs several times
//! a local one). A thread that runs out of work takes tasks from the back of the others'
//! shares, so a worker that arrives late leaves its share to the others, and one that
//! never arrives (asleep, or descheduled on a busy machine) costs nothing: the submitter
//! waits only for the workers that joined. A worker joins by incrementing the job word
//! while the job is open; the submitter closes the job once every task has been claimed,
//! and returns when the workers inside have left. Handing over a job takes no lock and,
//! while the workers poll, no system call.

use super::wait::{Polled, poll};
use parking_lot::{Condvar, Mutex};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// Workers never exceed this (a job asking for more threads runs on fewer).
pub(super) const MAX_WORKERS: usize = 63;

/// How long an idle worker polls for the next job before it sleeps. Between two split
/// ops a model runs ops that stay on one thread (adds, activations, small convolutions),
/// often for a few hundred microseconds; a worker that sleeps through them is woken by a
/// system call and joins tens of microseconds late. Polling stops early on a busy machine
/// (see `wait`), so the long limit costs only CPU time nothing else wanted.
const WORKER_POLL: Duration = Duration::from_millis(2);

/// How long a submitter that has run out of tasks polls for the workers' last ones before
/// it sleeps (they are running, so they usually finish well within this).
const SUBMITTER_POLL: Duration = Duration::from_micros(200);

// The job word: which job (epoch), whether it still takes workers, how many it may take
// and how many are inside.
const ACTIVE_BITS: u32 = 8;
const ACTIVE_ONE: u64 = 1;
const ACTIVE_MASK: u64 = (1 << ACTIVE_BITS) - 1;
const CAP_SHIFT: u32 = ACTIVE_BITS;
const OPEN: u64 = 1 << (2 * ACTIVE_BITS);
const EPOCH_SHIFT: u32 = 2 * ACTIVE_BITS + 1;

fn epoch(word: u64) -> u64 {
    word >> EPOCH_SHIFT
}

fn active(word: u64) -> usize {
    (word & ACTIVE_MASK) as usize
}

/// Whether worker `id` (1 to the number of workers) may join the job `word` describes.
fn joinable(word: u64, id: usize) -> bool {
    word & OPEN != 0 && id as u64 <= (word >> CAP_SHIFT) & ACTIVE_MASK
}

/// One thread's share of a job's tasks: the next task from the front (its owner's end)
/// in the low half, one past the last unclaimed task (where others take from) in the high
/// half. Padded so that threads claiming from different shares do not share a line.
#[repr(align(128))]
struct Share(AtomicU64);

const FRONT_MASK: u64 = u32::MAX as u64;
const BACK_ONE: u64 = 1 << 32;

impl Share {
    fn new(first: usize, end: usize) -> Share {
        Share(AtomicU64::new(first as u64 | (end as u64) << 32))
    }

    /// Claims the first unclaimed task (`from_back`: the last).
    fn claim(&self, from_back: bool) -> Option<usize> {
        let mut s = self.0.load(Ordering::Relaxed);
        loop {
            let (front, back) = (s & FRONT_MASK, s >> 32);
            if front >= back {
                return None;
            }
            let (next, task) = if from_back { (s - BACK_ONE, back - 1) } else { (s + 1, front) };
            match self.0.compare_exchange_weak(s, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(task as usize),
                Err(now) => s = now,
            }
        }
    }
}

/// One job, on its submitter's stack for as long as a worker may use it.
struct Job {
    /// The submitter's task function, lifetime-erased: it is only called for task
    /// indices below the task count, by the submitter or by a worker inside the job, and
    /// the submitter returns (ending the borrow) only after every worker has left.
    f: *const (dyn Fn(usize) + Sync + 'static),
    /// Thread `t`'s share is `shares[t]` (the submitter is thread 0).
    shares: Vec<Share>,
    panicked: AtomicBool,
}

impl Job {
    /// `tasks` cut into `threads` contiguous shares of sizes differing by at most one.
    /// Task indices must fit in 32 bits.
    fn new(f: *const (dyn Fn(usize) + Sync + 'static), tasks: usize, threads: usize) -> Job {
        let shares = (0..threads).map(|t| Share::new(tasks * t / threads, tasks * (t + 1) / threads)).collect();
        Job { f, shares, panicked: AtomicBool::new(false) }
    }

    /// Runs thread `me`'s share, then tasks taken from the other shares, until no task
    /// is left unclaimed.
    fn run_tasks(&self, me: usize) {
        let n = self.shares.len();
        for k in 0..n {
            let t = (me + k) % n;
            while let Some(i) = self.shares[t].claim(k != 0) {
                self.run(i);
            }
        }
    }

    fn run(&self, i: usize) {
        // SAFETY: this thread is the submitter or a worker inside the job, so the
        // submitter is still waiting and the closure behind `f` is alive (see `Job::f`).
        let f = unsafe { &*self.f };
        if catch_unwind(AssertUnwindSafe(|| f(i))).is_err() {
            self.panicked.store(true, Ordering::Relaxed);
        }
    }
}

/// Pads what the workers poll onto a cache line of its own.
#[repr(align(128))]
struct Padded<T>(T);

pub(super) struct Pool {
    /// The job word (see the constants above); only the submitter changes the epoch.
    word: Padded<AtomicU64>,
    /// The published job; valid while the word says open or a worker is inside.
    job: AtomicPtr<Job>,
    /// Workers asleep (or about to sleep) on `wake`.
    sleepers: AtomicUsize,
    sleep: Mutex<()>,
    wake: Condvar,
    /// Whether the submitter sleeps on `done` until the last worker leaves.
    submitter_asleep: AtomicBool,
    done: Mutex<()>,
    done_cv: Condvar,
    workers: AtomicUsize,
    spawning: Mutex<()>,
    /// Held by the one thread currently submitting.
    pub(super) submit: Mutex<()>,
}

// SAFETY: `job` is only dereferenced by a worker inside the job it points to, which the
// submitter keeps alive until every such worker has left; every other field is
// thread-safe.
unsafe impl Sync for Pool {}
// SAFETY: as above.
unsafe impl Send for Pool {}

pub(super) fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        word: Padded(AtomicU64::new(0)),
        job: AtomicPtr::new(std::ptr::null_mut()),
        sleepers: AtomicUsize::new(0),
        sleep: Mutex::new(()),
        wake: Condvar::new(),
        submitter_asleep: AtomicBool::new(false),
        done: Mutex::new(()),
        done_cv: Condvar::new(),
        workers: AtomicUsize::new(0),
        spawning: Mutex::new(()),
        submit: Mutex::new(()),
    })
}

impl Pool {
    /// Makes sure `n` workers exist (up to [`MAX_WORKERS`]); returns how many do.
    pub(super) fn ensure_workers(&'static self, n: usize) -> usize {
        let n = n.min(MAX_WORKERS);
        let have = self.workers.load(Ordering::Acquire);
        if have >= n {
            return have;
        }
        let _g = self.spawning.lock();
        while self.workers.load(Ordering::Acquire) < n {
            let id = self.workers.load(Ordering::Acquire) + 1;
            let spawned = std::thread::Builder::new().name("tflite-rs-kernel".into()).spawn(move || self.worker(id));
            if spawned.is_err() {
                break;
            }
            self.workers.store(id, Ordering::Release);
        }
        self.workers.load(Ordering::Acquire)
    }

    /// Runs `tasks` calls of `f` on the calling thread and up to `helpers` workers (at
    /// most as many as exist), and returns whether any panicked. The caller holds
    /// `submit`; `tasks` fits in 32 bits.
    pub(super) fn run(&self, helpers: usize, tasks: usize, f: &(dyn Fn(usize) + Sync)) -> bool {
        // SAFETY: only the lifetime is erased (same fat-pointer layout); this function
        // returns only after every worker that joined the job has left it, so `f`
        // outlives every call made through the erased pointer.
        let f: *const (dyn Fn(usize) + Sync + 'static) =
            unsafe { core::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), _>(f as *const _) };
        let job = Job::new(f, tasks, helpers + 1);
        self.job.store(&job as *const Job as *mut Job, Ordering::Relaxed);
        // The previous job is closed with nobody inside, and no worker can change a
        // closed word, so this thread alone writes it now.
        let prev = self.word.0.load(Ordering::Relaxed);
        let cap = (helpers.min(ACTIVE_MASK as usize) as u64) << CAP_SHIFT;
        self.word.0.store(((epoch(prev) + 1) << EPOCH_SHIFT) | OPEN | cap, Ordering::SeqCst);
        // Pairs with the sleepers' increment before they look at the word (both SeqCst):
        // either this sees a sleeper, or that sleeper sees the new job.
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = self.sleep.lock();
            for _ in 0..helpers {
                if !self.wake.notify_one() {
                    break;
                }
            }
        }
        job.run_tasks(0);
        let closed = self.word.0.fetch_and(!OPEN, Ordering::AcqRel);
        if active(closed) > 0 {
            self.wait_for_workers();
        }
        self.job.store(std::ptr::null_mut(), Ordering::Relaxed);
        job.panicked.load(Ordering::Relaxed)
    }

    /// Waits until no worker is inside the (closed) job.
    fn wait_for_workers(&self) {
        let left = || (active(self.word.0.load(Ordering::Acquire)) == 0).then_some(());
        if poll(SUBMITTER_POLL, left) == Polled::Ready(()) {
            return;
        }
        let mut g = self.done.lock();
        // Pairs with `leave` (both SeqCst): either the last worker sees this flag, or this
        // thread sees the word with nobody inside.
        self.submitter_asleep.store(true, Ordering::SeqCst);
        while active(self.word.0.load(Ordering::SeqCst)) > 0 {
            self.done_cv.wait(&mut g);
        }
        self.submitter_asleep.store(false, Ordering::Relaxed);
    }

    /// Worker `id` (1 to the number of workers): thread `id` of every job it joins.
    fn worker(&self, id: usize) {
        let mut seen = epoch(self.word.0.load(Ordering::Acquire));
        loop {
            let word = self.wait_for_job(seen);
            seen = epoch(word);
            self.join_and_run(word, id);
        }
    }

    /// Waits for a word with an epoch other than `seen`, and returns it.
    fn wait_for_job(&self, seen: u64) -> u64 {
        let fresh = || {
            let w = self.word.0.load(Ordering::Acquire);
            (epoch(w) != seen).then_some(w)
        };
        if let Polled::Ready(w) = poll(WORKER_POLL, fresh) {
            return w;
        }
        let mut g = self.sleep.lock();
        // Pairs with the submitter's look at `sleepers` (see `run`).
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let w = loop {
            let w = self.word.0.load(Ordering::SeqCst);
            if epoch(w) != seen {
                break w;
            }
            self.wake.wait(&mut g);
        };
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        w
    }

    /// Joins the job `word` describes if it still takes workers, runs tasks, and leaves.
    fn join_and_run(&self, mut word: u64, id: usize) {
        loop {
            if !joinable(word, id) {
                return;
            }
            match self.word.0.compare_exchange_weak(word, word + ACTIVE_ONE, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => break,
                // Another worker joined or left, the job closed, or (after it closed and
                // emptied) the next job was published: that one is for the next round.
                Err(now) if epoch(now) == epoch(word) => word = now,
                Err(_) => return,
            }
        }
        let job = self.job.load(Ordering::Relaxed);
        // SAFETY: this worker is inside the job (the increment above succeeded on the
        // word that published it, which the store of `job` happened before), and the
        // submitter keeps the job alive until every worker inside has left.
        unsafe { &*job }.run_tasks(id);
        self.leave();
    }

    fn leave(&self) {
        let before = self.word.0.fetch_sub(ACTIVE_ONE, Ordering::SeqCst);
        if before & OPEN == 0 && active(before) == 1 && self.submitter_asleep.load(Ordering::SeqCst) {
            let _g = self.done.lock();
            self.done_cv.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_packs_epoch_cap_and_workers_inside() {
        let w = (5 << EPOCH_SHIFT) | OPEN | (2 << CAP_SHIFT);
        assert_eq!(epoch(w), 5);
        assert_eq!(active(w), 0);
        assert!(joinable(w, 1));
        assert!(joinable(w + ACTIVE_ONE, 2));
        assert!(!joinable(w, 3), "beyond the cap");
        assert!(!joinable((w + ACTIVE_ONE) & !OPEN, 2), "closed");
        assert_eq!(active(w + 2 * ACTIVE_ONE), 2);
        assert_eq!(epoch(w + 2 * ACTIVE_ONE), 5);
        assert!(MAX_WORKERS as u64 <= ACTIVE_MASK);
    }

    #[test]
    fn shares_are_contiguous_and_cover_every_task() {
        for tasks in 0..20 {
            for threads in 1..6 {
                let job = Job::new(std::ptr::null::<fn(usize)>() as *const (dyn Fn(usize) + Sync), tasks, threads);
                let mut next = 0;
                for share in &job.shares {
                    let s = share.0.load(Ordering::Relaxed);
                    assert_eq!((s & FRONT_MASK) as usize, next);
                    next = (s >> 32) as usize;
                    assert!(next - (s & FRONT_MASK) as usize <= tasks.div_ceil(threads));
                }
                assert_eq!(next, tasks);
            }
        }
    }

    #[test]
    fn a_share_is_claimed_from_both_ends_exactly_once() {
        let share = Share::new(3, 9);
        let mut got = vec![share.claim(false), share.claim(true), share.claim(false), share.claim(true)];
        got.extend(std::iter::from_fn(|| share.claim(false)).map(Some));
        assert_eq!(got, [Some(3), Some(8), Some(4), Some(7), Some(5), Some(6)]);
        assert_eq!(share.claim(true), None);
    }
}
