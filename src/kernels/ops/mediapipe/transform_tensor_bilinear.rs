//! MediaPipe's custom op `TransformTensorBilinear`, version 2
//! (`mediapipe/util/tflite/operations/transform_tensor_bilinear.cc`, namespace `v2`; the
//! only version MediaPipe's op resolvers register).
//!
//! Inputs: a 4-D float32 NHWC tensor and a float32 4x4 matrix (its first two rows are
//! read: 8 values). Each output pixel `(x, y)` samples the input bilinearly at
//! `(m0 x + m1 y + m3', m4 x + m5 y + m7')`, where `m3' = m3 + (m0 + m1) / 2 - 1/2`
//! (and `m7'` likewise) is MediaPipe's pixel-centre ("align corners") correction, done in
//! double precision. A sample point outside `[0, w-1] x [0, h-1]` gives 0; inside, the
//! neighbours past the last row or column read as 0 (their weight is 0 there). A sample
//! point with a NaN coordinate gives NaN.
//!
//! The output shape is the model's (MediaPipe's Prepare does not resize the output; the
//! `output_height`/`output_width` custom options are ignored on the CPU, as there). Only
//! batch 0 is sampled, from input batch 0, as MediaPipe does; MediaPipe leaves any further
//! output batches unwritten, and they are zero here. Output channel `c` reads input
//! channel `c`, so the output may not have more channels than the input.
//!
//! The blend follows MediaPipe's mixed precision: `(1.0 - frac)` is a double, so each row
//! blend is computed in double and rounded to f32, and so is the final blend.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "TransformTensorBilinear";

/// The registration of MediaPipe's custom op `TransformTensorBilinear` (version 2).
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<TransformTensorBilinear>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

/// Input and output sizes of one node: `(height, width, channels)` of batch 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    pub in_h: usize,
    pub in_w: usize,
    pub in_c: usize,
    pub out_h: usize,
    pub out_w: usize,
    pub out_c: usize,
}

/// Samples `input` (batch 0, `in_h x in_w x in_c`) into `out` (its first
/// `out_h * out_w * out_c` elements; the rest is zeroed) through `matrix` (at least 8
/// values: the first two rows of a 4x4 matrix).
pub fn transform_tensor_bilinear(input: &[f32], matrix: &[f32], d: Dims, out: &mut [f32]) -> Result<()> {
    crate::ensure!(matrix.len() >= 8, "the matrix holds {} values, 8 are read", matrix.len());
    crate::ensure!(d.out_c <= d.in_c, "the output has {} channels, the input {}", d.out_c, d.in_c);
    let in_len = d.in_h.checked_mul(d.in_w).and_then(|n| n.checked_mul(d.in_c));
    crate::ensure!(in_len.is_some_and(|n| n <= input.len()), "the input is smaller than its shape");
    let out_len = d.out_h.checked_mul(d.out_w).and_then(|n| n.checked_mul(d.out_c));
    let out_len = out_len.filter(|&n| n <= out.len()).ok_or_else(|| crate::error::Error::new("output too small"))?;
    let (first, rest) = out.split_at_mut(out_len);
    rest.fill(0.0);

    let mut xt = [matrix[0], matrix[1], matrix[2], matrix[3]];
    let mut yt = [matrix[4], matrix[5], matrix[6], matrix[7]];
    xt[3] = (f64::from(xt[3]) + (f64::from(xt[0]) * 0.5 + f64::from(xt[1]) * 0.5 - 0.5)) as f32;
    yt[3] = (f64::from(yt[3]) + (f64::from(yt[0]) * 0.5 + f64::from(yt[1]) * 0.5 - 0.5)) as f32;
    let dot = |t: &[f32; 4], x: f32, y: f32| t[0] * x + t[1] * y + t[2] * 0.0 + t[3] * 1.0;
    // MediaPipe compares the float coordinate with the int `size - 1` converted to float.
    let (max_x, max_y) = (d.in_w as f32 - 1.0, d.in_h as f32 - 1.0);
    let pixel = |h: i64, w: i64| -> Option<usize> {
        let (h, w) = (usize::try_from(h).ok()?, usize::try_from(w).ok()?);
        (h < d.in_h && w < d.in_w).then(|| (h * d.in_w + w) * d.in_c)
    };
    if d.out_c == 0 {
        return Ok(());
    }
    for (k, px) in first.chunks_exact_mut(d.out_c).enumerate() {
        let (ox, oy) = ((k % d.out_w) as f32, (k / d.out_w) as f32);
        let (tx, ty) = (dot(&xt, ox, oy), dot(&yt, ox, oy));
        if tx.is_nan() || ty.is_nan() {
            px.fill(f32::NAN);
            continue;
        }
        if tx < 0.0 || tx > max_x || ty < 0.0 || ty > max_y {
            px.fill(0.0);
            continue;
        }
        let (fx, fy) = (tx.floor(), ty.floor());
        let (x0, y0) = (fx as i64, fy as i64);
        let (q11, q21, q12, q22) = (pixel(y0, x0), pixel(y0, x0 + 1), pixel(y0 + 1, x0), pixel(y0 + 1, x0 + 1));
        let right = tx - fx;
        let lower_w = ty - fy;
        for (c, o) in px.iter_mut().enumerate() {
            let read = |p: Option<usize>| p.map_or(0.0, |p| input[p + c]);
            let upper = ((1.0 - f64::from(right)) * f64::from(read(q11)) + f64::from(right * read(q21))) as f32;
            let lower = ((1.0 - f64::from(right)) * f64::from(read(q12)) + f64::from(right * read(q22))) as f32;
            *o = (f64::from(lower_w * lower) + (1.0 - f64::from(lower_w)) * f64::from(upper)) as f32;
        }
    }
    Ok(())
}

