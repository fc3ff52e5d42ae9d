//! Helpers shared by the shape and data-movement kernels (RESHAPE, CONCATENATION, PAD,
//! TRANSPOSE, SLICE, GATHER, ...) and by the unary elementwise glue: operand-count
//! checks, reading small integer parameter tensors, axis normalisation, checked element
//! counts, row-major strides, and a dispatch over the element types a tensor can hold.
//!
//! Data-dependent output shapes: as TFLite, such an output is marked dynamic
//! (`SetTensorToDynamic`, [`plan_declared_output`]) when a shape-determining input is not
//! constant, and resized in Eval once the values are known ([`settle_output_shape`]);
//! the interpreter prepares the nodes after it again before they run. RESHAPE and
//! EXPAND_DIMS, whose output bytes never change, settle the shape in Eval instead.

use crate::abi::types::TfLiteType;
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};

/// An error whose message starts with the op name.
pub fn op_error(op: &str, msg: impl core::fmt::Display) -> Error {
    Error::new(format!("{op}: {msg}"))
}

/// Prefixes an error (keeping its status) with the op name.
pub fn in_op(op: &'static str) -> impl Fn(Error) -> Error {
    move |e| Error::with_status(e.status, format!("{op}: {}", e.message))
}

/// Checks the node's input and output counts (`inputs` is an inclusive range).
pub fn check_arity(ctx: &OpCtx<'_>, op: &str, min_in: usize, max_in: usize, outputs: usize) -> Result<()> {
    let n = ctx.num_inputs();
    if n < min_in || n > max_in {
        let want = if min_in == max_in { format!("{min_in}") } else { format!("{min_in} to {max_in}") };
        return Err(op_error(op, format!("expected {want} inputs, got {n}")));
    }
    if ctx.num_outputs() != outputs {
        return Err(op_error(op, format!("expected {outputs} outputs, got {}", ctx.num_outputs())));
    }
    Ok(())
}

/// Number of elements of `shape`, checked for negative dimensions and overflow.
pub fn element_count(shape: &[i32]) -> Result<usize> {
    shape.iter().try_fold(1usize, |acc, &d| {
        let d = usize::try_from(d).map_err(|_| Error::new(format!("shape {shape:?} has a negative dimension")))?;
        acc.checked_mul(d).ok_or_else(|| Error::new(format!("shape {shape:?} has too many elements")))
    })
}

/// Row-major strides (in elements) of `shape`; dimensions must be non-negative.
pub fn strides(shape: &[i32]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1].saturating_mul(shape[i + 1].max(0) as usize);
    }
    s
}

/// Product of `shape[from..to]` (empty product is 1), for outer/inner sizes.
pub fn dims_product(shape: &[i32], from: usize, to: usize) -> usize {
    shape[from.min(shape.len())..to.min(shape.len())].iter().map(|&d| d.max(0) as usize).product()
}

/// The values of an integer tensor (int32 or int64, and int16 where `allow_i16`), widened.
/// Read byte-wise, so parameter tensors whose model buffers are not aligned (TFLite reads
/// them regardless) work too.
pub fn int_values(t: &TensorView<'_>, allow_i16: bool) -> Result<Vec<i64>> {
    let width = match t.dtype {
        TfLiteType::kTfLiteInt32 => 4,
        TfLiteType::kTfLiteInt64 => 8,
        TfLiteType::kTfLiteInt16 if allow_i16 => 2,
        other => {
            return Err(Error::new(format!("tensor {} has type {}, expected int32 or int64", t.index, other.name())));
        }
    };
    let n = t.num_elements();
    let raw = t.raw()?;
    let need = n.checked_mul(width).ok_or_else(|| Error::new("tensor size overflow"))?;
    if raw.len() < need {
        return Err(Error::new(format!("tensor {} holds {} bytes, needs {need}", t.index, raw.len())));
    }
    Ok(raw[..need]
        .chunks_exact(width)
        .map(|c| match width {
            2 => i64::from(i16::from_le_bytes([c[0], c[1]])),
            4 => i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            _ => i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        })
        .collect())
}

