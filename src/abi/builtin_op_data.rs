//! `#[repr(C)]` mirrors of TFLite 2.19's `builtin_op_data.h`: the parameter structs that a
//! node's `builtin_data` points to, one per builtin op family.
//!
//! The runtime fills them in `model::options::parse_builtin_options` (TFLite's
//! `ParseOpData`) and C kernels and delegates read them through `TfLiteNode::builtin_data`
//! and `TfLiteOpaqueNodeGetBuiltinData`, so field order, types and sizes are ABI. The
//! layout test at the bottom pins every size and offset to the numbers gcc gives for the
//! real header on x86_64 Linux.
//!
//! Invariant: every struct here is valid when all its bytes are zero (each enum has a
//! variant 0, pointers may be NULL). The parser relies on it when it allocates with
//! `calloc`, and `Default` is that all-zero value.

#![allow(non_camel_case_types, reason = "TFLite's C names")]

use super::types::TfLiteType;
use core::ffi::{c_char, c_int};

/// Maximum number of entries of `TfLiteReshapeParams::shape`.
pub const TFLITE_RESHAPE_PARAMS_MAX_DIMENSION_COUNT: usize = 8;
/// Maximum number of entries of each dimension list of `TfLiteStablehloScatterParams`.
pub const TFLITE_STABLEHLO_SCATTER_PARAMS_MAX_DIMENSION_COUNT: usize = 8;
/// Maximum number of entries of each dimension list of `TfLiteStablehloGatherParams`.
pub const TFLITE_STABLEHLO_GATHER_PARAMS_MAX_DIMENSION_COUNT: usize = 8;
/// Maximum rank handled by `TfLiteStablehloReduceWindowParams`.
pub const TFLITE_STABLEHLO_REDUCE_WINDOW_PARAMS_MAX_DIMENSION_COUNT: usize = 8;
/// Maximum rank handled by `TfLiteStablehloPadParams`.
pub const TFLITE_STABLEHLO_PAD_PARAMS_MAX_DIMENSION_COUNT: usize = 8;
/// Maximum number of branches of `TfLiteStablehloCaseParams`.
pub const TFLITE_STABLEHLO_CASE_PARAMS_MAX_BRANCHES_COUNT: usize = 20;

/// Filler member of the params structs that have no fields (C forbids empty structs).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct EmptyStructPlaceholder {
    pub dummy: c_char,
}

// ---------------------------------------------------------------------------------------
// Enums
// ---------------------------------------------------------------------------------------

/// Padding scheme of convolutions and pools.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TfLitePadding {
    #[default]
    kTfLitePaddingUnknown = 0,
    kTfLitePaddingSame = 1,
    kTfLitePaddingValid = 2,
}

/// Mode of MIRROR_PAD.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TfLiteMirrorPaddingMode {
    #[default]
    kTfLiteMirrorPaddingUnknown = 0,
    kTfLiteMirrorPaddingReflect = 1,
    kTfLiteMirrorPaddingSymmetric = 2,
}

/// Activation function fused into an op.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TfLiteFusedActivation {
    #[default]
    kTfLiteActNone = 0,
    kTfLiteActRelu = 1,
    /// `min(max(-1, x), 1)`
    kTfLiteActReluN1To1 = 2,
    /// `min(max(0, x), 6)`
    kTfLiteActRelu6 = 3,
    kTfLiteActTanh = 4,
    kTfLiteActSignBit = 5,
    kTfLiteActSigmoid = 6,
}

/// Layout of FULLY_CONNECTED weights.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TfLiteFullyConnectedWeightsFormat {
    #[default]
    kTfLiteFullyConnectedWeightsFormatDefault = 0,
    kTfLiteFullyConnectedWeightsFormatShuffled4x16Int8 = 1,
}

/// Kind of LSH_PROJECTION.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TfLiteLSHProjectionType {
    #[default]
    kTfLiteLshProjectionUnknown = 0,
    kTfLiteLshProjectionSparse = 1,
    kTfLiteLshProjectionDense = 2,
}

/// Kernel variant of LSTM.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TfLiteLSTMKernelType {
    #[default]
    kTfLiteLSTMFullKernel = 0,
    kTfLiteLSTMBasicKernel = 1,
}

/// How EMBEDDING_LOOKUP_SPARSE combines the looked-up rows.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TfLiteCombinerType {
    #[default]
    kTfLiteCombinerTypeSum = 0,
    kTfLiteCombinerTypeMean = 1,
    kTfLiteCombinerTypeSqrtn = 2,
}

