//! SELECT and SELECT_V2 (TFLite `kernels/select.cc`, `reference_ops::Select`,
//! `RankOneSelect`, `BroadcastSelect5DSlow`): `condition ? x : y` elementwise.
//!
//! SELECT (v1): same shapes, or a condition that is a scalar or a vector along x's first
//! dimension (selecting whole slabs). SELECT_V2: numpy broadcasting of all three inputs
//! (rank at most 5, as TFLite). Values of any fixed-size type are moved unchanged.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView, broadcast_shape};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, check_out_shape, in_op, op_error, strides, with_elem_type};

/// The SELECT registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Select<false>>(TfLiteBuiltinOperator::kTfLiteBuiltinSelect)
}

/// The SELECT_V2 registration.
pub fn select_v2_registration() -> TfLiteRegistration {
    kernel::registration::<Select<true>>(TfLiteBuiltinOperator::kTfLiteBuiltinSelectV2)
}

/// How the condition applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Same shapes (or all single elements): elementwise.
    Elementwise,
    /// Condition of `n` entries selecting `n` equal slabs of x / y (SELECT v1).
    RankOne(usize),
    /// Three-way broadcast (SELECT_V2).
    Broadcast,
}

/// The output shape and mode, as SelectPrepare decides them.
pub fn plan(cond: &[i32], x: &[i32], y: &[i32], v2: bool) -> Result<(Vec<i32>, Mode)> {
    let n = |s: &[i32]| s.iter().map(|&d| d.max(0) as i64).product::<i64>();
    if n(cond) == 1 && n(x) == 1 && n(y) == 1 {
        // Single elements of any rank: TFLite selects elementwise (keeping the output's
        // shape); the broadcast of all-ones shapes is that shape.
        return Ok((broadcast_shape(&broadcast_shape(cond, x)?, y)?, Mode::Elementwise));
    }
    if cond == x && x == y {
        return Ok((x.to_vec(), Mode::Elementwise));
    }
    if !v2 {
        let scalar = cond.is_empty();
        let rank_one = cond.len() == 1 && !x.is_empty() && cond[0] == x[0];
        if !(scalar || rank_one) || x != y {
            crate::bail!("condition {cond:?} cannot select between {x:?} and {y:?}");
        }
        let slabs = if scalar { 1 } else { cond[0].max(0) as usize };
        return Ok((x.to_vec(), Mode::RankOne(slabs)));
    }
    let shape = broadcast_shape(&broadcast_shape(cond, x)?, y)?;
    if shape.len() > 5 {
        crate::bail!("broadcasting supports at most 5 dimensions, got {}", shape.len());
    }
    Ok((shape, Mode::Broadcast))
}

/// Broadcast strides of `shape` right-aligned to `out` (0 where broadcast).
fn bstrides(shape: &[i32], out: &[i32]) -> Vec<usize> {
    let s = strides(shape);
    let off = out.len() - shape.len();
    (0..out.len()).map(|d| if d < off || shape[d - off] == 1 { 0 } else { s[d - off] }).collect()
}

/// `out = cond ? x : y` under `mode`.
pub fn select<T: Copy>(
    cond: (&[u8], &[i32]),
    x: (&[T], &[i32]),
    y: (&[T], &[i32]),
    out_shape: &[i32],
    mode: &Mode,
    out: &mut [T],
) -> Result<()> {
    let n: usize = out_shape.iter().map(|&d| d.max(0) as usize).product();
    if out.len() != n {
        crate::bail!("output holds {} elements, expected {n}", out.len());
    }
    match mode {
        Mode::Elementwise => {
            if cond.0.len() != n || x.0.len() != n || y.0.len() != n {
                crate::bail!("input sizes differ from the output's");
            }
            for (o, ((&c, &a), &b)) in out.iter_mut().zip(cond.0.iter().zip(x.0).zip(y.0)) {
                *o = if c != 0 { a } else { b };
            }
        }
        Mode::RankOne(slabs) => {
            if x.0.len() != n || y.0.len() != n || cond.0.len() != *slabs || (*slabs > 0 && !n.is_multiple_of(*slabs)) {
                crate::bail!("input sizes do not match the condition");
            }
            let inner = if *slabs == 0 { 0 } else { n / slabs };
            for (s, &c) in cond.0.iter().enumerate() {
                let src = if c != 0 { x.0 } else { y.0 };
                out[s * inner..(s + 1) * inner].copy_from_slice(&src[s * inner..(s + 1) * inner]);
            }
        }
        Mode::Broadcast => {
            let count = |s: &[i32]| s.iter().map(|&d| d.max(0) as usize).product::<usize>();
            if cond.0.len() != count(cond.1) || x.0.len() != count(x.1) || y.0.len() != count(y.1) {
                crate::bail!("input sizes do not match their shapes");
            }
            let (sc, sx, sy) = (bstrides(cond.1, out_shape), bstrides(x.1, out_shape), bstrides(y.1, out_shape));
            let rank = out_shape.len();
            let mut idx = vec![0usize; rank];
            let (mut ic, mut ix, mut iy) = (0usize, 0usize, 0usize);
            for o in out.iter_mut() {
                *o = if cond.0[ic] != 0 { x.0[ix] } else { y.0[iy] };
                for d in (0..rank).rev() {
                    idx[d] += 1;
                    ic += sc[d];
                    ix += sx[d];
                    iy += sy[d];
                    if idx[d] < out_shape[d] as usize {
                        break;
                    }
                    ic -= sc[d] * idx[d];
                    ix -= sx[d] * idx[d];
                    iy -= sy[d] * idx[d];
                    idx[d] = 0;
                }
            }
        }
    }
    Ok(())
}

