//! STABLEHLO_PAD and DILATE (TFLite `kernels/stablehlo_pad.cc`, `dilate.cc`).
//!
//! STABLEHLO_PAD surrounds the operand with `edge_padding_low/high` elements per
//! dimension (negative values crop) and puts `interior_padding` elements between
//! neighbours, all of them the padding value (the first element of input 1). DILATE is
//! the interior padding alone: dilation factor `f` puts `f - 1` padding values between
//! neighbours, so the dimension becomes `(d - 1) * f + 1`; its factors come from an int32
//! tensor (the output is dynamic when that tensor is not constant).
//!
//! As TFLite: ranks 1 to 8; any element type, moved unchanged; an output dimension
//! computed as zero or negative makes every output dimension 0 (STABLEHLO_PAD); entries
//! of the option arrays past the operand's rank are ignored.

use crate::abi::builtin_op_data::{
    TFLITE_STABLEHLO_PAD_PARAMS_MAX_DIMENSION_COUNT as MAX_RANK, TfLiteStablehloPadParams,
};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, element_count, in_op, op_error, with_elem_type};

const PAD: &str = "STABLEHLO_PAD";
const DILATE: &str = "DILATE";

/// The STABLEHLO_PAD registration.
pub fn pad_registration() -> TfLiteRegistration {
    kernel::registration::<StablehloPad>(TfLiteBuiltinOperator::kTfLiteBuiltinStablehloPad)
}

/// The DILATE registration.
pub fn dilate_registration() -> TfLiteRegistration {
    kernel::registration::<Dilate>(TfLiteBuiltinOperator::kTfLiteBuiltinDilate)
}

/// Where the operand's elements land: element `i` of dimension `d` goes to output
/// position `low[d] + i * step[d]` when that lies in `0..out_shape[d]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PadPlan {
    pub in_shape: Vec<usize>,
    pub out_shape: Vec<usize>,
    pub low: Vec<i64>,
    pub step: Vec<i64>,
}

impl PadPlan {
    /// The output shape as tensor dimensions.
    pub fn out_dims(&self) -> Vec<i32> {
        // Every dimension was checked to fit an i32.
        self.out_shape.iter().map(|&d| d as i32).collect()
    }
}

/// STABLEHLO_PAD's plan for an operand of shape `dims` (TFLite's `PadData::Setup`).
pub fn pad_plan(dims: &[i32], low: &[i64], high: &[i64], interior: &[i64]) -> Result<PadPlan> {
    let rank = dims.len();
    if rank == 0 || rank > MAX_RANK || low.len() < rank || high.len() < rank || interior.len() < rank {
        crate::bail!("the operand has rank {rank}; 1 to {MAX_RANK} is supported");
    }
    let max = i64::from(i32::MAX);
    let mut out = Vec::with_capacity(rank);
    for d in 0..rank {
        let (lo, hi, int) = (low[d], high[d], interior[d]);
        if !(0..=max).contains(&int) {
            crate::bail!("interior padding {int} of dimension {d} must be in 0..={max}");
        }
        if !(-max..=max).contains(&lo) || !(-max..=max).contains(&hi) {
            crate::bail!("edge padding ({lo}, {hi}) of dimension {d} must be within ±{max}");
        }
        let n = i64::from(dims[d]);
        if n < 0 {
            crate::bail!("the operand has a negative dimension");
        }
        // Bounded: |n|, |int|, |lo|, |hi| <= 2^31, so no overflow in i64.
        let o = n + (n - 1).max(0) * int + lo + hi;
        if o > max {
            crate::bail!("output dimension {d} would be {o}, more than {max}");
        }
        out.push(o.max(0) as usize);
    }
    // TFLite's quirk: one empty (or negative) dimension empties every dimension.
    if out.contains(&0) {
        out.iter_mut().for_each(|o| *o = 0);
    }
    Ok(PadPlan {
        in_shape: dims.iter().map(|&d| d as usize).collect(),
        out_shape: out,
        low: low[..rank].to_vec(),
        step: interior[..rank].iter().map(|&i| i + 1).collect(),
    })
}

