//! Graph structures that would make the runtime write read-only memory or read
//! uninitialized tensors are refused before anything runs, with a message naming the
//! tensor and operators at fault: constant graph inputs, tensors with two writers,
//! operator inputs nothing provides, tensors read before they are written (cycles), and
//! layers whose weights have a zero-sized dimension (refused at Prepare). Models are
//! written in memory with `ModelWriter` (`src/model/writer.rs`, development code the
//! library itself does not export).

mod common;
#[path = "../src/model/writer.rs"]
mod writer;

use std::sync::{Arc, Mutex};
use tensorflowlite_c::interpreter::{Interpreter, InterpreterConfig};
use tensorflowlite_c::model::fb::BuiltinOperator as Op;
use tensorflowlite_c::model::{Model, fb};
use tensorflowlite_c::resolver::builtin::builtin_op_resolver;
use writer::{DimSpec, ModelWriter, SparsitySpec};

/// Loads `bytes` and creates an interpreter; the error message of whichever step fails.
fn create(bytes: Vec<u8>) -> Result<Interpreter, String> {
    let model = Model::from_vec(bytes).map_err(|e| e.message)?;
    let config = InterpreterConfig { reporter: Arc::new(|_: &str| {}), ..Default::default() };
    Interpreter::new(Arc::new(model), &builtin_op_resolver(), config).map_err(|e| e.message)
}

/// The message creation fails with; panics when the model is accepted.
fn creation_error(w: &ModelWriter) -> String {
    match create(w.finish()) {
        Ok(_) => panic!("the model was accepted"),
        Err(m) => m,
    }
}

fn assert_names(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} does not name {p:?}");
    }
}

/// Creates an interpreter whose error reporter collects into the returned list.
fn create_reporting(bytes: Vec<u8>) -> (Interpreter, Arc<Mutex<Vec<String>>>) {
    let model = Model::from_vec(bytes).unwrap_or_else(|e| panic!("load failed: {}", e.message));
    let reported = Arc::new(Mutex::new(Vec::new()));
    let sink = reported.clone();
    let config = InterpreterConfig {
        reporter: Arc::new(move |m: &str| sink.lock().unwrap().push(m.to_string())),
        ..Default::default()
    };
    let interp = Interpreter::new(Arc::new(model), &builtin_op_resolver(), config)
        .unwrap_or_else(|e| panic!("creation failed: {}", e.message));
    (interp, reported)
}

/// What AllocateTensors (Prepare) reports and fails with, after creation succeeded.
fn prepare_error(w: &ModelWriter) -> String {
    let (mut interp, reported) = create_reporting(w.finish());
    match interp.allocate_tensors() {
        Ok(()) => panic!("AllocateTensors accepted the model"),
        Err(e) => format!("{} {}", reported.lock().unwrap().join(" "), e.message),
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn constant_graph_input_is_refused() {
    let mut w = ModelWriter::new();
    let x = w.constant_f32("frozen_x", &[1, 4], &[1.0, 2.0, 3.0, 4.0]);
    let y = w.tensor_f32("y", &[1, 4]);
    w.op(Op::RELU, &[x], &[y]);
    w.io(&[x], &[y]);
    let msg = creation_error(&w);
    assert_names(&msg, &["input tensor 0", "'frozen_x'", "constant"]);
}

/// Through the C API: the model is refused at TfLiteModelCreate, so no application can
/// reach TfLiteTensorCopyFromBuffer on the read-only input.
#[test]
fn constant_graph_input_is_refused_by_the_c_api() {
    let mut w = ModelWriter::new();
    let x = w.constant_f32("frozen_x", &[1, 4], &[1.0, 2.0, 3.0, 4.0]);
    let y = w.tensor_f32("y", &[1, 4]);
    w.op(Op::RELU, &[x], &[y]);
    w.io(&[x], &[y]);
    let bytes = w.finish();
    // SAFETY: the bytes outlive the call; a non-NULL model is deleted.
    unsafe {
        let m = common::TfLiteModelCreate(bytes.as_ptr().cast(), bytes.len());
        let refused = m.is_null();
        if !refused {
            common::TfLiteModelDelete(m);
        }
        assert!(refused, "TfLiteModelCreate accepted a model whose input is a constant");
    }
}

#[test]
fn constant_written_by_an_operator_is_refused() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[4]);
    let y = w.constant_f32("y", &[4], &[0.0; 4]);
    w.op(Op::RELU, &[x], &[y]);
    w.io(&[x], &[y]);
    let msg = creation_error(&w);
    assert_names(&msg, &["operator 0", "output tensor 1", "constant"]);
}

