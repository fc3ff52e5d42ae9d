//! Every available table against the scalar one, and the scalar one against TFLite's
//! reference loop (taps outside the image skipped, the zero point subtracted per tap).

use super::*;
use crate::microkernels::qs8_requant::requant_scalar;
use crate::microkernels::test_rng::Lcg;
use crate::microkernels::{Table, available_tables};

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
    (kh, kw): (usize, usize),
    (stride_h, stride_w): (usize, usize),
    (dil_h, dil_w): (usize, usize),
    same: bool,
) -> Option<DwGeom> {
    let (out_h, pad_top) = axis(h, kh, stride_h, dil_h, same)?;
    let (out_w, pad_left) = axis(w, kw, stride_w, dil_w, same)?;
    Some(DwGeom {
        batches,
        in_h: h,
        in_w: w,
        channels: c,
        out_h,
        out_w,
        k_h: kh,
        k_w: kw,
        stride_h,
        stride_w,
        dil_h,
        dil_w,
        pad_top,
        pad_left,
    })
}

/// One convolution's operands and quantization.
struct Case {
    g: DwGeom,
    input: Vec<i8>,
    filter: Vec<i8>,
    bias: Option<Vec<i32>>,
    zp: i32,
    mults: Vec<(i32, i32)>,
    offset: i32,
    clamp: (i32, i32),
}

impl Case {
    /// Random operands; `extreme` draws inputs and weights from {-128, 127} only.
    fn random(r: &mut Lcg, g: DwGeom, extreme: bool) -> Case {
        let c = g.channels;
        let val = |r: &mut Lcg| if extreme { [-128i8, 127][r.below(2)] } else { r.next() as i8 };
        let input = (0..g.input_len().unwrap()).map(|_| val(r)).collect();
        let filter = (0..g.taps() * c).map(|_| val(r)).collect();
        let bias = (r.below(4) != 0).then(|| (0..c).map(|_| (r.next() as i32) >> (8 + r.below(20))).collect());
        let zp = if extreme { [-128, 127][r.below(2)] } else { r.below(256) as i32 - 128 };
        let mults = (0..c).map(|_| ((1 << 30) + (r.next() >> 2) as i32, r.below(14) as i32 - 12)).collect();
        let offset = r.below(256) as i32 - 128;
        let clamp = [(-128, 127), (-128, 0), (r.below(100) as i32 - 128, 127), (-20, 20)][r.below(4)];
        Case { g, input, filter, bias, zp, mults, offset, clamp }
    }

    fn pack(&self, k: &DwKernels) -> PackedDw {
        let c = self.g.channels;
        let k_w = self.g.k_w;
        pack(
            k,
            c,
            (self.g.k_h, k_w),
            |ky, kx, ch| self.filter[(ky * k_w + kx) * c + ch],
            self.bias.as_deref(),
            self.zp,
            |ch| self.mults[ch],
            self.offset,
            self.clamp,
        )
        .unwrap()
    }

    /// TFLite's `DepthwiseConvPerChannel` loop.
    fn reference(&self) -> Vec<i8> {
        let g = &self.g;
        let c = g.channels;
        let mut out = Vec::new();
        for b in 0..g.batches {
            for oy in 0..g.out_h {
                for ox in 0..g.out_w {
                    for ch in 0..c {
                        let mut acc = 0i32;
                        for ky in 0..g.k_h {
                            for kx in 0..g.k_w {
                                let iy = (oy * g.stride_h + ky * g.dil_h) as isize - g.pad_top as isize;
                                let ix = (ox * g.stride_w + kx * g.dil_w) as isize - g.pad_left as isize;
                                if iy < 0 || ix < 0 || iy as usize >= g.in_h || ix as usize >= g.in_w {
                                    continue;
                                }
                                let x = self.input[((b * g.in_h + iy as usize) * g.in_w + ix as usize) * c + ch];
                                let w = self.filter[(ky * g.k_w + kx) * c + ch];
                                acc = acc.wrapping_add((x as i32 - self.zp).wrapping_mul(w as i32));
                            }
                        }
                        let bias = self.bias.as_ref().map_or(0, |b| b[ch]);
                        let (m, shift) = self.mults[ch];
                        let (left, right) = (shift.max(0), (-shift).max(0));
                        let v = requant_scalar(acc, bias, m, left, right, self.offset, self.clamp.0, self.clamp.1);
                        out.push(v as i8);
                    }
                }
            }
        }
        out
    }

