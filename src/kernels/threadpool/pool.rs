//! The persistent worker threads and how a job is handed to them.
//!
//! A job runs while its submitter waits, so its tasks may borrow from the submitter's
//! stack. The tasks are cut into one contiguous share per thread, the submitter's first,
//! and each thread runs its own share from the front: a kernel whose consecutive ops
//! split their outputs alike then finds its input in its own core's cache, which matters
//! when the cores are far apart (a cache line written by another core costs several times
//! a local one).
//!
//! Handing over a job costs what the workers must fetch from the submitter's core, one
//! cache-line transfer after another, before they start; between distant cores each
//! transfer takes about half a microsecond, and a model splits dozens of ops per run. So
//! a worker finds everything it needs to start on the one line it polls (the job's epoch,
//! task count, thread count and task function), and the state it then writes is its own:
//! each thread's share is a counter of its own that carries the epoch of the job that
//! last claimed from it (an older epoch means "untouched in this job": the share is then
//! the job's initial one), so the submitter does not reset the shares, and a worker
//! claims from a share that stayed in its own cache. A worker that has run its tasks adds
//! them to a done counter the submitter waits on.
//!
//! A thread that runs out of work takes tasks from the back of the shares that hold more
//! than one, and the submitter takes the share of a worker that has not arrived (asleep,
//! or descheduled on a busy machine), and every share after a while of waiting, so a
//! worker that never comes costs nothing. Only claimed tasks run, and the submitter
//! returns once every task has run, so no task outlives its job. Handing over a job takes
//! no lock and, while the workers poll, no system call.

use super::wait::{Polled, poll};
use crate::microkernels::{set_cores_far_apart, set_in_split_op};
use parking_lot::{Condvar, Mutex};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Workers never exceed this (a job asking for more threads runs on fewer).
pub(super) const MAX_WORKERS: usize = 63;

/// Tasks one job may hold: a share's bounds are 16 bits.
pub(super) const MAX_TASKS: usize = u16::MAX as usize;

/// How long an idle worker polls for the next job before it sleeps. Between two split
/// ops a model runs ops that stay on one thread (adds, activations, small convolutions),
/// often for a few hundred microseconds; a worker that sleeps through them is woken by a
/// system call and joins tens of microseconds late. Polling stops early on a busy machine
/// (see `wait`), so the long limit costs only CPU time nothing else wanted.
const WORKER_POLL: Duration = Duration::from_millis(2);

/// How long a submitter that has run out of tasks waits for a worker that has arrived
/// before it takes back the tasks that worker has not claimed yet (a worker descheduled
/// inside its share would otherwise hold them).
const RESCUE_AFTER: Duration = Duration::from_micros(50);

/// How long a submitter then polls for the workers' last tasks before it sleeps (they
/// are running, so they usually finish well within this).
const SUBMITTER_POLL: Duration = Duration::from_micros(200);

// The job word: epoch (high 32 bits), task count, helper count (low 8 bits).
const EPOCH_SHIFT: u32 = 32;
const TASKS_SHIFT: u32 = 8;
const HELPERS_MASK: u64 = 0xff;

fn epoch(word: u64) -> u32 {
    (word >> EPOCH_SHIFT) as u32
}

/// Whether `tag` is a later epoch than `epoch`. Epochs wrap; every tag lies within 2^31
/// epochs of the current one (see `Pool::run`), so the signed difference decides.
fn is_later(tag: u32, epoch: u32) -> bool {
    (tag.wrapping_sub(epoch) as i32) > 0
}

/// A job's task function, reduced to two thin words so that it fits on the line the
/// workers poll beside the job word.
#[derive(Clone, Copy)]
pub(super) struct TaskFn {
    data: *const (),
    call: unsafe fn(*const (), usize),
}

impl TaskFn {
    pub(super) fn new<F: Fn(usize) + Sync>(f: &F) -> TaskFn {
        TaskFn { data: f as *const F as *const (), call: call_erased::<F> }
    }

    /// Calls the function on task `i`.
    ///
    /// # Safety
    /// The closure `new` was given must still be alive.
    unsafe fn call(self, i: usize) {
        // SAFETY: `data` and `call` were made together by `new` from one live closure.
        unsafe { (self.call)(self.data, i) }
    }
}

/// # Safety
/// `data` points to a live `F`.
unsafe fn call_erased<F: Fn(usize)>(data: *const (), i: usize) {
    // SAFETY: the caller's contract.
    unsafe { (*(data as *const F))(i) }
}

