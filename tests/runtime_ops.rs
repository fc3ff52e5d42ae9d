//! The ops that need runtime support beyond one kernel call: dynamic output tensors
//! (FILL, RANGE and the nodes after them, re-prepared during Invoke), control flow (IF,
//! WHILE, CALL_ONCE: other subgraphs), resource variables (VAR_HANDLE, READ_VARIABLE,
//! ASSIGN_VARIABLE) and recurrent ops with state kept across invokes (LSTM,
//! UNIDIRECTIONAL_SEQUENCE_RNN). Models are written in memory with a small
//! multi-subgraph writer; malformed ones (recursion, bad subgraph indices, mismatched
//! operand counts) must be refused with an error.

use flatbuffers::{FlatBufferBuilder, UnionWIPOffset, WIPOffset};
use std::sync::{Arc, Mutex};
use tensorflowlite_c::abi::types::{TfLiteAllocationType, TfLiteTensor};
use tensorflowlite_c::interpreter::{Interpreter, InterpreterConfig};
use tensorflowlite_c::model::{Model, fb};
use tensorflowlite_c::resolver::builtin::builtin_op_resolver;

// ---------------------------------------------------------------------------------------
// A small multi-subgraph model writer
// ---------------------------------------------------------------------------------------

#[derive(Clone)]
struct T {
    ty: fb::TensorType,
    shape: Vec<i32>,
    data: Option<Vec<u8>>,
    variable: bool,
    quant: Option<(f32, i64)>,
}

