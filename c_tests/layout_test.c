/* Binary layout of the public C structs and values of the public enums, as
 * seen by a C compiler through the public headers (shared/design/ABI.md §3,
 * Linux x86-64 / LP64, default build without TF_LITE_STATIC_MEMORY).
 *
 * Compile-time part: `_Static_assert` on sizeof/offsetof of every field ABI.md
 * lists, so this file needs C11 (tests/c_tests.rs builds it with -std=c11;
 * the headers themselves stay C99). Run-time part: the same structs as the
 * library fills them (tensors, context, delegate) agree with the accessor
 * functions, i.e. the library was built with the layout the headers declare.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tensorflow/lite/c/builtin_op_data.h"
#include "tensorflow/lite/c/c_api.h"
#include "tensorflow/lite/c/c_api_experimental.h"
#include "tensorflow/lite/c/c_api_opaque.h"
#include "tensorflow/lite/c/c_api_types.h"
#include "tensorflow/lite/c/common.h"
#include "tensorflow/lite/core/c/operator.h"

#include "check.h"
#include "test_util.h"

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "layout_test.c encodes the LP64 (x86-64 / aarch64 Linux) layout"
#endif

#define SIZE(T, n) _Static_assert(sizeof(T) == (n), "sizeof(" #T ") != " #n)
#define OFF(T, f, n) \
  _Static_assert(offsetof(T, f) == (n), "offsetof(" #T ", " #f ") != " #n)
#define VAL(e, n) _Static_assert((e) == (n), #e " != " #n)

/* ---- scalars ------------------------------------------------------------- */
SIZE(TfLiteStatus, 4);
SIZE(TfLiteType, 4);
SIZE(TfLiteAllocationType, 4);
SIZE(TfLiteQuantizationType, 4);
SIZE(TfLiteExternalContextType, 4);
SIZE(TfLiteDimensionType, 4);
SIZE(TfLiteBuiltinOperator, 4);
SIZE(TfLiteBufferHandle, 4);

/* ---- TfLiteIntArray / TfLiteFloatArray (flexible array member) ----------- */
SIZE(TfLiteIntArray, 4);
OFF(TfLiteIntArray, size, 0);
OFF(TfLiteIntArray, data, 4);
_Static_assert(_Alignof(TfLiteIntArray) == 4, "align TfLiteIntArray");
SIZE(TfLiteFloatArray, 4);
OFF(TfLiteFloatArray, size, 0);
OFF(TfLiteFloatArray, data, 4);
_Static_assert(_Alignof(TfLiteFloatArray) == 4, "align TfLiteFloatArray");

/* ---- quantization -------------------------------------------------------- */
SIZE(TfLiteQuantizationParams, 8);
OFF(TfLiteQuantizationParams, scale, 0);
OFF(TfLiteQuantizationParams, zero_point, 4);
SIZE(TfLiteQuantization, 16);
OFF(TfLiteQuantization, type, 0);
OFF(TfLiteQuantization, params, 8);
SIZE(TfLiteAffineQuantization, 24);
OFF(TfLiteAffineQuantization, scale, 0);
OFF(TfLiteAffineQuantization, zero_point, 8);
OFF(TfLiteAffineQuantization, quantized_dimension, 16);

/* ---- TfLitePtrUnion: every member at 0 ----------------------------------- */
SIZE(TfLitePtrUnion, 8);
OFF(TfLitePtrUnion, i32, 0);
OFF(TfLitePtrUnion, u32, 0);
OFF(TfLitePtrUnion, i64, 0);
OFF(TfLitePtrUnion, u64, 0);
OFF(TfLitePtrUnion, f, 0);
OFF(TfLitePtrUnion, f16, 0);
OFF(TfLitePtrUnion, bf16, 0);
OFF(TfLitePtrUnion, f64, 0);
OFF(TfLitePtrUnion, raw, 0);
OFF(TfLitePtrUnion, raw_const, 0);
OFF(TfLitePtrUnion, uint8, 0);
OFF(TfLitePtrUnion, b, 0);
OFF(TfLitePtrUnion, i16, 0);
OFF(TfLitePtrUnion, ui16, 0);
OFF(TfLitePtrUnion, c64, 0);
OFF(TfLitePtrUnion, c128, 0);
OFF(TfLitePtrUnion, int8, 0);
OFF(TfLitePtrUnion, data, 0);

