/* Behaviour of TFLite's tflite/core/c/c_api_experimental_test.cc
 * (CApiExperimentalTest.*), the tests that need no delegate, re-expressed in C
 * (see shared/design/CAPI_TESTS.md): op registration through the
 * experimental API (AddBuiltinOp, CreateWithSelectedOps, the op-resolver
 * callbacks with and without fallback), custom tensor allocations, variable
 * tensors, tensor-index accessors and cancellation. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/c/c_api.h"
#include "tensorflow/lite/c/c_api_experimental.h"
#include "tensorflow/lite/c/c_api_opaque.h"
#include "tensorflow/lite/c/common.h"

#include "check.h"
#include "test_util.h"

/* ---- ADD (float32, same shapes, no activation) as a TfLiteRegistration -- */

static int g_add_prepare_calls = 0;
static int g_add_invoke_calls = 0;

static size_t NumElements(const TfLiteIntArray* dims) {
  size_t n = 1;
  int i;
  for (i = 0; i < dims->size; ++i) n *= (size_t)dims->data[i];
  return n;
}

static TfLiteStatus AddPrepare(TfLiteContext* context, TfLiteNode* node) {
  const TfLiteTensor* a;
  TfLiteTensor* out;
  g_add_prepare_calls++;
  CHECK_EQ_INT(2, node->inputs->size);
  CHECK_EQ_INT(1, node->outputs->size);
  a = &context->tensors[node->inputs->data[0]];
  out = &context->tensors[node->outputs->data[0]];
  CHECK_EQ_INT(kTfLiteFloat32, a->type);
  /* ResizeTensor takes ownership of the new dims array. */
  return context->ResizeTensor(context, out, TfLiteIntArrayCopy(a->dims));
}

static TfLiteStatus AddInvoke(TfLiteContext* context, TfLiteNode* node) {
  const TfLiteTensor* a = &context->tensors[node->inputs->data[0]];
  const TfLiteTensor* b = &context->tensors[node->inputs->data[1]];
  TfLiteTensor* out = &context->tensors[node->outputs->data[0]];
  size_t i, n = NumElements(a->dims);
  g_add_invoke_calls++;
  CHECK_EQ_INT(n, NumElements(b->dims));
  CHECK_EQ_INT(n, NumElements(out->dims));
  for (i = 0; i < n; ++i) out->data.f[i] = a->data.f[i] + b->data.f[i];
  return kTfLiteOk;
}

static const TfLiteRegistration* AddRegistration(void) {
  /* Zero-initialised apart from the callbacks: every field the runtime may
   * read (registration_external, async_kernel, inplace_operator) is 0. */
  static TfLiteRegistration reg;
  static int initialised = 0;
  if (!initialised) {
    memset(&reg, 0, sizeof(reg));
    reg.prepare = AddPrepare;
    reg.invoke = AddInvoke;
    reg.builtin_code = kTfLiteBuiltinAdd;
    reg.version = 1;
    initialised = 1;
  }
  return &reg;
}

/* ---- ADD as a TfLiteOperator (opaque API) -------------------------------- */

static TfLiteStatus AddPrepareOpaque(TfLiteOpaqueContext* context,
                                     TfLiteOpaqueNode* node) {
  const TfLiteOpaqueTensor* a = TfLiteOpaqueNodeGetInput(context, node, 0);
  TfLiteOpaqueTensor* out = TfLiteOpaqueNodeGetOutput(context, node, 0);
  TfLiteIntArray* dims;
  int i;
  g_add_prepare_calls++;
  CHECK_EQ_INT(2, TfLiteOpaqueNodeNumberOfInputs(node));
  CHECK_EQ_INT(1, TfLiteOpaqueNodeNumberOfOutputs(node));
  CHECK_NOT_NULL(a);
  CHECK_NOT_NULL(out);
  dims = TfLiteIntArrayCreate(TfLiteOpaqueTensorNumDims(a));
  for (i = 0; i < dims->size; ++i) dims->data[i] = TfLiteOpaqueTensorDim(a, i);
  return TfLiteOpaqueContextResizeTensor(context, out, dims);
}