    fn run(&self, t: &Table) -> Vec<i8> {
        let k = t.qs8_dwconv.as_ref().expect("the table has int8 depthwise kernels");
        let packed = self.pack(k);
        let mut out = vec![0x55u8 as i8; self.g.output_len().unwrap()];
        run_rows(k, &self.g, &self.input, &packed, 0, &mut out).unwrap();
        out
    }
}

/// The scalar table against the reference loop, then every table with int8 depthwise
/// kernels against the scalar one.
fn check(r: &mut Lcg, g: DwGeom, extreme: bool) {
    let case = Case::random(r, g, extreme);
    let scalar = Table::for_isa(Isa::Scalar).unwrap();
    let base = case.run(scalar);
    assert_eq!(base, case.reference(), "scalar vs reference, {g:?}, zp {}", case.zp);
    for t in available_tables().into_iter().filter(|t| t.qs8_dwconv.is_some()) {
        assert_eq!(case.run(t), base, "{} vs scalar, {g:?}, zp {}", t.name(), case.zp);
    }
}

#[test]
fn tables_match_scalar_and_reference() {
    let mut r = Lcg(21);
    let windows = [(3, 3), (5, 5), (1, 1), (3, 5), (7, 7), (1, 3)];
    let steps = [(1, 1, true), (1, 1, false), (2, 1, true), (2, 1, false), (1, 2, true), (2, 2, true), (2, 2, false)];
    let mut cases = 0;
    for c in (1..=40).chain([47, 48, 64, 96, 144]) {
        for (i, &k) in windows.iter().enumerate() {
            // Every window and step for a few channel counts, a sample for the others.
            for &(s, d, same) in &steps {
                if !(c % 8 == 1 || c > 40 || r.below(3) == 0) {
                    continue;
                }
                let (h, w) = (2 + r.below(9), 2 + r.below(12));
                let Some(g) = geom(1 + r.below(2), h, w, c, k, (s, s), (d, d), same) else { continue };
                check(&mut r, g, (cases + i) % 5 == 0);
                cases += 1;
            }
        }
    }
    assert!(cases > 500, "{cases} cases");
}

/// Inputs and weights of -128 and 127 with input zero points -128 and 127: the largest
/// products and folded biases.
#[test]
fn extreme_values_match() {
    let mut r = Lcg(23);
    for c in [1usize, 5, 16, 17, 33, 40] {
        for (k, s, same) in [((3, 3), 1, true), ((3, 3), 2, true), ((5, 5), 1, true), ((1, 1), 1, false)] {
            let g = geom(1, 6, 7, c, k, (s, s), (1, 1), same).unwrap();
            for _ in 0..3 {
                check(&mut r, g, true);
            }
        }
    }
}

/// Padding on every side, unequal per side and axis (as a PAD folded into the
/// convolution would give), with strides and dilations that differ per axis.
#[test]
fn padding_on_every_side() {
    let mut r = Lcg(29);
    let mut cases = 0;
    for c in [1usize, 3, 16, 19, 32] {
        for (kh, kw) in [(3, 3), (5, 5), (3, 1), (2, 4)] {
            for _ in 0..6 {
                let (stride_h, stride_w, dil_h, dil_w) =
                    (1 + r.below(3), 1 + r.below(3), 1 + r.below(2), 1 + r.below(2));
                let (in_h, in_w) = (1 + r.below(8), 1 + r.below(10));
                let (pad_top, pad_left) = (r.below(kh * dil_h), r.below(kw * dil_w));
                let (pad_bottom, pad_right) = (r.below(kh * dil_h), r.below(kw * dil_w));
                let span = |k: usize, d: usize| (k - 1) * d + 1;
                let (Some(h), Some(w)) = (
                    (in_h + pad_top + pad_bottom).checked_sub(span(kh, dil_h)),
                    (in_w + pad_left + pad_right).checked_sub(span(kw, dil_w)),
                ) else {
                    continue;
                };
                let g = DwGeom {
                    batches: 1,
                    in_h,
                    in_w,
                    channels: c,
                    out_h: h / stride_h + 1,
                    out_w: w / stride_w + 1,
                    k_h: kh,
                    k_w: kw,
                    stride_h,
                    stride_w,
                    dil_h,
                    dil_w,
                    pad_top,
                    pad_left,
                };
                check(&mut r, g, cases % 4 == 0);
                cases += 1;
            }
        }
    }
    assert!(cases > 60, "{cases} cases");
}