/* ---- TfLiteCustomAllocation ---------------------------------------------- */
SIZE(TfLiteCustomAllocation, 16);
OFF(TfLiteCustomAllocation, data, 0);
OFF(TfLiteCustomAllocation, bytes, 8);

/* ---- sparsity ------------------------------------------------------------ */
SIZE(TfLiteDimensionMetadata, 24);
OFF(TfLiteDimensionMetadata, format, 0);
OFF(TfLiteDimensionMetadata, dense_size, 4);
OFF(TfLiteDimensionMetadata, array_segments, 8);
OFF(TfLiteDimensionMetadata, array_indices, 16);
SIZE(TfLiteSparsity, 32);
OFF(TfLiteSparsity, traversal_order, 0);
OFF(TfLiteSparsity, block_map, 8);
OFF(TfLiteSparsity, dim_metadata, 16);
OFF(TfLiteSparsity, dim_metadata_size, 24);

/* ---- TfLiteTensor -------------------------------------------------------- */
SIZE(TfLiteTensor, 112);
_Static_assert(_Alignof(TfLiteTensor) == 8, "align TfLiteTensor");
OFF(TfLiteTensor, type, 0);
OFF(TfLiteTensor, data, 8);
OFF(TfLiteTensor, dims, 16);
OFF(TfLiteTensor, params, 24);
OFF(TfLiteTensor, allocation_type, 32);
OFF(TfLiteTensor, bytes, 40);
OFF(TfLiteTensor, allocation, 48);
OFF(TfLiteTensor, name, 56);
OFF(TfLiteTensor, delegate, 64);
OFF(TfLiteTensor, buffer_handle, 72);
OFF(TfLiteTensor, data_is_stale, 76);
OFF(TfLiteTensor, is_variable, 77);
OFF(TfLiteTensor, quantization, 80);
OFF(TfLiteTensor, sparsity, 96);
OFF(TfLiteTensor, dims_signature, 104);

/* ---- TfLiteNode ---------------------------------------------------------- */
SIZE(TfLiteNode, 80);
OFF(TfLiteNode, inputs, 0);
OFF(TfLiteNode, outputs, 8);
OFF(TfLiteNode, intermediates, 16);
OFF(TfLiteNode, temporaries, 24);
OFF(TfLiteNode, user_data, 32);
OFF(TfLiteNode, builtin_data, 40);
OFF(TfLiteNode, custom_initial_data, 48);
OFF(TfLiteNode, custom_initial_data_size, 56);
OFF(TfLiteNode, delegate, 64);
OFF(TfLiteNode, might_have_side_effect, 72);

/* ---- TfLiteEvalTensor / TfLiteExternalContext ----------------------------- */
SIZE(TfLiteEvalTensor, 24);
OFF(TfLiteEvalTensor, data, 0);
OFF(TfLiteEvalTensor, dims, 8);
OFF(TfLiteEvalTensor, type, 16);
SIZE(TfLiteExternalContext, 16);
OFF(TfLiteExternalContext, type, 0);
OFF(TfLiteExternalContext, Refresh, 8);

