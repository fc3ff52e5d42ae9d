//! The builtin kernel framework: what every op implements, and the `extern "C"`
//! trampolines that turn it into a `TfLiteRegistration`.
//!
//! A kernel names its builtin options struct (`Params`, read from `builtin_data` by one
//! checked cast at Prepare) and its per-node state (`State`, TFLite's `OpData`): Prepare
//! builds the state from shapes, options and constant tensors, and Invoke only runs it.
//! The trampolines own the state: `init` allocates an empty slot in the node's
//! `user_data`, `prepare` fills it (replacing what an earlier Prepare built), `invoke`
//! hands it back, and `free` drops it. Every error a kernel returns reaches the error
//! reporter prefixed with the op's name, and a panic becomes an internal error of that op
//! instead of unwinding into C.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteContext, TfLiteNode, TfLiteRegistration, TfLiteStatus};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, PANIC_PLACE, Phase, run_step_in};
use core::ffi::{c_char, c_void};

/// A builtin op's kernel.
pub trait BuiltinKernel: 'static {
    /// TFLite's name of the op (`"CONV_2D"`); every error the kernel reports starts with it.
    const NAME: &'static str;
    /// The builtin options (`()` for ops without; `Option<P>` where they are optional).
    type Params: Params;
    /// What Prepare derives once for the node and Invoke uses (TFLite's `OpData`).
    type State: 'static;

    /// Checks the node, sets its outputs' types and shapes, requests temporaries, and
    /// computes everything that depends only on shapes, options and constant tensors.
    fn prepare(ctx: &OpCtx<'_>, params: &Self::Params) -> Result<Self::State>;

    /// Computes the outputs with what Prepare built. `state` is the node's own: a node is
    /// never invoked twice at once.
    fn invoke(ctx: &OpCtx<'_>, params: &Self::Params, state: &mut Self::State) -> Result<()>;
}

/// A builtin options struct that the model parser stores as a node's `builtin_data`.
///
/// # Safety
/// Implement only for the `#[repr(C)]` struct the parser allocates for every node of the
/// ops whose kernels name it as their `Params`: the framework reads `builtin_data` as it.
pub unsafe trait BuiltinParams: Copy + 'static {}

/// How a kernel's `Params` are read from its node at Prepare.
pub trait Params: Sized + 'static {
    /// Reads the node's options; an error names what is missing.
    fn read(ctx: &OpCtx<'_>) -> Result<Self>;
}

impl Params for () {
    fn read(_: &OpCtx<'_>) -> Result<()> {
        Ok(())
    }
}

impl<P: BuiltinParams> Params for P {
    fn read(ctx: &OpCtx<'_>) -> Result<P> {
        // SAFETY: `P: BuiltinParams` is the struct the parser allocates for this op's nodes
        // (the trait's contract), and this kernel is registered only for those ops.
        unsafe { ctx.builtin_data::<P>() }.copied().ok_or_else(|| Error::new("node has no builtin params"))
    }
}

impl<P: BuiltinParams> Params for Option<P> {
    fn read(ctx: &OpCtx<'_>) -> Result<Option<P>> {
        // SAFETY: as for `P`.
        Ok(unsafe { ctx.builtin_data::<P>() }.copied())
    }
}

/// The registration of kernel `K` for builtin operator `code`.
pub fn registration<K: BuiltinKernel>(code: TfLiteBuiltinOperator) -> TfLiteRegistration {
    TfLiteRegistration {
        init: Some(init::<K>),
        free: Some(free::<K>),
        prepare: Some(prepare::<K>),
        invoke: Some(invoke::<K>),
        builtin_code: code as i32,
        ..TfLiteRegistration::empty()
    }
}

/// What `init` leaves in a node's `user_data`.
struct Slot<K: BuiltinKernel> {
    /// Params and state of the last successful Prepare; `None` before it, after a failed
    /// one, and after a kernel panicked (its state may be half-updated).
    prepared: Option<(K::Params, K::State)>,
    /// Set while Invoke runs, so a re-entrant call is an error, not aliased state.
    busy: bool,
}

unsafe extern "C" fn init<K: BuiltinKernel>(
    _context: *mut TfLiteContext,
    _buffer: *const c_char,
    _length: usize,
) -> *mut c_void {
    Box::into_raw(Box::new(Slot::<K> { prepared: None, busy: false })).cast()
}

unsafe extern "C" fn free<K: BuiltinKernel>(_context: *mut TfLiteContext, buffer: *mut c_void) {
    if !buffer.is_null() {
        // SAFETY: the runtime passes back what `init::<K>` returned for this node, once.
        drop(unsafe { Box::from_raw(buffer.cast::<Slot<K>>()) });
    }
}

/// The node's slot, or an error if `init` did not run for it.
///
/// # Safety
/// `node` must be NULL or a live node whose `user_data` is NULL or came from `init::<K>`;
/// nothing else may reference the slot while the returned borrow lives.
unsafe fn slot<'a, K: BuiltinKernel>(node: *mut TfLiteNode) -> Result<&'a mut Slot<K>> {
    if node.is_null() {
        return Err(Error::new("kernel called with a NULL node"));
    }
    // SAFETY: `node` is live (contract); its `user_data` is NULL or a live `Slot<K>` that
    // only this kernel call touches (contract).
    unsafe { (*node).user_data.cast::<Slot<K>>().as_mut() }
        .ok_or_else(|| Error::new("node was not initialised (its registration's init did not run)"))
}

unsafe extern "C" fn prepare<K: BuiltinKernel>(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus {
    let step = |ctx: &OpCtx<'_>| {
        // SAFETY: the runtime calls prepare with the node `init::<K>` initialised, and
        // calls nothing else for this node meanwhile.
        let slot = unsafe { slot::<K>(node) }?;
        if slot.busy {
            return Err(Error::new("prepared while it is being invoked"));
        }
        slot.prepared = None;
        let params = K::Params::read(ctx)?;
        let state = K::prepare(ctx, &params)?;
        slot.prepared = Some((params, state));
        Ok(())
    };
    // SAFETY: the runtime calls prepare with live context and node pointers.
    unsafe { run_step_in(context, node, Phase::Prepare, Some(K::NAME), step) }
}

unsafe extern "C" fn invoke<K: BuiltinKernel>(context: *mut TfLiteContext, node: *mut TfLiteNode) -> TfLiteStatus {
    let step = |ctx: &OpCtx<'_>| {
        // SAFETY: as in `prepare`; `busy` keeps a re-entrant call off the borrowed state.
        let slot = unsafe { slot::<K>(node) }?;
        if slot.busy {
            return Err(Error::new("invoked again while it is running"));
        }
        let Some((params, state)) = slot.prepared.as_mut() else {
            return Err(Error::new("invoked without a successful Prepare"));
        };
        slot.busy = true;
        let result = crate::ffi::catch_panic(PANIC_PLACE, || K::invoke(ctx, params, state));
        slot.busy = false;
        match result {
            Ok(r) => r,
            Err(panic) => {
                slot.prepared = None;
                Err(Error::new(panic))
            }
        }
    };
    // SAFETY: the runtime calls invoke with live context and node pointers.
    unsafe { run_step_in(context, node, Phase::Invoke, Some(K::NAME), step) }
}

