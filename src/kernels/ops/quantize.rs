//! QUANTIZE and DEQUANTIZE (TFLite `kernels/quantize.cc`, `dequantize.cc`,
//! `reference/quantize.h`, `requantize.h`, `dequantize.h`, `integer_ops/dequantize.h`).
//!
//! QUANTIZE: float32 to uint8/int8/int16, per tensor (`round(x / scale) + zero_point` in
//! `f32`, clamped) or per channel; and requantization between integer types
//! (int8/uint8 to int8/uint8, int16 to int8/int16/int32, int32 to int8/int16) with
//! `QuantizeMultiplier(scale_in / scale_out)` and TFLite's double-rounding multiply.
//! DEQUANTIZE: uint8/int8/int16 to float32 (`scale * (q - zero_point)` computed in `f64`
//! per tensor, in `f32` per channel), and float16 to float32.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{Element, OpCtx, QuantParams, TensorView};
use crate::kernels::float_conv::{cvtt_f32_i32, f16_to_f32};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{multiply_by_quantized_multiplier, try_quantize_multiplier};
use crate::kernels::shape_util::{check_arity, check_out_shape, in_op, op_error};

const QUANTIZE: &str = "QUANTIZE";
const DEQUANTIZE: &str = "DEQUANTIZE";

/// The QUANTIZE registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Quantize>(TfLiteBuiltinOperator::kTfLiteBuiltinQuantize)
}

/// The DEQUANTIZE registration.
pub fn dequantize_registration() -> TfLiteRegistration {
    kernel::registration::<Dequantize>(TfLiteBuiltinOperator::kTfLiteBuiltinDequantize)
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// Integer element types QUANTIZE/DEQUANTIZE read or write, widened through `i32`.
pub trait QInt: Element {
    const MIN: i32;
    const MAX: i32;
    fn to_i32(self) -> i32;
    fn from_i32(v: i32) -> Self;
}
macro_rules! qint {
    ($($t:ty),*) => {$(
        impl QInt for $t {
            const MIN: i32 = <$t>::MIN as i32;
            const MAX: i32 = <$t>::MAX as i32;
            fn to_i32(self) -> i32 { self as i32 }
            fn from_i32(v: i32) -> Self { v as $t }
        }
    )*};
}
qint!(u8, i8, i16, i32);

/// One affine quantization (`AffineQuantize`): `round(x / scale)` in `f32`, converted as
/// x86 converts (NaN and out-of-range give `INT32_MIN`), plus the zero point, clamped.
#[inline]
pub fn quantize_one<T: QInt>(x: f32, scale: f32, zero_point: i32) -> T {
    let q = cvtt_f32_i32((x / scale).round()).wrapping_add(zero_point);
    T::from_i32(q.clamp(T::MIN, T::MAX))
}

/// Per-tensor float quantization.
pub fn quantize_f32<T: QInt>(input: &[f32], q: QuantParams, out: &mut [T]) -> Result<()> {
    same_len(input.len(), out.len())?;
    for (o, &x) in out.iter_mut().zip(input) {
        *o = quantize_one(x, q.scale, q.zero_point);
    }
    Ok(())
}

/// Channel of each element for per-channel parameters along `dim` of `shape`.
fn channel_of(shape: &[i32], dim: usize) -> (usize, usize) {
    let inner: usize = shape[dim + 1..].iter().map(|&d| d.max(0) as usize).product();
    (inner.max(1), shape[dim].max(1) as usize)
}

/// Per-channel float quantization along `dim`.
pub fn quantize_f32_per_channel<T: QInt>(
    input: &[f32],
    shape: &[i32],
    dim: usize,
    scales: &[f32],
    zero_points: &[i32],
    out: &mut [T],
) -> Result<()> {
    same_len(input.len(), out.len())?;
    let (inner, channels) = channel_of(shape, dim);
    if scales.len() != channels || zero_points.len() != channels {
        crate::bail!("{} scales and {} zero points for {channels} channels", scales.len(), zero_points.len());
    }
    for (i, (o, &x)) in out.iter_mut().zip(input).enumerate() {
        let c = (i / inner) % channels;
        *o = quantize_one(x, scales[c], zero_points[c]);
    }
    Ok(())
}

/// Integer requantization (`reference_ops::Requantize`).
pub fn requantize<I: QInt, O: QInt>(
    input: &[I],
    multiplier: i32,
    shift: i32,
    in_zero_point: i32,
    out_zero_point: i32,
    out: &mut [O],
) -> Result<()> {
    same_len(input.len(), out.len())?;
    for (o, &x) in out.iter_mut().zip(input) {
        let v = multiply_by_quantized_multiplier(x.to_i32().wrapping_sub(in_zero_point), multiplier, shift)
            .wrapping_add(out_zero_point);
        *o = O::from_i32(v.clamp(O::MIN, O::MAX));
    }
    Ok(())
}

/// Per-tensor dequantization: `(scale as f64 * (q - zero_point)) as f32`.
pub fn dequantize<T: QInt>(input: &[T], q: QuantParams, out: &mut [f32]) -> Result<()> {
    same_len(input.len(), out.len())?;
    let scale = f64::from(q.scale);
    for (o, &x) in out.iter_mut().zip(input) {
        *o = (scale * f64::from(x.to_i32().wrapping_sub(q.zero_point))) as f32;
    }
    Ok(())
}

/// Per-channel dequantization along `dim`: `scale[c] * (q - zero_point[c])` in `f32`.
pub fn dequantize_per_channel<T: QInt>(
    input: &[T],
    shape: &[i32],
    dim: usize,
    scales: &[f32],
    zero_points: &[i32],
    out: &mut [f32],
) -> Result<()> {
    same_len(input.len(), out.len())?;
    let (inner, channels) = channel_of(shape, dim);
    if scales.len() != channels || zero_points.len() != channels {
        crate::bail!("{} scales and {} zero points for {channels} channels", scales.len(), zero_points.len());
    }
    for (i, (o, &x)) in out.iter_mut().zip(input).enumerate() {
        let c = (i / inner) % channels;
        *o = scales[c] * (x.to_i32().wrapping_sub(zero_points[c])) as f32;
    }
    Ok(())
}

fn same_len(a: usize, b: usize) -> Result<()> {
    if a != b {
        crate::bail!("input holds {a} elements, output {b}");
    }
    Ok(())
}

/// Per-channel quantization: scales, zero points and the quantized dimension.
type PerChannel<'a> = (&'a [f32], &'a [i32], usize);

/// Per-channel parameters when a tensor has more than one scale.
fn per_channel<'a>(t: &TensorView<'a>) -> Result<Option<PerChannel<'a>>> {
    match t.affine_quant() {
        Some((s, z, d)) if s.len() > 1 => {
            let d = usize::try_from(d)
                .ok()
                .filter(|&d| d < t.shape.len())
                .ok_or_else(|| Error::new(format!("quantized dimension {d} is out of range")))?;
            Ok(Some((s, z, d)))
        }
        _ => Ok(None),
    }
}

