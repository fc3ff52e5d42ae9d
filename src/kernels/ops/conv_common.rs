//! What CONV_2D, DEPTHWISE_CONV_2D, the pooling ops and FULLY_CONNECTED share: window
//! geometry and padding (TFLite `kernels/padding.h`), the quantized-convolution multipliers
//! (`kernel_util.cc` `PopulateConvolutionQuantizationParams` /
//! `GetQuantizedConvolutionMultipler`), the on-the-fly input quantization of the hybrid
//! kernels (`portable_tensor_utils.cc` `SymmetricQuantizeFloats` /
//! `AsymmetricQuantizeFloats`), and the per-node slot for repacked constant weights.

use crate::abi::builtin_op_data::TfLitePadding;
use crate::abi::types::TfLiteType;
use crate::error::{Error, Result};
use crate::kernels::api::{Element, TensorView};
use crate::kernels::quant::try_quantize_multiplier;
use crate::kernels::threadpool::elementwise::elementwise_threads;
use crate::kernels::threadpool::parallel_chunks_mut;
use std::borrow::Cow;

// The kernels' thread pool lives in `crate::kernels::threadpool`; the ops import it from here.
pub use crate::kernels::threadpool::{parallel_rows, recommended_threads, threads_for};

// ---------------------------------------------------------------------------------------
// Shapes and windows
// ---------------------------------------------------------------------------------------

/// Dimension `i` of `shape` as `usize`; an error naming `op` and `what` if it is missing
/// or negative.
pub fn dim(op: &str, what: &str, shape: &[i32], i: usize) -> Result<usize> {
    let d = *shape.get(i).ok_or_else(|| Error::new(format!("{op}: {what} shape {shape:?} has no dimension {i}")))?;
    usize::try_from(d).map_err(|_| Error::new(format!("{op}: {what} shape {shape:?} has a negative dimension")))
}

/// The product of `dims`, or an error naming `op` on overflow.
pub fn checked_product(op: &str, dims: &[usize]) -> Result<usize> {
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::new(format!("{op}: tensor size {dims:?} overflows")))
}

/// An `i32` dimension for an output shape; an error if it does not fit.
pub fn to_dim(op: &str, v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::new(format!("{op}: output dimension {v} is too large")))
}

/// Padding of a 2-D window, as TFLite's `TfLitePaddingValues` (offset = the extra padding
/// at the end when the total is odd).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Padding2d {
    pub height: usize,
    pub width: usize,
    pub height_offset: usize,
    pub width_offset: usize,
}

/// TFLite's `ComputeOutSizeChecked`: the windowed output size along one axis, or an error
/// for an unknown padding, a non-positive filter, stride or dilation, or a negative size.
pub fn compute_out_size(
    padding: TfLitePadding,
    image: usize,
    filter: usize,
    stride: usize,
    dilation: usize,
) -> Result<usize> {
    if filter == 0 || stride == 0 || dilation == 0 {
        return Err(Error::new(format!(
            "window size {filter}, stride {stride} and dilation {dilation} must be positive"
        )));
    }
    let (image, filter, stride, dilation) = (image as i128, filter as i128, stride as i128, dilation as i128);
    let effective = (filter - 1) * dilation + 1;
    // Integer division truncating toward zero, as in C.
    let v = match padding {
        TfLitePadding::kTfLitePaddingSame => (image + stride - 1) / stride,
        TfLitePadding::kTfLitePaddingValid => (image + stride - effective) / stride,
        TfLitePadding::kTfLitePaddingUnknown => return Err(Error::new("padding is neither SAME nor VALID")),
    };
    if v < 0 {
        return Err(Error::new(format!(
            "a window of {} (size {} dilated by {}) does not fit an input of {}",
            effective, filter, dilation, image
        )));
    }
    usize::try_from(v).ok().filter(|&v| v <= i32::MAX as usize).ok_or_else(|| Error::new("output size overflows"))
}

/// TFLite's `ComputePaddingWithOffsetChecked`: (padding before, extra padding after).
pub fn compute_padding_with_offset(
    stride: usize,
    dilation: usize,
    image: usize,
    filter: usize,
    out: usize,
) -> Result<(usize, usize)> {
    let effective = (filter as i128 - 1) * dilation as i128 + 1;
    let total = ((out as i128 - 1) * stride as i128 + effective - image as i128).max(0);
    let pad = usize::try_from(total / 2)
        .ok()
        .filter(|&p| p <= i32::MAX as usize)
        .ok_or_else(|| Error::new("padding overflows"))?;
    Ok((pad, (total % 2) as usize))
}

/// TFLite's `ComputePaddingHeightWidthChecked`: `(out_height, out_width, padding)`.
#[allow(clippy::too_many_arguments)]
pub fn compute_padding_height_width(
    stride_h: usize,
    stride_w: usize,
    dil_h: usize,
    dil_w: usize,
    in_h: usize,
    in_w: usize,
    f_h: usize,
    f_w: usize,
    padding: TfLitePadding,
) -> Result<(usize, usize, Padding2d)> {
    let out_w = compute_out_size(padding, in_w, f_w, stride_w, dil_w)?;
    let out_h = compute_out_size(padding, in_h, f_h, stride_h, dil_h)?;
    let (ph, oh) = compute_padding_with_offset(stride_h, dil_h, in_h, f_h, out_h)?;
    let (pw, ow) = compute_padding_with_offset(stride_w, dil_w, in_w, f_w, out_w)?;
    Ok((out_h, out_w, Padding2d { height: ph, width: pw, height_offset: oh, width_offset: ow }))
}

/// A positive `c_int` parameter as `usize`, or an error naming it.
pub fn positive_param(op: &str, what: &str, v: i32) -> Result<usize> {
    if v <= 0 {
        return Err(Error::new(format!("{op}: {what} must be positive, got {v}")));
    }
    Ok(v as usize)
}