/// Wide rows: several full runs of pixels per row and the edge pixels between them.
#[test]
fn wide_rows_match() {
    let mut r = Lcg(31);
    for c in [1usize, 8, 16, 24, 40] {
        for (k, s, d) in [((3, 3), 1, 1), ((3, 3), 2, 1), ((5, 5), 1, 2), ((7, 7), 2, 1)] {
            let w = 60 + r.below(200);
            let Some(g) = geom(1, k.0 + 1, w, c, k, (s, s), (d, d), true) else { continue };
            check(&mut r, g, false);
        }
    }
}

/// The kernels for fixed slot counts (3x3 and 5x5 filters) agree with the general one on
/// the same table.
#[test]
fn specialised_kernels_match_general() {
    let mut r = Lcg(37);
    for t in available_tables() {
        let Some(k) = t.qs8_dwconv.as_ref() else { continue };
        for (kh, kw) in [(3usize, 3usize), (5, 5)] {
            let slots = k.layout.slots(kh, kw).unwrap();
            assert!(k.fixed.iter().any(|&(n, _)| n == slots), "{}: no kernel for {slots} slots", t.name());
            for c in [5usize, 16, 27, 40, 64, 70] {
                let pixels = 3;
                let g = DwGeom { channels: c, k_h: kh, k_w: kw, ..Default::default() };
                let case = Case::random(&mut r, g, false);
                let input: Vec<i8> = (0..pixels * slots * c).map(|_| r.next() as i8).collect();
                let packed = case.pack(k);
                let ptrs: Vec<*const i8> = input.chunks_exact(pixels * c).map(|s| s.as_ptr()).collect();
                let (mut a, mut b) = (vec![0i8; pixels * c], vec![0i8; pixels * c]);
                // SAFETY: the table comes from `available_tables` (the CPU has its
                // instruction set); `ptrs` holds `slots` pointers, each to `pixels * c`
                // values of `input` stepped by `c`; `packed` was made for `c` channels and
                // this filter in the kernels' layout.
                unsafe {
                    k.kernel(slots)(c, &ptrs, c, &packed.weights, &packed.requant, &mut a);
                    (k.any)(c, &ptrs, c, &packed.weights, &packed.requant, &mut b);
                }
                assert_eq!(a, b, "{} {kh}x{kw} channels {c}", t.name());
            }
        }
    }
}

/// The sliding 3x3 kernel against the same table's pointer kernels.
#[test]
fn sliding_matches_pointer_kernels() {
    let mut r = Lcg(43);
    let mut cases = 0;
    for t in available_tables() {
        let Some(with) = t.qs8_dwconv else { continue };
        if with.slide3x3.is_none() {
            continue;
        }
        let without = DwKernels { slide3x3: None, ..with };
        for c in [1usize, 7, 16, 31, 32, 33, 48, 64, 96, 100] {
            for (s, dil_h, same) in [(1, 1, true), (2, 1, true), (1, 2, false), (2, 1, false), (1, 1, false)] {
                let w = 3 + r.below(80);
                let Some(g) = geom(1 + r.below(2), 3 + r.below(5), w, c, (3, 3), (s, s), (dil_h, 1), same) else {
                    continue;
                };
                let case = Case::random(&mut r, g, cases % 3 == 0);
                let packed = case.pack(&with);
                let mut a = vec![0i8; g.output_len().unwrap()];
                let mut b = a.clone();
                run_rows(&with, &g, &case.input, &packed, 0, &mut a).unwrap();
                run_rows(&without, &g, &case.input, &packed, 0, &mut b).unwrap();
                assert_eq!(a, b, "{} {g:?}", t.name());
                assert_eq!(a, case.reference(), "{} {g:?}", t.name());
                cases += 1;
            }
        }
    }
    if crate::microkernels::Isa::Avx512Vnni.is_available() {
        assert!(cases > 40, "{cases} cases");
    }
}

