//! `#[repr(C)]` mirrors of TFLite 2.19's `c_api_types.h` and `common.h`.
//!
//! Every size and offset here is a fact of TFLite's ABI (`../shared/design/ABI.md` §3);
//! `tests/layout.rs` and `c_tests/layout_test.c` prove them from both sides.
//!
//! These types live below `c_api` (not inside it, as ARCHITECTURE.md sketches) because
//! the interpreter itself is built on them: the tensor table *is* a `TfLiteTensor` array
//! that C kernels and delegates read directly, so the interpreter cannot avoid them.
//!
//! Enum-typed fields that C code may write (`TfLiteTensor::type_`, `allocation_type`,
//! `quantization.type_`) are read through the raw-integer accessors below, never as the
//! Rust enum, so an out-of-range value from C is an error rather than undefined behaviour.

use core::ffi::{c_char, c_int, c_void};

/// Status returned by most TFLite functions. New values may be added in the future;
/// callers must not assume the set is closed.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteStatus {
    /// Success.
    kTfLiteOk = 0,
    /// An error in the runtime (the interpreter).
    kTfLiteError = 1,
    /// An error from a delegate.
    kTfLiteDelegateError = 2,
    /// An error applying a delegate due to incompatibility.
    kTfLiteApplicationError = 3,
    /// Serialized delegate data not found.
    kTfLiteDelegateDataNotFound = 4,
    /// Serialized delegate data could not be written.
    kTfLiteDelegateDataWriteError = 5,
    /// Serialized delegate data could not be read.
    kTfLiteDelegateDataReadError = 6,
    /// The model contains ops that cannot be resolved at runtime.
    kTfLiteUnresolvedOps = 7,
    /// Invoke was cancelled by the user.
    kTfLiteCancelled = 8,
    /// The output shape is not known before Invoke.
    kTfLiteOutputShapeNotKnown = 9,
}

/// Element types of tensors.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TfLiteType {
    kTfLiteNoType = 0,
    kTfLiteFloat32 = 1,
    kTfLiteInt32 = 2,
    kTfLiteUInt8 = 3,
    kTfLiteInt64 = 4,
    kTfLiteString = 5,
    kTfLiteBool = 6,
    kTfLiteInt16 = 7,
    kTfLiteComplex64 = 8,
    kTfLiteInt8 = 9,
    kTfLiteFloat16 = 10,
    kTfLiteFloat64 = 11,
    kTfLiteComplex128 = 12,
    kTfLiteUInt64 = 13,
    kTfLiteResource = 14,
    kTfLiteVariant = 15,
    kTfLiteUInt32 = 16,
    kTfLiteUInt16 = 17,
    kTfLiteInt4 = 18,
    kTfLiteBFloat16 = 19,
    kTfLiteInt2 = 20,
    kTfLiteUInt4 = 21,
    kTfLiteFloat8E4M3FN = 22,
    kTfLiteFloat8E5M2 = 23,
}

impl TfLiteType {
    /// Converts a raw integer (as C may have written it) into a type, if it is one.
    pub fn from_raw(v: c_int) -> Option<TfLiteType> {
        use TfLiteType::*;
        const ALL: [TfLiteType; 24] = [
            kTfLiteNoType,
            kTfLiteFloat32,
            kTfLiteInt32,
            kTfLiteUInt8,
            kTfLiteInt64,
            kTfLiteString,
            kTfLiteBool,
            kTfLiteInt16,
            kTfLiteComplex64,
            kTfLiteInt8,
            kTfLiteFloat16,
            kTfLiteFloat64,
            kTfLiteComplex128,
            kTfLiteUInt64,
            kTfLiteResource,
            kTfLiteVariant,
            kTfLiteUInt32,
            kTfLiteUInt16,
            kTfLiteInt4,
            kTfLiteBFloat16,
            kTfLiteInt2,
            kTfLiteUInt4,
            kTfLiteFloat8E4M3FN,
            kTfLiteFloat8E5M2,
        ];
        usize::try_from(v).ok().and_then(|i| ALL.get(i).copied())
    }

