//! AVX2 + FMA float32 GEMM kernels. Wide: `MR x NR` = 6 x 16 (12 accumulators of 8
//! floats, two weight vectors and one broadcast: 15 of the 16 ymm registers). Narrow, for
//! layers of at most 8 output channels: 8 x 8. Single, for one output channel: 4 rows of
//! dot products along K, eight K values per step.

use super::{GemmKernel, GemmKernels, IgemmArgs, IgemmFn};
use core::arch::x86_64::*;

/// The AVX2 GEMM table entry.
pub const KERNELS: GemmKernels = GemmKernels {
    tiles: &[GemmKernel { mr: 6, nr: 16, col_cost: 1, by_rows: WIDE }],
    narrow: GemmKernel { mr: 8, nr: 8, col_cost: 1, by_rows: NARROW },
    single: GemmKernel { mr: 4, nr: 1, col_cost: 1, by_rows: SINGLE },
};

const SINGLE: &[IgemmFn] = &[dot::<1>, dot::<2>, dot::<3>, dot::<4>];

/// # Safety
/// The contract of [`IgemmArgs`] with `NR = 1` and `p.mr == M`, on a CPU with AVX2 and
/// FMA (the table is only handed out when both are present).
unsafe fn dot<const M: usize>(p: &IgemmArgs) {
    // SAFETY: forwarded contract; the CPU features were checked when the table was chosen.
    unsafe { dot_tiles::<M>(p) }
}

/// The call's tiles one after the other, each through [`dot_impl`].
///
/// # Safety
/// As for [`dot`].
#[target_feature(enable = "avx2,fma")]
unsafe fn dot_tiles<const M: usize>(p: &IgemmArgs) {
    for q in 0..p.tiles {
        // SAFETY: the contract holds for each tile of the call (it is stated per row).
        unsafe { dot_impl::<M>(&p.tile(q)) }
    }
}

#[inline]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulators in registers
unsafe fn dot_impl<const M: usize>(p: &IgemmArgs) {
    debug_assert!(p.mr == M && p.nc == 1);
    // SAFETY: the packed block is `1 + ks*kc` floats (`NR = 1`): the bias, then each tap's
    // `kc` weights; `p.row(i, t)` are `kc` readable floats each; the masked loads read
    // only lanes below `kc`; `c` rows `i < M` get one float each: the contract.
    unsafe {
        let tail = p.kc % 8;
        let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail as i32), lane);
        let mut acc = [_mm256_setzero_ps(); M];
        let mut w = p.w.add(1);
        for t in 0..p.ks {
            let rows: [*const f32; M] = core::array::from_fn(|i| p.row(i, t));
            let mut k = 0;
            while k + 8 <= p.kc {
                let wv = _mm256_loadu_ps(w.add(k));
                for i in 0..M {
                    acc[i] = _mm256_fmadd_ps(_mm256_loadu_ps(rows[i].add(k)), wv, acc[i]);
                }
                k += 8;
            }
            if tail != 0 {
                let wv = _mm256_maskload_ps(w.add(k), mask);
                for i in 0..M {
                    acc[i] = _mm256_fmadd_ps(_mm256_maskload_ps(rows[i].add(k), mask), wv, acc[i]);
                }
            }
            w = w.add(p.kc);
        }
        let bias = *p.w;
        for i in 0..M {
            let s4 = _mm_add_ps(_mm256_castps256_ps128(acc[i]), _mm256_extractf128_ps::<1>(acc[i]));
            let s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
            let s1 = _mm_add_ss(s2, _mm_shuffle_ps::<1>(s2, s2));
            let v = bias + _mm_cvtss_f32(s1);
            *p.c.add(i * p.c_stride) = v.max(p.min).min(p.max);
        }
    }
}

const WIDE: &[IgemmFn] = &[igemm::<1, 2>, igemm::<2, 2>, igemm::<3, 2>, igemm::<4, 2>, igemm::<5, 2>, igemm::<6, 2>];
const NARROW: &[IgemmFn] = &[
    igemm::<1, 1>,
    igemm::<2, 1>,
    igemm::<3, 1>,
    igemm::<4, 1>,
    igemm::<5, 1>,
    igemm::<6, 1>,
    igemm::<7, 1>,
    igemm::<8, 1>,
];

/// # Safety
/// The contract of [`IgemmArgs`] with `NR = 8 * V` and `p.mr == M`, on a CPU with AVX2
/// and FMA (the table is only handed out when both are present).
unsafe fn igemm<const M: usize, const V: usize>(p: &IgemmArgs) {
    // SAFETY: forwarded contract; the CPU features were checked when the table was chosen.
    unsafe { igemm_tiles::<M, V>(p) }
}

/// The call's tiles one after the other, each through [`igemm_impl`].
///
/// # Safety
/// As for [`igemm`].
#[target_feature(enable = "avx2,fma")]
unsafe fn igemm_tiles<const M: usize, const V: usize>(p: &IgemmArgs) {
    for q in 0..p.tiles {
        // SAFETY: the contract holds for each tile of the call (it is stated per row).
        unsafe { igemm_impl::<M, V>(&p.tile(q)) }
    }
}

#[inline]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulator grid in registers
unsafe fn igemm_impl<const M: usize, const V: usize>(p: &IgemmArgs) {
    debug_assert!(p.mr == M && p.nc <= 8 * V);
    let mut w = p.w;
    // SAFETY: `w` is read strictly in order over exactly `NR + ks*kc*NR`
    // floats; `p.row(i, t)` for `t < ks`, `i < M` are the caller's row pointers, each read
    // at `k < kc`; `c` rows `i < M` are written at `nc` floats (all `NR` only when
    // `nc == NR`): all within the contract of `IgemmArgs`.
    unsafe {
        let bias: [__m256; V] = core::array::from_fn(|v| _mm256_loadu_ps(w.add(8 * v)));
        w = w.add(8 * V);
        let mut acc = [bias; M];
        for t in 0..p.ks {
            let rows: [*const f32; M] = core::array::from_fn(|i| p.row(i, t));
            let mut k = 0;
            while k < p.kc {
                let wv: [__m256; V] = core::array::from_fn(|v| _mm256_loadu_ps(w.add(8 * v)));
                w = w.add(8 * V);
                for i in 0..M {
                    let x = _mm256_broadcast_ss(&*rows[i].add(k));
                    for v in 0..V {
                        acc[i][v] = _mm256_fmadd_ps(x, wv[v], acc[i][v]);
                    }
                }
                k += 1;
            }
        }
        let vmin = _mm256_set1_ps(p.min);
        let vmax = _mm256_set1_ps(p.max);
        for (i, row) in acc.iter().enumerate() {
            let c = p.c.add(i * p.c_stride);
            let mut tmp = [0f32; 16];
            for v in 0..V {
                let clamped = _mm256_min_ps(_mm256_max_ps(row[v], vmin), vmax);
                if p.nc == 8 * V {
                    _mm256_storeu_ps(c.add(8 * v), clamped);
                } else {
                    _mm256_storeu_ps(tmp.as_mut_ptr().add(8 * v), clamped);
                }
            }
            if p.nc != 8 * V {
                core::ptr::copy_nonoverlapping(tmp.as_ptr(), c, p.nc);
            }
        }
    }
}
