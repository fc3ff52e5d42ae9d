//! AVX-512 float32 GEMM kernels (F, DQ and VL, on top of AVX2 + FMA), in two tile sets:
//! one for cores with full-width 512-bit units and one for cores that run a 512-bit
//! operation as two 256-bit halves (AMD Zen 4). Both were chosen by timing the 1x1 and
//! KxK CONV_2D layers of the benchmark models one at a time.
//!
//! Full width ([`KERNELS`]): a 512-bit multiply-add costs what a 256-bit one does, so a
//! tile is bound by its loads (one broadcast per row and one per 16 weights per K step).
//! Wide `MR x NR` = 7 x 32 (two accumulators per row: 9 loads per 14 multiply-adds,
//! against 11 per 10 for 10 x 16; 1x1 layers 20-30% faster, 24-channel layers 30%
//! although 32 pads them), 5 x 48 where 48 pads less than 32 (144 channels: 0.12 ->
//! 0.09 ms at 56x56), and 10 x 16 where 32 would double the work (16 channels).
//!
//! Split ([`KERNELS_SPLIT_512`]): the multiply-adds bind, and the gain over AVX2 comes
//! from the 32 registers, fewer instructions per flop and masked tails. Wide 10 x 16, one
//! 512-bit accumulator per row (it beat 7x32, 8x32, 12x32, 6x48 and 14x16 there, partly
//! because 16 divides more layers' channel counts than 32); 8 x 24 in 256-bit vectors for
//! channel counts that 24 covers with less padding (24 channels: one block instead of two
//! of 16, 20% faster).
//!
//! Both: narrow, for layers of at most 8 output channels, 12 x 8 in 256-bit vectors;
//! single, for one output channel, 8 rows of dot products along K, their sums transposed
//! into one vector. Column tails are written with masked stores.

use super::{GemmKernel, GemmKernels, IgemmArgs, IgemmFn};
use core::arch::x86_64::*;

/// The AVX-512 GEMM table entry for cores with full-width 512-bit units.
pub const KERNELS: GemmKernels = GemmKernels {
    tiles: &[
        GemmKernel { mr: 7, nr: 32, col_cost: 10, by_rows: W7X32 },
        GemmKernel { mr: 5, nr: 48, col_cost: 10, by_rows: W5X48 },
        GemmKernel { mr: 10, nr: 16, col_cost: 13, by_rows: W10X16 },
    ],
    narrow: NARROW_TILE,
    single: SINGLE_TILE,
};

/// The AVX-512 GEMM table entry for cores that split 512-bit operations in two.
pub const KERNELS_SPLIT_512: GemmKernels = GemmKernels {
    tiles: &[
        GemmKernel { mr: 10, nr: 16, col_cost: 1, by_rows: W10X16 },
        GemmKernel { mr: 8, nr: 24, col_cost: 1, by_rows: Y8X24 },
    ],
    narrow: NARROW_TILE,
    single: SINGLE_TILE,
};

const NARROW_TILE: GemmKernel = GemmKernel { mr: 12, nr: 8, col_cost: 1, by_rows: NARROW };
const SINGLE_TILE: GemmKernel = GemmKernel { mr: 8, nr: 1, col_cost: 1, by_rows: SINGLE };

const W7X32: &[IgemmFn] =
    &[igemm::<1, 2>, igemm::<2, 2>, igemm::<3, 2>, igemm::<4, 2>, igemm::<5, 2>, igemm::<6, 2>, igemm::<7, 2>];
