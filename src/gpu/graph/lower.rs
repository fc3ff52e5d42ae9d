//! TFLite nodes → kernel launches, with every shape and option checked.
//!
//! [`Lowering::add_node`] either lowers a node completely or returns why it cannot (and
//! changes nothing), so the delegate's Prepare uses it to decide which nodes to claim and
//! its kernel init uses it again to build the partition. Nothing read from the model is
//! trusted: output shapes are recomputed from the inputs and options and must equal the
//! tensors' shapes, constants must have the sizes their shapes say.

use std::collections::HashMap;

use super::*;
use crate::abi::builtin_ops::TfLiteBuiltinOperator as B;
use crate::error::{Error, Result};

/// Largest element count of one tensor the device side indexes with 32-bit ints.
const MAX_ELEMENTS: usize = (i32::MAX as usize) / 2;

/// The highest version of each builtin the delegate implements (float only): a
/// delegate must refuse versions whose semantics it does not know.
pub fn max_supported_version(op: i32) -> Option<i32> {
    let v = match op {
        x if x == B::kTfLiteBuiltinAdd as i32 => 2,
        x if x == B::kTfLiteBuiltinSub as i32 => 3,
        x if x == B::kTfLiteBuiltinMul as i32 => 4,
        x if x == B::kTfLiteBuiltinDiv as i32 => 2,
        x if x == B::kTfLiteBuiltinMaximum as i32 => 4,
        x if x == B::kTfLiteBuiltinMinimum as i32 => 4,
        x if x == B::kTfLiteBuiltinSquaredDifference as i32 => 2,
        x if x == B::kTfLiteBuiltinConv2d as i32 => 6,
        x if x == B::kTfLiteBuiltinDepthwiseConv2d as i32 => 6,
        x if x == B::kTfLiteBuiltinFullyConnected as i32 => 9,
        x if x == B::kTfLiteBuiltinTransposeConv as i32 => 3,
        x if x == B::kTfLiteBuiltinAveragePool2d as i32 => 3,
        x if x == B::kTfLiteBuiltinMaxPool2d as i32 => 3,
        x if x == B::kTfLiteBuiltinMean as i32 => 2,
        x if x == B::kTfLiteBuiltinSoftmax as i32 => 2,
        x if x == B::kTfLiteBuiltinConcatenation as i32 => 3,
        x if x == B::kTfLiteBuiltinReshape as i32 => 1,
        x if x == B::kTfLiteBuiltinPad as i32 => 2,
        x if x == B::kTfLiteBuiltinPadv2 as i32 => 2,
        x if x == B::kTfLiteBuiltinRelu as i32 => 2,
        x if x == B::kTfLiteBuiltinRelu6 as i32 => 2,
        x if x == B::kTfLiteBuiltinReluN1To1 as i32 => 1,
        x if x == B::kTfLiteBuiltinPrelu as i32 => 1,
        x if x == B::kTfLiteBuiltinLogistic as i32 => 2,
        x if x == B::kTfLiteBuiltinTanh as i32 => 2,
        x if x == B::kTfLiteBuiltinHardSwish as i32 => 1,
        x if x == B::kTfLiteBuiltinResizeBilinear as i32 => 3,
        x if x == B::kTfLiteBuiltinDequantize as i32 => 3,
        x if x == B::kTfLiteBuiltinCustom as i32 => 1,
        _ => return None,
    };
    Some(v)
}

/// MediaPipe's transposed convolution, the one custom op the delegate runs.
pub const CONV2D_TRANSPOSE_BIAS: &str = "Convolution2DTransposeBias";

/// Builds the launches of a partition node by node.
pub struct Lowering<'a> {
    tensors: &'a HashMap<TensorId, TensorDesc>,
    /// Tensors whose contents are known before any Invoke (DEQUANTIZE of a constant).
    known: &'a HashMap<TensorId, Vec<f32>>,
    pub gtensors: HashMap<TensorId, GTensor>,
    pub ops: Vec<Op>,
}

/// What a node lowers to, before it is committed.
struct Pending {
    tensors: Vec<(TensorId, GTensor)>,
    ops: Vec<Op>,
}

impl<'a> Lowering<'a> {
    pub fn new(tensors: &'a HashMap<TensorId, TensorDesc>, known: &'a HashMap<TensorId, Vec<f32>>) -> Self {
        Lowering { tensors, known, gtensors: HashMap::new(), ops: Vec::new() }
    }

    /// Lowers one node, or says why the delegate cannot run it (then nothing changes).
    pub fn add_node(&mut self, n: &NodeDesc) -> Result<()> {
        let max =
            max_supported_version(n.op).ok_or_else(|| Error::new(format!("operator {} is not supported", n.op)))?;
        if n.version < 1 || n.version > max {
            crate::bail!("version {} of operator {} is not supported (max {max})", n.version, n.op);
        }
        let p = self.lower(n)?;
        for (id, t) in p.tensors {
            self.gtensors.entry(id).or_insert(t);
        }
        self.ops.extend(p.ops);
        Ok(())
    }

    fn desc(&self, t: TensorId) -> Result<&TensorDesc> {
        self.tensors.get(&t).ok_or_else(|| Error::new(format!("tensor {t} is missing")))
    }

