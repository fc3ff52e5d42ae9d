/* Behaviour of TFLite's tflite/core/c/c_api_opaque_test.cc, the tests that
 * need no interpreter-applied delegate, re-expressed in C (see
 * shared/design/CAPI_TESTS.md):
 *  - the 40 allocation-type table tests (opaque tensor getters behave like
 *    the TfLiteTensorGet* ones on a stack TfLiteTensor, and both give the
 *    mapping from common_test.cc);
 *  - TfLiteOpaqueTensorData, TfLiteOpaqueDelegateCreate/Delete/GetData;
 *  - custom ops through the opaque API (temporaries, plain and *WithData
 *    callbacks, user data) on custom_sinh.bin;
 *  - model metadata from inside a kernel (with_metadata.bin);
 * plus a few common.h helpers (from common_test.cc). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/c/c_api.h"
#include "tensorflow/lite/c/c_api_opaque.h"
#include "tensorflow/lite/c/c_api_types.h"
#include "tensorflow/lite/c/common.h"

#include "check.h"
#include "test_util.h"

/* ---- allocation-type tables --------------------------------------------- */

#define NUM_ALLOC_TYPES 8

static const TfLiteAllocationType kAllocTypes[NUM_ALLOC_TYPES] = {
    kTfLiteMemNone, kTfLiteMmapRo,   kTfLiteArenaRw,  kTfLiteArenaRwPersistent,
    kTfLiteDynamic, kTfLitePersistentRo, kTfLiteCustom, kTfLiteVariantObject};

static const char* const kAllocNames[NUM_ALLOC_TYPES] = {
    "MemNone", "MmapRo",       "ArenaRw", "ArenaRwPersistent",
    "Dynamic", "PersistentRo", "Custom",  "VariantObject"};

/* Expected values, in kAllocTypes order (TF 2.19 common.cc; the same as
 * common_test.cc except the one cell noted below). */
static const TfLiteAllocationStrategy kStrategy[NUM_ALLOC_TYPES] = {
    kTfLiteAllocationStrategyNone,    kTfLiteAllocationStrategyMMap,
    kTfLiteAllocationStrategyArena,   kTfLiteAllocationStrategyArena,
    kTfLiteAllocationStrategyMalloc,  kTfLiteAllocationStrategyUnknown,
    kTfLiteAllocationStrategyUnknown, kTfLiteAllocationStrategyNew};

/* Also accepted (-1: none). PersistentRo's strategy is Unknown in TF 2.17.1
 * and in the TF 2.19-era sources (LiteRT 2025-02), and Malloc in later LiteRT
 * (HEAD 2026, whose common_test.cc CAPI_TESTS.md quotes). Both are real
 * TFLite; this library targets 2.19, so either passes. */
static const int kStrategyAlt[NUM_ALLOC_TYPES] = {
    -1, -1, -1, -1, -1, kTfLiteAllocationStrategyMalloc, -1, -1};
static const int kNoAlt[NUM_ALLOC_TYPES] = {-1, -1, -1, -1, -1, -1, -1, -1};

static const TfLiteRunStability kAddressStability[NUM_ALLOC_TYPES] = {
    kTfLiteRunStabilityAcrossRuns, kTfLiteRunStabilityAcrossRuns,
    kTfLiteRunStabilityUnstable,   kTfLiteRunStabilityUnstable,
    kTfLiteRunStabilitySingleRun,  kTfLiteRunStabilitySingleRun,
    kTfLiteRunStabilityUnknown,    kTfLiteRunStabilityAcrossRuns};

static const TfLiteRunStability kDataStability[NUM_ALLOC_TYPES] = {
    kTfLiteRunStabilityAcrossRuns, kTfLiteRunStabilityAcrossRuns,
    kTfLiteRunStabilitySingleRun,  kTfLiteRunStabilityAcrossRuns,
    kTfLiteRunStabilitySingleRun,  kTfLiteRunStabilitySingleRun,
    kTfLiteRunStabilityUnknown,    kTfLiteRunStabilitySingleRun};

