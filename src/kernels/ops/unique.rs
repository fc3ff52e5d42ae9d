//! UNIQUE (TFLite `kernels/unique.cc`).
//!
//! A 1-D input (int8, int16, int32, int64, float32 or uint8) gives two outputs: its
//! distinct values in order of first appearance (dynamic, sized at Invoke) and, for every
//! input element, the position of its value in that list, as int32 or int64 following
//! the options' `idx_out_type`. Float values are compared as TFLite's ordered map does:
//! -0.0 and 0.0 are one value (NaNs, which that map cannot order, are grouped by bit
//! pattern).

use crate::abi::builtin_op_data::TfLiteUniqueParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, check_type, in_op, op_error, plan_declared_output, to_i32};
use std::collections::HashMap;

const OP: &str = "UNIQUE";

/// The UNIQUE registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Unique>(TfLiteBuiltinOperator::kTfLiteBuiltinUnique)
}

/// A value as a hashable key, equal where TFLite's `std::map` finds them equivalent.
pub trait UniqueKey: Copy {
    type Key: Eq + std::hash::Hash;
    fn key(self) -> Self::Key;
}

macro_rules! int_key {
    ($($t:ty),*) => {$(
        impl UniqueKey for $t {
            type Key = $t;
            fn key(self) -> $t {
                self
            }
        }
    )*};
}
int_key!(i8, u8, i16, i32, i64);

impl UniqueKey for f32 {
    type Key = u32;
    fn key(self) -> u32 {
        // Adding +0.0 turns -0.0 into 0.0, which the map's `<` cannot tell apart.
        (self + 0.0).to_bits()
    }
}

/// The distinct values of `input` in order of first appearance; `index[i]` receives
/// the position of `input[i]`'s value among them.
pub fn unique<T: UniqueKey>(input: &[T], index: &mut [i64]) -> Result<Vec<T>> {
    if index.len() != input.len() {
        crate::bail!("index output holds {} values for {} inputs", index.len(), input.len());
    }
    let mut seen: HashMap<T::Key, i64> = HashMap::new();
    let mut values = Vec::new();
    for (&x, slot) in input.iter().zip(index.iter_mut()) {
        *slot = *seen.entry(x.key()).or_insert_with(|| {
            values.push(x);
            values.len() as i64 - 1
        });
    }
    Ok(values)
}

/// UNIQUE; no state beyond its options.
struct Unique;

const INPUT_TYPES: [TfLiteType; 6] = [
    TfLiteType::kTfLiteInt8,
    TfLiteType::kTfLiteInt16,
    TfLiteType::kTfLiteInt32,
    TfLiteType::kTfLiteInt64,
    TfLiteType::kTfLiteFloat32,
    TfLiteType::kTfLiteUInt8,
];

fn run<T: UniqueKey + crate::kernels::api::Element>(ctx: &OpCtx<'_>, idx_type: TfLiteType) -> Result<()> {
    let input = ctx.input(0).map_err(in_op(OP))?;
    let mut index = vec![0i64; input.num_elements()];
    let values = unique::<T>(input.data::<T>()?, &mut index)?;
    let mut idx_out = ctx.output(1).map_err(in_op(OP))?;
    if idx_out.num_elements() != index.len() {
        return Err(op_error(OP, "index output size differs from the input size"));
    }
    if idx_type == TfLiteType::kTfLiteInt64 {
        idx_out.data_mut::<i64>()?.copy_from_slice(&index);
    } else {
        for (o, &i) in idx_out.data_mut::<i32>()?.iter_mut().zip(&index) {
            *o = i as i32;
        }
    }
    ctx.resize_output(0, &[to_i32(values.len() as i64, "unique count")?]).map_err(in_op(OP))?;
    ctx.output(0).map_err(in_op(OP))?.data_mut::<T>()?.copy_from_slice(&values);
    Ok(())
}

impl BuiltinKernel for Unique {
    const NAME: &'static str = OP;
    type Params = TfLiteUniqueParams;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteUniqueParams) -> Result<()> {
        check_arity(ctx, OP, 1, 1, 2)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        let values = ctx.output(0).map_err(in_op(OP))?;
        let idx = ctx.output(1).map_err(in_op(OP))?;
        if input.shape.len() != 1 || input.shape[0] < 0 {
            return Err(op_error(OP, format!("input must be 1-D, got shape {:?}", input.shape)));
        }
        check_type(OP, "input", input.dtype, &INPUT_TYPES)?;
        if values.dtype != input.dtype {
            return Err(op_error(OP, "unique values output type differs from the input type"));
        }
        if !matches!(p.index_out_type, TfLiteType::kTfLiteInt32 | TfLiteType::kTfLiteInt64) {
            return Err(op_error(
                OP,
                format!("index output can only be int32 or int64, requested {}", p.index_out_type.name()),
            ));
        }
        if idx.dtype != p.index_out_type {
            return Err(op_error(
                OP,
                format!("index output has type {}, the options ask for {}", idx.dtype.name(), p.index_out_type.name()),
            ));
        }
        plan_declared_output(ctx, OP, 0)?;
        ctx.resize_output(1, input.shape).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteUniqueParams, _: &mut ()) -> Result<()> {
        let t = p.index_out_type;
        match ctx.input(0).map_err(in_op(OP))?.dtype {
            TfLiteType::kTfLiteInt8 => run::<i8>(ctx, t),
            TfLiteType::kTfLiteInt16 => run::<i16>(ctx, t),
            TfLiteType::kTfLiteInt32 => run::<i32>(ctx, t),
            TfLiteType::kTfLiteInt64 => run::<i64>(ctx, t),
            TfLiteType::kTfLiteFloat32 => run::<f32>(ctx, t),
            TfLiteType::kTfLiteUInt8 => run::<u8>(ctx, t),
            other => Err(Error::new(format!("type {} is not supported", other.name()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn values_and_indices() {
        let mut idx = [0i64; 7];
        let v = unique(&[3i32, 1, 3, 2, 1, 1, 7], &mut idx).unwrap();
        assert_eq!(v, [3, 1, 2, 7]);
        assert_eq!(idx, [0, 1, 0, 2, 1, 1, 3]);
        let mut idx = [0i64; 3];
        let v = unique(&[-0.0f32, 0.0, 1.5], &mut idx).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(idx, [0, 0, 1]);
        assert!(unique::<i8>(&[], &mut []).unwrap().is_empty());
        assert!(unique(&[1u8], &mut []).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt16, &[5], &[4i16, 4, -2, 9, -2], None, false);
        let v = g.output(kTfLiteInt16, None);
        let i = g.output(kTfLiteInt64, None);
        let p = TfLiteUniqueParams { index_out_type: kTfLiteInt64 };
        assert_eq!(g.run(&registration(), &[x], &[v, i], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(v), vec![3]);
        assert_eq!(g.data::<i16>(v), vec![4, -2, 9]);
        assert_eq!(g.data::<i64>(i), vec![0, 0, 1, 2, 1]);
        // The index output's declared type must be the one the options ask for.
        let v2 = g.output(kTfLiteInt16, None);
        let i2 = g.output(kTfLiteInt32, None);
        assert_eq!(g.run(&registration(), &[x], &[v2, i2], Some(p)), TfLiteStatus::kTfLiteError);
        let none = TfLiteUniqueParams { index_out_type: kTfLiteNoType };
        let (v3, i3) = (g.output(kTfLiteInt16, None), g.output(kTfLiteInt32, None));
        assert_eq!(g.run(&registration(), &[x], &[v3, i3], Some(none)), TfLiteStatus::kTfLiteError);
    }
}