    fn shape(&self, t: TensorId) -> Result<Shape4> {
        canonical(&self.desc(t)?.dims).map_err(|e| Error::new(format!("tensor {t}: {e}")))
    }

    /// A float tensor read or written by a kernel: its canonical shape and, when known,
    /// its contents.
    fn value(&self, t: TensorId) -> Result<GTensor> {
        let d = self.desc(t)?;
        let shape = self.shape(t)?;
        if let Some(v) = self.known.get(&t) {
            if v.len() != elements(shape) {
                crate::bail!("tensor {t}: known contents do not match its shape");
            }
            return Ok(GTensor { shape, constant: Some(v.clone()) });
        }
        if d.ty != TfLiteType::kTfLiteFloat32 {
            crate::bail!("tensor {t} has type {:?}; the GPU delegate computes float32", d.ty);
        }
        let constant = match &d.data {
            Some(bytes) => Some(floats(bytes, elements(shape)).map_err(|e| Error::new(format!("tensor {t}: {e}")))?),
            None => None,
        };
        Ok(GTensor { shape, constant })
    }

    /// A float constant (weights, bias).
    fn constant(&self, t: TensorId) -> Result<(Shape4, Vec<f32>)> {
        let g = self.value(t)?;
        match g.constant {
            Some(v) => Ok((g.shape, v)),
            None => Err(Error::new(format!("tensor {t} must be constant"))),
        }
    }

    fn ints(&self, t: TensorId) -> Result<Vec<i64>> {
        let d = self.desc(t)?;
        let bytes = d.data.as_ref().ok_or_else(|| Error::new(format!("tensor {t} must be constant")))?;
        let n = dims_elements(&d.dims)?;
        match d.ty {
            TfLiteType::kTfLiteInt32 if bytes.len() == 4 * n => {
                Ok(bytes.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect())
            }
            TfLiteType::kTfLiteInt64 if bytes.len() == 8 * n => Ok(bytes
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect()),
            _ => Err(Error::new(format!("tensor {t} must be a constant int32/int64 tensor"))),
        }
    }

    fn rank(&self, t: TensorId) -> Result<usize> {
        Ok(self.desc(t)?.dims.len())
    }

    fn input(&self, n: &NodeDesc, i: usize) -> Result<TensorId> {
        match n.inputs.get(i) {
            Some(&t) if t >= 0 => Ok(t),
            _ => Err(Error::new(format!("input {i} is missing"))),
        }
    }

    fn optional_input(&self, n: &NodeDesc, i: usize) -> Option<TensorId> {
        n.inputs.get(i).copied().filter(|&t| t >= 0)
    }

    fn output(&self, n: &NodeDesc) -> Result<TensorId> {
        if n.outputs.len() != 1 || n.outputs[0] < 0 {
            crate::bail!("expected 1 output, got {}", n.outputs.len());
        }
        Ok(n.outputs[0])
    }