const W5X48: &[IgemmFn] = &[igemm::<1, 3>, igemm::<2, 3>, igemm::<3, 3>, igemm::<4, 3>, igemm::<5, 3>];
const W10X16: &[IgemmFn] = &[
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
];
const NARROW: &[IgemmFn] = &[
    igemm_y::<1, 1>,
    igemm_y::<2, 1>,
    igemm_y::<3, 1>,
    igemm_y::<4, 1>,
    igemm_y::<5, 1>,
    igemm_y::<6, 1>,
    igemm_y::<7, 1>,
    igemm_y::<8, 1>,
    igemm_y::<9, 1>,
    igemm_y::<10, 1>,
    igemm_y::<11, 1>,
    igemm_y::<12, 1>,
];
const Y8X24: &[IgemmFn] = &[
    igemm_y::<1, 3>,
    igemm_y::<2, 3>,
    igemm_y::<3, 3>,
    igemm_y::<4, 3>,
    igemm_y::<5, 3>,
    igemm_y::<6, 3>,
    igemm_y::<7, 3>,
    igemm_y::<8, 3>,
];
const SINGLE: &[IgemmFn] = &[dot::<1>, dot::<2>, dot::<3>, dot::<4>, dot::<5>, dot::<6>, dot::<7>, dot::<8>];

/// The lanes of a 16-float vector below `n` (all of them for `n >= 16`).
#[inline(always)]
fn lanes_below(n: usize) -> __mmask16 {
    if n >= 16 { 0xffff } else { ((1u32 << n) - 1) as __mmask16 }
}

/// # Safety
/// The contract of [`IgemmArgs`] with `NR = 1` and `p.mr == M <= 8`, on a CPU with
/// AVX-512 F, DQ and VL (the table is only handed out when all are present).
unsafe fn dot<const M: usize>(p: &IgemmArgs) {
    // SAFETY: forwarded contract; the CPU features were checked when the table was chosen.
    unsafe { dot_tiles::<M>(p) }
}

/// The call's tiles one after the other, each through [`dot_impl`].
///
/// # Safety
/// As for [`dot`].
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
unsafe fn dot_tiles<const M: usize>(p: &IgemmArgs) {
    for q in 0..p.tiles {
        // SAFETY: the contract holds for each tile of the call (it is stated per row).
        unsafe { dot_impl::<M>(&p.tile(q)) }
    }
}

#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulators in registers
unsafe fn dot_impl<const M: usize>(p: &IgemmArgs) {
    debug_assert!(p.mr == M && M <= 8 && p.nc == 1);
    // SAFETY: the packed block is `1 + ks*kc` floats (`NR = 1`): the bias, then each tap's
    // `kc` weights; `p.row(i, t)` are `kc` readable floats each, read below `kc` only (the
    // masked loads never touch masked-off lanes, so they cannot fault); `c` rows `i < M`
    // get one float each: the contract.
    unsafe {
        // K is walked sixteen values at a time, then eight (a 256-bit step: Zen 4 runs a
        // 512-bit operation as two 256-bit ones, so half a vector costs half), then the
        // last `kc % 8` through a mask.
        let full = p.kc / 16 * 16;
        let eight = p.kc % 16 >= 8;
        let tail = p.kc % 8;
        let mask = lanes_below(tail) as __mmask8;
        let mut acc = [_mm512_setzero_ps(); M];
        let mut acc_half = [_mm256_setzero_ps(); M];
        let mut w = p.w.add(1);
        for t in 0..p.ks {
            let rows: [*const f32; M] = core::array::from_fn(|i| p.row(i, t));
            let mut k = 0;
            while k < full {
                let wv = _mm512_loadu_ps(w.add(k));
                for i in 0..M {
                    acc[i] = _mm512_fmadd_ps(_mm512_loadu_ps(rows[i].add(k)), wv, acc[i]);
                }
                k += 16;
            }
            if eight {
                let wv = _mm256_loadu_ps(w.add(k));
                for i in 0..M {
                    acc_half[i] = _mm256_fmadd_ps(_mm256_loadu_ps(rows[i].add(k)), wv, acc_half[i]);
                }
                k += 8;
            }
            if tail != 0 {
                let wv = _mm256_maskz_loadu_ps(mask, w.add(k));
                for i in 0..M {
                    acc_half[i] = _mm256_fmadd_ps(_mm256_maskz_loadu_ps(mask, rows[i].add(k)), wv, acc_half[i]);
                }
            }
            w = w.add(p.kc);
        }
        // Each row's sixteen partial sums, then eight: fold the high half onto the low one.
        let halves: [__m256; M] = core::array::from_fn(|i| {
            let lo = _mm512_castps512_ps256(acc[i]);
            let hi = _mm512_extractf32x8_ps::<1>(acc[i]);
            _mm256_add_ps(_mm256_add_ps(lo, hi), acc_half[i])
        });
        let bias = _mm256_set1_ps(*p.w);
        let vmin = _mm256_set1_ps(p.min);
        let vmax = _mm256_set1_ps(p.max);
        // Eight rows' sums at once, in one vector (row `i` in lane `i`): pairwise
        // horizontal adds, then the two 128-bit halves added across.
        let row = |i: usize| {
            if i < M { halves[i] } else { _mm256_setzero_ps() }
        };
        let h01 = _mm256_hadd_ps(row(0), row(1));
        let h23 = _mm256_hadd_ps(row(2), row(3));
        let h45 = _mm256_hadd_ps(row(4), row(5));
        let h67 = _mm256_hadd_ps(row(6), row(7));
        let q0 = _mm256_hadd_ps(h01, h23);
        let q1 = _mm256_hadd_ps(h45, h67);
        let sums = _mm256_add_ps(_mm256_permute2f128_ps::<0x20>(q0, q1), _mm256_permute2f128_ps::<0x31>(q0, q1));
        let out = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(sums, bias), vmin), vmax);
        if p.c_stride == 1 {
            _mm256_mask_storeu_ps(p.c, lanes_below(M) as __mmask8, out);
        } else {
            let mut lanes = [0f32; 8];
            _mm256_storeu_ps(lanes.as_mut_ptr(), out);
            for i in 0..M {
                *p.c.add(i * p.c_stride) = lanes[i];
            }
        }
    }
}