/// DILATE's plan: interior padding `f - 1` for factor `f`, no edge padding.
pub fn dilate_plan(dims: &[i32], factors: &[i64]) -> Result<PadPlan> {
    if dims.is_empty() || dims.len() > MAX_RANK {
        crate::bail!("the input has rank {}; 1 to {MAX_RANK} is supported", dims.len());
    }
    if factors.len() != dims.len() {
        crate::bail!("{} dilation factors for an input of rank {}", factors.len(), dims.len());
    }
    let mut out = Vec::with_capacity(dims.len());
    for (d, (&n, &f)) in dims.iter().zip(factors).enumerate() {
        if f < 1 {
            crate::bail!("dilation factor {f} of dimension {d} must be at least 1");
        }
        if n == 0 && f != 1 {
            crate::bail!("dimension {d} is empty and cannot be dilated by {f}");
        }
        let o = (i64::from(n) - 1) * f + 1;
        if n < 0 || o > i64::from(i32::MAX) {
            crate::bail!("dimension {d} of size {n} dilated by {f} does not fit");
        }
        out.push(o.max(0) as usize);
    }
    Ok(PadPlan {
        in_shape: dims.iter().map(|&d| d as usize).collect(),
        out_shape: out,
        low: vec![0; dims.len()],
        step: factors.to_vec(),
    })
}

/// Writes `input` into `out` as `plan` places it, `value` everywhere else.
pub fn pad<T: Copy>(input: &[T], plan: &PadPlan, value: T, out: &mut [T]) -> Result<()> {
    let n_in: usize = plan.in_shape.iter().product();
    let n_out: usize = plan.out_shape.iter().product();
    if input.len() != n_in || out.len() != n_out {
        crate::bail!("buffers hold {} and {} elements, the shapes need {n_in} and {n_out}", input.len(), out.len());
    }
    out.fill(value);
    if n_in == 0 || n_out == 0 {
        return Ok(());
    }
    let rank = plan.in_shape.len();
    let mut out_strides = vec![1usize; rank];
    for d in (0..rank - 1).rev() {
        out_strides[d] = out_strides[d + 1] * plan.out_shape[d + 1];
    }
    let mut idx = vec![0usize; rank];
    for &x in input {
        let mut at = 0usize;
        let mut inside = true;
        for d in 0..rank {
            // |low| <= 2^31, idx < 2^31, step <= 2^31: fits in i64.
            let p = plan.low[d] + idx[d] as i64 * plan.step[d];
            if p < 0 || p >= plan.out_shape[d] as i64 {
                inside = false;
                break;
            }
            at += p as usize * out_strides[d];
        }
        if inside {
            out[at] = x;
        }
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < plan.in_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(())
}

/// Runs `plan` on the node's input 0 with the first element of input `value_at` as the
/// padding value.
fn run(ctx: &OpCtx<'_>, op: &'static str, plan: &PadPlan, value_at: usize) -> Result<()> {
    let input = ctx.input(0).map_err(in_op(op))?;
    let value = ctx.input(value_at).map_err(in_op(op))?;
    let mut out = ctx.output(0).map_err(in_op(op))?;
    with_elem_type!(input.dtype, op, T => {
        let v = super::first_value::<T>(&value)?;
        pad::<T>(input.data::<T>()?, plan, v, out.data_mut::<T>()?)
    })
    .map_err(|e: Error| op_error(op, e.message))
}

/// Checks the operand, padding value and output types agree and the padding value has
/// an element.
fn check_types(ctx: &OpCtx<'_>, op: &str, value_at: usize) -> Result<()> {
    let input = ctx.input(0).map_err(|e| op_error(op, e.message))?;
    let value = ctx.input(value_at).map_err(|e| op_error(op, e.message))?;
    let out = ctx.output(0).map_err(|e| op_error(op, e.message))?;
    if value.dtype != input.dtype || out.dtype != input.dtype {
        return Err(op_error(
            op,
            format!(
                "the operand ({}), padding value ({}) and output ({}) types must agree",
                input.dtype.name(),
                value.dtype.name(),
                out.dtype.name()
            ),
        ));
    }
    if input.dtype.element_size().is_none() || input.dtype == TfLiteType::kTfLiteString {
        return Err(op_error(op, format!("type {} is not supported", input.dtype.name())));
    }
    if value.num_elements() == 0 {
        return Err(op_error(op, "the padding value tensor is empty"));
    }
    Ok(())
}

/// STABLEHLO_PAD; its State is the plan.
struct StablehloPad;

impl BuiltinKernel for StablehloPad {
    const NAME: &'static str = PAD;
    type Params = TfLiteStablehloPadParams;
    type State = PadPlan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteStablehloPadParams) -> Result<PadPlan> {
        check_arity(ctx, PAD, 2, 2, 1)?;
        check_types(ctx, PAD, 1)?;
        let input = ctx.input(0).map_err(in_op(PAD))?;
        let plan = pad_plan(input.shape, &p.edge_padding_low, &p.edge_padding_high, &p.interior_padding)
            .map_err(|e| op_error(PAD, e.message))?;
        element_count(&plan.out_dims()).map_err(|e| op_error(PAD, e.message))?;
        ctx.resize_output(0, &plan.out_dims()).map_err(in_op(PAD))?;
        Ok(plan)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteStablehloPadParams, plan: &mut PadPlan) -> Result<()> {
        run(ctx, PAD, plan, 1)
    }
}

