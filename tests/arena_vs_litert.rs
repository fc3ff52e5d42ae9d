//! "Our arena bytes are no larger than LiteRT's on every corpus model."
//!
//! Loads every corpus model that LiteRT's table (`litert_reference.rs`, from
//! shared/design/MEMORY.md, RESULTS section 0: LiteRT 2.3.0's measured non-persistent
//! arena with its im2col temporaries; selfie_segmentation emulated by plan.py) has a
//! figure for, allocates its tensors and compares our read-write arena (activations
//! and node temporaries, the figure `tflite-bench` prints as `arena_bytes`) with it.
//! A missing ../shared corpus fails loudly (see `common::corpus`).

mod common;
// The table is development data, not part of the library: `tflite-bench` owns it and
// this test shares the file.
#[path = "../src/bin/tflite_bench/litert_reference.rs"]
mod litert_reference;

use litert_reference::{litert_arena, litert_models};
use std::sync::Arc;
use tensorflowlite_c::interpreter::{Interpreter, InterpreterConfig};
use tensorflowlite_c::model::Model;
use tensorflowlite_c::resolver::builtin::builtin_op_resolver;

fn our_arena(path: &std::path::Path) -> usize {
    let model = Model::from_file(path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message));
    let resolver = builtin_op_resolver();
    let config = InterpreterConfig { reporter: Arc::new(|_: &str| {}), ..InterpreterConfig::default() };
    let mut interp = Interpreter::new(Arc::new(model), &resolver, config).expect("interpreter");
    interp.allocate_tensors().unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message));
    interp.invoke().unwrap_or_else(|e| panic!("{}: invoke: {}", path.display(), e.message));
    interp.primary().memory_stats().arena_bytes
}

#[test]
fn arena_is_no_larger_than_litert_on_every_corpus_model() {
    let models = common::corpus().join("models");
    let mut checked = Vec::new();
    let mut report = String::new();
    let mut worse = Vec::new();
    for name in litert_models() {
        let path = models.join(format!("{name}.tflite"));
        if !path.is_file() {
            continue; // MEMORY.md also covers models the corpus does not ship
        }
        let theirs = litert_arena(name).expect("listed").bytes;
        let ours = our_arena(&path);
        report.push_str(&format!("{name}: ours {ours} B, LiteRT {theirs} B\n"));
        if ours > theirs {
            worse.push(name);
        }
        checked.push(name);
    }
    eprintln!("{report}");
    // The corpus's MediaPipe and MobileNet models all have a figure: none may be skipped.
    for must in [
        "face_detection_short_range",
        "face_landmark",
        "hand_landmark_lite",
        "hand_recrop",
        "iris_landmark",
        "mobilenet_v2_f32",
        "mobilenet_v2_int8",
        "palm_detection_lite",
        "pose_landmark_full",
        "selfie_segmentation",
    ] {
        assert!(checked.contains(&must), "{must} is missing from the corpus at {}", models.display());
    }
    assert!(worse.is_empty(), "arena larger than LiteRT's on {worse:?}:\n{report}");
}
