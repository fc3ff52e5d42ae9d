//! The OpenCL environment: platform, device, context, one in-order profiling queue and
//! the compiled kernel program, plus the device facts the tuner needs.
//!
//! `opencl3` is built with its `dynamic` feature: libOpenCL is dlopened on first use,
//! so on a machine without OpenCL every call fails with a clean error instead of the
//! library failing to load.

use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::context::Context;
use opencl3::device::{CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_GPU, Device};
use opencl3::program::Program;

use crate::error::{Error, Result};
use crate::gpu::tuner::{DeviceInfo, GpuVendor};

/// Every kernel of the delegate, as one program (`kernels/*.cl`).
pub const PROGRAM_SOURCE: &str = concat!(
    include_str!("../../../kernels/common.cl"),
    include_str!("../../../kernels/elementwise.cl"),
    include_str!("../../../kernels/conv2d.cl"),
    include_str!("../../../kernels/depthwise_conv2d.cl"),
    include_str!("../../../kernels/fully_connected.cl"),
    include_str!("../../../kernels/transpose_conv.cl"),
    include_str!("../../../kernels/pooling.cl"),
    include_str!("../../../kernels/reduce.cl"),
    include_str!("../../../kernels/softmax.cl"),
    include_str!("../../../kernels/pad.cl"),
    include_str!("../../../kernels/resize.cl"),
);

/// fp32 everywhere: strict IEEE division and square roots, no denormal flushing.
pub const BUILD_OPTIONS: &str = "-cl-std=CL1.2";

pub struct ClEnv {
    pub device: Device,
    pub context: Context,
    pub queue: CommandQueue,
    pub program: Program,
    pub info: DeviceInfo,
    /// "vendor / name / version" (the tuning cache's device key).
    pub device_id: String,
    pub driver: String,
    pub has_fp16: bool,
    /// Wall time of clBuildProgram for the delegate's kernels.
    pub build_ns: u64,
    /// CL_DEVICE_MAX_MEM_ALLOC_SIZE (for error messages).
    pub max_alloc: u64,
}

/// An OpenCL call's error as the crate's, prefixed with what was being done.
pub(super) fn cl<T>(what: &str, r: std::result::Result<T, opencl3::error_codes::ClError>) -> Result<T> {
    r.map_err(|e| Error::new(format!("{what}: {e}")))
}

impl ClEnv {
    /// Opens the first GPU of any platform, else the first device of any type (PoCL's CPU
    /// device in CI), and compiles the kernels.
    pub fn open() -> Result<ClEnv> {
        // ICD loaders and drivers are not all safe against concurrent first use (PoCL
        // reported "no device" to one of two threads opening at once): open one at a time.
        static OPENING: parking_lot::Mutex<()> = parking_lot::Mutex::new(());
        let _guard = OPENING.lock();
        let platforms = opencl3::platform::get_platforms()
            .map_err(|e| Error::new(format!("no OpenCL platform is available ({e}); is an OpenCL ICD installed?")))?;
        if platforms.is_empty() {
            crate::bail!("no OpenCL platform is available");
        }
        let mut chosen = None;
        for ty in [CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ALL] {
            for p in &platforms {
                if let Ok(ids) = p.get_devices(ty)
                    && let Some(&id) = ids.first()
                {
                    chosen = Some(id);
                    break;
                }
            }
            if chosen.is_some() {
                break;
            }
        }
        let id = chosen.ok_or_else(|| Error::new("the OpenCL platforms have no device"))?;
        let device = Device::new(id);
        let context = cl("clCreateContext", Context::from_device(&device))?;
        let queue = cl(
            "clCreateCommandQueue",
            CommandQueue::create_default_with_properties(&context, CL_QUEUE_PROFILING_ENABLE, 0),
        )?;
        let t0 = std::time::Instant::now();
        let program = Program::create_and_build_from_source(&context, PROGRAM_SOURCE, BUILD_OPTIONS)
            .map_err(|log| Error::new(format!("building the OpenCL kernels failed: {log}")))?;
        let build_ns = t0.elapsed().as_nanos() as u64;
        let sizes = cl("CL_DEVICE_MAX_WORK_ITEM_SIZES", device.max_work_item_sizes())?;
        let total = cl("CL_DEVICE_MAX_WORK_GROUP_SIZE", device.max_work_group_size())?;
        let dim = |i: usize| sizes.get(i).copied().unwrap_or(1).max(1);
        let name = device.name().unwrap_or_default();
        let vendor = device.vendor().unwrap_or_default();
        let info = DeviceInfo::new([dim(0), dim(1), dim(2)])
            .with_total(total.max(1))
            .with_vendor(GpuVendor::detect(&vendor, &name));
        let version = device.version().unwrap_or_default();
        let driver = device.driver_version().unwrap_or_default();
        let max_alloc = device.max_mem_alloc_size().unwrap_or(0);
        let has_fp16 = device.extensions().map(|e| e.contains("cl_khr_fp16")).unwrap_or(false);
        Ok(ClEnv {
            device_id: format!("{vendor} / {name} / {version}"),
            device,
            context,
            queue,
            program,
            info,
            driver,
            has_fp16,
            build_ns,
            max_alloc,
        })
    }
}
