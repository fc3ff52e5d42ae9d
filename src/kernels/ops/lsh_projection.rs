//! LSH_PROJECTION (TFLite `kernels/lsh_projection.cc`): locality-sensitive hashing of
//! the input's rows into bits.
//!
//! Input 0 holds float32 seeds `[num_hash, num_bits]` (`num_bits` <= 32); input 1 the
//! data, whose rows (along dimension 0) are hashed as raw bytes; optional input 2 float32
//! weights, one per row. Bit `(i, j)` is 1 when `sum_r w_r * fingerprint(seed_ij ++ row_r)`
//! is positive, the fingerprint being FarmHash's 64-bit `Fingerprint64` of the seed's four
//! bytes followed by the row's bytes, read as a signed integer and summed in double.
//! DENSE writes every bit (`[num_hash * num_bits]` int32 of 0 and 1); SPARSE packs each
//! hash function's bits, first bit highest, and adds `i << num_bits` to keep the hash
//! functions apart (`[num_hash]` int32, wrapping as C++ does on x86).

use crate::abi::builtin_op_data::{TfLiteLSHProjectionParams, TfLiteLSHProjectionType};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "LSH_PROJECTION";

/// The LSH_PROJECTION registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<LshProjection>(TfLiteBuiltinOperator::kTfLiteBuiltinLshProjection)
}

// ---- FarmHash Fingerprint64 (farmhashna::Hash64) ------------------------------------------

const K0: u64 = 0xc3a5_c85c_97cb_3127;
const K1: u64 = 0xb492_b66f_be98_f273;
const K2: u64 = 0x9ae1_6a3b_2f90_404f;

fn fetch64(s: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&s[at..at + 8]);
    u64::from_le_bytes(b)
}

fn fetch32(s: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&s[at..at + 4]);
    u64::from(u32::from_le_bytes(b))
}

fn shift_mix(v: u64) -> u64 {
    v ^ (v >> 47)
}

fn hash_len16(u: u64, v: u64, mul: u64) -> u64 {
    let mut a = (u ^ v).wrapping_mul(mul);
    a ^= a >> 47;
    let mut b = (v ^ a).wrapping_mul(mul);
    b ^= b >> 47;
    b.wrapping_mul(mul)
}

fn hash_len0to16(s: &[u8]) -> u64 {
    let len = s.len();
    let l = len as u64;
    if len >= 8 {
        let mul = K2.wrapping_add(l * 2);
        let a = fetch64(s, 0).wrapping_add(K2);
        let b = fetch64(s, len - 8);
        let c = b.rotate_right(37).wrapping_mul(mul).wrapping_add(a);
        let d = a.rotate_right(25).wrapping_add(b).wrapping_mul(mul);
        return hash_len16(c, d, mul);
    }
    if len >= 4 {
        let mul = K2.wrapping_add(l * 2);
        let a = fetch32(s, 0);
        return hash_len16(l.wrapping_add(a << 3), fetch32(s, len - 4), mul);
    }
    if len > 0 {
        let (a, b, c) = (u32::from(s[0]), u32::from(s[len >> 1]), u32::from(s[len - 1]));
        let y = a.wrapping_add(b << 8);
        let z = (len as u32).wrapping_add(c << 2);
        return shift_mix(u64::from(y).wrapping_mul(K2) ^ u64::from(z).wrapping_mul(K0)).wrapping_mul(K2);
    }
    K2
}

fn hash_len17to32(s: &[u8]) -> u64 {
    let len = s.len();
    let mul = K2.wrapping_add(len as u64 * 2);
    let a = fetch64(s, 0).wrapping_mul(K1);
    let b = fetch64(s, 8);
    let c = fetch64(s, len - 8).wrapping_mul(mul);
    let d = fetch64(s, len - 16).wrapping_mul(K2);
    hash_len16(
        a.wrapping_add(b).rotate_right(43).wrapping_add(c.rotate_right(30)).wrapping_add(d),
        a.wrapping_add(b.wrapping_add(K2).rotate_right(18)).wrapping_add(c),
        mul,
    )
}

