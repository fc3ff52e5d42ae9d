//! `#[repr(C)]` mirrors of TFLite's C types, and the malloc-compatible helpers that
//! create and free the arrays C code may free (or hand us to free).

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, reason = "TFLite's C names")]

pub mod arrays;
pub mod builtin_op_data;
pub mod builtin_ops;
pub mod operator;
pub mod types;

pub use types::*;
