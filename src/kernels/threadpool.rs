//! The kernels' thread pool, as TFLite's CPU backend keeps one: persistent worker threads
//! that a kernel splits its work over, and the per-op decision whether splitting pays.
//!
//! A job runs while its submitter waits, so tasks may borrow from the submitter's stack.
//! The submitter runs tasks too, claiming them from the same counter as the workers: a
//! worker that wakes late only takes what is left, so a late wake-up costs at most the one
//! task it claims. Workers spin a while after each job (a model's next heavy op usually
//! follows soon, and waking a sleeping thread costs tens of microseconds), then sleep.
//! One job runs at a time: a second submitter (another interpreter's thread, or a task
//! that submits from inside a task) runs its tasks inline rather than wait for the pool.

use crate::abi::types::TfLiteContext;
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use parking_lot::{Condvar, Mutex};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------
// Deciding how many threads
// ---------------------------------------------------------------------------------------

/// The context's `recommended_num_threads` (`-1` and other non-positive values mean 1, as
/// TFLite's CPU backend defaults to one thread), capped by the machine's parallelism.
pub fn recommended_threads(ctx: &OpCtx<'_>) -> usize {
    let p: *mut TfLiteContext = ctx.context();
    // SAFETY: `OpCtx` holds the live, non-NULL context pointer of this kernel call.
    let n = unsafe { (*p).recommended_num_threads };
    if n <= 1 {
        return 1;
    }
    (n as usize).min(machine_threads()).max(1)
}

/// The machine's parallelism, asked once (the query reads cgroup files on Linux).
fn machine_threads() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| std::thread::available_parallelism().map_or(1, |c| c.get()))
}

/// Work (multiply-adds) each thread must get before a kernel splits: below it, handing a
/// share to a worker and collecting it back costs more than the share itself. A quarter
/// to four times this measured alike, within the noise, on face_landmark and
/// mobilenet_v2 (handing work to a spinning worker is cheap).
pub(crate) const MIN_WORK_PER_THREAD: usize = 1 << 18;

/// How many threads to use for `work` multiply-adds split over `rows` independent rows.
pub fn threads_for(max_threads: usize, work: usize, rows: usize) -> usize {
    let by_work = (work / MIN_WORK_PER_THREAD).max(1);
    max_threads.min(by_work).min(rows).max(1)
}

// ---------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------

/// Calls `f(0)`, ..., `f(tasks - 1)`, each exactly once, on at most `threads` threads (the
/// calling thread and up to `threads - 1` workers), and returns when all have finished.
/// A panicking task does not unwind into the caller: the other tasks still run and the
/// result is an error.
pub fn parallel_for(threads: usize, tasks: usize, f: &(dyn Fn(usize) + Sync)) -> Result<()> {
    let helpers = threads.min(tasks).saturating_sub(1).min(MAX_WORKERS);
    if helpers == 0 {
        return run_inline(tasks, f);
    }
    let pool = pool();
    // Never wait for another submitter: it may be the task calling us.
    let Some(_submitting) = pool.submit.try_lock() else {
        return run_inline(tasks, f);
    };
    match ensure_workers(pool, helpers) {
        0 => run_inline(tasks, f),
        workers => pool.run(helpers.min(workers), tasks, f),
    }
}

/// Splits `data` into chunks of `chunk_len` elements (the last may be shorter) and calls
/// `f(chunk_index, chunk)` on each, spread over at most `threads` threads. Returns the
/// first error a chunk reports (every chunk still runs).
pub fn parallel_chunks_mut<T: Send>(
    threads: usize,
    data: &mut [T],
    chunk_len: usize,
    f: &(dyn Fn(usize, &mut [T]) -> Result<()> + Sync),
) -> Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    if chunk_len == 0 {
        return Err(Error::new("internal error: parallel_chunks_mut with chunks of length 0"));
    }
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    let report = |r: Result<()>| {
        if let Err(e) = r {
            first_error.lock().get_or_insert(e);
        }
    };
    if threads <= 1 || data.len() <= chunk_len {
        data.chunks_mut(chunk_len).enumerate().for_each(|(i, c)| report(f(i, c)));
    } else {
        // Each task takes its chunk out of its own slot, which hands the `&mut` to
        // whichever thread runs the task without any shared mutable access.
        let chunks: Vec<Mutex<Option<&mut [T]>>> = data.chunks_mut(chunk_len).map(|c| Mutex::new(Some(c))).collect();
        parallel_for(threads, chunks.len(), &|i| {
            if let Some(chunk) = chunks[i].lock().take() {
                report(f(i, chunk));
            }
        })?;
    }
    match first_error.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Splits `out` (made of rows of `row_len` elements) into `threads` contiguous runs of
