//! RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (TFLite `kernels/resize_bilinear.cc`,
//! `kernels/resize_nearest_neighbor.cc`, `reference/resize_bilinear.h`,
//! `reference/resize_nearest_neighbor.h`).
//!
//! Both take an NHWC input of rank 4 and an int32 `size` vector `[new_height, new_width]`.
//! Bilinear: float32 and uint8 use TFLite's float interpolation (uint8 adds 0.5 before
//! truncating); int8 and int16 use its integer-only interpolation in 1/1024 steps
//! (`ResizeBilinearInteger`), so quantized results are bit-exact with the reference
//! kernels. `align_corners` and `half_pixel_centers` are supported (not both at once, as
//! TFLite requires). Nearest neighbour copies whole pixels for float32, uint8, int8 and
//! int16. Quantized outputs reuse the input's scale and zero point, as in TFLite.
//!
//! The output shape depends on `size`'s values: a constant `size` resizes the output in
//! Prepare; a non-constant one must give the shape the model declares (see
//! `shape_util::plan_declared_output`), or Eval fails with a message saying so.
//!
//! The per-row and per-column interpolation coordinates are computed once, at Prepare
//! when `size` is constant (else once per call), with exactly TFLite's arithmetic (so
//! results equal the element-by-element reference loop), and rows are split over
//! `num_threads` for large outputs.

use super::conv_common::{parallel_rows, recommended_threads, threads_for};
use crate::abi::builtin_op_data::{TfLiteResizeBilinearParams, TfLiteResizeNearestNeighborParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
};
use crate::microkernels::f32_resize::{self, XTap};

const BILINEAR: &str = "RESIZE_BILINEAR";
const NEAREST: &str = "RESIZE_NEAREST_NEIGHBOR";

/// The RESIZE_BILINEAR registration.
pub fn bilinear_registration() -> TfLiteRegistration {
    kernel::registration::<ResizeBilinear>(TfLiteBuiltinOperator::kTfLiteBuiltinResizeBilinear)
}

/// The RESIZE_NEAREST_NEIGHBOR registration.
pub fn nearest_neighbor_registration() -> TfLiteRegistration {
    kernel::registration::<ResizeNearestNeighbor>(TfLiteBuiltinOperator::kTfLiteBuiltinResizeNearestNeighbor)
}

// ---------------------------------------------------------------------------------------
// Maths on slices
// ---------------------------------------------------------------------------------------

/// Sizes of a resize: NHWC input `[batches, in_h, in_w, depth]` to `[batches, out_h,
/// out_w, depth]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResizeGeom {
    pub batches: usize,
    pub in_h: usize,
    pub in_w: usize,
    pub depth: usize,
    pub out_h: usize,
    pub out_w: usize,
}

impl ResizeGeom {
    fn check(&self, input: usize, out: usize) -> Result<()> {
        let n_in = self.batches.checked_mul(self.in_h).and_then(|v| v.checked_mul(self.in_w)?.checked_mul(self.depth));
        let n_out =
            self.batches.checked_mul(self.out_h).and_then(|v| v.checked_mul(self.out_w)?.checked_mul(self.depth));
        if n_in != Some(input) || n_out != Some(out) {
            crate::bail!("buffers hold {input} and {out} elements, the geometry {self:?} needs {n_in:?} and {n_out:?}");
        }
        if out > 0 && (self.in_h == 0 || self.in_w == 0) {
            crate::bail!("cannot resize an empty image ({} x {}) to a non-empty one", self.in_h, self.in_w);
        }
        // TFLite computes coordinates in int32 (1/1024 steps for the integer kernel).
        let limit = (i32::MAX as usize) >> 11;
        if self.in_h.max(self.in_w).max(self.out_h).max(self.out_w) > limit {
            crate::bail!("image dimensions above {limit} are not supported");
        }
        Ok(())
    }
}

/// Bilinear options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BilinearOpts {
    pub align_corners: bool,
    pub half_pixel_centers: bool,
}

/// `ComputeInterpolationValues` (float): `(scaled, lower, upper)`.
#[inline]
fn interp_f32(value: usize, scale: f32, half_pixel: bool, input_size: usize) -> (f32, usize, usize) {
    let v = value as f32;
    let scaled = if half_pixel { (v + 0.5) * scale - 0.5 } else { v * scale };
    let lower = (scaled.floor() as i32).max(0);
    let upper = (scaled.ceil() as i32).min(input_size as i32 - 1);
    // `lower` can exceed `input_size - 1` only through float rounding at the last pixel
    // (TFLite would read past the row); clamp so the read stays inside.
    let hi = input_size as i32 - 1;
    (scaled, lower.min(hi).max(0) as usize, upper.max(0) as usize)
}

