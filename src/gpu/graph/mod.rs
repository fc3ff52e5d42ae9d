//! The delegate's view of a partition: TFLite nodes lowered to GPU kernel launches.
//!
//! Pure data and logic, no OpenCL: [`lower`] turns [`NodeDesc`]s (copied out of the
//! `TfLiteContext` by the delegate) into [`Op`]s over canonical 4-D NHWC float tensors,
//! checking every shape and parameter on the way; [`fuse`] links elementwise ops into the
//! kernel that produces their input; [`plan`] places the runtime tensors in one device
//! buffer. The OpenCL side ([`crate::gpu::cl`]) only binds and launches what this says.

pub mod fuse;
pub mod lower;
pub mod plan;

use crate::abi::builtin_op_data::*;
use crate::abi::types::TfLiteType;

/// Index of a tensor in the interpreter's tensor table.
pub type TensorId = i32;

/// What the delegate read about one tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDesc {
    pub ty: TfLiteType,
    pub dims: Vec<i32>,
    /// Contents of a constant (read-only, model-owned) tensor.
    pub data: Option<Vec<u8>>,
    /// Per-tensor quantization (scale 0 = none).
    pub scale: f32,
    pub zero_point: i32,
    /// More than one scale (per-channel): not supported for dequantization here.
    pub per_channel: bool,
}

/// The builtin options the lowering needs, copied out of `builtin_data`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Params {
    None,
    Conv(TfLiteConvParams),
    Depthwise(TfLiteDepthwiseConvParams),
    Pool(TfLitePoolParams),
    FullyConnected(TfLiteFullyConnectedParams),
    /// ADD, SUB, MUL, DIV: the fused activation.
    Binary(TfLiteFusedActivation),
    Concat(TfLiteConcatenationParams),
    Softmax(f32),
    Reducer(bool),
    ResizeBilinear(TfLiteResizeBilinearParams),
    /// TRANSPOSE_CONV, and MediaPipe's Convolution2DTransposeBias (its custom options
    /// are the same padding/stride prefix).
    TransposeConv(TfLiteTransposeConvParams),
}

/// One TFLite node, as the delegate saw it in its Prepare.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeDesc {
    pub index: i32,
    /// `TfLiteBuiltinOperator` value (32 = custom).
    pub op: i32,
    pub custom_name: String,
    pub version: i32,
    pub inputs: Vec<TensorId>,
    pub outputs: Vec<TensorId>,
    pub params: Params,
}

/// Canonical 4-D shape (batch, height, width, channels): lower ranks are padded with
/// leading 1s (numpy broadcasting order), so the linear NHWC layout is TFLite's.
pub type Shape4 = [usize; 4];

pub fn elements(s: Shape4) -> usize {
    s.iter().product()
}

/// Row-major strides of a canonical shape, 0 on size-1 dimensions (their coordinate is
/// always 0), so equal shapes always give equal strides.
pub fn strides(s: Shape4) -> [usize; 4] {
    let full = [s[1] * s[2] * s[3], s[2] * s[3], s[3], 1];
    [0, 1, 2, 3].map(|d| if s[d] == 1 { 0 } else { full[d] })
}

/// A tensor of the lowered graph.
#[derive(Clone, Debug, PartialEq)]
pub struct GTensor {
    pub shape: Shape4,
    /// Known contents: a float constant, or a dequantized constant.
    pub constant: Option<Vec<f32>>,
}

/// An elementwise step of an op's epilogue (codes as in `kernels/common.cl`).
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub code: i32,
    /// Second operand of a binary step: the tensor and its broadcast strides in the
    /// coordinates of the op's output.
    pub operand: Option<(TensorId, [usize; 4])>,
    /// The TFLite node this step came from (for the fusion report).
    pub node: i32,
}

pub mod step {
    //! Crate-private: these are not C API constants.
    pub(crate) const RELU: i32 = 1;
    pub(crate) const RELU6: i32 = 2;
    pub(crate) const RELU_N1_TO_1: i32 = 3;
    pub(crate) const TANH: i32 = 4;
    pub(crate) const LOGISTIC: i32 = 5;
    pub(crate) const HARD_SWISH: i32 = 6;
    pub(crate) const ADD: i32 = 16;
    pub(crate) const SUB: i32 = 17;
    pub(crate) const RSUB: i32 = 18;
    pub(crate) const MUL: i32 = 19;
    pub(crate) const PRELU: i32 = 20;
    pub(crate) const MAX: i32 = 21;
    pub(crate) const MIN: i32 = 22;
    pub(crate) const DIV: i32 = 23;
    pub(crate) const RDIV: i32 = 24;
    pub(crate) const SQUARED_DIFF: i32 = 25;
}

