//! LOGISTIC and TANH (TFLite `kernels/activations.cc` reference kernels,
//! `reference/logistic.h`, `reference/tanh.h`, `integer_ops/logistic.h`,
//! `integer_ops/tanh.h`).
//!
//! float32: TFLite's reference loops (LOGISTIC with its cutoffs: 1 above 16.619..., `exp(x)`
//! below -9). uint8/int8: a 256-entry table built as `LUTPopulate` builds it (LOGISTIC
//! needs the output scale 1/256). int16 (zero points 0, output scale 2^-15): the
//! reference integer kernels, which rescale the input to Q3.12-ish fixed point (a
//! power-of-two shift for power-of-two scales, else a 3 * 2^k multiplier) and interpolate
//! TFLite's 256-entry sigmoid table.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, QuantParams};
use crate::kernels::fixed_point::{SIGMOID_TABLE_UINT16, lut_populate_8bit};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::checked_log2;
use crate::kernels::shape_util::{check_out_shape, in_op, op_error, unary_operands};
use crate::kernels::threadpool::elementwise::split_unary_f32;
use crate::kernels::threadpool::recommended_threads;

/// The LOGISTIC registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Activation<false>>(TfLiteBuiltinOperator::kTfLiteBuiltinLogistic)
}

/// The TANH registration.
pub fn tanh_registration() -> TfLiteRegistration {
    kernel::registration::<Activation<true>>(TfLiteBuiltinOperator::kTfLiteBuiltinTanh)
}

/// Which function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Logistic,
    Tanh,
}

impl Kind {
    const fn name(self) -> &'static str {
        match self {
            Kind::Logistic => "LOGISTIC",
            Kind::Tanh => "TANH",
        }
    }
}

/// Float logistic as the reference kernel computes it.
pub fn logistic_f32(x: f32) -> f32 {
    // 16.619047164916992188f, written as bits (the exact f32 TFLite uses).
    const CUTOFF_UPPER: f32 = f32::from_bits(0x4184_f3cf);
    const CUTOFF_LOWER: f32 = -9.0;
    if x > CUTOFF_UPPER {
        1.0
    } else if x < CUTOFF_LOWER {
        x.exp()
    } else {
        1.0 / (1.0 + (-x).exp())
    }
}

/// The function the 8-bit tables sample (as activations.cc's lambdas).
fn lut_transform(kind: Kind) -> fn(f32) -> f32 {
    match kind {
        Kind::Logistic => |v| 1.0 / (1.0 + (-v).exp()),
        Kind::Tanh => f32::tanh,
    }
}

/// int16 input rescaling (`input_multiplier`, `input_left_shift`) as Tanh/SigmoidPrepare
/// compute them; a multiplier of 0 means the power-of-two case.
pub fn int16_params(kind: Kind, input_scale: f32) -> (i32, i32) {
    let log2 = checked_log2(input_scale);
    let mut pot = log2.is_some();
    let left_shift = (15 - 3) + log2.unwrap_or(0);
    pot &= match kind {
        Kind::Logistic => left_shift == 0,
        Kind::Tanh => left_shift == 0 || left_shift == 1,
    };
    if pot {
        return (0, left_shift);
    }
    let mut multiplier = f64::from(input_scale) * 4096.0 * 3.0;
    let mut shift = 0;
    while multiplier <= 32767.0 / 2.0 && shift <= 30 {
        shift += 1;
        multiplier *= 2.0;
    }
    (multiplier as i32, shift)
}

