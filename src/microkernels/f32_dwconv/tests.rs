//! Every available table against the scalar one, and the scalar one against a plain
//! double-precision window loop.

use super::*;
use crate::microkernels::{Isa, Table, available_tables};

use crate::microkernels::test_rng::Lcg;

/// Output size and leading padding of one spatial axis (TFLite's SAME / VALID rules).
fn axis(input: usize, k: usize, stride: usize, dil: usize, same: bool) -> Option<(usize, usize)> {
    let span = (k - 1) * dil + 1;
    if same {
        let out = input.div_ceil(stride);
        let total = ((out - 1) * stride + span).saturating_sub(input);
        Some((out, total / 2))
    } else if input >= span {
        Some(((input - span) / stride + 1, 0))
    } else {
        None
    }
}

#[allow(clippy::too_many_arguments)]
fn geom(
    batches: usize,
    h: usize,
    w: usize,
    c: usize,
    kh: usize,
    kw: usize,
    stride: usize,
    dil: usize,
    same: bool,
) -> Option<DwGeom> {
    let (out_h, pad_top) = axis(h, kh, stride, dil, same)?;
    let (out_w, pad_left) = axis(w, kw, stride, dil, same)?;
    Some(DwGeom {
        batches,
        in_h: h,
        in_w: w,
        channels: c,
        out_h,
        out_w,
        k_h: kh,
        k_w: kw,
        stride_h: stride,
        stride_w: stride,
        dil_h: dil,
        dil_w: dil,
        pad_top,
        pad_left,
    })
}

/// The convolution in f64 with the clamp applied, and per output the magnitude
/// `|bias| + sum |x * w|` that bounds float rounding error.
fn naive(g: &DwGeom, input: &[f32], filter: &[f32], bias: &[f32], clamp: (f32, f32)) -> (Vec<f32>, Vec<f64>) {
    let c = g.channels;
    let (mut out, mut mag) = (Vec::new(), Vec::new());
    for b in 0..g.batches {
        for oy in 0..g.out_h {
            for ox in 0..g.out_w {
                for ch in 0..c {
                    let mut acc = bias[ch] as f64;
                    let mut m = (bias[ch] as f64).abs();
                    for ky in 0..g.k_h {
                        for kx in 0..g.k_w {
                            let iy = (oy * g.stride_h + ky * g.dil_h) as isize - g.pad_top as isize;
                            let ix = (ox * g.stride_w + kx * g.dil_w) as isize - g.pad_left as isize;
                            if iy < 0 || ix < 0 || iy as usize >= g.in_h || ix as usize >= g.in_w {
                                continue;
                            }
                            let x = input[((b * g.in_h + iy as usize) * g.in_w + ix as usize) * c + ch] as f64;
                            let w = filter[(ky * g.k_w + kx) * c + ch] as f64;
                            acc += x * w;
                            m += (x * w).abs();
                        }
                    }
                    out.push((acc as f32).max(clamp.0).min(clamp.1));
                    mag.push(m);
                }
            }
        }
    }
    (out, mag)
}

fn run(t: &Table, g: &DwGeom, input: &[f32], filter: &[f32], bias: &[f32], clamp: (f32, f32)) -> Vec<f32> {
    let k = &t.f32_dwconv;
    let c = g.channels;
    let packed = pack(k, c, g.taps(), |tap, ch| filter[tap * c + ch], Some(bias)).unwrap();
    let mut out = vec![f32::NAN; g.output_len().unwrap()];
    run_rows(k, g, input, &packed, 0, &mut out, clamp).unwrap();
    out
}

fn close(got: &[f32], want: &[f32], mag: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, ((&a, &b), &m)) in got.iter().zip(want).zip(mag).enumerate() {
        let tol = 1e-5 * m.max(1e-3);
        assert!(((a as f64) - (b as f64)).abs() <= tol, "{what}: output {i}: {a} vs {b} (tolerance {tol})");
    }
}