/// The float scale of one axis (TFLite's `height_scale` / `width_scale`).
fn scale_f32(input: usize, output: usize, align_corners: bool) -> f32 {
    if align_corners && output > 1 {
        (input as i32 - 1) as f32 / (output as i32 - 1) as f32
    } else {
        input as f32 / output as f32
    }
}

/// Per-axis float interpolation table.
struct AxisF32 {
    scaled: Vec<f32>,
    lo: Vec<usize>,
    hi: Vec<usize>,
}

fn axis_f32(input: usize, output: usize, o: BilinearOpts) -> AxisF32 {
    let scale = scale_f32(input, output, o.align_corners);
    let mut t =
        AxisF32 { scaled: Vec::with_capacity(output), lo: Vec::with_capacity(output), hi: Vec::with_capacity(output) };
    for v in 0..output {
        let (s, l, h) = interp_f32(v, scale, o.half_pixel_centers, input);
        t.scaled.push(s);
        t.lo.push(l);
        t.hi.push(h);
    }
    t
}

/// Values the float bilinear kernel interpolates (float32, and uint8 widened to float with
/// 0.5 added before the truncating conversion back).
pub trait BilinearFloatElem: Copy + Send + Sync {
    const ROUNDING: f32;
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;

    /// One output row through a microkernel, when the type has one (`None`: use the
    /// element loop).
    fn row_kernel(
        _r0: &[Self],
        _r1: &[Self],
        _xs: &[XTap],
        _dy: f32,
        _depth: usize,
        _out: &mut [Self],
    ) -> Option<Result<()>> {
        None
    }
}

impl BilinearFloatElem for f32 {
    const ROUNDING: f32 = 0.0;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> f32 {
        v
    }

    fn row_kernel(r0: &[f32], r1: &[f32], xs: &[XTap], dy: f32, depth: usize, out: &mut [f32]) -> Option<Result<()>> {
        Some(f32_resize::bilinear_row(crate::microkernels::table(), r0, r1, xs, dy, depth, out))
    }
}

impl BilinearFloatElem for u8 {
    const ROUNDING: f32 = 0.5;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> u8 {
        v as u8
    }
}

