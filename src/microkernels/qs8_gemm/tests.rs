//! Every 8-bit GEMM table against a direct evaluation of TFLite's formula, on random
//! shapes with row, column and K tails, padding taps and extreme zero points.

use super::*;
use crate::kernels::quant::multiply_by_quantized_multiplier;
use crate::microkernels::f32_gemm::{ConvRows, DenseRows};
use crate::microkernels::test_rng::Lcg;
use crate::microkernels::{Isa, Table, available_tables};

/// TFLite's integer convolution of `m` rows through `taps`.
#[allow(clippy::too_many_arguments)]
fn direct(
    input: &[i8],
    taps: &impl RowTaps,
    m: usize,
    n: usize,
    ks: usize,
    kc: usize,
    w: &[i8],
    bias: &[i32],
    zp: i32,
    out: &Qs8Output<'_>,
) -> Vec<i8> {
    let mut res = vec![0i8; m * n];
    let mut offs = vec![0; ks];
    for r in 0..m {
        taps.fill(r..r + 1, &mut offs);
        for o in 0..n {
            let mut acc = bias[o];
            for (t, &off) in offs.iter().enumerate() {
                if off != PAD {
                    for k in 0..kc {
                        let x = i32::from(input[off + k]) - zp;
                        acc = acc.wrapping_add(x * i32::from(w[(o * ks + t) * kc + k]));
                    }
                }
            }
            let (mult, shift) = if out.mults.len() == 1 { out.mults[0] } else { out.mults[o] };
            let v = multiply_by_quantized_multiplier(acc, mult, shift).wrapping_add(out.offset);
            res[r * n + o] = v.clamp(out.range.0, out.range.1) as i8;
        }
    }
    res
}

fn tables() -> Vec<(&'static Table, &'static Qs8GemmKernels)> {
    let t: Vec<_> = available_tables().into_iter().filter_map(|t| t.qs8_gemm.map(|k| (t, k))).collect();
    assert!(t.iter().any(|(t, _)| t.isa == Isa::Scalar), "the scalar table has 8-bit GEMM kernels");
    t
}

fn random_case(rng: &mut Lcg, n: usize, ks: usize, kc: usize) -> (Vec<i8>, Vec<i32>, Vec<(i32, i32)>) {
    let w: Vec<i8> = (0..n * ks * kc).map(|_| (rng.below(255) as i32 - 127) as i8).collect();
    let bias: Vec<i32> = (0..n).map(|_| rng.below(40001) as i32 - 20000).collect();
    let mults: Vec<(i32, i32)> =
        (0..n).map(|_| ((1 << 30) + (rng.next() >> 2) as i32, -(rng.below(12) as i32) - 4)).collect();
    (w, bias, mults)
}

#[test]
fn dense_rows_match_direct_on_every_table() {
    let mut rng = Lcg(0x5151_2323);
    // Layers with small sums, no left shift and enough right shift take the float
    // shortcut: some of these must, so that it is checked against the direct sums.
    let (mut with_float, mut one_sided) = (0, 0);
    for case in 0..80 {
        let m = 1 + rng.below(30);
        let n = 1 + rng.below(70);
        let kc = 1 + rng.below(50);
        let zp = [-128, 127, 0, -3, 5][case % 5];
        let input: Vec<i8> = (0..m * kc).map(|_| rng.next() as i8).collect();
        let (w, bias, mut mults) = random_case(&mut rng, n, 1, kc);
        if case % 4 == 1 {
            // Multipliers above one (left shifts) and the one multiplier whose high
            // multiply can saturate.
            for (j, m) in mults.iter_mut().enumerate() {
                m.1 = (j % 5) as i32 - 1;
            }
            mults[0] = (i32::MIN, 2);
        }
        let per_tensor = case % 3 == 0;
        let offset = rng.below(256) as i32 - 128;
        let out = Qs8Output {
            mults: if per_tensor { &mults[..1] } else { &mults },
            offset,
            // Full, narrowed, and from the zero point up (a fused RELU: one-sided).
            range: [(-128, 127), (-100, 90), (offset, 127), (offset, (offset + 30).min(127))][case % 4],
        };
        let taps = DenseRows { stride: kc };
        let want = direct(&input, &taps, m, n, 1, kc, &w, &bias, zp, &out);
        for (t, k) in tables() {
            let packed = pack(k, n, 1, kc, 1, DenseFilter { values: &w, per_tap: kc }, Some(&bias), zp, &out).unwrap();
            if t.isa == Isa::Scalar {
                with_float += usize::from(packed.has_float_requant());
                one_sided += usize::from(matches!(&packed.tables, Tables::Requant(_, Some(f)) if f.one_sided));
            }
            let mut got = vec![0x55i8; m * n];
            igemm(k, &packed, &input, &taps, 0..m, 0..n, &mut got, n).unwrap();
            assert_eq!(got, want, "{} case {case}: m {m} n {n} kc {kc} zp {zp}", t.name());
        }
    }
    assert!(with_float >= 8, "only {with_float} layers took the float shortcut");
    assert!(one_sided >= 4, "only {one_sided} layers took its one-sided form");
}

