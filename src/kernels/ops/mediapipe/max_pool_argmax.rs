//! MediaPipe's custom op `MaxPoolingWithArgmax2D`
//! (`mediapipe/util/tflite/operations/max_pool_argmax.cc`; registered at version 1).
//!
//! TFLite's float MAX_POOL_2D that also outputs, for each output element, where in its
//! window the maximum was: `filter_y * filter_width + filter_x + 0.1` as a float32 (the 0.1
//! makes truncation back to an integer safe; `MaxUnpooling2D` reads it). Window
//! coordinates count from the unclipped window's corner, padding included. The first
//! maximum in row-major window order wins (a strict `>` from the lowest float); an empty
//! window gives the lowest float and index 0.1.
//!
//! The options are not FlexBuffers: the custom options hold a `TfLitePoolParams` struct,
//! read as little-endian int32 fields `padding` (1 SAME, 2 VALID, other: output size 0),
//! `stride_width`, `stride_height`, `filter_width`, `filter_height`, `activation` (RELU,
//! RELU6 and RELU_N1_TO_1 clamp the output, others do not). Strides and filter sizes must
//! be positive here (MediaPipe divides by the strides).

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "MaxPoolingWithArgmax2D";

/// The registration of MediaPipe's custom op `MaxPoolingWithArgmax2D`.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<MaxPoolArgmax>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

/// The `TfLitePoolParams` fields the pooling pair reads from its custom options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolOptions {
    pub padding: i32,
    pub stride_width: i32,
    pub stride_height: i32,
    pub filter_width: i32,
    pub filter_height: i32,
    pub activation: i32,
}

impl PoolOptions {
    /// Reads the struct's first six int32 fields; strides and filters must be positive.
    pub fn parse(custom: &[u8]) -> Result<PoolOptions> {
        let word = |i: usize| custom.get(4 * i..4 * i + 4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let w: Option<Vec<i32>> = (0..6).map(word).collect();
        let w = w.ok_or_else(|| {
            crate::error::Error::new(format!(
                "the custom options ({} bytes) are shorter than TfLitePoolParams' 6 fields",
                custom.len()
            ))
        })?;
        let o = PoolOptions {
            padding: w[0],
            stride_width: w[1],
            stride_height: w[2],
            filter_width: w[3],
            filter_height: w[4],
            activation: w[5],
        };
        crate::ensure!(
            o.stride_width > 0 && o.stride_height > 0 && o.filter_width > 0 && o.filter_height > 0,
            "strides ({}, {}) and filter ({}, {}) must be positive",
            o.stride_width,
            o.stride_height,
            o.filter_width,
            o.filter_height
        );
        Ok(o)
    }

    /// `CalculateActivationRange<float>` of the activation field.
    pub fn activation_range(&self) -> (f32, f32) {
        match self.activation {
            1 => (0.0, f32::MAX),
            2 => (-1.0, 1.0),
            3 => (0.0, 6.0),
            _ => (f32::MIN, f32::MAX),
        }
    }
}

/// TFLite's `ComputePadding` (dilation 1): the padding before the data along one axis.
pub fn compute_padding(stride: i64, in_size: i64, filter: i64, out_size: i64) -> i64 {
    (((out_size - 1) * stride + filter - in_size) / 2).max(0)
}

/// NHWC geometry of one pooling node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolGeom {
    pub batches: usize,
    pub in_h: usize,
    pub in_w: usize,
    pub depth: usize,
    pub out_h: usize,
    pub out_w: usize,
    pub pad_h: i64,
    pub pad_w: i64,
}