#[test]
fn tables_match_scalar_and_naive() {
    let scalar = Table::for_isa(Isa::Scalar).unwrap();
    let tables = available_tables();
    let mut r = Lcg(7);
    let filters = [(3, 3), (5, 5), (3, 5), (1, 1), (7, 7), (1, 3)];
    let clamps = [(f32::MIN, f32::MAX), (0.0, 6.0), (-0.5, 0.5), (0.0, f32::MAX)];
    let mut cases = 0;
    for c in [1usize, 3, 7, 8, 9, 15, 16, 17, 24, 33, 144] {
        for (kh, kw) in filters {
            for (stride, dil, same) in [
                (1, 1, true),
                (1, 1, false),
                (2, 1, true),
                (2, 1, false),
                (1, 2, true),
                (1, 2, false),
                (2, 2, true),
                (2, 2, false),
            ] {
                let batches = 1 + r.below(2);
                let (h, w) = (4 + r.below(8), 4 + r.below(9));
                let clamp = clamps[r.below(clamps.len())];
                let Some(g) = geom(batches, h, w, c, kh, kw, stride, dil, same) else {
                    continue;
                };
                let input: Vec<f32> = (0..g.input_len().unwrap()).map(|_| r.f32()).collect();
                let filter: Vec<f32> = (0..g.taps() * c).map(|_| r.f32()).collect();
                let bias: Vec<f32> = (0..c).map(|_| r.f32()).collect();
                let (want, mag) = naive(&g, &input, &filter, &bias, clamp);
                let base = run(scalar, &g, &input, &filter, &bias, clamp);
                close(&base, &want, &mag, &format!("scalar vs f64, {g:?}"));
                for t in &tables {
                    let got = run(t, &g, &input, &filter, &bias, clamp);
                    close(&got, &base, &mag, &format!("{} vs scalar, {g:?}", t.name()));
                }
                cases += 1;
            }
        }
    }
    assert!(cases > 400, "{cases} cases");
}

/// Wide rows with few channels: long direct runs (flat ones where the stride is 1 and the
/// channels divide a vector), with the padded edge pixels on the pointer kernels.
#[test]
fn wide_rows_match_scalar() {
    let scalar = Table::for_isa(Isa::Scalar).unwrap();
    let mut r = Lcg(13);
    let mut cases = 0;
    for c in [1usize, 2, 3, 4, 8, 12, 16, 24, 32, 40] {
        for (kh, kw) in [(3, 3), (5, 5), (3, 5), (7, 7)] {
            for (stride, dil, same) in [(1, 1, true), (1, 1, false), (2, 1, true), (1, 2, true), (2, 2, false)] {
                let (h, w) = (kh + r.below(4), 20 + r.below(300));
                let Some(g) = geom(1, h, w, c, kh, kw, stride, dil, same) else {
                    continue;
                };
                let clamp = [(f32::MIN, f32::MAX), (0.0, 6.0)][r.below(2)];
                let input: Vec<f32> = (0..g.input_len().unwrap()).map(|_| r.f32()).collect();
                let filter: Vec<f32> = (0..g.taps() * c).map(|_| r.f32()).collect();
                let bias: Vec<f32> = (0..c).map(|_| r.f32()).collect();
                let (want, mag) = naive(&g, &input, &filter, &bias, clamp);
                let base = run(scalar, &g, &input, &filter, &bias, clamp);
                close(&base, &want, &mag, &format!("scalar vs f64, {g:?}"));
                for t in available_tables() {
                    let got = run(t, &g, &input, &filter, &bias, clamp);
                    close(&got, &base, &mag, &format!("{} vs scalar, {g:?}", t.name()));
                }
                cases += 1;
            }
        }
    }
    assert!(cases > 150, "{cases} cases");
}

/// The direct and sliding kernels sum in the pointer kernels' order, the padding's
/// zeros included: a table gives the same bits with and without each of them.
#[test]
fn direct_and_sliding_match_pointer_kernels() {
    let mut r = Lcg(17);
    let mut slid = 0;
    for t in available_tables() {
        let with = &t.f32_dwconv;
        let variants = [DwKernels { slide: None, ..*with }, DwKernels { direct: None, slide: None, ..*with }];
        for c in [1usize, 4, 8, 11, 16, 24, 37] {
            for (kh, kw, stride, dil) in
                [(3, 3, 1, 1), (3, 3, 2, 1), (5, 5, 1, 1), (5, 5, 2, 1), (5, 5, 2, 2), (3, 5, 1, 1), (7, 7, 1, 1)]
            {
                for (w, same) in [(40 + r.below(30), true), (7, true), (14, true), (13, false), (2, true)] {
                    let Some(g) = geom(1, 9, w, c, kh, kw, stride, dil, same) else {
                        continue;
                    };
                    slid += usize::from(with.slide_for(&g).is_some());
                    let input: Vec<f32> = (0..g.input_len().unwrap()).map(|_| r.f32()).collect();
                    let filter: Vec<f32> = (0..g.taps() * c).map(|_| r.f32()).collect();
                    let bias: Vec<f32> = (0..c).map(|_| r.f32()).collect();
                    let packed = pack(with, c, g.taps(), |tap, ch| filter[tap * c + ch], Some(&bias)).unwrap();
                    let mut a = vec![0.0f32; g.output_len().unwrap()];
                    run_rows(with, &g, &input, &packed, 0, &mut a, (-1.0, 1.0)).unwrap();
                    for without in &variants {
                        let mut b = vec![0.0f32; a.len()];
                        run_rows(without, &g, &input, &packed, 0, &mut b, (-1.0, 1.0)).unwrap();
                        assert_eq!(a, b, "{} {g:?}", t.name());
                    }
                }
            }
        }
    }
    // The AVX-512 table slides 3x3 and 5x5 filters of 8 or more channels.
    if Isa::Avx512.is_available() {
        assert!(slid > 0);
    }
}

