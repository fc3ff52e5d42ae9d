//! TOPK_V2 (TFLite `kernels/topk_v2.cc`).
//!
//! The `k` largest values of each innermost row, largest first, with their positions;
//! equal values keep their row order (lower index first), as TFLite's comparator. Inputs:
//! the values (float32, uint8, int8, int16, int32, int64; rank >= 1) and `k` (one int32 or
//! int16 value, `0 <= k <= row length`). Outputs: values `[..., k]` of the input type and
//! indices `[..., k]` (int32 or int16). A NaN orders below every number (TFLite's
//! comparator is not a strict order with NaNs). A non-constant `k` must give the shape the
//! model declares (see `shape_util::plan_declared_output`).

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
};
use core::cmp::Ordering;

const OP: &str = "TOPK_V2";

/// The TOPK_V2 registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<TopKV2>(TfLiteBuiltinOperator::kTfLiteBuiltinTopkV2)
}

/// Values TOPK_V2 orders: `desc(a, b)` is `Less` when `a` comes first (is larger).
pub trait TopKValue: Copy {
    fn desc(a: Self, b: Self) -> Ordering;
}

macro_rules! topk_int {
    ($($t:ty),*) => {$(
        impl TopKValue for $t {
            #[inline]
            fn desc(a: $t, b: $t) -> Ordering { b.cmp(&a) }
        }
    )*};
}
topk_int!(u8, i8, i16, i32, i64);

impl TopKValue for f32 {
    #[inline]
    fn desc(a: f32, b: f32) -> Ordering {
        match (a.is_nan(), b.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            // -0.0 and 0.0 compare equal, as in C++.
            _ => b.partial_cmp(&a).unwrap_or(Ordering::Equal),
        }
    }
}

/// Top `k` of each `row`-long row of `input` into `values` / `indices` (`rows * k` each).
pub fn top_k<T: TopKValue>(input: &[T], row: usize, k: usize, values: &mut [T], indices: &mut [i64]) -> Result<()> {
    if k > row {
        crate::bail!("k = {k} is larger than the row length {row}");
    }
    let rows = input.len().checked_div(row).unwrap_or(0);
    if input.len() != rows * row || values.len() != rows * k || indices.len() != rows * k {
        crate::bail!("buffers do not match {rows} rows of {row} with k = {k}");
    }
    if k == 0 {
        return Ok(());
    }
    let mut order: Vec<usize> = Vec::with_capacity(row);
    for r in 0..rows {
        let data = &input[r * row..(r + 1) * row];
        order.clear();
        order.extend(0..row);
        let cmp = |&a: &usize, &b: &usize| T::desc(data[a], data[b]).then(a.cmp(&b));
        if k < row {
            order.select_nth_unstable_by(k - 1, cmp);
        }
        order[..k].sort_unstable_by(cmp);
        for (j, &i) in order[..k].iter().enumerate() {
            values[r * k + j] = data[i];
            indices[r * k + j] = i as i64;
        }
    }
    Ok(())
}

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, OP, 2, 2, 2)?;
    let input = ctx.input(0).map_err(in_op(OP))?;
    let k = ctx.input(1).map_err(in_op(OP))?;
    let values = ctx.output(0).map_err(in_op(OP))?;
    let indices = ctx.output(1).map_err(in_op(OP))?;
    use TfLiteType::*;
    if !matches!(input.dtype, kTfLiteFloat32 | kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16 | kTfLiteInt32 | kTfLiteInt64)
    {
        return Err(op_error(OP, format!("input type {} is not supported", input.dtype.name())));
    }
    if values.dtype != input.dtype {
        return Err(op_error(OP, "the values output must have the input's type"));
    }
    if !matches!(indices.dtype, kTfLiteInt32 | kTfLiteInt16) {
        return Err(op_error(OP, format!("index output type {} is not int32 or int16", indices.dtype.name())));
    }
    if !matches!(k.dtype, kTfLiteInt32 | kTfLiteInt16) || k.num_elements() != 1 {
        return Err(op_error(OP, "k must be one int32 or int16 value"));
    }
    if input.shape.is_empty() || input.shape.iter().any(|&d| d < 0) {
        return Err(op_error(OP, format!("input shape {:?} must have rank 1 or more", input.shape)));
    }
    Ok((input, k))
}

fn output_shape(input: &TensorView<'_>, k: &TensorView<'_>) -> Result<Vec<i32>> {
    let k = int_values(k, true).map_err(in_op(OP))?[0];
    let last = *input.shape.last().unwrap_or(&0) as i64;
    if k < 0 || k > last {
        return Err(op_error(OP, format!("k = {k} must be between 0 and the last dimension {last}")));
    }
    let mut shape = input.shape.to_vec();
    *shape.last_mut().expect("rank >= 1") = k as i32;
    Ok(shape)
}