    fn lower(&self, n: &NodeDesc) -> Result<Pending> {
        let op = n.op;
        let is = |b: B| op == b as i32;
        let mut p = Pending { tensors: Vec::new(), ops: Vec::new() };
        if is(B::kTfLiteBuiltinDequantize) {
            return self.lower_dequantize(n);
        }
        let out = self.output(n)?;
        let out_t = self.value(out)?;
        if out_t.constant.is_some() {
            crate::bail!("output tensor {out} is constant");
        }
        let o = out_t.shape;
        let push =
            |p: &mut Pending, kind: OpKind, out_shape: Shape4, region: Shape4, origin: [usize; 4], steps: Vec<Step>| {
                p.ops.push(Op { kind, out, out_shape, region, origin, steps, nodes: vec![n.index] });
            };
        p.tensors.push((out, out_t.clone()));
        let binaries = [
            (B::kTfLiteBuiltinAdd, step::ADD),
            (B::kTfLiteBuiltinSub, step::SUB),
            (B::kTfLiteBuiltinMul, step::MUL),
            (B::kTfLiteBuiltinDiv, step::DIV),
            (B::kTfLiteBuiltinMaximum, step::MAX),
            (B::kTfLiteBuiltinMinimum, step::MIN),
            (B::kTfLiteBuiltinSquaredDifference, step::SQUARED_DIFF),
        ];
        if let Some(&(_, code)) = binaries.iter().find(|(b, _)| is(*b)) {
            if n.inputs.len() != 2 {
                crate::bail!("expected 2 inputs, got {}", n.inputs.len());
            }
            let (a, b) = (self.input(n, 0)?, self.input(n, 1)?);
            let (ta, tb) = (self.value(a)?, self.value(b)?);
            let sa = broadcast_strides(ta.shape, o)
                .ok_or_else(|| Error::new(format!("input {:?} does not broadcast to {o:?}", ta.shape)))?;
            let sb = broadcast_strides(tb.shape, o)
                .ok_or_else(|| Error::new(format!("input {:?} does not broadcast to {o:?}", tb.shape)))?;
            if (0..4).any(|d| o[d] != ta.shape[d].max(tb.shape[d])) {
                crate::bail!("output {o:?} is not the broadcast of {:?} and {:?}", ta.shape, tb.shape);
            }
            let act = match n.params {
                Params::Binary(a) => a,
                Params::None => TfLiteFusedActivation::kTfLiteActNone,
                _ => crate::bail!("missing options"),
            };
            let mut steps = vec![Step { code, operand: Some((b, sb)), node: n.index }];
            steps.extend(activation_steps(act, n.index)?);
            p.tensors.push((a, ta));
            p.tensors.push((b, tb));
            push(&mut p, OpKind::CopyBroadcast { src: a, strides: sa }, o, o, [0; 4], steps);
            return Ok(p);
        }
        let unary = [
            (B::kTfLiteBuiltinRelu, step::RELU),
            (B::kTfLiteBuiltinRelu6, step::RELU6),
            (B::kTfLiteBuiltinReluN1To1, step::RELU_N1_TO_1),
            (B::kTfLiteBuiltinLogistic, step::LOGISTIC),
            (B::kTfLiteBuiltinTanh, step::TANH),
            (B::kTfLiteBuiltinHardSwish, step::HARD_SWISH),
        ];
        if let Some(&(_, code)) = unary.iter().find(|(b, _)| is(*b)) {
            let a = self.input(n, 0)?;
            let ta = self.value(a)?;
            if ta.shape != o {
                crate::bail!("input {:?} and output {o:?} differ", ta.shape);
            }
            p.tensors.push((a, ta));
            let steps = vec![Step { code, operand: None, node: n.index }];
            push(&mut p, OpKind::CopyBroadcast { src: a, strides: strides(o) }, o, o, [0; 4], steps);
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinPrelu) {
            let (a, alpha) = (self.input(n, 0)?, self.input(n, 1)?);
            let (ta, tal) = (self.value(a)?, self.value(alpha)?);
            if ta.shape != o {
                crate::bail!("input {:?} and output {o:?} differ", ta.shape);
            }
            let s = broadcast_strides(tal.shape, o)
                .ok_or_else(|| Error::new(format!("alpha {:?} does not broadcast to {o:?}", tal.shape)))?;
            p.tensors.push((a, ta));
            p.tensors.push((alpha, tal));
            let steps = vec![Step { code: step::PRELU, operand: Some((alpha, s)), node: n.index }];
            push(&mut p, OpKind::CopyBroadcast { src: a, strides: strides(o) }, o, o, [0; 4], steps);
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinConv2d) {
            let Params::Conv(c) = n.params else { crate::bail!("missing options") };
            let (src, ti) = self.runtime_input(n, 0)?;
            let (ws, w) = self.constant(self.input(n, 1)?)?;
            self.rank4(n, 0)?;
            let (co, kh, kw, wc) = (ws[0], ws[1], ws[2], ws[3]);
            if wc != ti.shape[3] {
                crate::bail!("filter {ws:?} does not match input channels {} (grouped convolution)", ti.shape[3]);
            }
            let window = window(
                c.padding,
                ti.shape,
                o,
                kh,
                kw,
                c.stride_height,
                c.stride_width,
                c.dilation_height_factor,
                c.dilation_width_factor,
            )?;
            check_out(o, [ti.shape[0], o[1], o[2], co])?;
            let bias = self.bias(n, 2, co)?;
            let steps = activation_steps(c.activation, n.index)?;
            let kind = if kh == 1
                && kw == 1
                && window.sh == 1
                && window.sw == 1
                && window.pad_t == 0
                && window.pad_l == 0
                && o[1] == ti.shape[1]
                && o[2] == ti.shape[2]
            {
                OpKind::Conv1x1 { src, in_c: wc, weights: ohwi_to_hwio(&w, ws), bias }
            } else {
                OpKind::Conv2d { src, input: ti.shape, window, weights: ohwi_to_hwio(&w, ws), bias }
            };
            p.tensors.push((src, ti));
            push(&mut p, kind, o, o, [0; 4], steps);
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinDepthwiseConv2d) {
            let Params::Depthwise(c) = n.params else { crate::bail!("missing options") };
            let (src, ti) = self.runtime_input(n, 0)?;
            self.rank4(n, 0)?;
            let (ws, w) = self.constant(self.input(n, 1)?)?;
            let (kh, kw, co) = (ws[1], ws[2], ws[3]);
            let ci = ti.shape[3];
            if ws[0] != 1 || co % ci != 0 || co != o[3] {
                crate::bail!("filter {ws:?} does not fit input channels {ci} and output {o:?}");
            }
            let window = window(
                c.padding,
                ti.shape,
                o,
                kh,
                kw,
                c.stride_height,
                c.stride_width,
                c.dilation_height_factor,
                c.dilation_width_factor,
            )?;
            check_out(o, [ti.shape[0], o[1], o[2], co])?;
            let bias = self.bias(n, 2, co)?;
            let steps = activation_steps(c.activation, n.index)?;
            p.tensors.push((src, ti.clone()));
            let kind = OpKind::Depthwise { src, input: ti.shape, window, multiplier: co / ci, weights: w, bias };
            push(&mut p, kind, o, o, [0; 4], steps);
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinFullyConnected) {
            let Params::FullyConnected(f) = n.params else { crate::bail!("missing options") };
            if f.weights_format != TfLiteFullyConnectedWeightsFormat::kTfLiteFullyConnectedWeightsFormatDefault {
                crate::bail!("shuffled weights are not supported");
            }
            let (src, ti) = self.runtime_input(n, 0)?;
            let wid = self.input(n, 1)?;
            if self.rank(wid)? != 2 {
                crate::bail!("weights must have rank 2");
            }
            let (ws, w) = self.constant(wid)?;
            let (units, in_f) = (ws[2], ws[3]);
            let rows = elements(ti.shape) / in_f.max(1);
            if in_f == 0 || !elements(ti.shape).is_multiple_of(in_f) || o[3] != units || elements(o) != rows * units {
                crate::bail!("input {:?}, weights {ws:?} and output {o:?} do not fit", ti.shape);
            }
            let bias = self.bias(n, 2, units)?;
            let steps = activation_steps(f.activation, n.index)?;
            let mut t = vec![0f32; w.len()];
            for u in 0..units {
                for i in 0..in_f {
                    t[i * units + u] = w[u * in_f + i];
                }
            }
            p.tensors.push((src, ti));
            push(&mut p, OpKind::FullyConnected { src, in_features: in_f, weights: t, bias }, o, o, [0; 4], steps);
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinTransposeConv) || is(B::kTfLiteBuiltinCustom) {
            let Params::TransposeConv(t) = n.params else { crate::bail!("missing options") };
            let custom = is(B::kTfLiteBuiltinCustom);
            if custom && n.custom_name != CONV2D_TRANSPOSE_BIAS {
                crate::bail!("custom operator {} is not supported", n.custom_name);
            }
            let (in_idx, w_idx, b_idx) = if custom { (0, 1, 2) } else { (2, 1, 3) };
            if !custom {
                let shape = self.ints(self.input(n, 0)?)?;
                let rank = self.rank(out)?;
                if rank != 4 || shape.len() != 4 || (0..4).any(|d| shape[d] != o[d] as i64) {
                    crate::bail!("output_shape {shape:?} does not match the output {o:?}");
                }
            }
            let (src, ti) = self.runtime_input(n, in_idx)?;
            self.rank4(n, in_idx)?;
            let (ws, w) = self.constant(self.input(n, w_idx)?)?;
            let (co, kh, kw, wc) = (ws[0], ws[1], ws[2], ws[3]);
            if wc != ti.shape[3] || co != o[3] || ti.shape[0] != o[0] {
                crate::bail!("filter {ws:?}, input {:?} and output {o:?} do not fit", ti.shape);
            }
            let (sh, sw) = (positive(t.stride_height, "stride")?, positive(t.stride_width, "stride")?);
            let same = match t.padding {
                TfLitePadding::kTfLitePaddingSame => true,
                TfLitePadding::kTfLitePaddingValid => false,
                _ => crate::bail!("padding is neither SAME nor VALID"),
            };
            let (pad_t, pad_l) = if custom {
                let (oh, pt) = mediapipe_transpose_axis(same, ti.shape[1], kh, sh)?;
                let (ow, pl) = mediapipe_transpose_axis(same, ti.shape[2], kw, sw)?;
                check_out(o, [ti.shape[0], oh, ow, co])?;
                (pt, pl)
            } else {
                (transpose_padding(same, o[1], kh, sh), transpose_padding(same, o[2], kw, sw))
            };
            let bias = self.bias(n, b_idx, co)?;
            let window = Window { kh, kw, sh, sw, dh: 1, dw: 1, pad_t, pad_l };
            let steps = if custom { Vec::new() } else { activation_steps(t.activation, n.index)? };
            p.tensors.push((src, ti.clone()));
            let kind = OpKind::TransposeConv { src, input: ti.shape, window, weights: ohwi_to_hwio(&w, ws), bias };
            push(&mut p, kind, o, o, [0; 4], steps);
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinAveragePool2d) || is(B::kTfLiteBuiltinMaxPool2d) {
            let Params::Pool(pp) = n.params else { crate::bail!("missing options") };
            let (src, ti) = self.runtime_input(n, 0)?;
            self.rank4(n, 0)?;
            let kh = positive(pp.filter_height, "filter height")?;
            let kw = positive(pp.filter_width, "filter width")?;
            let window = window(pp.padding, ti.shape, o, kh, kw, pp.stride_height, pp.stride_width, 1, 1)?;
            check_out(o, [ti.shape[0], o[1], o[2], ti.shape[3]])?;
            let steps = activation_steps(pp.activation, n.index)?;
            p.tensors.push((src, ti.clone()));
            let kind = OpKind::Pool { src, input: ti.shape, window, is_max: is(B::kTfLiteBuiltinMaxPool2d) };
            push(&mut p, kind, o, o, [0; 4], steps);
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinMean) {
            let (src, ti) = self.runtime_input(n, 0)?;
            let rank = self.rank(src)?;
            let axes = self.ints(self.input(n, 1)?)?;
            let mut mask = 0u32;
            for a in axes {
                let a = if a < 0 { a + rank as i64 } else { a };
                if a < 0 || a >= rank as i64 {
                    crate::bail!("axis {a} is out of range for rank {rank}");
                }
                mask |= 1 << (a as usize + 4 - rank);
            }
            let mut kept = ti.shape;
            for (d, k) in kept.iter_mut().enumerate() {
                if mask & (1 << d) != 0 {
                    *k = 1;
                }
            }
            if elements(kept) != elements(o) {
                crate::bail!("output {o:?} is not the reduction of {:?}", ti.shape);
            }
            p.tensors.push((src, ti.clone()));
            push(&mut p, OpKind::Mean { src, input: ti.shape, mask }, kept, kept, [0; 4], Vec::new());
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinSoftmax) {
            let beta = match n.params {
                Params::Softmax(b) if b.is_finite() => b,
                _ => crate::bail!("missing or invalid beta"),
            };
            let (src, ti) = self.runtime_input(n, 0)?;
            if ti.shape != o {
                crate::bail!("input {:?} and output {o:?} differ", ti.shape);
            }
            p.tensors.push((src, ti));
            let region = [o[0], o[1], o[2], 1];
            push(&mut p, OpKind::Softmax { src, channels: o[3], beta }, o, region, [0; 4], Vec::new());
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinConcatenation) {
            let Params::Concat(c) = n.params else { crate::bail!("missing options") };
            let rank = self.rank(out)?;
            let axis = if c.axis < 0 { c.axis as i64 + rank as i64 } else { c.axis as i64 };
            if axis < 0 || axis >= rank as i64 || n.inputs.is_empty() {
                crate::bail!("axis {} is out of range for rank {rank}", c.axis);
            }
            let axis = axis as usize + 4 - rank;
            let steps = activation_steps(c.activation, n.index)?;
            let mut at = 0usize;
            for i in 0..n.inputs.len() {
                let t = self.input(n, i)?;
                if self.rank(t)? != rank {
                    crate::bail!("inputs differ in rank");
                }
                let ti = self.value(t)?;
                if (0..4).any(|d| d != axis && ti.shape[d] != o[d]) {
                    crate::bail!("input {:?} does not fit output {o:?}", ti.shape);
                }
                let mut origin = [0; 4];
                origin[axis] = at;
                at += ti.shape[axis];
                let s = ti.shape;
                p.tensors.push((t, ti));
                push(&mut p, OpKind::CopyBroadcast { src: t, strides: strides(s) }, o, s, origin, steps.clone());
            }
            if at != o[axis] {
                crate::bail!("inputs add up to {at} along the axis, output has {}", o[axis]);
            }
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinReshape) {
            let (src, ti) = (self.input(n, 0)?, self.value(self.input(n, 0)?)?);
            if let Some(s) = self.optional_input(n, 1)
                && self.desc(s)?.data.is_none()
                && !self.known.contains_key(&s)
            {
                crate::bail!("a runtime shape input makes the output shape dynamic");
            }
            if elements(ti.shape) != elements(o) {
                crate::bail!("input {:?} and output {o:?} differ in size", ti.shape);
            }
            p.tensors.push((src, ti));
            push(&mut p, OpKind::CopyLinear { src }, o, o, [0; 4], Vec::new());
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinPad) || is(B::kTfLiteBuiltinPadv2) {
            let (src, ti) = (self.input(n, 0)?, self.value(self.input(n, 0)?)?);
            let rank = self.rank(src)?;
            let pads = self.ints(self.input(n, 1)?)?;
            if pads.len() != 2 * rank {
                crate::bail!("paddings have {} values for rank {rank}", pads.len());
            }
            let mut before = [0usize; 4];
            let mut want = ti.shape;
            for d in 0..rank {
                let (a, b) = (pads[2 * d], pads[2 * d + 1]);
                if a < 0 || b < 0 || a > MAX_ELEMENTS as i64 || b > MAX_ELEMENTS as i64 {
                    crate::bail!("padding {a},{b} is not supported");
                }
                let cd = d + 4 - rank;
                before[cd] = a as usize;
                want[cd] += (a + b) as usize;
            }
            check_out(o, want)?;
            let value = match self.optional_input(n, 2) {
                Some(v) if is(B::kTfLiteBuiltinPadv2) => {
                    let (_, c) = self.constant(v)?;
                    if c.len() != 1 {
                        crate::bail!("the pad value must be a scalar");
                    }
                    c[0]
                }
                _ => 0.0,
            };
            p.tensors.push((src, ti.clone()));
            push(&mut p, OpKind::Pad { src, input: ti.shape, before, value }, o, o, [0; 4], Vec::new());
            return Ok(p);
        }
        if is(B::kTfLiteBuiltinResizeBilinear) {
            let Params::ResizeBilinear(r) = n.params else { crate::bail!("missing options") };
            let (src, ti) = self.runtime_input(n, 0)?;
            self.rank4(n, 0)?;
            let size = self.ints(self.input(n, 1)?)?;
            if size.len() != 2 || size[0] != o[1] as i64 || size[1] != o[2] as i64 {
                crate::bail!("size {size:?} does not match the output {o:?}");
            }
            check_out(o, [ti.shape[0], o[1], o[2], ti.shape[3]])?;
            let scale = |i: usize, out: usize| -> f32 {
                if r.align_corners && out > 1 { (i as f32 - 1.0) / (out as f32 - 1.0) } else { i as f32 / out as f32 }
            };
            let kind = OpKind::ResizeBilinear {
                src,
                input: ti.shape,
                scale_y: scale(ti.shape[1], o[1]),
                scale_x: scale(ti.shape[2], o[2]),
                half_pixel: r.half_pixel_centers,
            };
            p.tensors.push((src, ti.clone()));
            push(&mut p, kind, o, o, [0; 4], Vec::new());
            return Ok(p);
        }
        Err(Error::new(format!("operator {op} is not supported")))
    }

