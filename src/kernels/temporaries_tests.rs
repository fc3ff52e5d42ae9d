//! Node temporaries through the safe kernel API: requested in Prepare, placed by the
//! arena planner (lifetime [node, node]), resized on re-prepare, handed out in Invoke.

use crate::abi::arrays::int_array_slice;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteAllocationType, TfLiteType};
use crate::error::{Error, Result};
use crate::interpreter::{Interpreter, InterpreterConfig};
use crate::kernels::api::{MAX_TEMPORARIES, OpCtx};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::model::writer::ModelWriter;
use crate::model::{Model, fb};
use crate::resolver::builtin::builtin_op_resolver;
use std::sync::Arc;

/// SIN through a temporary: the input copied into temporary 0 (as many f32 as the input),
/// then sin of it into the output. Prepare looks at the input before requesting (views
/// taken first are fine: the request applies after Prepare returns); a second temporary
/// of 3 bytes checks odd sizes.
fn temp_prepare(ctx: &OpCtx<'_>) -> Result<()> {
    let x = ctx.input(0)?;
    let shape = x.shape.to_vec();
    ctx.request_temporaries(&[x.bytes(), 3])?;
    // A later request replaces the earlier one.
    ctx.request_temporaries(&[x.bytes(), 3])?;
    if ctx.temporary_mut::<u8>(0).is_ok() {
        return Err(Error::new("temporary handed out in Prepare"));
    }
    ctx.resize_output(0, &shape)
}

fn temp_eval(ctx: &OpCtx<'_>) -> Result<()> {
    if ctx.request_temporaries(&[4]).is_ok() {
        return Err(Error::new("request accepted in Invoke"));
    }
    let x = ctx.input(0)?.data::<f32>()?;
    let t = ctx.temporary_mut::<f32>(0)?;
    if ctx.temporary_mut::<f32>(0).is_ok() || ctx.temporary_mut::<u8>(0).is_ok() {
        return Err(Error::new("temporary 0 handed out twice"));
    }
    if ctx.temporary_mut::<u8>(1)?.len() != 3 || ctx.temporary_mut::<u8>(2).is_ok() {
        return Err(Error::new("temporary 1 wrong or temporary 2 exists"));
    }
    if t.len() != x.len() {
        return Err(Error::new("temporary 0 has the wrong size"));
    }
    t.copy_from_slice(x);
    let mut out = ctx.output(0)?;
    for (o, v) in out.data_mut::<f32>()?.iter_mut().zip(t.iter()) {
        *o = v.sin();
    }
    Ok(())
}

fn too_many_prepare(ctx: &OpCtx<'_>) -> Result<()> {
    ctx.request_temporaries(&vec![1; MAX_TEMPORARIES + 1])?;
    Ok(())
}

/// x -> RELU -> a -> SIN -> b -> RELU -> c -> RELU -> y, all [n] float32.
fn chain(n: i32) -> Arc<Model> {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[n]);
    let a = w.tensor_f32("a", &[n]);
    let b = w.tensor_f32("b", &[n]);
    let c = w.tensor_f32("c", &[n]);
    let y = w.tensor_f32("y", &[n]);
    w.op(fb::BuiltinOperator::RELU, &[x], &[a]);
    w.op(fb::BuiltinOperator::SIN, &[a], &[b]);
    w.op(fb::BuiltinOperator::RELU, &[b], &[c]);
    w.op(fb::BuiltinOperator::RELU, &[c], &[y]);
    w.io(&[x], &[y]);
    Arc::new(Model::from_vec(w.finish()).expect("model"))
}

fn interpreter(n: i32, sin: Option<crate::abi::types::TfLiteRegistration>) -> Result<Interpreter> {
    let mut r = builtin_op_resolver();
    if let Some(reg) = sin {
        r.add_builtin(TfLiteBuiltinOperator::kTfLiteBuiltinSin as i32, reg, 1, 1);
    }
    let config = InterpreterConfig { reporter: Arc::new(|_m: &str| {}), ..Default::default() };
    Interpreter::new(chain(n), &r, config)
}

/// A SIN kernel that uses temporaries (`temp_prepare` / `temp_eval`).
struct TempSin;

impl BuiltinKernel for TempSin {
    const NAME: &'static str = "SIN";
    type Params = ();
    type State = ();
    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        temp_prepare(ctx)
    }
    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        temp_eval(ctx)
    }
}

/// A kernel asking for more temporaries than a node may have.
struct TooMany;

impl BuiltinKernel for TooMany {
    const NAME: &'static str = "SIN";
    type Params = ();
    type State = ();
    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        too_many_prepare(ctx)
    }
    fn invoke(_: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        Ok(())
    }
}

fn temp_registration() -> crate::abi::types::TfLiteRegistration {
    kernel::registration::<TempSin>(TfLiteBuiltinOperator::kTfLiteBuiltinSin)
}