/// DILATE; its State is the plan when the factors are constant.
struct Dilate;

fn dilate_factors(ctx: &OpCtx<'_>) -> Result<Vec<i64>> {
    let f = ctx.input(1).map_err(in_op(DILATE))?;
    if f.dtype != TfLiteType::kTfLiteInt32 || f.shape.len() != 1 {
        return Err(op_error(DILATE, "the dilations must be a 1-D int32 tensor"));
    }
    Ok(super::values_of::<i32>(&f).map_err(in_op(DILATE))?.into_iter().map(i64::from).collect())
}

impl BuiltinKernel for Dilate {
    const NAME: &'static str = DILATE;
    type Params = ();
    type State = Option<PadPlan>;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Option<PadPlan>> {
        check_arity(ctx, DILATE, 3, 3, 1)?;
        check_types(ctx, DILATE, 2)?;
        let input = ctx.input(0).map_err(in_op(DILATE))?;
        if input.shape.is_empty() {
            return Err(op_error(DILATE, "the input must have rank 1 or more"));
        }
        if !ctx.input(1).map_err(in_op(DILATE))?.is_constant() {
            ctx.set_output_dynamic(0).map_err(in_op(DILATE))?;
            return Ok(None);
        }
        let plan = dilate_plan(input.shape, &dilate_factors(ctx)?).map_err(|e| op_error(DILATE, e.message))?;
        element_count(&plan.out_dims()).map_err(|e| op_error(DILATE, e.message))?;
        ctx.resize_output(0, &plan.out_dims()).map_err(in_op(DILATE))?;
        Ok(Some(plan))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut Option<PadPlan>) -> Result<()> {
        if let Some(plan) = plan {
            return run(ctx, DILATE, plan, 2);
        }
        let input = ctx.input(0).map_err(in_op(DILATE))?;
        let plan = dilate_plan(input.shape, &dilate_factors(ctx)?).map_err(|e| op_error(DILATE, e.message))?;
        element_count(&plan.out_dims()).map_err(|e| op_error(DILATE, e.message))?;
        ctx.resize_output(0, &plan.out_dims()).map_err(in_op(DILATE))?;
        run(ctx, DILATE, &plan, 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    fn padded(x: &[i32], dims: &[i32], low: &[i64], high: &[i64], interior: &[i64]) -> (Vec<usize>, Vec<i32>) {
        let plan = pad_plan(dims, low, high, interior).unwrap();
        let mut out = vec![0; plan.out_shape.iter().product()];
        pad(x, &plan, -1, &mut out).unwrap();
        (plan.out_shape, out)
    }

    #[test]
    fn edge_and_interior() {
        assert_eq!(padded(&[1, 2, 3], &[3], &[1], &[2], &[1]), (vec![8], vec![-1, 1, -1, 2, -1, 3, -1, -1]));
        let (s, o) = padded(&[1, 2, 3, 4], &[2, 2], &[0, 1], &[1, 0], &[0, 0]);
        assert_eq!(s, vec![3, 3]);
        assert_eq!(o, vec![-1, 1, 2, -1, 3, 4, -1, -1, -1]);
    }

    #[test]
    fn negative_padding_crops() {
        // 1 _ 2 _ 3 cropped by one low and two high: _ 2 _.
        assert_eq!(padded(&[1, 2, 3], &[3], &[-1], &[-1], &[1]), (vec![3], vec![-1, 2, -1]));
        assert_eq!(padded(&[1, 2, 3, 4], &[4], &[-2], &[0], &[0]), (vec![2], vec![3, 4]));
    }

    #[test]
    fn an_empty_dimension_empties_all() {
        let plan = pad_plan(&[2, 3], &[0, -3], &[0, 0], &[0, 0]).unwrap();
        assert_eq!(plan.out_shape, vec![0, 0]);
        let plan = pad_plan(&[0, 3], &[1, 0], &[1, 0], &[5, 0]).unwrap();
        assert_eq!(plan.out_shape, vec![2, 3]);
        let mut out = vec![0; 6];
        pad(&[] as &[i32], &plan, 7, &mut out).unwrap();
        assert_eq!(out, vec![7; 6]);
    }

    #[test]
    fn bad_options_are_errors() {
        assert!(pad_plan(&[2], &[0], &[0], &[-1]).is_err());
        assert!(pad_plan(&[2], &[i64::MIN], &[0], &[0]).is_err());
        assert!(pad_plan(&[i32::MAX], &[0], &[1], &[0]).is_err());
        assert!(pad_plan(&[2, 2], &[0], &[0], &[0]).is_err());
        assert!(pad_plan(&[], &[], &[], &[]).is_err());
        assert!(dilate_plan(&[3], &[0]).is_err());
        assert!(dilate_plan(&[3, 2], &[2]).is_err());
        assert!(dilate_plan(&[0], &[2]).is_err());
        assert!(dilate_plan(&[1 << 20], &[1 << 12]).is_err());
    }

    #[test]
    fn dilates() {
        let plan = dilate_plan(&[2, 3], &[2, 3]).unwrap();
        assert_eq!(plan.out_shape, vec![3, 7]);
        let mut out = vec![0; 21];
        pad(&[1, 2, 3, 4, 5, 6], &plan, 0, &mut out).unwrap();
        assert_eq!(out, vec![1, 0, 0, 2, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 5, 0, 0, 6]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt16, &[2], &[5i16, 6], None, false);
        let f = g.tensor(kTfLiteInt32, &[1], &[3i32], None, false);
        let v = g.tensor(kTfLiteInt16, &[], &[9i16], None, false);
        let o = g.output(kTfLiteInt16, None);
        assert_eq!(g.run::<()>(&dilate_registration(), &[x, f, v], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i16>(o), vec![5, 9, 9, 6]);
        let mut p = TfLiteStablehloPadParams::default();
        p.edge_padding_low[0] = 1;
        let o2 = g.output(kTfLiteInt16, None);
        assert_eq!(g.run(&pad_registration(), &[x, v], &[o2], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i16>(o2), vec![9, 5, 6]);
        let wrong = g.tensor(kTfLiteInt32, &[], &[9i32], None, false);
        let o3 = g.output(kTfLiteInt16, None);
        assert_eq!(g.run(&pad_registration(), &[x, wrong], &[o3], Some(p)), TfLiteStatus::kTfLiteError);
    }
}
