//! AVX-512 VNNI 8-bit GEMM kernels: `vpdpbusd` multiplies four unsigned input bytes (the
//! input with its sign bit flipped, `x ^ 0x80`) by four signed weight bytes and adds the
//! four products into each 32-bit lane, 64 multiply-adds per instruction. The 32-bit sums
//! are requantized exactly (see `qs8_requant`; most layers through the float shortcut of
//! `qs8_float_requant`, the lanes it declines exactly) and narrowed to bytes in
//! registers; column tails are written with masked stores.
//!
//! Tiles: wide `MR x NR` = 8 x 32 (two 512-bit accumulators per row: each broadcast input
//! word feeds two multiply-adds), narrow 12 x 16 for channel counts that 32 would pad by
//! more than an eighth beyond 16 (16, 48, 80, 112; 144 takes the wide tile, see
//! `Qs8GemmKernels::for_outputs`).

use super::{Qs8GemmKernel, Qs8GemmKernels, Qs8IgemmArgs, Qs8IgemmFn, Qs8Out};
use crate::microkernels::qs8_float_requant::FloatTables;
use crate::microkernels::qs8_float_requant::avx512::FloatLanes;
use crate::microkernels::qs8_requant::avx512 as rq512;
use core::arch::x86_64::*;

/// The AVX-512 VNNI 8-bit GEMM table entry.
pub const KERNELS: Qs8GemmKernels = Qs8GemmKernels {
    wide: Qs8GemmKernel { mr: 8, nr: 32, by_rows: WIDE },
    narrow: Qs8GemmKernel { mr: 12, nr: 16, by_rows: NARROW },
    flip,
};

/// `dst[i] = src[i] ^ 0x80` over the slices' common length, 64 bytes at a time.
fn flip(src: &[i8], dst: &mut [i8]) {
    let n = src.len().min(dst.len());
    // SAFETY: both slices hold `n` bytes; the table is only handed out on CPUs with
    // AVX-512 F and BW.
    unsafe { flip_impl(src.as_ptr(), dst.as_mut_ptr(), n) }
}

/// # Safety
/// `src` readable and `dst` writable for `n` bytes; AVX-512 F and BW available.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn flip_impl(src: *const i8, dst: *mut i8, n: usize) {
    let sign = _mm512_set1_epi8(i8::MIN);
    let mut i = 0;
    // SAFETY: whole vectors below `n`, then the tail under a mask (the contract).
    unsafe {
        while i + 64 <= n {
            let x = _mm512_loadu_si512(src.add(i).cast());
            _mm512_storeu_si512(dst.add(i).cast(), _mm512_xor_si512(x, sign));
            i += 64;
        }
        if i < n {
            let mask: __mmask64 = (1u64 << (n - i)) - 1;
            let x = _mm512_maskz_loadu_epi8(mask, src.add(i));
            _mm512_mask_storeu_epi8(dst.add(i), mask, _mm512_xor_si512(x, sign));
        }
    }
}

const WIDE: &[Qs8IgemmFn] = &[
    igemm::<1, 2>,
    igemm::<2, 2>,
    igemm::<3, 2>,
    igemm::<4, 2>,
    igemm::<5, 2>,
    igemm::<6, 2>,
    igemm::<7, 2>,
    igemm::<8, 2>,
];
const NARROW: &[Qs8IgemmFn] = &[
    igemm::<1, 1>,
    igemm::<2, 1>,
    igemm::<3, 1>,
    igemm::<4, 1>,
    igemm::<5, 1>,
    igemm::<6, 1>,
    igemm::<7, 1>,
    igemm::<8, 1>,
    igemm::<9, 1>,
    igemm::<10, 1>,
    igemm::<11, 1>,
    igemm::<12, 1>,
];

/// The most rows of any tile here.
const MAX_ROWS: usize = 12;

