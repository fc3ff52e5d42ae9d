//! AVX-512 depthwise kernels: 16 channels (one vector) per block, the last block's
//! channels under a lane mask (`__mmask16`), or on 8-lane vectors when at most 8 remain,
//! so no block is padded on the input side.
//!
//! The kernel shapes (tap pointers per pixel, fixed tap offsets from a base that steps
//! per pixel, and filter rows that slide) share one plan: each block's weights are
//! loaded once per call (held in registers when the tap count is known), then the
//! pixels stream through a few at a time. The loads, not the multiply-adds, bound these
//! loops, so the kernels avoid them where the geometry allows:
//! - 3x3 and 5x5 filters with dilation 1 and stride 1 or 2 along the row slide: each
//!   filter row's input vectors are loaded once for 4 output pixels and reused across
//!   the taps. The sliding kernels take whole output rows, padding included: a step
//!   whose window lies inside the image loads without checks, the steps at the edges
//!   read zeros for columns and rows outside it;
//! - stride-1 runs with fewer than 16 channels (a divisor of 16) are one flat array per
//!   tap, a vector holding `16 / channels` whole pixels; 8-channel 3x3 runs also slide,
//!   the middle tap joined from two loaded vectors by a lane shift.

use super::{DwKernels, SlideCols};
use crate::microkernels::Isa;
use core::arch::x86_64::*;

/// Lanes of a vector: the channel block width, and the packing's padding unit.
const LANES: usize = 16;

pub const KERNELS: DwKernels = DwKernels {
    isa: Isa::Avx512,
    channel_tile: LANES,
    channel_subtile: LANES,
    taps9: rows9,
    taps25: rows25,
    any: rows_any,
    direct: Some(direct),
    slide: Some([[slide3s1, slide3s2], [slide5s1, slide5s2]]),
};

/// # Safety
/// See [`super::DwRowKernel`] (`taps == 9`).
unsafe fn rows9(channels: usize, taps: usize, ind: &[*const f32], weights: &[f32], out: &mut [f32], clamp: (f32, f32)) {
    debug_assert_eq!(taps, 9);
    let src = Indirect { ind: ind.as_ptr(), taps: 9 };
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512.
    unsafe { rows::<9, 4, _>(channels, 9, src, out.len() / channels, weights.as_ptr(), out.as_mut_ptr(), clamp) }
}

/// # Safety
/// See [`super::DwRowKernel`] (`taps == 25`).
unsafe fn rows25(
    channels: usize,
    taps: usize,
    ind: &[*const f32],
    weights: &[f32],
    out: &mut [f32],
    clamp: (f32, f32),
) {
    debug_assert_eq!(taps, 25);
    let src = Indirect { ind: ind.as_ptr(), taps: 25 };
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512.
    unsafe { rows::<25, 2, _>(channels, 25, src, out.len() / channels, weights.as_ptr(), out.as_mut_ptr(), clamp) }
}

/// # Safety
/// See [`super::DwRowKernel`].
unsafe fn rows_any(
    channels: usize,
    taps: usize,
    ind: &[*const f32],
    weights: &[f32],
    out: &mut [f32],
    clamp: (f32, f32),
) {
    let src = Indirect { ind: ind.as_ptr(), taps };
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512.
    unsafe { rows::<0, 4, _>(channels, taps, src, out.len() / channels, weights.as_ptr(), out.as_mut_ptr(), clamp) }
}

/// # Safety
/// See [`super::DwDirectKernel`].
unsafe fn direct(
    channels: usize,
    offsets: &[usize],
    base: *const f32,
    px_step: usize,
    weights: &[f32],
    out: &mut [f32],
    clamp: (f32, f32),
) {
    let taps = offsets.len();
    let pixels = out.len() / channels;
    let src = Direct { base, px_step, off: offsets.as_ptr() };
    let flat = px_step == channels && LANES.is_multiple_of(channels) && channels < LANES;
    let (w, o) = (weights.as_ptr(), out.as_mut_ptr());
    // SAFETY: the caller's contract, which includes that the CPU has AVX-512; a flat run
    // is `pixels` contiguous pixels per tap, which is what `flat` reads.
    unsafe {
        if taps == 9 && channels == LANES / 2 && px_step == channels && slides(3, channels, offsets) {
            return flat_rows::<9, 4, true>(channels, base, offsets.as_ptr(), pixels * channels, w, o, clamp);
        }
        match (taps, flat) {
            (9, true) => flat_rows::<9, 4, false>(channels, base, offsets.as_ptr(), pixels * channels, w, o, clamp),
            (25, true) => flat_rows::<25, 2, false>(channels, base, offsets.as_ptr(), pixels * channels, w, o, clamp),
            (9, false) => rows::<9, 4, _>(channels, 9, src, pixels, w, o, clamp),
            (25, false) => rows::<25, 2, _>(channels, 25, src, pixels, w, o, clamp),
            _ => rows::<0, 4, _>(channels, taps, src, pixels, w, o, clamp),
        }
    }
}