/// Algorithm of STABLEHLO_RNG_BIT_GENERATOR.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TfLiteRngAlgorithm {
    #[default]
    kTfLiteRngAlgorithmUnknown = 0,
    /// Chosen by the implementation.
    kTfLiteRngAlgorithmDefault = 1,
    kTfLiteRngAlgorithmPhilox = 2,
    kTfLiteRngAlgorithmThreefry = 3,
}

/// Reduction of REDUCE_WINDOW (a plain `enum TfLiteReduceWindowFunction` in C, no typedef).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum TfLiteReduceWindowFunction {
    #[default]
    TfLiteReduceWindowFunctionUnsupported = 0,
    TfLiteReduceWindowFunctionAdd = 1,
    TfLiteReduceWindowFunctionMul = 2,
    TfLiteReduceWindowFunctionMin = 3,
    TfLiteReduceWindowFunctionMax = 4,
    TfLiteReduceWindowFunctionAll = 5,
    TfLiteReduceWindowFunctionAny = 6,
}

// ---------------------------------------------------------------------------------------
// Structs
// ---------------------------------------------------------------------------------------

/// Padding computed by a kernel at prepare time (kept here for TFLite compatibility).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLitePaddingValues {
    pub width: c_int,
    pub height: c_int,
    pub width_offset: c_int,
    pub height_offset: c_int,
}

/// MIRROR_PAD.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteMirrorPaddingParams {
    pub mode: TfLiteMirrorPaddingMode,
}

/// CONV_2D.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TfLiteConvParams {
    pub padding: TfLitePadding,
    pub stride_width: c_int,
    pub stride_height: c_int,
    pub activation: TfLiteFusedActivation,
    /// Since version 2.
    pub dilation_width_factor: c_int,
    pub dilation_height_factor: c_int,
    /// Since version 7: the expected type of a quantized bias.
    pub quantized_bias_type: TfLiteType,
}

/// CONV_3D and CONV_3D_TRANSPOSE.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteConv3DParams {
    pub padding: TfLitePadding,
    pub stride_width: c_int,
    pub stride_height: c_int,
    pub stride_depth: c_int,
    pub dilation_width_factor: c_int,
    pub dilation_height_factor: c_int,
    pub dilation_depth_factor: c_int,
    pub activation: TfLiteFusedActivation,
}

/// CONV_3D_TRANSPOSE (same struct as CONV_3D).
pub type TfLiteConv3DTransposeParams = TfLiteConv3DParams;

/// The `computed` member of `TfLitePoolParams` (an anonymous struct in C).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLitePoolParamsComputed {
    pub padding: TfLitePaddingValues,
}

/// AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLitePoolParams {
    pub padding: TfLitePadding,
    pub stride_width: c_int,
    pub stride_height: c_int,
    pub filter_width: c_int,
    pub filter_height: c_int,
    pub activation: TfLiteFusedActivation,
    pub computed: TfLitePoolParamsComputed,
}

/// DEPTHWISE_CONV_2D.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteDepthwiseConvParams {
    pub padding: TfLitePadding,
    pub stride_width: c_int,
    pub stride_height: c_int,
    /// Redundant with the shapes; still read by some delegates.
    pub depth_multiplier: c_int,
    pub activation: TfLiteFusedActivation,
    /// Since version 2.
    pub dilation_width_factor: c_int,
    pub dilation_height_factor: c_int,
}

/// SVDF.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteSVDFParams {
    pub rank: c_int,
    pub activation: TfLiteFusedActivation,
    pub asymmetric_quantize_inputs: bool,
}

/// RNN.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteRNNParams {
    pub activation: TfLiteFusedActivation,
    pub asymmetric_quantize_inputs: bool,
}

/// UNIDIRECTIONAL_SEQUENCE_RNN.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteSequenceRNNParams {
    pub time_major: bool,
    pub activation: TfLiteFusedActivation,
    pub asymmetric_quantize_inputs: bool,
}

/// BIDIRECTIONAL_SEQUENCE_RNN.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteBidirectionalSequenceRNNParams {
    pub time_major: bool,
    pub activation: TfLiteFusedActivation,
    pub merge_outputs: bool,
    pub asymmetric_quantize_inputs: bool,
}

/// FULLY_CONNECTED.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TfLiteFullyConnectedParams {
    pub activation: TfLiteFusedActivation,
    /// Since version 2.
    pub weights_format: TfLiteFullyConnectedWeightsFormat,
    /// Since version 5: output keeps the input's rank.
    pub keep_num_dims: bool,
    /// Since version 7.
    pub asymmetric_quantize_inputs: bool,
    /// Since version 10: the expected type of a quantized bias.
    pub quantized_bias_type: TfLiteType,
}

