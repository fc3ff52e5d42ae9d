//! STABLEHLO_ADD, STABLEHLO_MULTIPLY, STABLEHLO_MAXIMUM, STABLEHLO_MINIMUM, STABLEHLO_AND
//! (TFLite `kernels/stablehlo_elementwise.{h,cc}` and the files registering each) and
//! STABLEHLO_SHIFT_LEFT (`stablehlo_shift_left.cc`): two operands of one type and one
//! shape, no broadcasting, no quantization.
//!
//! As TFLite computes them: integers wrap (C++ promotes the narrow types to `int` and
//! truncates back), float16 goes through float32 and rounds back (Eigen's `half`),
//! MAXIMUM is `a < b ? b : a` and MINIMUM `b < a ? b : a` (`std::max`/`std::min`, so a
//! NaN in the first operand wins and one in the second loses), and booleans behave as
//! C++ `bool` (ADD and MAXIMUM are OR, MULTIPLY, MINIMUM and AND are AND). AND takes
//! integers and booleans only. SHIFT_LEFT takes int8, int16 and int32; a shift amount
//! outside `0..32` (undefined behaviour in TFLite's C++, whose result varies with
//! vectorisation) gives 0, as StableHLO specifies.

use crate::abi::builtin_ops::TfLiteBuiltinOperator as Op;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{Element, OpCtx};
use crate::kernels::float_conv::{f16_to_f32, f32_to_f16};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

/// The computation of one elementwise op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Add,
    Mul,
    Max,
    Min,
    And,
    ShiftLeft,
}

impl Kind {
    const fn name(self) -> &'static str {
        match self {
            Kind::Add => "STABLEHLO_ADD",
            Kind::Mul => "STABLEHLO_MULTIPLY",
            Kind::Max => "STABLEHLO_MAXIMUM",
            Kind::Min => "STABLEHLO_MINIMUM",
            Kind::And => "STABLEHLO_AND",
            Kind::ShiftLeft => "STABLEHLO_SHIFT_LEFT",
        }
    }
}

/// An element type with TFLite's semantics for each computation; `None` where TFLite
/// refuses the type for it.
pub trait Arith: Element {
    fn apply(kind: Kind) -> Option<fn(Self, Self) -> Self>;
}

macro_rules! int_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn apply(kind: Kind) -> Option<fn($t, $t) -> $t> {
                Some(match kind {
                    Kind::Add => |a: $t, b: $t| a.wrapping_add(b),
                    Kind::Mul => |a: $t, b: $t| a.wrapping_mul(b),
                    Kind::Max => |a: $t, b: $t| a.max(b),
                    Kind::Min => |a: $t, b: $t| a.min(b),
                    Kind::And => |a: $t, b: $t| a & b,
                    Kind::ShiftLeft => return None,
                })
            }
        }
    )*};
}
int_arith!(i64, u8, u16, u32, u64);

/// The signed types SHIFT_LEFT takes: the value is shifted as a 32-bit `int` (C++'s
/// promotion) and truncated back.
macro_rules! signed_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn apply(kind: Kind) -> Option<fn($t, $t) -> $t> {
                Some(match kind {
                    Kind::Add => |a: $t, b: $t| a.wrapping_add(b),
                    Kind::Mul => |a: $t, b: $t| a.wrapping_mul(b),
                    Kind::Max => |a: $t, b: $t| a.max(b),
                    Kind::Min => |a: $t, b: $t| a.min(b),
                    Kind::And => |a: $t, b: $t| a & b,
                    Kind::ShiftLeft => |a: $t, b: $t| match u32::try_from(b) {
                        Ok(s) if s < 32 => (i32::from(a) << s) as $t,
                        _ => 0,
                    },
                })
            }
        }
    )*};
}
signed_arith!(i8, i16, i32);