    /// Bytes per element, or `None` for types without a fixed element size
    /// (strings, resources, variants, sub-byte types) — as TFLite's `GetSizeOfType`.
    pub fn element_size(self) -> Option<usize> {
        use TfLiteType::*;
        Some(match self {
            kTfLiteFloat32 | kTfLiteInt32 | kTfLiteUInt32 => 4,
            kTfLiteUInt8 | kTfLiteInt8 | kTfLiteBool => 1,
            kTfLiteInt64 | kTfLiteUInt64 | kTfLiteFloat64 | kTfLiteComplex64 => 8,
            kTfLiteInt16 | kTfLiteUInt16 | kTfLiteFloat16 | kTfLiteBFloat16 => 2,
            kTfLiteComplex128 => 16,
            kTfLiteFloat8E4M3FN | kTfLiteFloat8E5M2 => 1,
            _ => return None,
        })
    }

    /// TFLite's name for the type, as `TfLiteTypeGetName` returns it.
    pub fn name(self) -> &'static str {
        use TfLiteType::*;
        match self {
            kTfLiteNoType => "NOTYPE",
            kTfLiteFloat32 => "FLOAT32",
            kTfLiteInt32 => "INT32",
            kTfLiteUInt8 => "UINT8",
            kTfLiteInt64 => "INT64",
            kTfLiteString => "STRING",
            kTfLiteBool => "BOOL",
            kTfLiteInt16 => "INT16",
            kTfLiteComplex64 => "COMPLEX64",
            kTfLiteInt8 => "INT8",
            kTfLiteFloat16 => "FLOAT16",
            kTfLiteFloat64 => "FLOAT64",
            kTfLiteComplex128 => "COMPLEX128",
            kTfLiteUInt64 => "UINT64",
            kTfLiteResource => "RESOURCE",
            kTfLiteVariant => "VARIANT",
            kTfLiteUInt32 => "UINT32",
            kTfLiteUInt16 => "UINT16",
            kTfLiteInt4 => "INT4",
            kTfLiteBFloat16 => "BFLOAT16",
            kTfLiteInt2 => "INT2",
            kTfLiteUInt4 => "UINT4",
            kTfLiteFloat8E4M3FN => "FLOAT8E4M3FN",
            kTfLiteFloat8E5M2 => "FLOAT8E5M2",
        }
    }
}

/// Memory allocation strategies of a tensor.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteAllocationType {
    kTfLiteMemNone = 0,
    kTfLiteMmapRo = 1,
    kTfLiteArenaRw = 2,
    kTfLiteArenaRwPersistent = 3,
    kTfLiteDynamic = 4,
    kTfLitePersistentRo = 5,
    kTfLiteCustom = 6,
    kTfLiteVariantObject = 7,
    kTfLiteNonCpu = 8,
}

impl TfLiteAllocationType {
    /// Converts a raw integer (as C may have written it) into an allocation type.
    pub fn from_raw(v: c_int) -> Option<Self> {
        use TfLiteAllocationType::*;
        const ALL: [TfLiteAllocationType; 9] = [
            kTfLiteMemNone,
            kTfLiteMmapRo,
            kTfLiteArenaRw,
            kTfLiteArenaRwPersistent,
            kTfLiteDynamic,
            kTfLitePersistentRo,
            kTfLiteCustom,
            kTfLiteVariantObject,
            kTfLiteNonCpu,
        ];
        usize::try_from(v).ok().and_then(|i| ALL.get(i).copied())
    }
}

/// How the memory of a tensor is managed (derived from its allocation type).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteAllocationStrategy {
    kTfLiteAllocationStrategyUnknown = 0,
    kTfLiteAllocationStrategyNone = 1,
    kTfLiteAllocationStrategyMMap = 2,
    kTfLiteAllocationStrategyArena = 3,
    kTfLiteAllocationStrategyMalloc = 4,
    kTfLiteAllocationStrategyNew = 5,
}

/// How stable a tensor property is across runs.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteRunStability {
    kTfLiteRunStabilityUnknown = 0,
    kTfLiteRunStabilityUnstable = 1,
    kTfLiteRunStabilitySingleRun = 2,
    kTfLiteRunStabilityAcrossRuns = 3,
}

/// The step of a run at which a tensor property becomes known.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteRunStep {
    kTfLiteRunStepUnknown = 0,
    kTfLiteRunStepInit = 1,
    kTfLiteRunStepPrepare = 2,
    kTfLiteRunStepEval = 3,
}

/// Quantization schemes of a tensor.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteQuantizationType {
    /// No quantization.
    kTfLiteNoQuantization = 0,
    /// Affine quantization (`params` points to a `TfLiteAffineQuantization`).
    kTfLiteAffineQuantization = 1,
    /// Blockwise quantization.
    kTfLiteBlockwiseQuantization = 2,
}