/// LSH_PROJECTION.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteLSHProjectionParams {
    /// `type` in C.
    pub type_: TfLiteLSHProjectionType,
}

/// SOFTMAX.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct TfLiteSoftmaxParams {
    pub beta: f32,
}

/// CONCATENATION.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteConcatenationParams {
    pub axis: c_int,
    pub activation: TfLiteFusedActivation,
}

/// ADD.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteAddParams {
    pub activation: TfLiteFusedActivation,
    /// Since version 4.
    pub pot_scale_int16: bool,
}

/// SPACE_TO_BATCH_ND (not allocated by the parser: the op has no options).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteSpaceToBatchNDParams {
    pub placeholder: EmptyStructPlaceholder,
}

/// BATCH_TO_SPACE_ND (not allocated by the parser: the op has no options).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteBatchToSpaceNDParams {
    pub placeholder: EmptyStructPlaceholder,
}

/// BATCH_MATMUL.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteBatchMatMulParams {
    pub adj_x: bool,
    pub adj_y: bool,
    /// Since version 4.
    pub asymmetric_quantize_inputs: bool,
}

/// MUL.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteMulParams {
    pub activation: TfLiteFusedActivation,
}

/// SUB.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteSubParams {
    pub activation: TfLiteFusedActivation,
    /// Since version 5.
    pub pot_scale_int16: bool,
}

/// DIV.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteDivParams {
    pub activation: TfLiteFusedActivation,
}

/// L2_NORMALIZATION.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteL2NormParams {
    pub activation: TfLiteFusedActivation,
}

/// LOCAL_RESPONSE_NORMALIZATION.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct TfLiteLocalResponseNormParams {
    pub radius: c_int,
    pub bias: f32,
    pub alpha: f32,
    pub beta: f32,
}

/// LSTM.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct TfLiteLSTMParams {
    pub activation: TfLiteFusedActivation,
    pub cell_clip: f32,
    pub proj_clip: f32,
    /// Since version 2.
    pub kernel_type: TfLiteLSTMKernelType,
    /// Since version 4.
    pub asymmetric_quantize_inputs: bool,
}

/// UNIDIRECTIONAL_SEQUENCE_LSTM.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct TfLiteUnidirectionalSequenceLSTMParams {
    pub activation: TfLiteFusedActivation,
    pub cell_clip: f32,
    pub proj_clip: f32,
    /// Time is the first dimension (otherwise batch is).
    pub time_major: bool,
    /// Since version 3.
    pub asymmetric_quantize_inputs: bool,
    /// Since version 4.
    pub diagonal_recurrent_tensors: bool,
}

/// BIDIRECTIONAL_SEQUENCE_LSTM.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct TfLiteBidirectionalSequenceLSTMParams {
    pub activation: TfLiteFusedActivation,
    pub cell_clip: f32,
    pub proj_clip: f32,
    /// Both directions' outputs go to the first output.
    pub merge_outputs: bool,
    /// Since version 2.
    pub time_major: bool,
    /// Since version 3.
    pub asymmetric_quantize_inputs: bool,
}

/// RESIZE_BILINEAR.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteResizeBilinearParams {
    pub align_corners: bool,
    pub half_pixel_centers: bool,
}

/// RESIZE_NEAREST_NEIGHBOR.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteResizeNearestNeighborParams {
    pub align_corners: bool,
    pub half_pixel_centers: bool,
}

/// PAD (not allocated by the parser: the op has no options).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLitePadParams {
    pub placeholder: EmptyStructPlaceholder,
}

/// PADV2 (not allocated by the parser: the op has no options).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLitePadV2Params {
    pub placeholder: EmptyStructPlaceholder,
}

/// RESHAPE. The shape only matters for old models; current ones pass it as input 1.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteReshapeParams {
    pub shape: [i32; TFLITE_RESHAPE_PARAMS_MAX_DIMENSION_COUNT],
    pub num_dimensions: c_int,
}

/// SKIP_GRAM.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteSkipGramParams {
    pub ngram_size: c_int,
    pub max_skip_size: c_int,
    pub include_all_ngrams: bool,
}

/// SPACE_TO_DEPTH.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteSpaceToDepthParams {
    pub block_size: c_int,
}

/// DEPTH_TO_SPACE.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteDepthToSpaceParams {
    pub block_size: c_int,
}

/// CAST.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TfLiteCastParams {
    pub in_data_type: TfLiteType,
    pub out_data_type: TfLiteType,
}