/// `reference_integer_ops::Logistic` / `Tanh` on int16.
pub fn int16_activation(kind: Kind, input: &[i16], multiplier: i32, left_shift: i32, out: &mut [i16]) -> Result<()> {
    if input.len() != out.len() {
        crate::bail!("input holds {} elements, output {}", input.len(), out.len());
    }
    let (multiplier, left_shift) = if multiplier == 0 { (3 << left_shift, 0) } else { (multiplier, left_shift) };
    let round = if left_shift > 0 { 1i32 << (left_shift - 1) } else { 0 };
    let table = &SIGMOID_TABLE_UINT16;
    for (o, &x) in out.iter_mut().zip(input) {
        let v = (i32::from(x).wrapping_mul(multiplier).wrapping_add(round)) >> left_shift;
        let abs = v.unsigned_abs();
        *o = match kind {
            Kind::Logistic => {
                let uh = abs >> 9;
                let mut r: u32 = if uh >= 255 {
                    0x7fff << 10
                } else {
                    let (ua, ub) = (u32::from(table[uh as usize]), u32::from(table[uh as usize + 1]));
                    (ua << 9).wrapping_add((abs & 0x1ff).wrapping_mul(ub.wrapping_sub(ua)))
                };
                r = if v >= 0 {
                    r.wrapping_add(1 << 9)
                } else {
                    (1u32 << 25).wrapping_sub(r).wrapping_add((1 << 9) - 1)
                };
                (r >> 10) as i16
            }
            Kind::Tanh => {
                let uh = abs >> 8;
                let mut r: i32 = if uh >= 255 {
                    0xffff << 8
                } else {
                    let (ua, ub) = (u32::from(table[uh as usize]), u32::from(table[uh as usize + 1]));
                    ((ua << 8).wrapping_add((abs & 0xff).wrapping_mul(ub.wrapping_sub(ua)))) as i32
                };
                r = if v >= 0 {
                    r.wrapping_sub(1 << 23).wrapping_add(1 << 7)
                } else {
                    r.wrapping_neg().wrapping_add(1 << 23).wrapping_add((1 << 7) - 1)
                };
                (r >> 8) as i16
            }
        };
    }
    Ok(())
}

fn check_quant(kind: Kind, dtype: TfLiteType, qi: QuantParams, qo: QuantParams) -> Result<()> {
    let op = kind.name();
    match dtype {
        TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 => {
            if kind == Kind::Logistic && f64::from(qo.scale) != 1.0 / 256.0 {
                return Err(op_error(op, "the output scale must be 1/256"));
            }
        }
        TfLiteType::kTfLiteInt16 => {
            if qi.zero_point != 0 || qo.zero_point != 0 {
                return Err(op_error(op, "int16 zero points must be 0"));
            }
            if checked_log2(qo.scale) != Some(-15) {
                return Err(op_error(op, "the int16 output scale must be 2^-15"));
            }
            if kind == Kind::Logistic && f64::from(qo.scale) != 1.0 / 32768.0 {
                return Err(op_error(op, "the int16 output scale must be 1/32768"));
            }
        }
        TfLiteType::kTfLiteFloat32 => {}
        other => return Err(op_error(op, format!("type {} is not supported", other.name()))),
    }
    Ok(())
}

/// How a node computes, chosen at Prepare from the input type.
enum Plan {
    F32,
    /// uint8 / int8: the function's 256-entry table.
    Lut(Box<[u8; 256]>),
    /// int16: the input multiplier and left shift of the fixed-point kernel.
    I16(i32, i32),
}

const fn kind_of(tanh: bool) -> Kind {
    if tanh { Kind::Tanh } else { Kind::Logistic }
}

/// LOGISTIC (`TANH` false) or TANH (`TANH` true); its State is the [`Plan`]: the lookup
/// table of 8-bit types or int16's input rescaling.
struct Activation<const TANH: bool>;

