//! CONCATENATION (TFLite `kernels/concatenation.cc`, `reference/concatenation.h`).
//!
//! float32, int32, uint32, int64, int16 (zero points 0), bool and int8 (every input with
//! the output's scale and zero point) are copied; uint8 inputs whose scale or zero point
//! differ from the output's are requantized as the reference `ConcatenationWithScaling`
//! does (in `f32`: `round(q * (s_in / s_out) - zp_in * (s_in / s_out)) + zp_out`).
//! Rank-0 inputs concatenate along axis 0 into a vector. The fused activation must be
//! NONE (TFLite rejects others).

use crate::abi::builtin_op_data::{TfLiteConcatenationParams, TfLiteFusedActivation};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, QuantParams, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_type, in_op, op_error, with_elem_type};

const OP: &str = "CONCATENATION";

/// The CONCATENATION registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Concatenation>(TfLiteBuiltinOperator::kTfLiteBuiltinConcatenation)
}

/// Output shape of concatenating `shapes` along `axis` (already normalised). Rank-0
/// inputs give a vector of their count.
pub fn concat_shape(shapes: &[&[i32]], axis: usize) -> Result<Vec<i32>> {
    let Some(first) = shapes.first() else { crate::bail!("no inputs") };
    if first.is_empty() {
        if shapes.iter().any(|s| !s.is_empty()) {
            crate::bail!("inputs mix scalars and tensors");
        }
        return Ok(vec![i32::try_from(shapes.len()).unwrap_or(i32::MAX)]);
    }
    if axis >= first.len() {
        crate::bail!("axis {axis} is out of range for rank {}", first.len());
    }
    let mut out = first.to_vec();
    let mut sum: i64 = 0;
    for s in shapes {
        if s.len() != first.len() {
            crate::bail!("inputs have different ranks ({:?} and {:?})", first, s);
        }
        for d in 0..s.len() {
            if s[d] < 0 {
                crate::bail!("input shape {s:?} has a negative dimension");
            }
            if d != axis && s[d] != first[d] {
                crate::bail!("input shapes {first:?} and {s:?} differ outside axis {axis}");
            }
        }
        sum += i64::from(s[axis]);
    }
    out[axis] = i32::try_from(sum).map_err(|_| crate::error::Error::new("concatenated dimension too large"))?;
    Ok(out)
}

/// How the inputs' slabs interleave in the output, from the shapes alone.
#[derive(Debug)]
struct Layout {
    /// Product of the dimensions before the axis.
    outer: usize,
    /// Elements each input contributes per outer index.
    chunks: Vec<usize>,
    /// Output elements.
    total: usize,
}

fn layout(shapes: &[&[i32]], axis: usize) -> Result<Layout> {
    let out_shape = concat_shape(shapes, axis)?;
    let (outer, inner) = outer_inner(&out_shape, axis);
    let total: usize = out_shape.iter().map(|&d| d as usize).product();
    Ok(Layout { outer, chunks: shapes.iter().map(|s| slab(s, axis) * inner).collect(), total })
}

/// Checks the buffers against the layout.
fn check_sizes(l: &Layout, lens: impl Iterator<Item = usize>, out_len: usize) -> Result<()> {
    if out_len != l.total {
        crate::bail!("output holds {} elements, needs {}", out_len, l.total);
    }
    for (len, &n) in lens.zip(&l.chunks) {
        if len != l.outer * n {
            crate::bail!("input holds {len} elements, its shape needs {}", l.outer * n);
        }
    }
    Ok(())
}

/// Concatenation of plain elements: for each outer index, each input's slab in turn.
pub fn concat<T: Copy>(inputs: &[(&[T], &[i32])], axis: usize, out: &mut [T]) -> Result<()> {
    let shapes: Vec<&[i32]> = inputs.iter().map(|(_, s)| *s).collect();
    let data: Vec<&[T]> = inputs.iter().map(|(d, _)| *d).collect();
    concat_laid_out(&layout(&shapes, axis)?, &data, out)
}

