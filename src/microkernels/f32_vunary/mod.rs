//! float32 unary elementwise microkernels: clamps (RELU, RELU6, RELU_N1_TO_1), hard swish
//! and leaky ReLU.
//!
//! Every table computes the same operations in the same order as the scalar twin (no
//! fused multiply-add), so all tables give the same bits:
//! - clamp: `std::min(std::max(x, lo), hi)` (a NaN passes through);
//! - hard swish: `(x * (1/6)) * min(max(x + 3, 0), 6)` (XNNPACK's multiply by the
//!   reciprocal instead of TFLite's division by 6: within rounding of the reference);
//! - leaky ReLU: `x > 0 ? x : x * alpha`.
//!
//! [`apply`] is the safe driver; it checks the lengths before calling a kernel.

#[cfg(target_arch = "x86_64")]
pub mod avx2;
#[cfg(target_arch = "x86_64")]
pub mod avx512;
pub mod scalar;
#[cfg(test)]
mod tests;

use super::{Isa, Table};
use crate::error::{Error, Result};

/// `kernel(n, x, out, p, q)`: `out[i] = f(x[i])` with the op's parameters `p`, `q`.
///
/// # Safety
/// `x` readable and `out` writable for `n` floats, not overlapping; the CPU has the
/// table's instruction set.
pub type UnaryFn = unsafe fn(usize, *const f32, *mut f32, f32, f32);

/// The unary kernels of one instruction set. [`apply`] checks that the CPU has `isa`
/// before calling one.
pub struct UnaryKernels {
    pub(crate) isa: Isa,
    pub(crate) clamp: UnaryFn,
    pub(crate) hard_swish: UnaryFn,
    pub(crate) leaky_relu: UnaryFn,
}

/// `1/6` as the kernels multiply by it.
pub(crate) const SIXTH: f32 = 1.0 / 6.0;

/// A unary op.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    /// `std::min(std::max(x, lo), hi)`; `hi = +inf` for RELU.
    Clamp { lo: f32, hi: f32 },
    /// `x * relu6(x + 3) / 6`, as `(x * (1/6)) * relu6(x + 3)`.
    HardSwish,
    /// `x > 0 ? x : x * alpha`.
    LeakyRelu { alpha: f32 },
}

/// `out[i] = op(x[i])` with `table`'s kernels. Errors, writing nothing, when the lengths
/// differ.
pub fn apply(table: &Table, op: UnaryOp, x: &[f32], out: &mut [f32]) -> Result<()> {
    let k = &table.f32_vunary;
    if x.len() != out.len() {
        return Err(Error::new(format!("unary op of {} values into {} outputs", x.len(), out.len())));
    }
    if !k.isa.is_available() {
        return Err(Error::new(format!("unary kernels for {} on a CPU without it", k.isa.name())));
    }
    let (f, p, q) = match op {
        UnaryOp::Clamp { lo, hi } => (k.clamp, lo, hi),
        UnaryOp::HardSwish => (k.hard_swish, 0.0, 0.0),
        UnaryOp::LeakyRelu { alpha } => (k.leaky_relu, alpha, 0.0),
    };
    // SAFETY: equal lengths checked above; `out` is a unique borrow, so it does not
    // overlap `x`; the CPU has the kernels' instruction set.
    unsafe { f(x.len(), x.as_ptr(), out.as_mut_ptr(), p, q) };
    Ok(())
}
