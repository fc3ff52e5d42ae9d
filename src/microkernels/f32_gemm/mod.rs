//! float32 GEMM / indirect GEMM (IGEMM) microkernels and their safe driver.
//!
//! One call of a microkernel computes `tiles` blocks of `mr x nc` of `C` (`mr <= MR`,
//! `nc <= NR`), one under the other:
//!
//! `C[i][j] = clamp(bias[j] + sum_{t < ks} sum_{k < kc} A_t[i][k] * W[t][k][j], min, max)`
//!
//! `A_t[i]` is reached through a pointer per row and tap (the indirection of XNNPACK's
//! IGEMM): a 1x1 convolution or a fully connected layer has one tap whose pointers are the
//! input rows themselves; a KxK convolution has K*K taps whose pointers go to the input
//! pixel under each tap, or to a zero row where the tap falls in the padding. So no
//! im2col buffer is ever built. Where a run of rows' pointers all advance by one step
//! (the interior of an output row), the call gets only its first row's pointers and the
//! step ([`IgemmArgs`]).
//!
//! Weights are packed once per node ([`pack`]) into blocks of `NR` output channels:
//! `[NR bias][ks][kc][NR weights]`, zero-padded past the last channel, so the kernel reads
//! one linear stream and never branches on edges.

#[cfg(target_arch = "x86_64")]
pub mod avx2;
#[cfg(target_arch = "x86_64")]
pub mod avx512;
pub mod scalar;
#[cfg(test)]
mod tests;

use super::Table;
use super::epilogue::{Epilogue, hand_over};
use super::packed::Packed;
use super::shared_out::SharedOut;
use crate::error::{Error, Result};
use core::ops::Range;

/// The arguments of one microkernel call: `tiles` tiles of `mr` rows, one under the other.
///
/// The caller guarantees (this is each microkernel's safety contract):
/// - with `a_step == 0`, `tiles == 1`, `row0 == 0` and `a` points to `mr * ks` row
///   pointers, row-major (`a[i * ks + t]`), each valid for reading `kc` floats;
/// - otherwise `a` points to `ks` pointers, and row `i` (counting over all the tiles) reads
///   tap `t` at `a[t] + (row0 + i) * a_step`, valid for reading `kc` floats for every
///   `i < tiles * mr` (see [`IgemmArgs::row`]);
/// - `w` points to one packed block: `NR + ks * kc * NR` floats;
/// - `c` is valid for writing `nc` floats at `c + i * c_stride` for every
///   `i < tiles * mr`;
/// - `1 <= mr <= MR`, `1 <= nc <= NR`, `kc >= 1`, `ks >= 1`, `tiles >= 1`.
#[derive(Clone, Copy)]
pub struct IgemmArgs {
    pub mr: usize,
    pub tiles: usize,
    pub nc: usize,
    pub kc: usize,
    pub ks: usize,
    pub a: *const *const f32,
    pub a_step: usize,
    pub row0: usize,
    pub w: *const f32,
    pub c: *mut f32,
    pub c_stride: usize,
    pub min: f32,
    pub max: f32,
}

impl IgemmArgs {
    /// Row `i`'s pointer for tap `t` (rows stepping from the first pointers when `a_step`
    /// is set: the interior of an output row needs no pointer per row).
    ///
    /// # Safety
    /// The contract of [`IgemmArgs`], with `i < mr * tiles` and `t < ks`.
    #[inline(always)]
    pub unsafe fn row(&self, i: usize, t: usize) -> *const f32 {
        // SAFETY: `a` holds the pointers the contract says for these `i` and `t`.
        unsafe {
            if self.a_step == 0 {
                *self.a.add(i * self.ks + t)
            } else {
                (*self.a.add(t)).wrapping_add(opaque((self.row0 + i) * self.a_step))
            }
        }
    }

    /// Tile `q` of the call as a call of its own: its rows and output `q * mr` rows
    /// further on (only offset here, never read).
    #[inline(always)]
    pub fn tile(&self, q: usize) -> IgemmArgs {
        debug_assert!(q == 0 || self.a_step != 0, "only stepping rows come several tiles a call");
        let rows = q * self.mr;
        IgemmArgs { tiles: 1, row0: self.row0 + rows, c: self.c.wrapping_add(rows * self.c_stride), ..*self }
    }
}

/// `n`, hidden from the optimizer. Rows that step from one pointer would otherwise be
/// addressed from each other inside the kernels' K loops (a chain of adds before every
/// few broadcasts, 3% slower on a 1x1 layer); with opaque offsets, each row keeps a
/// register of its own.
#[inline(always)]
fn opaque(n: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let mut n = n;
        // SAFETY: an empty instruction sequence: it reads and writes nothing but the
        // register holding `n`, which it leaves unchanged.
        unsafe { core::arch::asm!("/* {0} */", inout(reg) n, options(pure, nomem, nostack, preserves_flags)) };
        n
    }
    // (Elsewhere only the scalar kernels run; the chain was measured on x86-64 only.)
    #[cfg(not(target_arch = "x86_64"))]
    n
}