/// One job as a thread taking part in it sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct JobView {
    epoch: u32,
    tasks: usize,
    threads: usize,
}

impl JobView {
    fn from_word(word: u64) -> JobView {
        JobView {
            epoch: epoch(word),
            tasks: ((word >> TASKS_SHIFT) & MAX_TASKS as u64) as usize,
            threads: (word & HELPERS_MASK) as usize + 1,
        }
    }

    fn word(&self) -> u64 {
        (self.epoch as u64) << EPOCH_SHIFT | (self.tasks as u64) << TASKS_SHIFT | (self.threads - 1) as u64
    }

    /// Thread `t`'s share of the tasks before anyone claimed from it: contiguous, sizes
    /// differing by at most one.
    fn initial_share(&self, t: usize) -> (usize, usize) {
        (self.tasks * t / self.threads, self.tasks * (t + 1) / self.threads)
    }

    /// Whether other threads take from thread `t`'s share once they run out of work.
    /// A share of one task is left to its thread (see `Pool::finish` for the exception):
    /// a thread taking it saves nothing once its owner has started, and reading the
    /// share's line would take it out of the owner's cache.
    fn is_shared(&self, t: usize) -> bool {
        let (front, back) = self.initial_share(t);
        back - front > 1
    }
}

/// One thread's share of the current job: the epoch of the last job that claimed from it
/// (high 32 bits), the next task from the front (its owner's end) and one past the last
/// unclaimed task (where others take from). Padded so that threads claiming from
/// different shares do not share a line.
#[repr(align(128))]
struct Share(AtomicU64);

impl Share {
    /// Claims the first unclaimed task of this share (`from_back`: the last), the share
    /// of thread `t` in `job`. None when none is left, or when a later job has claimed
    /// from it (then `job` is over).
    fn claim(&self, job: &JobView, t: usize, from_back: bool) -> Option<usize> {
        let mut s = self.0.load(Ordering::Acquire);
        loop {
            let tag = (s >> 32) as u32;
            let (front, back) = if tag == job.epoch {
                (((s >> 16) & 0xffff) as usize, (s & 0xffff) as usize)
            } else if is_later(tag, job.epoch) {
                return None;
            } else {
                job.initial_share(t)
            };
            if front >= back {
                return None;
            }
            let (front, back, task) = if from_back { (front, back - 1, back - 1) } else { (front + 1, back, front) };
            let next = (job.epoch as u64) << 32 | (front as u64) << 16 | back as u64;
            match self.0.compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Some(task),
                Err(now) => s = now,
            }
        }
    }
}

/// Pads what one thread writes onto a cache line of its own.
#[repr(align(128))]
struct Padded<T>(T);

/// What a worker needs to start a job, on the one line it polls.
#[repr(C, align(128))]
struct Published {
    /// The job word (see the constants above); only the submitter writes it.
    word: AtomicU64,
    /// The job's [`TaskFn`], valid while the job has unclaimed tasks or tasks running.
    data: AtomicUsize,
    call: AtomicUsize,
}

impl Published {
    /// The current job's task function. Called only by a thread that has claimed a task
    /// of the job, so the job is alive and these are its words.
    fn task(&self) -> TaskFn {
        let call = self.call.load(Ordering::Relaxed);
        // SAFETY: `call` holds a function pointer of exactly this type, stored by `run`
        // from a `TaskFn` (a claimed task's job has published it; see `Pool::run`).
        let call = unsafe { std::mem::transmute::<usize, unsafe fn(*const (), usize)>(call) };
        TaskFn { data: self.data.load(Ordering::Relaxed) as *const (), call }
    }
}

/// When a worker last arrived at a job: the job's epoch, and [`clock_ns`] then.
#[repr(align(128))]
struct Arrival {
    epoch: AtomicU32,
    at_ns: AtomicU64,
}

/// Nanoseconds on a clock all threads share (since its first reading).
fn clock_ns() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// A hand-over slower than this on average means the cores are far apart. Timed from
/// just after the job word is stored to the worker's clock reading once it has seen it:
/// on this Zen 5 VM about 30 ns with the vCPUs on nearby cores, 110 ns on distant ones
/// (where a cache-line round trip takes 540 ns against 120).
const FAR_HANDOVER_NS: u64 = 70;

