//! Work on a GEMM's finished output while it is still in cache: the GEMM drivers hand an
//! [`Epilogue`] each chunk of rows as soon as the chunk's columns are computed (a fused
//! consumer such as a residual ADD, which then needs no pass over memory of its own).

use crate::error::Result;
use crate::microkernels::shared_out::SharedOut;
use core::ops::Range;

/// What runs on finished output rows of `T`.
pub trait Epilogue<T>: Sync {
    /// `out` holds rows `rows`, columns `cols` of the output: `rows.len()` rows of
    /// `cols.len()` values, back to back.
    fn apply(&self, rows: Range<usize>, cols: Range<usize>, out: &mut [T]) -> Result<()>;
}

/// Hands `epilogue` the finished rows `chunk`, columns `cols` of a call whose row `r`
/// starts at element `at(r)` of `out`, `out_stride` apart: as one span where the rows
/// lie back to back, else row by row.
///
/// # Safety
/// Every element of those rows and columns lies inside `out`, and no other thread reads
/// or writes them while this runs.
pub(crate) unsafe fn hand_over<T>(
    epilogue: &dyn Epilogue<T>,
    out: SharedOut<'_, T>,
    at: impl Fn(usize) -> usize,
    chunk: Range<usize>,
    cols: Range<usize>,
    out_stride: usize,
) -> Result<()> {
    let ncols = cols.len();
    if out_stride == ncols {
        // SAFETY: the chunk's rows are `chunk.len() * ncols` consecutive elements from
        // `at(chunk.start)`, inside `out` and this call's alone (the caller's contract).
        let done = unsafe { core::slice::from_raw_parts_mut(out.ptr().add(at(chunk.start)), chunk.len() * ncols) };
        return epilogue.apply(chunk, cols, done);
    }
    for r in chunk {
        // SAFETY: row `r`'s `ncols` elements, as above.
        let done = unsafe { core::slice::from_raw_parts_mut(out.ptr().add(at(r)), ncols) };
        epilogue.apply(r..r + 1, cols.clone(), done)?;
    }
    Ok(())
}
