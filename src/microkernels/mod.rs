//! Microkernels: the innermost loops of the CPU kernels, one table per instruction set.
//!
//! Ops never name an instruction set. They ask [`table()`] for the kernels of the best
//! one this CPU has (chosen once, from the CPU's features) and call them through the
//! safe drivers of each family (`f32_gemm`, `f32_dwconv`). Every table has a portable
//! scalar twin ([`Isa::Scalar`]): it is what non-x86 targets build, the oracle every
//! SIMD kernel is tested against, and what runs when `TFLITE_RS_NO_SIMD=1` is set in the
//! environment (read once, at the first kernel call).
//!
//! Adding an instruction set (e.g. NEON on aarch64) means one more [`Isa`] variant, its
//! kernels in each family's module, and one arm in [`Table::for_isa`].
//!
//! Unsafe code in this module is limited to the SIMD kernels themselves; the drivers
//! that call them check every slice length first.

pub mod epilogue;
pub mod f32_dwconv;
pub mod f32_gemm;
pub mod f32_maxpool;
pub mod f32_quantize;
pub mod f32_resize;
pub mod f32_vbinary;
pub mod f32_vsigmoid;
pub mod f32_vunary;
pub mod packed;
pub mod qs8_dwconv;
pub mod qs8_float_requant;
pub mod qs8_gemm;
pub mod qs8_requant;
pub mod qs8_rsum;
pub mod qs8_vbinary;
pub mod shared_out;
#[cfg(test)]
pub(crate) mod test_rng;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// Asks for the cache line holding `p` in a state ready for writing, ahead of the stores
/// that will fill it. A line the other core wrote last (the arena reuses memory across
/// ops, each op split over the threads its own way) must first be taken from that core,
/// which between distant cores costs about half a microsecond; asked for a little ahead,
/// many such transfers overlap each other and the computation instead of holding up the
/// stores one line after another.
#[inline(always)]
pub(crate) fn prefetch_for_write(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch neither faults nor changes memory, whatever the address (CPUs
    // without `prefetchw` decode it as a no-op).
    unsafe {
        core::arch::asm!("prefetchw [{0}]", in(reg) p, options(nostack, preserves_flags, readonly));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

std::thread_local! {
    /// Whether this thread now runs its share of an op split over several threads.
    static IN_SPLIT_OP: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as running (`true`) or no longer running its share of an op split
/// over several threads; the thread pool sets it around each task. Only then may an
/// output line have been written last by another core, and only then do the drivers ask
/// for output lines ahead (on one thread that costs instructions and saves nothing).
pub(crate) fn set_in_split_op(split: bool) -> bool {
    IN_SPLIT_OP.with(|c| c.replace(split))
}

/// Whether the threads of split ops run on cores far apart (see [`set_cores_far_apart`]).
static CORES_FAR_APART: AtomicBool = AtomicBool::new(false);

/// Tells the drivers whether the thread pool's threads now run on cores far apart
/// (the pool times its hand-overs to find out). Only then is an output line the other
/// core wrote last expensive enough to ask for ahead: on nearby cores the prefetches
/// cost more than they save.
pub(crate) fn set_cores_far_apart(far: bool) {
    CORES_FAR_APART.store(far, Ordering::Relaxed);
}

/// Whether the thread pool's threads now run on cores far apart (see
/// [`set_cores_far_apart`]).
pub(crate) fn cores_far_apart() -> bool {
    CORES_FAR_APART.load(Ordering::Relaxed)
}

/// [`prefetch_for_write`] on every line of `rows` rows of `width` bytes, `stride` bytes
/// apart, from `p` (pointers only offset, never dereferenced here), when this thread runs
/// a share of a split op (see [`set_in_split_op`]) on cores far apart (see
/// [`set_cores_far_apart`]).
#[inline]
pub(crate) fn prefetch_rows_for_write(p: *const u8, rows: usize, width: usize, stride: usize) {
    if width == 0 || rows == 0 || !cores_far_apart() || !IN_SPLIT_OP.with(|c| c.get()) {
        return;
    }
    for r in 0..rows {
        let start = p.wrapping_add(r * stride) as usize;
        let mut line = start & !63;
        while line < start + width {
            prefetch_for_write(line as *const u8);
            line += 64;
        }
    }
}

/// An instruction set with its own kernel table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// Portable Rust, no SIMD intrinsics: the oracle.
    Scalar,
    /// x86-64 with AVX2 and FMA3 (256-bit vectors).
    Avx2Fma,
    /// x86-64 with AVX-512 F, BW, DQ and VL on top of AVX2+FMA (512-bit vectors, 32
    /// vector registers, mask registers for tails). Families without a kernel of their
    /// own for it use their AVX2 kernels in this table.
    Avx512,
    /// [`Isa::Avx512`] plus VNNI (`vpdpbusd`: four 8-bit products summed into each 32-bit
    /// lane): the 8-bit GEMM kernels. Its float kernels are those of [`Isa::Avx512`].
    Avx512Vnni,
}

impl Isa {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2Fma => "avx2+fma",
            Isa::Avx512 => "avx512",
            Isa::Avx512Vnni => "avx512vnni",
        }
    }

    /// True if this CPU can run the kernels of `self`.
    pub fn is_available(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                Isa::Avx2Fma.is_available()
                    && std::is_x86_feature_detected!("avx512f")
                    && std::is_x86_feature_detected!("avx512bw")
                    && std::is_x86_feature_detected!("avx512dq")
                    && std::is_x86_feature_detected!("avx512vl")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Vnni => Isa::Avx512.is_available() && std::is_x86_feature_detected!("avx512vnni"),
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx2Fma | Isa::Avx512 | Isa::Avx512Vnni => false,
        }
    }

    /// Every instruction set this build knows, most capable last.
    pub const ALL: [Isa; 4] = [Isa::Scalar, Isa::Avx2Fma, Isa::Avx512, Isa::Avx512Vnni];
}

