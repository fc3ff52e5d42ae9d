//! Conformance over the whole corpus: every single-op case in `ops/golden` and every model
//! case in `golden` must match TFLite's output (tests/common/golden.rs has the rule).
//! The cases are pinned: `tests/conformance/*.txt` lists every case expected to pass, and
//! the suite fails if one of them fails, is skipped (its op stopped resolving) or is
//! missing from the corpus, or if the corpus holds a case the list does not name.

mod common;
use common::corpus;
use common::golden::run_case;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use tensorflowlite_c::abi::builtin_ops::TfLiteBuiltinOperator;
use tensorflowlite_c::model::{Model, fb};
use tensorflowlite_c::resolver::OpFinder;
use tensorflowlite_c::resolver::builtin::builtin_op_resolver;

/// The (op name, version) pairs a model uses that our resolver cannot run.
fn missing_ops(model_path: &Path) -> Vec<String> {
    let resolver = builtin_op_resolver();
    let Ok(model) = Model::from_file(model_path) else { return vec!["<model failed to load>".into()] };
    let m = model.fb();
    let mut missing = Vec::new();
    for code in m.operator_codes().into_iter().flatten() {
        let c = tensorflowlite_c::resolver::opcode::builtin_code(&code);
        let v = code.version();
        let ok = if c == TfLiteBuiltinOperator::kTfLiteBuiltinCustom as i32 {
            resolver.find_custom(code.custom_code().unwrap_or(""), v).is_some()
        } else {
            resolver.find_builtin(c, v).is_some()
        };
        if !ok {
            let name = TfLiteBuiltinOperator::from_raw(c).map_or("?", |o| o.name());
            let name = if c == fb::BuiltinOperator::CUSTOM.0 { code.custom_code().unwrap_or("?") } else { name };
            missing.push(format!("{name}:{v}"));
        }
    }
    missing
}

/// Cases whose ops are registered but whose types/variants are not implemented yet:
/// they must fail with an error (never a wrong answer). Remove a case once it passes.
const KNOWN_UNSUPPORTED: &[&str] = &[];

/// The case names in a pinned list (one per line; blank lines and `#` comments ignored).
fn pinned(list: &str) -> BTreeSet<String> {
    list.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(String::from).collect()
}

/// Fails unless exactly the pinned cases ran and passed.
fn check_pinned(label: &str, list: &str, passed: &BTreeSet<String>, all: &BTreeSet<String>) {
    let expected = pinned(list);
    let not_passed: Vec<_> = expected.difference(passed).collect();
    let unlisted: Vec<_> = all.difference(&expected).collect();
    assert!(not_passed.is_empty(), "{label}: pinned cases that did not pass (failed, skipped or gone): {not_passed:?}");
    assert!(unlisted.is_empty(), "{label}: corpus cases missing from the pinned list: {unlisted:?}");
}

/// Every case directory under `base/golden`.
fn all_cases(base: &Path) -> BTreeSet<String> {
    std::fs::read_dir(base.join("golden"))
        .expect("golden dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect()
}

fn run_suite(base: &Path) -> (BTreeSet<String>, BTreeMap<String, usize>, Vec<String>) {
    let mut passed = BTreeSet::new();
    let mut unsupported: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut cases: Vec<_> =
        std::fs::read_dir(base.join("golden")).expect("golden dir").flatten().map(|e| e.file_name()).collect();
    cases.sort();
    for case in cases {
        let name = case.to_string_lossy().to_string();
        let meta: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(base.join("golden").join(&name).join("meta.json")).expect("meta"),
        )
        .expect("meta.json");
        let model = base.join(meta["model"].as_str().expect("model"));
        let missing = missing_ops(&model);
        if !missing.is_empty() {
            for m in missing {
                *unsupported.entry(m).or_default() += 1;
            }
            continue;
        }
        let known = KNOWN_UNSUPPORTED.contains(&name.as_str());
        match (run_case(base, &name), known) {
            (Ok(()), false) => {
                passed.insert(name.clone());
            }
            (Ok(()), true) => failures.push(format!("{name} passes now: remove it from KNOWN_UNSUPPORTED")),
            (Err(e), false) => failures.push(e),
            // Known gap: it must fail cleanly before Invoke, never produce a wrong answer.
            (Err(e), true) if e.contains("AllocateTensors failed") => {
                *unsupported.entry(format!("{name} (kernel variant)")).or_default() += 1
            }
            (Err(e), true) => failures.push(format!("known-unsupported case failed late: {e}")),
        }
    }
    (passed, unsupported, failures)
}

fn report(label: &str, (passed, unsupported, failures): &(BTreeSet<String>, BTreeMap<String, usize>, Vec<String>)) {
    let skipped: usize = unsupported.values().sum();
    println!(
        "{label}: {} supported cases passed, {} failed; cases needing ops we lack: {skipped}",
        passed.len(),
        failures.len()
    );
    println!("{label}: ops still missing (op:version × cases): {unsupported:?}");
    for f in failures {
        println!("{label}: FAIL {f}");
    }
}

#[test]
fn single_op_suite_matches_tflite() {
    let isa = tensorflowlite_c::microkernels::table().isa;
    println!("ops: microkernels {}", isa.name());
    if std::env::var_os("TFLITE_RS_NO_SIMD").is_some_and(|v| !v.is_empty() && v != "0") {
        assert_eq!(isa, tensorflowlite_c::microkernels::Isa::Scalar, "TFLITE_RS_NO_SIMD must select the scalar table");
    }
    let base = corpus().join("ops");
    let r = run_suite(&base);
    report("ops", &r);
    assert!(r.2.is_empty(), "{} supported single-op cases failed: {:#?}", r.2.len(), r.2);
    check_pinned("ops", include_str!("conformance/single_op_cases.txt"), &r.0, &all_cases(&base));
}

/// The single-op cases built in this repository (`tools/models/op_cases/make_op_cases.py`):
/// ops the shared corpus does not cover, with goldens from TFLite's kernels.
#[test]
fn repository_op_suite_matches_tflite() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/op_cases");
    let r = run_suite(&base);
    report("repository ops", &r);
    assert!(r.2.is_empty(), "{} repository single-op cases failed: {:#?}", r.2.len(), r.2);
    check_pinned("repository ops", include_str!("conformance/repo_op_cases.txt"), &r.0, &all_cases(&base));
}

#[test]
fn model_suite_matches_tflite() {
    let base = corpus();
    let r = run_suite(&base);
    report("models", &r);
    assert!(r.2.is_empty(), "{} supported model cases failed: {:#?}", r.2.len(), r.2);
    check_pinned("models", include_str!("conformance/model_cases.txt"), &r.0, &all_cases(&base));
}
