//! DENSIFY (TFLite `kernels/densify.cc`, `reference/densify.h`).
//!
//! Expands a sparse constant (float32, float16 or int8, with the model's
//! `SparsityParameters`) to its dense tensor of the same type and shape. The output lives
//! in the persistent arena and is computed once, at the first Invoke after Prepare, as
//! TFLite does; later Invokes leave it as it is. TFLite accepts other input types at
//! Prepare and fails at Invoke; here Prepare refuses them.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, check_out_shape, in_op, op_error};
use crate::model::sparsity::Expander;

const OP: &str = "DENSIFY";

/// The DENSIFY registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Densify>(TfLiteBuiltinOperator::kTfLiteBuiltinDensify)
}

/// Expands `values` into `out` (both typed as the tensor) with `plan`: zeros where
/// nothing is stored.
pub fn densify<T: Copy + Default>(plan: &Expander, values: &[T], out: &mut [T]) -> Result<()> {
    plan.expand(values, out, T::default()).map_err(in_op(OP))
}

/// What Prepare checked (the expansion plan and the element size) and what the output
/// was last computed from (input data, output data, output bytes).
pub struct State {
    plan: Expander,
    computed: Option<(usize, usize, usize)>,
}

struct Densify;

impl BuiltinKernel for Densify {
    const NAME: &'static str = OP;
    type Params = ();
    type State = State;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<State> {
        check_arity(ctx, OP, 1, 1, 1)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        use TfLiteType::*;
        if !matches!(input.dtype, kTfLiteFloat32 | kTfLiteFloat16 | kTfLiteInt8) {
            return Err(op_error(OP, format!("type {} is not supported", input.dtype.name())));
        }
        if !input.is_constant() {
            return Err(op_error(OP, "the input must be a constant"));
        }
        let sparsity = input.sparsity().map_err(in_op(OP))?.ok_or_else(|| op_error(OP, "the input is not sparse"))?;
        let plan = sparsity.plan(input.shape).map_err(in_op(OP))?;
        ctx.set_output_type(0, input.dtype).map_err(in_op(OP))?;
        ctx.set_output_persistent(0).map_err(in_op(OP))?;
        ctx.resize_output(0, input.shape).map_err(in_op(OP))?;
        Ok(State { plan, computed: None })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), state: &mut State) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        check_out_shape(OP, out.shape, input.shape)?;
        // The stored values' sparse layout is the input's, so its data is read as a flat
        // list of values (fewer than the shape's elements), not with `data`.
        let values = input.raw().map_err(in_op(OP))?;
        let out_bytes = out.bytes();
        let key = (values.as_ptr() as usize, out_ptr(&out)?, out_bytes);
        if out.is_persistent() && state.computed == Some(key) {
            return Ok(());
        }
        state.computed = None;
        use TfLiteType::*;
        match input.dtype {
            kTfLiteFloat32 => densify(&state.plan, &from_le::<4, f32>(values, f32::from_le_bytes), out.data_mut()?),
            kTfLiteFloat16 => densify(&state.plan, &from_le::<2, u16>(values, u16::from_le_bytes), out.data_mut()?),
            _ => densify(&state.plan, &from_le::<1, i8>(values, i8::from_le_bytes), out.data_mut()?),
        }?;
        state.computed = Some(key);
        Ok(())
    }
}

/// Where the output's data lies (what a computed output is keyed by).
fn out_ptr(out: &crate::kernels::api::TensorViewMut<'_>) -> Result<usize> {
    Ok(out.raw().map_err(in_op(OP))?.as_ptr() as usize)
}

/// The values of a raw little-endian buffer of `N`-byte elements.
fn from_le<const N: usize, T>(raw: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
    raw.chunks_exact(N).map(|c| f(c.try_into().unwrap_or([0; N]))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sparsity::{DimMetadata, Sparsity};

    fn plan_2x4_blocked() -> Expander {
        // Rows dense, 1x2 blocks compressed: row 0 holds block 1, row 1 blocks 0 and 1.
        Sparsity {
            traversal_order: vec![0, 1, 2],
            block_map: vec![1],
            dim_metadata: vec![
                DimMetadata::Dense(2),
                DimMetadata::Csr { segments: vec![0, 1, 3], indices: vec![1, 0, 1] },
                DimMetadata::Dense(2),
            ],
        }
        .plan(&[2, 4])
        .unwrap()
    }

    #[test]
    fn each_type() {
        let plan = plan_2x4_blocked();
        let mut f = [9.0f32; 8];
        densify(&plan, &[1.5, -2.0, 3.0, 0.0, 4.0, 5.0], &mut f).unwrap();
        assert_eq!(f, [0.0, 0.0, 1.5, -2.0, 3.0, 0.0, 4.0, 5.0]);
        let mut h = [7u16; 8];
        densify(&plan, &[0x3c00u16, 1, 2, 3, 4, 5], &mut h).unwrap();
        assert_eq!(h, [0, 0, 0x3c00, 1, 2, 3, 4, 5]);
        let mut q = [1i8; 8];
        densify(&plan, &[-128i8, 127, 1, 2, 3, 4], &mut q).unwrap();
        assert_eq!(q, [0, 0, -128, 127, 1, 2, 3, 4]);
    }

    #[test]
    fn wrong_sizes_are_errors() {
        let plan = plan_2x4_blocked();
        let e = densify(&plan, &[1i8; 5], &mut [0i8; 8]).unwrap_err().to_string();
        assert!(e.starts_with("DENSIFY"), "{e}");
        assert!(densify(&plan, &[1i8; 6], &mut [0i8; 7]).is_err());
    }

    #[test]
    fn little_endian_values() {
        assert_eq!(from_le::<4, f32>(&1.5f32.to_le_bytes(), f32::from_le_bytes), [1.5]);
        assert_eq!(from_le::<2, u16>(&[1, 2, 3, 4], u16::from_le_bytes), [0x201, 0x403]);
    }
}