/// Convolution geometry shared by the conv-like kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub kh: usize,
    pub kw: usize,
    pub sh: usize,
    pub sw: usize,
    pub dh: usize,
    pub dw: usize,
    pub pad_t: usize,
    pub pad_l: usize,
}

/// What a launch computes; `src` is the main input tensor.
#[derive(Clone, Debug, PartialEq)]
pub enum OpKind {
    /// Output = source read with broadcast strides (standalone elementwise ops, concat
    /// slices, broadcasting copies).
    CopyBroadcast {
        src: TensorId,
        strides: [usize; 4],
    },
    /// Same linear index (RESHAPE).
    CopyLinear {
        src: TensorId,
    },
    /// Weights as [kh][kw][in_c][out_c].
    Conv2d {
        src: TensorId,
        input: Shape4,
        window: Window,
        weights: Vec<f32>,
        bias: Vec<f32>,
    },
    /// 1x1, stride 1, no padding. Weights as [in_c][out_c].
    Conv1x1 {
        src: TensorId,
        in_c: usize,
        weights: Vec<f32>,
        bias: Vec<f32>,
    },
    /// Weights as [kh][kw][out_c].
    Depthwise {
        src: TensorId,
        input: Shape4,
        window: Window,
        multiplier: usize,
        weights: Vec<f32>,
        bias: Vec<f32>,
    },
    /// Weights as [in_features][units].
    FullyConnected {
        src: TensorId,
        in_features: usize,
        weights: Vec<f32>,
        bias: Vec<f32>,
    },
    /// Weights as [kh][kw][in_c][out_c].
    TransposeConv {
        src: TensorId,
        input: Shape4,
        window: Window,
        weights: Vec<f32>,
        bias: Vec<f32>,
    },
    Pool {
        src: TensorId,
        input: Shape4,
        window: Window,
        is_max: bool,
    },
    /// `mask`: bit 0 batch, 1 height, 2 width, 3 channels.
    Mean {
        src: TensorId,
        input: Shape4,
        mask: u32,
    },
    Softmax {
        src: TensorId,
        channels: usize,
        beta: f32,
    },
    Pad {
        src: TensorId,
        input: Shape4,
        before: [usize; 4],
        value: f32,
    },
    ResizeBilinear {
        src: TensorId,
        input: Shape4,
        scale_y: f32,
        scale_x: f32,
        half_pixel: bool,
    },
}

impl OpKind {
    pub fn src(&self) -> TensorId {
        match self {
            OpKind::CopyBroadcast { src, .. }
            | OpKind::CopyLinear { src }
            | OpKind::Conv2d { src, .. }
            | OpKind::Conv1x1 { src, .. }
            | OpKind::Depthwise { src, .. }
            | OpKind::FullyConnected { src, .. }
            | OpKind::TransposeConv { src, .. }
            | OpKind::Pool { src, .. }
            | OpKind::Mean { src, .. }
            | OpKind::Softmax { src, .. }
            | OpKind::Pad { src, .. }
            | OpKind::ResizeBilinear { src, .. } => *src,
        }
    }

    /// The OpenCL kernel (function name in `kernels/*.cl`).
    pub fn kernel_name(&self) -> &'static str {
        match self {
            OpKind::CopyBroadcast { .. } => "copy_broadcast",
            OpKind::CopyLinear { .. } => "copy_linear",
            OpKind::Conv2d { .. } => "conv2d",
            OpKind::Conv1x1 { .. } => "conv2d_1x1",
            OpKind::Depthwise { .. } => "depthwise_conv2d",
            OpKind::FullyConnected { .. } => "fully_connected",
            OpKind::TransposeConv { .. } => "transpose_conv",
            OpKind::Pool { .. } => "pool2d",
            OpKind::Mean { .. } => "mean",
            OpKind::Softmax { .. } => "softmax",
            OpKind::Pad { .. } => "pad",
            OpKind::ResizeBilinear { .. } => "resize_bilinear",
        }
    }

    /// Output channels one work item computes (`CBLOCK` in `kernels/common.cl`): the
    /// weighted kernels compute 4, and take their weights and bias with the output-channel
    /// (innermost) dimension zero-padded to a multiple of 4 ([`pad_channels`]).
    pub fn channel_block(&self) -> usize {
        match self {
            OpKind::Conv2d { .. }
            | OpKind::Conv1x1 { .. }
            | OpKind::Depthwise { .. }
            | OpKind::FullyConnected { .. }
            | OpKind::TransposeConv { .. } => CHANNEL_BLOCK,
            _ => 1,
        }
    }

    /// Output pixels along x one work item computes (`XBLOCK_1X1` in `kernels/conv2d.cl`).
    pub fn width_block(&self) -> usize {
        match self {
            OpKind::Conv1x1 { .. } => 4,
            _ => 1,
        }
    }

    /// Convolutions take TFLite's conv work-group rules; everything else the generic ones.
    pub fn is_conv_class(&self) -> bool {
        matches!(
            self,
            OpKind::Conv2d { .. }
                | OpKind::Conv1x1 { .. }
                | OpKind::FullyConnected { .. }
                | OpKind::TransposeConv { .. }
        )
    }
}

