//! MediaPipe's custom op `FusedBatchNormV3`
//! (`mediapipe/tasks/cc/vision/custom_ops/fused_batch_norm.cc`; registered at version 1).
//!
//! TensorFlow's training-mode batch normalisation, as MediaPipe's kernel runs it: the
//! statistics come from the batch itself, not from the mean and variance inputs.
//! Inputs: `x` (4-D NHWC float32), `scale`, `offset`, `mean`, `variance` (1-D float32, at
//! least `c` values). Per channel, over the `n = b*h*w` values: `batch_mean = sum / n`,
//! `batch_var = sum((x - batch_mean)^2) / n`, and
//! `y = (x - batch_mean) * (rsqrt(batch_var + 0.001) * scale) + offset`.
//! Outputs: `y` (x's shape), the running mean `0.999 * mean + 0.001 * batch_mean` and
//! variance `0.999 * variance + 0.001 * n/(n-1) * batch_var` (`n/1` when `n <= 1`),
//! `batch_mean`, `batch_var` (`[c]` each) and a `[1]` reserve space (zero here; MediaPipe
//! leaves it unwritten). The exponential-average factor and epsilon are MediaPipe's
//! constants (0.001 each); the custom options are not read.
//!
//! MediaPipe sums with Eigen's vectorised reductions, whose order differs from any plain
//! loop; the sums here are in f64 and rounded once, which stays within a few float ulps
//! of Eigen's result.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "FusedBatchNormV3";
const EPSILON: f32 = 0.001;
const AVG_FACTOR: f32 = 0.001;

/// The registration of MediaPipe's custom op `FusedBatchNormV3`.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<FusedBatchNorm>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

/// The five `[c]` outputs' values: running mean and variance, batch mean and variance.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub running_mean: Vec<f32>,
    pub running_var: Vec<f32>,
    pub batch_mean: Vec<f32>,
    pub batch_var: Vec<f32>,
}

/// Normalises `x` (`n` rows of `c` channels) into `y` and returns the statistics.
pub fn fused_batch_norm(x: &[f32], c: usize, [scale, offset, mean, var]: [&[f32]; 4], y: &mut [f32]) -> Result<Stats> {
    crate::ensure!(c > 0 || x.is_empty(), "no channels but {} values", x.len());
    crate::ensure!(y.len() == x.len() && (c == 0 || x.len().is_multiple_of(c)), "x and y must hold whole rows of {c}");
    for (what, v) in [("scale", scale), ("offset", offset), ("mean", mean), ("variance", var)] {
        crate::ensure!(v.len() >= c, "{what} holds {} values, the input has {c} channels", v.len());
    }
    let n = x.len().checked_div(c).unwrap_or(0);
    let inv = 1.0f32 / n as f32;
    let rows = || x.chunks_exact(c.max(1));
    let mut sum = vec![0.0f64; c];
    for row in rows() {
        for (s, &v) in sum.iter_mut().zip(row) {
            *s += f64::from(v);
        }
    }
    let batch_mean: Vec<f32> = sum.iter().map(|&s| s as f32 * inv).collect();
    let mut sq = vec![0.0f64; c];
    for row in rows() {
        for ((s, &v), &m) in sq.iter_mut().zip(row).zip(&batch_mean) {
            let d = v - m;
            *s += f64::from(d * d);
        }
    }
    let batch_var: Vec<f32> = sq.iter().map(|&s| s as f32 * inv).collect();
    let factor: Vec<f32> = (0..c).map(|k| (1.0 / (batch_var[k] + EPSILON).sqrt()) * scale[k]).collect();
    for (yr, xr) in y.chunks_exact_mut(c.max(1)).zip(rows()) {
        for (k, (y, &x)) in yr.iter_mut().zip(xr).enumerate() {
            *y = (x - batch_mean[k]) * factor[k] + offset[k];
        }
    }
    let adjust = n as f32 / (if n > 1 { n - 1 } else { 1 }) as f32;
    let keep = 1.0 - AVG_FACTOR;
    Ok(Stats {
        running_mean: (0..c).map(|k| keep * mean[k] + AVG_FACTOR * batch_mean[k]).collect(),
        running_var: (0..c).map(|k| keep * var[k] + (AVG_FACTOR * adjust) * batch_var[k]).collect(),
        batch_mean,
        batch_var,
    })
}

