//! BATCH_MATMUL (TFLite `kernels/batch_matmul.cc`, `reference/batch_matmul.h`).
//!
//! `out[..., m, n] = sum_k lhs[..., m, k] * rhs[..., k, n]`, with `adj_x` / `adj_y`
//! transposing the last two dimensions of an operand, operand ranks 2 to 5 and numpy
//! broadcasting of the batch dimensions. Types: float32; int8 x int8 to int8
//! (`MultiplyByQuantizedMultiplier` of the int32 sum of zero-point-corrected products) or
//! to int32 (raw sums, as TFLite's reference); int16 x int16 to int16 (int64 sums, zero
//! points 0); hybrid float32 x int8 (each row of the left operand quantized on the fly,
//! symmetrically or, with `asymmetric_quantize_inputs`, asymmetrically; per-tensor or
//! per-column scales of the right operand).
//!
//! Each output element sums `k` in ascending order from 0, as TFLite's reference loop, so
//! float results are bit-identical to it and integer results exact. The operands are
//! brought to a canonical layout once per call (`lhs` as `[m][k]` rows; `rhs` as `[k][n]`
//! for float, so a whole output row accumulates in vector lanes, and as `[n][k]` for the
//! integer dot products), and output rows are split over `num_threads`.
//!
//! TFLite 2.19 folds a size-1 right-hand batch dimension into the left operand's rows
//! before multiplying, which is wrong when `adj_x` is set (fixed in later LiteRT); this
//! kernel computes the mathematically defined result in every case.

use super::conv_common::{
    PackSlot, QuantMul, affine, asymmetric_quantize, legacy_quant_mul, parallel_rows, recommended_threads,
    symmetric_quantize, threads_for,
};
use crate::abi::builtin_op_data::TfLiteBatchMatMulParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::quant::{multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_i64};
use crate::kernels::shape_util::{check_arity, op_error};
use crate::microkernels::packed::Packed;

const OP: &str = "BATCH_MATMUL";
const MAX_RANK: usize = 5;

/// The BATCH_MATMUL registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<BatchMatMul>(TfLiteBuiltinOperator::kTfLiteBuiltinBatchMatmul)
}

// ---------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------

/// The shape plan of a batched matrix product.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatMulPlan {
    /// Output shape (broadcast batch dimensions, then `m`, `n`).
    pub out_shape: Vec<i32>,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// For each output batch (row-major over the broadcast batch dimensions), the batch
    /// index into the left and right operands.
    pub lhs_batch: Vec<usize>,
    pub rhs_batch: Vec<usize>,
}