fn hash_len33to64(s: &[u8]) -> u64 {
    let len = s.len();
    let mul = K2.wrapping_add(len as u64 * 2);
    let a = fetch64(s, 0).wrapping_mul(K2);
    let b = fetch64(s, 8);
    let c = fetch64(s, len - 8).wrapping_mul(mul);
    let d = fetch64(s, len - 16).wrapping_mul(K2);
    let y = a.wrapping_add(b).rotate_right(43).wrapping_add(c.rotate_right(30)).wrapping_add(d);
    let z = hash_len16(y, a.wrapping_add(b.wrapping_add(K2).rotate_right(18)).wrapping_add(c), mul);
    let e = fetch64(s, 16).wrapping_mul(mul);
    let f = fetch64(s, 24);
    let g = y.wrapping_add(fetch64(s, len - 32)).wrapping_mul(mul);
    let h = z.wrapping_add(fetch64(s, len - 24)).wrapping_mul(mul);
    hash_len16(
        e.wrapping_add(f).rotate_right(43).wrapping_add(g.rotate_right(30)).wrapping_add(h),
        e.wrapping_add(f.wrapping_add(a).rotate_right(18)).wrapping_add(g),
        mul,
    )
}

fn weak_hash32(s: &[u8], at: usize, mut a: u64, mut b: u64) -> (u64, u64) {
    let (w, x, y, z) = (fetch64(s, at), fetch64(s, at + 8), fetch64(s, at + 16), fetch64(s, at + 24));
    a = a.wrapping_add(w);
    b = b.wrapping_add(a).wrapping_add(z).rotate_right(21);
    let c = a;
    a = a.wrapping_add(x).wrapping_add(y);
    b = b.wrapping_add(a.rotate_right(44));
    (a.wrapping_add(z), b.wrapping_add(c))
}

/// FarmHash's `Fingerprint64` of `s`.
pub fn fingerprint64(s: &[u8]) -> u64 {
    let len = s.len();
    if len <= 16 {
        return hash_len0to16(s);
    }
    if len <= 32 {
        return hash_len17to32(s);
    }
    if len <= 64 {
        return hash_len33to64(s);
    }
    const SEED: u64 = 81;
    let mut x = SEED;
    let mut y = SEED.wrapping_mul(K1).wrapping_add(113);
    let mut z = shift_mix(y.wrapping_mul(K2).wrapping_add(113)).wrapping_mul(K2);
    let (mut v, mut w) = ((0u64, 0u64), (0u64, 0u64));
    x = x.wrapping_mul(K2).wrapping_add(fetch64(s, 0));
    let end = ((len - 1) / 64) * 64;
    let last64 = end + ((len - 1) & 63) - 63;
    let mut p = 0;
    loop {
        x = x.wrapping_add(y).wrapping_add(v.0).wrapping_add(fetch64(s, p + 8)).rotate_right(37).wrapping_mul(K1);
        y = y.wrapping_add(v.1).wrapping_add(fetch64(s, p + 48)).rotate_right(42).wrapping_mul(K1);
        x ^= w.1;
        y = y.wrapping_add(v.0).wrapping_add(fetch64(s, p + 40));
        z = z.wrapping_add(w.0).rotate_right(33).wrapping_mul(K1);
        v = weak_hash32(s, p, v.1.wrapping_mul(K1), x.wrapping_add(w.0));
        w = weak_hash32(s, p + 32, z.wrapping_add(w.1), y.wrapping_add(fetch64(s, p + 16)));
        core::mem::swap(&mut z, &mut x);
        p += 64;
        if p == end {
            break;
        }
    }
    let mul = K1.wrapping_add((z & 0xff) << 1);
    let p = last64;
    w.0 = w.0.wrapping_add(((len - 1) & 63) as u64);
    v.0 = v.0.wrapping_add(w.0);
    w.0 = w.0.wrapping_add(v.0);
    x = x.wrapping_add(y).wrapping_add(v.0).wrapping_add(fetch64(s, p + 8)).rotate_right(37).wrapping_mul(mul);
    y = y.wrapping_add(v.1).wrapping_add(fetch64(s, p + 48)).rotate_right(42).wrapping_mul(mul);
    x ^= w.1.wrapping_mul(9);
    y = y.wrapping_add(v.0.wrapping_mul(9)).wrapping_add(fetch64(s, p + 40));
    z = z.wrapping_add(w.0).rotate_right(33).wrapping_mul(mul);
    v = weak_hash32(s, p, v.1.wrapping_mul(mul), x.wrapping_add(w.0));
    w = weak_hash32(s, p + 32, z.wrapping_add(w.1), y.wrapping_add(fetch64(s, p + 16)));
    core::mem::swap(&mut z, &mut x);
    hash_len16(
        hash_len16(v.0, w.0, mul).wrapping_add(shift_mix(y).wrapping_mul(K0)).wrapping_add(z),
        hash_len16(v.1, w.1, mul).wrapping_add(x),
        mul,
    )
}

