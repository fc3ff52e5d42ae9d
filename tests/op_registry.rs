//! The op table against TensorFlow Lite 2.19's: every builtin op and custom op its
//! `BuiltinOpResolver` registers (tests/conformance/tflite_2_19_ops.txt, in register.cc's
//! order), at the same version ranges, plus the MediaPipe custom ops its public models use.
//! Nothing may be missing or differ.

use std::collections::BTreeMap;
use tensorflowlite_c::abi::builtin_ops::TfLiteBuiltinOperator;
use tensorflowlite_c::resolver::builtin::builtin_op_resolver;

/// MediaPipe's custom ops that its public vision models use (TFLite's resolver lacks them),
/// with the version range MediaPipe's op resolvers register each at
/// (`mediapipe/util/tflite/cpu_op_resolver.cc`, `mediapipe/tasks/cc/core/
/// mediapipe_builtin_op_resolver.cc`).
const MEDIAPIPE_CUSTOM: &[(&str, (i32, i32))] = &[
    ("Convolution2DTransposeBias", (1, 1)),
    ("MaxPoolingWithArgmax2D", (1, 1)),
    ("MaxUnpooling2D", (1, 1)),
    ("TransformLandmarks", (2, 2)),
    ("TransformTensorBilinear", (2, 2)),
    ("Landmarks2TransformMatrix", (2, 2)),
    ("Resampler", (1, 1)),
    ("FusedBatchNormV3", (1, 1)),
];

/// Op name → accepted version range.
type Table = BTreeMap<String, (i32, i32)>;

/// (name → version range) from the reference file, builtins and customs apart.
fn reference() -> (Table, Table) {
    let (mut builtins, mut customs) = (BTreeMap::new(), BTreeMap::new());
    for line in include_str!("conformance/tflite_2_19_ops.txt").lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 4, "bad line {line:?}");
        let range = (f[2].parse().expect("min"), f[3].parse().expect("max"));
        let table = if f[0] == "BUILTIN" { &mut builtins } else { &mut customs };
        assert!(table.insert(f[1].to_string(), range).is_none(), "{} listed twice", f[1]);
    }
    for &(m, range) in MEDIAPIPE_CUSTOM {
        assert!(customs.insert(m.to_string(), range).is_none(), "{m} listed twice");
    }
    (builtins, customs)
}

#[test]
fn registered_ops_are_tflite_2_19s() {
    let (want_builtins, want_customs) = reference();
    assert_eq!(want_builtins.len(), 172, "TFLite 2.19 registers 172 builtin ops");
    assert_eq!(want_customs.len(), 4 + MEDIAPIPE_CUSTOM.len());

    let r = builtin_op_resolver();
    let mut ours = BTreeMap::new();
    for (code, ranges) in r.builtin_table() {
        let name = TfLiteBuiltinOperator::from_raw(code).map_or_else(|| format!("code {code}"), |o| o.name().into());
        assert_eq!(ranges.len(), 1, "{name} is registered with several ranges: {ranges:?}");
        ours.insert(name, ranges[0]);
    }
    for (name, ranges) in r.custom_table() {
        assert_eq!(ranges.len(), 1, "{name} is registered with several ranges: {ranges:?}");
        ours.insert(name, ranges[0]);
    }

    let mut problems = Vec::new();
    let mut missing = Vec::new();
    for (name, want) in want_builtins.iter().chain(&want_customs) {
        match ours.get(name) {
            Some(got) if got == want => {}
            Some(got) => problems.push(format!("{name}: ours {got:?}, TFLite 2.19 {want:?}")),
            None => missing.push(name.clone()),
        }
    }
    for name in ours.keys() {
        if !want_builtins.contains_key(name) && !want_customs.contains_key(name) {
            problems.push(format!("{name} is registered but TFLite 2.19 does not register it"));
        }
    }
    missing.sort();
    println!("registered {} of {} ops", ours.len(), want_builtins.len() + want_customs.len());
    assert!(problems.is_empty(), "op table differs from TFLite 2.19's: {problems:#?}");
    assert!(missing.is_empty(), "not registered: {missing:?}");
}