/// The geometry of a 2-D windowed op on NHWC tensors (convolution, depthwise convolution,
/// pooling). `f_c` is the filter's input depth (CONV_2D) and unused elsewhere.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConvGeom {
    pub batches: usize,
    pub in_h: usize,
    pub in_w: usize,
    pub in_c: usize,
    pub out_h: usize,
    pub out_w: usize,
    pub out_c: usize,
    pub f_h: usize,
    pub f_w: usize,
    pub f_c: usize,
    pub stride_h: usize,
    pub stride_w: usize,
    pub dil_h: usize,
    pub dil_w: usize,
    pub pad_h: usize,
    pub pad_w: usize,
}

impl ConvGeom {
    /// Elements of the input (`batches * in_h * in_w * in_c`).
    pub fn input_len(&self) -> Option<usize> {
        self.batches.checked_mul(self.in_h)?.checked_mul(self.in_w)?.checked_mul(self.in_c)
    }

    /// Elements of the output (`batches * out_h * out_w * out_c`).
    pub fn output_len(&self) -> Option<usize> {
        self.batches.checked_mul(self.out_h)?.checked_mul(self.out_w)?.checked_mul(self.out_c)
    }

    /// The NHWC output shape as TFLite dims.
    pub fn output_shape(&self, op: &str) -> Result<[i32; 4]> {
        Ok([to_dim(op, self.batches)?, to_dim(op, self.out_h)?, to_dim(op, self.out_w)?, to_dim(op, self.out_c)?])
    }

    /// Checks a GEMM driver's buffers against the geometry: `out_len` output values in
    /// rows of `packed_n` channels, and (unless `None`) `input_len` input values. Returns
    /// the number of output rows (pixels over all batches).
    pub fn check_gemm_buffers(&self, input_len: Option<usize>, out_len: usize, packed_n: usize) -> Result<usize> {
        let rows = self.batches * self.out_h * self.out_w;
        if out_len != rows * self.out_c || packed_n != self.out_c {
            return Err(Error::new(format!("output has {out_len} values, the geometry needs {}", rows * self.out_c)));
        }
        if let Some(len) = input_len
            && self.input_len() != Some(len)
        {
            return Err(Error::new(format!("input has {len} values, the geometry needs {:?}", self.input_len())));
        }
        Ok(rows)
    }

    /// True for a 1x1, stride-1, unpadded convolution: output pixel `r` reads input pixel
    /// `r`, so the rows are the input's own (a GEMM on dense rows).
    pub fn is_dense(&self) -> bool {
        self.f_h == 1
            && self.f_w == 1
            && self.stride_h == 1
            && self.stride_w == 1
            && self.pad_h == 0
            && self.pad_w == 0
            && self.in_h == self.out_h
            && self.in_w == self.out_w
    }

    /// The GEMM rows of this convolution (one per output pixel) over an input whose pixels
    /// hold `in_c` values (`self.in_c`, or more when they are padded for a kernel).
    pub fn gemm_rows(&self, in_c: usize) -> crate::microkernels::f32_gemm::ConvRows {
        crate::microkernels::f32_gemm::ConvRows {
            in_h: self.in_h,
            in_w: self.in_w,
            in_c,
            out_h: self.out_h,
            out_w: self.out_w,
            f_h: self.f_h,
            f_w: self.f_w,
            stride_h: self.stride_h,
            stride_w: self.stride_w,
            dil_h: self.dil_h,
            dil_w: self.dil_w,
            pad_h: self.pad_h,
            pad_w: self.pad_w,
        }
    }

    /// Input row `iy` for output row `oy` and filter row `ky`, if inside the image.
    #[inline]
    pub fn in_y(&self, oy: usize, ky: usize) -> Option<usize> {
        let v = (oy * self.stride_h + ky * self.dil_h) as isize - self.pad_h as isize;
        if v >= 0 && (v as usize) < self.in_h { Some(v as usize) } else { None }
    }

    /// Input column `ix` for output column `ox` and filter column `kx`, if inside.
    #[inline]
    pub fn in_x(&self, ox: usize, kx: usize) -> Option<usize> {
        let v = (ox * self.stride_w + kx * self.dil_w) as isize - self.pad_w as isize;
        if v >= 0 && (v as usize) < self.in_w { Some(v as usize) } else { None }
    }

    /// Checks that every input and output coordinate the window loops can form stays in
    /// `isize` (so the index arithmetic above cannot overflow).
    pub fn check_index_range(&self, op: &str) -> Result<()> {
        let far_y =
            self.out_h.checked_mul(self.stride_h).and_then(|v| v.checked_add(self.f_h.checked_mul(self.dil_h)?));
        let far_x =
            self.out_w.checked_mul(self.stride_w).and_then(|v| v.checked_add(self.f_w.checked_mul(self.dil_w)?));
        match (far_y, far_x) {
            (Some(y), Some(x)) if y <= isize::MAX as usize / 2 && x <= isize::MAX as usize / 2 => Ok(()),
            _ => Err(Error::new(format!("{op}: window geometry overflows"))),
        }
    }
}

/// Checks slice lengths against a geometry; an error (never a panic) if they disagree.
pub fn check_len(what: &str, got: usize, want: Option<usize>) -> Result<()> {
    match want {
        Some(w) if w == got => Ok(()),
        Some(w) => Err(Error::new(format!("{what} holds {got} values, expected {w}"))),
        None => Err(Error::new(format!("{what} size overflows"))),
    }
}

/// The data of `t` as `T`, borrowed when aligned, else copied with unaligned reads (a
/// model file may store an int64 bias at an address that is only 4-byte aligned; TFLite
/// reads it in place).
pub fn data_cow<'a, T: Element>(t: &TensorView<'a>) -> Result<Cow<'a, [T]>> {
    match t.data::<T>() {
        Ok(s) => Ok(Cow::Borrowed(s)),
        Err(e) => {
            if !T::matches(t.dtype) {
                return Err(e);
            }
            let raw = t.raw()?;
            let n = t.num_elements();
            let size = core::mem::size_of::<T>();
            let need = n.checked_mul(size).ok_or_else(|| Error::new("tensor size overflow"))?;
            if raw.len() < need {
                return Err(e);
            }
            let v = raw[..need]
                .chunks_exact(size)
                // SAFETY: each chunk holds `size_of::<T>()` readable bytes, and `T: Element`
                // is plain old data valid for every bit pattern; the read is unaligned.
                .map(|c| unsafe { core::ptr::read_unaligned(c.as_ptr().cast::<T>()) })
                .collect();
            Ok(Cow::Owned(v))
        }
    }
}