static TfLiteStatus AddInvokeOpaque(TfLiteOpaqueContext* context,
                                    TfLiteOpaqueNode* node) {
  const TfLiteOpaqueTensor* a = TfLiteOpaqueNodeGetInput(context, node, 0);
  const TfLiteOpaqueTensor* b = TfLiteOpaqueNodeGetInput(context, node, 1);
  TfLiteOpaqueTensor* out = TfLiteOpaqueNodeGetOutput(context, node, 0);
  const float* pa = (const float*)TfLiteOpaqueTensorData(a);
  const float* pb = (const float*)TfLiteOpaqueTensorData(b);
  float* po = (float*)TfLiteOpaqueTensorData(out);
  size_t i, n = TfLiteOpaqueTensorByteSize(a) / sizeof(float);
  g_add_invoke_calls++;
  CHECK_EQ_INT(n * sizeof(float), TfLiteOpaqueTensorByteSize(b));
  CHECK_EQ_INT(n * sizeof(float), TfLiteOpaqueTensorByteSize(out));
  for (i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
  return kTfLiteOk;
}

static TfLiteOperator* NewAddOperator(void) {
  TfLiteOperator* op = CreateOperator(kTfLiteBuiltinAdd, NULL, 1, NULL);
  TfLiteOperatorSetPrepare(op, AddPrepareOpaque);
  TfLiteOperatorSetInvoke(op, AddInvokeOpaque);
  return op;
}

/* ---- Sinh (custom_sinh.bin) in both APIs -------------------------------- */

static TfLiteStatus SinhPrepareOpaque(TfLiteOpaqueContext* context,
                                      TfLiteOpaqueNode* node) {
  (void)context;
  (void)node;
  return kTfLiteOk;
}

static TfLiteStatus SinhInvokeOpaque(TfLiteOpaqueContext* context,
                                     TfLiteOpaqueNode* node) {
  const TfLiteOpaqueTensor* in;
  TfLiteOpaqueTensor* out;
  float x, y;
  CHECK_EQ_INT(1, TfLiteOpaqueNodeNumberOfInputs(node));
  CHECK_EQ_INT(1, TfLiteOpaqueNodeNumberOfOutputs(node));
  in = TfLiteOpaqueNodeGetInput(context, node, 0);
  out = TfLiteOpaqueNodeGetOutput(context, node, 0);
  CHECK_EQ_INT(sizeof(float), TfLiteOpaqueTensorByteSize(in));
  memcpy(&x, TfLiteOpaqueTensorData(in), sizeof(float));
  y = sinhf(x);
  return TfLiteOpaqueTensorCopyFromBuffer(out, &y, sizeof(y));
}

static TfLiteStatus SinhPrepare(TfLiteContext* context, TfLiteNode* node) {
  (void)context;
  (void)node;
  return kTfLiteOk;
}

static TfLiteStatus SinhInvoke(TfLiteContext* context, TfLiteNode* node) {
  const TfLiteTensor* in;
  TfLiteTensor* out;
  float y;
  CHECK_EQ_INT(1, node->inputs->size);
  CHECK_EQ_INT(1, node->outputs->size);
  in = &context->tensors[node->inputs->data[0]];
  out = &context->tensors[node->outputs->data[0]];
  CHECK_EQ_INT(sizeof(float), TfLiteTensorByteSize(in));
  y = sinhf(in->data.f[0]);
  return TfLiteTensorCopyFromBuffer(out, &y, sizeof(y));
}

static const TfLiteRegistration* SinhRegistration(void) {
  static TfLiteRegistration reg;
  static int initialised = 0;
  if (!initialised) {
    memset(&reg, 0, sizeof(reg));
    reg.prepare = SinhPrepare;
    reg.invoke = SinhInvoke;
    reg.builtin_code = kTfLiteBuiltinCustom;
    reg.custom_name = "Sinh";
    reg.version = 1;
    initialised = 1;
  }
  return &reg;
}

/* ---- op-resolver callbacks ----------------------------------------------- */

typedef struct ResolverData {
  bool called_for_add;
  TfLiteOperator* add_op;  /* returned by the external builtin resolver */
  TfLiteOperator* sinh_op; /* returned by the external custom resolver */
} ResolverData;

static const TfLiteRegistration* FindBuiltin(void* user_data,
                                             TfLiteBuiltinOperator op,
                                             int version) {
  ResolverData* data = (ResolverData*)user_data;
  if (op == kTfLiteBuiltinAdd && version == 1) {
    data->called_for_add = true;
    return AddRegistration();
  }
  return NULL;
}

static const TfLiteRegistration* FindCustom(void* user_data, const char* op,
                                            int version) {
  (void)user_data;
  if (strcmp(op, "Sinh") == 0 && version == 1) return SinhRegistration();
  return NULL;
}

static const TfLiteRegistration* FindBuiltinNone(void* user_data,
                                                 TfLiteBuiltinOperator op,
                                                 int version) {
  (void)user_data;
  (void)op;
  (void)version;
  return NULL;
}

static const TfLiteRegistration* FindCustomNone(void* user_data,
                                                const char* op, int version) {
  (void)user_data;
  (void)op;
  (void)version;
  return NULL;
}

static const TfLiteOperator* FindBuiltinExternal(void* user_data, int op,
                                                 int version) {
  ResolverData* data = (ResolverData*)user_data;
  if (op == kTfLiteBuiltinAdd && version == 1) {
    data->called_for_add = true;
    return data->add_op;
  }
  return NULL;
}

static const TfLiteOperator* FindCustomExternal(void* user_data,
                                                const char* op, int version) {
  ResolverData* data = (ResolverData*)user_data;
  if (strcmp(op, "Sinh") == 0 && version == 1) return data->sinh_op;
  return NULL;
}

static const TfLiteOperator* FindBuiltinExternalNone(void* user_data, int op,
                                                     int version) {
  (void)user_data;
  (void)op;
  (void)version;
  return NULL;
}

static const TfLiteOperator* FindCustomExternalNone(void* user_data,
                                                    const char* op,
                                                    int version) {
  (void)user_data;
  (void)op;
  (void)version;
  return NULL;
}

/* ---- shared flows -------------------------------------------------------- */

/* add.bin computes y = 3x on [1,8,8,3]. Allocates, resets variables, fills
 * the input with 0.5*i and checks the output. */
static void RunAddModel(TfLiteInterpreter* interpreter) {
  TfLiteTensor* in;
  const TfLiteTensor* out;
  float input[192], output[192];
  int i;
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterResetVariableTensors(interpreter));
  in = TfLiteInterpreterGetInputTensor(interpreter, 0);
  CHECK_NOT_NULL(in);
  CHECK_EQ_INT(sizeof(input), TfLiteTensorByteSize(in));
  for (i = 0; i < 192; ++i) input[i] = 0.5f * (float)i;
  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyFromBuffer(in, input, sizeof(input)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  out = TfLiteInterpreterGetOutputTensor(interpreter, 0);
  CHECK_NOT_NULL(out);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyToBuffer(out, output, sizeof(output)));
  for (i = 0; i < 192; ++i) CHECK_EQ_FLOAT(3.f * input[i], output[i]);
}