#[test]
fn variable_with_data_is_refused() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[4]);
    let state = w.constant_f32("state", &[4], &[0.0; 4]);
    w.set_variable(state);
    let y = w.tensor_f32("y", &[4]);
    w.op(Op::ADD, &[x, state], &[y]);
    w.io(&[x], &[y]);
    let msg = creation_error(&w);
    assert_names(&msg, &["Tensor 1", "variable tensor with buffer"]);
}

/// Reading a constant as a graph output writes nothing: accepted, and the output holds
/// the constant.
#[test]
fn constant_graph_output_is_read() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[2]);
    let y = w.tensor_f32("y", &[2]);
    let c = w.constant_f32("c", &[2], &[5.0, -6.0]);
    w.op(Op::RELU, &[x], &[y]);
    w.io(&[x], &[y, c]);
    let mut interp = create(w.finish()).expect("a constant graph output is legal");
    interp.allocate_tensors().expect("allocate");
    interp.invoke().expect("invoke");
    let t = interp.primary().tensor(c).expect("tensor c");
    // SAFETY: the constant's data points into the model, 8 bytes of float32.
    let got = unsafe { std::slice::from_raw_parts(t.data.raw_const as *const u8, t.bytes) };
    assert_eq!(got, f32_bytes(&[5.0, -6.0]).as_slice());
}

#[test]
fn tensor_written_by_two_operators_is_refused() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[4]);
    let t = w.tensor_f32("shared", &[4]);
    let y = w.tensor_f32("y", &[4]);
    w.op(Op::RELU, &[x], &[t]);
    w.op(Op::RELU6, &[x], &[t]);
    w.op(Op::ADD, &[t, x], &[y]);
    w.io(&[x], &[y]);
    let msg = creation_error(&w);
    assert_names(&msg, &["tensor 1", "'shared'", "operator 0 (RELU)", "operator 1 (RELU6)"]);
}

#[test]
fn operator_writing_a_graph_input_is_refused() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[4]);
    let z = w.tensor_f32("z", &[4]);
    let y = w.tensor_f32("y", &[4]);
    w.op(Op::RELU, &[x], &[z]);
    w.op(Op::ADD, &[x, z], &[y]);
    w.io(&[x, z], &[y]);
    let msg = creation_error(&w);
    assert_names(&msg, &["operator 0 (RELU)", "output tensor 1", "'z'", "graph input"]);
}

#[test]
fn input_nothing_provides_is_refused() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[4]);
    let orphan = w.tensor_f32("orphan", &[4]);
    let s = w.tensor_f32("s", &[4]);
    let y = w.tensor_f32("y", &[4]);
    w.op(Op::RELU, &[x], &[s]);
    w.op(Op::ADD, &[s, orphan], &[y]);
    w.io(&[x], &[y]);
    let msg = creation_error(&w);
    assert_names(&msg, &["operator 1 (ADD)", "tensor 1", "'orphan'", "no operator writes"]);
}

#[test]
fn output_nothing_writes_is_refused() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[4]);
    let y = w.tensor_f32("y", &[4]);
    let unwritten = w.tensor_f32("unwritten", &[2, 5]);
    w.op(Op::RELU, &[x], &[y]);
    w.io(&[x], &[y, unwritten]);
    let msg = creation_error(&w);
    assert_names(&msg, &["output tensor 2", "'unwritten'", "written by no operator"]);
    // A graph without operators passes its input through, which is allowed.
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[4]);
    w.io(&[x], &[x]);
    create(w.finish()).expect("an input given back as output is written by the application");
}

/// What the reachability rule leaves alone: optional inputs (-1), zero-sized tensors,
/// variables and graph inputs are all provided.
#[test]
fn provided_inputs_are_accepted() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[1, 4]);
    let weights = w.constant_f32("weights", &[2, 4], &[1.0; 8]);
    let fc = w.tensor_f32("fc", &[1, 2]);
    let state = w.tensor_f32("state", &[1, 2]);
    w.set_variable(state);
    let y = w.tensor_f32("y", &[1, 2]);
    let empty = w.tensor_f32("empty", &[0]);
    let empty_out = w.tensor_f32("empty_out", &[0]);
    w.op(Op::FULLY_CONNECTED, &[x, weights, -1], &[fc]);
    w.op(Op::ADD, &[fc, state], &[y]);
    w.op(Op::RELU, &[empty], &[empty_out]);
    w.io(&[x], &[y, empty_out]);
    let mut interp = create(w.finish()).expect("every input is provided");
    interp.allocate_tensors().expect("allocate");
    interp.invoke().expect("invoke");
}