fn concat_laid_out<T: Copy>(l: &Layout, inputs: &[&[T]], out: &mut [T]) -> Result<()> {
    check_sizes(l, inputs.iter().map(|d| d.len()), out.len())?;
    let mut pos = 0;
    for k in 0..l.outer {
        for (data, &n) in inputs.iter().zip(&l.chunks) {
            out[pos..pos + n].copy_from_slice(&data[k * n..(k + 1) * n]);
            pos += n;
        }
    }
    Ok(())
}

/// An input's requantization to the output's parameters: `None` copies, `Some((scale,
/// bias))` maps `q` to `round(q * scale + bias) + zp_out`.
type Rescale = Option<(f32, f32)>;

fn rescales(qs: impl Iterator<Item = QuantParams>, out_q: QuantParams) -> Vec<Rescale> {
    let inverse_output_scale = 1.0f32 / out_q.scale;
    qs.map(|q| {
        if q.zero_point == out_q.zero_point && q.scale == out_q.scale {
            None
        } else {
            let scale = q.scale * inverse_output_scale;
            Some((scale, -(q.zero_point as f32) * scale))
        }
    })
    .collect()
}

/// uint8 concatenation with per-input requantization to the output's parameters.
pub fn concat_u8_rescaled(
    inputs: &[(&[u8], &[i32], QuantParams)],
    axis: usize,
    out_q: QuantParams,
    out: &mut [u8],
) -> Result<()> {
    let shapes: Vec<&[i32]> = inputs.iter().map(|(_, s, _)| *s).collect();
    let data: Vec<&[u8]> = inputs.iter().map(|(d, _, _)| *d).collect();
    let r = rescales(inputs.iter().map(|(_, _, q)| *q), out_q);
    concat_u8_laid_out(&layout(&shapes, axis)?, &data, &r, out_q.zero_point, out)
}

fn concat_u8_laid_out(l: &Layout, inputs: &[&[u8]], r: &[Rescale], out_zp: i32, out: &mut [u8]) -> Result<()> {
    check_sizes(l, inputs.iter().map(|d| d.len()), out.len())?;
    let mut pos = 0;
    for k in 0..l.outer {
        for ((data, &n), rescale) in inputs.iter().zip(&l.chunks).zip(r) {
            let src = &data[k * n..(k + 1) * n];
            let dst = &mut out[pos..pos + n];
            match *rescale {
                None => dst.copy_from_slice(src),
                Some((scale, bias)) => {
                    for (o, &x) in dst.iter_mut().zip(src) {
                        let v = ((x as f32) * scale + bias).round() as i32 + out_zp;
                        *o = v.clamp(0, 255) as u8;
                    }
                }
            }
            pos += n;
        }
    }
    Ok(())
}

fn outer_inner(shape: &[i32], axis: usize) -> (usize, usize) {
    if shape.len() <= 1 && axis == 0 {
        return (1, 1);
    }
    let outer = shape[..axis].iter().map(|&d| d as usize).product();
    let inner = shape[axis + 1..].iter().map(|&d| d as usize).product();
    (outer, inner)
}

fn slab(shape: &[i32], axis: usize) -> usize {
    if shape.is_empty() { 1 } else { shape[axis] as usize }
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

struct Operands<'a> {
    inputs: Vec<TensorView<'a>>,
    axis: usize,
    out_shape: Vec<i32>,
}

