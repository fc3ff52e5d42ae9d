//! RFFT2D (TFLite `kernels/rfft2d.cc`).
//!
//! The 2-D discrete Fourier transform of a real float32 input over its innermost two
//! dimensions, as `tf.signal.rfft2d`: every `[height, width]` slice is cropped or
//! zero-padded to `fft_length = [fft_height, fft_width]` (a 1-D int32 tensor of two
//! powers of two), transformed with the forward sign `exp(-2πi·(uk/H + vl/W))`, and the
//! non-redundant half of the spectrum is kept: the output is complex64
//! `[..., fft_height, fft_width / 2 + 1]`. As TFLite (which runs fft2d's `rdft2d`), the
//! arithmetic is in double and each value is rounded to float at the end; here it is a
//! radix-2 transform of each row followed by one of each kept column.
//!
//! A non-constant `fft_length` makes the output dynamic; its shape is set at Invoke.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    check_arity, in_op, int_values, known_at_prepare, op_error, plan_declared_output, settle_output_shape,
};

const OP: &str = "RFFT2D";

/// The RFFT2D registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Rfft2d>(TfLiteBuiltinOperator::kTfLiteBuiltinRfft2d)
}

/// Twiddle factors and bit-reversal order for a complex transform of length `n` (a power
/// of two).
#[derive(Debug, Clone, PartialEq)]
pub struct FftPlan {
    n: usize,
    /// `exp(-2πi k / n)` for `k` in `0..n/2`, as (cos, -sin).
    twiddles: Vec<[f64; 2]>,
    /// The bit-reversed index of each position.
    reversed: Vec<usize>,
}

impl FftPlan {
    /// The plan for length `n`, which must be a power of two (1 included).
    pub fn new(n: usize) -> Result<FftPlan> {
        if !n.is_power_of_two() {
            crate::bail!("FFT length {n} is not a power of two");
        }
        let bits = n.trailing_zeros();
        let twiddles = (0..n / 2)
            .map(|k| {
                let a = -2.0 * core::f64::consts::PI * k as f64 / n as f64;
                [a.cos(), a.sin()]
            })
            .collect();
        let reversed = (0..n).map(|i| if bits == 0 { 0 } else { i.reverse_bits() >> (usize::BITS - bits) }).collect();
        Ok(FftPlan { n, twiddles, reversed })
    }

    /// The forward transform of `x` (length `n`), in place.
    pub fn forward(&self, x: &mut [[f64; 2]]) {
        let n = self.n;
        debug_assert_eq!(x.len(), n);
        for (i, &j) in self.reversed.iter().enumerate() {
            if i < j {
                x.swap(i, j);
            }
        }
        let mut len = 2;
        while len <= n {
            let half = len / 2;
            let step = n / len;
            for start in (0..n).step_by(len) {
                for k in 0..half {
                    let [wr, wi] = self.twiddles[k * step];
                    let [br, bi] = x[start + k + half];
                    let t = [br * wr - bi * wi, br * wi + bi * wr];
                    let a = x[start + k];
                    x[start + k] = [a[0] + t[0], a[1] + t[1]];
                    x[start + k + half] = [a[0] - t[0], a[1] - t[1]];
                }
            }
            len *= 2;
        }
    }
}

/// The two plans and the working rows of one `[fft_height, fft_width]` transform.
#[derive(Debug)]
pub struct Rfft2dPlan {
    fft_h: usize,
    fft_w: usize,
    rows: FftPlan,
    cols: FftPlan,
    /// `fft_height` rows of the `fft_width / 2 + 1` kept row-transform bins.
    work: Vec<[f64; 2]>,
    row: Vec<[f64; 2]>,
    col: Vec<[f64; 2]>,
}

