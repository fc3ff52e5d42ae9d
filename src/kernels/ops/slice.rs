//! SLICE and STRIDED_SLICE (TFLite `kernels/slice.cc`, `kernels/strided_slice.cc`,
//! `internal/strided_slice_logic.h`, `reference/strided_slice.h`).
//!
//! SLICE: `begin` and `size` (int32 or int64, one entry per input dimension, rank at most
//! 5); a size of -1 means "to the end". STRIDED_SLICE: int32 `begin`, `end`, `strides`
//! with TFLite's masks (begin, end, ellipsis, new-axis, shrink-axis) and, from version 8,
//! `offset` (`end` is relative to `begin`); at most 5 dimensions including new axes.
//! Indices are clamped as TFLite clamps them. The output shape depends on the index
//! values: non-constant ones make the output dynamic, sized in Eval (see
//! `shape_util::plan_declared_output`).

use crate::abi::builtin_op_data::TfLiteStridedSliceParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, check_type, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
    strides, with_elem_type,
};

const MAX_RANK: usize = 5;

/// The SLICE registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Slice>(TfLiteBuiltinOperator::kTfLiteBuiltinSlice)
}

/// The STRIDED_SLICE registration.
pub fn strided_slice_registration() -> TfLiteRegistration {
    kernel::registration::<StridedSlice>(TfLiteBuiltinOperator::kTfLiteBuiltinStridedSlice)
}

