//! Quantized 8-bit (int8 and uint8) binary elementwise microkernels: ADD, SUB and MUL,
//! bit-exact with TFLite's reference kernels.
//!
//! With `scale(x, s) = RoundingDivideByPOT(SaturatingRoundingDoublingHighMul((x + s.offset)
//! << s.left, s.mult), s.right)` (one [`Rescale`] after the input's offset):
//! - ADD: `raw = scale(a, pa) + scale(b, pb)` (reference `AddElementwise`, `left` 20);
//! - SUB: `raw = scale(a, pa) - scale(b, pb)` (`SubElementwise`);
//! - MUL: `raw = (a + pa.offset) * (b + pb.offset)` (`MulElementwise`);
//!
//! then `out = clamp(out.apply(raw) + output_offset, min, max)`, the clamp as
//! `std::min(std::max(v, min), max)`, narrowed with a C cast. Every addition and product
//! wraps as in TFLite's build. The ops give the parameters ([`QBinaryParams`]); they are
//! computed once, at Prepare.
//!
//! Two kernel shapes per op and type: vector op vector (`vv`), and vector op a value the
//! same for every element (`vc`): for ADD and SUB that value is the other input already
//! scaled, for MUL the other input plus its offset, so the kernel only scales `x`. A
//! repeated row is run row by row on `vv` by the driver. The output may be one of the
//! inputs (an op run in place): each element is read before it is written. [`apply`] and
//! [`apply_in_place`] are the safe drivers; they check every length before calling a kernel.

#[cfg(target_arch = "x86_64")]
pub mod avx2;
#[cfg(target_arch = "x86_64")]
pub mod avx512;
#[cfg(target_arch = "x86_64")]
mod forms;
pub mod scalar;
#[cfg(test)]
mod tests;

use super::qs8_requant::multiply_scalar;
use super::{Isa, Table};
use crate::error::{Error, Result};

/// The kernels' op codes (their const generic parameter).
const ADD: u8 = 0;
const SUB: u8 = 1;
/// SUB with the scalar first (`vc` only).
const RSUB: u8 = 2;
const MUL: u8 = 3;

/// The op, with TFLite's operand order `f(a, b)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QBinaryOp {
    Add,
    Sub,
    Mul,
}

/// `x -> RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << left, mult), right)`,
/// `left` and `right` in `0..=31` (the left shift wraps).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Rescale {
    pub mult: i32,
    pub left: u32,
    pub right: u32,
}

impl Rescale {
    /// TFLite's `MultiplyByQuantizedMultiplier(x, mult, shift)`: a positive `shift` shifts
    /// left first (wrapping, the count taken mod 32), a negative one rounds right after
    /// (at most 31 bits, as `RoundingDivideByPOT` allows).
    pub fn general(mult: i32, shift: i32) -> Rescale {
        Rescale { mult, left: (shift.max(0) & 31) as u32, right: shift.wrapping_neg().clamp(0, 31) as u32 }
    }

    /// `MultiplyByQuantizedMultiplierSmallerThanOneExp(x << left, mult, shift)`: only the
    /// right shift of a negative `shift` applies (a positive one divides by `2^0`).
    pub fn smaller_than_one(mult: i32, shift: i32, left: i32) -> Rescale {
        Rescale { mult, left: (left & 31) as u32, right: shift.wrapping_neg().clamp(0, 31) as u32 }
    }

    /// The scalar rescaling (the oracle).
    #[inline(always)]
    pub fn apply(self, x: i32) -> i32 {
        multiply_scalar(x, self.mult, self.left as i32, self.right as i32)
    }
}

/// One input's offset (its zero point negated) and, for ADD and SUB, its rescaling to the
/// common scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Input {
    pub offset: i32,
    pub scale: Rescale,
}

impl Input {
    /// `scale(x + offset)`: an ADD or SUB operand on the common scale.
    #[inline(always)]
    pub fn scaled(self, x: i32) -> i32 {
        self.scale.apply(x.wrapping_add(self.offset))
    }
}

/// Everything a kernel needs: see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QBinaryParams {
    pub op: QBinaryOp,
    pub a: Input,
    pub b: Input,
    pub out: Rescale,
    pub output_offset: i32,
    pub min: i32,
    pub max: i32,
}