macro_rules! float_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            fn apply(kind: Kind) -> Option<fn($t, $t) -> $t> {
                Some(match kind {
                    Kind::Add => |a: $t, b: $t| a + b,
                    Kind::Mul => |a: $t, b: $t| a * b,
                    Kind::Max => |a: $t, b: $t| if a < b { b } else { a },
                    Kind::Min => |a: $t, b: $t| if b < a { b } else { a },
                    Kind::And | Kind::ShiftLeft => return None,
                })
            }
        }
    )*};
}
float_arith!(f32, f64);

/// `fn(a, b)` of `kind` on IEEE half values (bits), computed in float32 as Eigen does.
fn f16_apply(kind: Kind) -> Option<fn(u16, u16) -> u16> {
    Some(match kind {
        Kind::Add => |a, b| f32_to_f16(f16_to_f32(a) + f16_to_f32(b)),
        Kind::Mul => |a, b| f32_to_f16(f16_to_f32(a) * f16_to_f32(b)),
        Kind::Max => |a, b| if f16_to_f32(a) < f16_to_f32(b) { b } else { a },
        Kind::Min => |a, b| if f16_to_f32(b) < f16_to_f32(a) { b } else { a },
        Kind::And | Kind::ShiftLeft => return None,
    })
}

/// `fn(a, b)` of `kind` on C++ `bool`s (bytes, any non-zero byte true).
fn bool_apply(kind: Kind) -> Option<fn(u8, u8) -> u8> {
    Some(match kind {
        Kind::Add | Kind::Max => |a, b| u8::from(a != 0 || b != 0),
        Kind::Mul | Kind::Min | Kind::And => |a, b| u8::from(a != 0 && b != 0),
        Kind::ShiftLeft => return None,
    })
}

/// `out[i] = f(a[i], b[i])`.
pub fn zip_with<T: Copy>(a: &[T], b: &[T], out: &mut [T], f: fn(T, T) -> T) -> Result<()> {
    if a.len() != out.len() || b.len() != out.len() {
        crate::bail!("operands hold {} and {} elements, the output {}", a.len(), b.len(), out.len());
    }
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = f(x, y);
    }
    Ok(())
}

/// Runs `kind` on the node's operands of Rust type `T`, with `f` its function.
fn run_typed<T: Element>(ctx: &OpCtx<'_>, f: Option<fn(T, T) -> T>, dtype: TfLiteType, kind: Kind) -> Result<()> {
    let f = f.ok_or_else(|| unsupported(kind, dtype))?;
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    let mut out = ctx.output(0)?;
    zip_with(a.data::<T>()?, b.data::<T>()?, out.data_mut::<T>()?, f)
}

fn unsupported(kind: Kind, dtype: TfLiteType) -> Error {
    op_error(kind.name(), format!("type {} is not supported", dtype.name()))
}

/// Checks `kind` supports `dtype` (Prepare-time, so a bad model fails early).
fn supports(kind: Kind, dtype: TfLiteType) -> bool {
    use TfLiteType::*;
    match dtype {
        kTfLiteFloat16 => f16_apply(kind).is_some(),
        kTfLiteBool => bool_apply(kind).is_some(),
        kTfLiteFloat32 => f32::apply(kind).is_some(),
        kTfLiteFloat64 => f64::apply(kind).is_some(),
        kTfLiteInt8 => i8::apply(kind).is_some(),
        kTfLiteInt16 => i16::apply(kind).is_some(),
        kTfLiteInt32 => i32::apply(kind).is_some(),
        kTfLiteInt64 => i64::apply(kind).is_some(),
        kTfLiteUInt8 => u8::apply(kind).is_some(),
        kTfLiteUInt16 => u16::apply(kind).is_some(),
        kTfLiteUInt32 => u32::apply(kind).is_some(),
        kTfLiteUInt64 => u64::apply(kind).is_some(),
        _ => false,
    }
}