/// The specialised 9- and 25-tap kernels sum in the same order as the general one, so
/// they agree exactly with it on the same table.
#[test]
fn specialised_kernels_match_general() {
    let mut r = Lcg(11);
    for t in available_tables() {
        let k = &t.f32_dwconv;
        for taps in [9usize, 25] {
            for c in [5usize, 16, 27, 40] {
                let pixels = 3;
                let input: Vec<f32> = (0..pixels * taps * c).map(|_| r.f32()).collect();
                let filter: Vec<f32> = (0..taps * c).map(|_| r.f32()).collect();
                let packed = pack(k, c, taps, |tap, ch| filter[tap * c + ch], None).unwrap();
                let ind: Vec<*const f32> = input.chunks_exact(c).map(|s| s.as_ptr()).collect();
                let (mut a, mut b) = (vec![0.0f32; pixels * c], vec![0.0f32; pixels * c]);
                let special = k.kernel(taps);
                // SAFETY: the table comes from `available_tables` (the CPU has its
                // instruction set); `ind` holds `taps` pointers per pixel, each to `c`
                // values of `input`; `packed` was made for `c` channels and `taps` taps.
                unsafe {
                    special(c, taps, &ind, &packed, &mut a, (f32::MIN, f32::MAX));
                    (k.any)(c, taps, &ind, &packed, &mut b, (f32::MIN, f32::MAX));
                }
                assert_eq!(a, b, "{} taps {taps} channels {c}", t.name());
            }
        }
    }
}

#[test]
fn row_ranges_match_whole() {
    let mut r = Lcg(5);
    let g = geom(2, 9, 7, 19, 3, 3, 2, 1, true).unwrap();
    let input: Vec<f32> = (0..g.input_len().unwrap()).map(|_| r.f32()).collect();
    let filter: Vec<f32> = (0..g.taps() * g.channels).map(|_| r.f32()).collect();
    for t in available_tables() {
        let k = &t.f32_dwconv;
        let packed = pack(k, g.channels, 9, |tap, ch| filter[tap * g.channels + ch], None).unwrap();
        let mut whole = vec![0.0f32; g.output_len().unwrap()];
        run_rows(k, &g, &input, &packed, 0, &mut whole, (-1.0, 1.0)).unwrap();
        let mut parts = vec![0.0f32; whole.len()];
        let row = g.row_len();
        for (i, chunk) in parts.chunks_mut(3 * row).enumerate() {
            run_rows(k, &g, &input, &packed, 3 * i, chunk, (-1.0, 1.0)).unwrap();
        }
        assert_eq!(whole, parts);
    }
}

/// Runs of pixels that start and end inside rows give the whole's values, with the
/// direct kernel and without it: 3x3 at stride 1 and 2, a padded 5x5 and a dilated 3x3,
/// on rows wide enough for the direct kernel's inner columns; two images, so that runs
/// cross from one to the next.
#[test]
fn pixel_ranges_match_whole() {
    let mut r = Lcg(6);
    let geoms = [
        geom(2, 7, 7, 24, 3, 3, 1, 1, true).unwrap(),
        geom(2, 9, 11, 19, 3, 3, 2, 1, true).unwrap(),
        geom(2, 8, 9, 33, 5, 5, 1, 1, true).unwrap(),
        geom(2, 9, 10, 7, 3, 3, 1, 2, false).unwrap(),
    ];
    for g in geoms {
        let c = g.channels;
        let input: Vec<f32> = (0..g.input_len().unwrap()).map(|_| r.f32()).collect();
        let filter: Vec<f32> = (0..g.taps() * c).map(|_| r.f32()).collect();
        let pixels = g.rows() * g.out_w;
        for t in available_tables() {
            let with = t.f32_dwconv;
            let without = DwKernels { direct: None, ..with };
            for k in [&with, &without] {
                let packed = pack(k, c, g.taps(), |tap, ch| filter[tap * c + ch], None).unwrap();
                let mut whole = vec![0.0f32; g.output_len().unwrap()];
                run_rows(k, &g, &input, &packed, 0, &mut whole, (-1.0, 1.0)).unwrap();
                for run in [1, 4, 5, 25, pixels.div_ceil(2), pixels] {
                    let mut parts = vec![f32::NAN; whole.len()];
                    for (i, chunk) in parts.chunks_mut(run * c).enumerate() {
                        run_pixels(k, &g, &input, &packed, i * run, chunk, (-1.0, 1.0)).unwrap();
                    }
                    assert_eq!(whole, parts, "{} {g:?} runs of {run} pixels", t.name());
                }
                // Runs past the last pixel, or of partial pixels, are errors.
                let mut out = vec![0.0f32; 2 * c];
                assert!(run_pixels(k, &g, &input, &packed, pixels - 1, &mut out, (-1.0, 1.0)).is_err());
                assert!(run_pixels(k, &g, &input, &packed, 0, &mut out[1..], (-1.0, 1.0)).is_err());
            }
        }
    }
}