// ---------------------------------------------------------------------------------------
// QUANTIZE glue
// ---------------------------------------------------------------------------------------

fn quantize_operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, QUANTIZE, 1, 1, 1)?;
    let input = ctx.input(0).map_err(in_op(QUANTIZE))?;
    let out = ctx.output(0).map_err(in_op(QUANTIZE))?;
    if out.affine_quant().is_none() {
        return Err(op_error(QUANTIZE, "the output must have affine quantization"));
    }
    use TfLiteType::*;
    let ok = match input.dtype {
        kTfLiteFloat32 => matches!(out.dtype, kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16),
        kTfLiteInt16 => matches!(out.dtype, kTfLiteInt8 | kTfLiteInt16 | kTfLiteInt32),
        kTfLiteInt32 => matches!(out.dtype, kTfLiteInt8 | kTfLiteInt16),
        kTfLiteInt8 | kTfLiteUInt8 => matches!(out.dtype, kTfLiteUInt8 | kTfLiteInt8),
        _ => false,
    };
    if !ok {
        return Err(op_error(
            QUANTIZE,
            format!("input type {} with output type {} is not supported", input.dtype.name(), out.dtype.name()),
        ));
    }
    if input.dtype == kTfLiteInt16
        && out.dtype == kTfLiteInt16
        && (input.quant().zero_point != 0 || out.quant().zero_point != 0)
    {
        return Err(op_error(QUANTIZE, "int16 zero points must be 0"));
    }
    Ok((input, *out))
}

/// The requantization multiplier, as quantize.cc's Prepare computes it.
fn requant_multiplier(input: &TensorView<'_>, out: &TensorView<'_>) -> Result<(i32, i32)> {
    let m = f64::from(input.quant().scale) / f64::from(out.quant().scale);
    try_quantize_multiplier(m).map_err(in_op(QUANTIZE))
}

/// How a QUANTIZE node computes, chosen at Prepare.
enum QuantizePlan {
    /// float32 input: per-tensor or per-channel quantization by the output's parameters.
    FromFloat,
    /// Integer input: requantization by `QuantizeMultiplier(scale_in / scale_out)`.
    Requantize { multiplier: i32, shift: i32 },
}

/// QUANTIZE; its State is the [`QuantizePlan`] (the requantization multiplier for integer
/// inputs).
struct Quantize;