fn prepare(ctx: &OpCtx<'_>, kind: Kind) -> Result<()> {
    let op = kind.name();
    check_arity(ctx, op, 2, 2, 1)?;
    let a = ctx.input(0).map_err(|e| op_error(op, e.message))?;
    let b = ctx.input(1).map_err(|e| op_error(op, e.message))?;
    let out = ctx.output(0).map_err(|e| op_error(op, e.message))?;
    if a.dtype != b.dtype {
        return Err(op_error(op, format!("operand types {} and {} differ", a.dtype.name(), b.dtype.name())));
    }
    if a.shape != b.shape {
        return Err(op_error(op, format!("operand shapes {:?} and {:?} differ", a.shape, b.shape)));
    }
    if out.dtype != a.dtype {
        return Err(op_error(
            op,
            format!("output type {} differs from the operands' {}", out.dtype.name(), a.dtype.name()),
        ));
    }
    if !supports(kind, a.dtype) {
        return Err(unsupported(kind, a.dtype));
    }
    ctx.resize_output(0, a.shape).map_err(|e| op_error(op, e.message))
}

fn invoke(ctx: &OpCtx<'_>, kind: Kind) -> Result<()> {
    use TfLiteType::*;
    let dtype = ctx.input(0)?.dtype;
    match dtype {
        kTfLiteFloat16 => run_typed::<u16>(ctx, f16_apply(kind), dtype, kind),
        kTfLiteBool => run_typed::<u8>(ctx, bool_apply(kind), dtype, kind),
        kTfLiteFloat32 => run_typed(ctx, f32::apply(kind), dtype, kind),
        kTfLiteFloat64 => run_typed(ctx, f64::apply(kind), dtype, kind),
        kTfLiteInt8 => run_typed(ctx, i8::apply(kind), dtype, kind),
        kTfLiteInt16 => run_typed(ctx, i16::apply(kind), dtype, kind),
        kTfLiteInt32 => run_typed(ctx, i32::apply(kind), dtype, kind),
        kTfLiteInt64 => run_typed(ctx, i64::apply(kind), dtype, kind),
        kTfLiteUInt8 => run_typed(ctx, u8::apply(kind), dtype, kind),
        kTfLiteUInt16 => run_typed(ctx, u16::apply(kind), dtype, kind),
        kTfLiteUInt32 => run_typed(ctx, u32::apply(kind), dtype, kind),
        kTfLiteUInt64 => run_typed(ctx, u64::apply(kind), dtype, kind),
        _ => Err(unsupported(kind, dtype)),
    }
    .map_err(in_op(kind.name()))
}

macro_rules! elementwise_kernel {
    ($($kernel:ident, $kind:ident, $code:ident, $reg:ident);* $(;)?) => {$(
        #[doc = concat!("The ", stringify!($kind), " kernel.")]
        struct $kernel;

        impl BuiltinKernel for $kernel {
            const NAME: &'static str = Kind::$kind.name();
            type Params = ();
            type State = ();

            fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
                prepare(ctx, Kind::$kind)
            }

            fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
                invoke(ctx, Kind::$kind)
            }
        }

        #[doc = concat!("The registration of `", stringify!($code), "`.")]
        pub fn $reg() -> TfLiteRegistration {
            kernel::registration::<$kernel>(Op::$code)
        }
    )*};
}

