//! The portable row sums: the oracle of the SIMD kernels.

use super::RowSumKernels;

/// The scalar table entry.
pub const KERNELS: RowSumKernels = RowSumKernels { i8: sum_i8, u8: sum_u8 };

fn sum_i8(rows: &[i8], sums: &mut [i32]) {
    sum_rows(rows, sums, i32::from);
}

fn sum_u8(rows: &[u8], sums: &mut [i32]) {
    sum_rows(rows, sums, i32::from);
}

fn sum_rows<T: Copy>(rows: &[T], sums: &mut [i32], widen: impl Fn(T) -> i32) {
    if sums.is_empty() {
        return;
    }
    let n = sums.len();
    for row in rows.chunks_exact(n) {
        for (s, &v) in sums.iter_mut().zip(row) {
            *s = s.wrapping_add(widen(v));
        }
    }
}