impl Rfft2dPlan {
    /// The plan for `fft_length = [fft_h, fft_w]` (powers of two).
    pub fn new(fft_h: usize, fft_w: usize) -> Result<Rfft2dPlan> {
        let out_w = fft_w / 2 + 1;
        let cells = fft_h.checked_mul(out_w).ok_or_else(|| crate::error::Error::new("FFT size overflows"))?;
        Ok(Rfft2dPlan {
            fft_h,
            fft_w,
            rows: FftPlan::new(fft_w)?,
            cols: FftPlan::new(fft_h)?,
            work: vec![[0.0; 2]; cells],
            row: vec![[0.0; 2]; fft_w],
            col: vec![[0.0; 2]; fft_h],
        })
    }

    /// Transforms one `[in_h, in_w]` slice into `out` (`fft_h * (fft_w / 2 + 1)` values).
    pub fn slice(&mut self, input: &[f32], in_h: usize, in_w: usize, out: &mut [[f32; 2]]) -> Result<()> {
        let (fft_h, fft_w) = (self.fft_h, self.fft_w);
        let out_w = fft_w / 2 + 1;
        if input.len() != in_h * in_w || out.len() != fft_h * out_w {
            crate::bail!(
                "slice holds {} values and the output {}, expected {} and {}",
                input.len(),
                out.len(),
                in_h * in_w,
                fft_h * out_w
            );
        }
        let (valid_h, valid_w) = (in_h.min(fft_h), in_w.min(fft_w));
        for i in 0..fft_h {
            let bins = &mut self.work[i * out_w..(i + 1) * out_w];
            if i >= valid_h {
                bins.fill([0.0; 2]);
                continue;
            }
            let src = &input[i * in_w..i * in_w + valid_w];
            for (r, &v) in self.row.iter_mut().zip(src) {
                *r = [f64::from(v), 0.0];
            }
            self.row[valid_w..].fill([0.0; 2]);
            self.rows.forward(&mut self.row);
            bins.copy_from_slice(&self.row[..out_w]);
        }
        for j in 0..out_w {
            for (i, c) in self.col.iter_mut().enumerate() {
                *c = self.work[i * out_w + j];
            }
            self.cols.forward(&mut self.col);
            for (i, c) in self.col.iter().enumerate() {
                out[i * out_w + j] = [c[0] as f32, c[1] as f32];
            }
        }
        Ok(())
    }
}

/// `fft_length` read and checked: two positive powers of two.
fn fft_lengths(fft_length: &TensorView<'_>) -> Result<(usize, usize)> {
    let v = int_values(fft_length, false).map_err(in_op(OP))?;
    let valid = |x: i64| x > 0 && (x as u64).is_power_of_two();
    if v.len() != 2 || !valid(v[0]) || !valid(v[1]) {
        return Err(op_error(OP, format!("fft_length {v:?} must be two positive powers of two")));
    }
    Ok((v[0] as usize, v[1] as usize))
}

/// The output shape: the input's with its last two dimensions the transform's.
fn output_shape(input: &[i32], fft_h: usize, fft_w: usize) -> Result<Vec<i32>> {
    let mut shape = input.to_vec();
    let r = shape.len();
    shape[r - 2] = fft_h as i32;
    shape[r - 1] = (fft_w / 2 + 1) as i32;
    let n = shape.iter().try_fold(8usize, |a, &d| a.checked_mul(d as usize));
    if n.is_none_or(|n| n > isize::MAX as usize) {
        return Err(op_error(OP, format!("output shape {shape:?} is too large")));
    }
    Ok(shape)
}

fn operands<'a>(ctx: &OpCtx<'a>) -> Result<(TensorView<'a>, TensorView<'a>)> {
    check_arity(ctx, OP, 2, 2, 1)?;
    let input = ctx.input(0).map_err(in_op(OP))?;
    let fft_length = ctx.input(1).map_err(in_op(OP))?;
    ctx.output(0).map_err(in_op(OP))?;
    if input.shape.len() < 2 || input.shape.iter().any(|&d| d < 0) {
        return Err(op_error(OP, format!("input shape {:?} must have rank at least 2", input.shape)));
    }
    if input.dtype != TfLiteType::kTfLiteFloat32 {
        return Err(op_error(OP, format!("input type {} is not supported", input.dtype.name())));
    }
    if fft_length.shape != [2] {
        return Err(op_error(OP, format!("fft_length must have shape [2], has {:?}", fft_length.shape)));
    }
    if fft_length.dtype != TfLiteType::kTfLiteInt32 {
        return Err(op_error(OP, format!("fft_length type {} is not supported", fft_length.dtype.name())));
    }
    Ok((input, fft_length))
}