/// Kinds of external contexts.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteExternalContextType {
    kTfLiteEigenContext = 0,
    kTfLiteGemmLowpContext = 1,
    kTfLiteEdgeTpuContext = 2,
    kTfLiteCpuBackendContext = 3,
    kTfLiteLiteRtBufferContext = 4,
    kTfLiteMaxExternalContexts = 5,
}

impl TfLiteExternalContextType {
    /// Converts a raw integer from C into a context type, if it names one that can be
    /// stored (`kTfLiteMaxExternalContexts` is a count, not a type).
    pub fn from_raw(v: c_int) -> Option<Self> {
        use TfLiteExternalContextType::*;
        const ALL: [TfLiteExternalContextType; 5] = [
            kTfLiteEigenContext,
            kTfLiteGemmLowpContext,
            kTfLiteEdgeTpuContext,
            kTfLiteCpuBackendContext,
            kTfLiteLiteRtBufferContext,
        ];
        usize::try_from(v).ok().and_then(|i| ALL.get(i).copied())
    }
}

/// Storage format of a sparse tensor dimension.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteDimensionType {
    kTfLiteDimDense = 0,
    kTfLiteDimSparseCSR = 1,
}

/// Flags of a delegate (`TfLiteDelegate::flags`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteDelegateFlags {
    kTfLiteDelegateFlagsNone = 0,
    kTfLiteDelegateFlagsAllowDynamicTensors = 1,
    kTfLiteDelegateFlagsRequirePropagatedShapes = 2,
    kTfLiteDelegateFlagsPerOperatorProfiling = 4,
    kTfLiteDelegateFlagsHintFullyDelegatedToSingleDelegate = 8,
}

/// Flags for `TfLiteInterpreterSetCustomAllocationForTensor`.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteCustomAllocationFlags {
    kTfLiteCustomAllocationFlagsNone = 0,
    kTfLiteCustomAllocationFlagsSkipAlignCheck = 1,
}

/// A handle to a buffer owned by a delegate.
pub type TfLiteBufferHandle = c_int;

// Enum values as C passes them into our functions and callbacks. A Rust enum parameter
// would make an out-of-range value from C undefined behaviour; these take any integer,
// and each enum's `from_raw` rejects the values it does not know. The C header shows the
// enum's name (cbindgen renames them), so the C signatures are TFLite's.
/// A `TfLiteType` from C (checked with `TfLiteType::from_raw`).
pub type RawTfLiteType = c_int;
/// A `TfLiteAllocationType` from C (checked with `TfLiteAllocationType::from_raw`).
pub type RawTfLiteAllocationType = c_int;
/// A `TfLiteExternalContextType` from C (checked with `TfLiteExternalContextType::from_raw`).
pub type RawTfLiteExternalContextType = c_int;
/// A `TfLiteBuiltinOperator` from C (checked with `TfLiteBuiltinOperator::from_raw`).
pub type RawTfLiteBuiltinOperator = c_int;
/// The value of a buffer handle that refers to no buffer.
pub const kTfLiteNullBufferHandle: TfLiteBufferHandle = -1;
/// An optional input that is absent is written as this tensor index.
pub const kTfLiteOptionalTensor: c_int = -1;

/// In-place operator bits for `TfLiteRegistration::inplace_operator`.
pub const kTfLiteInplaceOpNone: u64 = 0;
pub const kTfLiteInplaceOpDataUnmodified: u64 = 1;
pub const kTfLiteInplaceInputCanBeSharedWithCorrespondingOutput: u64 = 2;
pub const kTfLiteInplaceOpInput0Shared: u64 = 4;
pub const kTfLiteInplaceOpInput1Shared: u64 = 8;
pub const kTfLiteInplaceOpInput2Shared: u64 = 16;

/// A fixed-size array of ints with a flexible array member (`int data[]` in C).
#[repr(C)]
pub struct TfLiteIntArray {
    pub size: c_int,
    /// The elements; the real length is `size`.
    pub data: [c_int; 0],
}

/// A fixed-size array of floats with a flexible array member (`float data[]` in C).
#[repr(C)]
pub struct TfLiteFloatArray {
    pub size: c_int,
    /// The elements; the real length is `size`.
    pub data: [f32; 0],
}

