//! RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL (TFLite `kernels/random_ops.cc`):
//! numbers from TensorFlow's Philox4x32-10 generator, bit for bit.
//!
//! Each node owns a generator, seeded at Prepare from the options' `seed` and `seed2`
//! (both sign-extended to 64 bits: the key is `seed`, the high counter words `seed2`); it
//! advances across invokes, so a second Invoke gives the next numbers, and a new Prepare
//! starts the sequence again. With both seeds 0 TFLite seeds from the system's entropy, and
//! so does this kernel (the numbers then differ from run to run).
//!
//! RANDOM_UNIFORM: floats in [0, 1) from the low 23 bits of each 32-bit draw.
//! RANDOM_STANDARD_NORMAL: Box-Muller on pairs of draws. Both take an int32 shape vector.
//! MULTINOMIAL: `num_samples` class indices per row of `logits` (float32 `[batch,
//! classes]`), int32 or int64, drawn by inverting the cumulative softmax in double with one
//! 52-bit double per sample from a copy of the generator; the node's generator then skips
//! past a generous block of draws, as TFLite's does.

use crate::abi::builtin_op_data::TfLiteRandomParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{
    int_values, known_at_prepare, op_error, plan_declared_output, scalar_int, settle_output_shape,
};

/// The RANDOM_UNIFORM registration.
pub fn uniform_registration() -> TfLiteRegistration {
    kernel::registration::<RandomUniform>(TfLiteBuiltinOperator::kTfLiteBuiltinRandomUniform)
}

/// The RANDOM_STANDARD_NORMAL registration.
pub fn standard_normal_registration() -> TfLiteRegistration {
    kernel::registration::<RandomStandardNormal>(TfLiteBuiltinOperator::kTfLiteBuiltinRandomStandardNormal)
}

/// The MULTINOMIAL registration.
pub fn multinomial_registration() -> TfLiteRegistration {
    kernel::registration::<Multinomial>(TfLiteBuiltinOperator::kTfLiteBuiltinMultinomial)
}

// ---------------------------------------------------------------------------------------
// The generator (TensorFlow's `PhiloxRandom`)
// ---------------------------------------------------------------------------------------

const W32A: u32 = 0x9E37_79B9;
const W32B: u32 = 0xBB67_AE85;
const M4X32A: u32 = 0xD251_1F53;
const M4X32B: u32 = 0xCD9E_8D57;

/// Philox4x32 with 10 rounds: each call gives four 32-bit numbers and steps the 128-bit
/// counter by one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Philox {
    counter: [u32; 4],
    key: [u32; 2],
}

impl Philox {
    /// The generator TensorFlow builds from `(seed_lo, seed_hi)`.
    pub fn new(seed_lo: u64, seed_hi: u64) -> Philox {
        Philox {
            counter: [0, 0, seed_hi as u32, (seed_hi >> 32) as u32],
            key: [seed_lo as u32, (seed_lo >> 32) as u32],
        }
    }

    fn round(c: [u32; 4], k: [u32; 2]) -> [u32; 4] {
        let p0 = u64::from(M4X32A) * u64::from(c[0]);
        let p1 = u64::from(M4X32B) * u64::from(c[2]);
        let (lo0, hi0) = (p0 as u32, (p0 >> 32) as u32);
        let (lo1, hi1) = (p1 as u32, (p1 >> 32) as u32);
        [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0]
    }

    /// The next four numbers.
    pub fn next_block(&mut self) -> [u32; 4] {
        let mut c = self.counter;
        let mut k = self.key;
        for i in 0..10 {
            c = Philox::round(c, k);
            if i < 9 {
                k[0] = k[0].wrapping_add(W32A);
                k[1] = k[1].wrapping_add(W32B);
            }
        }
        self.skip(1);
        c
    }

