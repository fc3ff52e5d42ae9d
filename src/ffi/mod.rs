//! The layer every function C calls into is built on: the C API entry points (`c_api`),
//! the `TfLiteContext` callbacks (`interpreter::context`), the builtin kernels'
//! trampolines (`kernels`) and the GPU delegate's callbacks (`gpu::delegate`).
//!
//! - `panic.rs`: the one panic boundary. A Rust panic must never unwind into C (an
//!   `extern "C"` function that unwinds aborts the process), so each of those functions
//!   runs its body through `guard` or `catch_panic`, which turn the panic into the
//!   function's error value and hand its message to an error reporter.
//! - `default.rs`: `FfiDefault`, the error value of each return type.
//! - `handle.rs`: the `Handle` trait and `try_ref!` / `try_mut!`: turning the pointers C
//!   passes in back into references, written once.
//!
//! It depends only on `abi` and std, so every layer above may use it.

pub(crate) mod default;
pub(crate) mod handle;
pub(crate) mod panic;

pub(crate) use default::FfiDefault;
pub(crate) use handle::{Handle, mut_from_ptr, ref_from_ptr, try_mut, try_ref};
pub(crate) use panic::{FnName, catch_panic, fn_name, guard};
