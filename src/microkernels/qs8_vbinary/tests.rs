//! Every available table against the scalar one (bit for bit), and the scalar one against
//! TFLite's formulas.

use super::*;
use crate::kernels::quant::{
    multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_smaller_than_one_exp,
    quantize_multiplier_smaller_than_one_exp, try_quantize_multiplier,
};
use crate::microkernels::test_rng::Lcg;
use crate::microkernels::{Isa, Table, available_tables};

const OPS: [QBinaryOp; 3] = [QBinaryOp::Add, QBinaryOp::Sub, QBinaryOp::Mul];

/// An element type under test.
trait Elem: Quant8 + Default + PartialEq + std::fmt::Debug {
    const MIN: i32;
    const MAX: i32;
    fn from(v: i32) -> Self;
}

impl Elem for i8 {
    const MIN: i32 = -128;
    const MAX: i32 = 127;
    fn from(v: i32) -> i8 {
        v as i8
    }
}

impl Elem for u8 {
    const MIN: i32 = 0;
    const MAX: i32 = 255;
    fn from(v: i32) -> u8 {
        v as u8
    }
}

/// A random scale in roughly `[2^-12, 1]`.
fn scale(rng: &mut Lcg) -> f32 {
    (rng.next() % 1000 + 1) as f32 / 1000.0 / (1 << rng.below(12)) as f32
}

/// Parameters as TFLite's Prepare computes them from random scales and zero points in the
/// type's range, with the op's output rescaling and an activation range.
fn real_params<T: Elem>(rng: &mut Lcg, op: QBinaryOp) -> QBinaryParams {
    let scales = (scale(rng), scale(rng), scale(rng));
    real_params_with::<T>(rng, op, scales)
}

/// [`real_params`] with the given input and output scales.
fn real_params_with<T: Elem>(rng: &mut Lcg, op: QBinaryOp, (s1, s2, so): (f32, f32, f32)) -> QBinaryParams {
    let zp = |rng: &mut Lcg| T::MIN + rng.below(256) as i32;
    let (z1, z2, zo) = (zp(rng), zp(rng), zp(rng));
    let (min, max) = match rng.below(3) {
        0 => (T::MIN, T::MAX),
        1 => (zo.max(T::MIN), T::MAX),
        _ => ((zo - 20).max(T::MIN), (zo + 40).min(T::MAX)),
    };
    let input = |offset: i32, multiplier: (i32, i32)| Input {
        offset,
        scale: Rescale::smaller_than_one(multiplier.0, multiplier.1, 20),
    };
    match op {
        QBinaryOp::Mul => {
            let (m, s) = try_quantize_multiplier(f64::from(s1 * s2 / so)).unwrap();
            QBinaryParams {
                op,
                a: Input { offset: -z1, scale: Rescale::default() },
                b: Input { offset: -z2, scale: Rescale::default() },
                out: Rescale::general(m, s),
                output_offset: zo,
                min,
                max,
            }
        }
        _ => {
            let twice_max = f64::from(2.0 * s1.max(s2));
            let m1 = quantize_multiplier_smaller_than_one_exp(f64::from(s1) / twice_max).unwrap();
            let m2 = quantize_multiplier_smaller_than_one_exp(f64::from(s2) / twice_max).unwrap();
            // A real output multiplier above one only when the output scale is tiny.
            let (mo, shift) = quantize_multiplier_smaller_than_one_exp(twice_max / f64::from((1 << 20) as f32 * so))
                .unwrap_or((1 << 30, 0));
            let out = if op == QBinaryOp::Add {
                Rescale::smaller_than_one(mo, shift, 0)
            } else {
                Rescale::general(mo, shift)
            };
            QBinaryParams { op, a: input(-z1, m1), b: input(-z2, m2), out, output_offset: zo, min, max }
        }
    }
}

