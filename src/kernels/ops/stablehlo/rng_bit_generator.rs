//! STABLEHLO_RNG_BIT_GENERATOR (TFLite `kernels/rng_bit_generator.cc`, `rng_util.cc`).
//!
//! Counter-based random bits: the uint64 state holds the key and the counter, read as
//! little-endian 32-bit words `[k0, k1, c0, c1, ...]`. THREEFRY (Threefry-2x32, 20
//! rounds) takes a state of 2 words of 64 bits; PHILOX and DEFAULT (Philox-4x32, 10
//! rounds) take 2 or 3, the third holding the counter's high half (with 2, the key itself
//! stands in for it). Each block of the generator fills the next 2 (Threefry) or 4
//! (Philox) 32-bit words of the output, the last block cut short; then the low counter
//! word is incremented, carrying into the next word only. A 64-bit output element is two
//! consecutive words, low first. The new state is the key and the two low counter words;
//! a third Philox state word is passed through unchanged.
//!
//! As TFLite: the state is 1-D uint64 and the new state has its shape; the output is
//! int32, int64, uint32 or uint64 with the model's shape, fixed in Prepare; the state's
//! size and the algorithm are checked when the op runs.

use crate::abi::builtin_op_data::{TfLiteRngAlgorithm, TfLiteStablehloRngBitGeneratorParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "STABLEHLO_RNG_BIT_GENERATOR";

/// The STABLEHLO_RNG_BIT_GENERATOR registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<RngBitGenerator>(TfLiteBuiltinOperator::kTfLiteBuiltinStablehloRngBitGenerator)
}

const THREEFRY_PARITY: u32 = 0x1BD1_1BDA;
const PHILOX_M0: u64 = 0xD251_1F53;
const PHILOX_M1: u64 = 0xCD9E_8D57;
const PHILOX_W0: u32 = 0x9E37_79B9;
const PHILOX_W1: u32 = 0xBB67_AE85;

/// One Threefry-2x32 block (20 rounds) of counter `ctr` under key `(k0, k1)`.
pub fn threefry2x32(k0: u32, k1: u32, ctr: [u32; 2]) -> [u32; 2] {
    const ROT: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];
    let k2 = k0 ^ k1 ^ THREEFRY_PARITY;
    let mut x = [ctr[0].wrapping_add(k0), ctr[1].wrapping_add(k1)];
    // Four rounds per key injection; injection `b` adds the key schedule shifted by `b`
    // and `b` itself to the second word.
    let schedule = [(0, k1, k2), (1, k2, k0), (0, k0, k1), (1, k1, k2), (0, k2, k0)];
    for (b, &(r, ks0, ks1)) in schedule.iter().enumerate() {
        for &rot in &ROT[r] {
            x[0] = x[0].wrapping_add(x[1]);
            x[1] = x[1].rotate_left(rot) ^ x[0];
        }
        x[0] = x[0].wrapping_add(ks0);
        x[1] = x[1].wrapping_add(ks1).wrapping_add(b as u32 + 1);
    }
    x
}

/// One Philox-4x32 block (10 rounds) of counter `ctr` under key `(k0, k1)`.
pub fn philox4x32(mut k0: u32, mut k1: u32, mut ctr: [u32; 4]) -> [u32; 4] {
    for _ in 0..10 {
        let p0 = PHILOX_M0 * u64::from(ctr[0]);
        let p1 = PHILOX_M1 * u64::from(ctr[2]);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        ctr = [hi1 ^ ctr[1] ^ k0, lo1, hi0 ^ ctr[3] ^ k1, lo0];
        k0 = k0.wrapping_add(PHILOX_W0);
        k1 = k1.wrapping_add(PHILOX_W1);
    }
    ctr
}

/// Fills `out` block by block from `block(counter)`, stepping the counter's low word with
/// a carry into the second; the counter after the last block.
fn fill<const K: usize>(out: &mut [u32], mut ctr: [u32; K], block: impl Fn([u32; K]) -> [u32; K]) -> [u32; K] {
    for chunk in out.chunks_mut(K) {
        let v = block(ctr);
        chunk.copy_from_slice(&v[..chunk.len()]);
        ctr[0] = ctr[0].wrapping_add(1);
        if ctr[0] == 0 {
            ctr[1] = ctr[1].wrapping_add(1);
        }
    }
    ctr
}

