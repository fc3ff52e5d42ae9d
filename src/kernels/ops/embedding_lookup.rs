//! EMBEDDING_LOOKUP (TFLite `kernels/embedding_lookup.cc`).
//!
//! Inputs: `lookup` (int32, rank 1) and `value` (rank >= 2); the output is
//! `[len(lookup)] + value.shape[1:]`, row `i` being row `lookup[i]` of `value` (an index
//! outside the rows is an error). float32, and uint8/int8 into the same type, copy rows;
//! uint8/int8 into float32 dequantizes ("hybrid"): values are read as int8 (TFLite reads
//! uint8 tables through an int8 pointer too) times the table scale, or the row's scale
//! with per-row quantization (`quantized_dimension` 0, one scale per row, zero point 0).
//! TFLite's int4 tables are not supported.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, int_values, op_error};

const OP: &str = "EMBEDDING_LOOKUP";

/// The EMBEDDING_LOOKUP registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<EmbeddingLookup>(TfLiteBuiltinOperator::kTfLiteBuiltinEmbeddingLookup)
}

/// Copies rows `lookup[i]` of `value` (rows of `row` elements) into `out`.
pub fn lookup_rows<T: Copy>(lookup: &[i64], value: &[T], row: usize, out: &mut [T]) -> Result<()> {
    let rows = value.len().checked_div(row).unwrap_or(0);
    if out.len() != lookup.len() * row {
        crate::bail!("output holds {} elements, expected {}", out.len(), lookup.len() * row);
    }
    if row == 0 {
        return Ok(());
    }
    for (i, &idx) in lookup.iter().enumerate() {
        if idx < 0 || idx as usize >= rows {
            crate::bail!("index {idx} is out of bounds [0, {})", rows);
        }
        let src = idx as usize * row;
        out[i * row..(i + 1) * row].copy_from_slice(&value[src..src + row]);
    }
    Ok(())
}

/// The hybrid lookup: `out = (int8) value * scale` per row, `scales` holding one scale per
/// row of the table (or one for all).
pub fn lookup_dequantize(lookup: &[i64], value: &[i8], row: usize, scales: &[f32], out: &mut [f32]) -> Result<()> {
    let rows = value.len().checked_div(row).unwrap_or(0);
    if out.len() != lookup.len() * row {
        crate::bail!("output holds {} elements, expected {}", out.len(), lookup.len() * row);
    }
    if scales.len() != 1 && scales.len() != rows {
        crate::bail!("{} scales for {rows} rows", scales.len());
    }
    for (i, &idx) in lookup.iter().enumerate() {
        if idx < 0 || idx as usize >= rows {
            crate::bail!("index {idx} is out of bounds [0, {})", rows);
        }
        let s = f64::from(if scales.len() == 1 { scales[0] } else { scales[idx as usize] });
        let src = &value[idx as usize * row..(idx as usize + 1) * row];
        for (o, &v) in out[i * row..(i + 1) * row].iter_mut().zip(src) {
            *o = (f64::from(v) * s) as f32;
        }
    }
    Ok(())
}

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>, Vec<i32>)> {
    check_arity(ctx, OP, 2, 2, 1)?;
    let lookup = ctx.input(0).map_err(in_op(OP))?;
    let value = ctx.input(1).map_err(in_op(OP))?;
    let out = ctx.output(0).map_err(in_op(OP))?;
    if lookup.shape.len() != 1 || lookup.dtype != TfLiteType::kTfLiteInt32 {
        return Err(op_error(OP, "lookup must be a 1-D int32 tensor"));
    }
    if value.shape.len() < 2 || value.shape.iter().any(|&d| d < 0) {
        return Err(op_error(OP, format!("value must have rank 2 or more, has shape {:?}", value.shape)));
    }
    use TfLiteType::*;
    match (value.dtype, out.dtype) {
        (kTfLiteFloat32, kTfLiteFloat32) | (kTfLiteUInt8, kTfLiteUInt8) | (kTfLiteInt8, kTfLiteInt8) => {}
        (kTfLiteUInt8 | kTfLiteInt8, kTfLiteFloat32) => {
            if let Some((scales, zps, qdim)) = value.affine_quant() {
                if zps.first().is_some_and(|&z| z != 0) {
                    return Err(op_error(OP, "hybrid lookups need a zero point of 0"));
                }
                if scales.len() > 1 || zps.len() > 1 {
                    let rows = value.shape[0] as usize;
                    if qdim != 0 || scales.len() != rows || zps.len() != rows {
                        return Err(op_error(
                            OP,
                            format!("per-row quantization needs {rows} scales along dimension 0"),
                        ));
                    }
                }
            }
        }
        (v, o) => {
            return Err(op_error(
                OP,
                format!("value type {} with output type {} is not supported", v.name(), o.name()),
            ));
        }
    }
    let mut shape = value.shape.to_vec();
    shape[0] = lookup.shape[0];
    Ok((lookup, value, shape))
}

