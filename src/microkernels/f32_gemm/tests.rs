//! Every GEMM table against a direct loop, and every SIMD table against the scalar twin,
//! on random shapes with row and column tails.

use super::*;
use crate::microkernels::{Isa, Table, available_tables};

use crate::microkernels::test_rng::Lcg;

fn scalar() -> &'static Table {
    Table::for_isa(Isa::Scalar).unwrap()
}

#[allow(clippy::too_many_arguments)]
/// Direct evaluation of a convolution as `rows x n` through `taps`.
fn direct(
    input: &[f32],
    taps: &impl RowTaps,
    m: usize,
    n: usize,
    ks: usize,
    kc: usize,
    w: &[f32],
    bias: &[f32],
    act: (f32, f32),
) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    let mut offs = vec![0; ks];
    for r in 0..m {
        // One row at a time, so the counting in `fill` is checked against fresh starts.
        taps.fill(r..r + 1, &mut offs);
        for o in 0..n {
            let mut acc = bias[o] as f64;
            for (t, &off) in offs.iter().enumerate() {
                if off != PAD {
                    for k in 0..kc {
                        acc += input[off + k] as f64 * w[(o * ks + t) * kc + k] as f64;
                    }
                }
            }
            out[r * n + o] = (acc as f32).max(act.0).min(act.1);
        }
    }
    out
}

fn close(a: &[f32], b: &[f32], terms: usize) -> std::result::Result<(), String> {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let tol = 1e-6 * terms as f32 + 1e-5 * x.abs().max(y.abs());
        if (x - y).abs() > tol {
            return Err(format!("element {i}: {x} vs {y}"));
        }
    }
    Ok(())
}

#[test]
fn dense_gemm_matches_direct_on_every_table() {
    let mut rng = Lcg(0x9e3779b97f4a7c15);
    for case in 0..60 {
        let m = 1 + rng.below(40);
        let n = 1 + rng.below(70);
        let kc = 1 + rng.below(50);
        let input: Vec<f32> = (0..m * kc).map(|_| rng.f32()).collect();
        let w: Vec<f32> = (0..n * kc).map(|_| rng.f32()).collect();
        let bias: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
        let act = if case % 3 == 0 { (-0.5, 0.7) } else { (f32::MIN, f32::MAX) };
        let taps = DenseRows { stride: kc };
        let want = direct(&input, &taps, m, n, 1, kc, &w, &bias, act);
        for table in available_tables() {
            let packed = pack(&table.f32_gemm, n, 1, kc, |o, _, k| w[o * kc + k], Some(&bias)).unwrap();
            let mut out = vec![f32::NAN; m * n];
            igemm(table, &packed, &input, &taps, 0..m, 0..n, &mut out, n, act).unwrap();
            close(&out, &want, kc).unwrap_or_else(|e| panic!("{} case {case} m{m} n{n} k{kc}: {e}", table.name()));
        }
    }
}