/// A microkernel: see [`IgemmArgs`] for its contract.
pub type IgemmFn = unsafe fn(&IgemmArgs);

/// GEMM kernels of one tile shape.
pub struct GemmKernel {
    /// Rows per full tile.
    pub mr: usize,
    /// Output channels per packed block (a multiple of the vector width).
    pub nr: usize,
    /// Relative time per output column of a packed block (padding included), compared
    /// only between the tiles of one table: how [`GemmKernels::for_outputs`] weighs a
    /// faster tile that pads more against a slower one that pads less.
    pub col_cost: usize,
    /// `by_rows[r - 1]` computes exactly `r` rows, for `r` in `1..=mr`.
    pub by_rows: &'static [IgemmFn],
}

/// The GEMM kernels of one instruction set: `tiles` for layers of more than `narrow.nr`
/// output channels (a wide tile, and tiles whose widths cover some channel counts with
/// less padding: 24 channels as one block of 24 rather than two of 16), a `narrow` tile
/// for layers of at most `narrow.nr` output channels (which a wide tile would mostly
/// compute for nothing), and `single` (`nr == 1`) for one output channel, where the
/// kernel may vectorise along K instead.
pub struct GemmKernels {
    /// Preferred first; never empty.
    pub tiles: &'static [GemmKernel],
    pub narrow: GemmKernel,
    pub single: GemmKernel,
}

impl GemmKernels {
    /// The tile shape used for `n` output channels: of `tiles`, the one with the least
    /// padded columns times `col_cost` (the first on a tie).
    pub fn for_outputs(&self, n: usize) -> &GemmKernel {
        if n == 1 {
            &self.single
        } else if n <= self.narrow.nr {
            &self.narrow
        } else {
            let cost = |k: &GemmKernel| n.div_ceil(k.nr) * k.nr * k.col_cost;
            self.tiles.iter().min_by_key(|k| cost(k)).unwrap_or(&self.narrow)
        }
    }
}

/// Weights (and bias) packed for one table's GEMM kernels.
#[derive(Debug)]
pub struct PackedGemm {
    data: Packed<f32>,
    /// Output channels.
    pub n: usize,
    /// Taps (kernel positions) per output.
    pub ks: usize,
    /// Input values per tap.
    pub kc: usize,
    /// The block width it was packed for.
    pub nr: usize,
}

impl PackedGemm {
    /// Bytes of packed weights.
    pub fn bytes(&self) -> usize {
        self.data.bytes()
    }

    fn block_len(&self) -> usize {
        self.nr + self.ks * self.kc * self.nr
    }

    fn blocks(&self) -> usize {
        self.n.div_ceil(self.nr)
    }
}

/// Packs `n` output channels of `ks` taps x `kc` inputs for `kernels`:
/// `weight(o, t, k)` is output channel `o`'s weight for tap `t`, input `k`.
pub fn pack(
    kernels: &GemmKernels,
    n: usize,
    ks: usize,
    kc: usize,
    weight: impl Fn(usize, usize, usize) -> f32,
    bias: Option<&[f32]>,
) -> Result<PackedGemm> {
    if n == 0 || ks == 0 || kc == 0 {
        return Err(Error::new(format!("GEMM packing needs positive sizes (n {n}, taps {ks}, k {kc})")));
    }
    if let Some(b) = bias
        && b.len() != n
    {
        return Err(Error::new(format!("GEMM packing: {} bias values for {n} outputs", b.len())));
    }
    let nr = kernels.for_outputs(n).nr;
    let block_len = ks
        .checked_mul(kc)
        .and_then(|v| v.checked_add(1))
        .and_then(|v| v.checked_mul(nr))
        .ok_or_else(|| Error::new("GEMM packing: weight size overflows"))?;
    let total =
        block_len.checked_mul(n.div_ceil(nr)).ok_or_else(|| Error::new("GEMM packing: weight size overflows"))?;
    let mut data = Packed::<f32>::zeroed(total)?;
    for (blk, chunk) in data.chunks_exact_mut(block_len).enumerate() {
        let o0 = blk * nr;
        let cols = nr.min(n - o0);
        if let Some(b) = bias {
            chunk[..cols].copy_from_slice(&b[o0..o0 + cols]);
        }
        // Output channel by channel: a filter stored output-major (OHWI) is then read in
        // order, and each write lands in the same few cache lines of the block.
        let body = &mut chunk[nr..];
        for j in 0..cols {
            let mut slots = body.iter_mut().skip(j).step_by(nr);
            for t in 0..ks {
                for (k, slot) in (0..kc).zip(&mut slots) {
                    *slot = weight(o0 + j, t, k);
                }
            }
        }
    }
    Ok(PackedGemm { data, n, ks, kc, nr })
}

