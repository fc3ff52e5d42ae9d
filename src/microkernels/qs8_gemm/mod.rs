//! Signed 8-bit GEMM / indirect GEMM (IGEMM) microkernels and their safe driver, exact
//! with TFLite's integer convolution and fully connected kernels.
//!
//! TFLite computes `acc[j] = sum_k (x[k] - zp_in) * w[j][k]` (symmetric int8 weights), adds
//! the bias and requantizes. The kernels instead multiply the input as unsigned bytes
//! `u = x + 128` (`x ^ 0x80`, what `vpdpbusd` wants: unsigned times signed bytes, four
//! products summed into each 32-bit lane):
//!
//! `sum_k (x - zp_in) * w = sum_k u * w - (128 + zp_in) * sum_k w`
//!
//! so the second term is folded into the bias when the weights are packed, and every tap
//! that falls in the padding reads a row of `zp_in` (whose terms then cancel exactly, as
//! TFLite's skipped taps contribute nothing). All sums wrap in 32 bits, as TFLite's do, so
//! the result is identical whatever the order.
//!
//! One call of a microkernel computes `tiles` blocks of `mr x nc` outputs one under the
//! other (`mr <= MR`, `nc <= NR`; a call per run of whole tiles saves a call and its
//! arguments per tile, which layers of few inputs feel): row `i` reads its `ks` taps of
//! `kc` bytes through pointers (`a[i * ks + t]`: the input pixel under tap `t`, the
//! padding row, or a copied line) or, for copied rows of one tap, at a stride; `kc` a
//! multiple of 4. Weights are packed per block of `NR` output channels as
//! `[ks][kc / 4][NR][4]` bytes (zero past the last channel); the requantization tables
//! (folded bias, multiplier, shifts) are padded to whole blocks.

#[cfg(target_arch = "x86_64")]
pub mod avx512vnni;
pub mod scalar;
#[cfg(test)]
mod tests;

use super::epilogue::{Epilogue, hand_over};
use super::f32_gemm::{PAD, RowTaps, push_tap_pointers, run_from};
use super::packed::Packed;
use super::qs8_float_requant::FloatRequant;
pub use super::qs8_float_requant::FloatTables;
use super::qs8_requant::ChannelRequant;
use super::shared_out::SharedOut;
use crate::error::{Error, Result};
use core::ops::Range;

/// The arguments of one microkernel call.
///
/// The caller guarantees (this is each microkernel's safety contract), for each of
/// `tiles` tiles of `mr` rows, tile `q` being the first one moved `q * mr` rows down (its
/// rows as [`Qs8Rows::rows_down`] moves them, its output as [`Qs8Out::rows_down`]):
/// - `a` gives `mr * ks` rows (see [`Qs8Rows`]), each valid for reading `kc` bytes;
/// - `w` points to one packed block: `ks * kc * NR` bytes;
/// - the per-channel tables of `out` each point to `NR` readable values (the block's
///   channels) and its per-row tables to `mr` values;
/// - `out`'s `c` is valid for writing `nc` values at `c + i * c_stride` for every `i < mr`;
/// - `1 <= mr <= MR`, `1 <= nc <= NR`, `kc >= 4` and a multiple of 4, `ks >= 1`,
///   `tiles >= 1`.
#[derive(Clone, Copy)]
pub struct Qs8IgemmArgs {
    pub mr: usize,
    pub tiles: usize,
    pub nc: usize,
    pub kc: usize,
    pub ks: usize,
    pub a: Qs8Rows,
    /// True when the rows hold the input with its sign bits flipped (`x ^ 0x80`, the
    /// unsigned bytes the kernels multiply), false when they hold the input itself.
    pub flipped: bool,
    pub w: *const i8,
    pub c_stride: usize,
    pub out: Qs8Out,
}

impl Qs8IgemmArgs {
    /// Tile `q` of the run as a call of its own: its rows and output `q * mr` rows
    /// further on (only offset, never read here).
    #[inline(always)]
    pub fn tile(&self, q: usize) -> Qs8IgemmArgs {
        let rows = q * self.mr;
        Qs8IgemmArgs {
            tiles: 1,
            a: self.a.rows_down(rows, self.ks),
            out: self.out.rows_down(rows, self.c_stride),
            ..*self
        }
    }
}

/// Where a tile's rows are: row `i`'s tap `t`.
#[derive(Clone, Copy)]
pub enum Qs8Rows {
    /// Through pointers, row-major: `a[i * ks + t]`.
    Pointers(*const *const i8),
    /// Rows of one tap (`ks == 1`) `stride` bytes apart from `base`: rows copied back to
    /// back need no pointer each.
    Strided { base: *const i8, stride: usize },
}

impl Qs8Rows {
    /// The rows `rows` further down (only offset, never read here).
    #[inline]
    pub fn rows_down(self, rows: usize, ks: usize) -> Qs8Rows {
        match self {
            Qs8Rows::Pointers(a) => Qs8Rows::Pointers(a.wrapping_add(rows * ks)),
            Qs8Rows::Strided { base, stride } => Qs8Rows::Strided { base: base.wrapping_add(rows * stride), stride },
        }
    }

    /// Row `i`'s tap `t`.
    ///
    /// # Safety
    /// `i * ks + t` is one of the rows the contract of [`Qs8IgemmArgs`] gives.
    #[inline(always)]
    pub unsafe fn row(self, i: usize, t: usize, ks: usize) -> *const i8 {
        match self {
            // SAFETY: a pointer of the array (the caller's contract).
            Qs8Rows::Pointers(a) => unsafe { *a.add(i * ks + t) },
            Qs8Rows::Strided { base, stride } => base.wrapping_add(i * stride),
        }
    }
}

