//! MediaPipe's public models that need the ops TFLite alone lacks or that we added late:
//! the face landmarker with attention (MediaPipe's custom ops `Landmarks2TransformMatrix`,
//! `TransformTensorBilinear`, `TransformLandmarks`) and the two detectors with sparse
//! weights (DENSIFY). The models come from the mediapipe 0.10.21 wheel on PyPI
//! (`tools/mediapipe_models.sh` fetches them into target/mediapipe, checking each file's
//! SHA-256). The goldens in tests/mediapipe/ come from `tools/models/op_by_op_reference.py`:
//! TFLite's reference kernels for every builtin op, numpy oracles written from MediaPipe's
//! source for its custom ops. Inputs are a formula (element i = ((i·7919) mod 256)/255),
//! so no input files are kept.

mod common;
use common::*;
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Every case in tests/mediapipe, pinned: a missing golden or model is a failure.
const CASES: &[&str] = &["face_detection_full_range_sparse", "face_landmark_with_attention", "pose_detection"];

fn models_dir() -> PathBuf {
    std::env::var_os("TFLITE_MEDIAPIPE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mediapipe"))
}

fn formula_input(n_elems: usize, dtype: &str) -> Vec<u8> {
    let v = (0..n_elems).map(|i| ((i as u64 * 7919) % 256) as f32);
    match dtype {
        "FLOAT32" => v.flat_map(|x| (x / 255.0).to_le_bytes()).collect(),
        "UINT8" | "INT8" => v.map(|x| x as u8).collect(),
        other => panic!("no formula for input type {other}"),
    }
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn run(case: &str, model: &Path, golden: &Path) -> Result<String, String> {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(golden.join("meta.json")).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let path = CString::new(model.to_string_lossy().as_bytes()).map_err(|e| e.to_string())?;
    let mut report = String::new();
    // SAFETY: plain C API calls with valid arguments; every object is deleted below.
    unsafe {
        let m = TfLiteModelCreateFromFile(path.as_ptr());
        if m.is_null() {
            return Err(format!("{case}: model failed to load"));
        }
        let it = TfLiteInterpreterCreate(m, std::ptr::null());
        let result = (|| {
            if it.is_null() {
                return Err(format!("{case}: interpreter creation failed"));
            }
            if TfLiteInterpreterAllocateTensors(it) != OK {
                return Err(format!("{case}: AllocateTensors failed"));
            }
            for (pos, inp) in meta["inputs"].as_array().ok_or("no inputs")?.iter().enumerate() {
                let shape = inp["shape"].as_array().ok_or("no shape")?;
                let n: usize = shape.iter().map(|d| d.as_u64().unwrap_or(0) as usize).product();
                let data = formula_input(n, inp["dtype"].as_str().ok_or("no dtype")?);
                let t = TfLiteInterpreterGetInputTensor(it, pos as i32);
                if TfLiteTensorCopyFromBuffer(t, data.as_ptr().cast(), data.len()) != OK {
                    return Err(format!(
                        "{case}: input {pos}: {} bytes, tensor {}",
                        data.len(),
                        TfLiteTensorByteSize(t)
                    ));
                }
            }
            if TfLiteInterpreterInvoke(it) != OK {
                return Err(format!("{case}: Invoke failed"));
            }
            let mut errors = Vec::new();
            for (pos, out) in meta["outputs"].as_array().ok_or("no outputs")?.iter().enumerate() {
                let want =
                    std::fs::read(golden.join(out["file"].as_str().ok_or("no file")?)).map_err(|e| e.to_string())?;
                let t = TfLiteInterpreterGetOutputTensor(it, pos as i32);
                let mut got = vec![0u8; TfLiteTensorByteSize(t)];
                if got.len() != want.len() || TfLiteTensorCopyToBuffer(t, got.as_mut_ptr().cast(), got.len()) != OK {
                    errors.push(format!("output {pos}: {} bytes, golden {}", got.len(), want.len()));
                    continue;
                }
                let spread = out["tflite_family_spread"]
                    .as_object()
                    .map(|m| m.values().filter_map(|v| v.as_f64()).fold(0.0, f64::max))
                    .unwrap_or(0.0);
                let abs_max = out["abs_max"].as_f64().unwrap_or(0.0);
                let tol = (2.0 * spread).max(1e-5 * abs_max.max(1.0));
                let diff = f32s(&got).iter().zip(f32s(&want)).map(|(a, b)| (a - b).abs() as f64).fold(0.0, f64::max);
                report +=
                    &format!("  output {pos}: max abs diff {diff:.3e} (tolerance {tol:.3e}, |max| {abs_max:.3})\n");
                if diff.is_nan() || diff > tol {
                    errors.push(format!("output {pos}: max abs diff {diff:e} > tolerance {tol:e}"));
                }
            }
            if errors.is_empty() { Ok(()) } else { Err(format!("{case}: {}", errors.join("; "))) }
        })();
        TfLiteInterpreterDelete(it);
        TfLiteModelDelete(m);
        result.map(|()| report)
    }
}

#[test]
fn mediapipe_models_match_the_op_by_op_reference() {
    let dir = models_dir();
    let goldens = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mediapipe");
    let mut on_disk: Vec<String> = std::fs::read_dir(&goldens)
        .expect("tests/mediapipe")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, CASES, "tests/mediapipe must hold exactly the pinned cases");
    let mut failures = Vec::new();
    for case in CASES {
        let model = dir.join(format!("{case}.tflite"));
        assert!(
            model.is_file(),
            "{} is missing: run `bash tools/mediapipe_models.sh` (fetches MediaPipe's models from PyPI)",
            model.display()
        );
        match run(case, &model, &goldens.join(case)) {
            Ok(report) => println!("{case}: matches\n{report}"),
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