/// The sliding kernels of the table ([`super::DwSlideKernel`]), one per filter size and
/// stride.
macro_rules! slide_kernel {
    ($name:ident, $k:literal, $s:literal) => {
        /// # Safety
        /// See [`super::DwSlideKernel`].
        unsafe fn $name(
            channels: usize,
            rows: &[*const f32],
            cols: SlideCols,
            weights: &[f32],
            out: &mut [f32],
            clamp: (f32, f32),
        ) {
            debug_assert_eq!(rows.len(), $k);
            // SAFETY: the caller's contract: `rows` holds `K` pointers, and the rest is
            // what `padded_rows` asks.
            unsafe {
                let src = Padded::<$k>::new(rows, cols, channels);
                padded_rows::<$k, $s, 4>(src, out.len() / channels, weights.as_ptr(), out.as_mut_ptr(), clamp)
            }
        }
    };
}
slide_kernel!(slide3s1, 3, 1);
slide_kernel!(slide3s2, 3, 2);
slide_kernel!(slide5s1, 5, 1);
slide_kernel!(slide5s2, 5, 2);

/// Where pixel `p`'s tap `t` reads its channels.
trait Taps: Copy {
    /// # Safety
    /// `p` and `t` are within the source's pixels and taps.
    unsafe fn at(self, p: usize, t: usize) -> *const f32;
}

/// One pointer per pixel and tap, `taps` per pixel.
#[derive(Clone, Copy)]
struct Indirect {
    ind: *const *const f32,
    taps: usize,
}

impl Taps for Indirect {
    #[inline(always)]
    unsafe fn at(self, p: usize, t: usize) -> *const f32 {
        // SAFETY: the indirection holds `taps` pointers per pixel (the caller's contract).
        unsafe { *self.ind.add(p * self.taps + t) }
    }
}

/// A base pointer stepping `px_step` values per pixel, tap `t` at `off[t]` from it.
#[derive(Clone, Copy)]
struct Direct {
    base: *const f32,
    px_step: usize,
    off: *const usize,
}

impl Taps for Direct {
    #[inline(always)]
    unsafe fn at(self, p: usize, t: usize) -> *const f32 {
        // SAFETY: the caller's contract makes every such pixel and tap readable.
        unsafe { self.base.add(p * self.px_step + *self.off.add(t)) }
    }
}

/// `min(max(acc, lo), hi)` with NaN passing through: `maxps` / `minps` return their second
/// operand when one is NaN.
#[inline]
#[target_feature(enable = "avx512f")]
fn clamp_to(acc: __m512, lo: __m512, hi: __m512) -> __m512 {
    _mm512_min_ps(hi, _mm512_max_ps(lo, acc))
}

/// Loads 16 values, or only the lanes of `mask` if `MASKED` (the others are zero and
/// not read).
///
/// # Safety
/// `p` is readable for 16 values, or at the lanes of `mask` if `MASKED`; the CPU has
/// AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn load<const MASKED: bool>(p: *const f32, mask: __mmask16) -> __m512 {
    // SAFETY: the function's contract.
    unsafe { if MASKED { _mm512_maskz_loadu_ps(mask, p) } else { _mm512_loadu_ps(p) } }
}