/* custom_sinh.bin: [1] float32 -> sinh. */
static void RunSinhModel(TfLiteInterpreter* interpreter) {
  float input = 1.0f, output = 0.f;
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyFromBuffer(
                   TfLiteInterpreterGetInputTensor(interpreter, 0), &input,
                   sizeof(input)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyToBuffer(
                   TfLiteInterpreterGetOutputTensor(interpreter, 0), &output,
                   sizeof(output)));
  CHECK_EQ_FLOAT(sinhf(input), output);
}

static void ResetAddCounters(void) {
  g_add_prepare_calls = 0;
  g_add_invoke_calls = 0;
}

/* ---- tests --------------------------------------------------------------- */

static void TestSmoke(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;

  CHECK_NOT_NULL(model);
  ResetAddCounters();
  TfLiteInterpreterOptionsAddBuiltinOp(options, kTfLiteBuiltinAdd,
                                       AddRegistration(), 1, 1);
  TfLiteInterpreterOptionsSetUseNNAPI(options, false);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  RunAddModel(interpreter);
  /* Our registration overrides the builtin ADD for both nodes. */
  CHECK_EQ_INT(2, g_add_prepare_calls);
  CHECK_EQ_INT(2, g_add_invoke_calls);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

static void TestSelectedBuiltins(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;

  CHECK_NOT_NULL(model);
  ResetAddCounters();
  TfLiteInterpreterOptionsAddBuiltinOp(options, kTfLiteBuiltinAdd,
                                       AddRegistration(), 1, 1);
  interpreter = TfLiteInterpreterCreateWithSelectedOps(model, options);
  CHECK_NOT_NULL(interpreter);
  RunAddModel(interpreter);
  CHECK_EQ_INT(2, g_add_invoke_calls);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

/* With CreateWithSelectedOps the standard builtins are not available. */
static void TestMissingBuiltin(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  ErrorCollector errors;

  ErrorCollectorReset(&errors);
  CHECK_NOT_NULL(model);
  TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, &errors);
  interpreter = TfLiteInterpreterCreateWithSelectedOps(model, options);
  CHECK_NULL(interpreter);
  CHECK_CONTAINS(errors.messages,
                 "Didn't find op for builtin opcode 'ADD' version '1'.");
  /* Real TFLite: one report from the op lookup (the message goes on with
   * " An older version of this builtin might be supported. ..."), then
   * "Registration failed.\n" from the interpreter builder. */
  CHECK_CONTAINS(errors.messages, "Registration failed.");
  CHECK_EQ_INT(2, errors.num_calls);

  TfLiteInterpreterDelete(interpreter); /* NULL is accepted */
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

static void TestSetOpResolver(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  ResolverData data = {false, NULL, NULL};

  CHECK_NOT_NULL(model);
  ResetAddCounters();
  TfLiteInterpreterOptionsSetOpResolver(options, FindBuiltin, FindCustom,
                                        &data);
  CHECK(!data.called_for_add);
  interpreter = TfLiteInterpreterCreateWithSelectedOps(model, options);
  CHECK_NOT_NULL(interpreter);
  RunAddModel(interpreter);
  CHECK(data.called_for_add);
  CHECK_EQ_INT(2, g_add_invoke_calls);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

static void TestSetOpResolverExternal(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  ResolverData data = {false, NULL, NULL};

  CHECK_NOT_NULL(model);
  ResetAddCounters();
  data.add_op = NewAddOperator();
  TfLiteInterpreterOptionsSetOpResolverExternal(options, FindBuiltinExternal,
                                                FindCustomExternal, &data);
  CHECK(!data.called_for_add);
  interpreter = TfLiteInterpreterCreateWithSelectedOps(model, options);
  CHECK_NOT_NULL(interpreter);
  RunAddModel(interpreter);
  CHECK(data.called_for_add);
  CHECK_EQ_INT(2, g_add_invoke_calls);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
  TfLiteOperatorDelete(data.add_op);
}

/* Builtin op found by the primary (TfLiteOperator) resolver. */
static void TestSetOpResolverExternalWithFallbackBuiltinNormal(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  ResolverData data = {false, NULL, NULL};

  CHECK_NOT_NULL(model);
  ResetAddCounters();
  data.add_op = NewAddOperator();
  TfLiteInterpreterOptionsSetOpResolverExternalWithFallback(
      options, FindBuiltinExternal, FindCustomExternal, FindBuiltinNone,
      FindCustomNone, &data);
  CHECK(!data.called_for_add);
  interpreter = TfLiteInterpreterCreateWithSelectedOps(model, options);
  CHECK_NOT_NULL(interpreter);
  RunAddModel(interpreter);
  CHECK(data.called_for_add);
  CHECK_EQ_INT(2, g_add_invoke_calls);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
  TfLiteOperatorDelete(data.add_op);
}

/* Builtin op not found by the primary resolver: the TfLiteRegistration
 * fallback answers. */
static void TestSetOpResolverExternalWithFallbackBuiltinFallback(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  ResolverData data = {false, NULL, NULL};

  CHECK_NOT_NULL(model);
  ResetAddCounters();
  TfLiteInterpreterOptionsSetOpResolverExternalWithFallback(
      options, FindBuiltinExternalNone, FindCustomExternalNone, FindBuiltin,
      FindCustom, &data);
  CHECK(!data.called_for_add);
  interpreter = TfLiteInterpreterCreateWithSelectedOps(model, options);
  CHECK_NOT_NULL(interpreter);
  RunAddModel(interpreter);
  CHECK(data.called_for_add);
  CHECK_EQ_INT(2, g_add_invoke_calls);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

/* Custom op found by the primary resolver. */
static void TestSetOpResolverExternalWithFallbackCustomNormal(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("custom_sinh.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  ResolverData data = {false, NULL, NULL};

  CHECK_NOT_NULL(model);
  data.sinh_op = CreateOperator(kTfLiteBuiltinCustom, "Sinh", 1, NULL);
  TfLiteOperatorSetPrepare(data.sinh_op, SinhPrepareOpaque);
  TfLiteOperatorSetInvoke(data.sinh_op, SinhInvokeOpaque);
  TfLiteInterpreterOptionsSetOpResolverExternalWithFallback(
      options, FindBuiltinExternal, FindCustomExternal, FindBuiltinNone,
      FindCustomNone, &data);
  interpreter = TfLiteInterpreterCreateWithSelectedOps(model, options);
  CHECK_NOT_NULL(interpreter);
  RunSinhModel(interpreter);
  CHECK(!data.called_for_add);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
  TfLiteOperatorDelete(data.sinh_op);
}

/* Custom op found only by the TfLiteRegistration fallback. */
static void TestSetOpResolverExternalWithFallbackCustomFallback(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("custom_sinh.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  ResolverData data = {false, NULL, NULL};

  CHECK_NOT_NULL(model);
  TfLiteInterpreterOptionsSetOpResolverExternalWithFallback(
      options, FindBuiltinExternalNone, FindCustomExternalNone, FindBuiltin,
      FindCustom, &data);
  interpreter = TfLiteInterpreterCreateWithSelectedOps(model, options);
  CHECK_NOT_NULL(interpreter);
  RunSinhModel(interpreter);
  CHECK(!data.called_for_add);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

/* 64 = tflite::kDefaultTensorAlignment. */
static void* AlignedBuffer(size_t bytes) {
  void* p = NULL;
  CHECK_EQ_INT(0, posix_memalign(&p, 64, bytes < 64 ? 64 : bytes));
  return p;
}

static void TestSetCustomAllocationForInputTensorSuccess(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  const TfLiteTensor* in;
  TfLiteCustomAllocation alloc, misaligned;
  int tensor_index;
  float* buf;
  int i;

  CHECK_NOT_NULL(model);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  tensor_index = TfLiteInterpreterGetInputTensorIndex(interpreter, 0);
  CHECK_EQ_INT(1, tensor_index);

  /* A NULL allocation is rejected. */
  CHECK_EQ_INT(kTfLiteError,
               TfLiteInterpreterSetCustomAllocationForTensor(
                   interpreter, tensor_index, NULL,
                   kTfLiteCustomAllocationFlagsNone));

  in = TfLiteInterpreterGetInputTensor(interpreter, 0);
  CHECK_EQ_INT(192 * sizeof(float), in->bytes);
  buf = (float*)AlignedBuffer(in->bytes + 64);

  /* Not 64-byte aligned: rejected unless the check is skipped. */
  misaligned.data = (char*)buf + 4;
  misaligned.bytes = in->bytes;
  CHECK_EQ_INT(kTfLiteError,
               TfLiteInterpreterSetCustomAllocationForTensor(
                   interpreter, tensor_index, &misaligned,
                   kTfLiteCustomAllocationFlagsNone));

  alloc.data = buf;
  alloc.bytes = in->bytes;
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterSetCustomAllocationForTensor(
                              interpreter, tensor_index, &alloc,
                              kTfLiteCustomAllocationFlagsNone));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  in = TfLiteInterpreterGetInputTensor(interpreter, 0);
  CHECK_EQ_INT(kTfLiteCustom, in->allocation_type);
  CHECK_EQ_PTR(buf, TfLiteTensorData(in));

  /* Writing the caller's buffer directly is writing the input. */
  for (i = 0; i < 192; ++i) buf[i] = (float)i;
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  {
    const float* out = (const float*)TfLiteTensorData(
        TfLiteInterpreterGetOutputTensor(interpreter, 0));
    CHECK_NOT_NULL(out);
    for (i = 0; i < 192; ++i) CHECK_EQ_FLOAT(3.f * (float)i, out[i]);
  }

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
  free(buf); /* the runtime never owns a custom allocation */
}

static void TestSetCustomAllocationForOutputTensorSuccess(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  const TfLiteTensor* out;
  TfLiteCustomAllocation alloc;
  int dims[1] = {2};
  float input[2] = {1.f, 3.f};
  float output[2] = {0.f, 0.f};
  int tensor_index;
  float* buf;

  CHECK_NOT_NULL(model);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterResizeInputTensor(interpreter, 0, dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));

  tensor_index = TfLiteInterpreterGetOutputTensorIndex(interpreter, 0);
  CHECK_EQ_INT(2, tensor_index);
  out = TfLiteInterpreterGetOutputTensor(interpreter, 0);
  CHECK_EQ_INT(2 * sizeof(float), out->bytes);
  CHECK_EQ_INT(kTfLiteError,
               TfLiteInterpreterSetCustomAllocationForTensor(
                   interpreter, tensor_index, NULL,
                   kTfLiteCustomAllocationFlagsNone));
  buf = (float*)AlignedBuffer(out->bytes);
  alloc.data = buf;
  alloc.bytes = out->bytes;
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterSetCustomAllocationForTensor(
                              interpreter, tensor_index, &alloc,
                              kTfLiteCustomAllocationFlagsNone));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));

  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyFromBuffer(
                   TfLiteInterpreterGetInputTensor(interpreter, 0), input,
                   sizeof(input)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  out = TfLiteInterpreterGetOutputTensor(interpreter, 0);
  CHECK_EQ_PTR(buf, TfLiteTensorData(out));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyToBuffer(out, output, sizeof(output)));
  CHECK_EQ_FLOAT(3.f, output[0]);
  CHECK_EQ_FLOAT(9.f, output[1]);
  /* The result landed in the caller's buffer. */
  CHECK_EQ_FLOAT(3.f, buf[0]);
  CHECK_EQ_FLOAT(9.f, buf[1]);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
  free(buf);
}

static void TestVariableTensors(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreter* interpreter;

  CHECK_NOT_NULL(model);
  interpreter = TfLiteInterpreterCreate(model, NULL);
  CHECK_NOT_NULL(interpreter);
  /* add.bin has no variable tensors. */
  CHECK_EQ_INT(0, TfLiteInterpreterGetVariableTensorCount(interpreter));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(0, TfLiteInterpreterGetVariableTensorCount(interpreter));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterResetVariableTensors(interpreter));

  TfLiteInterpreterDelete(interpreter);
  TfLiteModelDelete(model);
}

static void TestTensorIndices(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreter* interpreter;
  const int* inputs;
  const int* outputs;

  CHECK_NOT_NULL(model);
  interpreter = TfLiteInterpreterCreate(model, NULL);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));

  inputs = TfLiteInterpreterInputTensorIndices(interpreter);
  outputs = TfLiteInterpreterOutputTensorIndices(interpreter);
  CHECK_NOT_NULL(inputs);
  CHECK_NOT_NULL(outputs);
  CHECK_EQ_INT(1, TfLiteInterpreterGetInputTensorCount(interpreter));
  CHECK_EQ_INT(1, TfLiteInterpreterGetOutputTensorCount(interpreter));
  CHECK_EQ_INT(1, inputs[0]);
  CHECK_EQ_INT(2, outputs[0]);
  CHECK_EQ_INT(1, TfLiteInterpreterGetInputTensorIndex(interpreter, 0));
  CHECK_EQ_INT(2, TfLiteInterpreterGetOutputTensorIndex(interpreter, 0));
  /* Index -> tensor agrees with the input/output accessors. */
  CHECK_EQ_PTR(TfLiteInterpreterGetInputTensor(interpreter, 0),
               TfLiteInterpreterGetTensor(interpreter, inputs[0]));
  CHECK_EQ_PTR(TfLiteInterpreterGetOutputTensor(interpreter, 0),
               TfLiteInterpreterGetTensor(interpreter, outputs[0]));
  CHECK_STREQ("add", TfLiteTensorName(TfLiteInterpreterGetTensor(interpreter, 0)));

  TfLiteInterpreterDelete(interpreter);
  TfLiteModelDelete(model);
}