/* ---- TfLiteContext: all 25 members and the size --------------------------- */
SIZE(TfLiteContext, 200);
OFF(TfLiteContext, tensors_size, 0);
OFF(TfLiteContext, GetExecutionPlan, 8);
OFF(TfLiteContext, tensors, 16);
OFF(TfLiteContext, impl_, 24);
OFF(TfLiteContext, ResizeTensor, 32);
OFF(TfLiteContext, ReportError, 40);
OFF(TfLiteContext, AddTensors, 48);
OFF(TfLiteContext, GetNodeAndRegistration, 56);
OFF(TfLiteContext, ReplaceNodeSubsetsWithDelegateKernels, 64);
OFF(TfLiteContext, recommended_num_threads, 72);
OFF(TfLiteContext, GetExternalContext, 80);
OFF(TfLiteContext, SetExternalContext, 88);
OFF(TfLiteContext, allow_fp32_relax_to_fp16, 96);
OFF(TfLiteContext, profiler, 104);
OFF(TfLiteContext, AllocatePersistentBuffer, 112);
OFF(TfLiteContext, AllocateBufferForEval, 120);
OFF(TfLiteContext, RequestScratchBufferInArena, 128);
OFF(TfLiteContext, GetScratchBuffer, 136);
OFF(TfLiteContext, ResizeTensorExplicit, 144);
OFF(TfLiteContext, PreviewDelegatePartitioning, 152);
OFF(TfLiteContext, GetTensor, 160);
OFF(TfLiteContext, GetEvalTensor, 168);
OFF(TfLiteContext, GetModelMetadata, 176);
OFF(TfLiteContext, AcquireSubgraphContext, 184);
OFF(TfLiteContext, ReleaseSubgraphContext, 192);

/* ---- TfLiteRegistration and its legacy prefixes --------------------------- */
SIZE(TfLiteRegistration, 88);
OFF(TfLiteRegistration, init, 0);
OFF(TfLiteRegistration, free, 8);
OFF(TfLiteRegistration, prepare, 16);
OFF(TfLiteRegistration, invoke, 24);
OFF(TfLiteRegistration, profiling_string, 32);
OFF(TfLiteRegistration, builtin_code, 40);
OFF(TfLiteRegistration, custom_name, 48);
OFF(TfLiteRegistration, version, 56);
OFF(TfLiteRegistration, registration_external, 64);
OFF(TfLiteRegistration, async_kernel, 72);
OFF(TfLiteRegistration, inplace_operator, 80);
SIZE(TfLiteRegistration_V1, 64);
OFF(TfLiteRegistration_V1, init, 0);
OFF(TfLiteRegistration_V1, free, 8);
OFF(TfLiteRegistration_V1, prepare, 16);
OFF(TfLiteRegistration_V1, invoke, 24);
OFF(TfLiteRegistration_V1, profiling_string, 32);
OFF(TfLiteRegistration_V1, builtin_code, 40);
OFF(TfLiteRegistration_V1, custom_name, 48);
OFF(TfLiteRegistration_V1, version, 56);
SIZE(TfLiteRegistration_V2, 72);
OFF(TfLiteRegistration_V2, registration_external, 64);
SIZE(TfLiteRegistration_V3, 80);
OFF(TfLiteRegistration_V3, registration_external, 64);
OFF(TfLiteRegistration_V3, async_kernel, 72);