/// TFLite's `reference_ops::ResizeBilinear<T>` (float interpolation).
pub fn resize_bilinear_float<T: BilinearFloatElem>(
    g: &ResizeGeom,
    o: BilinearOpts,
    input: &[T],
    out: &mut [T],
    threads: usize,
) -> Result<()> {
    g.check(input.len(), out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    bilinear_float_with(g, &FloatTables::new(g, o), input, out, threads)
}

/// The float bilinear kernel's per-row and per-column coordinates.
struct FloatTables {
    ys: AxisF32,
    xs: AxisF32,
    /// The horizontal taps as element offsets and weights, for the row kernels.
    taps: Vec<XTap>,
}

impl FloatTables {
    fn new(g: &ResizeGeom, o: BilinearOpts) -> FloatTables {
        let ys = axis_f32(g.in_h, g.out_h, o);
        let xs = axis_f32(g.in_w, g.out_w, o);
        let taps: Vec<XTap> = (0..g.out_w)
            .map(|x| XTap { x0: xs.lo[x] * g.depth, x1: xs.hi[x] * g.depth, dx: xs.scaled[x] - xs.lo[x] as f32 })
            .collect();
        FloatTables { ys, xs, taps }
    }
}

/// [`resize_bilinear_float`] with its coordinate tables (built for `g`).
fn bilinear_float_with<T: BilinearFloatElem>(
    g: &ResizeGeom,
    t: &FloatTables,
    input: &[T],
    out: &mut [T],
    threads: usize,
) -> Result<()> {
    g.check(input.len(), out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    let (ys, xs, taps) = (&t.ys, &t.xs, &t.taps);
    let row_len = g.out_w * g.depth;
    let threads = threads_for(threads, out.len().saturating_mul(8), g.batches * g.out_h);
    parallel_rows(threads, out, row_len, &|first, chunk: &mut [T]| {
        for (r, orow) in chunk.chunks_mut(row_len).enumerate() {
            let row = first + r;
            let (b, y) = (row / g.out_h, row % g.out_h);
            let (iy, y0, y1) = (ys.scaled[y], ys.lo[y], ys.hi[y]);
            let dy = iy - y0 as f32;
            let base = b * g.in_h;
            let r0 = &input[(base + y0) * g.in_w * g.depth..(base + y0 + 1) * g.in_w * g.depth];
            let r1 = &input[(base + y1) * g.in_w * g.depth..(base + y1 + 1) * g.in_w * g.depth];
            if let Some(done) = T::row_kernel(r0, r1, taps, dy, g.depth, orow) {
                done?;
                continue;
            }
            for x in 0..g.out_w {
                let (ix, x0, x1) = (xs.scaled[x], xs.lo[x], xs.hi[x]);
                let dx = ix - x0 as f32;
                let (p00, p10) = (&r0[x0 * g.depth..], &r1[x0 * g.depth..]);
                let (p01, p11) = (&r0[x1 * g.depth..], &r1[x1 * g.depth..]);
                let opix = &mut orow[x * g.depth..(x + 1) * g.depth];
                for (c, o) in opix.iter_mut().enumerate() {
                    // Same operation order as the C++ expression.
                    let v = p00[c].to_f32() * (1.0 - dy) * (1.0 - dx)
                        + p10[c].to_f32() * dy * (1.0 - dx)
                        + p01[c].to_f32() * (1.0 - dy) * dx
                        + p11[c].to_f32() * dy * dx
                        + T::ROUNDING;
                    *o = T::from_f32(v);
                }
            }
        }
        Ok(())
    })
}

/// The 1/1024 scale of one axis (`height_scale_10` / `width_scale_10`).
fn scale_10(input: usize, output: usize, align_corners: bool) -> i64 {
    let (i, o) = (input as i64, output as i64);
    if align_corners && output > 1 {
        ((1 << 10) * (i - 1) + (o - 1) / 2) / (o - 1)
    } else {
        ((1 << 10) * i + o / 2) / o
    }
}

/// Per-axis integer interpolation table: scaled coordinate (1/1024) and bounds.
struct AxisI {
    scaled: Vec<i64>,
    lo: Vec<usize>,
    hi: Vec<usize>,
}

fn axis_int(input: usize, output: usize, o: BilinearOpts) -> AxisI {
    let s = scale_10(input, output, o.align_corners);
    let mut t =
        AxisI { scaled: Vec::with_capacity(output), lo: Vec::with_capacity(output), hi: Vec::with_capacity(output) };
    let hi_max = input as i64 - 1;
    for v in 0..output as i64 {
        // `ComputeInterpolationValuesInteger`; C++ division truncates toward zero, as here.
        let scaled = if o.half_pixel_centers { v * s + s / 2 - (1 << 9) } else { v * s };
        let lower = (scaled / (1 << 10)).max(0);
        let upper = ((scaled + (1 << 10) - 1) / (1 << 10)).min(hi_max);
        t.scaled.push(scaled);
        t.lo.push(lower.min(hi_max).max(0) as usize);
        t.hi.push(upper.max(0) as usize);
    }
    t
}

/// Integer types of the integer-only bilinear kernel.
pub trait BilinearIntElem: Copy + Send + Sync {
    fn to_i64(self) -> i64;
    fn from_i64(v: i64) -> Self;
}

impl BilinearIntElem for i8 {
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> i8 {
        v as i8
    }
}

impl BilinearIntElem for i16 {
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> i16 {
        v as i16
    }
}

/// TFLite's `reference_ops::ResizeBilinearInteger<T>` (int8, int16): weights in 1/1024
/// steps, a 2^20-scaled sum rounded half away from zero (the default, double-rounding
/// build).
pub fn resize_bilinear_integer<T: BilinearIntElem>(
    g: &ResizeGeom,
    o: BilinearOpts,
    input: &[T],
    out: &mut [T],
    threads: usize,
) -> Result<()> {
    g.check(input.len(), out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    bilinear_integer_with(g, &axis_int(g.in_h, g.out_h, o), &axis_int(g.in_w, g.out_w, o), input, out, threads)
}

/// [`resize_bilinear_integer`] with its row and column tables (built for `g`).
fn bilinear_integer_with<T: BilinearIntElem>(
    g: &ResizeGeom,
    ys: &AxisI,
    xs: &AxisI,
    input: &[T],
    out: &mut [T],
    threads: usize,
) -> Result<()> {
    g.check(input.len(), out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    let row_len = g.out_w * g.depth;
    let threads = threads_for(threads, out.len().saturating_mul(8), g.batches * g.out_h);
    const ONE: i64 = 1 << 10;
    parallel_rows(threads, out, row_len, &|first, chunk: &mut [T]| {
        for (r, orow) in chunk.chunks_mut(row_len).enumerate() {
            let row = first + r;
            let (b, y) = (row / g.out_h, row % g.out_h);
            let (iy, y0, y1) = (ys.scaled[y], ys.lo[y], ys.hi[y]);
            let wy1 = iy - ONE * y0 as i64;
            let wy0 = ONE - wy1;
            let base = b * g.in_h;
            let r0 = &input[(base + y0) * g.in_w * g.depth..(base + y0 + 1) * g.in_w * g.depth];
            let r1 = &input[(base + y1) * g.in_w * g.depth..(base + y1 + 1) * g.in_w * g.depth];
            for x in 0..g.out_w {
                let (ix, x0, x1) = (xs.scaled[x], xs.lo[x], xs.hi[x]);
                let wx1 = ix - ONE * x0 as i64;
                let wx0 = ONE - wx1;
                let (p00, p10) = (&r0[x0 * g.depth..], &r1[x0 * g.depth..]);
                let (p01, p11) = (&r0[x1 * g.depth..], &r1[x1 * g.depth..]);
                let opix = &mut orow[x * g.depth..(x + 1) * g.depth];
                for (c, o) in opix.iter_mut().enumerate() {
                    let sum = p00[c].to_i64() * wy0 * wx0
                        + p10[c].to_i64() * wy1 * wx0
                        + p01[c].to_i64() * wy0 * wx1
                        + p11[c].to_i64() * wy1 * wx1;
                    let round = if sum > 0 { 1i64 << 19 } else { -(1i64 << 19) };
                    *o = T::from_i64((sum + round) / (1 << 20));
                }
            }
        }
        Ok(())
    })
}

/// TFLite's `GetNearestNeighbor`: the source index of output coordinate `value`.
fn nearest_index(value: usize, input_size: usize, output_size: usize, align_corners: bool, half_pixel: bool) -> usize {
    let scale = if align_corners && output_size > 1 {
        (input_size as i32 - 1) as f32 / (output_size as i32 - 1) as f32
    } else {
        input_size as f32 / output_size as f32
    };
    let offset = if half_pixel { 0.5f32 } else { 0.0 };
    let p = (value as i32 as f32 + offset) * scale;
    // TfLiteRound is std::round (half away from zero), as f32::round.
    let v = if align_corners { p.round() as i32 } else { p.floor() as i32 };
    let mut v = v.min(input_size as i32 - 1);
    if half_pixel {
        v = v.max(0);
    }
    // Never outside the input (TFLite could read before it without half-pixel centers
    // only for impossible negative coordinates).
    v.max(0) as usize
}

/// TFLite's `reference_ops::ResizeNearestNeighbor<T>`.
pub fn resize_nearest<T: Copy + Send + Sync>(
    g: &ResizeGeom,
    align_corners: bool,
    half_pixel: bool,
    input: &[T],
    out: &mut [T],
) -> Result<()> {
    g.check(input.len(), out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    let ys: Vec<usize> = (0..g.out_h).map(|y| nearest_index(y, g.in_h, g.out_h, align_corners, half_pixel)).collect();
    let xs: Vec<usize> = (0..g.out_w).map(|x| nearest_index(x, g.in_w, g.out_w, align_corners, half_pixel)).collect();
    nearest_with(g, &ys, &xs, input, out)
}

/// [`resize_nearest`] with the source row and column of every output row and column.
fn nearest_with<T: Copy>(g: &ResizeGeom, ys: &[usize], xs: &[usize], input: &[T], out: &mut [T]) -> Result<()> {
    g.check(input.len(), out.len())?;
    if out.is_empty() {
        return Ok(());
    }
    let mut o = 0;
    for b in 0..g.batches {
        for &iy in ys {
            let row = (b * g.in_h + iy) * g.in_w;
            for &ix in xs {
                let src = (row + ix) * g.depth;
                out[o..o + g.depth].copy_from_slice(&input[src..src + g.depth]);
                o += g.depth;
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Kernel glue
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bilinear,
    Nearest,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Bilinear => BILINEAR,
            Kind::Nearest => NEAREST,
        }
    }
}

struct Operands<'a> {
    input: TensorView<'a>,
    size: TensorView<'a>,
}

fn operands<'a>(ctx: &OpCtx<'a>, kind: Kind, opts: BilinearOpts) -> Result<Operands<'a>> {
    let op = kind.name();
    check_arity(ctx, op, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(op))?;
    let size = ctx.input(1).map_err(in_op(op))?;
    ctx.output(0).map_err(in_op(op))?;
    if input.shape.len() != 4 {
        return Err(op_error(op, format!("input must have rank 4, has shape {:?}", input.shape)));
    }
    if input.shape.iter().any(|&d| d < 0) {
        return Err(op_error(op, format!("input shape {:?} has a negative dimension", input.shape)));
    }
    if size.shape.len() != 1 {
        return Err(op_error(op, format!("size must be a vector, has shape {:?}", size.shape)));
    }
    if size.dtype != TfLiteType::kTfLiteInt32 {
        return Err(op_error(op, format!("size must be int32, is {}", size.dtype.name())));
    }
    if size.shape[0] != 2 {
        return Err(op_error(op, format!("size must hold 2 values (height, width), holds {}", size.shape[0])));
    }
    use TfLiteType::*;
    if !matches!(input.dtype, kTfLiteFloat32 | kTfLiteUInt8 | kTfLiteInt8 | kTfLiteInt16) {
        return Err(op_error(op, format!("input type {} is not supported", input.dtype.name())));
    }
    if kind == Kind::Bilinear && opts.half_pixel_centers && opts.align_corners {
        return Err(op_error(op, "if half_pixel_centers is true, align_corners must be false"));
    }
    Ok(Operands { input, size })
}

/// The output shape the size values give.
fn output_shape(kind: Kind, ops: &Operands<'_>) -> Result<[i32; 4]> {
    let op = kind.name();
    let v = int_values(&ops.size, false).map_err(in_op(op))?;
    let (h, w) = (v[0], v[1]);
    let ok = |x: i64| if kind == Kind::Bilinear { x > 0 } else { x >= 0 };
    if !ok(h) || !ok(w) || h > i32::MAX as i64 || w > i32::MAX as i64 {
        return Err(op_error(op, format!("output size [{h}, {w}] must be positive")));
    }
    Ok([ops.input.shape[0], h as i32, w as i32, ops.input.shape[3]])
}

/// The geometry of resizing `input` to `shape`.
fn geometry(input: &TensorView<'_>, shape: &[i32; 4]) -> ResizeGeom {
    let s = input.shape;
    ResizeGeom {
        batches: s[0] as usize,
        in_h: s[1] as usize,
        in_w: s[2] as usize,
        depth: s[3] as usize,
        out_h: shape[1] as usize,
        out_w: shape[2] as usize,
    }
}

/// Coordinate tables of one resize, chosen by op and type as Eval runs them.
enum Tables {
    Float(FloatTables),
    Int { ys: AxisI, xs: AxisI },
    Nearest { ys: Vec<usize>, xs: Vec<usize> },
}

impl Tables {
    /// The tables for `g`, or `None` when the kernel would not read any (an empty output,
    /// or a geometry the kernels refuse: Eval reports that).
    fn new(kind: Kind, dtype: TfLiteType, g: &ResizeGeom, o: BilinearOpts) -> Option<Tables> {
        let count = |h: usize, w: usize| g.batches.checked_mul(h)?.checked_mul(w)?.checked_mul(g.depth);
        let (n_in, n_out) = (count(g.in_h, g.in_w)?, count(g.out_h, g.out_w)?);
        if n_out == 0 || g.check(n_in, n_out).is_err() {
            return None;
        }
        Some(match (kind, dtype) {
            (Kind::Bilinear, TfLiteType::kTfLiteFloat32 | TfLiteType::kTfLiteUInt8) => {
                Tables::Float(FloatTables::new(g, o))
            }
            (Kind::Bilinear, _) => Tables::Int { ys: axis_int(g.in_h, g.out_h, o), xs: axis_int(g.in_w, g.out_w, o) },
            (Kind::Nearest, _) => {
                let (ac, hp) = (o.align_corners, o.half_pixel_centers);
                Tables::Nearest {
                    ys: (0..g.out_h).map(|y| nearest_index(y, g.in_h, g.out_h, ac, hp)).collect(),
                    xs: (0..g.out_w).map(|x| nearest_index(x, g.in_w, g.out_w, ac, hp)).collect(),
                }
            }
        })
    }
}

/// What Prepare derives for a resize node when `size` is constant.
struct ResizePlan {
    g: ResizeGeom,
    /// `None` when there is nothing to interpolate or the geometry is refused.
    tables: Option<Tables>,
}

fn prepare(ctx: &OpCtx<'_>, kind: Kind, opts: BilinearOpts) -> Result<Option<ResizePlan>> {
    let op = kind.name();
    let ops = operands(ctx, kind, opts)?;
    ctx.set_output_type(0, ops.input.dtype).map_err(in_op(op))?;
    if !known_at_prepare(&ops.size) {
        plan_declared_output(ctx, op, 0)?;
        return Ok(None);
    }
    let shape = output_shape(kind, &ops)?;
    ctx.resize_output(0, &shape).map_err(in_op(op))?;
    let g = geometry(&ops.input, &shape);
    Ok(Some(ResizePlan { g, tables: Tables::new(kind, ops.input.dtype, &g, opts) }))
}

fn eval(ctx: &OpCtx<'_>, kind: Kind, opts: BilinearOpts, planned: &Option<ResizePlan>) -> Result<()> {
    let op = kind.name();
    let input = ctx.input(0).map_err(in_op(op))?;
    let (g, tables) = match planned {
        Some(p) => (p.g, p.tables.as_ref()),
        None => {
            let ops = operands(ctx, kind, opts)?;
            let shape = output_shape(kind, &ops)?;
            settle_output_shape(ctx, op, 0, "size values", &shape)?;
            (geometry(&input, &shape), None)
        }
    };
    let mut out = ctx.output(0).map_err(in_op(op))?;
    if out.dtype != input.dtype {
        return Err(op_error(op, format!("output type {} differs from the input type", out.dtype.name())));
    }
    let g = &g;
    use TfLiteType::*;
    let threads = recommended_threads(ctx);
    let r = match (tables, input.dtype) {
        (Some(Tables::Float(t)), kTfLiteFloat32) => {
            bilinear_float_with(g, t, input.data::<f32>()?, out.data_mut::<f32>()?, threads)
        }
        (Some(Tables::Float(t)), _) => bilinear_float_with(g, t, input.data::<u8>()?, out.data_mut::<u8>()?, threads),
        (Some(Tables::Int { ys, xs }), kTfLiteInt8) => {
            bilinear_integer_with(g, ys, xs, input.data::<i8>()?, out.data_mut::<i8>()?, threads)
        }
        (Some(Tables::Int { ys, xs }), _) => {
            bilinear_integer_with(g, ys, xs, input.data::<i16>()?, out.data_mut::<i16>()?, threads)
        }
        (Some(Tables::Nearest { ys, xs }), dt) => match dt {
            kTfLiteFloat32 => nearest_with(g, ys, xs, input.data::<f32>()?, out.data_mut::<f32>()?),
            kTfLiteUInt8 => nearest_with(g, ys, xs, input.data::<u8>()?, out.data_mut::<u8>()?),
            kTfLiteInt8 => nearest_with(g, ys, xs, input.data::<i8>()?, out.data_mut::<i8>()?),
            _ => nearest_with(g, ys, xs, input.data::<i16>()?, out.data_mut::<i16>()?),
        },
        (None, dt) => match kind {
            Kind::Bilinear => match dt {
                kTfLiteFloat32 => resize_bilinear_float(g, opts, input.data::<f32>()?, out.data_mut::<f32>()?, threads),
                kTfLiteUInt8 => resize_bilinear_float(g, opts, input.data::<u8>()?, out.data_mut::<u8>()?, threads),
                kTfLiteInt8 => resize_bilinear_integer(g, opts, input.data::<i8>()?, out.data_mut::<i8>()?, threads),
                _ => resize_bilinear_integer(g, opts, input.data::<i16>()?, out.data_mut::<i16>()?, threads),
            },
            Kind::Nearest => {
                let (ac, hp) = (opts.align_corners, opts.half_pixel_centers);
                match dt {
                    kTfLiteFloat32 => resize_nearest(g, ac, hp, input.data::<f32>()?, out.data_mut::<f32>()?),
                    kTfLiteUInt8 => resize_nearest(g, ac, hp, input.data::<u8>()?, out.data_mut::<u8>()?),
                    kTfLiteInt8 => resize_nearest(g, ac, hp, input.data::<i8>()?, out.data_mut::<i8>()?),
                    _ => resize_nearest(g, ac, hp, input.data::<i16>()?, out.data_mut::<i16>()?),
                }
            }
        },
    };
    r.map_err(|e: Error| op_error(op, e.message))
}

/// RESIZE_BILINEAR; its State holds the geometry and the interpolation coordinate tables
/// when `size` is constant.
struct ResizeBilinear;

impl BuiltinKernel for ResizeBilinear {
    const NAME: &'static str = BILINEAR;
    type Params = Option<TfLiteResizeBilinearParams>;
    type State = Option<ResizePlan>;

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteResizeBilinearParams>) -> Result<Option<ResizePlan>> {
        prepare(ctx, Kind::Bilinear, bilinear_opts(p))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &Option<TfLiteResizeBilinearParams>, plan: &mut Option<ResizePlan>) -> Result<()> {
        eval(ctx, Kind::Bilinear, bilinear_opts(p), plan)
    }
}

fn bilinear_opts(p: &Option<TfLiteResizeBilinearParams>) -> BilinearOpts {
    let p = p.unwrap_or_default();
    BilinearOpts { align_corners: p.align_corners, half_pixel_centers: p.half_pixel_centers }
}

/// RESIZE_NEAREST_NEIGHBOR; its State holds the geometry and every output row's and
/// column's source when `size` is constant.
struct ResizeNearestNeighbor;

impl BuiltinKernel for ResizeNearestNeighbor {
    const NAME: &'static str = NEAREST;
    type Params = Option<TfLiteResizeNearestNeighborParams>;
    type State = Option<ResizePlan>;

    fn prepare(ctx: &OpCtx<'_>, p: &Option<TfLiteResizeNearestNeighborParams>) -> Result<Option<ResizePlan>> {
        prepare(ctx, Kind::Nearest, nearest_opts(p))
    }

    fn invoke(
        ctx: &OpCtx<'_>,
        p: &Option<TfLiteResizeNearestNeighborParams>,
        plan: &mut Option<ResizePlan>,
    ) -> Result<()> {
        eval(ctx, Kind::Nearest, nearest_opts(p), plan)
    }
}

fn nearest_opts(p: &Option<TfLiteResizeNearestNeighborParams>) -> BilinearOpts {
    let p = p.unwrap_or_default();
    BilinearOpts { align_corners: p.align_corners, half_pixel_centers: p.half_pixel_centers }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::{Graph, qp};
    use TfLiteType::*;

    fn geom(b: usize, ih: usize, iw: usize, c: usize, oh: usize, ow: usize) -> ResizeGeom {
        ResizeGeom { batches: b, in_h: ih, in_w: iw, depth: c, out_h: oh, out_w: ow }
    }

    /// The C++ reference loop, literally, for the float kernel.
    fn reference_float(g: &ResizeGeom, o: BilinearOpts, input: &[f32]) -> Vec<f32> {
        let hs = scale_f32(g.in_h, g.out_h, o.align_corners);
        let ws = scale_f32(g.in_w, g.out_w, o.align_corners);
        let mut out = vec![0f32; g.batches * g.out_h * g.out_w * g.depth];
        let at = |b: usize, y: usize, x: usize, c: usize| input[((b * g.in_h + y) * g.in_w + x) * g.depth + c];
        for b in 0..g.batches {
            for y in 0..g.out_h {
                let (iy, y0, y1) = interp_f32(y, hs, o.half_pixel_centers, g.in_h);
                for x in 0..g.out_w {
                    let (ix, x0, x1) = interp_f32(x, ws, o.half_pixel_centers, g.in_w);
                    for c in 0..g.depth {
                        out[((b * g.out_h + y) * g.out_w + x) * g.depth + c] =
                            at(b, y0, x0, c) * (1.0 - (iy - y0 as f32)) * (1.0 - (ix - x0 as f32))
                                + at(b, y1, x0, c) * (iy - y0 as f32) * (1.0 - (ix - x0 as f32))
                                + at(b, y0, x1, c) * (1.0 - (iy - y0 as f32)) * (ix - x0 as f32)
                                + at(b, y1, x1, c) * (iy - y0 as f32) * (ix - x0 as f32);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn bilinear_float_matches_tflite_tests() {
        // resize_bilinear_test.cc HorizontalResize: [3, 6] to width 3.
        let g = geom(1, 1, 2, 1, 1, 3);
        let mut out = [0f32; 3];
        resize_bilinear_float(&g, BilinearOpts::default(), &[3.0, 6.0], &mut out, 1).unwrap();
        assert_eq!(out, [3.0, 5.0, 6.0]);
        // TwoDimensionalResize.
        let g = geom(1, 2, 2, 1, 3, 3);
        let mut out = [0f32; 9];
        resize_bilinear_float(&g, BilinearOpts::default(), &[3.0, 6.0, 9.0, 12.0], &mut out, 1).unwrap();
        assert_eq!(out, [3.0, 5.0, 6.0, 7.0, 9.0, 10.0, 9.0, 11.0, 12.0]);
        // HalfPixelCenters: [1,2,2,1] -> [1,3,3,1].
        let o = BilinearOpts { align_corners: false, half_pixel_centers: true };
        resize_bilinear_float(&g, o, &[1.0, 2.0, 3.0, 4.0], &mut out, 1).unwrap();
        let want = [1.0, 1.5, 2.0, 2.0, 2.5, 3.0, 3.0, 3.5, 4.0];
        assert!(out.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6), "{out:?}");
    }

    #[test]
    fn bilinear_float_equals_reference_loop() {
        let input: Vec<f32> = (0..2 * 5 * 7 * 3).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.173).collect();
        for (oh, ow) in [(10, 14), (3, 4), (1, 1), (11, 2)] {
            for o in [
                BilinearOpts::default(),
                BilinearOpts { align_corners: true, half_pixel_centers: false },
                BilinearOpts { align_corners: false, half_pixel_centers: true },
            ] {
                let g = geom(2, 5, 7, 3, oh, ow);
                let mut out = vec![0f32; 2 * oh * ow * 3];
                resize_bilinear_float(&g, o, &input, &mut out, 3).unwrap();
                let want = reference_float(&g, o, &input);
                assert_eq!(
                    out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
            }
        }
    }

    #[test]
    fn bilinear_integer() {
        // TwoDimensionalResizeWithTwoBatches (int8): same answers as float here.
        let g = geom(2, 2, 2, 1, 3, 3);
        let mut out = [0i8; 18];
        resize_bilinear_integer(&g, BilinearOpts::default(), &[3, 6, 9, 12, 4, 10, 10, 16], &mut out, 1).unwrap();
        assert_eq!(out, [3, 5, 6, 7, 9, 10, 9, 11, 12, 4, 8, 10, 8, 12, 14, 10, 14, 16]);
        // Negative values round half away from zero.
        let g = geom(1, 1, 2, 1, 1, 4);
        let mut out = [0i16; 4];
        resize_bilinear_integer(&g, BilinearOpts::default(), &[-3, -4], &mut out, 1).unwrap();
        assert_eq!(out, [-3, -4, -4, -4]);
        // uint8 through the float kernel adds 0.5 before truncating.
        let g = geom(1, 1, 2, 1, 1, 4);
        let mut out = [0u8; 4];
        resize_bilinear_float(&g, BilinearOpts::default(), &[3u8, 4], &mut out, 1).unwrap();
        assert_eq!(out, [3, 4, 4, 4]);
    }

    #[test]
    fn nearest() {
        // resize_nearest_neighbor_test.cc TwoDimensionalResize: [3,6,9,12] to 3x3.
        let g = geom(1, 2, 2, 1, 3, 3);
        let mut out = [0f32; 9];
        resize_nearest(&g, false, false, &[3.0, 6.0, 9.0, 12.0], &mut out).unwrap();
        assert_eq!(out, [3.0, 3.0, 6.0, 3.0, 3.0, 6.0, 9.0, 9.0, 12.0]);
        resize_nearest(&g, true, false, &[3.0, 6.0, 9.0, 12.0], &mut out).unwrap();
        assert_eq!(out, [3.0, 6.0, 6.0, 9.0, 12.0, 12.0, 9.0, 12.0, 12.0]);
        resize_nearest(&g, false, true, &[3.0, 6.0, 9.0, 12.0], &mut out).unwrap();
        assert_eq!(out, [3.0, 6.0, 6.0, 9.0, 12.0, 12.0, 9.0, 12.0, 12.0]);
        // Sizes are checked.
        assert!(resize_nearest(&g, false, false, &[3.0, 6.0, 9.0], &mut out).is_err());
        let g0 = geom(1, 0, 2, 1, 3, 3);
        assert!(resize_nearest::<f32>(&g0, false, false, &[], &mut out).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt8, &[1, 2, 2, 1], &[3i8, 6, 9, 12], Some(qp(0.5, 0)), false);
        let size = g.tensor(kTfLiteInt32, &[2], &[3i32, 3], None, true);
        let o = g.output(kTfLiteInt8, Some(qp(0.5, 0)));
        let st = g.run(&bilinear_registration(), &[x, size], &[o], Some(TfLiteResizeBilinearParams::default()));
        assert_eq!(st, TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![1, 3, 3, 1]);
        assert_eq!(g.data::<i8>(o), vec![3, 5, 6, 7, 9, 10, 9, 11, 12]);
        // Both options at once are refused.
        let o2 = g.output(kTfLiteInt8, Some(qp(0.5, 0)));
        let bad = TfLiteResizeBilinearParams { align_corners: true, half_pixel_centers: true };
        assert_eq!(g.run(&bilinear_registration(), &[x, size], &[o2], Some(bad)), TfLiteStatus::kTfLiteError);
        // A size with a negative value, or with 3 values, is refused.
        let neg = g.tensor(kTfLiteInt32, &[2], &[-3i32, 3], None, true);
        let o3 = g.output(kTfLiteInt8, Some(qp(0.5, 0)));
        assert_eq!(g.run::<()>(&nearest_neighbor_registration(), &[x, neg], &[o3], None), TfLiteStatus::kTfLiteError);
        let three = g.tensor(kTfLiteInt32, &[3], &[3i32, 3, 3], None, true);
        let o4 = g.output(kTfLiteInt8, Some(qp(0.5, 0)));
        assert_eq!(g.run::<()>(&nearest_neighbor_registration(), &[x, three], &[o4], None), TfLiteStatus::kTfLiteError);
        // Rank-3 input is refused.
        let x3 = g.tensor(kTfLiteFloat32, &[2, 2, 1], &[1f32, 2., 3., 4.], None, false);
        let o5 = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&nearest_neighbor_registration(), &[x3, size], &[o5], None), TfLiteStatus::kTfLiteError);
    }
}