static const TfLiteRunStep kDataKnownStep[NUM_ALLOC_TYPES] = {
    kTfLiteRunStepInit,    kTfLiteRunStepInit,    kTfLiteRunStepEval,
    kTfLiteRunStepEval,    kTfLiteRunStepEval,    kTfLiteRunStepPrepare,
    kTfLiteRunStepUnknown, kTfLiteRunStepEval};

static const TfLiteRunStep kShapeKnownStep[NUM_ALLOC_TYPES] = {
    kTfLiteRunStepInit,    kTfLiteRunStepInit,    kTfLiteRunStepPrepare,
    kTfLiteRunStepPrepare, kTfLiteRunStepEval,    kTfLiteRunStepPrepare,
    kTfLiteRunStepUnknown, kTfLiteRunStepEval};

/* A stack tensor with only allocation_type meaningful (the rest zeroed). */
static TfLiteTensor TensorWithAllocationType(TfLiteAllocationType type) {
  TfLiteTensor t;
  memset(&t, 0, sizeof(t));
  t.allocation_type = type;
  return t;
}

/* The opaque tensor IS the TfLiteTensor (ABI.md §1). */
#define AS_OPAQUE(t) ((TfLiteOpaqueTensor*)(t))

/* One test per getter; each covers the 8 allocation types (= 8 of the 40
 * upstream tests) and prints one line per case. */