/// Generates `out` (32-bit words) from `state` with `algorithm`; the new state, of the
/// same length as `state`.
pub fn generate(algorithm: TfLiteRngAlgorithm, state: &[u64], out: &mut [u32]) -> Result<Vec<u64>> {
    let lo = |x: u64| x as u32;
    let hi = |x: u64| (x >> 32) as u32;
    let join = |a: u32, b: u32| u64::from(a) | (u64::from(b) << 32);
    match algorithm {
        TfLiteRngAlgorithm::kTfLiteRngAlgorithmThreefry => {
            if state.len() != 2 {
                crate::bail!("the THREEFRY state must hold 2 values, not {}", state.len());
            }
            let (k0, k1) = (lo(state[0]), hi(state[0]));
            let ctr = fill(out, [lo(state[1]), hi(state[1])], |c| threefry2x32(k0, k1, c));
            Ok(vec![state[0], join(ctr[0], ctr[1])])
        }
        TfLiteRngAlgorithm::kTfLiteRngAlgorithmPhilox | TfLiteRngAlgorithm::kTfLiteRngAlgorithmDefault => {
            if state.len() != 2 && state.len() != 3 {
                crate::bail!("the PHILOX state must hold 2 or 3 values, not {}", state.len());
            }
            let (k0, k1) = (lo(state[0]), hi(state[0]));
            // Without a third state value the key doubles as the counter's high half.
            let high = if state.len() == 3 { state[2] } else { state[0] };
            let ctr = fill(out, [lo(state[1]), hi(state[1]), lo(high), hi(high)], |c| philox4x32(k0, k1, c));
            let mut next = state.to_vec();
            next[1] = join(ctr[0], ctr[1]);
            Ok(next)
        }
        other => crate::bail!("unknown RNG algorithm {}", other as i32),
    }
}

/// STABLEHLO_RNG_BIT_GENERATOR; no State.
struct RngBitGenerator;