#[derive(Clone)]
enum Opt {
    None,
    If(i32, i32),
    While(i32, i32),
    CallOnce(i32),
    VarHandle(&'static str),
    Concat(i32),
    Rnn(fb::ActivationFunctionType, bool),
    SeqRnn(fb::ActivationFunctionType, bool),
    Lstm(fb::ActivationFunctionType, f32, f32),
    SeqLstm(fb::ActivationFunctionType, f32, f32, bool),
}

#[derive(Clone)]
struct Op {
    code: fb::BuiltinOperator,
    version: i32,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
    opt: Opt,
}

#[derive(Clone, Default)]
struct Sg {
    tensors: Vec<T>,
    ops: Vec<Op>,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn i32_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl Sg {
    fn t(&mut self, ty: fb::TensorType, shape: &[i32]) -> i32 {
        self.tensors.push(T { ty, shape: shape.to_vec(), data: None, variable: false, quant: None });
        self.tensors.len() as i32 - 1
    }
    fn f(&mut self, shape: &[i32]) -> i32 {
        self.t(fb::TensorType::FLOAT32, shape)
    }
    fn i(&mut self, shape: &[i32]) -> i32 {
        self.t(fb::TensorType::INT32, shape)
    }
    fn var(&mut self, shape: &[i32]) -> i32 {
        let t = self.f(shape);
        self.tensors[t as usize].variable = true;
        t
    }
    fn cf(&mut self, shape: &[i32], v: &[f32]) -> i32 {
        let t = self.f(shape);
        self.tensors[t as usize].data = Some(f32_bytes(v));
        t
    }
    fn ci(&mut self, shape: &[i32], v: &[i32]) -> i32 {
        let t = self.i(shape);
        self.tensors[t as usize].data = Some(i32_bytes(v));
        t
    }
    fn op(&mut self, code: fb::BuiltinOperator, inputs: &[i32], outputs: &[i32], opt: Opt) {
        self.ops.push(Op { code, version: 1, inputs: inputs.to_vec(), outputs: outputs.to_vec(), opt });
    }
    fn io(&mut self, inputs: &[i32], outputs: &[i32]) {
        self.inputs = inputs.to_vec();
        self.outputs = outputs.to_vec();
    }
}

fn options<'a>(b: &mut FlatBufferBuilder<'a>, op: &Op) -> (fb::BuiltinOptions, Option<WIPOffset<UnionWIPOffset>>) {
    use fb::BuiltinOperator as B;
    match (&op.opt, op.code) {
        (Opt::If(t, e), _) => {
            let o = fb::IfOptions::create(b, &fb::IfOptionsArgs { then_subgraph_index: *t, else_subgraph_index: *e });
            (fb::BuiltinOptions::IfOptions, Some(o.as_union_value()))
        }
        (Opt::While(c, body), _) => {
            let o = fb::WhileOptions::create(
                b,
                &fb::WhileOptionsArgs { cond_subgraph_index: *c, body_subgraph_index: *body },
            );
            (fb::BuiltinOptions::WhileOptions, Some(o.as_union_value()))
        }
        (Opt::CallOnce(i), _) => {
            let o = fb::CallOnceOptions::create(b, &fb::CallOnceOptionsArgs { init_subgraph_index: *i });
            (fb::BuiltinOptions::CallOnceOptions, Some(o.as_union_value()))
        }
        (Opt::VarHandle(name), _) => {
            let n = b.create_string(name);
            let o =
                fb::VarHandleOptions::create(b, &fb::VarHandleOptionsArgs { container: None, shared_name: Some(n) });
            (fb::BuiltinOptions::VarHandleOptions, Some(o.as_union_value()))
        }
        (Opt::Concat(axis), _) => {
            let o = fb::ConcatenationOptions::create(
                b,
                &fb::ConcatenationOptionsArgs { axis: *axis, ..Default::default() },
            );
            (fb::BuiltinOptions::ConcatenationOptions, Some(o.as_union_value()))
        }
        (Opt::Rnn(a, asym), _) => {
            let o = fb::RNNOptions::create(
                b,
                &fb::RNNOptionsArgs { fused_activation_function: *a, asymmetric_quantize_inputs: *asym },
            );
            (fb::BuiltinOptions::RNNOptions, Some(o.as_union_value()))
        }
        (Opt::SeqRnn(a, time_major), _) => {
            let o = fb::SequenceRNNOptions::create(
                b,
                &fb::SequenceRNNOptionsArgs {
                    time_major: *time_major,
                    fused_activation_function: *a,
                    ..Default::default()
                },
            );
            (fb::BuiltinOptions::SequenceRNNOptions, Some(o.as_union_value()))
        }
        (Opt::Lstm(a, cell_clip, proj_clip), _) => {
            let o = fb::LSTMOptions::create(
                b,
                &fb::LSTMOptionsArgs {
                    fused_activation_function: *a,
                    cell_clip: *cell_clip,
                    proj_clip: *proj_clip,
                    ..Default::default()
                },
            );
            (fb::BuiltinOptions::LSTMOptions, Some(o.as_union_value()))
        }
        (Opt::SeqLstm(a, cell_clip, proj_clip, time_major), _) => {
            let o = fb::UnidirectionalSequenceLSTMOptions::create(
                b,
                &fb::UnidirectionalSequenceLSTMOptionsArgs {
                    fused_activation_function: *a,
                    cell_clip: *cell_clip,
                    proj_clip: *proj_clip,
                    time_major: *time_major,
                    ..Default::default()
                },
            );
            (fb::BuiltinOptions::UnidirectionalSequenceLSTMOptions, Some(o.as_union_value()))
        }
        (Opt::None, B::ADD) => {
            let o = fb::AddOptions::create(b, &fb::AddOptionsArgs::default());
            (fb::BuiltinOptions::AddOptions, Some(o.as_union_value()))
        }
        (Opt::None, B::MUL) => {
            let o = fb::MulOptions::create(b, &fb::MulOptionsArgs::default());
            (fb::BuiltinOptions::MulOptions, Some(o.as_union_value()))
        }
        (Opt::None, B::SUB) => {
            let o = fb::SubOptions::create(b, &fb::SubOptionsArgs::default());
            (fb::BuiltinOptions::SubOptions, Some(o.as_union_value()))
        }
        _ => (fb::BuiltinOptions::NONE, None),
    }
}

fn build(sgs: &[Sg]) -> Vec<u8> {
    let mut b = FlatBufferBuilder::new();
    let mut buffers = vec![fb::Buffer::create(&mut b, &fb::BufferArgs::default())];
    let mut codes: Vec<(i32, i32)> = Vec::new();
    let mut subgraphs = Vec::new();
    for (si, sg) in sgs.iter().enumerate() {
        let mut tensors = Vec::new();
        for t in &sg.tensors {
            let buffer = match &t.data {
                Some(d) => {
                    let data = b.create_vector(d);
                    buffers
                        .push(fb::Buffer::create(&mut b, &fb::BufferArgs { data: Some(data), ..Default::default() }));
                    buffers.len() as u32 - 1
                }
                None => 0,
            };
            let shape = b.create_vector(&t.shape);
            let quantization = t.quant.map(|(s, z)| {
                let scale = b.create_vector(&[s]);
                let zp = b.create_vector(&[z]);
                fb::QuantizationParameters::create(
                    &mut b,
                    &fb::QuantizationParametersArgs { scale: Some(scale), zero_point: Some(zp), ..Default::default() },
                )
            });
            tensors.push(fb::Tensor::create(
                &mut b,
                &fb::TensorArgs {
                    shape: Some(shape),
                    type_: t.ty,
                    buffer,
                    is_variable: t.variable,
                    quantization,
                    ..Default::default()
                },
            ));
        }
        let mut ops = Vec::new();
        for o in &sg.ops {
            let key = (o.code.0, o.version);
            let idx = codes.iter().position(|c| *c == key).unwrap_or_else(|| {
                codes.push(key);
                codes.len() - 1
            });
            let inputs = b.create_vector(&o.inputs);
            let outputs = b.create_vector(&o.outputs);
            let (opt_type, opt) = options(&mut b, o);
            ops.push(fb::Operator::create(
                &mut b,
                &fb::OperatorArgs {
                    opcode_index: idx as u32,
                    inputs: Some(inputs),
                    outputs: Some(outputs),
                    builtin_options_type: opt_type,
                    builtin_options: opt,
                    ..Default::default()
                },
            ));
        }
        let tensors = b.create_vector(&tensors);
        let ops = b.create_vector(&ops);
        let inputs = b.create_vector(&sg.inputs);
        let outputs = b.create_vector(&sg.outputs);
        let name = b.create_string(&format!("sg{si}"));
        subgraphs.push(fb::SubGraph::create(
            &mut b,
            &fb::SubGraphArgs {
                tensors: Some(tensors),
                inputs: Some(inputs),
                outputs: Some(outputs),
                operators: Some(ops),
                name: Some(name),
                ..Default::default()
            },
        ));
    }
    let opcodes: Vec<_> = codes
        .iter()
        .map(|&(code, version)| {
            fb::OperatorCode::create(
                &mut b,
                &fb::OperatorCodeArgs {
                    deprecated_builtin_code: code.min(127) as i8,
                    custom_code: None,
                    version,
                    builtin_code: fb::BuiltinOperator(code),
                },
            )
        })
        .collect();
    let subgraphs = b.create_vector(&subgraphs);
    let opcodes = b.create_vector(&opcodes);
    let buffers = b.create_vector(&buffers);
    let model = fb::Model::create(
        &mut b,
        &fb::ModelArgs {
            version: 3,
            operator_codes: Some(opcodes),
            subgraphs: Some(subgraphs),
            buffers: Some(buffers),
            ..Default::default()
        },
    );
    b.finish(model, Some("TFL3"));
    b.finished_data().to_vec()
}

// ---------------------------------------------------------------------------------------
// Running models
// ---------------------------------------------------------------------------------------

struct Run {
    interp: Interpreter,
    errors: Arc<Mutex<Vec<String>>>,
}

fn interpreter(sgs: &[Sg]) -> Result<Run, String> {
    let model = Model::from_vec(build(sgs)).map_err(|e| e.message)?;
    let errors = Arc::new(Mutex::new(Vec::new()));
    let e2 = errors.clone();
    let config = InterpreterConfig {
        reporter: Arc::new(move |m: &str| e2.lock().unwrap().push(m.to_string())),
        ..Default::default()
    };
    let interp = Interpreter::new(Arc::new(model), &builtin_op_resolver(), config).map_err(|e| e.message)?;
    Ok(Run { interp, errors })
}

impl Run {
    fn tensor(&mut self, index: i32) -> &mut TfLiteTensor {
        let p = self.interp.primary_mut().tensor_ptr(index).expect("tensor index");
        // SAFETY: a live tensor of the primary subgraph; no other reference is held.
        unsafe { &mut *p }
    }
    fn input_index(&self, k: usize) -> i32 {
        self.interp.primary().inputs()[k]
    }
    fn output_index(&self, k: usize) -> i32 {
        self.interp.primary().outputs()[k]
    }
    fn set<E: Copy>(&mut self, k: usize, v: &[E]) {
        let i = self.input_index(k);
        let t = self.tensor(i);
        assert_eq!(t.bytes, std::mem::size_of_val(v), "input {k} size");
        // SAFETY: the tensor holds `bytes` writable bytes (checked above).
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr() as *const u8, t.data.data as *mut u8, t.bytes) };
    }
    fn resize(&mut self, k: usize, dims: &[i32]) {
        let i = self.input_index(k);
        self.interp.resize_input_tensor(i, dims).expect("resize");
    }
    fn shape(&mut self, k: usize) -> Vec<i32> {
        let i = self.output_index(k);
        let t = self.tensor(i);
        // SAFETY: dims is a live int array owned by the tensor.
        unsafe { tensorflowlite_c::abi::arrays::int_array_slice(t.dims) }.to_vec()
    }
    fn get<E: Copy + Default>(&mut self, k: usize) -> Vec<E> {
        let i = self.output_index(k);
        let t = self.tensor(i);
        let n = t.bytes / std::mem::size_of::<E>();
        let mut out = vec![E::default(); n];
        // SAFETY: the tensor holds `bytes` readable bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                t.data.data as *const u8,
                out.as_mut_ptr() as *mut u8,
                n * std::mem::size_of::<E>(),
            )
        };
        out
    }
    fn allocate(&mut self) -> Result<(), String> {
        self.interp
            .allocate_tensors()
            .map_err(|e| format!("{} / reported: {:?}", e.message, self.errors.lock().unwrap()))
    }
    fn invoke(&mut self) -> Result<(), String> {
        self.interp.invoke().map_err(|e| format!("{} / reported: {:?}", e.message, self.errors.lock().unwrap()))
    }
}

fn close(a: &[f32], b: &[f32], tol: f32) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol)
}