#define DEFINE_ALLOC_TABLE_TEST(TestName, Getter, Expected, Alt)             \
  static void TestName(void) {                                             \
    int i;                                                                 \
    for (i = 0; i < NUM_ALLOC_TYPES; ++i) {                                \
      TfLiteTensor t = TensorWithAllocationType(kAllocTypes[i]);           \
      int via_opaque = (int)TfLiteOpaqueTensor##Getter(AS_OPAQUE(&t));     \
      int via_tensor = (int)TfLiteTensor##Getter(&t);                      \
      int expected = (int)Expected[i];                                     \
      if (Alt[i] >= 0 && via_tensor == Alt[i]) expected = Alt[i];          \
      if (via_opaque != via_tensor || via_tensor != expected) {            \
        fprintf(stderr, "%s: allocation type %s: opaque %d, tensor %d, "   \
                "expected %d\n", #Getter, kAllocNames[i], via_opaque,      \
                via_tensor, expected);                                     \
      }                                                                    \
      CHECK_EQ_INT(via_tensor, via_opaque);                                \
      CHECK_EQ_INT(expected, via_tensor);                                  \
      printf("  ok %s With%sBehavesAsTfLiteTensor%s\n", #TestName,         \
             kAllocNames[i], #Getter);                                     \
    }                                                                      \
  }

DEFINE_ALLOC_TABLE_TEST(TestGetAllocationStrategy, GetAllocationStrategy,
                        kStrategy, kStrategyAlt)
DEFINE_ALLOC_TABLE_TEST(TestGetBufferAddressStability,
                        GetBufferAddressStability, kAddressStability, kNoAlt)
DEFINE_ALLOC_TABLE_TEST(TestGetDataStability, GetDataStability,
                        kDataStability, kNoAlt)
DEFINE_ALLOC_TABLE_TEST(TestGetDataKnownStep, GetDataKnownStep,
                        kDataKnownStep, kNoAlt)
DEFINE_ALLOC_TABLE_TEST(TestGetShapeKnownStep, GetShapeKnownStep,
                        kShapeKnownStep, kNoAlt)

/* ---- TfLiteOpaqueTensorData --------------------------------------------- */

static void TestOpaqueTensorDataValidInput(void) {
  TfLiteTensor t;
  char data[] = "data";
  memset(&t, 0, sizeof(t));
  t.data.raw = data;
  CHECK_EQ_PTR(data, TfLiteOpaqueTensorData(AS_OPAQUE(&t)));
}

static void TestOpaqueTensorDataNullInput(void) {
  CHECK_NULL(TfLiteOpaqueTensorData(NULL));
}

/* ---- TfLiteOpaqueDelegate ----------------------------------------------- */

static void TestOpaqueDelegateCreateAndDelete(void) {
  TfLiteOpaqueDelegateBuilder* builder =
      (TfLiteOpaqueDelegateBuilder*)calloc(1, sizeof(TfLiteOpaqueDelegateBuilder));
  TfLiteOpaqueDelegate* delegate;
  CHECK_NOT_NULL(builder);
  delegate = TfLiteOpaqueDelegateCreate(builder);
  CHECK_NOT_NULL(delegate);
  TfLiteOpaqueDelegateDelete(delegate);
  free(builder);
}

static void TestOpaqueDelegateCreateWithNull(void) {
  CHECK_NULL(TfLiteOpaqueDelegateCreate(NULL));
}

static void TestOpaqueDelegateDeleteWithNull(void) {
  TfLiteOpaqueDelegateDelete(NULL);
}

static void TestOpaqueDelegateGetDataWellFormed(void) {
  int delegate_data = 42;
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteOpaqueDelegate* delegate;
  memset(&builder, 0, sizeof(builder));
  builder.data = &delegate_data;
  delegate = TfLiteOpaqueDelegateCreate(&builder);
  CHECK_NOT_NULL(delegate);
  CHECK_EQ_PTR(&delegate_data, TfLiteOpaqueDelegateGetData(delegate));
  TfLiteOpaqueDelegateDelete(delegate);
}

/* A plain TfLiteDelegate (no opaque_delegate_builder): GetData falls back to
 * its data_ field. In the default build TfLiteOpaqueDelegate is
 * TfLiteDelegate, so no cast is needed. */
static void TestOpaqueDelegateGetDataNotFromOpaqueCreate(void) {
  int delegate_data = 42;
  TfLiteDelegate delegate = TfLiteDelegateCreate();
  CHECK_NULL(delegate.opaque_delegate_builder);
  CHECK_EQ_INT(kTfLiteDelegateFlagsNone, delegate.flags);
  CHECK(delegate.Prepare == NULL);
  delegate.data_ = &delegate_data;
  CHECK_EQ_PTR(&delegate_data,
               TfLiteOpaqueDelegateGetData((TfLiteOpaqueDelegate*)&delegate));
}

static void TestOpaqueDelegateGetDataNoDataSet(void) {
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteOpaqueDelegate* delegate;
  memset(&builder, 0, sizeof(builder));
  delegate = TfLiteOpaqueDelegateCreate(&builder);
  CHECK_NOT_NULL(delegate);
  CHECK_NULL(TfLiteOpaqueDelegateGetData(delegate));
  TfLiteOpaqueDelegateDelete(delegate);
}

/* ---- custom op on custom_sinh.bin: copy input -> temporary -> output ----- */

typedef struct TempOpData {
  int temp_tensor_index;
} TempOpData;

typedef struct CallCounts {
  int init, prepare, invoke, free;
} CallCounts;

static CallCounts g_calls;

static void* TempOpInit(TfLiteOpaqueContext* context, const char* buffer,
                        size_t length) {
  TempOpData* data = (TempOpData*)calloc(1, sizeof(TempOpData));
  (void)context;
  (void)buffer;
  (void)length;
  CHECK_NOT_NULL(data);
  data->temp_tensor_index = -1;
  g_calls.init++;
  return data;
}

static void TempOpFree(TfLiteOpaqueContext* context, void* buffer) {
  (void)context;
  g_calls.free++;
  free(buffer);
}

/* Adds one float32 arena temporary of shape [1] and records it as the
 * node's temporaries, checking SetTemporaries' argument validation. */
static TfLiteStatus TempOpPrepare(TfLiteOpaqueContext* context,
                                  TfLiteOpaqueNode* node) {
  TempOpData* data = (TempOpData*)TfLiteOpaqueNodeGetUserData(node);
  TfLiteOpaqueTensorBuilder* builder;
  TfLiteOpaqueTensor* temp;
  TfLiteIntArray* temp_dims;
  int temporaries[1] = {-1};
  g_calls.prepare++;
  CHECK_NOT_NULL(data);

  /* A negative count is rejected, zero is fine. */
  CHECK_EQ_INT(kTfLiteError,
               TfLiteOpaqueNodeSetTemporaries(node, temporaries, -1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueNodeSetTemporaries(node, temporaries, 0));

  builder = TfLiteOpaqueTensorBuilderCreate();
  CHECK_NOT_NULL(builder);
  TfLiteOpaqueTensorBuilderSetType(builder, kTfLiteFloat32);
  TfLiteOpaqueTensorBuilderSetAllocationType(builder, kTfLiteArenaRw);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteOpaqueContextAddTensor(context, builder, &temporaries[0]));
  TfLiteOpaqueTensorBuilderDelete(builder);
  CHECK(temporaries[0] >= 0);

  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueNodeSetTemporaries(node, temporaries, 1));
  data->temp_tensor_index = temporaries[0];

  temp = TfLiteOpaqueContextGetOpaqueTensor(context, temporaries[0]);
  CHECK_NOT_NULL(temp);
  temp_dims = TfLiteIntArrayCreate(1);
  temp_dims->data[0] = 1;
  return TfLiteOpaqueContextResizeTensor(context, temp, temp_dims);
}