/// [`data_cow`] of an optional tensor.
pub fn opt_data_cow<'a, T: Element>(t: Option<&TensorView<'a>>) -> Result<Option<Cow<'a, [T]>>> {
    t.map(data_cow).transpose()
}

// ---------------------------------------------------------------------------------------
// Quantization parameters
// ---------------------------------------------------------------------------------------

/// A real multiplier as TFLite's `QuantizeMultiplier` represents it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuantMul {
    pub multiplier: i32,
    pub shift: i32,
}

/// Per-channel requantization tables for the vectorizable [`Requant::apply16`]: bias,
/// multiplier and left / right shifts per output channel, padded with 16 zero entries so
/// that any 16 consecutive channels can be read.
#[derive(Clone, Debug, PartialEq)]
pub struct Requant {
    bias: Vec<i32>,
    mult: Vec<i32>,
    left: Vec<i32>,
    right: Vec<i32>,
    pub output_offset: i32,
    pub act_min: i32,
    pub act_max: i32,
    avx2: bool,
}

impl Requant {
    /// Tables for `mults` (one per channel) and an optional bias of the same length.
    pub fn new(mults: &[QuantMul], bias: Option<&[i32]>, output_offset: i32, act_min: i32, act_max: i32) -> Requant {
        let n = mults.len() + 16;
        let mut r = Requant {
            bias: vec![0; n],
            mult: vec![0; n],
            left: vec![0; n],
            right: vec![0; n],
            output_offset,
            act_min,
            act_max,
            avx2: super::conv_2d::have_avx2(),
        };
        for (c, m) in mults.iter().enumerate() {
            r.mult[c] = m.multiplier;
            // `x * (1 << left)` with TFLite's wrapping (the shift count taken mod 32).
            r.left[c] = m.shift.max(0) & 31;
            r.right[c] = (-m.shift).clamp(0, 31);
            r.bias[c] = bias.and_then(|b| b.get(c)).copied().unwrap_or(0);
        }
        r
    }

    /// Channels covered (without the padding).
    pub fn channels(&self) -> usize {
        self.mult.len() - 16
    }

    /// Requantizes 16 accumulators of channels `c0..c0 + 16` in place, exactly as
    /// `clamp(MultiplyByQuantizedMultiplier(acc + bias, m, shift) + output_offset)` (the
    /// default, double-rounding TFLite build), in a form the compiler vectorizes.
    /// `c0 + 16` must not exceed [`Requant::channels`] + 16.
    #[inline(always)]
    pub fn apply16(&self, c0: usize, acc: &mut [i32; 16]) {
        let bias: &[i32; 16] = self.bias[c0..c0 + 16].try_into().expect("16 entries");
        let mult: &[i32; 16] = self.mult[c0..c0 + 16].try_into().expect("16 entries");
        let left: &[i32; 16] = self.left[c0..c0 + 16].try_into().expect("16 entries");
        let right: &[i32; 16] = self.right[c0..c0 + 16].try_into().expect("16 entries");
        for j in 0..16 {
            let x = acc[j].wrapping_add(bias[j]).wrapping_shl(left[j] as u32);
            let m = mult[j];
            // SaturatingRoundingDoublingHighMul: (x * m + nudge) / 2^31, truncating.
            let ab = x as i64 * m as i64;
            let t = ab + if ab >= 0 { 1i64 << 30 } else { 1 - (1i64 << 30) };
            let t = t + ((t >> 63) & 0x7fff_ffff);
            let h = if x == i32::MIN && m == i32::MIN { i32::MAX } else { (t >> 31) as i32 };
            // RoundingDivideByPOT.
            let e = right[j] as u32;
            let mask = (1u32.wrapping_shl(e).wrapping_sub(1)) as i32;
            let rem = h & mask;
            let thr = (mask >> 1) + (h < 0) as i32;
            let v = (h >> e) + (rem > thr) as i32;
            acc[j] = v.wrapping_add(self.output_offset).clamp(self.act_min, self.act_max);
        }
    }

    /// Requantizes `acc` (channels `c0..c0 + acc.len()`) into `out`, 16 at a time (8 at a
    /// time with AVX2 intrinsics when the CPU has them).
    #[inline(always)]
    pub fn apply<A: AccValue, T: crate::kernels::quant::QuantInt>(&self, c0: usize, acc: &[A], out: &mut [T]) {
        let n_all = acc.len().min(out.len());
        #[cfg(target_arch = "x86_64")]
        if self.avx2 {
            // SAFETY: `avx2` is set only when the CPU has AVX2.
            unsafe { self.apply_avx2(c0, &acc[..n_all], &mut out[..n_all]) };
            return;
        }
        let mut c = 0;
        while c < n_all {
            let n = 16.min(n_all - c);
            let mut buf = [0i32; 16];
            for (b, a) in buf.iter_mut().zip(&acc[c..c + n]) {
                *b = a.to_i32();
            }
            self.apply16(c0 + c, &mut buf);
            for (o, &v) in out[c..c + n].iter_mut().zip(&buf[..n]) {
                *o = T::from_i32(v);
            }
            c += n;
        }
    }

