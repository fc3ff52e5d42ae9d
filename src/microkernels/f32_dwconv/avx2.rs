pub const KERNELS: super::DwKernels = super::DwKernels { channel_tile: 8 };
