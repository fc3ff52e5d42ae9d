//! MediaPipe's custom op `MaxUnpooling2D`
//! (`mediapipe/util/tflite/operations/max_unpooling.cc`; registered at version 1).
//!
//! The inverse of `MaxPoolingWithArgmax2D`: inputs a 4-D float32 tensor `[b, h, w, c]` and
//! its float32 window indices (as that op writes them); the output is
//! `[b, h * filter_height, w * filter_width, c]`, zero except that each input value is
//! written where its index points: window `(idx / filter_width, idx % filter_width)`
//! (the index truncated to an integer) of the window at `(y * stride - pad, x * stride -
//! pad)`, with the padding TFLite's `ComputePadding` gives for pooling the output back to
//! the input size. Later input elements overwrite earlier ones. A destination outside the
//! output is skipped (as MediaPipe's current source does); so is an index that is not a
//! finite float in the int32 range (a C++ cast of it would be undefined).
//!
//! The options are the `TfLitePoolParams` struct of `MaxPoolingWithArgmax2D`; the
//! activation is not applied.

use super::max_pool_argmax::{PoolOptions, compute_padding};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "MaxUnpooling2D";

/// The registration of MediaPipe's custom op `MaxUnpooling2D`.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<MaxUnpooling>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

/// NHWC geometry of one unpooling node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnpoolGeom {
    pub batches: usize,
    pub in_h: usize,
    pub in_w: usize,
    pub depth: usize,
    pub out_h: usize,
    pub out_w: usize,
    pub pad_h: i64,
    pub pad_w: i64,
}

/// Output size and padding for input `[b, h, w, c]` (MediaPipe's Prepare).
pub fn unpool_geom(shape: &[i32], o: &PoolOptions) -> Result<UnpoolGeom> {
    crate::ensure!(shape.len() == 4 && shape.iter().all(|&d| d >= 0), "input shape {shape:?} must be 4-D");
    let (h, w) = (i64::from(shape[1]), i64::from(shape[2]));
    let (out_h, out_w) = (h * i64::from(o.filter_height), w * i64::from(o.filter_width));
    crate::ensure!(
        i32::try_from(out_h).is_ok() && i32::try_from(out_w).is_ok(),
        "output size {out_h} x {out_w} is too large"
    );
    Ok(UnpoolGeom {
        batches: shape[0] as usize,
        in_h: h as usize,
        in_w: w as usize,
        depth: shape[3] as usize,
        out_h: out_h as usize,
        out_w: out_w as usize,
        pad_h: compute_padding(i64::from(o.stride_height), out_h, i64::from(o.filter_height), h),
        pad_w: compute_padding(i64::from(o.stride_width), out_w, i64::from(o.filter_width), w),
    })
}

/// Scatters `input` into the zeroed `out` at the window positions `indices` name.
pub fn max_unpooling(input: &[f32], indices: &[f32], g: &UnpoolGeom, o: &PoolOptions, out: &mut [f32]) -> Result<()> {
    let n_in = g.batches * g.in_h * g.in_w * g.depth;
    crate::ensure!(input.len() == n_in, "the input holds {} values, its shape {n_in}", input.len());
    crate::ensure!(indices.len() >= n_in, "the indices hold {} values, the input {n_in}", indices.len());
    crate::ensure!(out.len() == g.batches * g.out_h * g.out_w * g.depth, "the output size does not match");
    out.fill(0.0);
    let (fw, sw, sh) = (i64::from(o.filter_width), i64::from(o.stride_width), i64::from(o.stride_height));
    let mut k = 0;
    for b in 0..g.batches {
        for y in 0..g.in_h as i64 {
            for x in 0..g.in_w as i64 {
                for c in 0..g.depth {
                    let (v, fidx) = (input[k], indices[k]);
                    k += 1;
                    // The C++ float-to-int conversion truncates toward zero.
                    if !(fidx > i32::MIN as f32 - 1.0 && fidx < i32::MAX as f32 + 1.0) {
                        continue;
                    }
                    let idx = i64::from(fidx as i32);
                    let (oy, ox) = (y * sh - g.pad_h + idx / fw, x * sw - g.pad_w + idx % fw);
                    if ox >= 0 && oy >= 0 && (ox as usize) < g.out_w && (oy as usize) < g.out_h {
                        out[((b * g.out_h + oy as usize) * g.out_w + ox as usize) * g.depth + c] = v;
                    }
                }
            }
        }
    }
    Ok(())
}