/// Single-scale quantization parameters (legacy; `TfLiteTensor::params`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct TfLiteQuantizationParams {
    pub scale: f32,
    pub zero_point: i32,
}

/// Quantization of a tensor: a type tag and a pointer to the type's parameters.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct TfLiteQuantization {
    pub r#type: TfLiteQuantizationType,
    pub params: *mut c_void,
}

/// Affine (per-tensor or per-channel) quantization parameters.
#[repr(C)]
#[derive(Debug)]
pub struct TfLiteAffineQuantization {
    pub scale: *mut TfLiteFloatArray,
    pub zero_point: *mut TfLiteIntArray,
    pub quantized_dimension: i32,
}

/// A union of pointers to the data of a tensor. Use `data` (or `raw`).
#[repr(C)]
#[derive(Copy, Clone)]
pub union TfLitePtrUnion {
    pub i32: *mut i32,
    pub u32: *mut u32,
    pub i64: *mut i64,
    pub u64: *mut u64,
    pub f: *mut f32,
    pub f16: *mut TfLiteFloat16,
    pub bf16: *mut TfLiteBFloat16,
    pub f64: *mut f64,
    pub raw: *mut c_char,
    pub raw_const: *const c_char,
    pub uint8: *mut u8,
    pub b: *mut bool,
    pub i16: *mut i16,
    pub ui16: *mut u16,
    pub c64: *mut TfLiteComplex64,
    pub c128: *mut TfLiteComplex128,
    pub int8: *mut i8,
    /// The field to use.
    pub data: *mut c_void,
}

/// Half-precision float, stored as raw bits.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct TfLiteFloat16 {
    pub data: u16,
}

/// bfloat16, stored as raw bits.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct TfLiteBFloat16 {
    pub data: u16,
}

/// Single-precision complex number.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct TfLiteComplex64 {
    pub re: f32,
    pub im: f32,
}

/// Double-precision complex number.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default)]
pub struct TfLiteComplex128 {
    pub re: f64,
    pub im: f64,
}

/// Metadata of one dimension of a sparse tensor.
#[repr(C)]
pub struct TfLiteDimensionMetadata {
    pub format: TfLiteDimensionType,
    pub dense_size: c_int,
    pub array_segments: *mut TfLiteIntArray,
    pub array_indices: *mut TfLiteIntArray,
}

/// Sparsity parameters of a sparse tensor.
#[repr(C)]
pub struct TfLiteSparsity {
    pub traversal_order: *mut TfLiteIntArray,
    pub block_map: *mut TfLiteIntArray,
    pub dim_metadata: *mut TfLiteDimensionMetadata,
    pub dim_metadata_size: c_int,
}

/// Memory supplied by the application for a tensor
/// (`TfLiteInterpreterSetCustomAllocationForTensor`).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct TfLiteCustomAllocation {
    pub data: *mut c_void,
    pub bytes: usize,
}

/// A tensor: 112 bytes, laid out exactly as TFLite's default (non-static-memory) build.
#[repr(C)]
pub struct TfLiteTensor {
    /// The element type (read with `TfLiteTensor::data_type`, never directly: C may write it).
    pub r#type: TfLiteType,
    /// Pointer to the data; its interpretation depends on `type_`.
    pub data: TfLitePtrUnion,
    /// The shape. Owned by the tensor (allocated with malloc).
    pub dims: *mut TfLiteIntArray,
    /// Legacy single-scale quantization parameters.
    pub params: TfLiteQuantizationParams,
    /// How `data` is allocated.
    pub allocation_type: TfLiteAllocationType,
    /// Size of `data` in bytes.
    pub bytes: usize,
    /// Opaque allocation this tensor's data lives in (for mmapped constants).
    pub allocation: *const c_void,
    /// Name of the tensor (NUL-terminated), or NULL.
    pub name: *const c_char,
    /// The delegate that owns `buffer_handle`, if any.
    pub delegate: *mut TfLiteDelegate,
    /// A delegate's buffer handle, or `kTfLiteNullBufferHandle`.
    pub buffer_handle: TfLiteBufferHandle,
    /// True if `data` is stale and must be copied from `buffer_handle` before reading.
    pub data_is_stale: bool,
    /// True for variable (stateful) tensors.
    pub is_variable: bool,
    /// Full quantization parameters.
    pub quantization: TfLiteQuantization,
    /// Sparsity parameters, or NULL for dense tensors.
    pub sparsity: *mut TfLiteSparsity,
    /// The shape signature (-1 for unknown dimensions), or NULL.
    pub dims_signature: *const TfLiteIntArray,
}

