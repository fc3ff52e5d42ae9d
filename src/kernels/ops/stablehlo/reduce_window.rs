//! STABLEHLO_REDUCE_WINDOW and REDUCE_WINDOW (TFLite `kernels/stablehlo_reduce_window.cc`,
//! which implements both): a reduction over sliding windows.
//!
//! The operand is first dilated by `base_dilations` and padded by `padding` (low, high
//! per dimension; negative values crop), the new elements taking the init value; then
//! each window of `window_dimensions` elements, `window_dilations` apart, placed every
//! `window_strides`, is folded from the init value in row-major window order. A
//! dimension smaller than its dilated window gives an empty output dimension.
//!
//! STABLEHLO_REDUCE_WINDOW reads its options from `StablehloReduceWindowOptions` and its
//! reduction from the body subgraph, which must hold exactly one op: ADD, MUL, MAXIMUM,
//! MINIMUM, LOGICAL_AND, LOGICAL_OR or their StableHLO twins. REDUCE_WINDOW takes the
//! window dimensions, strides and dilations as constant int64 tensors and the reduction
//! from `ReduceWindowOptions`, with no base dilation and no padding.
//!
//! As TFLite: ranks 1 to 6; bool, int8/16/32/64, uint8, float32/64; integers wrap; MIN is
//! `accu <= x ? accu : x` and MAX `accu >= x ? accu : x`; ALL/ANY give 1 or 0 of the
//! element type; booleans are summed and multiplied as int8 bytes, as TFLite does.
//! Stricter than TFLite: every window parameter must be positive (REDUCE_WINDOW's are
//! unchecked there) and have one entry per dimension.

use crate::abi::builtin_op_data::{
    TfLiteReduceWindowFunction as F, TfLiteReduceWindowParams, TfLiteStablehloReduceWindowParams,
};
use crate::abi::builtin_ops::TfLiteBuiltinOperator as Op;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{Element, OpCtx};
use crate::kernels::graph::calls_of;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const STABLEHLO: &str = "STABLEHLO_REDUCE_WINDOW";
const TFL: &str = "REDUCE_WINDOW";
const MAX_RANK: usize = 6;
/// The most elements the dilated and padded operand may have: TFLite materialises it
/// (here it is only addressed), and this runtime refuses tensors over 1 GiB.
const MAX_PADDED_ELEMENTS: u64 = 1 << 28;

/// The STABLEHLO_REDUCE_WINDOW registration.
pub fn stablehlo_registration() -> TfLiteRegistration {
    kernel::registration::<StablehloReduceWindow>(Op::kTfLiteBuiltinStablehloReduceWindow)
}

/// The REDUCE_WINDOW registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<ReduceWindow>(Op::kTfLiteBuiltinReduceWindow)
}

/// The reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    Add,
    Mul,
    Min,
    Max,
    All,
    Any,
}

/// A reduce-window, checked against the operand's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowPlan {
    pub in_shape: Vec<usize>,
    pub base_dilations: Vec<i64>,
    pub pad_low: Vec<i64>,
    pub padded_shape: Vec<i64>,
    pub window: Vec<usize>,
    pub strides: Vec<i64>,
    pub window_dilations: Vec<i64>,
    pub out_shape: Vec<usize>,
}

/// The options of one reduce-window (each with one entry per dimension; `padding` two).
pub struct WindowOptions<'a> {
    pub window: &'a [i64],
    pub strides: &'a [i64],
    pub base_dilations: &'a [i64],
    pub window_dilations: &'a [i64],
    pub padding: &'a [i64],
}