/// EMBEDDING_LOOKUP_SPARSE.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteEmbeddingLookupSparseParams {
    pub combiner: TfLiteCombinerType,
}

/// GATHER.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteGatherParams {
    pub axis: c_int,
    pub batch_dims: c_int,
}

/// TRANSPOSE (not allocated by the parser: the op has no options).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteTransposeParams {
    pub placeholder: EmptyStructPlaceholder,
}

/// MEAN, SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY and REDUCE_ALL.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteReducerParams {
    pub keep_dims: bool,
}

/// SPLIT.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteSplitParams {
    pub num_splits: c_int,
}

/// SPLIT_V.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteSplitVParams {
    pub num_splits: c_int,
}

/// SQUEEZE.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteSqueezeParams {
    pub squeeze_dims: [i32; 8],
    pub num_squeeze_dims: c_int,
}

/// STRIDED_SLICE.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteStridedSliceParams {
    pub begin_mask: c_int,
    pub end_mask: c_int,
    pub ellipsis_mask: c_int,
    pub new_axis_mask: c_int,
    pub shrink_axis_mask: c_int,
    /// Since version 8: `end` is an offset from `begin`.
    pub offset: bool,
}

/// ARG_MAX.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TfLiteArgMaxParams {
    pub output_type: TfLiteType,
}

/// ARG_MIN.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TfLiteArgMinParams {
    pub output_type: TfLiteType,
}

/// TRANSPOSE_CONV.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TfLiteTransposeConvParams {
    pub padding: TfLitePadding,
    pub stride_width: c_int,
    pub stride_height: c_int,
    /// Since version 4.
    pub activation: TfLiteFusedActivation,
    /// Since version 5: the expected type of a quantized bias.
    pub quantized_bias_type: TfLiteType,
}

/// SPARSE_TO_DENSE.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteSparseToDenseParams {
    pub validate_indices: bool,
}

/// SHAPE.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TfLiteShapeParams {
    pub out_type: TfLiteType,
}

/// RANK (not allocated by the parser: the op has no options).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteRankParams {
    pub placeholder: EmptyStructPlaceholder,
}

/// FAKE_QUANT.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct TfLiteFakeQuantParams {
    pub min: f32,
    pub max: f32,
    pub num_bits: c_int,
    /// Since version 2.
    pub narrow_range: bool,
}

/// PACK.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLitePackParams {
    pub values_count: c_int,
    pub axis: c_int,
}

/// ONE_HOT.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteOneHotParams {
    pub axis: c_int,
}

/// UNPACK.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteUnpackParams {
    pub num: c_int,
    pub axis: c_int,
}

/// LEAKY_RELU.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct TfLiteLeakyReluParams {
    pub alpha: f32,
}

/// UNIQUE.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TfLiteUniqueParams {
    pub index_out_type: TfLiteType,
}

/// REVERSE_SEQUENCE.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteReverseSequenceParams {
    pub seq_dim: c_int,
    pub batch_dim: c_int,
}

/// MATRIX_DIAG (not allocated by the parser: the op has no options).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteMatrixDiagParams {
    pub placeholder: EmptyStructPlaceholder,
}

/// MATRIX_SET_DIAG (not allocated by the parser: the op has no options).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteMatrixSetDiagParams {
    pub placeholder: EmptyStructPlaceholder,
}

/// IF.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteIfParams {
    pub then_subgraph_index: c_int,
    pub else_subgraph_index: c_int,
}

/// WHILE.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteWhileParams {
    pub cond_subgraph_index: c_int,
    pub body_subgraph_index: c_int,
}

/// CUMSUM.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteCumsumParams {
    pub exclusive: bool,
    pub reverse: bool,
}

/// CALL_ONCE.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteCallOnceParams {
    pub init_subgraph_index: c_int,
}

/// HASHTABLE.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TfLiteHashtableParams {
    pub table_id: c_int,
    pub key_dtype: TfLiteType,
    pub value_dtype: TfLiteType,
}

/// VAR_HANDLE. The strings point into the model (NUL-terminated flatbuffer strings), or
/// are NULL when absent.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TfLiteVarHandleParams {
    pub container: *const c_char,
    pub shared_name: *const c_char,
}

/// RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteRandomParams {
    pub seed: c_int,
    pub seed2: c_int,
}

/// BUCKETIZE. `boundaries` points into the model and is not owned.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TfLiteBucketizeParams {
    pub num_boundaries: c_int,
    pub boundaries: *const f32,
}

/// GELU.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteGeluParams {
    pub approximate: bool,
}

/// STABLEHLO_CONCATENATE (not allocated by the parser in 2.19).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteStablehloConcatenateParams {
    pub dimension: i64,
}