    /// Skips `count` blocks of four numbers.
    pub fn skip(&mut self, count: u64) {
        let lo = count as u32;
        let mut hi = (count >> 32) as u32;
        self.counter[0] = self.counter[0].wrapping_add(lo);
        if self.counter[0] < lo {
            hi = hi.wrapping_add(1);
        }
        self.counter[1] = self.counter[1].wrapping_add(hi);
        if self.counter[1] < hi {
            self.counter[2] = self.counter[2].wrapping_add(1);
            if self.counter[2] == 0 {
                self.counter[3] = self.counter[3].wrapping_add(1);
            }
        }
    }
}

/// A float in [0, 1) from the low 23 bits of `x` (`Uint32ToFloat`).
pub fn uint32_to_float(x: u32) -> f32 {
    f32::from_bits((127u32 << 23) | (x & 0x7f_ffff)) - 1.0
}

/// A double in [0, 1) from the low 20 bits of `x0` and all of `x1` (`Uint64ToDouble`).
pub fn uint64_to_double(x0: u32, x1: u32) -> f64 {
    let man = (u64::from(x0 & 0xf_ffff) << 32) | u64::from(x1);
    f64::from_bits((1023u64 << 52) | man) - 1.0
}

/// Two standard normal floats from two draws (`BoxMullerFloat`).
pub fn box_muller(x0: u32, x1: u32) -> (f32, f32) {
    let u1 = uint32_to_float(x0).max(1.0e-7);
    // `2.0 * M_PI` is a double, so the angle is formed in double and rounded to float.
    let v1 = (2.0 * core::f64::consts::PI * f64::from(uint32_to_float(x1))) as f32;
    let u2 = (-2.0 * f64::from(u1).ln()).sqrt() as f32;
    let (s, c) = v1.sin_cos();
    (s * u2, c * u2)
}

/// Fills `out` with uniform floats.
pub fn fill_uniform(rng: &mut Philox, out: &mut [f32]) {
    for chunk in out.chunks_mut(4) {
        let block = rng.next_block();
        for (o, &x) in chunk.iter_mut().zip(&block) {
            *o = uint32_to_float(x);
        }
    }
}

/// Fills `out` with standard normal floats. An odd length drops the last number of the
/// final pair (TFLite writes it one past the end of its buffer).
pub fn fill_standard_normal(rng: &mut Philox, out: &mut [f32]) {
    for chunk in out.chunks_mut(4) {
        let block = rng.next_block();
        for (pair, xs) in chunk.chunks_mut(2).zip(block.chunks_exact(2)) {
            let (a, b) = box_muller(xs[0], xs[1]);
            pair[0] = a;
            if let Some(p) = pair.get_mut(1) {
                *p = b;
            }
        }
    }
}

/// Draws `num_samples` class indices per row of `logits` (`rows` rows of `classes`) into
/// `out` (`rows * num_samples`), as TFLite's `GenerateMultinomialNumbers`.
pub fn multinomial<T: TryFrom<usize> + Copy + Default>(
    rng: &mut Philox,
    logits: &[f32],
    rows: usize,
    classes: usize,
    num_samples: usize,
    out: &mut [T],
) {
    let mut local = *rng;
    let per_row = (num_samples as u64).wrapping_add(3) / 4 * 4;
    rng.skip((rows as u64).wrapping_mul(per_row).wrapping_mul(2).wrapping_mul(256));
    let mut block = [0u32; 4];
    let mut used = 4;
    let mut cdf = vec![0f64; classes];
    for r in 0..rows {
        let row = &logits[r * classes..(r + 1) * classes];
        let max = row.iter().filter(|v| v.is_finite()).fold(f32::MIN, |m, &v| if v > m { v } else { m });
        let max = f64::from(max);
        let mut total = 0.0f64;
        for (c, &v) in cdf.iter_mut().zip(row) {
            if v.is_finite() {
                total += (f64::from(v) - max).exp();
            }
            *c = total;
        }
        for o in &mut out[r * num_samples..(r + 1) * num_samples] {
            if used == 4 {
                block = local.next_block();
                used = 0;
            }
            let to_find = uint64_to_double(block[used], block[used + 1]) * total;
            used += 2;
            // std::upper_bound: the first entry greater than `to_find`.
            let k = cdf.partition_point(|&c| c <= to_find);
            *o = T::try_from(k).unwrap_or_default();
        }
    }
}

