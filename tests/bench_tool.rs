//! The benchmark tool as its users drive it: TFLite benchmark_model's flags and summary
//! lines, the Chrome trace of `--profile_trace` (valid JSON, one slice per node per timed
//! Invoke) and the arena picture of `--memory_plan_svg` (well-formed XML, one box per
//! arena tensor).

mod common;
use std::path::PathBuf;
use std::process::Command;

fn bench(args: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tflite-bench")).args(args).output().expect("run tflite-bench");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "tflite-bench {args:?} failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

fn out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench_tool");
    std::fs::create_dir_all(&d).expect("create test dir");
    d
}

/// The number in `line` after `key` (up to the next non-numeric character).
fn number_after(text: &str, key: &str) -> usize {
    let at = text.find(key).unwrap_or_else(|| panic!("no {key:?} in:\n{text}")) + key.len();
    text[at..].chars().take_while(|c| c.is_ascii_digit()).collect::<String>().parse().expect("a number")
}

#[test]
fn benchmark_model_flags_and_summary_lines() {
    let model = common::corpus().join("models/hand_landmark_lite.tflite");
    let dir = out_dir();
    let (trace, svg) = (dir.join("trace.json"), dir.join("plan.svg"));
    let out = bench(&[
        format!("--graph={}", model.display()),
        "--num_threads=2".into(),
        "--num_runs=4".into(),
        "--warmup_runs=1".into(),
        "--enable_op_profiling=true".into(),
        "--use_xnnpack=true".into(),
        format!("--profile_trace={}", trace.display()),
        format!("--memory_plan_svg={}", svg.display()),
    ]);
    for line in [
        "threads: 2  runs: 4  warmup: 1",
        "Inference timings in us: Init: ",
        ", First inference: ",
        ", Warmup (avg): ",
        ", Inference (avg): ",
        "Memory footprint delta from the start of the tool (MB): init=",
        "Overall peak memory footprint (MB)",
        "per-op profile (average over 4 runs):",
        "count=4 first=",
        "use_xnnpack: true",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }

    // The trace: one "op" slice per node per timed Invoke, one "invoke" slice per Invoke.
    let line = out.lines().find(|l| l.starts_with("profile_trace: ")).expect("profile_trace line");
    let invokes_reported = number_after(line, "(");
    let nodes = number_after(line, "invokes, ");
    assert_eq!(invokes_reported, 4);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace written")).expect("trace is JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let of = |cat: &str| events.iter().filter(|e| e["cat"] == cat).collect::<Vec<_>>();
    assert!(nodes > 10, "hand_landmark_lite has dozens of nodes, the trace says {nodes}");
    assert_eq!(of("op").len(), nodes * 4);
    assert_eq!(of("invoke").len(), 4);
    for e in of("op") {
        assert_eq!(e["ph"], "X");
        assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0) && e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e}");
        assert!(e["name"].as_str().is_some_and(|n| !n.is_empty()));
    }

    // The plan: well-formed XML with one tensor box per arena tensor.
    let boxes = number_after(out.lines().find(|l| l.starts_with("memory_plan_svg: ")).expect("svg line"), "(");
    let text = std::fs::read_to_string(&svg).expect("svg written");
    check_well_formed(&text);
    assert!(text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(boxes > 10);
    assert_eq!(text.matches("<rect class=\"tensor\"").count(), boxes);
    assert_eq!(text.matches("class=\"lower-bound\"").count(), 1);
}

#[test]
fn input_layer_shape_resizes_an_input() {
    let model = common::corpus().join("models/dynamic_batch_mlp.tflite");
    let out = bench(&[
        format!("--graph={}", model.display()),
        "--input_layer=serving_default_keras_tensor:0".into(),
        "--input_layer_shape=3,16".into(),
        "--num_runs=2".into(),
        "--min_secs=0.05".into(),
    ]);
    // Three rows instead of one: the arena grows with the batch.
    let one = bench(&[format!("--graph={}", model.display()), "--num_runs=2".into()]);
    assert!(number_after(&out, "arena_bytes: ") > number_after(&one, "arena_bytes: "), "{out}\n{one}");
    // --min_secs keeps running past --num_runs.
    let timed = out.lines().find(|l| l.starts_with("count=") && !l.ends_with("(warm-up)")).expect("count line");
    assert!(number_after(timed, "count=") > 2, "{out}");

    let bad = Command::new(env!("CARGO_BIN_EXE_tflite-bench"))
        .args([format!("--graph={}", model.display()), "--input_layer=nope".into(), "--input_layer_shape=1,16".into()])
        .output()
        .expect("run");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no input named \"nope\""));
}

/// A small XML well-formedness check (what the SVG uses: elements, attributes in double
/// quotes, text, no comments or CDATA): every tag closes in order, attributes are quoted,
/// `&` starts an entity.
fn check_well_formed(xml: &str) {
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = xml;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        for (i, _) in text.match_indices('&') {
            let ent = &text[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].iter().any(|e| ent.starts_with(e)),
                "bare & in text: {}",
                &ent[..ent.len().min(20)]
            );
        }
        let gt = rest[lt..].find('>').expect("unclosed tag") + lt;
        let tag = &rest[lt + 1..gt];
        assert!(!tag.contains('<'), "'<' inside a tag: {tag}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name.trim()), "mismatched </{name}>");
        } else {
            let self_closing = tag.ends_with('/');
            let body = tag.trim_end_matches('/');
            let name = body.split_whitespace().next().expect("tag name");
            assert_eq!(body.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
            if !self_closing {
                stack.push(name);
            }
        }
        rest = &rest[gt + 1..];
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
    assert!(rest.trim().is_empty());
}

#[test]
fn list_ops_prints_the_table_and_checks_models() {
    let out = bench(&["--list-ops".into()]);
    let builtins = number_after(&out, "builtin ops: ");
    assert!(builtins >= 115, "{out}");
    assert!(out.contains("CONV_2D                              versions 1..8"), "{out}");
    assert!(out.contains("Convolution2DTransposeBias"), "{out}");
    let model = common::corpus().join("models/selfie_segmentation.tflite");
    let out = bench(&["--list-ops".into(), model.display().to_string()]);
    assert!(out.contains("custom Convolution2DTransposeBias") && !out.contains("NOT SUPPORTED"), "{out}");
}
