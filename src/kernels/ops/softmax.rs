//! SOFTMAX and LOG_SOFTMAX (TFLite `kernels/activations.cc`, reference kernels
//! `reference/softmax.h`, `reference/log_softmax.h`, `integer_ops/log_softmax.h`), along
//! the last dimension.
//!
//! Float: TFLite's reference steps (max, `exp((x - max) * beta)`, sum, divide; LOG_SOFTMAX
//! `x - max - log(sum)`), the softmax's exponentials from the microkernel table.
//! uint8/int8 (output uint8/int8, or int16): the gemmlowp fixed-point path of the
//! reference kernel (`PreprocessSoftmaxScaling` with 5 integer bits,
//! `exp_on_negative_values`, a Q12 accumulator, `GetReciprocal`), bit-exact.
//! int16: TFLite's two 513-entry lookup tables (exp on [-10, 0] and 1 / (1 + x)).
//! LOG_SOFTMAX uint8/int8 requires the output scale 16/256 and zero point 255 / 127.

use crate::abi::builtin_op_data::TfLiteSoftmaxParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::fixed_point::{
    calculate_input_radius, exp_on_negative_values, get_reciprocal, log_x_for_x_greater_than_or_equal_to_1,
    lut_lookup_int16, lut_populate_int16_f64, rescale,
};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{
    multiply_by_quantized_multiplier, quantize_multiplier_greater_than_one, quantize_multiplier_smaller_than_one_exp,
    rounding_divide_by_pot, saturating_rounding_doubling_high_mul as srdhm, try_quantize_multiplier,
};
use crate::kernels::shape_util::{check_out_shape, in_op, op_error, unary_operands};
use crate::microkernels::{f32_vsigmoid, table};

const SOFTMAX: &str = "SOFTMAX";
const LOG_SOFTMAX: &str = "LOG_SOFTMAX";

/// The SOFTMAX registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Softmax>(TfLiteBuiltinOperator::kTfLiteBuiltinSoftmax)
}

/// The LOG_SOFTMAX registration.
pub fn log_softmax_registration() -> TfLiteRegistration {
    kernel::registration::<LogSoftmax>(TfLiteBuiltinOperator::kTfLiteBuiltinLogSoftmax)
}

// ---------------------------------------------------------------------------------------
// Float
// ---------------------------------------------------------------------------------------

fn rows<T>(data: &[T], depth: usize) -> Result<core::slice::ChunksExact<'_, T>> {
    if depth == 0 || !data.len().is_multiple_of(depth) {
        if data.is_empty() {
            return Ok(data.chunks_exact(depth.max(1)));
        }
        crate::bail!("{} elements do not split into rows of {depth}", data.len());
    }
    Ok(data.chunks_exact(depth))
}

/// Float softmax over rows of `depth` elements. With a finite positive beta (every
/// model's), the exponentials come from the microkernel table (within a few ulp of
/// `exp`), and the maximum and the sum go over sixteen lanes at a time.
pub fn softmax_f32(input: &[f32], depth: usize, beta: f32, out: &mut [f32]) -> Result<()> {
    if input.len() != out.len() {
        crate::bail!("input holds {} elements, output {}", input.len(), out.len());
    }
    let table = (beta.is_finite() && beta > 0.0).then(table);
    for (x, o) in rows(input, depth)?.zip(out.chunks_exact_mut(depth.max(1))) {
        let max = row_max(x);
        match table {
            Some(t) => f32_vsigmoid::exp_shifted(t, x, max, beta, o)?,
            None => o.iter_mut().zip(x).for_each(|(oc, &xc)| *oc = ((xc - max) * beta).exp()),
        }
        let sum = row_sum(o);
        for oc in o.iter_mut() {
            *oc /= sum;
        }
    }
    Ok(())
}

/// Lanes the row maximum and sum go over (independent chains the compiler vectorises).
const LANES: usize = 16;

/// The largest value of `x` as TFLite's `std::max` chain finds it (a NaN is never taken;
/// `f32::MIN` for an empty row).
fn row_max(x: &[f32]) -> f32 {
    let larger = |m: f32, v: f32| if m < v { v } else { m };
    let mut lanes = [f32::MIN; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        lanes.iter_mut().zip(c).for_each(|(m, &v)| *m = larger(*m, v));
    }
    lanes.into_iter().chain(chunks.remainder().iter().copied()).fold(f32::MIN, larger)
}