/// Output channels per work item of the blocked kernels.
pub(crate) const CHANNEL_BLOCK: usize = 4;

/// `v` seen as rows of `channels` floats, each row zero-padded to a multiple of
/// [`CHANNEL_BLOCK`] (the upload layout of the blocked kernels' weights and biases).
pub fn pad_channels(v: &[f32], channels: usize) -> Vec<f32> {
    let padded = channels.div_ceil(CHANNEL_BLOCK) * CHANNEL_BLOCK;
    if channels == 0 || padded == channels {
        return v.to_vec();
    }
    let mut out = Vec::with_capacity(v.len() / channels * padded);
    for row in v.chunks(channels) {
        out.extend_from_slice(row);
        out.resize(out.len() + padded - row.len(), 0.0);
    }
    out
}

/// One kernel launch.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    pub kind: OpKind,
    pub out: TensorId,
    /// The output's addressing shape (the tensor's canonical shape, or for MEAN the
    /// keep-dims shape, which has the same linear layout).
    pub out_shape: Shape4,
    /// The part of the output this launch writes (the launch grid) and where it starts.
    pub region: Shape4,
    pub origin: [usize; 4],
    pub steps: Vec<Step>,
    /// TFLite nodes this launch implements (the first is the producer).
    pub nodes: Vec<i32>,
}

impl Op {
    /// Every tensor the launch reads from the arena (main input and step operands).
    pub fn reads(&self) -> Vec<TensorId> {
        let mut r = vec![self.kind.src()];
        r.extend(self.steps.iter().filter_map(|s| s.operand.map(|(t, _)| t)));
        r
    }

    /// The launch grid: (channel blocks, width blocks, batch * height) of the region; softmax
    /// has one work item per row.
    pub fn grid(&self) -> [usize; 3] {
        let r = self.region;
        [
            r[3].div_ceil(self.kind.channel_block()).max(1),
            r[2].div_ceil(self.kind.width_block()).max(1),
            (r[0] * r[1]).max(1),
        ]
    }
}

impl Op {
    /// The launch's shape parameters without its weights (part of the tuning cache key:
    /// two launches of one kernel with different shapes are tuned separately).
    pub fn kind_signature(&self) -> String {
        match &self.kind {
            OpKind::CopyBroadcast { strides, .. } => format!("copy {strides:?}"),
            OpKind::CopyLinear { .. } => "linear".into(),
            OpKind::Conv2d { input, window, .. } => format!("conv {input:?} {window:?}"),
            OpKind::Conv1x1 { in_c, .. } => format!("conv1x1 {in_c}"),
            OpKind::Depthwise { input, window, multiplier, .. } => format!("dw {input:?} {window:?} {multiplier}"),
            OpKind::FullyConnected { in_features, .. } => format!("fc {in_features}"),
            OpKind::TransposeConv { input, window, .. } => format!("tconv {input:?} {window:?}"),
            OpKind::Pool { input, window, is_max, .. } => format!("pool {input:?} {window:?} {is_max}"),
            OpKind::Mean { input, mask, .. } => format!("mean {input:?} {mask}"),
            OpKind::Softmax { channels, .. } => format!("softmax {channels}"),
            OpKind::Pad { input, before, .. } => format!("pad {input:?} {before:?}"),
            OpKind::ResizeBilinear { input, .. } => format!("resize {input:?}"),
        }
    }
}

#[cfg(test)]
mod pad_tests {
    use super::*;

    #[test]
    fn pad_channels_pads_rows_to_the_block() {
        assert_eq!(pad_channels(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 3), vec![1.0, 2.0, 3.0, 0.0, 4.0, 5.0, 6.0, 0.0]);
        assert_eq!(pad_channels(&[1.0, 2.0, 3.0, 4.0], 4), vec![1.0, 2.0, 3.0, 4.0]);
        assert_eq!(pad_channels(&[7.0], 1), vec![7.0, 0.0, 0.0, 0.0]);
    }
}
