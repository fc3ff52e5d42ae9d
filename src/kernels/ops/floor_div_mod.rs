//! FLOOR_DIV and FLOOR_MOD (TFLite `kernels/floor_div.cc`, `kernels/floor_mod.cc`,
//! `reference/floor_div.h`, `reference/floor_mod.h`), with numpy broadcasting.
//!
//! FLOOR_DIV (float32, int32, int16, int8): `floor(double(a) / double(b))` converted back,
//! as TFLite; any zero divisor is an error, float included (TFLite checks every type).
//! FLOOR_MOD (int8, int16, int32, int64, float32): the truncated remainder (`%`, `fmod` in
//! float) moved to the divisor's sign; a zero integer divisor is an error. Integer
//! overflow (`MIN / -1`) wraps or saturates instead of trapping.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::binary::{BinaryOperands, binary_operands, check_output, with_op};
use crate::kernels::broadcast::broadcast_binary;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::op_error;

const DIV: &str = "FLOOR_DIV";
const MOD: &str = "FLOOR_MOD";

/// The FLOOR_DIV registration.
pub fn floor_div_registration() -> TfLiteRegistration {
    kernel::registration::<FloorDivMod<false>>(TfLiteBuiltinOperator::kTfLiteBuiltinFloorDiv)
}

/// The FLOOR_MOD registration.
pub fn floor_mod_registration() -> TfLiteRegistration {
    kernel::registration::<FloorDivMod<true>>(TfLiteBuiltinOperator::kTfLiteBuiltinFloorMod)
}

/// `reference_ops::FloorDiv` for float32.
#[inline]
pub fn floor_div_f32(a: f32, b: f32) -> f32 {
    (f64::from(a) / f64::from(b)).floor() as f32
}

/// `reference_ops::FloorDiv` for integers (through double, saturating on overflow).
#[inline]
pub fn floor_div_int(a: i64, b: i64) -> f64 {
    (a as f64 / b as f64).floor()
}

/// `reference_ops::FloorMod` for integers (`b != 0`).
#[inline]
pub fn floor_mod_i64(a: i64, b: i64) -> i64 {
    let m = a.wrapping_rem(b);
    if m != 0 && ((b < 0) != (m < 0)) { m.wrapping_add(b) } else { m }
}

/// `reference_ops::FloorMod` for float32.
#[inline]
pub fn floor_mod_f32(a: f32, b: f32) -> f32 {
    let m = a % b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) { m + b } else { m }
}

fn operands<'a>(ctx: &OpCtx<'a>, op: &'static str) -> Result<BinaryOperands<'a>> {
    let ops = binary_operands(ctx, op)?;
    use TfLiteType::*;
    let ok = if op == DIV {
        matches!(ops.a.dtype, kTfLiteFloat32 | kTfLiteInt32 | kTfLiteInt16 | kTfLiteInt8)
    } else {
        matches!(ops.a.dtype, kTfLiteFloat32 | kTfLiteInt32 | kTfLiteInt16 | kTfLiteInt8 | kTfLiteInt64)
    };
    if !ok {
        return Err(op_error(op, format!("type {} is not supported", ops.a.dtype.name())));
    }
    Ok(ops)
}

fn prepare(ctx: &OpCtx<'_>, op: &'static str) -> Result<()> {
    let ops = operands(ctx, op)?;
    ctx.set_output_type(0, ops.a.dtype).map_err(with_op(op))?;
    ctx.resize_output(0, &ops.out_shape).map_err(with_op(op))
}

