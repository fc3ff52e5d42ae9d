//! Portable float32 GEMM kernels: the oracle of the SIMD ones, and what targets without a
//! SIMD table run. Wide `MR x NR` = 4 x 8, narrow 4 x 4, single 4 x 1.

use super::{GemmKernel, GemmKernels, IgemmArgs, IgemmFn};

/// The scalar GEMM table entry.
pub const KERNELS: GemmKernels = GemmKernels {
    tiles: &[GemmKernel { mr: 4, nr: 8, col_cost: 1, by_rows: WIDE }],
    narrow: GemmKernel { mr: 4, nr: 4, col_cost: 1, by_rows: NARROW },
    single: GemmKernel { mr: 4, nr: 1, col_cost: 1, by_rows: SINGLE },
};

const SINGLE: &[IgemmFn] = &[igemm::<1, 1>, igemm::<2, 1>, igemm::<3, 1>, igemm::<4, 1>];

const WIDE: &[IgemmFn] = &[igemm::<1, 8>, igemm::<2, 8>, igemm::<3, 8>, igemm::<4, 8>];
const NARROW: &[IgemmFn] = &[igemm::<1, 4>, igemm::<2, 4>, igemm::<3, 4>, igemm::<4, 4>];

/// # Safety
/// The contract of [`IgemmArgs`], with `p.mr == M`.
unsafe fn igemm<const M: usize, const NR: usize>(p: &IgemmArgs) {
    for q in 0..p.tiles {
        // SAFETY: the contract holds for each tile of the call (it is stated per row).
        unsafe { tile::<M, NR>(&p.tile(q)) }
    }
}

/// One tile of [`igemm`].
///
/// # Safety
/// As for [`igemm`], with `p.tiles == 1`.
#[allow(clippy::needless_range_loop)] // the same loop nest as the SIMD kernels
unsafe fn tile<const M: usize, const NR: usize>(p: &IgemmArgs) {
    debug_assert!(p.mr == M && p.nc <= NR);
    // SAFETY: `w` holds `NR + ks*kc*NR` floats (the contract).
    let w = unsafe { core::slice::from_raw_parts(p.w, NR + p.ks * p.kc * NR) };
    let mut acc = [[0f32; NR]; M];
    for row in acc.iter_mut() {
        row.copy_from_slice(&w[..NR]);
    }
    let mut wk = NR;
    for t in 0..p.ks {
        let rows: [&[f32]; M] = core::array::from_fn(|i| {
            // SAFETY: each row's pointer for each tap is valid for `kc` floats (the contract).
            unsafe { core::slice::from_raw_parts(p.row(i, t), p.kc) }
        });
        for k in 0..p.kc {
            let wrow = &w[wk..wk + NR];
            for i in 0..M {
                let x = rows[i][k];
                for j in 0..NR {
                    acc[i][j] += x * wrow[j];
                }
            }
            wk += NR;
        }
    }
    for (i, row) in acc.iter().enumerate() {
        // SAFETY: row `i < mr` of `c` is valid for `nc` floats (the contract).
        let c = unsafe { core::slice::from_raw_parts_mut(p.c.add(i * p.c_stride), p.nc) };
        for (dst, &v) in c.iter_mut().zip(row.iter()) {
            *dst = v.max(p.min).min(p.max);
        }
    }
}