    /// DEQUANTIZE of a constant becomes a known tensor: no launch.
    fn lower_dequantize(&self, n: &NodeDesc) -> Result<Pending> {
        let src = self.input(n, 0)?;
        let out = self.output(n)?;
        let d = self.desc(src)?;
        let od = self.desc(out)?;
        if od.ty != TfLiteType::kTfLiteFloat32 || od.dims != d.dims {
            crate::bail!("DEQUANTIZE must produce float32 of the input's shape");
        }
        let shape = self.shape(out)?;
        let v = dequantize(d).map_err(|e| Error::new(format!("DEQUANTIZE of tensor {src}: {e}")))?;
        if v.len() != elements(shape) {
            crate::bail!("DEQUANTIZE input size does not match its shape");
        }
        Ok(Pending { tensors: vec![(out, GTensor { shape, constant: Some(v) })], ops: Vec::new() })
    }

    fn runtime_input(&self, n: &NodeDesc, i: usize) -> Result<(TensorId, GTensor)> {
        let t = self.input(n, i)?;
        Ok((t, self.value(t)?))
    }

    fn rank4(&self, n: &NodeDesc, i: usize) -> Result<()> {
        match self.rank(self.input(n, i)?)? {
            4 => Ok(()),
            r => Err(Error::new(format!("input {i} must have rank 4, has {r}"))),
        }
    }