/// Stores 16 values, or only the lanes of `mask` if `MASKED`.
///
/// # Safety
/// `p` is writable for 16 values, or at the lanes of `mask` if `MASKED`; the CPU has
/// AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn store<const MASKED: bool>(p: *mut f32, mask: __mmask16, v: __m512) {
    // SAFETY: the function's contract.
    unsafe { if MASKED { _mm512_mask_storeu_ps(p, mask, v) } else { _mm512_storeu_ps(p, v) } }
}

/// Lanes `0..n` set (`n <= 16`).
#[inline]
fn lane_mask(n: usize) -> __mmask16 {
    ((1u32 << n) - 1) as __mmask16
}

/// The kernel for `T` taps (`T == 0`: any count, given by `taps`), `PX` pixels per step:
/// for each 16-channel block, its weights once, then every pixel.
///
/// # Safety
/// `src` gives, for each of `pixels` pixels and `taps` taps, a pointer readable for
/// `channels` values that nothing writes during the call; `weights` is this table's
/// packing of `channels` and `taps`; `out` is writable for `pixels * channels` values;
/// `channels > 0`; the CPU has AVX-512F and AVX-512VL.
#[inline]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn rows<const T: usize, const PX: usize, S: Taps>(
    channels: usize,
    taps: usize,
    src: S,
    pixels: usize,
    weights: *const f32,
    out: *mut f32,
    clamp: (f32, f32),
) {
    let taps = if T == 0 { taps } else { T };
    let full_end = channels / LANES * LANES;
    let rem = channels - full_end;
    let mut c = 0;
    let mut w = weights;
    // SAFETY: (whole body) block `c` covers channels `c..c + 16` (`c + 16 <= channels`)
    // or the masked rest; its packed weights are `16 * (taps + 1)` values from `w`.
    unsafe {
        let k = Block::<__m512> { taps, channels, lo: __m512::splat(clamp.0), hi: __m512::splat(clamp.1) };
        while c < full_end {
            k.run::<false, T, PX, S>(src, pixels, c, w, out, __m512::mask(LANES));
            w = w.add(LANES * (taps + 1));
            c += LANES;
        }
        if rem > LANES / 2 {
            k.run::<true, T, PX, S>(src, pixels, c, w, out, __m512::mask(rem));
        } else if rem > 0 {
            // Up to 8 channels left: half-width vectors, half the work of full ones on
            // CPUs that split 512-bit operations in two.
            let k = Block::<__m256> { taps, channels, lo: __m256::splat(clamp.0), hi: __m256::splat(clamp.1) };
            if rem == LANES / 2 {
                k.run::<false, T, PX, S>(src, pixels, c, w, out, __m256::mask(rem));
            } else {
                k.run::<true, T, PX, S>(src, pixels, c, w, out, __m256::mask(rem));
            }
        }
    }
}

/// True if a `k`x`k` direct run reads `k` consecutive input pixels per filter row
/// (dilation 1): with stride `s`, output pixel `p + 1`'s tap `kx` is pixel `p`'s tap
/// `kx + s`, so each input vector loaded serves several taps.
fn slides(k: usize, channels: usize, offsets: &[usize]) -> bool {
    offsets.len() == k * k && (0..k).all(|ky| (1..k).all(|kx| offsets[k * ky + kx] == offsets[k * ky] + kx * channels))
}

/// The filter rows of a sliding run that may read padding (see
/// [`super::DwSlideKernel`]): filter row `ky` reads input row `rows[ky]` (null: above or
/// below the image, all zeros), pixel `p`'s tap `kx` at column `first + S * p + kx`,
/// zeros outside `0..width`.
#[derive(Clone, Copy)]
struct Padded<const K: usize> {
    rows: [*const f32; K],
    first: isize,
    width: usize,
    channels: usize,
    /// Whether no row is null.
    all_rows: bool,
}

impl<const K: usize> Padded<K> {
    /// # Safety
    /// `rows` holds at least `K` pointers.
    unsafe fn new(rows: &[*const f32], cols: SlideCols, channels: usize) -> Padded<K> {
        // SAFETY: the function's contract.
        let rows: [*const f32; K] = core::array::from_fn(|i| unsafe { *rows.as_ptr().add(i) });
        let all_rows = rows.iter().all(|r| !r.is_null());
        Padded { rows, first: cols.first, width: cols.width, channels, all_rows }
    }
}

