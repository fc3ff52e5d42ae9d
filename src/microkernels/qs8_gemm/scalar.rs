//! Portable 8-bit GEMM kernels: the oracle of the SIMD ones, and what runs without a SIMD
//! table. Wide `MR x NR` = 4 x 16, narrow 4 x 8; the same packed layout as every table
//! (`[ks][kc / 4][NR][4]`).

use super::{Qs8GemmKernel, Qs8GemmKernels, Qs8IgemmArgs, Qs8IgemmFn, Qs8Out};
use crate::microkernels::qs8_requant::requant_scalar;

/// The scalar 8-bit GEMM table entry.
pub const KERNELS: Qs8GemmKernels = Qs8GemmKernels {
    wide: Qs8GemmKernel { mr: 4, nr: 16, by_rows: WIDE },
    narrow: Qs8GemmKernel { mr: 4, nr: 8, by_rows: NARROW },
    flip,
};

/// `dst[i] = src[i] ^ 0x80` over the slices' common length.
pub fn flip(src: &[i8], dst: &mut [i8]) {
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = x ^ i8::MIN;
    }
}

const WIDE: &[Qs8IgemmFn] = &[igemm::<1, 16>, igemm::<2, 16>, igemm::<3, 16>, igemm::<4, 16>];
const NARROW: &[Qs8IgemmFn] = &[igemm::<1, 8>, igemm::<2, 8>, igemm::<3, 8>, igemm::<4, 8>];

/// # Safety
/// The contract of [`Qs8IgemmArgs`], with `p.mr == M` and `NR` the block width.
unsafe fn igemm<const M: usize, const NR: usize>(p: &Qs8IgemmArgs) {
    for q in 0..p.tiles {
        // SAFETY: the contract holds for each tile of the run (it is stated per tile).
        unsafe { tile_igemm::<M, NR>(&p.tile(q)) }
    }
}

/// # Safety
/// The contract of [`Qs8IgemmArgs`] for one tile, with `p.mr == M` and `NR` the block
/// width.
#[allow(clippy::needless_range_loop)] // the same loop nest as the SIMD kernels
unsafe fn tile_igemm<const M: usize, const NR: usize>(p: &Qs8IgemmArgs) {
    debug_assert!(p.mr == M && p.nc <= NR && p.kc.is_multiple_of(4));
    // SAFETY: `w` holds `ks*kc*NR` bytes (the contract).
    let w = unsafe { core::slice::from_raw_parts(p.w, p.ks * p.kc * NR) };
    let mut acc = [[0i32; NR]; M];
    let mut wk = 0;
    for t in 0..p.ks {
        let rows: [&[i8]; M] = core::array::from_fn(|i| {
            // SAFETY: `a` gives `M * ks` rows of `kc` bytes each (the contract).
            unsafe { core::slice::from_raw_parts(p.a.row(i, t, p.ks), p.kc) }
        });
        for k4 in 0..p.kc / 4 {
            let wrow = &w[wk..wk + 4 * NR];
            for i in 0..M {
                let x = &rows[i][k4 * 4..k4 * 4 + 4];
                for j in 0..NR {
                    for q in 0..4 {
                        // The input as unsigned bytes `x + 128`, as the SIMD kernels read it.
                        let u = i32::from(if p.flipped { x[q] as u8 } else { x[q] as u8 ^ 0x80 });
                        acc[i][j] = acc[i][j].wrapping_add(u * i32::from(wrow[j * 4 + q]));
                    }
                }
            }
            wk += 4 * NR;
        }
    }
    match p.out {
        Qs8Out::Int8 { c, bias, mult, left, right, output_offset, min, max, .. } => {
            // SAFETY: the four tables hold `NR` values each (the contract).
            let (bias, mult, left, right) = unsafe {
                (
                    core::slice::from_raw_parts(bias, NR),
                    core::slice::from_raw_parts(mult, NR),
                    core::slice::from_raw_parts(left, NR),
                    core::slice::from_raw_parts(right, NR),
                )
            };
            for (i, row) in acc.iter().enumerate() {
                // SAFETY: row `i < mr` of `c` is valid for `nc` bytes (the contract).
                let c = unsafe { core::slice::from_raw_parts_mut(c.add(i * p.c_stride), p.nc) };
                for (j, (dst, &v)) in c.iter_mut().zip(row.iter()).enumerate() {
                    *dst = requant_scalar(v, bias[j], mult[j], left[j], right[j], output_offset, min, max) as i8;
                }
            }
        }
        Qs8Out::Int32 { c, bias } => {
            // SAFETY: the bias table holds `NR` values (the contract).
            let bias = unsafe { core::slice::from_raw_parts(bias, NR) };
            for (i, row) in acc.iter().enumerate() {
                // SAFETY: row `i < mr` of `c` is valid for `nc` values (the contract).
                let c = unsafe { core::slice::from_raw_parts_mut(c.add(i * p.c_stride), p.nc) };
                for (j, (dst, &v)) in c.iter_mut().zip(row.iter()).enumerate() {
                    *dst = v.wrapping_add(bias[j]);
                }
            }
        }
        Qs8Out::Float { c, sumw, scale, bias, row_fold, row_scale, min, max, .. } => {
            // SAFETY: the channel tables hold `NR` values, the row tables `mr` (the contract).
            let (sumw, scale, bias, row_fold, row_scale) = unsafe {
                (
                    core::slice::from_raw_parts(sumw, NR),
                    core::slice::from_raw_parts(scale, NR),
                    core::slice::from_raw_parts(bias, NR),
                    core::slice::from_raw_parts(row_fold, M),
                    core::slice::from_raw_parts(row_scale, M),
                )
            };
            for (i, row) in acc.iter().enumerate() {
                // SAFETY: row `i < mr` of `c` is valid for `nc` floats (the contract).
                let c = unsafe { core::slice::from_raw_parts_mut(c.add(i * p.c_stride), p.nc) };
                for (j, (dst, &v)) in c.iter_mut().zip(row.iter()).enumerate() {
                    let acc = v.wrapping_sub(row_fold[i].wrapping_mul(sumw[j]));
                    let f = acc as f32 * scale[j] * row_scale[i] + bias[j];
                    // `std::min(std::max(f, min), max)`, NaN passing through as in C++.
                    let f = if f < min { min } else { f };
                    *dst = if max < f { max } else { f };
                }
            }
        }
    }
}