/// Checks `o` against an operand of shape `dims` and derives the output shape.
pub fn window_plan(dims: &[i32], o: &WindowOptions<'_>) -> Result<WindowPlan> {
    let rank = dims.len();
    if rank == 0 || rank > MAX_RANK {
        crate::bail!("the operand has rank {rank}; 1 to {MAX_RANK} is supported");
    }
    for (what, v) in [
        ("window_dimensions", o.window),
        ("window_strides", o.strides),
        ("base_dilations", o.base_dilations),
        ("window_dilations", o.window_dilations),
    ] {
        if v.len() != rank {
            crate::bail!("{what} has {} entries for an operand of rank {rank}", v.len());
        }
        if let Some(bad) = v.iter().find(|&&x| x <= 0) {
            crate::bail!("{what} entry {bad} must be positive");
        }
    }
    if o.padding.len() != 2 * rank {
        crate::bail!("padding has {} entries for an operand of rank {rank}", o.padding.len());
    }
    let max = i64::from(i32::MAX);
    let overflow = || Error::new("the window options overflow");
    let mut padded_shape = Vec::with_capacity(rank);
    let mut out_shape = Vec::with_capacity(rank);
    for (d, &dim) in dims.iter().enumerate().take(rank) {
        let n = i64::from(dim);
        if n < 0 {
            crate::bail!("the operand has a negative dimension");
        }
        let (lo, hi) = (o.padding[2 * d], o.padding[2 * d + 1]);
        if n == 0 && o.base_dilations[d] != 1 {
            crate::bail!("empty dimension {d} cannot be dilated");
        }
        let dilated = if n == 0 { 0 } else { (n - 1).checked_mul(o.base_dilations[d]).ok_or_else(overflow)? + 1 };
        let padded = dilated.checked_add(lo).and_then(|v| v.checked_add(hi)).ok_or_else(overflow)?;
        if padded > max {
            crate::bail!("dimension {d} is {padded} after dilation and padding, more than {max}");
        }
        if (lo != 0 || hi != 0) && padded <= 0 {
            crate::bail!("the padding of dimension {d} leaves nothing of it");
        }
        let padded = padded.max(0);
        let extent = (o.window[d] - 1).checked_mul(o.window_dilations[d]).ok_or_else(overflow)? + 1;
        out_shape.push(if padded < extent { 0 } else { ((padded - extent) / o.strides[d] + 1) as usize });
        padded_shape.push(padded);
    }
    let total = padded_shape.iter().try_fold(1u64, |a, &p| a.checked_mul(p as u64));
    if total.is_none_or(|t| t > MAX_PADDED_ELEMENTS) {
        crate::bail!("the dilated and padded operand {padded_shape:?} is too large");
    }
    let window: Vec<usize> = o.window.iter().map(|&w| w as usize).collect();
    if out_shape.iter().all(|&s| s > 0) && window.iter().try_fold(1u64, |a, &w| a.checked_mul(w as u64)).is_none() {
        crate::bail!("the window is too large");
    }
    Ok(WindowPlan {
        in_shape: dims.iter().map(|&d| d as usize).collect(),
        base_dilations: o.base_dilations.to_vec(),
        pad_low: (0..rank).map(|d| o.padding[2 * d]).collect(),
        padded_shape,
        window,
        strides: o.strides.to_vec(),
        window_dilations: o.window_dilations.to_vec(),
        out_shape,
    })
}

/// An element type of the reduction, with C++'s arithmetic.
pub trait WinElem: Element + PartialOrd {
    fn add(a: Self, b: Self) -> Self;
    fn mul(a: Self, b: Self) -> Self;
    fn truthy(self) -> bool;
    fn from_bool(b: bool) -> Self;
}

macro_rules! int_elem {
    ($($t:ty),*) => {$(
        impl WinElem for $t {
            fn add(a: $t, b: $t) -> $t { a.wrapping_add(b) }
            fn mul(a: $t, b: $t) -> $t { a.wrapping_mul(b) }
            fn truthy(self) -> bool { self != 0 }
            fn from_bool(b: bool) -> $t { b as $t }
        }
    )*};
}
int_elem!(i8, i16, i32, i64, u8);

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl WinElem for $t {
            fn add(a: $t, b: $t) -> $t { a + b }
            fn mul(a: $t, b: $t) -> $t { a * b }
            fn truthy(self) -> bool { self != 0.0 }
            fn from_bool(b: bool) -> $t { if b { 1.0 } else { 0.0 } }
        }
    )*};
}
float_elem!(f32, f64);