#[test]
fn row_ranges_match_whole() {
    let mut r = Lcg(41);
    let g = geom(2, 9, 7, 19, (3, 3), (2, 2), (1, 1), true).unwrap();
    let case = Case::random(&mut r, g, false);
    for t in available_tables() {
        let Some(k) = t.qs8_dwconv.as_ref() else { continue };
        let packed = case.pack(k);
        let whole = case.run(t);
        let mut parts = vec![0i8; whole.len()];
        for (i, chunk) in parts.chunks_mut(3 * g.row_len()).enumerate() {
            run_rows(k, &g, &case.input, &packed, 3 * i, chunk).unwrap();
        }
        assert_eq!(whole, parts, "{}", t.name());
    }
}

#[test]
fn pixel_ranges_match_whole() {
    let mut r = Lcg(43);
    // The sliding 3x3 kernel (stride 1 and 2), a 5x5 filter with padding columns on both
    // sides, and a dilated one; two images, so that runs cross from one to the next.
    let geoms = [
        geom(2, 7, 7, 40, (3, 3), (1, 1), (1, 1), true).unwrap(),
        geom(2, 9, 11, 19, (3, 3), (2, 2), (1, 1), true).unwrap(),
        geom(2, 8, 9, 33, (5, 5), (1, 1), (1, 1), true).unwrap(),
        geom(2, 9, 8, 7, (3, 3), (1, 2), (2, 1), false).unwrap(),
    ];
    for g in geoms {
        let case = Case::random(&mut r, g, false);
        let pixels = g.rows() * g.out_w;
        for t in available_tables() {
            let Some(k) = t.qs8_dwconv.as_ref() else { continue };
            let packed = case.pack(k);
            let whole = case.run(t);
            for run in [1, 4, 5, 25, pixels.div_ceil(2), pixels] {
                let mut parts = vec![0i8; whole.len()];
                for (i, chunk) in parts.chunks_mut(run * g.channels).enumerate() {
                    run_pixels(k, &g, &case.input, &packed, i * run, chunk).unwrap();
                }
                assert_eq!(whole, parts, "{} {g:?} runs of {run} pixels", t.name());
            }
            // Runs past the last pixel, or of partial pixels, are errors.
            let mut out = vec![0i8; 2 * g.channels];
            assert!(run_pixels(k, &g, &case.input, &packed, pixels - 1, &mut out).is_err());
            assert!(run_pixels(k, &g, &case.input, &packed, 0, &mut out[1..]).is_err());
        }
    }
}

#[test]
fn packing_folds_the_zero_point() {
    let c = 17;
    let k = Table::for_isa(Isa::Scalar).unwrap().qs8_dwconv.unwrap();
    let packed =
        pack(&k, c, (1, 2), |_, t, ch| (t * 10 + ch) as i8, Some(&[5; 17]), -3, |_| (1 << 30, 0), 0, (-128, 127))
            .unwrap();
    assert_eq!(packed.weights.len(), 32 * 2);
    assert_eq!(packed.weights[16 + 4], 14); // block 0, tap 1, channel 4
    assert_eq!(packed.weights[32 + 16], 26); // block 1, tap 1, channel 16
    assert_eq!(packed.weights[32 + 17], 0); // padding
    // bias - zp * (w0 + w1) = 5 + 3 * (ch + 10 + ch).
    for ch in 0..c {
        assert_eq!(packed.requant.exact.bias[ch], 5 + 3 * (2 * ch as i32 + 10));
    }
    assert_eq!(packed.requant.exact.bias[c], 0);
}