fn operands<'a>(ctx: &OpCtx<'a>, op: &'static str, v2: bool) -> Result<([TensorView<'a>; 3], Vec<i32>, Mode)> {
    check_arity(ctx, op, 3, 3, 1)?;
    let c = ctx.input(0).map_err(in_op(op))?;
    let x = ctx.input(1).map_err(in_op(op))?;
    let y = ctx.input(2).map_err(in_op(op))?;
    if c.dtype != TfLiteType::kTfLiteBool {
        return Err(op_error(op, "the condition must be bool"));
    }
    if x.dtype != y.dtype {
        return Err(op_error(op, "x and y must have the same type"));
    }
    let (shape, mode) = plan(c.shape, x.shape, y.shape, v2).map_err(in_op(op))?;
    Ok(([c, x, y], shape, mode))
}

/// SELECT (`V2` false) or SELECT_V2 (`V2` true); its State is the output shape and how
/// the condition applies ([`plan`]'s result).
struct Select<const V2: bool>;

impl<const V2: bool> BuiltinKernel for Select<V2> {
    const NAME: &'static str = if V2 { "SELECT_V2" } else { "SELECT" };
    type Params = ();
    type State = (Vec<i32>, Mode);

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<(Vec<i32>, Mode)> {
        let op = Self::NAME;
        let ([_, x, _], shape, mode) = operands(ctx, op, V2)?;
        ctx.set_output_type(0, x.dtype).map_err(in_op(op))?;
        ctx.resize_output(0, &shape).map_err(in_op(op))?;
        Ok((shape, mode))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), (shape, mode): &mut (Vec<i32>, Mode)) -> Result<()> {
        let op = Self::NAME;
        let c = ctx.input(0).map_err(in_op(op))?;
        let x = ctx.input(1).map_err(in_op(op))?;
        let y = ctx.input(2).map_err(in_op(op))?;
        let mut out = ctx.output(0).map_err(in_op(op))?;
        check_out_shape(op, out.shape, shape)?;
        let cond = c.data::<u8>().map_err(in_op(op))?;
        with_elem_type!(x.dtype, op, T => select::<T>(
            (cond, c.shape),
            (x.data::<T>()?, x.shape),
            (y.data::<T>()?, y.shape),
            shape,
            mode,
            out.data_mut::<T>()?,
        ))
        .map_err(in_op(op))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn modes() {
        let (s, m) = plan(&[2], &[2, 3], &[2, 3], false).unwrap();
        assert_eq!((s, m.clone()), (vec![2, 3], Mode::RankOne(2)));
        let mut out = [0i32; 6];
        select((&[1, 0], &[2]), (&[1, 2, 3, 4, 5, 6], &[2, 3]), (&[-1; 6], &[2, 3]), &[2, 3], &m, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, -1, -1, -1]);
        assert!(plan(&[3], &[2, 3], &[2, 3], false).is_err());
        let (s, m) = plan(&[1, 3], &[2, 1], &[], true).unwrap();
        assert_eq!(s, vec![2, 3]);
        select((&[1, 0, 1], &[1, 3]), (&[10, 20], &[2, 1]), (&[0], &[]), &s, &m, &mut out).unwrap();
        assert_eq!(out, [10, 0, 10, 20, 0, 20]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let c = g.tensor(kTfLiteBool, &[3], &[1u8, 0, 1], None, false);
        let x = g.tensor(kTfLiteFloat32, &[3], &[1.0f32, 2.0, 3.0], None, false);
        let y = g.tensor(kTfLiteFloat32, &[3], &[-1.0f32, -2.0, -3.0], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[c, x, y], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o), vec![1.0, -2.0, 3.0]);
        let ys = g.tensor(kTfLiteFloat32, &[], &[0.0f32], None, false);
        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&select_v2_registration(), &[c, x, ys], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o2), vec![1.0, 0.0, 3.0]);
        let o3 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[c, x, ys], &[o3], None), TfLiteStatus::kTfLiteError);
    }
}
