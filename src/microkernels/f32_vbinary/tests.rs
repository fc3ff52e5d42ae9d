//! Every available table against the scalar one (bit for bit), and the scalar one against
//! plain formulas.

use super::*;
use crate::microkernels::test_rng::Lcg;
use crate::microkernels::{Isa, Table, available_tables};

const OPS: [BinaryOp; 8] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Max,
    BinaryOp::Min,
    BinaryOp::SquaredDifference,
    BinaryOp::Prelu,
];

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Mostly values in [-1, 1], with some zeros of both signs, infinities and NaNs.
fn values(rng: &mut Lcg, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| match rng.below(40) {
            0 => f32::NAN,
            1 => -0.0,
            2 => 0.0,
            3 => f32::INFINITY,
            4 => f32::NEG_INFINITY,
            _ => rng.f32() * 8.0,
        })
        .collect()
}

fn reference(op: BinaryOp, x: f32, y: f32) -> f32 {
    match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div => x / y,
        BinaryOp::Max => crate::kernels::activation::cpp_max(y, x),
        BinaryOp::Min => {
            if x < y {
                x
            } else {
                y
            }
        }
        BinaryOp::SquaredDifference => (x - y) * (x - y),
        BinaryOp::Prelu => {
            if x >= 0.0 {
                x
            } else {
                x * y
            }
        }
    }
}

/// Every shape of one op on one table, against the formulas (scalar) or the scalar table.
fn check(table: &Table, scalar: &Table, op: BinaryOp, n: usize, cols: usize, clamp: (f32, f32), rng: &mut Lcg) {
    let x = values(rng, n);
    let v = values(rng, n);
    let row = values(rng, cols);
    let c = values(rng, 1)[0];
    let others = [Other::Vector(&v), Other::Scalar(c), Other::Row(&row)];
    for other in others {
        for second in [false, true] {
            let mut want = vec![0f32; n];
            apply(scalar, op, &x, second, other, &mut want, clamp).unwrap();
            if table.isa == Isa::Scalar {
                for (i, &w) in want.iter().enumerate() {
                    let o = match other {
                        Other::Vector(v) => v[i],
                        Other::Scalar(c) => c,
                        Other::Row(r) => r[i % r.len()],
                    };
                    let y = if second { reference(op, o, x[i]) } else { reference(op, x[i], o) };
                    let y = crate::kernels::activation::clamp_min_max(y, clamp.0, clamp.1);
                    assert!(same(w, y), "{op:?} {i}: {w} vs {y}");
                }
            }
            let mut got = vec![f32::NAN; n];
            apply(table, op, &x, second, other, &mut got, clamp).unwrap();
            let mut in_place = x.clone();
            apply_in_place(table, op, &mut in_place, second, other, clamp).unwrap();
            for i in 0..n {
                assert!(
                    same(got[i], want[i]) && same(in_place[i], want[i]),
                    "{} {op:?} n {n} cols {cols} {other:?} second {second} at {i}: {} / {} vs {}",
                    table.name(),
                    got[i],
                    in_place[i],
                    want[i]
                );
            }
        }
    }
}

#[test]
fn simd_matches_scalar_on_every_shape() {
    let scalar = Table::for_isa(Isa::Scalar).unwrap();
    let mut rng = Lcg(0x5eed_b1a2);
    for table in available_tables() {
        for op in OPS {
            for cols in [1, 3, 7, 8, 15, 16, 17, 24, 33, 64, 100] {
                for rows in [0, 1, 2, 5] {
                    for clamp in [NO_CLAMP, (0.0, 6.0), (-1.0, 1.0), (0.0, f32::MAX)] {
                        check(table, scalar, op, rows * cols, cols, clamp, &mut rng);
                    }
                }
            }
        }
    }
}

#[test]
fn lengths_are_checked() {
    for table in available_tables() {
        let x = [1.0f32; 6];
        let mut out = [0f32; 6];
        assert!(apply(table, BinaryOp::Add, &x, false, Other::Vector(&[1.0; 5]), &mut out, NO_CLAMP).is_err());
        assert!(apply(table, BinaryOp::Add, &x, false, Other::Row(&[1.0; 4]), &mut out, NO_CLAMP).is_err());
        assert!(apply(table, BinaryOp::Add, &x, false, Other::Row(&[]), &mut out, NO_CLAMP).is_err());
        assert!(apply(table, BinaryOp::Add, &x, false, Other::Scalar(1.0), &mut out[..5], NO_CLAMP).is_err());
        let mut y = [1.0f32; 6];
        assert!(apply_in_place(table, BinaryOp::Mul, &mut y, true, Other::Vector(&[1.0; 7]), NO_CLAMP).is_err());
        apply(table, BinaryOp::Sub, &x, true, Other::Row(&[3.0, 4.0, 5.0]), &mut out, (0.0, 3.5)).unwrap();
        assert_eq!(out, [2.0, 3.0, 3.5, 2.0, 3.0, 3.5]);
    }
}