static TfLiteStatus TempOpInvoke(TfLiteOpaqueContext* context,
                                 TfLiteOpaqueNode* node) {
  TempOpData* data = (TempOpData*)TfLiteOpaqueNodeGetUserData(node);
  const int* temporaries = NULL;
  int num_temporaries = -1;
  TfLiteOpaqueTensor* temp;
  const TfLiteOpaqueTensor* input;
  TfLiteOpaqueTensor* output;
  size_t temp_bytes;
  void* temp_data;
  g_calls.invoke++;
  CHECK_NOT_NULL(data);

  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueNodeTemporaries(node, &temporaries,
                                                      &num_temporaries));
  CHECK_EQ_INT(1, num_temporaries);
  CHECK_NOT_NULL(temporaries);
  CHECK_EQ_INT(data->temp_tensor_index, temporaries[0]);

  temp = TfLiteOpaqueContextGetOpaqueTensor(context, data->temp_tensor_index);
  CHECK_NOT_NULL(temp);
  CHECK_EQ_INT(kTfLiteFloat32, TfLiteOpaqueTensorType(temp));
  CHECK_EQ_INT(kTfLiteArenaRw, TfLiteOpaqueTensorGetAllocationType(temp));
  temp_bytes = TfLiteOpaqueTensorByteSize(temp);
  temp_data = TfLiteOpaqueTensorData(temp);
  CHECK_EQ_INT(sizeof(float), temp_bytes);
  CHECK_NOT_NULL(temp_data);

  CHECK_EQ_INT(1, TfLiteOpaqueNodeNumberOfInputs(node));
  CHECK_EQ_INT(1, TfLiteOpaqueNodeNumberOfOutputs(node));
  input = TfLiteOpaqueNodeGetInput(context, node, 0);
  output = TfLiteOpaqueNodeGetOutput(context, node, 0);
  CHECK_EQ_INT(temp_bytes, TfLiteOpaqueTensorByteSize(input));
  CHECK_EQ_INT(temp_bytes, TfLiteOpaqueTensorByteSize(output));
  memcpy(temp_data, TfLiteOpaqueTensorData(input), temp_bytes);
  memcpy(TfLiteOpaqueTensorData(output), temp_data, temp_bytes);
  return kTfLiteOk;
}

/* The same kernel behind the *WithData signatures; `expected_user_data` is
 * what TfLiteOperatorCreate was given. */
static void* g_expected_user_data;

static void* TempOpInitWithData(void* user_data, TfLiteOpaqueContext* context,
                                const char* buffer, size_t length) {
  CHECK_EQ_PTR(g_expected_user_data, user_data);
  return TempOpInit(context, buffer, length);
}

static void TempOpFreeWithData(void* user_data, TfLiteOpaqueContext* context,
                               void* buffer) {
  CHECK_EQ_PTR(g_expected_user_data, user_data);
  TempOpFree(context, buffer);
}

static TfLiteStatus TempOpPrepareWithData(void* user_data,
                                          TfLiteOpaqueContext* context,
                                          TfLiteOpaqueNode* node) {
  CHECK_EQ_PTR(g_expected_user_data, user_data);
  return TempOpPrepare(context, node);
}