elementwise_kernel!(
    AddKernel, Add, kTfLiteBuiltinStablehloAdd, add_registration;
    MulKernel, Mul, kTfLiteBuiltinStablehloMultiply, multiply_registration;
    MaxKernel, Max, kTfLiteBuiltinStablehloMaximum, maximum_registration;
    MinKernel, Min, kTfLiteBuiltinStablehloMinimum, minimum_registration;
    AndKernel, And, kTfLiteBuiltinStablehloAnd, and_registration;
    ShiftLeftKernel, ShiftLeft, kTfLiteBuiltinStablehloShiftLeft, shift_left_registration;
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    fn run<T: Arith>(kind: Kind, a: &[T], b: &[T]) -> Vec<T> {
        let mut out = a.to_vec();
        zip_with(a, b, &mut out, T::apply(kind).unwrap()).unwrap();
        out
    }

    #[test]
    fn integers_wrap() {
        assert_eq!(run(Kind::Add, &[127i8, -128], &[1, -1]), [-128, 127]);
        assert_eq!(run(Kind::Mul, &[16i8, 200u8 as i8], &[16, 2]), [0, -112]);
        assert_eq!(run(Kind::Add, &[u64::MAX], &[2]), [1]);
        assert_eq!(run(Kind::Mul, &[65535u16], &[65535]), [1]);
        assert_eq!(run(Kind::And, &[0b1100u32], &[0b1010]), [0b1000]);
        assert_eq!(run(Kind::Max, &[-3i64, 5], &[2, -9]), [2, 5]);
        assert_eq!(run(Kind::Min, &[-3i16, 5], &[2, -9]), [-3, -9]);
    }

    #[test]
    fn shift_left_as_promoted_int() {
        assert_eq!(run(Kind::ShiftLeft, &[3i32, 3, 3, -1], &[1, 31, 0, 4]), [6, i32::MIN, 3, -16]);
        // int8 shifts as int and truncates: bits shifted past 8 are lost.
        assert_eq!(run(Kind::ShiftLeft, &[3i8, 3, 3], &[6, 7, 9]), [-64, -128, 0]);
        // Out-of-range amounts give 0.
        assert_eq!(run(Kind::ShiftLeft, &[3i32, 3, 3], &[32, -1, 100]), [0, 0, 0]);
        assert!(u8::apply(Kind::ShiftLeft).is_none() && f32::apply(Kind::ShiftLeft).is_none());
    }

    #[test]
    fn float_max_min_follow_std() {
        let nan = f32::NAN;
        let mx = run(Kind::Max, &[nan, 1.0, -0.0], &[1.0, nan, 0.0]);
        // Equal operands keep the first: max(-0, +0) is -0.
        assert!(mx[0].is_nan() && mx[1] == 1.0 && mx[2].to_bits() == (-0.0f32).to_bits());
        let mn = run(Kind::Min, &[nan, 1.0, 0.0], &[1.0, nan, -0.0]);
        assert!(mn[0].is_nan() && mn[1] == 1.0 && mn[2].to_bits() == 0.0f32.to_bits());
        assert!(f64::apply(Kind::And).is_none());
    }

    #[test]
    fn half_and_bool() {
        let h = |x: f32| f32_to_f16(x);
        let f = f16_apply(Kind::Add).unwrap();
        assert_eq!(f(h(1.0), h(2.5)), h(3.5));
        // 2048 + 1 is not representable in half: rounds to even.
        assert_eq!(f(h(2048.0), h(1.0)), h(2048.0));
        assert!(f16_apply(Kind::And).is_none());
        let or = bool_apply(Kind::Add).unwrap();
        let and = bool_apply(Kind::Mul).unwrap();
        assert_eq!([or(1, 1), or(0, 1), or(0, 0)], [1, 1, 0]);
        assert_eq!([and(1, 1), and(0, 1), and(2, 1)], [1, 0, 1]);
    }

    #[test]
    fn glue_checks_types_and_shapes() {
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteInt32, &[2, 2], &[1i32, 2, 3, 4], None, false);
        let b = g.tensor(kTfLiteInt32, &[2, 2], &[5i32, 6, 7, 8], None, false);
        let o = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&add_registration(), &[a, b], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(o), vec![6, 8, 10, 12]);
        assert_eq!(g.shape(o), vec![2, 2]);
        let c = g.tensor(kTfLiteInt32, &[4], &[5i32, 6, 7, 8], None, false);
        let o2 = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&add_registration(), &[a, c], &[o2], None), TfLiteStatus::kTfLiteError);
        let f = g.tensor(kTfLiteFloat32, &[1], &[1.0f32], None, false);
        let o3 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&and_registration(), &[f, f], &[o3], None), TfLiteStatus::kTfLiteError);
        assert_eq!(g.run::<()>(&shift_left_registration(), &[f, f], &[o3], None), TfLiteStatus::kTfLiteError);
        let e = g.tensor(kTfLiteInt8, &[0], &[] as &[i8], None, false);
        let o4 = g.output(kTfLiteInt8, None);
        assert_eq!(g.run::<()>(&maximum_registration(), &[e, e], &[o4], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o4), vec![0]);
    }
}