/* ---- delegates ------------------------------------------------------------ */
SIZE(TfLiteDelegate, 56);
OFF(TfLiteDelegate, data_, 0);
OFF(TfLiteDelegate, Prepare, 8);
OFF(TfLiteDelegate, CopyFromBufferHandle, 16);
OFF(TfLiteDelegate, CopyToBufferHandle, 24);
OFF(TfLiteDelegate, FreeBufferHandle, 32);
OFF(TfLiteDelegate, flags, 40);
OFF(TfLiteDelegate, opaque_delegate_builder, 48);
SIZE(TfLiteOpaqueDelegateBuilder, 48);
OFF(TfLiteOpaqueDelegateBuilder, data, 0);
OFF(TfLiteOpaqueDelegateBuilder, Prepare, 8);
OFF(TfLiteOpaqueDelegateBuilder, CopyFromBufferHandle, 16);
OFF(TfLiteOpaqueDelegateBuilder, CopyToBufferHandle, 24);
OFF(TfLiteOpaqueDelegateBuilder, FreeBufferHandle, 32);
OFF(TfLiteOpaqueDelegateBuilder, flags, 40);
SIZE(TfLiteDelegateParams, 32);
OFF(TfLiteDelegateParams, delegate, 0);
OFF(TfLiteDelegateParams, nodes_to_replace, 8);
OFF(TfLiteDelegateParams, input_tensors, 16);
OFF(TfLiteDelegateParams, output_tensors, 24);
SIZE(TfLiteOpaqueDelegateParams, 40);
OFF(TfLiteOpaqueDelegateParams, delegate, 0);
OFF(TfLiteOpaqueDelegateParams, delegate_data, 8);
OFF(TfLiteOpaqueDelegateParams, nodes_to_replace, 16);
OFF(TfLiteOpaqueDelegateParams, input_tensors, 24);
OFF(TfLiteOpaqueDelegateParams, output_tensors, 32);
/* Default build: the opaque delegate is the TfLiteDelegate itself. */
_Static_assert(sizeof(TfLiteOpaqueDelegate) == sizeof(TfLiteDelegate),
               "TfLiteOpaqueDelegate is TfLiteDelegate in the default build");

/* ---- enum values ---------------------------------------------------------- */
VAL(kTfLiteOk, 0);
VAL(kTfLiteError, 1);
VAL(kTfLiteDelegateError, 2);
VAL(kTfLiteApplicationError, 3);
VAL(kTfLiteDelegateDataNotFound, 4);
VAL(kTfLiteDelegateDataWriteError, 5);
VAL(kTfLiteDelegateDataReadError, 6);
VAL(kTfLiteUnresolvedOps, 7);
VAL(kTfLiteCancelled, 8);
VAL(kTfLiteOutputShapeNotKnown, 9);

VAL(kTfLiteNoType, 0);
VAL(kTfLiteFloat32, 1);
VAL(kTfLiteInt32, 2);
VAL(kTfLiteUInt8, 3);
VAL(kTfLiteInt64, 4);
VAL(kTfLiteString, 5);
VAL(kTfLiteBool, 6);
VAL(kTfLiteInt16, 7);
VAL(kTfLiteComplex64, 8);
VAL(kTfLiteInt8, 9);
VAL(kTfLiteFloat16, 10);
VAL(kTfLiteFloat64, 11);
VAL(kTfLiteComplex128, 12);
VAL(kTfLiteUInt64, 13);
VAL(kTfLiteResource, 14);
VAL(kTfLiteVariant, 15);
VAL(kTfLiteUInt32, 16);
VAL(kTfLiteUInt16, 17);
VAL(kTfLiteInt4, 18);
VAL(kTfLiteBFloat16, 19);

VAL(kTfLiteMemNone, 0);
VAL(kTfLiteMmapRo, 1);
VAL(kTfLiteArenaRw, 2);
VAL(kTfLiteArenaRwPersistent, 3);
VAL(kTfLiteDynamic, 4);
VAL(kTfLitePersistentRo, 5);
VAL(kTfLiteCustom, 6);
VAL(kTfLiteVariantObject, 7);
VAL(kTfLiteNonCpu, 8);

VAL(kTfLiteNoQuantization, 0);
VAL(kTfLiteAffineQuantization, 1);
VAL(kTfLiteDimDense, 0);
VAL(kTfLiteDimSparseCSR, 1);

VAL(kTfLiteEigenContext, 0);
VAL(kTfLiteGemmLowpContext, 1);
VAL(kTfLiteEdgeTpuContext, 2);
VAL(kTfLiteCpuBackendContext, 3);
VAL(kTfLiteLiteRtBufferContext, 4);
VAL(kTfLiteMaxExternalContexts, 5);

/* kTfLiteDelegateFlagsHintFullyDelegatedToSingleDelegate (8) postdates the
 * TF 2.19 headers, so it is not asserted here. */