fn body_fn<T: WinElem>(body: Body) -> fn(T, T) -> T {
    match body {
        Body::Add => T::add,
        Body::Mul => T::mul,
        Body::Min => |a, b| if a <= b { a } else { b },
        Body::Max => |a, b| if a >= b { a } else { b },
        Body::All => |a: T, b: T| T::from_bool(a.truthy() && b.truthy()),
        Body::Any => |a: T, b: T| T::from_bool(a.truthy() || b.truthy()),
    }
}

/// Runs `plan` with reduction `body` on `input`.
pub fn reduce_window<T: WinElem>(input: &[T], init: T, plan: &WindowPlan, body: Body, out: &mut [T]) -> Result<()> {
    let n_out: usize = plan.out_shape.iter().product();
    if input.len() != plan.in_shape.iter().product::<usize>() || out.len() != n_out {
        crate::bail!("buffer sizes do not match the shapes");
    }
    if n_out == 0 {
        return Ok(());
    }
    let f = body_fn::<T>(body);
    let rank = plan.in_shape.len();
    let mut in_strides = vec![1usize; rank];
    for d in (0..rank - 1).rev() {
        in_strides[d] = in_strides[d + 1] * plan.in_shape[d + 1];
    }
    // The operand element at padded position `p` in dimension `d`, as an index, or None
    // for padding and dilation holes.
    let source = |d: usize, p: i64| -> Option<usize> {
        let q = p - plan.pad_low[d];
        if q < 0 || q % plan.base_dilations[d] != 0 {
            return None;
        }
        let i = (q / plan.base_dilations[d]) as usize;
        (i < plan.in_shape[d]).then_some(i)
    };
    let mut o_idx = vec![0usize; rank];
    let mut w_idx = vec![0usize; rank];
    for o in out.iter_mut() {
        let mut accu = init;
        w_idx.fill(0);
        loop {
            let mut at = Some(0usize);
            for d in 0..rank {
                let p = o_idx[d] as i64 * plan.strides[d] + w_idx[d] as i64 * plan.window_dilations[d];
                at = match (at, source(d, p)) {
                    (Some(a), Some(i)) => Some(a + i * in_strides[d]),
                    _ => None,
                };
            }
            accu = f(accu, at.map_or(init, |a| input[a]));
            let mut d = rank;
            loop {
                if d == 0 {
                    break;
                }
                d -= 1;
                w_idx[d] += 1;
                if w_idx[d] < plan.window[d] {
                    break;
                }
                w_idx[d] = 0;
            }
            if w_idx.iter().all(|&w| w == 0) {
                break;
            }
        }
        *o = accu;
        for d in (0..rank).rev() {
            o_idx[d] += 1;
            if o_idx[d] < plan.out_shape[d] {
                break;
            }
            o_idx[d] = 0;
        }
    }
    Ok(())
}

/// Checks the operand, init value and output types and returns the operand type.
fn check_types(ctx: &OpCtx<'_>, op: &str) -> Result<TfLiteType> {
    use TfLiteType::*;
    let input = ctx.input(0).map_err(|e| op_error(op, e.message))?;
    let init = ctx.input(1).map_err(|e| op_error(op, e.message))?;
    let out = ctx.output(0).map_err(|e| op_error(op, e.message))?;
    if init.dtype != input.dtype || out.dtype != input.dtype {
        return Err(op_error(op, "the operand, init value and output types must agree"));
    }
    if !matches!(
        input.dtype,
        kTfLiteBool
            | kTfLiteInt8
            | kTfLiteInt16
            | kTfLiteInt32
            | kTfLiteInt64
            | kTfLiteUInt8
            | kTfLiteFloat32
            | kTfLiteFloat64
    ) {
        return Err(op_error(op, format!("type {} is not supported", input.dtype.name())));
    }
    if init.num_elements() == 0 {
        return Err(op_error(op, "the init value tensor is empty"));
    }
    Ok(input.dtype)
}

fn run_typed<T: WinElem + super::LeBytes>(ctx: &OpCtx<'_>, plan: &WindowPlan, body: Body) -> Result<()> {
    let input = ctx.input(0)?;
    let init = super::first_value::<T>(&ctx.input(1)?)?;
    let mut out = ctx.output(0)?;
    reduce_window(input.data::<T>()?, init, plan, body, out.data_mut::<T>()?)
}

