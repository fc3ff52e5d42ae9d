//! How a GEMM-shaped layer's output tiles are split over threads: by rows (each thread a
//! contiguous run of output pixels) or in column-block order (each thread a contiguous
//! run of output-channel blocks over all rows).
//!
//! Split by rows, each thread mostly reads the pixels it wrote in the op before, but
//! every thread reads all the weights. Where the weights are several times the input
//! (the small late layers of a network and fully connected layers, mostly reading
//! weights) the column-block split lets each thread read only its share of the weights,
//! and it is even to a tile where the rows are not: a 7x7 layer's 49 rows make 7 row
//! tiles of 7, and split by rows over 2 threads one thread gets 4 against an even 3.5.

use crate::error::{Error, Result};
use crate::kernels::threadpool::parallel_for;
use crate::microkernels::cores_far_apart;
use crate::microkernels::shared_out::SharedOut;
use core::ops::Range;
use parking_lot::Mutex;

/// Computes one piece of a shared output: its rows and columns, the output, and the
/// piece's first value in it.
pub type PieceFn<'f, T> = dyn Fn(Range<usize>, Range<usize>, SharedOut<'_, T>, usize) -> Result<()> + Sync + 'f;

/// The output's tiles: `mr` rows by `nr` columns (the last of each partial), numbered
/// in column-block order (all row tiles of block 0, then of block 1, ...).
#[derive(Clone, Copy, Debug)]
pub struct TileGrid {
    pub rows: usize,
    pub cols: usize,
    pub mr: usize,
    pub nr: usize,
}

impl TileGrid {
    fn row_tiles(&self) -> usize {
        self.rows.div_ceil(self.mr)
    }

    pub fn tiles(&self) -> usize {
        self.row_tiles() * self.cols.div_ceil(self.nr)
    }

    /// Tiles `range` as rectangles (rows, columns): whole blocks merged into one.
    pub fn pieces(&self, range: Range<usize>) -> Vec<(Range<usize>, Range<usize>)> {
        let (m, mut q, end) = (self.row_tiles(), range.start, range.end.min(self.tiles()));
        let mut pieces = Vec::new();
        while q < end {
            let (block, first) = (q / m, q % m);
            if first == 0 && end - q >= m {
                let blocks = (end - q) / m;
                pieces.push((0..self.rows, block * self.nr..((block + blocks) * self.nr).min(self.cols)));
                q += blocks * m;
            } else {
                let last = (first + end - q).min(m);
                pieces.push((
                    first * self.mr..(last * self.mr).min(self.rows),
                    block * self.nr..((block + 1) * self.nr).min(self.cols),
                ));
                q += last - first;
            }
        }
        pieces
    }

    /// Whether `threads` threads should split this grid in column-block order, for a
    /// layer with `weights` weight values against `input` input values: only where the
    /// weights are more than `WEIGHTS_OVER_INPUT` times the input. A single row then
    /// always splits so (there is nothing else to split); other layers only where the
    /// row split would be uneven to a tile and the threads run on nearby cores: on
    /// distant ones, reading the channels the other core wrote costs more than the even
    /// split saves.
    pub fn split_by_blocks(&self, threads: usize, weights: usize, input: usize) -> bool {
        threads > 1
            && weights > input.saturating_mul(WEIGHTS_OVER_INPUT)
            && (self.rows == 1 || (!cores_far_apart() && uneven_by_rows(self.rows, threads, self.mr)))
    }

    /// Fills `out` (the grid's `rows * cols` values, row after row) in column-block
    /// order over `threads` threads: `f(rows, cols, out, offset)` computes one piece,
    /// its first value at `offset`. No two calls get overlapping pieces, and each piece
    /// lies inside `out`, so each call may write its own elements of `out` while the
    /// others run.
    pub fn fill_by_blocks<T: Send>(&self, threads: usize, out: &mut [T], f: &PieceFn<'_, T>) -> Result<()> {
        if self.rows.checked_mul(self.cols) != Some(out.len()) {
            return Err(Error::new(format!(
                "output has {} values, the tiles cover {} rows of {}",
                out.len(),
                self.rows,
                self.cols
            )));
        }
        let (out, cols) = (SharedOut::new(out), self.cols);
        self.run_by_blocks(threads, &|rs, cs| {
            let offset = rs.start * cols + cs.start;
            f(rs, cs, out, offset)
        })
    }

