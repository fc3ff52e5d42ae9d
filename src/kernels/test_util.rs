//! Test-only harness: a hand-built `TfLiteContext` with malloc'ed tensors, enough to run
//! a kernel's registration (`prepare` then `invoke`) the way the interpreter does, so the
//! glue of each op (input checks, output resize, type dispatch) is tested without a model.

use crate::abi::arrays::{float_array_from_slice, int_array_free, int_array_from_slice, int_array_slice};
use crate::abi::types::*;
use crate::kernels::api::{Element, QuantParams};
use core::ffi::c_void;
use std::any::Any;

unsafe extern "C" fn resize(_ctx: *mut TfLiteContext, t: *mut TfLiteTensor, dims: *mut TfLiteIntArray) -> TfLiteStatus {
    // SAFETY: called by `ResizeTensor` with a tensor of the graph's table and a malloc'ed
    // shape whose ownership passes to the tensor; the old shape and data are ours to free.
    unsafe {
        let t = &mut *t;
        let n: usize = int_array_slice(dims).iter().map(|&d| d.max(0) as usize).product();
        let Some(size) = t.data_type().and_then(|d| d.element_size()) else {
            int_array_free(dims);
            return TfLiteStatus::kTfLiteError;
        };
        int_array_free(t.dims);
        t.dims = dims;
        // Only data an earlier resize allocated is the tensor's own; the first block of
        // every tensor belongs to the graph (freed when it drops), like an arena.
        if t.allocation() == Some(TfLiteAllocationType::kTfLiteDynamic) {
            libc::free(t.data.data);
        }
        t.bytes = n * size;
        t.data.data = libc::calloc(t.bytes.max(1), 1);
        t.allocation_type = TfLiteAllocationType::kTfLiteDynamic;
    }
    TfLiteStatus::kTfLiteOk
}

unsafe extern "C" fn add_tensors(
    ctx: *mut TfLiteContext,
    n: core::ffi::c_int,
    first: *mut core::ffi::c_int,
) -> TfLiteStatus {
    // SAFETY: `impl_` is the harness's tensor table (set in `Graph::run`), which nothing
    // else references while the kernel runs; the context is re-pointed at it after growth.
    unsafe {
        let Ok(n) = usize::try_from(n) else { return TfLiteStatus::kTfLiteError };
        let table = &mut *((*ctx).impl_ as *mut Vec<TfLiteTensor>);
        if !first.is_null() {
            *first = table.len() as core::ffi::c_int;
        }
        for _ in 0..n {
            let mut t = TfLiteTensor::empty();
            t.dims = int_array_from_slice(&[]);
            table.push(t);
        }
        (*ctx).tensors = table.as_mut_ptr();
        (*ctx).tensors_size = table.len();
    }
    TfLiteStatus::kTfLiteOk
}