fn eval(ctx: &OpCtx<'_>, op: &'static str) -> Result<()> {
    let mut ops = operands(ctx, op)?;
    check_output(op, &ops, ops.a.dtype)?;
    let osh = core::mem::take(&mut ops.out_shape);
    let (a, b) = (ops.a, ops.b);
    let out = &mut ops.out;
    macro_rules! run {
        ($t:ty, $f:expr) => {{
            let d = b.data::<$t>()?;
            broadcast_binary(a.data::<$t>()?, a.shape, d, b.shape, out.data_mut::<$t>()?, &osh, $f)
        }};
    }
    macro_rules! no_zero {
        ($t:ty, $zero:expr) => {
            if b.data::<$t>()?.iter().any(|&v| v == $zero) {
                return Err(op_error(op, "division by 0"));
            }
        };
    }
    use TfLiteType::*;
    let r = if op == DIV {
        match a.dtype {
            kTfLiteFloat32 => {
                no_zero!(f32, 0.0);
                run!(f32, floor_div_f32)
            }
            kTfLiteInt32 => {
                no_zero!(i32, 0);
                run!(i32, |x: i32, y: i32| floor_div_int(x as i64, y as i64) as i32)
            }
            kTfLiteInt16 => {
                no_zero!(i16, 0);
                run!(i16, |x: i16, y: i16| floor_div_int(x as i64, y as i64) as i16)
            }
            _ => {
                no_zero!(i8, 0);
                run!(i8, |x: i8, y: i8| floor_div_int(x as i64, y as i64) as i8)
            }
        }
    } else {
        match a.dtype {
            kTfLiteFloat32 => run!(f32, floor_mod_f32),
            kTfLiteInt32 => {
                no_zero!(i32, 0);
                run!(i32, |x: i32, y: i32| {
                    let m = x.wrapping_rem(y);
                    if m != 0 && ((y < 0) != (m < 0)) { m.wrapping_add(y) } else { m }
                })
            }
            kTfLiteInt16 => {
                no_zero!(i16, 0);
                run!(i16, |x: i16, y: i16| floor_mod_i64(x as i64, y as i64) as i16)
            }
            kTfLiteInt8 => {
                no_zero!(i8, 0);
                run!(i8, |x: i8, y: i8| floor_mod_i64(x as i64, y as i64) as i8)
            }
            _ => {
                no_zero!(i64, 0);
                run!(i64, floor_mod_i64)
            }
        }
    };
    r.map_err(with_op(op))
}

/// FLOOR_DIV (`IS_MOD` false) or FLOOR_MOD (`IS_MOD` true); its State is empty (the
/// kernel depends on nothing but the operands' types).
struct FloorDivMod<const IS_MOD: bool>;

impl<const IS_MOD: bool> BuiltinKernel for FloorDivMod<IS_MOD> {
    const NAME: &'static str = if IS_MOD { MOD } else { DIV };
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        prepare(ctx, Self::NAME)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        eval(ctx, Self::NAME)
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
        assert_eq!(floor_div_int(10, -3) as i32, -4);
        assert_eq!(floor_div_int(-10, 3) as i32, -4);
        assert_eq!(floor_div_int(9, 3) as i32, 3);
        assert_eq!(floor_div_f32(7.5, -2.0), -4.0);
        assert_eq!(floor_mod_i64(10, -3), -2);
        assert_eq!(floor_mod_i64(-10, 3), 2);
        assert_eq!(floor_mod_i64(9, 3), 0);
        assert_eq!(floor_mod_i64(i64::MIN, -1), 0);
        assert_eq!(floor_mod_f32(7.5, -2.0), -0.5);
        assert_eq!(floor_mod_f32(-7.5, 2.0), 0.5);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteInt32, &[4], &[10i32, -10, 7, -7], None, false);
        let b = g.tensor(kTfLiteInt32, &[1], &[3i32], None, false);
        let o = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&floor_div_registration(), &[a, b], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(o), vec![3, -4, 2, -3]);
        let o2 = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&floor_mod_registration(), &[a, b], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(o2), vec![1, 2, 1, 2]);
        let z = g.tensor(kTfLiteInt32, &[1], &[0i32], None, false);
        let o3 = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&floor_mod_registration(), &[a, z], &[o3], None), TfLiteStatus::kTfLiteError);
        let f = g.tensor(kTfLiteFloat32, &[1], &[0f32], None, false);
        let fa = g.tensor(kTfLiteFloat32, &[1], &[1f32], None, false);
        let o4 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&floor_div_registration(), &[fa, f], &[o4], None), TfLiteStatus::kTfLiteError);
    }
}
