//! The safe face of a kernel invocation.
//!
//! Builtin kernels are `TfLiteRegistration`s, exactly like TFLite's (so delegates see the
//! same `init/prepare/invoke/free` table for every node), but their bodies are safe Rust
//! functions taking an [`OpCtx`]; `kernel.rs` builds the `extern "C"` trampolines (with
//! the panic boundary, [`run_step_in`]) around them.
//!
//! Kernels reach tensors through `context->tensors` and resize outputs through
//! `context->ResizeTensor`, as TFLite kernels do, so the interpreter is free to change
//! underneath them (control flow and resource variables are the exceptions: they call
//! into the subgraphs).
//!
//! Aliasing: an [`OpCtx`] hands out a shared view of each input and a mutable view of each
//! output. That is sound because (1) `output()` refuses a tensor that is also an input of
//! the node, (2) an output's `data_mut` refuses bytes that overlap any input's (the arena
//! planner shares memory only between a node's output and one of its inputs, in place,
//! for ops whose registration allows it), except the one input a kernel running in place
//! declared through [`OpCtx::output_in_place`] (and then does not read through its view),
//! and (3) outputs are never constants (model validation rejects writes to constant
//! tensors).

use crate::abi::arrays::{int_array_from_slice, int_array_slice};
use crate::abi::types::*;
use crate::error::{Error, Result};
use core::cell::{Cell, RefCell};
use core::marker::PhantomData;

/// Element types a tensor's data can be viewed as.
///
/// # Safety
/// Implementors must be plain-old-data valid for every bit pattern.
pub unsafe trait Element: Copy + 'static {
    /// The TFLite types whose data has this Rust representation.
    fn matches(t: TfLiteType) -> bool;
}

macro_rules! element {
    ($t:ty, $($tt:ident),+) => {
        // SAFETY: a primitive numeric type; every bit pattern is a valid value.
        unsafe impl Element for $t {
            fn matches(t: TfLiteType) -> bool { matches!(t, $(TfLiteType::$tt)|+) }
        }
    };
}
element!(f32, kTfLiteFloat32);
element!(f64, kTfLiteFloat64);
element!(i32, kTfLiteInt32);
element!(u32, kTfLiteUInt32);
element!(i64, kTfLiteInt64);
element!(u64, kTfLiteUInt64);
element!(i16, kTfLiteInt16);
element!(u16, kTfLiteUInt16, kTfLiteFloat16, kTfLiteBFloat16);
element!(i8, kTfLiteInt8);
element!(u8, kTfLiteUInt8, kTfLiteBool);
// Complex values as (real, imaginary) pairs, the layout of `std::complex`.
element!([f32; 2], kTfLiteComplex64);
element!([f64; 2], kTfLiteComplex128);

/// Per-tensor quantization as kernels use it (`params` of the tensor).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct QuantParams {
    pub scale: f32,
    pub zero_point: i32,
}

/// A read-only view of one tensor for the duration of a kernel call.
#[derive(Clone, Copy)]
pub struct TensorView<'a> {
    tensor: *const TfLiteTensor,
    pub index: usize,
    pub dtype: TfLiteType,
    pub shape: &'a [i32],
    _life: PhantomData<&'a TfLiteTensor>,
}

impl<'a> TensorView<'a> {
    /// Number of elements (product of the shape; the interpreter validated it fits).
    pub fn num_elements(&self) -> usize {
        self.shape.iter().map(|&d| d.max(0) as usize).product()
    }

    /// Bytes of data (`tensor->bytes`).
    pub fn bytes(&self) -> usize {
        // SAFETY: `tensor` points into the live tensor table for 'a (see OpCtx).
        unsafe { (*self.tensor).bytes }
    }

    /// The legacy per-tensor quantization parameters.
    pub fn quant(&self) -> QuantParams {
        // SAFETY: as in `bytes`.
        let p = unsafe { (*self.tensor).params };
        QuantParams { scale: p.scale, zero_point: p.zero_point }
    }

    /// Per-channel (affine) scales and zero points, if the tensor has them.
    pub fn affine_quant(&self) -> Option<(&'a [f32], &'a [i32], i32)> {
        // SAFETY: as in `bytes`; the quantization params are owned by the tensor and live
        // as long as the tensor table entry.
        unsafe {
            let t = &*self.tensor;
            if t.quantization_type_raw() != TfLiteQuantizationType::kTfLiteAffineQuantization as i32
                || t.quantization.params.is_null()
            {
                return None;
            }
            let aq = &*(t.quantization.params as *const TfLiteAffineQuantization);
            Some((
                crate::abi::arrays::float_array_slice(aq.scale),
                int_array_slice(aq.zero_point),
                aq.quantized_dimension,
            ))
        }
    }