/// STABLEHLO_SCATTER.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteStablehloScatterParams {
    pub indices_are_sorted: bool,
    pub update_window_dims: [i64; TFLITE_STABLEHLO_SCATTER_PARAMS_MAX_DIMENSION_COUNT],
    pub num_update_window_dims: c_int,
    pub inserted_window_dims: [i64; TFLITE_STABLEHLO_SCATTER_PARAMS_MAX_DIMENSION_COUNT],
    pub num_inserted_window_dims: c_int,
    pub scatter_dims_to_operand_dims: [i64; TFLITE_STABLEHLO_SCATTER_PARAMS_MAX_DIMENSION_COUNT],
    pub num_scatter_dims_to_operand_dims: c_int,
    pub index_vector_dim: i64,
    pub unique_indices: bool,
    pub update_computation_subgraph_index: c_int,
}

/// STABLEHLO_RNG_BIT_GENERATOR.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteStablehloRngBitGeneratorParams {
    pub algorithm: TfLiteRngAlgorithm,
}

/// STABLEHLO_GATHER.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteStablehloGatherParams {
    pub offset_dims: [i64; TFLITE_STABLEHLO_GATHER_PARAMS_MAX_DIMENSION_COUNT],
    pub num_offset_dims: c_int,
    pub collapsed_slice_dims: [i64; TFLITE_STABLEHLO_GATHER_PARAMS_MAX_DIMENSION_COUNT],
    pub num_collapsed_slice_dims: c_int,
    pub start_index_map: [i64; TFLITE_STABLEHLO_GATHER_PARAMS_MAX_DIMENSION_COUNT],
    pub num_start_index_map: c_int,
    pub index_vector_dim: i64,
    pub slice_sizes: [i64; TFLITE_STABLEHLO_GATHER_PARAMS_MAX_DIMENSION_COUNT],
    pub num_slice_sizes: c_int,
    pub indices_are_sorted: bool,
}

/// STABLEHLO_REDUCE_WINDOW. Entries past the rank are 1 (0 for `padding`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteStablehloReduceWindowParams {
    pub window_dimensions: [i64; TFLITE_STABLEHLO_REDUCE_WINDOW_PARAMS_MAX_DIMENSION_COUNT],
    pub window_strides: [i64; TFLITE_STABLEHLO_REDUCE_WINDOW_PARAMS_MAX_DIMENSION_COUNT],
    pub base_dilations: [i64; TFLITE_STABLEHLO_REDUCE_WINDOW_PARAMS_MAX_DIMENSION_COUNT],
    pub window_dilations: [i64; TFLITE_STABLEHLO_REDUCE_WINDOW_PARAMS_MAX_DIMENSION_COUNT],
    /// `2 * TFLITE_STABLEHLO_REDUCE_WINDOW_PARAMS_MAX_DIMENSION_COUNT` entries: (low, high)
    /// per dimension.
    pub padding: [i64; 16],
    pub body_subgraph_index: c_int,
}

/// REDUCE_WINDOW.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteReduceWindowParams {
    pub reduce_function: TfLiteReduceWindowFunction,
}

/// STABLEHLO_PAD.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteStablehloPadParams {
    pub edge_padding_low: [i64; TFLITE_STABLEHLO_PAD_PARAMS_MAX_DIMENSION_COUNT],
    pub edge_padding_high: [i64; TFLITE_STABLEHLO_PAD_PARAMS_MAX_DIMENSION_COUNT],
    pub interior_padding: [i64; TFLITE_STABLEHLO_PAD_PARAMS_MAX_DIMENSION_COUNT],
}

/// STABLEHLO_COMPOSITE. `name` and `attributes` point into the model and are not owned.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TfLiteStablehloCompositeParams {
    pub name: *const c_char,
    pub subgraph_index: i32,
    pub version: i32,
    /// Flexbuffer-encoded attributes.
    pub attributes: *const u8,
    pub attributes_size: usize,
}

/// STABLEHLO_CASE.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TfLiteStablehloCaseParams {
    pub branch_subgraph_indices: [i32; TFLITE_STABLEHLO_CASE_PARAMS_MAX_BRANCHES_COUNT],
    pub num_branches: u32,
}

/// `Default` as the all-zero value, for the structs that hold a `TfLiteType` or a pointer
/// (neither has a derivable default).
macro_rules! zeroed_default {
    ($($t:ty),* $(,)?) => {$(
        impl Default for $t {
            fn default() -> Self {
                // SAFETY: all-zero bytes are a valid value of this struct: its enums
                // (`TfLiteType` included) have a variant 0 and its pointers may be NULL
                // (module invariant).
                unsafe { core::mem::zeroed() }
            }
        }
    )*};
}