/// The single value of a one-element int32/int64 tensor.
pub fn scalar_int(t: &TensorView<'_>) -> Result<i64> {
    let v = int_values(t, false)?;
    if v.len() != 1 {
        return Err(Error::new(format!("tensor {} must hold exactly one value, holds {}", t.index, v.len())));
    }
    Ok(v[0])
}

/// Converts to `i32` (a shape entry or index), or an error naming `what`.
pub fn to_i32(v: i64, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::new(format!("{what} {v} does not fit in int32")))
}

/// `axis` in `[-rank, rank)` made non-negative.
pub fn normalize_axis(axis: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if a < 0 || a >= r {
        return Err(Error::new(format!("axis {axis} is out of range for rank {rank}")));
    }
    Ok(a as usize)
}

/// True when a shape-determining input's values are known at prepare time (TFLite's
/// `IsConstantOrPersistentTensor`; this runtime has no persistent read-only tensors).
pub fn known_at_prepare(t: &TensorView<'_>) -> bool {
    t.is_constant()
}

/// Prepare-time handling of output `i` whose shape depends on the values of a
/// non-constant input: the output becomes dynamic (TFLite's `SetTensorToDynamic`), and
/// Eval gives it its shape with [`settle_output_shape`].
pub fn plan_declared_output(ctx: &OpCtx<'_>, op: &str, i: usize) -> Result<()> {
    ctx.set_output_dynamic(i).map_err(|e| op_error(op, e.message))
}

/// Eval-time counterpart of [`plan_declared_output`] for output `i`: `want` is the shape
/// the input values give. A dynamic output is resized to it (TFLite's
/// `ResizeOutputTensor` in Eval); a planned output must already have it (an error naming
/// `what`, the inputs the shape depends on, otherwise). Call it before taking the
/// output's view.
pub fn settle_output_shape(ctx: &OpCtx<'_>, op: &str, i: usize, what: &str, want: &[i32]) -> Result<()> {
    let out = ctx.output(i).map_err(|e| op_error(op, e.message))?;
    if out.is_dynamic() {
        return ctx.resize_output(i, want).map_err(|e| op_error(op, e.message));
    }
    if out.shape == want {
        return Ok(());
    }
    Err(op_error(op, format!("the {what} give output shape {want:?}, but the output was planned as {:?}", out.shape)))
}

/// Checks that `dtype` is one of `allowed`.
pub fn check_type(op: &str, what: &str, dtype: TfLiteType, allowed: &[TfLiteType]) -> Result<()> {
    if allowed.contains(&dtype) {
        Ok(())
    } else {
        Err(op_error(op, format!("{what} type {} is not supported", dtype.name())))
    }
}

/// Checks that two tensors have the same type.
pub fn check_same_type(op: &str, a: &TensorView<'_>, b: &TensorView<'_>) -> Result<()> {
    if a.dtype != b.dtype {
        return Err(op_error(
            op,
            format!("tensor {} has type {}, tensor {} has type {}", a.index, a.dtype.name(), b.index, b.dtype.name()),
        ));
    }
    Ok(())
}

/// Checks that two tensors carry the same (legacy) quantization parameters, as TFLite's
/// data-movement ops require where they copy quantized values unchanged.
pub fn check_same_quant(op: &str, a: &TensorView<'_>, b: &TensorView<'_>) -> Result<()> {
    let (qa, qb) = (a.quant(), b.quant());
    if qa.scale != qb.scale || qa.zero_point != qb.zero_point {
        return Err(op_error(
            op,
            format!(
                "tensors {} and {} must have the same quantization (scale {} zero point {} vs scale {} zero point {})",
                a.index, b.index, qa.scale, qa.zero_point, qb.scale, qb.zero_point
            ),
        ));
    }
    Ok(())
}

