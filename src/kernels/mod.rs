//! Builtin CPU kernels. Each op lives in `ops/<op>.rs` and exposes
//! `pub fn registration() -> TfLiteRegistration`; the resolver's table
//! (`crate::resolver::builtin`) lists them with their version ranges.
//! Shared maths (quantization, activations) and the kernels' thread pool live beside
//! `api.rs`.

pub mod activation;
pub mod api;
pub mod binary;
pub mod broadcast;
pub mod cancel;
pub mod fixed_point;
pub mod flexbuffer;
pub mod float_conv;
pub mod graph;
pub mod kernel;
pub mod ops;
pub mod quant;
pub mod resources;
pub mod shape_util;
#[cfg(test)]
mod temporaries_tests;
#[cfg(test)]
pub(crate) mod test_util;
pub mod threadpool;