/// TOPK_V2; its State holds the row length and, when `k` is constant, `k`.
struct TopKV2;

/// What Prepare derives for a TOPK_V2 node.
struct TopKPlan {
    /// Length of the innermost rows.
    row: usize,
    /// `None` when `k` is only known at Invoke.
    k: Option<usize>,
}

impl BuiltinKernel for TopKV2 {
    const NAME: &'static str = OP;
    type Params = ();
    type State = TopKPlan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<TopKPlan> {
        let (input, k) = operands(ctx)?;
        ctx.set_output_type(0, input.dtype).map_err(in_op(OP))?;
        let row = *input.shape.last().unwrap_or(&0) as usize;
        if !known_at_prepare(&k) {
            plan_declared_output(ctx, OP, 0)?;
            plan_declared_output(ctx, OP, 1)?;
            return Ok(TopKPlan { row, k: None });
        }
        let shape = output_shape(&input, &k)?;
        ctx.resize_output(0, &shape).map_err(in_op(OP))?;
        ctx.resize_output(1, &shape).map_err(in_op(OP))?;
        Ok(TopKPlan { row, k: Some(*shape.last().unwrap_or(&0) as usize) })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut TopKPlan) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?;
        let k = match plan.k {
            Some(k) => k,
            None => {
                let shape = output_shape(&input, &ctx.input(1).map_err(in_op(OP))?)?;
                settle_output_shape(ctx, OP, 0, "k value", &shape)?;
                settle_output_shape(ctx, OP, 1, "k value", &shape)?;
                *shape.last().unwrap_or(&0) as usize
            }
        };
        let row = plan.row;
        let mut values = ctx.output(0).map_err(in_op(OP))?;
        let mut indices = ctx.output(1).map_err(in_op(OP))?;
        let mut idx = vec![0i64; values.num_elements()];
        use TfLiteType::*;
        let r = match input.dtype {
            kTfLiteFloat32 => top_k(input.data::<f32>()?, row, k, values.data_mut::<f32>()?, &mut idx),
            kTfLiteUInt8 => top_k(input.data::<u8>()?, row, k, values.data_mut::<u8>()?, &mut idx),
            kTfLiteInt8 => top_k(input.data::<i8>()?, row, k, values.data_mut::<i8>()?, &mut idx),
            kTfLiteInt16 => top_k(input.data::<i16>()?, row, k, values.data_mut::<i16>()?, &mut idx),
            kTfLiteInt32 => top_k(input.data::<i32>()?, row, k, values.data_mut::<i32>()?, &mut idx),
            _ => top_k(input.data::<i64>()?, row, k, values.data_mut::<i64>()?, &mut idx),
        };
        r.map_err(|e| op_error(OP, e.message))?;
        if indices.dtype == kTfLiteInt32 {
            for (o, &i) in indices.data_mut::<i32>()?.iter_mut().zip(&idx) {
                *o = i as i32;
            }
        } else {
            for (o, &i) in indices.data_mut::<i16>()?.iter_mut().zip(&idx) {
                *o = i as i16;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn top() {
        let x = [1.0f32, 5.0, 5.0, -2.0, f32::NAN, 3.0];
        let (mut v, mut i) = ([0f32; 3], [0i64; 3]);
        top_k(&x, 6, 3, &mut v, &mut i).unwrap();
        assert_eq!(v, [5.0, 5.0, 3.0]);
        assert_eq!(i, [1, 2, 5]);
        let (mut v, mut i) = ([0i8; 4], [0i64; 4]);
        top_k(&[3i8, -1, 3, 7, 0, 0], 3, 2, &mut v, &mut i).unwrap();
        assert_eq!(v, [3, 3, 7, 0]);
        assert_eq!(i, [0, 2, 0, 1]);
        assert!(top_k(&[1i8, 2], 2, 3, &mut [0i8; 3], &mut [0i64; 3]).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt32, &[2, 3], &[4i32, 9, 1, -5, -6, 0], None, false);
        let k = g.tensor(kTfLiteInt32, &[], &[2i32], None, true);
        let v = g.output(kTfLiteInt32, None);
        let i = g.output(kTfLiteInt32, None);
        assert_eq!(g.run::<()>(&registration(), &[x, k], &[v, i], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(v), vec![9, 4, 0, -5]);
        assert_eq!(g.data::<i32>(i), vec![1, 0, 2, 0]);
        let big = g.tensor(kTfLiteInt32, &[], &[4i32], None, true);
        let (v2, i2) = (g.output(kTfLiteInt32, None), g.output(kTfLiteInt32, None));
        assert_eq!(g.run::<()>(&registration(), &[x, big], &[v2, i2], None), TfLiteStatus::kTfLiteError);
    }
}