#[test]
fn nan_passes_the_clamp() {
    let g = geom(1, 1, 1, 10, 1, 1, 1, 1, false).unwrap();
    let mut input = vec![1.0f32; 10];
    input[3] = f32::NAN;
    input[9] = f32::NAN;
    for t in available_tables() {
        let out = run(t, &g, &input, &[2.0; 10], &[0.0; 10], (0.0, 6.0));
        assert!(out[3].is_nan() && out[9].is_nan(), "{}: {out:?}", t.name());
        assert_eq!(out[0], 2.0);
    }
}

#[test]
fn bad_arguments_are_errors() {
    let k = &Table::for_isa(Isa::Scalar).unwrap().f32_dwconv;
    let g = geom(1, 5, 5, 4, 3, 3, 1, 1, true).unwrap();
    let input = vec![0.0f32; g.input_len().unwrap()];
    let packed = pack(k, 4, 9, |_, _| 1.0, None).unwrap();
    let mut out = vec![0.0f32; g.output_len().unwrap()];
    assert!(pack(k, 0, 9, |_, _| 1.0, None).is_err());
    assert!(pack(k, 4, 0, |_, _| 1.0, None).is_err());
    assert!(pack(k, 4, 9, |_, _| 1.0, Some(&[0.0; 3])).is_err());
    assert!(run_rows(k, &g, &input[1..], &packed, 0, &mut out, (0.0, 1.0)).is_err());
    assert!(run_rows(k, &g, &input, &packed[1..], 0, &mut out, (0.0, 1.0)).is_err());
    assert!(run_rows(k, &g, &input, &packed, 0, &mut out[1..], (0.0, 1.0)).is_err());
    assert!(run_rows(k, &g, &input, &packed, 1, &mut out, (0.0, 1.0)).is_err());
    let wrong_taps = DwGeom { k_w: 2, ..g };
    assert!(run_rows(k, &wrong_taps, &input, &packed, 0, &mut out, (0.0, 1.0)).is_err());
    let zero = DwGeom { stride_h: 0, ..g };
    assert!(run_rows(k, &zero, &input, &packed, 0, &mut out, (0.0, 1.0)).is_err());
    let huge = DwGeom { pad_top: usize::MAX, ..g };
    assert!(run_rows(k, &huge, &input, &packed, 0, &mut out, (0.0, 1.0)).is_err());
    assert!(run_rows(k, &g, &input, &packed, 0, &mut out, (0.0, 1.0)).is_ok());
}

#[test]
fn packing_layout() {
    for t in available_tables() {
        let k = &t.f32_dwconv;
        for c in [1usize, 7, 8, 9, 16, 17, 33] {
            let packed = pack(k, c, 2, |tap, ch| (100 * (tap + 1) + ch) as f32, Some(&vec![-1.0; c])).unwrap();
            assert_eq!(Some(packed.len()), packed_len(k, c, 2));
            let mut seen = 0;
            let mut off = 0;
            for (c0, n, width) in k.blocks(c) {
                assert!(n <= width && width <= k.channel_tile);
                for j in 0..width {
                    let valid = j < n;
                    assert_eq!(packed[off + j], if valid { -1.0 } else { 0.0 });
                    for tap in 0..2 {
                        let want = if valid { (100 * (tap + 1) + c0 + j) as f32 } else { 0.0 };
                        assert_eq!(packed[off + width * (tap + 1) + j], want);
                    }
                }
                off += width * 3;
                seen += n;
            }
            assert_eq!(seen, c);
        }
    }
}
