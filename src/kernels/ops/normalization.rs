//! L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION (TFLite `kernels/l2norm.cc`,
//! `kernels/local_response_norm.cc`, `reference/l2normalization.h`,
//! `reference/integer_ops/l2normalization.h`).
//!
//! L2_NORMALIZATION divides each innermost row by its L2 norm (at least 1e-6) for
//! float32 inputs of rank at most 4; uint8 and int8 use TFLite's integer inverse square
//! root (`GetInvSqrtQuantizedMultiplierExp`) and require an output scale of exactly 1/128
//! and zero point 128 (uint8) or 0 (int8), bit-exact with the reference kernels. The
//! fused activation must be NONE, as TFLite requires.
//!
//! LOCAL_RESPONSE_NORMALIZATION (float32, rank 4): `x * (bias + alpha * sum(x_c^2))^-beta`
//! over channels `[c - radius, c + radius]`. This is TensorFlow's definition and TFLite's
//! builtin (optimized) kernel, computed as it does (running sum of `alpha * x^2`); TFLite's
//! reference kernel drops the last channel of each window, which the corpus documents as a
//! known defect, so it is not followed.

use super::elementwise::inv_sqrt_multiplier_exp;
use crate::abi::builtin_op_data::{TfLiteFusedActivation, TfLiteL2NormParams, TfLiteLocalResponseNormParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_smaller_than_one_exp};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const L2: &str = "L2_NORMALIZATION";
const LRN: &str = "LOCAL_RESPONSE_NORMALIZATION";

/// The L2_NORMALIZATION registration.
pub fn l2_normalization_registration() -> TfLiteRegistration {
    kernel::registration::<L2Normalization>(TfLiteBuiltinOperator::kTfLiteBuiltinL2Normalization)
}

/// The LOCAL_RESPONSE_NORMALIZATION registration.
pub fn local_response_normalization_registration() -> TfLiteRegistration {
    kernel::registration::<LocalResponseNormalization>(TfLiteBuiltinOperator::kTfLiteBuiltinLocalResponseNormalization)
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

fn check_rows(len_in: usize, len_out: usize, depth: usize) -> Result<()> {
    if len_in != len_out || (depth == 0 && len_in != 0) || (depth != 0 && !len_in.is_multiple_of(depth)) {
        crate::bail!("buffers of {len_in} and {len_out} values do not hold rows of {depth}");
    }
    Ok(())
}

/// `reference_ops::L2Normalization` (float, epsilon 1e-6).
pub fn l2_normalize_f32(input: &[f32], depth: usize, out: &mut [f32]) -> Result<()> {
    check_rows(input.len(), out.len(), depth)?;
    if depth == 0 {
        return Ok(());
    }
    for (x, o) in input.chunks_exact(depth).zip(out.chunks_exact_mut(depth)) {
        let sq = x.iter().fold(0.0f32, |acc, &v| acc + v * v);
        let norm = crate::kernels::activation::cpp_max(sq.sqrt(), 1e-6f32);
        for (o, &v) in o.iter_mut().zip(x) {
            *o = v / norm;
        }
    }
    Ok(())
}

/// `reference_ops::L2Normalization` for uint8 (output scale 1/128, zero point 128).
pub fn l2_normalize_u8(input: &[u8], depth: usize, input_zero_point: i32, out: &mut [u8]) -> Result<()> {
    check_rows(input.len(), out.len(), depth)?;
    if depth == 0 {
        return Ok(());
    }
    for (x, o) in input.chunks_exact(depth).zip(out.chunks_exact_mut(depth)) {
        let sq = x.iter().fold(0i32, |acc, &v| {
            let d = v as i32 - input_zero_point;
            acc.wrapping_add(d.wrapping_mul(d))
        });
        let (m, s) = inv_sqrt_multiplier_exp(sq);
        for (o, &v) in o.iter_mut().zip(x) {
            let d = v as i32 - input_zero_point;
            let r = multiply_by_quantized_multiplier_smaller_than_one_exp(128 * d, m, s);
            *o = (128 + r).clamp(0, 255) as u8;
        }
    }
    Ok(())
}

/// `reference_integer_ops::L2Normalization` (int8, output scale 1/128, zero point 0).
pub fn l2_normalize_i8(input: &[i8], depth: usize, input_zero_point: i32, out: &mut [i8]) -> Result<()> {
    check_rows(input.len(), out.len(), depth)?;
    if depth == 0 {
        return Ok(());
    }
    const OUTPUT_SCALE: i32 = 7;
    for (x, o) in input.chunks_exact(depth).zip(out.chunks_exact_mut(depth)) {
        let acc = x.iter().fold(0i32, |acc, &v| {
            let d = v as i32 - input_zero_point;
            acc.wrapping_add(d.wrapping_mul(d))
        });
        let (m, s) = inv_sqrt_multiplier_exp(acc);
        for (o, &v) in o.iter_mut().zip(x) {
            let d = v as i32 - input_zero_point;
            let r = multiply_by_quantized_multiplier(d, m, s + OUTPUT_SCALE);
            *o = r.clamp(-128, 127) as i8;
        }
    }
    Ok(())
}

/// Local response normalization parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LrnParams {
    pub radius: usize,
    pub bias: f32,
    pub alpha: f32,
    pub beta: f32,
}