use fb::BuiltinOperator as B;

// ---------------------------------------------------------------------------------------
// Dynamic tensors
// ---------------------------------------------------------------------------------------

/// x → a = x + x; f = FILL(dims, v) (dynamic); y = f + a (prepared again whenever f
/// changes shape). `a`, computed before the dynamic node, must survive the re-plans.
fn fill_then_add() -> Sg {
    let mut g = Sg::default();
    let x = g.f(&[1]);
    let dims = g.i(&[2]);
    let v = g.f(&[]);
    let a = g.f(&[1]);
    let f = g.f(&[1, 1]);
    let y = g.f(&[1, 1]);
    g.op(B::ADD, &[x, x], &[a], Opt::None);
    g.op(B::FILL, &[dims, v], &[f], Opt::None);
    g.op(B::ADD, &[f, a], &[y], Opt::None);
    g.io(&[x, dims, v], &[y]);
    g
}

#[test]
fn dynamic_fill_reprepares_later_nodes() {
    let mut r = interpreter(&[fill_then_add()]).unwrap();
    r.allocate().unwrap();
    for (dims, n) in [([2, 3], 6), ([1, 1], 1), ([40, 50], 2000), ([3, 2], 6), ([0, 4], 0)] {
        r.set(0, &[1.5f32]);
        r.set(1, &dims);
        r.set(2, &[2.0f32]);
        r.invoke().unwrap();
        assert_eq!(r.shape(0), dims.to_vec());
        assert_eq!(r.get::<f32>(0), vec![5.0; n], "dims {dims:?}");
    }
    // A bad dims value is an error, and the interpreter still works afterwards.
    r.set(1, &[-1, 3]);
    assert!(r.invoke().is_err());
    r.set(1, &[2, 2]);
    r.invoke().unwrap();
    assert_eq!(r.get::<f32>(0), vec![5.0; 4]);
}

#[test]
fn dynamic_range_feeds_a_static_consumer() {
    let mut g = Sg::default();
    let (s, l, d) = (g.f(&[]), g.f(&[]), g.f(&[]));
    let r = g.f(&[1]);
    let y = g.f(&[1]);
    g.op(B::RANGE, &[s, l, d], &[r], Opt::None);
    g.op(B::MUL, &[r, r], &[y], Opt::None);
    g.io(&[s, l, d], &[y]);
    let mut run = interpreter(&[g]).unwrap();
    run.allocate().unwrap();
    for (start, limit, delta) in [(0.0f32, 4.0f32, 1.0f32), (1.0, 2.0, 0.25), (5.0, 0.0, -2.5)] {
        run.set(0, &[start]);
        run.set(1, &[limit]);
        run.set(2, &[delta]);
        run.invoke().unwrap();
        let mut want = Vec::new();
        let mut v = start;
        while (delta > 0.0 && v < limit) || (delta < 0.0 && v > limit) {
            want.push(v * v);
            v += delta;
        }
        assert_eq!(run.get::<f32>(0), want);
    }
}

// ---------------------------------------------------------------------------------------
// IF
// ---------------------------------------------------------------------------------------

/// main: c = x > 0 (via cond input), y = IF(c, x) with then: x * 2, else: x - 1.
fn if_model(then_idx: i32, else_idx: i32) -> Vec<Sg> {
    let mut main = Sg::default();
    let c = main.t(fb::TensorType::BOOL, &[]);
    let x = main.f(&[2]);
    let y = main.f(&[2]);
    main.op(B::IF, &[c, x], &[y], Opt::If(then_idx, else_idx));
    main.io(&[c, x], &[y]);
    let mut then = Sg::default();
    let (a, two, o) = (then.f(&[2]), then.cf(&[], &[2.0]), then.f(&[2]));
    then.op(B::MUL, &[a, two], &[o], Opt::None);
    then.io(&[a], &[o]);
    let mut els = Sg::default();
    let (a, one, o) = (els.f(&[2]), els.cf(&[], &[1.0]), els.f(&[2]));
    els.op(B::SUB, &[a, one], &[o], Opt::None);
    els.io(&[a], &[o]);
    vec![main, then, els]
}

#[test]
fn if_runs_the_chosen_branch() {
    let mut r = interpreter(&if_model(1, 2)).unwrap();
    r.allocate().unwrap();
    for (c, want) in [(1u8, [6.0f32, -2.0]), (0, [2.0, -2.0])] {
        r.set(0, &[c]);
        r.set(1, &[3.0f32, -1.0]);
        r.invoke().unwrap();
        assert_eq!(r.get::<f32>(0), want.to_vec());
    }
    // Resizing the input flows into the branches and out to the node's output.
    r.resize(1, &[3]);
    r.allocate().unwrap();
    r.set(0, &[1u8]);
    r.set(1, &[1.0f32, 2.0, 3.0]);
    r.invoke().unwrap();
    assert_eq!((r.shape(0), r.get::<f32>(0)), (vec![3], vec![2.0, 4.0, 6.0]));
}

#[test]
fn if_with_branch_shapes_that_differ_has_a_dynamic_output() {
    // then: output = input (shape [2]); else: output = a constant of shape [3].
    let mut main = Sg::default();
    let c = main.t(fb::TensorType::BOOL, &[]);
    let x = main.f(&[2]);
    let y = main.f(&[2]);
    main.op(B::IF, &[c, x], &[y], Opt::If(1, 2));
    main.io(&[c, x], &[y]);
    let mut then = Sg::default();
    let a = then.f(&[2]);
    let o = then.f(&[2]);
    let zero = then.cf(&[], &[0.0]);
    then.op(B::ADD, &[a, zero], &[o], Opt::None);
    then.io(&[a], &[o]);
    let mut els = Sg::default();
    let a = els.f(&[2]);
    let k = els.cf(&[3], &[7.0, 8.0, 9.0]);
    els.io(&[a], &[k]);
    let mut r = interpreter(&[main, then, els]).unwrap();
    r.allocate().unwrap();
    r.set(0, &[0u8]);
    r.set(1, &[1.0f32, 2.0]);
    r.invoke().unwrap();
    assert_eq!((r.shape(0), r.get::<f32>(0)), (vec![3], vec![7.0, 8.0, 9.0]));
    r.set(0, &[1u8]);
    r.invoke().unwrap();
    assert_eq!((r.shape(0), r.get::<f32>(0)), (vec![2], vec![1.0, 2.0]));
    let out = r.output_index(0);
    assert_eq!(r.tensor(out).allocation_type, TfLiteAllocationType::kTfLiteDynamic);
}

// ---------------------------------------------------------------------------------------
// WHILE
// ---------------------------------------------------------------------------------------

