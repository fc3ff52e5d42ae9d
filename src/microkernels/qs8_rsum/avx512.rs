//! AVX-512 row sums: 64 channels at a time held in four accumulators down all the rows
//! (each byte widened to 32 bits on its load), then 16 at a time, then the scalar tail.

use super::RowSumKernels;
use core::arch::x86_64::*;

/// The AVX-512 table entry.
pub const KERNELS: RowSumKernels = RowSumKernels { i8: sum_i8, u8: sum_u8 };

fn sum_i8(rows: &[i8], sums: &mut [i32]) {
    // SAFETY: the table is only handed out on CPUs with AVX-512 F.
    unsafe { sum_i8_impl(rows, sums) }
}

fn sum_u8(rows: &[u8], sums: &mut [i32]) {
    // SAFETY: the table is only handed out on CPUs with AVX-512 F.
    unsafe { sum_u8_impl(rows, sums) }
}

/// One body for both signednesses: `$widen` turns 16 bytes into 16 `i32` lanes.
macro_rules! row_sums {
    ($name:ident, $t:ty, $widen:ident, $scalar:expr) => {
        #[target_feature(enable = "avx512f")]
        fn $name(rows: &[$t], sums: &mut [i32]) {
            let n = sums.len();
            if n == 0 {
                return;
            }
            let count = rows.len() / n;
            let (src, dst) = (rows.as_ptr(), sums.as_mut_ptr());
            let mut c = 0;
            while c + 64 <= n {
                // SAFETY: lanes `c..c + 64` lie inside `sums`; row `r`'s bytes
                // `c..c + 64` lie inside `rows` for every `r < count` (whole rows of `n`).
                unsafe {
                    let mut acc = [0usize, 16, 32, 48].map(|k| _mm512_loadu_si512(dst.add(c + k).cast()));
                    for r in 0..count {
                        let at = src.add(r * n + c);
                        for (k, a) in acc.iter_mut().enumerate() {
                            *a = _mm512_add_epi32(*a, $widen(_mm_loadu_si128(at.add(16 * k).cast())));
                        }
                    }
                    for (k, a) in acc.iter().enumerate() {
                        _mm512_storeu_si512(dst.add(c + 16 * k).cast(), *a);
                    }
                }
                c += 64;
            }
            while c + 16 <= n {
                // SAFETY: as above, for lanes `c..c + 16`.
                unsafe {
                    let mut a = _mm512_loadu_si512(dst.add(c).cast());
                    for r in 0..count {
                        a = _mm512_add_epi32(a, $widen(_mm_loadu_si128(src.add(r * n + c).cast())));
                    }
                    _mm512_storeu_si512(dst.add(c).cast(), a);
                }
                c += 16;
            }
            for (j, s) in sums.iter_mut().enumerate().skip(c) {
                for r in 0..count {
                    *s = s.wrapping_add($scalar(rows[r * n + j]));
                }
            }
        }
    };
}

row_sums!(sum_i8_impl, i8, _mm512_cvtepi8_epi32, i32::from);
row_sums!(sum_u8_impl, u8, _mm512_cvtepu8_epi32, i32::from);