/// What a microkernel makes of its 32-bit sums `acc = sum u * w` (`u` the input bytes
/// plus 128).
#[derive(Clone, Copy)]
pub enum Qs8Out {
    /// int8 outputs: `requant_scalar(acc, bias, mult, left, right, ...)` per channel.
    Int8 {
        c: *mut i8,
        bias: *const i32,
        mult: *const i32,
        left: *const i32,
        right: *const i32,
        output_offset: i32,
        min: i32,
        max: i32,
        /// False when every `left` is 0.
        shifts_left: bool,
        /// False when no multiplier is `i32::MIN` (the high multiply cannot saturate).
        saturates: bool,
        /// The float shortcut's tables (see `qs8_float_requant`), `NR` values each, where
        /// the layer allows it; lanes it declines take the exact path.
        float: Option<FloatTables>,
    },
    /// The 32-bit sums plus a per-channel bias (a layer requantized outside the kernel).
    Int32 { c: *mut i32, bias: *const i32 },
    /// float outputs of a hybrid layer (row `i` quantized with its own scale and zero
    /// point): `clamp(f32(acc - row_fold[i] * sumw[j]) * scale[j] * row_scale[i] +
    /// bias[j], min, max)` with `row_fold = 128 + zero point`, in that order (TFLite's
    /// reference order, so results are identical).
    Float {
        c: *mut f32,
        sumw: *const i32,
        scale: *const f32,
        bias: *const f32,
        row_fold: *const i32,
        row_scale: *const f32,
        /// 1 when the row tables hold every row of the driver's run (a tile further down
        /// reads them further on), 0 when all rows share the first tile's entries.
        row_step: usize,
        min: f32,
        max: f32,
    },
}

impl Qs8Out {
    /// Where the output starts, and the bytes of one value.
    fn c_bytes(&self) -> (*const u8, usize) {
        match self {
            Qs8Out::Int8 { c, .. } => (*c as *const u8, 1),
            Qs8Out::Int32 { c, .. } => (*c as *const u8, 4),
            Qs8Out::Float { c, .. } => (*c as *const u8, 4),
        }
    }

    /// The output `rows` rows further down: `c` by `rows * c_stride` values, a hybrid
    /// layer's row tables by `rows * row_step` entries. The pointers are only offset
    /// (wrapping), never read here; the driver keeps them inside what `emit` gave.
    #[inline]
    pub fn rows_down(mut self, rows: usize, c_stride: usize) -> Qs8Out {
        let at = rows * c_stride;
        match &mut self {
            Qs8Out::Int8 { c, .. } => *c = c.wrapping_add(at),
            Qs8Out::Int32 { c, .. } => *c = c.wrapping_add(at),
            Qs8Out::Float { c, row_fold, row_scale, row_step, .. } => {
                *c = c.wrapping_add(at);
                *row_fold = row_fold.wrapping_add(rows * *row_step);
                *row_scale = row_scale.wrapping_add(rows * *row_step);
            }
        }
        self
    }
}

/// A microkernel: see [`Qs8IgemmArgs`] for its contract.
pub type Qs8IgemmFn = unsafe fn(&Qs8IgemmArgs);

/// Kernels of one tile shape.
pub struct Qs8GemmKernel {
    /// Rows per full tile.
    pub mr: usize,
    /// Output channels per packed block.
    pub nr: usize,
    /// `by_rows[r - 1]` computes exactly `r` rows, for `r` in `1..=mr`.
    pub by_rows: &'static [Qs8IgemmFn],
}

/// The 8-bit GEMM kernels of one instruction set: a wide tile, and a narrow one for
/// channel counts the wide block would pad by much more (see [`Self::for_outputs`]).
pub struct Qs8GemmKernels {
    pub wide: Qs8GemmKernel,
    pub narrow: Qs8GemmKernel,
    /// `dst[i] = src[i] ^ 0x80` (the bytes as the kernels multiply them), for slices of
    /// one length.
    pub flip: fn(&[i8], &mut [i8]),
}

impl Qs8GemmKernels {
    /// The tile shape used for `n` output channels: the wide one unless it pads more than
    /// an eighth of `n` beyond what the narrow one pads. The wide tile's two multiply-adds
    /// per broadcast outweigh a little padding (144 channels in blocks of 32 rather than
    /// 16: 56x56 24->144 0.060 -> 0.054 ms, mobilenet_v2_int8 0.8% faster on 1 and 2
    /// threads), not a lot (16 channels, twice the work).
    pub fn for_outputs(&self, n: usize) -> &Qs8GemmKernel {
        let padded = |k: &Qs8GemmKernel| n.div_ceil(k.nr) * k.nr;
        let extra = padded(&self.wide).saturating_sub(padded(&self.narrow));
        if extra * 8 > n { &self.narrow } else { &self.wide }
    }
}

/// How the output is requantized: TFLite's per-channel `(multiplier, shift)` pairs (one
/// per output channel, or one for all), the output zero point and the activation range.
pub struct Qs8Output<'a> {
    pub mults: &'a [(i32, i32)],
    pub offset: i32,
    pub range: (i32, i32),
}

/// The per-channel tables of a packed layer, padded to whole blocks.
#[derive(Debug)]
enum Tables {
    /// int8 outputs: the input zero point folded into the bias, and the float shortcut
    /// where the layer allows it.
    Requant(ChannelRequant, Option<FloatRequant>),
    /// 32-bit outputs: the input zero point folded into the bias.
    Int32 { bias: Vec<i32> },
    /// Hybrid float outputs: each channel's weight sum (the zero point is per row, so it
    /// is folded in the kernel), scale and float bias.
    Hybrid { sumw: Vec<i32>, scale: Vec<f32>, bias: Vec<f32> },
}

/// Weights and per-channel tables packed for one table's kernels.
#[derive(Debug)]
pub struct PackedQs8Gemm {
    data: Packed<i8>,
    tables: Tables,
    /// Output channels.
    pub n: usize,
    /// Taps per output row as the kernels see them (lines, when read a line at a time).
    pub ks: usize,
    /// Bytes per tap as the kernels see them (a multiple of 4).
    pub kc: usize,
    /// The block width it was packed for.
    pub nr: usize,
    /// Taps and values per tap of the layer itself.
    pub layer_ks: usize,
    pub layer_kc: usize,
    /// The layer's taps per kernel tap: `line > 1` reads the taps `line` at a time, each
    /// run of them as one span of `line * layer_kc` values padded to a multiple of 4
    /// (see [`pack`]); a layer whose values per tap are not a multiple of 4 is read that
    /// way too, all its taps as one line.
    pub line: usize,
    /// Whether rows are read a line at a time (`line > 1`, or values padded to 4).
    by_lines: bool,
    /// The input zero point folded into the bias (padding reads it); 0 for hybrid layers,
    /// whose padding reads each row's own zero point.
    pub input_zero_point: i8,
    /// Whether any channel shifts left / has the multiplier `i32::MIN` (the kernels skip
    /// those steps otherwise).
    shifts_left: bool,
    saturates: bool,
}