/// while i < n: (i, v) = (i + 1, concat(v, v)): v doubles in length each step, so the
/// body changes shapes and the node's outputs are dynamic.
fn while_doubling(n: i32) -> Vec<Sg> {
    let mut main = Sg::default();
    let i0 = main.ci(&[], &[0]);
    let v0 = main.f(&[1]);
    let (i_out, v_out) = (main.i(&[]), main.f(&[1]));
    let y = main.f(&[1]);
    let one = main.cf(&[], &[1.0]);
    main.op(B::WHILE, &[i0, v0], &[i_out, v_out], Opt::While(1, 2));
    main.op(B::ADD, &[v_out, one], &[y], Opt::None);
    main.io(&[v0], &[y, i_out]);
    let mut cond = Sg::default();
    let (ci, cv) = (cond.i(&[]), cond.f(&[1]));
    let limit = cond.ci(&[], &[n]);
    let b = cond.t(fb::TensorType::BOOL, &[]);
    cond.op(B::LESS, &[ci, limit], &[b], Opt::None);
    cond.io(&[ci, cv], &[b]);
    let mut body = Sg::default();
    let (bi, bv) = (body.i(&[]), body.f(&[1]));
    let one = body.ci(&[], &[1]);
    let (ni, nv) = (body.i(&[]), body.f(&[2]));
    body.op(B::ADD, &[bi, one], &[ni], Opt::None);
    body.op(B::CONCATENATION, &[bv, bv], &[nv], Opt::Concat(0));
    body.io(&[bi, bv], &[ni, nv]);
    vec![main, cond, body]
}

#[test]
fn while_with_growing_values() {
    let mut r = interpreter(&while_doubling(3)).unwrap();
    r.allocate().unwrap();
    for x in [2.0f32, -1.0] {
        r.set(0, &[x]);
        r.invoke().unwrap();
        assert_eq!(r.shape(0), vec![8]);
        assert_eq!(r.get::<f32>(0), vec![x + 1.0; 8]);
        assert_eq!(r.get::<i32>(1), vec![3]);
    }
    // No iteration at all: the outputs are the inputs.
    let mut r = interpreter(&while_doubling(0)).unwrap();
    r.allocate().unwrap();
    r.set(0, &[4.0f32]);
    r.invoke().unwrap();
    assert_eq!((r.shape(0), r.get::<f32>(0)), (vec![1], vec![5.0]));
}

/// The corpus while_loop shape: counter and a value of fixed shape (static outputs).
fn while_static(cond_idx: i32, body_idx: i32) -> Vec<Sg> {
    let mut main = Sg::default();
    let i0 = main.ci(&[], &[0]);
    let x = main.f(&[4]);
    let (io, xo) = (main.i(&[]), main.f(&[4]));
    main.op(B::WHILE, &[i0, x], &[io, xo], Opt::While(cond_idx, body_idx));
    main.io(&[x], &[xo]);
    let mut cond = Sg::default();
    let (ci, cx) = (cond.i(&[]), cond.f(&[4]));
    let limit = cond.ci(&[], &[5]);
    let b = cond.t(fb::TensorType::BOOL, &[]);
    cond.op(B::LESS, &[ci, limit], &[b], Opt::None);
    cond.io(&[ci, cx], &[b]);
    let mut body = Sg::default();
    let (bi, bx) = (body.i(&[]), body.f(&[4]));
    let one = body.ci(&[], &[1]);
    let half = body.cf(&[], &[0.5]);
    let (ni, nx) = (body.i(&[]), body.f(&[4]));
    body.op(B::ADD, &[bi, one], &[ni], Opt::None);
    body.op(B::MUL, &[bx, half], &[nx], Opt::None);
    body.io(&[bi, bx], &[ni, nx]);
    vec![main, cond, body]
}

#[test]
fn while_with_static_values() {
    let mut r = interpreter(&while_static(1, 2)).unwrap();
    r.allocate().unwrap();
    r.set(0, &[32.0f32, 64.0, -32.0, 0.0]);
    r.invoke().unwrap();
    assert_eq!(r.get::<f32>(0), vec![1.0, 2.0, -1.0, 0.0]);
    let out = r.output_index(0);
    assert_ne!(r.tensor(out).allocation_type, TfLiteAllocationType::kTfLiteDynamic);
    // A second invoke starts from the new inputs.
    r.set(0, &[64.0f32, 0.0, 0.0, 0.0]);
    r.invoke().unwrap();
    assert_eq!(r.get::<f32>(0), vec![2.0, 0.0, 0.0, 0.0]);
}

#[test]
fn control_flow_into_the_calling_subgraph_is_an_error() {
    // IF whose branch is the main subgraph itself.
    for (t, e) in [(0, 1), (1, 0), (5, 1), (-1, 2), (1, 3)] {
        let r = interpreter(&if_model(t, e));
        if let Ok(mut r) = r {
            assert!(r.allocate().is_err(), "IF({t}, {e}) must fail to prepare");
        }
    }
    // WHILE with cond == body, out of range, or into main.
    for (c, b) in [(1, 1), (0, 2), (1, 0), (3, 2), (1, -4)] {
        if let Ok(mut r) = interpreter(&while_static(c, b)) {
            assert!(r.allocate().is_err(), "WHILE({c}, {b}) must fail to prepare");
        }
    }
    // A cycle through two subgraphs: main IF → sg1 (IF → main).
    let mut m = if_model(1, 2);
    let mut then = Sg::default();
    let c = then.t(fb::TensorType::BOOL, &[]);
    let a = then.f(&[2]);
    let o = then.f(&[2]);
    let cc = then.t(fb::TensorType::BOOL, &[]);
    let _ = c;
    then.tensors[cc as usize].data = Some(vec![1]);
    then.op(B::IF, &[cc, cc, a], &[o], Opt::If(0, 0));
    then.io(&[a], &[o]);
    m[1] = then;
    let mut r = interpreter(&m).unwrap();
    let e = r.allocate().unwrap_err();
    assert!(e.contains("running"), "{e}");
    // Operand counts that differ from the callee's.
    let mut m = if_model(1, 2);
    m[2].inputs.push(0);
    let mut r = interpreter(&m).unwrap();
    assert!(r.allocate().is_err());
}

// ---------------------------------------------------------------------------------------
// CALL_ONCE and resource variables
// ---------------------------------------------------------------------------------------

/// main: CALL_ONCE(init); h = VAR_HANDLE("acc"); v = READ(h); y = v + x; ASSIGN(h, y).
/// init: h = VAR_HANDLE("acc"); ASSIGN(h, [1, 2]).
fn accumulator() -> Vec<Sg> {
    let mut main = Sg::default();
    let x = main.f(&[2]);
    let h = main.t(fb::TensorType::RESOURCE, &[]);
    let v = main.f(&[2]);
    let y = main.f(&[2]);
    main.op(B::CALL_ONCE, &[], &[], Opt::CallOnce(1));
    main.op(B::VAR_HANDLE, &[], &[h], Opt::VarHandle("acc"));
    main.op(B::READ_VARIABLE, &[h], &[v], Opt::None);
    main.op(B::ADD, &[v, x], &[y], Opt::None);
    main.op(B::ASSIGN_VARIABLE, &[h, y], &[], Opt::None);
    main.io(&[x], &[y]);
    let mut init = Sg::default();
    let h = init.t(fb::TensorType::RESOURCE, &[]);
    let k = init.cf(&[2], &[1.0, 2.0]);
    init.op(B::VAR_HANDLE, &[], &[h], Opt::VarHandle("acc"));
    init.op(B::ASSIGN_VARIABLE, &[h, k], &[], Opt::None);
    init.io(&[], &[]);
    vec![main, init]
}

