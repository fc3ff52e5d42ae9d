//! Numpy-style broadcasting of a binary elementwise function over N-d row-major arrays.
//!
//! One generic loop serves every binary op and every element type: the shapes are
//! right-aligned, size-1 dimensions of an input are given stride 0, dimensions of size 1
//! in the output are dropped, and adjacent dimensions that broadcast the same way are
//! fused, so the innermost loop is as long as possible (a scalar operand, a channel
//! vector and a same-shape pair all become one or two flat loops). This is what TFLite's
//! `BroadcastBinaryOpSimple` does; elementwise ops do not depend on visiting order, so the
//! result is the same element for element.

use crate::error::{Error, Result};

/// Largest rank TFLite 2.19's broadcasting kernels accept (`BroadcastAdd6DSlow` & co.).
pub const MAX_BROADCAST_RANK: usize = 6;

fn dims_usize(shape: &[i32], what: &str) -> Result<Vec<usize>> {
    shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| Error::new(format!("{what} has a negative dimension: {shape:?}"))))
        .collect()
}

fn element_count(dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::new(format!("shape {dims:?} has too many elements")))
}

/// One fused loop level: its length and each input's stride (0 when broadcast).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Level {
    len: usize,
    a_stride: usize,
    b_stride: usize,
}

/// Fused loop levels, outermost first, for inputs of shapes `a`, `b` broadcast to `out`.
fn plan(a: &[usize], b: &[usize], out: &[usize]) -> Result<Vec<Level>> {
    let rank = out.len();
    if a.len() > rank || b.len() > rank {
        return Err(Error::new(format!("input shapes {a:?} and {b:?} have a higher rank than the output {out:?}")));
    }
    let pad = |s: &[usize]| -> Vec<usize> {
        let mut v = vec![1; rank - s.len()];
        v.extend_from_slice(s);
        v
    };
    let (a, b) = (pad(a), pad(b));
    // (len, a broadcast?, b broadcast?) per output dimension, skipping size-1 ones.
    let mut dims: Vec<(usize, bool, bool)> = Vec::with_capacity(rank);
    for i in 0..rank {
        let (da, db, o) = (a[i], b[i], out[i]);
        let ok = |d: usize| d == o || d == 1;
        if !ok(da) || !ok(db) {
            return Err(Error::new(format!("shapes {a:?} and {b:?} do not broadcast to {out:?}")));
        }
        if o == 1 {
            continue;
        }
        let (ba, bb) = (da == 1, db == 1);
        match dims.last_mut() {
            Some(last) if last.1 == ba && last.2 == bb => last.0 *= o,
            _ => dims.push((o, ba, bb)),
        }
    }
    // Strides, innermost first.
    let mut levels = Vec::with_capacity(dims.len());
    let (mut sa, mut sb) = (1usize, 1usize);
    for &(len, ba, bb) in dims.iter().rev() {
        levels.push(Level { len, a_stride: if ba { 0 } else { sa }, b_stride: if bb { 0 } else { sb } });
        if !ba {
            sa *= len;
        }
        if !bb {
            sb *= len;
        }
    }
    levels.reverse();
    Ok(levels)
}

