//! CONV_3D and CONV_3D_TRANSPOSE, float32 (TFLite `kernels/conv3d.cc`,
//! `kernels/conv3d_transpose.cc`, `internal/reference/conv3d.h`, `conv3d_transpose.h`).
//!
//! CONV_3D: input `[batch, depth, height, width, in_c]`, filter
//! `[f_d, f_h, f_w, in_c, out_c]`, optional bias `[out_c]`; SAME or VALID padding,
//! strides and dilations per axis, fused activation. CONV_3D_TRANSPOSE: inputs
//! `output_shape` (5 int32 values), filter `[f_d, f_h, f_w, out_c, in_c]`, input
//! `[batch, d, h, w, in_c]`, optional bias `[out_c]`; the output shape's windowed size must
//! give back the input's. A non-constant `output_shape` makes the output dynamic. Both
//! accumulate in float in the reference kernels' order. CONV_3D_TRANSPOSE's output channel
//! count must equal the filter's (TFLite only checks that it is a multiple, then indexes past
//! the filter otherwise). TFLite 2.19's CONV_3D_TRANSPOSE Prepare accepts float32 input only
//! (tensorflow-cpu 2.19.0 and LiteRT 2.3.0 both refuse int8 with `input->type !=
//! kTfLiteFloat32`); the int8/int16 path of later kernel sources is not in 2.19, so
//! quantized inputs are refused here too.

use crate::abi::builtin_op_data::{TfLiteConv3DParams, TfLitePadding};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::activation::{activation_range_f32, clamp_min_max};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::ops::conv_common::{
    checked_product, compute_out_size, compute_padding_with_offset, dim, positive_param, to_dim,
};
use crate::kernels::shape_util::{
    check_arity, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
};

const OP: &str = "CONV_3D";
const OP_T: &str = "CONV_3D_TRANSPOSE";

/// The CONV_3D registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Conv3d>(TfLiteBuiltinOperator::kTfLiteBuiltinConv3d)
}

/// The CONV_3D_TRANSPOSE registration.
pub fn transpose_registration() -> TfLiteRegistration {
    kernel::registration::<Conv3dTranspose>(TfLiteBuiltinOperator::kTfLiteBuiltinConv3dTranspose)
}

/// The geometry of one 3-D convolution: `inp` is the convolution's input (the transposed
/// op's output), `out` its output (the transposed op's input), both `[d, h, w]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Geom3d {
    pub batches: usize,
    pub inp: [usize; 3],
    pub out: [usize; 3],
    pub filter: [usize; 3],
    pub stride: [usize; 3],
    pub dilation: [usize; 3],
    /// Padding before, per axis.
    pub pad: [usize; 3],
    pub in_c: usize,
    pub out_c: usize,
}

impl Geom3d {
    /// The convolution output sizes and paddings for input `inp` (TFLite's
    /// `ComputePadding3DValues`).
    fn windows(op: &str, p: &TfLiteConv3DParams, inp: [usize; 3], filter: [usize; 3]) -> Result<Self> {
        let stride = [
            positive_param(op, "stride depth", p.stride_depth)?,
            positive_param(op, "stride height", p.stride_height)?,
            positive_param(op, "stride width", p.stride_width)?,
        ];
        let dilation = [
            positive_param(op, "dilation depth", p.dilation_depth_factor)?,
            positive_param(op, "dilation height", p.dilation_height_factor)?,
            positive_param(op, "dilation width", p.dilation_width_factor)?,
        ];
        let mut g = Geom3d { inp, filter, stride, dilation, ..Geom3d::default() };
        for a in 0..3 {
            let o = compute_out_size(p.padding, inp[a], filter[a], stride[a], dilation[a])
                .map_err(|e| op_error(op, e.message))?;
            g.out[a] = o;
            g.pad[a] = compute_padding_with_offset(stride[a], dilation[a], inp[a], filter[a], o)
                .map_err(|e| op_error(op, e.message))?
                .0;
        }
        Ok(g)
    }

