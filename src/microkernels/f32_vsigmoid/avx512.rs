//! AVX-512 sigmoid, sixteen values per step (the last partial step masked).

use super::consts::*;
use core::arch::x86_64::*;

/// AVX-512 sigmoid over a slice (`input.len() == out.len()`, checked by the caller). Only
/// reachable through the AVX-512 table, which exists only on CPUs with AVX-512 F.
pub fn sigmoid(input: &[f32], out: &mut [f32]) {
    let n = input.len().min(out.len());
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: the AVX-512 table is only handed out when the CPU has AVX-512 F; `i + 16
        // <= n` keeps the sixteen lanes inside both slices.
        unsafe { sixteen(input.as_ptr().add(i), out.as_mut_ptr().add(i), 0xffff) };
        i += 16;
    }
    if i < n {
        let mask = ((1u32 << (n - i)) - 1) as __mmask16;
        // SAFETY: as above; only the `n - i` lanes left in both slices are read and written.
        unsafe { sixteen(input.as_ptr().add(i), out.as_mut_ptr().add(i), mask) };
    }
}

/// AVX-512 `out[i] = exp((input[i] - sub) * scale)` for arguments `<= 0` (see
/// [`super::exp_shifted`]; equal lengths, checked by the caller). Only reachable through
/// the AVX-512 table.
pub fn exp_shifted(input: &[f32], sub: f32, scale: f32, out: &mut [f32]) {
    let n = input.len().min(out.len());
    let mut i = 0;
    while i < n {
        let mask = if i + 16 <= n { 0xffff } else { ((1u32 << (n - i)) - 1) as __mmask16 };
        // SAFETY: the AVX-512 table is only handed out when the CPU has AVX-512 F; the
        // lanes of `mask` lie inside both slices.
        unsafe { exp_sixteen(input.as_ptr().add(i), out.as_mut_ptr().add(i), mask, sub, scale) };
        i += 16;
    }
}

#[target_feature(enable = "avx512f")]
unsafe fn exp_sixteen(x: *const f32, o: *mut f32, mask: __mmask16, sub: f32, scale: f32) {
    // SAFETY: the caller passes the lanes of `mask` readable at `x` and writable at `o`;
    // masked loads and stores touch no other lane.
    unsafe {
        let vx = _mm512_maskz_loadu_ps(mask, x);
        let z = _mm512_mul_ps(_mm512_sub_ps(vx, _mm512_set1_ps(sub)), _mm512_set1_ps(scale));
        _mm512_mask_storeu_ps(o, mask, exp_nonpositive(z));
    }
}

#[target_feature(enable = "avx512f")]
unsafe fn sixteen(x: *const f32, o: *mut f32, mask: __mmask16) {
    // SAFETY: the caller passes the lanes of `mask` readable at `x` and writable at `o`;
    // masked loads and stores touch no other lane.
    unsafe {
        let vx = _mm512_maskz_loadu_ps(mask, x);
        let z = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(vx), _mm512_set1_epi32(i32::MIN))); // -|x|
        let e = exp_nonpositive(z);
        let f = _mm512_div_ps(e, _mm512_add_ps(_mm512_set1_ps(1.0), e));
        let positive = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(vx, _mm512_setzero_ps());
        let y = _mm512_mask_blend_ps(positive, f, _mm512_sub_ps(_mm512_set1_ps(1.0), f));
        _mm512_mask_storeu_ps(o, mask, y);
    }
}

/// `exp(z)` for `z <= 0` in each lane, the scalar twin's steps (0 below the cutoff).
#[target_feature(enable = "avx512f")]
#[inline]
fn exp_nonpositive(z: __m512) -> __m512 {
    let n = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm512_mul_ps(
        z,
        _mm512_set1_ps(LOG2E),
    ));
    // The scalar twin rounds after each multiply and add: keep the same steps (no FMA).
    let r = _mm512_sub_ps(
        _mm512_sub_ps(z, _mm512_mul_ps(n, _mm512_set1_ps(LN2_HI))),
        _mm512_mul_ps(n, _mm512_set1_ps(LN2_LO)),
    );
    let mut p = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(C6), r), _mm512_set1_ps(C5));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(C4));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(C3));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(C2));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0));
    let ni = _mm512_cvtps_epi32(_mm512_max_ps(n, _mm512_set1_ps(-126.0)));
    let scale = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(ni, _mm512_set1_epi32(127))));
    let under = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(z, _mm512_set1_ps(CUTOFF));
    _mm512_maskz_mov_ps(!under, _mm512_mul_ps(p, scale))
}