/// Evaluation-time tensor view (TFLite Micro); mirrored for header completeness.
#[repr(C)]
pub struct TfLiteEvalTensor {
    pub data: TfLitePtrUnion,
    pub dims: *mut TfLiteIntArray,
    pub r#type: TfLiteType,
}

/// A node of the graph: 80 bytes.
#[repr(C)]
pub struct TfLiteNode {
    /// Indices of the input tensors (-1 for absent optional inputs).
    pub inputs: *mut TfLiteIntArray,
    /// Indices of the output tensors.
    pub outputs: *mut TfLiteIntArray,
    /// Indices of intermediate tensors.
    pub intermediates: *mut TfLiteIntArray,
    /// Indices of temporary tensors the kernel asked for.
    pub temporaries: *mut TfLiteIntArray,
    /// What the kernel's `init` returned.
    pub user_data: *mut c_void,
    /// The parsed builtin options (a `TfLite*Params` struct), or NULL.
    pub builtin_data: *mut c_void,
    /// The custom options of a custom op, or NULL.
    pub custom_initial_data: *const c_void,
    /// Size of `custom_initial_data` in bytes.
    pub custom_initial_data_size: c_int,
    /// The delegate that owns this node (for delegate kernel nodes), or NULL.
    pub delegate: *mut TfLiteDelegate,
    /// True if the node may have side effects (it is never pruned).
    pub might_have_side_effect: bool,
}

/// An external context (for example a thread pool) shared between kernels.
#[repr(C)]
pub struct TfLiteExternalContext {
    pub r#type: TfLiteExternalContextType,
    pub Refresh: Option<unsafe extern "C" fn(context: *mut TfLiteContext) -> TfLiteStatus>,
}

/// Stand-in for C's `va_list`: on x86-64 System V (and AArch64 Linux when passed as a
/// function argument) a `va_list` argument is passed as a pointer. The header takes the
/// real `va_list` from `<stdarg.h>`; cbindgen does not emit this alias.
pub type va_list = *mut c_void;

