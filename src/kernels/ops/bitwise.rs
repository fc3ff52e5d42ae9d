//! BITWISE_XOR and RIGHT_SHIFT (TFLite `kernels/bitwise_xor.cc`, `kernels/right_shift.cc`),
//! with numpy broadcasting.
//!
//! Both take two inputs of one type (int8, uint8, int16, uint16, int32 or uint32) and give
//! that type. RIGHT_SHIFT clamps the shift amount into `[0, bits - 1]` (TFLite's guard
//! against undefined shifts) and shifts signed values arithmetically.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::binary::{BinaryOperands, binary_operands, check_output, with_op};
use crate::kernels::broadcast::broadcast_binary;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::op_error;

const XOR: &str = "BITWISE_XOR";
const SHIFT: &str = "RIGHT_SHIFT";

/// The BITWISE_XOR registration.
pub fn bitwise_xor_registration() -> TfLiteRegistration {
    kernel::registration::<Bitwise<false>>(TfLiteBuiltinOperator::kTfLiteBuiltinBitwiseXor)
}

/// The RIGHT_SHIFT registration.
pub fn right_shift_registration() -> TfLiteRegistration {
    kernel::registration::<Bitwise<true>>(TfLiteBuiltinOperator::kTfLiteBuiltinRightShift)
}

/// An integer element of BITWISE_XOR and RIGHT_SHIFT.
pub trait BitInt: Copy {
    fn xor(self, other: Self) -> Self;
    /// `self >> y`, `y` clamped into `[0, bits - 1]`.
    fn shr_clamped(self, y: Self) -> Self;
}

macro_rules! bit_int {
    ($($t:ty),*) => {$(
        impl BitInt for $t {
            #[inline]
            fn xor(self, other: $t) -> $t {
                self ^ other
            }
            #[inline]
            fn shr_clamped(self, y: $t) -> $t {
                self >> (y as i64).clamp(0, i64::from(<$t>::BITS - 1)) as u32
            }
        }
    )*};
}
bit_int!(i8, u8, i16, u16, i32, u32);

fn operands<'a>(ctx: &OpCtx<'a>, op: &'static str) -> Result<BinaryOperands<'a>> {
    let ops = binary_operands(ctx, op)?;
    use TfLiteType::*;
    if !matches!(ops.a.dtype, kTfLiteInt8 | kTfLiteUInt8 | kTfLiteInt16 | kTfLiteUInt16 | kTfLiteInt32 | kTfLiteUInt32)
    {
        return Err(op_error(op, format!("type {} is not supported", ops.a.dtype.name())));
    }
    Ok(ops)
}

fn run<T: BitInt + crate::kernels::api::Element>(ops: &mut BinaryOperands<'_>, shift: bool) -> Result<()> {
    let (a, b) = (ops.a.data::<T>()?, ops.b.data::<T>()?);
    let out = ops.out.data_mut::<T>()?;
    if shift {
        broadcast_binary(a, ops.a.shape, b, ops.b.shape, out, &ops.out_shape, T::shr_clamped)
    } else {
        broadcast_binary(a, ops.a.shape, b, ops.b.shape, out, &ops.out_shape, T::xor)
    }
}

/// BITWISE_XOR (`SHIFT = false`) or RIGHT_SHIFT; stateless.
struct Bitwise<const SHIFT: bool>;

impl<const S: bool> BuiltinKernel for Bitwise<S> {
    const NAME: &'static str = if S { SHIFT } else { XOR };
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        let ops = operands(ctx, Self::NAME)?;
        ctx.set_output_type(0, ops.a.dtype).map_err(with_op(Self::NAME))?;
        ctx.resize_output(0, &ops.out_shape).map_err(with_op(Self::NAME))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let mut ops = operands(ctx, Self::NAME)?;
        check_output(Self::NAME, &ops, ops.a.dtype)?;
        use TfLiteType::*;
        match ops.a.dtype {
            kTfLiteInt8 => run::<i8>(&mut ops, S),
            kTfLiteUInt8 => run::<u8>(&mut ops, S),
            kTfLiteInt16 => run::<i16>(&mut ops, S),
            kTfLiteUInt16 => run::<u16>(&mut ops, S),
            kTfLiteInt32 => run::<i32>(&mut ops, S),
            kTfLiteUInt32 => run::<u32>(&mut ops, S),
            other => Err(op_error(Self::NAME, format!("type {} is not supported", other.name()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn scalar_semantics() {
        assert_eq!((-8i8).shr_clamped(1), -4);
        assert_eq!((-8i8).shr_clamped(-3), -8);
        assert_eq!((-8i8).shr_clamped(100), -1);
        assert_eq!(0x80u8.shr_clamped(200), 1);
        assert_eq!(u32::MAX.shr_clamped(31), 1);
        assert_eq!(0b1100u16.xor(0b1010), 0b0110);
        assert_eq!((-1i32).xor(5), -6);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteInt16, &[2, 2], &[1i16, 2, -16, 7], None, false);
        let b = g.tensor(kTfLiteInt16, &[2], &[1i16, 40], None, false);
        let o = g.output(kTfLiteInt16, None);
        assert_eq!(g.run::<()>(&right_shift_registration(), &[a, b], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i16>(o), vec![0, 0, -8, 0]);
        let o2 = g.output(kTfLiteInt16, None);
        assert_eq!(g.run::<()>(&bitwise_xor_registration(), &[a, b], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i16>(o2), vec![0, 42, -15, 47]);
        let f = g.tensor(kTfLiteFloat32, &[1], &[1f32], None, false);
        let o3 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&bitwise_xor_registration(), &[f, f], &[o3], None), TfLiteStatus::kTfLiteError);
    }
}