/// `TransformTensorBilinear`; its state is the node's sizes.
struct TransformTensorBilinear;

fn dims(ctx: &OpCtx<'_>) -> Result<Dims> {
    let input = ctx.input(0).map_err(in_op(OP))?;
    let matrix = ctx.input(1).map_err(in_op(OP))?;
    let output = ctx.output(0).map_err(in_op(OP))?;
    if input.shape.len() != 4 || output.shape.len() != 4 {
        return Err(op_error(
            OP,
            format!("input and output must be 4-D, got {:?} and {:?}", input.shape, output.shape),
        ));
    }
    let f32_ = TfLiteType::kTfLiteFloat32;
    if input.dtype != f32_ || matrix.dtype != f32_ || output.dtype != f32_ {
        return Err(op_error(OP, "the input, matrix and output must be float32"));
    }
    if matrix.num_elements() < 8 {
        return Err(op_error(OP, format!("the matrix holds {} values, 8 are read", matrix.num_elements())));
    }
    let u = |v: i32| usize::try_from(v).map_err(|_| op_error(OP, "negative dimension"));
    let d = Dims {
        in_h: u(input.shape[1])?,
        in_w: u(input.shape[2])?,
        in_c: u(input.shape[3])?,
        out_h: u(output.shape[1])?,
        out_w: u(output.shape[2])?,
        out_c: u(output.shape[3])?,
    };
    if d.out_c > d.in_c {
        return Err(op_error(OP, format!("the output has {} channels, the input only {}", d.out_c, d.in_c)));
    }
    Ok(d)
}