/// The interpreter's context as kernels and delegates see it: 200 bytes.
#[repr(C)]
pub struct TfLiteContext {
    /// Number of tensors in `tensors`.
    pub tensors_size: usize,
    /// Returns the execution plan (delegate Prepare only).
    pub GetExecutionPlan: Option<
        unsafe extern "C" fn(context: *mut TfLiteContext, execution_plan: *mut *mut TfLiteIntArray) -> TfLiteStatus,
    >,
    /// The tensor table. Re-pointed when tensors are added: do not cache it.
    pub tensors: *mut TfLiteTensor,
    /// The runtime's private data.
    pub impl_: *mut c_void,
    /// Resizes `tensor` to `new_size`, taking ownership of `new_size`.
    pub ResizeTensor: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteContext,
            tensor: *mut TfLiteTensor,
            new_size: *mut TfLiteIntArray,
        ) -> TfLiteStatus,
    >,
    /// Reports an error (printf-style, C varargs).
    pub ReportError: Option<unsafe extern "C" fn(context: *mut TfLiteContext, msg: *const c_char, ...)>,
    /// Adds tensors to the end of the table.
    pub AddTensors: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteContext,
            tensors_to_add: c_int,
            first_new_tensor_index: *mut c_int,
        ) -> TfLiteStatus,
    >,
    /// Gets a node and its registration (delegate Prepare only).
    pub GetNodeAndRegistration: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteContext,
            node_index: c_int,
            node: *mut *mut TfLiteNode,
            registration: *mut *mut TfLiteRegistration,
        ) -> TfLiteStatus,
    >,
    /// Replaces subsets of nodes with delegate kernels (delegate Prepare only).
    pub ReplaceNodeSubsetsWithDelegateKernels: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteContext,
            registration: TfLiteRegistration,
            nodes_to_replace: *const TfLiteIntArray,
            delegate: *mut TfLiteDelegate,
        ) -> TfLiteStatus,
    >,
    /// Number of threads kernels are recommended to use (-1: unset).
    pub recommended_num_threads: c_int,
    /// Gets an external context of the given type, or NULL.
    pub GetExternalContext: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteContext,
            type_: RawTfLiteExternalContextType,
        ) -> *mut TfLiteExternalContext,
    >,
    /// Sets an external context of the given type.
    pub SetExternalContext: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteContext,
            type_: RawTfLiteExternalContextType,
            ctx: *mut TfLiteExternalContext,
        ),
    >,
    /// Whether fp32 may be computed in fp16.
    pub allow_fp32_relax_to_fp16: bool,
    /// The profiler, or NULL.
    pub profiler: *mut c_void,
    /// TFLite Micro only; NULL here.
    pub AllocatePersistentBuffer: Option<unsafe extern "C" fn(ctx: *mut TfLiteContext, bytes: usize) -> *mut c_void>,
    /// Deprecated (TFLite Micro); NULL here.
    pub AllocateBufferForEval:
        Option<unsafe extern "C" fn(ctx: *mut TfLiteContext, bytes: usize, ptr: *mut *mut c_void) -> TfLiteStatus>,
    /// TFLite Micro only; NULL here.
    pub RequestScratchBufferInArena:
        Option<unsafe extern "C" fn(ctx: *mut TfLiteContext, bytes: usize, buffer_idx: *mut c_int) -> TfLiteStatus>,
    /// TFLite Micro only; NULL here.
    pub GetScratchBuffer: Option<unsafe extern "C" fn(ctx: *mut TfLiteContext, buffer_idx: c_int) -> *mut c_void>,
    /// TFLite Micro only; NULL here.
    pub ResizeTensorExplicit: Option<
        unsafe extern "C" fn(
            ctx: *mut TfLiteContext,
            tensor: *mut TfLiteTensor,
            dims: c_int,
            shape: *const c_int,
        ) -> TfLiteStatus,
    >,
    /// Previews how nodes would be partitioned (delegate Prepare only).
    pub PreviewDelegatePartitioning: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteContext,
            nodes_to_replace: *const TfLiteIntArray,
            partition_params_array: *mut *mut TfLiteDelegateParams,
            num_partitions: *mut c_int,
        ) -> TfLiteStatus,
    >,
    /// TFLite Micro only; NULL here.
    pub GetTensor: Option<unsafe extern "C" fn(context: *const TfLiteContext, tensor_idx: c_int) -> *mut TfLiteTensor>,
    /// TFLite Micro only; NULL here.
    pub GetEvalTensor:
        Option<unsafe extern "C" fn(context: *const TfLiteContext, tensor_idx: c_int) -> *mut TfLiteEvalTensor>,
    /// Looks up model metadata by name.
    pub GetModelMetadata: Option<
        unsafe extern "C" fn(
            context: *const TfLiteContext,
            name: *const c_char,
            ptr: *mut *const c_char,
            bytes: *mut usize,
        ) -> TfLiteStatus,
    >,
    /// Gets the context of another subgraph (delegate Prepare only).
    pub AcquireSubgraphContext: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteContext,
            subgraph_index: c_int,
            acquired_context: *mut *mut TfLiteContext,
        ) -> TfLiteStatus,
    >,
    /// Releases a context acquired with `AcquireSubgraphContext`.
    pub ReleaseSubgraphContext:
        Option<unsafe extern "C" fn(context: *mut TfLiteContext, subgraph_index: c_int) -> TfLiteStatus>,
}

