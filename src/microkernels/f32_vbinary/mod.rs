//! float32 binary elementwise microkernels, with the fused activation as a clamp.
//!
//! Every op comes in the three shapes a broadcast reduces to (XNNPACK's `vbinary`,
//! `vbinaryc` and per-channel forms):
//! - vector op vector (`vv`): `out[i] = f(a[i], b[i])`;
//! - vector op scalar (`vc`, and `cv` with the scalar first): `out[i] = f(a[i], c)`;
//! - vector op row (`vrow`, and `rowv` with the row first): a `rows x cols` block against
//!   one row of `cols` values repeated, `out[r * cols + j] = f(a[r * cols + j], row[j])`
//!   (a per-channel vector against an NHWC tensor).
//!
//! Each result is then clamped as TFLite's `ActivationFunctionWithMinMax` does:
//! `std::min(std::max(y, lo), hi)`, so a NaN passes through. The ops compute exactly what
//! the scalar twin computes (no fused multiply-add), so every table gives the same bits.
//!
//! The output may be one of the inputs (an op run in place): each element is read before
//! it is written. [`apply`] and [`apply_in_place`] are the safe drivers; they check every
//! length before calling a kernel.

#[cfg(target_arch = "x86_64")]
pub mod avx2;
#[cfg(target_arch = "x86_64")]
pub mod avx512;
pub mod scalar;
#[cfg(test)]
mod tests;

use super::{Isa, Table};
use crate::error::{Error, Result};

/// `kernel(n, a, b, out, lo, hi)`: `out[i] = clamp(f(a[i], b[i]))` for `i < n`.
///
/// # Safety
/// `a` and `b` are readable for `n` floats, `out` writable for `n` floats; `out` may
/// equal `a` or `b` but overlaps neither otherwise; the CPU has the table's instruction set.
pub type VvFn = unsafe fn(usize, *const f32, *const f32, *mut f32, f32, f32);

/// `kernel(n, a, c, out, lo, hi)`: `out[i] = clamp(f(a[i], c))` (or `f(c, a[i])` for the
/// scalar-first form).
///
/// # Safety
/// As [`VvFn`], without `b`.
pub type VcFn = unsafe fn(usize, *const f32, f32, *mut f32, f32, f32);

/// `kernel(rows, cols, a, row, out, lo, hi)`: `out[r * cols + j] = clamp(f(a[r * cols +
/// j], row[j]))` (or `f(row[j], ...)` for the row-first form).
///
/// # Safety
/// `cols > 0`; `a` readable and `out` writable for `rows * cols` floats, `row` readable for
/// `cols`; `out` may equal `a` but overlaps neither otherwise; the CPU has the table's
/// instruction set.
pub type RowFn = unsafe fn(usize, usize, *const f32, *const f32, *mut f32, f32, f32);

/// The five kernels of one op.
#[derive(Clone, Copy)]
pub struct OpKernels {
    pub(crate) vv: VvFn,
    pub(crate) vc: VcFn,
    pub(crate) cv: VcFn,
    pub(crate) vrow: RowFn,
    pub(crate) rowv: RowFn,
}

/// The binary kernels of one instruction set. The drivers check that the CPU has `isa`
/// before calling one, so no safe code can run a kernel the CPU lacks.
pub struct BinaryKernels {
    pub(crate) isa: Isa,
    pub(crate) add: OpKernels,
    pub(crate) sub: OpKernels,
    pub(crate) mul: OpKernels,
    pub(crate) div: OpKernels,
    pub(crate) max: OpKernels,
    pub(crate) min: OpKernels,
    pub(crate) sqr_diff: OpKernels,
    pub(crate) prelu: OpKernels,
}

/// A binary op, with TFLite's operand order `f(a, b)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `a > b ? a : b` (TFLite's MAXIMUM; a NaN `b`, or any NaN, gives `b`).
    Max,
    /// `a < b ? a : b`.
    Min,
    /// `(a - b) * (a - b)`.
    SquaredDifference,
    /// `a >= 0 ? a : a * b` (PRELU with `b` the slope).
    Prelu,
}

