//! Writes the bundled demo model, f(x) = sin(x) + x + sin(2x) over 8 floats.
//! usage: make-demo-model [OUT.tflite]   (default: examples_c/demo_model.tflite)

use std::process::ExitCode;

fn main() -> ExitCode {
    let path = std::env::args().nth(1).unwrap_or_else(|| "examples_c/demo_model.tflite".to_string());
    let bytes = tensorflowlite_c::model::writer::sin_add_mul_model(8);
    match std::fs::write(&path, &bytes) {
        Ok(()) => {
            println!("wrote {path} ({} bytes)", bytes.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("make-demo-model: cannot write {path}: {e}");
            ExitCode::FAILURE
        }
    }
}