VAL(kTfLiteDelegateFlagsNone, 0);
VAL(kTfLiteDelegateFlagsAllowDynamicTensors, 1);
VAL(kTfLiteDelegateFlagsRequirePropagatedShapes, 2);
VAL(kTfLiteDelegateFlagsPerOperatorProfiling, 4);

VAL(kTfLiteCustomAllocationFlagsNone, 0);
VAL(kTfLiteCustomAllocationFlagsSkipAlignCheck, 1);
VAL(kTfLiteNullBufferHandle, -1);
VAL(kTfLiteOptionalTensor, -1);

VAL(kTfLiteAllocationStrategyUnknown, 0);
VAL(kTfLiteAllocationStrategyNone, 1);
VAL(kTfLiteAllocationStrategyMMap, 2);
VAL(kTfLiteAllocationStrategyArena, 3);
VAL(kTfLiteAllocationStrategyMalloc, 4);
VAL(kTfLiteAllocationStrategyNew, 5);
VAL(kTfLiteRunStabilityUnknown, 0);
VAL(kTfLiteRunStabilityUnstable, 1);
VAL(kTfLiteRunStabilitySingleRun, 2);
VAL(kTfLiteRunStabilityAcrossRuns, 3);
VAL(kTfLiteRunStepUnknown, 0);
VAL(kTfLiteRunStepInit, 1);
VAL(kTfLiteRunStepPrepare, 2);
VAL(kTfLiteRunStepEval, 3);

VAL(kTfLiteBuiltinAdd, 0);
VAL(kTfLiteBuiltinCustom, 32);
VAL(kTfLiteBuiltinDelegate, 51);

/* ---- run-time checks ------------------------------------------------------ */

/* The library's tensors, read through the struct, agree with the accessor
 * functions (add_quantized.bin: uint8, scale 0.003922, names). */
static void TestTensorFieldsMatchAccessors(void) {
  TfLiteModel* model =
      TfLiteModelCreateFromFile(CorpusPath("add_quantized.bin"));
  TfLiteInterpreter* interpreter;
  int i;
  CHECK_NOT_NULL(model);
  interpreter = TfLiteInterpreterCreate(model, NULL);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  for (i = 0; i < 3; ++i) {
    const TfLiteTensor* t = TfLiteInterpreterGetTensor(interpreter, i);
    int d;
    CHECK_NOT_NULL(t);
    CHECK_EQ_INT(TfLiteTensorType(t), t->type);
    CHECK_EQ_INT(kTfLiteUInt8, t->type);
    CHECK_EQ_PTR(TfLiteTensorData(t), t->data.raw);
    CHECK_NOT_NULL(t->dims);
    CHECK_EQ_INT(TfLiteTensorNumDims(t), t->dims->size);
    for (d = 0; d < t->dims->size; ++d)
      CHECK_EQ_INT(TfLiteTensorDim(t, d), t->dims->data[d]);
    CHECK_EQ_INT(TfLiteTensorByteSize(t), t->bytes);
    CHECK_EQ_INT(192, t->bytes);
    CHECK_EQ_PTR(TfLiteTensorName(t), t->name);
    CHECK_EQ_FLOAT(TfLiteTensorQuantizationParams(t).scale, t->params.scale);
    CHECK_EQ_FLOAT(0.003922f, t->params.scale);
    CHECK_EQ_INT(TfLiteTensorQuantizationParams(t).zero_point,
                 t->params.zero_point);
    CHECK_EQ_INT(kTfLiteArenaRw, t->allocation_type);
    CHECK_NULL(t->delegate);
    CHECK_EQ_INT(kTfLiteNullBufferHandle, t->buffer_handle);
    CHECK(!t->is_variable);
    CHECK_EQ_INT(kTfLiteAffineQuantization, t->quantization.type);
    CHECK_NOT_NULL(t->quantization.params);
    {
      const TfLiteAffineQuantization* q =
          (const TfLiteAffineQuantization*)t->quantization.params;
      CHECK_NOT_NULL(q->scale);
      CHECK_EQ_INT(1, q->scale->size);
      CHECK_EQ_FLOAT(t->params.scale, q->scale->data[0]);
      CHECK_NOT_NULL(q->zero_point);
      CHECK_EQ_INT(1, q->zero_point->size);
      CHECK_EQ_INT(t->params.zero_point, q->zero_point->data[0]);
    }
    CHECK_NULL(t->sparsity);
  }
  CHECK_STREQ("input", TfLiteInterpreterGetTensor(interpreter, 1)->name);
  CHECK_STREQ("output", TfLiteInterpreterGetTensor(interpreter, 2)->name);
  TfLiteInterpreterDelete(interpreter);
  TfLiteModelDelete(model);
}

