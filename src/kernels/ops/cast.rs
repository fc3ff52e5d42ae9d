//! CAST (TFLite `kernels/cast.cc`): elementwise type conversion between bool, int8,
//! uint8, int16, uint16, int32, uint32, int64, float16, bfloat16, float32 and float64
//! (the output's type comes from the model).
//!
//! Conversions follow TFLite's: integer narrowing wraps (C++ `static_cast`); floating
//! point to integer truncates toward zero and saturates to the target's range, NaN giving
//! the maximum (what TFLite's float32 to int32 path does by construction, and what the
//! reference LiteRT build produces for every integer target, checked against it); to bool
//! is `x != 0`; to float16 / bfloat16 goes through `f32` with round-to-nearest-even.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::float_conv::{bf16_to_f32, f16_to_f32, f32_to_bf16, f32_to_f16};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, check_out_shape, in_op, op_error};

const OP: &str = "CAST";

/// The CAST registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Cast>(TfLiteBuiltinOperator::kTfLiteBuiltinCast)
}

/// One source element, as the C++ code sees it before the cast.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// Any integer or bool source (exact).
    Int(i64),
    /// A float32 source (`true`), or a float16/bfloat16 source widened to float (`false`):
    /// the two take different C++ overloads for some integer targets.
    F32(f32, bool),
    /// A float64 source.
    F64(f64),
}

impl Value {
    /// Saturating conversion to an integer range (truncation toward zero, NaN to `max`).
    fn saturate(self, min: i64, max: i64) -> i64 {
        let f = match self {
            Value::Int(i) => return i,
            Value::F32(f, _) => f64::from(f),
            Value::F64(d) => d,
        };
        if f.is_nan() {
            max
        } else if f <= min as f64 {
            min
        } else if f >= max as f64 {
            max
        } else {
            f as i64
        }
    }
    fn to_i64(self) -> i64 {
        self.saturate(i64::MIN, i64::MAX)
    }
    fn to_int<T: TryFrom<i64> + Copy>(self, min: T, max: T) -> T
    where
        i64: From<T>,
    {
        // Integer sources take `int_cast!`'s wrapping path; this is the floating point one.
        T::try_from(self.saturate(i64::from(min), i64::from(max))).unwrap_or(max)
    }
    fn to_f32(self) -> f32 {
        match self {
            Value::Int(i) => i as f32,
            Value::F32(f, _) => f,
            Value::F64(d) => d as f32,
        }
    }
    fn to_f64(self) -> f64 {
        match self {
            Value::Int(i) => i as f64,
            Value::F32(f, _) => f64::from(f),
            Value::F64(d) => d,
        }
    }
    fn to_bool(self) -> bool {
        match self {
            Value::Int(i) => i != 0,
            Value::F32(f, _) => f != 0.0,
            Value::F64(d) => d != 0.0,
        }
    }
}

/// `static_cast` to a narrower integer: integers wrap, floating point saturates.
macro_rules! int_cast {
    ($v:expr, $t:ty) => {
        match $v {
            Value::Int(i) => i as $t,
            v => v.to_int::<$t>(<$t>::MIN, <$t>::MAX),
        }
    };
}

/// The source elements of `input`.
pub fn source_values(input: &TensorView<'_>) -> Result<Vec<Value>> {
    use TfLiteType::*;
    let ints = |v: &mut dyn Iterator<Item = i64>| v.map(Value::Int).collect::<Vec<_>>();
    Ok(match input.dtype {
        kTfLiteInt64 => ints(&mut input.data::<i64>()?.iter().copied()),
        kTfLiteInt32 => ints(&mut input.data::<i32>()?.iter().map(|&v| i64::from(v))),
        kTfLiteUInt32 => ints(&mut input.data::<u32>()?.iter().map(|&v| i64::from(v))),
        kTfLiteUInt16 => ints(&mut input.data::<u16>()?.iter().map(|&v| i64::from(v))),
        kTfLiteInt16 => ints(&mut input.data::<i16>()?.iter().map(|&v| i64::from(v))),
        kTfLiteUInt8 => ints(&mut input.data::<u8>()?.iter().map(|&v| i64::from(v))),
        kTfLiteInt8 => ints(&mut input.data::<i8>()?.iter().map(|&v| i64::from(v))),
        kTfLiteBool => ints(&mut input.data::<u8>()?.iter().map(|&v| i64::from(v != 0))),
        kTfLiteFloat16 => input.data::<u16>()?.iter().map(|&h| Value::F32(f16_to_f32(h), false)).collect(),
        kTfLiteBFloat16 => input.data::<u16>()?.iter().map(|&h| Value::F32(bf16_to_f32(h), false)).collect(),
        kTfLiteFloat32 => input.data::<f32>()?.iter().map(|&f| Value::F32(f, true)).collect(),
        kTfLiteFloat64 => input.data::<f64>()?.iter().map(|&d| Value::F64(d)).collect(),
        other => return Err(Error::new(format!("input type {} is not supported", other.name()))),
    })
}

