//! SEGMENT_SUM and UNSORTED_SEGMENT_SUM / _PROD / _MAX / _MIN (TFLite
//! `kernels/segment_sum.cc`, `kernels/unsorted_segment.cc`).
//!
//! Data is float32 or int32, segment ids int32; rows of the data (slices past the ids'
//! dimensions) are reduced into the output row their id names.
//!
//! SEGMENT_SUM: 1-D ids, one per data row, starting at 0 and rising by 0 or 1 at each
//! step; the output has `last_id + 1` rows.
//!
//! UNSORTED_SEGMENT_*: the ids' shape is a prefix of the data's, `num_segments` (one
//! int32) gives the output rows, an id must be below it, and negative ids are skipped.
//! Rows nothing maps to keep the reduction's identity: 0, 1, the type's lowest or its
//! highest value. Integer sums and products wrap, and MAX/MIN keep the running value
//! unless the new one compares greater/smaller (`std::max`/`std::min`, so a NaN input
//! is ignored).
//!
//! Both make the output dynamic, sized at Invoke, unless the ids (and `num_segments`,
//! and for SEGMENT_SUM the data) are constant.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{Element, OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, element_count, in_op, known_at_prepare, op_error, plan_declared_output};

/// The reduction of a segment op.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Reduce {
    Sum,
    Prod,
    Max,
    Min,
}

/// An element type the segment ops reduce.
pub trait SegElem: Copy + PartialOrd {
    fn identity(r: Reduce) -> Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
}

impl SegElem for f32 {
    fn identity(r: Reduce) -> f32 {
        match r {
            Reduce::Sum => 0.0,
            Reduce::Prod => 1.0,
            Reduce::Max => f32::MIN,
            Reduce::Min => f32::MAX,
        }
    }
    fn add(self, o: f32) -> f32 {
        self + o
    }
    fn mul(self, o: f32) -> f32 {
        self * o
    }
}

impl SegElem for i32 {
    fn identity(r: Reduce) -> i32 {
        match r {
            Reduce::Sum => 0,
            Reduce::Prod => 1,
            Reduce::Max => i32::MIN,
            Reduce::Min => i32::MAX,
        }
    }
    fn add(self, o: i32) -> i32 {
        self.wrapping_add(o)
    }
    fn mul(self, o: i32) -> i32 {
        self.wrapping_mul(o)
    }
}

/// Reduces row `i` of `data` (rows of `inner` elements) into output row `ids[i]`;
/// negative ids are skipped, `out` holds `out.len() / inner` rows.
pub fn segment_reduce<T: SegElem>(data: &[T], ids: &[i32], inner: usize, r: Reduce, out: &mut [T]) -> Result<()> {
    if ids.len().checked_mul(inner) != Some(data.len()) {
        crate::bail!("{} data values for {} ids of {inner} elements each", data.len(), ids.len());
    }
    let rows = out.len().checked_div(inner).unwrap_or(0);
    out.fill(T::identity(r));
    if inner == 0 {
        return Ok(());
    }
    for (&id, row) in ids.iter().zip(data.chunks_exact(inner)) {
        if id < 0 {
            continue;
        }
        if id as usize >= rows {
            crate::bail!("segment id {id} is not below the {rows} segments");
        }
        let dst = &mut out[id as usize * inner..(id as usize + 1) * inner];
        for (o, &x) in dst.iter_mut().zip(row) {
            *o = match r {
                Reduce::Sum => o.add(x),
                Reduce::Prod => o.mul(x),
                Reduce::Max => {
                    if *o < x {
                        x
                    } else {
                        *o
                    }
                }
                Reduce::Min => {
                    if x < *o {
                        x
                    } else {
                        *o
                    }
                }
            };
        }
    }
    Ok(())
}

/// SEGMENT_SUM's output row count: the ids must start at 0 and rise by 0 or 1.
pub fn sorted_segment_rows(ids: &[i32]) -> Result<usize> {
    let mut prev = -1i64;
    for (i, &id) in ids.iter().enumerate() {
        let ok = if i == 0 { id == 0 } else { matches!(i64::from(id) - prev, 0 | 1) };
        if !ok {
            crate::bail!("segment ids must start at 0 and rise by 0 or 1, got {id} at position {i}");
        }
        prev = i64::from(id);
    }
    Ok((prev + 1) as usize)
}

