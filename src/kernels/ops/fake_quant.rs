//! FAKE_QUANT (TFLite `kernels/fake_quant.cc`, reference `FakeQuant`): float32 values
//! quantized to `num_bits` over the range [min, max] and dequantized again, with
//! TensorFlow's `FakeQuantWithMinMaxArgs` nudging (the range is shifted so that 0.0 is
//! exactly representable).
//!
//! As in TFLite, `narrow_range` (version 2's option) is refused at Prepare. TFLite only
//! debug-checks the rest; here `num_bits` must be in 1..=16 (above, C++'s cast of the zero
//! point to uint16 is undefined) and `min < max`, both finite (an empty range divides by a
//! zero scale).

use crate::abi::builtin_op_data::TfLiteFakeQuantParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, check_type, in_op, op_error};

const OP: &str = "FAKE_QUANT";

/// The FAKE_QUANT registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<FakeQuant>(TfLiteBuiltinOperator::kTfLiteBuiltinFakeQuant)
}

/// The nudged range: (nudged_min, nudged_max, scale), computed in float32 as TFLite's
/// `NudgeQuantizationRange` does, for quantized values 0..=2^num_bits-1.
pub fn nudge(min: f32, max: f32, num_bits: i32) -> (f32, f32, f32) {
    let quant_min = 0.0f32;
    let quant_max = ((1i32 << num_bits) - 1) as f32;
    let scale = (max - min) / (quant_max - quant_min);
    let zero_point_from_min = quant_min - min / scale;
    let zero_point = if zero_point_from_min < quant_min {
        quant_min
    } else if zero_point_from_min > quant_max {
        quant_max
    } else {
        f32::from(zero_point_from_min.round() as u16)
    };
    ((quant_min - zero_point) * scale, (quant_max - zero_point) * scale, scale)
}

/// Fake-quantizes `input` into `out` over the nudged range of [min, max].
pub fn fake_quant(input: &[f32], min: f32, max: f32, num_bits: i32, out: &mut [f32]) {
    let (nudged_min, nudged_max, scale) = nudge(min, max, num_bits);
    let inv_scale = 1.0f32 / scale;
    for (o, &x) in out.iter_mut().zip(input) {
        // std::max / std::min: a NaN input is clamped to nudged_min, as in C++.
        let lo = if nudged_min < x { x } else { nudged_min };
        let clamped = if lo < nudged_max { lo } else { nudged_max };
        let shifted = clamped - nudged_min;
        *o = (shifted * inv_scale).round() * scale + nudged_min;
    }
}

/// FAKE_QUANT; stateless beyond its options.
struct FakeQuant;

fn check_options(p: &TfLiteFakeQuantParams) -> Result<()> {
    if p.narrow_range {
        return Err(op_error(
            OP,
            "narrow_range FakeQuant is not currently supported at runtime. narrow_range is only meant to be \
             applied to weights, not activations",
        ));
    }
    if !(1..=16).contains(&p.num_bits) {
        return Err(op_error(OP, format!("num_bits must be in [1, 16], got {}", p.num_bits)));
    }
    if !(p.min.is_finite() && p.max.is_finite() && p.min < p.max) {
        return Err(op_error(OP, format!("min ({}) must be less than max ({}), both finite", p.min, p.max)));
    }
    Ok(())
}

impl BuiltinKernel for FakeQuant {
    const NAME: &'static str = OP;
    type Params = TfLiteFakeQuantParams;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteFakeQuantParams) -> Result<()> {
        check_arity(ctx, OP, 1, 1, 1)?;
        check_options(p)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        check_type(OP, "input", input.dtype, &[TfLiteType::kTfLiteFloat32])?;
        ctx.set_output_type(0, input.dtype).map_err(in_op(OP))?;
        ctx.resize_output(0, input.shape).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteFakeQuantParams, _: &mut ()) -> Result<()> {
        check_options(p)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        if out.num_elements() != input.num_elements() {
            return Err(op_error(OP, "the output must have the input's size"));
        }
        let x = input.data::<f32>().map_err(in_op(OP))?;
        let o = out.data_mut::<f32>().map_err(in_op(OP))?;
        fake_quant(x, p.min, p.max, p.num_bits, o);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn nudges_zero_onto_the_grid() {
        // [-0.25, 0.75] over 255 steps: the zero point 63.75 rounds to 64.
        let (lo, hi, s) = nudge(-0.25, 0.75, 8);
        assert!((s - 1.0 / 255.0).abs() < 1e-9);
        assert_eq!((lo, hi), (-64.0 * s, 191.0 * s));
        // A range entirely above zero is shifted down to start at 0.
        let (lo, hi, _) = nudge(1.0, 4.0, 2);
        assert_eq!((lo, hi), (0.0, 3.0));
        // Entirely below zero: shifted up to end at 0.
        let (lo, hi, _) = nudge(-4.0, -1.0, 2);
        assert_eq!((lo, hi), (-3.0, 0.0));
    }

    #[test]
    fn quantizes_and_clamps() {
        let mut o = [0.0f32; 6];
        fake_quant(&[-5.0, -1.0, 0.0, 0.4, 0.5, 10.0], -1.0, 2.0, 2, &mut o);
        // Four levels: -1, 0, 1, 2; 0.5 rounds away from zero.
        assert_eq!(o, [-1.0, -1.0, 0.0, 0.0, 1.0, 2.0]);
        let mut e: [f32; 0] = [];
        fake_quant(&[], -1.0, 1.0, 8, &mut e);
    }

    #[test]
    fn glue_and_refusals() {
        let run = |p: TfLiteFakeQuantParams| {
            let mut g = Graph::new();
            let x = g.tensor(kTfLiteFloat32, &[2], &[0.3f32, -2.0], None, false);
            let o = g.output(kTfLiteFloat32, None);
            let st = g.run(&registration(), &[x], &[o], Some(p));
            (st, if st == TfLiteStatus::kTfLiteOk { g.data::<f32>(o) } else { vec![] })
        };
        let p = TfLiteFakeQuantParams { min: -1.0, max: 2.0, num_bits: 2, narrow_range: false };
        assert_eq!(run(p), (TfLiteStatus::kTfLiteOk, vec![0.0, -1.0]));
        for bad in [
            TfLiteFakeQuantParams { narrow_range: true, ..p },
            TfLiteFakeQuantParams { num_bits: 0, ..p },
            TfLiteFakeQuantParams { max: -1.0, ..p },
            TfLiteFakeQuantParams { num_bits: 17, ..p },
            TfLiteFakeQuantParams { min: 3.0, ..p },
            TfLiteFakeQuantParams { max: f32::NAN, ..p },
        ] {
            assert_eq!(run(bad).0, TfLiteStatus::kTfLiteError);
        }
    }
}