/// The offset [`RowTaps::fill`] writes for a tap that falls in the padding (reads zeros).
pub const PAD: usize = usize::MAX;

/// Where each row's input for each tap starts.
pub trait RowTaps {
    /// Taps per row.
    fn taps_per_row(&self) -> usize;
    /// Writes, row after row, the `ks` element offsets into the input of rows `rows`
    /// (`offsets.len() == rows.len() * ks`); [`PAD`] marks a tap in the padding.
    fn fill(&self, rows: Range<usize>, offsets: &mut [usize]);

    /// Rows from `r` on whose tap offsets all advance by one fixed step: writes row `r`'s
    /// offsets (as [`fill`](Self::fill)) and returns `(count, step)` with `1 <= count <=
    /// limit`, so that row `r + j` reads tap `t` at `offsets[t] + j * step` (padding taps
    /// stay padding). `None` when row `r` starts no such run.
    fn linear_run(&self, _r: usize, _limit: usize, _offsets: &mut [usize]) -> Option<(usize, usize)> {
        None
    }

    /// `Some(w)` when, for rows of `kc` values per tap, the taps come in lines of `w`
    /// (`t = line * w + x`) whose inputs are
    /// contiguous wherever a line lies inside the input: tap `line * w + x` then reads at
    /// the line's first offset plus `x * kc`.
    fn contiguous_line(&self, _kc: usize) -> Option<usize> {
        None
    }

    /// Copies the `ks * kc` inputs of each row of `rows` into consecutive rows of `dst`
    /// (zeros for padding taps). Errors if a tap reads past `input`.
    fn gather(&self, rows: Range<usize>, input: &[f32], kc: usize, dst: &mut [f32]) -> Result<()> {
        gather_by_offsets(self, rows, input, kc, dst)
    }
}

/// [`RowTaps::gather`] through [`RowTaps::fill`]: tap by tap.
fn gather_by_offsets<T: RowTaps + ?Sized>(
    taps: &T,
    rows: Range<usize>,
    input: &[f32],
    kc: usize,
    dst: &mut [f32],
) -> Result<()> {
    let ks = taps.taps_per_row();
    let mut offs = vec![0usize; rows.len() * ks];
    taps.fill(rows.clone(), &mut offs);
    for ((r, d), row_offs) in rows.zip(dst.chunks_exact_mut(ks * kc)).zip(offs.chunks_exact(ks)) {
        for (t, (&o, d)) in row_offs.iter().zip(d.chunks_exact_mut(kc)).enumerate() {
            if o == PAD {
                d.fill(0.0);
            } else {
                d.copy_from_slice(input.get(o..o.saturating_add(kc)).ok_or_else(|| past_input(r, t, input.len()))?);
            }
        }
    }
    Ok(())
}

/// Copies a short run (tens of floats) inline, eight at a time with the last eight (or
/// four) overlapping: a `memcpy` call per run would cost more than the copy.
#[inline]
fn copy_short(dst: &mut [f32], src: &[f32]) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    if n >= 8 {
        let mut i = 0;
        while i + 8 <= n {
            let v: [f32; 8] = src[i..i + 8].try_into().unwrap_or([0.0; 8]);
            dst[i..i + 8].copy_from_slice(&v);
            i += 8;
        }
        if i < n {
            let v: [f32; 8] = src[n - 8..].try_into().unwrap_or([0.0; 8]);
            dst[n - 8..].copy_from_slice(&v);
        }
    } else if n >= 4 {
        let a: [f32; 4] = src[..4].try_into().unwrap_or([0.0; 4]);
        let b: [f32; 4] = src[n - 4..].try_into().unwrap_or([0.0; 4]);
        dst[..4].copy_from_slice(&a);
        dst[n - 4..].copy_from_slice(&b);
    } else {
        // At most three values, written one by one.
        if n > 0 {
            dst[0] = src[0];
        }
        if n > 1 {
            dst[1] = src[1];
        }
        if n > 2 {
            dst[2] = src[2];
        }
    }
}

fn past_input(r: usize, t: usize, len: usize) -> Error {
    Error::new(format!("GEMM row {r} tap {t} reads past the input ({len} values)"))
}