    /// The tensor's sparsity parameters (sparse constants), copied out of the C struct.
    pub fn sparsity(&self) -> Result<Option<crate::model::sparsity::Sparsity>> {
        use crate::model::sparsity::{DimMetadata, Sparsity};
        // SAFETY: as in `bytes`; `sparsity` is NULL or owned by the tensor with its arrays,
        // which live as long as the tensor table entry; each array is NULL or valid.
        unsafe {
            let Some(sp) = (*self.tensor).sparsity.as_ref() else { return Ok(None) };
            let n = usize::try_from(sp.dim_metadata_size).unwrap_or(0);
            if n > 0 && sp.dim_metadata.is_null() {
                return Err(Error::new(format!("tensor {}: sparsity without dimension metadata", self.index)));
            }
            let mut dim_metadata = Vec::with_capacity(n);
            for i in 0..n {
                let m = &*sp.dim_metadata.add(i);
                let format = core::ptr::addr_of!(m.format).cast::<i32>().read();
                dim_metadata.push(if format == TfLiteDimensionType::kTfLiteDimDense as i32 {
                    DimMetadata::Dense(m.dense_size)
                } else if format == TfLiteDimensionType::kTfLiteDimSparseCSR as i32 {
                    DimMetadata::Csr {
                        segments: int_array_slice(m.array_segments).to_vec(),
                        indices: int_array_slice(m.array_indices).to_vec(),
                    }
                } else {
                    return Err(Error::new(format!(
                        "tensor {}: dimension {i} has unknown format {format}",
                        self.index
                    )));
                });
            }
            Ok(Some(Sparsity {
                traversal_order: int_array_slice(sp.traversal_order).to_vec(),
                block_map: int_array_slice(sp.block_map).to_vec(),
                dim_metadata,
            }))
        }
    }

    /// True for dynamic tensors (`kTfLiteDynamic`: memory of their own, resizable in Eval).
    pub fn is_dynamic(&self) -> bool {
        // SAFETY: as in `bytes`.
        let t = unsafe { &*self.tensor };
        matches!(t.allocation(), Some(TfLiteAllocationType::kTfLiteDynamic))
    }

    /// True for tensors in the persistent arena (`kTfLiteArenaRwPersistent`).
    pub fn is_persistent(&self) -> bool {
        // SAFETY: as in `bytes`.
        let t = unsafe { &*self.tensor };
        matches!(t.allocation(), Some(TfLiteAllocationType::kTfLiteArenaRwPersistent))
    }

    /// True for variable tensors (`is_variable`: state kept across invokes).
    pub fn is_variable(&self) -> bool {
        // SAFETY: as in `bytes`.
        unsafe { (*self.tensor).is_variable }
    }

    /// True for constant tensors (data from the model file).
    pub fn is_constant(&self) -> bool {
        // SAFETY: as in `bytes`.
        let t = unsafe { &*self.tensor };
        matches!(t.allocation(), Some(TfLiteAllocationType::kTfLiteMmapRo))
    }

    /// True for data that stays the same from one Invoke to the next once written: model
    /// constants, and non-variable tensors of the persistent arena (DEQUANTIZE of constant
    /// weights; TFLite calls these stable across runs). Kernels may cache what they derive
    /// from such data (packed weights), keyed by its location.
    pub fn is_stable_across_runs(&self) -> bool {
        self.is_constant() || (self.is_persistent() && !self.is_variable())
    }

    /// The raw bytes of the data. Errors if the tensor has no data.
    pub fn raw(&self) -> Result<&'a [u8]> {
        // SAFETY: as in `bytes`.
        let t = unsafe { &*self.tensor };
        let p = t.data_ptr();
        if t.bytes == 0 {
            return Ok(&[]);
        }
        if p.is_null() {
            return Err(Error::new(format!("tensor {} has no data", self.index)));
        }
        // SAFETY: the runtime guarantees `data` points to `bytes` readable bytes for the
        // duration of the kernel call (arena, mmapped model, or malloc'ed dynamic data).
        Ok(unsafe { core::slice::from_raw_parts(p as *const u8, t.bytes) })
    }

    /// The data as a typed slice, checked against the tensor's type, size and alignment.
    pub fn data<T: Element>(&self) -> Result<&'a [T]> {
        if !T::matches(self.dtype) {
            return Err(Error::new(format!(
                "tensor {} has type {}, not the type the kernel expects",
                self.index,
                self.dtype.name()
            )));
        }
        let raw = self.raw()?;
        let n = self.num_elements();
        let need = n.checked_mul(core::mem::size_of::<T>()).ok_or_else(|| Error::new("tensor size overflow"))?;
        if raw.len() < need {
            return Err(Error::new(format!("tensor {} holds {} bytes, needs {}", self.index, raw.len(), need)));
        }
        if n == 0 {
            return Ok(&[]);
        }
        if !(raw.as_ptr() as usize).is_multiple_of(core::mem::align_of::<T>()) {
            return Err(Error::new(format!("tensor {} data is misaligned", self.index)));
        }
        // SAFETY: size, alignment and type were checked above; `T: Element` is valid for any
        // bit pattern; the bytes live for 'a.
        Ok(unsafe { core::slice::from_raw_parts(raw.as_ptr() as *const T, n) })
    }
}