/// LOCAL_RESPONSE_NORMALIZATION over rows of `depth` channels, as TFLite's optimized
/// kernel: a running window sum of `x^2 * alpha`, then `x * (bias + sum)^-beta` (with
/// `1 / s` for beta 1 and `1 / sqrt(s)` for beta 0.5).
pub fn local_response_normalize(input: &[f32], depth: usize, p: LrnParams, out: &mut [f32]) -> Result<()> {
    check_rows(input.len(), out.len(), depth)?;
    if depth == 0 {
        return Ok(());
    }
    let r = p.radius.min(depth);
    let mut padded = vec![0.0f32; depth + 2 * r];
    for (x, o) in input.chunks_exact(depth).zip(out.chunks_exact_mut(depth)) {
        for (s, &v) in padded[r..r + depth].iter_mut().zip(x) {
            *s = v * v * p.alpha;
        }
        let mut acc = 0.0f32;
        for &s in &padded[..2 * r] {
            acc += s;
        }
        for i in 0..depth {
            acc += padded[i + 2 * r];
            o[i] = p.bias + acc;
            acc -= padded[i];
        }
        for (o, &v) in o.iter_mut().zip(x) {
            let s = *o;
            let mult = if p.beta == 1.0 {
                1.0 / s
            } else if p.beta == 0.5 {
                1.0 / s.sqrt()
            } else {
                s.powf(-p.beta)
            };
            *o = v * mult;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

fn unary<'a>(ctx: &OpCtx<'a>, op: &'static str) -> Result<TensorView<'a>> {
    check_arity(ctx, op, 1, 1, 1)?;
    let input = ctx.input(0).map_err(in_op(op))?;
    let out = ctx.output(0).map_err(in_op(op))?;
    if out.dtype != input.dtype {
        return Err(op_error(
            op,
            format!("output type {} differs from the input type {}", out.dtype.name(), input.dtype.name()),
        ));
    }
    if input.shape.iter().any(|&d| d < 0) {
        return Err(op_error(op, "negative dimension"));
    }
    Ok(input)
}

fn l2_operands<'a>(ctx: &OpCtx<'a>, p: &Option<TfLiteL2NormParams>) -> Result<TensorView<'a>> {
    let input = unary(ctx, L2)?;
    let out = ctx.output(0).map_err(in_op(L2))?;
    if input.shape.len() > 4 {
        return Err(op_error(L2, format!("input rank {} is more than 4", input.shape.len())));
    }
    use TfLiteType::*;
    match input.dtype {
        kTfLiteFloat32 => {}
        kTfLiteUInt8 | kTfLiteInt8 => {
            let q = out.quant();
            let zp = if input.dtype == kTfLiteUInt8 { 128 } else { 0 };
            if f64::from(q.scale) != 1.0 / 128.0 || q.zero_point != zp {
                return Err(op_error(L2, format!("output scale must be 1/128 and zero point {zp}")));
            }
        }
        other => return Err(op_error(L2, format!("type {} is not supported", other.name()))),
    }
    let p = p.unwrap_or_default();
    if p.activation != TfLiteFusedActivation::kTfLiteActNone {
        return Err(op_error(L2, "fused activations are not supported"));
    }
    Ok(input)
}

/// L2_NORMALIZATION; its State is the row length (the innermost dimension) and the
/// input zero point.
struct L2Normalization;

impl BuiltinKernel for L2Normalization {
    const NAME: &'static str = L2;
    type Params = Option<TfLiteL2NormParams>;
    type State = (usize, i32);

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteL2NormParams>) -> Result<(usize, i32)> {
        let input = l2_operands(ctx, p)?;
        ctx.resize_output(0, input.shape).map_err(in_op(L2))?;
        Ok((input.shape.last().map_or(1, |&d| d as usize), input.quant().zero_point))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &Option<TfLiteL2NormParams>, state: &mut (usize, i32)) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(L2))?;
        let mut out = ctx.output(0).map_err(in_op(L2))?;
        let (depth, zp) = *state;
        let r = match input.dtype {
            TfLiteType::kTfLiteFloat32 => l2_normalize_f32(input.data::<f32>()?, depth, out.data_mut::<f32>()?),
            TfLiteType::kTfLiteUInt8 => l2_normalize_u8(input.data::<u8>()?, depth, zp, out.data_mut::<u8>()?),
            _ => l2_normalize_i8(input.data::<i8>()?, depth, zp, out.data_mut::<i8>()?),
        };
        r.map_err(|e| op_error(L2, e.message))
    }
}