/// A single hand-over counts for at most this much: a worker woken from sleep takes
/// tens of microseconds and says nothing about where the cores are.
const HANDOVER_SAMPLE_CAP_NS: u64 = 4 * FAR_HANDOVER_NS;

/// The running hand-over estimate after one more hand-over of `ns` (each weighs 1/16).
fn next_handover_estimate(before: u64, ns: u64) -> u64 {
    before - before / 16 + ns.min(HANDOVER_SAMPLE_CAP_NS) / 16
}

pub(super) struct Pool {
    published: Published,
    shares: [Share; MAX_WORKERS + 1],
    /// When each worker last arrived at a job: a hint for the submitter whether to take
    /// its share (see `finish`), and how long the hand-over took.
    arrived: [Arrival; MAX_WORKERS + 1],
    /// The submitter's running estimate of the hand-over time to worker 1, in ns.
    handover_ns: AtomicU64,
    /// Tasks the workers have finished, over all jobs.
    done: Padded<AtomicU64>,
    panicked: Padded<AtomicBool>,
    /// Workers asleep (or about to sleep) on `wake`.
    sleepers: Padded<AtomicUsize>,
    sleep: Mutex<()>,
    wake: Condvar,
    /// Whether the submitter sleeps on `done_cv` until the workers' tasks are done.
    submitter_asleep: Padded<AtomicBool>,
    done_lock: Mutex<()>,
    done_cv: Condvar,
    workers: AtomicUsize,
    spawning: Mutex<()>,
    /// Held by the one thread currently submitting.
    pub(super) submit: Mutex<()>,
}