/// The VNNI layout: 32-channel blocks, slots by filter column in groups of 4 (a 6x2
/// filter: column 0 in groups 0 and 1, column 1 in groups 2 and 3), 4 taps' bytes per
/// word, channels in interleave order, and `128 * sum w` folded into the bias too.
#[test]
fn dot_layout() {
    let k = DwKernels { layout: Layout::Dot4x32, ..Table::for_isa(Isa::Scalar).unwrap().qs8_dwconv.unwrap() };
    let (c, kh, kw) = (40, 6, 2);
    let w = |ky: usize, kx: usize, ch: usize| ((ky * kw + kx) as i32 * 20 - ch as i32) as i8;
    let packed = pack(&k, c, (kh, kw), w, None, 2, |_| (1 << 30, 0), 0, (-128, 127)).unwrap();
    assert_eq!(packed.weights.len(), 64 * 4);
    assert_eq!(packed.requant.exact.padded_channels(), 64);
    for ch in 0..64 {
        let (b, j) = (ch / 32, ch % 32);
        let pos = ((j % 16) / 4) * 8 + (j / 16) * 4 + j % 4;
        for g in 0..4 {
            let word = packed.weights[(b * 4 + g) * 32 + pos] as u32;
            for i in 0..4 {
                let (kx, ky) = (g / 2, (g % 2) * 4 + i);
                let want = if ch < c && ky < kh { w(ky, kx, ch) } else { 0 };
                assert_eq!((word >> (8 * i)) as u8 as i8, want, "channel {ch} group {g} slot {i}");
            }
        }
    }
    // Requantization entries: block 0 (whole) in the accumulators' order, vectors 0 and 2
    // (channels 0-3, 16-19, 8-11, 24-27) then 1 and 3 (the same plus 4); block 1
    // (partial) in channel order.
    let sum = |ch: usize| -> i32 {
        (0..kh).flat_map(|ky| (0..kw).map(move |kx| (ky, kx))).map(|(ky, kx)| w(ky, kx, ch) as i32).sum()
    };
    let order: Vec<usize> = [0, 16, 8, 24].iter().chain(&[4, 20, 12, 28]).flat_map(|&c0| c0..c0 + 4).collect();
    for (i, &ch) in order.iter().chain(&(32..64).collect::<Vec<_>>()).enumerate() {
        assert_eq!(packed.requant.exact.bias[i], if ch < c { -130 * sum(ch) } else { 0 }, "entry {i}");
    }
}

#[test]
fn bad_arguments_are_errors() {
    let k = &Table::for_isa(Isa::Scalar).unwrap().qs8_dwconv.unwrap();
    let g = geom(1, 5, 5, 4, (3, 3), (1, 1), (1, 1), true).unwrap();
    let input = vec![0i8; g.input_len().unwrap()];
    let mk = |c: usize, taps: usize, zp: i32, clamp: (i32, i32)| {
        pack(k, c, (1, taps), |_, _, _| 1, None, zp, |_| (1 << 30, 0), 0, clamp)
    };
    let packed = pack(k, 4, (3, 3), |_, _, _| 1, None, 0, |_| (1 << 30, 0), 0, (-128, 127)).unwrap();
    let mut out = vec![0i8; g.output_len().unwrap()];
    assert!(mk(0, 9, 0, (-128, 127)).is_err());
    assert!(mk(4, 0, 0, (-128, 127)).is_err());
    assert!(mk(4, 9, 128, (-128, 127)).is_err());
    assert!(mk(4, 9, -129, (-128, 127)).is_err());
    assert!(mk(4, 9, 0, (-129, 127)).is_err());
    assert!(mk(4, 9, 0, (5, 4)).is_err());
    assert!(pack(k, 4, (3, 3), |_, _, _| 1, Some(&[0; 3]), 0, |_| (1 << 30, 0), 0, (-128, 127)).is_err());
    assert!(pack(k, 4, (3, 0), |_, _, _| 1, None, 0, |_| (1 << 30, 0), 0, (-128, 127)).is_err());
    let other = DwKernels { layout: Layout::Dot4x32, ..*k };
    let other_packed = pack(&other, 4, (3, 3), |_, _, _| 1, None, 0, |_| (1 << 30, 0), 0, (-128, 127)).unwrap();
    assert!(run_rows(k, &g, &input, &other_packed, 0, &mut out).is_err());
    assert!(run_rows(k, &g, &input[1..], &packed, 0, &mut out).is_err());
    assert!(run_rows(k, &g, &input, &mk(5, 9, 0, (-128, 127)).unwrap(), 0, &mut out).is_err());
    assert!(run_rows(k, &g, &input, &mk(4, 8, 0, (-128, 127)).unwrap(), 0, &mut out).is_err());
    assert!(run_rows(k, &g, &input, &mk(4, 9, 0, (-128, 127)).unwrap(), 0, &mut out).is_err());
    assert!(run_rows(k, &g, &input, &packed, 0, &mut out[1..]).is_err());
    assert!(run_rows(k, &g, &input, &packed, 1, &mut out).is_err());
    let zero = DwGeom { stride_h: 0, ..g };
    assert!(run_rows(k, &zero, &input, &packed, 0, &mut out).is_err());
    let huge = DwGeom { pad_top: usize::MAX, ..g };
    assert!(run_rows(k, &huge, &input, &packed, 0, &mut out).is_err());
    let wide = DwGeom { pad_left: usize::MAX / 2, ..g };
    assert!(run_rows(k, &wide, &input, &packed, 0, &mut out).is_err());
    assert!(run_rows(k, &g, &input, &packed, 0, &mut out).is_ok());
}

