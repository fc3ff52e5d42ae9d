//! The panic boundary. Every function the runtime exports to C or hands to C as a
//! callback runs its body through `guard` (or `catch_panic`, when the caller decides
//! itself what a panic becomes): a panic is caught here and nowhere else, its message
//! goes to an error reporter, and C gets the function's error value.
//!
//! What a reporter receives: "internal error: {place} panicked: {message}", where
//! `place` names the function (a C API entry point, a context callback, "kernel", ...)
//! and `message` is the panic's text (panics with a payload other than a string say no
//! more than "internal error: {place} panicked").

use core::any::Any;
use core::fmt::{self, Display};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `body`; a panic becomes `Err` holding the text an error reporter should get.
///
/// The body's captures are asserted unwind-safe: after a panic the callers only report
/// and return an error value, and any state the body may have left half-updated is
/// dropped or reset by them (a kernel's prepared state, for example).
pub(crate) fn catch_panic<R>(place: impl Display, body: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(|| {
        #[cfg(test)]
        test_hook::fire(&place);
        body()
    }))
    .map_err(|payload| panic_text(&place, payload.as_ref()))
}

/// Runs `body`; a panic is reported to `report` and becomes `default`.
pub(crate) fn guard<R>(place: impl Display, default: R, report: impl FnOnce(&str), body: impl FnOnce() -> R) -> R {
    match catch_panic(&place, body) {
        Ok(v) => v,
        Err(text) => {
            // A reporter that panics in turn must not unwind into C either; there is
            // nobody left to tell.
            let _ = catch_unwind(AssertUnwindSafe(|| report(&text)));
            default
        }
    }
}

/// "internal error: {place} panicked", with the panic's message when it has one (the
/// payload of `panic!` is a `&str` or a `String`).
fn panic_text(place: impl Display, payload: &(dyn Any + Send)) -> String {
    let message =
        payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str));
    match message {
        Some(m) => format!("internal error: {place} panicked: {m}"),
        None => format!("internal error: {place} panicked"),
    }
}

/// The name of the function `fn_name!()` is written in, for panic reports.
///
/// Holds the full type path of a marker function nested in it; the path is only trimmed
/// to the function's own name when it is displayed (after a panic), so entry points pay
/// nothing for it.
#[derive(Clone, Copy)]
pub(crate) struct FnName(pub(crate) &'static str);

impl Display for FnName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.0.strip_suffix("::__fn_name_marker").unwrap_or(self.0);
        f.write_str(path.rsplit("::").next().unwrap_or(path))
    }
}

/// `FnName` of the enclosing function (std has no `function!()`: the type name of an
/// item nested in a function is prefixed with that function's path).
macro_rules! fn_name {
    () => {{
        fn __fn_name_marker() {}
        $crate::ffi::FnName(::std::any::type_name_of_val(&__fn_name_marker))
    }};
}
pub(crate) use fn_name;

/// Test-only: makes the boundary at a given place panic, so tests can check where a
/// panic's message ends up without a way to make the real code panic.
#[cfg(test)]
pub(crate) mod test_hook {
    use core::fmt::Display;
    use std::cell::RefCell;

    thread_local! {
        static PANIC_AT: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    /// The next boundary at `place` on this thread panics with "injected panic" before
    /// running its body.
    pub(crate) fn panic_next_at(place: &str) {
        PANIC_AT.with_borrow_mut(|p| *p = Some(place.to_string()));
    }

    pub(super) fn fire(place: &dyn Display) {
        let hit = PANIC_AT.with_borrow_mut(|p| {
            let hit = p.as_deref().is_some_and(|target| place.to_string() == target);
            if hit {
                *p = None;
            }
            hit
        });
        if hit {
            panic!("injected panic");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn a_panic_becomes_the_default_and_its_message_is_reported() {
        let got = RefCell::new(Vec::new());
        let r =
            guard("TfLiteSomething", -1, |m| got.borrow_mut().push(m.to_string()), || -> i32 { panic!("bad {}", 7) });
        assert_eq!(r, -1);
        assert_eq!(*got.borrow(), ["internal error: TfLiteSomething panicked: bad 7"]);
        let r = guard("x", 0, |_| unreachable!("no panic, no report"), || 5);
        assert_eq!(r, 5);
    }

    #[test]
    fn payloads_without_text_and_panicking_reporters() {
        let text = catch_panic::<()>("kernel", || std::panic::panic_any(7u8)).unwrap_err();
        assert_eq!(text, "internal error: kernel panicked");
        let text = catch_panic::<()>("kernel", || panic!("static text")).unwrap_err();
        assert_eq!(text, "internal error: kernel panicked: static text");
        // The reporter's own panic stays inside the boundary.
        assert_eq!(guard("x", 3, |_| panic!("reporter"), || -> i32 { panic!("body") }), 3);
    }

    #[test]
    fn fn_name_names_the_enclosing_function() {
        fn entry_point() -> FnName {
            fn_name!()
        }
        assert_eq!(entry_point().to_string(), "entry_point");
        assert_eq!(FnName("plain").to_string(), "plain");
    }

    #[test]
    fn the_test_hook_fires_once_at_its_place() {
        test_hook::panic_next_at("here");
        assert_eq!(catch_panic("elsewhere", || 1), Ok(1));
        assert_eq!(catch_panic("here", || 1), Err("internal error: here panicked: injected panic".to_string()));
        assert_eq!(catch_panic("here", || 1), Ok(1));
    }
}