/// Appends the tap pointers of rows `rows` (one per tap per row) to `ptrs`, for the 8-bit
/// GEMM's driver (this one passes runs of rows to its kernels instead). A run of rows
/// whose taps advance by one fixed step (the interior of an output row, or dense rows)
/// is placed by stepping from each tap's first pointer, after checking the run's last
/// read once; other rows are placed one at a time. Padding taps point at `pad_row`;
/// `past_input(row, tap, input_len)` is the error for a read outside `input`. `offsets`
/// and `bases` are scratch of one entry per tap.
#[allow(clippy::too_many_arguments)]
pub(crate) fn push_tap_pointers<T>(
    taps: &impl RowTaps,
    rows: Range<usize>,
    input: &[T],
    kc: usize,
    pad_row: &[T],
    offsets: &mut [usize],
    bases: &mut [(*const T, usize)],
    ptrs: &mut Vec<*const T>,
    past_input: fn(usize, usize, usize) -> Error,
) -> Result<()> {
    let mut r = rows.start;
    while r < rows.end {
        let (count, step) = run_from(taps, r, rows.end - r, offsets);
        for (t, &o) in offsets.iter().enumerate() {
            if o == PAD {
                bases[t] = (pad_row.as_ptr(), 0);
                continue;
            }
            // Every read of this tap in the run lies in `span`.
            let end = (count - 1).checked_mul(step).and_then(|v| v.checked_add(o)).and_then(|v| v.checked_add(kc));
            let span = end.and_then(|e| input.get(o..e)).ok_or_else(|| past_input(r + count - 1, t, input.len()))?;
            bases[t] = (span.as_ptr(), step);
        }
        // Sized once, then filled row by row (no capacity check per pointer).
        let start = ptrs.len();
        ptrs.resize(start + count * bases.len(), core::ptr::null());
        if let [(base, step)] = *bases {
            // One tap (dense rows, 1x1 layers): a plain arithmetic sequence.
            for (j, p) in ptrs[start..].iter_mut().enumerate() {
                *p = base.wrapping_add(j * step);
            }
        } else {
            for (j, row) in ptrs[start..].chunks_exact_mut(bases.len()).enumerate() {
                for (p, &(base, step)) in row.iter_mut().zip(bases.iter()) {
                    *p = base.wrapping_add(j * step);
                }
            }
        }
        r += count;
    }
    Ok(())
}

/// The rows from `r` (at most `left`) that share one step: writes row `r`'s tap offsets
/// into `offsets` and returns `(count, step)`, the run [`RowTaps::linear_run`] finds or
/// row `r` alone (`(1, 0)`).
pub(crate) fn run_from(taps: &impl RowTaps, r: usize, left: usize, offsets: &mut [usize]) -> (usize, usize) {
    match taps.linear_run(r, left, offsets) {
        Some((count, step)) if count >= 1 && count <= left => (count, step),
        _ => {
            taps.fill(r..r + 1, offsets);
            (1, 0)
        }
    }
}

/// Dense rows: row `r` starts at `r * stride` (a fully connected layer, a 1x1 stride-1
/// convolution without padding).
pub struct DenseRows {
    pub stride: usize,
}

impl RowTaps for DenseRows {
    fn taps_per_row(&self) -> usize {
        1
    }

    fn linear_run(&self, r: usize, limit: usize, offsets: &mut [usize]) -> Option<(usize, usize)> {
        offsets[0] = r * self.stride;
        Some((limit, self.stride))
    }
    #[inline]
    fn fill(&self, rows: Range<usize>, offsets: &mut [usize]) {
        for (o, r) in offsets.iter_mut().zip(rows) {
            *o = r * self.stride;
        }
    }
}

/// Rows of output pixels of an NHWC convolution (`r` = output pixel in NHWC order).
#[derive(Clone, Copy, Debug)]
pub struct ConvRows {
    pub in_h: usize,
    pub in_w: usize,
    pub in_c: usize,
    pub out_h: usize,
    pub out_w: usize,
    pub f_h: usize,
    pub f_w: usize,
    pub stride_h: usize,
    pub stride_w: usize,
    pub dil_h: usize,
    pub dil_w: usize,
    pub pad_h: usize,
    pub pad_w: usize,
}

impl ConvRows {
    /// Output row `r`'s pixel `(ox, oy, batch)`.
    #[inline]
    fn pixel(&self, r: usize) -> (usize, usize, usize) {
        (r % self.out_w, (r / self.out_w) % self.out_h, r / (self.out_w * self.out_h))
    }

    /// The output pixel after `(ox, oy, b)` in NHWC order: counting, not dividing.
    #[inline]
    fn next_pixel(&self, ox: usize, oy: usize, b: usize) -> (usize, usize, usize) {
        if ox + 1 < self.out_w {
            (ox + 1, oy, b)
        } else if oy + 1 < self.out_h {
            (0, oy + 1, b)
        } else {
            (0, 0, b + 1)
        }
    }
}

#[cfg(test)]
impl ConvRows {
    /// A square `f x f` filter, the same stride and padding both ways, undilated, over
    /// one image (for tests).
    pub(crate) fn square(in_h: usize, in_w: usize, in_c: usize, f: usize, stride: usize, pad: usize) -> ConvRows {
        ConvRows {
            in_h,
            in_w,
            in_c,
            out_h: (in_h + 2 * pad - f) / stride + 1,
            out_w: (in_w + 2 * pad - f) / stride + 1,
            f_h: f,
            f_w: f,
            stride_h: stride,
            stride_w: stride,
            dil_h: 1,
            dil_w: 1,
            pad_h: pad,
            pad_w: pad,
        }
    }
}

impl RowTaps for ConvRows {
    fn taps_per_row(&self) -> usize {
        self.f_h * self.f_w
    }