/// `out[i] = f(a[ia], b[ib])` over the broadcast of `a_shape` and `b_shape` to
/// `out_shape`. Checks that every slice holds exactly its shape's element count and that
/// the shapes broadcast to `out_shape` (any rank; callers enforce their own limit).
pub fn broadcast_binary<A: Copy, B: Copy, O>(
    a: &[A],
    a_shape: &[i32],
    b: &[B],
    b_shape: &[i32],
    out: &mut [O],
    out_shape: &[i32],
    mut f: impl FnMut(A, B) -> O,
) -> Result<()> {
    let ad = dims_usize(a_shape, "first input")?;
    let bd = dims_usize(b_shape, "second input")?;
    let od = dims_usize(out_shape, "output")?;
    for (len, dims, what) in [(a.len(), &ad, "first input"), (b.len(), &bd, "second input"), (out.len(), &od, "output")]
    {
        let n = element_count(dims)?;
        if len != n {
            return Err(Error::new(format!("{what} holds {len} elements, its shape {dims:?} needs {n}")));
        }
    }
    let levels = plan(&ad, &bd, &od)?;
    if out.is_empty() {
        return Ok(());
    }
    let Some((inner, outer)) = levels.split_last() else {
        // Every dimension is 1: a single element.
        out[0] = f(a[0], b[0]);
        return Ok(());
    };
    let n = inner.len;
    let mut idx = vec![0usize; outer.len()];
    let (mut ao, mut bo) = (0usize, 0usize);
    for chunk in out.chunks_exact_mut(n) {
        match (inner.a_stride, inner.b_stride) {
            (1, 1) => {
                for ((o, &x), &y) in chunk.iter_mut().zip(&a[ao..ao + n]).zip(&b[bo..bo + n]) {
                    *o = f(x, y);
                }
            }
            (0, 1) => {
                let x = a[ao];
                for (o, &y) in chunk.iter_mut().zip(&b[bo..bo + n]) {
                    *o = f(x, y);
                }
            }
            (1, 0) => {
                let y = b[bo];
                for (o, &x) in chunk.iter_mut().zip(&a[ao..ao + n]) {
                    *o = f(x, y);
                }
            }
            (sa, sb) => {
                for (i, o) in chunk.iter_mut().enumerate() {
                    *o = f(a[ao + i * sa], b[bo + i * sb]);
                }
            }
        }
        // Advance the odometer over the outer levels.
        for d in (0..outer.len()).rev() {
            idx[d] += 1;
            ao += outer[d].a_stride;
            bo += outer[d].b_stride;
            if idx[d] < outer[d].len {
                break;
            }
            ao -= outer[d].a_stride * outer[d].len;
            bo -= outer[d].b_stride * outer[d].len;
            idx[d] = 0;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Straightforward index arithmetic, for comparison.
    fn naive(a: &[i64], ash: &[i32], b: &[i64], bsh: &[i32], osh: &[i32]) -> Vec<i64> {
        let rank = osh.len();
        let pad = |s: &[i32]| {
            let mut v = vec![1i32; rank - s.len()];
            v.extend_from_slice(s);
            v
        };
        let (ap, bp) = (pad(ash), pad(bsh));
        let total: i32 = osh.iter().product();
        (0..total)
            .map(|flat| {
                let mut rem = flat;
                let mut coords = vec![0i32; rank];
                for d in (0..rank).rev() {
                    coords[d] = rem % osh[d];
                    rem /= osh[d];
                }
                let index = |p: &[i32]| {
                    let mut i = 0i32;
                    for d in 0..rank {
                        i = i * p[d] + if p[d] == 1 { 0 } else { coords[d] };
                    }
                    i as usize
                };
                a[index(&ap)] * 1000 + b[index(&bp)]
            })
            .collect()
    }

    fn check(ash: &[i32], bsh: &[i32]) {
        let osh = crate::kernels::api::broadcast_shape(ash, bsh).unwrap();
        let na: i32 = ash.iter().product();
        let nb: i32 = bsh.iter().product();
        let no: i32 = osh.iter().product();
        let a: Vec<i64> = (0..na as i64).collect();
        let b: Vec<i64> = (0..nb as i64).map(|x| x + 1).collect();
        let mut out = vec![0i64; no as usize];
        broadcast_binary(&a, ash, &b, bsh, &mut out, &osh, |x, y| x * 1000 + y).unwrap();
        assert_eq!(out, naive(&a, ash, &b, bsh, &osh), "{ash:?} x {bsh:?}");
    }

    #[test]
    fn shapes() {
        check(&[2, 1, 3], &[1, 4, 1]);
        check(&[2, 3], &[2, 3]);
        check(&[2, 3], &[]);
        check(&[], &[4]);
        check(&[], &[]);
        check(&[1], &[1]);
        check(&[5], &[1]);
        check(&[2, 1, 4, 4], &[1, 3, 1, 4]);
        check(&[1, 2, 1, 3, 1, 2], &[2, 1, 2, 1, 3, 1]);
        check(&[3, 1], &[1, 3]);
        check(&[2, 3, 4], &[4]);
        check(&[2, 3, 4], &[3, 1]);
        check(&[2, 1, 1, 5], &[2, 3, 4, 1]);
        check(&[1, 1, 1], &[2, 2, 2]);
        check(&[2, 2, 2, 2, 2, 2, 2], &[2, 1, 2, 1, 2, 1, 2]);
    }

    #[test]
    fn worked_example() {
        // [2,1,3] + [1,4,1] -> [2,4,3].
        let a = [1.0f32, 2.0, 3.0, 10.0, 20.0, 30.0];
        let b = [100.0f32, 200.0, 300.0, 400.0];
        let mut out = [0.0f32; 24];
        broadcast_binary(&a, &[2, 1, 3], &b, &[1, 4, 1], &mut out, &[2, 4, 3], |x, y| x + y).unwrap();
        assert_eq!(&out[..6], &[101.0, 102.0, 103.0, 201.0, 202.0, 203.0]);
        assert_eq!(&out[21..], &[410.0, 420.0, 430.0]);
        assert_eq!(&out[18..21], &[310.0, 320.0, 330.0]);
        assert_eq!(out[12], 110.0);
    }

    #[test]
    fn empty_and_errors() {
        let mut out: [i32; 0] = [];
        broadcast_binary::<i32, i32, i32>(&[], &[0, 3], &[1, 2, 3], &[3], &mut out, &[0, 3], |x, y| x + y).unwrap();
        let mut out = [0i32; 6];
        // Wrong element count.
        assert!(broadcast_binary(&[1, 2], &[3], &[1], &[1], &mut out[..3], &[3], |x: i32, y: i32| x + y).is_err());
        // Incompatible shapes.
        assert!(
            broadcast_binary(&[1, 2, 3], &[3], &[1, 2], &[2], &mut out[..3], &[3], |x: i32, y: i32| x + y).is_err()
        );
        // An output larger than the broadcast is a plain broadcast to it; a smaller one fails.
        assert!(broadcast_binary(&[1, 2, 3], &[3], &[1], &[1], &mut out, &[2, 3], |x: i32, y: i32| x + y).is_ok());
        assert!(broadcast_binary(&[1, 2, 3], &[3], &[1], &[1], &mut out[..4], &[4], |x: i32, y: i32| x + y).is_err());
        // Negative dimension.
        assert!(broadcast_binary(&[1], &[-1], &[1], &[1], &mut out[..1], &[1], |x: i32, y: i32| x + y).is_err());
    }
}
