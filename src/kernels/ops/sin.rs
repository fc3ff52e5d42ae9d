//! SIN (TFLite `kernels/elementwise.cc`): float32 elementwise `sinf`.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};

const OP: &str = "SIN";

/// The SIN registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Sin>(TfLiteBuiltinOperator::kTfLiteBuiltinSin)
}

/// `out[i] = sin(input[i])` (the C library's `sinf`, as TFLite's `std::sin(float)`).
pub fn sin_f32(input: &[f32], out: &mut [f32]) -> Result<()> {
    if input.len() != out.len() {
        return Err(Error::new(format!("input holds {} elements, output {}", input.len(), out.len())));
    }
    for (o, &x) in out.iter_mut().zip(input) {
        *o = x.sin();
    }
    Ok(())
}

fn check_io(ctx: &OpCtx<'_>) -> Result<()> {
    if ctx.num_inputs() != 1 || ctx.num_outputs() != 1 {
        return Err(Error::new(format!(
            "{OP}: expected 1 input and 1 output, got {} and {}",
            ctx.num_inputs(),
            ctx.num_outputs()
        )));
    }
    Ok(())
}

/// SIN; its State is empty (nothing to derive beyond the output shape).
struct Sin;

impl BuiltinKernel for Sin {
    const NAME: &'static str = OP;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        check_io(ctx)?;
        let input = ctx.input(0)?;
        let out = ctx.output(0)?;
        if input.dtype != TfLiteType::kTfLiteFloat32 {
            return Err(Error::new(format!("{OP}: type {} is not supported (float32 only)", input.dtype.name())));
        }
        if out.dtype != input.dtype {
            return Err(Error::new(format!(
                "{OP}: output type {} differs from the input type {}",
                out.dtype.name(),
                input.dtype.name()
            )));
        }
        ctx.resize_output(0, input.shape)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        check_io(ctx)?;
        let input = ctx.input(0)?;
        let mut out = ctx.output(0)?;
        if out.shape != input.shape {
            return Err(Error::new(format!(
                "{OP}: output shape {:?} differs from the input shape {:?}",
                out.shape, input.shape
            )));
        }
        sin_f32(input.data()?, out.data_mut()?).map_err(|e| Error::new(format!("{OP}: {}", e.message)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        // elementwise_test.cc Sin: {0, 3.1415926, -3.1415926, 1} -> {0, 0, 0, 0.84147}.
        let pi = core::f32::consts::PI;
        let input = [0.0f32, pi, -pi, 1.0];
        let mut out = [9.0f32; 4];
        sin_f32(&input, &mut out).unwrap();
        assert_eq!(out[0], 0.0);
        assert!(out[1].abs() < 1e-6 && out[2].abs() < 1e-6);
        assert!((out[3] - 0.841_470_96).abs() < 1e-6);
        assert!(sin_f32(&input, &mut out[..3]).is_err());
    }

    #[test]
    fn registration_glue() {
        use crate::abi::types::TfLiteStatus;
        use crate::kernels::test_util::Graph;
        let reg = registration();
        assert_eq!(reg.builtin_code, TfLiteBuiltinOperator::kTfLiteBuiltinSin as i32);
        let mut g = Graph::new();
        let a = g.tensor(TfLiteType::kTfLiteFloat32, &[2, 1], &[0.0f32, 1.0], None, false);
        let o = g.output(TfLiteType::kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&reg, &[a], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 1]);
        assert_eq!(g.data::<f32>(o), vec![0.0, 1.0f32.sin()]);
        let i = g.tensor(TfLiteType::kTfLiteInt32, &[1], &[1i32], None, false);
        let io = g.output(TfLiteType::kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&reg, &[i], &[io], None), TfLiteStatus::kTfLiteError);
        assert_eq!(g.run::<()>(&reg, &[a, a], &[o], None), TfLiteStatus::kTfLiteError);
    }
}
