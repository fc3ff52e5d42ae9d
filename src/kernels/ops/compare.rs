//! Comparisons (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL) and logical
//! ops (LOGICAL_AND, LOGICAL_OR, LOGICAL_NOT) (TFLite `kernels/comparisons.cc`,
//! `reference/comparisons.h`, `kernels/logical.cc`, `kernels/elementwise.cc`), with
//! numpy broadcasting; the output is bool.
//!
//! Types: float32, int16, int32, int64, bool (EQUAL / NOT_EQUAL) and quantized uint8 /
//! int8, whose values are first brought to a common scale as TFLite does
//! (`ComparisonWithScaling`: zero point removed, shifted left by 8, multiplied by the
//! tensor's own scale in fixed point), so tensors of different scales compare by real
//! value (for scales of 1 or more TFLite's arithmetic goes wrong, and this reproduces what
//! it computes on x86-64; see `fixed_point::multiply_smaller_than_one_exp_x86`). Strings
//! are not supported.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::binary::{BinaryOperands, binary_operands, with_op};
use crate::kernels::broadcast::broadcast_binary;
use crate::kernels::fixed_point::multiply_smaller_than_one_exp_x86;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{quantize_multiplier_greater_than_one, quantize_multiplier_smaller_than_one_exp};
use crate::kernels::shape_util::{check_out_shape, in_op, op_error, unary_operands};

/// The comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
}

impl Cmp {
    const fn name(self) -> &'static str {
        match self {
            Cmp::Equal => "EQUAL",
            Cmp::NotEqual => "NOT_EQUAL",
            Cmp::Less => "LESS",
            Cmp::LessEqual => "LESS_EQUAL",
            Cmp::Greater => "GREATER",
            Cmp::GreaterEqual => "GREATER_EQUAL",
        }
    }

    /// The comparison on any partially ordered value (C++ operators: NaN compares false,
    /// except `!=`).
    #[inline]
    pub fn apply<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Equal => a == b,
            Cmp::NotEqual => a != b,
            Cmp::Less => a < b,
            Cmp::LessEqual => a <= b,
            Cmp::Greater => a > b,
            Cmp::GreaterEqual => a >= b,
        }
    }
}

/// The Equal registration.
pub fn equal_registration() -> TfLiteRegistration {
    kernel::registration::<Compare<0>>(TfLiteBuiltinOperator::kTfLiteBuiltinEqual)
}

/// The NotEqual registration.
pub fn not_equal_registration() -> TfLiteRegistration {
    kernel::registration::<Compare<1>>(TfLiteBuiltinOperator::kTfLiteBuiltinNotEqual)
}

/// The Less registration.
pub fn less_registration() -> TfLiteRegistration {
    kernel::registration::<Compare<2>>(TfLiteBuiltinOperator::kTfLiteBuiltinLess)
}

/// The LessEqual registration.
pub fn less_equal_registration() -> TfLiteRegistration {
    kernel::registration::<Compare<3>>(TfLiteBuiltinOperator::kTfLiteBuiltinLessEqual)
}

/// The Greater registration.
pub fn greater_registration() -> TfLiteRegistration {
    kernel::registration::<Compare<4>>(TfLiteBuiltinOperator::kTfLiteBuiltinGreater)
}

/// The GreaterEqual registration.
pub fn greater_equal_registration() -> TfLiteRegistration {
    kernel::registration::<Compare<5>>(TfLiteBuiltinOperator::kTfLiteBuiltinGreaterEqual)
}

const fn cmp_of(op: u8) -> Cmp {
    match op {
        0 => Cmp::Equal,
        1 => Cmp::NotEqual,
        2 => Cmp::Less,
        3 => Cmp::LessEqual,
        4 => Cmp::Greater,
        _ => Cmp::GreaterEqual,
    }
}

/// Per-input scaling of a quantized comparison (`ComparisonParams` for one input).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmpScale {
    pub offset: i32,
    pub multiplier: i32,
    pub shift: i32,
}

