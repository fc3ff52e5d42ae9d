//! Op resolution: (builtin code | custom name, version) → `TfLiteRegistration`.
//!
//! `OpResolver` is TFLite's MutableOpResolver: builtin ops registered with a version
//! range (`add_builtin(op, reg, min, max)`, like TFLite's `AddBuiltin`) and custom ops by
//! name and version range. `builtin::builtin_op_resolver()` is the table of our kernels.
//! Anything that can answer a lookup implements `OpFinder`, so the C API can chain its
//! callback resolvers in front of the table.

pub mod builtin;
pub mod opcode;

use crate::abi::types::TfLiteRegistration;
use std::collections::HashMap;

/// Something that maps an operator (and version) to a registration.
pub trait OpFinder {
    /// The registration for builtin `code` at `version`, if supported.
    fn find_builtin(&self, code: i32, version: i32) -> Option<TfLiteRegistration>;
    /// The registration for custom op `name` at `version`, if known.
    fn find_custom(&self, name: &str, version: i32) -> Option<TfLiteRegistration>;
    /// The version ranges registered for builtin `code` (for error messages); empty when
    /// unknown or when the finder cannot list them (a C callback resolver).
    fn builtin_versions(&self, _code: i32) -> Vec<(i32, i32)> {
        Vec::new()
    }
}

/// `1..8`, or `1..3, 5` for ranges with a gap: the versions `ranges` cover, for messages.
pub fn describe_versions(ranges: &[(i32, i32)]) -> String {
    let mut r = ranges.to_vec();
    r.sort_unstable();
    let parts: Vec<String> =
        r.iter().map(|&(lo, hi)| if lo == hi { lo.to_string() } else { format!("{lo}..{hi}") }).collect();
    parts.join(", ")
}

#[derive(Clone)]
struct Entry {
    min: i32,
    max: i32,
    registration: TfLiteRegistration,
}

/// A mutable table of builtin and custom ops with version ranges.
#[derive(Clone, Default)]
pub struct OpResolver {
    builtins: HashMap<i32, Vec<Entry>>,
    customs: HashMap<String, Vec<Entry>>,
}

// SAFETY: registrations are tables of function pointers plus pointers to static or
// caller-owned (outliving) names/operators; the resolver never dereferences them.
unsafe impl Send for OpResolver {}
// SAFETY: as above; the resolver is read-only once built.
unsafe impl Sync for OpResolver {}

impl OpResolver {
    /// An empty resolver.
    pub fn new() -> OpResolver {
        OpResolver::default()
    }

    /// Registers `registration` for builtin `code`, versions `min..=max`. A later
    /// registration overrides an earlier one for the versions it covers.
    pub fn add_builtin(&mut self, code: i32, mut registration: TfLiteRegistration, min: i32, max: i32) {
        registration.builtin_code = code;
        self.builtins.entry(code).or_default().insert(0, Entry { min, max, registration });
    }

    /// Registers custom op `name`, versions `min..=max` (overriding earlier entries).
    pub fn add_custom(&mut self, name: &str, registration: TfLiteRegistration, min: i32, max: i32) {
        self.customs.entry(name.to_string()).or_default().insert(0, Entry { min, max, registration });
    }

    /// Adds every entry of `other`, overriding ours where they overlap.
    pub fn add_all(&mut self, other: &OpResolver) {
        for (code, entries) in &other.builtins {
            for e in entries.iter().rev() {
                self.add_builtin(*code, e.registration, e.min, e.max);
            }
        }
        for (name, entries) in &other.customs {
            for e in entries.iter().rev() {
                self.add_custom(name, e.registration, e.min, e.max);
            }
        }
    }

    /// True if no op is registered.
    pub fn is_empty(&self) -> bool {
        self.builtins.is_empty() && self.customs.is_empty()
    }

    /// Every builtin op with its version ranges, by op code.
    pub fn builtin_table(&self) -> Vec<(i32, Vec<(i32, i32)>)> {
        let mut v: Vec<_> = self.builtins.keys().map(|&c| (c, self.builtin_versions(c))).collect();
        v.sort_unstable();
        v
    }

    /// Every custom op with its version ranges, by name.
    pub fn custom_table(&self) -> Vec<(String, Vec<(i32, i32)>)> {
        let mut v: Vec<_> = self
            .customs
            .iter()
            .map(|(n, es)| {
                let mut r: Vec<_> = es.iter().map(|e| (e.min, e.max)).collect();
                r.sort_unstable();
                (n.clone(), r)
            })
            .collect();
        v.sort();
        v
    }

    fn pick(entries: Option<&Vec<Entry>>, version: i32) -> Option<TfLiteRegistration> {
        entries?.iter().find(|e| (e.min..=e.max).contains(&version)).map(|e| {
            let mut r = e.registration;
            r.version = version;
            r
        })
    }
}

impl OpFinder for OpResolver {
    fn find_builtin(&self, code: i32, version: i32) -> Option<TfLiteRegistration> {
        Self::pick(self.builtins.get(&code), version)
    }
    fn find_custom(&self, name: &str, version: i32) -> Option<TfLiteRegistration> {
        Self::pick(self.customs.get(name), version)
    }
    fn builtin_versions(&self, code: i32) -> Vec<(i32, i32)> {
        let mut r: Vec<_> = self.builtins.get(&code).into_iter().flatten().map(|e| (e.min, e.max)).collect();
        r.sort_unstable();
        r
    }
}

/// Resolvers consulted in order; the first answer wins.
#[derive(Default)]
pub struct ChainedResolver<'a> {
    pub links: Vec<&'a dyn OpFinder>,
}

impl OpFinder for ChainedResolver<'_> {
    fn find_builtin(&self, code: i32, version: i32) -> Option<TfLiteRegistration> {
        self.links.iter().find_map(|r| r.find_builtin(code, version))
    }
    fn find_custom(&self, name: &str, version: i32) -> Option<TfLiteRegistration> {
        self.links.iter().find_map(|r| r.find_custom(name, version))
    }
    fn builtin_versions(&self, code: i32) -> Vec<(i32, i32)> {
        self.links.iter().flat_map(|r| r.builtin_versions(code)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(tag: i32) -> TfLiteRegistration {
        TfLiteRegistration { version: tag, ..TfLiteRegistration::empty() }
    }

    #[test]
    fn version_ranges_and_overrides() {
        let mut r = OpResolver::new();
        r.add_builtin(0, TfLiteRegistration { inplace_operator: 1, ..reg(0) }, 1, 3);
        assert!(r.find_builtin(0, 0).is_none());
        assert_eq!(r.find_builtin(0, 2).map(|x| x.version), Some(2));
        assert!(r.find_builtin(0, 4).is_none());
        r.add_builtin(0, TfLiteRegistration { inplace_operator: 2, ..reg(0) }, 2, 2);
        assert_eq!(r.find_builtin(0, 2).map(|x| x.inplace_operator), Some(2));
        assert_eq!(r.find_builtin(0, 3).map(|x| x.inplace_operator), Some(1));
        r.add_custom("Sinh", reg(0), 1, 1);
        assert!(r.find_custom("Sinh", 1).is_some());
        assert!(r.find_custom("Sinh", 2).is_none());
        assert!(r.find_custom("Cosh", 1).is_none());
        assert_eq!(describe_versions(&r.builtin_versions(0)), "1..3, 2");
        assert_eq!(r.custom_table(), vec![("Sinh".to_string(), vec![(1, 1)])]);
    }
}