/// Output size and padding for `input` `[b, h, w, c]` (MediaPipe's Prepare).
pub fn pool_geom(shape: &[i32], o: &PoolOptions) -> Result<PoolGeom> {
    crate::ensure!(shape.len() == 4 && shape.iter().all(|&d| d >= 0), "input shape {shape:?} must be 4-D");
    let (h, w) = (i64::from(shape[1]), i64::from(shape[2]));
    let out = |size: i64, filter: i32, stride: i32| -> i64 {
        let (f, s) = (i64::from(filter), i64::from(stride));
        match o.padding {
            1 => (size + s - 1) / s,
            2 => (size - f + s) / s,
            _ => 0,
        }
    };
    let (out_h, out_w) = (out(h, o.filter_height, o.stride_height), out(w, o.filter_width, o.stride_width));
    crate::ensure!(out_h >= 0 && out_w >= 0, "the filter is larger than the input: output size {out_h} x {out_w}");
    Ok(PoolGeom {
        batches: shape[0] as usize,
        in_h: h as usize,
        in_w: w as usize,
        depth: shape[3] as usize,
        out_h: out_h as usize,
        out_w: out_w as usize,
        pad_h: compute_padding(i64::from(o.stride_height), h, i64::from(o.filter_height), out_h),
        pad_w: compute_padding(i64::from(o.stride_width), w, i64::from(o.filter_width), out_w),
    })
}

/// Max pooling with window argmax: `out` and `indices` hold `b x out_h x out_w x c`.
pub fn max_pool_argmax(
    input: &[f32],
    g: &PoolGeom,
    o: &PoolOptions,
    out: &mut [f32],
    indices: &mut [f32],
) -> Result<()> {
    let n_in = g.batches * g.in_h * g.in_w * g.depth;
    let n_out = g.batches * g.out_h * g.out_w * g.depth;
    crate::ensure!(input.len() == n_in, "the input holds {} values, its shape {n_in}", input.len());
    crate::ensure!(out.len() == n_out && indices.len() == n_out, "the outputs do not hold {n_out} values");
    let (act_min, act_max) = o.activation_range();
    let (fw, fh) = (i64::from(o.filter_width), i64::from(o.filter_height));
    let (sw, sh) = (i64::from(o.stride_width), i64::from(o.stride_height));
    let (in_h, in_w) = (g.in_h as i64, g.in_w as i64);
    let mut k = 0;
    for b in 0..g.batches {
        for oy in 0..g.out_h as i64 {
            let y0 = oy * sh - g.pad_h;
            let (fy0, fy1) = ((-y0).max(0), fh.min(in_h - y0));
            for ox in 0..g.out_w as i64 {
                let x0 = ox * sw - g.pad_w;
                let (fx0, fx1) = ((-x0).max(0), fw.min(in_w - x0));
                for c in 0..g.depth {
                    let (mut max, mut at) = (f32::MIN, (0i64, 0i64));
                    for fy in fy0..fy1 {
                        let row = (b * g.in_h + (y0 + fy) as usize) * g.in_w;
                        for fx in fx0..fx1 {
                            let v = input[(row + (x0 + fx) as usize) * g.depth + c];
                            if v > max {
                                max = v;
                                at = (fy, fx);
                            }
                        }
                    }
                    out[k] = max.max(act_min).min(act_max);
                    indices[k] = (at.0 * fw + at.1) as i32 as f32 + 0.1;
                    k += 1;
                }
            }
        }
    }
    Ok(())
}

/// `MaxPoolingWithArgmax2D`; its state is the options and geometry.
struct MaxPoolArgmax;