/// The kernels of one instruction set.
pub struct Table {
    pub isa: Isa,
    /// The AVX-512 tables for cores that run a 512-bit operation as two 256-bit halves
    /// (AMD Zen 4), which want other GEMM tile shapes than full-width cores.
    pub split_512: bool,
    pub f32_gemm: f32_gemm::GemmKernels,
    pub f32_dwconv: f32_dwconv::DwKernels,
    pub f32_maxpool: f32_maxpool::MaxPoolKernels,
    pub f32_vsigmoid: f32_vsigmoid::SigmoidFn,
    /// A softmax row's exponentials (in `f32_vsigmoid`, which shares their steps).
    pub f32_vexp: f32_vsigmoid::ExpFn,
    pub f32_vbinary: f32_vbinary::BinaryKernels,
    pub f32_vunary: f32_vunary::UnaryKernels,
    pub f32_resize_bilinear: f32_resize::BilinearRowFn,
    pub f32_quantize: f32_quantize::QuantizeKernels,
    /// 8-bit GEMM kernels where this instruction set has ones worth using (the scalar
    /// twin, and VNNI); `None` leaves the ops on their widening 16-bit loops.
    pub qs8_gemm: Option<&'static qs8_gemm::Qs8GemmKernels>,
    /// int8 depthwise kernels; `None` where the ops keep their widened loops.
    pub qs8_dwconv: Option<qs8_dwconv::DwKernels>,
    pub qs8_vbinary: qs8_vbinary::QBinaryKernels,
    pub qs8_rsum: qs8_rsum::RowSumKernels,
}

