//! The kernels' thread pool, as TFLite's CPU backend keeps one: persistent worker threads
//! that a kernel splits its work over, and the per-op decision whether splitting pays.
//!
//! `pool` hands a job to the workers, `wait` is how the threads wait for each other.
//! One job runs at a time: a second submitter (another interpreter's thread, or a task
//! that submits from inside a task) runs its tasks inline rather than wait for the pool.

pub mod elementwise;
mod pool;
mod wait;

use crate::abi::types::TfLiteContext;
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use parking_lot::Mutex;
use pool::{MAX_TASKS, MAX_WORKERS, TaskFn, pool};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

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
/// share to a worker and collecting it back costs more than the share itself (a few
/// microseconds of work; handing it to a polling worker is cheap, and small ops that
/// split keep each thread's share of the data on its own core).
pub(crate) const MIN_WORK_PER_THREAD: usize = 1 << 16;

/// How many threads to use for `work` multiply-adds split over `rows` independent rows.
///
/// Every op splits, however its neighbours run: each thread then takes the same share of
/// every tensor (see `pool`) and mostly reads what it wrote itself. That matters on
/// virtual machines whose two vCPUs the host now and then places on distant cores, where
/// reading the other core's output costs about four times a local read: stopping to
/// split there (so that one thread reads everything) measured slower than splitting on.
pub fn threads_for(max_threads: usize, work: usize, rows: usize) -> usize {
    let by_work = (work / MIN_WORK_PER_THREAD).max(1);
    max_threads.min(by_work).min(rows).max(1)
}

// ---------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------

/// Calls `f(0)`, ..., `f(tasks - 1)`, each exactly once, on at most `threads` threads (the
/// calling thread and up to `threads - 1` workers), and returns when all have finished.
/// Each thread starts on its own contiguous share of the indices, the caller on the
/// first, and the same worker takes the same share in every call (see `pool`), so calls
/// that split their data alike keep each part on one core. A panicking task does not
/// unwind into the caller: the other tasks still run and the result is an error.
///
/// A worker reaches what `f` captures through one pointer; a closure that captures its
/// values by copy (`move`) rather than references to the caller's locals can spare each
/// worker a second cache-line transfer from the caller's core before it starts.
pub fn parallel_for<F: Fn(usize) + Sync>(threads: usize, tasks: usize, f: &F) -> Result<()> {
    let helpers = threads.min(tasks).saturating_sub(1).min(MAX_WORKERS);
    if helpers == 0 {
        return run_inline(tasks, f);
    }
    if tasks > MAX_TASKS {
        // More tasks than a job holds: each task of the job runs a run of them.
        let per = tasks.div_ceil(MAX_TASKS);
        return submit(helpers, tasks.div_ceil(per), &move |g| {
            (g * per..((g + 1) * per).min(tasks)).for_each(f);
        });
    }
    submit(helpers, tasks, f)
}

/// `parallel_for` on the pool, `tasks` at most [`MAX_TASKS`].
fn submit<F: Fn(usize) + Sync>(helpers: usize, tasks: usize, f: &F) -> Result<()> {
    let pool = pool();
    // Never wait for another submitter: it may be the task calling us.
    let Some(_submitting) = pool.submit.try_lock() else {
        return run_inline(tasks, f);
    };
    match pool.ensure_workers(helpers) {
        0 => run_inline(tasks, f),
        workers => {
            if pool.run(helpers.min(workers), tasks, TaskFn::new(f)) {
                Err(task_panicked())
            } else {
                Ok(())
            }
        }
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
    for_each_chunk(threads, data, chunk_len, move |i, c| f(i, c))
}

/// `parallel_chunks_mut` with the callback held by value, so that the tasks' closure
/// carries it (and what it captures by copy) on its own line.
fn for_each_chunk<T: Send, G: Fn(usize, &mut [T]) -> Result<()> + Sync>(
    threads: usize,
    data: &mut [T],
    chunk_len: usize,
    g: G,
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
        data.chunks_mut(chunk_len).enumerate().for_each(|(i, c)| report(g(i, c)));
    } else {
        let len = data.len();
        let base = ChunkBase(data.as_mut_ptr());
        let report = &report;
        // Captured by copy, so that a worker finds them on the closure's line.
        parallel_for(threads, len.div_ceil(chunk_len), &move |i| {
            let start = i * chunk_len;
            let end = (start + chunk_len).min(len);
            // SAFETY: `start..end` lies inside `data`, which this call borrows mutably
            // until every task has finished, and `parallel_for` runs each index once, so
            // no two live chunks overlap.
            let chunk = unsafe { std::slice::from_raw_parts_mut(base.at(start), end - start) };
            report(g(i, chunk));
        })?;
    }
    match first_error.into_inner() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The start of the data `parallel_chunks_mut` cuts, shared with the tasks that each
/// take their own chunk of it.
struct ChunkBase<T>(*mut T);

impl<T> Clone for ChunkBase<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for ChunkBase<T> {}

// SAFETY: the tasks write disjoint chunks of a `&mut [T]` with `T: Send` (see
// `parallel_chunks_mut`).
unsafe impl<T: Send> Sync for ChunkBase<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for ChunkBase<T> {}

impl<T> ChunkBase<T> {
    /// # Safety
    /// `offset` lies within the slice this was taken from.
    unsafe fn at(self, offset: usize) -> *mut T {
        // SAFETY: the caller's contract.
        unsafe { self.0.add(offset) }
    }
}

/// Splits `out` (made of rows of `row_len` elements) into contiguous runs of whole rows,
/// [`PIECES_PER_THREAD`] per thread, and calls `f(first_row, run)` on each, spread over
/// at most `threads` threads (the calling thread among them). Returns the first error a
/// run reports.
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
    let per = rows_per_piece(rows, threads);
    for_each_chunk(threads, out, per * row_len, move |i, run| f(i * per, run))
}