const SEGMENT_SUM: &str = "SEGMENT_SUM";

/// The SEGMENT_SUM registration.
pub fn segment_sum_registration() -> TfLiteRegistration {
    kernel::registration::<SegmentSum>(TfLiteBuiltinOperator::kTfLiteBuiltinSegmentSum)
}

/// The UNSORTED_SEGMENT_SUM registration.
pub fn unsorted_segment_sum_registration() -> TfLiteRegistration {
    kernel::registration::<Unsorted<0>>(TfLiteBuiltinOperator::kTfLiteBuiltinUnsortedSegmentSum)
}

/// The UNSORTED_SEGMENT_PROD registration.
pub fn unsorted_segment_prod_registration() -> TfLiteRegistration {
    kernel::registration::<Unsorted<1>>(TfLiteBuiltinOperator::kTfLiteBuiltinUnsortedSegmentProd)
}

/// The UNSORTED_SEGMENT_MAX registration.
pub fn unsorted_segment_max_registration() -> TfLiteRegistration {
    kernel::registration::<Unsorted<2>>(TfLiteBuiltinOperator::kTfLiteBuiltinUnsortedSegmentMax)
}

/// The UNSORTED_SEGMENT_MIN registration.
pub fn unsorted_segment_min_registration() -> TfLiteRegistration {
    kernel::registration::<Unsorted<3>>(TfLiteBuiltinOperator::kTfLiteBuiltinUnsortedSegmentMin)
}

fn ids_of(t: &TensorView<'_>) -> Result<Vec<i32>> {
    Ok(t.data::<i32>()?.to_vec())
}

fn check_types(op: &str, data: &TensorView<'_>, ids: &TensorView<'_>) -> Result<()> {
    if !matches!(data.dtype, TfLiteType::kTfLiteInt32 | TfLiteType::kTfLiteFloat32) {
        return Err(op_error(op, format!("data type {} is not float32 or int32", data.dtype.name())));
    }
    if ids.dtype != TfLiteType::kTfLiteInt32 {
        return Err(op_error(op, "segment ids must be int32"));
    }
    if data.shape.iter().chain(ids.shape).any(|&d| d < 0) {
        return Err(op_error(op, "negative dimension"));
    }
    Ok(())
}

fn run(ctx: &OpCtx<'_>, op: &str, r: Reduce, inner: usize) -> Result<()> {
    let data = ctx.input(0).map_err(|e| op_error(op, e.message))?;
    let ids = ctx.input(1).map_err(|e| op_error(op, e.message))?;
    let mut out = ctx.output(0).map_err(|e| op_error(op, e.message))?;
    if out.dtype != data.dtype {
        return Err(op_error(op, "output type differs from the data type"));
    }
    fn go<T: SegElem + Element>(
        data: &TensorView<'_>,
        ids: &TensorView<'_>,
        out: &mut crate::kernels::api::TensorViewMut<'_>,
        r: Reduce,
        inner: usize,
    ) -> Result<()> {
        segment_reduce(data.data::<T>()?, ids.data::<i32>()?, inner, r, out.data_mut::<T>()?)
    }
    if data.dtype == TfLiteType::kTfLiteInt32 {
        go::<i32>(&data, &ids, &mut out, r, inner)
    } else {
        go::<f32>(&data, &ids, &mut out, r, inner)
    }
    .map_err(|e| op_error(op, e.message))
}

/// Resizes (dynamic) or checks (planned) output 0 to `shape`.
fn settle(ctx: &OpCtx<'_>, op: &str, shape: &[i32]) -> Result<()> {
    crate::kernels::shape_util::settle_output_shape(ctx, op, 0, "segment ids", shape)
}

/// SEGMENT_SUM; its State is whether the output shape was fixed at Prepare.
struct SegmentSum;

fn segment_sum_shape(data: &TensorView<'_>, ids: &TensorView<'_>) -> Result<Vec<i32>> {
    let v = ids_of(ids).map_err(in_op(SEGMENT_SUM))?;
    if v.len() != data.shape[0] as usize {
        return Err(op_error(SEGMENT_SUM, format!("{} segment ids for {} data rows", v.len(), data.shape[0])));
    }
    let rows = sorted_segment_rows(&v).map_err(in_op(SEGMENT_SUM))?;
    let mut shape = data.shape.to_vec();
    shape[0] = rows as i32;
    Ok(shape)
}

