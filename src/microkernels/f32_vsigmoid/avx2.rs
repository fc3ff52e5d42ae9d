//! AVX2 + FMA sigmoid, eight values per step (the last partial step through a buffer).

use super::consts::*;
use core::arch::x86_64::*;

/// AVX2 sigmoid over a slice (`input.len() == out.len()`, checked by the caller). Only
/// reachable through the AVX2 table, which exists only on CPUs with AVX2 and FMA.
pub fn sigmoid(input: &[f32], out: &mut [f32]) {
    let mut xs = input.chunks_exact(8);
    let mut os = out.chunks_exact_mut(8);
    for (x, o) in (&mut xs).zip(&mut os) {
        // SAFETY: the AVX2 table is only handed out when the CPU has AVX2 and FMA; `x` and
        // `o` are eight floats each.
        unsafe { eight(x.as_ptr(), o.as_mut_ptr()) };
    }
    let (xr, or) = (xs.remainder(), os.into_remainder());
    if !xr.is_empty() {
        let mut tx = [0f32; 8];
        let mut to = [0f32; 8];
        tx[..xr.len()].copy_from_slice(xr);
        // SAFETY: as above, on two local buffers of eight floats.
        unsafe { eight(tx.as_ptr(), to.as_mut_ptr()) };
        or.copy_from_slice(&to[..or.len()]);
    }
}

/// AVX2 `out[i] = exp((input[i] - sub) * scale)` for arguments `<= 0` (see
/// [`super::exp_shifted`]; equal lengths, checked by the caller). Only reachable through
/// the AVX2 table.
pub fn exp_shifted(input: &[f32], sub: f32, scale: f32, out: &mut [f32]) {
    let mut xs = input.chunks_exact(8);
    let mut os = out.chunks_exact_mut(8);
    for (x, o) in (&mut xs).zip(&mut os) {
        // SAFETY: the AVX2 table is only handed out when the CPU has AVX2 and FMA; `x` and
        // `o` are eight floats each.
        unsafe { exp_eight(x.as_ptr(), o.as_mut_ptr(), sub, scale) };
    }
    let (xr, or) = (xs.remainder(), os.into_remainder());
    if !xr.is_empty() {
        let mut tx = [sub; 8];
        let mut to = [0f32; 8];
        tx[..xr.len()].copy_from_slice(xr);
        // SAFETY: as above, on two local buffers of eight floats.
        unsafe { exp_eight(tx.as_ptr(), to.as_mut_ptr(), sub, scale) };
        or.copy_from_slice(&to[..or.len()]);
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn exp_eight(x: *const f32, o: *mut f32, sub: f32, scale: f32) {
    // SAFETY: the caller passes eight readable floats at `x` and eight writable at `o`.
    unsafe {
        let vx = _mm256_loadu_ps(x);
        let z = _mm256_mul_ps(_mm256_sub_ps(vx, _mm256_set1_ps(sub)), _mm256_set1_ps(scale));
        _mm256_storeu_ps(o, exp_nonpositive(z));
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn eight(x: *const f32, o: *mut f32) {
    // SAFETY: the caller passes eight readable floats at `x` and eight writable at `o`.
    unsafe {
        let vx = _mm256_loadu_ps(x);
        let sign = _mm256_set1_ps(-0.0);
        let z = _mm256_or_ps(vx, sign); // -|x|
        let e = exp_nonpositive(z);
        let f = _mm256_div_ps(e, _mm256_add_ps(_mm256_set1_ps(1.0), e));
        let positive = _mm256_cmp_ps::<_CMP_GT_OQ>(vx, _mm256_setzero_ps());
        let y = _mm256_blendv_ps(f, _mm256_sub_ps(_mm256_set1_ps(1.0), f), positive);
        _mm256_storeu_ps(o, y);
    }
}

/// `exp(z)` for `z <= 0` in each lane, the scalar twin's steps (0 below the cutoff).
#[target_feature(enable = "avx2,fma")]
#[inline]
fn exp_nonpositive(z: __m256) -> __m256 {
    let n =
        _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(_mm256_mul_ps(z, _mm256_set1_ps(LOG2E)));
    // The scalar twin rounds after each multiply and add: keep the same steps (no FMA).
    let r = _mm256_sub_ps(
        _mm256_sub_ps(z, _mm256_mul_ps(n, _mm256_set1_ps(LN2_HI))),
        _mm256_mul_ps(n, _mm256_set1_ps(LN2_LO)),
    );
    let mut p = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(C6), r), _mm256_set1_ps(C5));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(C4));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(C3));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(C2));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.0));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.0));
    let ni = _mm256_cvtps_epi32(_mm256_max_ps(n, _mm256_set1_ps(-126.0)));
    let scale = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(ni, _mm256_set1_epi32(127))));
    let under = _mm256_cmp_ps::<_CMP_LT_OQ>(z, _mm256_set1_ps(CUTOFF));
    _mm256_andnot_ps(under, _mm256_mul_ps(p, scale))
}
