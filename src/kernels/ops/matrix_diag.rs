//! MATRIX_DIAG and MATRIX_SET_DIAG (TFLite `kernels/matrix_diag.cc`,
//! `kernels/matrix_set_diag.cc`).
//!
//! MATRIX_DIAG: an input `[..., n]` gives `[..., n, n]` matrices with the input on the
//! diagonal and zero bits elsewhere (a raw 0, not the zero point, for quantized types).
//! MATRIX_SET_DIAG: an input `[..., r, c]` and a diagonal `[..., min(r, c)]` give the
//! input with its main diagonals replaced. Types: float32, int64, int32, int16, int8,
//! uint8 (TFLite treats every other type as float32; here it is an error).

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, element_count, op_error, with_elem_type};

const DIAG: &str = "MATRIX_DIAG";
const SET_DIAG: &str = "MATRIX_SET_DIAG";

/// The MATRIX_DIAG registration.
pub fn matrix_diag_registration() -> TfLiteRegistration {
    kernel::registration::<MatrixDiag>(TfLiteBuiltinOperator::kTfLiteBuiltinMatrixDiag)
}

/// The MATRIX_SET_DIAG registration.
pub fn matrix_set_diag_registration() -> TfLiteRegistration {
    kernel::registration::<MatrixSetDiag>(TfLiteBuiltinOperator::kTfLiteBuiltinMatrixSetDiag)
}

/// Writes `batch` matrices of `rows x cols` into `out`: `diag` values (consumed in
/// order) where row == column, `base(i)` (the flat output index) elsewhere.
pub fn fill_diag<T: Copy>(
    diag: &[T],
    batch: usize,
    rows: usize,
    cols: usize,
    out: &mut [T],
    base: impl Fn(usize) -> T,
) -> Result<()> {
    let m = rows.min(cols);
    if batch.checked_mul(rows).and_then(|v| v.checked_mul(cols)) != Some(out.len()) || diag.len() != batch * m {
        crate::bail!("{} diagonal values and {} outputs for {batch} matrices of {rows}x{cols}", diag.len(), out.len());
    }
    for (i, o) in out.iter_mut().enumerate() {
        let (b, r, c) = (i / (rows * cols), i / cols % rows, i % cols);
        *o = if r == c { diag[b * m + r] } else { base(i) };
    }
    Ok(())
}

fn check_type(op: &str, t: TfLiteType) -> Result<()> {
    use TfLiteType::*;
    if matches!(t, kTfLiteFloat32 | kTfLiteInt64 | kTfLiteInt32 | kTfLiteInt16 | kTfLiteInt8 | kTfLiteUInt8) {
        Ok(())
    } else {
        Err(op_error(op, format!("type {} is not supported", t.name())))
    }
}

/// MATRIX_DIAG; stateless.
struct MatrixDiag;

impl BuiltinKernel for MatrixDiag {
    const NAME: &'static str = DIAG;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        check_arity(ctx, DIAG, 1, 1, 1)?;
        let input = ctx.input(0).map_err(|e| op_error(DIAG, e.message))?;
        if input.shape.is_empty() || input.shape.iter().any(|&d| d < 0) {
            return Err(op_error(DIAG, "input must have rank >= 1"));
        }
        check_type(DIAG, input.dtype)?;
        let mut shape = input.shape.to_vec();
        shape.push(*input.shape.last().unwrap_or(&0));
        element_count(&shape).map_err(|e| op_error(DIAG, e.message))?;
        ctx.set_output_type(0, input.dtype).map_err(|e| op_error(DIAG, e.message))?;
        ctx.resize_output(0, &shape).map_err(|e| op_error(DIAG, e.message))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let input = ctx.input(0).map_err(|e| op_error(DIAG, e.message))?;
        let mut out = ctx.output(0).map_err(|e| op_error(DIAG, e.message))?;
        let n = *input.shape.last().unwrap_or(&0) as usize;
        let batch = input.num_elements().checked_div(n).unwrap_or(0);
        with_elem_type!(input.dtype, DIAG, T => {
            let zero = T::default();
            fill_diag(input.data::<T>()?, batch, n, n, out.data_mut::<T>()?, |_| zero)
        })
        .map_err(|e: Error| op_error(DIAG, e.message))
    }
}