/// # Safety
/// The contract of [`Qs8IgemmArgs`] with `NR = 16 * V` and `p.mr == M`, on a CPU with
/// AVX-512 F, BW, DQ, VL and VNNI (the table is only handed out when all are present).
unsafe fn igemm<const M: usize, const V: usize>(p: &Qs8IgemmArgs) {
    // SAFETY: forwarded contract; the CPU features were checked when the table was chosen.
    unsafe { igemm_impl::<M, V>(p) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
unsafe fn igemm_impl<const M: usize, const V: usize>(p: &Qs8IgemmArgs) {
    let kind = match p.out {
        Qs8Out::Int8 { float: Some(FloatTables { one_sided: true, .. }), .. } => FLOAT_ONE_SIDED,
        Qs8Out::Int8 { float: Some(_), .. } => FLOAT_TWO_SIDED,
        Qs8Out::Int8 { float: None, .. } => EXACT,
        Qs8Out::Int32 { .. } => INT32,
        Qs8Out::Float { .. } => HYBRID,
    };
    // SAFETY: (each call) forwarded contract; `kind` names `p.out`'s form, and the rows
    // are flipped as they are read exactly when they are not flipped already.
    unsafe {
        match (kind, p.flipped) {
            (FLOAT_ONE_SIDED, true) => tiles::<M, V, FLOAT_ONE_SIDED, false>(p),
            (FLOAT_ONE_SIDED, false) => tiles::<M, V, FLOAT_ONE_SIDED, true>(p),
            (FLOAT_TWO_SIDED, true) => tiles::<M, V, FLOAT_TWO_SIDED, false>(p),
            (FLOAT_TWO_SIDED, false) => tiles::<M, V, FLOAT_TWO_SIDED, true>(p),
            (EXACT, true) => tiles::<M, V, EXACT, false>(p),
            (EXACT, false) => tiles::<M, V, EXACT, true>(p),
            (INT32, true) => tiles::<M, V, INT32, false>(p),
            (INT32, false) => tiles::<M, V, INT32, true>(p),
            (_, true) => tiles::<M, V, HYBRID, false>(p),
            (_, false) => tiles::<M, V, HYBRID, true>(p),
        }
    }
}

/// The lanes of the vector of columns from `col` that lie below `nc`.
#[inline]
fn column_mask(nc: usize, col: usize) -> __mmask16 {
    ((1u32 << nc.saturating_sub(col).min(16)) - 1) as __mmask16
}

/// The forms of output a tile loop serves: the float shortcut one- or two-sided (see
/// [`FloatTables::one_sided`]), the exact requantization, 32-bit sums, hybrid floats.
const FLOAT_ONE_SIDED: u8 = 0;
const FLOAT_TWO_SIDED: u8 = 1;
const EXACT: u8 = 2;
const INT32: u8 = 3;
const HYBRID: u8 = 4;

/// The tiles of one call, each output form `KIND` and each way of reading the rows
/// (flipping their words as they are read when `FLIP`) in a loop of its own: with every
/// form behind one computation of the sums, the sums went through the stack on every tile
/// (112x112 16->96 took 0.282 ms so, 0.191 now).
///
/// Each tile function takes the fields of the form it serves (`igemm_impl` chose `KIND`
/// from `p.out`, so no other form reaches it).
///
/// # Safety
/// As for [`igemm`], with `p.out` of the form `KIND` and `FLIP` false only when
/// `p.flipped`.
#[inline(never)]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
unsafe fn tiles<const M: usize, const V: usize, const KIND: u8, const FLIP: bool>(p: &Qs8IgemmArgs) {
    debug_assert!(M <= MAX_ROWS && V <= 2 && p.mr == M && p.nc <= 16 * V && p.kc.is_multiple_of(4) && p.kc >= 4);
    for q in 0..p.tiles {
        let t = p.tile(q);
        // SAFETY: the contract holds for each tile of the run (it is stated per tile).
        unsafe {
            match KIND {
                FLOAT_ONE_SIDED => float_tile::<M, V, true, FLIP>(&t),
                FLOAT_TWO_SIDED => float_tile::<M, V, false, FLIP>(&t),
                EXACT => exact_tile::<M, V, FLIP>(&t),
                INT32 => int32_tile::<M, V, FLIP>(&t),
                _ => hybrid_tile::<M, V, FLIP>(&t),
            }
        }
    }
}

/// One tile requantized exactly (layers the float shortcut does not serve), rows
/// unrolled from the registers.
///
/// # Safety
/// The contract of [`Qs8IgemmArgs`] for one tile, as for [`igemm`], with `p.out` an
/// `Int8` output (`FLIP` false only when the rows are flipped).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulators in registers
unsafe fn exact_tile<const M: usize, const V: usize, const FLIP: bool>(p: &Qs8IgemmArgs) {
    let Qs8Out::Int8 { c, bias, mult, left, right, output_offset, min, max, shifts_left, saturates, .. } = p.out else {
        return;
    };
    // SAFETY: (one tile) the packed block is `ks * kc * 16V` bytes, read 64 bytes per vector as
    // `[ks][kc/4][16V][4]`; `a[i*ks + t]` are `kc` readable bytes each, read 4 at a time
    // below `kc` (a multiple of 4); the tables are `16V` values each; `c` rows `i < M`
    // get `nc` bytes each (masked stores write nothing past `nc`): the contract.
    unsafe {
        let acc = sums::<M, V, FLIP>(p);
        let clamp = min > -128 || max < 127;
        if V == 2 {
            // Both vectors of a row narrow together (see `RowStore`).
            let offset = _mm512_set1_epi16(output_offset.clamp(-32768, 32767) as i16);
            let row = RowStore::new(min, max, clamp, p.nc);
            let ch0 = Channels::load([bias, mult, left, right], 0);
            let ch1 = Channels::load([bias, mult, left, right], 16);
            for i in 0..M {
                let r0 = ch0.requant(acc[i][0], shifts_left, saturates);
                let r1 = ch1.requant(acc[i][V - 1], shifts_left, saturates);
                row.store(c.wrapping_add(i * p.c_stride), _mm512_adds_epi16(_mm512_packs_epi32(r0, r1), offset));
            }
        } else {
            let offset = _mm256_set1_epi16(output_offset.clamp(-32768, 32767) as i16);
            let vmin = _mm256_set1_epi16(min as i16);
            let vmax = _mm256_set1_epi16(max as i16);
            for v in 0..V {
                // Every vector is requantized (a fixed loop keeps the accumulators
                // in registers); vectors past `nc` store nothing (an all-zero mask).
                let col = 16 * v;
                let mask = column_mask(p.nc, col);
                let ch = Channels::load([bias, mult, left, right], col);
                for i in 0..M {
                    let r = ch.requant(acc[i][v], shifts_left, saturates);
                    // Saturated to 16 bits, the output offset added with saturation:
                    // the clamp to the int8 range below then gives what clamping the
                    // 32-bit values would.
                    let r = _mm256_adds_epi16(_mm512_cvtsepi32_epi16(r), offset);
                    store_16(c.wrapping_add(i * p.c_stride + col), mask, r, clamp.then_some((vmin, vmax)));
                }
            }
        }
    }
}

/// One tile's sums plus the per-channel bias, stored as 32-bit values.
///
/// # Safety
/// As for [`exact_tile`], with `p.out` an `Int32` output.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulators in registers
unsafe fn int32_tile<const M: usize, const V: usize, const FLIP: bool>(p: &Qs8IgemmArgs) {
    let Qs8Out::Int32 { c, bias } = p.out else {
        return;
    };
    // SAFETY: (one tile) the sums read what the contract gives (see `exact_tile`); the
    // bias holds `16V` values; `c` rows `i < M` get `nc` 32-bit values each (masked
    // stores write nothing past `nc`): the contract.
    unsafe {
        let acc = sums::<M, V, FLIP>(p);
        for v in 0..V {
            let col = 16 * v;
            let mask = column_mask(p.nc, col);
            let b = _mm512_loadu_si512(bias.add(col).cast());
            for i in 0..M {
                _mm512_mask_storeu_epi32(
                    c.wrapping_add(i * p.c_stride + col).cast(),
                    mask,
                    _mm512_add_epi32(acc[i][v], b),
                );
            }
        }
    }
}

/// One tile with the float shortcut: its sums (flipping the rows' words when `FLIP`),
/// requantized and stored with the rows unrolled, from the registers. The lanes the
/// shortcut declines are gathered over the whole tile in a mask register (a branch per row
/// on them cost more than the shortcut itself); the rare tile with any goes on to
/// [`exact_rows`].
///
/// # Safety
/// `p.out` is `Qs8Out::Int8` with `float` tables, under the contract of
/// [`Qs8IgemmArgs`] for `M` rows and `16 * V` columns (`FLIP` false only when the rows are
/// flipped); AVX-512 F, BW, DQ, VL and VNNI available.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulators in registers
unsafe fn float_tile<const M: usize, const V: usize, const ONE_SIDED: bool, const FLIP: bool>(p: &Qs8IgemmArgs) {
    // (`tiles` chose this function from `p.out`'s form: no other form reaches it.)
    let Qs8Out::Int8 { c, min, max, float: Some(ft), .. } = p.out else {
        return;
    };
    let clamp = min > -128 || max < 127;
    // SAFETY: the tables hold `16 * V` values each and row `i < M` of `c` takes `nc`
    // bytes (the contract); every store below is masked to `nc`; `exact_rows` is called
    // under this function's own contract.
    unsafe {
        let acc = sums::<M, V, FLIP>(p);
        let lanes: [FloatLanes; V] = core::array::from_fn(|v| FloatLanes::load(ft, 16 * v));
        // Per vector of columns, the lowest fraction of any row: one comparison per tile
        // then tells whether any lane declined.
        let mut lowest = [_mm512_set1_ps(1.0); V];
        // The thresholds are loaded only for that comparison: held beside the sixteen sums,
        // they pushed sums out to the stack (112x112 16->96: 0.126 -> 0.123 ms).
        let any_declined = |lowest: &[__m512; V]| (0..V).any(|v| ft.declined_at(16 * v, lowest[v]) != 0);
        if V == 2 {
            // Both vectors of a row narrow together (see `RowStore`).
            let row = RowStore::new(min, max, clamp, p.nc);
            for i in 0..M {
                let (r0, d0) = lanes[0].value::<ONE_SIDED>(acc[i][0]);
                let (r1, d1) = lanes[V - 1].value::<ONE_SIDED>(acc[i][V - 1]);
                lowest[0] = _mm512_min_ps(lowest[0], d0);
                lowest[V - 1] = _mm512_min_ps(lowest[V - 1], d1);
                row.store(c.wrapping_add(i * p.c_stride), _mm512_packs_epi32(r0, r1));
            }
            if any_declined(&lowest) {
                exact_rows::<M, V, ONE_SIDED, FLIP>(p);
            }
        } else {
            let mask = column_mask(p.nc, 0);
            let bounds = clamp.then(|| (_mm_set1_epi8(min as i8), _mm_set1_epi8(max as i8)));
            let store = |i: usize, r: __m512i| store_bytes(c.wrapping_add(i * p.c_stride), mask, r, bounds);
            // (Twelve rows of one vector: a mask per row leaves the registers to the
            // sums; 32->16 at 112x112 took 0.031 ms so, 0.037 with the running minimum.)
            let mut declined: __mmask16 = 0;
            for i in 0..M {
                let (r, k) = lanes[0].apply::<ONE_SIDED>(acc[i][0]);
                declined = _kor_mask16(declined, k);
                store(i, r);
            }
            if declined != 0 {
                exact_rows::<M, V, ONE_SIDED, FLIP>(p);
            }
        }
    }
}

/// The rare tile of [`float_tile`] with lanes the shortcut declined: its sums computed
/// again, and the rows with such lanes stored again with those lanes requantized exactly
/// (the zero point added in 32 bits: the accumulators are small enough here not to wrap).
/// Computing the sums twice in a few tiles costs less than keeping them for this pass in
/// every tile: with sixteen sums held through the shortcut's pass the compiler put them
/// on the stack, and 112x112 16->96 took 0.282 ms instead of 0.191.
///
/// # Safety
/// As for [`float_tile`], on a CPU with AVX-512 VNNI as well.
#[cold]
#[inline(never)]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulators in registers
unsafe fn exact_rows<const M: usize, const V: usize, const ONE_SIDED: bool, const FLIP: bool>(p: &Qs8IgemmArgs) {
    let Qs8Out::Int8 { c, bias, mult, left, right, output_offset, min, max, shifts_left, saturates, float: Some(ft) } =
        p.out
    else {
        return;
    };
    let clamp = min > -128 || max < 127;
    // SAFETY: as in `float_tile`, whose contract this function has.
    unsafe {
        let acc = sums::<M, V, FLIP>(p);
        let lanes: [FloatLanes; V] = core::array::from_fn(|v| FloatLanes::load(ft, 16 * v));
        let exact = |col: usize, a: __m512i| {
            let ch = Channels::load([bias, mult, left, right], col);
            _mm512_add_epi32(ch.requant(a, shifts_left, saturates), _mm512_set1_epi32(output_offset))
        };
        if V == 2 {
            let row = RowStore::new(min, max, clamp, p.nc);
            for i in 0..M {
                let (r0, k0) = lanes[0].apply::<ONE_SIDED>(acc[i][0]);
                let (r1, k1) = lanes[V - 1].apply::<ONE_SIDED>(acc[i][V - 1]);
                if (k0 | k1) != 0 {
                    let r0 = _mm512_mask_mov_epi32(r0, k0, exact(0, acc[i][0]));
                    let r1 = _mm512_mask_mov_epi32(r1, k1, exact(16, acc[i][V - 1]));
                    row.store(c.wrapping_add(i * p.c_stride), _mm512_packs_epi32(r0, r1));
                }
            }
        } else {
            let mask = column_mask(p.nc, 0);
            let bounds = clamp.then(|| (_mm_set1_epi8(min as i8), _mm_set1_epi8(max as i8)));
            for i in 0..M {
                let (r, k) = lanes[0].apply::<ONE_SIDED>(acc[i][0]);
                if k != 0 {
                    let r = _mm512_mask_mov_epi32(r, k, exact(0, acc[i][0]));
                    store_bytes(c.wrapping_add(i * p.c_stride), mask, r, bounds);
                }
            }
        }
    }
}

/// A hybrid layer's float outputs from a tile's sums: `((acc - row fold * weight sum) *
/// scale) * row scale + bias` in the reference's order, clamped.
///
/// # Safety
/// `p.out` is `Qs8Out::Float`, under the contract of [`Qs8IgemmArgs`] for `M` rows and
/// `16 * V` columns (the row tables hold an entry per row; `FLIP` false only when the
/// rows are flipped); AVX-512 F, BW, VL and VNNI available.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulators in registers
unsafe fn hybrid_tile<const M: usize, const V: usize, const FLIP: bool>(p: &Qs8IgemmArgs) {
    let Qs8Out::Float { c, sumw, scale, bias, row_fold, row_scale, min, max, .. } = p.out else {
        return;
    };
    let (vmin, vmax) = (_mm512_set1_ps(min), _mm512_set1_ps(max));
    // SAFETY: the sums read what the contract gives; the column tables hold `16 * V`
    // values, the row tables `M`, and row `i < M` of `c` takes `nc` floats (the
    // contract); every store is masked to `nc`.
    unsafe {
        let acc = sums::<M, V, FLIP>(p);
        for v in 0..V {
            let col = 16 * v;
            let mask = column_mask(p.nc, col);
            let sw = _mm512_loadu_si512(sumw.add(col).cast());
            let sc = _mm512_loadu_ps(scale.add(col));
            let b = _mm512_loadu_ps(bias.add(col));
            for i in 0..M {
                let a = _mm512_sub_epi32(acc[i][v], _mm512_mullo_epi32(_mm512_set1_epi32(*row_fold.add(i)), sw));
                let f = _mm512_mul_ps(_mm512_cvtepi32_ps(a), sc);
                let f = _mm512_add_ps(_mm512_mul_ps(f, _mm512_set1_ps(*row_scale.add(i))), b);
                // max(min, f) then min(max, f): NaN passes through as C++'s
                // `std::min(std::max(f, min), max)` lets it.
                let f = _mm512_min_ps(vmax, _mm512_max_ps(vmin, f));
                _mm512_mask_storeu_ps(c.wrapping_add(i * p.c_stride + col), mask, f);
            }
        }
    }
}

/// Saturates 16 32-bit values to bytes, clamps them (when `clamp` gives the bounds) and
/// stores the lanes in `mask` at `c`.
///
/// # Safety
/// `c` writable for the lanes in `mask`; AVX-512 F, BW and VL available.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn store_bytes(c: *mut i8, mask: __mmask16, r: __m512i, clamp: Option<(__m128i, __m128i)>) {
    let b = _mm512_cvtsepi32_epi8(r);
    let b = match clamp {
        Some((vmin, vmax)) => _mm_min_epi8(_mm_max_epi8(b, vmin), vmax),
        None => b,
    };
    // SAFETY: the masked store writes only the lanes in `mask` (the contract).
    unsafe { _mm_mask_storeu_epi8(c, mask, b) }
}

/// The tile's 32-bit sums `sum u * w`, flipping each input word (`u = x ^ 0x80`) when
/// `FLIP`.
///
/// # Safety
/// The contract of [`Qs8IgemmArgs`] (only `a`, `w`, `ks` and `kc` are read); AVX-512 F, BW
/// and VNNI available.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulators in registers
unsafe fn sums<const M: usize, const V: usize, const FLIP: bool>(p: &Qs8IgemmArgs) -> [[__m512i; V]; M] {
    // A tile of one or two vectors would be one or two chains of dependent multiply-adds
    // (a single row: a batch-1 FULLY_CONNECTED), each waiting out the instruction's
    // latency: such tiles keep several sets of sums.
    if M * V <= 2 {
        // SAFETY: forwarded contract.
        return unsafe { sums_in_sets::<M, V, FLIP>(p) };
    }
    let flip = _mm512_set1_epi32(0x8080_8080u32 as i32);
    let mut acc = [[_mm512_setzero_si512(); V]; M];
    // SAFETY: see `igemm_impl`: the packed block and the rows are as the contract says.
    unsafe {
        let mut w = p.w;
        for t in 0..p.ks {
            let rows: [*const i8; M] = core::array::from_fn(|i| p.a.row(i, t, p.ks));
            let mut k = 0;
            while k < p.kc {
                let wv: [__m512i; V] = core::array::from_fn(|v| _mm512_loadu_si512(w.add(64 * v).cast()));
                for i in 0..M {
                    let x = _mm512_set1_epi32(rows[i].add(k).cast::<i32>().read_unaligned());
                    let u = if FLIP { _mm512_xor_si512(x, flip) } else { x };
                    for v in 0..V {
                        acc[i][v] = _mm512_dpbusd_epi32(acc[i][v], u, wv[v]);
                    }
                }
                w = w.add(64 * V);
                k += 4;
            }
        }
    }
    acc
}

/// [`sums`] of a tile of one or two vectors: `SETS` sets of sums over consecutive steps
/// of `k`, added together at the end (integer sums: the same values in any order).
///
/// # Safety
/// As for [`sums`].
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulators in registers
unsafe fn sums_in_sets<const M: usize, const V: usize, const FLIP: bool>(p: &Qs8IgemmArgs) -> [[__m512i; V]; M] {
    let flip = _mm512_set1_epi32(0x8080_8080u32 as i32);
    const SETS: usize = 4;
    let mut acc = [[[_mm512_setzero_si512(); V]; M]; SETS];
    // SAFETY: see `igemm_impl`: the packed block and the rows are as the contract says.
    unsafe {
        let mut w = p.w;
        for t in 0..p.ks {
            let rows: [*const i8; M] = core::array::from_fn(|i| p.a.row(i, t, p.ks));
            // One step: four values of `k` into set `s`.
            let mut step = |k: usize, w: *const i8, s: usize| {
                let wv: [__m512i; V] = core::array::from_fn(|v| _mm512_loadu_si512(w.add(64 * v).cast()));
                for i in 0..M {
                    let x = _mm512_set1_epi32(rows[i].add(k).cast::<i32>().read_unaligned());
                    let u = if FLIP { _mm512_xor_si512(x, flip) } else { x };
                    for v in 0..V {
                        acc[s][i][v] = _mm512_dpbusd_epi32(acc[s][i][v], u, wv[v]);
                    }
                }
            };
            let mut k = 0;
            while k + 4 * SETS <= p.kc {
                for s in 0..SETS {
                    step(k + 4 * s, w.add(64 * V * s), s);
                }
                w = w.add(64 * V * SETS);
                k += 4 * SETS;
            }
            while k < p.kc {
                step(k, w, 0);
                w = w.add(64 * V);
                k += 4;
            }
        }
    }
    let [mut total, rest @ ..] = acc;
    for set in &rest {
        for i in 0..M {
            for v in 0..V {
                total[i][v] = _mm512_add_epi32(total[i][v], set[i][v]);
            }
        }
    }
    total
}

/// Narrows and stores a row of a two-vector tile: `packs` saturates 32 to 16 bits (the
/// caller's) and 16 to 8 as the one-vector conversions do, a dword permute undoes its
/// per-128-bit-lane interleave, and one masked store writes the row's `nc` bytes.
struct RowStore {
    clamp: Option<(__m512i, __m512i)>,
    order: __m512i,
    mask: __mmask32,
}

impl RowStore {
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn new(min: i32, max: i32, clamp: bool, nc: usize) -> RowStore {
        RowStore {
            clamp: clamp.then(|| (_mm512_set1_epi16(min as i16), _mm512_set1_epi16(max as i16))),
            order: _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0),
            mask: ((1u64 << nc) - 1) as __mmask32,
        }
    }

    /// Clamps the row's 32 16-bit values (`packs` order) and stores them as bytes at `c`.
    ///
    /// # Safety
    /// `c` writable for `nc` bytes; AVX-512 F and BW available.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    unsafe fn store(&self, c: *mut i8, r: __m512i) {
        let r = match self.clamp {
            Some((vmin, vmax)) => _mm512_min_epi16(_mm512_max_epi16(r, vmin), vmax),
            None => r,
        };
        let bytes = _mm512_castsi512_si256(_mm512_permutexvar_epi32(self.order, _mm512_packs_epi16(r, r)));
        // SAFETY: the masked store writes only the row's `nc` bytes (the contract).
        unsafe { _mm256_mask_storeu_epi8(c, self.mask, bytes) }
    }
}