    /// [`Requant::apply`] with AVX2: `MultiplyByQuantizedMultiplier` on 8 lanes (64-bit
    /// products of the even and odd lanes, truncating division by 2^31, then the rounding
    /// shift), bit-identical to the scalar [`Requant::apply16`]; full groups of 8 are loaded
    /// and narrowed to the output type with vector instructions.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn apply_avx2<A: AccValue, T: crate::kernels::quant::QuantInt>(&self, c0: usize, acc: &[A], out: &mut [T]) {
        use std::arch::x86_64::*;
        let mut c = 0;
        while c < acc.len() {
            let n = 8.min(acc.len() - c);
            let v = if n == 8 {
                let a: &[A; 8] = acc[c..c + 8].try_into().expect("8 accumulators");
                // SAFETY: AVX2 is available (this function's contract); `a` is 8 readable values.
                unsafe { A::load8(a) }
            } else {
                let mut buf = [0i32; 8];
                for (b, x) in buf.iter_mut().zip(&acc[c..c + n]) {
                    *b = x.to_i32();
                }
                // SAFETY: as above; `buf` is 8 readable i32.
                unsafe { _mm256_loadu_si256(buf.as_ptr().cast()) }
            };
            // SAFETY: AVX2 is available; `requant8` reads table entries `c0 + c..+8`, inside
            // the padded tables because callers pass channels within `0..channels`.
            let r = unsafe { self.requant8(c0 + c, v) };
            // SAFETY: AVX2 is available; `store8` writes at most `n` elements of `out[c..]`.
            unsafe { store8(r, &mut out[c..c + n]) };
            c += n;
        }
    }

    /// The 8-lane AVX2 requantization of accumulators `x` (channels `ch..ch + 8`).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn requant8(&self, ch: usize, x: std::arch::x86_64::__m256i) -> std::arch::x86_64::__m256i {
        use std::arch::x86_64::*;
        macro_rules! load8 {
            ($v:expr) => {{
                let s: &[i32; 8] = $v[ch..ch + 8].try_into().expect("8 entries");
                // SAFETY: `s` is 8 readable i32 (32 bytes); the load is unaligned; AVX2 is
                // available (this function's contract).
                unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
            }};
        }
        let zero = _mm256_setzero_si256();
        let one = _mm256_set1_epi32(1);
        let int_min = _mm256_set1_epi32(i32::MIN);
        let x = _mm256_sllv_epi32(_mm256_add_epi32(x, load8!(self.bias)), load8!(self.left));
        let m = load8!(self.mult);
        // SAFETY: AVX2 is available (this function's contract).
        let (h_even, h_odd) = unsafe {
            (
                high_mul_avx2(_mm256_mul_epi32(x, m)),
                high_mul_avx2(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32))),
            )
        };
        let h = _mm256_blend_epi32(h_even, _mm256_slli_epi64(h_odd, 32), 0b1010_1010);
        let sat = _mm256_and_si256(_mm256_cmpeq_epi32(x, int_min), _mm256_cmpeq_epi32(m, int_min));
        let h = _mm256_blendv_epi8(h, _mm256_set1_epi32(i32::MAX), sat);
        let e = load8!(self.right);
        let mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, e), one);
        let rem = _mm256_and_si256(h, mask);
        let thr = _mm256_sub_epi32(_mm256_srai_epi32(mask, 1), _mm256_cmpgt_epi32(zero, h));
        let v = _mm256_sub_epi32(_mm256_srav_epi32(h, e), _mm256_cmpgt_epi32(rem, thr));
        let v = _mm256_add_epi32(v, _mm256_set1_epi32(self.output_offset));
        _mm256_min_epi32(_mm256_max_epi32(v, _mm256_set1_epi32(self.act_min)), _mm256_set1_epi32(self.act_max))
    }
}

/// An accumulator the requantization reads: `i32`, or an `f32` holding an exact integer
/// (the float-computed integer kernels; see `depthwise_conv_2d`).
pub trait AccValue: Copy {
    /// The value as `i32` (an `f32` must hold an integer in `i32` range).
    fn to_i32(self) -> i32;
    /// Loads 8 values as `i32` lanes.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load8(v: &[Self; 8]) -> std::arch::x86_64::__m256i;
}

impl AccValue for i32 {
    #[inline(always)]
    fn to_i32(self) -> i32 {
        self
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn load8(v: &[i32; 8]) -> std::arch::x86_64::__m256i {
        // SAFETY: `v` is 8 readable i32; the load is unaligned.
        unsafe { std::arch::x86_64::_mm256_loadu_si256(v.as_ptr().cast()) }
    }
}

impl AccValue for f32 {
    #[inline(always)]
    fn to_i32(self) -> i32 {
        self as i32
    }
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn load8(v: &[f32; 8]) -> std::arch::x86_64::__m256i {
        use std::arch::x86_64::*;
        // SAFETY: `v` is 8 readable f32; the values are exact integers in range, so the
        // truncating conversion is exact (as the scalar `as i32`).
        unsafe { _mm256_cvttps_epi32(_mm256_loadu_ps(v.as_ptr())) }
    }
}

/// Stores the first `out.len()` (at most 8) lanes of `v`, already within `T`'s range, as
/// `T` (narrowing with saturating packs for full 8-lane groups of 8- and 16-bit types).
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn store8<T: crate::kernels::quant::QuantInt>(v: std::arch::x86_64::__m256i, out: &mut [T]) {
    use crate::abi::types::TfLiteType;
    use std::arch::x86_64::*;
    let size = core::mem::size_of::<T>();
    if out.len() == 8 {
        let lo = _mm256_castsi256_si128(v);
        let hi = _mm256_extracti128_si256(v, 1);
        let p16 = _mm_packs_epi32(lo, hi);
        match T::DTYPE {
            TfLiteType::kTfLiteInt8 if size == 1 => {
                // SAFETY: `out` is 8 writable one-byte elements; the store writes 8 bytes.
                unsafe { _mm_storel_epi64(out.as_mut_ptr().cast(), _mm_packs_epi16(p16, p16)) };
                return;
            }
            TfLiteType::kTfLiteUInt8 if size == 1 => {
                // SAFETY: as above.
                unsafe { _mm_storel_epi64(out.as_mut_ptr().cast(), _mm_packus_epi16(p16, p16)) };
                return;
            }
            TfLiteType::kTfLiteInt16 if size == 2 => {
                // SAFETY: `out` is 8 writable two-byte elements; the store writes 16 bytes.
                unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), p16) };
                return;
            }
            _ => {}
        }
    }
    let mut buf = [0i32; 8];
    // SAFETY: `buf` is 8 writable i32.
    unsafe { _mm256_storeu_si256(buf.as_mut_ptr().cast(), v) };
    for (o, &x) in out.iter_mut().zip(&buf) {
        *o = T::from_i32(x);
    }
}