impl CmpScale {
    /// comparisons.cc's local `QuantizeMultiplier` of the tensor's scale.
    pub fn new(scale: f32, zero_point: i32) -> Result<CmpScale> {
        let s = f64::from(scale);
        let (multiplier, shift) = if s < 1.0 {
            quantize_multiplier_smaller_than_one_exp(s)?
        } else {
            quantize_multiplier_greater_than_one(s)?
        };
        Ok(CmpScale { offset: zero_point.wrapping_neg(), multiplier, shift })
    }

    /// The value on the common comparison scale.
    #[inline]
    pub fn scaled(&self, q: i32) -> i32 {
        let v = self.offset.wrapping_add(q).wrapping_mul(1 << 8);
        multiply_smaller_than_one_exp_x86(v, self.multiplier, self.shift)
    }
}

fn cmp_types(kind: Cmp, t: TfLiteType) -> bool {
    use TfLiteType::*;
    match t {
        kTfLiteFloat32 | kTfLiteInt16 | kTfLiteInt32 | kTfLiteInt64 | kTfLiteUInt8 | kTfLiteInt8 => true,
        kTfLiteBool => matches!(kind, Cmp::Equal | Cmp::NotEqual),
        _ => false,
    }
}

fn cmp_operands<'a>(ctx: &OpCtx<'a>, kind: Cmp) -> Result<BinaryOperands<'a>> {
    let op = kind.name();
    let ops = binary_operands(ctx, op)?;
    if !cmp_types(kind, ops.a.dtype) {
        return Err(op_error(op, format!("type {} is not supported", ops.a.dtype.name())));
    }
    Ok(ops)
}

/// A comparison (`OP` indexes [`Cmp`] in declaration order); its State is the scaling of
/// both inputs for uint8 / int8, `None` for the other types.
struct Compare<const OP: u8>;

impl<const OP: u8> BuiltinKernel for Compare<OP> {
    const NAME: &'static str = cmp_of(OP).name();
    type Params = ();
    type State = Option<(CmpScale, CmpScale)>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<(CmpScale, CmpScale)>> {
        let kind = cmp_of(OP);
        let op = kind.name();
        let ops = cmp_operands(ctx, kind)?;
        let scales = if matches!(ops.a.dtype, TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8) {
            let sa = CmpScale::new(ops.a.quant().scale, ops.a.quant().zero_point).map_err(in_op(op))?;
            let sb = CmpScale::new(ops.b.quant().scale, ops.b.quant().zero_point).map_err(in_op(op))?;
            Some((sa, sb))
        } else {
            None
        };
        ctx.set_output_type(0, TfLiteType::kTfLiteBool).map_err(in_op(op))?;
        ctx.resize_output(0, &ops.out_shape).map_err(in_op(op))?;
        Ok(scales)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), scales: &mut Option<(CmpScale, CmpScale)>) -> Result<()> {
        cmp_eval(ctx, cmp_of(OP), *scales)
    }
}