#[test]
fn cycle_between_operators_is_refused() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[4]);
    let a = w.tensor_f32("a", &[4]);
    let b = w.tensor_f32("b", &[4]);
    w.op(Op::ADD, &[x, b], &[a]);
    w.op(Op::RELU, &[a], &[b]);
    w.io(&[x], &[a]);
    let msg = creation_error(&w);
    assert_names(&msg, &["operator 0 (ADD)", "operator 1 (RELU)", "tensor 2", "'b'", "before"]);
}

/// TFLite runs operators in file order: a reader placed before its writer reads the tensor
/// uninitialized even without a cycle.
#[test]
fn reader_before_writer_is_refused() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[4]);
    let t = w.tensor_f32("t", &[4]);
    let y = w.tensor_f32("y", &[4]);
    w.op(Op::RELU, &[t], &[y]);
    w.op(Op::RELU, &[x], &[t]);
    w.io(&[x], &[y]);
    let msg = creation_error(&w);
    assert_names(&msg, &["operator 0 (RELU)", "operator 1 (RELU)", "tensor 1", "'t'"]);
}

#[test]
fn fully_connected_zero_depth_weights_is_refused_at_prepare() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[1, 4]);
    let weights = w.constant_f32("weights", &[3, 0], &[]);
    let y = w.tensor_f32("y", &[1, 3]);
    w.op(Op::FULLY_CONNECTED, &[x, weights, -1], &[y]);
    w.io(&[x], &[y]);
    let msg = prepare_error(&w);
    assert_names(&msg, &["FULLY_CONNECTED", "[3, 0]", "[1, 4]"]);
}

/// A convolution (or depthwise convolution) whose filter has a zero-sized dimension.
fn conv_with_filter(op: Op, filter: &[i32]) -> ModelWriter {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[1, 4, 4, 2]);
    let f = w.constant_f32("filter", filter, &[]);
    let y = w.tensor_f32("y", &[1, 4, 4, 2]);
    w.op(op, &[x, f, -1], &[y]);
    w.io(&[x], &[y]);
    w
}

#[test]
fn convolutions_with_zero_sized_filters_are_refused_at_prepare() {
    for (op, filter) in [
        (Op::CONV_2D, [2, 0, 1, 2]),
        (Op::CONV_2D, [2, 1, 0, 2]),
        (Op::CONV_2D, [2, 1, 1, 0]),
        (Op::CONV_2D, [0, 1, 1, 2]),
        (Op::DEPTHWISE_CONV_2D, [1, 0, 1, 2]),
        (Op::DEPTHWISE_CONV_2D, [1, 1, 0, 2]),
        (Op::DEPTHWISE_CONV_2D, [1, 1, 1, 0]),
    ] {
        let msg = prepare_error(&conv_with_filter(op, &filter));
        let name = if op == Op::CONV_2D { "CONV_2D" } else { "DEPTHWISE_CONV_2D" };
        assert_names(&msg, &[name, &format!("{filter:?}"), "[1, 4, 4, 2]"]);
    }
}

/// BATCH_MATMUL with a zero-sized inner dimension multiplies nothing: like TFLite it
/// runs and gives zeros (the sum over no terms), reading nothing out of bounds.
#[test]
fn batch_matmul_with_zero_inner_dimension_gives_zeros() {
    let mut w = ModelWriter::new();
    let a = w.tensor_f32("a", &[1, 2, 0]);
    let b = w.constant_f32("b", &[1, 0, 3], &[]);
    let y = w.tensor_f32("y", &[1, 2, 3]);
    w.op(Op::BATCH_MATMUL, &[a, b], &[y]);
    w.io(&[a], &[y]);
    let (mut interp, reported) = create_reporting(w.finish());
    interp.allocate_tensors().unwrap_or_else(|e| panic!("allocate: {} {:?}", e.message, reported.lock().unwrap()));
    interp.invoke().unwrap_or_else(|e| panic!("invoke: {} {:?}", e.message, reported.lock().unwrap()));
    let t = interp.primary().tensor(y).expect("tensor y");
    assert_eq!(t.bytes, 6 * 4);
    // SAFETY: after a successful Invoke the output holds t.bytes bytes of float32.
    let got = unsafe { std::slice::from_raw_parts(t.data.raw_const as *const f32, t.bytes / 4) };
    assert!(got.iter().all(|&v| v == 0.0), "{got:?}");
}