/// A fresh seed pair from the system's entropy (for seed = seed2 = 0).
fn entropy_seeds() -> (u64, u64) {
    use std::hash::{BuildHasher, Hasher};
    let draw = || {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64),
        );
        h.finish()
    };
    (draw(), draw())
}

/// The node's generator, seeded from its options.
fn seeded(p: &TfLiteRandomParams) -> Philox {
    let (seed, seed2) = (i64::from(p.seed), i64::from(p.seed2));
    if seed == 0 && seed2 == 0 {
        let (a, b) = entropy_seeds();
        return Philox::new(a, b);
    }
    Philox::new(seed as u64, seed2 as u64)
}

// ---------------------------------------------------------------------------------------
// The kernels
// ---------------------------------------------------------------------------------------

const UNIFORM: &str = "RANDOM_UNIFORM";
const NORMAL: &str = "RANDOM_STANDARD_NORMAL";
const MULTINOMIAL: &str = "MULTINOMIAL";

struct RandomUniform;
struct RandomStandardNormal;
struct Multinomial;

impl BuiltinKernel for RandomUniform {
    const NAME: &'static str = UNIFORM;
    type Params = TfLiteRandomParams;
    type State = Philox;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteRandomParams) -> Result<Philox> {
        prepare_shaped(ctx, UNIFORM, p)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteRandomParams, rng: &mut Philox) -> Result<()> {
        eval_shaped(ctx, UNIFORM, rng, fill_uniform)
    }
}

impl BuiltinKernel for RandomStandardNormal {
    const NAME: &'static str = NORMAL;
    type Params = TfLiteRandomParams;
    type State = Philox;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteRandomParams) -> Result<Philox> {
        prepare_shaped(ctx, NORMAL, p)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteRandomParams, rng: &mut Philox) -> Result<()> {
        eval_shaped(ctx, NORMAL, rng, fill_standard_normal)
    }
}

/// The output shape an int32 shape vector gives (negative sizes are an error).
fn shape_from(ctx: &OpCtx<'_>, op: &str) -> Result<Vec<i32>> {
    let shape = ctx.input(0).map_err(|e| op_error(op, e.message))?;
    let dims = int_values(&shape, false).map_err(|e| op_error(op, e.message))?;
    let dims: Vec<i32> = dims
        .iter()
        .map(|&d| i32::try_from(d).ok().filter(|&d| d >= 0))
        .collect::<Option<_>>()
        .ok_or_else(|| op_error(op, format!("invalid output shape {dims:?}")))?;
    crate::kernels::shape_util::element_count(&dims).map_err(|e| op_error(op, e.message))?;
    Ok(dims)
}

fn prepare_shaped(ctx: &OpCtx<'_>, op: &str, p: &TfLiteRandomParams) -> Result<Philox> {
    if ctx.num_inputs() != 1 || ctx.num_outputs() != 1 {
        return Err(op_error(op, "expects 1 input and 1 output"));
    }
    let shape = ctx.input(0).map_err(|e| op_error(op, e.message))?;
    if shape.dtype != TfLiteType::kTfLiteInt32 || shape.shape.len() != 1 {
        return Err(op_error(op, "the shape must be an int32 vector"));
    }
    let rng = seeded(p);
    if known_at_prepare(&shape) {
        let dims = shape_from(ctx, op)?;
        ctx.resize_output(0, &dims).map_err(|e| op_error(op, e.message))?;
    } else {
        plan_declared_output(ctx, op, 0)?;
    }
    Ok(rng)
}