/// The sum of `x`, over [`LANES`] partial sums.
fn row_sum(x: &[f32]) -> f32 {
    let mut lanes = [0f32; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        lanes.iter_mut().zip(c).for_each(|(s, &v)| *s += v);
    }
    lanes.into_iter().chain(chunks.remainder().iter().copied()).sum()
}

/// Float log-softmax over rows of `depth` elements.
pub fn log_softmax_f32(input: &[f32], depth: usize, out: &mut [f32]) -> Result<()> {
    if input.len() != out.len() {
        crate::bail!("input holds {} elements, output {}", input.len(), out.len());
    }
    for (x, o) in rows(input, depth)?.zip(out.chunks_exact_mut(depth.max(1))) {
        let max = x.iter().fold(f32::MIN, |m, &v| if m < v { v } else { m });
        let sum: f32 = x.iter().fold(0.0f32, |s, &v| s + (v - max).exp());
        let log_sum = sum.ln();
        for (oc, &xc) in o.iter_mut().zip(x) {
            *oc = xc - max - log_sum;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// uint8 / int8
// ---------------------------------------------------------------------------------------

/// The 8-bit softmax parameters (`PreprocessSoftmaxScaling` with 5 integer bits), with
/// what the reference kernel computes per element tabulated by the element's distance
/// below its row's maximum (`0..=255` for 8-bit input): each is a function of that
/// distance alone, so the tables give the reference's bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Softmax8Params {
    pub input_multiplier: i32,
    pub input_left_shift: i32,
    pub diff_min: i32,
    /// `exp_on_negative_values` of the scaled difference, or `-1` where the difference is
    /// below `diff_min` (the element counts as zero).
    exp: Box<[i32; 256]>,
    /// The element's term of the sum of exponentials (0 below `diff_min`).
    sum_term: Box<[i32; 256]>,
}

const SOFTMAX_SCALED_DIFF_BITS: i32 = 5;
const SOFTMAX_ACCUM_BITS: i32 = 12;

impl Softmax8Params {
    /// As SoftmaxPrepare (reference kernel) computes them.
    pub fn new(beta: f32, input_scale: f32) -> Result<Softmax8Params> {
        let max_real = f64::from(i32::MAX);
        let real = (f64::from(beta) * f64::from(input_scale) * f64::from(1i32 << 26)).min(max_real);
        let (input_multiplier, input_left_shift) = quantize_multiplier_greater_than_one(real)?;
        let diff_min = (-f64::from(calculate_input_radius(5, input_left_shift, 31))) as i32;
        let mut exp = Box::new([-1i32; 256]);
        let mut sum_term = Box::new([0i32; 256]);
        for d in 0..256 {
            let diff = -(d as i32);
            if diff >= diff_min {
                let scaled = multiply_by_quantized_multiplier(diff, input_multiplier, input_left_shift);
                exp[d] = exp_on_negative_values(scaled, SOFTMAX_SCALED_DIFF_BITS);
                sum_term[d] = rescale(exp[d], 0, SOFTMAX_ACCUM_BITS);
            }
        }
        Ok(Softmax8Params { input_multiplier, input_left_shift, diff_min, exp, sum_term })
    }
}

/// Integer element types of the quantized softmax kernels, with their range.
pub trait SoftmaxInt: Copy {
    const MIN: i32;
    const MAX: i32;
    const BITS: i32;
    fn to_i32(self) -> i32;
    fn from_i32(v: i32) -> Self;
}
macro_rules! softmax_int {
    ($($t:ty),*) => {$(
        impl SoftmaxInt for $t {
            const MIN: i32 = <$t>::MIN as i32;
            const MAX: i32 = <$t>::MAX as i32;
            const BITS: i32 = <$t>::BITS as i32;
            fn to_i32(self) -> i32 { self as i32 }
            fn from_i32(v: i32) -> Self { v as $t }
        }
    )*};
}
softmax_int!(u8, i8, i16);

/// Quantized softmax of 8-bit input to 8- or 16-bit output (`reference_ops::Softmax`).
pub fn softmax_quantized<I: SoftmaxInt, O: SoftmaxInt>(
    input: &[I],
    depth: usize,
    p: &Softmax8Params,
    out: &mut [O],
) -> Result<()> {
    if input.len() != out.len() {
        crate::bail!("input holds {} elements, output {}", input.len(), out.len());
    }
    if I::BITS != 8 {
        crate::bail!("the 8-bit softmax got {}-bit input", I::BITS);
    }
    // An 8-bit element lies at most 255 below its row's maximum.
    let below = |v: I, max: i32| (max - v.to_i32()) as u8 as usize;
    for (x, o) in rows(input, depth)?.zip(out.chunks_exact_mut(depth.max(1))) {
        let max_in_row = x.iter().fold(I::MIN, |m, &v| m.max(v.to_i32()));
        let sum_of_exps = x.iter().fold(0i32, |s, &v| s.wrapping_add(p.sum_term[below(v, max_in_row)]));
        let (shifted_scale, num_bits_over_unit) = get_reciprocal(sum_of_exps, SOFTMAX_ACCUM_BITS);
        let exponent = num_bits_over_unit + 31 - O::BITS;
        if !(0..=31).contains(&exponent) {
            crate::bail!("softmax exponent {exponent} is out of range");
        }
        for (oc, &v) in o.iter_mut().zip(x) {
            let exp_in_0 = p.exp[below(v, max_in_row)];
            *oc = if exp_in_0 < 0 {
                O::from_i32(O::MIN)
            } else {
                let unsat = rounding_divide_by_pot(srdhm(shifted_scale, exp_in_0), exponent);
                O::from_i32(unsat.wrapping_add(O::MIN).clamp(O::MIN, O::MAX))
            };
        }
    }
    Ok(())
}

/// The 8-bit log-softmax parameters (`PreprocessLogSoftmaxScalingExp`, beta 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogSoftmax8Params {
    pub input_multiplier: i32,
    pub input_left_shift: i32,
    pub reverse_scaling_divisor: i32,
    pub reverse_scaling_right_shift: i32,
    pub diff_min: i32,
}

impl LogSoftmax8Params {
    /// As LogSoftmaxPrepare (reference kernel) computes them.
    pub fn new(input_scale: f32) -> Result<LogSoftmax8Params> {
        let s = Softmax8Params::new(1.0, input_scale)?;
        let shift = 31 - s.input_left_shift;
        if !(0..31).contains(&shift) {
            crate::bail!("input scale {input_scale} gives an unsupported left shift {}", s.input_left_shift);
        }
        let real_reverse = f64::from(1i32 << shift) / f64::from(s.input_multiplier);
        let (reverse_scaling_divisor, reverse_left_shift) = quantize_multiplier_smaller_than_one_exp(real_reverse)?;
        Ok(LogSoftmax8Params {
            input_multiplier: s.input_multiplier,
            input_left_shift: s.input_left_shift,
            reverse_scaling_divisor,
            reverse_scaling_right_shift: -reverse_left_shift,
            diff_min: -calculate_input_radius(5, s.input_left_shift, 31),
        })
    }
}

/// Quantized log-softmax (`reference_integer_ops::LogSoftmax` for int8, the uint8
/// `reference_ops::LogSoftmax`): the output zero point is `T::MAX` (127 or 255).
pub fn log_softmax_quantized<T: SoftmaxInt>(
    input: &[T],
    depth: usize,
    p: &LogSoftmax8Params,
    out: &mut [T],
) -> Result<()> {
    if input.len() != out.len() {
        crate::bail!("input holds {} elements, output {}", input.len(), out.len());
    }
    const INPUT_BITS: i32 = 5;
    const ACCUM_BITS: i32 = 12;
    const OUTPUT_BITS: i32 = 4;
    for (x, o) in rows(input, depth)?.zip(out.chunks_exact_mut(depth.max(1))) {
        let max_in_row = x.iter().fold(T::MIN, |m, &v| m.max(v.to_i32()));
        let mut sum_of_exps: i32 = 0;
        for &v in x {
            let diff = v.to_i32() - max_in_row;
            if diff >= p.diff_min {
                let d = multiply_by_quantized_multiplier(diff, p.input_multiplier, p.input_left_shift);
                sum_of_exps = sum_of_exps.wrapping_add(rescale(exp_on_negative_values(d, INPUT_BITS), 0, ACCUM_BITS));
            }
        }
        let log_sum = log_x_for_x_greater_than_or_equal_to_1(sum_of_exps, ACCUM_BITS, INPUT_BITS);
        let shifted_log_sum = log_sum.wrapping_add(i32::MIN);
        let adjusted_diff_min = (p.diff_min - 1).max(multiply_by_quantized_multiplier(
            shifted_log_sum,
            p.reverse_scaling_divisor,
            -p.reverse_scaling_right_shift,
        ));
        for (oc, &v) in o.iter_mut().zip(x) {
            let diff = v.to_i32() - max_in_row;
            *oc = if diff > adjusted_diff_min {
                let d = multiply_by_quantized_multiplier(diff, p.input_multiplier, p.input_left_shift);
                let r =
                    rounding_divide_by_pot(d.wrapping_sub(log_sum), 31 - INPUT_BITS - OUTPUT_BITS).wrapping_add(T::MAX);
                T::from_i32(r.clamp(T::MIN, T::MAX))
            } else {
                T::from_i32(T::MIN)
            };
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// int16
// ---------------------------------------------------------------------------------------

/// The int16 softmax tables and input rescaling.
pub struct Softmax16Params {
    pub exp_lut: [i16; 513],
    pub one_over_one_plus_x_lut: [i16; 513],
    pub input_multiplier: i32,
    pub input_left_shift: i32,
}

impl Softmax16Params {
    /// As SoftmaxPrepare computes them for int16 (double-precision tables).
    pub fn new(beta: f32, input_scale: f32) -> Result<Softmax16Params> {
        let range = f64::from(i32::from(i16::MAX) - i32::from(i16::MIN));
        let exp_lut = lut_populate_int16_f64(10.0 / range, i32::from(i16::MAX), 2.0 / range, 0, f64::exp);
        let one_over_one_plus_x_lut =
            lut_populate_int16_f64(1.0 / range, i32::from(i16::MIN), 2.0 / range, 0, |v| 1.0 / (1.0 + v));
        let rescale = f64::from(input_scale * beta) / (10.0 / 65535.0);
        let (input_multiplier, input_left_shift) = try_quantize_multiplier(rescale)?;
        Ok(Softmax16Params { exp_lut, one_over_one_plus_x_lut, input_multiplier, input_left_shift })
    }
}

/// int16 softmax (`reference_ops::SoftmaxInt16`).
pub fn softmax_i16(input: &[i16], depth: usize, p: &Softmax16Params, out: &mut [i16]) -> Result<()> {
    if input.len() != out.len() {
        crate::bail!("input holds {} elements, output {}", input.len(), out.len());
    }
    for (x, o) in rows(input, depth)?.zip(out.chunks_exact_mut(depth.max(1))) {
        let max_in_row = x.iter().fold(i16::MIN, |m, &v| m.max(v));
        let mut sum_of_exps: i32 = 0;
        for (oc, &v) in o.iter_mut().zip(x) {
            let diff = i32::from(v) - i32::from(max_in_row);
            let scaled = multiply_by_quantized_multiplier(diff, p.input_multiplier, p.input_left_shift);
            let sym = scaled.wrapping_add(32767).clamp(-32768, 32767) as i16;
            *oc = lut_lookup_int16(sym, &p.exp_lut);
            sum_of_exps = sum_of_exps.wrapping_add(i32::from(*oc));
        }
        let headroom_plus_one = (sum_of_exps as u32).leading_zeros() as i32;
        if !(1..=31).contains(&headroom_plus_one) {
            crate::bail!("softmax sum {sum_of_exps} is out of range");
        }
        let shifted_sum = (((i64::from(sum_of_exps) << (headroom_plus_one - 1)) + (1 << 13)) >> 14) as i32;
        let sym_shifted_sum = shifted_sum.wrapping_add(-((1 << 15) + (1 << 16)));
        let sat = sym_shifted_sum.clamp(-32768, 32767) as i16;
        let reciprocal = i64::from(lut_lookup_int16(sat, &p.one_over_one_plus_x_lut));
        let right_shift = 31 - headroom_plus_one;
        let round: i64 = if right_shift > 0 { 1 << (right_shift - 1) } else { 0 };
        for oc in o.iter_mut() {
            let r = ((i64::from(*oc) * reciprocal + round) >> right_shift) as i32;
            *oc = r.clamp(0, 32767) as i16;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

/// What SOFTMAX computes for the node's types.
enum SoftmaxPlan {
    /// float32 with the options' `beta`.
    F32(f32),
    Q8(Softmax8Params),
    Q16(Box<Softmax16Params>),
}

fn softmax_plan(ctx: &OpCtx<'_>, b: f32) -> Result<(SoftmaxPlan, usize)> {
    crate::kernels::shape_util::check_arity(ctx, SOFTMAX, 1, 1, 1)?;
    let input = ctx.input(0).map_err(in_op(SOFTMAX))?;
    let out = ctx.output(0).map_err(in_op(SOFTMAX))?;
    if input.shape.is_empty() {
        return Err(op_error(SOFTMAX, "the input must have rank 1 or more"));
    }
    let depth = *input.shape.last().unwrap_or(&1) as usize;
    use TfLiteType::*;
    let plan = match (input.dtype, out.dtype) {
        (kTfLiteFloat32, kTfLiteFloat32) => SoftmaxPlan::F32(b),
        (kTfLiteInt8 | kTfLiteUInt8, kTfLiteInt8 | kTfLiteUInt8 | kTfLiteInt16) => {
            if (input.dtype == kTfLiteInt8) != (out.dtype == kTfLiteInt8) && out.dtype != kTfLiteInt16 {
                return Err(op_error(SOFTMAX, "int8 and uint8 cannot be mixed"));
            }
            if input.dtype == kTfLiteInt8 && out.dtype == kTfLiteInt8 {
                let q = out.quant();
                if q.zero_point != -128 || (q.scale - 1.0 / 256.0).abs() > 0.001 / 256.0 {
                    return Err(op_error(SOFTMAX, "int8 output must have zero point -128 and scale 1/256"));
                }
            }
            SoftmaxPlan::Q8(Softmax8Params::new(b, input.quant().scale).map_err(in_op(SOFTMAX))?)
        }
        (kTfLiteInt16, kTfLiteInt16) => {
            let (qi, qo) = (input.quant(), out.quant());
            if qo.zero_point != 0 || (qo.scale - 1.0 / 32768.0).abs() > 0.001 / 32768.0 || qi.zero_point != 0 {
                return Err(op_error(SOFTMAX, "int16 needs zero points 0 and output scale 1/32768"));
            }
            if input.shape.len() > 4 {
                return Err(op_error(SOFTMAX, "int16 supports only 1D-4D inputs"));
            }
            SoftmaxPlan::Q16(Box::new(Softmax16Params::new(b, qi.scale).map_err(in_op(SOFTMAX))?))
        }
        (i, o) => {
            return Err(op_error(SOFTMAX, format!("input {} with output {} is not supported", i.name(), o.name())));
        }
    };
    Ok((plan, depth))
}

/// SOFTMAX; its State is the [`SoftmaxPlan`] (the quantized scaling and, for int16, the
/// lookup tables) and the depth of the last dimension.
struct Softmax;

impl BuiltinKernel for Softmax {
    const NAME: &'static str = SOFTMAX;
    type Params = TfLiteSoftmaxParams;
    type State = (SoftmaxPlan, usize);

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteSoftmaxParams) -> Result<(SoftmaxPlan, usize)> {
        let plan = softmax_plan(ctx, p.beta)?;
        let input = ctx.input(0)?;
        ctx.resize_output(0, input.shape).map_err(in_op(SOFTMAX))?;
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteSoftmaxParams, (plan, depth): &mut (SoftmaxPlan, usize)) -> Result<()> {
        let depth = *depth;
        let input = ctx.input(0)?;
        let mut out = ctx.output(0)?;
        check_out_shape(SOFTMAX, out.shape, input.shape)?;
        use TfLiteType::*;
        match plan {
            SoftmaxPlan::F32(beta) => softmax_f32(input.data()?, depth, *beta, out.data_mut()?),
            SoftmaxPlan::Q8(p) => match (input.dtype, out.dtype) {
                (kTfLiteInt8, kTfLiteInt8) => softmax_quantized::<i8, i8>(input.data()?, depth, p, out.data_mut()?),
                (kTfLiteUInt8, kTfLiteUInt8) => softmax_quantized::<u8, u8>(input.data()?, depth, p, out.data_mut()?),
                (kTfLiteInt8, _) => softmax_quantized::<i8, i16>(input.data()?, depth, p, out.data_mut()?),
                _ => softmax_quantized::<u8, i16>(input.data()?, depth, p, out.data_mut()?),
            },
            SoftmaxPlan::Q16(p) => softmax_i16(input.data()?, depth, p, out.data_mut()?),
        }
        .map_err(in_op(SOFTMAX))
    }
}

fn log_softmax_params(ctx: &OpCtx<'_>) -> Result<(Option<LogSoftmax8Params>, usize)> {
    let (input, out) = unary_operands(ctx, LOG_SOFTMAX)?;
    if input.shape.is_empty() {
        return Err(op_error(LOG_SOFTMAX, "the input must have rank 1 or more"));
    }
    let depth = *input.shape.last().unwrap_or(&1) as usize;
    use TfLiteType::*;
    match input.dtype {
        kTfLiteFloat32 => Ok((None, depth)),
        kTfLiteUInt8 | kTfLiteInt8 => {
            let q = out.quant();
            let zp = if input.dtype == kTfLiteUInt8 { 255 } else { 127 };
            if q.scale != 16.0 / 256.0 || q.zero_point != zp {
                return Err(op_error(LOG_SOFTMAX, format!("the output must have scale 16/256 and zero point {zp}")));
            }
            Ok((Some(LogSoftmax8Params::new(input.quant().scale).map_err(in_op(LOG_SOFTMAX))?), depth))
        }
        other => Err(op_error(LOG_SOFTMAX, format!("type {} is not supported", other.name()))),
    }
}

/// LOG_SOFTMAX; its State is the 8-bit fixed-point parameters (`None` for float32) and
/// the depth of the last dimension.
struct LogSoftmax;

impl BuiltinKernel for LogSoftmax {
    const NAME: &'static str = LOG_SOFTMAX;
    type Params = ();
    type State = (Option<LogSoftmax8Params>, usize);

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<(Option<LogSoftmax8Params>, usize)> {
        let params = log_softmax_params(ctx)?;
        let input = ctx.input(0)?;
        ctx.resize_output(0, input.shape).map_err(in_op(LOG_SOFTMAX))?;
        Ok(params)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), (p, depth): &mut (Option<LogSoftmax8Params>, usize)) -> Result<()> {
        let depth = *depth;
        let (input, mut out) = unary_operands(ctx, LOG_SOFTMAX)?;
        check_out_shape(LOG_SOFTMAX, out.shape, input.shape)?;
        match (input.dtype, p) {
            (TfLiteType::kTfLiteFloat32, _) => log_softmax_f32(input.data()?, depth, out.data_mut()?),
            (TfLiteType::kTfLiteInt8, Some(p)) => log_softmax_quantized::<i8>(input.data()?, depth, p, out.data_mut()?),
            (TfLiteType::kTfLiteUInt8, Some(p)) => {
                log_softmax_quantized::<u8>(input.data()?, depth, p, out.data_mut()?)
            }
            _ => Err(Error::new("unsupported type")),
        }
        .map_err(in_op(LOG_SOFTMAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn float() {
        let mut out = [0.0f32; 4];
        softmax_f32(&[1.0, 2.0, 3.0, 4.0], 2, 1.0, &mut out).unwrap();
        let e = 1.0f32.exp();
        assert!((out[0] - 1.0 / (1.0 + e)).abs() < 1e-6 && (out[1] - e / (1.0 + e)).abs() < 1e-6);
        assert_eq!(out[0], out[2]);
        log_softmax_f32(&[0.0, 0.0], 2, &mut out[..2]).unwrap();
        assert!((out[0] - 0.5f32.ln()).abs() < 1e-6);
    }

    #[test]
    fn tables_give_the_reference_per_element_bits() {
        // The reference kernel's per-element computation, for comparison.
        fn reference(x: &[i8], p: &Softmax8Params) -> Vec<i8> {
            let max = x.iter().map(|&v| i32::from(v)).max().unwrap();
            let scaled = |v: i8| {
                let diff = i32::from(v) - max;
                (diff >= p.diff_min)
                    .then(|| multiply_by_quantized_multiplier(diff, p.input_multiplier, p.input_left_shift))
            };
            let sum = x.iter().filter_map(|&v| scaled(v)).fold(0i32, |s, d| {
                s.wrapping_add(rescale(exp_on_negative_values(d, SOFTMAX_SCALED_DIFF_BITS), 0, SOFTMAX_ACCUM_BITS))
            });
            let (shifted_scale, bits) = get_reciprocal(sum, SOFTMAX_ACCUM_BITS);
            let exponent = bits + 31 - 8;
            x.iter()
                .map(|&v| match scaled(v) {
                    Some(d) => {
                        let e = exp_on_negative_values(d, SOFTMAX_SCALED_DIFF_BITS);
                        (rounding_divide_by_pot(srdhm(shifted_scale, e), exponent) - 128).clamp(-128, 127) as i8
                    }
                    None => -128,
                })
                .collect()
        }
        let mut seed = 5u32;
        for (beta, scale) in [(1.0f32, 0.1f32), (1.0, 0.02), (0.5, 0.25), (2.0, 0.06), (1.0, 1.0)] {
            let p = Softmax8Params::new(beta, scale).unwrap();
            for depth in [1usize, 7, 300, 1001] {
                let x: Vec<i8> = (0..depth)
                    .map(|_| {
                        seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
                        (seed >> 24) as u8 as i8
                    })
                    .collect();
                let mut got = vec![0i8; depth];
                softmax_quantized::<i8, i8>(&x, depth, &p, &mut got).unwrap();
                assert_eq!(got, reference(&x, &p), "beta {beta} scale {scale} depth {depth}");
            }
        }
    }

    #[test]
    fn int8_matches_float_closely() {
        // softmax_test.cc style: scale 0.1 input, output 1/256 zp -128.
        let p = Softmax8Params::new(1.0, 0.1).unwrap();
        let x: Vec<i8> = vec![-20, 0, 10, 30, -128, 127];
        let mut out = vec![0i8; 6];
        softmax_quantized::<i8, i8>(&x, 6, &p, &mut out).unwrap();
        let xf: Vec<f32> = x.iter().map(|&v| v as f32 * 0.1).collect();
        let mut ref_out = vec![0.0f32; 6];
        softmax_f32(&xf, 6, 1.0, &mut ref_out).unwrap();
        for (q, f) in out.iter().zip(&ref_out) {
            let got = (*q as i32 + 128) as f32 / 256.0;
            assert!((got - f).abs() <= 1.0 / 256.0 + 1e-6, "{got} vs {f}");
        }
    }

    #[test]
    fn log_softmax_int8_close() {
        let p = LogSoftmax8Params::new(0.05).unwrap();
        let x: Vec<i8> = vec![-100, -10, 0, 50, 120];
        let mut out = vec![0i8; 5];
        log_softmax_quantized::<i8>(&x, 5, &p, &mut out).unwrap();
        let xf: Vec<f32> = x.iter().map(|&v| v as f32 * 0.05).collect();
        let mut r = vec![0.0f32; 5];
        log_softmax_f32(&xf, 5, &mut r).unwrap();
        for (q, f) in out.iter().zip(&r) {
            let got = (*q as i32 - 127) as f32 * 16.0 / 256.0;
            if *f > -7.9 {
                assert!((got - f).abs() <= 16.0 / 256.0, "{got} vs {f}");
            }
        }
    }

    #[test]
    fn int16_close() {
        let p = Softmax16Params::new(1.0, 1.0 / 2048.0).unwrap();
        let x: Vec<i16> = vec![-4096, 0, 2048, 4096];
        let mut out = vec![0i16; 4];
        softmax_i16(&x, 4, &p, &mut out).unwrap();
        let xf: Vec<f32> = x.iter().map(|&v| v as f32 / 2048.0).collect();
        let mut r = vec![0.0f32; 4];
        softmax_f32(&xf, 4, 1.0, &mut r).unwrap();
        for (q, f) in out.iter().zip(&r) {
            assert!((*q as f32 / 32768.0 - f).abs() < 2e-3, "{q} vs {f}");
        }
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt8, &[1, 3], &[0i8, 10, 20], Some(qp(0.1, 0)), false);
        let o = g.output(kTfLiteInt8, Some(qp(1.0 / 256.0, -128)));
        let p = TfLiteSoftmaxParams { beta: 1.0 };
        assert_eq!(g.run(&registration(), &[x], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        let bad = g.output(kTfLiteInt8, Some(qp(0.1, 0)));
        assert_eq!(g.run(&registration(), &[x], &[bad], Some(p)), TfLiteStatus::kTfLiteError);
        let lo = g.output(kTfLiteInt8, Some(qp(16.0 / 256.0, 127)));
        assert_eq!(g.run::<()>(&log_softmax_registration(), &[x], &[lo], None), TfLiteStatus::kTfLiteOk);
    }
}
