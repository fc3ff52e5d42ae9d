//! A compiled partition: the device buffer, one kernel object per launch with its
//! arguments bound once, the tuned work groups, and Invoke's copy-in / run / copy-out.

use std::collections::HashMap;
use std::ptr;

use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, ClMem};
use opencl3::types::{CL_BLOCKING, cl_mem};

use super::env::{BUILD_OPTIONS, ClEnv, PROGRAM_SOURCE, cl};
use crate::error::{Error, Result};
use crate::gpu::graph::plan::MemoryPlan;
use crate::gpu::graph::{GTensor, Op, OpKind, TensorId, pad_channels};
use crate::gpu::tuner::{
    ChoiceSource, Clock, KernelInfo, KernelToTune, OpClass, Profiler, SystemClock, TuneProgress, Tuner, WorkGroup,
    kernel_hash, report_progress,
};

/// One kernel launch, ready to enqueue.
struct Launch {
    kernel: Kernel,
    grid: WorkGroup,
    local: WorkGroup,
    name: &'static str,
}

/// Where a partition output comes from.
enum OutputSource {
    /// Float offset in the device buffer.
    Device(usize),
    /// Known contents (a DEQUANTIZE of a constant that leaves the partition).
    Known(Vec<f32>),
}

pub struct Partition {
    arena: Buffer<u8>,
    /// Weights and epilogue programs, alive as long as the kernels that use them.
    _weights: Vec<Buffer<f32>>,
    _epilogues: Vec<Buffer<i32>>,
    launches: Vec<Launch>,
    /// (tensor, float offset, elements) uploaded before every run.
    inputs: Vec<(TensorId, usize, usize)>,
    outputs: Vec<(TensorId, OutputSource, usize)>,
    pub arena_bytes: usize,
}

fn int(v: usize) -> Result<i32> {
    i32::try_from(v).map_err(|_| Error::new(format!("{v} does not fit a 32-bit kernel argument")))
}

fn round_up(grid: WorkGroup, local: WorkGroup) -> WorkGroup {
    [0, 1, 2].map(|i| grid[i].div_ceil(local[i].max(1)) * local[i].max(1))
}

/// A read-only device copy of `v` (one element if `v` is empty: no zero-size buffers).
fn read_only_buffer<T: Copy + Default>(env: &ClEnv, v: &[T]) -> Result<Buffer<T>> {
    let mut data = v.to_vec();
    if data.is_empty() {
        data.push(T::default());
    }
    let what = format!(
        "clCreateBuffer({} bytes of constants; device max allocation {} bytes)",
        std::mem::size_of_val(data.as_slice()),
        env.max_alloc
    );
    // SAFETY: COPY_HOST_PTR reads `data.len()` elements of T from a live Vec during the
    // call only.
    cl(&what, unsafe {
        Buffer::<T>::create(&env.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, data.len(), data.as_mut_ptr().cast())
    })
}

/// Arguments of one kernel, in order after the 14 common ones.
enum Arg {
    Mem(cl_mem),
    I(i32),
    F(f32),
}

fn set_args(kernel: &Kernel, args: &[Arg]) -> Result<()> {
    for (i, a) in args.iter().enumerate() {
        let i = i as u32;
        // SAFETY: each value has exactly the size and type the kernel parameter declares
        // (cl_mem for `__global T*`, cl_int for `int`, cl_float for `float`): the kernels
        // in kernels/*.cl and the lists built in `op_args` are kept in the same order.
        let r = unsafe {
            match a {
                Arg::Mem(m) => kernel.set_arg(i, m),
                Arg::I(v) => kernel.set_arg(i, v),
                Arg::F(v) => kernel.set_arg(i, v),
            }
        };
        cl("clSetKernelArg", r)?;
    }
    Ok(())
}

/// Times one launch per call on the profiling queue (the tuner's measurement).
struct ClProfiler<'a> {
    env: &'a ClEnv,
    kernel: &'a Kernel,
    grid: WorkGroup,
}