/// The rounded, truncating `(ab + nudge) / 2^31` of `SaturatingRoundingDoublingHighMul` on
/// four 64-bit products; the result is in the low 32 bits of each lane.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn high_mul_avx2(ab: std::arch::x86_64::__m256i) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    let zero = _mm256_setzero_si256();
    let neg = _mm256_cmpgt_epi64(zero, ab);
    let nudge = _mm256_blendv_epi8(_mm256_set1_epi64x(1 << 30), _mm256_set1_epi64x(1 - (1 << 30)), neg);
    let t = _mm256_add_epi64(ab, nudge);
    let tneg = _mm256_cmpgt_epi64(zero, t);
    _mm256_srli_epi64(_mm256_add_epi64(t, _mm256_and_si256(tneg, _mm256_set1_epi64x(0x7fff_ffff))), 31)
}

/// The affine quantization of `t`: (scales, zero points, quantized dimension), or an error
/// naming `op` and `what` when it has none or an empty scale array.
pub fn affine<'a>(op: &str, what: &str, t: &TensorView<'a>) -> Result<(&'a [f32], &'a [i32], i32)> {
    match t.affine_quant() {
        Some((s, z, d)) if !s.is_empty() => Ok((s, z, d)),
        _ => Err(Error::new(format!("{op}: {what} has no affine quantization parameters"))),
    }
}

/// `PopulateConvolutionQuantizationParams`'s per-channel loop: one multiplier per output
/// channel from `input_scale * filter_scale[c] / output_scale` in double precision. A
/// single filter scale is broadcast to every channel.
pub fn per_channel_multipliers(
    op: &str,
    input_scale: f32,
    filter_scales: &[f32],
    output_scale: f32,
    channels: usize,
) -> Result<Vec<QuantMul>> {
    if filter_scales.len() != 1 && filter_scales.len() != channels {
        return Err(Error::new(format!(
            "{op}: the filter has {} scales for {channels} output channels",
            filter_scales.len()
        )));
    }
    (0..channels)
        .map(|c| {
            let fs = if filter_scales.len() == 1 { filter_scales[0] } else { filter_scales[c] };
            let eff = input_scale as f64 * fs as f64 / output_scale as f64;
            let (multiplier, shift) = try_quantize_multiplier(eff).map_err(|e| Error::new(format!("{op}: {e}")))?;
            Ok(QuantMul { multiplier, shift })
        })
        .collect()
}

/// `GetQuantizedConvolutionMultipler` (the legacy per-tensor path of uint8 kernels): checks
/// the bias scale is close to `input_scale * filter_scale` (relative to the output scale)
/// and returns `(input_scale * filter_scale, in f32) / output_scale`.
pub fn legacy_conv_multiplier(
    op: &str,
    input_scale: f32,
    filter_scale: f32,
    bias_scale: Option<f32>,
    output_scale: f32,
) -> Result<f64> {
    if let Some(bs) = bias_scale {
        let product = input_scale as f64 * filter_scale as f64;
        let diff = (product - bs as f64).abs();
        // A NaN ratio fails the check, as TF_LITE_ENSURE does.
        let ratio = diff / output_scale as f64;
        if ratio.is_nan() || ratio > 0.02 {
            return Err(Error::new(format!(
                "{op}: bias scale {bs} does not match input scale {input_scale} x filter scale {filter_scale}"
            )));
        }
    }
    let product = (input_scale * filter_scale) as f64;
    if product.is_nan() || product < 0.0 {
        return Err(Error::new(format!("{op}: input scale x filter scale is negative or NaN")));
    }
    Ok(product / output_scale as f64)
}

/// [`legacy_conv_multiplier`] quantized: `(multiplier, exponent)` as `QuantizeMultiplier`.
pub fn legacy_quant_mul(
    op: &str,
    input_scale: f32,
    filter_scale: f32,
    bias_scale: Option<f32>,
    output_scale: f32,
) -> Result<QuantMul> {
    let m = legacy_conv_multiplier(op, input_scale, filter_scale, bias_scale, output_scale)?;
    let (multiplier, shift) = try_quantize_multiplier(m).map_err(|e| Error::new(format!("{op}: {e}")))?;
    Ok(QuantMul { multiplier, shift })
}

/// The bias type a quantized kernel expects for an input type, as conv.cc checks it.
pub fn check_bias_type(op: &str, input: TfLiteType, bias: TfLiteType, allowed: &[TfLiteType]) -> Result<()> {
    if allowed.contains(&bias) {
        Ok(())
    } else {
        Err(Error::new(format!("{op}: bias of type {} with {} input", bias.name(), input.name())))
    }
}

// ---------------------------------------------------------------------------------------
// Hybrid (dynamic-range) input quantization
// ---------------------------------------------------------------------------------------

/// `std::minmax_element`: the first smallest and the last largest value (by `<`).
fn min_max(values: &[f32]) -> (f32, f32) {
    let Some(&first) = values.first() else { return (0.0, 0.0) };
    let (mut lo, mut hi) = (first, first);
    for &v in &values[1..] {
        if v < lo {
            lo = v;
        }
        if v.partial_cmp(&hi) != Some(core::cmp::Ordering::Less) {
            hi = v;
        }
    }
    (lo, hi)
}

/// `PortableSymmetricQuantizeFloats`: quantizes `values` to `[-127, 127]` with scale
/// `max|v| / 127` (rounding half away from zero, in f32) and returns the scale (1 for an
/// all-zero input, whose quantized values are all 0).
pub fn symmetric_quantize(values: &[f32], out: &mut [i8]) -> f32 {
    symmetric_quantize_on(1, values, out)
}

/// [`symmetric_quantize`] on up to `max_threads` threads (the same values).
pub fn symmetric_quantize_on(max_threads: usize, values: &[f32], out: &mut [i8]) -> f32 {
    let (lo, hi) = value_range(max_threads, values);
    let q = InputQuant::symmetric(lo, hi);
    q.quantize_on(max_threads, values, out);
    q.scale
}