/// The `K`x`K` stride-`S` sliding kernel over a whole row, padding included: for each
/// block of channels, `PX` pixels per step, each filter row's input vectors loaded once
/// per step (`(PX - 1) * S + K` loads instead of `K * PX`), columns and rows outside the
/// image read as zeros.
///
/// # Safety
/// As [`super::DwSlideKernel`] for `src` (built from its arguments), `pixels` pixels
/// and `K * K` taps; `(PX - 1) * S + K <= SLIDE_WINDOW`.
#[inline]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn padded_rows<const K: usize, const S: usize, const PX: usize>(
    src: Padded<K>,
    pixels: usize,
    weights: *const f32,
    out: *mut f32,
    clamp: (f32, f32),
) {
    let (channels, taps) = (src.channels, K * K);
    let full_end = channels / LANES * LANES;
    let rem = channels - full_end;
    let mut c = 0;
    let mut w = weights;
    // SAFETY: (whole body) as in [`rows`]: block `c` covers channels `c..c + 16` or the
    // masked rest, its packed weights are `16 * (taps + 1)` values from `w`.
    unsafe {
        let k = Block::<__m512> { taps, channels, lo: __m512::splat(clamp.0), hi: __m512::splat(clamp.1) };
        while c < full_end {
            k.padded::<false, K, S, PX>(src, pixels, c, w, out, __m512::mask(LANES));
            w = w.add(LANES * (taps + 1));
            c += LANES;
        }
        if rem > LANES / 2 {
            k.padded::<true, K, S, PX>(src, pixels, c, w, out, __m512::mask(rem));
        } else if rem > 0 {
            let k = Block::<__m256> { taps, channels, lo: __m256::splat(clamp.0), hi: __m256::splat(clamp.1) };
            if rem == LANES / 2 {
                k.padded::<false, K, S, PX>(src, pixels, c, w, out, __m256::mask(rem));
            } else {
                k.padded::<true, K, S, PX>(src, pixels, c, w, out, __m256::mask(rem));
            }
        }
    }
}

/// Output pixels per step of the 8-channel sliding loop in [`flat_rows`].
const SLIDE_PX: usize = 4;

/// Input vectors a sliding step keeps per filter row: `(PX - 1) * S + K` of them, at
/// most 3 * 2 + 5 (4 pixels, stride 2, 5x5).
const SLIDE_WINDOW: usize = 11;

/// The vector shapes a block runs on: 16 lanes, or 8 (AVX-512VL) for short tails.
trait Vector: Copy {
    /// One bit per lane.
    type Mask: Copy;
    /// Lanes `0..n` set (`n` at most the lane count).
    fn mask(n: usize) -> Self::Mask;
    /// # Safety
    /// The CPU has AVX-512F and AVX-512VL (likewise for every method).
    unsafe fn zero() -> Self;
    /// # Safety
    /// As [`Vector::zero`].
    unsafe fn splat(x: f32) -> Self;
    /// Loads all lanes, or only those of `m` if `MASKED` (the others are zero and not
    /// read).
    ///
    /// # Safety
    /// `p` is readable at the lanes loaded.
    unsafe fn load<const MASKED: bool>(p: *const f32, m: Self::Mask) -> Self;
    /// Stores all lanes, or only those of `m` if `MASKED`.
    ///
    /// # Safety
    /// `p` is writable at the lanes stored.
    unsafe fn store<const MASKED: bool>(p: *mut f32, m: Self::Mask, v: Self);
    /// `x * w + acc`, rounded once.
    ///
    /// # Safety
    /// As [`Vector::zero`].
    unsafe fn fmadd(x: Self, w: Self, acc: Self) -> Self;
    /// # Safety
    /// As [`Vector::zero`].
    unsafe fn add(a: Self, b: Self) -> Self;
    /// `min(max(v, lo), hi)` with NaN passing through: `maxps` / `minps` return their
    /// second operand when one is NaN.
    ///
    /// # Safety
    /// As [`Vector::zero`].
    unsafe fn clamp(v: Self, lo: Self, hi: Self) -> Self;
}