impl QBinaryParams {
    /// One output value (the scalar oracle).
    #[inline(always)]
    pub fn scalar(&self, x: i32, y: i32) -> i32 {
        let raw = match self.op {
            QBinaryOp::Add => self.a.scaled(x).wrapping_add(self.b.scaled(y)),
            QBinaryOp::Sub => self.a.scaled(x).wrapping_sub(self.b.scaled(y)),
            QBinaryOp::Mul => x.wrapping_add(self.a.offset).wrapping_mul(y.wrapping_add(self.b.offset)),
        };
        self.finish(raw)
    }

    /// The output of a raw sum, difference or product.
    #[inline(always)]
    pub fn finish(&self, raw: i32) -> i32 {
        self.out.apply(raw).wrapping_add(self.output_offset).max(self.min).min(self.max)
    }

    /// The value a `vc` kernel combines `x` with when the other operand is `c`: `c` scaled
    /// (ADD, SUB) or offset (MUL) with `c_input`'s parameters.
    fn c_term(&self, c: i32, c_input: Input) -> i32 {
        match self.op {
            QBinaryOp::Add | QBinaryOp::Sub => c_input.scaled(c),
            QBinaryOp::Mul => c.wrapping_add(c_input.offset),
        }
    }
}

/// `kernel(n, a, b, out, p)`: `out[i] = p.scalar(a[i], b[i])` for `i < n`.
///
/// # Safety
/// `a` and `b` are readable for `n` values, `out` writable for `n` values; `out` may equal
/// `a` or `b` but overlaps neither otherwise; every shift of `p` is in `0..=31` (the SIMD
/// kernels' shifts give other answers past 31); the CPU has the table's instruction set.
pub type VvFn<T> = unsafe fn(usize, *const T, *const T, *mut T, &QBinaryParams);

/// `kernel(n, x, c, out, x_input, p)`: for `i < n`, `out[i] = p.finish(raw)` with `raw`
/// `s + c` (ADD), `s - c` (SUB), `c - s` (reversed SUB, the scalar first) or
/// `(x[i] + x_input.offset) * c` (MUL), where `s = x_input.scaled(x[i])`.
///
/// # Safety
/// As [`VvFn`], without `b`.
pub type VcFn<T> = unsafe fn(usize, *const T, i32, *mut T, &Input, &QBinaryParams);

/// The kernels of one element type.
#[derive(Clone, Copy)]
pub struct Kernels8<T> {
    pub(crate) add_vv: VvFn<T>,
    pub(crate) sub_vv: VvFn<T>,
    pub(crate) mul_vv: VvFn<T>,
    pub(crate) add_vc: VcFn<T>,
    pub(crate) sub_vc: VcFn<T>,
    /// `c - s`: SUB with the scalar first.
    pub(crate) rsub_vc: VcFn<T>,
    pub(crate) mul_vc: VcFn<T>,
}

/// The quantized binary kernels of one instruction set. The drivers check that the CPU
/// has `isa` before calling one.
pub struct QBinaryKernels {
    pub(crate) isa: Isa,
    pub(crate) s8: Kernels8<i8>,
    pub(crate) u8: Kernels8<u8>,
}

/// The element types with kernels: `i8` and `u8`.
pub trait Quant8: Copy + Send + Sync + 'static + private::Sealed {
    /// This type's kernels in `k`.
    fn kernels(k: &QBinaryKernels) -> &Kernels8<Self>;
    /// Widens to `i32`.
    fn widen(self) -> i32;
}

mod private {
    pub trait Sealed {}
    impl Sealed for i8 {}
    impl Sealed for u8 {}
}

impl Quant8 for i8 {
    fn kernels(k: &QBinaryKernels) -> &Kernels8<i8> {
        &k.s8
    }
    fn widen(self) -> i32 {
        i32::from(self)
    }
}

impl Quant8 for u8 {
    fn kernels(k: &QBinaryKernels) -> &Kernels8<u8> {
        &k.u8
    }
    fn widen(self) -> i32 {
        i32::from(self)
    }
}