impl BuiltinKernel for TransformTensorBilinear {
    const NAME: &'static str = OP;
    type Params = ();
    type State = Dims;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Dims> {
        check_arity(ctx, OP, 2, 2, 1)?;
        dims(ctx)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), d: &mut Dims) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?.data::<f32>().map_err(in_op(OP))?;
        let matrix = ctx.input(1).map_err(in_op(OP))?.data::<f32>().map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?.data_mut::<f32>().map_err(in_op(OP))?;
        transform_tensor_bilinear(input, matrix, *d, out).map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;

    const ID: [f32; 16] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];

    fn dims(h: usize, w: usize, c: usize, oh: usize, ow: usize, oc: usize) -> Dims {
        Dims { in_h: h, in_w: w, in_c: c, out_h: oh, out_w: ow, out_c: oc }
    }

    #[test]
    fn identity_copies_and_outside_is_zero() {
        let x: Vec<f32> = (0..12).map(|v| v as f32).collect(); // 2 x 3 x 2
        let mut o = vec![-1.0; 3 * 4 * 2];
        transform_tensor_bilinear(&x, &ID, dims(2, 3, 2, 3, 4, 2), &mut o).unwrap();
        // Rows 0..2 and columns 0..3 copy; column 3 and row 2 sample outside.
        let mut want = vec![0.0; 24];
        for y in 0..2 {
            for xx in 0..3 {
                for c in 0..2 {
                    want[(y * 4 + xx) * 2 + c] = x[(y * 3 + xx) * 2 + c];
                }
            }
        }
        assert_eq!(o, want);
    }

    #[test]
    fn half_pixel_blend_and_edges() {
        // 1 x 2 x 1 input [10, 20]; scale 0.5 with the centre correction: output x samples
        // 0.5 x - 0.25.
        let x = [10.0f32, 20.0];
        let mut m = ID;
        m[0] = 0.5;
        let mut o = vec![0.0; 4];
        transform_tensor_bilinear(&x, &m, dims(1, 2, 1, 1, 4, 1), &mut o).unwrap();
        // x = 0: -0.25 (outside); 1: 0.25; 2: 0.75; 3: 1.25 (outside).
        assert_eq!(o, vec![0.0, 12.5, 17.5, 0.0]);
    }

    #[test]
    fn last_column_reads_zero_neighbour_with_zero_weight() {
        let x = [1.0f32, 2.0, 3.0, 4.0]; // 2 x 2 x 1
        let mut m = ID;
        m[3] = 1.0; // x + 1: column 1 exactly for output column 0
        let mut o = vec![0.0; 4];
        transform_tensor_bilinear(&x, &m, dims(2, 2, 1, 2, 2, 1), &mut o).unwrap();
        assert_eq!(o, vec![2.0, 0.0, 4.0, 0.0]);
    }

    #[test]
    fn nan_matrix_gives_nan_and_extra_batches_are_zero() {
        let x = [1.0f32; 4];
        let mut m = ID;
        m[0] = f32::NAN;
        let mut o = vec![5.0; 8];
        transform_tensor_bilinear(&x, &m, dims(2, 2, 1, 2, 2, 1), &mut o).unwrap();
        assert!(o[..4].iter().all(|v| v.is_nan()));
        assert_eq!(&o[4..], &[0.0; 4]);
    }

    #[test]
    fn bad_sizes_are_errors() {
        let mut o = vec![0.0; 4];
        assert!(transform_tensor_bilinear(&[0.0; 4], &ID[..7], dims(2, 2, 1, 2, 2, 1), &mut o).is_err());
        assert!(transform_tensor_bilinear(&[0.0; 4], &ID, dims(2, 2, 1, 2, 2, 2), &mut o).is_err());
        assert!(transform_tensor_bilinear(&[0.0; 3], &ID, dims(2, 2, 1, 2, 2, 1), &mut o).is_err());
        assert!(transform_tensor_bilinear(&[0.0; 4], &ID, dims(2, 2, 1, 3, 2, 1), &mut o).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(TfLiteType::kTfLiteFloat32, &[1, 1, 2, 1], &[10.0f32, 20.0], None, false);
        let m = g.tensor(TfLiteType::kTfLiteFloat32, &[1, 4, 4], &ID, None, false);
        let o = g.tensor(TfLiteType::kTfLiteFloat32, &[1, 1, 2, 1], &[0.0f32; 2], None, false);
        assert_eq!(g.run::<()>(&registration(), &[x, m], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o), vec![10.0, 20.0]);
        let short = g.tensor(TfLiteType::kTfLiteFloat32, &[7], &[0.0f32; 7], None, false);
        assert_eq!(g.run::<()>(&registration(), &[x, short], &[o], None), TfLiteStatus::kTfLiteError);
    }
}