impl PackedQs8Gemm {
    /// Bytes of packed weights and tables.
    pub fn bytes(&self) -> usize {
        let tables = match &self.tables {
            Tables::Requant(rq, float) => (4 + if float.is_some() { 5 } else { 0 }) * rq.padded_channels(),
            Tables::Hybrid { sumw, .. } => 3 * sumw.len(),
            Tables::Int32 { bias } => bias.len(),
        };
        self.data.bytes() + 4 * tables
    }

    /// Whether the int8 requantization has its float shortcut (see `qs8_float_requant`).
    pub fn has_float_requant(&self) -> bool {
        matches!(self.tables, Tables::Requant(_, Some(_)))
    }

    fn block_len(&self) -> usize {
        self.ks * self.kc * self.nr
    }

    fn blocks(&self) -> usize {
        self.n.div_ceil(self.nr)
    }
}

/// Weights in the kernels' layout with each channel's weight sum.
struct PackedWeights {
    data: Packed<i8>,
    sums: Vec<i32>,
    /// Each channel's sum of `|w|`.
    abs_sums: Vec<u64>,
    ks: usize,
    kc: usize,
    nr: usize,
    line: usize,
    by_lines: bool,
}

/// An int8 filter as the packers read it, OHWI: output channel `o`'s weights for tap `t`
/// are `values[(o * ks + t) * per_tap..][..per_tap]`. A packer given more values per tap
/// than `per_tap` (channels padded to a multiple of 4) reads the extra ones as zeros.
#[derive(Clone, Copy, Debug)]
pub struct DenseFilter<'a> {
    pub values: &'a [i8],
    pub per_tap: usize,
}

impl DenseFilter<'_> {
    /// Checks that the filter holds `n` channels of `ks` taps, each read as `kc` values.
    fn check(&self, n: usize, ks: usize, kc: usize) -> Result<()> {
        let want = n.checked_mul(ks).and_then(|v| v.checked_mul(self.per_tap));
        if self.per_tap == 0 || self.per_tap > kc || want != Some(self.values.len()) {
            return Err(Error::new(format!(
                "8-bit GEMM packing: {} filter values of {} per tap for {n} outputs of {ks} taps read as {kc}",
                self.values.len(),
                self.per_tap
            )));
        }
        Ok(())
    }

    /// Channel `o`'s weight for tap `t`, value `k` (zero past `per_tap`).
    #[inline]
    fn weight(&self, ks: usize, o: usize, t: usize, k: usize) -> i8 {
        if k < self.per_tap { self.values[(o * ks + t) * self.per_tap + k] } else { 0 }
    }
}

/// The sum and the sum of magnitudes of `values`: sums wrap in 32 bits (as the kernels'
/// do), magnitudes are summed in 32-bit pieces short enough not to overflow.
fn weight_sums(values: &[i8]) -> (i32, u64) {
    let sum = values.iter().fold(0i32, |s, &v| s.wrapping_add(i32::from(v)));
    let abs =
        values.chunks(1 << 16).map(|c| u64::from(c.iter().map(|v| u32::from(v.unsigned_abs())).sum::<u32>())).sum();
    (sum, abs)
}

fn pack_weights(
    kernels: &Qs8GemmKernels,
    n: usize,
    ks: usize,
    kc: usize,
    line: usize,
    filter: DenseFilter<'_>,
) -> Result<PackedWeights> {
    if n == 0 || ks == 0 || kc == 0 {
        return Err(Error::new(format!("8-bit GEMM packing needs positive sizes (n {n}, taps {ks}, k {kc})")));
    }
    if line == 0 || !ks.is_multiple_of(line) {
        return Err(Error::new(format!("8-bit GEMM packing: lines of {line} taps cannot cover {ks} taps")));
    }
    filter.check(n, ks, kc)?;
    let overflow = || Error::new("8-bit GEMM packing: weight size overflows");
    // Values per tap not a multiple of 4 (the kernels read 4 at a time): all taps as one
    // line, unless the caller chose lines.
    let line = if line == 1 && !kc.is_multiple_of(4) { ks } else { line };
    let by_lines = line > 1 || !kc.is_multiple_of(4);
    let (call_ks, call_kc) = (ks / line, line.checked_mul(kc).ok_or_else(overflow)?.div_ceil(4) * 4);
    let nr = kernels.for_outputs(n).nr;
    let block_len = call_ks.checked_mul(call_kc).and_then(|v| v.checked_mul(nr)).ok_or_else(overflow)?;
    let total = block_len.checked_mul(n.div_ceil(nr)).ok_or_else(overflow)?;
    let mut data = Packed::<i8>::zeroed(total)?;
    let mut sums = vec![0i32; n];
    let mut abs_sums = vec![0u64; n];
    for (blk, chunk) in data.chunks_exact_mut(block_len).enumerate() {
        let o0 = blk * nr;
        for j in 0..nr.min(n - o0) {
            let o = o0 + j;
            if !by_lines && filter.per_tap == kc {
                // Tap by tap, no padded channels: the channel's `ks * kc` values lie back to
                // back in the filter and in the kernels' order, in groups of four `4 * nr`
                // apart. Copied a group at a time (megabytes of weights at model load).
                let src = &filter.values[o * ks * kc..(o + 1) * ks * kc];
                (sums[o], abs_sums[o]) = weight_sums(src);
                for (quad, dst) in src.chunks_exact(4).zip(chunk.chunks_exact_mut(4 * nr)) {
                    dst[j * 4..j * 4 + 4].copy_from_slice(quad);
                }
                continue;
            }
            let (mut sum, mut abs_sum) = (0i32, 0u64);
            for t in 0..ks {
                // In the kernels' view: tap `t / line`, values from `(t % line) * kc`;
                // four consecutive values of a tap sit together, `4 * nr` apart.
                let call_tap = &mut chunk[t / line * call_kc * nr..(t / line + 1) * call_kc * nr];
                for k in 0..kc {
                    let v = filter.weight(ks, o, t, k);
                    sum = sum.wrapping_add(i32::from(v));
                    abs_sum += u64::from(v.unsigned_abs());
                    let ck = t % line * kc + k;
                    call_tap[ck / 4 * 4 * nr + j * 4 + ck % 4] = v;
                }
            }
            sums[o] = sum;
            abs_sums[o] = abs_sum;
        }
    }
    Ok(PackedWeights { data, sums, abs_sums, ks: call_ks, kc: call_kc, nr, line, by_lines })
}