/// Plans `lhs x rhs` with the adjoint flags; an error for ranks outside 2..=5, batch
/// dimensions that do not broadcast, or inner dimensions that differ.
pub fn plan_matmul(lhs: &[i32], rhs: &[i32], adj_x: bool, adj_y: bool) -> Result<MatMulPlan> {
    for (what, s) in [("lhs", lhs), ("rhs", rhs)] {
        if s.len() < 2 || s.len() > MAX_RANK {
            crate::bail!("{what} rank {} is not between 2 and {MAX_RANK}", s.len());
        }
        if s.iter().any(|&d| d < 0) {
            crate::bail!("{what} shape {s:?} has a negative dimension");
        }
    }
    let rank = lhs.len().max(rhs.len());
    let ext = |s: &[i32]| {
        let mut v = vec![1usize; rank - s.len()];
        v.extend(s.iter().map(|&d| d as usize));
        v
    };
    let (l, r) = (ext(lhs), ext(rhs));
    let nb = rank - 2;
    let mut out_batch = Vec::with_capacity(nb);
    for i in 0..nb {
        let (a, b) = (l[i], r[i]);
        let d = if a == b {
            a
        } else if a == 1 {
            b
        } else if b == 1 {
            a
        } else {
            crate::bail!("batch dimensions of {lhs:?} and {rhs:?} cannot be broadcast");
        };
        out_batch.push(d);
    }
    let (m, k_l) = if adj_x { (l[nb + 1], l[nb]) } else { (l[nb], l[nb + 1]) };
    let (k_r, n) = if adj_y { (r[nb + 1], r[nb]) } else { (r[nb], r[nb + 1]) };
    if k_l != k_r {
        crate::bail!("inner dimensions differ: {lhs:?} (adj_x {adj_x}) and {rhs:?} (adj_y {adj_y})");
    }
    let total =
        out_batch.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or_else(|| Error::new("too many batches"))?;
    total.checked_mul(m).and_then(|v| v.checked_mul(n)).ok_or_else(|| Error::new("output too large"))?;
    // Batch strides (in matrices) of each operand; 0 where broadcast.
    let stride = |s: &[usize]| {
        let mut st = vec![0usize; nb];
        let mut acc = 1usize;
        for i in (0..nb).rev() {
            st[i] = if s[i] == 1 { 0 } else { acc };
            acc *= s[i];
        }
        st
    };
    let (ls, rs) = (stride(&l), stride(&r));
    let mut lhs_batch = Vec::with_capacity(total);
    let mut rhs_batch = Vec::with_capacity(total);
    let mut idx = vec![0usize; nb];
    for _ in 0..total {
        lhs_batch.push(idx.iter().zip(&ls).map(|(i, s)| i * s).sum());
        rhs_batch.push(idx.iter().zip(&rs).map(|(i, s)| i * s).sum());
        for d in (0..nb).rev() {
            idx[d] += 1;
            if idx[d] < out_batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    let mut out_shape: Vec<i32> = out_batch.iter().map(|&d| d as i32).collect();
    out_shape.push(i32::try_from(m).map_err(|_| Error::new("output too large"))?);
    out_shape.push(i32::try_from(n).map_err(|_| Error::new("output too large"))?);
    Ok(MatMulPlan { out_shape, m, k: k_l, n, lhs_batch, rhs_batch })
}

/// Copies `count` matrices of `rows x cols` (row-major), transposed when `transpose`, so
/// that the result is `count` matrices of the other orientation; plain copy otherwise.
fn relayout<T: Copy>(data: &[T], count: usize, rows: usize, cols: usize, transpose: bool) -> Vec<T> {
    if !transpose {
        return data.to_vec();
    }
    let mut out = Vec::with_capacity(data.len());
    for b in 0..count {
        let m = &data[b * rows * cols..(b + 1) * rows * cols];
        for c in 0..cols {
            for r in 0..rows {
                out.push(m[r * cols + c]);
            }
        }
    }
    out
}

/// Number of matrices in an operand of `shape`.
fn matrices(shape: &[i32]) -> usize {
    shape[..shape.len() - 2].iter().map(|&d| d as usize).product()
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// Float product. `lhs` is `[batch][m][k]`, `rhs_kn` is `[batch][k][n]`.
pub fn matmul_f32(p: &MatMulPlan, lhs: &[f32], rhs_kn: &[f32], out: &mut [f32], threads: usize) -> Result<()> {
    check_sizes(p, lhs.len(), rhs_kn.len(), out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    let (m, k, n) = (p.m, p.k, p.n);
    let threads = threads_for(threads, out.len().saturating_mul(k), out.len() / n.max(1));
    parallel_rows(threads, out, n, &|first, chunk: &mut [f32]| {
        for (r, orow) in chunk.chunks_mut(n).enumerate() {
            let row = first + r;
            let (ob, i) = (row / m, row % m);
            let a = &lhs[(p.lhs_batch[ob] * m + i) * k..][..k];
            let bmat = &rhs_kn[p.rhs_batch[ob] * k * n..][..k * n];
            orow.iter_mut().for_each(|o| *o = 0.0);
            for (kk, &av) in a.iter().enumerate() {
                let brow = &bmat[kk * n..(kk + 1) * n];
                for (o, &bv) in orow.iter_mut().zip(brow) {
                    *o += av * bv;
                }
            }
        }
        Ok(())
    })
}

fn check_sizes(p: &MatMulPlan, lhs: usize, rhs: usize, out: usize) -> Result<()> {
    let nl = p.lhs_batch.iter().max().map_or(0, |&b| b + 1);
    let nr = p.rhs_batch.iter().max().map_or(0, |&b| b + 1);
    let out_want = p.lhs_batch.len() * p.m * p.n;
    if out != out_want || lhs < nl * p.m * p.k || rhs < nr * p.k * p.n {
        crate::bail!("buffers hold {lhs}, {rhs} and {out} values, too few for the plan");
    }
    Ok(())
}

/// Integer requantization of one output element.
#[derive(Clone, Copy, Debug)]
pub struct IntRequant {
    pub lhs_offset: i32,
    pub rhs_offset: i32,
    pub output_offset: i32,
    pub mult: QuantMul,
    pub act: (i32, i32),
}

/// int8 product: `lhs` `[batch][m][k]`, `rhs_nk` `[batch][n][k]`; with `q`, the sums of
/// `(l + lhs_offset) * (r + rhs_offset)` are requantized to int8; without, raw int32 sums
/// of `l * r` (TFLite's int8-to-int32 reference ignores zero points).
pub fn matmul_i8<O: Copy + Send>(
    p: &MatMulPlan,
    lhs: &[i8],
    rhs_nk: &[i8],
    q: Option<IntRequant>,
    out: &mut [O],
    threads: usize,
    finish: impl Fn(i32) -> O + Sync,
) -> Result<()> {
    check_sizes(p, lhs.len(), rhs_nk.len(), out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    let (m, k, n) = (p.m, p.k, p.n);
    let (lo, ro) = q.map_or((0, 0), |q| (q.lhs_offset, q.rhs_offset));
    let threads = threads_for(threads, out.len().saturating_mul(k), out.len() / n.max(1));
    parallel_rows(threads, out, n, &|first, chunk: &mut [O]| {
        for (r, orow) in chunk.chunks_mut(n).enumerate() {
            let row = first + r;
            let (ob, i) = (row / m, row % m);
            let a = &lhs[(p.lhs_batch[ob] * m + i) * k..][..k];
            let bmat = &rhs_nk[p.rhs_batch[ob] * k * n..][..k * n];
            for (j, o) in orow.iter_mut().enumerate() {
                let b = &bmat[j * k..(j + 1) * k];
                let mut total = 0i32;
                for (&x, &y) in a.iter().zip(b) {
                    total = total.wrapping_add((x as i32 + lo).wrapping_mul(y as i32 + ro));
                }
                *o = match q {
                    Some(q) => {
                        let v = multiply_by_quantized_multiplier(total, q.mult.multiplier, q.mult.shift)
                            .wrapping_add(q.output_offset);
                        finish(v.clamp(q.act.0, q.act.1))
                    }
                    None => finish(total),
                };
            }
        }
        Ok(())
    })
}

/// int16 product with int64 sums (zero points 0), requantized with the 64-bit
/// `MultiplyByQuantizedMultiplier`.
pub fn matmul_i16(
    p: &MatMulPlan,
    lhs: &[i16],
    rhs_nk: &[i16],
    q: IntRequant,
    out: &mut [i16],
    threads: usize,
) -> Result<()> {
    check_sizes(p, lhs.len(), rhs_nk.len(), out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    let (m, k, n) = (p.m, p.k, p.n);
    let threads = threads_for(threads, out.len().saturating_mul(k), out.len() / n.max(1));
    parallel_rows(threads, out, n, &|first, chunk: &mut [i16]| {
        for (r, orow) in chunk.chunks_mut(n).enumerate() {
            let row = first + r;
            let (ob, i) = (row / m, row % m);
            let a = &lhs[(p.lhs_batch[ob] * m + i) * k..][..k];
            let bmat = &rhs_nk[p.rhs_batch[ob] * k * n..][..k * n];
            for (j, o) in orow.iter_mut().enumerate() {
                let b = &bmat[j * k..(j + 1) * k];
                let mut total = 0i64;
                for (&x, &y) in a.iter().zip(b) {
                    total = total
                        .wrapping_add((x as i64 + q.lhs_offset as i64).wrapping_mul(y as i64 + q.rhs_offset as i64));
                }
                let v = multiply_by_quantized_multiplier_i64(total, q.mult.multiplier, q.mult.shift)
                    .wrapping_add(q.output_offset);
                *o = v.clamp(q.act.0, q.act.1) as i16;
            }
        }
        Ok(())
    })
}

/// The on-the-fly quantization of a hybrid product's left operand: one scale and offset
/// per row.
pub struct HybridLhs {
    pub data: Vec<i8>,
    pub scales: Vec<f32>,
    pub offsets: Vec<i32>,
}

/// Quantizes each `k`-long row of `lhs` (TFLite's `BatchQuantizeFloats`).
pub fn quantize_rows(lhs: &[f32], k: usize, asymmetric: bool) -> HybridLhs {
    let rows = lhs.len().checked_div(k).unwrap_or(0);
    let mut q = HybridLhs { data: vec![0i8; lhs.len()], scales: vec![1.0; rows], offsets: vec![0; rows] };
    if k == 0 {
        return q;
    }
    for (r, (x, d)) in lhs.chunks_exact(k).zip(q.data.chunks_exact_mut(k)).enumerate() {
        if asymmetric {
            let (s, z) = asymmetric_quantize(x, d);
            q.scales[r] = s;
            q.offsets[r] = z;
        } else {
            q.scales[r] = symmetric_quantize(x, d);
        }
    }
    q
}

/// Hybrid product (TFLite's hybrid `BatchMatMul`): `lhs` quantized per row, `rhs_nk`
/// `[batch][n][k]` int8; `column_scales` is one scale per output column, or a single
/// per-tensor scale folded into the row scales.
pub fn matmul_hybrid(
    p: &MatMulPlan,
    lhs: &HybridLhs,
    rhs_nk: &[i8],
    column_scales: &[f32],
    out: &mut [f32],
    threads: usize,
) -> Result<()> {
    check_sizes(p, lhs.data.len(), rhs_nk.len(), out.len())?;
    if column_scales.len() != 1 && column_scales.len() != p.n {
        crate::bail!("{} column scales for {} columns", column_scales.len(), p.n);
    }
    if out.is_empty() {
        return Ok(());
    }
    let (m, k, n) = (p.m, p.k, p.n);
    if k == 0 {
        // Empty sums: every output is 0 (TFLite: `0 + scale * 0`).
        out.fill(0.0);
        return Ok(());
    }
    let nr = p.rhs_batch.iter().max().map_or(0, |&b| b + 1);
    // Row sums of the right operand (TFLite's `ReductionSumVector`).
    let row_sums: Vec<i32> =
        (0..nr * n).map(|j| rhs_nk[j * k..(j + 1) * k].iter().fold(0i32, |s, &v| s.wrapping_add(v as i32))).collect();
    let threads = threads_for(threads, out.len().saturating_mul(k), out.len() / n.max(1));
    parallel_rows(threads, out, n, &|first, chunk: &mut [f32]| {
        for (r, orow) in chunk.chunks_mut(n).enumerate() {
            let row = first + r;
            let (ob, i) = (row / m, row % m);
            let lrow = p.lhs_batch[ob] * m + i;
            let a = &lhs.data[lrow * k..][..k];
            // Per-tensor: the row scale times the rhs scale (in float, as TFLite folds it).
            let row_scale =
                if column_scales.len() == 1 { lhs.scales[lrow] * column_scales[0] } else { lhs.scales[lrow] };
            let offset = lhs.offsets[lrow] as f32;
            for (j, o) in orow.iter_mut().enumerate() {
                let jj = p.rhs_batch[ob] * n + j;
                let b = &rhs_nk[jj * k..(jj + 1) * k];
                let mut total = 0i32;
                for (&x, &y) in a.iter().zip(b) {
                    total = total.wrapping_add(x as i32 * y as i32);
                }
                // `total -= row_sum * batch_offset` in float, converted back to int32.
                let total = (total as f32 - row_sums[jj] as f32 * offset) as i32;
                let mut scale = row_scale;
                if column_scales.len() != 1 {
                    scale *= column_scales[j];
                }
                *o = 0.0 + scale * total as f32;
            }
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

fn err(e: Error) -> Error {
    Error::with_status(e.status, format!("{OP}: {}", e.message))
}

/// BATCH_MATMUL. State: the shape plan (output shape, broadcast batches), the layouts the
/// operands are brought to, the type path with its requantization, and the right operand
/// in its canonical layout when it is a constant (or keeps its values across runs).
struct BatchMatMul;

/// What Prepare derives for a BATCH_MATMUL node.
struct State {
    plan: MatMulPlan,
    kind: Kind,
    adj_x: bool,
    adj_y: bool,
    /// Matrices in the left and right operands.
    counts: (usize, usize),
    /// Rows and columns of each stored left and right matrix.
    lhs_dims: (usize, usize),
    rhs_dims: (usize, usize),
    /// The right operand relaid out: `[k][n]` (float) or `[n][k]` (integer).
    rhs: PackSlot<Rhs>,
}

/// A right operand in its canonical layout.
enum Rhs {
    F32(Packed<f32>),
    I8(Packed<i8>),
    I16(Packed<i16>),
}

enum Kind {
    F32,
    Hybrid { column_scales: Vec<f32>, asymmetric: bool },
    I8 { q: IntRequant },
    I8ToI32,
    I16 { q: IntRequant },
}

/// Checks the node; its shape plan and type path.
fn plan_node(
    p: &TfLiteBatchMatMulParams,
    lhs: &TensorView<'_>,
    rhs: &TensorView<'_>,
    out: &TensorView<'_>,
) -> Result<(MatMulPlan, Kind)> {
    let plan = plan_matmul(lhs.shape, rhs.shape, p.adj_x, p.adj_y).map_err(err)?;
    use TfLiteType::*;
    let kind = match (lhs.dtype, rhs.dtype) {
        (kTfLiteFloat32, kTfLiteFloat32) => {
            expect_output(out.dtype, kTfLiteFloat32)?;
            Kind::F32
        }
        (kTfLiteFloat32, kTfLiteInt8) => {
            expect_output(out.dtype, kTfLiteFloat32)?;
            let (scales, _, _) = affine(OP, "rhs", rhs)?;
            let column_scales = if scales.len() > 1 {
                if scales.len() != plan.n {
                    return Err(op_error(OP, format!("{} rhs scales for {} output columns", scales.len(), plan.n)));
                }
                scales.to_vec()
            } else {
                vec![rhs.quant().scale]
            };
            Kind::Hybrid { column_scales, asymmetric: p.asymmetric_quantize_inputs }
        }
        (kTfLiteInt8, kTfLiteInt8) => match out.dtype {
            kTfLiteInt8 => Kind::I8 { q: requant(lhs, rhs, &out.quant(), (-128, 127))? },
            kTfLiteInt32 => Kind::I8ToI32,
            other => return Err(op_error(OP, format!("output type {} with int8 inputs", other.name()))),
        },
        (kTfLiteInt16, kTfLiteInt16) => {
            expect_output(out.dtype, kTfLiteInt16)?;
            let oq = out.quant();
            if lhs.quant().zero_point != 0 || rhs.quant().zero_point != 0 || oq.zero_point != 0 {
                return Err(op_error(OP, "int16 zero points must be 0"));
            }
            Kind::I16 { q: requant(lhs, rhs, &oq, (-32768, 32767))? }
        }
        (a, b) => return Err(op_error(OP, format!("input types {} and {} are not supported", a.name(), b.name()))),
    };
    Ok((plan, kind))
}

fn expect_output(got: TfLiteType, want: TfLiteType) -> Result<()> {
    if got != want {
        return Err(op_error(OP, format!("output type {} should be {}", got.name(), want.name())));
    }
    Ok(())
}

fn requant(
    lhs: &TensorView<'_>,
    rhs: &TensorView<'_>,
    out: &crate::kernels::api::QuantParams,
    act: (i32, i32),
) -> Result<IntRequant> {
    let (lq, rq) = (lhs.quant(), rhs.quant());
    if let Some((s, _, _)) = rhs.affine_quant()
        && s.len() > 1
    {
        return Err(op_error(OP, "per-channel quantization of the rhs needs a float lhs (hybrid)"));
    }
    let mult = legacy_quant_mul(OP, lq.scale, rq.scale, None, out.scale)?;
    let in_range = |z: i32| (-32768..=32767).contains(&z);
    if !in_range(lq.zero_point) || !in_range(rq.zero_point) {
        return Err(op_error(OP, "zero points out of range"));
    }
    Ok(IntRequant { lhs_offset: -lq.zero_point, rhs_offset: -rq.zero_point, output_offset: out.zero_point, mult, act })
}

/// Relays the right operand out to its canonical layout.
fn relayout_rhs(st: &State, rhs: &TensorView<'_>) -> Result<Rhs> {
    let (rc, (rr, rcols)) = (st.counts.1, st.rhs_dims);
    Ok(match st.kind {
        Kind::F32 => Rhs::F32(Packed::new(relayout(rhs.data::<f32>()?, rc, rr, rcols, st.adj_y))),
        Kind::Hybrid { .. } | Kind::I8 { .. } | Kind::I8ToI32 => {
            Rhs::I8(Packed::new(relayout(rhs.data::<i8>()?, rc, rr, rcols, !st.adj_y)))
        }
        Kind::I16 { .. } => Rhs::I16(Packed::new(relayout(rhs.data::<i16>()?, rc, rr, rcols, !st.adj_y))),
    })
}

impl BuiltinKernel for BatchMatMul {
    const NAME: &'static str = OP;
    /// Absent params mean no adjoints.
    type Params = Option<TfLiteBatchMatMulParams>;
    type State = State;

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteBatchMatMulParams>) -> Result<State> {
        check_arity(ctx, OP, 2, 2, 1)?;
        let p = p.unwrap_or_default();
        let lhs = ctx.input(0)?;
        let rhs = ctx.input(1)?;
        let out = ctx.output(0)?;
        let (plan, kind) = plan_node(&p, &lhs, &rhs, &out)?;
        let (m, k, n) = (plan.m, plan.k, plan.n);
        // Canonical layouts: lhs [m][k]; rhs [k][n] (float) or [n][k] (integer).
        let lhs_dims = if p.adj_x { (k, m) } else { (m, k) };
        let rhs_dims = if p.adj_y { (n, k) } else { (k, n) };
        let counts = (matrices(lhs.shape), matrices(rhs.shape));
        ctx.resize_output(0, &plan.out_shape)?;
        let mut st =
            State { plan, kind, adj_x: p.adj_x, adj_y: p.adj_y, counts, lhs_dims, rhs_dims, rhs: PackSlot::default() };
        st.rhs = PackSlot::prepare(&rhs, None, || relayout_rhs(&st, &rhs))?;
        Ok(st)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &Option<TfLiteBatchMatMulParams>, st: &mut State) -> Result<()> {
        let (lhs, rhs) = (ctx.input(0)?, ctx.input(1)?);
        let mut out = ctx.output(0)?;
        if out.shape != st.plan.out_shape.as_slice() {
            return Err(op_error(
                OP,
                format!("output shape {:?} was not prepared as {:?}", out.shape, st.plan.out_shape),
            ));
        }
        let threads = recommended_threads(ctx);
        let k = st.plan.k;
        let (lc, (lr, lcols)) = (st.counts.0, st.lhs_dims);
        let mut fresh = None;
        let mut slot = core::mem::take(&mut st.rhs);
        let r = (|| {
            let rhs_c = slot.get(&rhs, None, &mut fresh, || relayout_rhs(st, &rhs))?;
            let plan = &st.plan;
            match (&st.kind, rhs_c) {
                (Kind::F32, Rhs::F32(rhs)) => {
                    let lhs = relayout(lhs.data::<f32>()?, lc, lr, lcols, st.adj_x);
                    matmul_f32(plan, &lhs, rhs, out.data_mut::<f32>()?, threads)
                }
                (Kind::Hybrid { column_scales, asymmetric }, Rhs::I8(rhs)) => {
                    let lhs = relayout(lhs.data::<f32>()?, lc, lr, lcols, st.adj_x);
                    let q = quantize_rows(&lhs, k, *asymmetric);
                    matmul_hybrid(plan, &q, rhs, column_scales, out.data_mut::<f32>()?, threads)
                }
                (Kind::I8 { q }, Rhs::I8(rhs)) => {
                    let lhs = relayout(lhs.data::<i8>()?, lc, lr, lcols, st.adj_x);
                    matmul_i8(plan, &lhs, rhs, Some(*q), out.data_mut::<i8>()?, threads, |v| v as i8)
                }
                (Kind::I8ToI32, Rhs::I8(rhs)) => {
                    let lhs = relayout(lhs.data::<i8>()?, lc, lr, lcols, st.adj_x);
                    matmul_i8(plan, &lhs, rhs, None, out.data_mut::<i32>()?, threads, |v| v)
                }
                (Kind::I16 { q }, Rhs::I16(rhs)) => {
                    let lhs = relayout(lhs.data::<i16>()?, lc, lr, lcols, st.adj_x);
                    matmul_i16(plan, &lhs, rhs, *q, out.data_mut::<i16>()?, threads)
                }
                _ => Err(op_error(OP, "internal error: right operand of the wrong type")),
            }
        })();
        st.rhs = slot;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    #[test]
    fn plans() {
        let p = plan_matmul(&[2, 1, 4, 8], &[1, 3, 8, 5], false, false).unwrap();
        assert_eq!(p.out_shape, vec![2, 3, 4, 5]);
        assert_eq!(p.lhs_batch, vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(p.rhs_batch, vec![0, 1, 2, 0, 1, 2]);
        let p = plan_matmul(&[2, 8, 4], &[8, 3], true, false).unwrap();
        assert_eq!(p.out_shape, vec![2, 4, 3]);
        assert_eq!(p.rhs_batch, vec![0, 0]);
        assert!(plan_matmul(&[2, 4, 8], &[3, 8, 5], false, false).is_err());
        assert!(plan_matmul(&[4, 8], &[7, 5], false, false).is_err());
        assert!(plan_matmul(&[8], &[8, 5], false, false).is_err());
        assert!(plan_matmul(&[1, 1, 1, 1, 1, 4, 8], &[8, 5], false, false).is_err());
    }

    fn naive(l: &[f32], r: &[f32], ls: &[i32], rs: &[i32], ax: bool, ay: bool) -> (Vec<i32>, Vec<f32>) {
        let p = plan_matmul(ls, rs, ax, ay).unwrap();
        let (lr, lc) = (ls[ls.len() - 2] as usize, ls[ls.len() - 1] as usize);
        let (rr, rc) = (rs[rs.len() - 2] as usize, rs[rs.len() - 1] as usize);
        let mut out = vec![];
        for ob in 0..p.lhs_batch.len() {
            let (lb, rb) = (p.lhs_batch[ob], p.rhs_batch[ob]);
            for i in 0..p.m {
                for j in 0..p.n {
                    let mut t = 0.0f32;
                    for kk in 0..p.k {
                        let a = if ax { l[lb * lr * lc + kk * lc + i] } else { l[lb * lr * lc + i * lc + kk] };
                        let b = if ay { r[rb * rr * rc + j * rc + kk] } else { r[rb * rr * rc + kk * rc + j] };
                        t += a * b;
                    }
                    out.push(t);
                }
            }
        }
        (p.out_shape, out)
    }

    #[test]
    fn float_against_naive() {
        let cases: &[(&[i32], &[i32], bool, bool)] = &[
            (&[2, 3, 4], &[2, 4, 5], false, false),
            (&[2, 4, 3], &[2, 4, 5], true, false),
            (&[2, 3, 4], &[2, 5, 4], false, true),
            (&[1, 3, 4, 2], &[2, 1, 5, 4], true, true),
            (&[3, 4], &[2, 2, 4, 5], false, false),
        ];
        for &(ls, rs, ax, ay) in cases {
            let nl: usize = ls.iter().map(|&d| d as usize).product();
            let nr: usize = rs.iter().map(|&d| d as usize).product();
            let l: Vec<f32> = (0..nl).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.31).collect();
            let r: Vec<f32> = (0..nr).map(|i| ((i * 5 % 11) as f32 - 5.0) * 0.17).collect();
            let (shape, want) = naive(&l, &r, ls, rs, ax, ay);
            let mut g = Graph::new();
            let a = g.tensor(kTfLiteFloat32, ls, &l, None, false);
            let b = g.tensor(kTfLiteFloat32, rs, &r, None, false);
            let o = g.output(kTfLiteFloat32, None);
            let p = TfLiteBatchMatMulParams { adj_x: ax, adj_y: ay, asymmetric_quantize_inputs: false };
            assert_eq!(g.run(&registration(), &[a, b], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
            assert_eq!(g.shape(o), shape);
            assert_eq!(g.data::<f32>(o), want, "{ls:?} x {rs:?} adj {ax} {ay}");
        }
    }

    #[test]
    fn int8_and_int16() {
        // [1,2,3] x [3,2] with zero points.
        let mut g = Graph::new();
        let a = g.tensor(kTfLiteInt8, &[2, 3], &[1i8, 2, 3, 4, 5, 6], Some(qp(0.5, 1)), false);
        let b = g.tensor(kTfLiteInt8, &[3, 2], &[1i8, 2, 3, 4, 5, 6], Some(qp(0.25, -1)), false);
        let o = g.output(kTfLiteInt8, Some(qp(1.0, 2)));
        assert_eq!(g.run::<TfLiteBatchMatMulParams>(&registration(), &[a, b], &[o], None), TfLiteStatus::kTfLiteOk);
        // Real values: a = 0.5*[0,1,2;3,4,5], b = 0.25*[2,3;4,5;6,7].
        // a.b = 0.125 * [16,19;52,64] = [2, 2.375; 6.5, 8]; + zero point 2.
        let (m, s) = crate::kernels::quant::quantize_multiplier(0.125);
        let want: Vec<i8> =
            [16, 19, 52, 64].iter().map(|&v| (multiply_by_quantized_multiplier(v, m, s) + 2) as i8).collect();
        assert_eq!(g.data::<i8>(o), want);
        // int16 with zero points 0.
        let a = g.tensor(kTfLiteInt16, &[1, 2], &[300i16, -200], Some(qp(0.5, 0)), false);
        let b = g.tensor(kTfLiteInt16, &[2, 1], &[1000i16, 7], Some(qp(0.5, 0)), false);
        let o = g.output(kTfLiteInt16, Some(qp(1.0, 0)));
        assert_eq!(g.run::<TfLiteBatchMatMulParams>(&registration(), &[a, b], &[o], None), TfLiteStatus::kTfLiteOk);
        // 0.25 * (300000 - 1400) = 74650 -> clamped.
        assert_eq!(g.data::<i16>(o), vec![32767]);
        // Mismatched inner dimensions are refused.
        let c = g.tensor(kTfLiteInt16, &[3, 1], &[1i16, 2, 3], Some(qp(0.5, 0)), false);
        let o = g.output(kTfLiteInt16, Some(qp(1.0, 0)));
        assert_eq!(g.run::<TfLiteBatchMatMulParams>(&registration(), &[a, c], &[o], None), TfLiteStatus::kTfLiteError);
    }

    #[test]
    fn hybrid_close_to_float() {
        let l: Vec<f32> = (0..2 * 3 * 8).map(|i| ((i * 7 % 13) as f32 - 6.0) * 0.1).collect();
        let rq: Vec<i8> = (0..8 * 4).map(|i| ((i * 37 % 255) - 127) as i8).collect();
        let rf: Vec<f32> = rq.iter().map(|&v| v as f32 * 0.02).collect();
        let (_, want) = naive(&l, &rf, &[2, 3, 8], &[8, 4], false, false);
        for asym in [false, true] {
            let mut g = Graph::new();
            let a = g.tensor(kTfLiteFloat32, &[2, 3, 8], &l, None, false);
            let b = g.tensor(kTfLiteInt8, &[8, 4], &rq, Some(qp(0.02, 0)), true);
            let o = g.output(kTfLiteFloat32, None);
            let p = TfLiteBatchMatMulParams { adj_x: false, adj_y: false, asymmetric_quantize_inputs: asym };
            assert_eq!(g.run(&registration(), &[a, b], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
            let got = g.data::<f32>(o);
            for (x, y) in got.iter().zip(&want) {
                assert!((x - y).abs() < 0.05, "{x} vs {y}");
            }
        }
    }
}