    /// Calls `f(rows, cols)` on every piece of the grid, the tiles cut in column-block
    /// order into one contiguous range per thread over `threads` threads. Returns the
    /// first error a piece reports (a thread stops at its first).
    fn run_by_blocks(
        &self,
        threads: usize,
        f: &(dyn Fn(Range<usize>, Range<usize>) -> Result<()> + Sync),
    ) -> Result<()> {
        let grid = *self;
        let first_error: Mutex<Option<Error>> = Mutex::new(None);
        let first_error = &first_error;
        parallel_for(threads, threads, &move |i| {
            let tiles = grid.tiles();
            for (rs, cs) in grid.pieces(tiles * i / threads..tiles * (i + 1) / threads) {
                if let Err(e) = f(rs, cs) {
                    first_error.lock().get_or_insert(e);
                    return;
                }
            }
        })?;
        match first_error.lock().take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// How many times the input the weights must exceed for the column-block split: each
/// thread then reads all the input rows, half of them written by the other thread,
/// in place of the half of the weights it no longer reads (an int8 7x7 960->160
/// layer, weights 3.3 times its input, took 9.2 us by rows and 9.8 by blocks).
const WEIGHTS_OVER_INPUT: usize = 4;

/// Whether `rows` rows split by rows over `threads` threads waste more than a twentieth
/// of the slowest thread's tiles of `mr` rows.
pub fn uneven_by_rows(rows: usize, threads: usize, mr: usize) -> bool {
    let slowest = rows.div_ceil(threads).div_ceil(mr) * mr;
    20 * rows < 19 * threads * slowest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_ranges_cover_each_tile_once() {
        for (rows, cols, mr, nr) in [(49, 96, 7, 32), (1, 1000, 7, 32), (13, 40, 5, 16), (100, 7, 8, 8), (6, 64, 7, 32)]
        {
            let grid = TileGrid { rows, cols, mr, nr };
            for threads in 1..=5 {
                let mut hits = vec![0u8; rows * cols];
                let tiles = grid.tiles();
                for i in 0..threads {
                    for (rs, cs) in grid.pieces(tiles * i / threads..tiles * (i + 1) / threads) {
                        assert!(!rs.is_empty() && !cs.is_empty() && cs.start % nr == 0);
                        for r in rs {
                            cs.clone().for_each(|c| hits[r * cols + c] += 1);
                        }
                    }
                }
                assert!(hits.iter().all(|&h| h == 1), "{rows}x{cols} in {mr}x{nr} tiles on {threads} threads");
            }
        }
    }

    #[test]
    fn run_by_blocks_visits_every_element_once_and_reports_errors() {
        let grid = TileGrid { rows: 13, cols: 40, mr: 5, nr: 16 };
        for threads in 1..=4 {
            let hits: Vec<std::sync::atomic::AtomicU8> = (0..13 * 40).map(|_| Default::default()).collect();
            grid.run_by_blocks(threads, &|rs, cs| {
                for r in rs {
                    cs.clone().for_each(|c| {
                        hits[r * 40 + c].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    });
                }
                Ok(())
            })
            .unwrap();
            assert!(hits.iter().all(|h| h.load(std::sync::atomic::Ordering::Relaxed) == 1), "{threads} threads");
            let e = grid.run_by_blocks(threads, &|rs, _| {
                if rs.start == 0 { Err(Error::new("a piece fails")) } else { Ok(()) }
            });
            assert!(e.unwrap_err().message.contains("a piece fails"));
        }
    }

    #[test]
    fn fill_by_blocks_writes_each_element_at_its_offset() {
        let grid = TileGrid { rows: 9, cols: 24, mr: 4, nr: 8 };
        for threads in 1..=3 {
            let mut out = vec![usize::MAX; 9 * 24];
            grid.fill_by_blocks(threads, &mut out, &|rs, cs, out, offset| {
                for (i, r) in rs.enumerate() {
                    for (j, c) in cs.clone().enumerate() {
                        let at = offset + i * 24 + j;
                        assert!(at < out.len());
                        // SAFETY: in bounds (checked above), and this piece's own element.
                        unsafe { out.ptr().add(at).write(r * 24 + c) };
                    }
                }
                Ok(())
            })
            .unwrap();
            assert!(out.iter().enumerate().all(|(i, &v)| v == i), "{threads} threads");
        }
        let e = grid.fill_by_blocks(2, &mut [0u8; 10], &|_, _, _, _| Ok(()));
        assert!(e.unwrap_err().message.contains("cover 9 rows of 24"));
    }

    #[test]
    fn uneven_row_splits_are_found() {
        // 49 rows in tiles of 7 on 2 threads: 4 tiles against 3.5.
        assert!(uneven_by_rows(49, 2, 7));
        // 196 rows: 14 tiles each.
        assert!(!uneven_by_rows(196, 2, 7));
        assert!(uneven_by_rows(1, 2, 7));
    }
}