#[test]
fn call_once_initializes_a_variable_that_persists() {
    let mut r = interpreter(&accumulator()).unwrap();
    r.allocate().unwrap();
    let mut acc = [1.0f32, 2.0];
    for step in 0..4 {
        let x = [step as f32, 10.0];
        r.set(0, &x);
        r.invoke().unwrap();
        acc = [acc[0] + x[0], acc[1] + x[1]];
        assert_eq!(r.get::<f32>(0), acc.to_vec(), "step {step}");
    }
    // Re-allocating does not reset resource variables (nor run the init again).
    r.interp.allocate_tensors().unwrap();
    r.set(0, &[0.0f32, 0.0]);
    r.invoke().unwrap();
    assert_eq!(r.get::<f32>(0), acc.to_vec());
}

#[test]
fn reading_an_unassigned_variable_is_an_error() {
    let mut m = accumulator();
    m[0].ops.remove(0); // no CALL_ONCE
    m.truncate(1);
    let mut r = interpreter(&m).unwrap();
    r.allocate().unwrap();
    r.set(0, &[1.0f32, 1.0]);
    let e = r.invoke().unwrap_err();
    assert!(e.contains("never assigned"), "{e}");
}

#[test]
fn call_once_errors() {
    // Init subgraph = the caller, out of range, or with inputs.
    for idx in [0, 7, -1] {
        let mut m = accumulator();
        m[0].ops[0].opt = Opt::CallOnce(idx);
        if let Ok(mut r) = interpreter(&m) {
            let ok = r.allocate().is_ok() && {
                r.set(0, &[1.0f32, 1.0]);
                r.invoke().is_ok()
            };
            assert!(!ok, "CALL_ONCE({idx}) must fail");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Recurrent ops: state in variable tensors, kept across invokes
// ---------------------------------------------------------------------------------------

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.next() * scale).collect()
    }
}