/// The 3x4 matrix [[0, 1, 0, 2], [0, 0, 0, 0], [3, 0, 0, 4]]: rows dense, columns
/// compressed, values 1, 2, 3, 4.
fn sparse_3x4() -> SparsitySpec {
    SparsitySpec {
        traversal_order: vec![0, 1],
        block_map: vec![],
        dims: vec![DimSpec::dense(3), DimSpec::csr(&[0, 2, 2, 4], &[1, 3, 0, 3])],
    }
}

/// A model densifying a sparse constant `w` of shape `shape` holding `values` (float32).
fn densify_model(shape: &[i32], values: &[f32], sparsity: SparsitySpec) -> ModelWriter {
    let mut w = ModelWriter::new();
    let c = w.constant_f32("w", shape, values);
    w.set_sparsity(c, sparsity);
    let y = w.tensor_f32("dense", shape);
    w.op(Op::DENSIFY, &[c], &[y]);
    w.io(&[], &[y]);
    w
}

fn f32_output(interp: &Interpreter, t: i32) -> Vec<f32> {
    let t = interp.primary().tensor(t).expect("tensor");
    // SAFETY: after a successful Invoke the output holds t.bytes bytes of float32.
    unsafe { std::slice::from_raw_parts(t.data.raw_const as *const f32, t.bytes / 4) }.to_vec()
}

/// A sparse constant reaches kernels expanded as TFLite's format converter does: through
/// DENSIFY (computed once, then kept), into a FULLY_CONNECTED after it, and as
/// FULLY_CONNECTED's own sparse weights.
#[test]
fn sparse_constants_densify_and_feed_fully_connected() {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[1, 4]);
    let c = w.constant_f32("w", &[3, 4], &[1.0, 2.0, 3.0, 4.0]);
    w.set_sparsity(c, sparse_3x4());
    let dense = w.tensor_f32("dense", &[3, 4]);
    let y = w.tensor_f32("y", &[1, 3]);
    let y_direct = w.tensor_f32("y_direct", &[1, 3]);
    w.op(Op::DENSIFY, &[c], &[dense]);
    w.op(Op::FULLY_CONNECTED, &[x, dense, -1], &[y]);
    w.op(Op::FULLY_CONNECTED, &[x, c, -1], &[y_direct]);
    w.io(&[x], &[y, y_direct, dense]);
    let (mut interp, reported) = create_reporting(w.finish());
    interp.allocate_tensors().unwrap_or_else(|e| panic!("allocate: {} {:?}", e.message, reported.lock().unwrap()));
    for run in 0..2 {
        let p = interp.primary_mut().tensor_ptr(x).expect("input");
        // SAFETY: the input is a live float32 tensor of 4 elements after AllocateTensors.
        unsafe { std::slice::from_raw_parts_mut((*p).data.data as *mut f32, 4) }.copy_from_slice(&[
            1.0,
            2.0,
            3.0,
            4.0 + run as f32,
        ]);
        interp.invoke().unwrap_or_else(|e| panic!("invoke: {} {:?}", e.message, reported.lock().unwrap()));
        let want = [2.0 + 2.0 * (4.0 + run as f32), 0.0, 3.0 + 4.0 * (4.0 + run as f32)];
        assert_eq!(f32_output(&interp, y), want);
        assert_eq!(f32_output(&interp, y_direct), want);
        assert_eq!(f32_output(&interp, dense), [0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 4.0]);
    }
}