impl BuiltinKernel for MaxPoolArgmax {
    const NAME: &'static str = OP;
    type Params = ();
    type State = (PoolOptions, PoolGeom);

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<(PoolOptions, PoolGeom)> {
        check_arity(ctx, OP, 1, 1, 2)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        let f32_ = TfLiteType::kTfLiteFloat32;
        for i in 0..2 {
            if ctx.output(i).map_err(in_op(OP))?.dtype != f32_ {
                return Err(op_error(OP, "the output and the indices must be float32"));
            }
        }
        if input.dtype != f32_ {
            return Err(op_error(OP, "the input must be float32"));
        }
        let o = PoolOptions::parse(ctx.custom_initial_data()).map_err(in_op(OP))?;
        let g = pool_geom(input.shape, &o).map_err(in_op(OP))?;
        let shape = [input.shape[0], g.out_h as i32, g.out_w as i32, input.shape[3]];
        ctx.resize_output(0, &shape).map_err(in_op(OP))?;
        ctx.resize_output(1, &shape).map_err(in_op(OP))?;
        Ok((o, g))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), (o, g): &mut (PoolOptions, PoolGeom)) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?.data::<f32>().map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?.data_mut::<f32>().map_err(in_op(OP))?;
        let idx = ctx.output(1).map_err(in_op(OP))?.data_mut::<f32>().map_err(in_op(OP))?;
        max_pool_argmax(input, g, o, out, idx).map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(padding: i32, stride: i32, filter: i32, activation: i32) -> PoolOptions {
        PoolOptions {
            padding,
            stride_width: stride,
            stride_height: stride,
            filter_width: filter,
            filter_height: filter,
            activation,
        }
    }

    #[test]
    fn parses_pool_params() {
        let mut b = Vec::new();
        for v in [1i32, 2, 3, 4, 5, 1, 0, 0, 0, 0] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let o = PoolOptions::parse(&b).unwrap();
        assert_eq!((o.padding, o.stride_width, o.stride_height, o.filter_width, o.filter_height), (1, 2, 3, 4, 5));
        assert!(PoolOptions::parse(&b[..23]).is_err());
        b[4] = 0;
        assert!(PoolOptions::parse(&b).is_err());
    }

    #[test]
    fn pools_with_argmax() {
        // 1 x 4 x 4 x 1, 2x2 stride 2 VALID.
        let x: Vec<f32> = vec![1., 5., 2., 2., 3., 4., 9., 0., 0., 0., -1., -2., 7., 0., -3., -4.];
        let o = opts(2, 2, 2, 0);
        let g = pool_geom(&[1, 4, 4, 1], &o).unwrap();
        assert_eq!((g.out_h, g.out_w, g.pad_h, g.pad_w), (2, 2, 0, 0));
        let (mut out, mut idx) = (vec![0.0; 4], vec![0.0; 4]);
        max_pool_argmax(&x, &g, &o, &mut out, &mut idx).unwrap();
        assert_eq!(out, vec![5., 9., 7., -1.]);
        assert_eq!(idx, vec![1.1, 2.1, 2.1, 0.1]);
    }

    #[test]
    fn same_padding_counts_window_from_padded_corner_and_ties_keep_first() {
        // 1 x 3 x 3 x 1, 3x3 stride 1 SAME: padding 1; relu clamps.
        let x = vec![-5.0f32, -1., -5., -5., -5., -5., -5., -5., -1.];
        let o = opts(1, 1, 3, 1);
        let g = pool_geom(&[1, 3, 3, 1], &o).unwrap();
        assert_eq!((g.out_h, g.out_w, g.pad_h, g.pad_w), (3, 3, 1, 1));
        let (mut out, mut idx) = (vec![0.0; 9], vec![0.0; 9]);
        max_pool_argmax(&x, &g, &o, &mut out, &mut idx).unwrap();
        assert_eq!(out, vec![0.0; 9]);
        // Output (0, 0): the window starts at (-1, -1); the max -1 is input (0, 1) = window (1, 2).
        assert_eq!(idx[0], 5.1);
        // Output (1, 1): -1 at (0, 1) = window (0, 1) comes before (2, 2) = window (2, 2).
        assert_eq!(idx[4], 1.1);
    }

    #[test]
    fn bad_geometry_is_an_error() {
        assert!(pool_geom(&[1, 2, 2, 1], &opts(2, 1, 5, 0)).is_err());
        assert!(pool_geom(&[1, 2, 2], &opts(2, 1, 1, 0)).is_err());
        let g = pool_geom(&[1, 2, 2, 1], &opts(0, 1, 1, 0)).unwrap();
        assert_eq!((g.out_h, g.out_w), (0, 0));
    }
}