/// A writable view of one output tensor.
pub struct TensorViewMut<'a> {
    view: TensorView<'a>,
    /// The node inputs whose bytes `data_mut` checks this view does not overlap
    /// (`None` for variable-state views, which are inputs themselves), and the one
    /// input the planner made it share memory with in place, which is exempt.
    guard: Option<(&'a [i32], Option<usize>)>,
    context: *mut TfLiteContext,
}

impl<'a> core::ops::Deref for TensorViewMut<'a> {
    type Target = TensorView<'a>;
    fn deref(&self) -> &TensorView<'a> {
        &self.view
    }
}

impl<'a> TensorViewMut<'a> {
    /// The data as a mutable typed slice (checked like `TensorView::data`).
    pub fn data_mut<T: Element>(&mut self) -> Result<&'a mut [T]> {
        let s = self.view.data::<T>()?;
        if let Some((inputs, exempt)) = self.guard {
            let (lo, hi) = (s.as_ptr() as usize, s.as_ptr() as usize + core::mem::size_of_val(s));
            for (k, &idx) in inputs.iter().enumerate() {
                if Some(k) == exempt || idx < 0 || hi == lo {
                    continue;
                }
                let (p, n) = data_range(self.context, idx);
                if p != 0 && n > 0 && p < hi && lo < p + n {
                    return Err(Error::new(format!(
                        "output tensor {} shares memory with input tensor {idx}, which this kernel cannot run in place",
                        self.view.index
                    )));
                }
            }
        }
        // SAFETY: the view is of an output tensor that is not an input of this node and
        // not a constant, and whose bytes overlap no input's but the exempt in-place one
        // (checked above; see the module doc), so nothing else reads or writes these bytes
        // during the kernel call; `self` is borrowed mutably so only one slice exists per view.
        Ok(unsafe { core::slice::from_raw_parts_mut(s.as_ptr() as *mut T, s.len()) })
    }
}

/// Which kernel callback an [`OpCtx`] serves.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    Prepare,
    Invoke,
}

/// The most temporaries one node may have (one bit each in the hand-out mask).
pub(crate) const MAX_TEMPORARIES: usize = 64;

/// One kernel call: the context and the node, behind checked accessors.
///
/// Temporaries (TFLite's `node->temporaries`, e.g. im2col buffers): a kernel asks for
/// them in Prepare with [`OpCtx::request_temporaries`] (byte sizes); the request is
/// applied when Prepare returns OK — the node's existing temporaries are reused, or
/// tensors are added (`context->AddTensors`, uint8, `kTfLiteArenaRw`) — so the memory
/// planner, which runs after every Prepare, places them with lifetime [node, node]
/// (sharing bytes with activations dead at that node). Applying after Prepare returns
/// means no tensor view of the call can outlive the tensor table moving under
/// `AddTensors`. In Invoke, [`OpCtx::temporary_mut`] hands out each temporary's bytes
/// (once per call).
pub struct OpCtx<'a> {
    context: *mut TfLiteContext,
    node: *mut TfLiteNode,
    phase: Phase,
    /// Byte sizes requested in this Prepare, applied by [`run_step_in`] once it returns OK.
    requested: RefCell<Option<Vec<usize>>>,
    /// Temporaries handed out in this call (bit `i` for temporary `i`).
    temps_taken: Cell<u64>,
    _life: PhantomData<&'a mut TfLiteContext>,
}