/// An operator implementation: 88 bytes.
#[repr(C)]
#[derive(Copy, Clone)]
pub struct TfLiteRegistration {
    /// Creates per-node state from the builtin params or custom options.
    pub init:
        Option<unsafe extern "C" fn(context: *mut TfLiteContext, buffer: *const c_char, length: usize) -> *mut c_void>,
    /// Frees what `init` returned.
    pub free: Option<unsafe extern "C" fn(context: *mut TfLiteContext, buffer: *mut c_void)>,
    /// Checks inputs and resizes outputs; called when shapes change.
    pub prepare: Option<unsafe extern "C" fn(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus>,
    /// Computes the outputs.
    pub invoke: Option<unsafe extern "C" fn(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus>,
    /// Returns a string for profiling, or NULL.
    pub profiling_string:
        Option<unsafe extern "C" fn(context: *const TfLiteContext, node: *const TfLiteNode) -> *const c_char>,
    /// The builtin operator code (`kTfLiteBuiltinCustom` for custom ops).
    pub builtin_code: i32,
    /// The custom op name, or NULL.
    pub custom_name: *const c_char,
    /// The operator version.
    pub version: c_int,
    /// The `TfLiteOperator` this registration came from, or NULL.
    pub registration_external: *mut TfLiteOperator,
    /// Returns the async kernel, or NULL.
    pub async_kernel:
        Option<unsafe extern "C" fn(context: *mut TfLiteContext, node: *mut TfLiteNode) -> *mut TfLiteAsyncKernel>,
    /// Bitmask of `TfLiteInPlaceOp` values.
    pub inplace_operator: u64,
}

/// The first 8 fields of `TfLiteRegistration` (legacy, 64 bytes).
#[repr(C)]
#[derive(Copy, Clone)]
pub struct TfLiteRegistration_V1 {
    pub init:
        Option<unsafe extern "C" fn(context: *mut TfLiteContext, buffer: *const c_char, length: usize) -> *mut c_void>,
    pub free: Option<unsafe extern "C" fn(context: *mut TfLiteContext, buffer: *mut c_void)>,
    pub prepare: Option<unsafe extern "C" fn(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus>,
    pub invoke: Option<unsafe extern "C" fn(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus>,
    pub profiling_string:
        Option<unsafe extern "C" fn(context: *const TfLiteContext, node: *const TfLiteNode) -> *const c_char>,
    pub builtin_code: i32,
    pub custom_name: *const c_char,
    pub version: c_int,
}

/// An asynchronous kernel (opaque here).
#[repr(C)]
pub struct TfLiteAsyncKernel {
    _private: [u8; 0],
}

/// An operator defined through the `TfLiteOperator*` functions (operator.h).
/// Opaque to C; defined in `crate::abi::operator`.
pub use super::operator::TfLiteOperator;

/// A delegate: 56 bytes.
#[repr(C)]
pub struct TfLiteDelegate {
    /// Data the delegate implementation owns.
    pub data_: *mut c_void,
    /// Called once when the delegate is applied: claims nodes with
    /// `ReplaceNodeSubsetsWithDelegateKernels`.
    pub Prepare:
        Option<unsafe extern "C" fn(context: *mut TfLiteContext, delegate: *mut TfLiteDelegate) -> TfLiteStatus>,
    /// Copies a delegate buffer into `tensor->data`.
    pub CopyFromBufferHandle: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteContext,
            delegate: *mut TfLiteDelegate,
            buffer_handle: TfLiteBufferHandle,
            tensor: *mut TfLiteTensor,
        ) -> TfLiteStatus,
    >,
    /// Copies `tensor->data` into a delegate buffer.
    pub CopyToBufferHandle: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteContext,
            delegate: *mut TfLiteDelegate,
            buffer_handle: TfLiteBufferHandle,
            tensor: *mut TfLiteTensor,
        ) -> TfLiteStatus,
    >,
    /// Frees a delegate buffer; sets `*handle` to `kTfLiteNullBufferHandle`.
    pub FreeBufferHandle: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteContext,
            delegate: *mut TfLiteDelegate,
            handle: *mut TfLiteBufferHandle,
        ),
    >,
    /// Bitmask of `TfLiteDelegateFlags`.
    pub flags: i64,
    /// Non-NULL for delegates made with `TfLiteOpaqueDelegateCreate`.
    pub opaque_delegate_builder: *mut TfLiteOpaqueDelegateBuilder,
}

/// An opaque delegate is a `TfLiteDelegate` in the default build.
pub type TfLiteOpaqueDelegate = TfLiteDelegate;

/// The context as the opaque API sees it; a `TfLiteContext*` underneath, as in TFLite.
#[repr(C)]
pub struct TfLiteOpaqueContext {
    _private: [u8; 0],
}

/// A node as the opaque API sees it; a `TfLiteNode*` underneath.
#[repr(C)]
pub struct TfLiteOpaqueNode {
    _private: [u8; 0],
}

/// A tensor as the opaque API sees it; a `TfLiteTensor*` underneath.
#[repr(C)]
pub struct TfLiteOpaqueTensor {
    _private: [u8; 0],
}

/// Callbacks of a delegate built with the opaque API: 48 bytes.
#[repr(C)]
pub struct TfLiteOpaqueDelegateBuilder {
    /// Passed back to every callback.
    pub data: *mut c_void,
    pub Prepare: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteOpaqueContext,
            delegate: *mut TfLiteOpaqueDelegate,
            data: *mut c_void,
        ) -> TfLiteStatus,
    >,
    pub CopyFromBufferHandle: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteOpaqueContext,
            delegate: *mut TfLiteOpaqueDelegate,
            data: *mut c_void,
            buffer_handle: TfLiteBufferHandle,
            tensor: *mut TfLiteOpaqueTensor,
        ) -> TfLiteStatus,
    >,
    pub CopyToBufferHandle: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteOpaqueContext,
            delegate: *mut TfLiteOpaqueDelegate,
            data: *mut c_void,
            buffer_handle: TfLiteBufferHandle,
            tensor: *mut TfLiteOpaqueTensor,
        ) -> TfLiteStatus,
    >,
    pub FreeBufferHandle: Option<
        unsafe extern "C" fn(
            context: *mut TfLiteOpaqueContext,
            delegate: *mut TfLiteOpaqueDelegate,
            data: *mut c_void,
            handle: *mut TfLiteBufferHandle,
        ),
    >,
    pub flags: i64,
}