fn run(ctx: &OpCtx<'_>, op: &'static str, plan: &WindowPlan, body: Body) -> Result<()> {
    use TfLiteType::*;
    let dtype = ctx.input(0).map_err(in_op(op))?.dtype;
    match dtype {
        // TFLite reduces booleans as int8 bytes.
        kTfLiteBool | kTfLiteInt8 => {
            let input = ctx.input(0)?;
            let init = ctx.input(1)?;
            let mut out = ctx.output(0)?;
            let as_i8 = |b: &[u8]| b.iter().map(|&v| v as i8).collect::<Vec<i8>>();
            if dtype == kTfLiteInt8 {
                return run_typed::<i8>(ctx, plan, body).map_err(in_op(op));
            }
            let x = as_i8(input.data::<u8>()?);
            let v = super::first_value::<i8>(&init)?;
            let o = out.data_mut::<u8>()?;
            let mut tmp = vec![0i8; o.len()];
            reduce_window(&x, v, plan, body, &mut tmp).map_err(in_op(op))?;
            o.iter_mut().zip(tmp).for_each(|(d, s)| *d = s as u8);
            Ok(())
        }
        kTfLiteInt16 => run_typed::<i16>(ctx, plan, body),
        kTfLiteInt32 => run_typed::<i32>(ctx, plan, body),
        kTfLiteInt64 => run_typed::<i64>(ctx, plan, body),
        kTfLiteUInt8 => run_typed::<u8>(ctx, plan, body),
        kTfLiteFloat32 => run_typed::<f32>(ctx, plan, body),
        kTfLiteFloat64 => run_typed::<f64>(ctx, plan, body),
        other => Err(Error::new(format!("type {} is not supported", other.name()))),
    }
    .map_err(in_op(op))
}

fn resize(ctx: &OpCtx<'_>, op: &'static str, plan: &WindowPlan) -> Result<()> {
    let dims: Vec<i32> = plan.out_shape.iter().map(|&d| d as i32).collect();
    ctx.resize_output(0, &dims).map_err(in_op(op))
}

/// The reduction a body subgraph's single op names (TFLite's `GetBodyFunction`).
pub fn body_of_codes(codes: &[i32]) -> Result<Body> {
    let [code] = codes else {
        crate::bail!("the body subgraph must hold exactly one op, it holds {}", codes.len());
    };
    let is = |o: Op| *code == o as i32;
    Ok(if is(Op::kTfLiteBuiltinAdd) || is(Op::kTfLiteBuiltinStablehloAdd) {
        Body::Add
    } else if is(Op::kTfLiteBuiltinMul) || is(Op::kTfLiteBuiltinStablehloMultiply) {
        Body::Mul
    } else if is(Op::kTfLiteBuiltinMaximum) || is(Op::kTfLiteBuiltinStablehloMaximum) {
        Body::Max
    } else if is(Op::kTfLiteBuiltinMinimum) || is(Op::kTfLiteBuiltinStablehloMinimum) {
        Body::Min
    } else if is(Op::kTfLiteBuiltinLogicalAnd) || is(Op::kTfLiteBuiltinStablehloAnd) {
        Body::All
    } else if is(Op::kTfLiteBuiltinLogicalOr) || is(Op::kTfLiteBuiltinStablehloOr) {
        Body::Any
    } else {
        crate::bail!("the body op (builtin code {code}) is not a supported reduction")
    })
}

/// STABLEHLO_REDUCE_WINDOW; its State is the plan and the reduction.
struct StablehloReduceWindow;