impl Table {
    /// The table of `isa`, or `None` when this CPU (or this build's target) lacks it.
    pub fn for_isa(isa: Isa) -> Option<&'static Table> {
        static SPLIT: OnceLock<bool> = OnceLock::new();
        Self::for_isa_variant(isa, *SPLIT.get_or_init(cpu_splits_512_bit_ops))
    }

    /// The table of `isa` with the split-512 variant chosen by `split_512` (the one
    /// [`for_isa`](Self::for_isa) gives is this CPU's), or `None` when this CPU (or this
    /// build's target) lacks `isa`. Both variants run on any CPU that has the instruction
    /// set: they differ in speed only.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
    pub fn for_isa_variant(isa: Isa, split_512: bool) -> Option<&'static Table> {
        static SCALAR: Table = Table {
            isa: Isa::Scalar,
            split_512: false,
            f32_gemm: f32_gemm::scalar::KERNELS,
            f32_dwconv: f32_dwconv::scalar::KERNELS,
            f32_maxpool: f32_maxpool::scalar::KERNELS,
            f32_vsigmoid: f32_vsigmoid::scalar::sigmoid,
            f32_vexp: f32_vsigmoid::scalar::exp_shifted,
            f32_vbinary: f32_vbinary::scalar::KERNELS,
            f32_vunary: f32_vunary::scalar::KERNELS,
            f32_resize_bilinear: f32_resize::scalar::bilinear_row,
            f32_quantize: f32_quantize::scalar::KERNELS,
            qs8_gemm: Some(&qs8_gemm::scalar::KERNELS),
            qs8_dwconv: Some(qs8_dwconv::scalar::KERNELS),
            qs8_vbinary: qs8_vbinary::scalar::KERNELS,
            qs8_rsum: qs8_rsum::scalar::KERNELS,
        };
        #[cfg(target_arch = "x86_64")]
        static AVX2: Table = Table {
            isa: Isa::Avx2Fma,
            split_512: false,
            f32_gemm: f32_gemm::avx2::KERNELS,
            f32_dwconv: f32_dwconv::avx2::KERNELS,
            f32_maxpool: f32_maxpool::scalar::KERNELS,
            f32_vsigmoid: f32_vsigmoid::avx2::sigmoid,
            f32_vexp: f32_vsigmoid::avx2::exp_shifted,
            f32_vbinary: f32_vbinary::avx2::KERNELS,
            f32_vunary: f32_vunary::avx2::KERNELS,
            f32_resize_bilinear: f32_resize::avx2::bilinear_row,
            f32_quantize: f32_quantize::scalar::KERNELS,
            qs8_gemm: None,
            qs8_dwconv: None,
            qs8_vbinary: qs8_vbinary::avx2::KERNELS,
            qs8_rsum: qs8_rsum::scalar::KERNELS,
        };
        #[cfg(target_arch = "x86_64")]
        const AVX512_TABLE: Table = Table {
            isa: Isa::Avx512,
            split_512: false,
            f32_gemm: f32_gemm::avx512::KERNELS,
            f32_dwconv: f32_dwconv::avx512::KERNELS,
            f32_maxpool: f32_maxpool::avx512::KERNELS,
            f32_vsigmoid: f32_vsigmoid::avx512::sigmoid,
            f32_vexp: f32_vsigmoid::avx512::exp_shifted,
            f32_vbinary: f32_vbinary::avx512::KERNELS,
            f32_vunary: f32_vunary::avx512::KERNELS,
            f32_resize_bilinear: f32_resize::avx2::bilinear_row,
            f32_quantize: f32_quantize::avx512::KERNELS,
            qs8_gemm: None,
            qs8_dwconv: Some(qs8_dwconv::avx512::KERNELS),
            qs8_vbinary: qs8_vbinary::avx512::KERNELS,
            qs8_rsum: qs8_rsum::avx512::KERNELS,
        };
        #[cfg(target_arch = "x86_64")]
        const AVX512_VNNI_TABLE: Table = Table {
            isa: Isa::Avx512Vnni,
            qs8_gemm: Some(&qs8_gemm::avx512vnni::KERNELS),
            qs8_dwconv: Some(qs8_dwconv::avx512vnni::KERNELS),
            ..AVX512_TABLE
        };
        #[cfg(target_arch = "x86_64")]
        static AVX512: [Table; 2] =
            [AVX512_TABLE, Table { split_512: true, f32_gemm: f32_gemm::avx512::KERNELS_SPLIT_512, ..AVX512_TABLE }];
        #[cfg(target_arch = "x86_64")]
        static AVX512_VNNI: [Table; 2] = [
            AVX512_VNNI_TABLE,
            Table { split_512: true, f32_gemm: f32_gemm::avx512::KERNELS_SPLIT_512, ..AVX512_VNNI_TABLE },
        ];
        if !isa.is_available() {
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        let split = usize::from(split_512);
        match isa {
            Isa::Scalar => Some(&SCALAR),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2Fma => Some(&AVX2),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => Some(&AVX512[split]),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512Vnni => Some(&AVX512_VNNI[split]),
            #[cfg(not(target_arch = "x86_64"))]
            _ => None,
        }
    }

    /// The table's name in messages: its instruction set, and the split-512 variant.
    pub fn name(&self) -> &'static str {
        match (self.isa, self.split_512) {
            (Isa::Avx512, true) => "avx512 (split 512-bit)",
            (Isa::Avx512Vnni, true) => "avx512vnni (split 512-bit)",
            (isa, _) => isa.name(),
        }
    }
}