/* A C kernel sees a TfLiteContext/TfLiteNode laid out as declared. */
static TfLiteInterpreter* g_interpreter;
static int g_layout_prepare_calls;

static TfLiteStatus LayoutAddPrepare(TfLiteContext* context,
                                     TfLiteNode* node) {
  g_layout_prepare_calls++;
  CHECK_EQ_INT(3, context->tensors_size); /* add.bin: add, input, output */
  CHECK_NOT_NULL(context->tensors);
  CHECK(context->ResizeTensor != NULL);
  CHECK(context->ReportError != NULL);
  CHECK(context->AddTensors != NULL);
  CHECK(context->GetExternalContext != NULL);
  CHECK(context->SetExternalContext != NULL);
  CHECK(context->GetModelMetadata != NULL);
  CHECK_EQ_INT(2, context->recommended_num_threads);
  CHECK_NOT_NULL(node->inputs);
  CHECK_NOT_NULL(node->outputs);
  CHECK_EQ_INT(2, node->inputs->size);
  CHECK_EQ_INT(1, node->outputs->size);
  CHECK_NOT_NULL(node->builtin_data); /* TfLiteAddParams */
  CHECK_EQ_INT(kTfLiteActNone,
               ((const TfLiteAddParams*)node->builtin_data)->activation);
  CHECK_EQ_PTR(TfLiteInterpreterGetTensor(g_interpreter, node->inputs->data[0]),
               &context->tensors[node->inputs->data[0]]);
  CHECK_EQ_PTR(
      TfLiteInterpreterGetTensor(g_interpreter, node->outputs->data[0]),
      &context->tensors[node->outputs->data[0]]);
  /* The opaque context and node are the same objects. */
  CHECK_EQ_PTR(&context->tensors[1],
               TfLiteOpaqueContextGetOpaqueTensor(
                   (const TfLiteOpaqueContext*)context, 1));
  CHECK_EQ_INT(2, TfLiteOpaqueNodeNumberOfInputs((const TfLiteOpaqueNode*)node));
  return context->ResizeTensor(
      context, &context->tensors[node->outputs->data[0]],
      TfLiteIntArrayCopy(context->tensors[node->inputs->data[0]].dims));
}

static TfLiteStatus LayoutAddInvoke(TfLiteContext* context, TfLiteNode* node) {
  const TfLiteTensor* a = &context->tensors[node->inputs->data[0]];
  const TfLiteTensor* b = &context->tensors[node->inputs->data[1]];
  TfLiteTensor* out = &context->tensors[node->outputs->data[0]];
  size_t i, n = a->bytes / sizeof(float);
  for (i = 0; i < n; ++i) out->data.f[i] = a->data.f[i] + b->data.f[i];
  return kTfLiteOk;
}

