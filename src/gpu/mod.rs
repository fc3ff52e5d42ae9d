//! GPU support (issue 5): the OpenCL delegate's device-independent parts.
//!
//! - [`tuner`]: work-group ("local size") tuning — TFLite's candidate generators
//!   reproduced exactly, our deduplicated list, TFLite's single-shot selection and our
//!   median-based race with a baseline, tie rule and budgets, the persistent tuning cache,
//!   and the `wg-candidates` diagnostic command. Pure Rust with no OpenCL dependency:
//!   measurement sits behind [`tuner::Profiler`], so everything is testable without a GPU.
pub mod tuner;