impl<const TANH: bool> BuiltinKernel for Activation<TANH> {
    const NAME: &'static str = kind_of(TANH).name();
    type Params = ();
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Plan> {
        let kind = kind_of(TANH);
        let (input, out) = unary_operands(ctx, kind.name())?;
        let (qi, qo) = (input.quant(), out.quant());
        check_quant(kind, input.dtype, qi, qo)?;
        let plan = match input.dtype {
            TfLiteType::kTfLiteFloat32 => Plan::F32,
            TfLiteType::kTfLiteUInt8 | TfLiteType::kTfLiteInt8 => {
                let signed = input.dtype == TfLiteType::kTfLiteInt8;
                let t = lut_transform(kind);
                Plan::Lut(Box::new(lut_populate_8bit(signed, qi.scale, qi.zero_point, qo.scale, qo.zero_point, t)))
            }
            _ => {
                let (m, s) = int16_params(kind, qi.scale);
                Plan::I16(m, s)
            }
        };
        ctx.resize_output(0, input.shape).map_err(in_op(kind.name()))?;
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut Plan) -> Result<()> {
        let kind = kind_of(TANH);
        let op = kind.name();
        let (input, mut out) = unary_operands(ctx, op)?;
        check_out_shape(op, out.shape, input.shape)?;
        match (input.dtype, plan) {
            (TfLiteType::kTfLiteFloat32, _) => {
                let (x, o) = (input.data::<f32>()?, out.data_mut::<f32>()?);
                match kind {
                    Kind::Logistic => split_unary_f32(recommended_threads(ctx), x, o, &|x, o| {
                        crate::microkernels::f32_vsigmoid::sigmoid(crate::microkernels::table(), x, o)
                    }),
                    Kind::Tanh => {
                        for (o, &x) in o.iter_mut().zip(x) {
                            *o = x.tanh();
                        }
                        Ok(())
                    }
                }
            }
            (TfLiteType::kTfLiteUInt8, Plan::Lut(lut)) => {
                for (o, &x) in out.data_mut::<u8>()?.iter_mut().zip(input.data::<u8>()?) {
                    *o = lut[x as usize];
                }
                Ok(())
            }
            (TfLiteType::kTfLiteInt8, Plan::Lut(lut)) => {
                for (o, &x) in out.data_mut::<i8>()?.iter_mut().zip(input.data::<i8>()?) {
                    *o = lut[x as u8 as usize] as i8;
                }
                Ok(())
            }
            (TfLiteType::kTfLiteInt16, Plan::I16(m, s)) => {
                int16_activation(kind, input.data()?, *m, *s, out.data_mut()?)
            }
            (other, _) => Err(op_error(op, format!("type {} is not supported", other.name()))),
        }
        .map_err(in_op(op))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn float_cutoffs() {
        assert_eq!(logistic_f32(20.0), 1.0);
        assert_eq!(logistic_f32(-10.0), (-10.0f32).exp());
        assert_eq!(logistic_f32(0.0), 0.5);
    }

    #[test]
    fn int16_close_to_float() {
        for kind in [Kind::Logistic, Kind::Tanh] {
            for scale in [1.0 / 4096.0, 3.0 / 4096.0, 0.001] {
                let (m, s) = int16_params(kind, scale);
                let x: Vec<i16> = vec![-32768, -8000, -100, 0, 100, 5000, 32767];
                let mut out = vec![0i16; x.len()];
                int16_activation(kind, &x, m, s, &mut out).unwrap();
                for (&q, &o) in x.iter().zip(&out) {
                    let xf = q as f32 * scale;
                    let want = match kind {
                        Kind::Logistic => logistic_f32(xf),
                        Kind::Tanh => xf.tanh(),
                    };
                    assert!((o as f32 / 32768.0 - want).abs() < 1e-3, "{kind:?} {scale} {q}: {o} vs {want}");
                }
            }
        }
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt8, &[3], &[-128i8, 0, 127], Some(qp(0.1, 0)), false);
        let o = g.output(kTfLiteInt8, Some(qp(1.0 / 256.0, -128)));
        assert_eq!(g.run::<()>(&registration(), &[x], &[o], None), TfLiteStatus::kTfLiteOk);
        let v = g.data::<i8>(o);
        assert_eq!(v[1], 0);
        assert!(v[0] < -120 && v[2] > 120);
        let t = g.output(kTfLiteInt8, Some(qp(1.0 / 128.0, 0)));
        assert_eq!(g.run::<()>(&tanh_registration(), &[x], &[t], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i8>(t)[1], 0);
        let bad = g.output(kTfLiteInt8, Some(qp(0.5, 0)));
        assert_eq!(g.run::<()>(&registration(), &[x], &[bad], None), TfLiteStatus::kTfLiteError);
    }
}