impl PackedWeights {
    fn finish(self, n: usize, layer: (usize, usize), tables: Tables, input_zero_point: i8) -> PackedQs8Gemm {
        let (shifts_left, saturates) = match &tables {
            Tables::Requant(rq, _) => (rq.left.iter().any(|&l| l != 0), rq.mult.contains(&i32::MIN)),
            Tables::Hybrid { .. } | Tables::Int32 { .. } => (false, false),
        };
        PackedQs8Gemm {
            data: self.data,
            tables,
            n,
            ks: self.ks,
            kc: self.kc,
            nr: self.nr,
            layer_ks: layer.0,
            layer_kc: layer.1,
            line: self.line,
            by_lines: self.by_lines,
            input_zero_point,
            shifts_left,
            saturates,
        }
    }
}

/// Packs `n` output channels of `ks` taps x `kc` int8 inputs for `kernels`, for int8
/// outputs: `filter` holds the weights (read as `kc` values per tap, zeros past its own);
/// `bias` the optional int32 bias; `input_zero_point` the input's zero point (folded into
/// the bias). `line` taps at a time (a divisor of `ks`) lie back to back in the input
/// wherever they lie inside it (an undilated filter row: `line` = the filter width), and
/// are read as one span; 1 reads tap by tap. Lines pay where a tap's values are few and
/// not a multiple of 4 (an RGB first layer): the kernels then read the input in place.
#[allow(clippy::too_many_arguments)]
pub fn pack(
    kernels: &Qs8GemmKernels,
    n: usize,
    ks: usize,
    kc: usize,
    line: usize,
    filter: DenseFilter<'_>,
    bias: Option<&[i32]>,
    input_zero_point: i32,
    output: &Qs8Output<'_>,
) -> Result<PackedQs8Gemm> {
    if let Some(b) = bias
        && b.len() != n
    {
        return Err(Error::new(format!("8-bit GEMM packing: {} bias values for {n} outputs", b.len())));
    }
    if output.mults.len() != 1 && output.mults.len() != n {
        return Err(Error::new(format!("8-bit GEMM packing: {} multipliers for {n} outputs", output.mults.len())));
    }
    if output.range.0 < -128 || output.range.1 > 127 || output.range.0 > output.range.1 {
        return Err(Error::new(format!("8-bit GEMM packing: output range {:?} is not within int8", output.range)));
    }
    if !(-128..=127).contains(&output.offset) {
        return Err(Error::new(format!("8-bit GEMM packing: output zero point {} is not int8", output.offset)));
    }
    let zp = i8::try_from(input_zero_point)
        .map_err(|_| Error::new(format!("8-bit GEMM packing: input zero point {input_zero_point} is not int8")))?;
    let w = pack_weights(kernels, n, ks, kc, line, filter)?;
    let fold = 128i32.wrapping_add(input_zero_point);
    let padded = n.div_ceil(w.nr) * w.nr;
    let sums = &w.sums;
    let rq = ChannelRequant::new(
        padded,
        |o| match o {
            _ if o >= n => (0, 0),
            _ if output.mults.len() == 1 => output.mults[0],
            _ => output.mults[o],
        },
        |o| if o >= n { 0 } else { bias.map_or(0, |b| b[o]).wrapping_sub(fold.wrapping_mul(sums[o])) },
        output.offset,
        output.range,
    );
    // The kernels' sums are `sum u * w` with `u = x + 128` in 0..=255.
    let float = FloatRequant::new(&rq, |o| w.abs_sums.get(o).map_or(0, |s| 255 * s));
    Ok(w.finish(n, (ks, kc), Tables::Requant(rq, float), zp))
}

/// Packs a layer whose 32-bit sums (bias added) are requantized by the caller: `filter`
/// and `bias` as for [`pack`], `input_zero_point` folded into the bias.
pub fn pack_int32(
    kernels: &Qs8GemmKernels,
    n: usize,
    ks: usize,
    kc: usize,
    filter: DenseFilter<'_>,
    bias: Option<&[i32]>,
    input_zero_point: i32,
) -> Result<PackedQs8Gemm> {
    if let Some(b) = bias
        && b.len() != n
    {
        return Err(Error::new(format!("8-bit GEMM packing: {} bias values for {n} outputs", b.len())));
    }
    let zp = i8::try_from(input_zero_point)
        .map_err(|_| Error::new(format!("8-bit GEMM packing: input zero point {input_zero_point} is not int8")))?;
    let w = pack_weights(kernels, n, ks, kc, 1, filter)?;
    let fold = 128i32.wrapping_add(input_zero_point);
    let padded = n.div_ceil(w.nr) * w.nr;
    let folded = (0..padded)
        .map(|o| if o >= n { 0 } else { bias.map_or(0, |b| b[o]).wrapping_sub(fold.wrapping_mul(w.sums[o])) })
        .collect();
    Ok(w.finish(n, (ks, kc), Tables::Int32 { bias: folded }, zp))
}

/// Packs a hybrid layer (int8 weights, float outputs) for `kernels`: `filter` and `line`
/// as for [`pack`]; `scales` one per output channel or one for all; `bias` the optional
/// float bias.
#[allow(clippy::too_many_arguments)]
pub fn pack_hybrid(
    kernels: &Qs8GemmKernels,
    n: usize,
    ks: usize,
    kc: usize,
    line: usize,
    filter: DenseFilter<'_>,
    scales: &[f32],
    bias: Option<&[f32]>,
) -> Result<PackedQs8Gemm> {
    if let Some(b) = bias
        && b.len() != n
    {
        return Err(Error::new(format!("8-bit GEMM packing: {} bias values for {n} outputs", b.len())));
    }
    if scales.len() != 1 && scales.len() != n {
        return Err(Error::new(format!("8-bit GEMM packing: {} scales for {n} outputs", scales.len())));
    }
    let w = pack_weights(kernels, n, ks, kc, line, filter)?;
    let padded = n.div_ceil(w.nr) * w.nr;
    let mut sumw = w.sums.clone();
    sumw.resize(padded, 0);
    let scale = (0..padded).map(|o| {
        if o >= n {
            0.0
        } else if scales.len() == 1 {
            scales[0]
        } else {
            scales[o]
        }
    });
    let bias = (0..padded).map(|o| if o >= n { 0.0 } else { bias.map_or(0.0, |b| b[o]) });
    let tables = Tables::Hybrid { sumw, scale: scale.collect(), bias: bias.collect() };
    Ok(w.finish(n, (ks, kc), tables, 0))
}