impl BuiltinKernel for Quantize {
    const NAME: &'static str = QUANTIZE;
    type Params = ();
    type State = QuantizePlan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<QuantizePlan> {
        let (input, out) = quantize_operands(ctx)?;
        let plan = if input.dtype != TfLiteType::kTfLiteFloat32 {
            let (multiplier, shift) = requant_multiplier(&input, &out)?;
            QuantizePlan::Requantize { multiplier, shift }
        } else {
            if per_channel(&out).map_err(in_op(QUANTIZE))?.is_none() {
                let s = out.quant().scale;
                if !(s.is_finite() && s > 0.0) {
                    return Err(op_error(QUANTIZE, format!("output scale {s} is invalid")));
                }
            }
            QuantizePlan::FromFloat
        };
        ctx.resize_output(0, input.shape).map_err(in_op(QUANTIZE))?;
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut QuantizePlan) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(QUANTIZE))?;
        let mut out = ctx.output(0).map_err(in_op(QUANTIZE))?;
        check_out_shape(QUANTIZE, out.shape, input.shape)?;
        use TfLiteType::*;
        let r = match *plan {
            QuantizePlan::FromFloat => {
                let x = input.data::<f32>()?;
                match per_channel(&out)? {
                    Some((s, z, d)) => match out.dtype {
                        kTfLiteInt8 => quantize_f32_per_channel::<i8>(x, input.shape, d, s, z, out.data_mut()?),
                        kTfLiteUInt8 => quantize_f32_per_channel::<u8>(x, input.shape, d, s, z, out.data_mut()?),
                        _ => quantize_f32_per_channel::<i16>(x, input.shape, d, s, z, out.data_mut()?),
                    },
                    None => {
                        let q = out.quant();
                        match out.dtype {
                            kTfLiteInt8 => quantize_f32::<i8>(x, q, out.data_mut()?),
                            kTfLiteUInt8 => quantize_f32::<u8>(x, q, out.data_mut()?),
                            _ => quantize_f32::<i16>(x, q, out.data_mut()?),
                        }
                    }
                }
            }
            QuantizePlan::Requantize { multiplier: m, shift: s } => {
                let (zi, zo) = (input.quant().zero_point, out.quant().zero_point);
                macro_rules! rq {
                    ($i:ty, $o:ty) => {
                        requantize::<$i, $o>(input.data()?, m, s, zi, zo, out.data_mut()?)
                    };
                }
                match (input.dtype, out.dtype) {
                    (kTfLiteInt32, kTfLiteInt8) => rq!(i32, i8),
                    (kTfLiteInt32, kTfLiteInt16) => rq!(i32, i16),
                    (kTfLiteInt16, kTfLiteInt8) => rq!(i16, i8),
                    (kTfLiteInt16, kTfLiteInt16) => rq!(i16, i16),
                    (kTfLiteInt16, kTfLiteInt32) => rq!(i16, i32),
                    (kTfLiteInt8, kTfLiteInt8) => rq!(i8, i8),
                    (kTfLiteInt8, kTfLiteUInt8) => rq!(i8, u8),
                    (kTfLiteUInt8, kTfLiteInt8) => rq!(u8, i8),
                    (kTfLiteUInt8, kTfLiteUInt8) => rq!(u8, u8),
                    (i, o) => Err(Error::new(format!(
                        "input type {} with output type {} is not supported",
                        i.name(),
                        o.name()
                    ))),
                }
            }
        };
        r.map_err(in_op(QUANTIZE))
    }
}

// ---------------------------------------------------------------------------------------
// DEQUANTIZE glue
// ---------------------------------------------------------------------------------------

fn dequantize_input<'a>(ctx: &OpCtx<'a>) -> Result<TensorView<'a>> {
    check_arity(ctx, DEQUANTIZE, 1, 1, 1)?;
    let input = ctx.input(0).map_err(in_op(DEQUANTIZE))?;
    use TfLiteType::*;
    if !matches!(input.dtype, kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16 | kTfLiteFloat16) {
        return Err(op_error(DEQUANTIZE, format!("input type {} is not supported", input.dtype.name())));
    }
    if input.dtype == kTfLiteInt16 && input.quant().zero_point != 0 {
        return Err(op_error(DEQUANTIZE, "int16 zero point must be 0"));
    }
    if let Some((_, _, _)) = per_channel(&input).map_err(in_op(DEQUANTIZE))?
        && !matches!(input.dtype, kTfLiteUInt8 | kTfLiteInt8)
    {
        return Err(op_error(DEQUANTIZE, format!("per-channel {} is not supported", input.dtype.name())));
    }
    Ok(input)
}

/// DEQUANTIZE; its State is, for a constant input (whose output lives in the persistent
/// arena), what the output was last computed from (input data, output data, output
/// bytes), so Invoke computes it once, as dequantize.cc does. Prepare starts it empty.
struct Dequantize;