/// Runs each thread's share is cut into. Threads claim runs as they come free, so a
/// worker that has not started when another thread finishes its run (woken from sleep,
/// or descheduled by the machine) leaves its run to that thread. One run per thread:
/// two, so that a late worker would hold back less, cost more than they saved (every run
/// repeats a kernel's start-up, row copies and last partial tile; mobilenet_v2_int8 on
/// 2 threads went from 0.80 to 0.76 ms, palm_detection_lite from 1.81 to 1.79 ms).
const PIECES_PER_THREAD: usize = 1;

/// Rows per run when `rows` rows are split over `threads` threads.
fn rows_per_piece(rows: usize, threads: usize) -> usize {
    rows.div_ceil(threads.saturating_mul(PIECES_PER_THREAD).clamp(1, rows.max(1)))
}

/// Runs every task on the calling thread.
fn run_inline<F: Fn(usize)>(tasks: usize, f: &F) -> Result<()> {
    let mut panicked = false;
    for i in 0..tasks {
        panicked |= catch_unwind(AssertUnwindSafe(|| f(i))).is_err();
    }
    if panicked { Err(task_panicked()) } else { Ok(()) }
}

fn task_panicked() -> Error {
    Error::new("internal error: a kernel task panicked")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

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
    fn more_tasks_than_a_job_holds_still_run_once_each() {
        for tasks in [MAX_TASKS + 1, 3 * MAX_TASKS + 7] {
            assert!(count_runs(2, tasks).iter().all(|&n| n == 1), "{tasks} tasks");
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
    fn jobs_after_the_workers_went_to_sleep_still_run() {
        for pause_ms in [0, 3, 0, 5, 0] {
            std::thread::sleep(Duration::from_millis(pause_ms));
            assert!(count_runs(3, 7).iter().all(|&n| n == 1));
        }
    }

    #[test]
    fn the_submitter_returns_after_a_slow_worker_finishes() {
        let submitter = std::thread::current().id();
        for _ in 0..5 {
            let finished = AtomicUsize::new(0);
            parallel_for(2, 4, &|_| {
                if std::thread::current().id() != submitter {
                    // Longer than the submitter polls: it has to sleep and be woken.
                    std::thread::sleep(Duration::from_millis(2));
                }
                finished.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
            assert_eq!(finished.load(Ordering::SeqCst), 4);
        }
    }

    #[test]
    fn many_small_jobs_back_to_back() {
        let sum = AtomicUsize::new(0);
        for job in 0..20_000usize {
            let tasks = 1 + job % 5;
            parallel_for(3, tasks, &|i| {
                sum.fetch_add(i + 1, Ordering::Relaxed);
            })
            .unwrap();
        }
        let expected: usize = (0..20_000usize).map(|j| (1 + j % 5) * (2 + j % 5) / 2).sum();
        assert_eq!(sum.load(Ordering::Relaxed), expected);
    }

    #[test]
    fn pieces_split_rows_evenly_and_cover_them() {
        for rows in 1..40 {
            for threads in 1..6 {
                let per = rows_per_piece(rows, threads);
                assert!(per >= 1);
                let pieces = rows.div_ceil(per);
                assert!(pieces <= threads * PIECES_PER_THREAD, "{rows} rows, {threads} threads");
                // No thread's run is longer than an even split's longest share.
                assert_eq!(per, rows.div_ceil(threads.min(rows)), "{rows} rows, {threads} threads");
            }
        }
    }

    #[test]
    fn small_work_stays_on_one_thread() {
        assert_eq!(threads_for(2, MIN_WORK_PER_THREAD, 100), 1);
        assert_eq!(threads_for(2, 2 * MIN_WORK_PER_THREAD, 100), 2);
        assert_eq!(threads_for(8, 100 * MIN_WORK_PER_THREAD, 3), 3);
        assert_eq!(threads_for(4, 0, 0), 1);
    }
}