/// Gathers, for every output element in row-major order, the input element at the
/// per-dimension indices `index_lists[d]` (any index pattern: ranges, strided, reversed).
pub fn gather_indices<T: Copy>(input: &[T], shape: &[i32], index_lists: &[Vec<usize>], out: &mut [T]) -> Result<()> {
    let n_in: usize = shape.iter().map(|&d| d.max(0) as usize).product();
    let n_out: usize = index_lists.iter().map(Vec::len).product();
    if input.len() != n_in || out.len() != n_out || index_lists.len() != shape.len() {
        crate::bail!("buffers hold {} and {} elements, expected {n_in} and {n_out}", input.len(), out.len());
    }
    for (d, list) in index_lists.iter().enumerate() {
        if list.iter().any(|&i| i >= shape[d].max(0) as usize) {
            crate::bail!("index out of range for dimension {d} of size {}", shape[d]);
        }
    }
    if n_out == 0 {
        return Ok(());
    }
    let st = strides(shape);
    let rank = shape.len();
    let mut pos = vec![0usize; rank];
    for o in out.iter_mut() {
        let src: usize = (0..rank).map(|d| index_lists[d][pos[d]] * st[d]).sum();
        *o = input[src];
        for d in (0..rank).rev() {
            pos[d] += 1;
            if pos[d] < index_lists[d].len() {
                break;
            }
            pos[d] = 0;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// SLICE
// ---------------------------------------------------------------------------------------

/// SLICE's per-dimension `(begin, size)`, checked against the input shape.
pub fn slice_ranges(shape: &[i32], begin: &[i64], size: &[i64]) -> Result<Vec<(usize, usize)>> {
    if begin.len() != shape.len() || size.len() != shape.len() {
        crate::bail!(
            "begin and size have {} and {} entries, the input has rank {}",
            begin.len(),
            size.len(),
            shape.len()
        );
    }
    shape
        .iter()
        .zip(begin.iter().zip(size))
        .map(|(&dim, (&b, &s))| {
            let dim = i64::from(dim);
            if b < 0 || b > dim {
                crate::bail!("begin {b} is out of range for a dimension of size {dim}");
            }
            let s = if s < 0 {
                if s != -1 {
                    crate::bail!("invalid size {s}");
                }
                dim - b
            } else {
                if b + s > dim {
                    crate::bail!("begin {b} plus size {s} exceeds the dimension {dim}");
                }
                s
            };
            Ok((b as usize, s as usize))
        })
        .collect()
}

fn slice_operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>, TensorView<'a>)> {
    const OP: &str = "SLICE";
    check_arity(ctx, OP, 3, 3, 1)?;
    let input = ctx.input(0).map_err(in_op(OP))?;
    let begin = ctx.input(1).map_err(in_op(OP))?;
    let size = ctx.input(2).map_err(in_op(OP))?;
    let out = ctx.output(0).map_err(in_op(OP))?;
    if out.dtype != input.dtype {
        return Err(op_error(
            OP,
            format!("output type {} differs from the input type {}", out.dtype.name(), input.dtype.name()),
        ));
    }
    use TfLiteType::*;
    check_type(OP, "begin", begin.dtype, &[kTfLiteInt32, kTfLiteInt64])?;
    check_type(OP, "size", size.dtype, &[kTfLiteInt32, kTfLiteInt64])?;
    check_type(
        OP,
        "input",
        input.dtype,
        &[
            kTfLiteFloat32,
            kTfLiteInt32,
            kTfLiteInt64,
            kTfLiteInt8,
            kTfLiteInt16,
            kTfLiteUInt8,
            kTfLiteUInt32,
            kTfLiteBool,
        ],
    )?;
    if begin.shape.len() != 1 || size.shape.len() != 1 {
        return Err(op_error(OP, "begin and size must be vectors"));
    }
    if input.shape.len() > MAX_RANK {
        return Err(op_error(OP, "only 1D-5D inputs are supported"));
    }
    Ok((input, begin, size))
}

fn slice_plan(input: &TensorView<'_>, begin: &TensorView<'_>, size: &TensorView<'_>) -> Result<Vec<(usize, usize)>> {
    slice_ranges(input.shape, &int_values(begin, false)?, &int_values(size, false)?).map_err(in_op("SLICE"))
}

fn ranges_shape(r: &[(usize, usize)]) -> Vec<i32> {
    r.iter().map(|&(_, s)| s as i32).collect()
}

fn range_lists(r: &[(usize, usize)]) -> Vec<Vec<usize>> {
    r.iter().map(|&(b, s)| (b..b + s).collect()).collect()
}

/// SLICE; its State is every dimension's input index list when `begin` and `size` are
/// constant (`None` when they are only known at Invoke).
struct Slice;

impl BuiltinKernel for Slice {
    const NAME: &'static str = "SLICE";
    type Params = ();
    type State = Option<Vec<Vec<usize>>>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<Vec<Vec<usize>>>> {
        let (input, begin, size) = slice_operands(ctx)?;
        if !(known_at_prepare(&begin) && known_at_prepare(&size)) {
            plan_declared_output(ctx, "SLICE", 0)?;
            return Ok(None);
        }
        let r = slice_plan(&input, &begin, &size)?;
        ctx.resize_output(0, &ranges_shape(&r)).map_err(in_op("SLICE"))?;
        Ok(Some(range_lists(&r)))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), planned: &mut Option<Vec<Vec<usize>>>) -> Result<()> {
        const OP: &str = "SLICE";
        let input = ctx.input(0).map_err(in_op(OP))?;
        let dynamic;
        let lists = match planned {
            Some(l) => l.as_slice(),
            None => {
                let (begin, size) = (ctx.input(1).map_err(in_op(OP))?, ctx.input(2).map_err(in_op(OP))?);
                let r = slice_plan(&input, &begin, &size)?;
                settle_output_shape(ctx, OP, 0, "begin and size values", &ranges_shape(&r))?;
                dynamic = range_lists(&r);
                dynamic.as_slice()
            }
        };
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        with_elem_type!(input.dtype, OP, T => gather_indices::<T>(input.data::<T>()?, input.shape, lists, out.data_mut::<T>()?))
            .map_err(in_op(OP))
    }
}

// ---------------------------------------------------------------------------------------
// STRIDED_SLICE
// ---------------------------------------------------------------------------------------

fn bit(mask: i32, i: usize) -> bool {
    i < 32 && (mask >> i) & 1 != 0
}

/// One dimension of a strided slice after mask processing (TFLite's effective params).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SliceDim {
    pub size: i32,
    pub start: i32,
    pub stop: i32,
    pub stride: i32,
    pub begin_mask: bool,
    pub end_mask: bool,
    pub shrink: bool,
}

