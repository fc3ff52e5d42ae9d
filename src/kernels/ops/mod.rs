//! Builtin op kernels: one file per op (or op family), each a pure function on slices
//! (testable without a context) plus thin `prepare` / `eval` glue behind a
//! `TfLiteRegistration` made with `kernel_registration!`.
//!
//! `broadcast` (the shared N-d broadcasting loop) and `binary` (what ADD, SUB and MUL
//! share) are helpers, not ops.

pub mod binary;
pub mod broadcast;

pub mod add;
pub mod fully_connected;
pub mod mul;
pub mod relu;
pub mod sin;
pub mod sub;

#[cfg(test)]
pub(crate) mod test_util;