/// How a hybrid layer's float input becomes int8, chosen from the input's range:
/// `clamp(round(offset + v * inv), range)` (half away from zero, in f32), or all zeros
/// when the range is empty; `scale` and `zero_point` are what the values then stand for.
#[derive(Clone, Copy, Debug)]
pub struct InputQuant {
    pub scale: f32,
    pub zero_point: i32,
    inv: f32,
    offset: f32,
    range: (i32, i32),
    all_zero: bool,
}

impl InputQuant {
    /// `PortableSymmetricQuantizeFloats`'s choice for values in `lo..=hi`: scale
    /// `max|v| / 127`, zero point 0, values in `[-127, 127]` (scale 1 for an all-zero input).
    pub fn symmetric(lo: f32, hi: f32) -> InputQuant {
        let range = crate::kernels::activation::cpp_max(lo.abs(), hi.abs());
        if range == 0.0 {
            return InputQuant::ZERO;
        }
        // `round(v * inv)`: adding a zero offset first changes no value.
        InputQuant {
            scale: range / 127.0,
            zero_point: 0,
            inv: 127.0f32 / range,
            offset: 0.0,
            range: (-127, 127),
            all_zero: false,
        }
    }

    /// `PortableAsymmetricQuantizeFloats`'s choice for values in `lo..=hi` (NaN bounds
    /// ignored): scale and zero point from `min(0, lo)` and `max(0, hi)` in double
    /// precision, values in `[-128, 127]` (`(1, 0)` when that range is empty).
    pub fn asymmetric(lo: f32, hi: f32) -> InputQuant {
        const QMIN: f64 = -128.0;
        const QMAX: f64 = 127.0;
        // std::fmin / std::fmax ignore a NaN operand.
        let rmin = if lo.is_nan() { 0.0 } else { lo.min(0.0) } as f64;
        let rmax = if hi.is_nan() { 0.0 } else { hi.max(0.0) } as f64;
        if rmin == rmax {
            return InputQuant::ZERO;
        }
        let scale = (rmax - rmin) / (QMAX - QMIN);
        let zp_from_min = QMIN - rmin / scale;
        let zp_from_max = QMAX - rmax / scale;
        let err_min = QMIN.abs() + (rmin / scale).abs();
        let err_max = QMAX.abs() + (rmax / scale).abs();
        let zp = if err_min < err_max { zp_from_min } else { zp_from_max };
        let nudged: i32 = if zp <= QMIN {
            QMIN as i32
        } else if zp >= QMAX {
            QMAX as i32
        } else {
            zp.round() as i32
        };
        let scale_f = scale as f32;
        // `offset + v * inv` is computed in float (int + float), then rounded.
        InputQuant {
            scale: scale_f,
            zero_point: nudged,
            inv: 1.0f32 / scale_f,
            offset: nudged as f32,
            range: (-128, 127),
            all_zero: false,
        }
    }

    /// An empty range: every value quantizes to 0, with scale 1 and zero point 0.
    const ZERO: InputQuant =
        InputQuant { scale: 1.0, zero_point: 0, inv: 0.0, offset: 0.0, range: (0, 0), all_zero: true };

    /// Quantizes `values` into `out` (equal lengths) on this thread.
    pub fn quantize(&self, values: &[f32], out: &mut [i8]) {
        if self.all_zero {
            out.fill(0);
        } else {
            (crate::microkernels::table().f32_quantize.quantize)(values, self.inv, self.offset, self.range, out);
        }
    }

    /// [`quantize`](Self::quantize) split over up to `max_threads` threads when the slice
    /// is long enough.
    fn quantize_on(&self, max_threads: usize, values: &[f32], out: &mut [i8]) {
        if self.all_zero {
            out.fill(0);
        } else {
            quantize_values(max_threads, values, self.inv, self.offset, self.range, out);
        }
    }
}

/// `PortableAsymmetricQuantizeFloats`: quantizes `values` to `[-128, 127]` with a scale
/// and zero point chosen from `min(0, min v)` and `max(0, max v)` in double precision;
/// returns `(scale, zero_point)` (`(1, 0)` and all zeros when that range is empty).
pub fn asymmetric_quantize(values: &[f32], out: &mut [i8]) -> (f32, i32) {
    asymmetric_quantize_on(1, values, out)
}

/// [`asymmetric_quantize`] on up to `max_threads` threads (the same values).
pub fn asymmetric_quantize_on(max_threads: usize, values: &[f32], out: &mut [i8]) -> (f32, i32) {
    let (lo, hi) = value_range(max_threads, values);
    let q = InputQuant::asymmetric(lo, hi);
    q.quantize_on(max_threads, values, out);
    (q.scale, q.zero_point)
}

/// `std::minmax_element` of `values`, the scan split over up to `max_threads` threads
/// when the slice is long enough. Without NaNs the smallest and largest value are the
/// same whichever way the slice is cut (a zero's sign aside, which neither quantization
/// sees); with one, the whole slice is scanned in order, as its ordering rules need.
pub fn value_range(max_threads: usize, values: &[f32]) -> (f32, f32) {
    let k = &crate::microkernels::table().f32_quantize;
    let threads = elementwise_threads(max_threads, values.len());
    if threads > 1 {
        let chunk = values.len().div_ceil(threads);
        let mut parts: Vec<Option<(f32, f32)>> = vec![None; values.len().div_ceil(chunk)];
        let scanned = parallel_chunks_mut(threads, &mut parts, 1, &|i, slot| {
            slot[0] = values.chunks(chunk).nth(i).and_then(k.min_max);
            Ok(())
        });
        let joined = parts
            .iter()
            .try_fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), p| p.map(|(l, h)| (lo.min(l), hi.max(h))));
        if let (Ok(()), Some(range)) = (scanned, joined) {
            return range;
        }
    }
    (k.min_max)(values).unwrap_or_else(|| min_max(values))
}