static TfLiteStatus TempOpInvokeWithData(void* user_data,
                                         TfLiteOpaqueContext* context,
                                         TfLiteOpaqueNode* node) {
  CHECK_EQ_PTR(g_expected_user_data, user_data);
  return TempOpInvoke(context, node);
}

/* Runs custom_sinh.bin with `op` registered as "Sinh" on `input`; the output
 * must be `expected_output`. Checks the kernel's init/prepare/invoke/free
 * call counts (via g_calls). Deletes `op`. */
static void RunCustomSinhModel(TfLiteOperator* op, float input,
                               float expected_output) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("custom_sinh.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  float output = 0.f;

  CHECK_NOT_NULL(model);
  memset(&g_calls, 0, sizeof(g_calls));
  TfLiteInterpreterOptionsAddOperator(options, op);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  TfLiteInterpreterOptionsDelete(options);

  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(1, g_calls.init);
  CHECK(g_calls.prepare >= 1);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyFromBuffer(
                   TfLiteInterpreterGetInputTensor(interpreter, 0), &input,
                   sizeof(input)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  CHECK_EQ_INT(1, g_calls.invoke);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyToBuffer(
                   TfLiteInterpreterGetOutputTensor(interpreter, 0), &output,
                   sizeof(output)));
  CHECK_EQ_FLOAT(expected_output, output);

  CHECK_EQ_INT(0, g_calls.free);
  TfLiteInterpreterDelete(interpreter);
  CHECK_EQ_INT(1, g_calls.free);
  TfLiteOperatorDelete(op);
  TfLiteModelDelete(model);
}

static void TestCustomOpWithSetAndGetTemporaries(void) {
  TfLiteOperator* op = CreateOperator(kTfLiteBuiltinCustom, "Sinh", 1, NULL);
  TfLiteOperatorSetInit(op, TempOpInit);
  TfLiteOperatorSetPrepare(op, TempOpPrepare);
  TfLiteOperatorSetInvoke(op, TempOpInvoke);
  TfLiteOperatorSetFree(op, TempOpFree);
  RunCustomSinhModel(op, 42.f, 42.f); /* copied through the temporary */
}

/* Plain (no user data) callbacks computing the real sinh, with per-node
 * state from init. */
typedef struct SinhState {
  float scale;
} SinhState;

static void* SinhInit(TfLiteOpaqueContext* context, const char* buffer,
                      size_t length) {
  SinhState* s = (SinhState*)malloc(sizeof(SinhState));
  (void)context;
  (void)buffer;
  (void)length;
  CHECK_NOT_NULL(s);
  s->scale = 1.f;
  g_calls.init++;
  return s;
}

static void SinhFree(TfLiteOpaqueContext* context, void* buffer) {
  (void)context;
  g_calls.free++;
  free(buffer);
}

static TfLiteStatus SinhPrepare(TfLiteOpaqueContext* context,
                                TfLiteOpaqueNode* node) {
  (void)context;
  CHECK_NOT_NULL(TfLiteOpaqueNodeGetUserData(node));
  g_calls.prepare++;
  return kTfLiteOk;
}

static TfLiteStatus SinhInvoke(TfLiteOpaqueContext* context,
                               TfLiteOpaqueNode* node) {
  const SinhState* s = (const SinhState*)TfLiteOpaqueNodeGetUserData(node);
  const TfLiteOpaqueTensor* in = TfLiteOpaqueNodeGetInput(context, node, 0);
  TfLiteOpaqueTensor* out = TfLiteOpaqueNodeGetOutput(context, node, 0);
  float x, y;
  g_calls.invoke++;
  CHECK_NOT_NULL(s);
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueTensorCopyToBuffer(in, &x, sizeof(x)));
  y = s->scale * sinhf(x);
  return TfLiteOpaqueTensorCopyFromBuffer(out, &y, sizeof(y));
}

static void TestCustomOpWithLegacyCallbacks(void) {
  TfLiteOperator* op = CreateOperator(kTfLiteBuiltinCustom, "Sinh", 1, NULL);
  TfLiteOperatorSetInit(op, SinhInit);
  TfLiteOperatorSetPrepare(op, SinhPrepare);
  TfLiteOperatorSetInvoke(op, SinhInvoke);
  TfLiteOperatorSetFree(op, SinhFree);
  RunCustomSinhModel(op, 1.f, sinhf(1.f));
}

