//! The builtin op table: one line per op with TFLite's supported version range
//! (`tensorflow/lite/core/kernels/register.cc`). A version inside the range whose
//! features a kernel does not implement yet fails in that kernel's Prepare with a
//! message; a version outside it fails interpreter creation.

use super::OpResolver;
use crate::abi::builtin_ops::TfLiteBuiltinOperator as Op;
use crate::kernels::ops;

/// The resolver with every builtin kernel this runtime has.
pub fn builtin_op_resolver() -> OpResolver {
    let mut r = OpResolver::new();
    let mut add = |op: Op, reg, min, max| r.add_builtin(op as i32, reg, min, max);
    add(Op::kTfLiteBuiltinAdd, ops::add::registration(), 1, 5);
    add(Op::kTfLiteBuiltinSub, ops::sub::registration(), 1, 5);
    add(Op::kTfLiteBuiltinMul, ops::mul::registration(), 1, 7);
    add(Op::kTfLiteBuiltinSin, ops::sin::registration(), 1, 1);
    add(Op::kTfLiteBuiltinFullyConnected, ops::fully_connected_v2::registration(), 1, 13);
    add(Op::kTfLiteBuiltinConv2d, ops::conv_2d::registration(), 1, 8);
    add(Op::kTfLiteBuiltinDepthwiseConv2d, ops::depthwise_conv_2d::registration(), 1, 7);
    add(Op::kTfLiteBuiltinAveragePool2d, ops::pooling::average_pool_registration(), 1, 3);
    add(Op::kTfLiteBuiltinMaxPool2d, ops::pooling::max_pool_registration(), 1, 3);
    add(Op::kTfLiteBuiltinL2Pool2d, ops::pooling::l2_pool_registration(), 1, 1);
    add(Op::kTfLiteBuiltinRelu, ops::relu::relu_registration(), 1, 3);
    add(Op::kTfLiteBuiltinRelu6, ops::relu::relu6_registration(), 1, 3);
    add(Op::kTfLiteBuiltinReluN1To1, ops::relu::relu_n1_to_1_registration(), 1, 1);
    add(Op::kTfLiteBuiltinReshape, ops::reshape::registration(), 1, 1);
    add(Op::kTfLiteBuiltinSqueeze, ops::reshape::squeeze_registration(), 1, 2);
    add(Op::kTfLiteBuiltinExpandDims, ops::reshape::expand_dims_registration(), 1, 1);
    add(Op::kTfLiteBuiltinConcatenation, ops::concatenation::registration(), 1, 4);
    add(Op::kTfLiteBuiltinPad, ops::pad::registration(), 1, 4);
    add(Op::kTfLiteBuiltinPadv2, ops::pad::padv2_registration(), 1, 4);
    add(Op::kTfLiteBuiltinTranspose, ops::transpose::registration(), 1, 6);
    add(Op::kTfLiteBuiltinSlice, ops::slice::registration(), 1, 6);
    add(Op::kTfLiteBuiltinStridedSlice, ops::slice::strided_slice_registration(), 1, 8);
    add(Op::kTfLiteBuiltinSplit, ops::split::registration(), 1, 4);
    add(Op::kTfLiteBuiltinSplitV, ops::split::split_v_registration(), 1, 2);
    add(Op::kTfLiteBuiltinPack, ops::split::pack_registration(), 1, 4);
    add(Op::kTfLiteBuiltinUnpack, ops::split::unpack_registration(), 1, 4);
    add(Op::kTfLiteBuiltinGather, ops::gather::registration(), 1, 7);
    add(Op::kTfLiteBuiltinTile, ops::gather::tile_registration(), 1, 3);
    add(Op::kTfLiteBuiltinBroadcastTo, ops::gather::broadcast_to_registration(), 2, 3);
    add(Op::kTfLiteBuiltinShape, ops::fill::shape_registration(), 1, 1);
    add(Op::kTfLiteBuiltinRank, ops::fill::rank_registration(), 1, 1);
    add(Op::kTfLiteBuiltinZerosLike, ops::fill::zeros_like_registration(), 1, 1);
    add(Op::kTfLiteBuiltinQuantize, ops::quantize::registration(), 1, 3);
    add(Op::kTfLiteBuiltinDequantize, ops::quantize::dequantize_registration(), 1, 6);
    add(Op::kTfLiteBuiltinCast, ops::cast::registration(), 1, 7);
    add(Op::kTfLiteBuiltinSoftmax, ops::softmax::registration(), 1, 3);
    add(Op::kTfLiteBuiltinLogSoftmax, ops::softmax::log_softmax_registration(), 1, 2);
    add(Op::kTfLiteBuiltinLogistic, ops::logistic::registration(), 1, 3);
    add(Op::kTfLiteBuiltinTanh, ops::logistic::tanh_registration(), 1, 3);
    add(Op::kTfLiteBuiltinHardSwish, ops::hard_swish::registration(), 1, 1);
    add(Op::kTfLiteBuiltinLeakyRelu, ops::prelu::leaky_relu_registration(), 1, 2);
    add(Op::kTfLiteBuiltinPrelu, ops::prelu::registration(), 1, 1);
    add(Op::kTfLiteBuiltinElu, ops::elu::elu_registration(), 1, 1);
    add(Op::kTfLiteBuiltinGelu, ops::elu::gelu_registration(), 1, 2);
    add(Op::kTfLiteBuiltinRelu0To1, ops::elu::relu_0_to_1_registration(), 1, 1);
    add(Op::kTfLiteBuiltinExp, ops::elementwise::exp_registration(), 1, 2);
    add(Op::kTfLiteBuiltinLog, ops::elementwise::log_registration(), 1, 2);
    add(Op::kTfLiteBuiltinSqrt, ops::elementwise::sqrt_registration(), 1, 1);
    add(Op::kTfLiteBuiltinRsqrt, ops::elementwise::rsqrt_registration(), 1, 3);
    add(Op::kTfLiteBuiltinSquare, ops::elementwise::square_registration(), 1, 1);
    add(Op::kTfLiteBuiltinAbs, ops::elementwise::abs_registration(), 1, 5);
    add(Op::kTfLiteBuiltinNeg, ops::elementwise::neg_registration(), 1, 1);
    add(Op::kTfLiteBuiltinCos, ops::elementwise::cos_registration(), 1, 1);
    add(Op::kTfLiteBuiltinFloor, ops::elementwise::floor_registration(), 1, 1);
    add(Op::kTfLiteBuiltinCeil, ops::elementwise::ceil_registration(), 1, 1);
    add(Op::kTfLiteBuiltinRound, ops::elementwise::round_registration(), 1, 1);
    add(Op::kTfLiteBuiltinSign, ops::elementwise::sign_registration(), 1, 2);
    add(Op::kTfLiteBuiltinMean, ops::reduce::mean_registration(), 1, 3);
    add(Op::kTfLiteBuiltinSum, ops::reduce::sum_registration(), 1, 2);
    add(Op::kTfLiteBuiltinReduceProd, ops::reduce::prod_registration(), 1, 2);
    add(Op::kTfLiteBuiltinReduceMax, ops::reduce::max_registration(), 1, 3);
    add(Op::kTfLiteBuiltinReduceMin, ops::reduce::min_registration(), 1, 3);
    add(Op::kTfLiteBuiltinReduceAny, ops::reduce::any_registration(), 1, 1);
    add(Op::kTfLiteBuiltinReduceAll, ops::reduce::all_registration(), 1, 1);
    add(Op::kTfLiteBuiltinArgMax, ops::arg_min_max::arg_max_registration(), 1, 3);
    add(Op::kTfLiteBuiltinArgMin, ops::arg_min_max::arg_min_registration(), 1, 3);
    add(Op::kTfLiteBuiltinEqual, ops::compare::equal_registration(), 1, 4);
    add(Op::kTfLiteBuiltinNotEqual, ops::compare::not_equal_registration(), 1, 3);
    add(Op::kTfLiteBuiltinLess, ops::compare::less_registration(), 1, 3);
    add(Op::kTfLiteBuiltinLessEqual, ops::compare::less_equal_registration(), 1, 2);
    add(Op::kTfLiteBuiltinGreater, ops::compare::greater_registration(), 1, 2);
    add(Op::kTfLiteBuiltinGreaterEqual, ops::compare::greater_equal_registration(), 1, 3);
    add(Op::kTfLiteBuiltinLogicalAnd, ops::compare::logical_and_registration(), 1, 1);
    add(Op::kTfLiteBuiltinLogicalOr, ops::compare::logical_or_registration(), 1, 1);
    add(Op::kTfLiteBuiltinLogicalNot, ops::compare::logical_not_registration(), 1, 1);
    add(Op::kTfLiteBuiltinSelect, ops::select::registration(), 1, 4);
    add(Op::kTfLiteBuiltinSelectV2, ops::select::select_v2_registration(), 1, 2);
    add(Op::kTfLiteBuiltinMaximum, ops::arith::maximum_registration(), 1, 4);
    add(Op::kTfLiteBuiltinMinimum, ops::arith::minimum_registration(), 1, 4);
    add(Op::kTfLiteBuiltinDiv, ops::arith::div_registration(), 1, 2);
    add(Op::kTfLiteBuiltinSquaredDifference, ops::arith::squared_difference_registration(), 1, 2);
    add(Op::kTfLiteBuiltinPow, ops::arith::pow_registration(), 1, 1);
    add(Op::kTfLiteBuiltinFill, ops::fill::registration(), 1, 4);
    add(Op::kTfLiteBuiltinRange, ops::fill::range_registration(), 1, 2);
    add(Op::kTfLiteBuiltinIf, ops::control_flow::if_registration(), 1, 1);
    add(Op::kTfLiteBuiltinWhile, ops::control_flow::while_registration(), 1, 1);
    add(Op::kTfLiteBuiltinCallOnce, ops::control_flow::call_once_registration(), 1, 1);
    add(Op::kTfLiteBuiltinVarHandle, ops::variables::var_handle_registration(), 1, 1);
    add(Op::kTfLiteBuiltinReadVariable, ops::variables::read_variable_registration(), 1, 1);
    add(Op::kTfLiteBuiltinAssignVariable, ops::variables::assign_variable_registration(), 1, 1);
    add(Op::kTfLiteBuiltinLstm, ops::lstm::registration(), 1, 4);
    add(Op::kTfLiteBuiltinUnidirectionalSequenceLstm, ops::lstm::sequence_registration(), 1, 4);
    add(Op::kTfLiteBuiltinRnn, ops::rnn::registration(), 1, 3);
    add(Op::kTfLiteBuiltinUnidirectionalSequenceRnn, ops::rnn::sequence_registration(), 1, 3);
    add(Op::kTfLiteBuiltinResizeBilinear, ops::resize::bilinear_registration(), 1, 4);
    add(Op::kTfLiteBuiltinResizeNearestNeighbor, ops::resize::nearest_neighbor_registration(), 1, 4);
    add(Op::kTfLiteBuiltinTransposeConv, ops::transpose_conv::registration(), 1, 5);
    add(Op::kTfLiteBuiltinBatchMatmul, ops::batch_matmul::registration(), 1, 4);
    add(Op::kTfLiteBuiltinDepthToSpace, ops::space_depth::depth_to_space_registration(), 1, 2);
    add(Op::kTfLiteBuiltinSpaceToDepth, ops::space_depth::space_to_depth_registration(), 1, 2);
    add(Op::kTfLiteBuiltinSpaceToBatchNd, ops::space_depth::space_to_batch_nd_registration(), 1, 4);
    add(Op::kTfLiteBuiltinBatchToSpaceNd, ops::space_depth::batch_to_space_nd_registration(), 1, 4);
    add(Op::kTfLiteBuiltinMirrorPad, ops::mirror_pad::registration(), 1, 3);
    add(Op::kTfLiteBuiltinGatherNd, ops::gather_nd::registration(), 1, 5);
    add(Op::kTfLiteBuiltinScatterNd, ops::gather_nd::scatter_nd_registration(), 1, 1);
    add(Op::kTfLiteBuiltinCumsum, ops::cumsum::registration(), 1, 1);
    add(Op::kTfLiteBuiltinTopkV2, ops::topk_v2::registration(), 1, 3);
    add(Op::kTfLiteBuiltinOneHot, ops::one_hot::registration(), 1, 1);
    add(Op::kTfLiteBuiltinL2Normalization, ops::normalization::l2_normalization_registration(), 1, 2);
    add(
        Op::kTfLiteBuiltinLocalResponseNormalization,
        ops::normalization::local_response_normalization_registration(),
        1,
        1,
    );
    add(Op::kTfLiteBuiltinFloorDiv, ops::floor_div_mod::floor_div_registration(), 1, 3);
    add(Op::kTfLiteBuiltinFloorMod, ops::floor_div_mod::floor_mod_registration(), 1, 2);
    add(Op::kTfLiteBuiltinAddN, ops::add_n::registration(), 1, 1);
    add(Op::kTfLiteBuiltinReverseV2, ops::reverse::registration(), 1, 3);
    add(Op::kTfLiteBuiltinEmbeddingLookup, ops::embedding_lookup::registration(), 1, 4);
    add(Op::kTfLiteBuiltinDensify, ops::densify::registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloComposite, ops::stablehlo::composite::composite_registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloCase, ops::stablehlo::composite::case_registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloAdd, ops::stablehlo::elementwise::add_registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloMultiply, ops::stablehlo::elementwise::multiply_registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloMaximum, ops::stablehlo::elementwise::maximum_registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloMinimum, ops::stablehlo::elementwise::minimum_registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloAnd, ops::stablehlo::elementwise::and_registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloShiftLeft, ops::stablehlo::elementwise::shift_left_registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloPad, ops::stablehlo::pad::pad_registration(), 1, 1);
    add(Op::kTfLiteBuiltinDilate, ops::stablehlo::pad::dilate_registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloGather, ops::stablehlo::gather::registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloReduceWindow, ops::stablehlo::reduce_window::stablehlo_registration(), 1, 1);
    add(Op::kTfLiteBuiltinReduceWindow, ops::stablehlo::reduce_window::registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloScatter, ops::stablehlo::scatter::registration(), 1, 1);
    add(Op::kTfLiteBuiltinDynamicUpdateSlice, ops::dynamic_update_slice::registration(), 1, 3);
    add(Op::kTfLiteBuiltinWhere, ops::where_op::registration(), 1, 2);
    add(Op::kTfLiteBuiltinUnique, ops::unique::registration(), 1, 1);
    add(Op::kTfLiteBuiltinBroadcastArgs, ops::broadcast_args::registration(), 1, 1);
    add(Op::kTfLiteBuiltinAtan2, ops::atan2::registration(), 1, 1);
    add(Op::kTfLiteBuiltinBitcast, ops::bitcast::registration(), 1, 1);
    add(Op::kTfLiteBuiltinBitwiseXor, ops::bitwise::bitwise_xor_registration(), 1, 1);
    add(Op::kTfLiteBuiltinRightShift, ops::bitwise::right_shift_registration(), 1, 1);
    add(Op::kTfLiteBuiltinSegmentSum, ops::segment::segment_sum_registration(), 1, 1);
    add(Op::kTfLiteBuiltinUnsortedSegmentSum, ops::segment::unsorted_segment_sum_registration(), 1, 1);
    add(Op::kTfLiteBuiltinUnsortedSegmentProd, ops::segment::unsorted_segment_prod_registration(), 1, 1);
    add(Op::kTfLiteBuiltinUnsortedSegmentMax, ops::segment::unsorted_segment_max_registration(), 1, 1);
    add(Op::kTfLiteBuiltinUnsortedSegmentMin, ops::segment::unsorted_segment_min_registration(), 1, 1);
    add(Op::kTfLiteBuiltinMatrixDiag, ops::matrix_diag::matrix_diag_registration(), 1, 1);
    add(Op::kTfLiteBuiltinMatrixSetDiag, ops::matrix_diag::matrix_set_diag_registration(), 1, 1);
    add(Op::kTfLiteBuiltinReverseSequence, ops::reverse_sequence::registration(), 1, 1);
    add(Op::kTfLiteBuiltinBucketize, ops::bucketize::registration(), 1, 1);
    add(Op::kTfLiteBuiltinRfft2d, ops::rfft2d::registration(), 1, 1);
    add(Op::kTfLiteBuiltinComplexAbs, ops::complex::complex_abs_registration(), 1, 1);
    add(Op::kTfLiteBuiltinReal, ops::complex::real_registration(), 1, 1);
    add(Op::kTfLiteBuiltinImag, ops::complex::imag_registration(), 1, 1);
    add(Op::kTfLiteBuiltinConv3d, ops::conv_3d::registration(), 1, 1);
    add(Op::kTfLiteBuiltinConv3dTranspose, ops::conv_3d::transpose_registration(), 1, 1);
    add(Op::kTfLiteBuiltinStablehloRngBitGenerator, ops::stablehlo::rng_bit_generator::registration(), 1, 1);
    add(Op::kTfLiteBuiltinEmbeddingLookupSparse, ops::embedding_lookup_sparse::registration(), 1, 1);
    // TFLite's own custom ops, which its BuiltinOpResolver includes.
    r.add_custom("AudioSpectrogram", ops::audio::spectrogram::registration(), 1, 1);
    r.add_custom("Mfcc", ops::audio::mfcc::registration(), 1, 1);
    r.add_custom("NumericVerify", ops::numeric_verify::registration(), 1, 1);
    // MediaPipe's custom ops, at the versions its op resolvers register (its face
    // landmarker with attention uses the version-2 ops); TFLite's resolver lacks them.
    r.add_custom("Convolution2DTransposeBias", ops::transpose_conv::transpose_conv_bias_registration(), 1, 1);
    r.add_custom("Landmarks2TransformMatrix", ops::mediapipe::landmarks_to_transform_matrix::registration(), 2, 2);
    r.add_custom("TransformTensorBilinear", ops::mediapipe::transform_tensor_bilinear::registration(), 2, 2);
    r.add_custom("TransformLandmarks", ops::mediapipe::transform_landmarks::registration(), 2, 2);
    r.add_custom("MaxPoolingWithArgmax2D", ops::mediapipe::max_pool_argmax::registration(), 1, 1);
    r.add_custom("MaxUnpooling2D", ops::mediapipe::max_unpooling::registration(), 1, 1);
    r.add_custom("Resampler", ops::mediapipe::resampler::registration(), 1, 1);
    r.add_custom("FusedBatchNormV3", ops::mediapipe::fused_batch_norm::registration(), 1, 1);
    r
}