/// The input and output of a one-in, one-out elementwise op, checked: arity, and the
/// output's type equal to the input's.
pub fn unary_operands<'a>(
    ctx: &OpCtx<'a>,
    op: &str,
) -> Result<(TensorView<'a>, crate::kernels::api::TensorViewMut<'a>)> {
    check_arity(ctx, op, 1, 1, 1)?;
    let input = ctx.input(0).map_err(|e| op_error(op, e.message))?;
    let out = ctx.output(0).map_err(|e| op_error(op, e.message))?;
    if out.dtype != input.dtype {
        return Err(op_error(
            op,
            format!("output type {} differs from the input type {}", out.dtype.name(), input.dtype.name()),
        ));
    }
    Ok((input, out))
}

/// Eval-time check that an output has the shape prepare gave it.
pub fn check_out_shape(op: &str, got: &[i32], want: &[i32]) -> Result<()> {
    if got != want {
        return Err(op_error(op, format!("output shape {got:?} does not match the expected {want:?}")));
    }
    Ok(())
}

/// Runs `$body` with `$T` bound to the Rust element type of a tensor of type `$dtype`
/// (for kernels that only move elements around). Types without a fixed-size element are
/// an error naming `$op`.
macro_rules! with_elem_type {
    ($dtype:expr, $op:expr, $T:ident => $body:expr) => {{
        use $crate::abi::types::TfLiteType as TT;
        match $dtype {
            TT::kTfLiteFloat32 => {
                type $T = f32;
                $body
            }
            TT::kTfLiteInt32 => {
                type $T = i32;
                $body
            }
            TT::kTfLiteUInt32 => {
                type $T = u32;
                $body
            }
            TT::kTfLiteInt64 => {
                type $T = i64;
                $body
            }
            TT::kTfLiteUInt64 => {
                type $T = u64;
                $body
            }
            TT::kTfLiteFloat64 => {
                type $T = f64;
                $body
            }
            TT::kTfLiteInt16 => {
                type $T = i16;
                $body
            }
            TT::kTfLiteUInt16 | TT::kTfLiteFloat16 | TT::kTfLiteBFloat16 => {
                type $T = u16;
                $body
            }
            TT::kTfLiteInt8 => {
                type $T = i8;
                $body
            }
            TT::kTfLiteUInt8 | TT::kTfLiteBool => {
                type $T = u8;
                $body
            }
            other => Err($crate::error::Error::new(format!("{}: type {} is not supported", $op, other.name()))),
        }
    }};
}
pub(crate) use with_elem_type;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_strides() {
        assert_eq!(element_count(&[2, 3, 4]).unwrap(), 24);
        assert_eq!(element_count(&[]).unwrap(), 1);
        assert_eq!(element_count(&[0, 5]).unwrap(), 0);
        assert!(element_count(&[-1, 2]).is_err());
        assert!(element_count(&[i32::MAX, i32::MAX, i32::MAX]).is_err());
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(strides(&[]), Vec::<usize>::new());
        assert_eq!(dims_product(&[2, 3, 4], 1, 3), 12);
        assert_eq!(dims_product(&[2, 3, 4], 3, 3), 1);
    }

    #[test]
    fn axes() {
        assert_eq!(normalize_axis(-1, 3).unwrap(), 2);
        assert_eq!(normalize_axis(0, 3).unwrap(), 0);
        assert!(normalize_axis(3, 3).is_err());
        assert!(normalize_axis(-4, 3).is_err());
        assert!(normalize_axis(0, 0).is_err());
        assert!(to_i32(1 << 40, "dimension").is_err());
    }

    #[test]
    fn elem_dispatch() {
        fn size_of_elem(dt: TfLiteType) -> Result<usize> {
            with_elem_type!(dt, "TEST", T => Ok(core::mem::size_of::<T>()))
        }
        assert_eq!(size_of_elem(TfLiteType::kTfLiteFloat32).unwrap(), 4);
        assert_eq!(size_of_elem(TfLiteType::kTfLiteBool).unwrap(), 1);
        assert_eq!(size_of_elem(TfLiteType::kTfLiteInt64).unwrap(), 8);
        assert!(size_of_elem(TfLiteType::kTfLiteString).is_err());
    }
}