static void TestCustomOpWithNoUserData(void) {
  TfLiteOperator* op = CreateOperator(kTfLiteBuiltinCustom, "Sinh", 1, NULL);
  g_expected_user_data = NULL;
  CHECK_NULL(TfLiteOperatorGetUserData(op));
  CHECK_EQ_INT(kTfLiteOk, TfLiteOperatorSetInitWithData(op, TempOpInitWithData));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteOperatorSetPrepareWithData(op, TempOpPrepareWithData));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteOperatorSetInvokeWithData(op, TempOpInvokeWithData));
  CHECK_EQ_INT(kTfLiteOk, TfLiteOperatorSetFreeWithData(op, TempOpFreeWithData));
  RunCustomSinhModel(op, 42.f, 42.f);
}

static void TestCustomOpWithData(void) {
  void* user_data = (void*)(uintptr_t)345;
  TfLiteOperator* op =
      CreateOperator(kTfLiteBuiltinCustom, "Sinh", 1, user_data);
  g_expected_user_data = user_data;
  CHECK_EQ_PTR(user_data, TfLiteOperatorGetUserData(op));
  CHECK_EQ_INT(kTfLiteOk, TfLiteOperatorSetInitWithData(op, TempOpInitWithData));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteOperatorSetPrepareWithData(op, TempOpPrepareWithData));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteOperatorSetInvokeWithData(op, TempOpInvokeWithData));
  CHECK_EQ_INT(kTfLiteOk, TfLiteOperatorSetFreeWithData(op, TempOpFreeWithData));
  RunCustomSinhModel(op, 42.f, 42.f);
  g_expected_user_data = NULL;
}

/* ---- model metadata (with_metadata.bin: MUL + custom "NPU_OP") ----------- */

/* TfLiteOpaqueContextGetMetadata is newer than TF 2.17.1 (which has only the
 * TfLiteContext::GetModelMetadata hook) and, per ABI.md, than TF 2.19 too; it
 * is looked up at run time so this file links against any of them. When the
 * library exports it, it must agree with the hook. */
typedef TfLiteStatus (*GetMetadataFn)(TfLiteOpaqueContext* context,
                                      const char* name, const char** ptr,
                                      size_t* bytes);

static int g_npu_invoked = 0;
static size_t g_npu_metadata_bytes = 0;

static TfLiteStatus NpuPrepare(TfLiteOpaqueContext* context,
                               TfLiteOpaqueNode* node) {
  (void)context;
  (void)node;
  return kTfLiteOk;
}

static TfLiteStatus NpuInvoke(TfLiteOpaqueContext* context,
                              TfLiteOpaqueNode* node) {
  /* TfLiteOpaqueContext* is the TfLiteContext* (ABI.md §1). */
  const TfLiteContext* ctx = (const TfLiteContext*)context;
  const char* data = NULL;
  size_t bytes = 0;
  GetMetadataFn get_metadata =
      (GetMetadataFn)OptionalLibSymbol("TfLiteOpaqueContextGetMetadata");
  (void)node;
  g_npu_invoked++;

  CHECK(ctx->GetModelMetadata != NULL);
  CHECK_EQ_INT(kTfLiteOk,
               ctx->GetModelMetadata(ctx, "NPU_BYTE_CODE", &data, &bytes));
  CHECK_NOT_NULL(data);
  CHECK(bytes != 0);
  g_npu_metadata_bytes = bytes;
  {
    const char* missing = NULL;
    size_t missing_bytes = 0;
    CHECK_EQ_INT(kTfLiteError, ctx->GetModelMetadata(ctx, "no-such-entry",
                                                     &missing, &missing_bytes));
  }

  if (get_metadata != NULL) {
    const char* data2 = NULL;
    size_t bytes2 = 0;
    CHECK_EQ_INT(kTfLiteOk,
                 get_metadata(context, "NPU_BYTE_CODE", &data2, &bytes2));
    CHECK_EQ_PTR(data, data2);
    CHECK_EQ_INT(bytes, bytes2);
  } else {
    printf("note: TfLiteOpaqueContextGetMetadata not exported by %s; "
           "checked TfLiteContext::GetModelMetadata only\n", TfLiteVersion());
  }
  return kTfLiteOk;
}