    fn bias(&self, n: &NodeDesc, i: usize, channels: usize) -> Result<Vec<f32>> {
        match self.optional_input(n, i) {
            None => Ok(vec![0.0; channels]),
            Some(t) => {
                let (_, v) = self.constant(t)?;
                if v.len() != channels {
                    crate::bail!("bias has {} values for {channels} channels", v.len());
                }
                Ok(v)
            }
        }
    }
}

/// The contents of a constant to dequantize: float16, or per-tensor int8/uint8.
pub fn dequantize(d: &TensorDesc) -> Result<Vec<f32>> {
    let bytes = d.data.as_ref().ok_or_else(|| Error::new("the input is not constant"))?;
    let n = dims_elements(&d.dims)?;
    match d.ty {
        TfLiteType::kTfLiteFloat16 if bytes.len() == 2 * n => {
            Ok(bytes.chunks_exact(2).map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]]))).collect())
        }
        TfLiteType::kTfLiteInt8 | TfLiteType::kTfLiteUInt8 if bytes.len() == n => {
            if d.per_channel || !d.scale.is_finite() || d.scale <= 0.0 {
                crate::bail!("only per-tensor quantization with a positive scale is supported");
            }
            let signed = d.ty == TfLiteType::kTfLiteInt8;
            Ok(bytes
                .iter()
                .map(|&b| {
                    let q = if signed { b as i8 as i32 } else { b as i32 };
                    (q - d.zero_point) as f32 * d.scale
                })
                .collect())
        }
        t => Err(Error::new(format!("type {t:?} (or its size) is not supported"))),
    }
}

