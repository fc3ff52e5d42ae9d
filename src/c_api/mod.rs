//! The C ABI: every exported `TfLite*` function, one TFLite header area per file.
//!
//! This is the only module with `#[unsafe(no_mangle)] extern "C"` entry points. Each
//! entry point:
//! - runs its body inside `ffi_boundary!` (a panic never unwinds into C; it turns into
//!   the function's documented error value, and its message is reported);
//! - checks every pointer argument for NULL before use (`try_ref!` / `try_mut!` for
//!   handles; Delete functions accept NULL);
//! - writes out-parameters only on success;
//! - reports errors to the interpreter's (or options', or model call's) error reporter,
//!   or to stderr when there is none, and returns TFLite's status.
//!
//! The `///` docs on each function are copied into the generated header by cbindgen,
//! and state who owns what.
//!
//! Layout:
//! - `ffi.rs`: `ffi_boundary!` / `ffi_delete!` (the panic boundary of `crate::ffi`),
//!   string/array helpers, error reporting.
//! - `error_reporter.rs`: C error-reporter callbacks as a Rust `Reporter`.
//! - `model.rs`, `options.rs`, `interpreter.rs`, `tensor.rs`, `signature.rs`: c_api.h
//!   and the interpreter half of c_api_experimental.h.
//! - `callback_resolver.rs`: the op-resolver callbacks of `TfLiteInterpreterOptions`.
//! - `operator.rs`: operator.h (`TfLiteOperator*`).
//! - `common.rs`: common.h helpers, version functions, delegate structs.
//! - `opaque.rs`: c_api_opaque.h (tensor / node / context accessors). The variadic
//!   `TfLiteOpaqueContextReportError{,Va}` live in `variadic.c`.
//!
//! Enum-typed parameters keep TFLite's enum types (the header must match TFLite's), so
//! passing a value outside the enum is undefined behaviour, as with any C enum parameter
//! a Rust function receives.

#![allow(non_snake_case, non_camel_case_types, non_upper_case_globals, reason = "TFLite C names")]
#![allow(
    clippy::missing_safety_doc,
    reason = "the safety contract of every entry point is the C API contract its doc states: each pointer is NULL or valid for the documented use"
)]

#[macro_use]
pub(crate) mod ffi;
pub mod callback_resolver;
pub mod common;
pub mod error_reporter;
pub mod gpu;
pub mod interpreter;
pub mod model;
pub mod opaque;
pub mod operator;
pub mod options;
pub mod signature;
pub mod tensor;
pub mod xnnpack;

// Symbol versions (VERS_1.0) come from tensorflowlite_c.lds via tools/linker/cc.