static void TestGetMetadata(void) {
  TfLiteModel* model =
      TfLiteModelCreateFromFile(CorpusPath("with_metadata.bin"));
  TfLiteOperator* op;
  TfLiteInterpreterOptions* options;
  TfLiteInterpreter* interpreter;

  CHECK_NOT_NULL(model);
  op = CreateOperator(kTfLiteBuiltinCustom, "NPU_OP", 1, NULL);
  TfLiteOperatorSetPrepare(op, NpuPrepare);
  TfLiteOperatorSetInvoke(op, NpuInvoke);
  options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreterOptionsAddOperator(options, op);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);

  g_npu_invoked = 0;
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  CHECK_EQ_INT(1, g_npu_invoked);
  CHECK(g_npu_metadata_bytes > 0);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteOperatorDelete(op);
  TfLiteModelDelete(model);
}

/* ---- common.h helpers ---------------------------------------------------- */

static void TestIntArray(void) {
  TfLiteIntArray* empty = TfLiteIntArrayCreate(0);
  TfLiteIntArray* a = TfLiteIntArrayCreate(1);
  TfLiteIntArray* b = TfLiteIntArrayCreate(2);
  TfLiteIntArray* c;
  TfLiteIntArray* d = TfLiteIntArrayCreate(2);
  const int b_data[2] = {5, 6};
  const int other[2] = {5, 7};

  CHECK_NOT_NULL(empty);
  CHECK_EQ_INT(0, empty->size);
  CHECK_NOT_NULL(a);
  CHECK_EQ_INT(1, a->size);
  a->data[0] = 1;
  b->data[0] = 5;
  b->data[1] = 6;
  d->data[0] = 6;
  d->data[1] = 6;

  c = TfLiteIntArrayCopy(b);
  CHECK_NOT_NULL(c);
  CHECK(c != b);
  CHECK_EQ_INT(2, c->size);
  CHECK_EQ_INT(5, c->data[0]);
  CHECK_EQ_INT(6, c->data[1]);
  CHECK_NULL(TfLiteIntArrayCopy(NULL));

  CHECK(!TfLiteIntArrayEqual(a, b));
  CHECK(TfLiteIntArrayEqual(b, c));
  CHECK(TfLiteIntArrayEqual(b, b));
  CHECK(!TfLiteIntArrayEqual(c, d));
  CHECK(!TfLiteIntArrayEqual(NULL, a));
  CHECK(!TfLiteIntArrayEqual(a, NULL));
  CHECK(TfLiteIntArrayEqual(NULL, NULL));
  CHECK(TfLiteIntArrayEqualsArray(b, 2, b_data));
  CHECK(!TfLiteIntArrayEqualsArray(b, 2, other));
  CHECK(!TfLiteIntArrayEqualsArray(b, 1, b_data));

  /* sizeof(int) header + one int per element. */
  CHECK_EQ_INT(sizeof(int), TfLiteIntArrayGetSizeInBytes(0));
  CHECK_EQ_INT(sizeof(int) * 4, TfLiteIntArrayGetSizeInBytes(3));

  TfLiteIntArrayFree(empty);
  TfLiteIntArrayFree(a);
  TfLiteIntArrayFree(b);
  TfLiteIntArrayFree(c);
  TfLiteIntArrayFree(d);
  TfLiteIntArrayFree(NULL);
}