/// The float shortcut's declined lanes: with every channel's offsets raised by 0.3 (so
/// the shortcut's floor is wrong wherever the fraction of its `y` is below 0.3) and its
/// decline threshold raised to 0.45 (so exactly the lanes whose fraction is below 0.45
/// are declined, those included), the kernels' fix-up pass must still give the exact
/// outputs, for one- and two-vector tiles, column tails and every row count.
#[test]
fn declined_lanes_are_recomputed_exactly() {
    let mut rng = Lcg(0xdec1_14ed);
    let mut checked = 0;
    for case in 0..40 {
        let m = 1 + rng.below(30);
        let n = [16, 32, 40, 64, 7, 23][case % 6];
        let kc = 1 + rng.below(40);
        let zp = [-128, 0, 5][case % 3];
        let input: Vec<i8> = (0..m * kc).map(|_| rng.next() as i8).collect();
        let (w, bias, mults) = random_case(&mut rng, n, 1, kc);
        let offset = rng.below(256) as i32 - 128;
        let out = Qs8Output { mults: &mults, offset, range: [(-128, 127), (-100, 90), (offset, 127)][case % 3] };
        let taps = DenseRows { stride: kc };
        let want = direct(&input, &taps, m, n, 1, kc, &w, &bias, zp, &out);
        for (t, k) in tables() {
            let mut packed =
                pack(k, n, 1, kc, 1, DenseFilter { values: &w, per_tap: kc }, Some(&bias), zp, &out).unwrap();
            let Tables::Requant(_, Some(f)) = &mut packed.tables else { continue };
            f.decline_below.iter_mut().for_each(|t| *t = 0.45);
            f.offset_positive.iter_mut().chain(f.offset_negative.iter_mut()).for_each(|o| *o += 0.3);
            checked += usize::from(t.isa != Isa::Scalar);
            let mut got = vec![0x55i8; m * n];
            igemm(k, &packed, &input, &taps, 0..m, 0..n, &mut got, n).unwrap();
            assert_eq!(got, want, "{} case {case}: m {m} n {n} kc {kc} zp {zp}", t.name());
        }
    }
    if tables().iter().any(|(t, _)| t.isa != Isa::Scalar) {
        assert!(checked >= 10, "only {checked} layers took the float shortcut on a SIMD table");
    }
}

