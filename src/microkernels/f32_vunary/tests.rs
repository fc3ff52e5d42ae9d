//! Every available table against the scalar one (bit for bit), and the scalar one against
//! plain formulas.

use super::*;
use crate::microkernels::test_rng::Lcg;
use crate::microkernels::{Isa, Table, available_tables};

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn reference(op: UnaryOp, x: f32) -> f32 {
    match op {
        UnaryOp::Clamp { lo, hi } => crate::kernels::activation::clamp_min_max(x, lo, hi),
        UnaryOp::HardSwish => (x * SIXTH) * (x + 3.0).clamp(0.0, 6.0),
        UnaryOp::LeakyRelu { alpha } => {
            if x > 0.0 {
                x
            } else {
                x * alpha
            }
        }
    }
}

#[test]
fn simd_matches_scalar() {
    let ops = [
        UnaryOp::Clamp { lo: 0.0, hi: f32::INFINITY },
        UnaryOp::Clamp { lo: 0.0, hi: 6.0 },
        UnaryOp::Clamp { lo: -1.0, hi: 1.0 },
        UnaryOp::HardSwish,
        UnaryOp::LeakyRelu { alpha: 0.2 },
        UnaryOp::LeakyRelu { alpha: -1.5 },
    ];
    let scalar = Table::for_isa(Isa::Scalar).unwrap();
    let mut rng = Lcg(0x00c0_ffee);
    let n_max = 300;
    let x: Vec<f32> = (0..n_max)
        .map(|_| match rng.below(30) {
            0 => f32::NAN,
            1 => -0.0,
            2 => f32::INFINITY,
            3 => f32::NEG_INFINITY,
            _ => rng.f32() * 10.0,
        })
        .collect();
    for op in ops {
        let mut want = vec![0f32; n_max];
        apply(scalar, op, &x, &mut want).unwrap();
        for (&w, &xi) in want.iter().zip(&x) {
            let r = reference(op, xi);
            assert!(same(w, r) || (op == UnaryOp::HardSwish && xi.is_nan()), "{op:?} {xi}: {w} vs {r}");
        }
        for table in available_tables() {
            for n in (0..40).chain([63, 64, 65, 127, 200, n_max]) {
                let mut got = vec![f32::NAN; n];
                apply(table, op, &x[..n], &mut got).unwrap();
                for i in 0..n {
                    assert!(
                        same(got[i], want[i]),
                        "{} {op:?} n {n} at {i} (x {}): {} vs {}",
                        table.name(),
                        x[i],
                        got[i],
                        want[i]
                    );
                }
            }
            assert!(apply(table, op, &x[..3], &mut [0.0; 2]).is_err());
        }
    }
}

#[test]
fn hard_swish_is_close_to_the_reference_division() {
    let scalar = Table::for_isa(Isa::Scalar).unwrap();
    let x: Vec<f32> = (-1000..=1000).map(|i| i as f32 * 0.0071).collect();
    let mut got = vec![0f32; x.len()];
    apply(scalar, UnaryOp::HardSwish, &x, &mut got).unwrap();
    for (&xi, &g) in x.iter().zip(&got) {
        let want = crate::kernels::ops::hard_swish::hard_swish_f32(xi);
        assert!((g - want).abs() <= 2.0 * f32::EPSILON * want.abs(), "{xi}: {g} vs {want}");
    }
}