/// # Safety
/// The contract of [`IgemmArgs`] with `NR = 16 * V` and `p.mr == M`, on a CPU with
/// AVX-512 F and VL (the table is only handed out when both are present).
unsafe fn igemm<const M: usize, const V: usize>(p: &IgemmArgs) {
    // SAFETY: forwarded contract; the CPU features were checked when the table was chosen.
    unsafe { igemm_tiles::<M, V>(p) }
}

/// The call's tiles one after the other, each through [`igemm_impl`].
///
/// # Safety
/// As for [`igemm`].
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
unsafe fn igemm_tiles<const M: usize, const V: usize>(p: &IgemmArgs) {
    for q in 0..p.tiles {
        // SAFETY: the contract holds for each tile of the call (it is stated per row).
        unsafe { igemm_impl::<M, V>(&p.tile(q)) }
    }
}

#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulator grid in registers
unsafe fn igemm_impl<const M: usize, const V: usize>(p: &IgemmArgs) {
    debug_assert!(p.mr == M && p.nc <= 16 * V);
    let mut w = p.w;
    // SAFETY: `w` is read strictly in order over exactly `NR + ks*kc*NR` floats;
    // `p.row(i, t)` for `t < ks`, `i < M` are the caller's row pointers, each read at
    // `k < kc`; `c` rows `i < M` are written at `nc` floats (the masked stores write
    // only lanes below `nc`; masked-off lanes are never accessed): all within the
    // contract of `IgemmArgs`.
    unsafe {
        let bias: [__m512; V] = core::array::from_fn(|v| _mm512_loadu_ps(w.add(16 * v)));
        w = w.add(16 * V);
        let mut acc = [bias; M];
        for t in 0..p.ks {
            let rows: [*const f32; M] = core::array::from_fn(|i| p.row(i, t));
            for k in 0..p.kc {
                let wv: [__m512; V] = core::array::from_fn(|v| _mm512_loadu_ps(w.add(16 * v)));
                w = w.add(16 * V);
                for i in 0..M {
                    let x = _mm512_set1_ps(*rows[i].add(k));
                    for v in 0..V {
                        acc[i][v] = _mm512_fmadd_ps(x, wv[v], acc[i][v]);
                    }
                }
            }
        }
        let vmin = _mm512_set1_ps(p.min);
        let vmax = _mm512_set1_ps(p.max);
        if p.nc == 16 * V {
            for (i, row) in acc.iter().enumerate() {
                let c = p.c.add(i * p.c_stride);
                for v in 0..V {
                    _mm512_storeu_ps(c.add(16 * v), _mm512_min_ps(_mm512_max_ps(row[v], vmin), vmax));
                }
            }
        } else {
            let masks: [__mmask16; V] = core::array::from_fn(|v| lanes_below(p.nc.saturating_sub(16 * v)));
            for (i, row) in acc.iter().enumerate() {
                let c = p.c.add(i * p.c_stride);
                for v in 0..V {
                    if masks[v] != 0 {
                        _mm512_mask_storeu_ps(
                            c.add(16 * v),
                            masks[v],
                            _mm512_min_ps(_mm512_max_ps(row[v], vmin), vmax),
                        );
                    }
                }
            }
        }
    }
}