#[test]
fn conv_igemm_matches_direct_and_simd_matches_scalar() {
    let mut rng = Lcg(12345);
    for case in 0..80 {
        let (f_h, f_w) = [(1, 1), (3, 3), (5, 5), (3, 1), (2, 3)][case % 5];
        let stride = 1 + rng.below(2);
        let dil = 1 + rng.below(2) * usize::from(case % 4 == 0);
        let in_h = f_h + rng.below(9);
        let in_w = f_w + rng.below(9);
        // Channel counts around every table's vector widths and K steps (8, 16, 24).
        let in_c = [1, 3, 4, 7, 8, 12, 16, 17, 29][rng.below(9)];
        // Output counts around every table's tile widths (1, 4, 8, 16, 24, 32).
        let n = [1, 3, 5, 8, 9, 16, 17, 20, 24, 33, 40, 70][rng.below(12)];
        let batches = 1 + rng.below(2);
        let same = rng.below(2) == 0;
        let (pad_h, pad_w) = if same { ((f_h - 1) * dil / 2, (f_w - 1) * dil / 2) } else { (0, 0) };
        let eff_h = (f_h - 1) * dil + 1;
        let eff_w = (f_w - 1) * dil + 1;
        if in_h + 2 * pad_h < eff_h || in_w + 2 * pad_w < eff_w {
            continue;
        }
        let out_h = (in_h + 2 * pad_h - eff_h) / stride + 1;
        let out_w = (in_w + 2 * pad_w - eff_w) / stride + 1;
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
            pad_h,
            pad_w,
        };
        let ks = f_h * f_w;
        let m = batches * out_h * out_w;
        let input: Vec<f32> = (0..batches * in_h * in_w * in_c).map(|_| rng.f32()).collect();
        let w: Vec<f32> = (0..n * ks * in_c).map(|_| rng.f32()).collect();
        let bias: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
        let act = (-1.5, 1.5);
        let want = direct(&input, &taps, m, n, ks, in_c, &w, &bias, act);
        let run = |table: &Table| {
            let packed = pack(&table.f32_gemm, n, ks, in_c, |o, t, k| w[(o * ks + t) * in_c + k], Some(&bias)).unwrap();
            let mut out = vec![f32::NAN; m * n];
            igemm(table, &packed, &input, &taps, 0..m, 0..n, &mut out, n, act).unwrap();
            out
        };
        let reference = run(scalar());
        close(&reference, &want, ks * in_c).unwrap_or_else(|e| panic!("scalar case {case}: {e}"));
        for table in available_tables() {
            let got = run(table);
            close(&got, &reference, ks * in_c)
                .unwrap_or_else(|e| panic!("{} vs scalar, case {case}: {e}", table.name()));
        }
    }
}

#[test]
fn wide_images_step_through_runs_of_rows() {
    // Output rows long enough for whole tiles inside one run of rows, so that tiles step
    // from their first row's pointers: an RGB first layer (read a filter row at a time,
    // the edges gathered), a padded 3x3 layer tap by tap (padding taps step through the
    // zeros), a 5x5 one, and a 1x1 one; each over every row and over a range of rows that
    // starts and ends inside output rows.
    let mut rng = Lcg(0x57e9);
    for &(in_h, in_w, in_c, f, stride, pad, n) in
        &[(9, 45, 3, 3, 2, 1, 32), (6, 40, 16, 3, 1, 1, 24), (7, 33, 8, 5, 1, 2, 9), (3, 50, 12, 1, 1, 0, 40)]
    {
        let taps = ConvRows::square(in_h, in_w, in_c, f, stride, pad);
        let (ks, out_w, m) = (f * f, taps.out_w, taps.out_h * taps.out_w);
        let input: Vec<f32> = (0..in_h * in_w * in_c).map(|_| rng.f32()).collect();
        let w: Vec<f32> = (0..n * ks * in_c).map(|_| rng.f32()).collect();
        let bias: Vec<f32> = (0..n).map(|_| rng.f32()).collect();
        let act = (f32::MIN, f32::MAX);
        let want = direct(&input, &taps, m, n, ks, in_c, &w, &bias, act);
        for table in available_tables() {
            let packed = pack(&table.f32_gemm, n, ks, in_c, |o, t, k| w[(o * ks + t) * in_c + k], Some(&bias)).unwrap();
            let mut out = vec![f32::NAN; m * n];
            igemm(table, &packed, &input, &taps, 0..m, 0..n, &mut out, n, act).unwrap();
            close(&out, &want, ks * in_c).unwrap_or_else(|e| panic!("{} {f}x{f} in_c {in_c}: {e}", table.name()));
            let rows = out_w / 2..m - out_w / 3;
            let mut part = vec![f32::NAN; rows.len() * n];
            igemm(table, &packed, &input, &taps, rows.clone(), 0..n, &mut part, n, act).unwrap();
            close(&part, &want[rows.start * n..rows.end * n], ks * in_c)
                .unwrap_or_else(|e| panic!("{} {f}x{f} in_c {in_c}, rows {rows:?}: {e}", table.name()));
        }
    }
}