/// How rows are read a line at a time (see [`PackedQs8Gemm::line`]): `line` taps of `kc`
/// values per kernel tap of `call_kc` (a multiple of 4, at least `line * kc`).
struct Lines {
    kc: usize,
    line: usize,
    call_kc: usize,
    pad: i8,
}

impl Lines {
    /// Pushes the pointers of rows `rows` (one per line, row after row): into the input
    /// where a line's taps lie back to back inside it and its `call_kc` bytes end inside
    /// it (the values past the taps meet zero weights), else to a slot of `slots` the
    /// line is copied into (padding taps as `pad`). Rows come in runs
    /// ([`RowTaps::linear_run`]) whose lines are classified once. `offsets` and `bases`
    /// are scratch.
    #[allow(clippy::too_many_arguments)]
    fn pointers(
        &self,
        taps: &impl RowTaps,
        rows: Range<usize>,
        input: &[i8],
        offsets: &mut [usize],
        bases: &mut Vec<(*const i8, usize)>,
        slots: &mut [i8],
        ptrs: &mut Vec<*const i8>,
    ) -> Result<()> {
        let Lines { kc, line, call_kc, pad } = *self;
        let lines = offsets.len() / line;
        let mut free = slots.chunks_exact_mut(call_kc);
        let mut r = rows.start;
        while r < rows.end {
            let (count, step) = run_from(taps, r, rows.end - r, offsets);
            // Per line: its first pointer and how many rows of the run read in place (the
            // rest are copied: they would read past the input's end).
            bases.clear();
            for l in 0..lines {
                let tap_offsets = &offsets[l * line..(l + 1) * line];
                let first = tap_offsets[0];
                let back_to_back =
                    first != PAD && tap_offsets.iter().enumerate().all(|(x, &o)| Some(o) == first.checked_add(x * kc));
                let room = first.checked_add(call_kc).and_then(|end| input.len().checked_sub(end));
                let in_place = match room {
                    Some(room) if back_to_back => count.min(room.checked_div(step).map_or(count, |v| v + 1)),
                    _ => 0,
                };
                bases.push((input.as_ptr().wrapping_add(first), in_place));
            }
            // Sized once, then filled row by row (no capacity check per pointer).
            let start = ptrs.len();
            ptrs.resize(start + count * lines, core::ptr::null());
            let rows_ptrs = ptrs[start..].chunks_exact_mut(lines);
            if bases.iter().all(|&(_, in_place)| in_place == count) {
                // Every line of every row in place (a run of interior pixels), inside
                // `input`: `first + j * step + call_kc <= input.len()`.
                let region = &mut ptrs[start..start + count * lines];
                match lines {
                    1 => step_rows::<1>(region, bases, step),
                    2 => step_rows::<2>(region, bases, step),
                    3 => step_rows::<3>(region, bases, step),
                    4 => step_rows::<4>(region, bases, step),
                    5 => step_rows::<5>(region, bases, step),
                    _ => {
                        for (j, row) in region.chunks_exact_mut(lines).enumerate() {
                            for (p, &(base, _)) in row.iter_mut().zip(bases.iter()) {
                                *p = base.wrapping_add(j * step);
                            }
                        }
                    }
                }
                r += count;
                continue;
            }
            for (j, row) in rows_ptrs.enumerate() {
                for (l, (p, &(base, in_place))) in row.iter_mut().zip(bases.iter()).enumerate() {
                    if j < in_place {
                        *p = base.wrapping_add(j * step);
                        continue;
                    }
                    let slot = free.next().ok_or_else(|| Error::new("8-bit GEMM: more lines to copy than slots"))?;
                    for (x, &o) in offsets[l * line..(l + 1) * line].iter().enumerate() {
                        let dst = &mut slot[x * kc..(x + 1) * kc];
                        if o == PAD {
                            dst.fill(pad);
                            continue;
                        }
                        let from = j.checked_mul(step).and_then(|v| v.checked_add(o));
                        let src = from
                            .and_then(|f| input.get(f..f.checked_add(kc)?))
                            .ok_or_else(|| past_input(r + j, l * line + x, input.len()))?;
                        dst.copy_from_slice(src);
                    }
                    *p = slot.as_ptr();
                }
            }
            r += count;
        }
        Ok(())
    }
}

/// Rows of `L` line pointers stepping from `bases` (the first `L`'s pointers) by `step`,
/// row after row into `region`: `L` fixed, a row is a few stores without loop control
/// (with a loop per row, an RGB first layer spent a third of its time placing pointers).
fn step_rows<const L: usize>(region: &mut [*const i8], bases: &[(*const i8, usize)], step: usize) {
    let Some(first) = bases.first_chunk::<L>() else { return };
    let first: [*const i8; L] = core::array::from_fn(|l| first[l].0);
    for (j, row) in region.chunks_exact_mut(L).enumerate() {
        for (p, base) in row.iter_mut().zip(first) {
            *p = base.wrapping_add(j * step);
        }
    }
}

fn past_input(r: usize, t: usize, len: usize) -> Error {
    Error::new(format!("8-bit GEMM row {r} tap {t} reads past the input ({len} values)"))
}

/// Rows whose pointers are built at once: enough to reuse each weight block over many
/// tiles, few enough that their inputs stay in the L2 cache.
fn rows_per_chunk(mr: usize, ks: usize, kc: usize) -> usize {
    let row_bytes = ks * kc;
    let rows = (128 * 1024 / row_bytes.max(1)).clamp(mr, 32 * mr);
    rows / mr * mr
}

