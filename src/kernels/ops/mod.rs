//! Builtin op kernels: one file per op (or op family), each a pure function on slices
//! (testable without a context) plus thin `prepare` / `eval` glue behind a
//! `TfLiteRegistration`. Helpers several ops share live one level up, in `kernels/`.

pub mod add;
pub mod mul;
pub mod relu;
pub mod sin;
pub mod sub;

pub mod add_n;
pub mod arg_min_max;
pub mod arith;
pub mod batch_matmul;
pub mod cast;
pub mod compare;
pub mod concatenation;
pub mod control_flow;
pub mod conv_2d;
pub mod conv_common;
pub mod conv_f32_gemm;
pub mod conv_qs8_gemm;
pub mod cumsum;
pub mod depthwise_conv_2d;
pub mod elementwise;
pub mod elu;
pub mod embedding_lookup;
pub mod fill;
pub mod floor_div_mod;
pub mod fully_connected_v2;
pub mod gather;
pub mod gather_nd;
pub mod hard_swish;
pub mod logistic;
pub mod lstm;
pub mod lstm_integer;
pub mod mirror_pad;
pub mod normalization;
pub mod one_hot;
pub mod pad;
pub mod pooling;
pub mod prelu;
pub mod quantize;
pub mod reduce;
pub mod reshape;
pub mod resize;
pub mod reverse;
pub mod rnn;
pub mod select;
pub mod slice;
pub mod softmax;
pub mod space_depth;
pub mod split;
pub mod topk_v2;
pub mod transpose;
pub mod transpose_conv;
pub mod transpose_conv_f32_gemm;
pub mod variables;