impl BuiltinKernel for SegmentSum {
    const NAME: &'static str = SEGMENT_SUM;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        check_arity(ctx, SEGMENT_SUM, 2, 2, 1)?;
        let data = ctx.input(0).map_err(in_op(SEGMENT_SUM))?;
        let ids = ctx.input(1).map_err(in_op(SEGMENT_SUM))?;
        check_types(SEGMENT_SUM, &data, &ids)?;
        if data.shape.is_empty() || ids.shape.len() != 1 {
            return Err(op_error(SEGMENT_SUM, "data must have rank >= 1 and segment ids rank 1"));
        }
        ctx.set_output_type(0, data.dtype).map_err(in_op(SEGMENT_SUM))?;
        if known_at_prepare(&data) && known_at_prepare(&ids) {
            ctx.resize_output(0, &segment_sum_shape(&data, &ids)?).map_err(in_op(SEGMENT_SUM))
        } else {
            plan_declared_output(ctx, SEGMENT_SUM, 0)
        }
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let data = ctx.input(0).map_err(in_op(SEGMENT_SUM))?;
        let ids = ctx.input(1).map_err(in_op(SEGMENT_SUM))?;
        let shape = segment_sum_shape(&data, &ids)?;
        settle(ctx, SEGMENT_SUM, &shape)?;
        let inner = element_count(&shape[1..]).map_err(in_op(SEGMENT_SUM))?;
        run(ctx, SEGMENT_SUM, Reduce::Sum, inner)
    }
}

/// UNSORTED_SEGMENT_SUM (0), _PROD (1), _MAX (2) or _MIN (3); stateless.
struct Unsorted<const R: u8>;

impl<const R: u8> Unsorted<R> {
    const REDUCE: Reduce = match R {
        0 => Reduce::Sum,
        1 => Reduce::Prod,
        2 => Reduce::Max,
        _ => Reduce::Min,
    };
}

/// The UNSORTED_SEGMENT output shape: `[num_segments] + data.shape[rank(ids)..]`.
fn unsorted_shape(op: &str, data: &TensorView<'_>, ids: &TensorView<'_>, num: &TensorView<'_>) -> Result<Vec<i32>> {
    if num.num_elements() != 1 || !(num.shape.is_empty() || num.shape == [1]) {
        return Err(op_error(op, "num_segments must hold one value"));
    }
    let n = num.data::<i32>().map_err(|e| op_error(op, e.message))?[0];
    if n < 0 {
        return Err(op_error(op, format!("num_segments {n} is negative")));
    }
    let max = ids_of(ids).map_err(|e| op_error(op, e.message))?.into_iter().max().unwrap_or(-1);
    if max >= n {
        return Err(op_error(op, format!("segment id {max} is not below num_segments {n}")));
    }
    let mut shape = vec![n];
    shape.extend_from_slice(&data.shape[ids.shape.len()..]);
    element_count(&shape).map_err(|e| op_error(op, e.message))?;
    Ok(shape)
}

