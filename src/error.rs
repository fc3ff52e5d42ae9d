//! The crate's error type: a message, plus the `TfLiteStatus` it maps to at the C ABI.

use crate::abi::types::TfLiteStatus;
use std::fmt;

/// An error with a human-readable message, as TFLite reports through its error reporter.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// The status the C API returns for this error.
    pub status: TfLiteStatus,
    /// The message given to the error reporter.
    pub message: String,
}

impl Error {
    /// A runtime error (`kTfLiteError`).
    pub fn new(message: impl Into<String>) -> Error {
        Error { status: TfLiteStatus::kTfLiteError, message: message.into() }
    }

    /// An error with a specific status.
    pub fn with_status(status: TfLiteStatus, message: impl Into<String>) -> Error {
        Error { status, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Result with the crate's error.
pub type Result<T> = std::result::Result<T, Error>;

/// Returns early with a formatted `Error` (`kTfLiteError`).
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => { return Err($crate::error::Error::new(format!($($arg)*))) };
}

/// Returns early with a formatted error unless the condition holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => { if !($cond) { $crate::bail!($($arg)*); } };
}