/// `FusedBatchNormV3`; its state is the channel count.
struct FusedBatchNorm;

impl BuiltinKernel for FusedBatchNorm {
    const NAME: &'static str = OP;
    type Params = ();
    type State = usize;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<usize> {
        check_arity(ctx, OP, 5, 5, 6)?;
        let x = ctx.input(0).map_err(in_op(OP))?;
        if x.shape.len() != 4 || x.shape.iter().any(|&d| d < 0) {
            return Err(op_error(OP, format!("the input must be 4-D, got shape {:?}", x.shape)));
        }
        let c = x.shape[3] as usize;
        let f32_ = TfLiteType::kTfLiteFloat32;
        if x.dtype != f32_ {
            return Err(op_error(OP, "the input must be float32"));
        }
        for i in 1..5 {
            let t = ctx.input(i).map_err(in_op(OP))?;
            if t.shape.len() != 1 || t.dtype != f32_ || t.num_elements() < c {
                return Err(op_error(OP, format!("input {i} must be a float32 vector of at least {c} values")));
            }
        }
        for i in 0..6 {
            if ctx.output(i).map_err(in_op(OP))?.dtype != f32_ {
                return Err(op_error(OP, "every output must be float32"));
            }
        }
        ctx.resize_output(0, x.shape).map_err(in_op(OP))?;
        for i in 1..5 {
            ctx.resize_output(i, &[c as i32]).map_err(in_op(OP))?;
        }
        ctx.resize_output(5, &[1]).map_err(in_op(OP))?;
        Ok(c)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), c: &mut usize) -> Result<()> {
        let data = |i: usize| ctx.input(i).and_then(|t| t.data::<f32>()).map_err(in_op(OP));
        let x = data(0)?;
        let y = ctx.output(0).map_err(in_op(OP))?.data_mut::<f32>().map_err(in_op(OP))?;
        let s = fused_batch_norm(x, *c, [data(1)?, data(2)?, data(3)?, data(4)?], y).map_err(in_op(OP))?;
        for (i, v) in [(1, &s.running_mean), (2, &s.running_var), (3, &s.batch_mean), (4, &s.batch_var)] {
            ctx.output(i).map_err(in_op(OP))?.data_mut::<f32>().map_err(in_op(OP))?.copy_from_slice(v);
        }
        ctx.output(5).map_err(in_op(OP))?.data_mut::<f32>().map_err(in_op(OP))?.fill(0.0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_per_channel_with_batch_statistics() {
        // Two channels over 4 rows: channel 0 = 1, 2, 3, 4; channel 1 = 5 (constant).
        let x = [1.0f32, 5.0, 2.0, 5.0, 3.0, 5.0, 4.0, 5.0];
        let mut y = [0.0f32; 8];
        let ones = [1.0f32, 1.0];
        let s = fused_batch_norm(&x, 2, [&[2.0, 1.0], &[0.5, -1.0], &ones, &ones], &mut y).unwrap();
        assert_eq!(s.batch_mean, vec![2.5, 5.0]);
        assert_eq!(s.batch_var, vec![1.25, 0.0]);
        let f = 2.0 / (1.25f32 + 0.001).sqrt();
        for (k, &v) in [1.0f32, 2.0, 3.0, 4.0].iter().enumerate() {
            assert!((y[2 * k] - ((v - 2.5) * f + 0.5)).abs() < 1e-6);
            assert_eq!(y[2 * k + 1], -1.0);
        }
        assert!((s.running_mean[0] - (0.999 + 0.001 * 2.5)).abs() < 1e-6);
        assert!((s.running_var[0] - (0.999 + 0.001 * 4.0 / 3.0 * 1.25)).abs() < 1e-6);
        assert!((s.running_var[1] - 0.999).abs() < 1e-6);
    }

    #[test]
    fn short_parameters_are_errors() {
        let mut y = [0.0f32; 2];
        assert!(fused_batch_norm(&[1.0, 2.0], 2, [&[1.0], &[1.0, 1.0], &[1.0, 1.0], &[1.0, 1.0]], &mut y).is_err());
        assert!(fused_batch_norm(&[1.0, 2.0], 0, [&[], &[], &[], &[]], &mut y).is_err());
    }
}