impl BuiltinKernel for Dequantize {
    const NAME: &'static str = DEQUANTIZE;
    type Params = ();
    type State = Option<(usize, usize, usize)>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<(usize, usize, usize)>> {
        let input = dequantize_input(ctx)?;
        if input.is_constant() {
            // dequantize.cc: dequantized constant weights live in the persistent arena, not
            // among the activations.
            ctx.set_output_persistent(0).map_err(in_op(DEQUANTIZE))?;
        }
        ctx.set_output_type(0, TfLiteType::kTfLiteFloat32).map_err(in_op(DEQUANTIZE))?;
        ctx.resize_output(0, input.shape).map_err(in_op(DEQUANTIZE))?;
        Ok(None)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), computed: &mut Option<(usize, usize, usize)>) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(DEQUANTIZE))?;
        let mut out = ctx.output(0).map_err(in_op(DEQUANTIZE))?;
        check_out_shape(DEQUANTIZE, out.shape, input.shape)?;
        let o = out.data_mut::<f32>().map_err(in_op(DEQUANTIZE))?;
        // A constant input's output (in the persistent arena) is computed once.
        let once = input.is_constant() && out.is_persistent();
        let key = (input.raw()?.as_ptr() as usize, o.as_ptr() as usize, core::mem::size_of_val(o));
        if once && *computed == Some(key) {
            return Ok(());
        }
        use TfLiteType::*;
        let r = match (input.dtype, per_channel(&input)?) {
            (kTfLiteFloat16, _) => {
                let x = input.data::<u16>()?;
                same_len(x.len(), o.len()).map(|()| {
                    for (y, &h) in o.iter_mut().zip(x) {
                        *y = f16_to_f32(h);
                    }
                })
            }
            (kTfLiteUInt8, Some((s, z, d))) => dequantize_per_channel::<u8>(input.data()?, input.shape, d, s, z, o),
            (kTfLiteInt8, Some((s, z, d))) => dequantize_per_channel::<i8>(input.data()?, input.shape, d, s, z, o),
            (kTfLiteUInt8, None) => dequantize::<u8>(input.data()?, input.quant(), o),
            (kTfLiteInt8, None) => dequantize::<i8>(input.data()?, input.quant(), o),
            _ => dequantize::<i16>(input.data()?, input.quant(), o),
        };
        if once {
            *computed = r.is_ok().then_some(key);
        }
        r.map_err(in_op(DEQUANTIZE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn quantize_values() {
        let mut out = [0i8; 6];
        quantize_f32(&[-1.0, -0.25, 0.0, 0.25, 1.0, 100.0], qp(0.5, -1), &mut out).unwrap();
        // -0.25 / 0.5 = -0.5 rounds away from zero to -1.
        assert_eq!(out, [-3, -2, -1, 0, 1, 127]);
        let mut u = [0u8; 2];
        quantize_f32(&[f32::NAN, -5.0], qp(1.0, 10), &mut u).unwrap();
        assert_eq!(u, [0, 5]);
        let mut pc = [0i8; 4];
        quantize_f32_per_channel(&[1.0, 1.0, 1.0, 1.0], &[2, 2], 1, &[0.5, 0.25], &[0, 1], &mut pc).unwrap();
        assert_eq!(pc, [2, 5, 2, 5]);
    }

    #[test]
    fn requantize_and_dequantize() {
        let (m, s) = crate::kernels::quant::quantize_multiplier(0.5);
        let mut out = [0i8; 3];
        requantize::<i8, i8>(&[10, -10, 127], m, s, 0, 3, &mut out).unwrap();
        assert_eq!(out, [8, -2, 67]);
        let mut f = [0.0f32; 2];
        dequantize::<u8>(&[0, 255], qp(0.1, 128), &mut f).unwrap();
        assert_eq!(f, [(0.1f32 as f64 * -128.0) as f32, (0.1f32 as f64 * 127.0) as f32]);
        dequantize_per_channel::<i8>(&[4, 4], &[2], 0, &[0.5, 0.25], &[0, 2], &mut f).unwrap();
        assert_eq!(f, [2.0, 0.5]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[3], &[0.0f32, 1.0, -1.0], None, false);
        let q = g.output(kTfLiteInt8, Some(qp(0.5, 0)));
        assert_eq!(g.run::<()>(&registration(), &[x], &[q], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(q), vec![0, 2, -2]);
        let d = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&dequantize_registration(), &[q], &[d], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(d), vec![0.0, 1.0, -1.0]);
        let h = g.tensor(kTfLiteFloat16, &[2], &[0x3c00u16, 0xc000], None, true);
        let d2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&dequantize_registration(), &[h], &[d2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(d2), vec![1.0, -2.0]);
        // An unquantized output is refused.
        let bad = g.output(kTfLiteInt8, None);
        assert_eq!(g.run::<()>(&registration(), &[x], &[bad], None), TfLiteStatus::kTfLiteError);
    }
}
