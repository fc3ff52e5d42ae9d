pub const KERNELS: super::GemmKernels = super::GemmKernels { mr: 1, nr: 1 };