/// Checks `rows` x `cols` against the packing and an output of `out_len` values with
/// rows `out_stride` apart; returns the kernels' tile shape.
fn check_call<'k>(
    kernels: &'k Qs8GemmKernels,
    packed: &PackedQs8Gemm,
    taps: &impl RowTaps,
    rows: &Range<usize>,
    cols: &Range<usize>,
    out_len: usize,
    out_stride: usize,
) -> Result<&'k Qs8GemmKernel> {
    let k = kernels.for_outputs(packed.n);
    if packed.nr != k.nr {
        return Err(Error::new(format!("8-bit GEMM weights packed for blocks of {}, kernels use {}", packed.nr, k.nr)));
    }
    if !cols.start.is_multiple_of(k.nr) || cols.end > packed.n || cols.start >= cols.end {
        return Err(Error::new(format!(
            "8-bit GEMM columns {cols:?} do not fit {} outputs in blocks of {}",
            packed.n, k.nr
        )));
    }
    if taps.taps_per_row() != packed.layer_ks {
        return Err(Error::new(format!(
            "8-bit GEMM rows have {} taps, the weights {}",
            taps.taps_per_row(),
            packed.layer_ks
        )));
    }
    if rows.is_empty() {
        return Ok(k);
    }
    let ncols = cols.len();
    let need = (rows.len() - 1)
        .checked_mul(out_stride)
        .and_then(|v| v.checked_add(ncols))
        .ok_or_else(|| Error::new("8-bit GEMM output size overflows"))?;
    if out_len < need || (rows.len() > 1 && out_stride < ncols) {
        return Err(Error::new(format!(
            "8-bit GEMM output of {out_len} values cannot hold {} rows of {ncols}",
            rows.len()
        )));
    }
    Ok(k)
}

/// Computes output rows `rows` and output channels `cols` (`cols.start` a multiple of the
/// packed block width) of an int8 layer packed by [`pack`]. Row `r`'s inputs are found
/// through `taps` (whose taps and values per tap must be the layer's); `out[(r -
/// rows.start) * out_stride + (j - cols.start)]` receives output channel `j` of row `r`.
#[allow(clippy::too_many_arguments)]
pub fn igemm(
    kernels: &Qs8GemmKernels,
    packed: &PackedQs8Gemm,
    input: &[i8],
    taps: &impl RowTaps,
    rows: Range<usize>,
    cols: Range<usize>,
    out: &mut [i8],
    out_stride: usize,
) -> Result<()> {
    let out = SharedOut::new(out);
    // SAFETY: `out` borrows the caller's slice mutably for this call: nothing else
    // touches it meanwhile.
    unsafe { igemm_shared(kernels, packed, input, taps, rows, cols, out, 0, out_stride, None) }
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
    kernels: &Qs8GemmKernels,
    packed: &PackedQs8Gemm,
    input: &[i8],
    taps: &impl RowTaps,
    rows: Range<usize>,
    cols: Range<usize>,
    out: SharedOut<'_, i8>,
    offset: usize,
    out_stride: usize,
    epilogue: Option<&dyn Epilogue<i8>>,
) -> Result<()> {
    let Tables::Requant(rq, float) = &packed.tables else {
        return Err(Error::new("8-bit GEMM: a hybrid layer's weights used for int8 outputs"));
    };
    let room = out
        .len()
        .checked_sub(offset)
        .ok_or_else(|| Error::new(format!("8-bit GEMM output of {} values has no element {offset}", out.len())))?;
    let k = check_call(kernels, packed, taps, &rows, &cols, room, out_stride)?;
    let (first_row, first_col) = (rows.start, cols.start);
    // In bounds: `offset <= out.len()` (checked above).
    let base = out.ptr().wrapping_add(offset);
    let at = |r: usize| offset + (r - first_row) * out_stride;
    let done_cols = cols.clone();
    let hand_over_rows = epilogue.map(|e| {
        move |chunk: Range<usize>| {
            // SAFETY: `check_call` verified that `out` holds every row of `rows` and column
            // of `cols` from `offset`, and the caller lets no other thread touch them.
            unsafe { hand_over(e, out, at, chunk, done_cols.clone(), out_stride) }
        }
    });
    let finished = hand_over_rows.as_ref().map(|f| f as &dyn Fn(Range<usize>) -> Result<()>);
    let zp = packed.input_zero_point;
    drive(kernels, k, packed, input, taps, rows, cols.clone(), zp, out_stride, finished, &mut |tile, j0| {
        let t = j0..j0 + k.nr;
        // The tables cover every packed block (padded to `blocks * nr`).
        let (bias, mult, left, right) = (&rq.bias[t.clone()], &rq.mult[t.clone()], &rq.left[t.clone()], &rq.right[t]);
        let c = (tile.start - first_row) * out_stride + (j0 - first_col);
        Qs8Out::Int8 {
            // In bounds: `check_call` verified that the `room` values from `base` hold
            // every row of `rows` and column of `cols`; the kernel writes `nc` values of
            // `mr` rows from here, which the caller lets no other thread touch.
            c: base.wrapping_add(c),
            bias: bias.as_ptr(),
            mult: mult.as_ptr(),
            left: left.as_ptr(),
            right: right.as_ptr(),
            output_offset: rq.output_offset,
            min: rq.min,
            max: rq.max,
            shifts_left: packed.shifts_left,
            saturates: packed.saturates,
            float: float.as_ref().map(|f| f.tables(j0..j0 + k.nr)),
        }
    })
}

/// Computes output rows `rows` and channels `cols` of a layer packed by [`pack_int32`]:
/// each output is the exact 32-bit `bias + sum (x - zero_point) * w` (wrapping), placed
/// as in [`igemm`].
#[allow(clippy::too_many_arguments)]
pub fn igemm_int32(
    kernels: &Qs8GemmKernels,
    packed: &PackedQs8Gemm,
    input: &[i8],
    taps: &impl RowTaps,
    rows: Range<usize>,
    cols: Range<usize>,
    out: &mut [i32],
    out_stride: usize,
) -> Result<()> {
    let Tables::Int32 { bias } = &packed.tables else {
        return Err(Error::new("8-bit GEMM: weights not packed for 32-bit outputs"));
    };
    let k = check_call(kernels, packed, taps, &rows, &cols, out.len(), out_stride)?;
    let (first_row, first_col) = (rows.start, cols.start);
    let base = out.as_mut_ptr();
    drive(kernels, k, packed, input, taps, rows, cols, packed.input_zero_point, out_stride, None, &mut |tile, j0| {
        let c = (tile.start - first_row) * out_stride + (j0 - first_col);
        // In bounds: see `igemm`.
        Qs8Out::Int32 { c: base.wrapping_add(c), bias: bias[j0..j0 + k.nr].as_ptr() }
    })
}

/// Per-row quantization of a hybrid layer's input: row `r` (counted from the first row
/// of the call) was quantized with `scales[r]` and zero point `zero_points[r]`, or, when
/// both have one value, every row with those.
pub struct HybridRows<'a> {
    pub scales: &'a [f32],
    pub zero_points: &'a [i32],
}

