pub const KERNELS: super::GemmKernels = super::GemmKernels { mr: 6, nr: 16 };
