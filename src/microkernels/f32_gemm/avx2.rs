//! AVX2 + FMA float32 GEMM kernels. Wide: `MR x NR` = 6 x 16 (12 accumulators of 8
//! floats, two weight vectors and one broadcast: 15 of the 16 ymm registers). Narrow, for
//! layers of at most 8 output channels: 8 x 8.

use super::{GemmKernel, GemmKernels, IgemmArgs, IgemmFn};
use core::arch::x86_64::*;

/// The AVX2 GEMM table entry.
pub const KERNELS: GemmKernels = GemmKernels {
    wide: GemmKernel { mr: 6, nr: 16, by_rows: WIDE },
    narrow: GemmKernel { mr: 8, nr: 8, by_rows: NARROW },
};

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
    unsafe { igemm_impl::<M, V>(p) }
}

#[target_feature(enable = "avx2,fma")]
#[allow(clippy::needless_range_loop)] // indices keep the accumulator grid in registers
unsafe fn igemm_impl<const M: usize, const V: usize>(p: &IgemmArgs) {
    debug_assert!(p.mr == M && p.nc <= 8 * V);
    let mut w = p.w;
    // SAFETY: `w` is read strictly in order over exactly `NR + ks*kc*NR`
    // floats; `a[t*M + i]` for `t < ks`, `i < M` are the caller's row pointers, each read
    // at `k < kc`; `c` rows `i < M` are written at `nc` floats (all `NR` only when
    // `nc == NR`): all within the contract of `IgemmArgs`.
    unsafe {
        let bias: [__m256; V] = core::array::from_fn(|v| _mm256_loadu_ps(w.add(8 * v)));
        w = w.add(8 * V);
        let mut acc = [bias; M];
        for t in 0..p.ks {
            let rows: [*const f32; M] = core::array::from_fn(|i| *p.a.add(t * M + i));
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