pub(super) fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        published: Published { word: AtomicU64::new(0), data: AtomicUsize::new(0), call: AtomicUsize::new(0) },
        shares: [const { Share(AtomicU64::new(0)) }; MAX_WORKERS + 1],
        arrived: [const { Arrival { epoch: AtomicU32::new(0), at_ns: AtomicU64::new(0) } }; MAX_WORKERS + 1],
        handover_ns: AtomicU64::new(0),
        done: Padded(AtomicU64::new(0)),
        panicked: Padded(AtomicBool::new(false)),
        sleepers: Padded(AtomicUsize::new(0)),
        sleep: Mutex::new(()),
        wake: Condvar::new(),
        submitter_asleep: Padded(AtomicBool::new(false)),
        done_lock: Mutex::new(()),
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

    /// Runs tasks `0..tasks` of `f` on the calling thread and up to `helpers` workers (at
    /// most as many as exist), and returns whether any panicked. The caller holds
    /// `submit`, keeps `f`'s closure alive until this returns, and `tasks` is at most
    /// [`MAX_TASKS`].
    pub(super) fn run(&self, helpers: usize, tasks: usize, f: TaskFn) -> bool {
        let helpers = helpers.min(MAX_WORKERS);
        let prev = self.published.word.load(Ordering::Relaxed);
        let job = JobView { epoch: epoch(prev).wrapping_add(1), tasks: tasks.min(MAX_TASKS), threads: helpers + 1 };
        if job.epoch & 0x7fff_ffff == 0 {
            // Keeps every share's epoch within 2^31 of the current one (see `is_later`);
            // no job is running, and the tag marks each share untouched.
            for s in &self.shares {
                s.0.store((job.epoch.wrapping_sub(1) as u64) << 32, Ordering::Relaxed);
            }
        }
        // Every earlier job has finished, so only this job's workers add from here on.
        let done_before = self.done.0.load(Ordering::Relaxed);
        self.published.data.store(f.data as usize, Ordering::Relaxed);
        self.published.call.store(f.call as usize, Ordering::Relaxed);
        self.published.word.store(job.word(), Ordering::SeqCst);
        // Pairs with the sleepers' increment before they look at the word (both SeqCst):
        // either this sees a sleeper, or that sleeper sees the new job.
        if self.sleepers.0.load(Ordering::SeqCst) > 0 {
            let _g = self.sleep.lock();
            for _ in 0..helpers {
                if !self.wake.notify_one() {
                    break;
                }
            }
        }
        let published_ns = clock_ns();
        let mut ran = self.run_share(&job, 0, false, f);
        ran += self.finish(&job, f, published_ns);
        let by_workers = (job.tasks - ran) as u64;
        self.wait_for_workers(&job, f, done_before + by_workers);
        // The workers' done increments (release) came after any panic flag they set.
        if self.panicked.0.load(Ordering::Relaxed) {
            self.panicked.0.store(false, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Runs the tasks the submitter takes from the workers' shares once its own is done:
    /// shares of more than one task, and the share of a worker that has not arrived.
    /// Returns how many it ran.
    fn finish(&self, job: &JobView, f: TaskFn, published_ns: u64) -> usize {
        let mut ran = 0;
        for t in 1..job.threads {
            let arrival = &self.arrived[t];
            let here = arrival.epoch.load(Ordering::Acquire) == job.epoch;
            if here && t == 1 {
                self.note_handover(arrival.at_ns.load(Ordering::Relaxed).saturating_sub(published_ns));
            }
            if !here || job.is_shared(t) {
                ran += self.run_share(job, t, true, f);
            }
        }
        ran
    }

    /// Folds one hand-over time into the running estimate (1/16 weight each), and tells
    /// the microkernels whether output lines are worth asking for ahead (see
    /// `prefetch_for_write`): only where the cores are far apart does it pay.
    fn note_handover(&self, ns: u64) {
        let before = self.handover_ns.load(Ordering::Relaxed);
        let now = next_handover_estimate(before, ns);
        self.handover_ns.store(now, Ordering::Relaxed);
        if (before > FAR_HANDOVER_NS) != (now > FAR_HANDOVER_NS) {
            set_cores_far_apart(now > FAR_HANDOVER_NS);
        }
    }

    /// Claims and runs tasks from thread `t`'s share until none is left; returns how many.
    fn run_share(&self, job: &JobView, t: usize, from_back: bool, f: TaskFn) -> usize {
        let mut ran = 0;
        while let Some(i) = self.shares[t].claim(job, t, from_back) {
            self.run_task(f, i);
            ran += 1;
        }
        ran
    }

    fn run_task(&self, f: TaskFn, i: usize) {
        let outer = set_in_split_op(true);
        // SAFETY: this thread claimed task `i` of the job `f` belongs to, so the job has
        // not finished and its submitter keeps the closure alive (see `run`).
        if catch_unwind(AssertUnwindSafe(|| unsafe { f.call(i) })).is_err() {
            self.panicked.0.store(true, Ordering::Relaxed);
        }
        set_in_split_op(outer);
    }

    /// Waits until the workers have finished `target` tasks in all (counting every job).
    /// After a while it takes back the tasks still unclaimed in any share, and runs them.
    fn wait_for_workers(&self, job: &JobView, f: TaskFn, mut target: u64) {
        let finished = |target: u64| (self.done.0.load(Ordering::Acquire) >= target).then_some(());
        if poll(RESCUE_AFTER, || finished(target)) == Polled::Ready(()) {
            return;
        }
        for t in 1..job.threads {
            target -= self.run_share(job, t, true, f) as u64;
        }
        if poll(SUBMITTER_POLL, || finished(target)) == Polled::Ready(()) {
            return;
        }
        let mut g = self.done_lock.lock();
        // Pairs with `report_done` (both SeqCst): either the worker sees this flag, or
        // this thread sees its tasks counted.
        self.submitter_asleep.0.store(true, Ordering::SeqCst);
        while self.done.0.load(Ordering::SeqCst) < target {
            self.done_cv.wait(&mut g);
        }
        self.submitter_asleep.0.store(false, Ordering::Relaxed);
    }

    /// Worker `id` (1 to the number of workers): thread `id` of every job it takes part in.
    fn worker(&self, id: usize) {
        let mut seen = epoch(self.published.word.load(Ordering::Acquire));
        loop {
            let word = self.wait_for_job(seen);
            seen = epoch(word);
            let job = JobView::from_word(word);
            if id < job.threads {
                self.take_part(&job, id);
            }
        }
    }

    /// Runs worker `id`'s share of `job`, then tasks from the shares others may take from.
    fn take_part(&self, job: &JobView, id: usize) {
        let arrival = &self.arrived[id];
        arrival.at_ns.store(clock_ns(), Ordering::Relaxed);
        arrival.epoch.store(job.epoch, Ordering::Release);
        let mut f = None;
        let mut claimed = |t: usize, from_back: bool| {
            let mut ran = 0;
            while let Some(i) = self.shares[t].claim(job, t, from_back) {
                // Read only once a task is claimed: the job is then still running, so
                // the line holds its function.
                let f = *f.get_or_insert_with(|| self.published.task());
                self.run_task(f, i);
                ran += 1;
            }
            ran
        };
        let own = claimed(id, false);
        self.report_done(own);
        let mut taken = 0;
        for k in 1..job.threads {
            let t = (id + k) % job.threads;
            if job.is_shared(t) {
                taken += claimed(t, true);
            }
        }
        self.report_done(taken);
    }

    fn report_done(&self, tasks: usize) {
        if tasks == 0 {
            return;
        }
        self.done.0.fetch_add(tasks as u64, Ordering::SeqCst);
        if self.submitter_asleep.0.load(Ordering::SeqCst) {
            let _g = self.done_lock.lock();
            self.done_cv.notify_one();
        }
    }

    /// Waits for a word with an epoch other than `seen`, and returns it.
    fn wait_for_job(&self, seen: u32) -> u64 {
        let fresh = || {
            let w = self.published.word.load(Ordering::Acquire);
            (epoch(w) != seen).then_some(w)
        };
        if let Polled::Ready(w) = poll(WORKER_POLL, fresh) {
            return w;
        }
        let mut g = self.sleep.lock();
        // Pairs with the submitter's look at `sleepers` (see `run`).
        self.sleepers.0.fetch_add(1, Ordering::SeqCst);
        let w = loop {
            let w = self.published.word.load(Ordering::SeqCst);
            if epoch(w) != seen {
                break w;
            }
            self.wake.wait(&mut g);
        };
        self.sleepers.0.fetch_sub(1, Ordering::Relaxed);
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_packs_epoch_tasks_and_threads() {
        let job = JobView { epoch: 0xdead_beef, tasks: MAX_TASKS, threads: MAX_WORKERS + 1 };
        assert_eq!(JobView::from_word(job.word()), job);
        let job = JobView { epoch: 1, tasks: 0, threads: 1 };
        assert_eq!(JobView::from_word(job.word()), job);
    }

    #[test]
    fn the_handover_estimate_follows_the_cores_not_one_slow_wake() {
        let settle = |from: u64, ns: u64| (0..64).fold(from, |e, _| next_handover_estimate(e, ns));
        let near = settle(0, 30);
        assert!(near <= FAR_HANDOVER_NS, "nearby cores: {near}");
        let far = settle(near, 110);
        assert!(far > FAR_HANDOVER_NS, "distant cores: {far}");
        assert!(settle(far, 30) <= FAR_HANDOVER_NS, "back on nearby cores");
        // A worker woken from sleep (tens of microseconds) does not flip it alone.
        assert!(next_handover_estimate(near, 50_000) <= FAR_HANDOVER_NS);
    }

    #[test]
    fn initial_shares_are_contiguous_and_cover_every_task() {
        for tasks in 0..20 {
            for threads in 1..6 {
                let job = JobView { epoch: 1, tasks, threads };
                let mut next = 0;
                for t in 0..threads {
                    let (front, back) = job.initial_share(t);
                    assert_eq!(front, next);
                    assert!(back - front <= tasks.div_ceil(threads));
                    next = back;
                }
                assert_eq!(next, tasks);
            }
        }
    }

    #[test]
    fn a_share_is_claimed_from_both_ends_exactly_once_per_job() {
        let share = Share(AtomicU64::new(0));
        for epoch in [5, 6] {
            // Thread 1 of 2 owns tasks 6..12 of 12; each job starts from that share again.
            let job = JobView { epoch, tasks: 12, threads: 2 };
            let mut got = vec![share.claim(&job, 1, false), share.claim(&job, 1, true)];
            got.extend(std::iter::from_fn(|| share.claim(&job, 1, false)).map(Some));
            assert_eq!(got, [Some(6), Some(11), Some(7), Some(8), Some(9), Some(10)]);
            assert_eq!(share.claim(&job, 1, true), None);
        }
    }

    #[test]
    fn a_share_claimed_by_a_later_job_gives_nothing_to_an_earlier_one() {
        let share = Share(AtomicU64::new(0));
        let later = JobView { epoch: 9, tasks: 4, threads: 2 };
        assert_eq!(share.claim(&later, 0, false), Some(0));
        let earlier = JobView { epoch: 8, tasks: 4, threads: 2 };
        assert_eq!(share.claim(&earlier, 0, false), None);
        // Across the wrap of the epoch too.
        let share = Share(AtomicU64::new((u32::MAX as u64) << 32));
        let after_wrap = JobView { epoch: 0, tasks: 2, threads: 1 };
        assert_eq!(share.claim(&after_wrap, 0, false), Some(0));
        assert!(is_later(0, u32::MAX) && !is_later(u32::MAX, 0));
    }
}