#[test]
fn wide_images_match_direct_on_every_table() {
    // Output rows long enough for long runs of rows whose lines or taps step together:
    // an RGB first layer read a filter row at a time (the right edge copied), a padded
    // 3x3 layer tap by tap, a 5x5 one and one of 4 channels read by lines; over every row
    // and over a range of rows that starts and ends inside output rows.
    let mut rng = Lcg(0x51de);
    for &(in_h, in_w, in_c, f, stride, pad, n) in
        &[(9, 61, 3, 3, 2, 1, 32), (6, 40, 16, 3, 1, 1, 24), (7, 53, 8, 5, 1, 2, 48), (4, 70, 5, 3, 2, 0, 16)]
    {
        let taps = ConvRows::square(in_h, in_w, in_c, f, stride, pad);
        let (ks, out_w, m) = (f * f, taps.out_w, taps.out_h * taps.out_w);
        let zp = -3;
        let input: Vec<i8> = (0..in_h * in_w * in_c).map(|_| rng.next() as i8).collect();
        let (w, bias, mults) = random_case(&mut rng, n, ks, in_c);
        let out = Qs8Output { mults: &mults, offset: 5, range: (-128, 127) };
        let want = direct(&input, &taps, m, n, ks, in_c, &w, &bias, zp, &out);
        let line = if in_c % 4 == 0 { 1 } else { f };
        for (t, k) in tables() {
            let filter = DenseFilter { values: &w, per_tap: in_c };
            let packed = pack(k, n, ks, in_c, line, filter, Some(&bias), zp, &out).unwrap();
            let mut got = vec![0x55i8; m * n];
            igemm(k, &packed, &input, &taps, 0..m, 0..n, &mut got, n).unwrap();
            assert_eq!(got, want, "{} {f}x{f} in_c {in_c}", t.name());
            let rows = out_w / 2..m - out_w / 3;
            let mut part = vec![0x55i8; rows.len() * n];
            igemm(k, &packed, &input, &taps, rows.clone(), 0..n, &mut part, n).unwrap();
            assert_eq!(part, want[rows.start * n..rows.end * n], "{} {f}x{f} in_c {in_c}, rows {rows:?}", t.name());
        }
    }
}

#[test]
fn convolution_rows_match_direct_on_every_table() {
    let mut rng = Lcg(0xabcd_0042);
    for case in 0..60 {
        let in_c = [3, 4, 8, 5, 16, 12, 1][case % 7];
        let (f_h, f_w) = [(3, 3), (1, 1), (2, 3), (5, 5)][case % 4];
        let stride = 1 + case % 2;
        let dil = 1 + (case / 7) % 2;
        let (in_h, in_w) = (3 + rng.below(8), 3 + rng.below(8));
        let pad = (case % 3) * dil;
        let reach_h = (f_h - 1) * dil + 1;
        let reach_w = (f_w - 1) * dil + 1;
        if in_h + 2 * pad < reach_h || in_w + 2 * pad < reach_w {
            continue;
        }
        let out_h = (in_h + 2 * pad - reach_h) / stride + 1;
        let out_w = (in_w + 2 * pad - reach_w) / stride + 1;
        let batches = 1 + case % 2;
        let n = 1 + rng.below(40);
        let taps = ConvRows {
            in_h,
            in_w,
            in_c,
            out_h,
            out_w,
            f_h,
            f_w,
            stride_h: stride,
            stride_w: stride,
            dil_h: dil,
            dil_w: dil,
            pad_h: pad,
            pad_w: pad,
        };
        let m = batches * out_h * out_w;
        let ks = f_h * f_w;
        let zp = [-128, 127, 7, 0][case % 4];
        let input: Vec<i8> = (0..batches * in_h * in_w * in_c).map(|_| rng.next() as i8).collect();
        let (w, bias, mults) = random_case(&mut rng, n, ks, in_c);
        let out = Qs8Output { mults: &mults, offset: -7, range: (-128, 127) };
        let want = direct(&input, &taps, m, n, ks, in_c, &w, &bias, zp, &out);
        // Tap by tap, and a filter row at a time (read in place where a row's taps lie
        // back to back inside the input, copied where they do not: padding, dilation).
        for line in if f_w > 1 { vec![1, f_w] } else { vec![1] } {
            for (t, k) in tables() {
                let filter = DenseFilter { values: &w, per_tap: in_c };
                let packed = pack(k, n, ks, in_c, line, filter, Some(&bias), zp, &out).unwrap();
                let mut got = vec![0x55i8; m * n];
                // Two calls over a split of the rows, as threads run it.
                let half = m / 2;
                let (lo, hi) = got.split_at_mut(half * n);
                igemm(k, &packed, &input, &taps, 0..half, 0..n, lo, n).unwrap();
                igemm(k, &packed, &input, &taps, half..m, 0..n, hi, n).unwrap();
                assert_eq!(got, want, "{} case {case}: {taps:?} n {n} zp {zp} line {line}", t.name());
            }
        }
    }
}