/// The node's temporaries: (tensor index, bytes, data address).
fn temporaries(interp: &Interpreter, node: usize) -> Vec<(i32, usize, usize)> {
    let sg = interp.primary();
    // SAFETY: the node's temporaries array is owned by the subgraph and not changing.
    let temps = unsafe { int_array_slice(sg.node_entry(node).expect("node").node.temporaries) }.to_vec();
    temps
        .into_iter()
        .map(|t| {
            let tensor = sg.tensor(t).expect("tensor");
            assert_eq!(tensor.data_type(), Some(TfLiteType::kTfLiteUInt8));
            assert_eq!(tensor.allocation(), Some(TfLiteAllocationType::kTfLiteArenaRw));
            (t, tensor.bytes, tensor.data_ptr() as usize)
        })
        .collect()
}

fn range(interp: &Interpreter, t: i32) -> (usize, usize) {
    let tensor = interp.primary().tensor(t).expect("tensor");
    (tensor.data_ptr() as usize, tensor.bytes)
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.0 + b.1 && b.0 < a.0 + a.1
}

fn run(interp: &mut Interpreter, x: &[f32]) -> Vec<f32> {
    let sg = interp.primary_mut();
    let xi = sg.inputs()[0];
    let yi = sg.outputs()[0];
    let t = sg.tensor_ptr(xi).expect("input");
    // SAFETY: the input tensor holds x.len() floats after allocate_tensors.
    unsafe { core::ptr::copy_nonoverlapping(x.as_ptr(), (*t).data.data as *mut f32, x.len()) };
    interp.invoke().expect("invoke");
    let t = interp.primary().tensor(yi).expect("output");
    // SAFETY: the output holds x.len() floats after invoke.
    unsafe { core::slice::from_raw_parts(t.data_ptr() as *const f32, x.len()) }.to_vec()
}

#[test]
fn temporaries_are_planned_in_the_arena() {
    let n = 100;
    let mut plain = interpreter(n, None).expect("plain");
    plain.allocate_tensors().expect("allocate plain");
    let mut temp = interpreter(n, Some(temp_registration())).expect("temp");
    temp.allocate_tensors().expect("allocate temp");
    let ts = temporaries(&temp, 1);
    assert_eq!(ts.len(), 2);
    assert_eq!((ts[0].1, ts[1].1), (4 * n as usize, 3));
    // The temporaries are in the arena, apart from each other and from the node's input
    // and output (both live at the node), and the arena accounts for them: it grows by at
    // most their 64-aligned sizes (they may also reuse bytes of dead activations).
    let (a, b) = (range(&temp, 1), range(&temp, 2));
    for &(_, bytes, p) in &ts {
        assert_ne!(p, 0);
        assert!(!overlaps((p, bytes), a) && !overlaps((p, bytes), b));
    }
    assert!(!overlaps((ts[0].2, ts[0].1), (ts[1].2, ts[1].1)));
    let (p, q) = (plain.primary().memory_stats().arena_bytes, temp.primary().memory_stats().arena_bytes);
    assert!(q > p, "arena {q} with temporaries, {p} without");
    assert!(q <= p + (4 * n as usize).next_multiple_of(64) + 64, "arena {q} with temporaries, {p} without");
    // The temporary of node 1 shares bytes with an activation that is not live at node 1
    // (x is a graph input and kept; c or y are born later) or sits above all of them.
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.1 - 3.0).collect();
    let want: Vec<f32> = x.iter().map(|v| v.max(0.0).sin().max(0.0)).collect();
    assert_eq!(run(&mut temp, &x), want);
    assert_eq!(run(&mut plain, &x), want);
}

#[test]
fn reprepare_after_resize_resizes_temporaries() {
    let n = 16;
    let mut temp = interpreter(n, Some(temp_registration())).expect("temp");
    temp.allocate_tensors().expect("allocate");
    let before = temporaries(&temp, 1);
    assert_eq!(before[0].1, 4 * n as usize);
    let xi = temp.primary().inputs()[0];
    temp.resize_input_tensor(xi, &[3 * n]).expect("resize");
    temp.allocate_tensors().expect("re-allocate");
    let after = temporaries(&temp, 1);
    // Same tensors reused (no new ones added), resized.
    assert_eq!(after.iter().map(|t| t.0).collect::<Vec<_>>(), before.iter().map(|t| t.0).collect::<Vec<_>>());
    assert_eq!(after[0].1, 12 * n as usize);
    assert_eq!(after[1].1, 3);
    let tensors = temp.primary().tensors_len();
    let x: Vec<f32> = (0..3 * n).map(|i| i as f32 * 0.05).collect();
    let want: Vec<f32> = x.iter().map(|v| v.sin()).collect();
    assert_eq!(run(&mut temp, &x), want);
    temp.resize_input_tensor(xi, &[2]).expect("resize");
    temp.allocate_tensors().expect("re-allocate");
    assert_eq!(temporaries(&temp, 1)[0].1, 8);
    assert_eq!(temp.primary().tensors_len(), tensors);
    assert_eq!(run(&mut temp, &[0.5, 1.0]), vec![0.5f32.sin(), 1.0f32.sin()]);
}

#[test]
fn bad_requests_are_errors() {
    let reg = kernel::registration::<TooMany>(TfLiteBuiltinOperator::kTfLiteBuiltinSin);
    let mut interp = interpreter(4, Some(reg)).expect("interp");
    assert!(interp.allocate_tensors().is_err());
}
