//! Every max-pool table against the scalar twin, bit for bit.

use super::max_pixels;
use crate::kernels::activation::{clamp_min_max, cpp_max};
use crate::microkernels::available_tables;
use crate::microkernels::test_rng::Lcg;

#[test]
fn every_table_matches_the_scalar_twin_and_std_max() {
    let mut rng = Lcg(4242);
    let specials = [f32::NAN, -0.0, 0.0, f32::NEG_INFINITY, f32::INFINITY, f32::MIN];
    for case in 0..120 {
        // Channel counts around the 16- and 64-wide steps, windows of 1 to 9 pixels.
        let c = [1, 3, 15, 16, 17, 32, 63, 64, 65, 100, 128, 131][case % 12];
        let k = 1 + rng.below(9);
        let mut input: Vec<f32> = (0..(k + 2) * c).map(|_| rng.f32() * 10.0).collect();
        for s in specials {
            let at = rng.below(input.len());
            input[at] = s;
        }
        let bases: Vec<usize> = (0..k).map(|_| rng.below(3) * c + rng.below(k) * c).collect();
        let act = [(f32::MIN, f32::MAX), (-0.5, 0.5), (0.0, 6.0)][case % 3];
        let want: Vec<f32> = (0..c)
            .map(|j| {
                let m = bases.iter().fold(f32::MIN, |a, &b| cpp_max(a, input[b + j]));
                clamp_min_max(m, act.0, act.1)
            })
            .collect();
        for t in available_tables() {
            // Three pixels: the window, the window reversed, and the window without its
            // last pixel, filled out with its first (as a clipped window is).
            let clipped = &bases[..(k - 1).max(1)];
            let mut all = bases.clone();
            all.extend(bases.iter().rev());
            all.extend(clipped);
            all.resize(3 * k, bases[0]);
            let mut got3 = vec![7.0f32; 3 * c];
            max_pixels(t, &input, &all, k, c, &mut got3, act).unwrap();
            let (got, rest) = got3.split_at(c);
            let reversed: Vec<f32> = (0..c)
                .map(|j| {
                    let m = bases.iter().rev().fold(f32::MIN, |a, &b| cpp_max(a, input[b + j]));
                    clamp_min_max(m, act.0, act.1)
                })
                .collect();
            let want_clipped: Vec<f32> = (0..c)
                .map(|j| {
                    let m = clipped.iter().fold(f32::MIN, |a, &b| cpp_max(a, input[b + j]));
                    clamp_min_max(m, act.0, act.1)
                })
                .collect();
            let same = |x: &[f32], y: &[f32]| x.iter().zip(y).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same(&rest[..c], &reversed), "{} case {case} reversed", t.name());
            assert!(same(&rest[c..], &want_clipped), "{} case {case} clipped window", t.name());
            assert!(same(got, &want), "{} case {case} c {c} k {k}: {got:?} vs {want:?}", t.name());
        }
    }
}

#[test]
fn windows_past_the_input_and_mismatched_sizes_are_errors() {
    let input = vec![1.0f32; 40];
    for t in available_tables() {
        let mut out = vec![0.0f32; 16];
        let act = (f32::MIN, f32::MAX);
        assert!(max_pixels(t, &input, &[0, 30], 2, 16, &mut out, act).is_err());
        assert!(max_pixels(t, &input, &[], 0, 16, &mut out, act).is_err());
        assert!(max_pixels(t, &input, &[0, 24, 8], 2, 16, &mut out, act).is_err());
        assert!(max_pixels(t, &input, &[0, 24], 2, 16, &mut out, act).is_ok());
    }
}