fn operands<'a>(ctx: &OpCtx<'a>, p: &TfLiteConcatenationParams) -> Result<Operands<'a>> {
    if ctx.num_inputs() == 0 || ctx.num_outputs() != 1 {
        return Err(op_error(
            OP,
            format!("expected at least 1 input and 1 output, got {} and {}", ctx.num_inputs(), ctx.num_outputs()),
        ));
    }
    if p.activation != TfLiteFusedActivation::kTfLiteActNone {
        return Err(op_error(OP, "fused activations are not supported"));
    }
    let inputs = (0..ctx.num_inputs()).map(|i| ctx.input(i)).collect::<Result<Vec<_>>>().map_err(in_op(OP))?;
    let t0 = &inputs[0];
    let rank = t0.shape.len() as i64;
    let axis = if p.axis < 0 { i64::from(p.axis) + rank } else { i64::from(p.axis) };
    if axis < 0 || !(axis < rank || (rank == 0 && axis == 0)) {
        return Err(op_error(OP, format!("axis {} is out of range for rank {rank}", p.axis)));
    }
    use TfLiteType::*;
    check_type(
        OP,
        "input",
        t0.dtype,
        &[
            kTfLiteFloat32,
            kTfLiteUInt8,
            kTfLiteInt8,
            kTfLiteInt16,
            kTfLiteInt32,
            kTfLiteInt64,
            kTfLiteBool,
            kTfLiteUInt32,
        ],
    )?;
    for t in &inputs {
        if t.dtype != t0.dtype {
            return Err(op_error(OP, format!("input types differ ({} and {})", t0.dtype.name(), t.dtype.name())));
        }
    }
    let shapes: Vec<&[i32]> = inputs.iter().map(|t| t.shape).collect();
    let out_shape = concat_shape(&shapes, axis as usize).map_err(in_op(OP))?;
    Ok(Operands { inputs, axis: axis as usize, out_shape })
}

fn prepare(ctx: &OpCtx<'_>, p: &TfLiteConcatenationParams) -> Result<ConcatPlan> {
    let ops = operands(ctx, p)?;
    let out = ctx.output(0).map_err(in_op(OP))?;
    let dtype = ops.inputs[0].dtype;
    if out.dtype != dtype {
        return Err(op_error(
            OP,
            format!("output type {} differs from the input type {}", out.dtype.name(), dtype.name()),
        ));
    }
    let oq = out.quant();
    match dtype {
        TfLiteType::kTfLiteInt8 => {
            for t in &ops.inputs {
                let q = t.quant();
                if q.scale != oq.scale || q.zero_point != oq.zero_point {
                    return Err(op_error(OP, "int8 inputs must have the output's scale and zero point"));
                }
            }
        }
        TfLiteType::kTfLiteInt16 if ops.inputs.iter().any(|t| t.quant().zero_point != 0) || oq.zero_point != 0 => {
            return Err(op_error(OP, "int16 zero points must be 0"));
        }
        TfLiteType::kTfLiteUInt8 => {
            let needs_rescale = ops.inputs.iter().any(|t| t.quant() != oq);
            if needs_rescale && !(oq.scale.is_finite() && oq.scale > 0.0) {
                return Err(op_error(OP, format!("output scale {} cannot requantize", oq.scale)));
            }
        }
        _ => {}
    }
    ctx.resize_output(0, &ops.out_shape).map_err(in_op(OP))?;
    let shapes: Vec<&[i32]> = ops.inputs.iter().map(|t| t.shape).collect();
    let layout = layout(&shapes, ops.axis).map_err(in_op(OP))?;
    let rescale = if dtype == TfLiteType::kTfLiteUInt8 {
        Some((rescales(ops.inputs.iter().map(|t| t.quant()), oq), oq.zero_point))
    } else {
        None
    };
    Ok(ConcatPlan { layout, rescale })
}

/// CONCATENATION; its State holds the slab layout and, for uint8, each input's
/// requantization to the output's parameters.
struct Concatenation;

/// What Prepare derives for a CONCATENATION node.
struct ConcatPlan {
    layout: Layout,
    /// uint8 only: per-input rescaling and the output zero point.
    rescale: Option<(Vec<Rescale>, i32)>,
}