/// RFFT2D; its State holds the transform's plan once the lengths are known.
struct Rfft2d;

/// What Prepare derives for an RFFT2D node.
struct Rfft2dState {
    /// Whether `fft_length` is a constant (then the output shape is fixed at Prepare).
    constant: bool,
    /// The plan, built at the first Invoke that has data to transform, and rebuilt
    /// when a non-constant `fft_length` changes.
    plan: Option<Rfft2dPlan>,
}

impl BuiltinKernel for Rfft2d {
    const NAME: &'static str = OP;
    type Params = ();
    type State = Rfft2dState;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Rfft2dState> {
        let (input, fft_length) = operands(ctx)?;
        ctx.set_output_type(0, TfLiteType::kTfLiteComplex64).map_err(in_op(OP))?;
        let constant = known_at_prepare(&fft_length);
        if constant {
            let (h, w) = fft_lengths(&fft_length)?;
            ctx.resize_output(0, &output_shape(input.shape, h, w)?).map_err(in_op(OP))?;
        } else {
            plan_declared_output(ctx, OP, 0)?;
        }
        Ok(Rfft2dState { constant, plan: None })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), state: &mut Rfft2dState) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?;
        let (fft_h, fft_w) = fft_lengths(&ctx.input(1).map_err(in_op(OP))?)?;
        let shape = output_shape(input.shape, fft_h, fft_w)?;
        if state.constant {
            let out = ctx.output(0).map_err(in_op(OP))?;
            if out.shape != shape.as_slice() {
                return Err(op_error(OP, format!("output shape {:?} differs from {shape:?}", out.shape)));
            }
        } else {
            settle_output_shape(ctx, OP, 0, "fft_length values", &shape)?;
        }
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        if out.dtype != TfLiteType::kTfLiteComplex64 {
            return Err(op_error(OP, format!("output type {} is not supported", out.dtype.name())));
        }
        let x = input.data::<f32>().map_err(in_op(OP))?;
        let y = out.data_mut::<[f32; 2]>().map_err(in_op(OP))?;
        if y.is_empty() {
            return Ok(());
        }
        let r = input.shape.len();
        let (in_h, in_w) = (input.shape[r - 2] as usize, input.shape[r - 1] as usize);
        if state.plan.as_ref().is_none_or(|p| (p.fft_h, p.fft_w) != (fft_h, fft_w)) {
            state.plan = Some(Rfft2dPlan::new(fft_h, fft_w).map_err(in_op(OP))?);
        }
        let Some(plan) = state.plan.as_mut() else { return Ok(()) };
        let in_slice = in_h * in_w;
        let out_slice = fft_h * (fft_w / 2 + 1);
        for (s, o) in y.chunks_exact_mut(out_slice).enumerate() {
            let src = if in_slice == 0 { &[][..] } else { &x[s * in_slice..(s + 1) * in_slice] };
            plan.slice(src, in_h, in_w, o).map_err(in_op(OP))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    /// The DFT by its definition, for comparison.
    fn naive(x: &[f32], h: usize, w: usize, fh: usize, fw: usize) -> Vec<[f64; 2]> {
        let mut out = Vec::new();
        for u in 0..fh {
            for v in 0..fw / 2 + 1 {
                let (mut re, mut im) = (0.0f64, 0.0f64);
                for i in 0..h.min(fh) {
                    for j in 0..w.min(fw) {
                        let a =
                            -2.0 * core::f64::consts::PI * ((u * i) as f64 / fh as f64 + (v * j) as f64 / fw as f64);
                        re += f64::from(x[i * w + j]) * a.cos();
                        im += f64::from(x[i * w + j]) * a.sin();
                    }
                }
                out.push([re, im]);
            }
        }
        out
    }

    #[test]
    fn matches_the_definition() {
        let x: Vec<f32> = (0..5 * 6).map(|i| ((i * 7) % 11) as f32 - 4.5).collect();
        for &(fh, fw) in &[(4, 8), (8, 4), (1, 1), (2, 1), (1, 2), (4, 4), (16, 2)] {
            let mut plan = Rfft2dPlan::new(fh, fw).unwrap();
            let mut out = vec![[0f32; 2]; fh * (fw / 2 + 1)];
            plan.slice(&x, 5, 6, &mut out).unwrap();
            for (a, b) in out.iter().zip(naive(&x, 5, 6, fh, fw)) {
                assert!(
                    (f64::from(a[0]) - b[0]).abs() < 1e-4 && (f64::from(a[1]) - b[1]).abs() < 1e-4,
                    "{fh}x{fw}: {a:?} {b:?}"
                );
            }
        }
    }

    #[test]
    fn rfft2d_test_cc_values() {
        // rfft2d_test.cc FftLengthMatchesInputSize: a 4x4 input, fft_length [4, 4].
        let x = [1f32, 2., 3., 4., 3., 8., 6., 3., 5., 2., 7., 6., 9., 5., 8., 3.];
        let mut plan = Rfft2dPlan::new(4, 4).unwrap();
        let mut out = vec![[0f32; 2]; 12];
        plan.slice(&x, 4, 4, &mut out).unwrap();
        let want = [
            [75., 0.],
            [-6., -1.],
            [9., 0.],
            [-10., 5.],
            [-3., 2.],
            [-6., 11.],
            [-15., 0.],
            [-2., 13.],
            [-5., 0.],
            [-10., -5.],
            [3., -6.],
            [-6., -11.],
        ];
        for (a, b) in out.iter().zip(want) {
            assert!((a[0] - b[0]).abs() < 1e-4 && (a[1] - b[1]).abs() < 1e-4, "{a:?} {b:?}");
        }
        assert!(FftPlan::new(6).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[2, 1, 2, 2], &[1f32, 2., 3., 4., 0., 0., 0., 1.], None, false);
        let len = g.tensor(kTfLiteInt32, &[2], &[2i32, 4], None, true);
        let o = g.output(kTfLiteComplex64, None);
        assert_eq!(g.run::<()>(&registration(), &[x, len], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 1, 2, 3]);
        let y = g.data::<[f32; 2]>(o);
        assert_eq!(y[0], [10., 0.]);
        assert_eq!(y[6], [1., 0.]);
        // fft_length known only at Invoke.
        let dyn_len = g.tensor(kTfLiteInt32, &[2], &[1i32, 1], None, false);
        let o2 = g.output(kTfLiteComplex64, None);
        assert_eq!(g.run::<()>(&registration(), &[x, dyn_len], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o2), vec![2, 1, 1, 1]);
        assert_eq!(g.data::<[f32; 2]>(o2), vec![[1., 0.], [0., 0.]]);
        // Not a power of two; a rank-1 input.
        let bad = g.tensor(kTfLiteInt32, &[2], &[3i32, 4], None, true);
        let o3 = g.output(kTfLiteComplex64, None);
        assert_eq!(g.run::<()>(&registration(), &[x, bad], &[o3], None), TfLiteStatus::kTfLiteError);
        let v = g.tensor(kTfLiteFloat32, &[4], &[1f32, 2., 3., 4.], None, false);
        let o4 = g.output(kTfLiteComplex64, None);
        assert_eq!(g.run::<()>(&registration(), &[v, len], &[o4], None), TfLiteStatus::kTfLiteError);
        // An empty batch.
        let e = g.tensor(kTfLiteFloat32, &[0, 3, 3], &[] as &[f32], None, false);
        let o5 = g.output(kTfLiteComplex64, None);
        assert_eq!(g.run::<()>(&registration(), &[e, len], &[o5], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o5), vec![0, 2, 3]);
    }
}