static void TestInterpreterCancel(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;

  CHECK_NOT_NULL(model);
  /* Cancellation is off by default: Cancel reports an error. */
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(kTfLiteError, TfLiteInterpreterCancel(interpreter));
  TfLiteInterpreterDelete(interpreter);

  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterOptionsEnableCancellation(options, true));
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterCancel(interpreter));
  /* A cancel that arrives while nothing runs does not poison the next
   * Invoke (each Invoke re-arms the flag). */
  RunAddModel(interpreter);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

int main(void) {
  RUN_TEST(TestSmoke);
  RUN_TEST(TestSelectedBuiltins);
  RUN_TEST(TestMissingBuiltin);
  RUN_TEST(TestSetOpResolver);
  RUN_TEST(TestSetOpResolverExternal);
  RUN_TEST(TestSetOpResolverExternalWithFallbackBuiltinNormal);
  RUN_TEST(TestSetOpResolverExternalWithFallbackBuiltinFallback);
  RUN_TEST(TestSetOpResolverExternalWithFallbackCustomNormal);
  RUN_TEST(TestSetOpResolverExternalWithFallbackCustomFallback);
  RUN_TEST(TestSetCustomAllocationForInputTensorSuccess);
  RUN_TEST(TestSetCustomAllocationForOutputTensorSuccess);
  RUN_TEST(TestVariableTensors);
  RUN_TEST(TestTensorIndices);
  RUN_TEST(TestInterpreterCancel);
  printf("c_api_experimental_test: all tests passed\n");
  return 0;
}