/// EMBEDDING_LOOKUP; its State holds the row length and, for hybrid lookups, the row
/// scales and (for a constant table) the table read as int8.
struct EmbeddingLookup;

/// What Prepare derives for an EMBEDDING_LOOKUP node.
struct LookupPlan {
    /// Elements per row of the table.
    row: usize,
    /// `Some` for the dequantizing lookups.
    hybrid: Option<Hybrid>,
}

/// The dequantizing lookup's constants.
struct Hybrid {
    /// One scale per row, or one for the whole table.
    scales: Vec<f32>,
    /// The table's values as int8 when the table is constant.
    table: Option<Vec<i8>>,
}

/// The table's values read as int8 (uint8 tables too, as TFLite reads them).
fn int8_table(value: &TensorView<'_>) -> Result<Vec<i8>> {
    let raw: Vec<i8> = value.raw()?.iter().map(|&b| b as i8).collect();
    let n = value.num_elements();
    if raw.len() < n {
        return Err(op_error(OP, "value holds too few bytes"));
    }
    Ok(raw[..n].to_vec())
}

impl BuiltinKernel for EmbeddingLookup {
    const NAME: &'static str = OP;
    type Params = ();
    type State = LookupPlan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<LookupPlan> {
        let (_, value, shape) = operands(ctx)?;
        ctx.resize_output(0, &shape).map_err(in_op(OP))?;
        let row: usize = value.shape[1..].iter().map(|&d| d as usize).product();
        let out = ctx.output(0).map_err(in_op(OP))?;
        use TfLiteType::*;
        let hybrid = match (value.dtype, out.dtype) {
            (kTfLiteUInt8 | kTfLiteInt8, kTfLiteFloat32) => {
                let scales: Vec<f32> = match value.affine_quant() {
                    Some((s, _, _)) if s.len() > 1 => s.to_vec(),
                    _ => vec![value.quant().scale],
                };
                let table = if value.is_constant() { Some(int8_table(&value)?) } else { None };
                Some(Hybrid { scales, table })
            }
            _ => None,
        };
        Ok(LookupPlan { row, hybrid })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut LookupPlan) -> Result<()> {
        let lookup = ctx.input(0).map_err(in_op(OP))?;
        let value = ctx.input(1).map_err(in_op(OP))?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        let idx = int_values(&lookup, false).map_err(in_op(OP))?;
        let row = plan.row;
        use TfLiteType::*;
        let r = match (&plan.hybrid, value.dtype, out.dtype) {
            (Some(h), _, _) => {
                let read;
                let table = match &h.table {
                    Some(t) => t.as_slice(),
                    None => {
                        read = int8_table(&value)?;
                        read.as_slice()
                    }
                };
                lookup_dequantize(&idx, table, row, &h.scales, out.data_mut::<f32>()?)
            }
            (None, kTfLiteFloat32, _) => lookup_rows(&idx, value.data::<f32>()?, row, out.data_mut::<f32>()?),
            (None, kTfLiteUInt8, kTfLiteUInt8) => lookup_rows(&idx, value.data::<u8>()?, row, out.data_mut::<u8>()?),
            (None, kTfLiteInt8, kTfLiteInt8) => lookup_rows(&idx, value.data::<i8>()?, row, out.data_mut::<i8>()?),
            (None, v, o) => {
                return Err(op_error(
                    OP,
                    format!("value type {} with output type {} is not supported", v.name(), o.name()),
                ));
            }
        };
        r.map_err(|e| op_error(OP, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn lookups() {
        let v: Vec<f32> = (0..6).map(|i| i as f32).collect();
        let mut o = [0f32; 4];
        lookup_rows(&[2, 0], &v, 2, &mut o).unwrap();
        assert_eq!(o, [4., 5., 0., 1.]);
        assert!(lookup_rows(&[3], &v, 2, &mut o[..2]).is_err());
        assert!(lookup_rows(&[-1], &v, 2, &mut o[..2]).is_err());
        let mut f = [0f32; 2];
        lookup_dequantize(&[1], &[1, 2, -3, 4], 2, &[0.5, 0.25], &mut f).unwrap();
        assert_eq!(f, [-0.75, 1.0]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let l = g.tensor(kTfLiteInt32, &[3], &[1i32, 0, 1], None, false);
        let v = g.tensor(kTfLiteInt8, &[2, 2], &[1i8, 2, 3, 4], Some(qp(0.5, 0)), true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[l, v], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![3, 2]);
        assert_eq!(g.data::<f32>(o), vec![1.5, 2.0, 0.5, 1.0, 1.5, 2.0]);
        let bad = g.tensor(kTfLiteInt32, &[1], &[2i32], None, false);
        let o2 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&registration(), &[bad, v], &[o2], None), TfLiteStatus::kTfLiteError);
    }
}