/// The operand that is not the full-length vector `x`.
#[derive(Clone, Copy, Debug)]
pub enum Other<'a, T> {
    /// As long as `x`.
    Vector(&'a [T]),
    /// One value for every element.
    Scalar(T),
    /// `cols` values, repeated over `x.len() / cols` rows (`x.len()` a multiple of it).
    Row(&'a [T]),
}

fn check<T>(kernels: &QBinaryKernels, p: &QBinaryParams, n: usize, other: &Other<'_, T>) -> Result<()> {
    if !kernels.isa.is_available() {
        return Err(Error::new(format!("quantized binary kernels for {} on a CPU without it", kernels.isa.name())));
    }
    for r in [p.a.scale, p.b.scale, p.out] {
        if r.left > 31 || r.right > 31 {
            return Err(Error::new(format!("rescaling shifts {} and {} out of 0..=31", r.left, r.right)));
        }
    }
    match *other {
        Other::Vector(v) if v.len() != n => Err(Error::new(format!("binary op of {n} values with {} values", v.len()))),
        Other::Row(r) if r.is_empty() || !n.is_multiple_of(r.len()) => {
            Err(Error::new(format!("binary op of {n} values with a row of {} values", r.len())))
        }
        _ => Ok(()),
    }
}

/// Runs the kernels: `x` is the op's first operand unless `x_is_second`.
///
/// # Safety
/// `x` readable and `out` writable for `n` values (`out` may equal `x`); `p` and `other`
/// checked by [`check`] for `n`, `other` not overlapping `out`; the CPU has the kernels'
/// instruction set.
unsafe fn run<T: Quant8>(
    k: &Kernels8<T>,
    p: &QBinaryParams,
    n: usize,
    x: *const T,
    x_is_second: bool,
    other: Other<'_, T>,
    out: *mut T,
) {
    let vv = match p.op {
        QBinaryOp::Add => k.add_vv,
        QBinaryOp::Sub => k.sub_vv,
        QBinaryOp::Mul => k.mul_vv,
    };
    // SAFETY: the caller's contract is each kernel's (lengths per `check`); a row's
    // `n / cols` rows of `cols` values lie within `x`, `out` and the row.
    unsafe {
        match (other, x_is_second) {
            (Other::Vector(v), false) => vv(n, x, v.as_ptr(), out, p),
            (Other::Vector(v), true) => vv(n, v.as_ptr(), x, out, p),
            (Other::Row(r), _) => {
                let cols = r.len();
                for i in (0..n).step_by(cols) {
                    let (xr, or) = (x.add(i), out.add(i));
                    if x_is_second { vv(cols, r.as_ptr(), xr, or, p) } else { vv(cols, xr, r.as_ptr(), or, p) }
                }
            }
            (Other::Scalar(c), second) => {
                let (x_input, c_input) = if second { (&p.b, p.a) } else { (&p.a, p.b) };
                let c = p.c_term(c.widen(), c_input);
                let vc = match (p.op, second) {
                    (QBinaryOp::Add, _) => k.add_vc,
                    (QBinaryOp::Sub, false) => k.sub_vc,
                    (QBinaryOp::Sub, true) => k.rsub_vc,
                    (QBinaryOp::Mul, _) => k.mul_vc,
                };
                vc(n, x, c, out, x_input, p)
            }
        }
    }
}

/// `out = f(x, other)` (or `f(other, x)` when `x_is_second`) with `table`'s kernels.
/// Errors, writing nothing, when a length does not fit.
pub fn apply<T: Quant8>(
    table: &Table,
    p: &QBinaryParams,
    x: &[T],
    x_is_second: bool,
    other: Other<'_, T>,
    out: &mut [T],
) -> Result<()> {
    let kernels = &table.qs8_vbinary;
    if out.len() != x.len() {
        return Err(Error::new(format!("binary op of {} values into {} outputs", x.len(), out.len())));
    }
    check(kernels, p, x.len(), &other)?;
    // SAFETY: lengths checked above; `out` is a unique borrow, so it overlaps no input.
    unsafe { run(T::kernels(kernels), p, x.len(), x.as_ptr(), x_is_second, other, out.as_mut_ptr()) };
    Ok(())
}

/// [`apply`] with the output written over `x`.
pub fn apply_in_place<T: Quant8>(
    table: &Table,
    p: &QBinaryParams,
    x: &mut [T],
    x_is_second: bool,
    other: Other<'_, T>,
) -> Result<()> {
    let kernels = &table.qs8_vbinary;
    check(kernels, p, x.len(), &other)?;
    let ptr = x.as_mut_ptr();
    // SAFETY: lengths checked above; the output is exactly `x`, which the kernels allow,
    // and `other` is a shared borrow, so it does not overlap `x`.
    unsafe { run(T::kernels(kernels), p, x.len(), ptr, x_is_second, other, ptr) };
    Ok(())
}