/// whole rows and calls `f(first_row, run)` on each, in parallel (the first run on the
/// calling thread). Returns the first error a run reports.
pub fn parallel_rows<T: Send>(
    threads: usize,
    out: &mut [T],
    row_len: usize,
    f: &(dyn Fn(usize, &mut [T]) -> Result<()> + Sync),
) -> Result<()> {
    if row_len == 0 || out.is_empty() {
        return Ok(());
    }
    let rows = out.len() / row_len;
    let threads = threads.clamp(1, rows.max(1));
    if threads == 1 {
        return f(0, out);
    }
    let per = rows.div_ceil(threads);
    parallel_chunks_mut(threads, out, per * row_len, &|i, run| f(i * per, run))
}

/// Runs every task on the calling thread.
fn run_inline(tasks: usize, f: &(dyn Fn(usize) + Sync)) -> Result<()> {
    let mut panicked = false;
    for i in 0..tasks {
        panicked |= catch_unwind(AssertUnwindSafe(|| f(i))).is_err();
    }
    if panicked { Err(task_panicked()) } else { Ok(()) }
}

fn task_panicked() -> Error {
    Error::new("internal error: a kernel task panicked")
}

// ---------------------------------------------------------------------------------------
// The pool
// ---------------------------------------------------------------------------------------

/// Workers never exceed this (a job asking for more threads runs on fewer).
const MAX_WORKERS: usize = 63;

/// How long an idle worker keeps polling for the next job before it sleeps. Between two
/// split ops a model runs the ops that stay on one thread (adds, activations, small
/// convolutions), often for several hundred microseconds; a worker that slept through
/// them takes tens of microseconds to wake, which a split op of a small model does not
/// win back. 1 ms (polling with yields, see [`BUSY_POLLS`]) kept two threads level with
/// one on face_landmark, where 100 µs left them 20-50% slower and 2 ms gained nothing.
const WORKER_SPIN: Duration = Duration::from_millis(1);

/// How long a submitter that has run out of tasks polls for the workers' last tasks
/// before it sleeps (they are running, so they usually finish well within this).
const SUBMITTER_SPIN: Duration = Duration::from_micros(100);

/// Busy polls before [`spin_until`] starts yielding its CPU between polls: enough to
/// catch a job that follows at once without a system call, few enough to leave the CPU
/// to other runnable threads while the wait goes on. Spinning without yielding made two
/// threads twice as slow as one on an oversubscribed two-vCPU machine.
const BUSY_POLLS: u32 = 1 << 12;

/// Polls `done()` until it holds or `limit` has passed; returns `done()`.
fn spin_until(limit: Duration, done: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    let mut polls = 0u32;
    loop {
        for _ in 0..64 {
            if done() {
                return true;
            }
            std::hint::spin_loop();
        }
        polls = polls.saturating_add(64);
        if polls > BUSY_POLLS {
            std::thread::yield_now();
        }
        if start.elapsed() >= limit {
            return done();
        }
    }
}

struct Job {
    /// The submitter's task function, lifetime-erased: it is only called for task
    /// indices below `tasks`, and the submitter returns (ending the borrow) only after
    /// every such call has finished (`pending` reached 0).
    f: *const (dyn Fn(usize) + Sync + 'static),
    tasks: usize,
    /// Most workers that may take part (the submitter's thread count minus itself).
    helpers: usize,
    joined: AtomicUsize,
    next: AtomicUsize,
    pending: AtomicUsize,
    panicked: AtomicBool,
    done: Mutex<bool>,
    done_cv: Condvar,
}

// SAFETY: `f` points to a `Sync` closure (calling it from several threads is allowed),
// and it is only dereferenced while the submitter keeps it alive (see `Job::f`).
unsafe impl Send for Job {}
// SAFETY: as above; every other field is thread-safe.
unsafe impl Sync for Job {}

impl Job {
    /// Claims and runs tasks until none is left.
    fn run_tasks(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::AcqRel);
            if i >= self.tasks {
                return;
            }
            // SAFETY: `i < tasks` and task `i` has not finished, so the submitter is still
            // waiting and the closure behind `f` is alive (see `Job::f`).
            let f = unsafe { &*self.f };
            if catch_unwind(AssertUnwindSafe(|| f(i))).is_err() {
                self.panicked.store(true, Ordering::Release);
            }
            if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
                *self.done.lock() = true;
                self.done_cv.notify_all();
            }
        }
    }
}