    fn contiguous_line(&self, kc: usize) -> Option<usize> {
        (self.dil_w == 1 && kc == self.in_c).then_some(self.f_w)
    }

    /// Interior pixels of an output row (every filter column inside the image) form a run:
    /// each step right moves every tap by `stride_w * in_c`.
    fn linear_run(&self, r: usize, limit: usize, offsets: &mut [usize]) -> Option<(usize, usize)> {
        if self.out_w == 0 || limit == 0 {
            return None;
        }
        let ox = r % self.out_w;
        // First interior column: ox * stride_w >= pad_w.
        let first = self.pad_w.div_ceil(self.stride_w);
        // Last interior column: ox * stride_w - pad_w + (f_w - 1) * dil_w <= in_w - 1.
        let reach = (self.f_w - 1) * self.dil_w;
        let last = (self.in_w + self.pad_w).checked_sub(reach + 1)? / self.stride_w;
        if ox < first || ox > last {
            return None;
        }
        let count = limit.min(last + 1 - ox).min(self.out_w - ox);
        self.fill(r..r + 1, offsets);
        Some((count, self.stride_w * self.in_c))
    }
    fn fill(&self, rows: Range<usize>, offsets: &mut [usize]) {
        if self.out_w == 0 || self.out_h == 0 {
            return;
        }
        let ks = self.f_h * self.f_w;
        let r = rows.start;
        // Position of the first row; the next rows are reached by counting, not dividing.
        let (mut ox, mut oy, mut b) = self.pixel(r);
        for row in offsets.chunks_exact_mut(ks).take(rows.len()) {
            let y0 = (oy * self.stride_h) as isize - self.pad_h as isize;
            let x0 = (ox * self.stride_w) as isize - self.pad_w as isize;
            for (ky, taps) in row.chunks_exact_mut(self.f_w).enumerate() {
                let iy = y0 + (ky * self.dil_h) as isize;
                if iy < 0 || iy as usize >= self.in_h {
                    taps.fill(PAD);
                    continue;
                }
                let line = (b * self.in_h + iy as usize) * self.in_w;
                for (kx, t) in taps.iter_mut().enumerate() {
                    let ix = x0 + (kx * self.dil_w) as isize;
                    *t = if ix >= 0 && (ix as usize) < self.in_w { (line + ix as usize) * self.in_c } else { PAD };
                }
            }
            (ox, oy, b) = self.next_pixel(ox, oy, b);
        }
    }

    /// Undilated columns: the taps of one filter row are one contiguous run of the
    /// input (clipped at the image's edges), copied at once.
    fn gather(&self, rows: Range<usize>, input: &[f32], kc: usize, dst: &mut [f32]) -> Result<()> {
        if self.dil_w != 1 || kc != self.in_c || self.out_w == 0 || self.out_h == 0 {
            return gather_by_offsets(self, rows, input, kc, dst);
        }
        let line_len = self.f_w * kc;
        let row_len = self.f_h * line_len;
        let count = rows.len();
        if dst.len() < count * row_len {
            return Err(Error::new(format!("GEMM gather of {count} rows into {} values", dst.len())));
        }
        let r = rows.start;
        let (mut ox, mut oy, mut b) = self.pixel(r);
        let (f_w, in_w, in_h) = (self.f_w as isize, self.in_w as isize, self.in_h as isize);
        for i in 0..count {
            let row = &mut dst[i * row_len..(i + 1) * row_len];
            let y0 = (oy * self.stride_h) as isize - self.pad_h as isize;
            let x0 = (ox * self.stride_w) as isize - self.pad_w as isize;
            // Filter columns inside the image: kx in lo..hi.
            let lo = (-x0).clamp(0, f_w) as usize;
            let hi = (in_w - x0).clamp(lo as isize, f_w) as usize;
            let image_row0 = b * self.in_h;
            for ky in 0..self.f_h {
                let line = &mut row[ky * line_len..(ky + 1) * line_len];
                let iy = y0 + (ky * self.dil_h) as isize;
                if iy < 0 || iy >= in_h || lo == hi {
                    line.fill(0.0);
                    continue;
                }
                let start = ((image_row0 + iy as usize) * self.in_w + (x0 + lo as isize) as usize) * kc;
                let len = (hi - lo) * kc;
                let Some(src) = input.get(start..start + len) else {
                    return Err(past_input(r + i, ky * self.f_w, input.len()));
                };
                if lo > 0 {
                    line[..lo * kc].fill(0.0);
                }
                copy_short(&mut line[lo * kc..hi * kc], src);
                if hi < self.f_w {
                    line[hi * kc..].fill(0.0);
                }
            }
            (ox, oy, b) = self.next_pixel(ox, oy, b);
        }
        Ok(())
    }
}

/// Input channels per tap below which rows are gathered (see [`igemm`]).
const GATHER_BELOW_KC: usize = 8;
/// The same bound for the single-output kernel, which vectorises along K.
const SINGLE_GATHER_BELOW_KC: usize = 16;

