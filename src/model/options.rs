//! Builtin options → `TfLite*Params`: TFLite 2.19's `ParseOpData`
//! (`core/api/flatbuffer_conversions.cc`), which turns an operator's options table into
//! the C struct that `TfLiteNode::builtin_data` points to.
//!
//! Behaviour kept from TFLite, op by op:
//! - The params struct is allocated zeroed (`calloc`) and filled from the options table
//!   only when the operator carries the table this op expects. A missing table, or one of
//!   another type (an ADD carrying `Conv2DOptions`), leaves the struct zeroed, exactly as
//!   TFLite does: then DEPTHWISE_CONV_2D gets dilation 0, not the schema's 1. Schema
//!   defaults apply only to fields missing from a table that is present (the flatbuffer
//!   accessors return them).
//! - Ops whose parser TFLite skips (PAD, TRANSPOSE, RELU, ...) get no struct (NULL) even
//!   where `builtin_op_data.h` declares a placeholder one.
//! - LSTM without `LSTMOptions`, DELEGATE, and STABLEHLO_REDUCE_WINDOW, STABLEHLO_PAD,
//!   STABLEHLO_COMPOSITE and STABLEHLO_CASE without their tables are errors.
//!
//! Deliberately stricter than TFLite (which maps unknown values to a default, overflows a
//! fixed array, or dereferences NULL): an enum value outside the schema, a list longer than
//! its fixed array, and a required vector that is missing are errors naming the op. No
//! input makes this module panic on a verified model.

use crate::abi::builtin_op_data::*;
use crate::abi::builtin_ops::TfLiteBuiltinOperator as Op;
use crate::abi::types::TfLiteType;
use crate::error::{Error, Result};
use crate::model::schema_generated::tflite as fb;
use core::ffi::{c_char, c_int, c_void};
use core::ptr::NonNull;

