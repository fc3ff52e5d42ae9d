//! Runs one corpus golden case through the C API and compares it with TFLite's
//! reference output under the corpus README's rule (float: max|ours - ref| <=
//! max(2 * max spread, 1e-5 * max(1, abs_max)); integers: exact). A case whose meta.json
//! sets `float_bits_exact` must match its float outputs bit for bit too.

use super::*;
use std::ffi::CString;
use std::path::Path;

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Runs case `name` under `base/golden/`; `Err` describes every mismatch.
pub fn run_case(base: &Path, name: &str) -> Result<(), String> {
    let dir = base.join("golden").join(name);
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let model_path = CString::new(base.join(meta["model"].as_str().ok_or("no model")?).to_string_lossy().as_bytes())
        .map_err(|e| e.to_string())?;
    // SAFETY: plain C API calls with valid arguments; every object is deleted below.
    unsafe {
        let model = TfLiteModelCreateFromFile(model_path.as_ptr());
        if model.is_null() {
            return Err(format!("{name}: model failed to load"));
        }
        let interp = TfLiteInterpreterCreate(model, std::ptr::null());
        let result = (|| {
            if interp.is_null() {
                return Err(format!("{name}: interpreter creation failed"));
            }
            if let Some(resize) = meta["resize_inputs"].as_object() {
                for (k, v) in resize {
                    let idx: i32 = k.parse().map_err(|_| "bad resize key")?;
                    let dims: Vec<i32> =
                        v.as_array().ok_or("bad dims")?.iter().map(|d| d.as_i64().unwrap_or(-1) as i32).collect();
                    if TfLiteInterpreterResizeInputTensor(interp, idx, dims.as_ptr(), dims.len() as i32) != OK {
                        return Err(format!("{name}: resize failed"));
                    }
                }
            }
            if TfLiteInterpreterAllocateTensors(interp) != OK {
                return Err(format!("{name}: AllocateTensors failed"));
            }
            let n_in = TfLiteInterpreterGetInputTensorCount(interp);
            let in_idx = std::slice::from_raw_parts(TfLiteInterpreterInputTensorIndices(interp), n_in as usize);
            for inp in meta["inputs"].as_array().ok_or("no inputs")? {
                let ti = inp["tensor_index"].as_i64().ok_or("no tensor_index")? as i32;
                let pos = in_idx.iter().position(|&x| x == ti).ok_or("input not found")?;
                let data =
                    std::fs::read(dir.join(inp["file"].as_str().ok_or("no file")?)).map_err(|e| e.to_string())?;
                let t = TfLiteInterpreterGetInputTensor(interp, pos as i32);
                // A string input has no bytes until it is given some (its size depends on
                // the strings): it is sized with TfLiteTensorRealloc, as with TFLite's C
                // API, then filled with the buffer in TFLite's string layout.
                if inp["dtype"].as_str() == Some("STRING") {
                    if TfLiteTensorRealloc(data.len(), t) != OK || TfLiteTensorByteSize(t) != data.len() {
                        return Err(format!("{name}: string input {pos} could not be sized"));
                    }
                    let dst = TfLiteTensorData(t).cast::<u8>();
                    if !data.is_empty() {
                        if dst.is_null() {
                            return Err(format!("{name}: string input {pos} has no data"));
                        }
                        std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len());
                    }
                    continue;
                }
                if TfLiteTensorCopyFromBuffer(t, data.as_ptr().cast(), data.len()) != OK {
                    return Err(format!(
                        "{name}: input {pos} size mismatch ({} vs {})",
                        data.len(),
                        TfLiteTensorByteSize(t)
                    ));
                }
            }
            // Stateful cases compare the outputs of the last of several Invokes.
            for _ in 0..meta["invokes"].as_u64().unwrap_or(1) {
                if TfLiteInterpreterInvoke(interp) != OK {
                    return Err(format!("{name}: Invoke failed"));
                }
            }
            let n_out = TfLiteInterpreterGetOutputTensorCount(interp);
            let out_idx = std::slice::from_raw_parts(TfLiteInterpreterOutputTensorIndices(interp), n_out as usize);
            let mut errors = Vec::new();
            for out in meta["outputs"].as_array().ok_or("no outputs")? {
                let ti = out["tensor_index"].as_i64().ok_or("no tensor_index")? as i32;
                let pos = out_idx.iter().position(|&x| x == ti).ok_or("output not found")?;
                let want =
                    std::fs::read(dir.join(out["file"].as_str().ok_or("no file")?)).map_err(|e| e.to_string())?;
                let t = TfLiteInterpreterGetOutputTensor(interp, pos as i32);
                let mut got = vec![0u8; TfLiteTensorByteSize(t)];
                if got.len() != want.len() || TfLiteTensorCopyToBuffer(t, got.as_mut_ptr().cast(), got.len()) != OK {
                    errors.push(format!("output {pos}: {} bytes, golden {}", got.len(), want.len()));
                    continue;
                }
                let bits_exact = meta["float_bits_exact"].as_bool() == Some(true);
                if bits_exact && got != want {
                    let diff =
                        f32s(&got).iter().zip(f32s(&want)).map(|(a, b)| (a - b).abs() as f64).fold(0.0, f64::max);
                    errors.push(format!("output {pos}: not TFLite's bits (max abs diff {diff:e})"));
                } else if matches!(out["dtype"].as_str(), Some("FLOAT32" | "COMPLEX64")) {
                    // Complex outputs compare as their float parts.
                    let spread = out["tflite_family_spread"]
                        .as_object()
                        .map(|m| m.values().filter_map(|v| v.as_f64()).fold(0.0, f64::max))
                        .unwrap_or(0.0);
                    let abs_max = out["abs_max"].as_f64().unwrap_or(0.0);
                    let tol = (2.0 * spread).max(1e-5 * abs_max.max(1.0));
                    let diff =
                        f32s(&got).iter().zip(f32s(&want)).map(|(a, b)| (a - b).abs() as f64).fold(0.0, f64::max);
                    if diff.is_nan() || diff > tol {
                        errors.push(format!("output {pos}: max abs diff {diff:e} > tolerance {tol:e}"));
                    }
                } else if got != want {
                    errors.push(format!("output {pos}: integer output differs from the golden"));
                }
            }
            if errors.is_empty() { Ok(()) } else { Err(format!("{name}: {}", errors.join("; "))) }
        })();
        TfLiteInterpreterDelete(interp);
        TfLiteModelDelete(model);
        result
    }
}