impl<'a> OpCtx<'a> {
    /// Wraps the raw pointers the runtime passes to `prepare`/`invoke`.
    ///
    /// # Safety
    /// `context` and `node` must be the live pointers the runtime passed to this call.
    pub unsafe fn new(context: *mut TfLiteContext, node: *mut TfLiteNode) -> Result<OpCtx<'a>> {
        if context.is_null() || node.is_null() {
            return Err(Error::new("kernel called with a NULL context or node"));
        }
        Ok(OpCtx::with_phase(context, node, Phase::Invoke))
    }

    fn with_phase(context: *mut TfLiteContext, node: *mut TfLiteNode, phase: Phase) -> OpCtx<'a> {
        OpCtx { context, node, phase, requested: RefCell::new(None), temps_taken: Cell::new(0), _life: PhantomData }
    }

    /// The callback this context serves.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Prepare only: asks for one node temporary per entry of `bytes` (their byte sizes),
    /// replacing any earlier request of this call. Applied when Prepare returns OK (see
    /// the type's doc); a kernel that uses temporaries in some configurations should
    /// request `&[]` in the others so the node drops them. Errors in Invoke, for more
    /// than [`MAX_TEMPORARIES`], or for a size over `i32::MAX`.
    pub fn request_temporaries(&self, bytes: &[usize]) -> Result<()> {
        if self.phase != Phase::Prepare {
            return Err(Error::new("node temporaries can only be requested in Prepare"));
        }
        if bytes.len() > MAX_TEMPORARIES {
            return Err(Error::new(format!("{} temporaries requested; at most {MAX_TEMPORARIES}", bytes.len())));
        }
        if let Some(b) = bytes.iter().find(|&&b| b > i32::MAX as usize) {
            return Err(Error::new(format!("a temporary of {b} bytes is too large")));
        }
        *self.requested.borrow_mut() = Some(bytes.to_vec());
        Ok(())
    }

    /// Tensor indices of the node's temporaries (a copy: Prepare may replace the array).
    pub fn temporary_indices(&self) -> Vec<i32> {
        // SAFETY: the node's temporaries array is owned by the runtime; a NULL array reads
        // as empty; the slice is copied before anything can replace it.
        unsafe { int_array_slice(self.node().temporaries) }.to_vec()
    }

    /// Invoke only: temporary `i`'s bytes as a mutable `T` slice (`bytes / size_of::<T>()`
    /// elements, contents unspecified: the arena shares them with other tensors outside
    /// this node). Each temporary is handed out at most once per call; errors if it was
    /// already, if `i` is out of range, or if its data is missing, misaligned for `T`, or
    /// overlaps an input, output or other temporary of the node.
    pub fn temporary_mut<T: Element>(&self, i: usize) -> Result<&'a mut [T]> {
        if self.phase != Phase::Invoke {
            return Err(Error::new("node temporaries are only available in Invoke"));
        }
        let temps = self.temporary_indices();
        let idx = *temps.get(i).ok_or_else(|| Error::new(format!("node has no temporary {i}")))?;
        if i >= MAX_TEMPORARIES {
            return Err(Error::new(format!("temporary {i} is past the {MAX_TEMPORARIES} supported")));
        }
        let bit = 1u64 << i;
        if self.temps_taken.get() & bit != 0 {
            return Err(Error::new(format!("temporary {i} was already handed out in this call")));
        }
        let (p, n) = data_range(self.context, idx);
        if idx < 0 || (p, n) == (0, 0) && !self.tensor_in_range(idx) {
            return Err(Error::new(format!("temporary {i} names invalid tensor {idx}")));
        }
        let size = core::mem::size_of::<T>();
        let len = n / size;
        if len == 0 {
            self.temps_taken.set(self.temps_taken.get() | bit);
            return Ok(&mut []);
        }
        if p == 0 {
            return Err(Error::new(format!("temporary {i} (tensor {idx}) has no data")));
        }
        if p % core::mem::align_of::<T>() != 0 {
            return Err(Error::new(format!("temporary {i} (tensor {idx}) is misaligned")));
        }
        let others =
            self.input_indices().iter().chain(self.output_indices()).chain(temps.iter().filter(|&&t| t != idx));
        for &o in others {
            if o < 0 {
                continue;
            }
            let (q, m) = data_range(self.context, o);
            if q != 0 && m > 0 && q < p + n && p < q + m {
                return Err(Error::new(format!(
                    "temporary {i} (tensor {idx}) shares memory with tensor {o} of the node"
                )));
            }
        }
        self.temps_taken.set(self.temps_taken.get() | bit);
        // SAFETY: `[p, p+n)` are tensor `idx`'s bytes, live for the call (arena or dynamic
        // memory the runtime owns); `T: Element` is valid for any bit pattern; the pointer
        // is aligned for `T` and `len * size <= n`; the bytes overlap no input, output or
        // other temporary of the node (checked above) and each temporary is handed out once
        // per call (bitmask), so this is the only reference to them during the call.
        Ok(unsafe { core::slice::from_raw_parts_mut(p as *mut T, len) })
    }

    fn tensor_in_range(&self, idx: i32) -> bool {
        // SAFETY: `context` is live for the call.
        let ctx = unsafe { &*self.context };
        usize::try_from(idx).is_ok_and(|i| i < ctx.tensors_size && !ctx.tensors.is_null())
    }

    /// The raw context (for reporting).
    pub fn context(&self) -> *mut TfLiteContext {
        self.context
    }

    fn node(&self) -> &TfLiteNode {
        // SAFETY: `node` is live for the call (constructor contract).
        unsafe { &*self.node }
    }

    /// Input tensor indices (-1 for absent optional inputs).
    pub fn input_indices(&self) -> &'a [i32] {
        // SAFETY: node arrays are owned by the runtime and unchanged during the call.
        unsafe { int_array_slice(self.node().inputs) }
    }

    /// Output tensor indices.
    pub fn output_indices(&self) -> &'a [i32] {
        // SAFETY: as in `input_indices`.
        unsafe { int_array_slice(self.node().outputs) }
    }

    /// Intermediate tensor indices (`TfLiteNode::intermediates`: tensors whose
    /// quantization parameters some quantized kernels read, such as integer LSTM's).
    pub fn intermediate_indices(&self) -> &'a [i32] {
        // SAFETY: as in `input_indices`; a NULL array reads as empty.
        unsafe { int_array_slice(self.node().intermediates) }
    }

    /// Intermediate tensor `i`, read-only.
    pub fn intermediate(&self, i: usize) -> Result<TensorView<'a>> {
        let idx = *self
            .intermediate_indices()
            .get(i)
            .ok_or_else(|| Error::new(format!("node has no intermediate tensor {i}")))?;
        self.tensor_view(idx)
    }

    /// Number of inputs.
    pub fn num_inputs(&self) -> usize {
        self.input_indices().len()
    }

    /// Number of outputs.
    pub fn num_outputs(&self) -> usize {
        self.output_indices().len()
    }

    /// The node's builtin params, as `T` (the parser allocated a `T` for this op).
    ///
    /// # Safety
    /// `T` must be the params struct the parser produces for this node's operator.
    pub unsafe fn builtin_data<T>(&self) -> Option<&'a T> {
        let p = self.node().builtin_data as *const T;
        // SAFETY: caller guarantees the type; the runtime keeps builtin_data alive.
        unsafe { p.as_ref() }
    }

    /// The node's custom options (`custom_initial_data`), empty when it has none.
    pub fn custom_initial_data(&self) -> &'a [u8] {
        let n = self.node();
        match usize::try_from(n.custom_initial_data_size) {
            Ok(len) if len > 0 && !n.custom_initial_data.is_null() => {
                // SAFETY: the runtime keeps `custom_initial_data_size` readable bytes at
                // `custom_initial_data` (the model's custom options) for the node's life.
                unsafe { core::slice::from_raw_parts(n.custom_initial_data.cast::<u8>(), len) }
            }
            _ => &[],
        }
    }

    fn tensor_view(&self, index: i32) -> Result<TensorView<'a>> {
        // SAFETY: `context` is live for the call.
        let ctx = unsafe { &*self.context };
        let i = usize::try_from(index).map_err(|_| Error::new(format!("invalid tensor index {index}")))?;
        if i >= ctx.tensors_size || ctx.tensors.is_null() {
            return Err(Error::new(format!("tensor index {index} out of range")));
        }
        // SAFETY: index checked against tensors_size; the table is live during the call.
        let t = unsafe { &*ctx.tensors.add(i) };
        let dtype = t.data_type().ok_or_else(|| Error::new(format!("tensor {index} has an invalid type")))?;
        // SAFETY: dims is owned by the tensor; unchanged until the next resize.
        let shape = unsafe { int_array_slice(t.dims) };
        Ok(TensorView { tensor: t as *const TfLiteTensor, index: i, dtype, shape, _life: PhantomData })
    }

    /// Input `i`; an error if absent.
    pub fn input(&self, i: usize) -> Result<TensorView<'a>> {
        let idx = *self.input_indices().get(i).ok_or_else(|| Error::new(format!("node has no input {i}")))?;
        self.tensor_view(idx)
    }

    /// Input `i`, or `None` if it is an absent optional input (-1) or past the end.
    pub fn optional_input(&self, i: usize) -> Result<Option<TensorView<'a>>> {
        match self.input_indices().get(i) {
            None => Ok(None),
            Some(&idx) if idx == kTfLiteOptionalTensor => Ok(None),
            Some(&idx) => self.tensor_view(idx).map(Some),
        }
    }

    /// Output `i`, writable. Refuses an output that is also an input of the node.
    pub fn output(&self, i: usize) -> Result<TensorViewMut<'a>> {
        let idx = *self.output_indices().get(i).ok_or_else(|| Error::new(format!("node has no output {i}")))?;
        if self.input_indices().contains(&idx) {
            return Err(Error::new(format!("tensor {idx} is both an input and an output of the node")));
        }
        let view = self.tensor_view(idx)?;
        if view.is_constant() {
            return Err(Error::new(format!("output tensor {idx} is a constant")));
        }
        Ok(TensorViewMut { view, guard: Some((self.input_indices(), None)), context: self.context })
    }

    /// Which input (position among the node's inputs) output `o` shares its memory
    /// with, if the memory planner made it run in place (TFLite's in-place sharing):
    /// the same non-NULL data pointer and byte size.
    pub fn input_sharing_output(&self, o: usize) -> Option<usize> {
        let idx = *self.output_indices().get(o)?;
        let (p, n) = data_range(self.context, idx);
        if p == 0 || n == 0 {
            return None;
        }
        self.input_indices().iter().position(|&i| i >= 0 && data_range(self.context, i) == (p, n))
    }

    /// Output `o`, writable, for a kernel that computes it in place over input `k`
    /// (see [`OpCtx::input_sharing_output`]): `data_mut` then allows that one input's
    /// bytes to be the output's. The kernel must not read input `k` through its own
    /// view while holding the output's data.
    pub fn output_in_place(&self, o: usize, k: usize) -> Result<TensorViewMut<'a>> {
        let mut out = self.output(o)?;
        out.guard = Some((self.input_indices(), Some(k)));
        Ok(out)
    }

    /// Input `i` as a writable view, for a variable (state) tensor the kernel updates in
    /// place (LSTM and RNN states). Refuses a tensor that is not a variable, is a
    /// constant, or appears anywhere else among the node's inputs or outputs.
    pub fn variable_input(&self, i: usize) -> Result<TensorViewMut<'a>> {
        let ins = self.input_indices();
        let idx = *ins.get(i).ok_or_else(|| Error::new(format!("node has no input {i}")))?;
        let view = self.tensor_view(idx)?;
        if !view.is_variable() || view.is_constant() {
            return Err(Error::new(format!("input {i} (tensor {idx}) must be a variable tensor")));
        }
        let elsewhere =
            ins.iter().enumerate().any(|(k, &t)| k != i && t == idx) || self.output_indices().contains(&idx);
        if elsewhere {
            return Err(Error::new(format!("variable tensor {idx} is used more than once by the node")));
        }
        Ok(TensorViewMut { view, guard: None, context: self.context })
    }

    /// TFLite's `SetTensorToDynamic` for output `i` (prepare): the output gets memory of
    /// its own at each resize instead of a place in the arena, so Eval may resize it
    /// (`resize_output`) once the input values give its shape.
    pub fn set_output_dynamic(&self, i: usize) -> Result<()> {
        let out = self.output(i)?;
        // SAFETY: index validated by `output`; kernels may change an output's allocation
        // type in prepare, as TFLite kernels do (SetTensorToDynamic). Arena data is not
        // the tensor's to free; the runtime allocates dynamic data at the next resize.
        unsafe {
            let t = &mut *(out.view.tensor as *mut TfLiteTensor);
            if t.allocation() != Some(TfLiteAllocationType::kTfLiteDynamic) {
                t.allocation_type = TfLiteAllocationType::kTfLiteDynamic;
                t.data.data = core::ptr::null_mut();
            }
        }
        Ok(())
    }

    /// Puts output `i` in the persistent arena (`kTfLiteArenaRwPersistent`, prepare
    /// only), as TFLite's DEQUANTIZE does for constant inputs: the tensor then never
    /// shares bytes with the activations. Only an arena (`kTfLiteArenaRw`) output is
    /// moved; dynamic or custom ones keep their memory.
    pub fn set_output_persistent(&self, i: usize) -> Result<()> {
        let out = self.output(i)?;
        // SAFETY: index validated by `output`; kernels may change an output's allocation
        // type in prepare, as TFLite kernels do. Arena data is re-pointed by the next
        // memory plan, which runs after prepare.
        unsafe {
            let t = &mut *(out.view.tensor as *mut TfLiteTensor);
            if t.allocation() == Some(TfLiteAllocationType::kTfLiteArenaRw) {
                t.allocation_type = TfLiteAllocationType::kTfLiteArenaRwPersistent;
            }
        }
        Ok(())
    }

    /// Sets output `i`'s type (prepare only).
    pub fn set_output_type(&self, i: usize, dtype: TfLiteType) -> Result<()> {
        let out = self.output(i)?;
        // SAFETY: index validated by `output`; the runtime allows kernels to set an
        // output's type in prepare, as TFLite kernels do.
        unsafe { (*(out.view.tensor as *mut TfLiteTensor)).r#type = dtype };
        Ok(())
    }

    /// Resizes output `i` through `context->ResizeTensor` (prepare, or invoke for dynamic).
    pub fn resize_output(&self, i: usize, shape: &[i32]) -> Result<()> {
        // No shortcut when the shape is unchanged: the kernel may have changed the
        // output's type, and ResizeTensor recomputes `bytes` (as TFLite's does).
        let out = self.output(i)?;
        let dims = int_array_from_slice(shape);
        if dims.is_null() {
            return Err(Error::new("out of memory allocating a shape"));
        }
        // SAFETY: `context` is live; ResizeTensor takes ownership of `dims`.
        let status = unsafe {
            let ctx = &*self.context;
            match ctx.ResizeTensor {
                Some(f) => f(self.context, out.view.tensor as *mut TfLiteTensor, dims),
                None => {
                    crate::abi::arrays::int_array_free(dims);
                    TfLiteStatus::kTfLiteError
                }
            }
        };
        if status == TfLiteStatus::kTfLiteOk { Ok(()) } else { Err(Error::new(format!("could not resize output {i}"))) }
    }

    /// Reports an error message through the context.
    pub fn report(&self, message: &str) {
        // SAFETY: `context` is live for the call (constructor contract).
        unsafe { report_to_context(self.context, message) };
    }
}