/// Parameters from edge values: multipliers of every sign and size, every shift, offsets
/// inside and outside the short form's range, clamps wider than the type and inverted.
fn edge_params(rng: &mut Lcg, op: QBinaryOp) -> QBinaryParams {
    const MULTS: [i32; 10] = [0, 1, -1, 1 << 30, i32::MAX, i32::MIN, -(1 << 30), 1_518_500_250, 2047, 2048];
    const OFFSETS: [i32; 14] = [0, 1, -1, 128, -128, 255, -255, 768, -768, 769, -769, 100_000, i32::MIN, i32::MAX];
    const LEFTS: [u32; 5] = [0, 1, 20, 20, 31];
    let rescale = |rng: &mut Lcg| Rescale {
        mult: if rng.below(3) == 0 { rng.next() as i32 } else { MULTS[rng.below(MULTS.len())] },
        left: LEFTS[rng.below(LEFTS.len())],
        right: if rng.below(2) == 0 { rng.below(32) as u32 } else { [0, 1, 31][rng.below(3)] },
    };
    let input = |rng: &mut Lcg| Input { offset: OFFSETS[rng.below(OFFSETS.len())], scale: rescale(rng) };
    let (a, b) = (input(rng), input(rng));
    let (min, max) = match rng.below(4) {
        0 => (-128, 255),
        1 => (i32::MIN, i32::MAX),
        2 => (50, 10),
        _ => (-300, 300),
    };
    let output_offset = [0, -128, 127, 255, i32::MAX, i32::MIN][rng.below(6)];
    QBinaryParams { op, a, b, out: rescale(rng), output_offset, min, max }
}

/// Parameters the short forms of the SIMD kernels take, near their limits: 8-bit input
/// offsets and left shift, no output left shift, any multipliers and right shifts.
fn short_params(rng: &mut Lcg, op: QBinaryOp) -> QBinaryParams {
    let mut p = edge_params(rng, op);
    for i in [&mut p.a, &mut p.b] {
        i.offset = rng.below(2 * 768 + 1) as i32 - 768;
        i.scale.left = 20;
    }
    p.out.left = 0;
    if rng.below(2) == 0 {
        p.out.mult = (1 << 30) + (rng.next() >> 2) as i32;
    }
    p
}

/// Random values with the type's extremes and the zero points mixed in.
fn values<T: Elem>(rng: &mut Lcg, n: usize, p: &QBinaryParams) -> Vec<T> {
    (0..n)
        .map(|_| match rng.below(10) {
            0 => T::from(T::MIN),
            1 => T::from(T::MAX),
            2 => T::from(-p.a.offset),
            3 => T::from(-p.b.offset),
            _ => T::from(rng.next() as i32),
        })
        .collect()
}

/// Every shape of `other` for `x` of `n` values, against the scalar table and (for the
/// scalar table) against `p.scalar` element by element, in place too.
fn check<T: Elem>(table: &Table, p: &QBinaryParams, n: usize, rng: &mut Lcg) {
    let scalar = Table::for_isa(Isa::Scalar).unwrap();
    let x: Vec<T> = values(rng, n, p);
    let y: Vec<T> = values(rng, n, p);
    let c: T = values(rng, 1, p)[0];
    let cols = [1, 3, 16, 17].into_iter().find(|&c| n > 0 && n.is_multiple_of(c) && c <= n).unwrap_or(1);
    let row: Vec<T> = values(rng, cols, p);
    for second in [false, true] {
        for other in [Other::Vector(&y[..]), Other::Scalar(c), Other::Row(&row[..])] {
            if n == 0 && matches!(other, Other::Row(_)) {
                continue;
            }
            let mut want = vec![T::default(); n];
            apply(scalar, p, &x, second, other, &mut want).unwrap();
            if table.isa == Isa::Scalar {
                for i in 0..n {
                    let o = match other {
                        Other::Vector(v) => v[i],
                        Other::Scalar(c) => c,
                        Other::Row(r) => r[i % r.len()],
                    };
                    let (u, v) = if second { (o, x[i]) } else { (x[i], o) };
                    assert_eq!(want[i], T::from(p.scalar(u.widen(), v.widen())), "{p:?} {other:?} {second} at {i}");
                }
            }
            let mut got = vec![T::default(); n];
            apply(table, p, &x, second, other, &mut got).unwrap();
            let mut in_place = x.clone();
            apply_in_place(table, p, &mut in_place, second, other).unwrap();
            same(&got, &want, &format!("{} {p:?} n {n} {other:?} second {second}", table.name()));
            same(&in_place, &want, &format!("{} in place {p:?} n {n} {other:?} second {second}", table.name()));
        }
    }
}