fn eval_shaped(ctx: &OpCtx<'_>, op: &str, rng: &mut Philox, fill: fn(&mut Philox, &mut [f32])) -> Result<()> {
    if ctx.output(0).map_err(|e| op_error(op, e.message))?.is_dynamic() {
        let dims = shape_from(ctx, op)?;
        settle_output_shape(ctx, op, 0, "shape values", &dims)?;
    }
    let mut out = ctx.output(0).map_err(|e| op_error(op, e.message))?;
    if out.dtype != TfLiteType::kTfLiteFloat32 {
        return Err(op_error(op, format!("unsupported output type {}", out.dtype.name())));
    }
    fill(rng, out.data_mut::<f32>().map_err(|e| op_error(op, e.message))?);
    Ok(())
}

impl BuiltinKernel for Multinomial {
    const NAME: &'static str = MULTINOMIAL;
    type Params = TfLiteRandomParams;
    type State = Philox;

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteRandomParams) -> Result<Philox> {
        let err = |e: Error| op_error(MULTINOMIAL, e.message);
        if ctx.num_inputs() != 2 || ctx.num_outputs() != 1 {
            return Err(op_error(MULTINOMIAL, "expects 2 inputs and 1 output"));
        }
        let logits = ctx.input(0).map_err(err)?;
        let n = ctx.input(1).map_err(err)?;
        if logits.dtype != TfLiteType::kTfLiteFloat32 {
            return Err(op_error(MULTINOMIAL, "the logits must be float32"));
        }
        if n.dtype != TfLiteType::kTfLiteInt32 {
            return Err(op_error(MULTINOMIAL, "num_samples must be int32"));
        }
        let rng = seeded(p);
        if known_at_prepare(&logits) && known_at_prepare(&n) {
            let shape = multinomial_shape(ctx)?;
            ctx.resize_output(0, &shape).map_err(err)?;
        } else {
            plan_declared_output(ctx, MULTINOMIAL, 0)?;
        }
        Ok(rng)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &TfLiteRandomParams, rng: &mut Philox) -> Result<()> {
        let err = |e: Error| op_error(MULTINOMIAL, e.message);
        let shape = multinomial_shape(ctx)?;
        let logits = ctx.input(0).map_err(err)?;
        let (rows, classes, n) = (shape[0] as usize, logits.shape[1] as usize, shape[1] as usize);
        settle_output_shape(ctx, MULTINOMIAL, 0, "logits and num_samples", &shape)?;
        let logits = logits.data::<f32>().map_err(err)?;
        let mut out = ctx.output(0).map_err(err)?;
        match out.dtype {
            TfLiteType::kTfLiteInt64 => {
                multinomial::<i64>(rng, logits, rows, classes, n, out.data_mut::<i64>().map_err(err)?)
            }
            TfLiteType::kTfLiteInt32 => {
                multinomial::<i32>(rng, logits, rows, classes, n, out.data_mut::<i32>().map_err(err)?)
            }
            other => return Err(op_error(MULTINOMIAL, format!("unsupported output type {}", other.name()))),
        }
        Ok(())
    }
}