/// `out[i] = clamp(round(offset + values[i] * inv))`, split over up to `max_threads`
/// threads when the slice is long enough.
fn quantize_values(max_threads: usize, values: &[f32], inv: f32, offset: f32, range: (i32, i32), out: &mut [i8]) {
    let quantize = crate::microkernels::table().f32_quantize.quantize;
    let threads = elementwise_threads(max_threads, values.len());
    if threads > 1 && out.len() == values.len() {
        let chunk = values.len().div_ceil(threads);
        let split = parallel_chunks_mut(threads, out, chunk, &|i, o| {
            let at = i * chunk;
            let v = values.get(at..at + o.len()).ok_or_else(|| Error::new("quantization chunk out of range"))?;
            quantize(v, inv, offset, range, o);
            Ok(())
        });
        if split.is_ok() {
            return;
        }
    }
    quantize(values, inv, offset, range, out);
}

// ---------------------------------------------------------------------------------------
// Per-node state: repacked constant weights
// ---------------------------------------------------------------------------------------

/// Where a weight tensor's data lives: (address, bytes). Packed weights are kept while
/// the filter and bias they were packed from stay where they were.
type WeightsKey = (usize, usize, usize, usize);

fn weights_key(filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> Result<WeightsKey> {
    let f = filter.raw()?;
    let (bp, bl) = match bias {
        Some(b) => {
            let r = b.raw()?;
            (r.as_ptr() as usize, r.len())
        }
        None => (0, 0),
    };
    Ok((f.as_ptr() as usize, f.len(), bp, bl))
}

/// A node's filter (and bias) packed for its kernel, part of the node's state: packed at
/// Prepare when they are model constants, at the first Invoke when they only keep their
/// values across runs from then on (a DEQUANTIZE of constant weights into a persistent
/// tensor), and kept, keyed by where their data lives. The packing itself (geometry, tile
/// widths, offsets) is fixed by the state it belongs to, which Prepare rebuilds.
pub struct PackSlot<P> {
    kept: Option<(WeightsKey, P)>,
}

impl<P> Default for PackSlot<P> {
    fn default() -> Self {
        PackSlot { kept: None }
    }
}

impl<P> PackSlot<P> {
    /// The slot for a node at Prepare: holding the packed weights if they are constants.
    pub fn prepare(
        filter: &TensorView<'_>,
        bias: Option<&TensorView<'_>>,
        pack: impl FnOnce() -> Result<P>,
    ) -> Result<PackSlot<P>> {
        if !weights_constant(filter, bias) {
            return Ok(PackSlot::default());
        }
        Ok(PackSlot { kept: Some((weights_key(filter, bias)?, pack()?)) })
    }

    /// The packed weights at Invoke: the kept copy while filter and bias stay where they
    /// were packed from; packed now and kept when they keep their values across runs;
    /// otherwise packed into `fresh` for this call.
    pub fn get<'s>(
        &'s mut self,
        filter: &TensorView<'_>,
        bias: Option<&TensorView<'_>>,
        fresh: &'s mut Option<P>,
        pack: impl FnOnce() -> Result<P>,
    ) -> Result<&'s P> {
        if !weights_stable(filter, bias) {
            return Ok(fresh.insert(pack()?));
        }
        let key = weights_key(filter, bias)?;
        if self.kept.as_ref().is_none_or(|(k, _)| *k != key) {
            self.kept = None;
            self.kept = Some((key, pack()?));
        }
        match &self.kept {
            Some((_, p)) => Ok(p),
            None => Err(Error::new("internal error: packed weights missing")),
        }
    }
}

/// A convolution geometry for tests: square stride `s` and dilation `d`, padding as
/// TFLite computes it.
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
pub fn test_conv_geom(
    b: usize,
    h: usize,
    w: usize,
    c: usize,
    oc: usize,
    fh: usize,
    fw: usize,
    fc: usize,
    s: usize,
    d: usize,
    pad: TfLitePadding,
) -> ConvGeom {
    let (out_h, out_w, p) = compute_padding_height_width(s, s, d, d, h, w, fh, fw, pad).expect("a valid test geometry");
    ConvGeom {
        batches: b,
        in_h: h,
        in_w: w,
        in_c: c,
        out_h,
        out_w,
        out_c: oc,
        f_h: fh,
        f_w: fw,
        f_c: fc,
        stride_h: s,
        stride_w: s,
        dil_h: d,
        dil_w: d,
        pad_h: p.height,
        pad_w: p.width,
    }
}

