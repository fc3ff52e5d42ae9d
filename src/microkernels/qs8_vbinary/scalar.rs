//! Portable quantized binary kernels: the twins of the SIMD ones (the oracle's formulas,
//! one value at a time).

use super::{ADD, Input, Kernels8, MUL, QBinaryKernels, QBinaryParams, Quant8, RSUB, SUB};
use crate::microkernels::Isa;

/// Narrows a clamped value as a C cast does (two's-complement truncation).
trait Narrow: Quant8 {
    fn narrow(v: i32) -> Self;
}

impl Narrow for i8 {
    #[inline(always)]
    fn narrow(v: i32) -> i8 {
        v as i8
    }
}

impl Narrow for u8 {
    #[inline(always)]
    fn narrow(v: i32) -> u8 {
        v as u8
    }
}

/// `vv` for the op `OP`.
///
/// # Safety
/// See [`super::VvFn`].
unsafe fn vv<T: Narrow, const OP: u8>(n: usize, a: *const T, b: *const T, o: *mut T, p: &QBinaryParams) {
    let p = *p;
    for i in 0..n {
        // SAFETY: `i < n`, within every buffer; each value is read before its slot is
        // written, so `o` may be `a` or `b`.
        let (x, y) = unsafe { ((*a.add(i)).widen(), (*b.add(i)).widen()) };
        let raw = match OP {
            ADD => p.a.scaled(x).wrapping_add(p.b.scaled(y)),
            SUB => p.a.scaled(x).wrapping_sub(p.b.scaled(y)),
            _ => x.wrapping_add(p.a.offset).wrapping_mul(y.wrapping_add(p.b.offset)),
        };
        // SAFETY: as above.
        unsafe { *o.add(i) = T::narrow(p.finish(raw)) };
    }
}

/// `vc` for the op `OP`.
///
/// # Safety
/// See [`super::VcFn`].
unsafe fn vc<T: Narrow, const OP: u8>(n: usize, x: *const T, c: i32, o: *mut T, xi: &Input, p: &QBinaryParams) {
    let (xi, p) = (*xi, *p);
    for i in 0..n {
        // SAFETY: as in `vv`.
        let v = unsafe { *x.add(i) }.widen();
        let raw = match OP {
            ADD => xi.scaled(v).wrapping_add(c),
            SUB => xi.scaled(v).wrapping_sub(c),
            RSUB => c.wrapping_sub(xi.scaled(v)),
            _ => v.wrapping_add(xi.offset).wrapping_mul(c),
        };
        // SAFETY: as in `vv`.
        unsafe { *o.add(i) = T::narrow(p.finish(raw)) };
    }
}

const fn kernels<T: Narrow>() -> Kernels8<T> {
    Kernels8 {
        add_vv: vv::<T, ADD>,
        sub_vv: vv::<T, SUB>,
        mul_vv: vv::<T, MUL>,
        add_vc: vc::<T, ADD>,
        sub_vc: vc::<T, SUB>,
        rsub_vc: vc::<T, RSUB>,
        mul_vc: vc::<T, MUL>,
    }
}

/// The scalar table's kernels.
pub(crate) const KERNELS: QBinaryKernels =
    QBinaryKernels { isa: Isa::Scalar, s8: kernels::<i8>(), u8: kernels::<u8>() };