/// Clamps 16 16-bit values (when `clamp` gives the bounds) and stores the lanes in `mask`
/// as bytes (saturated) at `c`.
///
/// # Safety
/// `c` writable for the lanes in `mask`; AVX-512 F, BW and VL available.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
unsafe fn store_16(c: *mut i8, mask: __mmask16, r: __m256i, clamp: Option<(__m256i, __m256i)>) {
    let r = match clamp {
        Some((vmin, vmax)) => _mm256_min_epi16(_mm256_max_epi16(r, vmin), vmax),
        None => r,
    };
    // SAFETY: the masked store writes only the lanes in `mask` (the contract).
    unsafe { _mm_mask_storeu_epi8(c, mask, _mm256_cvtsepi16_epi8(r)) }
}

/// One vector's requantization tables: 16 channels, loaded once per tile.
struct Channels {
    bias: __m512i,
    mult: __m512i,
    left: __m512i,
    right: __m512i,
}

impl Channels {
    /// # Safety
    /// The four tables (bias, multiplier, left and right shift) hold `col + 16` values
    /// each; AVX-512 F available.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load([bias, mult, left, right]: [*const i32; 4], col: usize) -> Channels {
        // SAFETY: the tables hold `col + 16` values (the contract); unaligned loads.
        unsafe {
            Channels {
                bias: _mm512_loadu_si512(bias.add(col).cast()),
                mult: _mm512_loadu_si512(mult.add(col).cast()),
                left: _mm512_loadu_si512(left.add(col).cast()),
                right: _mm512_loadu_si512(right.add(col).cast()),
            }
        }
    }

    /// `RoundingDivideByPOT(SaturatingRoundingDoublingHighMul((acc + bias) << left, mult),
    /// right)` per lane, exactly as `qs8_requant::requant_scalar` before its offset and
    /// clamp. `shifts_left` false means every `left` is 0; `saturates` false means no
    /// multiplier is `i32::MIN` (so the high multiply cannot saturate). What depends only
    /// on the tables is hoisted out of the row loop once this is inlined.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn requant(&self, acc: __m512i, shifts_left: bool, saturates: bool) -> __m512i {
        let x = _mm512_add_epi32(acc, self.bias);
        let x = if shifts_left { _mm512_sllv_epi32(x, self.left) } else { x };
        let h = if saturates { rq512::srdhm(x, self.mult) } else { rq512::srdhm_unsaturated(x, self.mult) };
        rq512::rounding_divide_by_pot(h, self.right)
    }
}
