//! FULLY_CONNECTED (TFLite `kernels/fully_connected.cc`, reference kernel
//! `reference/fully_connected.h`), float32 only for now.
//!
//! Inputs: the input (any rank; flattened to `[batches, in]`), weights `[out, in]`, and an
//! optional bias `[out]` (input 2, absent or -1). Output: `keep_num_dims` ? the input's
//! shape with the last dimension replaced by `out` : `[num_input_elements / in, out]`, as
//! TFLite computes it (an input whose size is not a multiple of `in` is truncated to whole
//! rows, as in TFLite). The fused activation clamps.
//!
//! Not supported yet (a clear error): quantized (uint8 / int8 / int16) and hybrid
//! (float input with integer weights) kernels, fp16 or other weight types, shuffled
//! weights, sparse weights.

use crate::abi::builtin_op_data::{
    TfLiteFullyConnectedParams, TfLiteFullyConnectedWeightsFormat, TfLiteFusedActivation,
};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::activation::{activation_range_f32, clamp_min_max};
use crate::kernels::api::{OpCtx, TensorView};

const OP: &str = "FULLY_CONNECTED";

/// The FULLY_CONNECTED registration.
pub fn registration() -> TfLiteRegistration {
    crate::kernel_registration!(TfLiteBuiltinOperator::kTfLiteBuiltinFullyConnected, prepare = prepare, eval = eval)
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// The sizes of a fully-connected layer: `batches` rows of `in_depth` inputs, `out_depth`
/// output units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FcDims {
    pub batches: usize,
    pub in_depth: usize,
    pub out_depth: usize,
}

/// Float fully-connected layer, as TFLite's reference kernel: for each of `batches` rows
/// of `input` (`in_depth` wide) and each of the `out_depth` weight rows, a sequential
/// `f32` dot product plus the bias, clamped to the activation range.
pub fn fully_connected_f32(
    input: &[f32],
    weights: &[f32],
    bias: Option<&[f32]>,
    dims: FcDims,
    out: &mut [f32],
    act: TfLiteFusedActivation,
) -> Result<()> {
    let FcDims { batches, in_depth, out_depth } = dims;
    let need = |n: usize, m: usize| n.checked_mul(m).ok_or_else(|| Error::new("size overflow"));
    let need_in = need(batches, in_depth)?;
    let need_w = need(out_depth, in_depth)?;
    let need_out = need(batches, out_depth)?;
    if input.len() < need_in {
        return Err(Error::new(format!("input holds {} values, needs {batches} x {in_depth}", input.len())));
    }
    if weights.len() != need_w {
        return Err(Error::new(format!("weights hold {} values, expected {out_depth} x {in_depth}", weights.len())));
    }
    if out.len() != need_out {
        return Err(Error::new(format!("output holds {} values, expected {batches} x {out_depth}", out.len())));
    }
    if let Some(b) = bias.filter(|b| b.len() != out_depth) {
        return Err(Error::new(format!("bias holds {} values, expected {out_depth}", b.len())));
    }
    if out.is_empty() {
        return Ok(());
    }
    let (lo, hi) = activation_range_f32(act);
    let rows = if in_depth == 0 { None } else { Some(input[..need_in].chunks_exact(in_depth)) };
    let out_rows = out.chunks_exact_mut(out_depth);
    let compute_row = |x: &[f32], o: &mut [f32]| {
        for (c, oc) in o.iter_mut().enumerate() {
            let w = &weights[c * in_depth..(c + 1) * in_depth];
            let mut total = 0.0f32;
            for (&xi, &wi) in x.iter().zip(w) {
                total += xi * wi;
            }
            let b = bias.map_or(0.0, |b| b[c]);
            *oc = clamp_min_max(total + b, lo, hi);
        }
    };
    match rows {
        Some(rows) => {
            for (x, o) in rows.zip(out_rows) {
                compute_row(x, o);
            }
        }
        None => {
            for o in out_rows {
                compute_row(&[], o);
            }
        }
    }
    Ok(())
}