#[test]
fn column_ranges_write_only_their_columns() {
    let mut rng = Lcg(77);
    let (m, n, kc) = (9, 70, 24);
    let input: Vec<i8> = (0..m * kc).map(|_| rng.next() as i8).collect();
    let (w, bias, mults) = random_case(&mut rng, n, 1, kc);
    let out = Qs8Output { mults: &mults, offset: 3, range: (-128, 127) };
    let taps = DenseRows { stride: kc };
    let want = direct(&input, &taps, m, n, 1, kc, &w, &bias, -1, &out);
    for (t, k) in tables() {
        let packed = pack(k, n, 1, kc, 1, DenseFilter { values: &w, per_tap: kc }, Some(&bias), -1, &out).unwrap();
        let nr = packed.nr;
        let mut got = vec![0i8; m * n];
        let mut c0 = 0;
        while c0 < n {
            let c1 = (c0 + nr).min(n);
            let mut part = vec![0i8; m * (c1 - c0)];
            igemm(k, &packed, &input, &taps, 0..m, c0..c1, &mut part, c1 - c0).unwrap();
            for r in 0..m {
                got[r * n + c0..r * n + c1].copy_from_slice(&part[r * (c1 - c0)..(r + 1) * (c1 - c0)]);
            }
            c0 = c1;
        }
        assert_eq!(got, want, "{}", t.name());
    }
}

#[test]
fn bad_arguments_are_errors() {
    let k = Table::for_isa(Isa::Scalar).unwrap().qs8_gemm.unwrap();
    let mults = [(1 << 30, -1)];
    let out = Qs8Output { mults: &mults, offset: 0, range: (-128, 127) };
    let zeros = DenseFilter { values: &[0; 8], per_tap: 4 };
    assert!(pack(k, 0, 1, 4, 1, DenseFilter { values: &[], per_tap: 4 }, None, 0, &out).is_err());
    assert!(pack(k, 2, 1, 4, 1, zeros, Some(&[1]), 0, &out).is_err());
    assert!(pack(k, 2, 1, 4, 1, zeros, None, 200, &out).is_err());
    let wide = Qs8Output { mults: &mults, offset: 0, range: (-129, 127) };
    assert!(pack(k, 2, 1, 4, 1, zeros, None, 0, &wide).is_err());
    // A filter of the wrong size, or with more values per tap than the kernels read.
    assert!(pack(k, 2, 1, 4, 1, DenseFilter { values: &[0; 7], per_tap: 4 }, None, 0, &out).is_err());
    assert!(pack(k, 2, 1, 4, 1, DenseFilter { values: &[0; 10], per_tap: 5 }, None, 0, &out).is_err());
    assert!(pack(k, 2, 1, 4, 1, DenseFilter { values: &[], per_tap: 0 }, None, 0, &out).is_err());
    let packed = pack(k, 2, 1, 4, 1, DenseFilter { values: &[1; 8], per_tap: 4 }, None, 0, &out).unwrap();
    let taps = DenseRows { stride: 4 };
    let mut c = [0i8; 4];
    // Two rows of 4 need 8 input bytes.
    assert!(igemm(k, &packed, &[0; 7], &taps, 0..2, 0..2, &mut c, 2).is_err());
    assert!(igemm(k, &packed, &[0; 8], &taps, 0..2, 0..2, &mut c[..3], 2).is_err());
    assert!(igemm(k, &packed, &[0; 8], &taps, 0..2, 0..3, &mut c, 2).is_err());
    igemm(k, &packed, &[0; 8], &taps, 0..2, 0..2, &mut c, 2).unwrap();
}

