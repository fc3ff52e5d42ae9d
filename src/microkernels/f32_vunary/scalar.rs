//! Portable unary kernels: the twins of the SIMD ones (same operations, one value at a
//! time).

use super::{SIXTH, UnaryKernels};
use crate::microkernels::Isa;

macro_rules! unary_kernel {
    ($name:ident, |$x:ident, $p:ident, $q:ident| $body:expr) => {
        /// # Safety
        /// See [`crate::microkernels::f32_vunary::UnaryFn`].
        unsafe fn $name(n: usize, x: *const f32, o: *mut f32, $p: f32, $q: f32) {
            for i in 0..n {
                // SAFETY: `i < n`, within both buffers.
                unsafe {
                    let $x = *x.add(i);
                    *o.add(i) = $body;
                }
            }
        }
    };
}

unary_kernel!(clamp, |x, lo, hi| {
    let y = if x < lo { lo } else { x };
    if hi < y { hi } else { y }
});
unary_kernel!(hard_swish, |x, _p, _q| {
    let t = x + 3.0;
    let t = if 0.0 < t { t } else { 0.0 };
    let t = if t < 6.0 { t } else { 6.0 };
    (x * SIXTH) * t
});
unary_kernel!(leaky_relu, |x, alpha, _q| if x > 0.0 { x } else { x * alpha });

/// The scalar unary kernels.
pub const KERNELS: UnaryKernels = UnaryKernels { isa: Isa::Scalar, clamp, hard_swish, leaky_relu };