impl BuiltinKernel for StablehloReduceWindow {
    const NAME: &'static str = STABLEHLO;
    type Params = TfLiteStablehloReduceWindowParams;
    type State = (WindowPlan, Body);

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteStablehloReduceWindowParams) -> Result<(WindowPlan, Body)> {
        check_arity(ctx, STABLEHLO, 2, 2, 1)?;
        check_types(ctx, STABLEHLO)?;
        let input = ctx.input(0).map_err(in_op(STABLEHLO))?;
        let rank = input.shape.len().min(MAX_RANK);
        let o = WindowOptions {
            window: &p.window_dimensions[..rank],
            strides: &p.window_strides[..rank],
            base_dilations: &p.base_dilations[..rank],
            window_dilations: &p.window_dilations[..rank],
            padding: &p.padding[..2 * rank],
        };
        let plan = window_plan(input.shape, &o).map_err(|e| op_error(STABLEHLO, e.message))?;
        let g = calls_of(ctx, STABLEHLO)?;
        let sg = usize::try_from(p.body_subgraph_index)
            .map_err(|_| op_error(STABLEHLO, format!("body subgraph index {} is negative", p.body_subgraph_index)))?;
        let codes = g.builtin_codes(sg).map_err(|e| op_error(STABLEHLO, e.message))?;
        let body = body_of_codes(&codes).map_err(|e| op_error(STABLEHLO, e.message))?;
        resize(ctx, STABLEHLO, &plan)?;
        Ok((plan, body))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteStablehloReduceWindowParams, s: &mut (WindowPlan, Body)) -> Result<()> {
        run(ctx, STABLEHLO, &s.0, s.1)
    }
}

/// REDUCE_WINDOW; its State is the plan and the reduction.
struct ReduceWindow;

fn const_i64s(ctx: &OpCtx<'_>, i: usize, what: &str) -> Result<Vec<i64>> {
    let t = ctx.input(i).map_err(in_op(TFL))?;
    if !t.is_constant() || t.dtype != TfLiteType::kTfLiteInt64 {
        return Err(op_error(TFL, format!("{what} must be a constant int64 tensor")));
    }
    super::values_of::<i64>(&t).map_err(in_op(TFL))
}

