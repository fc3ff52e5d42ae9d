//! float32 depthwise convolution microkernels (placeholder: filled in by the depthwise work).
pub mod scalar;
#[cfg(target_arch = "x86_64")]
pub mod avx2;

/// The depthwise kernels of one instruction set.
pub struct DwKernels {
    /// Channels per vector step (the packing's channel tile).
    pub channel_tile: usize,
}