/// Tensors (a C-layout table, as kernels see it) plus what keeps builtin params alive.
#[derive(Default)]
pub struct Graph {
    tensors: Vec<TfLiteTensor>,
    keep: Vec<Box<dyn Any>>,
    /// The block each tensor was created with: the harness's "arena". A kernel may drop
    /// its pointer (making the output dynamic), so the graph frees these itself.
    blocks: Vec<*mut c_void>,
}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    fn push(
        &mut self,
        dtype: TfLiteType,
        shape: &[i32],
        bytes: &[u8],
        quant: Option<QuantParams>,
        constant: bool,
    ) -> i32 {
        let mut t = TfLiteTensor::empty();
        t.r#type = dtype;
        t.dims = int_array_from_slice(shape);
        // SAFETY: a fresh allocation of at least `bytes.len()` bytes, filled from `bytes`.
        let block = unsafe {
            let block = libc::calloc(bytes.len().max(1), 1);
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), block as *mut u8, bytes.len());
            block
        };
        t.data.data = block;
        self.blocks.push(block);
        t.bytes = bytes.len();
        t.allocation_type =
            if constant { TfLiteAllocationType::kTfLiteMmapRo } else { TfLiteAllocationType::kTfLiteArenaRw };
        if let Some(q) = quant {
            t.params = TfLiteQuantizationParams { scale: q.scale, zero_point: q.zero_point };
            let aq = Box::new(TfLiteAffineQuantization {
                scale: float_array_from_slice(&[q.scale]),
                zero_point: int_array_from_slice(&[q.zero_point]),
                quantized_dimension: 0,
            });
            t.quantization = TfLiteQuantization {
                r#type: TfLiteQuantizationType::kTfLiteAffineQuantization,
                params: Box::into_raw(aq) as *mut c_void,
            };
        }
        self.tensors.push(t);
        (self.tensors.len() - 1) as i32
    }

    /// Adds a tensor holding `data` (shape `shape`), optionally quantized / constant.
    pub fn tensor<T: Element>(
        &mut self,
        dtype: TfLiteType,
        shape: &[i32],
        data: &[T],
        quant: Option<QuantParams>,
        constant: bool,
    ) -> i32 {
        // SAFETY: `T: Element` is plain old data; viewing it as bytes is valid.
        let bytes = unsafe { core::slice::from_raw_parts(data.as_ptr() as *const u8, core::mem::size_of_val(data)) };
        self.push(dtype, shape, bytes, quant, constant)
    }

    /// Adds a variable (state) tensor holding `data`, as LSTM and RNN states are.
    pub fn variable(&mut self, dtype: TfLiteType, shape: &[i32], data: &[f32]) -> i32 {
        let i = self.tensor(dtype, shape, data, None, false);
        self.tensors[i as usize].is_variable = true;
        i
    }

    /// Adds an output tensor with no shape yet.
    pub fn output(&mut self, dtype: TfLiteType, quant: Option<QuantParams>) -> i32 {
        self.push(dtype, &[0], &[], quant, false)
    }

    /// Runs `init`, `prepare`, `invoke` and `free` on one node, as the runtime does; the
    /// first status that is not OK, or OK.
    pub fn run<P: 'static>(
        &mut self,
        reg: &TfLiteRegistration,
        inputs: &[i32],
        outputs: &[i32],
        params: Option<P>,
    ) -> TfLiteStatus {
        let builtin_data = match params {
            Some(p) => {
                let mut b = Box::new(p);
                let ptr = &mut *b as *mut P as *mut c_void;
                self.keep.push(b);
                ptr
            }
            None => core::ptr::null_mut(),
        };
        let (ins, outs) = (int_array_from_slice(inputs), int_array_from_slice(outputs));
        let mut node = TfLiteNode {
            inputs: ins,
            outputs: outs,
            intermediates: core::ptr::null_mut(),
            temporaries: core::ptr::null_mut(),
            user_data: core::ptr::null_mut(),
            builtin_data,
            custom_initial_data: core::ptr::null(),
            custom_initial_data_size: 0,
            delegate: core::ptr::null_mut(),
            might_have_side_effect: false,
        };
        // SAFETY: every field of the context is a plain value, pointer or Option of fn
        // pointer, for which all-zero is valid (NULL / None).
        let mut ctx: TfLiteContext = unsafe { core::mem::zeroed() };
        ctx.tensors_size = self.tensors.len();
        ctx.tensors = self.tensors.as_mut_ptr();
        ctx.ResizeTensor = Some(resize);
        ctx.AddTensors = Some(add_tensors);
        ctx.impl_ = &mut self.tensors as *mut Vec<TfLiteTensor> as *mut c_void;
        if let Some(init) = reg.init {
            // SAFETY: the context is live; builtin kernels get their params with length 0.
            node.user_data = unsafe { init(&mut ctx, builtin_data as *const core::ffi::c_char, 0) };
        }
        let mut status = TfLiteStatus::kTfLiteOk;
        for f in [reg.prepare, reg.invoke].into_iter().flatten() {
            // SAFETY: the context and node are live for the call, as the runtime's are.
            status = unsafe { f(&mut ctx, &mut node) };
            if status != TfLiteStatus::kTfLiteOk {
                break;
            }
        }
        if let (Some(free), false) = (reg.free, node.user_data.is_null()) {
            // SAFETY: `user_data` is what this registration's `init` returned, freed once.
            unsafe { free(&mut ctx, node.user_data) };
        }
        // SAFETY: the arrays were made above and nothing else refers to them now.
        unsafe {
            int_array_free(ins);
            int_array_free(outs);
            int_array_free(node.temporaries);
        }
        status
    }

    /// The shape of tensor `i`.
    pub fn shape(&self, i: i32) -> Vec<i32> {
        // SAFETY: the tensor's dims are owned by it and live.
        unsafe { int_array_slice(self.tensors[i as usize].dims).to_vec() }
    }

    /// The data of tensor `i`, as `T`.
    pub fn data<T: Element>(&self, i: i32) -> Vec<T> {
        let t = &self.tensors[i as usize];
        let n = t.bytes / core::mem::size_of::<T>();
        // SAFETY: the data was allocated by calloc (aligned for any `T`) with `bytes` bytes.
        unsafe { core::slice::from_raw_parts(t.data_ptr() as *const T, n).to_vec() }
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        for t in &mut self.tensors {
            // SAFETY: every pointer here was allocated by this harness (or by `resize`) and
            // is freed exactly once: dynamic data here, first blocks below.
            unsafe {
                int_array_free(t.dims);
                if t.allocation() == Some(TfLiteAllocationType::kTfLiteDynamic) {
                    libc::free(t.data.data);
                }
                if !t.quantization.params.is_null() {
                    let aq = Box::from_raw(t.quantization.params as *mut TfLiteAffineQuantization);
                    libc::free(aq.scale.cast());
                    int_array_free(aq.zero_point);
                }
            }
        }
        for &b in &self.blocks {
            // SAFETY: each block came from calloc in `push` and is freed only here.
            unsafe { libc::free(b) };
        }
    }
}

/// Shorthand for quantization parameters.
pub fn qp(scale: f32, zero_point: i32) -> QuantParams {
    QuantParams { scale, zero_point }
}