/// Makes the node's temporaries `bytes.len()` uint8 tensors of `bytes[i]` bytes each:
/// reuses its existing uint8 arena (or dynamic) temporaries in order, adds tensors through
/// `context->AddTensors` for the rest (as TFLite kernels do), resizes them through
/// `context->ResizeTensor`, shrinks the ones no longer listed to zero bytes, and rewrites
/// `node->temporaries`.
///
/// # Safety
/// `context` and `node` must be live, and no reference into the tensor table alive.
unsafe fn apply_temporaries(context: *mut TfLiteContext, node: *mut TfLiteNode, bytes: &[usize]) -> Result<()> {
    // SAFETY: `node` is live (contract); the array is copied before it is replaced.
    let existing = unsafe { int_array_slice((*node).temporaries) }.to_vec();
    let reusable = |idx: i32| -> bool {
        // SAFETY: `context` is live; the index is checked against the table.
        let ctx = unsafe { &*context };
        match usize::try_from(idx) {
            Ok(i) if i < ctx.tensors_size && !ctx.tensors.is_null() => {
                // SAFETY: index checked against the live tensor table.
                let t = unsafe { &*ctx.tensors.add(i) };
                t.data_type() == Some(TfLiteType::kTfLiteUInt8)
                    && matches!(
                        t.allocation(),
                        Some(TfLiteAllocationType::kTfLiteArenaRw) | Some(TfLiteAllocationType::kTfLiteDynamic)
                    )
            }
            _ => false,
        }
    };
    let mut indices: Vec<i32> = existing.iter().copied().take(bytes.len()).filter(|&t| reusable(t)).collect();
    let missing = bytes.len() - indices.len();
    if missing > 0 {
        // SAFETY: `context` is live.
        let add = unsafe { (*context).AddTensors }.ok_or_else(|| Error::new("the context cannot add tensors"))?;
        let mut first: core::ffi::c_int = -1;
        let n = core::ffi::c_int::try_from(missing).map_err(|_| Error::new("too many temporaries"))?;
        // SAFETY: `context` is live; no reference into the tensor table is held (contract).
        if unsafe { add(context, n, &mut first) } != TfLiteStatus::kTfLiteOk || first < 0 {
            return Err(Error::new("could not add temporary tensors"));
        }
        // SAFETY: AddTensors re-pointed `context->tensors`; read afresh.
        let ctx = unsafe { &*context };
        for k in 0..n {
            let idx = first.checked_add(k).ok_or_else(|| Error::new("tensor index overflow"))?;
            let i = idx as usize;
            if i >= ctx.tensors_size || ctx.tensors.is_null() {
                return Err(Error::new("AddTensors returned an index out of range"));
            }
            // SAFETY: a tensor just added to the live table, which nothing else references.
            let t = unsafe { &mut *ctx.tensors.add(i) };
            t.r#type = TfLiteType::kTfLiteUInt8;
            t.allocation_type = TfLiteAllocationType::kTfLiteArenaRw;
            indices.push(idx);
        }
    }
    let dropped = existing.iter().copied().filter(|t| !indices.contains(t) && reusable(*t));
    let sizes = indices.iter().copied().zip(bytes.iter().copied()).chain(dropped.map(|t| (t, 0)));
    for (idx, size) in sizes {
        // `request_temporaries` checked every size fits an i32.
        let dims = int_array_from_slice(&[size as i32]);
        if dims.is_null() {
            return Err(Error::new("out of memory allocating a shape"));
        }
        // SAFETY: `context` is live; `idx` is in range (added above or checked by
        // `reusable`); ResizeTensor takes ownership of `dims`.
        let status = unsafe {
            let ctx = &*context;
            let t = ctx.tensors.add(idx as usize);
            match ctx.ResizeTensor {
                Some(f) => f(context, t, dims),
                None => {
                    crate::abi::arrays::int_array_free(dims);
                    TfLiteStatus::kTfLiteError
                }
            }
        };
        if status != TfLiteStatus::kTfLiteOk {
            return Err(Error::new(format!("could not resize temporary tensor {idx}")));
        }
    }
    let arr = int_array_from_slice(&indices);
    if arr.is_null() {
        return Err(Error::new("out of memory allocating the temporaries array"));
    }
    // SAFETY: the node owns its malloc'ed temporaries array (or NULL), replaced here.
    unsafe {
        crate::abi::arrays::int_array_free((*node).temporaries);
        (*node).temporaries = arr;
    }
    Ok(())
}