/// Rows of a chunk whose tap pointers advance by one step: row `first + j` reads line
/// `l` at its first row's pointer plus `j * step`.
struct Run {
    first: usize,
    count: usize,
    step: usize,
    source: RunSource,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RunSource {
    /// Read in place: the first row's pointers from `at` in the chunk's run bases; `padded`
    /// when some are padding taps (which read zeros, without stepping).
    Input { at: usize, padded: bool },
    /// Gathered rows, `step` (a whole row) apart.
    Gathered,
}

/// One kernel call of a chunk: `tiles` tiles of `mr` rows from the chunk's row `first`,
/// their pointers from `at` in the chunk's pointers; `step` as [`IgemmArgs::a_step`].
#[derive(Clone, Copy)]
struct Call {
    first: usize,
    mr: usize,
    tiles: usize,
    at: usize,
    step: usize,
}

/// The most zeros a padding tap of a stepping tile may reach, in floats.
const PAD_REACH_MAX: usize = 1 << 14;

fn rows_per_chunk(mr: usize, ks: usize, kc: usize) -> usize {
    let row_bytes = ks * kc * 4;
    let rows = (96 * 1024 / row_bytes.max(1)).clamp(mr, 32 * mr);
    rows / mr * mr
}

/// Computes output rows `rows` and output channels `cols` (rounded to whole packed
/// blocks: `cols.start` must be a multiple of `nr`) of `C = A * W` with `table`'s
/// kernels. Row `r`'s inputs are found through `taps`; `out[(r - rows.start) * out_stride
/// + (j - cols.start)]` receives output channel `j` of row `r`.
#[allow(clippy::too_many_arguments)]
pub fn igemm(
    table: &Table,
    packed: &PackedGemm,
    input: &[f32],
    taps: &impl RowTaps,
    rows: Range<usize>,
    cols: Range<usize>,
    out: &mut [f32],
    out_stride: usize,
    act: (f32, f32),
) -> Result<()> {
    let out = SharedOut::new(out);
    // SAFETY: `out` borrows the caller's slice mutably for this call: nothing else
    // touches it meanwhile.
    unsafe { igemm_shared(table, packed, input, taps, rows, cols, out, 0, out_stride, act, None) }
}

/// [`igemm`] into `out` at `offset`: output channel `j` of row `r` goes to element
/// `offset + (r - rows.start) * out_stride + (j - cols.start)` (bounds checked), each
/// chunk of rows then handed to `epilogue`, if any.
///
/// # Safety
/// While the call runs, no other thread reads or writes the elements it writes (rows
/// `rows`, columns `cols`, at the positions above).
#[allow(clippy::too_many_arguments)]
pub unsafe fn igemm_shared(
    table: &Table,
    packed: &PackedGemm,
    input: &[f32],
    taps: &impl RowTaps,
    rows: Range<usize>,
    cols: Range<usize>,
    out: SharedOut<'_, f32>,
    offset: usize,
    out_stride: usize,
    (min, max): (f32, f32),
    epilogue: Option<&dyn Epilogue<f32>>,
) -> Result<()> {
    let k = table.f32_gemm.for_outputs(packed.n);
    if packed.nr != k.nr {
        return Err(Error::new(format!("GEMM weights packed for blocks of {}, kernels use {}", packed.nr, k.nr)));
    }
    if !cols.start.is_multiple_of(k.nr) || cols.end > packed.n || cols.start >= cols.end {
        return Err(Error::new(format!("GEMM columns {cols:?} do not fit {} outputs in blocks of {}", packed.n, k.nr)));
    }
    if rows.is_empty() {
        return Ok(());
    }
    let ncols = cols.len();
    let need = (rows.len() - 1)
        .checked_mul(out_stride)
        .and_then(|v| v.checked_add(ncols))
        .ok_or_else(|| Error::new("GEMM output size overflows"))?;
    if out.len().checked_sub(offset).is_none_or(|room| room < need) || (rows.len() > 1 && out_stride < ncols) {
        return Err(Error::new(format!(
            "GEMM output of {} values cannot hold {} rows of {ncols} from {offset}",
            out.len(),
            rows.len()
        )));
    }
    let (ks, kc) = (packed.ks, packed.kc);
    if taps.taps_per_row() != ks {
        return Err(Error::new(format!("GEMM rows have {} taps, the weights {ks}", taps.taps_per_row())));
    }
    // With few input channels per tap (an RGB first layer), walking taps costs more than
    // the multiply-adds they feed: gather each row's taps into one contiguous row instead
    // (a per-chunk im2col of a few KB) and run it as a single tap of `ks * kc` values;
    // the packed weights are laid out identically either way.
    // A single output channel sums along K: a few channels per tap would leave its vectors
    // mostly empty, so it takes whole filter rows (or gathered rows) up to a wider bound.
    let gather = ks > 1 && (kc < GATHER_BELOW_KC || (k.nr == 1 && kc < SINGLE_GATHER_BELOW_KC));
    // Better still, when each filter row's taps read one contiguous run of the input
    // (undilated columns), a filter row is one tap of `line * kc` values: rows inside the
    // image then point straight into the input, and only rows at the left and right edges
    // (with padding columns) are gathered.
    let line = taps.contiguous_line(kc).filter(|&w| gather && w > 1 && ks % w == 0);
    let (call_ks, call_kc) = match line {
        Some(w) => (ks / w, w * kc),
        None if gather => (1, ks * kc),
        None => (ks, kc),
    };
    // No longer than the call's rows (rounded to whole tiles): the buffers below are
    // sized and cleared for a chunk.
    let chunk = rows_per_chunk(k.mr, ks, kc).min(rows.len().div_ceil(k.mr) * k.mr);
    let row_len = ks * kc;
    let mut gathered = if gather { vec![0f32; chunk * row_len] } else { Vec::new() };
    let mut offsets = vec![0usize; ks];
    // The taps of a line start `tap_stride` layer taps apart (1: tap by tap).
    let tap_stride = line.unwrap_or(1);
    // The chunk's rows as runs, and the first row's tap pointers of each run read in place
    // (`call_ks` per run, null for a tap in the padding).
    let mut runs: Vec<Run> = Vec::new();
    let mut run_bases: Vec<*const f32> = Vec::new();
    // What padding taps read: zeros, enough for a tile whose rows step through them.
    let mut zero = vec![0f32; call_kc];
    // The kernel calls of a chunk (the same for every block of columns).
    let mut calls: Vec<Call> = Vec::new();
    let mut ptrs: Vec<*const f32> = Vec::new();
    let block_len = packed.block_len();
    let first_block = cols.start / k.nr;
    let last_block = cols.end.div_ceil(k.nr).min(packed.blocks());
    let mut r0 = rows.start;
    while r0 < rows.end {
        let r1 = (r0 + chunk).min(rows.end);
        let chunk_rows = r1 - r0;
        runs.clear();
        run_bases.clear();
        if gather && line.is_none() {
            taps.gather(r0..r1, input, kc, &mut gathered[..chunk_rows * row_len])?;
            runs.push(Run { first: 0, count: chunk_rows, step: row_len, source: RunSource::Gathered });
        } else {
            // Runs of rows whose taps advance by one step (checking each tap's last read);
            // with lines, the rows that start none (an edge with padding columns) are
            // gathered.
            let mut q = 0;
            while q < chunk_rows {
                let r = r0 + q;
                let left = chunk_rows - q;
                let found = match line {
                    Some(_) => taps.linear_run(r, left, &mut offsets).filter(|&(n, _)| n >= 1 && n <= left),
                    None => Some(run_from(taps, r, left, &mut offsets)),
                };
                let Some((count, step)) = found else {
                    taps.gather(r..r + 1, input, kc, &mut gathered[q * row_len..(q + 1) * row_len])?;
                    match runs.last_mut() {
                        Some(last) if last.source == RunSource::Gathered && last.first + last.count == q => {
                            last.count += 1
                        }
                        _ => runs.push(Run { first: q, count: 1, step: row_len, source: RunSource::Gathered }),
                    }
                    q += 1;
                    continue;
                };
                let at = run_bases.len();
                let mut padded = false;
                for l in 0..call_ks {
                    let o = offsets[l * tap_stride];
                    if o == PAD {
                        run_bases.push(core::ptr::null());
                        padded = true;
                        continue;
                    }
                    let end = (count - 1)
                        .checked_mul(step)
                        .and_then(|v| v.checked_add(o))
                        .and_then(|v| v.checked_add(call_kc));
                    let span = end
                        .and_then(|e| input.get(o..e))
                        .ok_or_else(|| past_input(r + count - 1, l * tap_stride, input.len()))?;
                    run_bases.push(span.as_ptr());
                }
                runs.push(Run { first: q, count, step, source: RunSource::Input { at, padded } });
                q += count;
            }
        }
        // A padding tap of a call that steps through its rows reads `(rows - 1) * step`
        // past the zeros' start: they grow to what the chunk's runs reach, within a bound
        // (past it, calls take fewer tiles, or a pointer per row).
        let pad_reach = runs
            .iter()
            .filter(|run| matches!(run.source, RunSource::Input { padded: true, .. }) && run.count > 1)
            .map(|run| (run.count - 1).saturating_mul(run.step).saturating_add(call_kc).min(PAD_REACH_MAX))
            .max()
            .unwrap_or(0);
        if zero.len() < pad_reach {
            zero.resize(pad_reach, 0.0);
        }
        // The tiles' pointers (the gathered rows are final now).
        let (gathered, zero) = (&gathered[..], &zero[..]);
        let tap = |run: &Run, j: usize, l: usize| -> *const f32 {
            match run.source {
                RunSource::Gathered => gathered[(run.first + j) * row_len + l * call_kc..].as_ptr(),
                RunSource::Input { at, .. } => match run_bases[at + l] {
                    b if b.is_null() => zero.as_ptr(),
                    b => b.wrapping_add(j * run.step),
                },
            }
        };
        calls.clear();
        // Sized for a pointer per row and tap (the most a chunk takes), then written in
        // place: no capacity check per pointer.
        ptrs.clear();
        ptrs.resize(chunk_rows * call_ks, core::ptr::null());
        let mut p = 0;
        let mut cur = 0;
        let mut q0 = 0;
        while q0 < chunk_rows {
            let mr = k.mr.min(chunk_rows - q0);
            while runs[cur].first + runs[cur].count <= q0 {
                cur += 1;
            }
            let run = &runs[cur];
            // The most rows one call may step through: all, unless padding taps read zeros.
            let most = match run.source {
                RunSource::Input { padded: true, .. } if run.step > 0 => (zero.len() - call_kc) / run.step + 1,
                _ => usize::MAX,
            };
            if mr > 1 && run.step > 0 && q0 + mr <= run.first + run.count && mr <= most {
                // Whole tiles inside the run step from its first pointers: one call takes
                // as many as follow each other there (and the zeros allow).
                let tiles = if mr == k.mr { ((run.first + run.count - q0) / mr).min(most / mr) } else { 1 };
                for (l, slot) in ptrs[p..p + call_ks].iter_mut().enumerate() {
                    *slot = tap(run, q0 - run.first, l);
                }
                calls.push(Call { first: q0, mr, tiles, at: p, step: run.step });
                p += call_ks;
                q0 += mr * tiles;
            } else {
                calls.push(Call { first: q0, mr, tiles: 1, at: p, step: 0 });
                let mut c = cur;
                for q in q0..q0 + mr {
                    while runs[c].first + runs[c].count <= q {
                        c += 1;
                    }
                    for (l, slot) in ptrs[p..p + call_ks].iter_mut().enumerate() {
                        *slot = tap(&runs[c], q - runs[c].first, l);
                    }
                    p += call_ks;
                }
                q0 += mr;
            }
        }
        for blk in first_block..last_block {
            let w = &packed.data[blk * block_len..(blk + 1) * block_len];
            let j0 = blk * k.nr;
            let nc = k.nr.min(cols.end - j0);
            let col = j0 - cols.start;
            for call in &calls {
                let Call { first, mr, tiles, at, step } = *call;
                let c_start = offset + (r0 + first - rows.start) * out_stride + col;
                // The call's last row ends at c_start + (mr*tiles-1)*out_stride + nc, at
                // most offset + need <= out.len (checked above).
                // SAFETY: `c_start` is within `out`, as just argued.
                let c = unsafe { out.ptr().add(c_start) };
                let n_ptrs = if step == 0 { call_ks * mr } else { call_ks };
                let args = IgemmArgs {
                    mr,
                    tiles,
                    nc,
                    kc: call_kc,
                    ks: call_ks,
                    a: ptrs[at..at + n_ptrs].as_ptr(),
                    a_step: step,
                    row0: 0,
                    w: w.as_ptr(),
                    c,
                    c_stride: out_stride,
                    min,
                    max,
                };
                // SAFETY: the contract of `IgemmArgs` holds: with `step == 0` (one tile),
                // `ptrs[at..at + call_ks*mr]` are `mr * call_ks` pointers (row-major); else
                // `ptrs[at..at + call_ks]` are the call's first row's, and all its
                // `mr * tiles` rows lie in the same run, row `i` `i * step` further on.
                // Each row's pointer reads `call_kc` floats: inside a checked span of
                // `input` (a run's row `j` is `j * step` past the span's start, and the
                // span reaches the run's last read of `call_kc`), inside `zero` (a padding
                // tap: a stepping call's `mr * tiles <= most` rows reach at most
                // `(most - 1) * step + call_kc <= zero.len()` floats into it), or inside a
                // gathered row (`row_len` apart, `call_kc`-long lines); all alive and
                // unmodified during this call; `w` is one whole packed block
                // (`NR + ks*kc*NR` floats, checked by the slice above); `c` covers
                // `(mr * tiles - 1) * out_stride + nc` floats of `out`, which no other
                // thread touches meanwhile (the caller's contract); `mr <= MR` and
                // `nc <= NR` by construction, `kc, ks >= 1` by `pack`.
                unsafe { (k.by_rows[mr - 1])(&args) };
            }
        }
        if let Some(epilogue) = epilogue {
            let at = |r: usize| offset + (r - rows.start) * out_stride;
            // SAFETY: rows `r0..r1`, columns `cols` of this call lie inside `out` (`need`
            // was checked), and no other thread touches them (the caller's contract).
            unsafe { hand_over(epilogue, out, at, r0..r1, cols.clone(), out_stride)? };
        }
        r0 = r1;
    }
    Ok(())
}
