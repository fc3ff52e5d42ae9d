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
        advance(outer, &mut idx, &mut ao, &mut bo);
    }
    Ok(())
}

/// Steps the odometer `idx` over the `outer` levels by one position, moving the input
/// offsets `ao` and `bo` along.
fn advance(outer: &[Level], idx: &mut [usize], ao: &mut usize, bo: &mut usize) {
    for d in (0..outer.len()).rev() {
        idx[d] += 1;
        *ao += outer[d].a_stride;
        *bo += outer[d].b_stride;
        if idx[d] < outer[d].len {
            break;
        }
        *ao -= outer[d].a_stride * outer[d].len;
        *bo -= outer[d].b_stride * outer[d].len;
        idx[d] = 0;
    }
}

/// How one block of the output reads the two inputs (see [`for_each_block`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// Both inputs have `len` values in the block, in the output's order.
    Same,
    /// The first input is one value for the whole block; the second has `len`.
    AScalar,
    /// The second input is one value for the whole block; the first has `len`.
    BScalar,
    /// The first input is one row of `cols` values repeated over `len / cols` rows of the
    /// second (a per-channel vector against an NHWC tensor).
    ARow { cols: usize },
    /// The second input is one row of `cols` values repeated over the first's rows.
    BRow { cols: usize },
}

/// One contiguous run of `len` output values and where its inputs start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub a: usize,
    pub b: usize,
    pub out: usize,
    pub len: usize,
    pub kind: BlockKind,
}

/// Splits the broadcast of `a_shape` and `b_shape` to `out_shape` into blocks that a
/// vector kernel computes in one call, and calls `f` for each, in output order: a
/// same-shape pair, a scalar operand and a per-channel row each give one block; other
/// broadcasts give one block per run of the innermost fused dimension (or pair of
/// dimensions, for a repeated row). Checks the element counts (`a_len`, `b_len`,
/// `out_len`) and the shapes as [`broadcast_binary`] does, so every block lies inside its
/// slices.
pub fn for_each_block(
    (a_shape, a_len): (&[i32], usize),
    (b_shape, b_len): (&[i32], usize),
    (out_shape, out_len): (&[i32], usize),
    mut f: impl FnMut(Block) -> Result<()>,
) -> Result<()> {
    let ad = dims_usize(a_shape, "first input")?;
    let bd = dims_usize(b_shape, "second input")?;
    let od = dims_usize(out_shape, "output")?;
    for (len, dims, what) in [(a_len, &ad, "first input"), (b_len, &bd, "second input"), (out_len, &od, "output")] {
        let n = element_count(dims)?;
        if len != n {
            return Err(Error::new(format!("{what} holds {len} elements, its shape {dims:?} needs {n}")));
        }
    }
    let levels = plan(&ad, &bd, &od)?;
    if out_len == 0 {
        return Ok(());
    }
    let Some(inner) = levels.last() else {
        return f(Block { a: 0, b: 0, out: 0, len: 1, kind: BlockKind::Same });
    };
    // A row repeated: the two innermost levels are (rows, cols) with one input stepping
    // a whole row per row and the other not at all.
    let row = match levels.len().checked_sub(2).map(|i| levels[i]) {
        Some(r) if inner.a_stride == 1 && inner.b_stride == 1 && r.a_stride == inner.len && r.b_stride == 0 => {
            Some(BlockKind::BRow { cols: inner.len })
        }
        Some(r) if inner.a_stride == 1 && inner.b_stride == 1 && r.a_stride == 0 && r.b_stride == inner.len => {
            Some(BlockKind::ARow { cols: inner.len })
        }
        _ => None,
    };
    let (kind, len, outer) = match row {
        Some(kind) => (kind, inner.len * levels[levels.len() - 2].len, &levels[..levels.len() - 2]),
        None => {
            let kind = match (inner.a_stride, inner.b_stride) {
                (1, 1) => BlockKind::Same,
                (0, 1) => BlockKind::AScalar,
                (1, 0) => BlockKind::BScalar,
                _ => return Err(Error::new("unexpected broadcast strides")),
            };
            (kind, inner.len, &levels[..levels.len() - 1])
        }
    };
    let mut idx = vec![0usize; outer.len()];
    let (mut ao, mut bo) = (0usize, 0usize);
    let mut out = 0;
    while out < out_len {
        f(Block { a: ao, b: bo, out, len, kind })?;
        out += len;
        advance(outer, &mut idx, &mut ao, &mut bo);
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

    /// `check` through [`for_each_block`], with the block kinds computed one by one.
    fn check_blocks(ash: &[i32], bsh: &[i32]) {
        let osh = crate::kernels::api::broadcast_shape(ash, bsh).unwrap();
        let na: i32 = ash.iter().product();
        let nb: i32 = bsh.iter().product();
        let no: i32 = osh.iter().product();
        let a: Vec<i64> = (0..na as i64).collect();
        let b: Vec<i64> = (0..nb as i64).map(|x| x + 1).collect();
        let mut out = vec![-1i64; no as usize];
        for_each_block((ash, a.len()), (bsh, b.len()), (&osh, out.len()), |blk| {
            for i in 0..blk.len {
                let (x, y) = match blk.kind {
                    BlockKind::Same => (a[blk.a + i], b[blk.b + i]),
                    BlockKind::AScalar => (a[blk.a], b[blk.b + i]),
                    BlockKind::BScalar => (a[blk.a + i], b[blk.b]),
                    BlockKind::ARow { cols } => (a[blk.a + i % cols], b[blk.b + i]),
                    BlockKind::BRow { cols } => (a[blk.a + i], b[blk.b + i % cols]),
                };
                out[blk.out + i] = x * 1000 + y;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(out, naive(&a, ash, &b, bsh, &osh), "{ash:?} x {bsh:?}");
    }

    #[test]
    fn blocks() {
        for (ash, bsh) in [
            (&[2, 1, 3][..], &[1, 4, 1][..]),
            (&[2, 3], &[2, 3]),
            (&[2, 3], &[]),
            (&[], &[4]),
            (&[], &[]),
            (&[5], &[1]),
            (&[1, 4, 4, 3], &[1, 1, 1, 3]),
            (&[1, 1, 3], &[1, 4, 4, 3]),
            (&[2, 4, 4, 3], &[2, 1, 1, 3]),
            (&[1, 2, 1, 3, 1, 2], &[2, 1, 2, 1, 3, 1]),
            (&[3, 1], &[1, 3]),
            (&[2, 3, 4], &[4]),
            (&[2, 3, 4], &[3, 1]),
            (&[2, 1, 1, 5], &[2, 3, 4, 1]),
            (&[0, 3], &[3]),
        ] {
            check_blocks(ash, bsh);
        }
        // The per-channel case is one block.
        let mut n = 0;
        for_each_block((&[1, 4, 4, 3], 48), (&[3], 3), (&[1, 4, 4, 3], 48), |blk| {
            assert_eq!(blk, Block { a: 0, b: 0, out: 0, len: 48, kind: BlockKind::BRow { cols: 3 } });
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 1);
        assert!(for_each_block((&[2], 2), (&[3], 3), (&[3], 3), |_| Ok(())).is_err());
        assert!(for_each_block((&[2], 3), (&[2], 2), (&[2], 2), |_| Ok(())).is_err());
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
