//! `#[repr(C)]` mirrors of TFLite's C types, and the malloc-compatible helpers that
//! create and free the arrays C code may free (or hand us to free).

pub mod types;
pub mod arrays;
pub mod operator;
pub mod builtin_ops;
pub mod builtin_op_data;

pub use types::*;
