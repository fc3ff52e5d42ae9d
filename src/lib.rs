//! A TensorFlow Lite 2.19 compatible runtime exposing TFLite's C API
//! (`libtensorflowlite_c.so`). See README.md for the layout; the module tree is:
//!
//! - `abi`: `#[repr(C)]` mirrors of TFLite's structs and enums (shared by every layer).
//! - `error`: the crate's one error type (a message and the `TfLiteStatus` it maps to),
//!   returned by every layer.
//! - `ffi`: what every function called from C is built on (C API entry points, context
//!   callbacks, kernel and delegate trampolines): the one panic boundary, each return
//!   type's error value, handle pointers turned into references.
//! - `model`: `.tflite` flatbuffer loading, verification and validation.
//! - `resolver`: op resolver with version ranges.
//! - `memory`: the arena planner.
//! - `delegate`: graph partitioning for delegates.
//! - `microkernels`: the innermost loops, one table per instruction set (scalar, AVX2+FMA).
//! - `kernels`: builtin CPU kernels.
//! - `interpreter`: subgraphs, tensors, nodes, execution.
//! - `gpu`: the OpenCL GPU delegate (lowering, OpenCL partitions, the delegate, the
//!   work-group tuner).
//! - `c_api`: the exported `extern "C"` functions (the only place with `no_mangle`).
//!
//! The binaries in `src/bin/` (benchmark, model makers, work-group candidate tool) are
//! development tools built on this library; their helpers live beside them, not here.

pub mod abi;
pub mod c_api;
pub mod delegate;
pub mod error;
pub(crate) mod ffi;
pub mod gpu;
pub mod interpreter;
pub mod kernels;
pub mod memory;
pub mod microkernels;
pub mod model;
pub mod resolver;