/// `MaxUnpooling2D`; its state is the options and geometry.
struct MaxUnpooling;

impl BuiltinKernel for MaxUnpooling {
    const NAME: &'static str = OP;
    type Params = ();
    type State = (PoolOptions, UnpoolGeom);

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<(PoolOptions, UnpoolGeom)> {
        check_arity(ctx, OP, 2, 2, 1)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        let indices = ctx.input(1).map_err(in_op(OP))?;
        let output = ctx.output(0).map_err(in_op(OP))?;
        let f32_ = TfLiteType::kTfLiteFloat32;
        if input.dtype != f32_ || indices.dtype != f32_ || output.dtype != f32_ {
            return Err(op_error(OP, "the input, indices and output must be float32"));
        }
        if indices.shape.len() != 4 {
            return Err(op_error(OP, format!("the indices must be 4-D, got shape {:?}", indices.shape)));
        }
        if indices.num_elements() < input.num_elements() {
            return Err(op_error(OP, "the indices hold fewer values than the input"));
        }
        let o = PoolOptions::parse(ctx.custom_initial_data()).map_err(in_op(OP))?;
        let g = unpool_geom(input.shape, &o).map_err(in_op(OP))?;
        let shape = [input.shape[0], g.out_h as i32, g.out_w as i32, input.shape[3]];
        ctx.resize_output(0, &shape).map_err(in_op(OP))?;
        Ok((o, g))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), (o, g): &mut (PoolOptions, UnpoolGeom)) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?.data::<f32>().map_err(in_op(OP))?;
        let indices = ctx.input(1).map_err(in_op(OP))?.data::<f32>().map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?.data_mut::<f32>().map_err(in_op(OP))?;
        max_unpooling(input, indices, g, o, out).map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(stride: i32, filter: i32) -> PoolOptions {
        PoolOptions {
            padding: 1,
            stride_width: stride,
            stride_height: stride,
            filter_width: filter,
            filter_height: filter,
            activation: 0,
        }
    }

    #[test]
    fn scatters_to_window_positions() {
        let o = opts(2, 2);
        let g = unpool_geom(&[1, 2, 2, 1], &o).unwrap();
        assert_eq!((g.out_h, g.out_w, g.pad_h, g.pad_w), (4, 4, 0, 0));
        let mut out = vec![9.0; 16];
        max_unpooling(&[5., 9., 7., -1.], &[1.1, 2.1, 3.1, 0.1], &g, &o, &mut out).unwrap();
        #[rustfmt::skip]
        let want = vec![0., 5., 0., 0.,
                        0., 0., 9., 0.,
                        0., 0., -1., 0.,
                        0., 7., 0., 0.];
        assert_eq!(out, want);
    }

    #[test]
    fn bad_indices_are_skipped_and_overlaps_overwrite() {
        // Stride 1, filter 2: padding ((2 - 1) * 1 + 2 - 4) / 2 = 0, windows overlap.
        let o = opts(1, 2);
        let g = unpool_geom(&[1, 1, 2, 1], &o).unwrap();
        assert_eq!((g.out_h, g.out_w, g.pad_w), (2, 4, 0));
        let mut out = vec![0.0; 8];
        max_unpooling(&[1., 2.], &[1.5, 0.0], &g, &o, &mut out).unwrap();
        assert_eq!(out, vec![0., 2., 0., 0., 0., 0., 0., 0.]);
        for bad in [f32::NAN, f32::INFINITY, -1.0, 4.0, 1e20, -7.9] {
            max_unpooling(&[1., 2.], &[bad, bad], &g, &o, &mut out).unwrap();
            assert!(out.iter().all(|&v| v == 0.0 || v == 2.0 || v == 1.0), "{bad}: {out:?}");
        }
        max_unpooling(&[1., 2.], &[f32::NAN, -1.0], &g, &o, &mut out).unwrap();
        // -1 truncates to -1: -1 / 2 = 0, -1 % 2 = -1 -> column 1 + 0 - 1 = 0.
        assert_eq!(out, vec![2., 0., 0., 0., 0., 0., 0., 0.]);
    }
}