/// `[batch, num_samples]`, checking the logits are a non-empty matrix and `num_samples` a
/// non-negative scalar.
fn multinomial_shape(ctx: &OpCtx<'_>) -> Result<[i32; 2]> {
    let err = |e: Error| op_error(MULTINOMIAL, e.message);
    let logits = ctx.input(0).map_err(err)?;
    if logits.shape.len() != 2 || logits.shape[1] <= 0 {
        return Err(op_error(MULTINOMIAL, format!("the logits must be [batch, classes > 0], not {:?}", logits.shape)));
    }
    let n = ctx.input(1).map_err(err)?;
    if !n.shape.is_empty() {
        return Err(op_error(MULTINOMIAL, "num_samples must be a scalar"));
    }
    let samples = scalar_int(&n).map_err(err)?;
    let samples = i32::try_from(samples)
        .ok()
        .filter(|&s| s >= 0)
        .ok_or_else(|| op_error(MULTINOMIAL, format!("num_samples must be non-negative, not {samples}")))?;
    let shape = [logits.shape[0], samples];
    crate::kernels::shape_util::element_count(&shape).map_err(err)?;
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn philox_known_answer() {
        // The Philox4x32-10 known-answer vectors of Salmon et al. (Random123): counter
        // and key all zero, and all ones.
        let mut g = Philox::new(0, 0);
        assert_eq!(g.next_block(), [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
        let mut g = Philox { counter: [u32::MAX; 4], key: [u32::MAX; 2] };
        assert_eq!(g.next_block(), [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]);
    }

    #[test]
    fn skip_carries_into_the_high_words() {
        let mut g = Philox { counter: [u32::MAX, u32::MAX, u32::MAX, 0], key: [0, 0] };
        g.skip(1);
        assert_eq!(g.counter, [0, 0, 0, 1]);
        let mut g = Philox::new(0, 0);
        g.skip(3 << 32 | 5);
        assert_eq!(g.counter, [5, 3, 0, 0]);
    }

    #[test]
    fn conversions() {
        assert_eq!(uint32_to_float(0), 0.0);
        assert_eq!(uint32_to_float(0xff80_0000), 0.0);
        assert_eq!(uint32_to_float(0x7f_ffff), 1.0 - f32::EPSILON);
        assert_eq!(uint64_to_double(0, 0), 0.0);
        assert_eq!(uint64_to_double(0x8_0000, 0), 0.5);
        let (a, b) = box_muller(0, 0);
        // u1 clamps to 1e-7; the angle is 0.
        assert_eq!(a, 0.0);
        assert!((b - (-2.0 * f64::from(1.0e-7f32).ln()).sqrt() as f32).abs() < 1e-5);
    }

    #[test]
    fn the_generator_carries_on_across_calls() {
        let mut g = Philox::new(7, 9);
        let mut a = [0.0f32; 6];
        fill_uniform(&mut g, &mut a);
        // Six numbers take two blocks: the next call starts at the third.
        let mut h = Philox::new(7, 9);
        h.skip(2);
        let mut b = [0.0f32; 4];
        fill_uniform(&mut g, &mut b);
        let mut c = [0.0f32; 4];
        fill_uniform(&mut h, &mut c);
        assert_eq!(b, c);
        assert!(a.iter().all(|v| (0.0..1.0).contains(v)));
    }

    #[test]
    fn normal_odd_lengths_drop_the_last_of_a_pair() {
        let mut g = Philox::new(1, 2);
        let mut odd = [0.0f32; 3];
        fill_standard_normal(&mut g, &mut odd);
        let mut g = Philox::new(1, 2);
        let mut even = [0.0f32; 4];
        fill_standard_normal(&mut g, &mut even);
        assert_eq!(odd, even[..3]);
    }

    #[test]
    fn multinomial_follows_the_cdf_and_skips_the_node_generator() {
        let mut g = Philox::new(3, 4);
        let mut out = [0i64; 8];
        // One class with all the mass (others -inf are ignored).
        multinomial(&mut g, &[f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY, 0.0, 0.0, 0.0], 2, 3, 4, &mut out);
        assert_eq!(&out[..4], &[1; 4]);
        assert!(out[4..].iter().all(|&k| (0..3).contains(&k)));
        let mut h = Philox::new(3, 4);
        h.skip(2 * 4 * 2 * 256);
        assert_eq!(g, h);
        // No finite logit: every sample is `classes`.
        let mut out = [0i32; 2];
        multinomial(&mut Philox::new(1, 1), &[f32::NAN, f32::INFINITY], 1, 2, 2, &mut out);
        assert_eq!(out, [2, 2]);
    }

    #[test]
    fn zero_seeds_are_not_deterministic() {
        let p = TfLiteRandomParams { seed: 0, seed2: 0 };
        assert_ne!(seeded(&p), seeded(&p));
        let p = TfLiteRandomParams { seed: -1, seed2: 2 };
        assert_eq!(seeded(&p), Philox { counter: [0, 0, 2, 0], key: [u32::MAX, u32::MAX] });
    }
}
