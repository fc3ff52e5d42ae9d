//! AVX-512 quantization kernels: 16 values per step, masked tails.

use super::QuantizeKernels;
use core::arch::x86_64::*;

/// The AVX-512 table entry.
pub const KERNELS: QuantizeKernels = QuantizeKernels { min_max, quantize };

fn lanes_below(n: usize) -> __mmask16 {
    if n >= 16 { 0xffff } else { ((1u32 << n) - 1) as __mmask16 }
}

fn min_max(values: &[f32]) -> Option<(f32, f32)> {
    // SAFETY: the table is only handed out on CPUs with AVX-512 F, DQ and VL.
    unsafe { min_max_impl(values) }
}

#[target_feature(enable = "avx512f")]
fn min_max_impl(values: &[f32]) -> Option<(f32, f32)> {
    let first = *values.first()?;
    // Four pairs of running bounds over 64 values a step: one pair would be a chain of
    // dependent min / max operations, each waiting out the last one's latency.
    let mut lo = [_mm512_set1_ps(first); 4];
    let mut hi = lo;
    let mut nan: __mmask16 = 0;
    let mut blocks = values.chunks_exact(64);
    for block in &mut blocks {
        for (j, quarter) in block.chunks_exact(16).enumerate() {
            // SAFETY: `quarter` is 16 values; the load is unaligned.
            let v = unsafe { _mm512_loadu_ps(quarter.as_ptr()) };
            nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
            lo[j] = _mm512_min_ps(lo[j], v);
            hi[j] = _mm512_max_ps(hi[j], v);
        }
    }
    for chunk in blocks.remainder().chunks(16) {
        let m = lanes_below(chunk.len());
        // SAFETY: the masked load reads only the chunk's `chunk.len()` values.
        let v = unsafe { _mm512_mask_loadu_ps(_mm512_set1_ps(first), m, chunk.as_ptr()) };
        nan |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        lo[0] = _mm512_min_ps(lo[0], v);
        hi[0] = _mm512_max_ps(hi[0], v);
    }
    if nan != 0 {
        return None;
    }
    let lo = _mm512_min_ps(_mm512_min_ps(lo[0], lo[1]), _mm512_min_ps(lo[2], lo[3]));
    let hi = _mm512_max_ps(_mm512_max_ps(hi[0], hi[1]), _mm512_max_ps(hi[2], hi[3]));
    Some((_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi)))
}

fn quantize(values: &[f32], inv: f32, offset: f32, range: (i32, i32), out: &mut [i8]) {
    // SAFETY: the table is only handed out on CPUs with AVX-512 F, BW, DQ and VL.
    unsafe { quantize_impl(values, inv, offset, range, out) }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn quantize_impl(values: &[f32], inv: f32, offset: f32, (lo, hi): (i32, i32), out: &mut [i8]) {
    let n = values.len().min(out.len());
    let (vinv, voff) = (_mm512_set1_ps(inv), _mm512_set1_ps(offset));
    let (vlo, vhi) = (_mm512_set1_ps(lo as f32), _mm512_set1_ps(hi as f32));
    let half = _mm512_set1_ps(0.5);
    let sign = _mm512_set1_epi32(i32::MIN);
    let one = _mm512_set1_ps(1.0);
    // `x * inv + offset` rounded half away from zero, clamped, as 32-bit lanes.
    let convert = |v: __m512| {
        let x = _mm512_add_ps(voff, _mm512_mul_ps(v, vinv));
        // Round half away from zero: truncate, then step away from zero when the dropped
        // fraction is at least one half (both steps exact in f32).
        let t = _mm512_roundscale_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(x);
        let frac = _mm512_abs_ps(_mm512_sub_ps(x, t));
        let away = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(frac, half);
        let step = _mm512_castsi512_ps(_mm512_or_si512(
            _mm512_and_si512(_mm512_castps_si512(x), sign),
            _mm512_castps_si512(one),
        ));
        let r = _mm512_mask_add_ps(t, away, t, step);
        let r = _mm512_min_ps(_mm512_max_ps(r, vlo), vhi);
        let q = _mm512_cvttps_epi32(r);
        // A NaN casts to 0 (Rust's and the scalar twin's conversion).
        _mm512_mask_mov_epi32(q, _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x), _mm512_setzero_si512())
    };
    // Whole vectors narrow in a register and store plainly: the narrowing store to memory
    // (`vpmovdb m128`) is microcoded on AMD's cores, several times slower.
    let whole = n / 16 * 16;
    let mut i = 0;
    while i < whole {
        // SAFETY: `i + 16 <= n`, within both slices; unaligned load and store.
        unsafe {
            let q = convert(_mm512_loadu_ps(values.as_ptr().add(i)));
            _mm_storeu_si128(out.as_mut_ptr().add(i).cast(), _mm512_cvtepi32_epi8(q));
        }
        i += 16;
    }
    if i < n {
        let m = lanes_below(n - i);
        // SAFETY: masked loads and stores touch only elements `i..n` of both slices.
        unsafe {
            let q = convert(_mm512_maskz_loadu_ps(m, values.as_ptr().add(i)));
            _mm_mask_storeu_epi8(out.as_mut_ptr().add(i).cast(), m, _mm512_cvtepi32_epi8(q));
        }
    }
}
