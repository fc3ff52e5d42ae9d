//! COMPLEX_ABS, REAL and IMAG (TFLite `kernels/complex_support.cc`).
//!
//! Elementwise on a complex64 or complex128 input: the magnitude (`std::abs`, which is
//! C's `hypot` of the two parts), the real part or the imaginary part, as float32 or
//! float64 of the same shape. The output's type must already be the matching float type
//! (TFLite checks it rather than setting it).

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, op_error};
use core::marker::PhantomData;

/// One of the three ops: its name and what it takes from each value.
pub trait ComplexPart: 'static {
    const NAME: &'static str;
    fn f32(c: [f32; 2]) -> f32;
    fn f64(c: [f64; 2]) -> f64;
}

/// COMPLEX_ABS: the magnitude.
pub struct Abs;
/// REAL: the real part.
pub struct Real;
/// IMAG: the imaginary part.
pub struct Imag;

impl ComplexPart for Abs {
    const NAME: &'static str = "COMPLEX_ABS";
    fn f32(c: [f32; 2]) -> f32 {
        c[0].hypot(c[1])
    }
    fn f64(c: [f64; 2]) -> f64 {
        c[0].hypot(c[1])
    }
}

impl ComplexPart for Real {
    const NAME: &'static str = "REAL";
    fn f32(c: [f32; 2]) -> f32 {
        c[0]
    }
    fn f64(c: [f64; 2]) -> f64 {
        c[0]
    }
}

impl ComplexPart for Imag {
    const NAME: &'static str = "IMAG";
    fn f32(c: [f32; 2]) -> f32 {
        c[1]
    }
    fn f64(c: [f64; 2]) -> f64 {
        c[1]
    }
}

/// The COMPLEX_ABS registration.
pub fn complex_abs_registration() -> TfLiteRegistration {
    kernel::registration::<Extract<Abs>>(TfLiteBuiltinOperator::kTfLiteBuiltinComplexAbs)
}

/// The REAL registration.
pub fn real_registration() -> TfLiteRegistration {
    kernel::registration::<Extract<Real>>(TfLiteBuiltinOperator::kTfLiteBuiltinReal)
}

/// The IMAG registration.
pub fn imag_registration() -> TfLiteRegistration {
    kernel::registration::<Extract<Imag>>(TfLiteBuiltinOperator::kTfLiteBuiltinImag)
}

/// `out[i] = f(input[i])`.
pub fn extract<C: Copy, T>(input: &[C], out: &mut [T], f: impl Fn(C) -> T) -> Result<()> {
    if input.len() != out.len() {
        crate::bail!("input holds {} values, output {}", input.len(), out.len());
    }
    for (o, &c) in out.iter_mut().zip(input) {
        *o = f(c);
    }
    Ok(())
}

/// The kernel of one of the three ops.
struct Extract<P>(PhantomData<P>);

impl<P: ComplexPart> BuiltinKernel for Extract<P> {
    const NAME: &'static str = P::NAME;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        let op = P::NAME;
        check_arity(ctx, op, 1, 1, 1)?;
        let input = ctx.input(0).map_err(|e| op_error(op, e.message))?;
        let out = ctx.output(0).map_err(|e| op_error(op, e.message))?;
        let want = match input.dtype {
            TfLiteType::kTfLiteComplex64 => TfLiteType::kTfLiteFloat32,
            TfLiteType::kTfLiteComplex128 => TfLiteType::kTfLiteFloat64,
            other => return Err(op_error(op, format!("input type {} is not complex64 or complex128", other.name()))),
        };
        if out.dtype != want {
            return Err(op_error(
                op,
                format!("output type {} must be {} for a {} input", out.dtype.name(), want.name(), input.dtype.name()),
            ));
        }
        ctx.resize_output(0, input.shape).map_err(|e| op_error(op, e.message))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let op = P::NAME;
        let input = ctx.input(0).map_err(|e| op_error(op, e.message))?;
        let mut out = ctx.output(0).map_err(|e| op_error(op, e.message))?;
        let r = match input.dtype {
            TfLiteType::kTfLiteComplex64 => extract(input.data::<[f32; 2]>()?, out.data_mut::<f32>()?, P::f32),
            TfLiteType::kTfLiteComplex128 => extract(input.data::<[f64; 2]>()?, out.data_mut::<f64>()?, P::f64),
            other => return Err(op_error(op, format!("input type {} is not supported", other.name()))),
        };
        r.map_err(|e| op_error(op, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn parts() {
        let x = [[3f32, 4.], [-1., 0.], [0., -2.5], [f32::INFINITY, f32::NAN]];
        let mut o = [0f32; 4];
        extract(&x, &mut o, Abs::f32).unwrap();
        assert_eq!(o, [5., 1., 2.5, f32::INFINITY]);
        extract(&x, &mut o, Real::f32).unwrap();
        assert_eq!(o[..3], [3., -1., 0.]);
        extract(&x, &mut o, Imag::f32).unwrap();
        assert_eq!(o[..3], [4., 0., -2.5]);
        assert!(extract(&x, &mut o[..2], Imag::f32).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteComplex64, &[2], &[[3f32, 4.], [1., -1.]], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&complex_abs_registration(), &[x], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o), vec![5., 2f32.sqrt()]);
        let d = g.tensor(kTfLiteComplex128, &[1, 2], &[[3f64, 4.], [1., -1.]], None, false);
        let o = g.output(kTfLiteFloat64, None);
        assert_eq!(g.run::<()>(&imag_registration(), &[d], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![1, 2]);
        assert_eq!(g.data::<f64>(o), vec![4., -1.]);
        let o = g.output(kTfLiteFloat64, None);
        assert_eq!(g.run::<()>(&real_registration(), &[d], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f64>(o), vec![3., 1.]);
        // Wrong output type; a real input.
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&real_registration(), &[d], &[o], None), TfLiteStatus::kTfLiteError);
        let f = g.tensor(kTfLiteFloat32, &[1], &[1f32], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&real_registration(), &[f], &[o], None), TfLiteStatus::kTfLiteError);
        // Empty.
        let e = g.tensor(kTfLiteComplex64, &[0, 3], &[] as &[[f32; 2]], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&complex_abs_registration(), &[e], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![0, 3]);
    }
}
