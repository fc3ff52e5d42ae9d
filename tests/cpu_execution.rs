//! CPU execution choices that must never change an answer: graph fusion (activations
//! into their producers, convolutions into the depthwise convolutions and the ADDs that
//! read them:
//! the fused graph gives the same bits as the model's graph, with less memory, and a
//! delegate applied afterwards sees the model's graph) and the thread count (every
//! corpus model gives the same bits on 1, 2 and 3 threads, so switching between them is
//! safe).

mod common;
#[path = "../src/model/writer.rs"]
#[allow(dead_code, reason = "these tests write dense float models only")]
mod writer;

use std::sync::Arc;
use tensorflowlite_c::abi::arrays::int_array_slice;
use tensorflowlite_c::abi::types::{TfLiteContext, TfLiteDelegate, TfLiteIntArray, TfLiteStatus, TfLiteType};
use tensorflowlite_c::interpreter::{Interpreter, InterpreterConfig};
use tensorflowlite_c::model::{Model, fb};
use tensorflowlite_c::resolver::builtin::builtin_op_resolver;

fn interpreter(model: &str, fuse: bool) -> Interpreter {
    interpreter_with(model, fuse, 1)
}

fn interpreter_with(model: &str, fuse: bool, num_threads: i32) -> Interpreter {
    let path = common::corpus().join("models").join(model);
    let model = Model::from_file(&path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message));
    interpreter_of(model, fuse, num_threads)
}

/// An interpreter for `model`, its tensors allocated, fusing or not, on fixed threads.
fn interpreter_of(model: Model, fuse: bool, num_threads: i32) -> Interpreter {
    let config = InterpreterConfig {
        fuse_activations: fuse,
        num_threads,
        adaptive_threads: false,
        ..InterpreterConfig::default()
    };
    let mut interp = Interpreter::new(Arc::new(model), &builtin_op_resolver(), config).expect("interpreter");
    interp.allocate_tensors().expect("allocate");
    interp
}

/// Fills every float32 input with a fixed ramp, and every other with a fixed byte pattern.
fn fill_inputs(interp: &mut Interpreter) {
    for idx in interp.primary().inputs().to_vec() {
        let t = interp.primary_mut().tensor_ptr(idx).expect("input tensor");
        // SAFETY: after AllocateTensors an input holds `bytes` writable bytes.
        unsafe {
            if (*t).data_type() == Some(TfLiteType::kTfLiteFloat32) {
                let p = (*t).data_ptr() as *mut f32;
                for i in 0..(*t).bytes / 4 {
                    *p.add(i) = ((i % 29) as f32 - 14.0) / 7.0;
                }
            } else {
                let p = (*t).data_ptr() as *mut u8;
                for i in 0..(*t).bytes {
                    *p.add(i) = (i * 37 % 251) as u8;
                }
            }
        }
    }
}

fn outputs(interp: &Interpreter) -> Vec<Vec<u8>> {
    let sg = interp.primary();
    sg.outputs()
        .iter()
        .map(|&o| {
            let t = sg.tensor(o).expect("output tensor");
            // SAFETY: after Invoke the output holds `bytes` readable bytes.
            unsafe { std::slice::from_raw_parts(t.data_ptr() as *const u8, t.bytes).to_vec() }
        })
        .collect()
}

#[test]
fn fused_graph_gives_the_same_bits_in_less_memory() {
    // selfie_segmentation has 22 standalone RELUs after convolutions and additions.
    let mut fused = interpreter("selfie_segmentation.tflite", true);
    let mut plain = interpreter("selfie_segmentation.tflite", false);
    assert_eq!(fused.primary().fused_activations(), 22);
    assert_eq!(plain.primary().fused_activations(), 0);
    // Five convolutions fused into ADDs leave the plan too.
    assert_eq!(fused.primary().execution_plan().len() + 22 + 5, plain.primary().execution_plan().len());
    for interp in [&mut fused, &mut plain] {
        fill_inputs(interp);
        interp.invoke().expect("invoke");
    }
    assert_eq!(outputs(&fused), outputs(&plain), "fusion changed the answer");
    let (f, p) = (fused.primary().memory_stats().arena_bytes, plain.primary().memory_stats().arena_bytes);
    assert!(f < p, "fused arena {f} bytes, unfused {p}");
}