impl BinaryKernels {
    fn op(&self, op: BinaryOp) -> &OpKernels {
        match op {
            BinaryOp::Add => &self.add,
            BinaryOp::Sub => &self.sub,
            BinaryOp::Mul => &self.mul,
            BinaryOp::Div => &self.div,
            BinaryOp::Max => &self.max,
            BinaryOp::Min => &self.min,
            BinaryOp::SquaredDifference => &self.sqr_diff,
            BinaryOp::Prelu => &self.prelu,
        }
    }
}

/// The operand that is not the full-length vector `x`.
#[derive(Clone, Copy, Debug)]
pub enum Other<'a> {
    /// As long as `x`.
    Vector(&'a [f32]),
    /// One value for every element.
    Scalar(f32),
    /// `cols` values, repeated over `x.len() / cols` rows (`x.len()` a multiple of it).
    Row(&'a [f32]),
}

/// No clamp: the identity, NaN included.
pub const NO_CLAMP: (f32, f32) = (f32::NEG_INFINITY, f32::INFINITY);

fn check(kernels: &BinaryKernels, n: usize, other: &Other<'_>) -> Result<()> {
    if !kernels.isa.is_available() {
        return Err(Error::new(format!("binary kernels for {} on a CPU without it", kernels.isa.name())));
    }
    match *other {
        Other::Vector(v) if v.len() != n => Err(Error::new(format!("binary op of {n} values with {} values", v.len()))),
        Other::Row(r) if r.is_empty() || !n.is_multiple_of(r.len()) => {
            Err(Error::new(format!("binary op of {n} values with a row of {} values", r.len())))
        }
        _ => Ok(()),
    }
}

/// Runs the kernel: `x` is `f`'s first operand unless `x_is_second`.
///
/// # Safety
/// `x` readable and `out` writable for `n` floats (`out` may equal `x`); `other` checked
/// by [`check`] for `n` and not overlapping `out`; the CPU has the kernels' instruction set.
unsafe fn run(
    k: &OpKernels,
    n: usize,
    x: *const f32,
    x_is_second: bool,
    other: Other<'_>,
    out: *mut f32,
    (lo, hi): (f32, f32),
) {
    // SAFETY: the caller's contract is each kernel's (lengths per `check`).
    unsafe {
        match (other, x_is_second) {
            (Other::Vector(v), false) => (k.vv)(n, x, v.as_ptr(), out, lo, hi),
            (Other::Vector(v), true) => (k.vv)(n, v.as_ptr(), x, out, lo, hi),
            (Other::Scalar(c), false) => (k.vc)(n, x, c, out, lo, hi),
            (Other::Scalar(c), true) => (k.cv)(n, x, c, out, lo, hi),
            (Other::Row(r), false) => (k.vrow)(n / r.len(), r.len(), x, r.as_ptr(), out, lo, hi),
            (Other::Row(r), true) => (k.rowv)(n / r.len(), r.len(), x, r.as_ptr(), out, lo, hi),
        }
    }
}

/// `out = clamp(f(x, other))` (or `f(other, x)` when `x_is_second`) with `table`'s
/// kernels. Errors, writing nothing, when a length does not fit.
pub fn apply(
    table: &Table,
    op: BinaryOp,
    x: &[f32],
    x_is_second: bool,
    other: Other<'_>,
    out: &mut [f32],
    clamp: (f32, f32),
) -> Result<()> {
    let kernels = &table.f32_vbinary;
    if out.len() != x.len() {
        return Err(Error::new(format!("binary op of {} values into {} outputs", x.len(), out.len())));
    }
    check(kernels, x.len(), &other)?;
    // SAFETY: lengths checked above; `out` is a unique borrow, so it overlaps no input.
    unsafe { run(kernels.op(op), x.len(), x.as_ptr(), x_is_second, other, out.as_mut_ptr(), clamp) };
    Ok(())
}

/// [`apply`] with the output written over `x`.
pub fn apply_in_place(
    table: &Table,
    op: BinaryOp,
    x: &mut [f32],
    x_is_second: bool,
    other: Other<'_>,
    clamp: (f32, f32),
) -> Result<()> {
    let kernels = &table.f32_vbinary;
    check(kernels, x.len(), &other)?;
    let p = x.as_mut_ptr();
    // SAFETY: lengths checked above; the output is exactly `x`, which the kernels allow,
    // and `other` is a shared borrow, so it does not overlap `x`.
    unsafe { run(kernels.op(op), x.len(), p, x_is_second, other, p, clamp) };
    Ok(())
}