impl Vector for __m512 {
    type Mask = __mmask16;
    #[inline]
    fn mask(n: usize) -> __mmask16 {
        lane_mask(n)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn zero() -> Self {
        _mm512_setzero_ps()
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn splat(x: f32) -> Self {
        _mm512_set1_ps(x)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load<const MASKED: bool>(p: *const f32, m: __mmask16) -> Self {
        // SAFETY: the method's contract.
        unsafe { load::<MASKED>(p, m) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store<const MASKED: bool>(p: *mut f32, m: __mmask16, v: Self) {
        // SAFETY: the method's contract.
        unsafe { store::<MASKED>(p, m, v) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn fmadd(x: Self, w: Self, acc: Self) -> Self {
        _mm512_fmadd_ps(x, w, acc)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn add(a: Self, b: Self) -> Self {
        _mm512_add_ps(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn clamp(v: Self, lo: Self, hi: Self) -> Self {
        clamp_to(v, lo, hi)
    }
}

impl Vector for __m256 {
    type Mask = __mmask8;
    #[inline]
    fn mask(n: usize) -> __mmask8 {
        lane_mask(n) as __mmask8
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn zero() -> Self {
        _mm256_setzero_ps()
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn splat(x: f32) -> Self {
        _mm256_set1_ps(x)
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn load<const MASKED: bool>(p: *const f32, m: __mmask8) -> Self {
        // SAFETY: the method's contract.
        unsafe { if MASKED { _mm256_maskz_loadu_ps(m, p) } else { _mm256_loadu_ps(p) } }
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn store<const MASKED: bool>(p: *mut f32, m: __mmask8, v: Self) {
        // SAFETY: the method's contract.
        unsafe { if MASKED { _mm256_mask_storeu_ps(p, m, v) } else { _mm256_storeu_ps(p, v) } }
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn fmadd(x: Self, w: Self, acc: Self) -> Self {
        _mm256_fmadd_ps(x, w, acc)
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn add(a: Self, b: Self) -> Self {
        _mm256_add_ps(a, b)
    }
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn clamp(v: Self, lo: Self, hi: Self) -> Self {
        _mm256_min_ps(hi, _mm256_max_ps(lo, v))
    }
}

/// What a kernel call keeps fixed over its blocks.
struct Block<V: Vector> {
    taps: usize,
    channels: usize,
    lo: V,
    hi: V,
}

impl<V: Vector> Block<V> {
    /// Computes the block at channel `c` (lanes of `mask` if `MASKED`) of all `pixels`
    /// pixels, `PX` at a time; `w` is the block's packed weights (16 per tap, whatever
    /// the vector width).
    ///
    /// # Safety
    /// As [`rows`], for this block; `w` holds `16 * (taps + 1)` values.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn run<const MASKED: bool, const T: usize, const PX: usize, S: Taps>(
        &self,
        src: S,
        pixels: usize,
        c: usize,
        w: *const f32,
        out: *mut f32,
        mask: V::Mask,
    ) {
        // SAFETY: (whole body) the weights are read inside the block's `16 * (taps + 1)`
        // values; pixels `p..p + PX` (or `p`) are below `pixels`; the caller's contract
        // covers the rest.
        unsafe {
            let all = V::mask(LANES);
            let bias = V::load::<false>(w, all);
            // A known tap count keeps the block's weights in registers over all pixels.
            let mut held = [V::zero(); T];
            for (t, h) in held.iter_mut().enumerate() {
                *h = V::load::<false>(w.add(LANES * (t + 1)), all);
            }
            let mut p = 0;
            while p + PX <= pixels {
                let acc = self.pixels::<MASKED, T, PX, S>(src, p, c, w, &held, bias, mask);
                for (q, a) in acc.into_iter().enumerate() {
                    V::store::<MASKED>(out.add((p + q) * self.channels + c), mask, V::clamp(a, self.lo, self.hi));
                }
                p += PX;
            }
            while p < pixels {
                let [a] = self.pixels::<MASKED, T, 1, S>(src, p, c, w, &held, bias, mask);
                V::store::<MASKED>(out.add(p * self.channels + c), mask, V::clamp(a, self.lo, self.hi));
                p += 1;
            }
        }
    }

    /// Computes the block at channel `c` (lanes of `mask` if `MASKED`) of a sliding
    /// run ([`Padded`]), `PX` pixels per step: steps whose window lies inside the image
    /// load without checks, the others (and the last pixels, one at a time) check each
    /// column and row. The sums of [`Block::pixels`] in its order, the padding's zeros
    /// included. 3x3 weights stay in registers; 5x5 ones are loaded once per step (25
    /// would crowd out the window and the sums).
    ///
    /// # Safety
    /// As [`padded_rows`], for this block; `w` holds `16 * (K * K + 1)` values.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    unsafe fn padded<const MASKED: bool, const K: usize, const S: usize, const PX: usize>(
        &self,
        src: Padded<K>,
        pixels: usize,
        c: usize,
        w: *const f32,
        out: *mut f32,
        mask: V::Mask,
    ) {
        // SAFETY: (whole body) the weights are read inside the block's
        // `16 * (K * K + 1)` values; the steps read what `padded_step` allows and write
        // output pixels below `pixels`.
        unsafe {
            let all = V::mask(LANES);
            let bias = V::load::<false>(w, all);
            let mut held = [V::zero(); 9];
            if K == 3 {
                for (t, h) in held.iter_mut().enumerate() {
                    *h = V::load::<false>(w.add(LANES * (t + 1)), all);
                }
            }
            let window = (PX - 1) * S + K;
            let mut p = 0;
            while p + PX <= pixels {
                let j0 = src.first + (S * p) as isize;
                let inside = src.all_rows && j0 >= 0 && j0 as usize + window <= src.width;
                let acc = if inside {
                    self.padded_step::<MASKED, K, S, PX, false>(src, j0, c, w, &held, bias, mask)
                } else {
                    self.padded_step::<MASKED, K, S, PX, true>(src, j0, c, w, &held, bias, mask)
                };
                for (q, a) in acc.into_iter().enumerate() {
                    V::store::<MASKED>(out.add((p + q) * self.channels + c), mask, V::clamp(a, self.lo, self.hi));
                }
                p += PX;
            }
            while p < pixels {
                let j0 = src.first + (S * p) as isize;
                let [a] = self.padded_step::<MASKED, K, S, 1, true>(src, j0, c, w, &held, bias, mask);
                V::store::<MASKED>(out.add(p * self.channels + c), mask, V::clamp(a, self.lo, self.hi));
                p += 1;
            }
        }
    }

    /// The unclamped sums of `PX` pixels whose first tap reads column `j0`, summed as
    /// [`Block::pixels`] does. With `CHECK`, columns outside the row and null rows read
    /// zeros; without, the caller has made sure that none of them is.
    ///
    /// # Safety
    /// As [`Block::padded`]; without `CHECK`, every row is non-null and columns
    /// `j0..j0 + (PX - 1) * S + K` lie inside `0..src.width`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn padded_step<const MASKED: bool, const K: usize, const S: usize, const PX: usize, const CHECK: bool>(
        &self,
        src: Padded<K>,
        j0: isize,
        c: usize,
        w: *const f32,
        held: &[V; 9],
        bias: V,
        mask: V::Mask,
    ) -> [V; PX] {
        // SAFETY: (whole body) a column is loaded only from a non-null row and inside
        // `0..width`, which the row is readable for (the caller's contract); the weights
        // as in [`Block::padded`].
        unsafe {
            let all = V::mask(LANES);
            let mut a = [bias; PX];
            let mut b = [V::zero(); PX];
            for ky in 0..K {
                let row = src.rows[ky];
                let mut x = [V::zero(); SLIDE_WINDOW];
                if !CHECK {
                    for (i, xi) in x.iter_mut().enumerate().take((PX - 1) * S + K) {
                        *xi = V::load::<MASKED>(row.add((j0 as usize + i) * src.channels + c), mask);
                    }
                } else if !row.is_null() {
                    for (i, xi) in x.iter_mut().enumerate().take((PX - 1) * S + K) {
                        let j = j0 + i as isize;
                        if j >= 0 && (j as usize) < src.width {
                            *xi = V::load::<MASKED>(row.add(j as usize * src.channels + c), mask);
                        }
                    }
                }
                // Tap `t = K * ky + kx`: even taps into `a`, odd into `b`, in tap order.
                for kx in 0..K {
                    let t = K * ky + kx;
                    let wt = if K == 3 { held[t] } else { V::load::<false>(w.add(LANES * (t + 1)), all) };
                    for q in 0..PX {
                        if t.is_multiple_of(2) {
                            a[q] = V::fmadd(x[S * q + kx], wt, a[q]);
                        } else {
                            b[q] = V::fmadd(x[S * q + kx], wt, b[q]);
                        }
                    }
                }
            }
            for (aq, bq) in a.iter_mut().zip(b) {
                *aq = V::add(*aq, bq);
            }
            a
        }
    }

    /// Sums `PX` pixels from pixel `p` of the block at channel `c`: bias plus the even
    /// taps in one partial sum, the odd taps in another, added at the end. Returns the
    /// unclamped sums.
    ///
    /// # Safety
    /// As [`Block::run`]; `held` are the block's tap weights when `T > 0`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512vl")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn pixels<const MASKED: bool, const T: usize, const PX: usize, S: Taps>(
        &self,
        src: S,
        p: usize,
        c: usize,
        w: *const f32,
        held: &[V; T],
        bias: V,
        mask: V::Mask,
    ) -> [V; PX] {
        let taps = if T == 0 { self.taps } else { T };
        // SAFETY: the caller's contract; `t + 1 < taps` in the paired loop, `t < taps`
        // after it.
        unsafe {
            let weight =
                |t: usize| if T == 0 { V::load::<false>(w.add(LANES * (t + 1)), V::mask(LANES)) } else { held[t] };
            let mut a = [bias; PX];
            let mut b = [V::zero(); PX];
            let mut t = 0;
            while t + 2 <= taps {
                let (w0, w1) = (weight(t), weight(t + 1));
                for q in 0..PX {
                    let x = V::load::<MASKED>(src.at(p + q, t).add(c), mask);
                    let y = V::load::<MASKED>(src.at(p + q, t + 1).add(c), mask);
                    a[q] = V::fmadd(x, w0, a[q]);
                    b[q] = V::fmadd(y, w1, b[q]);
                }
                t += 2;
            }
            if t < taps {
                let w0 = weight(t);
                for (q, aq) in a.iter_mut().enumerate() {
                    *aq = V::fmadd(V::load::<MASKED>(src.at(p + q, t).add(c), mask), w0, *aq);
                }
            }
            let mut sums = a;
            for (s, bq) in sums.iter_mut().zip(b) {
                *s = V::add(*s, bq);
            }
            sums
        }
    }
}

/// A stride-1 run of pixels read as flat arrays: tap `t`'s
/// inputs for the whole run are the `len` contiguous values at `base + off[t]`, and the
/// weight of flat position `j` is that of channel `j % channels`, so one vector holds
/// `16 / channels` pixels. `VX` vectors per step.
///
/// # Safety
/// `channels` divides 16; for each tap `t < T`, `base + off[t]` is readable for `len`
/// values that nothing writes during the call; `len` is a multiple of `channels`;
/// `weights` is this table's packing of `channels` and `T` taps (one 16-wide block);
/// `out` is writable for `len` values; the CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn flat_rows<const T: usize, const VX: usize, const SLIDE8: bool>(
    channels: usize,
    base: *const f32,
    off: *const usize,
    len: usize,
    weights: *const f32,
    out: *mut f32,
    clamp: (f32, f32),
) {
    let (lo, hi) = (_mm512_set1_ps(clamp.0), _mm512_set1_ps(clamp.1));
    // SAFETY: (whole body) the weights are one block of `16 * (T + 1)` values; vector
    // `v` reads and writes flat positions `16 * v..16 * v + 16` (the last one masked to
    // `len`), inside every tap's `len` values and the output.
    unsafe {
        // Lane `j` takes channel `j % channels` of the block.
        let mut idx = [0i32; LANES];
        for (j, i) in idx.iter_mut().enumerate() {
            *i = (j % channels) as i32;
        }
        let idx = _mm512_loadu_si512(idx.as_ptr().cast());
        let bias = _mm512_permutexvar_ps(idx, _mm512_loadu_ps(weights));
        let mut wv = [_mm512_setzero_ps(); T];
        let mut x: [*const f32; T] = [base; T];
        for t in 0..T {
            wv[t] = _mm512_permutexvar_ps(idx, _mm512_loadu_ps(weights.add(LANES * (t + 1))));
            x[t] = base.add(*off.add(t));
        }
        let mut v = 0;
        if SLIDE8 && T == 9 {
            // Two 8-channel pixels per vector, taps (ky, 0..3) three consecutive pixels:
            // tap 1 straddles two vectors (joined by a lane shift), tap 2 is the next one,
            // so each filter row loads `SLIDE_PX + 1` vectors for `SLIDE_PX` outputs.
            // The last output vector's tap 2 ends two pixels (16 values) past the run.
            while v + SLIDE_PX * LANES <= len {
                let mut a = [bias; SLIDE_PX];
                let mut b = [_mm512_setzero_ps(); SLIDE_PX];
                for ky in 0..3 {
                    let row = x[3 * ky].add(v);
                    let mut xv = [_mm512_setzero_ps(); SLIDE_PX + 1];
                    for (i, xi) in xv.iter_mut().enumerate() {
                        *xi = _mm512_loadu_ps(row.add(i * LANES));
                    }
                    for q in 0..SLIDE_PX {
                        let mid = _mm512_castsi512_ps(_mm512_alignr_epi32::<8>(
                            _mm512_castps_si512(xv[q + 1]),
                            _mm512_castps_si512(xv[q]),
                        ));
                        // Tap order as [`flat_vector`]: even taps into `a`, odd into `b`.
                        for (kx, xk) in [xv[q], mid, xv[q + 1]].into_iter().enumerate() {
                            let t = 3 * ky + kx;
                            if t.is_multiple_of(2) {
                                a[q] = _mm512_fmadd_ps(xk, wv[t], a[q]);
                            } else {
                                b[q] = _mm512_fmadd_ps(xk, wv[t], b[q]);
                            }
                        }
                    }
                }
                for q in 0..SLIDE_PX {
                    _mm512_storeu_ps(out.add(v + q * LANES), clamp_to(_mm512_add_ps(a[q], b[q]), lo, hi));
                }
                v += SLIDE_PX * LANES;
            }
        }
        while v + VX * LANES <= len {
            let mut r = [_mm512_setzero_ps(); VX];
            for (q, rq) in r.iter_mut().enumerate() {
                *rq = flat_vector::<false, T>(&x, &wv, bias, v + q * LANES, 0xffff, lo, hi);
            }
            for (q, rq) in r.into_iter().enumerate() {
                _mm512_storeu_ps(out.add(v + q * LANES), rq);
            }
            v += VX * LANES;
        }
        while v + LANES <= len {
            _mm512_storeu_ps(out.add(v), flat_vector::<false, T>(&x, &wv, bias, v, 0xffff, lo, hi));
            v += LANES;
        }
        if v < len {
            let mask = lane_mask(len - v);
            _mm512_mask_storeu_ps(out.add(v), mask, flat_vector::<true, T>(&x, &wv, bias, v, mask, lo, hi));
        }
    }
}

/// One clamped vector of a flat run at flat position `v`: `x[t]` is tap `t`'s inputs,
/// `wv[t]` its weights spread over the lanes; only the lanes of `mask` are read if
/// `MASKED`.
///
/// # Safety
/// Each `x[t]` is readable at positions `v..v + 16` (the lanes of `mask` if `MASKED`);
/// the CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn flat_vector<const MASKED: bool, const T: usize>(
    x: &[*const f32; T],
    wv: &[__m512; T],
    bias: __m512,
    v: usize,
    mask: __mmask16,
    lo: __m512,
    hi: __m512,
) -> __m512 {
    // SAFETY: the function's contract; `t + 1 < T` in the paired loop.
    unsafe {
        let mut a = bias;
        let mut b = _mm512_setzero_ps();
        let mut t = 0;
        while t + 2 <= T {
            a = _mm512_fmadd_ps(load::<MASKED>(x[t].add(v), mask), wv[t], a);
            b = _mm512_fmadd_ps(load::<MASKED>(x[t + 1].add(v), mask), wv[t + 1], b);
            t += 2;
        }
        if t < T {
            a = _mm512_fmadd_ps(load::<MASKED>(x[t].add(v), mask), wv[t], a);
        }
        clamp_to(_mm512_add_ps(a, b), lo, hi)
    }
}