macro_rules! builtin_params {
    ($($t:ident),+ $(,)?) => {$(
        // SAFETY: the model parser allocates this struct, and only this one, as the
        // `builtin_data` of the ops whose options it holds (`model::options`).
        unsafe impl BuiltinParams for crate::abi::builtin_op_data::$t {}
    )+};
}
builtin_params!(
    TfLiteAddParams,
    TfLiteArgMaxParams,
    TfLiteArgMinParams,
    TfLiteBatchMatMulParams,
    TfLiteCallOnceParams,
    TfLiteCastParams,
    TfLiteConcatenationParams,
    TfLiteConvParams,
    TfLiteCumsumParams,
    TfLiteDepthToSpaceParams,
    TfLiteDepthwiseConvParams,
    TfLiteDivParams,
    TfLiteFullyConnectedParams,
    TfLiteGatherParams,
    TfLiteGeluParams,
    TfLiteIfParams,
    TfLiteL2NormParams,
    TfLiteLeakyReluParams,
    TfLiteLocalResponseNormParams,
    TfLiteLSTMParams,
    TfLiteMirrorPaddingParams,
    TfLiteMulParams,
    TfLiteOneHotParams,
    TfLitePackParams,
    TfLitePoolParams,
    TfLiteReducerParams,
    TfLiteReshapeParams,
    TfLiteResizeBilinearParams,
    TfLiteResizeNearestNeighborParams,
    TfLiteRNNParams,
    TfLiteSequenceRNNParams,
    TfLiteShapeParams,
    TfLiteSoftmaxParams,
    TfLiteSpaceToDepthParams,
    TfLiteSplitParams,
    TfLiteSplitVParams,
    TfLiteSqueezeParams,
    TfLiteStridedSliceParams,
    TfLiteSubParams,
    TfLiteTransposeConvParams,
    TfLiteUnidirectionalSequenceLSTMParams,
    TfLiteUnpackParams,
    TfLiteVarHandleParams,
    TfLiteWhileParams,
    TfLiteUniqueParams,
    TfLiteReverseSequenceParams,
    TfLiteConv3DParams,
    TfLiteSVDFParams,
    TfLiteRandomParams,
    TfLiteHashtableParams,
    TfLiteLSHProjectionParams,
    TfLiteSkipGramParams,
    TfLiteEmbeddingLookupSparseParams,
    TfLiteReduceWindowParams,
    TfLiteStablehloCaseParams,
    TfLiteStablehloCompositeParams,
    TfLiteStablehloGatherParams,
    TfLiteStablehloPadParams,
    TfLiteStablehloReduceWindowParams,
    TfLiteStablehloRngBitGeneratorParams,
    TfLiteStablehloScatterParams,
    TfLiteFakeQuantParams,
);
builtin_params!(TfLiteBidirectionalSequenceRNNParams);
builtin_params!(TfLiteBidirectionalSequenceLSTMParams);