impl Profiler for ClProfiler<'_> {
    fn time(&mut self, wg: WorkGroup) -> Result<f64> {
        if wg.contains(&0) {
            crate::bail!("zero work-group size");
        }
        let global = round_up(self.grid, wg);
        // SAFETY: the kernel's arguments are all bound (`Partition::build` sets them before
        // tuning); global and local point to 3 sizes each for a 3-D launch.
        let ev = unsafe {
            self.env.queue.enqueue_nd_range_kernel(self.kernel.get(), 3, ptr::null(), global.as_ptr(), wg.as_ptr(), &[])
        }
        .map_err(|e| Error::new(format!("clEnqueueNDRangeKernel: {e}")))?;
        ev.wait().map_err(|e| Error::new(format!("clWaitForEvents: {e}")))?;
        let start = ev.profiling_command_start().map_err(|e| Error::new(e.to_string()))?;
        let end = ev.profiling_command_end().map_err(|e| Error::new(e.to_string()))?;
        Ok(end.saturating_sub(start) as f64)
    }
}

impl Partition {
    /// Uploads constants, binds every launch and tunes its work group.
    pub fn build(
        env: &ClEnv,
        tuner: &mut Tuner,
        ops: &[Op],
        gtensors: &HashMap<TensorId, GTensor>,
        plan: &MemoryPlan,
        inputs: &[TensorId],
        outputs: &[TensorId],
    ) -> Result<Partition> {
        let total = plan.total.max(16);
        let what =
            format!("clCreateBuffer({} bytes of tensors; device max allocation {} bytes)", total * 4, env.max_alloc);
        // SAFETY: no host pointer is passed; the size is non-zero.
        let mut arena =
            cl(&what, unsafe { Buffer::<u8>::create(&env.context, CL_MEM_READ_WRITE, total * 4, ptr::null_mut()) })?;
        for &c in &plan.constants {
            let data = gtensors[&c].constant.as_ref().ok_or_else(|| Error::new("constant without contents"))?;
            let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
            // SAFETY: a blocking write of a live slice inside the buffer (the plan put the
            // constant at offsets[c] with room for all its elements).
            cl("clEnqueueWriteBuffer", unsafe {
                env.queue.enqueue_write_buffer(&mut arena, CL_BLOCKING, plan.offsets[&c] * 4, &bytes, &[])
            })?;
        }
        let mut weights = Vec::new();
        let mut epilogues = Vec::new();
        let mut launches = Vec::new();
        let clock = SystemClock::new();
        let (started, total) = (clock.now_ns(), ops.len());
        tuner.begin_model(&clock);
        for op in ops {
            let kernel = cl("clCreateKernel", Kernel::create(&env.program, op.kind.kernel_name()))?;
            let mut upload = |v: &[f32]| -> Result<cl_mem> {
                let b = read_only_buffer(env, v)?;
                let m = b.get();
                weights.push(b);
                Ok(m)
            };
            let off = |t: TensorId| -> Result<i32> {
                int(*plan.offsets.get(&t).ok_or_else(|| Error::new(format!("tensor {t} has no device memory")))?)
            };
            // The epilogue program.
            let mut ep = vec![int(op.steps.len())?];
            for s in &op.steps {
                let (o, st) = match s.operand {
                    Some((t, st)) => (off(t)?, st),
                    None => (0, [0; 4]),
                };
                ep.extend([s.code, o, int(st[0])?, int(st[1])?, int(st[2])?, int(st[3])?, 0, 0]);
            }
            let ep_buf = read_only_buffer(env, &ep)?;
            let (o, r, g) = (op.out_shape, op.region, op.origin);
            let mut args = vec![
                Arg::Mem(arena.get()),
                Arg::Mem(ep_buf.get()),
                Arg::I(off(op.out)?),
                Arg::I(int(o[1])?),
                Arg::I(int(o[2])?),
                Arg::I(int(o[3])?),
                Arg::I(int(r[0])?),
                Arg::I(int(r[1])?),
                Arg::I(int(r[2])?),
                Arg::I(int(r[3])?),
                Arg::I(int(g[0])?),
                Arg::I(int(g[1])?),
                Arg::I(int(g[2])?),
                Arg::I(int(g[3])?),
            ];
            epilogues.push(ep_buf);
            let ints = |v: &[usize]| -> Result<Vec<Arg>> { v.iter().map(|&x| int(x).map(Arg::I)).collect() };
            let src = Arg::I(off(op.kind.src())?);
            // The blocked kernels' weights and bias: output channels (innermost) padded.
            let oc = r[3];
            let mut upload_padded = |v: &[f32]| upload(&pad_channels(v, oc));
            match &op.kind {
                OpKind::CopyBroadcast { strides, .. } => {
                    args.push(src);
                    args.extend(ints(strides)?);
                }
                OpKind::CopyLinear { .. } => args.push(src),
                OpKind::Conv2d { input, window: w, weights: wt, bias, .. } => {
                    args.extend([Arg::Mem(upload_padded(wt)?), Arg::Mem(upload_padded(bias)?), src]);
                    args.extend(ints(&[
                        input[1], input[2], input[3], w.kh, w.kw, w.sh, w.sw, w.dh, w.dw, w.pad_t, w.pad_l,
                    ])?);
                }
                OpKind::Conv1x1 { in_c, weights: wt, bias, .. } => {
                    args.extend([
                        Arg::Mem(upload_padded(wt)?),
                        Arg::Mem(upload_padded(bias)?),
                        src,
                        Arg::I(int(*in_c)?),
                    ]);
                }
                OpKind::Depthwise { input, window: w, multiplier, weights: wt, bias, .. } => {
                    args.extend([Arg::Mem(upload_padded(wt)?), Arg::Mem(upload_padded(bias)?), src]);
                    args.extend(ints(&[
                        input[1],
                        input[2],
                        input[3],
                        w.kh,
                        w.kw,
                        w.sh,
                        w.sw,
                        w.dh,
                        w.dw,
                        w.pad_t,
                        w.pad_l,
                        *multiplier,
                    ])?);
                }
                OpKind::FullyConnected { in_features, weights: wt, bias, .. } => {
                    args.extend([
                        Arg::Mem(upload_padded(wt)?),
                        Arg::Mem(upload_padded(bias)?),
                        src,
                        Arg::I(int(*in_features)?),
                    ]);
                }
                OpKind::TransposeConv { input, window: w, weights: wt, bias, .. } => {
                    args.extend([Arg::Mem(upload_padded(wt)?), Arg::Mem(upload_padded(bias)?), src]);
                    args.extend(ints(&[input[1], input[2], input[3], w.kh, w.kw, w.sh, w.sw, w.pad_t, w.pad_l])?);
                }
                OpKind::Pool { input, window: w, is_max, .. } => {
                    args.push(src);
                    args.extend(ints(&[
                        input[1],
                        input[2],
                        w.kh,
                        w.kw,
                        w.sh,
                        w.sw,
                        w.pad_t,
                        w.pad_l,
                        *is_max as usize,
                    ])?);
                }
                OpKind::Mean { input, mask, .. } => {
                    args.push(src);
                    args.extend(ints(&[input[0], input[1], input[2], input[3], *mask as usize])?);
                }
                OpKind::Softmax { channels, beta, .. } => {
                    args.extend([src, Arg::I(int(*channels)?), Arg::F(*beta)]);
                }
                OpKind::Pad { input, before, value, .. } => {
                    args.push(src);
                    args.extend(ints(&[
                        input[0], input[1], input[2], input[3], before[0], before[1], before[2], before[3],
                    ])?);
                    args.push(Arg::F(*value));
                }
                OpKind::ResizeBilinear { input, scale_y, scale_x, half_pixel, .. } => {
                    args.extend([
                        src,
                        Arg::I(int(input[1])?),
                        Arg::I(int(input[2])?),
                        Arg::F(*scale_y),
                        Arg::F(*scale_x),
                    ]);
                    args.push(Arg::I(*half_pixel as i32));
                }
            }
            set_args(&kernel, &args)?;
            let grid = op.grid();
            let max_wg = cl("CL_KERNEL_WORK_GROUP_SIZE", kernel.get_work_group_size(env.device.id()))?;
            let private = kernel.get_private_mem_size(env.device.id()).unwrap_or(0);
            let name = op.kind.kernel_name();
            // The tuning cache key: kernel source, this launch's argument shapes and grid.
            let hash = kernel_hash(
                &format!("{name} {:?} {:?} {:?}\n{PROGRAM_SOURCE}", op.kind_signature(), op.region, op.steps.len()),
                BUILD_OPTIONS,
            );
            let k = KernelToTune {
                kernel_hash: &hash,
                grid,
                kernel: KernelInfo { private_memory_size: private as usize, max_work_group_size: max_wg.max(1) },
                op: if op.kind.is_conv_class() { OpClass::Conv } else { OpClass::Generic },
                fixed: None,
            };
            let mut profiler = ClProfiler { env, kernel: &kernel, grid };
            let choice =
                tuner.tune(&k, &mut profiler, &clock).map_err(|e| Error::new(format!("tuning {name}: {e}")))?;
            debug_assert!(choice.source != ChoiceSource::Fixed);
            launches.push(Launch { kernel, grid, local: choice.work_group, name });
            report_progress(&TuneProgress {
                done: launches.len(),
                total,
                elapsed_ns: clock.now_ns().saturating_sub(started),
                budget_left_ns: tuner.budget_left_ns(&clock),
            });
        }
        let mut in_list = Vec::new();
        for &t in inputs {
            if let (Some(&o), Some(g)) = (plan.offsets.get(&t), gtensors.get(&t))
                && g.constant.is_none()
            {
                in_list.push((t, o, crate::gpu::graph::elements(g.shape)));
            }
        }
        let mut out_list = Vec::new();
        for &t in outputs {
            let g = gtensors
                .get(&t)
                .ok_or_else(|| Error::new(format!("output tensor {t} is not computed by the partition")))?;
            let n = crate::gpu::graph::elements(g.shape);
            let src = match (&g.constant, plan.offsets.get(&t)) {
                (Some(v), _) => OutputSource::Known(v.clone()),
                (None, Some(&o)) => OutputSource::Device(o),
                (None, None) => crate::bail!("output tensor {t} is not computed by the partition"),
            };
            out_list.push((t, src, n));
        }
        Ok(Partition {
            arena,
            _weights: weights,
            _epilogues: epilogues,
            launches,
            inputs: in_list,
            outputs: out_list,
            arena_bytes: total * 4,
        })
    }

