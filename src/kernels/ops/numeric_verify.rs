//! The custom op `NumericVerify` (TFLite `kernels/numeric_verify.cc`): checks a quantized
//! tensor against the float tensor it stands for.
//!
//! Inputs: the quantized tensor (uint8, int8, int16, or float16) and the float32
//! reference. The output (float32, the quantized input's shape, kept in the persistent
//! arena) is `dequantized - reference` per element. Options (FlexBuffer map):
//! `tolerance` (float) and `log_if_failed` (bool). When `log_if_failed` is set and the
//! tolerance is at least 0.1, an element whose difference exceeds `tolerance * scale` is
//! an error (the output holds the differences up to it); otherwise the op only computes
//! the differences (TFLite also logs their statistics, which is left out here).
//!
//! As TFLite: a constant quantized input is checked on the first run only; later runs
//! leave the output as it was, even after a failed check. Per-channel uint8/int8 inputs
//! are dequantized per channel; the tolerance uses the tensor's first scale.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::flexbuffer::{FlexMap, Scalar};
use crate::kernels::float_conv::f16_to_f32;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::ops::quantize::{dequantize, dequantize_per_channel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

/// The custom op's name.
pub const OP: &str = "NumericVerify";

/// The `NumericVerify` registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<NumericVerify>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

/// The op's options.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VerifyOptions {
    pub tolerance: f32,
    pub log_if_failed: bool,
}

impl VerifyOptions {
    /// Reads the custom options; missing keys read as 0 and false, as FlexBuffers does.
    pub fn parse(buf: &[u8]) -> Result<VerifyOptions> {
        let m = FlexMap::root_of_scalars(buf)?;
        // FlexBuffers' `AsFloat`: any number converted, null 0.
        let tolerance = match m.get("tolerance")? {
            Scalar::Null => 0.0,
            Scalar::Int(v) => v as f64 as f32,
            Scalar::UInt(v) => v as f64 as f32,
            Scalar::Float(v) => v as f32,
            Scalar::Bool(b) => f32::from(u8::from(b)),
        };
        Ok(VerifyOptions { tolerance, log_if_failed: m.get("log_if_failed")?.as_bool() })
    }

    /// Whether differences past the tolerance are errors.
    pub fn checks(&self) -> bool {
        self.log_if_failed && self.tolerance >= 0.1
    }
}

/// Writes `dequantized - reference` into `out`; when `max_diff` is given, stops with an
/// error at the first element whose difference exceeds it.
pub fn verify(dequantized: &[f32], reference: &[f32], max_diff: Option<f32>, out: &mut [f32]) -> Result<()> {
    if reference.len() < dequantized.len() || out.len() != dequantized.len() {
        crate::bail!(
            "the reference holds {} values and the output {}, the quantized input {}",
            reference.len(),
            out.len(),
            dequantized.len()
        );
    }
    for (i, ((o, &d), &r)) in out.iter_mut().zip(dequantized).zip(reference).enumerate() {
        *o = d - r;
        if let Some(m) = max_diff
            && o.abs() > m
        {
            crate::bail!("mismatch at element {i}: {r} is quantized to {d}; |{r} - {d}| = {} > {m}", o.abs());
        }
    }
    Ok(())
}

/// The input's values as float, per channel where it has several scales.
fn dequantized(input: &TensorView<'_>) -> Result<Vec<f32>> {
    let n = input.num_elements();
    let mut out = vec![0f32; n];
    let channels = match input.affine_quant() {
        Some((s, z, d)) if s.len() > 1 => {
            let d = usize::try_from(d)
                .ok()
                .filter(|&d| d < input.shape.len())
                .ok_or_else(|| Error::new(format!("quantized dimension {d} is out of range")))?;
            Some((s, z, d))
        }
        _ => None,
    };
    use TfLiteType::*;
    match (input.dtype, channels) {
        (kTfLiteFloat16, _) => {
            for (y, &h) in out.iter_mut().zip(input.data::<u16>()?) {
                *y = f16_to_f32(h);
            }
        }
        (kTfLiteUInt8, Some((s, z, d))) => dequantize_per_channel::<u8>(input.data()?, input.shape, d, s, z, &mut out)?,
        (kTfLiteInt8, Some((s, z, d))) => dequantize_per_channel::<i8>(input.data()?, input.shape, d, s, z, &mut out)?,
        (kTfLiteUInt8, None) => dequantize::<u8>(input.data()?, input.quant(), &mut out)?,
        (kTfLiteInt8, None) => dequantize::<i8>(input.data()?, input.quant(), &mut out)?,
        (kTfLiteInt16, None) => dequantize::<i16>(input.data()?, input.quant(), &mut out)?,
        (t, _) => crate::bail!("per-channel {} inputs are not supported", t.name()),
    }
    Ok(out)
}

/// `NumericVerify`; its State is the options and whether a constant input was checked.
struct NumericVerify;