static void TestContextAndNodeLayout(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteRegistration reg;
  float in[192], out[192];
  int i;

  CHECK_NOT_NULL(model);
  memset(&reg, 0, sizeof(reg));
  reg.prepare = LayoutAddPrepare;
  reg.invoke = LayoutAddInvoke;
  reg.builtin_code = kTfLiteBuiltinAdd;
  reg.version = 1;
  TfLiteInterpreterOptionsSetNumThreads(options, 2);
  TfLiteInterpreterOptionsAddBuiltinOp(options, kTfLiteBuiltinAdd, &reg, 1, 1);
  g_interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(g_interpreter);
  g_layout_prepare_calls = 0;
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(g_interpreter));
  CHECK_EQ_INT(2, g_layout_prepare_calls);
  for (i = 0; i < 192; ++i) in[i] = (float)i;
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyFromBuffer(
                   TfLiteInterpreterGetInputTensor(g_interpreter, 0), in,
                   sizeof(in)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(g_interpreter));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyToBuffer(
                   TfLiteInterpreterGetOutputTensor(g_interpreter, 0), out,
                   sizeof(out)));
  for (i = 0; i < 192; ++i) CHECK_EQ_FLOAT(3.f * in[i], out[i]);
  TfLiteInterpreterDelete(g_interpreter);
  g_interpreter = NULL;
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

/* TfLiteDelegateCreate returns a zeroed struct by value (56 bytes, sret). */
static void TestDelegateCreateIsZeroed(void) {
  TfLiteDelegate d = TfLiteDelegateCreate();
  CHECK_NULL(d.data_);
  CHECK(d.Prepare == NULL);
  CHECK(d.CopyFromBufferHandle == NULL);
  CHECK(d.CopyToBufferHandle == NULL);
  CHECK(d.FreeBufferHandle == NULL);
  CHECK_EQ_INT(kTfLiteDelegateFlagsNone, d.flags);
  CHECK_NULL(d.opaque_delegate_builder);
}

/* An opaque delegate is a TfLiteDelegate whose opaque_delegate_builder points
 * at (a copy of) the builder. */
static void TestOpaqueDelegateIsDelegate(void) {
  int data = 7;
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteOpaqueDelegate* od;
  const TfLiteDelegate* d;
  memset(&builder, 0, sizeof(builder));
  builder.data = &data;
  builder.flags = kTfLiteDelegateFlagsAllowDynamicTensors;
  od = TfLiteOpaqueDelegateCreate(&builder);
  CHECK_NOT_NULL(od);
  d = (const TfLiteDelegate*)od;
  CHECK_NOT_NULL(d->opaque_delegate_builder);
  CHECK_EQ_PTR(&data, d->opaque_delegate_builder->data);
  CHECK_EQ_INT(kTfLiteDelegateFlagsAllowDynamicTensors,
               d->opaque_delegate_builder->flags);
  TfLiteOpaqueDelegateDelete(od);
}

/* By-value small structs come back in registers as the headers declare. */
static void TestArraySizes(void) {
  TfLiteIntArray* a = TfLiteIntArrayCreate(5);
  CHECK_NOT_NULL(a);
  CHECK_EQ_INT(5, a->size);
  CHECK_EQ_INT(sizeof(TfLiteIntArray) + 5 * sizeof(int),
               TfLiteIntArrayGetSizeInBytes(5));
  CHECK_EQ_INT(sizeof(TfLiteFloatArray) + 5 * sizeof(float),
               TfLiteFloatArrayGetSizeInBytes(5));
  TfLiteIntArrayFree(a);
}

int main(void) {
  printf("sizeof: TfLiteTensor=%zu TfLiteNode=%zu TfLiteContext=%zu "
         "TfLiteRegistration=%zu TfLiteDelegate=%zu\n",
         sizeof(TfLiteTensor), sizeof(TfLiteNode), sizeof(TfLiteContext),
         sizeof(TfLiteRegistration), sizeof(TfLiteDelegate));
  printf("ok static layout asserts\n");
  RUN_TEST(TestTensorFieldsMatchAccessors);
  RUN_TEST(TestContextAndNodeLayout);
  RUN_TEST(TestDelegateCreateIsZeroed);
  RUN_TEST(TestOpaqueDelegateIsDelegate);
  RUN_TEST(TestArraySizes);
  printf("layout_test: all tests passed\n");
  return 0;
}