/// The data address and byte size of tensor `idx` (`(0, 0)` when out of range).
fn data_range(context: *mut TfLiteContext, idx: i32) -> (usize, usize) {
    // SAFETY: `context` is the live context of the current kernel call (OpCtx contract).
    let ctx = unsafe { &*context };
    match usize::try_from(idx) {
        Ok(i) if i < ctx.tensors_size && !ctx.tensors.is_null() => {
            // SAFETY: index checked against the live tensor table.
            let t = unsafe { &*ctx.tensors.add(i) };
            (t.data_ptr() as usize, t.bytes)
        }
        _ => (0, 0),
    }
}

/// Delivers `message` through `context->ReportError` (stderr if the context has none).
///
/// # Safety
/// `context` must be NULL or a live context.
pub unsafe fn report_to_context(context: *mut TfLiteContext, message: &str) {
    let c = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
    if context.is_null() {
        return;
    }
    // SAFETY: `context` is a live runtime context; ReportError is called with a "%s"
    // format so the message is never interpreted as a format string.
    unsafe {
        match (*context).ReportError {
            Some(f) => f(context, c"%s".as_ptr(), c.as_ptr()),
            None => eprintln!("ERROR: {message}"),
        }
    }
}

/// Runs `step` for one kernel callback: a panic becomes an internal error, an error is
/// reported through the context (its message prefixed with `op`, the op's name, unless
/// it already starts with it), and after a successful Prepare the temporaries the step
/// requested are applied.
///
/// # Safety
/// `context` and `node` must be the live pointers the runtime passed to a kernel callback.
pub(crate) unsafe fn run_step_in(
    context: *mut TfLiteContext,
    node: *mut TfLiteNode,
    phase: Phase,
    op: Option<&str>,
    step: impl FnOnce(&OpCtx<'_>) -> Result<()>,
) -> TfLiteStatus {
    let result = crate::ffi::catch_panic(PANIC_PLACE, || {
        if context.is_null() || node.is_null() {
            return Err(Error::new("kernel called with a NULL context or node"));
        }
        let requested = {
            let ctx = OpCtx::with_phase(context, node, phase);
            step(&ctx)?;
            ctx.requested.into_inner()
        };
        // Every view the step took borrowed `ctx`, which is gone: the tensor table may move.
        match requested {
            // SAFETY: live context and node (function contract); no view of this call is alive.
            Some(bytes) => unsafe { apply_temporaries(context, node, &bytes) },
            None => Ok(()),
        }
    });
    let named = |message: &str| match op {
        Some(name) => with_op_name(name, message),
        None => message.to_string(),
    };
    match result {
        Ok(Ok(())) => TfLiteStatus::kTfLiteOk,
        Ok(Err(e)) => {
            // SAFETY: per the function contract.
            unsafe { report_to_context(context, &named(&e.message)) };
            e.status
        }
        Err(panic) => {
            // SAFETY: per the function contract.
            unsafe { report_to_context(context, &named(&panic)) };
            TfLiteStatus::kTfLiteError
        }
    }
}

/// Where a kernel's panic happened, for its report: "OP: internal error: kernel
/// panicked: <message>" (`crate::ffi::catch_panic` writes the rest).
pub(crate) const PANIC_PLACE: &str = "kernel";

/// `message` prefixed with `"{op}: "`, unless it already starts with the op's name.
pub(crate) fn with_op_name(op: &str, message: &str) -> String {
    if message.starts_with(op) { message.to_string() } else { format!("{op}: {message}") }
}

/// Broadcast-aware output shape of two inputs (numpy rules), or an error naming both.
pub fn broadcast_shape(a: &[i32], b: &[i32]) -> Result<Vec<i32>> {
    let n = a.len().max(b.len());
    let mut out = vec![0i32; n];
    for i in 0..n {
        let da = if i < n - a.len() { 1 } else { a[i - (n - a.len())] };
        let db = if i < n - b.len() { 1 } else { b[i - (n - b.len())] };
        out[i] = if da == db {
            da
        } else if da == 1 {
            db
        } else if db == 1 {
            da
        } else {
            return Err(Error::new(format!("shapes {a:?} and {b:?} cannot be broadcast")));
        };
    }
    Ok(out)
}