impl BuiltinKernel for ReduceWindow {
    const NAME: &'static str = TFL;
    type Params = TfLiteReduceWindowParams;
    type State = (WindowPlan, Body);

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteReduceWindowParams) -> Result<(WindowPlan, Body)> {
        check_arity(ctx, TFL, 5, 5, 1)?;
        check_types(ctx, TFL)?;
        let body = match p.reduce_function {
            F::TfLiteReduceWindowFunctionAdd => Body::Add,
            F::TfLiteReduceWindowFunctionMul => Body::Mul,
            F::TfLiteReduceWindowFunctionMin => Body::Min,
            F::TfLiteReduceWindowFunctionMax => Body::Max,
            F::TfLiteReduceWindowFunctionAll => Body::All,
            F::TfLiteReduceWindowFunctionAny => Body::Any,
            _ => return Err(op_error(TFL, "unsupported reduce function")),
        };
        let input = ctx.input(0).map_err(in_op(TFL))?;
        let rank = input.shape.len();
        let (window, strides, dilations) = (
            const_i64s(ctx, 2, "the window shape")?,
            const_i64s(ctx, 3, "the window strides")?,
            const_i64s(ctx, 4, "the window dilations")?,
        );
        let ones = vec![1i64; rank];
        let zeros = vec![0i64; 2 * rank];
        let o = WindowOptions {
            window: &window,
            strides: &strides,
            base_dilations: &ones,
            window_dilations: &dilations,
            padding: &zeros,
        };
        let plan = window_plan(input.shape, &o).map_err(|e| op_error(TFL, e.message))?;
        resize(ctx, TFL, &plan)?;
        Ok((plan, body))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteReduceWindowParams, s: &mut (WindowPlan, Body)) -> Result<()> {
        run(ctx, TFL, &s.0, s.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts<'a>(w: &'a [i64], s: &'a [i64], bd: &'a [i64], wd: &'a [i64], p: &'a [i64]) -> WindowOptions<'a> {
        WindowOptions { window: w, strides: s, base_dilations: bd, window_dilations: wd, padding: p }
    }

    #[test]
    fn sums_windows() {
        // 4x4 = 1..16, window 2x2 stride 2: 1+2+5+6, 3+4+7+8, ...
        let x: Vec<i32> = (1..=16).collect();
        let plan = window_plan(&[4, 4], &opts(&[2, 2], &[2, 2], &[1, 1], &[1, 1], &[0; 4])).unwrap();
        assert_eq!(plan.out_shape, vec![2, 2]);
        let mut out = [0; 4];
        reduce_window(&x, 0, &plan, Body::Add, &mut out).unwrap();
        assert_eq!(out, [14, 22, 46, 54]);
    }

    #[test]
    fn dilations_and_padding() {
        // [1, 2, 3] base-dilated by 2: 1 _ 2 _ 3, padded (1, 1) with init 0:
        // _ 1 _ 2 _ 3 _; window 3 (dilation 1) stride 2: max over (_,1,_), (_,2,_), (_,3,_).
        let plan = window_plan(&[3], &opts(&[3], &[2], &[2], &[1], &[1, 1])).unwrap();
        assert_eq!(plan.out_shape, vec![3]);
        let mut out = [0; 3];
        reduce_window(&[1, 2, 3], -100, &plan, Body::Max, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3]);
        // Window dilation 2 over 6 elements: window 2 covers (0, 2), (1, 3), ...
        let plan = window_plan(&[6], &opts(&[2], &[1], &[1], &[2], &[0, 0])).unwrap();
        assert_eq!(plan.out_shape, vec![4]);
        let mut out = [0.0f32; 4];
        reduce_window(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 1.0, &plan, Body::Mul, &mut out).unwrap();
        assert_eq!(out, [3.0, 8.0, 15.0, 24.0]);
        // Cropping: padding (-1, -1) of 4 elements leaves 2, 3.
        let plan = window_plan(&[4], &opts(&[2], &[1], &[1], &[1], &[-1, -1])).unwrap();
        let mut out = [0i8; 1];
        reduce_window(&[1, 2, 3, 4], 0, &plan, Body::Add, &mut out).unwrap();
        assert_eq!(out, [5]);
    }

    #[test]
    fn logical_and_small_inputs() {
        let plan = window_plan(&[3], &opts(&[2], &[1], &[1], &[1], &[0, 0])).unwrap();
        let mut out = [9i16; 2];
        reduce_window(&[1, 0, 5], 1, &plan, Body::All, &mut out).unwrap();
        assert_eq!(out, [0, 0]);
        reduce_window(&[1, 0, 5], 0, &plan, Body::Any, &mut out).unwrap();
        assert_eq!(out, [1, 1]);
        let plan = window_plan(&[2], &opts(&[3], &[1], &[1], &[1], &[0, 0])).unwrap();
        assert_eq!(plan.out_shape, vec![0], "an input smaller than the window");
    }

    #[test]
    fn bad_options_are_errors() {
        assert!(window_plan(&[3], &opts(&[0], &[1], &[1], &[1], &[0, 0])).is_err());
        assert!(window_plan(&[3], &opts(&[1], &[-1], &[1], &[1], &[0, 0])).is_err());
        assert!(window_plan(&[3], &opts(&[1, 1], &[1], &[1], &[1], &[0, 0])).is_err());
        assert!(window_plan(&[3], &opts(&[1], &[1], &[1], &[1], &[-2, -1])).is_err());
        assert!(window_plan(&[3], &opts(&[i64::MAX], &[1], &[1], &[3], &[0, 0])).is_err());
        assert!(window_plan(&[3, 3], &opts(&[1, 1], &[1, 1], &[1 << 20, 1 << 20], &[1, 1], &[0; 4])).is_err());
        assert!(window_plan(&[1; 7], &opts(&[1; 7], &[1; 7], &[1; 7], &[1; 7], &[0; 14])).is_err());
        assert!(body_of_codes(&[]).is_err());
        assert!(body_of_codes(&[Op::kTfLiteBuiltinAdd as i32, Op::kTfLiteBuiltinAdd as i32]).is_err());
        assert_eq!(body_of_codes(&[Op::kTfLiteBuiltinStablehloMaximum as i32]).unwrap(), Body::Max);
        assert!(body_of_codes(&[Op::kTfLiteBuiltinSub as i32]).is_err());
    }
}