    /// Input tensors (and element counts) to upload before every run, in order.
    pub fn inputs(&self) -> impl Iterator<Item = (TensorId, usize)> + '_ {
        self.inputs.iter().map(|&(t, _, n)| (t, n))
    }

    /// Output tensors (and element counts) read back after every run, in order.
    pub fn outputs(&self) -> impl Iterator<Item = (TensorId, usize)> + '_ {
        self.outputs.iter().map(|&(t, _, n)| (t, n))
    }

    pub fn launch_count(&self) -> usize {
        self.launches.len()
    }

    /// Copies the inputs in, runs every launch, copies the outputs out. `inputs[i]` and
    /// `outputs[i]` are the bytes of [`Self::inputs`]/[`Self::outputs`]' i-th tensor.
    pub fn run(&mut self, env: &ClEnv, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<()> {
        if inputs.len() != self.inputs.len() || outputs.len() != self.outputs.len() {
            crate::bail!("wrong number of partition inputs or outputs");
        }
        for (&(t, off, n), data) in self.inputs.iter().zip(inputs) {
            if data.len() != n * 4 {
                crate::bail!("input tensor {t} has {} bytes, the partition expects {}", data.len(), n * 4);
            }
            // SAFETY: blocking write from a live slice to [off, off + n) floats, inside the
            // buffer by the memory plan.
            cl("clEnqueueWriteBuffer", unsafe {
                env.queue.enqueue_write_buffer(&mut self.arena, CL_BLOCKING, off * 4, data, &[])
            })?;
        }
        for l in &self.launches {
            let global = round_up(l.grid, l.local);
            // SAFETY: arguments were bound at build time and the buffers they name are
            // owned by `self`; global/local are 3 sizes each.
            let r = unsafe {
                env.queue.enqueue_nd_range_kernel(
                    l.kernel.get(),
                    3,
                    ptr::null(),
                    global.as_ptr(),
                    l.local.as_ptr(),
                    &[],
                )
            };
            r.map_err(|e| Error::new(format!("launching {}: {e}", l.name)))?;
        }
        for ((t, src, n), data) in self.outputs.iter().zip(outputs.iter_mut()) {
            if data.len() != n * 4 {
                crate::bail!("output tensor {t} has {} bytes, the partition writes {}", data.len(), n * 4);
            }
            match src {
                OutputSource::Device(off) => {
                    // SAFETY: blocking read into a live, exclusively borrowed slice of the
                    // same length, from inside the buffer.
                    cl("clEnqueueReadBuffer", unsafe {
                        env.queue.enqueue_read_buffer(&self.arena, CL_BLOCKING, off * 4, data, &[])
                    })?;
                }
                OutputSource::Known(v) => {
                    for (d, x) in data.chunks_exact_mut(4).zip(v) {
                        d.copy_from_slice(&x.to_le_bytes());
                    }
                }
            }
        }
        cl("clFinish", env.queue.finish())
    }
}