/// IEEE half → single.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h >> 15) as u32) << 31;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalise.
            let mut e = 127 - 15 + 1;
            let mut m = m;
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | (e << 23) | ((m & 0x3ff) << 13)
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

fn dims_elements(dims: &[i32]) -> Result<usize> {
    let mut n = 1usize;
    for &d in dims {
        let d = usize::try_from(d).map_err(|_| Error::new(format!("dimension {d} is negative")))?;
        n = n.checked_mul(d).filter(|&v| v <= MAX_ELEMENTS).ok_or_else(|| Error::new("the tensor is too large"))?;
    }
    Ok(n)
}

/// TFLite dims → canonical 4-D shape (ranks 0..=4, every dimension positive).
pub fn canonical(dims: &[i32]) -> Result<Shape4> {
    if dims.len() > 4 {
        crate::bail!("rank {} is above 4", dims.len());
    }
    if dims.iter().any(|&d| d < 1) {
        crate::bail!("shape {dims:?} has an empty or unknown dimension");
    }
    dims_elements(dims)?;
    let mut s = [1usize; 4];
    for (i, &d) in dims.iter().enumerate() {
        s[4 - dims.len() + i] = d as usize;
    }
    Ok(s)
}

fn floats(bytes: &[u8], n: usize) -> Result<Vec<f32>> {
    if bytes.len() != 4 * n {
        crate::bail!("constant has {} bytes for {n} floats", bytes.len());
    }
    Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Strides that read `from` at the coordinates of `to` (0 on broadcast dimensions).
pub fn broadcast_strides(from: Shape4, to: Shape4) -> Option<[usize; 4]> {
    let s = strides(from);
    let mut r = [0; 4];
    for d in 0..4 {
        if from[d] == to[d] {
            r[d] = s[d];
        } else if from[d] != 1 {
            return None;
        }
    }
    Some(r)
}

fn activation_steps(a: TfLiteFusedActivation, node: i32) -> Result<Vec<Step>> {
    use TfLiteFusedActivation::*;
    let code = match a {
        kTfLiteActNone => return Ok(Vec::new()),
        kTfLiteActRelu => step::RELU,
        kTfLiteActReluN1To1 => step::RELU_N1_TO_1,
        kTfLiteActRelu6 => step::RELU6,
        kTfLiteActTanh => step::TANH,
        kTfLiteActSigmoid => step::LOGISTIC,
        kTfLiteActSignBit => crate::bail!("fused activation SIGN_BIT is not supported"),
    };
    Ok(vec![Step { code, operand: None, node }])
}

fn positive(v: i32, what: &str) -> Result<usize> {
    if (1..=1 << 16).contains(&v) { Ok(v as usize) } else { Err(Error::new(format!("{what} {v} is not supported"))) }
}

fn check_out(o: Shape4, want: Shape4) -> Result<()> {
    if o == want { Ok(()) } else { Err(Error::new(format!("output shape {o:?} should be {want:?}"))) }
}

/// TFLite's output size and SAME/VALID padding of a convolution window; the computed
/// output size must be the output tensor's.
#[allow(clippy::too_many_arguments)]
fn window(
    padding: TfLitePadding,
    input: Shape4,
    out: Shape4,
    kh: usize,
    kw: usize,
    sh: i32,
    sw: i32,
    dh: i32,
    dw: i32,
) -> Result<Window> {
    let (sh, sw) = (positive(sh, "stride")?, positive(sw, "stride")?);
    let (dh, dw) = (positive(dh, "dilation")?, positive(dw, "dilation")?);
    let same = match padding {
        TfLitePadding::kTfLitePaddingSame => true,
        TfLitePadding::kTfLitePaddingValid => false,
        _ => crate::bail!("padding is neither SAME nor VALID"),
    };
    let axis = |inp: usize, k: usize, s: usize, d: usize| -> Result<(usize, usize)> {
        let eff = (k - 1) * d + 1;
        let o = if same {
            inp.div_ceil(s)
        } else if inp >= eff {
            (inp - eff) / s + 1
        } else {
            crate::bail!("window {eff} is larger than the input {inp}");
        };
        let total = ((o - 1) * s + eff).saturating_sub(inp);
        Ok((o, total / 2))
    };
    let (oh, pad_t) = axis(input[1], kh, sh, dh)?;
    let (ow, pad_l) = axis(input[2], kw, sw, dw)?;
    if oh != out[1] || ow != out[2] {
        crate::bail!("output {out:?} does not match the computed size {oh}x{ow}");
    }
    Ok(Window { kh, kw, sh, sw, dh, dw, pad_t, pad_l })
}

/// TRANSPOSE_CONV's padding: that of the forward convolution whose input is the output.
fn transpose_padding(same: bool, out: usize, k: usize, s: usize) -> usize {
    let conv_out = if same { out.div_ceil(s) } else { (out + s).saturating_sub(k) / s };
    ((conv_out.max(1) - 1) * s + k).saturating_sub(out) / 2
}

/// MediaPipe's Convolution2DTransposeBias: output size and leading padding of one axis.
fn mediapipe_transpose_axis(same: bool, input: usize, k: usize, s: usize) -> Result<(usize, usize)> {
    let pad = if same { (k as i64 - ((input - 1) % s) as i64 - 1).max(0) as usize } else { 0 };
    let out = (input - 1)
        .checked_mul(s)
        .and_then(|v| v.checked_add(k))
        .and_then(|v| v.checked_sub(pad))
        .filter(|&v| v <= MAX_ELEMENTS)
        .ok_or_else(|| Error::new("output size overflows"))?;
    Ok((out, pad / 2))
}

/// [o][h][w][i] → [h][w][i][o].
fn ohwi_to_hwio(w: &[f32], s: Shape4) -> Vec<f32> {
    let (o, h, wd, i) = (s[0], s[1], s[2], s[3]);
    let mut t = vec![0f32; w.len()];
    for oo in 0..o {
        for hh in 0..h {
            for ww in 0..wd {
                for ii in 0..i {
                    t[((hh * wd + ww) * i + ii) * o + oo] = w[((oo * h + hh) * wd + ww) * i + ii];
                }
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_tensor(dims: &[i32], data: Option<Vec<f32>>) -> TensorDesc {
        TensorDesc {
            ty: TfLiteType::kTfLiteFloat32,
            dims: dims.to_vec(),
            data: data.map(|v| v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            scale: 0.0,
            zero_point: 0,
            per_channel: false,
        }
    }

    fn node(op: B, inputs: &[i32], outputs: &[i32], params: Params) -> NodeDesc {
        NodeDesc {
            index: 0,
            op: op as i32,
            custom_name: String::new(),
            version: 1,
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
            params,
        }
    }

    #[test]
    fn canonical_pads_leading_ones_and_rejects_bad_shapes() {
        assert_eq!(canonical(&[3, 5]).unwrap(), [1, 1, 3, 5]);
        assert_eq!(canonical(&[]).unwrap(), [1, 1, 1, 1]);
        assert!(canonical(&[1, 2, 3, 4, 5]).is_err());
        assert!(canonical(&[1, 0]).is_err());
        assert!(canonical(&[-1, 4]).is_err());
        assert!(canonical(&[65536, 65536]).is_err());
    }

    #[test]
    fn broadcast_strides_zero_on_broadcast_dims() {
        assert_eq!(broadcast_strides([1, 1, 1, 8], [1, 4, 4, 8]), Some([0, 0, 0, 1]));
        assert_eq!(broadcast_strides([1, 4, 4, 8], [1, 4, 4, 8]), Some([0, 32, 8, 1]));
        assert_eq!(broadcast_strides([1, 2, 4, 8], [1, 4, 4, 8]), None);
    }

    #[test]
    fn f16_conversion() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert!(f16_to_f32(0x7c00).is_infinite());
    }

    #[test]
    fn conv_output_shape_is_checked_not_trusted() {
        let mut t = HashMap::new();
        t.insert(0, f32_tensor(&[1, 8, 8, 3], None));
        t.insert(1, f32_tensor(&[4, 3, 3, 3], Some(vec![0.5; 108])));
        t.insert(2, f32_tensor(&[4], Some(vec![0.0; 4])));
        t.insert(3, f32_tensor(&[1, 4, 4, 4], None));
        t.insert(4, f32_tensor(&[1, 5, 4, 4], None));
        let known = HashMap::new();
        let conv = TfLiteConvParams {
            padding: TfLitePadding::kTfLitePaddingSame,
            stride_width: 2,
            stride_height: 2,
            dilation_width_factor: 1,
            dilation_height_factor: 1,
            ..Default::default()
        };
        let mut l = Lowering::new(&t, &known);
        l.add_node(&node(B::kTfLiteBuiltinConv2d, &[0, 1, 2], &[3], Params::Conv(conv))).unwrap();
        assert_eq!(l.ops.len(), 1);
        let Window { pad_t, pad_l, .. } = match &l.ops[0].kind {
            OpKind::Conv2d { window, .. } => *window,
            k => panic!("{k:?}"),
        };
        assert_eq!((pad_t, pad_l), (0, 0));
        let err = l.add_node(&node(B::kTfLiteBuiltinConv2d, &[0, 1, 2], &[4], Params::Conv(conv))).unwrap_err();
        assert!(err.message.contains("computed size"), "{err}");
        assert_eq!(l.ops.len(), 1, "a failed node changes nothing");
        let mut v7 = node(B::kTfLiteBuiltinConv2d, &[0, 1, 2], &[3], Params::Conv(conv));
        v7.version = 7;
        assert!(l.add_node(&v7).unwrap_err().message.contains("version 7"));
    }

    #[test]
    fn add_broadcast_and_activation_become_steps() {
        let mut t = HashMap::new();
        t.insert(0, f32_tensor(&[1, 2, 2, 3], None));
        t.insert(1, f32_tensor(&[3], Some(vec![1.0, 2.0, 3.0])));
        t.insert(2, f32_tensor(&[1, 2, 2, 3], None));
        let known = HashMap::new();
        let mut l = Lowering::new(&t, &known);
        let n = node(B::kTfLiteBuiltinAdd, &[0, 1], &[2], Params::Binary(TfLiteFusedActivation::kTfLiteActRelu6));
        l.add_node(&n).unwrap();
        let op = &l.ops[0];
        assert_eq!(op.steps.len(), 2);
        assert_eq!(op.steps[0].operand, Some((1, [0, 0, 0, 1])));
        assert_eq!(op.steps[1].code, step::RELU6);
        assert_eq!(l.gtensors[&1].constant.as_deref(), Some(&[1.0, 2.0, 3.0][..]));
    }

    #[test]
    fn dequantize_of_fp16_constant_is_known() {
        let mut t = HashMap::new();
        t.insert(
            0,
            TensorDesc {
                ty: TfLiteType::kTfLiteFloat16,
                dims: vec![2],
                data: Some(vec![0x00, 0x3c, 0x00, 0xc0]),
                scale: 0.0,
                zero_point: 0,
                per_channel: false,
            },
        );
        t.insert(1, f32_tensor(&[2], None));
        let known = HashMap::new();
        let mut l = Lowering::new(&t, &known);
        l.add_node(&node(B::kTfLiteBuiltinDequantize, &[0], &[1], Params::None)).unwrap();
        assert!(l.ops.is_empty());
        assert_eq!(l.gtensors[&1].constant.as_deref(), Some(&[1.0, -2.0][..]));
    }

    #[test]
    fn transpose_padding_matches_tflite() {
        // 2x upsampling, k=3, SAME: TFLite pads 0 before (total 1).
        assert_eq!(transpose_padding(true, 8, 3, 2), 0);
        assert_eq!(transpose_padding(true, 8, 4, 2), 1);
        assert_eq!(mediapipe_transpose_axis(true, 4, 4, 2).unwrap(), (8, 1));
        assert_eq!(mediapipe_transpose_axis(false, 4, 3, 2).unwrap(), (9, 0));
    }
}