impl BuiltinKernel for NumericVerify {
    const NAME: &'static str = OP;
    type Params = ();
    type State = (VerifyOptions, bool);

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<(VerifyOptions, bool)> {
        check_arity(ctx, OP, 2, 2, 1)?;
        let opts = VerifyOptions::parse(ctx.custom_initial_data()).map_err(in_op(OP))?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        let reference = ctx.input(1).map_err(in_op(OP))?;
        use TfLiteType::*;
        if !matches!(input.dtype, kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16 | kTfLiteFloat16) {
            return Err(op_error(OP, format!("input type {} is not supported", input.dtype.name())));
        }
        if reference.dtype != kTfLiteFloat32 {
            return Err(op_error(OP, format!("the reference must be float32, not {}", reference.dtype.name())));
        }
        if reference.num_elements() < input.num_elements() {
            return Err(op_error(OP, "the reference has fewer values than the quantized input"));
        }
        ctx.set_output_type(0, kTfLiteFloat32).map_err(in_op(OP))?;
        ctx.set_output_persistent(0).map_err(in_op(OP))?;
        ctx.resize_output(0, input.shape).map_err(in_op(OP))?;
        Ok((opts, false))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), state: &mut (VerifyOptions, bool)) -> Result<()> {
        let (opts, checked) = state;
        let input = ctx.input(0).map_err(in_op(OP))?;
        if input.is_constant() && *checked {
            return Ok(());
        }
        let values = dequantized(&input).map_err(in_op(OP))?;
        if input.is_constant() {
            *checked = true;
        }
        let reference = ctx.input(1).map_err(in_op(OP))?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        let max_diff = opts.checks().then(|| opts.tolerance * input.quant().scale);
        verify(
            &values,
            reference.data::<f32>().map_err(in_op(OP))?,
            max_diff,
            out.data_mut::<f32>().map_err(in_op(OP))?,
        )
        .map_err(|e| op_error(OP, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    // Written by Python's `flexbuffers.Dumps`: {"tolerance": 0.5, "log_if_failed": True},
    // {"tolerance": 0.05, "log_if_failed": False} (a double), and {"tolerance": 2}.
    const STRICT: [u8; 53] = [
        116, 111, 108, 101, 114, 97, 110, 99, 101, 0, 108, 111, 103, 95, 105, 102, 95, 102, 97, 105, 108, 101, 100, 0,
        2, 15, 26, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 63, 106, 14, 10, 38, 1,
    ];
    const LOOSE: [u8; 77] = [
        116, 111, 108, 101, 114, 97, 110, 99, 101, 0, 108, 111, 103, 95, 105, 102, 95, 102, 97, 105, 108, 101, 100, 0,
        2, 15, 26, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 154, 153, 153, 153, 153, 153, 169, 63, 107, 15, 18, 39, 1,
    ];
    const INT_ONLY: [u8; 20] = [116, 111, 108, 101, 114, 97, 110, 99, 101, 0, 1, 11, 1, 1, 1, 2, 4, 2, 36, 1];

    #[test]
    fn parses_options() {
        assert_eq!(VerifyOptions::parse(&STRICT).unwrap(), VerifyOptions { tolerance: 0.5, log_if_failed: true });
        assert_eq!(VerifyOptions::parse(&LOOSE).unwrap(), VerifyOptions { tolerance: 0.05, log_if_failed: false });
        assert_eq!(VerifyOptions::parse(&INT_ONLY).unwrap(), VerifyOptions { tolerance: 2.0, log_if_failed: false });
        assert!(VerifyOptions::parse(&STRICT).unwrap().checks());
        assert!(!VerifyOptions { tolerance: 0.05, log_if_failed: true }.checks());
        assert!(VerifyOptions::parse(&[1, 2]).is_err());
        assert!(VerifyOptions::parse(&[]).is_err());
    }

    #[test]
    fn differences_and_mismatches() {
        let mut out = [0f32; 3];
        verify(&[1.0, 2.0, 3.0], &[0.5, 2.0, 3.25], None, &mut out).unwrap();
        assert_eq!(out, [0.5, 0.0, -0.25]);
        verify(&[1.0, 2.0, 3.0], &[0.75, 2.0, 3.25], Some(0.25), &mut out).unwrap();
        let e = verify(&[1.0, 2.0, 3.0], &[1.0, 1.0, 3.0], Some(0.25), &mut out).unwrap_err();
        assert!(e.message.contains("element 1"), "{}", e.message);
        assert_eq!(out[1], 1.0);
        // A longer reference is read only as far as the input goes; a shorter one is refused.
        verify(&[1.0], &[1.0, 7.0], None, &mut out[..1]).unwrap();
        assert!(verify(&[1.0, 2.0], &[1.0], None, &mut out[..2]).is_err());
        verify(&[], &[], Some(0.0), &mut []).unwrap();
    }

    #[test]
    fn glue_without_options_is_an_error() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt8, &[4], &[-2i8, 0, 3, 10], Some(qp(0.5, 2)), false);
        let r = g.tensor(kTfLiteFloat32, &[4], &[-2.0f32, -1.0, 0.5, 4.5], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[x, r], &[o], None), TfLiteStatus::kTfLiteError);
    }
}
