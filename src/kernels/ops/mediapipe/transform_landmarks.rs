//! MediaPipe's custom op `TransformLandmarks`, version 2
//! (`mediapipe/util/tflite/operations/transform_landmarks.cc`, namespace `v2`; the only
//! version MediaPipe's op resolvers register).
//!
//! Inputs: landmarks, a 3-D float32 tensor `[n, count, dims]` with `dims` 2 (`x, y`) or 3
//! (`x, y, z`), and a float32 4x4 matrix (the first two rows are read: 8 values). Each
//! landmark's `(x, y)` becomes `(m0 x + m1 y + m3, m4 x + m5 y + m7)` (MediaPipe's dot
//! product with `(x, y, 0, 1)`, summed in that order); `z` is copied. The output has the
//! input's shape. The custom options are not read (version 2 takes none). As MediaPipe,
//! only the first of the `n` landmark sets is transformed; MediaPipe leaves the others
//! unwritten, and they are zero here.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "TransformLandmarks";

/// The registration of MediaPipe's custom op `TransformLandmarks` (version 2).
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<TransformLandmarks>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

/// Transforms the first `count` landmarks of `dims` values each (2 or 3) from `landmarks`
/// into `out` with `matrix` (at least 8 values); the rest of `out` is zeroed.
pub fn transform_landmarks(
    landmarks: &[f32],
    matrix: &[f32],
    count: usize,
    dims: usize,
    out: &mut [f32],
) -> Result<()> {
    crate::ensure!(dims == 2 || dims == 3, "Incorrect dimensions size: {dims}");
    crate::ensure!(matrix.len() >= 8, "the matrix holds {} values, 8 are read", matrix.len());
    let n = count.checked_mul(dims).filter(|&n| n <= landmarks.len() && n <= out.len());
    let n = n.ok_or_else(|| crate::error::Error::new("the landmarks are shorter than their shape"))?;
    let (first, rest) = out.split_at_mut(n);
    rest.fill(0.0);
    let m = matrix;
    for (o, l) in first.chunks_exact_mut(dims).zip(landmarks.chunks_exact(dims)) {
        let (x, y) = (l[0], l[1]);
        o[0] = m[0] * x + m[1] * y + m[2] * 0.0 + m[3] * 1.0;
        o[1] = m[4] * x + m[5] * y + m[6] * 0.0 + m[7] * 1.0;
        if dims == 3 {
            o[2] = l[2];
        }
    }
    Ok(())
}

/// `TransformLandmarks`; its state is `(count, dims)` of one landmark set.
struct TransformLandmarks;

impl BuiltinKernel for TransformLandmarks {
    const NAME: &'static str = OP;
    type Params = ();
    type State = (usize, usize);

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<(usize, usize)> {
        check_arity(ctx, OP, 2, 2, 1)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        let matrix = ctx.input(1).map_err(in_op(OP))?;
        let output = ctx.output(0).map_err(in_op(OP))?;
        if input.shape.len() != 3 {
            return Err(op_error(OP, format!("the landmarks must be 3-D, got shape {:?}", input.shape)));
        }
        let f32_ = TfLiteType::kTfLiteFloat32;
        if input.dtype != f32_ || matrix.dtype != f32_ || output.dtype != f32_ {
            return Err(op_error(OP, "the landmarks, matrix and output must be float32"));
        }
        if matrix.num_elements() < 8 {
            return Err(op_error(OP, format!("the matrix holds {} values, 8 are read", matrix.num_elements())));
        }
        let (count, dims) = (input.shape[1], input.shape[2]);
        if dims != 2 && dims != 3 {
            return Err(op_error(OP, format!("Incorrect dimensions size: {dims}")));
        }
        let count = usize::try_from(count).map_err(|_| op_error(OP, "negative dimension"))?;
        ctx.resize_output(0, input.shape).map_err(in_op(OP))?;
        Ok((count, dims as usize))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), state: &mut (usize, usize)) -> Result<()> {
        let landmarks = ctx.input(0).map_err(in_op(OP))?.data::<f32>().map_err(in_op(OP))?;
        let matrix = ctx.input(1).map_err(in_op(OP))?.data::<f32>().map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?.data_mut::<f32>().map_err(in_op(OP))?;
        transform_landmarks(landmarks, matrix, state.0, state.1, out).map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;

    // x' = 2x + y + 10, y' = -y + 3
    const M: [f32; 16] = [2.0, 1.0, 7.0, 10.0, 0.0, -1.0, 7.0, 3.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0, 9.0];

    #[test]
    fn transforms_xy_and_copies_z() {
        let mut o = [0.0; 6];
        transform_landmarks(&[1.0, 2.0, 5.0, -1.0, 0.0, 6.0], &M, 2, 3, &mut o).unwrap();
        assert_eq!(o, [14.0, 1.0, 5.0, 8.0, 3.0, 6.0]);
        let mut o = [9.0; 6];
        transform_landmarks(&[1.0, 2.0, -1.0, 0.0, 4.0, 4.0], &M, 2, 2, &mut o).unwrap();
        assert_eq!(o, [14.0, 1.0, 8.0, 3.0, 0.0, 0.0]);
    }

    #[test]
    fn errors() {
        let mut o = [0.0; 4];
        assert!(transform_landmarks(&[0.0; 4], &M, 1, 4, &mut o).is_err());
        assert!(transform_landmarks(&[0.0; 4], &M[..7], 2, 2, &mut o).is_err());
        assert!(transform_landmarks(&[0.0; 4], &M, 3, 2, &mut o).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(TfLiteType::kTfLiteFloat32, &[1, 2, 2], &[1.0f32, 2.0, -1.0, 0.0], None, false);
        let m = g.tensor(TfLiteType::kTfLiteFloat32, &[1, 4, 4], &M, None, false);
        let o = g.output(TfLiteType::kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[x, m], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![1, 2, 2]);
        assert_eq!(g.data::<f32>(o), vec![14.0, 1.0, 8.0, 3.0]);
        let bad = g.tensor(TfLiteType::kTfLiteFloat32, &[1, 1, 4], &[0.0f32; 4], None, false);
        let o2 = g.output(TfLiteType::kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[bad, m], &[o2], None), TfLiteStatus::kTfLiteError);
    }
}