/// True if filter and (optional) bias keep their values from one Invoke to the next, so
/// what is packed from them can be kept (see [`TensorView::is_stable_across_runs`]).
pub fn weights_stable(filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> bool {
    filter.is_stable_across_runs() && bias.is_none_or(|b| b.is_stable_across_runs())
}

/// True if filter and (optional) bias are model constants, whose data is there at Prepare.
pub fn weights_constant(filter: &TensorView<'_>, bias: Option<&TensorView<'_>>) -> bool {
    filter.is_constant() && bias.is_none_or(|b| b.is_constant())
}

#[cfg(test)]
mod tests {
    use super::*;
    use TfLitePadding::*;

    #[test]
    fn out_sizes_match_tflite() {
        assert_eq!(compute_out_size(kTfLitePaddingSame, 5, 3, 2, 1).unwrap(), 3);
        assert_eq!(compute_out_size(kTfLitePaddingValid, 5, 3, 2, 1).unwrap(), 2);
        assert_eq!(compute_out_size(kTfLitePaddingValid, 7, 3, 1, 2).unwrap(), 3);
        assert_eq!(compute_out_size(kTfLitePaddingValid, 3, 5, 2, 1).unwrap(), 0); // (3+2-5)/2
        assert!(compute_out_size(kTfLitePaddingValid, 2, 5, 1, 1).is_err());
        assert!(compute_out_size(kTfLitePaddingSame, 5, 3, 0, 1).is_err());
        assert!(compute_out_size(kTfLitePaddingUnknown, 5, 3, 1, 1).is_err());
        assert!(compute_out_size(kTfLitePaddingSame, 5, 0, 1, 1).is_err());
    }

    #[test]
    fn padding_with_offset() {
        // SAME, in 5, filter 3, stride 2: out 3, total padding (2*2+3-5)=2 -> 1, offset 0.
        let (oh, ow, p) = compute_padding_height_width(2, 2, 1, 1, 5, 6, 3, 3, kTfLitePaddingSame).unwrap();
        assert_eq!((oh, ow), (3, 3));
        assert_eq!(p, Padding2d { height: 1, width: 0, height_offset: 0, width_offset: 1 });
        // VALID never pads.
        let (_, _, p) = compute_padding_height_width(1, 1, 1, 1, 5, 5, 3, 3, kTfLitePaddingValid).unwrap();
        assert_eq!(p, Padding2d::default());
    }

    #[test]
    fn symmetric_quantization() {
        let mut q = [0i8; 4];
        let s = symmetric_quantize(&[-1.0, 0.5, 0.25, 0.0], &mut q);
        assert_eq!(s, 1.0 / 127.0);
        assert_eq!(q, [-127, 64, 32, 0]); // 63.5 -> 64, 31.75 -> 32
        let s = symmetric_quantize(&[0.0; 3], &mut q[..3]);
        assert_eq!(s, 1.0);
        assert_eq!(&q[..3], &[0, 0, 0]);
    }

    #[test]
    fn asymmetric_quantization() {
        let mut q = [0i8; 3];
        let (s, zp) = asymmetric_quantize(&[0.0, 1.0, 2.55], &mut q);
        assert_eq!(zp, -128);
        assert!((s - 0.01).abs() < 1e-7);
        assert_eq!(q, [-128, -28, 127]);
        let (s, zp) = asymmetric_quantize(&[-1.0, 1.0, 0.0], &mut q);
        assert!((s - 2.0 / 255.0).abs() < 1e-7);
        // Both candidate zero points are -0.5; std::round gives -1.
        assert_eq!(zp, -1);
        let (s, zp) = asymmetric_quantize(&[0.0, 0.0], &mut q[..2]);
        assert_eq!((s, zp), (1.0, 0));
    }

    #[test]
    fn quantization_split_over_threads_gives_the_same_values() {
        let mut rng = crate::microkernels::test_rng::Lcg(0x2545_f491);
        // Long enough to split; the NaN cases go back to one in-order scan.
        for (len, nan_at) in [(40_001usize, None), (65_536, None), (50_003, Some(31_000)), (50_003, Some(3))] {
            let mut values: Vec<f32> = (0..len).map(|_| rng.f32() * 3.0 - 0.5).collect();
            if let Some(i) = nan_at {
                values[i] = f32::NAN;
            }
            let mut one = vec![0i8; len];
            let want_sym = symmetric_quantize(&values, &mut one);
            for threads in [2, 3, 4] {
                let mut split = vec![1i8; len];
                let got = symmetric_quantize_on(threads, &values, &mut split);
                assert_eq!(
                    (got.to_bits(), &split),
                    (want_sym.to_bits(), &one),
                    "symmetric, {len} values, {threads} threads"
                );
            }
            let want_asym = asymmetric_quantize(&values, &mut one);
            for threads in [2, 3, 4] {
                let mut split = vec![1i8; len];
                let got = asymmetric_quantize_on(threads, &values, &mut split);
                assert_eq!((got, &split), (want_asym, &one), "asymmetric, {len} values, {threads} threads");
            }
        }
    }

    #[test]
    fn multipliers() {
        let m = per_channel_multipliers("T", 0.5, &[0.25, 0.5], 0.125, 2).unwrap();
        assert_eq!(m[0], QuantMul { multiplier: 1 << 30, shift: 1 });
        assert_eq!(m[1], QuantMul { multiplier: 1 << 30, shift: 2 });
        let m = per_channel_multipliers("T", 0.5, &[0.25], 0.125, 3).unwrap();
        assert_eq!(m.len(), 3);
        assert!(per_channel_multipliers("T", 0.5, &[0.25, 0.5], 0.125, 3).is_err());
        assert!(per_channel_multipliers("T", 0.5, &[0.25], 0.0, 1).is_err());
        assert!(legacy_conv_multiplier("T", 0.5, 0.5, Some(0.25), 1.0).is_ok());
        assert!(legacy_conv_multiplier("T", 0.5, 0.5, Some(0.5), 1.0).is_err());
    }

    #[test]
    fn requant_matches_multiply_by_quantized_multiplier() {
        use crate::kernels::quant::{multiply_by_quantized_multiplier, quantize_multiplier};
        let mut seed = 17u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 32) as u32
        };
        let scales = [1e-9, 3e-5, 0.0007, 0.013, 0.31, 0.5, 0.999, 1.0, 1.7, 9.3, 1234.5, 2.0e6, 3.0e9];
        for round in 0..200 {
            let mults: Vec<QuantMul> = (0..20)
                .map(|c| {
                    let (multiplier, shift) = quantize_multiplier(scales[(c + round) % scales.len()]);
                    QuantMul { multiplier, shift }
                })
                .collect();
            let bias: Vec<i32> = (0..20).map(|_| next() as i32 >> (next() % 32)).collect();
            let r = Requant::new(&mults, Some(&bias), (next() % 256) as i32 - 128, -100, 90);
            let acc: Vec<i32> = (0..20)
                .map(|i| match i % 5 {
                    0 => i32::MIN,
                    1 => i32::MAX,
                    _ => next() as i32 >> (next() % 32),
                })
                .collect();
            let mut out = vec![0i16; 20];
            r.apply(0, &acc, &mut out);
            // The portable path gives the same.
            let mut buf = [0i32; 16];
            buf.copy_from_slice(&acc[4..20]);
            r.apply16(4, &mut buf);
            assert_eq!(buf.iter().map(|&v| v as i16).collect::<Vec<_>>(), out[4..20].to_vec());
            for c in 0..20 {
                let m = mults[c];
                let want = multiply_by_quantized_multiplier(acc[c].wrapping_add(bias[c]), m.multiplier, m.shift)
                    .wrapping_add(r.output_offset)
                    .clamp(-100, 90);
                assert_eq!(out[c] as i32, want, "acc {} bias {} mult {:?}", acc[c], bias[c], m);
            }
        }
    }
}