fn every_table<T: Elem>(seed: u64) {
    let mut rng = Lcg(seed);
    for table in available_tables() {
        for op in OPS {
            // Every tail length with real parameters, longer runs with edge ones.
            for n in 0..70 {
                let p = real_params::<T>(&mut rng, op);
                check::<T>(table, &p, n, &mut rng);
            }
            for _ in 0..600 {
                let p = match rng.below(3) {
                    0 => real_params::<T>(&mut rng, op),
                    1 => edge_params(&mut rng, op),
                    _ => short_params(&mut rng, op),
                };
                let n = [1, 15, 16, 17, 33, 48, 100, 257][rng.below(8)];
                check::<T>(table, &p, n, &mut rng);
            }
        }
    }
}

#[test]
fn int8_every_table_matches_scalar() {
    every_table::<i8>(0x5eed_0001);
}

#[test]
fn uint8_every_table_matches_scalar() {
    every_table::<u8>(0x5eed_0002);
}

/// Every pair of 8-bit values, so each input rescaling sees its whole domain.
#[test]
fn every_value_pair() {
    let mut rng = Lcg(7);
    let x: Vec<i8> = (0..256 * 256).map(|i| (i & 255) as u8 as i8).collect();
    let y: Vec<i8> = (0..256 * 256).map(|i| (i >> 8) as u8 as i8).collect();
    let scalar = Table::for_isa(Isa::Scalar).unwrap();
    for op in OPS {
        for _ in 0..4 {
            for p in [real_params::<i8>(&mut rng, op), edge_params(&mut rng, op), short_params(&mut rng, op)] {
                let mut want = vec![0i8; x.len()];
                apply(scalar, &p, &x, false, Other::Vector(&y), &mut want).unwrap();
                for table in available_tables() {
                    let mut got = vec![0i8; x.len()];
                    apply(table, &p, &x, false, Other::Vector(&y), &mut got).unwrap();
                    same(&got, &want, &format!("{} {p:?}", table.name()));
                }
            }
        }
    }
}

/// Asserts `got == want`, naming the first difference.
fn same<T: Elem>(got: &[T], want: &[T], what: &str) {
    if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
        panic!("{what}: at {i} of {}, {:?} instead of {:?}", want.len(), got[i], want[i]);
    }
}

