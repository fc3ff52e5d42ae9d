//! MediaPipe's custom op `Resampler` (`mediapipe/util/tflite/operations/resampler.cc`, a
//! port of TensorFlow Addons' resampler; registered at version 1).
//!
//! Inputs: a float32 NHWC source `[b, h, w, c]` and a float32 warp `[b, h, w, 2]` of
//! `(x, y)` sample points, one per output pixel. The output has the source's shape; each
//! pixel samples the source bilinearly at its warp point, the four neighbours outside the
//! source reading 0. A point outside `(-1, w) x (-1, h)` (or with a NaN coordinate) gives 0.
//! The arithmetic is MediaPipe's, in f32: weights `dx = floor(x) + 1 - x` etc., the four
//! products summed in its order. The custom options are not read.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "Resampler";

/// The registration of MediaPipe's custom op `Resampler`.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Resampler>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

/// Resamples `src` (`b x h x w x d`) at the points of `warp` (`b x h x w x 2`) into `dst`.
pub fn resample(src: &[f32], warp: &[f32], (b, h, w, d): (usize, usize, usize, usize), dst: &mut [f32]) -> Result<()> {
    let n = b * h * w;
    crate::ensure!(src.len() == n * d && dst.len() == n * d, "the source and output must hold {} values", n * d);
    crate::ensure!(warp.len() >= n * 2, "the warp holds {} values, {} are read", warp.len(), n * 2);
    if d == 0 {
        return Ok(());
    }
    let plane = h * w;
    for (p, out) in dst.chunks_exact_mut(d).enumerate() {
        let base = (p / plane) * plane;
        let (x, y) = (warp[2 * p], warp[2 * p + 1]);
        if !(x > -1.0 && y > -1.0 && x < w as f32 && y < h as f32) {
            out.fill(0.0);
            continue;
        }
        let (fx, fy) = (x.floor() as i64, y.floor() as i64);
        let (cx, cy) = (fx + 1, fy + 1);
        let dx = cx as f32 - x;
        let dy = cy as f32 - y;
        let at = |xx: i64, yy: i64| -> Option<usize> {
            (xx >= 0 && yy >= 0 && xx < w as i64 && yy < h as i64).then(|| (base + yy as usize * w + xx as usize) * d)
        };
        let (ff, cc, fc, cf) = (at(fx, fy), at(cx, cy), at(fx, cy), at(cx, fy));
        for (chan, o) in out.iter_mut().enumerate() {
            let v = |q: Option<usize>| q.map_or(0.0, |q| src[q + chan]);
            let img_fxfy = dx * dy * v(ff);
            let img_cxcy = (1.0 - dx) * (1.0 - dy) * v(cc);
            let img_fxcy = dx * (1.0 - dy) * v(fc);
            let img_cxfy = (1.0 - dx) * dy * v(cf);
            *o = img_fxfy + img_cxcy + img_fxcy + img_cxfy;
        }
    }
    Ok(())
}

/// `Resampler`; its state is the source's `(b, h, w, c)`.
struct Resampler;

impl BuiltinKernel for Resampler {
    const NAME: &'static str = OP;
    type Params = ();
    type State = (usize, usize, usize, usize);

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<(usize, usize, usize, usize)> {
        check_arity(ctx, OP, 2, 2, 1)?;
        let src = ctx.input(0).map_err(in_op(OP))?;
        let warp = ctx.input(1).map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?;
        if src.shape.len() != 4 || warp.shape.len() != 4 || src.shape.iter().any(|&v| v < 0) {
            return Err(op_error(OP, format!("source and warp must be 4-D, got {:?} and {:?}", src.shape, warp.shape)));
        }
        let f32_ = TfLiteType::kTfLiteFloat32;
        if src.dtype != f32_ || warp.dtype != f32_ || out.dtype != f32_ {
            return Err(op_error(OP, "the source, warp and output must be float32"));
        }
        let s = src.shape;
        let dims = (s[0] as usize, s[1] as usize, s[2] as usize, s[3] as usize);
        if warp.num_elements() < dims.0 * dims.1 * dims.2 * 2 {
            return Err(op_error(OP, format!("the warp {:?} holds fewer than 2 values per pixel", warp.shape)));
        }
        ctx.resize_output(0, s).map_err(in_op(OP))?;
        Ok(dims)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), dims: &mut (usize, usize, usize, usize)) -> Result<()> {
        let src = ctx.input(0).map_err(in_op(OP))?.data::<f32>().map_err(in_op(OP))?;
        let warp = ctx.input(1).map_err(in_op(OP))?.data::<f32>().map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?.data_mut::<f32>().map_err(in_op(OP))?;
        resample(src, warp, *dims, out).map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_bilinearly_with_zero_outside() {
        // 1 x 1 x 3 x 1 source [10, 20, 30]; warp points per output pixel.
        let src = [10.0f32, 20.0, 30.0];
        let warp = [0.5f32, 0.0, -0.5, 0.0, 2.5, 0.0];
        let mut out = [0.0; 3];
        resample(&src, &warp, (1, 1, 3, 1), &mut out).unwrap();
        // y = 0: dy = 1, so only the floor row counts.
        assert_eq!(out, [15.0, 5.0, 15.0]);
        let warp = [-1.0f32, 0.0, 3.0, 0.0, f32::NAN, 0.0];
        resample(&src, &warp, (1, 1, 3, 1), &mut out).unwrap();
        assert_eq!(out, [0.0; 3]);
    }

    #[test]
    fn batches_use_their_own_planes() {
        let src = [1.0f32, 2.0];
        let warp = [0.0f32, 0.0, 0.0, 0.0];
        let mut out = [0.0; 2];
        resample(&src, &warp, (2, 1, 1, 1), &mut out).unwrap();
        assert_eq!(out, [1.0, 2.0]);
        assert!(resample(&src, &warp[..3], (2, 1, 1, 1), &mut out).is_err());
    }
}