    fn in_len(&self) -> Option<usize> {
        [self.batches, self.inp[0], self.inp[1], self.inp[2], self.in_c]
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    fn out_len(&self) -> Option<usize> {
        [self.batches, self.out[0], self.out[1], self.out[2], self.out_c]
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    /// The input position of output `o` and filter tap `k` along axis `a`, if inside.
    fn at(&self, a: usize, o: usize, k: usize) -> Option<usize> {
        let p = (o * self.stride[a] + k * self.dilation[a]).checked_sub(self.pad[a])?;
        (p < self.inp[a]).then_some(p)
    }

    fn check(&self, x: usize, w: usize, b: Option<usize>, y: usize) -> Result<()> {
        let wl = checked_product("", &[self.filter[0], self.filter[1], self.filter[2], self.in_c, self.out_c]).ok();
        if Some(x) != self.in_len() || Some(w) != wl || Some(y) != self.out_len() || b.is_some_and(|b| b != self.out_c)
        {
            crate::bail!("buffer sizes do not match the geometry {self:?}");
        }
        // Positions are computed as `o * stride + k * dilation`; keep them far from overflow.
        let reach = |a: usize| {
            self.out[a]
                .checked_mul(self.stride[a])
                .and_then(|v| v.checked_add(self.filter[a].checked_mul(self.dilation[a])?))
        };
        if (0..3).any(|a| reach(a).is_none()) {
            crate::bail!("window positions overflow");
        }
        Ok(())
    }
}

/// `reference_ops::Conv3D`: `x` is `[batch, inp, in_c]`, `w` `[filter, in_c, out_c]`,
/// `y` `[batch, out, out_c]`.
pub fn conv3d(g: &Geom3d, x: &[f32], w: &[f32], bias: Option<&[f32]>, act: (f32, f32), y: &mut [f32]) -> Result<()> {
    g.check(x.len(), w.len(), bias.map(<[f32]>::len), y.len())?;
    let [id, ih, iw] = g.inp;
    let [fd, fh, fw] = g.filter;
    let (ic, oc) = (g.in_c, g.out_c);
    let mut o = 0;
    for b in 0..g.batches {
        for od in 0..g.out[0] {
            for oy in 0..g.out[1] {
                for ox in 0..g.out[2] {
                    for c in 0..oc {
                        let mut total = 0f32;
                        for kd in 0..fd {
                            let Some(d) = g.at(0, od, kd) else { continue };
                            for ky in 0..fh {
                                let Some(yy) = g.at(1, oy, ky) else { continue };
                                for kx in 0..fw {
                                    let Some(xx) = g.at(2, ox, kx) else { continue };
                                    let xi = (((b * id + d) * ih + yy) * iw + xx) * ic;
                                    let wi = ((kd * fh + ky) * fw + kx) * ic * oc + c;
                                    for i in 0..ic {
                                        total += x[xi + i] * w[wi + i * oc];
                                    }
                                }
                            }
                        }
                        let bv = bias.map_or(0.0, |b| b[c]);
                        y[o] = clamp_min_max(total + bv, act.0, act.1);
                        o += 1;
                    }
                }
            }
        }
    }
    Ok(())
}

/// `reference_ops::Conv3DTranspose`: `x` is `[batch, out, out_c]` of the convolution `g`
/// (the transposed op's input, `g.out_c` its channels), `w` `[filter, in_c, out_c]`
/// (the transposed op's `[filter, out channels, in channels]`), `y` `[batch, inp, in_c]`.
pub fn conv3d_transpose(
    g: &Geom3d,
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    act: (f32, f32),
    y: &mut [f32],
) -> Result<()> {
    // The transposed op's channels: `g.out_c` in, `g.in_c` out.
    g.check(y.len(), w.len(), None, x.len())?;
    if bias.is_some_and(|b| b.len() != g.in_c) {
        crate::bail!("bias does not have {} values", g.in_c);
    }
    let [id, ih, iw] = g.inp;
    let [fd, fh, fw] = g.filter;
    let (yc, xc) = (g.in_c, g.out_c);
    y.fill(0.0);
    let mut xi = 0;
    for b in 0..g.batches {
        for od in 0..g.out[0] {
            for oy in 0..g.out[1] {
                for ox in 0..g.out[2] {
                    for ci in 0..xc {
                        let v = x[xi];
                        xi += 1;
                        for kd in 0..fd {
                            for ky in 0..fh {
                                for kx in 0..fw {
                                    let (Some(d), Some(yy), Some(xx)) =
                                        (g.at(0, od, kd), g.at(1, oy, ky), g.at(2, ox, kx))
                                    else {
                                        continue;
                                    };
                                    let yo = (((b * id + d) * ih + yy) * iw + xx) * yc;
                                    let wi = ((kd * fh + ky) * fw + kx) * yc * xc + ci;
                                    for c in 0..yc {
                                        y[yo + c] += v * w[wi + c * xc];
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    match bias {
        Some(bias) if yc > 0 => {
            for row in y.chunks_exact_mut(yc) {
                for (v, &bv) in row.iter_mut().zip(bias) {
                    *v = clamp_min_max(*v + bv, act.0, act.1);
                }
            }
        }
        _ => {
            for v in y.iter_mut() {
                *v = clamp_min_max(*v, act.0, act.1);
            }
        }
    }
    Ok(())
}

fn dims5(op: &str, what: &str, t: &TensorView<'_>) -> Result<[usize; 5]> {
    if t.shape.len() != 5 {
        return Err(op_error(op, format!("{what} shape {:?} must have rank 5", t.shape)));
    }
    let mut d = [0; 5];
    for (i, v) in d.iter_mut().enumerate() {
        *v = dim(op, what, t.shape, i)?;
    }
    Ok(d)
}

fn float_operand(op: &str, what: &str, t: &TensorView<'_>) -> Result<()> {
    if t.dtype != TfLiteType::kTfLiteFloat32 {
        return Err(op_error(op, format!("{what} type {} is not supported (float32 only)", t.dtype.name())));
    }
    Ok(())
}

/// An optional input (index `i`, absent when missing or -1).
fn optional_input<'a>(ctx: &OpCtx<'a>, op: &str, i: usize) -> Result<Option<TensorView<'a>>> {
    if ctx.num_inputs() <= i || ctx.input_indices().get(i).is_some_and(|&t| t < 0) {
        return Ok(None);
    }
    ctx.input(i).map(Some).map_err(|e| op_error(op, e.message))
}

fn check_padding(op: &str, p: &TfLiteConv3DParams) -> Result<()> {
    if !matches!(p.padding, TfLitePadding::kTfLitePaddingSame | TfLitePadding::kTfLitePaddingValid) {
        return Err(op_error(op, "padding must be SAME or VALID"));
    }
    Ok(())
}

struct Conv3d;

impl BuiltinKernel for Conv3d {
    const NAME: &'static str = OP;
    type Params = TfLiteConv3DParams;
    type State = Geom3d;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteConv3DParams) -> Result<Geom3d> {
        check_arity(ctx, OP, 2, 3, 1)?;
        check_padding(OP, p)?;
        let input = ctx.input(0).map_err(|e| op_error(OP, e.message))?;
        let filter = ctx.input(1).map_err(|e| op_error(OP, e.message))?;
        let out = ctx.output(0).map_err(|e| op_error(OP, e.message))?;
        let x = dims5(OP, "input", &input)?;
        let f = dims5(OP, "filter", &filter)?;
        if x[4] != f[3] {
            return Err(op_error(OP, format!("input has {} channels, the filter {}", x[4], f[3])));
        }
        float_operand(OP, "input", &input)?;
        float_operand(OP, "filter", &filter)?;
        float_operand(OP, "output", &out)?;
        if let Some(b) = optional_input(ctx, OP, 2)? {
            float_operand(OP, "bias", &b)?;
            if b.num_elements() != f[4] {
                return Err(op_error(OP, format!("bias has {} values for {} output channels", b.num_elements(), f[4])));
            }
        }
        let mut g = Geom3d::windows(OP, p, [x[1], x[2], x[3]], [f[0], f[1], f[2]])?;
        g.batches = x[0];
        g.in_c = x[4];
        g.out_c = f[4];
        let shape = [x[0], g.out[0], g.out[1], g.out[2], f[4]];
        checked_product(OP, &shape)?;
        let shape: Vec<i32> = shape.iter().map(|&v| to_dim(OP, v)).collect::<Result<_>>()?;
        ctx.resize_output(0, &shape).map_err(|e| op_error(OP, e.message))?;
        Ok(g)
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteConv3DParams, g: &mut Geom3d) -> Result<()> {
        let x = ctx.input(0).map_err(|e| op_error(OP, e.message))?.data::<f32>()?;
        let w = ctx.input(1).map_err(|e| op_error(OP, e.message))?.data::<f32>()?;
        let b = match optional_input(ctx, OP, 2)? {
            Some(t) => Some(t.data::<f32>()?),
            None => None,
        };
        let mut out = ctx.output(0).map_err(|e| op_error(OP, e.message))?;
        conv3d(g, x, w, b, activation_range_f32(p.activation), out.data_mut::<f32>()?)
            .map_err(|e| op_error(OP, e.message))
    }
}

struct Conv3dTranspose;

/// The transposed op's geometry from its `output_shape` values (checked against the input).
fn transpose_geom(p: &TfLiteConv3DParams, shape: &[i64], f: [usize; 5], x: [usize; 5]) -> Result<Geom3d> {
    let bad = || op_error(OP_T, format!("output_shape {shape:?} is not a valid 5-D shape"));
    if shape.len() != 5 || shape.iter().any(|&v| !(0..=i64::from(i32::MAX)).contains(&v)) {
        return Err(bad());
    }
    let s: Vec<usize> = shape.iter().map(|&v| v as usize).collect();
    if s[0] != x[0] {
        return Err(op_error(OP_T, format!("output batch {} differs from the input's {}", s[0], x[0])));
    }
    if s[4] != f[3] {
        return Err(op_error(OP_T, format!("output has {} channels, the filter {}", s[4], f[3])));
    }
    let mut g = Geom3d::windows(OP_T, p, [s[1], s[2], s[3]], [f[0], f[1], f[2]])?;
    if g.out != [x[1], x[2], x[3]] {
        return Err(op_error(
            OP_T,
            format!("output_shape {shape:?} gives input size {:?}, the input has {:?}", g.out, &x[1..4]),
        ));
    }
    g.batches = x[0];
    g.in_c = s[4];
    g.out_c = x[4];
    checked_product(OP_T, &s)?;
    Ok(g)
}

/// What Prepare keeps for a CONV_3D_TRANSPOSE node.
struct TransposeState {
    /// The geometry when `output_shape` is constant.
    geom: Option<Geom3d>,
}

impl BuiltinKernel for Conv3dTranspose {
    const NAME: &'static str = OP_T;
    type Params = TfLiteConv3DParams;
    type State = TransposeState;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteConv3DParams) -> Result<TransposeState> {
        check_arity(ctx, OP_T, 3, 4, 1)?;
        check_padding(OP_T, p)?;
        let shape = ctx.input(0).map_err(|e| op_error(OP_T, e.message))?;
        let filter = ctx.input(1).map_err(|e| op_error(OP_T, e.message))?;
        let input = ctx.input(2).map_err(|e| op_error(OP_T, e.message))?;
        let out = ctx.output(0).map_err(|e| op_error(OP_T, e.message))?;
        if shape.shape.len() != 1 || shape.num_elements() != 5 || shape.dtype != TfLiteType::kTfLiteInt32 {
            return Err(op_error(OP_T, "output_shape must be 5 int32 values"));
        }
        let x = dims5(OP_T, "input", &input)?;
        let f = dims5(OP_T, "filter", &filter)?;
        if x[4] != f[4] {
            return Err(op_error(OP_T, format!("input has {} channels, the filter {}", x[4], f[4])));
        }
        float_operand(OP_T, "input", &input)?;
        float_operand(OP_T, "filter", &filter)?;
        float_operand(OP_T, "output", &out)?;
        if let Some(b) = optional_input(ctx, OP_T, 3)? {
            float_operand(OP_T, "bias", &b)?;
            if b.num_elements() != f[3] {
                return Err(op_error(
                    OP_T,
                    format!("bias has {} values for {} output channels", b.num_elements(), f[3]),
                ));
            }
        }
        if !known_at_prepare(&shape) {
            plan_declared_output(ctx, OP_T, 0)?;
            return Ok(TransposeState { geom: None });
        }
        let values = int_values(&shape, false).map_err(|e| op_error(OP_T, e.message))?;
        let g = transpose_geom(p, &values, f, x)?;
        let dims: Vec<i32> = values.iter().map(|&v| v as i32).collect();
        ctx.resize_output(0, &dims).map_err(|e| op_error(OP_T, e.message))?;
        Ok(TransposeState { geom: Some(g) })
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteConv3DParams, state: &mut TransposeState) -> Result<()> {
        let input = ctx.input(2).map_err(|e| op_error(OP_T, e.message))?;
        let filter = ctx.input(1).map_err(|e| op_error(OP_T, e.message))?;
        let g = match state.geom {
            Some(g) => g,
            None => {
                let shape = ctx.input(0).map_err(|e| op_error(OP_T, e.message))?;
                let values = int_values(&shape, false).map_err(|e| op_error(OP_T, e.message))?;
                let g = transpose_geom(p, &values, dims5(OP_T, "filter", &filter)?, dims5(OP_T, "input", &input)?)?;
                let dims: Vec<i32> = values.iter().map(|&v| v as i32).collect();
                settle_output_shape(ctx, OP_T, 0, "output_shape values", &dims)?;
                g
            }
        };
        let b = match optional_input(ctx, OP_T, 3)? {
            Some(t) => Some(t.data::<f32>()?),
            None => None,
        };
        let mut out = ctx.output(0).map_err(|e| op_error(OP_T, e.message))?;
        conv3d_transpose(
            &g,
            input.data::<f32>()?,
            filter.data::<f32>()?,
            b,
            activation_range_f32(p.activation),
            out.data_mut::<f32>()?,
        )
        .map_err(|e| op_error(OP_T, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::builtin_op_data::TfLiteFusedActivation;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    fn params(padding: TfLitePadding, s: i32) -> TfLiteConv3DParams {
        TfLiteConv3DParams {
            padding,
            stride_width: s,
            stride_height: s,
            stride_depth: s,
            dilation_width_factor: 1,
            dilation_height_factor: 1,
            dilation_depth_factor: 1,
            activation: TfLiteFusedActivation::kTfLiteActNone,
        }
    }

    #[test]
    fn conv_sums_windows() {
        // A 2x2x2 all-ones filter over a 2x2x2 input, VALID: the sum, plus bias.
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[1, 2, 2, 2, 1], &[1f32, 2., 3., 4., 5., 6., 7., 8.], None, false);
        let w = g.tensor(kTfLiteFloat32, &[2, 2, 2, 1, 1], &[1f32; 8], None, true);
        let b = g.tensor(kTfLiteFloat32, &[1], &[0.5f32], None, true);
        let o = g.output(kTfLiteFloat32, None);
        let p = params(TfLitePadding::kTfLitePaddingValid, 1);
        assert_eq!(g.run(&registration(), &[x, w, b], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![1, 1, 1, 1, 1]);
        assert_eq!(g.data::<f32>(o), vec![36.5]);
        // SAME keeps the size; the corner window sees only x[0,0,0]... x[1,1,1].
        let o = g.output(kTfLiteFloat32, None);
        let p = params(TfLitePadding::kTfLitePaddingSame, 1);
        assert_eq!(g.run(&registration(), &[x, w], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![1, 2, 2, 2, 1]);
        assert_eq!(g.data::<f32>(o)[0], 36.0);
        assert_eq!(g.data::<f32>(o)[7], 8.0);
        // Channel mismatch.
        let w2 = g.tensor(kTfLiteFloat32, &[1, 1, 1, 2, 1], &[1f32; 2], None, true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&registration(), &[x, w2], &[o], Some(p)), TfLiteStatus::kTfLiteError);
    }

    #[test]
    fn transpose_scatters() {
        // Stride 2, a 1x1x2 filter: each input value is written to two outputs.
        let mut g = Graph::new();
        let shape = g.tensor(kTfLiteInt32, &[5], &[1i32, 1, 1, 4, 1], None, true);
        let w = g.tensor(kTfLiteFloat32, &[1, 1, 2, 1, 1], &[1f32, 10.], None, true);
        let x = g.tensor(kTfLiteFloat32, &[1, 1, 1, 2, 1], &[1f32, 2.], None, false);
        let o = g.output(kTfLiteFloat32, None);
        let mut p = params(TfLitePadding::kTfLitePaddingValid, 1);
        p.stride_width = 2;
        assert_eq!(g.run(&transpose_registration(), &[shape, w, x], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<f32>(o), vec![1., 10., 2., 20.]);
        // An output shape that does not give back the input size.
        let bad = g.tensor(kTfLiteInt32, &[5], &[1i32, 1, 1, 7, 1], None, true);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&transpose_registration(), &[bad, w, x], &[o], Some(p)), TfLiteStatus::kTfLiteError);
        // Output shape known only at Invoke.
        let dyn_shape = g.tensor(kTfLiteInt32, &[5], &[1i32, 1, 1, 4, 1], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run(&transpose_registration(), &[dyn_shape, w, x], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![1, 1, 1, 4, 1]);
    }

    #[test]
    fn transpose_refuses_quantized() {
        use crate::kernels::test_util::qp;
        // TFLite 2.19 refuses every input type but float32.
        let mut g = Graph::new();
        let shape = g.tensor(kTfLiteInt32, &[5], &[1i32, 1, 1, 4, 1], None, true);
        let w = g.tensor(kTfLiteInt8, &[1, 1, 2, 1, 1], &[2i8, 40], Some(qp(0.25, 0)), true);
        let mut p = params(TfLitePadding::kTfLitePaddingValid, 1);
        p.stride_width = 2;
        let x = g.tensor(kTfLiteInt8, &[1, 1, 1, 2, 1], &[5i8, -3], Some(qp(0.5, 1)), false);
        let o = g.output(kTfLiteInt8, Some(qp(0.5, -2)));
        assert_eq!(g.run(&transpose_registration(), &[shape, w, x], &[o], Some(p)), TfLiteStatus::kTfLiteError);
        let x16 = g.tensor(kTfLiteInt16, &[1, 1, 1, 2, 1], &[4i16, -4], Some(qp(0.5, 0)), false);
        let o = g.output(kTfLiteInt16, Some(qp(0.5, 0)));
        assert_eq!(g.run(&transpose_registration(), &[shape, w, x16], &[o], Some(p)), TfLiteStatus::kTfLiteError);
    }
}