// ---- the op ----------------------------------------------------------------------------

/// The sign bit of `sum_r w_r * fingerprint(seed ++ row_r)` over the `rows` rows of
/// `data` (each `data.len() / rows` bytes).
pub fn running_sign_bit(data: &[u8], rows: usize, weights: Option<&[f32]>, seed: f32) -> i32 {
    let item = data.len().checked_div(rows).unwrap_or(0);
    let mut key = Vec::with_capacity(4 + item);
    let mut score = 0f64;
    for r in 0..rows {
        key.clear();
        key.extend_from_slice(&seed.to_ne_bytes());
        key.extend_from_slice(&data[r * item..(r + 1) * item]);
        let v = fingerprint64(&key) as i64 as f64;
        score += match weights {
            Some(w) => f64::from(w[r]) * v,
            None => v,
        };
    }
    i32::from(score > 0.0)
}

/// Writes the projection of `data` (`rows` rows) by `seeds` (`num_hash * num_bits`).
pub fn project(
    kind: TfLiteLSHProjectionType,
    seeds: &[f32],
    num_bits: usize,
    data: &[u8],
    rows: usize,
    weights: Option<&[f32]>,
    out: &mut [i32],
) -> Result<()> {
    if num_bits > 32 || (num_bits == 0 && !seeds.is_empty()) || (num_bits > 0 && !seeds.len().is_multiple_of(num_bits))
    {
        crate::bail!("{} seeds cannot make rows of {num_bits} bits", seeds.len());
    }
    if weights.is_some_and(|w| w.len() != rows) {
        crate::bail!("{} weights for {rows} rows", weights.map_or(0, <[f32]>::len));
    }
    if rows == 0 && !seeds.is_empty() {
        crate::bail!("the input has no rows to hash");
    }
    let num_hash = seeds.len().checked_div(num_bits).unwrap_or(0);
    match kind {
        TfLiteLSHProjectionType::kTfLiteLshProjectionDense => {
            if out.len() != seeds.len() {
                crate::bail!("the output holds {} values, not {}", out.len(), seeds.len());
            }
            for (o, &s) in out.iter_mut().zip(seeds) {
                *o = running_sign_bit(data, rows, weights, s);
            }
        }
        TfLiteLSHProjectionType::kTfLiteLshProjectionSparse => {
            if out.len() != num_hash {
                crate::bail!("the output holds {} values, not {num_hash}", out.len());
            }
            // C++'s `1 << num_bits` on x86: the shift count is taken modulo 32.
            let offset = 1i32.wrapping_shl(num_bits as u32);
            for (i, o) in out.iter_mut().enumerate() {
                let mut sig = 0i32;
                for &s in &seeds[i * num_bits..(i + 1) * num_bits] {
                    sig = sig.wrapping_shl(1) | running_sign_bit(data, rows, weights, s);
                }
                *o = sig.wrapping_add((i as i32).wrapping_mul(offset));
            }
        }
        _ => crate::bail!("unknown projection type"),
    }
    Ok(())
}

/// LSH_PROJECTION; no State.
struct LshProjection;