#[test]
fn row_and_column_ranges_write_only_their_part() {
    let mut rng = Lcg(7);
    let (m, n, kc) = (23, 71, 9);
    let input: Vec<f32> = (0..m * kc).map(|_| rng.f32()).collect();
    let w: Vec<f32> = (0..n * kc).map(|_| rng.f32()).collect();
    let taps = DenseRows { stride: kc };
    let act = (f32::MIN, f32::MAX);
    let want = direct(&input, &taps, m, n, 1, kc, &w, &vec![0.0; n], act);
    for table in available_tables() {
        let nr = table.f32_gemm.for_outputs(n).nr;
        let packed = pack(&table.f32_gemm, n, 1, kc, |o, _, k| w[o * kc + k], None).unwrap();
        // A single row split by output-channel blocks, as a batch-1 fully connected layer
        // is split over threads.
        let mut row = vec![f32::NAN; n];
        let (left, right) = row.split_at_mut(nr);
        igemm(table, &packed, &input, &taps, 5..6, 0..nr, left, n, act).unwrap();
        igemm(table, &packed, &input, &taps, 5..6, nr..n, right, n, act).unwrap();
        close(&row, &want[5 * n..6 * n], kc).unwrap();
        // Rows 3..17 only.
        let mut out = vec![f32::NAN; 14 * n];
        igemm(table, &packed, &input, &taps, 3..17, 0..n, &mut out, n, act).unwrap();
        close(&out, &want[3 * n..17 * n], kc).unwrap();
    }
}

#[test]
fn single_output_rows_written_with_a_stride() {
    let mut rng = Lcg(99);
    for kc in [1, 5, 8, 13, 16, 24, 29, 40] {
        let (m, stride) = (21, 3);
        let input: Vec<f32> = (0..m * kc).map(|_| rng.f32()).collect();
        let w: Vec<f32> = (0..kc).map(|_| rng.f32()).collect();
        let taps = DenseRows { stride: kc };
        let act = (-0.8, 0.8);
        let want = direct(&input, &taps, m, 1, 1, kc, &w, &[0.25], act);
        for table in available_tables() {
            let packed = pack(&table.f32_gemm, 1, 1, kc, |_, _, k| w[k], Some(&[0.25])).unwrap();
            let mut out = vec![f32::NAN; (m - 1) * stride + 1];
            igemm(table, &packed, &input, &taps, 0..m, 0..1, &mut out, stride, act).unwrap();
            let got: Vec<f32> = out.iter().step_by(stride).copied().collect();
            close(&got, &want, kc).unwrap_or_else(|e| panic!("{} kc {kc}: {e}", table.name()));
            let between_rows_untouched = out.iter().enumerate().all(|(i, v)| (i % stride == 0) != v.is_nan());
            assert!(between_rows_untouched, "{} kc {kc}: wrote between rows", table.name());
        }
    }
}

#[test]
fn bad_arguments_are_errors() {
    let t = scalar();
    assert!(pack(&t.f32_gemm, 0, 1, 1, |_, _, _| 0.0, None).is_err());
    assert!(pack(&t.f32_gemm, 4, 1, 1, |_, _, _| 0.0, Some(&[0.0; 3])).is_err());
    let packed = pack(&t.f32_gemm, 4, 1, 8, |_, _, _| 1.0, None).unwrap();
    let input = vec![1f32; 16];
    let mut out = vec![0f32; 12];
    // Row 2 would read input[16..24]: past the end.
    let e = igemm(t, &packed, &input, &DenseRows { stride: 8 }, 0..3, 0..4, &mut out, 4, (f32::MIN, f32::MAX));
    assert!(e.is_err());
    // Output too small.
    let e = igemm(t, &packed, &input, &DenseRows { stride: 8 }, 0..2, 0..4, &mut out[..7], 4, (f32::MIN, f32::MAX));
    assert!(e.is_err());
    let mut out = vec![0f32; 8];
    igemm(t, &packed, &input, &DenseRows { stride: 8 }, 0..2, 0..4, &mut out, 4, (f32::MIN, f32::MAX)).unwrap();
    assert_eq!(out, vec![8.0; 8]);
}