/// Computes output rows `rows` and channels `cols` of a hybrid layer packed by
/// [`pack_hybrid`] into float `out` (as [`igemm`]), clamped to `(min, max)`. Every row of
/// one call must share its zero point where a tap falls in the padding (padding reads
/// `pad`, which must be that zero point).
#[allow(clippy::too_many_arguments)]
pub fn igemm_hybrid(
    kernels: &Qs8GemmKernels,
    packed: &PackedQs8Gemm,
    input: &[i8],
    taps: &impl RowTaps,
    rows: Range<usize>,
    cols: Range<usize>,
    quant: &HybridRows<'_>,
    pad: i8,
    out: &mut [f32],
    out_stride: usize,
    (min, max): (f32, f32),
) -> Result<()> {
    let Tables::Hybrid { sumw, scale, bias } = &packed.tables else {
        return Err(Error::new("8-bit GEMM: an int8 layer's weights used for float outputs"));
    };
    let k = check_call(kernels, packed, taps, &rows, &cols, out.len(), out_stride)?;
    let uniform = quant.scales.len() == 1 && quant.zero_points.len() == 1;
    if !uniform && (quant.scales.len() < rows.len() || quant.zero_points.len() < rows.len()) {
        return Err(Error::new(format!("8-bit GEMM: {} rows need as many scales and zero points", rows.len())));
    }
    // One entry per row of the call, or per row of a tile when all rows share them.
    let (folds, row_scales): (Vec<i32>, Vec<f32>) = if uniform {
        (vec![128i32.wrapping_add(quant.zero_points[0]); k.mr], vec![quant.scales[0]; k.mr])
    } else {
        let folds = quant.zero_points[..rows.len()].iter().map(|&z| 128i32.wrapping_add(z)).collect();
        (folds, quant.scales[..rows.len()].to_vec())
    };
    let (first_row, first_col) = (rows.start, cols.start);
    let base = out.as_mut_ptr();
    drive(kernels, k, packed, input, taps, rows, cols, pad, out_stride, None, &mut |tile, j0| {
        let t = j0..j0 + k.nr;
        let r = tile.start - first_row;
        let c = r * out_stride + (j0 - first_col);
        let q = if uniform { 0..folds.len() } else { r..r + tile.len() };
        Qs8Out::Float {
            // In bounds: see `igemm`; the row tables hold every row of the call.
            c: base.wrapping_add(c),
            sumw: sumw[t.clone()].as_ptr(),
            scale: scale[t.clone()].as_ptr(),
            bias: bias[t].as_ptr(),
            row_fold: folds[q.clone()].as_ptr(),
            row_scale: row_scales[q].as_ptr(),
            row_step: usize::from(!uniform),
            min,
            max,
        }
    })
}

std::thread_local! {
    /// The driver's buffer of copied rows, kept for the thread's next call: a fresh one
    /// cost an allocation and a fill of up to 128 KB per call.
    static COPIED_ROWS: core::cell::Cell<Vec<i8>> = const { core::cell::Cell::new(Vec::new()) };
}

/// This thread's buffer of copied rows, at least `len` long, for one driver call; given
/// back when dropped (a nested call meanwhile gets a buffer of its own).
struct CopiedRows(Vec<i8>);

impl CopiedRows {
    fn take(len: usize) -> CopiedRows {
        let mut rows = COPIED_ROWS.take();
        if rows.len() < len {
            rows.resize(len, 0);
        }
        CopiedRows(rows)
    }
}

impl Drop for CopiedRows {
    fn drop(&mut self) {
        COPIED_ROWS.set(core::mem::take(&mut self.0));
    }
}