/// Parameters at the limits of the SIMD kernels' short forms (input offsets of up to 768,
/// multipliers of the largest magnitudes, the largest and smallest right shifts), on every
/// pair of values and with scalars of every size: where an overflow would show.
fn limits<T: Elem>(seed: u64) {
    let mut rng = Lcg(seed);
    let scalar = Table::for_isa(Isa::Scalar).unwrap();
    let x: Vec<T> = (0..256 * 256).map(|i| T::from(i & 255)).collect();
    let y: Vec<T> = (0..256 * 256).map(|i| T::from(i >> 8)).collect();
    const MULTS: [i32; 5] = [i32::MAX, i32::MIN, -i32::MAX, 1 << 30, 1_900_000_000];
    const OFFSETS: [i32; 6] = [768, -768, 640, 0, 769, -1100];
    const RIGHTS: [u32; 5] = [0, 31, 1, 30, 2];
    let extreme = |rng: &mut Lcg, n: usize| if rng.below(4) == 0 { rng.below(n) } else { rng.below(2) };
    for _ in 0..120 {
        for op in OPS {
            let mut p = short_params(&mut rng, op);
            for i in [&mut p.a, &mut p.b] {
                i.offset = OFFSETS[extreme(&mut rng, OFFSETS.len())];
                let mult = MULTS[extreme(&mut rng, MULTS.len())];
                i.scale = Rescale { mult, left: 20, right: RIGHTS[extreme(&mut rng, RIGHTS.len())] };
            }
            // A large right shift where the sums are large, none where the inputs' own
            // rescaling should show in every bit.
            let right = [31, 0, 30, 29, 1][extreme(&mut rng, 5)];
            p.out = Rescale { mult: MULTS[extreme(&mut rng, MULTS.len())], left: 0, right };
            // No clamp (every bit of the rescaling shows), or clamps within the type with
            // offsets up to and past the packed finish's limit.
            (p.min, p.max, p.output_offset) = match rng.below(6) {
                0 | 1 => (i32::MIN, i32::MAX, 0),
                2 => (T::MIN, T::MAX, [1 << 14, -(1 << 14), (1 << 14) + 1, 32767, -32768][rng.below(5)]),
                3 => (T::MIN + 10, T::MAX - 10, T::MIN + rng.below(256) as i32),
                4 => (T::MAX, T::MIN, 5),
                _ => (T::MIN, T::MAX, 0),
            };
            if op == QBinaryOp::Mul {
                p.out.right = rng.below(32) as u32;
            }
            let mut want = vec![T::default(); x.len()];
            apply(scalar, &p, &x, false, Other::Vector(&y), &mut want).unwrap();
            let cs = [T::from(T::MIN), T::from(T::MAX), T::from(-p.a.offset), T::from(rng.next() as i32)];
            let mut want_c = vec![vec![T::default(); 256]; 2 * cs.len()];
            for (j, w) in want_c.iter_mut().enumerate() {
                apply(scalar, &p, &x[..256], j % 2 == 1, Other::Scalar(cs[j / 2]), w).unwrap();
            }
            for table in available_tables() {
                let mut got = vec![T::default(); x.len()];
                apply(table, &p, &x, false, Other::Vector(&y), &mut got).unwrap();
                same(&got, &want, &format!("{} {p:?}", table.name()));
                for (k, &c) in cs.iter().enumerate() {
                    for second in [false, true] {
                        let mut got = vec![T::default(); 256];
                        apply(table, &p, &x[..256], second, Other::Scalar(c), &mut got).unwrap();
                        let what = format!("{} {p:?} {c:?} {second}", table.name());
                        same(&got, &want_c[2 * k + usize::from(second)], &what);
                    }
                }
            }
        }
    }
}

#[test]
fn int8_short_forms_at_their_limits() {
    limits::<i8>(0x1111);
}

#[test]
fn uint8_short_forms_at_their_limits() {
    limits::<u8>(0x2222);
}

/// The oracle is TFLite's arithmetic: `AddElementwise` / `SubElementwise` with
/// `MultiplyByQuantizedMultiplierSmallerThanOneExp` and `MulElementwise` with
/// `MultiplyByQuantizedMultiplier`, written out with the shared quantization helpers.
#[test]
fn scalar_is_tflite_arithmetic() {
    let mut rng = Lcg(11);
    for _ in 0..2000 {
        for op in OPS {
            let p = real_params::<i8>(&mut rng, op);
            let (x, y) = (rng.next() as i8 as i32, rng.next() as i8 as i32);
            let scaled = |v: i32, i: Input| {
                let shifted = v.wrapping_add(i.offset).wrapping_mul(1 << 20);
                multiply_by_quantized_multiplier_smaller_than_one_exp(shifted, i.scale.mult, -(i.scale.right as i32))
            };
            let raw = match op {
                QBinaryOp::Add => scaled(x, p.a).wrapping_add(scaled(y, p.b)),
                QBinaryOp::Sub => scaled(x, p.a).wrapping_sub(scaled(y, p.b)),
                QBinaryOp::Mul => (x + p.a.offset) * (y + p.b.offset),
            };
            let shift = p.out.left as i32 - p.out.right as i32;
            let out = multiply_by_quantized_multiplier(raw, p.out.mult, shift);
            let want = (out + p.output_offset).max(p.min).min(p.max);
            assert_eq!(p.scalar(x, y), want, "{p:?} {x} {y}");
        }
    }
}