fn cmp_eval(ctx: &OpCtx<'_>, kind: Cmp, scales: Option<(CmpScale, CmpScale)>) -> Result<()> {
    let op = kind.name();
    let mut ops = cmp_operands(ctx, kind)?;
    check_out_shape(op, ops.out.shape, &ops.out_shape)?;
    let osh = core::mem::take(&mut ops.out_shape);
    let (a, b) = (ops.a, ops.b);
    let out = ops.out.data_mut::<u8>().map_err(in_op(op))?;
    macro_rules! plain {
        ($t:ty) => {
            broadcast_binary(a.data::<$t>()?, a.shape, b.data::<$t>()?, b.shape, out, &osh, |x, y| {
                u8::from(kind.apply(x, y))
            })
        };
    }
    use TfLiteType::*;
    match a.dtype {
        kTfLiteFloat32 => plain!(f32),
        kTfLiteInt16 => plain!(i16),
        kTfLiteInt32 => plain!(i32),
        kTfLiteInt64 => plain!(i64),
        kTfLiteBool => broadcast_binary(a.data::<u8>()?, a.shape, b.data::<u8>()?, b.shape, out, &osh, |x, y| {
            u8::from(kind.apply(x != 0, y != 0))
        }),
        kTfLiteUInt8 | kTfLiteInt8 => {
            let (sa, sb) = scales.ok_or_else(|| Error::new("quantized comparison without its scales"))?;
            if a.dtype == kTfLiteUInt8 {
                broadcast_binary(a.data::<u8>()?, a.shape, b.data::<u8>()?, b.shape, out, &osh, |x, y| {
                    u8::from(kind.apply(sa.scaled(i32::from(x)), sb.scaled(i32::from(y))))
                })
            } else {
                broadcast_binary(a.data::<i8>()?, a.shape, b.data::<i8>()?, b.shape, out, &osh, |x, y| {
                    u8::from(kind.apply(sa.scaled(i32::from(x)), sb.scaled(i32::from(y))))
                })
            }
        }
        other => Err(Error::new(format!("type {} is not supported", other.name()))),
    }
    .map_err(in_op(op))
}

// ---------------------------------------------------------------------------------------
// Logical ops
// ---------------------------------------------------------------------------------------

const AND: &str = "LOGICAL_AND";
const OR: &str = "LOGICAL_OR";
const NOT: &str = "LOGICAL_NOT";

/// The LOGICAL_AND registration.
pub fn logical_and_registration() -> TfLiteRegistration {
    kernel::registration::<Logical<false>>(TfLiteBuiltinOperator::kTfLiteBuiltinLogicalAnd)
}

/// The LOGICAL_OR registration.
pub fn logical_or_registration() -> TfLiteRegistration {
    kernel::registration::<Logical<true>>(TfLiteBuiltinOperator::kTfLiteBuiltinLogicalOr)
}

/// The LOGICAL_NOT registration.
pub fn logical_not_registration() -> TfLiteRegistration {
    kernel::registration::<LogicalNot>(TfLiteBuiltinOperator::kTfLiteBuiltinLogicalNot)
}

fn logical_prepare(ctx: &OpCtx<'_>, op: &'static str) -> Result<()> {
    let ops = binary_operands(ctx, op)?;
    if ops.a.dtype != TfLiteType::kTfLiteBool {
        return Err(op_error(op, "logical ops only support bool"));
    }
    ctx.set_output_type(0, TfLiteType::kTfLiteBool).map_err(in_op(op))?;
    ctx.resize_output(0, &ops.out_shape).map_err(in_op(op))
}

fn logical_eval(ctx: &OpCtx<'_>, op: &'static str, f: fn(bool, bool) -> bool) -> Result<()> {
    let mut ops = binary_operands(ctx, op)?;
    if ops.a.dtype != TfLiteType::kTfLiteBool || ops.out.dtype != TfLiteType::kTfLiteBool {
        return Err(op_error(op, "logical ops only support bool"));
    }
    check_out_shape(op, ops.out.shape, &ops.out_shape)?;
    let osh = core::mem::take(&mut ops.out_shape);
    broadcast_binary(
        ops.a.data::<u8>()?,
        ops.a.shape,
        ops.b.data::<u8>()?,
        ops.b.shape,
        ops.out.data_mut::<u8>()?,
        &osh,
        |x, y| u8::from(f(x != 0, y != 0)),
    )
    .map_err(with_op(op))
}

/// LOGICAL_AND (`IS_OR` false) or LOGICAL_OR (`IS_OR` true); its State is empty (nothing to
/// derive beyond the output shape).
struct Logical<const IS_OR: bool>;