#[test]
fn prelu_after_add_is_fused_with_the_same_bits() {
    // face_landmark has 20 PRELUs with per-channel alphas after residual ADDs.
    let mut fused = interpreter("face_landmark.tflite", true);
    let mut plain = interpreter("face_landmark.tflite", false);
    assert_eq!(fused.primary().fused_activations(), 20);
    for interp in [&mut fused, &mut plain] {
        fill_inputs(interp);
        interp.invoke().expect("invoke");
    }
    assert_eq!(outputs(&fused), outputs(&plain), "fusion changed the answer");
}

#[test]
fn dequantized_constant_weights_are_computed_once_and_kept() {
    // face_landmark's 113 DEQUANTIZE nodes turn float16 weights into float32 ones in the
    // persistent arena: the first Invoke runs them, later ones skip them, and the answer
    // stays the same, also after the tensors are allocated (and the nodes prepared) again.
    let mut interp = interpreter("face_landmark.tflite", true);
    fill_inputs(&mut interp);
    assert_eq!(interp.primary().settled_nodes(), 0);
    interp.invoke().expect("first invoke");
    let first = outputs(&interp);
    assert_eq!(interp.primary().settled_nodes(), 113);
    for _ in 0..2 {
        interp.invoke().expect("invoke");
        assert_eq!(outputs(&interp), first, "skipping the settled nodes changed the answer");
    }
    // A delegate that claims nothing: the graph is unfused and every node prepared again.
    let mut seen = 0usize;
    // SAFETY: every other field of a delegate may be NULL / zero.
    let mut delegate: TfLiteDelegate = unsafe { std::mem::zeroed() };
    delegate.data_ = &mut seen as *mut usize as *mut _;
    delegate.Prepare = Some(record_plan);
    // SAFETY: the delegate and `seen` outlive the interpreter's use of them (it is
    // dropped at the end of the test, after the last use).
    unsafe { interp.modify_graph_with_delegate(&mut delegate) }.expect("apply delegate");
    interp.allocate_tensors().expect("allocate again");
    assert_eq!(interp.primary().settled_nodes(), 0, "prepared again: the nodes run once more");
    fill_inputs(&mut interp);
    interp.invoke().expect("invoke after preparing again");
    assert_eq!(outputs(&interp), first);
    assert_eq!(interp.primary().settled_nodes(), 113);
    drop(interp);
}

#[test]
fn models_without_standalone_activations_are_unchanged() {
    let interp = interpreter("mobilenet_v2_f32.tflite", true);
    assert_eq!(interp.primary().fused_activations(), 0);
}

#[test]
fn convolutions_fused_into_depthwise_give_the_same_bits_in_less_memory() {
    // mobilenet_v2 has 17 inverted bottlenecks: a convolution whose only reader is a 3x3
    // depthwise convolution (stride 1 and 2, the first a 3x3 stride-2 convolution). The
    // four whose intermediate outgrows a core's L2 (112x112x32, 112x112x96 and twice
    // 56x56x144 floats) are fused.
    let model = "mobilenet_v2_f32.tflite";
    for threads in [1, 2, 3] {
        let mut fused = interpreter_with(model, true, threads);
        let mut plain = interpreter_with(model, false, threads);
        assert_eq!(fused.primary().fused_conv_depthwise(), 4);
        assert_eq!(plain.primary().fused_conv_depthwise(), 0);
        // Ten convolutions fused into ADDs leave the plan too.
        assert_eq!(fused.primary().execution_plan().len() + 4 + 10, plain.primary().execution_plan().len());
        for interp in [&mut fused, &mut plain] {
            fill_inputs(interp);
            interp.invoke().expect("invoke");
        }
        assert_eq!(outputs(&fused), outputs(&plain), "{threads} threads: fusion changed the answer");
        let (f, p) = (fused.primary().memory_stats().arena_bytes, plain.primary().memory_stats().arena_bytes);
        assert!(3 * f < 2 * p, "fused arena {f} bytes, unfused {p}: the expanded tensors still take memory");
    }
}

