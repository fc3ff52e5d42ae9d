//! Writes the small models the delegate C tests and examples load:
//! `c_tests/data/delegate_chain8.tflite` (the 8-node chain whose ADD nodes a delegate
//! takes) and `examples_c/sin_sin.tflite` (y = sin(sin(x)) over 8 floats).
//! usage: make-test-models [REPO_ROOT]   (default: the current directory)

#[allow(dead_code, reason = "the writer is shared with tests that use more of it")]
#[path = "../model/writer.rs"]
mod writer;

use std::path::PathBuf;
use std::process::ExitCode;
use tensorflowlite_c::model::fb;
use writer::ModelWriter;

fn main() -> ExitCode {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".to_string()));
    let models = [
        ("c_tests/data/delegate_chain8.tflite", delegate_chain_model()),
        ("examples_c/sin_sin.tflite", sin_sin_model(8)),
    ];
    for (rel, bytes) in models {
        let path = root.join(rel);
        if let Some(dir) = path.parent()
            && let Err(e) = std::fs::create_dir_all(dir)
        {
            eprintln!("make-test-models: cannot create {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
        if let Err(e) = std::fs::write(&path, &bytes) {
            eprintln!("make-test-models: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {} ({} bytes)", path.display(), bytes.len());
    }
    ExitCode::SUCCESS
}

/// Eight nodes in the shape of TFLite's FP16 delegation test, x of shape [1]:
/// 0 RELU(c0)->t2, 1 ADD(x,t2)->t3, 2 RELU(c1)->t5, 3 ADD(t3,t5)->t6, 4 RELU(c2)->t8,
/// 5 MUL(t6,t8)->t9, 6 RELU(c3)->t11, 7 ADD(t9,t11)->y, every constant 2: y = ((x+2)+2)*2+2.
/// A delegate taking the ADD nodes (1, 3, 7) leaves an execution plan of 7 nodes.
fn delegate_chain_model() -> Vec<u8> {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[1]);
    let mut acc = x;
    for (k, op) in
        [fb::BuiltinOperator::ADD, fb::BuiltinOperator::ADD, fb::BuiltinOperator::MUL, fb::BuiltinOperator::ADD]
            .into_iter()
            .enumerate()
    {
        let c = w.constant_f32(&format!("c{k}"), &[1], &[2.0]);
        let r = w.tensor_f32(&format!("relu{k}"), &[1]);
        let out = w.tensor_f32(if k == 3 { "y" } else { "" }, &[1]);
        w.op(fb::BuiltinOperator::RELU, &[c], &[r]);
        w.op(op, &[acc, r], &[out]);
        acc = out;
    }
    w.io(&[x], &[acc]);
    w.finish()
}

/// y = sin(sin(x)), x of shape [n]: two SIN nodes in a row, which one delegate node
/// replaces (examples_c/sin_delegate.c).
fn sin_sin_model(n: i32) -> Vec<u8> {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[n]);
    let s = w.tensor_f32("sin_x", &[n]);
    let y = w.tensor_f32("y", &[n]);
    w.op(fb::BuiltinOperator::SIN, &[x], &[s]);
    w.op(fb::BuiltinOperator::SIN, &[s], &[y]);
    w.io(&[x], &[y]);
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checked-in models the C tests and examples load are exactly what the
    /// generators write (regenerate with `cargo run --bin make-test-models`).
    #[test]
    fn checked_in_models_match_the_generators() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for (path, bytes) in [
            ("c_tests/data/delegate_chain8.tflite", delegate_chain_model()),
            ("examples_c/sin_sin.tflite", sin_sin_model(8)),
        ] {
            let on_disk = std::fs::read(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert!(on_disk == bytes, "{path} differs from its generator; run `cargo run --bin make-test-models`");
        }
    }

    #[test]
    fn chain_model_loads() {
        let m = tensorflowlite_c::model::Model::from_vec(delegate_chain_model());
        assert!(m.is_ok());
    }
}
