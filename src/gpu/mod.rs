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
//!   median-based race with a baseline, tie rule and budgets, and the persistent tuning
//!   cache. Measurement sits behind [`tuner::Profiler`], so the logic is testable
//!   without a GPU. (The `wg-candidates` diagnostic command that prints the candidates
//!   is a binary, `src/bin/wg_candidates/`, not part of the library.)
pub mod cl;
pub mod delegate;
pub mod graph;
pub mod tuner;
