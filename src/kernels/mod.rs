//! Builtin CPU kernels. Each op lives in `ops/<op>.rs` and exposes
//! `pub fn registration() -> TfLiteRegistration`; the resolver's table
//! (`crate::resolver::builtin`) lists them with their version ranges.
//! Shared maths (quantization, activations) lives beside `api.rs`.

pub mod api;
pub mod quant;
pub mod activation;
pub mod ops;
#[cfg(test)]
mod temporaries_tests;