/// The tiles of `rows` x `cols`: builds each chunk's row pointers (padding taps read a
/// row of `pad`), then calls the kernel on every tile. `emit` gives the output and tables
/// of a run of rows (the chunk's) and a block's first channel, valid for the kernel's
/// contract on every row of the run; each tile's is that output moved down to its rows.
/// `finished`, if any, gets each chunk's rows once all their columns are written.
#[allow(clippy::too_many_arguments)]
fn drive(
    kernels: &Qs8GemmKernels,
    k: &Qs8GemmKernel,
    packed: &PackedQs8Gemm,
    input: &[i8],
    taps: &impl RowTaps,
    rows: Range<usize>,
    cols: Range<usize>,
    pad: i8,
    out_stride: usize,
    finished: Option<&dyn Fn(Range<usize>) -> Result<()>>,
    emit: &mut dyn FnMut(Range<usize>, usize) -> Qs8Out,
) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let (ks, kc) = (packed.layer_ks, packed.layer_kc);
    let (call_ks, call_kc) = (packed.ks, packed.kc);
    let pad_row = vec![pad; call_kc];
    // No longer than the call's rows (rounded to whole tiles): the buffers below are
    // sized and cleared for a chunk.
    let chunk = rows_per_chunk(k.mr, call_ks, call_kc).min(rows.len().div_ceil(k.mr) * k.mr);
    // Gathered rows, the rows of a 1x1 layer that lie back to back in the input, and those
    // of any 1x1 layer with enough column blocks to reuse them are copied per chunk with
    // their sign bits flipped, as the kernels read them (`x ^ 0x80`): each block then
    // broadcasts them straight from memory instead of flipping every word again. Other
    // rows point into the input itself, and the kernels flip as they read (copied one row
    // at a time, a wide block shares each flip between two multiply-adds, so it needs
    // twice the blocks to pay for the copy).
    let blocks = cols.end.div_ceil(k.nr).min(packed.blocks()).saturating_sub(cols.start / k.nr);
    let mut offsets = vec![0usize; ks];
    // Rows back to back in the input (a 1x1 layer's dense rows) are flipped in one pass
    // per chunk, cheap enough to pay even for a single column block (32->16 at 112x112:
    // 0.075 -> 0.064 ms).
    let contiguous = call_ks == 1
        && kc == call_kc
        && matches!(taps.linear_run(rows.start, rows.len(), &mut offsets), Some((n, step)) if n == rows.len() && step == kc);
    let copied = !packed.by_lines && (contiguous || (call_ks == 1 && blocks * 16 >= 4 * k.nr));
    // Every row a kernel reads is written first (flipped, or the flipped zero point).
    let mut rows_buf = CopiedRows::take(if copied { chunk * call_kc } else { 0 });
    let rows_buf = &mut rows_buf.0[..];
    // Read a line at a time: the lines that cannot be read in place (padding, the input's
    // end) are copied into slots, `call_kc` bytes each, at most every line of a chunk.
    let mut slots = if packed.by_lines { vec![pad; chunk * call_ks * call_kc] } else { Vec::new() };
    // Copied rows are read at a stride, without pointers.
    let mut ptrs: Vec<*const i8> = if copied { Vec::new() } else { Vec::with_capacity(chunk * call_ks) };
    // Per tap of a run: its first pointer and its step (0 for padding).
    let mut bases: Vec<(*const i8, usize)> = vec![(core::ptr::null(), 0); ks];
    let block_len = packed.block_len();
    let first_block = cols.start / k.nr;
    let last_block = cols.end.div_ceil(k.nr).min(packed.blocks());
    let mut r0 = rows.start;
    while r0 < rows.end {
        let r1 = (r0 + chunk).min(rows.end);
        ptrs.clear();
        if contiguous {
            // Row `r0` starts at `r0 * kc` and the chunk's rows follow it.
            taps.fill(r0..r0 + 1, &mut offsets);
            let n = (r1 - r0) * kc;
            let src = (offsets[0] != PAD)
                .then(|| input.get(offsets[0]..offsets[0].saturating_add(n)))
                .flatten()
                .ok_or_else(|| past_input(r1 - 1, 0, input.len()))?;
            (kernels.flip)(src, &mut rows_buf[..n]);
        } else if packed.by_lines {
            let lines = Lines { kc, line: packed.line, call_kc, pad };
            lines.pointers(taps, r0..r1, input, &mut offsets, &mut bases, &mut slots, &mut ptrs)?;
        } else if copied {
            for (q, r) in (r0..r1).enumerate() {
                taps.fill(r..r + 1, &mut offsets);
                let row = &mut rows_buf[q * call_kc..(q + 1) * call_kc];
                for (t, &o) in offsets.iter().enumerate() {
                    let dst = &mut row[t * kc..(t + 1) * kc];
                    if o == PAD {
                        dst.fill(pad ^ i8::MIN);
                    } else {
                        let src = input.get(o..o.saturating_add(kc)).ok_or_else(|| past_input(r, t, input.len()))?;
                        (kernels.flip)(src, dst);
                    }
                }
            }
        } else {
            push_tap_pointers(taps, r0..r1, input, kc, &pad_row, &mut offsets, &mut bases, &mut ptrs, past_input)?;
        }
        // The next chunk's output lines are asked for a share per column block, ahead of
        // the stores (see `prefetch_for_write`).
        let next = r1..(r1 + chunk).min(rows.end);
        let (next_out, value_bytes) =
            if next.is_empty() { (core::ptr::null(), 0) } else { emit(next.clone(), first_block * k.nr).c_bytes() };
        let per_block = next.len().div_ceil(last_block - first_block);
        for blk in first_block..last_block {
            if !next_out.is_null() {
                let from = ((blk - first_block) * per_block).min(next.len());
                let to = (from + per_block).min(next.len());
                let row_bytes = out_stride * value_bytes;
                let width = (cols.end - first_block * k.nr) * value_bytes;
                crate::microkernels::prefetch_rows_for_write(
                    next_out.wrapping_add(from * row_bytes),
                    to - from,
                    width,
                    row_bytes,
                );
            }
            let w = &packed.data[blk * block_len..(blk + 1) * block_len];
            let j0 = blk * k.nr;
            let nc = k.nr.min(cols.end - j0);
            // The output of the chunk's first row; each tile's lies `t0 - r0` rows further.
            let out = emit(r0..r1, j0);
            let mut t0 = r0;
            let mut p = 0;
            while t0 < r1 {
                let mr = k.mr.min(r1 - t0);
                // Whole tiles in one call, then the rest.
                let tiles = if mr == k.mr { (r1 - t0) / mr } else { 1 };
                let args = Qs8IgemmArgs {
                    mr,
                    tiles,
                    nc,
                    kc: call_kc,
                    ks: call_ks,
                    // Copied rows (one tap each) lie `call_kc` apart in `rows_buf`.
                    a: if copied {
                        Qs8Rows::Strided { base: rows_buf[(t0 - r0) * call_kc..].as_ptr(), stride: call_kc }
                    } else {
                        Qs8Rows::Pointers(ptrs[p..p + call_ks * mr * tiles].as_ptr())
                    },
                    flipped: copied,
                    w: w.as_ptr(),
                    c_stride: out_stride,
                    out: out.rows_down(t0 - r0, out_stride),
                };
                // SAFETY: the contract of `Qs8IgemmArgs` holds: copied rows are the
                // chunk's rows `t0 - r0..` of `rows_buf`, `call_kc` bytes each (one tap:
                // `copied` implies `call_ks == 1`; `rows_buf` holds at least `chunk * call_kc`
                // bytes and `t0 + mr * tiles <= r1 <= r0 + chunk`); else `ptrs[p..p +
                // call_ks * mr * tiles]` are `tiles * mr * call_ks` pointers (row-major),
                // each to `call_kc` readable bytes: inside a checked span of `input` (`kc == call_kc` when not
                // read by lines; a run's pointer `j` is `j * step` past the span's start,
                // and the span reaches the run's last read of `call_kc`), inside `input`
                // for a line read in place (`Lines::pointers` keeps only rows whose
                // `first + j * step + call_kc` is at most `input.len()`), `pad_row`
                // (`call_kc` long), a copied row of `call_kc` or a line's slot of
                // `call_kc`, all alive and unmodified during this call;
                // `w` is one whole packed block (checked by the slice); `emit` gave the
                // output and tables for the rows `r0..r1` and channels from `j0` (its
                // contract, kept by `igemm`, `igemm_int32` and `igemm_hybrid`, which checked
                // the output's size for every row and column of the call), moved down to
                // rows `t0..t0 + mr * tiles` inside that run; `mr <= MR`, `nc <= NR` by
                // construction, `call_kc` a positive multiple of 4 by the packing.
                unsafe { (k.by_rows[mr - 1])(&args) };
                p += call_ks * mr * tiles;
                t0 += mr * tiles;
            }
        }
        if let Some(finished) = finished {
            finished(r0..r1)?;
        }
        r0 = r1;
    }
    Ok(())
}