/// MATRIX_SET_DIAG; stateless.
struct MatrixSetDiag;

impl BuiltinKernel for MatrixSetDiag {
    const NAME: &'static str = SET_DIAG;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        check_arity(ctx, SET_DIAG, 2, 2, 1)?;
        let input = ctx.input(0).map_err(|e| op_error(SET_DIAG, e.message))?;
        let diag = ctx.input(1).map_err(|e| op_error(SET_DIAG, e.message))?;
        let k = input.shape.len();
        if k < 2 || input.shape.iter().any(|&d| d < 0) {
            return Err(op_error(SET_DIAG, "input must have rank >= 2"));
        }
        check_type(SET_DIAG, input.dtype)?;
        if diag.dtype != input.dtype {
            return Err(op_error(SET_DIAG, "diagonal type differs from the input type"));
        }
        let mut want = input.shape[..k - 2].to_vec();
        want.push(input.shape[k - 2].min(input.shape[k - 1]));
        if diag.shape != want.as_slice() {
            return Err(op_error(SET_DIAG, format!("diagonal shape {:?} must be {want:?}", diag.shape)));
        }
        ctx.set_output_type(0, input.dtype).map_err(|e| op_error(SET_DIAG, e.message))?;
        ctx.resize_output(0, input.shape).map_err(|e| op_error(SET_DIAG, e.message))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let input = ctx.input(0).map_err(|e| op_error(SET_DIAG, e.message))?;
        let diag = ctx.input(1).map_err(|e| op_error(SET_DIAG, e.message))?;
        let mut out = ctx.output(0).map_err(|e| op_error(SET_DIAG, e.message))?;
        let k = input.shape.len();
        let (rows, cols) = (input.shape[k - 2] as usize, input.shape[k - 1] as usize);
        let batch = input.num_elements().checked_div(rows * cols).unwrap_or(0);
        with_elem_type!(input.dtype, SET_DIAG, T => {
            let x = input.data::<T>()?;
            if x.len() != batch * rows * cols {
                return Err(op_error(SET_DIAG, "input size differs from its shape"));
            }
            fill_diag(diag.data::<T>()?, batch, rows, cols, out.data_mut::<T>()?, |i| x[i])
        })
        .map_err(|e: Error| op_error(SET_DIAG, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn fills() {
        let mut out = [9; 8];
        fill_diag(&[1, 2, 3, 4], 2, 2, 2, &mut out, |_| 0).unwrap();
        assert_eq!(out, [1, 0, 0, 2, 3, 0, 0, 4]);
        let x: Vec<i32> = (10..16).collect();
        let mut out = [0; 6];
        fill_diag(&[-1, -2], 1, 2, 3, &mut out, |i| x[i]).unwrap();
        assert_eq!(out, [-1, 11, 12, 13, -2, 15]);
        assert!(fill_diag(&[1], 1, 2, 2, &mut [0; 4], |_| 0).is_err());
        fill_diag::<i8>(&[], 0, 3, 3, &mut [], |_| 0).unwrap();
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let d = g.tensor(kTfLiteInt8, &[1, 3], &[1i8, 2, 3], None, false);
        let o = g.output(kTfLiteInt8, None);
        assert_eq!(g.run::<()>(&matrix_diag_registration(), &[d], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![1, 3, 3]);
        assert_eq!(g.data::<i8>(o), vec![1, 0, 0, 0, 2, 0, 0, 0, 3]);
        let x = g.tensor(kTfLiteFloat32, &[3, 2], &[1f32, 2.0, 3.0, 4.0, 5.0, 6.0], None, false);
        let dg = g.tensor(kTfLiteFloat32, &[2], &[-1f32, -2.0], None, false);
        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&matrix_set_diag_registration(), &[x, dg], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o2), vec![-1.0, 2.0, 3.0, -2.0, 5.0, 6.0]);
        let bad = g.tensor(kTfLiteFloat32, &[3], &[0f32; 3], None, false);
        let o3 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&matrix_set_diag_registration(), &[x, bad], &[o3], None), TfLiteStatus::kTfLiteError);
    }
}