zeroed_default!(
    TfLiteConvParams,
    TfLiteFullyConnectedParams,
    TfLiteCastParams,
    TfLiteArgMaxParams,
    TfLiteArgMinParams,
    TfLiteTransposeConvParams,
    TfLiteShapeParams,
    TfLiteUniqueParams,
    TfLiteHashtableParams,
    TfLiteVarHandleParams,
    TfLiteBucketizeParams,
    TfLiteStablehloCompositeParams,
);

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    /// `check!(T, size, align, field = offset, ...)`.
    macro_rules! check {
        ($t:ty, $size:expr, $align:expr $(, $f:ident = $off:expr)* $(,)?) => {{
            assert_eq!(size_of::<$t>(), $size, "sizeof({})", stringify!($t));
            assert_eq!(align_of::<$t>(), $align, "alignof({})", stringify!($t));
            $(assert_eq!(offset_of!($t, $f), $off, "offsetof({}, {})", stringify!($t), stringify!($f));)*
        }};
    }

    /// Sizes, alignments and offsets printed by a C11 program (gcc, x86_64 Linux) compiled
    /// against the text of TFLite 2.19's `builtin_op_data.h`; every struct of the header.
    #[test]
    #[rustfmt::skip]
    fn layout_matches_tflite_header() {
        check!(EmptyStructPlaceholder, 1, 1, dummy = 0);
        check!(TfLitePaddingValues, 16, 4,
            width = 0, height = 4, width_offset = 8, height_offset = 12);
        check!(TfLiteMirrorPaddingParams, 4, 4, mode = 0);
        check!(TfLiteConvParams, 28, 4,
            padding = 0, stride_width = 4, stride_height = 8, activation = 12,
            dilation_width_factor = 16, dilation_height_factor = 20, quantized_bias_type = 24);
        check!(TfLiteConv3DParams, 32, 4,
            padding = 0, stride_width = 4, stride_height = 8, stride_depth = 12,
            dilation_width_factor = 16, dilation_height_factor = 20, dilation_depth_factor = 24,
            activation = 28);
        check!(TfLitePoolParams, 40, 4,
            padding = 0, stride_width = 4, stride_height = 8, filter_width = 12,
            filter_height = 16, activation = 20, computed = 24);
        check!(TfLiteDepthwiseConvParams, 28, 4,
            padding = 0, stride_width = 4, stride_height = 8, depth_multiplier = 12,
            activation = 16, dilation_width_factor = 20, dilation_height_factor = 24);
        check!(TfLiteSVDFParams, 12, 4, rank = 0, activation = 4, asymmetric_quantize_inputs = 8);
        check!(TfLiteRNNParams, 8, 4, activation = 0, asymmetric_quantize_inputs = 4);
        check!(TfLiteSequenceRNNParams, 12, 4,
            time_major = 0, activation = 4, asymmetric_quantize_inputs = 8);
        check!(TfLiteBidirectionalSequenceRNNParams, 12, 4,
            time_major = 0, activation = 4, merge_outputs = 8, asymmetric_quantize_inputs = 9);
        check!(TfLiteFullyConnectedParams, 16, 4,
            activation = 0, weights_format = 4, keep_num_dims = 8, asymmetric_quantize_inputs = 9,
            quantized_bias_type = 12);
        check!(TfLiteLSHProjectionParams, 4, 4, type_ = 0);
        check!(TfLiteSoftmaxParams, 4, 4, beta = 0);
        check!(TfLiteConcatenationParams, 8, 4, axis = 0, activation = 4);
        check!(TfLiteAddParams, 8, 4, activation = 0, pot_scale_int16 = 4);
        check!(TfLiteSpaceToBatchNDParams, 1, 1, placeholder = 0);
        check!(TfLiteBatchToSpaceNDParams, 1, 1, placeholder = 0);
        check!(TfLiteBatchMatMulParams, 3, 1, adj_x = 0, adj_y = 1, asymmetric_quantize_inputs = 2);
        check!(TfLiteMulParams, 4, 4, activation = 0);
        check!(TfLiteSubParams, 8, 4, activation = 0, pot_scale_int16 = 4);
        check!(TfLiteDivParams, 4, 4, activation = 0);
        check!(TfLiteL2NormParams, 4, 4, activation = 0);
        check!(TfLiteLocalResponseNormParams, 16, 4, radius = 0, bias = 4, alpha = 8, beta = 12);
        check!(TfLiteLSTMParams, 20, 4,
            activation = 0, cell_clip = 4, proj_clip = 8, kernel_type = 12,
            asymmetric_quantize_inputs = 16);
        check!(TfLiteUnidirectionalSequenceLSTMParams, 16, 4,
            activation = 0, cell_clip = 4, proj_clip = 8, time_major = 12,
            asymmetric_quantize_inputs = 13, diagonal_recurrent_tensors = 14);
        check!(TfLiteBidirectionalSequenceLSTMParams, 16, 4,
            activation = 0, cell_clip = 4, proj_clip = 8, merge_outputs = 12, time_major = 13,
            asymmetric_quantize_inputs = 14);
        check!(TfLiteResizeBilinearParams, 2, 1, align_corners = 0, half_pixel_centers = 1);
        check!(TfLiteResizeNearestNeighborParams, 2, 1, align_corners = 0, half_pixel_centers = 1);
        check!(TfLitePadParams, 1, 1, placeholder = 0);
        check!(TfLitePadV2Params, 1, 1, placeholder = 0);
        check!(TfLiteReshapeParams, 36, 4, shape = 0, num_dimensions = 32);
        check!(TfLiteSkipGramParams, 12, 4,
            ngram_size = 0, max_skip_size = 4, include_all_ngrams = 8);
        check!(TfLiteSpaceToDepthParams, 4, 4, block_size = 0);
        check!(TfLiteDepthToSpaceParams, 4, 4, block_size = 0);
        check!(TfLiteCastParams, 8, 4, in_data_type = 0, out_data_type = 4);
        check!(TfLiteEmbeddingLookupSparseParams, 4, 4, combiner = 0);
        check!(TfLiteGatherParams, 8, 4, axis = 0, batch_dims = 4);
        check!(TfLiteTransposeParams, 1, 1, placeholder = 0);
        check!(TfLiteReducerParams, 1, 1, keep_dims = 0);
        check!(TfLiteSplitParams, 4, 4, num_splits = 0);
        check!(TfLiteSplitVParams, 4, 4, num_splits = 0);
        check!(TfLiteSqueezeParams, 36, 4, squeeze_dims = 0, num_squeeze_dims = 32);
        check!(TfLiteStridedSliceParams, 24, 4,
            begin_mask = 0, end_mask = 4, ellipsis_mask = 8, new_axis_mask = 12,
            shrink_axis_mask = 16, offset = 20);
        check!(TfLiteArgMaxParams, 4, 4, output_type = 0);
        check!(TfLiteArgMinParams, 4, 4, output_type = 0);
        check!(TfLiteTransposeConvParams, 20, 4,
            padding = 0, stride_width = 4, stride_height = 8, activation = 12,
            quantized_bias_type = 16);
        check!(TfLiteSparseToDenseParams, 1, 1, validate_indices = 0);
        check!(TfLiteShapeParams, 4, 4, out_type = 0);
        check!(TfLiteRankParams, 1, 1, placeholder = 0);
        check!(TfLiteFakeQuantParams, 16, 4, min = 0, max = 4, num_bits = 8, narrow_range = 12);
        check!(TfLitePackParams, 8, 4, values_count = 0, axis = 4);
        check!(TfLiteOneHotParams, 4, 4, axis = 0);
        check!(TfLiteUnpackParams, 8, 4, num = 0, axis = 4);
        check!(TfLiteLeakyReluParams, 4, 4, alpha = 0);
        check!(TfLiteUniqueParams, 4, 4, index_out_type = 0);
        check!(TfLiteReverseSequenceParams, 8, 4, seq_dim = 0, batch_dim = 4);
        check!(TfLiteMatrixDiagParams, 1, 1, placeholder = 0);
        check!(TfLiteMatrixSetDiagParams, 1, 1, placeholder = 0);
        check!(TfLiteIfParams, 8, 4, then_subgraph_index = 0, else_subgraph_index = 4);
        check!(TfLiteWhileParams, 8, 4, cond_subgraph_index = 0, body_subgraph_index = 4);
        check!(TfLiteCumsumParams, 2, 1, exclusive = 0, reverse = 1);
        check!(TfLiteCallOnceParams, 4, 4, init_subgraph_index = 0);
        check!(TfLiteHashtableParams, 12, 4, table_id = 0, key_dtype = 4, value_dtype = 8);
        check!(TfLiteVarHandleParams, 16, 8, container = 0, shared_name = 8);
        check!(TfLiteRandomParams, 8, 4, seed = 0, seed2 = 4);
        check!(TfLiteBucketizeParams, 16, 8, num_boundaries = 0, boundaries = 8);
        check!(TfLiteGeluParams, 1, 1, approximate = 0);
        check!(TfLiteStablehloConcatenateParams, 8, 8, dimension = 0);
        check!(TfLiteStablehloScatterParams, 240, 8,
            indices_are_sorted = 0, update_window_dims = 8, num_update_window_dims = 72,
            inserted_window_dims = 80, num_inserted_window_dims = 144,
            scatter_dims_to_operand_dims = 152, num_scatter_dims_to_operand_dims = 216,
            index_vector_dim = 224, unique_indices = 232, update_computation_subgraph_index = 236);
        check!(TfLiteStablehloRngBitGeneratorParams, 4, 4, algorithm = 0);
        check!(TfLiteStablehloGatherParams, 296, 8,
            offset_dims = 0, num_offset_dims = 64, collapsed_slice_dims = 72,
            num_collapsed_slice_dims = 136, start_index_map = 144, num_start_index_map = 208,
            index_vector_dim = 216, slice_sizes = 224, num_slice_sizes = 288,
            indices_are_sorted = 292);
        check!(TfLiteStablehloReduceWindowParams, 392, 8,
            window_dimensions = 0, window_strides = 64, base_dilations = 128,
            window_dilations = 192, padding = 256, body_subgraph_index = 384);
        check!(TfLiteReduceWindowParams, 4, 4, reduce_function = 0);
        check!(TfLiteStablehloPadParams, 192, 8,
            edge_padding_low = 0, edge_padding_high = 64, interior_padding = 128);
        check!(TfLiteStablehloCompositeParams, 32, 8,
            name = 0, subgraph_index = 8, version = 12, attributes = 16, attributes_size = 24);
        check!(TfLiteStablehloCaseParams, 84, 4, branch_subgraph_indices = 0, num_branches = 80);
        assert_eq!(core::mem::size_of::<TfLiteReduceWindowFunction>(), 4);
        assert_eq!(core::mem::offset_of!(TfLitePoolParams, computed.padding.height_offset), 36);
        for size in [
            size_of::<TfLitePadding>(),
            size_of::<TfLiteMirrorPaddingMode>(),
            size_of::<TfLiteFusedActivation>(),
            size_of::<TfLiteFullyConnectedWeightsFormat>(),
            size_of::<TfLiteLSHProjectionType>(),
            size_of::<TfLiteLSTMKernelType>(),
            size_of::<TfLiteCombinerType>(),
            size_of::<TfLiteRngAlgorithm>(),
        ] {
            assert_eq!(size, 4, "C enums are int-sized");
        }
        assert_eq!(size_of::<TfLiteConv3DTransposeParams>(), size_of::<TfLiteConv3DParams>());
    }

    #[test]
    fn enum_values_match_tflite_header() {
        assert_eq!(TfLitePadding::kTfLitePaddingValid as i32, 2);
        assert_eq!(TfLiteMirrorPaddingMode::kTfLiteMirrorPaddingSymmetric as i32, 2);
        assert_eq!(TfLiteFusedActivation::kTfLiteActReluN1To1 as i32, 2);
        assert_eq!(TfLiteFusedActivation::kTfLiteActRelu6 as i32, 3);
        assert_eq!(TfLiteFusedActivation::kTfLiteActSigmoid as i32, 6);
        assert_eq!(TfLiteFullyConnectedWeightsFormat::kTfLiteFullyConnectedWeightsFormatShuffled4x16Int8 as i32, 1);
        assert_eq!(TfLiteLSHProjectionType::kTfLiteLshProjectionDense as i32, 2);
        assert_eq!(TfLiteLSTMKernelType::kTfLiteLSTMBasicKernel as i32, 1);
        assert_eq!(TfLiteCombinerType::kTfLiteCombinerTypeSqrtn as i32, 2);
        assert_eq!(TfLiteRngAlgorithm::kTfLiteRngAlgorithmThreefry as i32, 3);
        assert_eq!(TfLiteReduceWindowFunction::TfLiteReduceWindowFunctionAny as i32, 6);
    }

    #[test]
    fn default_is_all_zero() {
        let conv = TfLiteConvParams::default();
        assert_eq!(conv.quantized_bias_type, TfLiteType::kTfLiteNoType);
        assert_eq!(conv.padding, TfLitePadding::kTfLitePaddingUnknown);
        assert!(TfLiteVarHandleParams::default().container.is_null());
        assert!(TfLiteBucketizeParams::default().boundaries.is_null());
        assert_eq!(TfLiteReshapeParams::default().shape, [0; 8]);
    }
}