/// Parses the builtin options of `op` (a node whose opcode resolved to builtin `code`)
/// into a freshly malloc'ed TfLite*Params struct, as TFLite's ParseOpData does.
/// Returns Ok(null) for ops that have no params struct. The caller frees with libc::free.
///
/// Pointers inside the struct (VAR_HANDLE's strings, BUCKETIZE's boundaries,
/// STABLEHLO_COMPOSITE's name and attributes) point into the model buffer, which must
/// outlive the params. `op` must come from a verified model (strings NUL-terminated).
pub fn parse_builtin_options(code: Op, op: &fb::Operator<'_>) -> Result<*mut c_void> {
    let name = code.name();
    match code {
        // ---- Convolution and pooling ---------------------------------------------------
        Op::kTfLiteBuiltinConv2d => fill(op.builtin_options_as_conv_2doptions(), |p: &mut TfLiteConvParams, o| {
            p.padding = padding(o.padding(), name)?;
            p.stride_width = o.stride_w();
            p.stride_height = o.stride_h();
            p.activation = activation(o.fused_activation_function(), name)?;
            p.dilation_width_factor = o.dilation_w_factor();
            p.dilation_height_factor = o.dilation_h_factor();
            p.quantized_bias_type = tensor_type(o.quantized_bias_type(), name)?;
            Ok(())
        }),
        Op::kTfLiteBuiltinDepthwiseConv2d => {
            fill(op.builtin_options_as_depthwise_conv_2doptions(), |p: &mut TfLiteDepthwiseConvParams, o| {
                p.padding = padding(o.padding(), name)?;
                p.stride_width = o.stride_w();
                p.stride_height = o.stride_h();
                p.depth_multiplier = o.depth_multiplier();
                p.activation = activation(o.fused_activation_function(), name)?;
                p.dilation_width_factor = o.dilation_w_factor();
                p.dilation_height_factor = o.dilation_h_factor();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinConv3d | Op::kTfLiteBuiltinConv3dTranspose => {
            fill(op.builtin_options_as_conv_3doptions(), |p: &mut TfLiteConv3DParams, o| {
                p.padding = padding(o.padding(), name)?;
                p.activation = activation(o.fused_activation_function(), name)?;
                p.stride_depth = o.stride_d();
                p.stride_height = o.stride_h();
                p.stride_width = o.stride_w();
                p.dilation_depth_factor = o.dilation_d_factor();
                p.dilation_height_factor = o.dilation_h_factor();
                p.dilation_width_factor = o.dilation_w_factor();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinTransposeConv => {
            fill(op.builtin_options_as_transpose_conv_options(), |p: &mut TfLiteTransposeConvParams, o| {
                p.padding = padding(o.padding(), name)?;
                p.stride_width = o.stride_w();
                p.stride_height = o.stride_h();
                p.activation = activation(o.fused_activation_function(), name)?;
                p.quantized_bias_type = tensor_type(o.quantized_bias_type(), name)?;
                Ok(())
            })
        }
        Op::kTfLiteBuiltinAveragePool2d | Op::kTfLiteBuiltinMaxPool2d | Op::kTfLiteBuiltinL2Pool2d => {
            fill(op.builtin_options_as_pool_2doptions(), |p: &mut TfLitePoolParams, o| {
                p.padding = padding(o.padding(), name)?;
                p.stride_width = o.stride_w();
                p.stride_height = o.stride_h();
                p.filter_width = o.filter_width();
                p.filter_height = o.filter_height();
                p.activation = activation(o.fused_activation_function(), name)?;
                Ok(())
            })
        }

        // ---- Fully connected and matmul ------------------------------------------------
        Op::kTfLiteBuiltinFullyConnected => {
            fill(op.builtin_options_as_fully_connected_options(), |p: &mut TfLiteFullyConnectedParams, o| {
                p.activation = activation(o.fused_activation_function(), name)?;
                p.keep_num_dims = o.keep_num_dims();
                p.asymmetric_quantize_inputs = o.asymmetric_quantize_inputs();
                p.quantized_bias_type = tensor_type(o.quantized_bias_type(), name)?;
                use TfLiteFullyConnectedWeightsFormat as W;
                p.weights_format = match o.weights_format() {
                    fb::FullyConnectedOptionsWeightsFormat::DEFAULT => W::kTfLiteFullyConnectedWeightsFormatDefault,
                    fb::FullyConnectedOptionsWeightsFormat::SHUFFLED4x16INT8 => {
                        W::kTfLiteFullyConnectedWeightsFormatShuffled4x16Int8
                    }
                    other => {
                        return Err(unsupported("fully-connected weights format", other.0, name));
                    }
                };
                Ok(())
            })
        }
        Op::kTfLiteBuiltinBatchMatmul => {
            fill(op.builtin_options_as_batch_mat_mul_options(), |p: &mut TfLiteBatchMatMulParams, o| {
                p.adj_x = o.adj_x();
                p.adj_y = o.adj_y();
                p.asymmetric_quantize_inputs = o.asymmetric_quantize_inputs();
                Ok(())
            })
        }

        // ---- Element-wise arithmetic and activations -----------------------------------
        Op::kTfLiteBuiltinAdd => fill(op.builtin_options_as_add_options(), |p: &mut TfLiteAddParams, o| {
            p.activation = activation(o.fused_activation_function(), name)?;
            p.pot_scale_int16 = o.pot_scale_int16();
            Ok(())
        }),
        Op::kTfLiteBuiltinSub => fill(op.builtin_options_as_sub_options(), |p: &mut TfLiteSubParams, o| {
            p.activation = activation(o.fused_activation_function(), name)?;
            p.pot_scale_int16 = o.pot_scale_int16();
            Ok(())
        }),
        Op::kTfLiteBuiltinMul => fill(op.builtin_options_as_mul_options(), |p: &mut TfLiteMulParams, o| {
            p.activation = activation(o.fused_activation_function(), name)?;
            Ok(())
        }),
        Op::kTfLiteBuiltinDiv => fill(op.builtin_options_as_div_options(), |p: &mut TfLiteDivParams, o| {
            p.activation = activation(o.fused_activation_function(), name)?;
            Ok(())
        }),
        Op::kTfLiteBuiltinLeakyRelu => {
            fill(op.builtin_options_as_leaky_relu_options(), |p: &mut TfLiteLeakyReluParams, o| {
                p.alpha = o.alpha();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinGelu => fill(op.builtin_options_as_gelu_options(), |p: &mut TfLiteGeluParams, o| {
            p.approximate = o.approximate();
            Ok(())
        }),

        // ---- Normalisation -------------------------------------------------------------
        Op::kTfLiteBuiltinSoftmax => fill(op.builtin_options_as_softmax_options(), |p: &mut TfLiteSoftmaxParams, o| {
            p.beta = o.beta();
            Ok(())
        }),
        Op::kTfLiteBuiltinL2Normalization => {
            fill(op.builtin_options_as_l2norm_options(), |p: &mut TfLiteL2NormParams, o| {
                p.activation = activation(o.fused_activation_function(), name)?;
                Ok(())
            })
        }
        Op::kTfLiteBuiltinLocalResponseNormalization => fill(
            op.builtin_options_as_local_response_normalization_options(),
            |p: &mut TfLiteLocalResponseNormParams, o| {
                p.radius = o.radius();
                p.bias = o.bias();
                p.alpha = o.alpha();
                p.beta = o.beta();
                Ok(())
            },
        ),

        // ---- Recurrent -----------------------------------------------------------------
        Op::kTfLiteBuiltinSvdf => fill(op.builtin_options_as_svdfoptions(), |p: &mut TfLiteSVDFParams, o| {
            p.rank = o.rank();
            p.activation = activation(o.fused_activation_function(), name)?;
            p.asymmetric_quantize_inputs = o.asymmetric_quantize_inputs();
            Ok(())
        }),
        Op::kTfLiteBuiltinRnn => fill(op.builtin_options_as_rnnoptions(), |p: &mut TfLiteRNNParams, o| {
            p.activation = activation(o.fused_activation_function(), name)?;
            p.asymmetric_quantize_inputs = o.asymmetric_quantize_inputs();
            Ok(())
        }),
        Op::kTfLiteBuiltinUnidirectionalSequenceRnn => {
            fill(op.builtin_options_as_sequence_rnnoptions(), |p: &mut TfLiteSequenceRNNParams, o| {
                p.activation = activation(o.fused_activation_function(), name)?;
                p.time_major = o.time_major();
                p.asymmetric_quantize_inputs = o.asymmetric_quantize_inputs();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinBidirectionalSequenceRnn => fill(
            op.builtin_options_as_bidirectional_sequence_rnnoptions(),
            |p: &mut TfLiteBidirectionalSequenceRNNParams, o| {
                p.activation = activation(o.fused_activation_function(), name)?;
                p.time_major = o.time_major();
                p.merge_outputs = o.merge_outputs();
                p.asymmetric_quantize_inputs = o.asymmetric_quantize_inputs();
                Ok(())
            },
        ),
        Op::kTfLiteBuiltinLstm => parse_lstm(op, name),
        Op::kTfLiteBuiltinUnidirectionalSequenceLstm => fill(
            op.builtin_options_as_unidirectional_sequence_lstmoptions(),
            |p: &mut TfLiteUnidirectionalSequenceLSTMParams, o| {
                p.activation = activation(o.fused_activation_function(), name)?;
                p.cell_clip = o.cell_clip();
                p.proj_clip = o.proj_clip();
                p.time_major = o.time_major();
                p.asymmetric_quantize_inputs = o.asymmetric_quantize_inputs();
                p.diagonal_recurrent_tensors = o.diagonal_recurrent_tensors();
                Ok(())
            },
        ),
        Op::kTfLiteBuiltinBidirectionalSequenceLstm => fill(
            op.builtin_options_as_bidirectional_sequence_lstmoptions(),
            |p: &mut TfLiteBidirectionalSequenceLSTMParams, o| {
                p.activation = activation(o.fused_activation_function(), name)?;
                p.cell_clip = o.cell_clip();
                p.proj_clip = o.proj_clip();
                p.merge_outputs = o.merge_outputs();
                p.time_major = o.time_major();
                p.asymmetric_quantize_inputs = o.asymmetric_quantize_inputs();
                Ok(())
            },
        ),

        // ---- Embeddings and hashing ----------------------------------------------------
        Op::kTfLiteBuiltinLshProjection => {
            fill(op.builtin_options_as_lshprojection_options(), |p: &mut TfLiteLSHProjectionParams, o| {
                p.type_ = match o.type_() {
                    fb::LSHProjectionType::UNKNOWN => TfLiteLSHProjectionType::kTfLiteLshProjectionUnknown,
                    fb::LSHProjectionType::SPARSE => TfLiteLSHProjectionType::kTfLiteLshProjectionSparse,
                    fb::LSHProjectionType::DENSE => TfLiteLSHProjectionType::kTfLiteLshProjectionDense,
                    other => return Err(unsupported("LSH projection type", other.0, name)),
                };
                Ok(())
            })
        }
        Op::kTfLiteBuiltinEmbeddingLookupSparse => fill(
            op.builtin_options_as_embedding_lookup_sparse_options(),
            |p: &mut TfLiteEmbeddingLookupSparseParams, o| {
                p.combiner = match o.combiner() {
                    fb::CombinerType::SUM => TfLiteCombinerType::kTfLiteCombinerTypeSum,
                    fb::CombinerType::MEAN => TfLiteCombinerType::kTfLiteCombinerTypeMean,
                    fb::CombinerType::SQRTN => TfLiteCombinerType::kTfLiteCombinerTypeSqrtn,
                    other => return Err(unsupported("combiner type", other.0, name)),
                };
                Ok(())
            },
        ),
        Op::kTfLiteBuiltinSkipGram => {
            fill(op.builtin_options_as_skip_gram_options(), |p: &mut TfLiteSkipGramParams, o| {
                p.ngram_size = o.ngram_size();
                p.max_skip_size = o.max_skip_size();
                p.include_all_ngrams = o.include_all_ngrams();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinHashtable => {
            fill(op.builtin_options_as_hashtable_options(), |p: &mut TfLiteHashtableParams, o| {
                p.table_id = o.table_id();
                p.key_dtype = tensor_type(o.key_dtype(), name)?;
                p.value_dtype = tensor_type(o.value_dtype(), name)?;
                Ok(())
            })
        }

        // ---- Shape manipulation --------------------------------------------------------
        Op::kTfLiteBuiltinConcatenation => {
            fill(op.builtin_options_as_concatenation_options(), |p: &mut TfLiteConcatenationParams, o| {
                p.activation = activation(o.fused_activation_function(), name)?;
                p.axis = o.axis();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinReshape => fill(op.builtin_options_as_reshape_options(), |p: &mut TfLiteReshapeParams, o| {
            if let Some(shape) = o.new_shape() {
                p.num_dimensions = copy_ints(shape, &mut p.shape, "reshape")?;
            }
            Ok(())
        }),
        Op::kTfLiteBuiltinSqueeze => fill(op.builtin_options_as_squeeze_options(), |p: &mut TfLiteSqueezeParams, o| {
            if let Some(dims) = o.squeeze_dims() {
                p.num_squeeze_dims = copy_ints(dims, &mut p.squeeze_dims, "squeeze")?;
            }
            Ok(())
        }),
        Op::kTfLiteBuiltinStridedSlice => {
            fill(op.builtin_options_as_strided_slice_options(), |p: &mut TfLiteStridedSliceParams, o| {
                p.begin_mask = o.begin_mask();
                p.end_mask = o.end_mask();
                p.ellipsis_mask = o.ellipsis_mask();
                p.new_axis_mask = o.new_axis_mask();
                p.shrink_axis_mask = o.shrink_axis_mask();
                p.offset = o.offset();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinPack => fill(op.builtin_options_as_pack_options(), |p: &mut TfLitePackParams, o| {
            p.values_count = o.values_count();
            p.axis = o.axis();
            Ok(())
        }),
        Op::kTfLiteBuiltinUnpack => fill(op.builtin_options_as_unpack_options(), |p: &mut TfLiteUnpackParams, o| {
            p.num = o.num();
            p.axis = o.axis();
            Ok(())
        }),
        Op::kTfLiteBuiltinSplit => fill(op.builtin_options_as_split_options(), |p: &mut TfLiteSplitParams, o| {
            p.num_splits = o.num_splits();
            Ok(())
        }),
        Op::kTfLiteBuiltinSplitV => fill(op.builtin_options_as_split_voptions(), |p: &mut TfLiteSplitVParams, o| {
            p.num_splits = o.num_splits();
            Ok(())
        }),
        Op::kTfLiteBuiltinSpaceToDepth => {
            fill(op.builtin_options_as_space_to_depth_options(), |p: &mut TfLiteSpaceToDepthParams, o| {
                p.block_size = o.block_size();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinDepthToSpace => {
            fill(op.builtin_options_as_depth_to_space_options(), |p: &mut TfLiteDepthToSpaceParams, o| {
                p.block_size = o.block_size();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinMirrorPad => {
            fill(op.builtin_options_as_mirror_pad_options(), |p: &mut TfLiteMirrorPaddingParams, o| {
                p.mode = match o.mode() {
                    fb::MirrorPadMode::REFLECT => TfLiteMirrorPaddingMode::kTfLiteMirrorPaddingReflect,
                    fb::MirrorPadMode::SYMMETRIC => TfLiteMirrorPaddingMode::kTfLiteMirrorPaddingSymmetric,
                    other => return Err(unsupported("mirror pad mode", other.0, name)),
                };
                Ok(())
            })
        }
        Op::kTfLiteBuiltinResizeBilinear => {
            fill(op.builtin_options_as_resize_bilinear_options(), |p: &mut TfLiteResizeBilinearParams, o| {
                p.align_corners = o.align_corners();
                p.half_pixel_centers = o.half_pixel_centers();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinResizeNearestNeighbor => fill(
            op.builtin_options_as_resize_nearest_neighbor_options(),
            |p: &mut TfLiteResizeNearestNeighborParams, o| {
                p.align_corners = o.align_corners();
                p.half_pixel_centers = o.half_pixel_centers();
                Ok(())
            },
        ),
        Op::kTfLiteBuiltinShape => fill(op.builtin_options_as_shape_options(), |p: &mut TfLiteShapeParams, o| {
            p.out_type = tensor_type(o.out_type(), name)?;
            Ok(())
        }),

        // ---- Gather, reductions, indexing ----------------------------------------------
        Op::kTfLiteBuiltinGather => fill(op.builtin_options_as_gather_options(), |p: &mut TfLiteGatherParams, o| {
            p.axis = o.axis();
            p.batch_dims = o.batch_dims();
            Ok(())
        }),
        Op::kTfLiteBuiltinMean
        | Op::kTfLiteBuiltinSum
        | Op::kTfLiteBuiltinReduceProd
        | Op::kTfLiteBuiltinReduceMax
        | Op::kTfLiteBuiltinReduceMin
        | Op::kTfLiteBuiltinReduceAny
        | Op::kTfLiteBuiltinReduceAll => {
            fill(op.builtin_options_as_reducer_options(), |p: &mut TfLiteReducerParams, o| {
                p.keep_dims = o.keep_dims();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinArgMax => fill(op.builtin_options_as_arg_max_options(), |p: &mut TfLiteArgMaxParams, o| {
            p.output_type = tensor_type(o.output_type(), name)?;
            Ok(())
        }),
        Op::kTfLiteBuiltinArgMin => fill(op.builtin_options_as_arg_min_options(), |p: &mut TfLiteArgMinParams, o| {
            p.output_type = tensor_type(o.output_type(), name)?;
            Ok(())
        }),
        Op::kTfLiteBuiltinCumsum => fill(op.builtin_options_as_cumsum_options(), |p: &mut TfLiteCumsumParams, o| {
            p.exclusive = o.exclusive();
            p.reverse = o.reverse();
            Ok(())
        }),
        Op::kTfLiteBuiltinSparseToDense => {
            fill(op.builtin_options_as_sparse_to_dense_options(), |p: &mut TfLiteSparseToDenseParams, o| {
                p.validate_indices = o.validate_indices();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinOneHot => fill(op.builtin_options_as_one_hot_options(), |p: &mut TfLiteOneHotParams, o| {
            p.axis = o.axis();
            Ok(())
        }),
        Op::kTfLiteBuiltinUnique => {
            fill(op.builtin_options_as_unique_options(), |p: &mut TfLiteUniqueParams, o| {
                // TFLite: INT64 selects int64 indices, any other type int32.
                let t = tensor_type(o.idx_out_type(), name)?;
                p.index_out_type =
                    if t == TfLiteType::kTfLiteInt64 { TfLiteType::kTfLiteInt64 } else { TfLiteType::kTfLiteInt32 };
                Ok(())
            })
        }
        Op::kTfLiteBuiltinReverseSequence => {
            fill(op.builtin_options_as_reverse_sequence_options(), |p: &mut TfLiteReverseSequenceParams, o| {
                p.seq_dim = o.seq_dim();
                p.batch_dim = o.batch_dim();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinBucketize => parse_bucketize(op, name),

        // ---- Types and quantization ----------------------------------------------------
        Op::kTfLiteBuiltinCast => fill(op.builtin_options_as_cast_options(), |p: &mut TfLiteCastParams, o| {
            p.in_data_type = tensor_type(o.in_data_type(), name)?;
            p.out_data_type = tensor_type(o.out_data_type(), name)?;
            Ok(())
        }),
        Op::kTfLiteBuiltinFakeQuant => {
            fill(op.builtin_options_as_fake_quant_options(), |p: &mut TfLiteFakeQuantParams, o| {
                p.min = o.min();
                p.max = o.max();
                p.num_bits = o.num_bits();
                p.narrow_range = o.narrow_range();
                Ok(())
            })
        }

        // ---- Random --------------------------------------------------------------------
        Op::kTfLiteBuiltinMultinomial | Op::kTfLiteBuiltinRandomStandardNormal | Op::kTfLiteBuiltinRandomUniform => {
            fill(op.builtin_options_as_random_options(), |p: &mut TfLiteRandomParams, o| {
                // The schema's seeds are 64-bit, the struct's `int`: TFLite truncates.
                p.seed = o.seed() as c_int;
                p.seed2 = o.seed2() as c_int;
                Ok(())
            })
        }

        // ---- Control flow and resources ------------------------------------------------
        Op::kTfLiteBuiltinIf => fill(op.builtin_options_as_if_options(), |p: &mut TfLiteIfParams, o| {
            p.then_subgraph_index = o.then_subgraph_index();
            p.else_subgraph_index = o.else_subgraph_index();
            Ok(())
        }),
        Op::kTfLiteBuiltinWhile => fill(op.builtin_options_as_while_options(), |p: &mut TfLiteWhileParams, o| {
            p.cond_subgraph_index = o.cond_subgraph_index();
            p.body_subgraph_index = o.body_subgraph_index();
            Ok(())
        }),
        Op::kTfLiteBuiltinCallOnce => {
            fill(op.builtin_options_as_call_once_options(), |p: &mut TfLiteCallOnceParams, o| {
                p.init_subgraph_index = o.init_subgraph_index();
                Ok(())
            })
        }
        Op::kTfLiteBuiltinVarHandle => {
            fill(op.builtin_options_as_var_handle_options(), |p: &mut TfLiteVarHandleParams, o| {
                // Flatbuffer strings are NUL-terminated in the buffer (checked by the
                // verifier), so the pointers are valid C strings; NULL when absent.
                if let Some(s) = o.container() {
                    p.container = s.as_ptr().cast::<c_char>();
                }
                if let Some(s) = o.shared_name() {
                    p.shared_name = s.as_ptr().cast::<c_char>();
                }
                Ok(())
            })
        }

        // ---- StableHLO -----------------------------------------------------------------
        Op::kTfLiteBuiltinStablehloScatter => parse_stablehlo_scatter(op),
        Op::kTfLiteBuiltinStablehloRngBitGenerator => fill(
            op.builtin_options_2_as_stablehlo_rng_bit_generator_options(),
            |p: &mut TfLiteStablehloRngBitGeneratorParams, o| {
                p.algorithm = match o.algorithm() {
                    fb::RngAlgorithm::DEFAULT => TfLiteRngAlgorithm::kTfLiteRngAlgorithmDefault,
                    fb::RngAlgorithm::PHILOX => TfLiteRngAlgorithm::kTfLiteRngAlgorithmPhilox,
                    fb::RngAlgorithm::THREEFRY => TfLiteRngAlgorithm::kTfLiteRngAlgorithmThreefry,
                    other => return Err(unsupported("RNG algorithm", other.0, name)),
                };
                Ok(())
            },
        ),
        Op::kTfLiteBuiltinStablehloGather => parse_stablehlo_gather(op),
        Op::kTfLiteBuiltinStablehloReduceWindow => parse_stablehlo_reduce_window(op),
        Op::kTfLiteBuiltinReduceWindow => {
            fill(op.builtin_options_2_as_reduce_window_options(), |p: &mut TfLiteReduceWindowParams, o| {
                use TfLiteReduceWindowFunction as F;
                p.reduce_function = match o.reduce_function() {
                    fb::ReduceWindowFunction::ADD => F::TfLiteReduceWindowFunctionAdd,
                    fb::ReduceWindowFunction::MUL => F::TfLiteReduceWindowFunctionMul,
                    fb::ReduceWindowFunction::MINIMUM => F::TfLiteReduceWindowFunctionMin,
                    fb::ReduceWindowFunction::MAXIMUM => F::TfLiteReduceWindowFunctionMax,
                    fb::ReduceWindowFunction::ALL => F::TfLiteReduceWindowFunctionAll,
                    fb::ReduceWindowFunction::ANY => F::TfLiteReduceWindowFunctionAny,
                    other => return Err(unsupported("reduce window function", other.0, name)),
                };
                Ok(())
            })
        }
        Op::kTfLiteBuiltinStablehloPad => parse_stablehlo_pad(op),
        Op::kTfLiteBuiltinStablehloComposite => parse_stablehlo_composite(op),
        Op::kTfLiteBuiltinStablehloCase => parse_stablehlo_case(op),

        // ---- Not real builtins ---------------------------------------------------------
        Op::kTfLiteBuiltinDelegate => Err(Error::new("DELEGATE op shouldn't exist in model.")),
        Op::kTfLiteBuiltinPlaceholderForGreaterOpCodes => {
            Err(Error::new(format!("Builtin code {} ({name}) is not an operator", code as i32)))
        }

        // Every other op (CUSTOM included) has no builtin data in TFLite 2.19: the
        // parameterless element-wise and shape ops, the options-free control ops (CALL,
        // RANK, ...), the StableHLO ops without a runtime parser (STABLEHLO_ADD,
        // STABLEHLO_CONCATENATE, STABLEHLO_SHIFT_LEFT, ...), and the ops whose
        // placeholder struct TFLite never allocates (PAD, PADV2, TRANSPOSE,
        // SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, MATRIX_DIAG, MATRIX_SET_DIAG).
        _ => Ok(core::ptr::null_mut()),
    }
}

// ---------------------------------------------------------------------------------------
// Allocation
// ---------------------------------------------------------------------------------------

/// A params struct for which all-zero bytes are a valid value.
///
/// # Safety
/// Implementors must be valid when zeroed (see the invariant of `abi::builtin_op_data`)
/// and have an alignment `calloc` satisfies (at most 16).
unsafe trait ZeroValid: Sized {}

macro_rules! zero_valid {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: `$t` is a params struct of `abi::builtin_op_data`, all of which are
        // valid when zeroed and aligned to at most 8.
        unsafe impl ZeroValid for $t {}
    )*};
}

zero_valid!(
    TfLiteConvParams,
    TfLiteDepthwiseConvParams,
    TfLiteConv3DParams,
    TfLiteTransposeConvParams,
    TfLitePoolParams,
    TfLiteFullyConnectedParams,
    TfLiteBatchMatMulParams,
    TfLiteAddParams,
    TfLiteSubParams,
    TfLiteMulParams,
    TfLiteDivParams,
    TfLiteLeakyReluParams,
    TfLiteGeluParams,
    TfLiteSoftmaxParams,
    TfLiteL2NormParams,
    TfLiteLocalResponseNormParams,
    TfLiteSVDFParams,
    TfLiteRNNParams,
    TfLiteSequenceRNNParams,
    TfLiteBidirectionalSequenceRNNParams,
    TfLiteLSTMParams,
    TfLiteUnidirectionalSequenceLSTMParams,
    TfLiteBidirectionalSequenceLSTMParams,
    TfLiteLSHProjectionParams,
    TfLiteEmbeddingLookupSparseParams,
    TfLiteSkipGramParams,
    TfLiteHashtableParams,
    TfLiteConcatenationParams,
    TfLiteReshapeParams,
    TfLiteSqueezeParams,
    TfLiteStridedSliceParams,
    TfLitePackParams,
    TfLiteUnpackParams,
    TfLiteSplitParams,
    TfLiteSplitVParams,
    TfLiteSpaceToDepthParams,
    TfLiteDepthToSpaceParams,
    TfLiteMirrorPaddingParams,
    TfLiteResizeBilinearParams,
    TfLiteResizeNearestNeighborParams,
    TfLiteShapeParams,
    TfLiteGatherParams,
    TfLiteReducerParams,
    TfLiteArgMaxParams,
    TfLiteArgMinParams,
    TfLiteCumsumParams,
    TfLiteSparseToDenseParams,
    TfLiteOneHotParams,
    TfLiteUniqueParams,
    TfLiteReverseSequenceParams,
    TfLiteBucketizeParams,
    TfLiteCastParams,
    TfLiteFakeQuantParams,
    TfLiteRandomParams,
    TfLiteIfParams,
    TfLiteWhileParams,
    TfLiteCallOnceParams,
    TfLiteVarHandleParams,
    TfLiteStablehloScatterParams,
    TfLiteStablehloRngBitGeneratorParams,
    TfLiteStablehloGatherParams,
    TfLiteStablehloReduceWindowParams,
    TfLiteReduceWindowParams,
    TfLiteStablehloPadParams,
    TfLiteStablehloCompositeParams,
    TfLiteStablehloCaseParams,
);

/// Allocates a zeroed `T` and, when the op carries the options table it expects
/// (`options` is `Some`), fills it with `fill`; then hands it over. An error from `fill`
/// frees the struct.
fn fill<T: ZeroValid, O>(options: Option<O>, fill: impl FnOnce(&mut T, O) -> Result<()>) -> Result<*mut c_void> {
    let mut params = CParams::<T>::zeroed()?;
    if let Some(o) = options {
        fill(&mut params, o)?;
    }
    Ok(params.into_raw())
}

/// A `calloc`ed params struct, freed on drop unless handed over with `into_raw` (TFLite's
/// `SafeBuiltinDataAllocator`).
struct CParams<T: ZeroValid>(NonNull<T>);

impl<T: ZeroValid> CParams<T> {
    fn zeroed() -> Result<Self> {
        const { assert!(core::mem::align_of::<T>() <= 16) };
        // SAFETY: calloc has no preconditions; the result is checked for NULL below.
        let raw = unsafe { libc::calloc(1, core::mem::size_of::<T>()) }.cast::<T>();
        NonNull::new(raw).map(CParams).ok_or_else(|| Error::new("Failed to allocate memory for builtin_data"))
    }

    /// Hands the struct over; the receiver frees it with `libc::free`.
    fn into_raw(self) -> *mut c_void {
        let raw = self.0.as_ptr().cast::<c_void>();
        core::mem::forget(self);
        raw
    }
}

impl<T: ZeroValid> core::ops::Deref for CParams<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the pointer is a live, exclusively owned calloc allocation of one `T`,
        // suitably aligned (checked in `zeroed`), and zeroed bytes are a valid `T`
        // (`ZeroValid`); every later write went through a `&mut T`.
        unsafe { self.0.as_ref() }
    }
}

impl<T: ZeroValid> core::ops::DerefMut for CParams<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes the access exclusive.
        unsafe { self.0.as_mut() }
    }
}

impl<T: ZeroValid> Drop for CParams<T> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from calloc in `zeroed` and was not handed over
        // (`into_raw` forgets `self`).
        unsafe { libc::free(self.0.as_ptr().cast::<c_void>()) }
    }
}

// ---------------------------------------------------------------------------------------
// Enum and list conversions
// ---------------------------------------------------------------------------------------

fn unsupported(what: &str, value: impl core::fmt::Display, op_name: &str) -> Error {
    Error::new(format!("Unsupported {what} {value} in {op_name}"))
}

/// The schema's padding → TFLite's (`ConvertPadding`).
fn padding(p: fb::Padding, op_name: &str) -> Result<TfLitePadding> {
    match p {
        fb::Padding::SAME => Ok(TfLitePadding::kTfLitePaddingSame),
        fb::Padding::VALID => Ok(TfLitePadding::kTfLitePaddingValid),
        other => Err(unsupported("padding type", other.0, op_name)),
    }
}

/// The schema's fused activation → TFLite's (`ConvertActivation`). The schema has no
/// SIGMOID, so `kTfLiteActSigmoid` never comes from a model.
fn activation(a: fb::ActivationFunctionType, op_name: &str) -> Result<TfLiteFusedActivation> {
    use TfLiteFusedActivation as A;
    match a {
        fb::ActivationFunctionType::NONE => Ok(A::kTfLiteActNone),
        fb::ActivationFunctionType::RELU => Ok(A::kTfLiteActRelu),
        fb::ActivationFunctionType::RELU_N1_TO_1 => Ok(A::kTfLiteActReluN1To1),
        fb::ActivationFunctionType::RELU6 => Ok(A::kTfLiteActRelu6),
        fb::ActivationFunctionType::TANH => Ok(A::kTfLiteActTanh),
        fb::ActivationFunctionType::SIGN_BIT => Ok(A::kTfLiteActSignBit),
        other => Err(unsupported("fused activation function", other.0, op_name)),
    }
}

/// The schema's tensor type → `TfLiteType` (TFLite's `ConvertTensorType`), or `None` for
/// a value outside the schema.
pub fn convert_tensor_type(t: fb::TensorType) -> Option<TfLiteType> {
    use TfLiteType::*;
    Some(match t {
        fb::TensorType::FLOAT32 => kTfLiteFloat32,
        fb::TensorType::FLOAT16 => kTfLiteFloat16,
        fb::TensorType::INT32 => kTfLiteInt32,
        fb::TensorType::UINT8 => kTfLiteUInt8,
        fb::TensorType::INT64 => kTfLiteInt64,
        fb::TensorType::STRING => kTfLiteString,
        fb::TensorType::BOOL => kTfLiteBool,
        fb::TensorType::INT16 => kTfLiteInt16,
        fb::TensorType::COMPLEX64 => kTfLiteComplex64,
        fb::TensorType::INT8 => kTfLiteInt8,
        fb::TensorType::FLOAT64 => kTfLiteFloat64,
        fb::TensorType::COMPLEX128 => kTfLiteComplex128,
        fb::TensorType::UINT64 => kTfLiteUInt64,
        fb::TensorType::RESOURCE => kTfLiteResource,
        fb::TensorType::VARIANT => kTfLiteVariant,
        fb::TensorType::UINT32 => kTfLiteUInt32,
        fb::TensorType::UINT16 => kTfLiteUInt16,
        fb::TensorType::INT4 => kTfLiteInt4,
        fb::TensorType::BFLOAT16 => kTfLiteBFloat16,
        _ => return None,
    })
}

fn tensor_type(t: fb::TensorType, op_name: &str) -> Result<TfLiteType> {
    convert_tensor_type(t).ok_or_else(|| unsupported("data type", t.0, op_name))
}

/// TFLite's message for a list that does not fit its fixed array.
fn too_many(op_name: &str) -> Error {
    Error::new(format!("Found too many dimensions in the input array of operation '{op_name}'."))
}

/// TFLite's message for a required list that is missing.
fn not_provided(op_name: &str) -> Error {
    Error::new(format!("Input array not provided for operation '{op_name}'."))
}

/// Copies `src` into the front of `dst` (TFLite's `FlatBufferIntVectorToArray`); more
/// entries than `dst` holds is an error. Returns the count as the struct's `int`.
fn copy_ints<'a, T, const N: usize>(
    src: flatbuffers::Vector<'a, T>,
    dst: &mut [T::Inner; N],
    op_name: &str,
) -> Result<c_int>
where
    T: flatbuffers::Follow<'a> + 'a,
{
    if src.len() > N {
        return Err(too_many(op_name));
    }
    for (slot, v) in dst.iter_mut().zip(src.iter()) {
        *slot = v;
    }
    Ok(src.len() as c_int) // <= N <= 20
}

/// Like `copy_ints`, for a list that must be present.
fn copy_required<'a, T, const N: usize>(
    src: Option<flatbuffers::Vector<'a, T>>,
    dst: &mut [T::Inner; N],
    op_name: &str,
) -> Result<c_int>
where
    T: flatbuffers::Follow<'a> + 'a,
{
    copy_ints(src.ok_or_else(|| not_provided(op_name))?, dst, op_name)
}

// ---------------------------------------------------------------------------------------
// Parsers with more than field copies
// ---------------------------------------------------------------------------------------

fn parse_lstm(op: &fb::Operator<'_>, name: &str) -> Result<*mut c_void> {
    let Some(o) = op.builtin_options_as_lstmoptions() else {
        return Err(Error::new("No valid LSTM builtin options exist"));
    };
    let mut p = CParams::<TfLiteLSTMParams>::zeroed()?;
    p.activation = activation(o.fused_activation_function(), name)?;
    p.cell_clip = o.cell_clip();
    p.proj_clip = o.proj_clip();
    p.kernel_type = match o.kernel_type() {
        fb::LSTMKernelType::FULL => TfLiteLSTMKernelType::kTfLiteLSTMFullKernel,
        fb::LSTMKernelType::BASIC => TfLiteLSTMKernelType::kTfLiteLSTMBasicKernel,
        other => return Err(unsupported("LSTM kernel type", other.0, name)),
    };
    p.asymmetric_quantize_inputs = o.asymmetric_quantize_inputs();
    Ok(p.into_raw())
}

fn parse_bucketize(op: &fb::Operator<'_>, name: &str) -> Result<*mut c_void> {
    let mut p = CParams::<TfLiteBucketizeParams>::zeroed()?;
    if let Some(o) = op.builtin_options_as_bucketize_options() {
        // Re-read the `[float]` field as `[ubyte]` to get the address of its first element
        // without forming a `&[f32]`: the buffer only guarantees 4-byte alignment relative
        // to its own start. Viewed as bytes the length is the element count, so the slice
        // is an in-bounds prefix of the floats.
        let bytes = o._tab.get::<flatbuffers::ForwardsUOffset<flatbuffers::Vector<'_, u8>>>(
            fb::BucketizeOptions::VT_BOUNDARIES,
            None,
        );
        let Some(bytes) = bytes else {
            return Err(Error::new("boundaries array not provided for operation 'bucketize'."));
        };
        p.num_boundaries =
            c_int::try_from(bytes.len()).map_err(|_| Error::new(format!("Too many boundaries in {name}")))?;
        p.boundaries = bytes.safe_slice().as_ptr().cast::<f32>();
    }
    Ok(p.into_raw())
}

fn parse_stablehlo_scatter(op: &fb::Operator<'_>) -> Result<*mut c_void> {
    const N: &str = "stablehlo_scatter";
    let mut p = CParams::<TfLiteStablehloScatterParams>::zeroed()?;
    if let Some(o) = op.builtin_options_2_as_stablehlo_scatter_options() {
        p.indices_are_sorted = o.indices_are_sorted();
        if let Some(v) = o.update_window_dims() {
            p.num_update_window_dims = copy_ints(v, &mut p.update_window_dims, N)?;
        }
        if let Some(v) = o.inserted_window_dims() {
            p.num_inserted_window_dims = copy_ints(v, &mut p.inserted_window_dims, N)?;
        }
        if let Some(v) = o.scatter_dims_to_operand_dims() {
            p.num_scatter_dims_to_operand_dims = copy_ints(v, &mut p.scatter_dims_to_operand_dims, N)?;
        }
        p.index_vector_dim = o.index_vector_dim();
        p.unique_indices = o.unique_indices();
        p.update_computation_subgraph_index = o.update_computation_subgraph_index();
    }
    Ok(p.into_raw())
}

fn parse_stablehlo_gather(op: &fb::Operator<'_>) -> Result<*mut c_void> {
    const N: &str = "stablehlo_gather";
    let mut p = CParams::<TfLiteStablehloGatherParams>::zeroed()?;
    if let Some(o) = op.builtin_options_2_as_stablehlo_gather_options() {
        // TFLite dereferences these lists unconditionally: each one is required.
        p.num_offset_dims = copy_required(o.offset_dims(), &mut p.offset_dims, N)?;
        p.num_collapsed_slice_dims = copy_required(o.collapsed_slice_dims(), &mut p.collapsed_slice_dims, N)?;
        p.num_start_index_map = copy_required(o.start_index_map(), &mut p.start_index_map, N)?;
        p.index_vector_dim = o.index_vector_dim();
        p.num_slice_sizes = copy_required(o.slice_sizes(), &mut p.slice_sizes, N)?;
        p.indices_are_sorted = o.indices_are_sorted();
    }
    Ok(p.into_raw())
}

fn parse_stablehlo_reduce_window(op: &fb::Operator<'_>) -> Result<*mut c_void> {
    const N: &str = "stablehlo.reduce_window";
    let Some(o) = op.builtin_options_2_as_stablehlo_reduce_window_options() else {
        return Err(Error::new("Could not get 'stablehlo.reduce_window' operation parameters."));
    };
    let rank = match o.window_dimensions() {
        Some(v) if !v.is_empty() => v.len(),
        _ => {
            return Err(Error::new(
                "'window_dimensions' attribute is not optional for 'stablehlo.reduce_window' \
                 and cannot be empty.",
            ));
        }
    };
    // A present, non-empty list must have `expected` entries; an absent or empty one
    // means `fill` everywhere.
    fn load<const L: usize>(
        dst: &mut [i64; L],
        src: Option<flatbuffers::Vector<'_, i64>>,
        attr: &str,
        expected: usize,
        fill: i64,
    ) -> Result<()> {
        match src {
            Some(v) if !v.is_empty() => {
                if v.len() != expected {
                    return Err(Error::new(format!(
                        "'{attr}' attribute of 'stablehlo.reduce_window' does not have the \
                         expected size ({} != {expected}).",
                        v.len()
                    )));
                }
                copy_ints(v, dst, N).map_err(|e| Error::new(format!("{} Check the '{attr}' attribute.", e.message)))?;
            }
            _ => dst.fill(fill),
        }
        Ok(())
    }
    let mut p = CParams::<TfLiteStablehloReduceWindowParams>::zeroed()?;
    load(&mut p.window_dimensions, o.window_dimensions(), "window_dimensions", rank, 1)?;
    load(&mut p.window_strides, o.window_strides(), "window_strides", rank, 1)?;
    load(&mut p.base_dilations, o.base_dilations(), "base_dilations", rank, 1)?;
    load(&mut p.window_dilations, o.window_dilations(), "window_dilations", rank, 1)?;
    load(&mut p.padding, o.padding(), "padding", 2 * rank, 0)?;
    p.body_subgraph_index = o.body_subgraph_index();
    Ok(p.into_raw())
}

fn parse_stablehlo_pad(op: &fb::Operator<'_>) -> Result<*mut c_void> {
    const N: &str = "stablehlo.pad";
    let Some(o) = op.builtin_options_2_as_stablehlo_pad_options() else {
        return Err(Error::new("Could not get 'stablehlo.pad' operation parameters."));
    };
    let mut p = CParams::<TfLiteStablehloPadParams>::zeroed()?;
    let check = |attr: &'static str| move |e: Error| Error::new(format!("{} Check the '{attr}' attribute.", e.message));
    let low = copy_required(o.edge_padding_low(), &mut p.edge_padding_low, N).map_err(check("edge_padding_low"))?;
    let high = copy_required(o.edge_padding_high(), &mut p.edge_padding_high, N).map_err(check("edge_padding_high"))?;
    let interior =
        copy_required(o.interior_padding(), &mut p.interior_padding, N).map_err(check("interior_padding"))?;
    if low != high || low != interior {
        return Err(Error::new("'stablehlo.pad' operation parameter array sizes are not consistent."));
    }
    Ok(p.into_raw())
}

fn parse_stablehlo_composite(op: &fb::Operator<'_>) -> Result<*mut c_void> {
    let Some(o) = op.builtin_options_2_as_stable_hlocomposite_options() else {
        return Err(Error::new("Could not get 'stablehlo.composite' operation parameters."));
    };
    // TFLite dereferences the name unconditionally: a composite must have one.
    let Some(name) = o.name() else {
        return Err(Error::new("'stablehlo.composite' operation has no name."));
    };
    let mut p = CParams::<TfLiteStablehloCompositeParams>::zeroed()?;
    // NUL-terminated in the buffer (verified), so a valid C string.
    p.name = name.as_ptr().cast::<c_char>();
    p.version = o.version();
    p.subgraph_index = o.decomposition_subgraph_index();
    if let Some(attrs) = o.composite_attributes() {
        p.attributes = attrs.as_ptr();
        p.attributes_size = attrs.len();
    }
    Ok(p.into_raw())
}

fn parse_stablehlo_case(op: &fb::Operator<'_>) -> Result<*mut c_void> {
    const N: &str = "stablehlo.case";
    let Some(o) = op.builtin_options_2_as_stablehlo_case_options() else {
        return Err(Error::new("Could not get 'stablehlo.case' operation parameters."));
    };
    let mut p = CParams::<TfLiteStablehloCaseParams>::zeroed()?;
    let n = copy_required(o.branch_subgraph_indices(), &mut p.branch_subgraph_indices, N)
        .map_err(|e| Error::new(format!("{} Check the 'branch subgraph indices' attribute.", e.message)))?;
    p.num_branches = n as u32; // 0..=20
    Ok(p.into_raw())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flatbuffers::{FlatBufferBuilder, UnionWIPOffset, WIPOffset};

    /// Builds a one-operator flatbuffer with the given options.
    fn build(fill: impl FnOnce(&mut FlatBufferBuilder<'static>) -> fb::OperatorArgs<'static>) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let args = fill(&mut fbb);
        let op = fb::Operator::create(&mut fbb, &args);
        fbb.finish(op, None);
        fbb.finished_data().to_vec()
    }

    fn with_options(kind: fb::BuiltinOptions, table: WIPOffset<UnionWIPOffset>) -> fb::OperatorArgs<'static> {
        fb::OperatorArgs { builtin_options_type: kind, builtin_options: Some(table), ..Default::default() }
    }

    fn with_options_2(kind: fb::BuiltinOptions2, table: WIPOffset<UnionWIPOffset>) -> fb::OperatorArgs<'static> {
        fb::OperatorArgs { builtin_options_2_type: kind, builtin_options_2: Some(table), ..Default::default() }
    }

    /// A parsed struct, freed with `libc::free` like the interpreter does.
    struct Parsed(*mut c_void);

    impl Parsed {
        fn get<T>(&self) -> &T {
            assert!(!self.0.is_null());
            // SAFETY: non-null, and the test names the struct the op's parser allocates.
            unsafe { &*self.0.cast::<T>() }
        }
    }

    impl Drop for Parsed {
        fn drop(&mut self) {
            // SAFETY: the pointer came from `parse_builtin_options` (calloc) or is NULL.
            unsafe { libc::free(self.0) }
        }
    }

    fn parse(code: Op, buf: &[u8]) -> Result<Parsed> {
        let op = flatbuffers::root::<fb::Operator>(buf).expect("test model verifies");
        parse_builtin_options(code, &op).map(Parsed)
    }

    fn parse_err(code: Op, buf: &[u8]) -> String {
        match parse(code, buf) {
            Ok(_) => panic!("{} parsed, expected an error", code.name()),
            Err(e) => e.message,
        }
    }

    fn no_options() -> Vec<u8> {
        build(|_| fb::OperatorArgs::default())
    }

    #[test]
    fn conv_2d_with_options() {
        let buf = build(|fbb| {
            let o = fb::Conv2DOptions::create(
                fbb,
                &fb::Conv2DOptionsArgs {
                    padding: fb::Padding::VALID,
                    stride_w: 2,
                    stride_h: 3,
                    fused_activation_function: fb::ActivationFunctionType::RELU,
                    dilation_w_factor: 4,
                    dilation_h_factor: 5,
                    quantized_bias_type: fb::TensorType::INT64,
                },
            );
            with_options(fb::BuiltinOptions::Conv2DOptions, o.as_union_value())
        });
        let p = parse(Op::kTfLiteBuiltinConv2d, &buf).unwrap();
        assert_eq!(
            *p.get::<TfLiteConvParams>(),
            TfLiteConvParams {
                padding: TfLitePadding::kTfLitePaddingValid,
                stride_width: 2,
                stride_height: 3,
                activation: TfLiteFusedActivation::kTfLiteActRelu,
                dilation_width_factor: 4,
                dilation_height_factor: 5,
                quantized_bias_type: TfLiteType::kTfLiteInt64,
            }
        );
    }

    #[test]
    fn conv_2d_empty_table_gets_schema_defaults() {
        let buf = build(|fbb| {
            let o = fb::Conv2DOptions::create(fbb, &Default::default());
            with_options(fb::BuiltinOptions::Conv2DOptions, o.as_union_value())
        });
        let p = parse(Op::kTfLiteBuiltinConv2d, &buf).unwrap();
        let p = p.get::<TfLiteConvParams>();
        assert_eq!(p.padding, TfLitePadding::kTfLitePaddingSame);
        assert_eq!((p.dilation_width_factor, p.dilation_height_factor), (1, 1));
        assert_eq!(p.quantized_bias_type, TfLiteType::kTfLiteFloat32);
    }

    #[test]
    fn depthwise_without_options_is_zeroed_as_in_tflite() {
        // ParseDepthwiseConv2D fills nothing when the table is absent.
        let p = parse(Op::kTfLiteBuiltinDepthwiseConv2d, &no_options()).unwrap();
        assert_eq!(*p.get::<TfLiteDepthwiseConvParams>(), TfLiteDepthwiseConvParams::default());
        assert_eq!(p.get::<TfLiteDepthwiseConvParams>().dilation_width_factor, 0);
    }

    #[test]
    fn depthwise_with_empty_table_gets_dilation_1() {
        let buf = build(|fbb| {
            let o = fb::DepthwiseConv2DOptions::create(fbb, &Default::default());
            with_options(fb::BuiltinOptions::DepthwiseConv2DOptions, o.as_union_value())
        });
        let p = parse(Op::kTfLiteBuiltinDepthwiseConv2d, &buf).unwrap();
        let p = p.get::<TfLiteDepthwiseConvParams>();
        assert_eq!((p.dilation_width_factor, p.dilation_height_factor), (1, 1));
        assert_eq!((p.stride_width, p.stride_height, p.depth_multiplier), (0, 0, 0));
        assert_eq!(p.padding, TfLitePadding::kTfLitePaddingSame);
    }

    fn reshape(dims: &[i32]) -> Vec<u8> {
        build(|fbb| {
            let v = fbb.create_vector(dims);
            let o = fb::ReshapeOptions::create(fbb, &fb::ReshapeOptionsArgs { new_shape: Some(v) });
            with_options(fb::BuiltinOptions::ReshapeOptions, o.as_union_value())
        })
    }

    #[test]
    fn reshape_with_eight_dims() {
        let p = parse(Op::kTfLiteBuiltinReshape, &reshape(&[1, 2, 3, 4, 5, 6, 7, 8])).unwrap();
        let p = p.get::<TfLiteReshapeParams>();
        assert_eq!(p.num_dimensions, 8);
        assert_eq!(p.shape, [1, 2, 3, 4, 5, 6, 7, 8]);
        let p = parse(Op::kTfLiteBuiltinReshape, &reshape(&[-1])).unwrap();
        assert_eq!(p.get::<TfLiteReshapeParams>().num_dimensions, 1);
    }

    #[test]
    fn reshape_with_nine_dims_is_an_error() {
        let msg = parse_err(Op::kTfLiteBuiltinReshape, &reshape(&[1; 9]));
        assert_eq!(msg, "Found too many dimensions in the input array of operation 'reshape'.");
    }

    #[test]
    fn squeeze_dims() {
        let squeeze = |dims: &[i32]| {
            build(|fbb| {
                let v = fbb.create_vector(dims);
                let o = fb::SqueezeOptions::create(fbb, &fb::SqueezeOptionsArgs { squeeze_dims: Some(v) });
                with_options(fb::BuiltinOptions::SqueezeOptions, o.as_union_value())
            })
        };
        let p = parse(Op::kTfLiteBuiltinSqueeze, &squeeze(&[0, 2])).unwrap();
        let p = p.get::<TfLiteSqueezeParams>();
        assert_eq!((p.num_squeeze_dims, &p.squeeze_dims[..2]), (2, &[0, 2][..]));
        let msg = parse_err(Op::kTfLiteBuiltinSqueeze, &squeeze(&[0; 9]));
        assert!(msg.contains("'squeeze'"), "{msg}");
    }

    #[test]
    fn add_with_fused_relu6() {
        let buf = build(|fbb| {
            let o = fb::AddOptions::create(
                fbb,
                &fb::AddOptionsArgs {
                    fused_activation_function: fb::ActivationFunctionType::RELU6,
                    ..Default::default()
                },
            );
            with_options(fb::BuiltinOptions::AddOptions, o.as_union_value())
        });
        let p = parse(Op::kTfLiteBuiltinAdd, &buf).unwrap();
        let p = p.get::<TfLiteAddParams>();
        assert_eq!(p.activation, TfLiteFusedActivation::kTfLiteActRelu6);
        assert!(p.pot_scale_int16, "schema default of a present table");
    }

    #[test]
    fn add_carrying_conv_options_gets_zeroed_params() {
        let buf = build(|fbb| {
            let o = fb::Conv2DOptions::create(
                fbb,
                &fb::Conv2DOptionsArgs {
                    fused_activation_function: fb::ActivationFunctionType::RELU6,
                    ..Default::default()
                },
            );
            with_options(fb::BuiltinOptions::Conv2DOptions, o.as_union_value())
        });
        let p = parse(Op::kTfLiteBuiltinAdd, &buf).unwrap();
        assert_eq!(*p.get::<TfLiteAddParams>(), TfLiteAddParams::default());
    }

    #[test]
    fn out_of_range_enums_are_errors() {
        let conv = |padding: i8, act: i8| {
            build(move |fbb| {
                let o = fb::Conv2DOptions::create(
                    fbb,
                    &fb::Conv2DOptionsArgs {
                        padding: fb::Padding(padding),
                        fused_activation_function: fb::ActivationFunctionType(act),
                        ..Default::default()
                    },
                );
                with_options(fb::BuiltinOptions::Conv2DOptions, o.as_union_value())
            })
        };
        assert_eq!(parse_err(Op::kTfLiteBuiltinConv2d, &conv(7, 0)), "Unsupported padding type 7 in CONV_2D");
        assert_eq!(
            parse_err(Op::kTfLiteBuiltinConv2d, &conv(0, 6)),
            "Unsupported fused activation function 6 in CONV_2D"
        );
        let cast = build(|fbb| {
            let o = fb::CastOptions::create(
                fbb,
                &fb::CastOptionsArgs { in_data_type: fb::TensorType::INT8, out_data_type: fb::TensorType(99) },
            );
            with_options(fb::BuiltinOptions::CastOptions, o.as_union_value())
        });
        assert_eq!(parse_err(Op::kTfLiteBuiltinCast, &cast), "Unsupported data type 99 in CAST");
        let fc = build(|fbb| {
            let o = fb::FullyConnectedOptions::create(
                fbb,
                &fb::FullyConnectedOptionsArgs {
                    weights_format: fb::FullyConnectedOptionsWeightsFormat(2),
                    ..Default::default()
                },
            );
            with_options(fb::BuiltinOptions::FullyConnectedOptions, o.as_union_value())
        });
        assert!(parse_err(Op::kTfLiteBuiltinFullyConnected, &fc).contains("weights format 2"));
    }

    #[test]
    fn lstm_requires_its_options() {
        assert_eq!(parse_err(Op::kTfLiteBuiltinLstm, &no_options()), "No valid LSTM builtin options exist");
        let buf = build(|fbb| {
            let o = fb::LSTMOptions::create(
                fbb,
                &fb::LSTMOptionsArgs {
                    cell_clip: 2.5,
                    kernel_type: fb::LSTMKernelType::BASIC,
                    fused_activation_function: fb::ActivationFunctionType::TANH,
                    ..Default::default()
                },
            );
            with_options(fb::BuiltinOptions::LSTMOptions, o.as_union_value())
        });
        let p = parse(Op::kTfLiteBuiltinLstm, &buf).unwrap();
        let p = p.get::<TfLiteLSTMParams>();
        assert_eq!(p.cell_clip, 2.5);
        assert_eq!(p.kernel_type, TfLiteLSTMKernelType::kTfLiteLSTMBasicKernel);
        assert_eq!(p.activation, TfLiteFusedActivation::kTfLiteActTanh);
    }

    #[test]
    fn ops_without_params_give_null() {
        for code in [
            Op::kTfLiteBuiltinRelu,
            Op::kTfLiteBuiltinPad,
            Op::kTfLiteBuiltinTranspose,
            Op::kTfLiteBuiltinCustom,
            Op::kTfLiteBuiltinCall,
            Op::kTfLiteBuiltinStablehloAdd,
            Op::kTfLiteBuiltinStablehloShiftLeft,
            Op::kTfLiteBuiltinHashtableLookup,
        ] {
            assert!(parse(code, &no_options()).unwrap().0.is_null(), "{}", code.name());
        }
        assert_eq!(parse_err(Op::kTfLiteBuiltinDelegate, &no_options()), "DELEGATE op shouldn't exist in model.");
        parse_err(Op::kTfLiteBuiltinPlaceholderForGreaterOpCodes, &no_options());
    }

    #[test]
    fn unique_and_random_follow_tflite() {
        let unique = |t| {
            build(move |fbb| {
                let o = fb::UniqueOptions::create(fbb, &fb::UniqueOptionsArgs { idx_out_type: t });
                with_options(fb::BuiltinOptions::UniqueOptions, o.as_union_value())
            })
        };
        let p = parse(Op::kTfLiteBuiltinUnique, &unique(fb::TensorType::INT64)).unwrap();
        assert_eq!(p.get::<TfLiteUniqueParams>().index_out_type, TfLiteType::kTfLiteInt64);
        let p = parse(Op::kTfLiteBuiltinUnique, &unique(fb::TensorType::FLOAT32)).unwrap();
        assert_eq!(p.get::<TfLiteUniqueParams>().index_out_type, TfLiteType::kTfLiteInt32);

        let buf = build(|fbb| {
            let o = fb::RandomOptions::create(fbb, &fb::RandomOptionsArgs { seed: (1 << 32) + 7, seed2: -3 });
            with_options(fb::BuiltinOptions::RandomOptions, o.as_union_value())
        });
        let p = parse(Op::kTfLiteBuiltinRandomUniform, &buf).unwrap();
        assert_eq!(*p.get::<TfLiteRandomParams>(), TfLiteRandomParams { seed: 7, seed2: -3 });
    }

    #[test]
    fn bucketize_and_var_handle_point_into_the_model() {
        let buf = build(|fbb| {
            let v = fbb.create_vector(&[0.5f32, 1.5, 9.0]);
            let o = fb::BucketizeOptions::create(fbb, &fb::BucketizeOptionsArgs { boundaries: Some(v) });
            with_options(fb::BuiltinOptions::BucketizeOptions, o.as_union_value())
        });
        let p = parse(Op::kTfLiteBuiltinBucketize, &buf).unwrap();
        let p = p.get::<TfLiteBucketizeParams>();
        assert_eq!(p.num_boundaries, 3);
        let range = buf.as_ptr_range();
        assert!(range.contains(&p.boundaries.cast::<u8>()));
        // SAFETY: three floats at `boundaries`, inside `buf` (checked above).
        let last = unsafe { p.boundaries.add(2).read_unaligned() };
        assert_eq!(last, 9.0);
        let empty = build(|fbb| {
            let o = fb::BucketizeOptions::create(fbb, &Default::default());
            with_options(fb::BuiltinOptions::BucketizeOptions, o.as_union_value())
        });
        assert!(parse_err(Op::kTfLiteBuiltinBucketize, &empty).contains("boundaries"));

        let buf = build(|fbb| {
            let s = fbb.create_string("var0");
            let o =
                fb::VarHandleOptions::create(fbb, &fb::VarHandleOptionsArgs { container: None, shared_name: Some(s) });
            with_options(fb::BuiltinOptions::VarHandleOptions, o.as_union_value())
        });
        let p = parse(Op::kTfLiteBuiltinVarHandle, &buf).unwrap();
        let p = p.get::<TfLiteVarHandleParams>();
        assert!(p.container.is_null());
        // SAFETY: a flatbuffer string is NUL-terminated inside `buf`.
        let name = unsafe { core::ffi::CStr::from_ptr(p.shared_name) };
        assert_eq!(name.to_str(), Ok("var0"));
    }

    #[test]
    fn stablehlo_lists() {
        let case = |n: usize| {
            build(move |fbb| {
                let v = fbb.create_vector(&vec![3i32; n]);
                let o = fb::StablehloCaseOptions::create(
                    fbb,
                    &fb::StablehloCaseOptionsArgs { branch_subgraph_indices: Some(v) },
                );
                with_options_2(fb::BuiltinOptions2::StablehloCaseOptions, o.as_union_value())
            })
        };
        let p = parse(Op::kTfLiteBuiltinStablehloCase, &case(20)).unwrap();
        assert_eq!(p.get::<TfLiteStablehloCaseParams>().num_branches, 20);
        assert!(parse_err(Op::kTfLiteBuiltinStablehloCase, &case(21)).contains("'stablehlo.case'"));
        parse_err(Op::kTfLiteBuiltinStablehloCase, &no_options());

        let pad = |low: &[i64], high: &[i64], interior: &[i64]| {
            build(|fbb| {
                let (l, h, i) = (fbb.create_vector(low), fbb.create_vector(high), fbb.create_vector(interior));
                let o = fb::StablehloPadOptions::create(
                    fbb,
                    &fb::StablehloPadOptionsArgs {
                        edge_padding_low: Some(l),
                        edge_padding_high: Some(h),
                        interior_padding: Some(i),
                    },
                );
                with_options_2(fb::BuiltinOptions2::StablehloPadOptions, o.as_union_value())
            })
        };
        let p = parse(Op::kTfLiteBuiltinStablehloPad, &pad(&[1, 2], &[3, 4], &[0, 1])).unwrap();
        assert_eq!(p.get::<TfLiteStablehloPadParams>().edge_padding_high[..2], [3, 4]);
        assert!(parse_err(Op::kTfLiteBuiltinStablehloPad, &pad(&[1, 2], &[3], &[0, 1])).contains("not consistent"));

        let window = build(|fbb| {
            let dims = fbb.create_vector(&[2i64, 2]);
            let strides = fbb.create_vector(&[1i64, 2]);
            let o = fb::StablehloReduceWindowOptions::create(
                fbb,
                &fb::StablehloReduceWindowOptionsArgs {
                    window_dimensions: Some(dims),
                    window_strides: Some(strides),
                    body_subgraph_index: 4,
                    ..Default::default()
                },
            );
            with_options_2(fb::BuiltinOptions2::StablehloReduceWindowOptions, o.as_union_value())
        });
        let p = parse(Op::kTfLiteBuiltinStablehloReduceWindow, &window).unwrap();
        let p = p.get::<TfLiteStablehloReduceWindowParams>();
        assert_eq!(p.window_dimensions[..2], [2, 2]);
        assert_eq!(p.window_strides[..2], [1, 2]);
        assert_eq!(p.base_dilations, [1; 8]);
        assert_eq!(p.padding, [0; 16]);
        assert_eq!(p.body_subgraph_index, 4);

        let scatter = build(|fbb| {
            let v = fbb.create_vector(&[0i64; 9]);
            let o = fb::StablehloScatterOptions::create(
                fbb,
                &fb::StablehloScatterOptionsArgs { update_window_dims: Some(v), ..Default::default() },
            );
            with_options_2(fb::BuiltinOptions2::StablehloScatterOptions, o.as_union_value())
        });
        assert!(parse_err(Op::kTfLiteBuiltinStablehloScatter, &scatter).contains("too many"));
    }

    /// Every op code with every options type (as an empty table), and with none: no panic,
    /// and every returned struct can be freed.
    #[test]
    fn every_op_with_any_options_never_panics() {
        let empty_with = |kind: u8, second: bool| {
            build(move |fbb| {
                let start = fbb.start_table();
                let table = WIPOffset::<UnionWIPOffset>::new(fbb.end_table(start).value());
                if second {
                    with_options_2(fb::BuiltinOptions2(kind), table)
                } else {
                    with_options(fb::BuiltinOptions(kind), table)
                }
            })
        };
        let mut bufs = vec![no_options()];
        bufs.extend((1..=fb::BuiltinOptions::ENUM_MAX).map(|k| empty_with(k, false)));
        bufs.extend((1..=fb::BuiltinOptions2::ENUM_MAX).map(|k| empty_with(k, true)));
        let mut with_params = 0;
        for code in (0..=Op::MAX).filter_map(Op::from_raw) {
            for buf in &bufs {
                if let Ok(p) = parse(code, buf) {
                    with_params += usize::from(!p.0.is_null());
                }
            }
        }
        assert!(with_params > 0);
    }
}