#[test]
fn hybrid_rows_match_direct_on_every_table() {
    let mut rng = Lcg(0x4b1d);
    for case in 0..40 {
        let in_c = [4, 3, 8, 16, 5][case % 5];
        let (f, stride, pad) = [(3, 1, 1), (1, 1, 0), (3, 2, 1), (2, 1, 0)][case % 4];
        let (in_h, in_w) = (2 + rng.below(7), 2 + rng.below(7));
        if in_h + 2 * pad < f || in_w + 2 * pad < f {
            continue;
        }
        let taps = ConvRows::square(in_h, in_w, in_c, f, stride, pad);
        let (m, n, ks) = (taps.out_h * taps.out_w, 1 + rng.below(40), f * f);
        let input: Vec<i8> = (0..in_h * in_w * in_c).map(|_| rng.next() as i8).collect();
        let w: Vec<i8> = (0..n * ks * in_c).map(|_| (rng.below(255) as i32 - 127) as i8).collect();
        let scales: Vec<f32> = (0..n).map(|_| 0.001 + rng.below(1000) as f32 * 1e-5).collect();
        let bias: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
        // Padding needs one zero point for all rows; dense rows may each have their own.
        let zps: Vec<i32> =
            (0..m).map(|r| if pad > 0 { [-128, 127, 9][case % 3] } else { (r * 37 % 256) as i32 - 128 }).collect();
        let row_scales: Vec<f32> = (0..m).map(|_| 0.01 + rng.below(100) as f32 * 1e-3).collect();
        let per_tensor = case % 3 == 0;
        let sc = if per_tensor { &scales[..1] } else { &scales[..] };
        let act = if case % 2 == 0 { (f32::MIN, f32::MAX) } else { (-0.5, 0.75) };
        let mut want = vec![0f32; m * n];
        let mut offs = vec![0; ks];
        for r in 0..m {
            taps.fill(r..r + 1, &mut offs);
            for o in 0..n {
                let mut acc = 0i32;
                for (t, &off) in offs.iter().enumerate() {
                    if off != PAD {
                        for k in 0..in_c {
                            let x = i32::from(input[off + k]) - zps[r];
                            acc = acc.wrapping_add(x * i32::from(w[(o * ks + t) * in_c + k]));
                        }
                    }
                }
                let s = if per_tensor { scales[0] } else { scales[o] };
                let v = acc as f32 * s * row_scales[r] + bias[o];
                want[r * n + o] = v.max(act.0).min(act.1);
            }
        }
        for (t, k) in tables() {
            let line = if case % 2 == 0 { f } else { 1 };
            let filter = DenseFilter { values: &w, per_tap: in_c };
            let packed = pack_hybrid(k, n, ks, in_c, line, filter, sc, Some(&bias)).unwrap();
            let mut got = vec![f32::NAN; m * n];
            let quant = HybridRows { scales: &row_scales, zero_points: &zps };
            let padv = zps[0] as i8;
            igemm_hybrid(k, &packed, &input, &taps, 0..m, 0..n, &quant, padv, &mut got, n, act).unwrap();
            assert_eq!(got, want, "{} case {case}: {taps:?} n {n} line {line}", t.name());
            // The int8 entry point refuses hybrid weights.
            let mut bytes = vec![0i8; m * n];
            assert!(igemm(k, &packed, &input, &taps, 0..m, 0..n, &mut bytes, n).is_err());
        }
    }
}

