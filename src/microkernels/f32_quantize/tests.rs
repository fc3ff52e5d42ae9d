//! Every quantization table against the scalar twin.

use crate::microkernels::available_tables;
use crate::microkernels::test_rng::Lcg;

#[test]
fn every_table_matches_the_scalar_twin() {
    let scalar = super::scalar::KERNELS;
    let mut rng = Lcg(31);
    for len in 0..70 {
        let mut values: Vec<f32> = (0..len).map(|_| rng.f32() * 300.0).collect();
        // Exact halves, huge values, signed zeros and infinities.
        for (i, v) in [0.5f32, -0.5, 2.5, -2.5, 1e30, -1e30, -0.0, f32::INFINITY, 126.5, -127.5].iter().enumerate() {
            if i < values.len() {
                let at = i * 7 % values.len();
                values[at] = *v;
            }
        }
        for t in available_tables() {
            let k = &t.f32_quantize;
            assert_eq!((k.min_max)(&values), (scalar.min_max)(&values), "{} len {len}", t.name());
            for (inv, off, range) in [(1.0, 0.0, (-127, 127)), (0.37, -3.0, (-128, 127)), (2.0, 127.0, (-128, 127))] {
                let mut want = vec![0i8; len];
                let mut got = vec![0x55i8; len];
                (scalar.quantize)(&values, inv, off, range, &mut want);
                (k.quantize)(&values, inv, off, range, &mut got);
                assert_eq!(got, want, "{} len {len} inv {inv} offset {off}", t.name());
            }
        }
    }
    // A NaN in a short slice, in the blocks of 64 a long one is scanned in, and in its tail.
    for (len, at) in [(20, 13), (150, 13), (150, 100), (150, 140)] {
        let mut with_nan = vec![1.0f32; len];
        with_nan[at] = f32::NAN;
        for t in available_tables() {
            assert_eq!((t.f32_quantize.min_max)(&with_nan), None, "{} len {len} NaN at {at}", t.name());
            let mut got = vec![9i8; len];
            (t.f32_quantize.quantize)(&with_nan, 1.0, 0.0, (-127, 127), &mut got);
            assert_eq!(got[at], 0);
            assert_eq!(got[(at + 1) % len], 1);
        }
    }
}