fn supported_output(t: TfLiteType) -> bool {
    use TfLiteType::*;
    matches!(
        t,
        kTfLiteInt64
            | kTfLiteInt32
            | kTfLiteUInt32
            | kTfLiteInt16
            | kTfLiteUInt16
            | kTfLiteUInt8
            | kTfLiteInt8
            | kTfLiteFloat16
            | kTfLiteBFloat16
            | kTfLiteFloat32
            | kTfLiteFloat64
            | kTfLiteBool
    )
}

fn supported_input(t: TfLiteType) -> bool {
    supported_output(t) && t != TfLiteType::kTfLiteNoType
}

fn write<T: crate::kernels::api::Element>(out: &mut [T], src: &[Value], f: impl Fn(Value) -> T) -> Result<()> {
    if out.len() != src.len() {
        crate::bail!("input holds {} elements, output {}", src.len(), out.len());
    }
    for (o, &v) in out.iter_mut().zip(src) {
        *o = f(v);
    }
    Ok(())
}

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<TensorView<'a>> {
    check_arity(ctx, OP, 1, 1, 1)?;
    let input = ctx.input(0).map_err(in_op(OP))?;
    let out = ctx.output(0).map_err(in_op(OP))?;
    if !supported_input(input.dtype) {
        return Err(op_error(OP, format!("input type {} is not supported", input.dtype.name())));
    }
    if !supported_output(out.dtype) {
        return Err(op_error(OP, format!("output type {} is not supported", out.dtype.name())));
    }
    Ok(input)
}

/// CAST; its State is empty (the conversion depends only on the two tensor types).
struct Cast;

impl BuiltinKernel for Cast {
    const NAME: &'static str = OP;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        let input = operands(ctx)?;
        ctx.resize_output(0, input.shape).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let input = operands(ctx)?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        check_out_shape(OP, out.shape, input.shape)?;
        let src = source_values(&input).map_err(in_op(OP))?;
        use TfLiteType::*;
        match out.dtype {
            kTfLiteInt64 => write(out.data_mut::<i64>()?, &src, Value::to_i64),
            kTfLiteInt32 => write(out.data_mut::<i32>()?, &src, |v| int_cast!(v, i32)),
            kTfLiteUInt32 => write(out.data_mut::<u32>()?, &src, |v| int_cast!(v, u32)),
            kTfLiteInt16 => write(out.data_mut::<i16>()?, &src, |v| int_cast!(v, i16)),
            kTfLiteUInt16 => write(out.data_mut::<u16>()?, &src, |v| int_cast!(v, u16)),
            kTfLiteUInt8 => write(out.data_mut::<u8>()?, &src, |v| int_cast!(v, u8)),
            kTfLiteInt8 => write(out.data_mut::<i8>()?, &src, |v| int_cast!(v, i8)),
            kTfLiteFloat16 => write(out.data_mut::<u16>()?, &src, |v| f32_to_f16(v.to_f32())),
            kTfLiteBFloat16 => write(out.data_mut::<u16>()?, &src, |v| f32_to_bf16(v.to_f32())),
            kTfLiteFloat32 => write(out.data_mut::<f32>()?, &src, Value::to_f32),
            kTfLiteFloat64 => write(out.data_mut::<f64>()?, &src, Value::to_f64),
            kTfLiteBool => write(out.data_mut::<u8>()?, &src, |v| u8::from(v.to_bool())),
            other => Err(Error::new(format!("output type {} is not supported", other.name()))),
        }
        .map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn conversions() {
        let f = |x: f32| Value::F32(x, true);
        assert_eq!(int_cast!(f(-2.7), i32), -2);
        assert_eq!(int_cast!(f(3e9), i32), i32::MAX);
        assert_eq!(int_cast!(f(-3e9), i32), i32::MIN);
        assert_eq!(int_cast!(f(f32::NAN), i32), i32::MAX);
        assert_eq!(int_cast!(f(300.0), u8), 255);
        assert_eq!(int_cast!(f(-3.0), u8), 0);
        assert_eq!(int_cast!(f(f32::NAN), u8), 255);
        assert_eq!(int_cast!(f(40000.0), i16), 32767);
        assert_eq!(int_cast!(f(200.0), i8), 127);
        assert_eq!(int_cast!(f(-128.9), i8), -128);
        assert_eq!(f(1e19).to_i64(), i64::MAX);
        assert_eq!(f(f32::INFINITY).to_i64(), i64::MAX);
        assert_eq!(int_cast!(Value::Int(300), u8), 44);
        assert_eq!(int_cast!(Value::Int(-1), u32), u32::MAX);
        assert_eq!(Value::Int(i64::MAX).to_f32(), 9.223_372e18);
        assert!(f(f32::NAN).to_bool());
        assert!(!Value::F64(-0.0).to_bool());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let b = g.tensor(kTfLiteBool, &[3], &[1u8, 0, 1], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[b], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o), vec![1.0, 0.0, 1.0]);
        let x = g.tensor(kTfLiteFloat32, &[2], &[1.5f32, -1.5], None, false);
        let h = g.output(kTfLiteFloat16, None);
        assert_eq!(g.run::<()>(&registration(), &[x], &[h], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<u16>(h), vec![0x3e00, 0xbe00]);
        let s = g.output(kTfLiteString, None);
        assert_eq!(g.run::<()>(&registration(), &[x], &[s], None), TfLiteStatus::kTfLiteError);
    }
}
