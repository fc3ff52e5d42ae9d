//! Splitting float32 elementwise work (activations, binary ops, PAD) over the pool: how
//! many threads a run of values deserves, and a contiguous split of one.

use super::{MIN_WORK_PER_THREAD, parallel_chunks_mut, threads_for};
use crate::error::{Error, Result};

/// Elements each thread must get before a float32 elementwise op splits over threads.
/// Splitting pays even for small tensors: the producer (a convolution) split its output
/// the same way, so each thread's share is already in its own cache, while a single
/// thread would have to fetch the other thread's half from the other core. Below this,
/// the hand-off to a worker and back costs more than the share.
pub(crate) const MIN_ELEMENTS_PER_THREAD: usize = 1 << 12;

/// How many threads an elementwise op of `len` values uses, at most `max_threads`: the
/// rule every op splits by (`threads_for`), a value counting as the work that makes
/// [`MIN_ELEMENTS_PER_THREAD`] values one thread's minimum share.
pub fn elementwise_threads(max_threads: usize, len: usize) -> usize {
    let work_per_element = MIN_WORK_PER_THREAD / MIN_ELEMENTS_PER_THREAD;
    threads_for(max_threads, len.saturating_mul(work_per_element), len)
}

/// A float32 elementwise computation of `out` from `x` (equal lengths).
pub type UnaryF32<'f> = dyn Fn(&[f32], &mut [f32]) -> Result<()> + Sync + 'f;

/// `f(x, out)` on `x` and `out` (equal lengths, checked), split into contiguous runs over
/// up to `max_threads` threads when they are long enough.
pub fn split_unary_f32(max_threads: usize, x: &[f32], out: &mut [f32], f: &UnaryF32<'_>) -> Result<()> {
    if x.len() != out.len() {
        return Err(Error::new(format!("input holds {} elements, output {}", x.len(), out.len())));
    }
    let threads = elementwise_threads(max_threads, out.len());
    if threads <= 1 {
        return f(x, out);
    }
    let chunk = out.len().div_ceil(threads);
    parallel_chunks_mut(threads, out, chunk, &|i, o| {
        let at = i * chunk;
        let xs = x.get(at..at + o.len()).ok_or_else(|| Error::new("elementwise chunk out of range"))?;
        f(xs, o)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_unary_covers_every_value_once() {
        let n = 2 * MIN_ELEMENTS_PER_THREAD + 3;
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        for threads in [1, 2, 3] {
            let mut out = vec![-1f32; n];
            split_unary_f32(threads, &x, &mut out, &|x, o| {
                for (o, &v) in o.iter_mut().zip(x) {
                    *o = v + 1.0;
                }
                Ok(())
            })
            .unwrap();
            assert!(out.iter().enumerate().all(|(i, &v)| v == i as f32 + 1.0), "{threads} threads");
        }
        assert!(split_unary_f32(2, &x[..3], &mut [0.0; 2], &|_, _| Ok(())).is_err());
    }
}