fn act(x: f64, a: fb::ActivationFunctionType) -> f64 {
    match a {
        fb::ActivationFunctionType::TANH => x.tanh(),
        fb::ActivationFunctionType::RELU => x.max(0.0),
        fb::ActivationFunctionType::SIGN_BIT => {
            if x < 0.0 {
                1.0
            } else {
                0.0
            }
        }
        _ => x,
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn matvec(m: &[f32], rows: usize, cols: usize, x: &[f64]) -> Vec<f64> {
    (0..rows).map(|r| (0..cols).map(|c| f64::from(m[r * cols + c]) * x[c]).sum()).collect()
}

/// An RNN step in f64: h = act(b + W x + R h).
fn rnn_ref(w: &[f32], r: &[f32], b: &[f32], x: &[f64], h: &mut Vec<f64>, a: fb::ActivationFunctionType) {
    let (u, n) = (b.len(), x.len());
    let wx = matvec(w, u, n, x);
    let rh = matvec(r, u, u, h);
    *h = (0..u).map(|k| act(f64::from(b[k]) + wx[k] + rh[k], a)).collect();
}

fn seq_rnn_model(
    batch: i32,
    time: i32,
    n: i32,
    u: i32,
    time_major: bool,
    hybrid: bool,
    rng: &mut Lcg,
) -> (Sg, Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut g = Sg::default();
    let shape = if time_major { [time, batch, n] } else { [batch, time, n] };
    let x = g.f(&shape);
    let (wv, rv, bv) = (rng.vec((u * n) as usize, 0.5), rng.vec((u * u) as usize, 0.5), rng.vec(u as usize, 0.2));
    let (w, r, wq, rq) = if hybrid {
        // Symmetric int8 weights; the float reference uses the dequantized values.
        let q = |v: &[f32]| -> (Vec<u8>, f32, Vec<f32>) {
            let s = v.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0;
            let q: Vec<i8> = v.iter().map(|x| (x / s).round() as i8).collect();
            (q.iter().map(|&x| x as u8).collect(), s, q.iter().map(|&x| f32::from(x) * s).collect())
        };
        let (wb, ws, wd) = q(&wv);
        let (rb, rs, rd) = q(&rv);
        let w = g.t(fb::TensorType::INT8, &[u, n]);
        g.tensors[w as usize].data = Some(wb);
        g.tensors[w as usize].quant = Some((ws, 0));
        let r = g.t(fb::TensorType::INT8, &[u, u]);
        g.tensors[r as usize].data = Some(rb);
        g.tensors[r as usize].quant = Some((rs, 0));
        (w, r, wd, rd)
    } else {
        (g.cf(&[u, n], &wv), g.cf(&[u, u], &rv), wv.clone(), rv.clone())
    };
    let b = g.cf(&[u], &bv);
    let h = g.var(&[batch, u]);
    let y = g.f(&[1]);
    let mut op = Op {
        code: B::UNIDIRECTIONAL_SEQUENCE_RNN,
        version: if hybrid { 2 } else { 1 },
        inputs: vec![x, w, r, b, h],
        outputs: vec![y],
        opt: Opt::SeqRnn(fb::ActivationFunctionType::TANH, time_major),
    };
    op.version = op.version.max(1);
    g.ops.push(op);
    g.io(&[x], &[y]);
    (g, wq, rq, bv)
}

#[test]
fn sequence_rnn_matches_a_reference_and_keeps_state() {
    for (time_major, hybrid) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut rng = Lcg(42);
        let (batch, time, n, u) = (2usize, 3usize, 4usize, 3usize);
        let (g, w, r, b) = seq_rnn_model(batch as i32, time as i32, n as i32, u as i32, time_major, hybrid, &mut rng);
        let mut run = interpreter(&[g]).unwrap();
        run.allocate().unwrap();
        let mut h = vec![vec![0f64; u]; batch];
        for invoke in 0..2 {
            let x = rng.vec(batch * time * n, 1.0);
            run.set(0, &x);
            run.invoke().unwrap();
            let got = run.get::<f32>(0);
            let tol = if hybrid { 2e-2 } else { 1e-5 };
            for (bi, hb) in h.iter_mut().enumerate() {
                for t in 0..time {
                    let k = if time_major { t * batch + bi } else { bi * time + t };
                    let xs: Vec<f64> = x[k * n..(k + 1) * n].iter().map(|&v| f64::from(v)).collect();
                    rnn_ref(&w, &r, &b, &xs, hb, fb::ActivationFunctionType::TANH);
                    for k2 in 0..u {
                        let d = (f64::from(got[k * u + k2]) - hb[k2]).abs();
                        assert!(d < tol, "time_major {time_major} hybrid {hybrid} invoke {invoke} b {bi} t {t}: {d}");
                    }
                }
            }
        }
        // ResetVariableTensors brings the state back to zero.
        run.interp.reset_variable_tensors().unwrap();
        let x = vec![0f32; batch * time * n];
        run.set(0, &x);
        run.invoke().unwrap();
        let first: Vec<f32> = run.get::<f32>(0);
        let want = act(f64::from(b[0]), fb::ActivationFunctionType::TANH);
        let k0 = 0;
        assert!((f64::from(first[k0]) - want).abs() < 1e-2);
    }
}

#[test]
fn rnn_single_step() {
    let mut rng = Lcg(7);
    let (batch, n, u) = (2, 3, 2);
    let mut g = Sg::default();
    let x = g.f(&[batch, n]);
    let (wv, rv, bv) = (rng.vec(6, 0.5), rng.vec(4, 0.5), rng.vec(2, 0.2));
    let w = g.cf(&[u, n], &wv);
    let r = g.cf(&[u, u], &rv);
    let b = g.cf(&[u], &bv);
    let h = g.var(&[batch, u]);
    let y = g.f(&[batch, u]);
    g.op(B::RNN, &[x, w, r, b, h], &[y], Opt::Rnn(fb::ActivationFunctionType::RELU, false));
    g.io(&[x], &[y]);
    let mut run = interpreter(&[g]).unwrap();
    run.allocate().unwrap();
    let mut hs = vec![vec![0f64; 2]; 2];
    for _ in 0..3 {
        let xv = rng.vec(6, 1.0);
        run.set(0, &xv);
        run.invoke().unwrap();
        let got = run.get::<f32>(0);
        for bi in 0..2 {
            let xs: Vec<f64> = xv[bi * 3..bi * 3 + 3].iter().map(|&v| f64::from(v)).collect();
            rnn_ref(&wv, &rv, &bv, &xs, &mut hs[bi], fb::ActivationFunctionType::RELU);
            let want: Vec<f32> = hs[bi].iter().map(|&v| v as f32).collect();
            assert!(close(&got[bi * 2..bi * 2 + 2], &want, 1e-5), "{got:?} vs {want:?}");
        }
    }
}

/// A float LSTM in f64 (one batch row, one step).
struct LstmRef {
    n: usize,
    c: usize,
    o: usize,
    w: [Option<Vec<f32>>; 4],
    r: [Option<Vec<f32>>; 4],
    p: [Option<Vec<f32>>; 3],
    b: [Option<Vec<f32>>; 4],
    ln: [Option<Vec<f32>>; 4],
    proj: Option<Vec<f32>>,
    proj_b: Option<Vec<f32>>,
    cell_clip: f64,
    proj_clip: f64,
}

impl LstmRef {
    fn step(&self, x: &[f64], h: &mut Vec<f64>, cs: &mut [f64]) {
        let (n, nc, no) = (self.n, self.c, self.o);
        let pre = |g: usize, c: &[f64], peep: Option<&Vec<f32>>| -> Vec<f64> {
            let wx = matvec(self.w[g].as_ref().unwrap(), nc, n, x);
            let rh = matvec(self.r[g].as_ref().unwrap(), nc, no, h);
            let mut v: Vec<f64> =
                (0..nc).map(|k| wx[k] + rh[k] + peep.map_or(0.0, |p| f64::from(p[k]) * c[k])).collect();
            let bias = self.b[g].as_ref().unwrap();
            if let Some(ln) = &self.ln[g] {
                let mean = v.iter().sum::<f64>() / nc as f64;
                let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / nc as f64;
                let inv = 1.0 / (var + 1e-8).sqrt();
                v = v
                    .iter()
                    .enumerate()
                    .map(|(k, x)| (x - mean) * inv * f64::from(ln[k]) + f64::from(bias[k]))
                    .collect();
            } else {
                v = v.iter().enumerate().map(|(k, x)| x + f64::from(bias[k])).collect();
            }
            v
        };
        let cifg = self.w[0].is_none();
        let f: Vec<f64> = pre(1, cs, self.p[1].as_ref()).into_iter().map(sigmoid).collect();
        let i: Vec<f64> = if cifg {
            f.iter().map(|v| 1.0 - v).collect()
        } else {
            pre(0, cs, self.p[0].as_ref()).into_iter().map(sigmoid).collect()
        };
        let g: Vec<f64> = pre(2, cs, None).into_iter().map(|v| v.tanh()).collect();
        for k in 0..nc {
            let mut v = f[k] * cs[k] + i[k] * g[k];
            if self.cell_clip > 0.0 {
                v = v.clamp(-self.cell_clip, self.cell_clip);
            }
            cs[k] = v;
        }
        let o: Vec<f64> = pre(3, cs, self.p[2].as_ref()).into_iter().map(sigmoid).collect();
        let m: Vec<f64> = (0..nc).map(|k| o[k] * cs[k].tanh()).collect();
        *h = match &self.proj {
            Some(p) => {
                let pm = matvec(p, no, nc, &m);
                (0..no)
                    .map(|k| {
                        let v = pm[k] + self.proj_b.as_ref().map_or(0.0, |b| f64::from(b[k]));
                        if self.proj_clip > 0.0 { v.clamp(-self.proj_clip, self.proj_clip) } else { v }
                    })
                    .collect()
            }
            None => m,
        };
    }
}

/// An LSTM (or sequence LSTM) model with the given features and its f64 twin.
fn lstm_model(
    seq: bool,
    batch: i32,
    time: i32,
    cifg: bool,
    peephole: bool,
    projection: bool,
    layer_norm: bool,
) -> (Sg, LstmRef) {
    let (n, nc) = (3usize, 4usize);
    let no = if projection { 2 } else { nc };
    let mut rng = Lcg(1234);
    let mut g = Sg::default();
    let x = if seq { g.f(&[batch, time, n as i32]) } else { g.f(&[batch, n as i32]) };
    let mut inputs = vec![x];
    let mut r = LstmRef {
        n,
        c: nc,
        o: no,
        w: Default::default(),
        r: Default::default(),
        p: Default::default(),
        b: Default::default(),
        ln: Default::default(),
        proj: None,
        proj_b: None,
        cell_clip: 0.8,
        proj_clip: if projection { 0.3 } else { 0.0 },
    };
    for k in 0..4 {
        if k == 0 && cifg {
            inputs.push(-1);
            continue;
        }
        let v = rng.vec(nc * n, 0.6);
        inputs.push(g.cf(&[nc as i32, n as i32], &v));
        r.w[k] = Some(v);
    }
    for k in 0..4 {
        if k == 0 && cifg {
            inputs.push(-1);
            continue;
        }
        let v = rng.vec(nc * no, 0.6);
        inputs.push(g.cf(&[nc as i32, no as i32], &v));
        r.r[k] = Some(v);
    }
    for k in 0..3 {
        if !peephole || (k == 0 && cifg) {
            inputs.push(-1);
            continue;
        }
        let v = rng.vec(nc, 0.5);
        inputs.push(g.cf(&[nc as i32], &v));
        r.p[k] = Some(v);
    }
    for k in 0..4 {
        if k == 0 && cifg {
            inputs.push(-1);
            continue;
        }
        let v = rng.vec(nc, 0.3);
        inputs.push(g.cf(&[nc as i32], &v));
        r.b[k] = Some(v);
    }
    if projection {
        let v = rng.vec(no * nc, 0.6);
        inputs.push(g.cf(&[no as i32, nc as i32], &v));
        r.proj = Some(v);
        let b = rng.vec(no, 0.1);
        inputs.push(g.cf(&[no as i32], &b));
        r.proj_b = Some(b);
    } else {
        inputs.extend([-1, -1]);
    }
    inputs.push(g.var(&[batch, no as i32]));
    inputs.push(g.var(&[batch, nc as i32]));
    for k in 0..4 {
        if !layer_norm || (k == 0 && cifg) {
            inputs.push(-1);
            continue;
        }
        let v: Vec<f32> = rng.vec(nc, 0.5).iter().map(|x| 1.0 + x).collect();
        inputs.push(g.cf(&[nc as i32], &v));
        r.ln[k] = Some(v);
    }
    let y = g.f(&[1]);
    if seq {
        g.op(
            B::UNIDIRECTIONAL_SEQUENCE_LSTM,
            &inputs,
            &[y],
            Opt::SeqLstm(fb::ActivationFunctionType::TANH, 0.8, r.proj_clip as f32, false),
        );
    } else {
        g.op(B::LSTM, &inputs, &[y], Opt::Lstm(fb::ActivationFunctionType::TANH, 0.8, r.proj_clip as f32));
    }
    g.io(&[x], &[y]);
    (g, r)
}

#[test]
fn lstm_variants_match_a_reference_and_keep_state() {
    for seq in [false, true] {
        for (cifg, peephole, projection, layer_norm) in [
            (false, false, false, false),
            (true, false, false, false),
            (false, true, false, false),
            (false, false, true, false),
            (false, true, true, true),
            (true, true, false, true),
        ] {
            let (batch, time) = (2usize, if seq { 3usize } else { 1 });
            let (g, r) = lstm_model(seq, batch as i32, time as i32, cifg, peephole, projection, layer_norm);
            let label =
                format!("seq {seq} cifg {cifg} peephole {peephole} projection {projection} layer_norm {layer_norm}");
            let mut run = interpreter(&[g]).unwrap_or_else(|e| panic!("{label}: {e}"));
            run.allocate().unwrap_or_else(|e| panic!("{label}: {e}"));
            let mut h = vec![vec![0f64; r.o]; batch];
            let mut c = vec![vec![0f64; r.c]; batch];
            let mut rng = Lcg(99);
            for invoke in 0..2 {
                let x = rng.vec(batch * time * r.n, 1.0);
                run.set(0, &x);
                run.invoke().unwrap_or_else(|e| panic!("{label}: {e}"));
                let got = run.get::<f32>(0);
                assert_eq!(got.len(), batch * time * r.o, "{label}");
                for b in 0..batch {
                    for t in 0..time {
                        let k = b * time + t;
                        let xs: Vec<f64> = x[k * r.n..(k + 1) * r.n].iter().map(|&v| f64::from(v)).collect();
                        r.step(&xs, &mut h[b], &mut c[b]);
                        for j in 0..r.o {
                            let d = (f64::from(got[k * r.o + j]) - h[b][j]).abs();
                            assert!(
                                d < 2e-5,
                                "{label} invoke {invoke} b {b} t {t} j {j}: {} vs {}",
                                got[k * r.o + j],
                                h[b][j]
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn malformed_recurrent_ops_are_errors() {
    // A state that is not a variable tensor: nothing writes it, so creation refuses it.
    let (mut g, _) = lstm_model(true, 1, 2, false, false, false, false);
    let state = g.ops[0].inputs[18];
    g.tensors[state as usize].variable = false;
    let err = interpreter(&[g]).err().expect("a state nothing writes is refused");
    assert!(err.contains(&format!("reads tensor {state}")), "{err}");
    // Wrong weight shape.
    let (mut g, _) = lstm_model(false, 1, 1, false, false, false, false);
    let w = g.ops[0].inputs[2];
    g.tensors[w as usize].shape = vec![4, 2];
    g.tensors[w as usize].data = Some(f32_bytes(&[0.0; 8]));
    let mut r = interpreter(&[g]).unwrap();
    assert!(r.allocate().is_err());
    // Only some peepholes.
    let (mut g, _) = lstm_model(false, 1, 1, false, true, false, false);
    g.ops[0].inputs[10] = -1;
    let mut r = interpreter(&[g]).unwrap();
    assert!(r.allocate().is_err());
    // Wrong number of inputs.
    let (mut g, _) = lstm_model(false, 1, 1, false, false, false, false);
    g.ops[0].inputs.truncate(21);
    let mut r = interpreter(&[g]).unwrap();
    assert!(r.allocate().is_err());
    // RNN hidden state of the wrong shape.
    let mut rng = Lcg(1);
    let (mut g, _, _, _) = seq_rnn_model(2, 2, 2, 2, false, false, &mut rng);
    let h = g.ops[0].inputs[4];
    g.tensors[h as usize].shape = vec![3, 2];
    let mut r = interpreter(&[g]).unwrap();
    assert!(r.allocate().is_err());
}

// ---------------------------------------------------------------------------------------
// Structured mutations: wrong indices, shapes, types and subgraph references
// ---------------------------------------------------------------------------------------

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
    fn small(&mut self, lo: i32, hi: i32) -> i32 {
        lo + self.below((hi - lo + 1) as usize) as i32
    }
}

fn mutate_model(rng: &mut Rng, base: &[Sg]) -> Vec<Sg> {
    let mut m = base.to_vec();
    for _ in 0..1 + rng.below(3) {
        let si = rng.below(m.len());
        let sg = &mut m[si];
        let nt = sg.tensors.len() as i32;
        match rng.below(8) {
            0 if !sg.ops.is_empty() => {
                let oi = rng.below(sg.ops.len());
                let op = &mut sg.ops[oi];
                if !op.inputs.is_empty() {
                    let k = rng.below(op.inputs.len());
                    op.inputs[k] = rng.small(-1, nt);
                }
            }
            1 if !sg.ops.is_empty() => {
                let oi = rng.below(sg.ops.len());
                let op = &mut sg.ops[oi];
                if !op.outputs.is_empty() {
                    let k = rng.below(op.outputs.len());
                    op.outputs[k] = rng.small(0, nt - 1);
                }
            }
            2 if !sg.ops.is_empty() => {
                let oi = rng.below(sg.ops.len());
                let n = base.len() as i32;
                let op = &mut sg.ops[oi];
                op.opt = match op.opt {
                    Opt::If(..) => Opt::If(rng.small(-1, n), rng.small(-1, n)),
                    Opt::While(..) => Opt::While(rng.small(-1, n), rng.small(-1, n)),
                    Opt::CallOnce(_) => Opt::CallOnce(rng.small(-1, n)),
                    ref o => o.clone(),
                };
            }
            3 if nt > 0 => {
                let ti = rng.below(nt as usize);
                let t = &mut sg.tensors[ti];
                if t.data.is_none() {
                    let rank = rng.below(4);
                    t.shape = (0..rank).map(|_| rng.small(0, 5)).collect();
                }
            }
            4 if nt > 0 => {
                let ti = rng.below(nt as usize);
                let t = &mut sg.tensors[ti];
                if t.data.is_none() {
                    t.ty = [
                        fb::TensorType::FLOAT32,
                        fb::TensorType::INT32,
                        fb::TensorType::BOOL,
                        fb::TensorType::INT8,
                        fb::TensorType::RESOURCE,
                    ][rng.below(5)];
                }
            }
            5 if nt > 0 => {
                let ti = rng.below(nt as usize);
                sg.tensors[ti].variable ^= true;
            }
            6 => {
                if !sg.inputs.is_empty() && rng.below(2) == 0 {
                    let k = rng.below(sg.inputs.len());
                    sg.inputs[k] = rng.small(-1, nt - 1);
                } else if !sg.outputs.is_empty() {
                    let k = rng.below(sg.outputs.len());
                    sg.outputs[k] = rng.small(0, nt - 1);
                }
            }
            _ if sg.ops.len() > 1 => {
                let oi = rng.below(sg.ops.len());
                if rng.below(2) == 0 {
                    sg.ops.remove(oi);
                } else {
                    let op = sg.ops[oi].clone();
                    sg.ops.push(op);
                }
            }
            _ => {}
        }
    }
    m
}

/// Runs a (possibly malformed) model: creation, allocation and two invokes with zeroed
/// inputs. A watchdog cancels an invoke that runs too long (a mutated WHILE may loop
/// forever, as it would in TFLite). Returns whether it ran.
fn exercise(sgs: &[Sg]) -> bool {
    let Ok(model) = Model::from_vec(build(sgs)) else { return false };
    let config =
        InterpreterConfig { reporter: Arc::new(|_: &str| {}), enable_cancellation: true, ..Default::default() };
    let Ok(mut interp) = Interpreter::new(Arc::new(model), &builtin_op_resolver(), config) else { return false };
    if interp.allocate_tensors().is_err() {
        return false;
    }
    let flag = interp.cancellation_flag();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    // Every invoke clears the flag when it starts, so the watchdog keeps setting it.
    let watchdog = std::thread::spawn(move || {
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
            done_rx.recv_timeout(std::time::Duration::from_millis(300))
        {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let mut ran = true;
    for _ in 0..2 {
        let inputs = interp.primary().inputs().to_vec();
        for i in inputs {
            if let Some(t) = interp.primary_mut().tensor_ptr(i) {
                // SAFETY: a live tensor; zero its data when it has any.
                unsafe {
                    if !(*t).data.data.is_null() {
                        std::ptr::write_bytes((*t).data.data as *mut u8, 0, (*t).bytes);
                    }
                }
            }
        }
        ran &= interp.invoke().is_ok();
    }
    let _ = done_tx.send(());
    let _ = watchdog.join();
    ran
}

#[test]
fn structured_mutations_never_crash() {
    let mut bases: Vec<Vec<Sg>> = vec![
        vec![fill_then_add()],
        if_model(1, 2),
        while_static(1, 2),
        while_doubling(3),
        accumulator(),
        vec![lstm_model(true, 2, 3, false, true, true, false).0],
        vec![lstm_model(false, 1, 1, true, false, false, true).0],
        vec![seq_rnn_model(2, 2, 3, 2, false, true, &mut Lcg(3)).0],
    ];
    // Cross-links: the IF model's branches calling the WHILE model's subgraphs, etc.
    let mut mixed = if_model(1, 2);
    mixed.extend(while_static(4, 5).into_iter().skip(1));
    bases.push(mixed);
    let mut rng = Rng(0x5DEE_CE66_D1CE_F00D);
    let (mut ran, mut total) = (0, 0);
    for base in &bases {
        assert!(exercise(base), "the unmutated base model must run");
        for _ in 0..150 {
            let m = mutate_model(&mut rng, base);
            ran += exercise(&m) as usize;
            total += 1;
        }
    }
    println!("{total} mutated models, {ran} ran");
}

/// Turns the LSTM's weight matrices and peepholes into symmetric int8 (hybrid), and the
/// reference's copies into the dequantized values.
fn hybridize(g: &mut Sg, r: &mut LstmRef) {
    let inputs = g.ops[0].inputs.clone();
    let mut quantize = |ti: i32| -> Option<Vec<f32>> {
        if ti < 0 {
            return None;
        }
        let t = &mut g.tensors[ti as usize];
        let v: Vec<f32> =
            t.data.as_ref()?.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let s = v.iter().fold(0f32, |m, x| m.max(x.abs())) / 127.0;
        let q: Vec<i8> = v.iter().map(|x| (x / s).round() as i8).collect();
        t.ty = fb::TensorType::INT8;
        t.data = Some(q.iter().map(|&x| x as u8).collect());
        t.quant = Some((s, 0));
        Some(q.iter().map(|&x| f32::from(x) * s).collect())
    };
    for k in 0..4 {
        r.w[k] = quantize(inputs[1 + k]).or(r.w[k].take());
        r.r[k] = quantize(inputs[5 + k]).or(r.r[k].take());
    }
    for k in 0..3 {
        r.p[k] = quantize(inputs[9 + k]).or(r.p[k].take());
    }
    r.proj = quantize(inputs[16]).or(r.proj.take());
    g.ops[0].version = 2;
}

#[test]
fn hybrid_lstm_tracks_the_float_reference() {
    for seq in [false, true] {
        for (cifg, peephole, projection, layer_norm) in [(false, true, true, false), (true, false, false, true)] {
            let (batch, time) = (2usize, if seq { 3usize } else { 1 });
            let (mut g, mut r) = lstm_model(seq, batch as i32, time as i32, cifg, peephole, projection, layer_norm);
            hybridize(&mut g, &mut r);
            let label =
                format!("hybrid seq {seq} cifg {cifg} peephole {peephole} projection {projection} ln {layer_norm}");
            let mut run = interpreter(&[g]).unwrap_or_else(|e| panic!("{label}: {e}"));
            run.allocate().unwrap_or_else(|e| panic!("{label}: {e}"));
            let mut h = vec![vec![0f64; r.o]; batch];
            let mut c = vec![vec![0f64; r.c]; batch];
            let mut rng = Lcg(5);
            for _ in 0..2 {
                let x = rng.vec(batch * time * r.n, 1.0);
                run.set(0, &x);
                run.invoke().unwrap_or_else(|e| panic!("{label}: {e}"));
                let got = run.get::<f32>(0);
                for b in 0..batch {
                    for t in 0..time {
                        let k = b * time + t;
                        let xs: Vec<f64> = x[k * r.n..(k + 1) * r.n].iter().map(|&v| f64::from(v)).collect();
                        r.step(&xs, &mut h[b], &mut c[b]);
                        for j in 0..r.o {
                            let d = (f64::from(got[k * r.o + j]) - h[b][j]).abs();
                            assert!(d < 3e-2, "{label} b {b} t {t} j {j}: {} vs {}", got[k * r.o + j], h[b][j]);
                        }
                    }
                }
            }
        }
    }
}

/// A MAX_POOL_2D whose window (196608 x 3, SAME padding) is far larger than its 9992 x 8
/// image: legal, and each of its 4996 output rows reads the whole image (seconds in all;
/// found by the fuzzer). Cancellation stops it inside the op, not after it: without the
/// kernel's own check the one-node Invoke would finish and succeed.
#[test]
fn cancellation_stops_a_long_op_inside_it() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models/huge_pool_window.tflite");
    let model = Model::from_file(&path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e.message));
    let config = InterpreterConfig { enable_cancellation: true, num_threads: 1, ..InterpreterConfig::default() };
    let mut interp = Interpreter::new(Arc::new(model), &builtin_op_resolver(), config).expect("interpreter");
    interp.allocate_tensors().expect("allocate");
    let flag = interp.cancellation_flag();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let r = interp.invoke();
    canceller.join().expect("canceller");
    let e = r.expect_err("the Invoke was cancelled");
    assert_eq!(e.status, tensorflowlite_c::abi::types::TfLiteStatus::kTfLiteCancelled, "{}", e.message);
}