/// TFLite's `BuildStridedSliceParams`: expands the ellipsis and new axes into effective
/// dimensions (each with the input size it walks, 1 for a new axis).
pub fn build_strided_slice(
    input_shape: &[i32],
    begin: &[i32],
    end: &[i32],
    strides: &[i32],
    p: &TfLiteStridedSliceParams,
) -> Result<Vec<SliceDim>> {
    let begin_count = begin.len();
    if end.len() != begin_count || strides.len() != begin_count {
        crate::bail!("begin, end and strides have {}, {} and {} entries", begin_count, end.len(), strides.len());
    }
    if begin_count > 32 {
        crate::bail!("{begin_count} slice dimensions is too many");
    }
    let input_dims = input_shape.len();
    let num_add_axis = (0..begin_count).filter(|&i| !bit(p.ellipsis_mask, i) && bit(p.new_axis_mask, i)).count();
    let effective_dims = input_dims + num_add_axis;
    let mut eff_ellipsis = vec![false; effective_dims];
    let mut eff_new_axis = vec![false; effective_dims];
    let mut ellipsis_start = effective_dims;
    let mut expanded_ellipsis = 0usize;
    let mut i = 0;
    while i < effective_dims {
        if bit(p.ellipsis_mask, i) {
            ellipsis_start = i;
            let candidate = (i + 1 + num_add_axis + input_dims) as i64 - begin_count as i64;
            let end_idx = (i + 1).max(candidate.min(effective_dims as i64).max(0) as usize);
            expanded_ellipsis = end_idx - ellipsis_start - 1;
            while i < end_idx {
                if i < effective_dims {
                    eff_ellipsis[i] = true;
                }
                i += 1;
            }
            continue;
        }
        if i >= expanded_ellipsis && bit(p.new_axis_mask, i - expanded_ellipsis) {
            eff_new_axis[i] = true;
        }
        i += 1;
    }
    let mut dims = Vec::with_capacity(effective_dims);
    let mut added_ellipsis = 0usize;
    let mut added_axes = 0usize;
    let input_dim = |i: usize, added: usize| -> Result<i32> {
        i.checked_sub(added)
            .and_then(|k| input_shape.get(k).copied())
            .ok_or_else(|| Error::new("slice dimensions do not match the input rank"))
    };
    for i in 0..effective_dims {
        if eff_ellipsis[i] {
            added_ellipsis = i.saturating_sub(ellipsis_start);
            dims.push(SliceDim {
                size: input_dim(i, added_axes)?,
                start: 0,
                stop: 0,
                stride: 1,
                begin_mask: true,
                end_mask: true,
                shrink: false,
            });
        } else if eff_new_axis[i] {
            dims.push(SliceDim {
                size: 1,
                start: 0,
                stop: 1,
                stride: 1,
                begin_mask: false,
                end_mask: false,
                shrink: false,
            });
            added_axes += 1;
        } else if i >= begin_count + expanded_ellipsis {
            dims.push(SliceDim {
                size: input_dim(i, added_axes)?,
                start: 0,
                stop: 0,
                stride: 1,
                begin_mask: true,
                end_mask: true,
                shrink: false,
            });
        } else {
            let o = i
                .checked_sub(added_ellipsis)
                .filter(|&o| o < begin_count)
                .ok_or_else(|| Error::new("slice dimensions do not match the masks"))?;
            dims.push(SliceDim {
                size: input_dim(i, added_axes)?,
                start: begin[o],
                stop: end[o],
                stride: strides[o],
                begin_mask: bit(p.begin_mask, o),
                end_mask: bit(p.end_mask, o),
                shrink: bit(p.shrink_axis_mask, o),
            });
        }
    }
    if dims.len() > MAX_RANK {
        crate::bail!("only up to 5 dimensions including added axes are supported");
    }
    Ok(dims)
}

/// `StridedSliceStartForAxis`.
fn start_for(d: &SliceDim) -> i64 {
    let size = i64::from(d.size);
    let mut start = i64::from(d.start);
    if start < 0 {
        start += size;
    }
    start = if d.stride > 0 { start.clamp(0, size) } else { start.max(-1).min(size - 1) };
    if d.begin_mask {
        start = if d.stride > 0 { 0 } else { size - 1 };
    }
    start
}

/// `StridedSliceEndForAxis`.
fn end_for(d: &SliceDim, start: i64, offset: bool) -> i64 {
    let size = i64::from(d.size);
    if d.shrink {
        return if start >= size { start } else { start + 1 };
    }
    let mut end = i64::from(d.stop);
    if offset {
        end += start;
    }
    if end < 0 {
        end += size;
    }
    end = if d.stride > 0 { end.clamp(0, size) } else { end.max(-1).min(size - 1) };
    if d.end_mask {
        end = if d.stride > 0 { size } else { -1 };
    }
    end
}