/// Every index of a sparse constant's parameters is checked at load, and its buffer must
/// hold exactly the values they place.
#[test]
fn malformed_sparsity_is_refused() {
    let values = [1.0, 2.0, 3.0, 4.0];
    let with = |f: &dyn Fn(&mut SparsitySpec)| {
        let mut sp = sparse_3x4();
        f(&mut sp);
        sp
    };
    let cases: Vec<(SparsitySpec, &[f32], &[&str])> = vec![
        (with(&|s| s.traversal_order = vec![1, 1]), &values, &["not a permutation"]),
        (with(&|s| s.traversal_order = vec![0, 2]), &values, &["not a permutation"]),
        (with(&|s| s.traversal_order = vec![0]), &values, &["traversal_order has 1 entries"]),
        (with(&|s| s.dims[0] = DimSpec::dense(4)), &values, &["DENSE of size 4", "3 entries"]),
        (with(&|s| s.dims[1] = DimSpec::csr(&[0, 2, 4], &[1, 3, 0, 3])), &values, &["array_segments has 3"]),
        (with(&|s| s.dims[1] = DimSpec::csr(&[0, 3, 2, 4], &[1, 3, 0, 3])), &values, &["non-decreasing"]),
        (with(&|s| s.dims[1] = DimSpec::csr(&[0, 2, 2, 5], &[1, 3, 0, 3])), &values, &["ends at 5"]),
        (with(&|s| s.dims[1] = DimSpec::csr(&[0, 2, 2, 4], &[1, 4, 0, 3])), &values, &["holds 4", "outside"]),
        (with(&|s| s.dims[1] = DimSpec::csr(&[0, 2, 2, 4], &[1, -3, 0, 3])), &values, &["holds -3"]),
        (with(&|s| s.dims[1].index_type = fb::SparseIndexVector::NONE), &values, &["array_segments"]),
        (
            with(&|s| {
                s.traversal_order = vec![0, 1, 2];
                s.block_map = vec![2];
                s.dims.push(DimSpec::dense(2));
            }),
            &values,
            &["block_map"],
        ),
        (sparse_3x4(), &values[..3], &["buffer holds 12 bytes", "4 values"]),
        (sparse_3x4(), &[1.0, 2.0, 3.0, 4.0, 5.0], &["buffer holds 20 bytes"]),
    ];
    for (sp, vals, parts) in cases {
        let msg = creation_error(&densify_model(&[3, 4], vals, sp));
        assert_names(&msg, &["tensor 0 ('w')", "invalid sparsity parameters"]);
        assert_names(&msg, parts);
    }
    // Narrow index vectors are read as the same indices.
    let mut narrow = sparse_3x4();
    narrow.dims[1].index_type = fb::SparseIndexVector::Uint8Vector;
    let (mut interp, _) = create_reporting(densify_model(&[3, 4], &values, narrow.clone()).finish());
    interp.allocate_tensors().expect("allocate");
    interp.invoke().expect("invoke");
    assert_eq!(f32_output(&interp, 1), [0.0, 1.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 4.0]);
    narrow.dims[1].index_type = fb::SparseIndexVector::Uint16Vector;
    assert!(create(densify_model(&[3, 4], &values, narrow).finish()).is_ok());
}

/// Inputs the fuzzer (fuzz/, tools/fuzz.sh) found crashing or misbehaving, kept in
/// fuzz/regressions: each must now be refused with the message named here, or, where the
/// model is legal, load, allocate and run twice. The lists are pinned both ways: a file
/// without an entry, or an entry without its file, fails.
#[test]
fn fuzz_regressions_are_refused_or_run() {
    const EXPECTED: &[(&str, &[&str])] = &[
        // A table's signed vtable offset of i32::MIN (overflows flatbuffers' `abs`).
        ("soffset_i32_min.tflite", &["not a valid Flatbuffer"]),
        ("unwritten_graph_output.tflite", &["output tensor 3", "'PartitionedCall:0'", "written by no operator"]),
    ];
    // BATCH_TO_SPACE_ND of a [16384004, 3, 147458, 0] input: nothing to move, but its
    // pixel loop once ran 7e12 empty steps (an Invoke that never ended).
    const RUN: &[&str] = &["batch_to_space_zero_channels.tflite"];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .expect("fuzz/regressions")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut expected: Vec<String> =
        EXPECTED.iter().map(|(name, _)| name.to_string()).chain(RUN.iter().map(|n| n.to_string())).collect();
    expected.sort();
    assert_eq!(found, expected, "fuzz/regressions and this test's lists differ");
    for (name, parts) in EXPECTED {
        let bytes = std::fs::read(dir.join(name)).expect("read regression model");
        match create(bytes) {
            Ok(_) => panic!("{name}: accepted"),
            Err(msg) => assert_names(&msg, parts),
        }
    }
    for name in RUN {
        let bytes = std::fs::read(dir.join(name)).expect("read regression model");
        let mut interp = create(bytes).unwrap_or_else(|e| panic!("{name}: refused: {e}"));
        interp.allocate_tensors().unwrap_or_else(|e| panic!("{name}: allocate: {}", e.message));
        for _ in 0..2 {
            interp.invoke().unwrap_or_else(|e| panic!("{name}: invoke: {}", e.message));
        }
    }
}