/// BUCKETIZE's options: its boundaries, copied out of the model (the parser's
/// `TfLiteBucketizeParams` points at them in place, only 4-byte aligned relative to the
/// model buffer's start).
pub struct BucketizeBoundaries(pub Vec<f32>);

impl Params for BucketizeBoundaries {
    fn read(ctx: &OpCtx<'_>) -> Result<BucketizeBoundaries> {
        // SAFETY: this kernel-params type is only named by the BUCKETIZE kernel, whose
        // nodes the parser gives a `TfLiteBucketizeParams`.
        let p = unsafe { ctx.builtin_data::<crate::abi::builtin_op_data::TfLiteBucketizeParams>() }
            .ok_or_else(|| Error::new("node has no builtin params"))?;
        let n = usize::try_from(p.num_boundaries).map_err(|_| Error::new("negative boundary count"))?;
        if n > 0 && p.boundaries.is_null() {
            return Err(Error::new("boundaries are missing"));
        }
        // SAFETY: the parser points `boundaries` at `num_boundaries` floats of the model,
        // which outlives the interpreter; they may be unaligned, so each is read unaligned.
        Ok(BucketizeBoundaries((0..n).map(|i| unsafe { p.boundaries.add(i).read_unaligned() }).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteType::kTfLiteFloat32;
    use crate::kernels::api::with_op_name;
    use crate::kernels::test_util::Graph;
    use core::sync::atomic::{AtomicUsize, Ordering};

    /// Copies its input, counting Prepares; fails Prepare on an empty input and panics in
    /// Invoke on a negative first value.
    struct Probe;
    static PREPARES: AtomicUsize = AtomicUsize::new(0);

    impl BuiltinKernel for Probe {
        const NAME: &'static str = "PROBE";
        type Params = ();
        type State = usize;

        fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<usize> {
            let input = ctx.input(0)?;
            if input.num_elements() == 0 {
                return Err(Error::new("empty input"));
            }
            ctx.resize_output(0, input.shape)?;
            Ok(PREPARES.fetch_add(1, Ordering::SeqCst) + 1)
        }

        fn invoke(ctx: &OpCtx<'_>, _: &(), state: &mut usize) -> Result<()> {
            let x = ctx.input(0)?.data::<f32>()?;
            assert!(x[0] >= 0.0, "negative input");
            *state += 1;
            ctx.output(0)?.data_mut::<f32>()?.copy_from_slice(x);
            Ok(())
        }
    }

    fn reg() -> TfLiteRegistration {
        registration::<Probe>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
    }

    #[test]
    fn prepare_builds_state_that_invoke_uses() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteFloat32, &[3], &[1.0f32, 2.0, 3.0], None, false);
        let o = g.output(kTfLiteFloat32, None);
        let before = PREPARES.load(Ordering::SeqCst);
        assert_eq!(g.run::<()>(&reg(), &[x], &[o], None), TfLiteStatus::kTfLiteOk);
        assert!(PREPARES.load(Ordering::SeqCst) > before);
        assert_eq!(g.data::<f32>(o), vec![1.0, 2.0, 3.0]);
    }

    #[test]
    fn failed_prepare_and_panicking_invoke_are_errors() {
        let mut g = Graph::new();
        let empty = g.tensor(kTfLiteFloat32, &[0], &[] as &[f32], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&reg(), &[empty], &[o], None), TfLiteStatus::kTfLiteError);
        let negative = g.tensor(kTfLiteFloat32, &[1], &[-1.0f32], None, false);
        let o = g.output(kTfLiteFloat32, None);
        assert_eq!(g.run::<()>(&reg(), &[negative], &[o], None), TfLiteStatus::kTfLiteError);
    }