/// Timing probe (run by hand with `--ignored --nocapture`): prints microseconds per call
/// for a few layer shapes.
#[test]
#[ignore]
fn timing_probe() {
    let t = crate::microkernels::table();
    let shapes = [
        ("rgb 3x3s2 224", 224usize, 3usize, 32usize, 3usize, 2usize),
        ("1x1 16->96 112", 112, 16, 96, 1, 1),
        ("3x3 8->1 256", 256, 8, 1, 3, 1),
        ("1x1 8->8 256", 256, 8, 8, 1, 1),
        ("3x3 16->16 128", 128, 16, 16, 3, 1),
        ("3x3 32->32 64", 64, 32, 32, 3, 1),
        ("3x3 64->64 32", 32, 64, 64, 3, 1),
    ];
    let only = std::env::var("PROBE").ok();
    for (name, hw, c, n, f, s) in shapes {
        if only.as_deref().is_some_and(|o| !name.starts_with(o)) {
            continue;
        }
        let pad = f / 2;
        let out = (hw + 2 * pad - f) / s + 1;
        let taps = ConvRows {
            in_h: hw,
            in_w: hw,
            in_c: c,
            out_h: out,
            out_w: out,
            f_h: f,
            f_w: f,
            stride_h: s,
            stride_w: s,
            dil_h: 1,
            dil_w: 1,
            pad_h: pad,
            pad_w: pad,
        };
        let input = vec![0.5f32; hw * hw * c];
        let packed = pack(&t.f32_gemm, n, f * f, c, |_, _, _| 0.1, None).unwrap();
        let m = out * out;
        let mut o = vec![0f32; m * n];
        // The fastest of many runs: other processes only ever add time.
        let mut us = f64::MAX;
        for _ in 0..200 {
            let start = std::time::Instant::now();
            igemm(t, &packed, &input, &taps, 0..m, 0..n, &mut o, n, (f32::MIN, f32::MAX)).unwrap();
            us = us.min(start.elapsed().as_secs_f64() * 1e6);
        }
        let gflops = 2.0 * (m * n * f * f * c) as f64 / us / 1e3;
        println!("{name}: {us:.1} us, {gflops:.1} GFLOP/s");
    }
}

/// Timing probe for two threads splitting one layer's rows (run by hand).
#[test]
#[ignore]
fn timing_probe_two_threads() {
    let t = crate::microkernels::table();
    let hw: usize = std::env::var("HW").ok().and_then(|v| v.parse().ok()).unwrap_or(112);
    let (c, n) = (16usize, 96usize);
    let input = vec![0.5f32; hw * hw * c];
    let packed = pack(&t.f32_gemm, n, 1, c, |_, _, _| 0.1, None).unwrap();
    let m = hw * hw;
    let mut o = vec![0f32; m * n];
    let taps = DenseRows { stride: c };
    for threads in [1usize, 2, 1, 2] {
        let mut best = f64::MAX;
        for _ in 0..100 {
            let start = std::time::Instant::now();
            let per = m.div_ceil(threads);
            std::thread::scope(|s| {
                for (i, chunk) in o.chunks_mut(per * n).enumerate() {
                    let (input, packed, taps) = (&input, &packed, &taps);
                    let rows = i * per..(i * per + chunk.len() / n);
                    s.spawn(move || igemm(t, packed, input, taps, rows, 0..n, chunk, n, (f32::MIN, f32::MAX)).unwrap());
                }
            });
            best = best.min(start.elapsed().as_secs_f64() * 1e6);
        }
        println!("threads {threads}: {best:.1} us");
    }
}