/// The input indices each effective dimension visits, and the output shape (shrunk
/// dimensions dropped).
pub fn strided_slice_plan(dims: &[SliceDim], offset: bool) -> Result<(Vec<Vec<usize>>, Vec<i32>)> {
    let mut lists = Vec::with_capacity(dims.len());
    let mut out_shape = Vec::new();
    for d in dims {
        if d.stride == 0 {
            crate::bail!("stride value has to be non-zero");
        }
        let start = start_for(d);
        let end = end_for(d, start, offset);
        let stride = i64::from(d.stride);
        let mut list = Vec::new();
        let mut idx = start;
        while if stride > 0 { idx < end } else { idx > end } {
            if idx < 0 || idx >= i64::from(d.size) {
                crate::bail!("slice index {idx} is out of range for a dimension of size {}", d.size);
            }
            list.push(idx as usize);
            idx += stride;
        }
        if d.shrink {
            if list.len() != 1 {
                crate::bail!("shrunk dimension selects {} elements, expected 1", list.len());
            }
        } else {
            out_shape.push(list.len() as i32);
        }
        lists.push(list);
    }
    Ok((lists, out_shape))
}

/// TFLite's prepare-time output shape (`ResizeOutputTensor`), which for `offset` takes the
/// extent from `end` directly.
fn strided_slice_shape(dims: &[SliceDim], offset: bool, end: &[i32]) -> Result<Vec<i32>> {
    let mut out = Vec::new();
    for (idx, d) in dims.iter().enumerate() {
        if d.stride == 0 {
            crate::bail!("stride value has to be non-zero");
        }
        if d.shrink {
            continue;
        }
        let extent = if offset {
            i64::from(*end.get(idx).ok_or_else(|| Error::new("end has too few entries"))?)
        } else {
            let s = start_for(d);
            end_for(d, s, false) - s
        };
        let n = ((extent as f32) / (d.stride as f32)).ceil();
        out.push(if n < 0.0 { 0 } else { n as i32 });
    }
    Ok(out)
}

const SS: &str = "STRIDED_SLICE";

struct SsOperands<'a> {
    input: TensorView<'a>,
    begin: TensorView<'a>,
    end: TensorView<'a>,
    strides: TensorView<'a>,
    params: TfLiteStridedSliceParams,
}

fn ss_operands<'a>(ctx: &OpCtx<'a>, p: &Option<TfLiteStridedSliceParams>) -> Result<SsOperands<'a>> {
    check_arity(ctx, SS, 4, 4, 1)?;
    let input = ctx.input(0).map_err(in_op(SS))?;
    let begin = ctx.input(1).map_err(in_op(SS))?;
    let end = ctx.input(2).map_err(in_op(SS))?;
    let strides = ctx.input(3).map_err(in_op(SS))?;
    let out = ctx.output(0).map_err(in_op(SS))?;
    for t in [&begin, &end, &strides] {
        if t.shape.len() != 1 || t.dtype != TfLiteType::kTfLiteInt32 {
            return Err(op_error(SS, "begin, end and strides must be int32 vectors"));
        }
    }
    if begin.num_elements() != end.num_elements() {
        return Err(op_error(SS, "begin and end have different lengths"));
    }
    if out.dtype != input.dtype {
        return Err(op_error(
            SS,
            format!("output type {} differs from the input type {}", out.dtype.name(), input.dtype.name()),
        ));
    }
    use TfLiteType::*;
    check_type(
        SS,
        "input",
        input.dtype,
        &[
            kTfLiteFloat32,
            kTfLiteInt32,
            kTfLiteInt64,
            kTfLiteUInt8,
            kTfLiteUInt32,
            kTfLiteInt8,
            kTfLiteInt16,
            kTfLiteBool,
        ],
    )?;
    if input.shape.len() > MAX_RANK {
        return Err(op_error(SS, "only 1D-5D inputs are supported"));
    }
    let params = p.unwrap_or_default();
    Ok(SsOperands { input, begin, end, strides, params })
}

/// An int32 index tensor's values (read byte-wise: model buffers may be unaligned).
fn i32_values(t: &TensorView<'_>) -> Result<Vec<i32>> {
    Ok(int_values(t, false)?.into_iter().map(|v| v as i32).collect())
}