impl BuiltinKernel for RngBitGenerator {
    const NAME: &'static str = OP;
    type Params = TfLiteStablehloRngBitGeneratorParams;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &TfLiteStablehloRngBitGeneratorParams) -> Result<()> {
        check_arity(ctx, OP, 1, 1, 2)?;
        let state = ctx.input(0).map_err(in_op(OP))?;
        if state.dtype != TfLiteType::kTfLiteUInt64 || state.shape.len() != 1 {
            return Err(op_error(
                OP,
                format!(
                    "the initial state must be a 1-D uint64 tensor, not {} of rank {}",
                    state.dtype.name(),
                    state.shape.len()
                ),
            ));
        }
        let key = ctx.output(0).map_err(in_op(OP))?;
        if key.dtype != TfLiteType::kTfLiteUInt64 || key.shape != state.shape {
            return Err(op_error(OP, "the output state must be uint64 of the initial state's shape"));
        }
        let key_shape = key.shape.to_vec();
        ctx.resize_output(0, &key_shape).map_err(in_op(OP))?;
        let out = ctx.output(1).map_err(in_op(OP))?;
        use TfLiteType::*;
        if !matches!(out.dtype, kTfLiteInt32 | kTfLiteInt64 | kTfLiteUInt32 | kTfLiteUInt64) {
            return Err(op_error(OP, format!("output type {} is not supported", out.dtype.name())));
        }
        // The output keeps the model's shape.
        let out_shape = out.shape.to_vec();
        crate::kernels::shape_util::element_count(&out_shape).map_err(|e| op_error(OP, e.message))?;
        ctx.resize_output(1, &out_shape).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteStablehloRngBitGeneratorParams, _: &mut ()) -> Result<()> {
        let state = super::values_of::<u64>(&ctx.input(0).map_err(in_op(OP))?).map_err(in_op(OP))?;
        let mut key = ctx.output(0).map_err(in_op(OP))?;
        let mut out = ctx.output(1).map_err(in_op(OP))?;
        let n = out.num_elements();
        let wide = matches!(out.dtype, TfLiteType::kTfLiteInt64 | TfLiteType::kTfLiteUInt64);
        let words_len = if wide { n.checked_mul(2).ok_or_else(|| op_error(OP, "output too large"))? } else { n };
        let mut words = vec![0u32; words_len];
        let next = generate(p.algorithm, &state, &mut words).map_err(|e| op_error(OP, e.message))?;
        let key_out = key.data_mut::<u64>().map_err(in_op(OP))?;
        if key_out.len() != next.len() {
            return Err(op_error(OP, "the output state does not match the initial state's size"));
        }
        key_out.copy_from_slice(&next);
        let pairs = || words.chunks_exact(2).map(|w| u64::from(w[0]) | (u64::from(w[1]) << 32));
        match out.dtype {
            TfLiteType::kTfLiteUInt32 => out.data_mut::<u32>().map_err(in_op(OP))?.copy_from_slice(&words),
            TfLiteType::kTfLiteInt32 => {
                out.data_mut::<i32>().map_err(in_op(OP))?.iter_mut().zip(&words).for_each(|(o, &w)| *o = w as i32)
            }
            TfLiteType::kTfLiteUInt64 => {
                out.data_mut::<u64>().map_err(in_op(OP))?.iter_mut().zip(pairs()).for_each(|(o, w)| *o = w)
            }
            TfLiteType::kTfLiteInt64 => {
                out.data_mut::<i64>().map_err(in_op(OP))?.iter_mut().zip(pairs()).for_each(|(o, w)| *o = w as i64)
            }
            other => return Err(op_error(OP, format!("output type {} is not supported", other.name()))),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteRngAlgorithm::*;
    use TfLiteType::*;

    // Known-answer vectors of the Random123 reference implementation.
    #[test]
    fn known_answers() {
        assert_eq!(threefry2x32(0, 0, [0, 0]), [0x6b20_0159, 0x99ba_4efe]);
        assert_eq!(threefry2x32(0xffff_ffff, 0xffff_ffff, [0xffff_ffff, 0xffff_ffff]), [0x1cb9_96fc, 0xbb00_2be7]);
        assert_eq!(philox4x32(0, 0, [0; 4]), [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
        assert_eq!(
            philox4x32(0xffff_ffff, 0xffff_ffff, [0xffff_ffff; 4]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
    }

    #[test]
    fn philox_blocks_and_state() {
        // Key 0 and a 2-value state: the counter's high half is the key (0).
        let mut out = vec![0u32; 6];
        let next = generate(kTfLiteRngAlgorithmPhilox, &[0, 0], &mut out).unwrap();
        assert_eq!(&out[..4], &philox4x32(0, 0, [0; 4]));
        assert_eq!(&out[4..], &philox4x32(0, 0, [1, 0, 0, 0])[..2]);
        assert_eq!(next, vec![0, 2]);
        // A 3-value state keeps its third value; the carry stops at the second word.
        let mut out = vec![0u32; 8];
        let next = generate(kTfLiteRngAlgorithmDefault, &[7, 0xffff_ffff, 9], &mut out).unwrap();
        assert_eq!(&out[4..], &philox4x32(7, 0, [0, 1, 9, 0]));
        assert_eq!(next, vec![7, 1 << 32 | 1, 9]);
        let next = generate(kTfLiteRngAlgorithmPhilox, &[7, u64::MAX, 9], &mut out).unwrap();
        assert_eq!(next, vec![7, 1, 9]);
    }

    #[test]
    fn threefry_blocks_and_state() {
        let mut out = vec![0u32; 3];
        let next = generate(kTfLiteRngAlgorithmThreefry, &[5 << 32 | 3, 10], &mut out).unwrap();
        assert_eq!(&out[..2], &threefry2x32(3, 5, [10, 0]));
        assert_eq!(out[2], threefry2x32(3, 5, [11, 0])[0]);
        assert_eq!(next, vec![5 << 32 | 3, 12]);
        // An empty output leaves the state as it was.
        assert_eq!(generate(kTfLiteRngAlgorithmThreefry, &[1, 2], &mut []).unwrap(), vec![1, 2]);
    }

    #[test]
    fn bad_states_are_errors() {
        assert!(generate(kTfLiteRngAlgorithmThreefry, &[1, 2, 3], &mut [0; 2]).is_err());
        assert!(generate(kTfLiteRngAlgorithmPhilox, &[1], &mut [0; 2]).is_err());
        assert!(generate(kTfLiteRngAlgorithmDefault, &[1, 2, 3, 4], &mut [0; 2]).is_err());
        assert!(generate(kTfLiteRngAlgorithmUnknown, &[1, 2], &mut [0; 2]).is_err());
    }

    fn params(algorithm: TfLiteRngAlgorithm) -> Option<TfLiteStablehloRngBitGeneratorParams> {
        Some(TfLiteStablehloRngBitGeneratorParams { algorithm })
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let s = g.tensor(kTfLiteUInt64, &[2], &[0u64, 0], None, false);
        let k = g.tensor(kTfLiteUInt64, &[2], &[0u64; 2], None, false);
        let o = g.tensor(kTfLiteInt64, &[2], &[0i64; 2], None, false);
        assert_eq!(g.run(&registration(), &[s], &[k, o], params(kTfLiteRngAlgorithmPhilox)), TfLiteStatus::kTfLiteOk);
        let w = philox4x32(0, 0, [0; 4]);
        let pair = |a: u32, b: u32| (u64::from(a) | u64::from(b) << 32) as i64;
        assert_eq!(g.data::<i64>(o), vec![pair(w[0], w[1]), pair(w[2], w[3])]);
        assert_eq!(g.data::<u64>(k), vec![0, 1]);

        let o32 = g.tensor(kTfLiteInt32, &[3], &[0i32; 3], None, false);
        assert_eq!(
            g.run(&registration(), &[s], &[k, o32], params(kTfLiteRngAlgorithmThreefry)),
            TfLiteStatus::kTfLiteOk
        );
        let a = threefry2x32(0, 0, [0, 0]);
        assert_eq!(g.data::<i32>(o32), vec![a[0] as i32, a[1] as i32, threefry2x32(0, 0, [1, 0])[0] as i32]);

        // Wrong types, shapes and algorithms.
        let f = g.tensor(kTfLiteFloat32, &[2], &[0f32; 2], None, false);
        assert_eq!(
            g.run(&registration(), &[s], &[k, f], params(kTfLiteRngAlgorithmPhilox)),
            TfLiteStatus::kTfLiteError
        );
        let k3 = g.tensor(kTfLiteUInt64, &[3], &[0u64; 3], None, false);
        assert_eq!(
            g.run(&registration(), &[s], &[k3, o], params(kTfLiteRngAlgorithmPhilox)),
            TfLiteStatus::kTfLiteError
        );
        assert_eq!(
            g.run(&registration(), &[s], &[k, o], params(kTfLiteRngAlgorithmUnknown)),
            TfLiteStatus::kTfLiteError
        );
        let s1 = g.tensor(kTfLiteUInt64, &[1], &[0u64], None, false);
        let k1 = g.tensor(kTfLiteUInt64, &[1], &[0u64], None, false);
        assert_eq!(
            g.run(&registration(), &[s1], &[k1, o], params(kTfLiteRngAlgorithmPhilox)),
            TfLiteStatus::kTfLiteError
        );
        let s2 = g.tensor(kTfLiteUInt64, &[1, 2], &[0u64; 2], None, false);
        let k2 = g.tensor(kTfLiteUInt64, &[1, 2], &[0u64; 2], None, false);
        assert_eq!(
            g.run(&registration(), &[s2], &[k2, o], params(kTfLiteRngAlgorithmPhilox)),
            TfLiteStatus::kTfLiteError
        );
    }
}