fn lrn_operands<'a>(ctx: &OpCtx<'a>, p: &TfLiteLocalResponseNormParams) -> Result<(TensorView<'a>, LrnParams)> {
    let input = unary(ctx, LRN)?;
    if input.shape.len() != 4 || input.dtype != TfLiteType::kTfLiteFloat32 {
        return Err(op_error(
            LRN,
            format!("input must be a rank-4 float32 tensor, is {} {:?}", input.dtype.name(), input.shape),
        ));
    }
    if p.radius < 0 {
        return Err(op_error(LRN, format!("radius {} must not be negative", p.radius)));
    }
    Ok((input, LrnParams { radius: p.radius as usize, bias: p.bias, alpha: p.alpha, beta: p.beta }))
}

/// LOCAL_RESPONSE_NORMALIZATION; its State is the checked window parameters and the
/// channel count.
struct LocalResponseNormalization;

impl BuiltinKernel for LocalResponseNormalization {
    const NAME: &'static str = LRN;
    type Params = TfLiteLocalResponseNormParams;
    type State = (LrnParams, usize);

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteLocalResponseNormParams) -> Result<(LrnParams, usize)> {
        let (input, lrn) = lrn_operands(ctx, p)?;
        ctx.resize_output(0, input.shape).map_err(in_op(LRN))?;
        Ok((lrn, input.shape[3] as usize))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteLocalResponseNormParams, state: &mut (LrnParams, usize)) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(LRN))?;
        let mut out = ctx.output(0).map_err(in_op(LRN))?;
        let (p, depth) = *state;
        local_response_normalize(input.data::<f32>()?, depth, p, out.data_mut::<f32>()?)
            .map_err(|e| op_error(LRN, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn l2_float() {
        // l2norm_test.cc: [-1.1, 0.6, 0.7, 1.2, -0.7, 0.1] -> / 2.0.
        let x = [-1.1f32, 0.6, 0.7, 1.2, -0.7, 0.1];
        let mut o = [0f32; 6];
        l2_normalize_f32(&x, 6, &mut o).unwrap();
        let want = [-0.55f32, 0.3, 0.35, 0.6, -0.35, 0.05];
        assert!(o.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6), "{o:?}");
        // All zeros stay zeros.
        l2_normalize_f32(&[0.0; 6], 6, &mut o).unwrap();
        assert_eq!(o, [0.0; 6]);
    }

    #[test]
    fn l2_quantized() {
        // l2norm_test.cc SimpleUint8Test: input quantized [-1,1] with zero point 128...
        // here checked against the float result within one step.
        let x: Vec<f32> = vec![-1.1, 0.6, 0.7, 1.2, -0.7, 0.1];
        let scale = 2.0f32 / 255.0;
        let q: Vec<i8> = x.iter().map(|v| (v / scale).round() as i8).collect();
        let mut o = [0i8; 6];
        l2_normalize_i8(&q, 6, 0, &mut o).unwrap();
        let deq: Vec<f32> = q.iter().map(|&v| v as f32 * scale).collect();
        let mut f = [0f32; 6];
        l2_normalize_f32(&deq, 6, &mut f).unwrap();
        for (a, b) in o.iter().zip(f) {
            assert!(((*a as f32) / 128.0 - b).abs() <= 2.0 / 128.0, "{a} vs {b}");
        }
        let qu: Vec<u8> = q.iter().map(|&v| (v as i32 + 128) as u8).collect();
        let mut ou = [0u8; 6];
        l2_normalize_u8(&qu, 6, 128, &mut ou).unwrap();
        for (a, b) in ou.iter().zip(f) {
            assert!(((*a as f32 - 128.0) / 128.0 - b).abs() <= 2.0 / 128.0, "{a} vs {b}");
        }
    }

    #[test]
    fn lrn() {
        // local_response_norm_test.cc SameAsL2Norm: radius 20, bias 0, alpha 1, beta 0.5.
        let x = [-1.1f32, 0.6, 0.7, 1.2, -0.7, 0.1];
        let mut o = [0f32; 6];
        local_response_normalize(&x, 6, LrnParams { radius: 20, bias: 0.0, alpha: 1.0, beta: 0.5 }, &mut o).unwrap();
        let want = [-0.55f32, 0.3, 0.35, 0.6, -0.35, 0.05];
        assert!(o.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6), "{o:?}");
        // WithAlpha: alpha 4 -> halves the values.
        local_response_normalize(&x, 6, LrnParams { radius: 20, bias: 0.0, alpha: 4.0, beta: 0.5 }, &mut o).unwrap();
        assert!(o.iter().zip(want).all(|(a, b)| (a - b / 2.0).abs() < 1e-6), "{o:?}");
        // SmallRadius: radius 2, bias 9, alpha 4, beta 0.5.
        local_response_normalize(&x, 6, LrnParams { radius: 2, bias: 9.0, alpha: 4.0, beta: 0.5 }, &mut o).unwrap();
        let want = [-0.264926f32, 0.125109, 0.140112, 0.267261, -0.161788, 0.0244266];
        assert!(o.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-5), "{o:?}");
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt8, &[1, 2], &[3i8, 4], Some(qp(0.1, 0)), false);
        let o = g.output(kTfLiteInt8, Some(qp(1.0 / 128.0, 0)));
        assert_eq!(
            g.run(&l2_normalization_registration(), &[x], &[o], Some(TfLiteL2NormParams::default())),
            TfLiteStatus::kTfLiteOk
        );
        let got = g.data::<i8>(o);
        assert!((got[0] as i32 - 77).abs() <= 1 && (got[1] as i32 - 102).abs() <= 1, "{got:?}");
        let o2 = g.output(kTfLiteInt8, Some(qp(0.01, 0)));
        assert_eq!(
            g.run(&l2_normalization_registration(), &[x], &[o2], Some(TfLiteL2NormParams::default())),
            TfLiteStatus::kTfLiteError
        );
    }
}