fn ss_dims(o: &SsOperands<'_>) -> Result<Vec<SliceDim>> {
    build_strided_slice(
        o.input.shape,
        &i32_values(&o.begin)?,
        &i32_values(&o.end)?,
        &i32_values(&o.strides)?,
        &o.params,
    )
    .map_err(in_op(SS))
}

/// The index lists and effective input shape (new axes are size-1 dimensions of the same
/// data) of a strided slice, and its output shape.
struct SsPlan {
    lists: Vec<Vec<usize>>,
    eff_shape: Vec<i32>,
    shape: Vec<i32>,
}

fn ss_plan(o: &SsOperands<'_>) -> Result<SsPlan> {
    let dims = ss_dims(o)?;
    let (lists, shape) = strided_slice_plan(&dims, o.params.offset).map_err(in_op(SS))?;
    Ok(SsPlan { lists, eff_shape: dims.iter().map(|d| d.size).collect(), shape })
}

/// STRIDED_SLICE; its State is the index lists and effective input shape when `begin`,
/// `end` and `strides` are all constant and give the shape Prepare set (`None`
/// otherwise: Invoke plans, and reports a mismatch, with the values it gets).
struct StridedSlice;

impl BuiltinKernel for StridedSlice {
    const NAME: &'static str = SS;
    type Params = Option<TfLiteStridedSliceParams>;
    type State = Option<SsPlan>;

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteStridedSliceParams>) -> Result<Option<SsPlan>> {
        let o = ss_operands(ctx, p)?;
        let known = known_at_prepare(&o.strides)
            && (o.params.offset || (known_at_prepare(&o.begin) && known_at_prepare(&o.end)));
        if !known {
            plan_declared_output(ctx, SS, 0)?;
            return Ok(None);
        }
        let dims = ss_dims(&o)?;
        let shape = strided_slice_shape(&dims, o.params.offset, &i32_values(&o.end)?).map_err(in_op(SS))?;
        ctx.resize_output(0, &shape).map_err(in_op(SS))?;
        let all_constant = known_at_prepare(&o.begin) && known_at_prepare(&o.end) && known_at_prepare(&o.strides);
        Ok(if all_constant { ss_plan(&o).ok().filter(|plan| plan.shape == shape) } else { None })
    }

    fn invoke(ctx: &OpCtx<'_>, p: &Option<TfLiteStridedSliceParams>, planned: &mut Option<SsPlan>) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(SS))?;
        let dynamic;
        let plan = match planned {
            Some(plan) => &*plan,
            None => {
                let plan = ss_plan(&ss_operands(ctx, p)?)?;
                settle_output_shape(ctx, SS, 0, "begin, end and strides values", &plan.shape)?;
                dynamic = plan;
                &dynamic
            }
        };
        let mut out = ctx.output(0).map_err(in_op(SS))?;
        with_elem_type!(input.dtype, SS, T => {
            gather_indices::<T>(input.data::<T>()?, &plan.eff_shape, &plan.lists, out.data_mut::<T>()?)
        })
        .map_err(in_op(SS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;

    fn ss(shape: &[i32], b: &[i32], e: &[i32], s: &[i32], p: TfLiteStridedSliceParams) -> Result<(Vec<i32>, Vec<i32>)> {
        let n: i32 = shape.iter().product();
        let input: Vec<i32> = (0..n).collect();
        let dims = build_strided_slice(shape, b, e, s, &p)?;
        let (lists, out_shape) = strided_slice_plan(&dims, p.offset)?;
        assert_eq!(strided_slice_shape(&dims, p.offset, e)?, out_shape);
        let eff: Vec<i32> = dims.iter().map(|d| d.size).collect();
        let mut out = vec![0; out_shape.iter().product::<i32>() as usize];
        gather_indices(&input, &eff, &lists, &mut out)?;
        Ok((out, out_shape))
    }

    fn p() -> TfLiteStridedSliceParams {
        TfLiteStridedSliceParams::default()
    }

    #[test]
    fn strided_slice_cases() {
        // strided_slice_test.cc In1D: {1,2,3,4} begin 1 end 3 stride 1 -> {2,3} (values 1,2 here).
        assert_eq!(ss(&[4], &[1], &[3], &[1], p()).unwrap(), (vec![1, 2], vec![2]));
        // Negative stride: In1D_NegativeBeginNegativeStride: begin -2 end -3 stride -1 -> {3}.
        assert_eq!(ss(&[4], &[-2], &[-3], &[-1], p()).unwrap(), (vec![2], vec![1]));
        // Reverse the whole axis with masks.
        let mut m = p();
        m.begin_mask = 1;
        m.end_mask = 1;
        assert_eq!(ss(&[4], &[0], &[0], &[-1], m).unwrap(), (vec![3, 2, 1, 0], vec![4]));
        // Shrink axis: [2,3] take row 1.
        let mut m = p();
        m.shrink_axis_mask = 1;
        assert_eq!(ss(&[2, 3], &[1, 0], &[2, 3], &[1, 1], m).unwrap(), (vec![3, 4, 5], vec![3]));
        // Ellipsis: [2,3,4] with "...,1:3" -> [2,3,2].
        let mut m = p();
        m.ellipsis_mask = 1;
        let (v, s) = ss(&[2, 3, 4], &[0, 1], &[0, 3], &[1, 1], m).unwrap();
        assert_eq!(s, vec![2, 3, 2]);
        assert_eq!(&v[..4], &[1, 2, 5, 6]);
        // New axis: [3] with [newaxis, :] -> [1,3].
        let mut m = p();
        m.new_axis_mask = 1;
        m.end_mask = 2;
        m.begin_mask = 2;
        assert_eq!(ss(&[3], &[0, 0], &[1, 0], &[1, 1], m).unwrap(), (vec![0, 1, 2], vec![1, 3]));
        // Stride 2 and clamping past the end.
        assert_eq!(ss(&[5], &[1], &[100], &[2], p()).unwrap(), (vec![1, 3], vec![2]));
        // Offset (v8): end is relative to begin.
        let mut m = p();
        m.offset = true;
        assert_eq!(ss(&[5], &[1], &[3], &[1], m).unwrap(), (vec![1, 2, 3], vec![3]));
        // Zero stride is an error; shrinking past the end is an error.
        assert!(ss(&[4], &[0], &[1], &[0], p()).is_err());
        let mut m = p();
        m.shrink_axis_mask = 1;
        assert!(ss(&[4], &[7], &[8], &[1], m).is_err());
        assert!(ss(&[4], &[0, 0], &[1], &[1], p()).is_err());
    }

    #[test]
    fn slice_cases() {
        assert_eq!(slice_ranges(&[3, 4], &[1, 0], &[-1, 2]).unwrap(), vec![(1, 2), (0, 2)]);
        assert!(slice_ranges(&[3, 4], &[1, 0], &[3, 2]).is_err());
        assert!(slice_ranges(&[3, 4], &[-1, 0], &[1, 2]).is_err());
        assert!(slice_ranges(&[3, 4], &[0], &[1]).is_err());
        let input: Vec<i32> = (0..12).collect();
        let mut out = [0; 4];
        gather_indices(&input, &[3, 4], &[vec![1, 2], vec![0, 1]], &mut out).unwrap();
        assert_eq!(out, [4, 5, 8, 9]);
    }

    #[test]
    fn glue() {
        use TfLiteType::*;
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[2, 3], &[0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], None, false);
        let b = g.tensor(kTfLiteInt64, &[2], &[0i64, 1], None, true);
        let s = g.tensor(kTfLiteInt64, &[2], &[2i64, -1], None, true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[x, b, s], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 2]);
        assert_eq!(g.data::<f32>(o), vec![1.0, 2.0, 4.0, 5.0]);
        let b = g.tensor(kTfLiteInt32, &[2], &[1i32, 0], None, true);
        let e = g.tensor(kTfLiteInt32, &[2], &[2i32, 3], None, true);
        let st = g.tensor(kTfLiteInt32, &[2], &[1i32, 2], None, true);
        let o2 = g.output(kTfLiteFloat32, None);
        let p = TfLiteStridedSliceParams { shrink_axis_mask: 1, ..Default::default() };
        assert_eq!(g.run(&strided_slice_registration(), &[x, b, e, st], &[o2], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o2), vec![2]);
        assert_eq!(g.data::<f32>(o2), vec![3.0, 5.0]);
    }
}