impl BuiltinKernel for LshProjection {
    const NAME: &'static str = OP;
    type Params = TfLiteLSHProjectionParams;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteLSHProjectionParams) -> Result<()> {
        check_arity(ctx, OP, 2, 3, 1)?;
        let hash = ctx.input(0).map_err(in_op(OP))?;
        if hash.shape.len() != 2 || hash.dtype != TfLiteType::kTfLiteFloat32 {
            return Err(op_error(OP, "the hash seeds must be a float32 tensor of rank 2"));
        }
        if hash.shape[1] > 32 {
            return Err(op_error(OP, format!("{} bits per hash function; at most 32 are supported", hash.shape[1])));
        }
        let input = ctx.input(1).map_err(in_op(OP))?;
        if input.shape.is_empty() {
            return Err(op_error(OP, "the input must have rank 1 or more"));
        }
        if input.dtype == TfLiteType::kTfLiteString || input.dtype.element_size().is_none() {
            return Err(op_error(OP, format!("input type {} is not supported", input.dtype.name())));
        }
        if ctx.num_inputs() == 3 {
            let w = ctx.input(2).map_err(in_op(OP))?;
            if w.shape.len() != 1 || w.dtype != TfLiteType::kTfLiteFloat32 || w.shape[0] != input.shape[0] {
                return Err(op_error(OP, "the weights must be float32, one per input row"));
            }
        }
        let out = ctx.output(0).map_err(in_op(OP))?;
        if out.dtype != TfLiteType::kTfLiteInt32 {
            return Err(op_error(OP, format!("output type {} must be int32", out.dtype.name())));
        }
        let n = match p.type_ {
            TfLiteLSHProjectionType::kTfLiteLshProjectionSparse => i64::from(hash.shape[0]),
            TfLiteLSHProjectionType::kTfLiteLshProjectionDense => i64::from(hash.shape[0]) * i64::from(hash.shape[1]),
            _ => return Err(op_error(OP, "unknown projection type")),
        };
        let n = i32::try_from(n).map_err(|_| op_error(OP, "the output is too large"))?;
        ctx.resize_output(0, &[n]).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteLSHProjectionParams, _: &mut ()) -> Result<()> {
        let hash = ctx.input(0).map_err(in_op(OP))?;
        let input = ctx.input(1).map_err(in_op(OP))?;
        let weights = match ctx.num_inputs() {
            3 => Some(ctx.input(2).map_err(in_op(OP))?),
            _ => None,
        };
        let weights = match &weights {
            Some(w) => Some(w.data::<f32>().map_err(in_op(OP))?),
            None => None,
        };
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        let data = input.raw().map_err(in_op(OP))?;
        let data = &data[..input.bytes().min(data.len())];
        project(
            p.type_,
            hash.data::<f32>().map_err(in_op(OP))?,
            hash.shape[1].max(0) as usize,
            data,
            input.shape[0].max(0) as usize,
            weights,
            out.data_mut::<i32>().map_err(in_op(OP))?,
        )
        .map_err(|e| op_error(OP, e.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TfLiteLSHProjectionType::*;

    #[test]
    fn fingerprint_lengths_are_all_defined() {
        // Every length path runs and differs from its neighbours.
        let s: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
        let hs: Vec<u64> = (0..=200).map(|n| fingerprint64(&s[..n])).collect();
        assert_eq!(hs[0], K2);
        for n in 1..=200 {
            assert_ne!(hs[n], hs[n - 1], "length {n}");
        }
    }

    #[test]
    fn dense_and_sparse_agree() {
        let seeds = [0.1f32, -2.5, 3.0, 7.25, 1.0, 0.5];
        let data: Vec<u8> = (0..24).collect();
        let mut dense = [0i32; 6];
        project(kTfLiteLshProjectionDense, &seeds, 3, &data, 3, None, &mut dense).unwrap();
        assert!(dense.iter().all(|&b| b == 0 || b == 1));
        let mut sparse = [0i32; 2];
        project(kTfLiteLshProjectionSparse, &seeds, 3, &data, 3, Some(&[1.0, 1.0, 1.0]), &mut sparse).unwrap();
        assert_eq!(sparse[0], dense[0] << 2 | dense[1] << 1 | dense[2]);
        assert_eq!(sparse[1], 8 + (dense[3] << 2 | dense[4] << 1 | dense[5]));
        // A zero weight for every row scores 0: every bit is 0.
        project(kTfLiteLshProjectionDense, &seeds, 3, &data, 3, Some(&[0.0; 3]), &mut dense).unwrap();
        assert_eq!(dense, [0; 6]);
    }

    #[test]
    fn errors() {
        let mut out = [0i32; 2];
        assert!(project(kTfLiteLshProjectionDense, &[1.0, 2.0], 2, &[], 0, None, &mut out).is_err());
        assert!(project(kTfLiteLshProjectionDense, &[1.0, 2.0], 2, &[1, 2], 2, Some(&[1.0]), &mut out).is_err());
        assert!(project(kTfLiteLshProjectionUnknown, &[1.0, 2.0], 2, &[1, 2], 2, None, &mut out).is_err());
        assert!(project(kTfLiteLshProjectionSparse, &[1.0, 2.0], 2, &[1, 2], 2, None, &mut out).is_err());
        project(kTfLiteLshProjectionSparse, &[], 2, &[], 0, None, &mut []).unwrap();
    }
}
