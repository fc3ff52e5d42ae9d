//! Float to int8 quantization of a hybrid layer's input: the range scan and
//! `clamp(round(offset + v * inv))` per value, rounding half away from zero in `f32` as
//! TFLite's `PortableSymmetricQuantizeFloats` / `PortableAsymmetricQuantizeFloats` do.

#[cfg(target_arch = "x86_64")]
pub mod avx512;
pub mod scalar;
#[cfg(test)]
mod tests;

/// `quantize(values, inv, offset, (lo, hi), out)`: see [`QuantizeKernels::quantize`].
pub type QuantizeFn = fn(&[f32], f32, f32, (i32, i32), &mut [i8]);

/// The kernels of one instruction set.
pub struct QuantizeKernels {
    /// `(min, max)` of a non-empty slice, or `None` if it holds a NaN (whose ordering
    /// rules the caller applies itself).
    pub min_max: fn(&[f32]) -> Option<(f32, f32)>,
    /// `out[i] = clamp(round(offset + values[i] * inv), lo, hi)` (half away from zero; a
    /// NaN becomes 0), for `out.len() == values.len()`.
    pub quantize: QuantizeFn,
}
