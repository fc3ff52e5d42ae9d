//! Every row-sum table against the scalar twin, on odd widths (tails of the 64- and
//! 16-lane steps), wrapping sums and the extreme values of both types.

use crate::microkernels::available_tables;
use crate::microkernels::test_rng::Lcg;

#[test]
fn every_table_matches_the_scalar_twin() {
    let scalar = super::scalar::KERNELS;
    let mut rng = Lcg(5);
    for n in [1usize, 3, 15, 16, 17, 63, 64, 65, 100, 129, 1280] {
        for count in [0usize, 1, 2, 7, 49] {
            let bytes: Vec<u8> = (0..n * count + n / 2).map(|_| rng.next() as u8).collect();
            let signed: Vec<i8> = bytes.iter().map(|&b| b as i8).collect();
            // Start near the wrap so that the sums overflow `i32` in some lanes.
            let start: Vec<i32> = (0..n).map(|j| if j % 3 == 0 { i32::MAX - 200 } else { j as i32 - 50 }).collect();
            let (mut want_i8, mut want_u8) = (start.clone(), start.clone());
            (scalar.i8)(&signed, &mut want_i8);
            (scalar.u8)(&bytes, &mut want_u8);
            for t in available_tables() {
                let (mut got_i8, mut got_u8) = (start.clone(), start.clone());
                (t.qs8_rsum.i8)(&signed, &mut got_i8);
                (t.qs8_rsum.u8)(&bytes, &mut got_u8);
                assert_eq!(got_i8, want_i8, "{} int8, {n} wide, {count} rows", t.name());
                assert_eq!(got_u8, want_u8, "{} uint8, {n} wide, {count} rows", t.name());
            }
        }
    }
}

#[test]
fn the_scalar_twin_adds_whole_rows() {
    let mut sums = vec![1i32, 2, 3];
    (super::scalar::KERNELS.i8)(&[-128, 127, 0, 1, 1, 1, 9], &mut sums);
    assert_eq!(sums, vec![-126, 130, 4]);
    let mut sums = vec![0i32; 2];
    (super::scalar::KERNELS.u8)(&[255, 255, 255, 255], &mut sums);
    assert_eq!(sums, vec![510, 510]);
}