/// The output shape TFLite's Prepare gives: see the module doc. `input` and `weights` are
/// shapes; errors name what is wrong.
pub fn output_shape(input: &[i32], weights: &[i32], keep_num_dims: bool) -> Result<Vec<i32>> {
    if weights.len() != 2 {
        return Err(Error::new(format!("weights must have rank 2, got shape {weights:?}")));
    }
    let (units, cols) = (weights[0], weights[1]);
    if units < 0 || cols < 0 || input.iter().any(|&d| d < 0) {
        return Err(Error::new(format!("negative dimension in input {input:?} or weights {weights:?}")));
    }
    if keep_num_dims {
        let Some((&last, _)) = input.split_last() else {
            return Err(Error::new("keep_num_dims needs an input of rank 1 or more"));
        };
        if cols != 0 && last != cols {
            return Err(Error::new(format!(
                "input's last dimension {last} does not match the weights' {cols} (keep_num_dims)"
            )));
        }
        let mut shape = input.to_vec();
        if let Some(l) = shape.last_mut() {
            *l = units;
        }
        return Ok(shape);
    }
    let batches = if cols == 0 {
        input
            .split_last()
            .map_or(Some(1i64), |(_, lead)| lead.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d as i64)))
    } else {
        input.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d as i64)).map(|n| n / cols as i64)
    };
    let batches = batches
        .and_then(|b| i32::try_from(b).ok())
        .ok_or_else(|| Error::new(format!("input shape {input:?} is too large")))?;
    Ok(vec![batches, units])
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

fn params(ctx: &OpCtx<'_>) -> Result<TfLiteFullyConnectedParams> {
    // SAFETY: the model parser allocates a `TfLiteFullyConnectedParams` as the builtin
    // data of every FULLY_CONNECTED node, and this registration is only used for it.
    let p = unsafe { ctx.builtin_data::<TfLiteFullyConnectedParams>() };
    p.copied().ok_or_else(|| Error::new(format!("{OP}: node has no builtin params")))
}

struct Operands<'a> {
    input: TensorView<'a>,
    weights: TensorView<'a>,
    bias: Option<TensorView<'a>>,
    out_shape: Vec<i32>,
}

fn operands<'a>(ctx: &OpCtx<'a>, p: &TfLiteFullyConnectedParams) -> Result<Operands<'a>> {
    let n_in = ctx.num_inputs();
    if n_in != 2 && n_in != 3 {
        return Err(Error::new(format!("{OP}: expected 2 or 3 inputs, got {n_in}")));
    }
    if p.weights_format != TfLiteFullyConnectedWeightsFormat::kTfLiteFullyConnectedWeightsFormatDefault {
        return Err(Error::new(format!("{OP}: shuffled weights (format {:?}) are not supported", p.weights_format)));
    }
    if ctx.num_outputs() != 1 {
        return Err(Error::new(format!("{OP}: expected 1 output, got {}", ctx.num_outputs())));
    }
    let err = |e: Error| Error::new(format!("{OP}: {}", e.message));
    let input = ctx.input(0).map_err(err)?;
    let weights = ctx.input(1).map_err(err)?;
    let bias = if n_in == 3 { ctx.optional_input(2).map_err(err)? } else { None };
    let out = ctx.output(0).map_err(err)?;
    if weights.dtype != TfLiteType::kTfLiteFloat32 {
        return Err(Error::new(format!(
            "{OP}: {} weights (with {} input) are not supported yet; only float32",
            weights.dtype.name(),
            input.dtype.name()
        )));
    }
    for (t, what) in [(&input, "input"), (&*out, "output")] {
        if t.dtype != TfLiteType::kTfLiteFloat32 {
            return Err(Error::new(format!("{OP}: {what} of type {} is not supported; only float32", t.dtype.name())));
        }
    }
    let out_shape = output_shape(input.shape, weights.shape, p.keep_num_dims).map_err(err)?;
    if let Some(b) = &bias {
        if b.dtype != TfLiteType::kTfLiteFloat32 {
            return Err(Error::new(format!("{OP}: bias of type {} with float32 weights", b.dtype.name())));
        }
        // `output_shape` checked that the weights have rank 2.
        let units = weights.shape[0];
        if b.num_elements() != usize::try_from(units).unwrap_or(usize::MAX) {
            return Err(Error::new(format!("{OP}: bias shape {:?} does not match {units} output units", b.shape)));
        }
    }
    Ok(Operands { input, weights, bias, out_shape })
}