struct Pool {
    /// The job being run, if any; replaced under this lock together with `epoch`.
    job: Mutex<Option<Arc<Job>>>,
    /// Counts published jobs, so a worker can tell a new job from the one it has done.
    epoch: AtomicU64,
    wake: Condvar,
    workers: Mutex<usize>,
    /// Held by the one thread currently submitting.
    submit: Mutex<()>,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        job: Mutex::new(None),
        epoch: AtomicU64::new(0),
        wake: Condvar::new(),
        workers: Mutex::new(0),
        submit: Mutex::new(()),
    })
}

fn worker(pool: &'static Pool) {
    let mut seen = pool.epoch.load(Ordering::Acquire);
    loop {
        spin_until(WORKER_SPIN, || pool.epoch.load(Ordering::Acquire) != seen);
        let job = {
            let mut g = pool.job.lock();
            while pool.epoch.load(Ordering::Acquire) == seen {
                pool.wake.wait(&mut g);
            }
            seen = pool.epoch.load(Ordering::Acquire);
            g.clone()
        };
        if let Some(job) = job {
            if job.joined.fetch_add(1, Ordering::AcqRel) < job.helpers {
                job.run_tasks();
            }
        }
    }
}

/// Makes sure `n` workers exist (up to [`MAX_WORKERS`]); returns how many do.
fn ensure_workers(pool: &'static Pool, n: usize) -> usize {
    let mut w = pool.workers.lock();
    while *w < n.min(MAX_WORKERS) {
        let spawned = std::thread::Builder::new().name("tflite-rs-kernel".into()).spawn(move || worker(pool));
        if spawned.is_err() {
            break;
        }
        *w += 1;
    }
    *w
}