#[test]
fn convolutions_fused_into_adds_give_the_same_bits() {
    // Residual blocks: a convolution whose only reader is an ADD (face_landmark's and
    // palm_detection_lite's with a PRELU fused after the ADD, the convolution's output
    // either operand), float32 and int8.
    for (model, pairs) in [
        ("face_landmark.tflite", 20),
        ("palm_detection_lite.tflite", 23),
        // Two more would keep a wider input alive longer (long skip connections): not fused.
        ("pose_landmark_full.tflite", 26),
        ("selfie_segmentation.tflite", 5),
        ("hand_landmark_lite.tflite", 10),
        ("mobilenet_v2_f32.tflite", 10),
        // int8: the ADD's rescaling on the convolution's requantized output.
        ("mobilenet_v2_int8.tflite", 10),
    ] {
        for threads in [1, 2, 3] {
            let mut fused = interpreter_with(model, true, threads);
            let mut plain = interpreter_with(model, false, threads);
            assert_eq!(fused.primary().fused_conv_add(), pairs, "{model}");
            assert_eq!(plain.primary().fused_conv_add(), 0, "{model}");
            for interp in [&mut fused, &mut plain] {
                fill_inputs(interp);
                interp.invoke().expect("invoke");
            }
            assert_eq!(outputs(&fused), outputs(&plain), "{model}, {threads} threads: fusion changed the answer");
            let (f, p) = (fused.primary().memory_stats().arena_bytes, plain.primary().memory_stats().arena_bytes);
            assert!(f <= p, "{model}: fused arena {f} bytes, unfused {p}");
        }
    }
}

/// `x -> CONV_2D -> a`, `x -> CONV_2D -> b`, `ADD(a, b)` (1x1 filters, 8 channels, a 6x6
/// image), with `b` broadcast from one pixel where `broadcast`: the ADD's other operand is
/// made after the first convolution, so a fused node must run where the ADD ran.
fn two_branch_model(broadcast: bool) -> Vec<u8> {
    use tensorflowlite_c::model::fb::BuiltinOperator as Op;
    let mut w = writer::ModelWriter::new();
    let x = w.tensor_f32("x", &[1, 6, 6, 8]);
    let weights = |seed: usize| (0..64).map(|i| (((i * 7 + seed) % 13) as f32 - 6.0) / 8.0).collect::<Vec<f32>>();
    let (fa, fb) = (w.constant_f32("fa", &[8, 1, 1, 8], &weights(1)), w.constant_f32("fb", &[8, 1, 1, 8], &weights(5)));
    let bias = w.constant_f32("bias", &[8], &[0.5, -0.25, 0.0, 1.0, -1.0, 0.125, 2.0, -0.5]);
    let a = w.tensor_f32("a", &[1, 6, 6, 8]);
    w.op(Op::CONV_2D, &[x, fa, bias], &[a]);
    // The second convolution reads `x` itself, or a one-pixel input `y` of its own.
    let (b, inputs) = if broadcast {
        let y = w.tensor_f32("y", &[1, 1, 1, 8]);
        let b = w.tensor_f32("b", &[1, 1, 1, 8]);
        w.op(Op::CONV_2D, &[y, fb, bias], &[b]);
        (b, vec![x, y])
    } else {
        let b = w.tensor_f32("b", &[1, 6, 6, 8]);
        w.op(Op::CONV_2D, &[x, fb, bias], &[b]);
        (b, vec![x])
    };
    let u = w.tensor_f32("u", &[1, 6, 6, 8]);
    w.op(Op::ADD, &[a, b], &[u]);
    w.io(&inputs, &[u]);
    w.finish()
}

fn interpreter_from(bytes: Vec<u8>, fuse: bool, num_threads: i32) -> Interpreter {
    interpreter_of(Model::from_vec(bytes).expect("model"), fuse, num_threads)
}

#[test]
fn a_convolution_whose_add_operand_comes_later_runs_where_the_add_ran() {
    for threads in [1, 2] {
        let mut fused = interpreter_from(two_branch_model(false), true, threads);
        let mut plain = interpreter_from(two_branch_model(false), false, threads);
        assert_eq!(fused.primary().fused_conv_add(), 1);
        // The first convolution left; the fused node took the ADD's place, after the second.
        assert_eq!(fused.primary().execution_plan(), &[1, 2]);
        for interp in [&mut fused, &mut plain] {
            fill_inputs(interp);
            interp.invoke().expect("invoke");
        }
        assert_eq!(outputs(&fused), outputs(&plain), "{threads} threads: fusion changed the answer");
    }
    // A broadcast operand does not fuse.
    let interp = interpreter_from(two_branch_model(true), true, 1);
    assert_eq!(interp.primary().fused_conv_add(), 0);
    assert_eq!(interp.primary().execution_plan().len(), 3);
}