fn prepare(ctx: &OpCtx<'_>) -> Result<()> {
    let p = params(ctx)?;
    let ops = operands(ctx, &p)?;
    ctx.resize_output(0, &ops.out_shape).map_err(|e| Error::new(format!("{OP}: {}", e.message)))
}

fn eval(ctx: &OpCtx<'_>) -> Result<()> {
    let p = params(ctx)?;
    let ops = operands(ctx, &p)?;
    let mut out = ctx.output(0)?;
    if out.shape != ops.out_shape.as_slice() {
        return Err(Error::new(format!(
            "{OP}: output shape {:?} does not match the expected {:?}",
            out.shape, ops.out_shape
        )));
    }
    // Batches from the output shape, as the reference kernel: all but the last dimension.
    let dims: Vec<usize> = out.shape.iter().map(|&d| d.max(0) as usize).collect();
    let (&units, lead) = dims.split_last().ok_or_else(|| Error::new(format!("{OP}: output has rank 0")))?;
    let batches: usize = lead.iter().product();
    let in_depth = ops.weights.shape.get(1).map_or(0, |&d| d.max(0) as usize);
    let bias = match &ops.bias {
        Some(b) => Some(b.data::<f32>()?),
        None => None,
    };
    fully_connected_f32(
        ops.input.data()?,
        ops.weights.data()?,
        bias,
        FcDims { batches, in_depth, out_depth: units },
        out.data_mut()?,
        p.activation,
    )
    .map_err(|e| Error::new(format!("{OP}: {}", e.message)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use TfLiteFusedActivation::*;

    #[test]
    fn simple() {
        // fully_connected_test.cc SimpleTest: 3 units, 10 inputs, 2 batches.
        let weights: Vec<f32> = (0..3).flat_map(|_| (1..=10).map(|x| x as f32)).collect();
        let bias = [1.0f32, 2.0, 3.0];
        let input = [
            1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, -9.0, -10.0, //
            1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, -8.0, 9.0, -10.0,
        ];
        let mut out = [0.0f32; 6];
        fully_connected_f32(
            &input,
            &weights,
            Some(&bias),
            FcDims { batches: 2, in_depth: 10, out_depth: 3 },
            &mut out,
            kTfLiteActRelu,
        )
        .unwrap();
        assert_eq!(out, [24.0, 25.0, 26.0, 58.0, 59.0, 60.0]);
        fully_connected_f32(
            &input,
            &weights,
            None,
            FcDims { batches: 2, in_depth: 10, out_depth: 3 },
            &mut out,
            kTfLiteActRelu6,
        )
        .unwrap();
        assert_eq!(out, [6.0; 6]);
    }

    #[test]
    fn zero_depth_gives_bias() {
        let mut out = [0.0f32; 4];
        fully_connected_f32(
            &[],
            &[],
            Some(&[1.0, -2.0]),
            FcDims { batches: 2, in_depth: 0, out_depth: 2 },
            &mut out,
            kTfLiteActNone,
        )
        .unwrap();
        assert_eq!(out, [1.0, -2.0, 1.0, -2.0]);
    }

    #[test]
    fn size_errors() {
        let d = FcDims { batches: 1, in_depth: 2, out_depth: 1 };
        let mut out = [0.0f32; 2];
        assert!(fully_connected_f32(&[1.0], &[1.0, 2.0], None, d, &mut out[..1], kTfLiteActNone).is_err());
        assert!(fully_connected_f32(&[1.0, 2.0], &[1.0], None, d, &mut out[..1], kTfLiteActNone).is_err());
        assert!(
            fully_connected_f32(&[1.0, 2.0], &[1.0, 2.0], Some(&[1.0, 2.0]), d, &mut out[..1], kTfLiteActNone).is_err()
        );
        assert!(fully_connected_f32(&[1.0, 2.0], &[1.0, 2.0], None, d, &mut out, kTfLiteActNone).is_err());
    }

    #[test]
    fn shapes() {
        assert_eq!(output_shape(&[2, 10], &[3, 10], false).unwrap(), vec![2, 3]);
        assert_eq!(output_shape(&[1, 2, 5, 10], &[3, 10], false).unwrap(), vec![10, 3]);
        assert_eq!(output_shape(&[1, 2, 5, 10], &[3, 10], true).unwrap(), vec![1, 2, 5, 3]);
        assert_eq!(output_shape(&[4, 0], &[3, 0], false).unwrap(), vec![4, 3]);
        assert_eq!(output_shape(&[7], &[3, 5], false).unwrap(), vec![1, 3]); // truncates, as TFLite
        assert!(output_shape(&[2, 10], &[3, 9], true).is_err());
        assert!(output_shape(&[2, 10], &[30], false).is_err());
        assert!(output_shape(&[], &[3, 1], true).is_err());
    }

    #[test]
    fn registration_glue() {
        use super::super::test_util::Graph;
        use crate::abi::types::TfLiteStatus;
        use TfLiteType::*;
        let reg = registration();
        assert_eq!(reg.builtin_code, TfLiteBuiltinOperator::kTfLiteBuiltinFullyConnected as i32);
        let params = |keep_num_dims| {
            Some(TfLiteFullyConnectedParams {
                activation: kTfLiteActNone,
                weights_format: TfLiteFullyConnectedWeightsFormat::kTfLiteFullyConnectedWeightsFormatDefault,
                keep_num_dims,
                asymmetric_quantize_inputs: false,
                quantized_bias_type: kTfLiteNoType,
            })
        };
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[2, 1, 2], &[1.0f32, 2.0, 3.0, 4.0], None, false);
        let w = g.tensor(kTfLiteFloat32, &[3, 2], &[1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0], None, true);
        let b = g.tensor(kTfLiteFloat32, &[3], &[0.5f32, 0.0, -1.0], None, true);
        // Bias present, output flattened to [2, 3].
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[x, w, b], &[o], params(false)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 3]);
        assert_eq!(g.data::<f32>(o), vec![1.5, 2.0, 2.0, 3.5, 4.0, 6.0]);
        // Bias absent (-1), keep_num_dims.
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[x, w, -1], &[o], params(true)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 1, 3]);
        assert_eq!(g.data::<f32>(o), vec![1.0, 2.0, 3.0, 3.0, 4.0, 7.0]);
        // Two inputs only.
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[x, w], &[o], params(false)), TfLiteStatus::kTfLiteOk);
        // Errors: int8 weights (not supported yet), wrong bias size, missing params.
        let wq = g.tensor(kTfLiteInt8, &[3, 2], &[1i8; 6], Some(super::super::test_util::qp(0.1, 0)), true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&reg, &[x, wq, -1], &[o], params(false)), TfLiteStatus::kTfLiteError);
        let bad_bias = g.tensor(kTfLiteFloat32, &[2], &[0.0f32; 2], None, true);
        assert_eq!(g.run(&reg, &[x, w, bad_bias], &[o], params(false)), TfLiteStatus::kTfLiteError);
        assert_eq!(g.run::<TfLiteFullyConnectedParams>(&reg, &[x, w], &[o], None), TfLiteStatus::kTfLiteError);
    }
}