static void TestFloatArray(void) {
  TfLiteFloatArray* empty = TfLiteFloatArrayCreate(0);
  TfLiteFloatArray* a = TfLiteFloatArrayCreate(2);
  TfLiteFloatArray* b;
  CHECK_NOT_NULL(empty);
  CHECK_EQ_INT(0, empty->size);
  CHECK_NOT_NULL(a);
  CHECK_EQ_INT(2, a->size);
  a->data[0] = 22.f;
  a->data[1] = 24.f;
  b = TfLiteFloatArrayCopy(a);
  CHECK_NOT_NULL(b);
  CHECK(a != b);
  CHECK_EQ_INT(2, b->size);
  CHECK_EQ_FLOAT(22.f, b->data[0]);
  CHECK_EQ_FLOAT(24.f, b->data[1]);
  CHECK_NULL(TfLiteFloatArrayCopy(NULL));
  CHECK_EQ_INT(sizeof(int) + 3 * sizeof(float),
               TfLiteFloatArrayGetSizeInBytes(3));
  TfLiteFloatArrayFree(empty);
  TfLiteFloatArrayFree(a);
  TfLiteFloatArrayFree(b);
}

static void TestTypeGetName(void) {
  CHECK_STREQ("NOTYPE", TfLiteTypeGetName(kTfLiteNoType));
  CHECK_STREQ("FLOAT32", TfLiteTypeGetName(kTfLiteFloat32));
  CHECK_STREQ("FLOAT16", TfLiteTypeGetName(kTfLiteFloat16));
  CHECK_STREQ("FLOAT64", TfLiteTypeGetName(kTfLiteFloat64));
  CHECK_STREQ("BFLOAT16", TfLiteTypeGetName(kTfLiteBFloat16));
  CHECK_STREQ("INT32", TfLiteTypeGetName(kTfLiteInt32));
  CHECK_STREQ("UINT32", TfLiteTypeGetName(kTfLiteUInt32));
  CHECK_STREQ("UINT8", TfLiteTypeGetName(kTfLiteUInt8));
  CHECK_STREQ("INT8", TfLiteTypeGetName(kTfLiteInt8));
  CHECK_STREQ("INT16", TfLiteTypeGetName(kTfLiteInt16));
  CHECK_STREQ("UINT16", TfLiteTypeGetName(kTfLiteUInt16));
  CHECK_STREQ("INT64", TfLiteTypeGetName(kTfLiteInt64));
  CHECK_STREQ("UINT64", TfLiteTypeGetName(kTfLiteUInt64));
  CHECK_STREQ("BOOL", TfLiteTypeGetName(kTfLiteBool));
  CHECK_STREQ("STRING", TfLiteTypeGetName(kTfLiteString));
  CHECK_STREQ("COMPLEX64", TfLiteTypeGetName(kTfLiteComplex64));
  CHECK_STREQ("COMPLEX128", TfLiteTypeGetName(kTfLiteComplex128));
  CHECK_STREQ("RESOURCE", TfLiteTypeGetName(kTfLiteResource));
  CHECK_STREQ("VARIANT", TfLiteTypeGetName(kTfLiteVariant));
  CHECK_STREQ("INT4", TfLiteTypeGetName(kTfLiteInt4));
}

int main(void) {
  RUN_TEST(TestGetAllocationStrategy);
  RUN_TEST(TestGetBufferAddressStability);
  RUN_TEST(TestGetDataStability);
  RUN_TEST(TestGetDataKnownStep);
  RUN_TEST(TestGetShapeKnownStep);
  RUN_TEST(TestOpaqueTensorDataValidInput);
  RUN_TEST(TestOpaqueTensorDataNullInput);
  RUN_TEST(TestOpaqueDelegateCreateAndDelete);
  RUN_TEST(TestOpaqueDelegateCreateWithNull);
  RUN_TEST(TestOpaqueDelegateDeleteWithNull);
  RUN_TEST(TestOpaqueDelegateGetDataWellFormed);
  RUN_TEST(TestOpaqueDelegateGetDataNotFromOpaqueCreate);
  RUN_TEST(TestOpaqueDelegateGetDataNoDataSet);
  RUN_TEST(TestCustomOpWithSetAndGetTemporaries);
  RUN_TEST(TestCustomOpWithLegacyCallbacks);
  RUN_TEST(TestCustomOpWithNoUserData);
  RUN_TEST(TestCustomOpWithData);
  RUN_TEST(TestGetMetadata);
  RUN_TEST(TestIntArray);
  RUN_TEST(TestFloatArray);
  RUN_TEST(TestTypeGetName);
  printf("c_api_opaque_test: all tests passed\n");
  return 0;
}
