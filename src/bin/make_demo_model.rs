//! Writes the bundled demo model, f(x) = sin(x) + x + sin(2x) over 8 floats.
//! usage: make-demo-model [OUT.tflite]   (default: examples_c/demo_model.tflite)

#[allow(dead_code, reason = "the writer is shared with tests that use more of it")]
#[path = "../model/writer.rs"]
mod writer;

use std::process::ExitCode;
use tensorflowlite_c::model::fb;
use writer::ModelWriter;

fn main() -> ExitCode {
    let path = std::env::args().nth(1).unwrap_or_else(|| "examples_c/demo_model.tflite".to_string());
    let bytes = sin_add_mul_model(8);
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

/// The demo model: f(x) = sin(x) + x + sin(2x), x of shape [n].
fn sin_add_mul_model(n: i32) -> Vec<u8> {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[n]);
    let two = w.constant_f32("two", &[1], &[2.0]);
    let sin_x = w.tensor_f32("sin_x", &[n]);
    let x2 = w.tensor_f32("two_x", &[n]);
    let sin_2x = w.tensor_f32("sin_two_x", &[n]);
    let sum1 = w.tensor_f32("sin_x_plus_x", &[n]);
    let y = w.tensor_f32("y", &[n]);
    w.op(fb::BuiltinOperator::SIN, &[x], &[sin_x]);
    w.op(fb::BuiltinOperator::MUL, &[x, two], &[x2]);
    w.op(fb::BuiltinOperator::SIN, &[x2], &[sin_2x]);
    w.op(fb::BuiltinOperator::ADD, &[sin_x, x], &[sum1]);
    w.op(fb::BuiltinOperator::ADD, &[sum1, sin_2x], &[y]);
    w.io(&[x], &[y]);
    w.finish()
}