/// # Safety
/// The contract of [`IgemmArgs`] with `NR = 8 * V` and `p.mr == M`, on a CPU with
/// AVX-512 F and VL (the table is only handed out when both are present).
unsafe fn igemm_y<const M: usize, const V: usize>(p: &IgemmArgs) {
    // SAFETY: forwarded contract; the CPU features were checked when the table was chosen.
    unsafe { igemm_y_tiles::<M, V>(p) }
}

/// The call's tiles one after the other, each through [`igemm_y_impl`].
///
/// # Safety
/// As for [`igemm_y`].
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
unsafe fn igemm_y_tiles<const M: usize, const V: usize>(p: &IgemmArgs) {
    for q in 0..p.tiles {
        // SAFETY: the contract holds for each tile of the call (it is stated per row).
        unsafe { igemm_y_impl::<M, V>(&p.tile(q)) }
    }
}

/// [`igemm_impl`] in 256-bit vectors: for tiles whose width is not a multiple of 16, with
/// the 32 registers of AVX-512 holding up to 24 accumulators.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulator grid in registers
unsafe fn igemm_y_impl<const M: usize, const V: usize>(p: &IgemmArgs) {
    debug_assert!(p.mr == M && p.nc <= 8 * V);
    let mut w = p.w;
    // SAFETY: `w` is read strictly in order over exactly `NR + ks*kc*NR` floats;
    // `p.row(i, t)` for `t < ks`, `i < M` are the caller's row pointers, each read at
    // `k < kc`; `c` rows `i < M` are written at `nc` floats (the masked stores write
    // only lanes below `nc`; masked-off lanes are never accessed): all within the
    // contract of `IgemmArgs`.
    unsafe {
        let bias: [__m256; V] = core::array::from_fn(|v| _mm256_loadu_ps(w.add(8 * v)));
        w = w.add(8 * V);
        let mut acc = [bias; M];
        for t in 0..p.ks {
            let rows: [*const f32; M] = core::array::from_fn(|i| p.row(i, t));
            for k in 0..p.kc {
                let wv: [__m256; V] = core::array::from_fn(|v| _mm256_loadu_ps(w.add(8 * v)));
                w = w.add(8 * V);
                for i in 0..M {
                    let x = _mm256_set1_ps(*rows[i].add(k));
                    for v in 0..V {
                        acc[i][v] = _mm256_fmadd_ps(x, wv[v], acc[i][v]);
                    }
                }
            }
        }
        let vmin = _mm256_set1_ps(p.min);
        let vmax = _mm256_set1_ps(p.max);
        let masks: [__mmask8; V] = core::array::from_fn(|v| lanes_below(p.nc.saturating_sub(8 * v).min(8)) as __mmask8);
        for (i, row) in acc.iter().enumerate() {
            let c = p.c.add(i * p.c_stride);
            for v in 0..V {
                let x = _mm256_min_ps(_mm256_max_ps(row[v], vmin), vmax);
                if p.nc == 8 * V {
                    _mm256_storeu_ps(c.add(8 * v), x);
                } else if masks[v] != 0 {
                    _mm256_mask_storeu_ps(c.add(8 * v), masks[v], x);
                }
            }
        }
    }
}
