//! Portable binary kernels: the twins of the SIMD ones (same operations, one value at a
//! time).

use super::{BinaryKernels, OpKernels};
use crate::microkernels::Isa;

/// `std::min(std::max(y, lo), hi)`: a NaN `y` passes through.
#[inline(always)]
fn clamp(y: f32, lo: f32, hi: f32) -> f32 {
    let y = if y < lo { lo } else { y };
    if hi < y { hi } else { y }
}

macro_rules! op_kernels {
    ($name:ident, |$x:ident, $y:ident| $body:expr) => {
        mod $name {
            use super::clamp;

            #[inline(always)]
            fn f($x: f32, $y: f32) -> f32 {
                $body
            }

            /// # Safety
            /// See [`crate::microkernels::f32_vbinary::VvFn`].
            pub unsafe fn vv(n: usize, a: *const f32, b: *const f32, o: *mut f32, lo: f32, hi: f32) {
                for i in 0..n {
                    // SAFETY: `i < n`, within every buffer; each value is read before its
                    // slot is written, so `o` may be `a` or `b`.
                    unsafe { *o.add(i) = clamp(f(*a.add(i), *b.add(i)), lo, hi) };
                }
            }

            /// # Safety
            /// See [`crate::microkernels::f32_vbinary::VcFn`].
            pub unsafe fn vc(n: usize, a: *const f32, c: f32, o: *mut f32, lo: f32, hi: f32) {
                for i in 0..n {
                    // SAFETY: as in `vv`.
                    unsafe { *o.add(i) = clamp(f(*a.add(i), c), lo, hi) };
                }
            }

            /// # Safety
            /// See [`crate::microkernels::f32_vbinary::VcFn`].
            pub unsafe fn cv(n: usize, a: *const f32, c: f32, o: *mut f32, lo: f32, hi: f32) {
                for i in 0..n {
                    // SAFETY: as in `vv`.
                    unsafe { *o.add(i) = clamp(f(c, *a.add(i)), lo, hi) };
                }
            }

            /// # Safety
            /// See [`crate::microkernels::f32_vbinary::RowFn`].
            pub unsafe fn vrow(
                rows: usize,
                cols: usize,
                a: *const f32,
                row: *const f32,
                o: *mut f32,
                lo: f32,
                hi: f32,
            ) {
                for r in 0..rows {
                    for j in 0..cols {
                        let i = r * cols + j;
                        // SAFETY: `i < rows * cols` and `j < cols`, within the buffers.
                        unsafe { *o.add(i) = clamp(f(*a.add(i), *row.add(j)), lo, hi) };
                    }
                }
            }

            /// # Safety
            /// See [`crate::microkernels::f32_vbinary::RowFn`].
            pub unsafe fn rowv(
                rows: usize,
                cols: usize,
                a: *const f32,
                row: *const f32,
                o: *mut f32,
                lo: f32,
                hi: f32,
            ) {
                for r in 0..rows {
                    for j in 0..cols {
                        let i = r * cols + j;
                        // SAFETY: as in `vrow`.
                        unsafe { *o.add(i) = clamp(f(*row.add(j), *a.add(i)), lo, hi) };
                    }
                }
            }

            pub const KERNELS: super::OpKernels = super::OpKernels { vv, vc, cv, vrow, rowv };
        }
    };
}

op_kernels!(add, |x, y| x + y);
op_kernels!(sub, |x, y| x - y);
op_kernels!(mul, |x, y| x * y);
op_kernels!(div, |x, y| x / y);
op_kernels!(max, |x, y| if x > y { x } else { y });
op_kernels!(min, |x, y| if x < y { x } else { y });
op_kernels!(sqr_diff, |x, y| (x - y) * (x - y));
op_kernels!(prelu, |x, y| if x >= 0.0 { x } else { x * y });

/// The scalar binary kernels.
pub const KERNELS: BinaryKernels = BinaryKernels {
    isa: Isa::Scalar,
    add: add::KERNELS,
    sub: sub::KERNELS,
    mul: mul::KERNELS,
    div: div::KERNELS,
    max: max::KERNELS,
    min: min::KERNELS,
    sqr_diff: sqr_diff::KERNELS,
    prelu: prelu::KERNELS,
};