/// Layers the float shortcut holds for (right shifts of 6 to 14, no left shift), with
/// full, one-sided (a fused RELU: from the zero point up) and narrow clamps: every table
/// against the reference, through the sliding and the pointer kernels; and the same with
/// the shortcut's tables spoiled (offsets raised by 0.3, tolerance widened to 0.45), so
/// that its floor is wrong wherever it is not declined and every lane near an integer is:
/// the declined lanes must come out exact.
#[test]
fn float_requantization_is_exact() {
    let mut r = Lcg(47);
    let (mut float, mut one_sided, mut spoiled) = (0, 0, 0);
    for case_no in 0..120 {
        let c = [1usize, 16, 31, 32, 33, 64, 96, 100, 144][case_no % 9];
        let (k, s) = [((3, 3), 1), ((3, 3), 2), ((5, 5), 1), ((3, 3), 1)][case_no % 4];
        let Some(g) = geom(1, 3 + r.below(6), 3 + r.below(40), c, k, (s, s), (1, 1), case_no % 3 != 0) else {
            continue;
        };
        let mut case = Case::random(&mut r, g, false);
        case.mults = (0..c).map(|_| ((1 << 30) + (r.next() >> 2) as i32, -6 - r.below(9) as i32)).collect();
        let offset = case.offset;
        case.clamp = [(-128, 127), (offset, 127), (offset, (offset + 40).min(127)), (-20, 20)][case_no % 4];
        let want = case.reference();
        for t in available_tables() {
            let Some(kernels) = t.qs8_dwconv else { continue };
            for slide in [true, false] {
                let k = DwKernels { slide3x3: if slide { kernels.slide3x3 } else { None }, ..kernels };
                let mut packed = case.pack(&k);
                let mut got = vec![0x55u8 as i8; g.output_len().unwrap()];
                run_rows(&k, &g, &case.input, &packed, 0, &mut got).unwrap();
                assert_eq!(got, want, "{} slide {slide} {g:?} clamp {:?}", t.name(), case.clamp);
                let Some(f) = &mut packed.requant.float else { continue };
                float += 1;
                one_sided += usize::from(f.one_sided);
                f.decline_below.iter_mut().for_each(|t| *t = 0.45);
                f.offset_positive.iter_mut().chain(f.offset_negative.iter_mut()).for_each(|o| *o += 0.3);
                let mut got = vec![0x55u8 as i8; g.output_len().unwrap()];
                run_rows(&k, &g, &case.input, &packed, 0, &mut got).unwrap();
                assert_eq!(got, want, "spoiled tables: {} slide {slide} {g:?} clamp {:?}", t.name(), case.clamp);
                spoiled += 1;
            }
        }
    }
    if crate::microkernels::Isa::Avx512Vnni.is_available() {
        assert!(float > 100 && one_sided > 40 && spoiled == float, "{float} float, {one_sided} one-sided");
    }
}