    #[test]
    fn invoke_needs_init_and_prepare() {
        let r = reg();
        let mut node: TfLiteNode = unsafe_zeroed_node();
        // No init: user_data is NULL.
        // SAFETY: a NULL context is refused before anything is read; the node is live.
        let status = unsafe { r.invoke.unwrap()(core::ptr::null_mut(), &mut node) };
        assert_eq!(status, TfLiteStatus::kTfLiteError);
        // Init, but no Prepare.
        // SAFETY: init ignores its arguments; free gets back what init returned.
        unsafe {
            node.user_data = r.init.unwrap()(core::ptr::null_mut(), core::ptr::null(), 0);
            let slot = slot::<Probe>(&mut node).unwrap();
            assert!(slot.prepared.is_none() && !slot.busy);
            r.free.unwrap()(core::ptr::null_mut(), node.user_data);
        }
    }

    fn unsafe_zeroed_node() -> TfLiteNode {
        // SAFETY: every field of a node is a pointer, integer or bool, valid all-zero.
        unsafe { core::mem::zeroed() }
    }

    #[test]
    fn a_panic_reports_its_message() {
        let text = crate::ffi::catch_panic::<()>(PANIC_PLACE, || panic!("negative input {}", 3)).unwrap_err();
        assert_eq!(with_op_name("PROBE", &text), "PROBE: internal error: kernel panicked: negative input 3");
        let text = crate::ffi::catch_panic::<()>(PANIC_PLACE, || std::panic::panic_any(7u8)).unwrap_err();
        assert_eq!(text, "internal error: kernel panicked");
    }

    #[test]
    fn errors_name_the_op_once() {
        assert_eq!(with_op_name("ADD", "bad shape"), "ADD: bad shape");
        assert_eq!(with_op_name("ADD", "ADD: bad shape"), "ADD: bad shape");
    }
}