impl BuiltinKernel for Concatenation {
    const NAME: &'static str = OP;
    type Params = TfLiteConcatenationParams;
    type State = ConcatPlan;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteConcatenationParams) -> Result<ConcatPlan> {
        prepare(ctx, p)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteConcatenationParams, plan: &mut ConcatPlan) -> Result<()> {
        let inputs = (0..ctx.num_inputs()).map(|i| ctx.input(i)).collect::<Result<Vec<_>>>().map_err(in_op(OP))?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        if let Some((r, zp)) = &plan.rescale {
            let ins = inputs.iter().map(|t| t.data::<u8>()).collect::<Result<Vec<_>>>().map_err(in_op(OP))?;
            return concat_u8_laid_out(&plan.layout, &ins, r, *zp, out.data_mut()?).map_err(in_op(OP));
        }
        with_elem_type!(inputs[0].dtype, OP, T => {
            let ins = inputs.iter().map(|t| t.data::<T>()).collect::<Result<Vec<_>>>()?;
            concat_laid_out::<T>(&plan.layout, &ins, out.data_mut::<T>()?)
        })
        .map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn float_axis1() {
        let a = [1.0f32, 2.0, 3.0, 4.0]; // [2,2]
        let b = [5.0f32, 6.0]; // [2,1]
        let mut out = [0.0f32; 6];
        concat(&[(&a[..], &[2, 2][..]), (&b[..], &[2, 1][..])], 1, &mut out).unwrap();
        assert_eq!(out, [1.0, 2.0, 5.0, 3.0, 4.0, 6.0]);
        concat(&[(&a[..], &[2, 2][..]), (&b[..], &[1, 2][..])], 0, &mut out).unwrap();
        assert_eq!(out, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert!(concat(&[(&a[..], &[2, 2][..]), (&b[..], &[1, 2][..])], 1, &mut out).is_err());
        let mut o2 = [0i32; 2];
        concat(&[(&[7][..], &[][..]), (&[8][..], &[][..])], 0, &mut o2).unwrap();
        assert_eq!(o2, [7, 8]);
    }

    #[test]
    fn uint8_rescale() {
        // Input 1: scale 0.5 zp 10 (values 10, 12 -> 0, 1.0); output scale 0.25 zp 0 -> 0, 4.
        let mut out = [0u8; 4];
        concat_u8_rescaled(
            &[(&[10u8, 12][..], &[2][..], qp(0.5, 10)), (&[3u8, 4][..], &[2][..], qp(0.25, 0))],
            0,
            qp(0.25, 0),
            &mut out,
        )
        .unwrap();
        assert_eq!(out, [0, 4, 3, 4]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteFloat32, &[1, 2], &[1.0f32, 2.0], None, false);
        let b = g.tensor(kTfLiteFloat32, &[1, 3], &[3.0f32, 4.0, 5.0], None, true);
        let o = g.output(kTfLiteFloat32, None);
        let p = TfLiteConcatenationParams { axis: -1, activation: TfLiteFusedActivation::kTfLiteActNone };
        assert_eq!(g.run(&registration(), &[a, b], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![1, 5]);
        assert_eq!(g.data::<f32>(o), vec![1.0, 2.0, 3.0, 4.0, 5.0]);
        let o2 = g.output(kTfLiteFloat32, None);
        let bad = TfLiteConcatenationParams { axis: 2, activation: TfLiteFusedActivation::kTfLiteActNone };
        assert_eq!(g.run(&registration(), &[a, b], &[o2], Some(bad)), TfLiteStatus::kTfLiteError);
        let o3 = g.output(kTfLiteFloat32, None);
        let relu = TfLiteConcatenationParams { axis: 1, activation: TfLiteFusedActivation::kTfLiteActRelu };
        assert_eq!(g.run(&registration(), &[a, b], &[o3], Some(relu)), TfLiteStatus::kTfLiteError);
        // int8 with mismatched scales is refused.
        let x = g.tensor(kTfLiteInt8, &[2], &[1i8, 2], Some(qp(0.5, 0)), false);
        let y = g.tensor(kTfLiteInt8, &[2], &[1i8, 2], Some(qp(0.25, 0)), false);
        let o4 = g.output(kTfLiteInt8, Some(qp(0.5, 0)));
        let p0 = TfLiteConcatenationParams { axis: 0, activation: TfLiteFusedActivation::kTfLiteActNone };
        assert_eq!(g.run(&registration(), &[x, y], &[o4], Some(p0)), TfLiteStatus::kTfLiteError);
    }
}