/// Whether this CPU runs a 512-bit operation as two 256-bit halves, which makes other
/// GEMM tile shapes pay: AMD's family 0x19 (Zen 4; its Zen 3 parts have no AVX-512).
/// `TFLITE_RS_SPLIT_512=1` or `=0` overrides the guess (to compare the two on one
/// machine).
fn cpu_splits_512_bit_ops() -> bool {
    match std::env::var("TFLITE_RS_SPLIT_512").as_deref() {
        Ok("1") => return true,
        Ok("0") => return false,
        _ => {}
    }
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86-64 CPU, and leaves 0 and 1 always.
        #[allow(unused_unsafe)]
        let (vendor, signature) = unsafe { (__cpuid(0), __cpuid(1).eax) };
        let amd = (vendor.ebx, vendor.edx, vendor.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163);
        let base_family = (signature >> 8) & 0xf;
        let family = if base_family == 0xf { base_family + ((signature >> 20) & 0xff) } else { base_family };
        amd && family == 0x19
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// True when `TFLITE_RS_NO_SIMD` is set to anything but empty or `0`.
fn simd_disabled_by_env() -> bool {
    std::env::var_os("TFLITE_RS_NO_SIMD").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The most capable instruction set `TFLITE_RS_MAX_ISA` allows (`scalar`, `avx2`,
/// `avx512` or `avx512vnni`; unset or unknown allows all): a way to compare tables on one
/// machine.
fn max_isa_by_env() -> Isa {
    match std::env::var("TFLITE_RS_MAX_ISA").as_deref() {
        Ok("scalar") => Isa::Scalar,
        Ok("avx2") => Isa::Avx2Fma,
        Ok("avx512") => Isa::Avx512,
        _ => Isa::Avx512Vnni,
    }
}

/// The table every kernel uses: the most capable instruction set this CPU has (capped
/// by `TFLITE_RS_MAX_ISA`), or the scalar one when `TFLITE_RS_NO_SIMD` is set. Chosen
/// once per process.
pub fn table() -> &'static Table {
    static CHOSEN: OnceLock<&'static Table> = OnceLock::new();
    CHOSEN.get_or_init(|| {
        if simd_disabled_by_env() {
            return Table::for_isa(Isa::Scalar).expect("the scalar table always exists");
        }
        let cap = Isa::ALL.iter().position(|&i| i == max_isa_by_env()).unwrap_or(Isa::ALL.len() - 1);
        Isa::ALL[..=cap].iter().rev().find_map(|&isa| Table::for_isa(isa)).expect("the scalar table always exists")
    })
}

/// The tables this CPU can run (scalar first), both split-512 variants of the AVX-512
/// ones: what the twin tests iterate over.
pub fn available_tables() -> Vec<&'static Table> {
    let mut tables: Vec<&'static Table> = Vec::new();
    for &isa in &Isa::ALL {
        for split in [false, true] {
            if let Some(t) = Table::for_isa_variant(isa, split)
                && !tables.iter().any(|&seen| core::ptr::eq(seen, t))
            {
                tables.push(t);
            }
        }
    }
    tables
}