/// What a delegate kernel's `init` receives as `buffer`: 32 bytes.
#[repr(C)]
pub struct TfLiteDelegateParams {
    pub delegate: *mut TfLiteDelegate,
    pub nodes_to_replace: *mut TfLiteIntArray,
    pub input_tensors: *mut TfLiteIntArray,
    pub output_tensors: *mut TfLiteIntArray,
}

/// What an opaque delegate kernel's `init` receives as `buffer`: 40 bytes.
#[repr(C)]
pub struct TfLiteOpaqueDelegateParams {
    pub delegate: *mut TfLiteOpaqueDelegate,
    pub delegate_data: *mut c_void,
    pub nodes_to_replace: *mut TfLiteIntArray,
    pub input_tensors: *mut TfLiteIntArray,
    pub output_tensors: *mut TfLiteIntArray,
}

impl TfLiteTensor {
    /// A tensor with every field empty (no type, no data, no shape).
    pub fn empty() -> TfLiteTensor {
        TfLiteTensor {
            r#type: TfLiteType::kTfLiteNoType,
            data: TfLitePtrUnion { data: core::ptr::null_mut() },
            dims: core::ptr::null_mut(),
            params: TfLiteQuantizationParams::default(),
            allocation_type: TfLiteAllocationType::kTfLiteMemNone,
            bytes: 0,
            allocation: core::ptr::null(),
            name: core::ptr::null(),
            delegate: core::ptr::null_mut(),
            buffer_handle: kTfLiteNullBufferHandle,
            data_is_stale: false,
            is_variable: false,
            quantization: TfLiteQuantization {
                r#type: TfLiteQuantizationType::kTfLiteNoQuantization,
                params: core::ptr::null_mut(),
            },
            sparsity: core::ptr::null_mut(),
            dims_signature: core::ptr::null(),
        }
    }

    /// The element type, read as a raw integer because C code may have written any value.
    pub fn data_type(&self) -> Option<TfLiteType> {
        // SAFETY: `type_` is a 4-byte C enum; reading its bytes as `c_int` is always valid,
        // and `from_raw` maps out-of-range values to `None`.
        let raw = unsafe { core::ptr::addr_of!(self.r#type).cast::<c_int>().read() };
        TfLiteType::from_raw(raw)
    }

    /// The allocation type, read as a raw integer (see `data_type`).
    pub fn allocation(&self) -> Option<TfLiteAllocationType> {
        // SAFETY: as in `data_type`.
        let raw = unsafe { core::ptr::addr_of!(self.allocation_type).cast::<c_int>().read() };
        TfLiteAllocationType::from_raw(raw)
    }

    /// The quantization type as a raw integer (see `data_type`).
    pub fn quantization_type_raw(&self) -> c_int {
        // SAFETY: as in `data_type`.
        unsafe { core::ptr::addr_of!(self.quantization.r#type).cast::<c_int>().read() }
    }

    /// Raw data pointer.
    pub fn data_ptr(&self) -> *mut c_void {
        // SAFETY: every member of the union is a thin pointer; reading any as `data` is valid.
        unsafe { self.data.data }
    }
}

impl TfLiteRegistration {
    /// A registration with every callback NULL.
    pub const fn empty() -> TfLiteRegistration {
        TfLiteRegistration {
            init: None,
            free: None,
            prepare: None,
            invoke: None,
            profiling_string: None,
            builtin_code: 0,
            custom_name: core::ptr::null(),
            version: 0,
            registration_external: core::ptr::null_mut(),
            async_kernel: None,
            inplace_operator: 0,
        }
    }
}
