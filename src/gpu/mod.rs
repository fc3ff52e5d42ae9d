//! GPU support: TFLite's OpenCL GPU delegate, in Rust.
//!
//! - [`graph`]: nodes → kernel launches (checked lowering), elementwise fusion, device
//!   memory planning. Pure Rust, unit-tested without a device.
//! - [`cl`]: the OpenCL environment (through `opencl3`, loaded at run time) and compiled
//!   partitions; kernel sources are in `kernels/*.cl`.
//! - [`delegate`]: the `TfLiteDelegate` (Prepare, kernel init/prepare/invoke) and
//!   `TfLiteGpuDelegateOptionsV2`.
//! - [`tuner`]: work-group ("local size") tuning — TFLite's candidate generators
//!   reproduced exactly, our deduplicated list, TFLite's single-shot selection and our
//!   median-based race with a baseline, tie rule and budgets, the persistent tuning cache,
//!   and the `wg-candidates` diagnostic command. Measurement sits behind
//!   [`tuner::Profiler`], so the logic is testable without a GPU.
pub mod cl;
pub mod delegate;
pub mod graph;
pub mod tuner;