/// A delegate that claims nothing and records the length of the execution plan its
/// Prepare sees in `data_`.
unsafe extern "C" fn record_plan(context: *mut TfLiteContext, delegate: *mut TfLiteDelegate) -> TfLiteStatus {
    let mut plan: *mut TfLiteIntArray = std::ptr::null_mut();
    // SAFETY: the runtime calls Prepare with a live context and delegate; `data_` points
    // at the test's usize.
    unsafe {
        let get = (*context).GetExecutionPlan.expect("GetExecutionPlan");
        if get(context, &mut plan) != TfLiteStatus::kTfLiteOk {
            return TfLiteStatus::kTfLiteError;
        }
        *((*delegate).data_ as *mut usize) = int_array_slice(plan).len();
    }
    TfLiteStatus::kTfLiteOk
}

#[test]
fn a_delegate_sees_the_models_graph() {
    // Activation fusions (selfie_segmentation) and ADD+PRELU fusions (face_landmark).
    // Convolutions fused into depthwise convolutions (mobilenet_v2).
    // Convolutions fused into the ADDs that read them (all three).
    for (model, fusions) in
        [("selfie_segmentation.tflite", 22 + 5), ("face_landmark.tflite", 20 + 20), ("mobilenet_v2_f32.tflite", 4 + 10)]
    {
        let mut interp = interpreter(model, true);
        let fused_len = interp.primary().execution_plan().len();
        let mut seen = 0usize;
        // SAFETY: every other field of a delegate may be NULL / zero.
        let mut delegate: TfLiteDelegate = unsafe { std::mem::zeroed() };
        delegate.data_ = &mut seen as *mut usize as *mut _;
        delegate.Prepare = Some(record_plan);
        // SAFETY: the delegate and `seen` outlive the interpreter's use of them (it is
        // dropped at the end of this iteration, after the last use).
        unsafe { interp.modify_graph_with_delegate(&mut delegate) }.expect("apply delegate");
        assert_eq!(seen, fused_len + fusions, "{model}: the delegate saw a fused graph");
        let fusions = |i: &Interpreter| {
            let s = i.primary();
            s.fused_activations() + s.fused_conv_depthwise() + s.fused_conv_add()
        };
        assert_eq!(fusions(&interp), 0);
        interp.allocate_tensors().expect("allocate");
        assert_eq!(fusions(&interp), 0, "{model}: fused again under a delegate");
        fill_inputs(&mut interp);
        interp.invoke().expect("invoke");
        let mut plain = interpreter(model, false);
        fill_inputs(&mut plain);
        plain.invoke().expect("invoke");
        assert_eq!(outputs(&interp), outputs(&plain), "{model}");
        drop(interp);
    }
}

fn interpreter_threads(model: &str, threads: i32) -> Interpreter {
    let path = common::corpus().join("models").join(model);
    let model = Model::from_file(&path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message));
    let config = InterpreterConfig { num_threads: threads, adaptive_threads: false, ..InterpreterConfig::default() };
    let mut interp = Interpreter::new(Arc::new(model), &builtin_op_resolver(), config).expect("interpreter");
    interp.allocate_tensors().expect("allocate");
    interp
}

#[test]
fn thread_counts_give_the_same_bits() {
    for model in [
        "mobilenet_v2_f32.tflite",
        "pose_landmark_full.tflite",
        "palm_detection_lite.tflite",
        "face_landmark.tflite",
        "hand_landmark_lite.tflite",
        "selfie_segmentation.tflite",
    ] {
        let mut runs = Vec::new();
        for threads in [1, 2, 3] {
            let mut interp = interpreter_threads(model, threads);
            fill_inputs(&mut interp);
            interp.invoke().expect("invoke");
            runs.push(outputs(&interp));
        }
        assert!(runs.iter().all(|r| *r == runs[0]), "{model}: outputs differ between 1, 2 and 3 threads");
    }
}
