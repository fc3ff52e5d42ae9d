//! float32 GEMM microkernels (placeholder).
pub mod scalar;
#[cfg(target_arch = "x86_64")]
pub mod avx2;

/// The GEMM kernels of one instruction set.
pub struct GemmKernels {
    pub mr: usize,
    pub nr: usize,
}
