//! Sums of 8-bit rows into 32-bit accumulators: `sums[j] += row[j]` for every row of a
//! block of rows, wrapping as TFLite's `int32` accumulation does (a quantized MEAN or SUM
//! over the spatial dimensions of an NHWC tensor: every pixel is a row of channels).

#[cfg(target_arch = "x86_64")]
pub mod avx512;
pub mod scalar;
#[cfg(test)]
mod tests;

/// The kernels of one instruction set. Each adds the whole rows of `rows` (rows of
/// `sums.len()` values back to back; a partial last row is left out) into `sums`.
pub struct RowSumKernels {
    pub i8: fn(rows: &[i8], sums: &mut [i32]),
    pub u8: fn(rows: &[u8], sums: &mut [i32]),
}
