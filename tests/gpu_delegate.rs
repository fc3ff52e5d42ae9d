//! The OpenCL GPU delegate end to end on real OpenCL (PoCL in CI): corpus models run
//! with every node delegated and match the CPU kernels; the tuning cache makes a second
//! initialisation tune nothing; without OpenCL, Create returns NULL with a message.
//!
//! Where no OpenCL platform exists these tests print "SKIPPED" and why — unless
//! `TFLITE_REQUIRE_OPENCL=1` (set by CI, which installs PoCL), where that is a failure.

mod common;
use common::*;

use std::ffi::{CString, c_void};
use tensorflowlite_c::gpu::delegate::{GpuDelegate, GpuReport, TfLiteGpuDelegateOptionsV2};

unsafe extern "C" {
    fn TfLiteGpuDelegateOptionsV2Default() -> TfLiteGpuDelegateOptionsV2;
    fn TfLiteGpuDelegateV2Create(o: *const TfLiteGpuDelegateOptionsV2) -> *mut c_void;
    fn TfLiteGpuDelegateV2Delete(d: *mut c_void);
    fn TfLiteInterpreterOptionsAddDelegate(o: *mut Opaque, d: *mut c_void);
}

/// The delegate, or None after saying loudly why the test is skipped.
fn gpu(opts: &TfLiteGpuDelegateOptionsV2, test: &str) -> Option<*mut c_void> {
    // SAFETY: valid options.
    let d = unsafe { TfLiteGpuDelegateV2Create(opts) };
    if !d.is_null() {
        return Some(d);
    }
    let why = tensorflowlite_c::gpu::cl::ClEnv::open().err().map_or_else(|| "unknown".into(), |e| e.message);
    if std::env::var("TFLITE_REQUIRE_OPENCL").as_deref() == Ok("1") {
        panic!("{test}: OpenCL is required (TFLITE_REQUIRE_OPENCL=1) but unavailable: {why}");
    }
    eprintln!("SKIPPED {test}: no usable OpenCL platform ({why}); install pocl-opencl-icd to run it");
    None
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Runs a golden case of `corpus()/<suite>/golden/<name>` once on its input, with
/// `delegate` if given; returns each output's type and bytes, or None when the
/// interpreter cannot be created with the delegate (as TFLite, a delegate without dynamic
/// tensor support is refused on a graph with dynamic tensors).
fn try_run_case(suite: &str, name: &str, delegate: Option<*mut c_void>) -> Option<Vec<(i32, Vec<u8>)>> {
    let base = if suite.is_empty() { corpus() } else { corpus().join(suite) };
    let dir = base.join("golden").join(name);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
    let path = CString::new(base.join(meta["model"].as_str().unwrap()).to_string_lossy().as_bytes()).unwrap();
    // SAFETY: plain C API calls with valid arguments; everything is deleted below.
    unsafe {
        let model = TfLiteModelCreateFromFile(path.as_ptr());
        assert!(!model.is_null(), "{name}: model failed to load");
        let opts = TfLiteInterpreterOptionsCreate();
        if let Some(d) = delegate {
            TfLiteInterpreterOptionsAddDelegate(opts, d);
        }
        let interp = TfLiteInterpreterCreate(model, opts);
        if interp.is_null() && delegate.is_some() {
            TfLiteInterpreterOptionsDelete(opts);
            TfLiteModelDelete(model);
            return None;
        }
        assert!(!interp.is_null(), "{name}: interpreter creation failed");
        if let Some(resize) = meta["resize_inputs"].as_object() {
            for (k, v) in resize {
                let idx: i32 = k.parse().unwrap();
                let dims: Vec<i32> = v.as_array().unwrap().iter().map(|d| d.as_i64().unwrap() as i32).collect();
                assert_eq!(TfLiteInterpreterResizeInputTensor(interp, idx, dims.as_ptr(), dims.len() as i32), OK);
            }
        }
        assert_eq!(TfLiteInterpreterAllocateTensors(interp), OK, "{name}: AllocateTensors");
        for (pos, inp) in meta["inputs"].as_array().unwrap().iter().enumerate() {
            let data = std::fs::read(dir.join(inp["file"].as_str().unwrap())).unwrap();
            let t = TfLiteInterpreterGetInputTensor(interp, pos as i32);
            assert_eq!(TfLiteTensorCopyFromBuffer(t, data.as_ptr().cast(), data.len()), OK);
        }
        assert_eq!(TfLiteInterpreterInvoke(interp), OK, "{name}: Invoke");
        let mut outs = Vec::new();
        for pos in 0..TfLiteInterpreterGetOutputTensorCount(interp) {
            let t = TfLiteInterpreterGetOutputTensor(interp, pos);
            let mut b = vec![0u8; TfLiteTensorByteSize(t)];
            assert_eq!(TfLiteTensorCopyToBuffer(t, b.as_mut_ptr().cast(), b.len()), OK);
            outs.push((TfLiteTensorType(t), b));
        }
        TfLiteInterpreterDelete(interp);
        TfLiteInterpreterOptionsDelete(opts);
        TfLiteModelDelete(model);
        Some(outs)
    }
}

fn run_case(suite: &str, name: &str, delegate: Option<*mut c_void>) -> Vec<(i32, Vec<u8>)> {
    try_run_case(suite, name, delegate).unwrap_or_else(|| panic!("{name}: interpreter creation failed"))
}

/// Float outputs of a model-level golden case.
fn run(name: &str, delegate: Option<*mut c_void>) -> Vec<Vec<f32>> {
    run_case("", name, delegate).into_iter().map(|(_, b)| f32s(&b)).collect()
}

fn report(d: *mut c_void) -> GpuReport {
    // SAFETY: a live delegate from TfLiteGpuDelegateV2Create.
    unsafe { GpuDelegate::from_raw(d.cast()) }.expect("our delegate").report()
}

/// Max |gpu - cpu| relative to the CPU output's range (for a constant output, such as a
/// single score, relative to its magnitude).
fn relative_error(cpu: &[f32], gpu: &[f32]) -> f64 {
    assert_eq!(cpu.len(), gpu.len());
    let (lo, hi) = cpu.iter().fold((f32::MAX, f32::MIN), |(l, h), &v| (l.min(v), h.max(v)));
    let range = if hi > lo { (hi - lo) as f64 } else { (hi.abs() as f64).max(1e-6) };
    cpu.iter()
        .zip(gpu)
        .map(|(a, b)| ((a - b).abs() as f64) / range)
        .fold(0.0, |m, e| if e.is_nan() { f64::INFINITY } else { m.max(e) })
}

fn check_model(name: &str) {
    // SAFETY: returns a value.
    let opts = unsafe { TfLiteGpuDelegateOptionsV2Default() };
    let Some(d) = gpu(&opts, name) else { return };
    let cpu = run(name, None);
    let got = run(name, Some(d));
    let r = report(d);
    eprintln!(
        "{name}: {}/{} nodes delegated in {} partition(s), {} launches ({} before fusion), device buffer {} B (unshared {} B)",
        r.nodes_delegated, r.nodes_total, r.partitions, r.launches, r.launches_unfused, r.arena_bytes, r.unshared_bytes
    );
    assert_eq!(r.partitions, 1, "{name}: one partition");
    assert_eq!(r.nodes_delegated, r.nodes_total, "{name}: every node on the GPU");
    assert!(r.launches < r.launches_unfused, "{name}: elementwise ops were fused");
    for (i, (c, g)) in cpu.iter().zip(&got).enumerate() {
        let e = relative_error(c, g);
        eprintln!("{name}: output {i}: max error {e:.2e} of the output range");
        assert!(e <= 1e-4, "{name}: output {i} differs from the CPU by {e:e} of its range");
    }
    // SAFETY: made above; no interpreter uses it any more.
    unsafe { TfLiteGpuDelegateV2Delete(d) };
}

#[test]
fn mobilenet_v2_f32_on_gpu_matches_cpu() {
    check_model("mobilenet_v2_f32");
}

#[test]
fn face_detection_short_range_on_gpu_matches_cpu() {
    check_model("face_detection_short_range");
}

#[test]
fn hand_landmark_lite_on_gpu_matches_cpu() {
    check_model("hand_landmark_lite");
}

#[test]
fn selfie_segmentation_on_gpu_matches_cpu() {
    check_model("selfie_segmentation");
}

/// Runs an ops-corpus model (zeros in, outputs ignored) with `d` applied.
fn run_ops_model(file: &str, d: *mut c_void) {
    let path = CString::new(corpus().join("ops/models").join(file).to_string_lossy().as_bytes()).unwrap();
    // SAFETY: plain C API calls with valid arguments; everything is deleted below.
    unsafe {
        let model = TfLiteModelCreateFromFile(path.as_ptr());
        assert!(!model.is_null(), "{file}: model failed to load");
        let opts = TfLiteInterpreterOptionsCreate();
        TfLiteInterpreterOptionsAddDelegate(opts, d);
        let interp = TfLiteInterpreterCreate(model, opts);
        assert!(!interp.is_null(), "{file}: interpreter creation failed");
        assert_eq!(TfLiteInterpreterAllocateTensors(interp), OK);
        assert_eq!(TfLiteInterpreterInvoke(interp), OK);
        TfLiteInterpreterDelete(interp);
        TfLiteInterpreterOptionsDelete(opts);
        TfLiteModelDelete(model);
    }
}

/// SUSTAINED_SPEED tunes every kernel and, with serialization on, writes the cache; a
/// second delegate (a second initialisation) takes every work group from the cache and
/// measures nothing.
#[test]
fn tuning_cache_makes_the_second_init_tune_nothing() {
    let dir = std::env::temp_dir().join(format!("tflite-rs-wgcache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cdir = CString::new(dir.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: returns a value.
    let mut opts = unsafe { TfLiteGpuDelegateOptionsV2Default() };
    opts.inference_preference = 1; // SUSTAINED_SPEED
    opts.experimental_flags |= 8; // ENABLE_SERIALIZATION
    opts.serialization_dir = cdir.as_ptr();
    opts.model_token = c"cache_test".as_ptr();
    let models =
        ["conv_2d_relu6_f32.tflite", "depthwise_conv_2d_m2_f32.tflite", "average_pool_2d_3x3_s2_same_f32.tflite"];
    let mut reports = Vec::new();
    for round in 0..2 {
        let Some(d) = gpu(&opts, "tuning_cache_makes_the_second_init_tune_nothing") else { return };
        for m in models {
            run_ops_model(m, d);
        }
        let r = report(d);
        eprintln!("init {}: {:?}, cache {}", round + 1, r.tune, r.cache);
        reports.push(r.tune);
        // SAFETY: made above; no interpreter uses it any more.
        unsafe { TfLiteGpuDelegateV2Delete(d) };
    }
    assert!(reports[0].kernels >= 3 && reports[0].tuned >= 1, "first init measured nothing: {:?}", reports[0]);
    assert_eq!(reports[0].tuned + reports[0].unmeasured, reports[0].kernels);
    assert_eq!(reports[1].kernels, reports[0].kernels);
    assert_eq!(reports[1].tuned, 0, "second init re-tuned: {:?}", reports[1]);
    assert_eq!(reports[1].launches, 0, "second init launched timing runs");
    assert_eq!(reports[1].from_cache, reports[0].tuned);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A serialization directory that does not exist yet is made; one that cannot be made
/// costs only the cache (a warning), never the delegation.
#[test]
fn missing_or_unwritable_cache_directory_is_not_a_failure() {
    let base = std::env::temp_dir().join(format!("tflite-rs-wgmissing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let dir = base.join("not/yet/there");
    let blocker = std::env::temp_dir().join(format!("tflite-rs-wgfile-{}", std::process::id()));
    std::fs::write(&blocker, b"a file, not a directory").unwrap();
    for (what, d) in [("missing", dir.clone()), ("unwritable", blocker.join("sub"))] {
        let cdir = CString::new(d.to_string_lossy().as_bytes()).unwrap();
        // SAFETY: returns a value.
        let mut opts = unsafe { TfLiteGpuDelegateOptionsV2Default() };
        opts.experimental_flags |= 8; // ENABLE_SERIALIZATION
        opts.serialization_dir = cdir.as_ptr();
        opts.model_token = c"missing_dir".as_ptr();
        let Some(g) = gpu(&opts, "missing_or_unwritable_cache_directory_is_not_a_failure") else { return };
        run_ops_model("conv_2d_relu6_f32.tflite", g);
        assert_eq!(report(g).nodes_delegated, 1, "{what} directory: the node fell back to the CPU");
        // SAFETY: made above; no interpreter uses it any more.
        unsafe { TfLiteGpuDelegateV2Delete(g) };
    }
    assert!(dir.join("missing_dir.wgtune").is_file(), "the cache was not written into the new directory");
    let _ = std::fs::remove_dir_all(&base);
    let _ = std::fs::remove_file(&blocker);
}

/// A corrupt cache file is ignored (the delegate still works and rewrites it).
#[test]
fn corrupt_tuning_cache_is_ignored() {
    let dir = std::env::temp_dir().join(format!("tflite-rs-wgcorrupt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bad.wgtune"), b"\x00garbage\xff not a cache").unwrap();
    let cdir = CString::new(dir.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: returns a value.
    let mut opts = unsafe { TfLiteGpuDelegateOptionsV2Default() };
    // SUSTAINED_SPEED: no time budget, so a cold PoCL compile cannot leave the kernel
    // untuned.
    opts.inference_preference = 1;
    opts.experimental_flags |= 8;
    opts.serialization_dir = cdir.as_ptr();
    opts.model_token = c"bad".as_ptr();
    let Some(d) = gpu(&opts, "corrupt_tuning_cache_is_ignored") else { return };
    run_ops_model("conv_2d_relu6_f32.tflite", d);
    let r = report(d);
    assert!(r.cache.contains("Ignored"), "cache status: {}", r.cache);
    assert!(r.tune.tuned >= 1, "{:?}", r.tune);
    // SAFETY: made above; no interpreter uses it any more.
    unsafe { TfLiteGpuDelegateV2Delete(d) };
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every single-op case of `../shared/corpus/ops`: wherever the delegate takes the op,
/// the outputs match the CPU kernels (float within 1e-4 of the range, others exactly).
#[test]
fn ops_corpus_on_gpu_matches_cpu() {
    // SAFETY: returns a value.
    let opts = unsafe { TfLiteGpuDelegateOptionsV2Default() };
    let Some(d) = gpu(&opts, "ops_corpus_on_gpu_matches_cpu") else { return };
    let mut cases: Vec<String> = std::fs::read_dir(corpus().join("ops/golden"))
        .expect("corpus/ops/golden")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    let (mut delegated, mut failures, mut refused) = (Vec::new(), Vec::new(), Vec::new());
    for name in &cases {
        let before = report(d).nodes_delegated;
        let Some(got) = try_run_case("ops", name, Some(d)) else {
            refused.push(name.clone());
            continue;
        };
        if report(d).nodes_delegated == before {
            continue;
        }
        delegated.push(name.clone());
        let cpu = run_case("ops", name, None);
        for (i, ((tc, c), (tg, g))) in cpu.iter().zip(&got).enumerate() {
            let ok = tc == tg
                && c.len() == g.len()
                && if *tc == 1 { relative_error(&f32s(c), &f32s(g)) <= 1e-4 } else { c == g };
            if !ok {
                failures.push(format!("{name} output {i}"));
            }
        }
    }
    eprintln!("ops corpus: {} of {} cases ran on the GPU: {}", delegated.len(), cases.len(), delegated.join(" "));
    eprintln!("refused (dynamic tensors): {}", refused.join(" "));
    assert!(delegated.len() >= 40, "only {} ops cases were delegated", delegated.len());
    assert!(failures.is_empty(), "GPU differs from CPU: {failures:?}");
    // SAFETY: made above; no interpreter uses it any more.
    unsafe { TfLiteGpuDelegateV2Delete(d) };
}

/// Every model-level golden case: whatever the delegate takes (with 1 partition, and with
/// up to 8), the outputs match the CPU kernels.
#[test]
fn all_golden_models_on_gpu_match_cpu() {
    let mut cases: Vec<String> = std::fs::read_dir(corpus().join("golden"))
        .expect("corpus/golden")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    for partitions in [1, 8] {
        // SAFETY: returns a value.
        let mut opts = unsafe { TfLiteGpuDelegateOptionsV2Default() };
        opts.max_delegated_partitions = partitions;
        let Some(d) = gpu(&opts, "all_golden_models_on_gpu_match_cpu") else { return };
        let mut failures = Vec::new();
        for name in &cases {
            let before = report(d);
            let Some(got) = try_run_case("", name, Some(d)) else {
                eprintln!("{name}: refused (dynamic tensors)");
                continue;
            };
            let after = report(d);
            let cpu = run_case("", name, None);
            eprintln!(
                "max {partitions} partition(s): {name}: {} of {} nodes in {} partition(s)",
                after.nodes_delegated - before.nodes_delegated,
                after.nodes_total,
                after.partitions - before.partitions
            );
            for (i, ((tc, c), (tg, g))) in cpu.iter().zip(&got).enumerate() {
                let err =
                    if *tc == 1 && tc == tg && c.len() == g.len() { relative_error(&f32s(c), &f32s(g)) } else { 0.0 };
                // 1e-4 of the range, or what TFLite's own kernel families disagree by on
                // this output (the corpus rule: 2x their spread), whichever is larger.
                let allowed = 1e-4f64.max(2.0 * family_spread(name, i) / range_of(&f32s(c)));
                let ok = tc == tg && c.len() == g.len() && if *tc == 1 { err <= allowed } else { c == g };
                if !ok {
                    failures.push(format!("{name} output {i} (error {err:e} of the range)"));
                }
            }
        }
        assert!(failures.is_empty(), "GPU differs from CPU: {failures:?}");
        // SAFETY: made above; no interpreter uses it any more.
        unsafe { TfLiteGpuDelegateV2Delete(d) };
    }
}

/// The largest disagreement between TFLite's kernel families on output `i` of a golden
/// case (`tflite_family_spread` in its meta.json; 0 if absent).
fn family_spread(name: &str, i: usize) -> f64 {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("golden").join(name).join("meta.json")).unwrap())
            .unwrap();
    meta["outputs"][i]["tflite_family_spread"]
        .as_object()
        .map(|m| m.values().filter_map(|v| v.as_f64()).fold(0.0, f64::max))
        .unwrap_or(0.0)
}

/// The range `relative_error` divides by.
fn range_of(v: &[f32]) -> f64 {
    let (lo, hi) = v.iter().fold((f32::MAX, f32::MIN), |(l, h), &x| (l.min(x), h.max(x)));
    if hi > lo { (hi - lo) as f64 } else { (hi.abs() as f64).max(1e-6) }
}