impl<const R: u8> BuiltinKernel for Unsorted<R> {
    const NAME: &'static str = match R {
        0 => "UNSORTED_SEGMENT_SUM",
        1 => "UNSORTED_SEGMENT_PROD",
        2 => "UNSORTED_SEGMENT_MAX",
        _ => "UNSORTED_SEGMENT_MIN",
    };
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        let op = Self::NAME;
        check_arity(ctx, op, 3, 3, 1)?;
        let data = ctx.input(0).map_err(|e| op_error(op, e.message))?;
        let ids = ctx.input(1).map_err(|e| op_error(op, e.message))?;
        let num = ctx.input(2).map_err(|e| op_error(op, e.message))?;
        check_types(op, &data, &ids)?;
        if num.dtype != TfLiteType::kTfLiteInt32 {
            return Err(op_error(op, "num_segments must be int32"));
        }
        if ids.shape.len() > data.shape.len() || ids.shape != &data.shape[..ids.shape.len()] {
            return Err(op_error(
                op,
                format!("segment ids shape {:?} is not a prefix of data shape {:?}", ids.shape, data.shape),
            ));
        }
        ctx.set_output_type(0, data.dtype).map_err(|e| op_error(op, e.message))?;
        if !data.is_dynamic() && known_at_prepare(&ids) && known_at_prepare(&num) {
            let shape = unsorted_shape(op, &data, &ids, &num)?;
            ctx.resize_output(0, &shape).map_err(|e| op_error(op, e.message))
        } else {
            plan_declared_output(ctx, op, 0)
        }
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let op = Self::NAME;
        let data = ctx.input(0).map_err(|e| op_error(op, e.message))?;
        let ids = ctx.input(1).map_err(|e| op_error(op, e.message))?;
        let num = ctx.input(2).map_err(|e| op_error(op, e.message))?;
        if ids.shape.len() > data.shape.len() || ids.shape != &data.shape[..ids.shape.len()] {
            return Err(op_error(op, "segment ids shape is not a prefix of the data shape"));
        }
        let shape = unsorted_shape(op, &data, &ids, &num)?;
        settle(ctx, op, &shape)?;
        let inner = element_count(&shape[1..]).map_err(|e| op_error(op, e.message))?;
        run(ctx, op, Self::REDUCE, inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn reduce() {
        let data = [1, 2, 3, 4, 5, 6];
        let mut out = [0; 6];
        segment_reduce(&data, &[2, 0, 2], 2, Reduce::Sum, &mut out).unwrap();
        assert_eq!(out, [3, 4, 0, 0, 6, 8]);
        segment_reduce(&data, &[2, -1, 2], 2, Reduce::Max, &mut out).unwrap();
        assert_eq!(out, [i32::MIN, i32::MIN, i32::MIN, i32::MIN, 5, 6]);
        segment_reduce(&data, &[0, 0, 0], 2, Reduce::Prod, &mut out[..2]).unwrap();
        assert_eq!(out[..2], [15, 48]);
        let mut f = [0f32; 1];
        segment_reduce(&[2.0, f32::NAN, -1.0], &[0, 0, 0], 1, Reduce::Min, &mut f).unwrap();
        assert_eq!(f, [-1.0]);
        assert!(segment_reduce(&data, &[3, 0, 0], 2, Reduce::Sum, &mut out).is_err());
        let mut w = [0i32; 1];
        segment_reduce(&[i32::MAX, 1], &[0, 0], 1, Reduce::Sum, &mut w).unwrap();
        assert_eq!(w, [i32::MIN]);
    }

    #[test]
    fn sorted_rows() {
        assert_eq!(sorted_segment_rows(&[0, 0, 1, 2, 2]).unwrap(), 3);
        assert_eq!(sorted_segment_rows(&[]).unwrap(), 0);
        assert!(sorted_segment_rows(&[1]).is_err());
        assert!(sorted_segment_rows(&[0, 2]).is_err());
        assert!(sorted_segment_rows(&[0, 1, 0]).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let d = g.tensor(kTfLiteFloat32, &[3, 2], &[1f32, 2.0, 3.0, 4.0, 5.0, 6.0], None, false);
        let ids = g.tensor(kTfLiteInt32, &[3], &[0i32, 0, 1], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&segment_sum_registration(), &[d, ids], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 2]);
        assert_eq!(g.data::<f32>(o), vec![4.0, 6.0, 5.0, 6.0]);
        let uids = g.tensor(kTfLiteInt32, &[3], &[2i32, -1, 0], None, true);
        let num = g.tensor(kTfLiteInt32, &[], &[3i32], None, true);
        let o2 = g.output(kTfLiteFloat32, None);
        let reg = unsorted_segment_min_registration();
        assert_eq!(g.run::<()>(&reg, &[d, uids, num], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o2), vec![3, 2]);
        assert_eq!(g.data::<f32>(o2), vec![5.0, 6.0, f32::MAX, f32::MAX, 1.0, 2.0]);
        let small = g.tensor(kTfLiteInt32, &[1], &[2i32], None, true);
        let o3 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&reg, &[d, uids, small], &[o3], None), TfLiteStatus::kTfLiteError);
    }
}