impl<const IS_OR: bool> BuiltinKernel for Logical<IS_OR> {
    const NAME: &'static str = if IS_OR { OR } else { AND };
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        logical_prepare(ctx, Self::NAME)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        if IS_OR { logical_eval(ctx, OR, |a, b| a || b) } else { logical_eval(ctx, AND, |a, b| a && b) }
    }
}

/// LOGICAL_NOT; its State is empty (nothing to derive beyond the output shape).
struct LogicalNot;

impl BuiltinKernel for LogicalNot {
    const NAME: &'static str = NOT;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        let (input, _) = unary_operands(ctx, NOT)?;
        if input.dtype != TfLiteType::kTfLiteBool {
            return Err(op_error(NOT, "LOGICAL_NOT only supports bool"));
        }
        ctx.resize_output(0, input.shape).map_err(in_op(NOT))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let (input, mut out) = unary_operands(ctx, NOT)?;
        check_out_shape(NOT, out.shape, input.shape)?;
        let (x, o) = (input.data::<u8>()?, out.data_mut::<u8>()?);
        if x.len() != o.len() {
            return Err(op_error(NOT, "input and output sizes differ"));
        }
        for (oc, &v) in o.iter_mut().zip(x) {
            *oc = u8::from(v == 0);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn quantized_scaling_compares_real_values() {
        // 10 * 0.5 = 5.0 vs 20 * 0.25 = 5.0: equal; 11 * 0.5 > 20 * 0.25.
        let a = CmpScale::new(0.5, 0).unwrap();
        let b = CmpScale::new(0.25, 0).unwrap();
        assert_eq!(a.scaled(10), b.scaled(20));
        assert!(a.scaled(11) > b.scaled(20));
        let c = CmpScale::new(0.5, 4).unwrap();
        assert_eq!(c.scaled(14), a.scaled(10));
        assert!(Cmp::NotEqual.apply(f32::NAN, f32::NAN));
        assert!(!Cmp::Equal.apply(f32::NAN, f32::NAN));
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteFloat32, &[2, 2], &[1.0f32, 2.0, 3.0, 4.0], None, false);
        let b = g.tensor(kTfLiteFloat32, &[2], &[2.0f32, 2.0], None, true);
        for (reg, want) in [
            (equal_registration(), [0u8, 1, 0, 0]),
            (not_equal_registration(), [1, 0, 1, 1]),
            (less_registration(), [1, 0, 0, 0]),
            (less_equal_registration(), [1, 1, 0, 0]),
            (greater_registration(), [0, 0, 1, 1]),
            (greater_equal_registration(), [0, 1, 1, 1]),
        ] {
            let o = g.output(kTfLiteFloat32, None);
            assert_eq!(g.run::<()>(&reg, &[a, b], &[o], None), TfLiteStatus::kTfLiteOk);
            assert_eq!(g.data::<u8>(o), want.to_vec());
        }
        let q1 = g.tensor(kTfLiteInt8, &[2], &[10i8, 11], Some(qp(0.5, 0)), false);
        let q2 = g.tensor(kTfLiteInt8, &[2], &[20i8, 20], Some(qp(0.25, 0)), false);
        let o = g.output(kTfLiteBool, None);
        assert_eq!(g.run::<()>(&greater_registration(), &[q1, q2], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<u8>(o), vec![0, 1]);
        let t = g.tensor(kTfLiteBool, &[2], &[1u8, 0], None, false);
        let f = g.tensor(kTfLiteBool, &[], &[1u8], None, false);
        let o = g.output(kTfLiteBool, None);
        assert_eq!(g.run::<()>(&logical_and_registration(), &[t, f], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<u8>(o), vec![1, 0]);
        let o = g.output(kTfLiteBool, None);
        assert_eq!(g.run::<()>(&logical_not_registration(), &[t], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<u8>(o), vec![0, 1]);
        let o = g.output(kTfLiteBool, None);
        assert_eq!(g.run::<()>(&logical_or_registration(), &[a, b], &[o], None), TfLiteStatus::kTfLiteError);
    }
}