#[test]
fn lengths_and_shifts_are_checked() {
    let mut rng = Lcg(3);
    let p = real_params::<u8>(&mut rng, QBinaryOp::Add);
    for table in available_tables() {
        let x = [1u8; 6];
        let mut out = [0u8; 6];
        assert!(apply(table, &p, &x, false, Other::Vector(&[1; 5]), &mut out).is_err());
        assert!(apply(table, &p, &x, false, Other::Row(&[1; 4]), &mut out).is_err());
        assert!(apply(table, &p, &x, false, Other::Row(&[]), &mut out).is_err());
        assert!(apply(table, &p, &x, false, Other::Scalar(1), &mut out[..5]).is_err());
        let mut y = [1u8; 6];
        assert!(apply_in_place(table, &p, &mut y, true, Other::Vector(&[1; 7])).is_err());
        let bad = QBinaryParams { out: Rescale { right: 32, ..p.out }, ..p };
        assert!(apply(table, &bad, &x, false, Other::Scalar(1), &mut out).is_err());
        let bad = QBinaryParams { a: Input { scale: Rescale { left: 40, ..p.a.scale }, ..p.a }, ..p };
        assert!(apply(table, &bad, &x, false, Other::Scalar(1), &mut out).is_err());
    }
}

/// ADD and SUB in their float form (see `forms`): every pair of values, int8 and uint8,
/// against the scalar kernels; scales drawn at random, and equal or in simple ratios
/// (where `y` lands exactly on half-integers: ties, which the form must decline).
#[cfg(target_arch = "x86_64")]
#[test]
fn float_form_every_value_pair() {
    fn run<T: Elem + forms::Elem>(rng: &mut Lcg, floats: &mut usize, near: &mut usize) {
        let x: Vec<T> = (0..256 * 256).map(|i| T::from(<T as Elem>::MIN + (i & 255))).collect();
        let y: Vec<T> = (0..256 * 256).map(|i| T::from(<T as Elem>::MIN + (i >> 8))).collect();
        let scalar = Table::for_isa(Isa::Scalar).unwrap();
        for case in 0..24 {
            let op = [QBinaryOp::Add, QBinaryOp::Sub][case % 2];
            let s = scale(rng);
            let scales = match case % 4 {
                0 | 1 => (scale(rng), scale(rng), scale(rng)),
                2 => (s, s, s),
                _ => (s, 2.0 * s, 4.0 * s),
            };
            let p = real_params_with::<T>(rng, op, scales);
            let form = match op {
                QBinaryOp::Add => forms::vv_float::<T, { ADD }>(&p),
                _ => forms::vv_float::<T, { SUB }>(&p),
            };
            if let Some(f) = form {
                *floats += 1;
                // How many pairs the form declines, replayed in scalar f32.
                *near += x
                    .iter()
                    .zip(&y)
                    .filter(|&(&a, &b)| {
                        let v = (b.widen() as f32).mul_add(f.b, (a.widen() as f32).mul_add(f.a, f.c));
                        (v - v.round_ties_even()).abs() < f.tolerance
                    })
                    .count();
            }
            let mut want = vec![T::default(); x.len()];
            apply(scalar, &p, &x, false, Other::Vector(&y), &mut want).unwrap();
            for table in available_tables() {
                let mut got = vec![T::default(); x.len()];
                apply(table, &p, &x, false, Other::Vector(&y), &mut got).unwrap();
                same(&got, &want, &format!("{} {p:?}", table.name()));
            }
        }
    }
    let mut rng = Lcg(0xf1_0a7);
    let (mut floats, mut near) = (0, 0);
    run::<i8>(&mut rng, &mut floats, &mut near);
    run::<u8>(&mut rng, &mut floats, &mut near);
    assert!(floats >= 30, "the float form held for only {floats} of 48 layers");
    assert!(near > 100, "only {near} pairs declined: the exact fix-up went untested");
}