impl Pool {
    /// Runs a job on the calling thread and up to `helpers` workers. The caller holds
    /// `submit`.
    fn run(&self, helpers: usize, tasks: usize, f: &(dyn Fn(usize) + Sync)) -> Result<()> {
        // SAFETY: only the lifetime is erased (same fat-pointer layout); this function
        // waits below until every task has finished before returning, so `f` outlives
        // every call made through the erased pointer.
        let f_static: *const (dyn Fn(usize) + Sync + 'static) =
            unsafe { core::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), _>(f as *const _) };
        let job = Arc::new(Job {
            f: f_static,
            tasks,
            helpers,
            joined: AtomicUsize::new(0),
            next: AtomicUsize::new(0),
            pending: AtomicUsize::new(tasks),
            panicked: AtomicBool::new(false),
            done: Mutex::new(false),
            done_cv: Condvar::new(),
        });
        {
            let mut g = self.job.lock();
            *g = Some(Arc::clone(&job));
            self.epoch.fetch_add(1, Ordering::AcqRel);
            // Workers that are spinning see the epoch without this; sleeping ones need it.
            for _ in 0..helpers {
                if !self.wake.notify_one() {
                    break;
                }
            }
        }
        job.run_tasks();
        if !spin_until(SUBMITTER_SPIN, || job.pending.load(Ordering::Acquire) == 0) {
            let mut done = job.done.lock();
            while !*done {
                job.done_cv.wait(&mut done);
            }
        }
        *self.job.lock() = None;
        if job.panicked.load(Ordering::Acquire) {
            return Err(task_panicked());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn count_runs(threads: usize, tasks: usize) -> Vec<usize> {
        let hits: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
        parallel_for(threads, tasks, &|i| {
            hits[i].fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
        hits.iter().map(|h| h.load(Ordering::Relaxed)).collect()
    }

    #[test]
    fn every_task_runs_exactly_once() {
        for threads in [1, 2, 3, 8] {
            for tasks in [1usize, 2, 3, 7, 16, 100] {
                assert!(count_runs(threads, tasks).iter().all(|&n| n == 1), "{threads} threads, {tasks} tasks");
            }
        }
    }

    #[test]
    fn zero_tasks_is_a_no_op() {
        let called = AtomicBool::new(false);
        parallel_for(4, 0, &|_| called.store(true, Ordering::Relaxed)).unwrap();
        assert!(!called.load(Ordering::Relaxed));
        parallel_chunks_mut(4, &mut [] as &mut [u8], 3, &|_, _| Err(Error::new("never called"))).unwrap();
    }

    #[test]
    fn a_panicking_task_is_an_error() {
        for threads in [1, 3] {
            let ran = AtomicUsize::new(0);
            let r = parallel_for(threads, 5, &|i| {
                ran.fetch_add(1, Ordering::Relaxed);
                if i == 1 {
                    panic!("a task panics");
                }
            });
            assert!(r.unwrap_err().message.contains("panicked"));
            assert_eq!(ran.load(Ordering::Relaxed), 5, "the other tasks still run");
        }
        // The pool still works afterwards.
        assert!(count_runs(3, 9).iter().all(|&n| n == 1));
    }

    #[test]
    fn nested_submitters_run_inline() {
        let hits: Vec<AtomicUsize> = (0..4 * 5).map(|_| AtomicUsize::new(0)).collect();
        parallel_for(3, 4, &|outer| {
            parallel_for(3, 5, &|inner| {
                hits[outer * 5 + inner].fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
        })
        .unwrap();
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn concurrent_submitters_do_not_deadlock() {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        for tasks in [1usize, 2, 3, 7, 16] {
                            assert!(count_runs(2, tasks).iter().all(|&n| n == 1));
                        }
                    }
                });
            }
        });
    }

    #[test]
    fn threads_bound_the_threads_used() {
        for threads in [1, 2, 3] {
            let ids = Mutex::new(HashSet::new());
            parallel_for(threads, 64, &|_| {
                ids.lock().insert(std::thread::current().id());
                std::thread::sleep(Duration::from_micros(200));
            })
            .unwrap();
            assert!(ids.lock().len() <= threads, "{threads} threads");
        }
    }

    #[test]
    fn chunks_cover_everything_and_report_errors() {
        let mut v = vec![0usize; 10];
        parallel_chunks_mut(3, &mut v, 3, &|i, c| {
            c.iter_mut().for_each(|x| *x = i + 1);
            Ok(())
        })
        .unwrap();
        assert_eq!(v, [1, 1, 1, 2, 2, 2, 3, 3, 3, 4]);
        let e = parallel_chunks_mut(3, &mut v, 4, &|i, _| if i == 2 { Err(Error::new("boom")) } else { Ok(()) });
        assert_eq!(e.unwrap_err().message, "boom");
        assert!(parallel_chunks_mut(2, &mut v, 0, &|_, _| Ok(())).is_err());
    }

    #[test]
    fn rows_cover_everything() {
        for threads in [1, 2, 4, 16] {
            let mut v = vec![0usize; 10 * 3];
            parallel_rows(threads, &mut v, 3, &|first, chunk: &mut [usize]| {
                for (i, row) in chunk.chunks_mut(3).enumerate() {
                    row.iter_mut().for_each(|x| *x = first + i);
                }
                Ok(())
            })
            .unwrap();
            for r in 0..10 {
                assert_eq!(&v[r * 3..r * 3 + 3], &[r, r, r]);
            }
        }
        let mut v = vec![0usize; 10 * 3];
        let e = parallel_rows(3, &mut v, 3, &|first, _c: &mut [usize]| {
            if first > 0 { Err(Error::new("boom")) } else { Ok(()) }
        });
        assert!(e.is_err());
    }

    #[test]
    fn small_work_stays_on_one_thread() {
        assert_eq!(threads_for(2, MIN_WORK_PER_THREAD, 100), 1);
        assert_eq!(threads_for(2, 2 * MIN_WORK_PER_THREAD, 100), 2);
        assert_eq!(threads_for(8, 100 * MIN_WORK_PER_THREAD, 3), 3);
        assert_eq!(threads_for(4, 0, 0), 1);
    }
}
