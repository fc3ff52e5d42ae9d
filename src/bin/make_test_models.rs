//! Writes the small models the delegate C tests and examples load:
//! `c_tests/data/delegate_chain8.tflite` (the 8-node chain whose ADD nodes a delegate
//! takes) and `examples_c/sin_sin.tflite` (y = sin(sin(x)) over 8 floats).
//! usage: make-test-models [REPO_ROOT]   (default: the current directory)

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".to_string()));
    let models = [
        ("c_tests/data/delegate_chain8.tflite", tensorflowlite_c::model::writer::delegate_chain_model()),
        ("examples_c/sin_sin.tflite", tensorflowlite_c::model::writer::sin_sin_model(8)),
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
