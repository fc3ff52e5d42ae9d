//! Builtin op kernels: one file per op (or op family), each a pure function on slices
//! (testable without a context) plus thin `prepare` / `eval` glue behind a
//! `TfLiteRegistration`. Helpers several ops share live one level up, in `kernels/`.

pub mod add;
pub mod mul;
pub mod relu;
pub mod sin;
pub mod sub;

pub mod arg_min_max;
pub mod arith;
pub mod cast;
pub mod compare;
pub mod concatenation;
pub mod elementwise;
pub mod elu;
pub mod fill;
pub mod gather;
pub mod hard_swish;
pub mod logistic;
pub mod pad;
pub mod prelu;
pub mod quantize;
pub mod reduce;
pub mod reshape;
pub mod select;
pub mod slice;
pub mod softmax;
pub mod split;
pub mod transpose;
pub mod conv_common;
pub mod conv_f32_gemm;
pub mod transpose_conv_f32_gemm;
pub mod conv_2d;
pub mod depthwise_conv_2d;
pub mod fully_connected_v2;
pub mod pooling;
pub mod control_flow;
pub mod variables;
pub mod lstm;
pub mod lstm_integer;
pub mod rnn;
pub mod resize;
pub mod transpose_conv;
pub mod batch_matmul;
pub mod space_depth;
pub mod mirror_pad;
pub mod gather_nd;
pub mod cumsum;
pub mod topk_v2;
pub mod one_hot;
pub mod normalization;
pub mod floor_div_mod;
pub mod add_n;
pub mod reverse;
pub mod embedding_lookup;