#[test]
fn int32_outputs_are_the_exact_sums() {
    let mut rng = Lcg(1234);
    for case in 0..30 {
        let (m, n, kc) = (1 + rng.below(20), 1 + rng.below(70), 1 + rng.below(90));
        let zp = [-128, 127, 0, 17][case % 4];
        let input: Vec<i8> = (0..m * kc).map(|_| rng.next() as i8).collect();
        let (w, bias, _) = random_case(&mut rng, n, 1, kc);
        let mut want = vec![0i32; m * n];
        for r in 0..m {
            for o in 0..n {
                let dot = (0..kc)
                    .fold(0i32, |a, k| a.wrapping_add((i32::from(input[r * kc + k]) - zp) * i32::from(w[o * kc + k])));
                want[r * n + o] = dot.wrapping_add(bias[o]);
            }
        }
        for (t, k) in tables() {
            let packed = pack_int32(k, n, 1, kc, DenseFilter { values: &w, per_tap: kc }, Some(&bias), zp).unwrap();
            let mut got = vec![0x5555i32; m * n];
            igemm_int32(k, &packed, &input, &DenseRows { stride: kc }, 0..m, 0..n, &mut got, n).unwrap();
            assert_eq!(got, want, "{} case {case}", t.name());
        }
    }
}

#[test]
fn sign_flips_match_the_scalar_twin() {
    let mut rng = Lcg(0xf11b_0080);
    for len in (0..200).chain([1000, 4095, 4096]) {
        let src: Vec<i8> = (0..len).map(|_| rng.next() as i8).collect();
        let want: Vec<i8> = src.iter().map(|&x| x ^ i8::MIN).collect();
        for (t, k) in tables() {
            // One byte past the slice must stay as it was (masked tails).
            let mut dst = vec![7i8; len + 1];
            (k.flip)(&src, &mut dst[..len]);
            assert_eq!(&dst[..len], &want[..], "{} flip of {len}", t.isa.name());
            assert_eq!(dst[len], 7, "{} flip of {len} wrote past its end", t.isa.name());
        }
    }
}

#[test]
fn whole_channel_packing_matches_value_by_value() {
    // The copy of whole channels (taps read one at a time, no padded channels) against
    // the value-by-value placement every other layout takes, on every table's blocks.
    let mut rng = Lcg(0x9ac4);
    for (t, k) in tables() {
        for &(n, ks, kc) in &[(1, 1, 4), (33, 1, 64), (70, 9, 8), (16, 4, 12), (96, 1, 16), (5, 3, 132)] {
            let values: Vec<i8> = (0..n * ks * kc).map(|_| rng.next() as i8).collect();
            let filter = DenseFilter { values: &values, per_tap: kc };
            let fast = pack_weights(k, n, ks, kc, 1, filter).unwrap();
            let mut slow = PackedWeightsByValue::new(k, n, ks, kc);
            for o in 0..n {
                for tap in 0..ks {
                    for v in 0..kc {
                        slow.place(o, tap, v, values[(o * ks + tap) * kc + v]);
                    }
                }
            }
            assert_eq!(&fast.data[..], &slow.data[..], "{} n {n} ks {ks} kc {kc}", t.name());
            assert_eq!(fast.sums, slow.sums, "{} n {n} ks {ks} kc {kc}", t.name());
            assert_eq!(fast.abs_sums, slow.abs_sums, "{} n {n} ks {ks} kc {kc}", t.name());
        }
    }
}

/// The layout of a tap-by-tap packing (`kc` a multiple of 4) written value by value: block
/// `o / nr` holds `[ks * kc / 4][nr][4]` bytes.
struct PackedWeightsByValue {
    data: Vec<i8>,
    sums: Vec<i32>,
    abs_sums: Vec<u64>,
    nr: usize,
    ks: usize,
    kc: usize,
}

impl PackedWeightsByValue {
    fn new(k: &Qs8GemmKernels, n: usize, ks: usize, kc: usize) -> Self {
        let nr = k.for_outputs(n).nr;
        Self { data: vec![0; n.div_ceil(nr) * nr * ks * kc], sums: vec![0; n], abs_sums: vec![0; n], nr, ks, kc }
    }

    fn place(&mut self, o: usize, tap: usize, v: usize, w: i8) {
        let (nr, j) = (self.nr, o % self.nr);
        let q = tap * self.kc + v;
        self.data[o / nr * self.ks * self.kc * nr + q / 4 * 4 * nr + j * 4 + q % 4] = w;
        self.sums[o] = self.sums[o].wrapping_add(i32::from(w));
        self.abs_sums[o] += u64::from(w.unsigned_abs());
    }
}
