//! Cancellation that a long-running kernel can see.
//!
//! The interpreter checks its cancellation flag between nodes, which is enough when each
//! node is short. One node can run for seconds on a model that asks for it (a pooling
//! window far larger than the image is legal, and costs its full size per output), so
//! such kernels also poll the flag between output rows and stop with
//! `kTfLiteCancelled`. The interpreter publishes its flag for the thread running
//! Invoke ([`with_flag`]); a kernel takes a [`Cancel`] before it splits its work, and
//! every thread it hands work to polls that.

use crate::abi::types::TfLiteStatus;
use crate::error::Error;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    /// The cancellation flag of the Invoke running on this thread, if it has one.
    static FLAG: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Runs `f` with `flag` published to the kernels it calls on this thread (the previous
/// flag comes back afterwards, so nested subgraph calls keep their caller's).
pub fn with_flag<R>(flag: Option<Arc<AtomicBool>>, f: impl FnOnce() -> R) -> R {
    let previous = FLAG.with(|c| c.replace(flag));
    let r = f();
    FLAG.with(|c| *c.borrow_mut() = previous);
    r
}

/// What a kernel polls: the running Invoke's flag, or nothing.
#[derive(Clone, Default)]
pub struct Cancel(Option<Arc<AtomicBool>>);

impl Cancel {
    /// The flag of the Invoke running on this thread.
    pub fn current() -> Cancel {
        Cancel(FLAG.with(|c| c.borrow().clone()))
    }

    /// An error with `kTfLiteCancelled` if the client asked to cancel (the flag stays
    /// set, so the interpreter reports the cancellation too).
    pub fn check(&self) -> crate::error::Result<()> {
        match &self.0 {
            Some(f) if f.load(Ordering::Relaxed) => Err(cancelled()),
            _ => Ok(()),
        }
    }
}

/// The error of a cancelled Invoke (`kTfLiteCancelled`, TFLite's message).
pub fn cancelled() -> Error {
    Error::with_status(TfLiteStatus::kTfLiteCancelled, "Client requested cancel during Invoke()")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_published_flag_is_seen_and_restored() {
        assert!(Cancel::current().check().is_ok(), "no flag outside an Invoke");
        let flag = Arc::new(AtomicBool::new(false));
        with_flag(Some(flag.clone()), || {
            let c = Cancel::current();
            assert!(c.check().is_ok());
            flag.store(true, Ordering::Relaxed);
            assert_eq!(c.check().unwrap_err().status, TfLiteStatus::kTfLiteCancelled);
            with_flag(None, || assert!(Cancel::current().check().is_ok()));
            assert!(Cancel::current().check().is_err(), "the caller's flag is back");
        });
        assert!(Cancel::current().check().is_ok());
    }
}
