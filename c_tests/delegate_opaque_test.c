/* Delegates through the opaque API (c_api_opaque.h: TfLiteOpaqueDelegateBuilder,
 * TfLiteOpaqueContext*, TfLiteOperator kernels), re-expressing TFLite's tests
 * (shared/design/CAPI_TESTS.md):
 *  - CApiSimple.DelegateExternal_GetExecutionPlan and c_test.c's
 *    TestTfLiteOpaqueContextGetExecutionPlan;
 *  - c_test.c's five report-error macro cases (TF_LITE_OPAQUE_ENSURE_MSG /
 *    ENSURE / ENSURE_EQ / ENSURE_TYPES_EQ / ENSURE_NEAR in Prepare);
 *  - CApiSimple.OpaqueDelegate_ReplaceNodeSubsetsWithDelegateKernels,
 *    OpaqueDelegate_TransferOperatorOwnershipWithoutNodeToReplace (the runtime
 *    owns the TfLiteOperator even when no node is replaced: run under valgrind),
 *    OpaqueDelegate_TfLiteOpaqueTensorGet, OpaqueContextGetNodeAndRegistration,
 *    TfLiteOpaqueContextResizeTensor;
 *  - DelegateExternal_MarkSubgraphAsDelegationSkippable (observed as the
 *    delegate not being applied to the marked subgraph);
 *  - CApiExperimentalTest.SetAllowBufferHandleOutputFalse / True with an
 *    opaque delegate's buffer-handle callbacks;
 *  - TestFP16Delegation.ReplaceNodeSubsetsWithDelegateKernels_MultipleDelegateKernels
 *    on an equivalent 8-node graph (c_tests/data/delegate_chain8.tflite): nodes
 *    1, 3, 7 replaced, an execution plan of 7.
 * Every check here also holds against the real TensorFlow Lite library. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/builtin_ops.h"
#include "tensorflow/lite/c/c_api.h"
#include "tensorflow/lite/c/c_api_experimental.h"
#include "tensorflow/lite/c/c_api_opaque.h"
#include "tensorflow/lite/c/common.h"

#include "check.h"
#include "test_util.h"

/* "<directory of this file>/data/<name>". */
static const char* DataPath(const char* name) {
  static char out[4096];
  const char* file = __FILE__;
  const char* slash = strrchr(file, '/');
  FILE* f;
  if (slash)
    snprintf(out, sizeof(out), "%.*s/data/%s", (int)(slash - file), file, name);
  else
    snprintf(out, sizeof(out), "data/%s", name);
  f = fopen(out, "rb");
  if (f == NULL) {
    fprintf(stderr, "FATAL: test model '%s' not found\n", out);
    exit(2);
  }
  fclose(f);
  return out;
}

static TfLiteInterpreter* CreateWithDelegate(const char* path,
                                             TfLiteOpaqueDelegate* delegate,
                                             ErrorCollector* errors) {
  TfLiteModel* model = TfLiteModelCreateFromFile(path);
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  CHECK_NOT_NULL(model);
  if (errors != NULL) {
    ErrorCollectorReset(errors);
    TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, errors);
  }
  TfLiteInterpreterOptionsAddDelegate(options, delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  /* Both may go right after creation. */
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
  return interpreter;
}

/* ---- GetExecutionPlan ---------------------------------------------------- */

static TfLiteStatus PrepareThatChecksExecutionPlanSizeEqualsTwo(
    TfLiteOpaqueContext* context, TfLiteOpaqueDelegate* delegate, void* data) {
  TfLiteIntArray* plan = NULL;
  (void)delegate;
  *(bool*)data = true;
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetExecutionPlan(context, &plan));
  CHECK_EQ_INT(2, plan->size);
  CHECK_EQ_INT(0, plan->data[0]);
  CHECK_EQ_INT(1, plan->data[1]);
  return kTfLiteOk;
}

static void TestGetExecutionPlan(void) {
  bool prepared = false;
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteOpaqueDelegate* delegate;
  TfLiteInterpreter* interpreter;
  memset(&builder, 0, sizeof(builder));
  builder.data = &prepared;
  builder.Prepare = PrepareThatChecksExecutionPlanSizeEqualsTwo;
  delegate = TfLiteOpaqueDelegateCreate(&builder);
  interpreter = CreateWithDelegate(CorpusPath("add.bin"), delegate, NULL);
  CHECK_NOT_NULL(interpreter);
  CHECK(prepared);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  TfLiteInterpreterDelete(interpreter);
  TfLiteOpaqueDelegateDelete(delegate);
}

/* ---- c_test.c: the report-error macros in Prepare ------------------------- */

static TfLiteStatus EnsureMsgPrepare(TfLiteOpaqueContext* context,
                                     TfLiteOpaqueDelegate* delegate,
                                     void* data) {
  (void)delegate;
  *(bool*)data = true;
  TF_LITE_OPAQUE_ENSURE_MSG(context, false, "false was not true!!!");
  return kTfLiteOk;
}

static TfLiteStatus EnsurePrepare(TfLiteOpaqueContext* context,
                                  TfLiteOpaqueDelegate* delegate, void* data) {
  (void)delegate;
  *(bool*)data = true;
  TF_LITE_OPAQUE_ENSURE(context, false);
  return kTfLiteOk;
}

static TfLiteStatus EnsureEqPrepare(TfLiteOpaqueContext* context,
                                    TfLiteOpaqueDelegate* delegate,
                                    void* data) {
  (void)delegate;
  *(bool*)data = true;
  TF_LITE_OPAQUE_ENSURE_EQ(context, 1, 2);
  return kTfLiteOk;
}

static TfLiteStatus EnsureTypesEqPrepare(TfLiteOpaqueContext* context,
                                         TfLiteOpaqueDelegate* delegate,
                                         void* data) {
  (void)delegate;
  *(bool*)data = true;
  TF_LITE_OPAQUE_ENSURE_TYPES_EQ(context, '1', 2);
  return kTfLiteOk;
}

static TfLiteStatus EnsureNearPrepare(TfLiteOpaqueContext* context,
                                      TfLiteOpaqueDelegate* delegate,
                                      void* data) {
  (void)delegate;
  *(bool*)data = true;
  TF_LITE_OPAQUE_ENSURE_NEAR(context, 3, 10, 1);
  return kTfLiteOk;
}

typedef TfLiteStatus (*OpaquePrepareFn)(TfLiteOpaqueContext*,
                                        TfLiteOpaqueDelegate*, void*);

/* The delegate's Prepare is called, reports through the interpreter's error
 * reporter and fails, so creation fails gracefully. */
static void RunReportErrorMacro(OpaquePrepareFn prepare, const char* expected) {
  bool prepared = false;
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteOpaqueDelegate* delegate;
  ErrorCollector errors;
  memset(&builder, 0, sizeof(builder));
  builder.data = &prepared;
  builder.Prepare = prepare;
  delegate = TfLiteOpaqueDelegateCreate(&builder);
  CHECK_NULL(CreateWithDelegate(CorpusPath("add.bin"), delegate, &errors));
  CHECK(prepared);
  CHECK_CONTAINS(errors.messages, "delegate_opaque_test.c");
  CHECK_CONTAINS(errors.messages, expected);
  TfLiteOpaqueDelegateDelete(delegate);
}

static void TestReportErrorMacroEnsureMsg(void) {
  RunReportErrorMacro(EnsureMsgPrepare, "false was not true!!!");
}

static void TestReportErrorMacroEnsure(void) {
  RunReportErrorMacro(EnsurePrepare, "false was not true.");
}

static void TestReportErrorMacroEnsureEq(void) {
  RunReportErrorMacro(EnsureEqPrepare, "1 != 2 (1 != 2)");
}

static void TestReportErrorMacroEnsureTypesEq(void) {
  RunReportErrorMacro(EnsureTypesEqPrepare, "'1' != 2 (");
}

static void TestReportErrorMacroEnsureNear(void) {
  RunReportErrorMacro(EnsureNearPrepare, "3 not near 10 (3.000000 != 10.000000)");
}

/* ---- ReplaceNodeSubsetsWithDelegateKernels --------------------------------- */

typedef struct DelegateState {
  bool prepared;
  TfLiteOpaqueDelegate* delegate;
  int nodes_to_replace[16];
  int num_nodes_to_replace;
  int inits;
  int frees;
  const TfLiteIntArray* nodes; /* what Prepare replaces (NULL: the plan) */
} DelegateState;

static DelegateState* g_state;

typedef struct OpState {
  bool init_called;
} OpState;

static void* RecordingInit(void* user_data, TfLiteOpaqueContext* context,
                           const char* buffer, size_t length) {
  const TfLiteOpaqueDelegateParams* params =
      (const TfLiteOpaqueDelegateParams*)buffer;
  DelegateState* state = (DelegateState*)params->delegate_data;
  OpState* op = (OpState*)malloc(sizeof(OpState));
  int i;
  (void)user_data;
  (void)context;
  (void)length;
  /* The runtime passes the opaque delegate and its builder's data. */
  CHECK_EQ_PTR(g_state->delegate, params->delegate);
  CHECK_EQ_PTR(g_state, state);
  CHECK(state->prepared);
  for (i = 0; i < params->nodes_to_replace->size; ++i)
    state->nodes_to_replace[state->num_nodes_to_replace++] =
        params->nodes_to_replace->data[i];
  state->inits++;
  op->init_called = true;
  return op;
}

static void RecordingFree(void* user_data, TfLiteOpaqueContext* context,
                          void* buffer) {
  (void)user_data;
  (void)context;
  CHECK(((OpState*)buffer)->init_called);
  free(buffer);
  g_state->frees++;
}

static TfLiteOperator* CreateRecordingKernel(void) {
  TfLiteOperator* op = CreateOperator(kTfLiteBuiltinDelegate,
                                      "TEST DELEGATE KERNEL", 1, NULL);
  TfLiteOperatorSetInitWithData(op, RecordingInit);
  TfLiteOperatorSetFreeWithData(op, RecordingFree);
  return op;
}

static TfLiteStatus ReplacingPrepare(TfLiteOpaqueContext* context,
                                     TfLiteOpaqueDelegate* delegate,
                                     void* data) {
  DelegateState* state = (DelegateState*)data;
  TfLiteIntArray* plan = NULL;
  TfLiteOpaqueNode* node = NULL;
  TfLiteOperator* reg = NULL;
  state->prepared = true;
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetExecutionPlan(context, &plan));
  CHECK_EQ_INT(2, plan->size);
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetNodeAndRegistration(
                              context, 0, &node, &reg));
  CHECK_NOT_NULL(node);
  CHECK_NOT_NULL(reg);
  /* The runtime owns the operator from here on, whatever is replaced. */
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteOpaqueContextReplaceNodeSubsetsWithDelegateKernels(
                   context, CreateRecordingKernel(),
                   state->nodes ? state->nodes : plan, delegate));
  return kTfLiteOk;
}

static void RunReplace(const TfLiteIntArray* nodes, int expected_nodes) {
  DelegateState state;
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteInterpreter* interpreter;
  int i;
  memset(&state, 0, sizeof(state));
  memset(&builder, 0, sizeof(builder));
  state.nodes = nodes;
  builder.data = &state;
  builder.Prepare = ReplacingPrepare;
  state.delegate = TfLiteOpaqueDelegateCreate(&builder);
  g_state = &state;
  interpreter = CreateWithDelegate(CorpusPath("add.bin"), state.delegate, NULL);
  CHECK_NOT_NULL(interpreter);
  CHECK(state.prepared);
  CHECK_EQ_INT(expected_nodes, state.num_nodes_to_replace);
  /* add.bin: nodes 0 then 1, in one partition. */
  for (i = 0; i < expected_nodes; ++i) CHECK_EQ_INT(i, state.nodes_to_replace[i]);
  CHECK_EQ_INT(expected_nodes > 0 ? 1 : 0, state.inits);
  TfLiteInterpreterDelete(interpreter);
  CHECK_EQ_INT(state.inits, state.frees);
  TfLiteOpaqueDelegateDelete(state.delegate);
  g_state = NULL;
}

static void TestOpaqueReplaceNodeSubsetsWithDelegateKernels(void) {
  RunReplace(NULL, 2);
}

static void TestTransferOperatorOwnershipWithoutNodeToReplace(void) {
  TfLiteIntArray* none = TfLiteIntArrayCreate(0);
  RunReplace(none, 0);
  TfLiteIntArrayFree(none);
}

/* ---- OpaqueDelegate_TfLiteOpaqueTensorGet ----------------------------------- */

typedef struct TripleKernel {
  TfLiteOpaqueTensor* input;
  TfLiteOpaqueTensor* output;
} TripleKernel;

static void* TripleInit(void* user_data, TfLiteOpaqueContext* context,
                        const char* buffer, size_t length) {
  const TfLiteOpaqueDelegateParams* params =
      (const TfLiteOpaqueDelegateParams*)buffer;
  TripleKernel* k = (TripleKernel*)malloc(sizeof(TripleKernel));
  int i;
  (void)user_data;
  (void)length;
  for (i = 0; i < params->nodes_to_replace->size; ++i) {
    TfLiteOpaqueNode* node = NULL;
    TfLiteOperator* reg = NULL;
    CHECK_EQ_INT(kTfLiteOk,
                 TfLiteOpaqueContextGetNodeAndRegistration(
                     context, params->nodes_to_replace->data[i], &node, &reg));
    CHECK_EQ_INT(2, TfLiteOpaqueNodeNumberOfInputs(node));
    CHECK_EQ_INT(1, TfLiteOpaqueNodeNumberOfOutputs(node));
    CHECK_EQ_INT(kTfLiteBuiltinAdd, TfLiteOperatorGetBuiltInCode(reg));
  }
  CHECK_EQ_INT(1, params->input_tensors->size);
  CHECK_EQ_INT(1, params->output_tensors->size);
  k->input =
      TfLiteOpaqueContextGetOpaqueTensor(context, params->input_tensors->data[0]);
  k->output = TfLiteOpaqueContextGetOpaqueTensor(
      context, params->output_tensors->data[0]);
  return k;
}

static TfLiteStatus TripleInvoke(void* user_data, TfLiteOpaqueContext* context,
                                 TfLiteOpaqueNode* node) {
  TripleKernel* k = (TripleKernel*)TfLiteOpaqueNodeGetUserData(node);
  const float* in = (const float*)TfLiteOpaqueTensorData(k->input);
  float* out = (float*)TfLiteOpaqueTensorData(k->output);
  int i;
  (void)user_data;
  (void)context;
  for (i = 0; i < 1 * 8 * 8 * 3; ++i) out[i] = in[i] * 3;
  return kTfLiteOk;
}

static void TripleFree(void* user_data, TfLiteOpaqueContext* context,
                       void* data) {
  (void)user_data;
  (void)context;
  free(data);
}

static TfLiteStatus TripleDelegatePrepare(TfLiteOpaqueContext* context,
                                          TfLiteOpaqueDelegate* delegate,
                                          void* data) {
  TfLiteIntArray* plan = NULL;
  TfLiteIntArray* nodes;
  TfLiteOperator* kernel;
  int i;
  *(bool*)data = true;
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetExecutionPlan(context, &plan));
  CHECK_EQ_INT(2, plan->size);
  nodes = TfLiteIntArrayCreate(plan->size);
  for (i = 0; i < plan->size; ++i) {
    TfLiteOpaqueNode* node = NULL;
    TfLiteOperator* reg = NULL;
    CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetNodeAndRegistration(
                                context, plan->data[i], &node, &reg));
    CHECK_EQ_INT(2, TfLiteOpaqueNodeNumberOfInputs(node));
    CHECK_EQ_INT(1, TfLiteOpaqueNodeNumberOfOutputs(node));
    CHECK_EQ_INT(kTfLiteBuiltinAdd, TfLiteOperatorGetBuiltInCode(reg));
    nodes->data[i] = plan->data[i];
  }
  kernel = CreateOperator(kTfLiteBuiltinDelegate, "Test driver delegate", 1,
                          NULL);
  TfLiteOperatorSetInitWithData(kernel, TripleInit);
  TfLiteOperatorSetInvokeWithData(kernel, TripleInvoke);
  TfLiteOperatorSetFreeWithData(kernel, TripleFree);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteOpaqueContextReplaceNodeSubsetsWithDelegateKernels(
                   context, kernel, nodes, delegate));
  TfLiteIntArrayFree(nodes);
  return kTfLiteOk;
}

static void TestOpaqueTensorGet(void) {
  bool prepared = false;
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteOpaqueDelegate* delegate;
  TfLiteInterpreter* interpreter;
  TfLiteTensor* input;
  const TfLiteTensor* output;
  float x[1 * 8 * 8 * 3], y[1 * 8 * 8 * 3];
  int i, n = 1 * 8 * 8 * 3;
  memset(&builder, 0, sizeof(builder));
  builder.data = &prepared;
  builder.Prepare = TripleDelegatePrepare;
  delegate = TfLiteOpaqueDelegateCreate(&builder);
  interpreter = CreateWithDelegate(CorpusPath("add.bin"), delegate, NULL);
  CHECK_NOT_NULL(interpreter);
  CHECK(prepared);
  input = TfLiteInterpreterGetInputTensor(interpreter, 0);
  CHECK_NOT_NULL(input);
  CHECK_EQ_INT(kTfLiteFloat32, TfLiteTensorType(input));
  CHECK_NOT_NULL(TfLiteTensorData(input));
  CHECK_STREQ("input", TfLiteTensorName(input));
  for (i = 0; i < n; ++i) x[i] = 3.f;
  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyFromBuffer(input, x, sizeof(x)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  output = TfLiteInterpreterGetOutputTensor(interpreter, 0);
  CHECK_NOT_NULL(output);
  CHECK_EQ_INT(kTfLiteFloat32, TfLiteTensorType(output));
  CHECK_NOT_NULL(TfLiteTensorData(output));
  CHECK_STREQ("output", TfLiteTensorName(output));
  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyToBuffer(output, y, sizeof(y)));
  for (i = 0; i < n; ++i) CHECK_EQ_FLOAT(9.f, y[i]);
  TfLiteInterpreterDelete(interpreter);
  TfLiteOpaqueDelegateDelete(delegate);
}

/* ---- OpaqueContextGetNodeAndRegistration ---------------------------------- */

static TfLiteStatus NodeAndRegistrationPrepare(TfLiteOpaqueContext* context,
                                               TfLiteOpaqueDelegate* delegate,
                                               void* data) {
  TfLiteIntArray* plan = NULL;
  TfLiteOpaqueNode* node = NULL;
  TfLiteOperator* reg = NULL;
  const TfLiteOpaqueTensor* tensor;
  size_t bytes = 0;
  int i;
  (void)delegate;
  *(bool*)data = true;
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetExecutionPlan(context, &plan));
  CHECK_EQ_INT(2, plan->size);
  for (i = 0; i < plan->size; ++i) {
    CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetNodeAndRegistration(
                                context, plan->data[i], &node, &reg));
    CHECK_NOT_NULL(node);
    CHECK_NOT_NULL(reg);
    CHECK_EQ_INT(kTfLiteBuiltinAdd, TfLiteOperatorGetBuiltInCode(reg));
    CHECK_EQ_INT(1, TfLiteOperatorGetVersion(reg));
    CHECK_EQ_INT(2, TfLiteOpaqueNodeNumberOfInputs(node));
    CHECK_EQ_INT(1, TfLiteOpaqueNodeNumberOfOutputs(node));
  }
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetNodeAndRegistration(
                              context, 0, &node, &reg));
  CHECK_EQ_INT(1, TfLiteOpaqueNodeGetInputTensorIndex(node, 0));
  CHECK_EQ_INT(1, TfLiteOpaqueNodeGetInputTensorIndex(node, 1));
  CHECK_EQ_INT(-1, TfLiteOpaqueNodeGetInputTensorIndex(node, 2));
  CHECK_EQ_INT(0, TfLiteOpaqueNodeGetOutputTensorIndex(node, 0));
  CHECK_EQ_INT(-1, TfLiteOpaqueNodeGetOutputTensorIndex(node, 123));
  CHECK_EQ_INT(-1, TfLiteOpaqueNodeGetOutputTensorIndex(node, -1));
  tensor = TfLiteOpaqueContextGetOpaqueTensor(context, 0);
  CHECK_NOT_NULL(tensor);
  CHECK_EQ_INT(kTfLiteFloat32, TfLiteOpaqueTensorType(tensor));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteOpaqueContextGetSizeOfType(context, kTfLiteFloat32, &bytes));
  CHECK_EQ_INT(sizeof(float), bytes);
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetNodeAndRegistration(
                              context, 1, &node, &reg));
  CHECK_EQ_INT(0, TfLiteOpaqueNodeGetInputTensorIndex(node, 0));
  CHECK_EQ_INT(1, TfLiteOpaqueNodeGetInputTensorIndex(node, 1));
  CHECK_EQ_INT(2, TfLiteOpaqueNodeGetOutputTensorIndex(node, 0));
  /* Out of range. */
  CHECK_EQ_INT(kTfLiteError, TfLiteOpaqueContextGetNodeAndRegistration(
                                 context, 2, &node, &reg));
  CHECK_EQ_INT(kTfLiteError, TfLiteOpaqueContextGetNodeAndRegistration(
                                 context, -1, &node, &reg));
  return kTfLiteOk;
}

static void TestOpaqueContextGetNodeAndRegistration(void) {
  bool prepared = false;
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteOpaqueDelegate* delegate;
  TfLiteInterpreter* interpreter;
  ErrorCollector errors;
  memset(&builder, 0, sizeof(builder));
  builder.data = &prepared;
  builder.Prepare = NodeAndRegistrationPrepare;
  delegate = TfLiteOpaqueDelegateCreate(&builder);
  interpreter = CreateWithDelegate(CorpusPath("add.bin"), delegate, &errors);
  CHECK_NOT_NULL(interpreter);
  CHECK(prepared);
  TfLiteInterpreterDelete(interpreter);
  TfLiteOpaqueDelegateDelete(delegate);
}

/* ---- TfLiteOpaqueContextResizeTensor ---------------------------------------- */

static TfLiteStatus ResizingPrepare(TfLiteOpaqueContext* context,
                                    TfLiteOpaqueDelegate* delegate,
                                    void* data) {
  TfLiteOpaqueTensor* tensor = TfLiteOpaqueContextGetOpaqueTensor(context, 0);
  TfLiteIntArray* dims;
  (void)delegate;
  *(bool*)data = true;
  CHECK_EQ_INT(4, TfLiteOpaqueTensorNumDims(tensor));
  CHECK_EQ_INT(1, TfLiteOpaqueTensorDim(tensor, 0));
  CHECK_EQ_INT(8, TfLiteOpaqueTensorDim(tensor, 1));
  CHECK_EQ_INT(8, TfLiteOpaqueTensorDim(tensor, 2));
  CHECK_EQ_INT(3, TfLiteOpaqueTensorDim(tensor, 3));
  dims = TfLiteIntArrayCreate(3);
  dims->data[0] = 2;
  dims->data[1] = 3;
  dims->data[2] = 4;
  /* The runtime takes ownership of dims. */
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextResizeTensor(context, tensor, dims));
  CHECK_EQ_INT(3, TfLiteOpaqueTensorNumDims(tensor));
  CHECK_EQ_INT(2, TfLiteOpaqueTensorDim(tensor, 0));
  CHECK_EQ_INT(3, TfLiteOpaqueTensorDim(tensor, 1));
  CHECK_EQ_INT(4, TfLiteOpaqueTensorDim(tensor, 2));
  return kTfLiteOk;
}

static void TestOpaqueContextResizeTensor(void) {
  bool prepared = false;
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteOpaqueDelegate* delegate;
  TfLiteInterpreter* interpreter;
  memset(&builder, 0, sizeof(builder));
  builder.data = &prepared;
  builder.Prepare = ResizingPrepare;
  delegate = TfLiteOpaqueDelegateCreate(&builder);
  interpreter = CreateWithDelegate(CorpusPath("add.bin"), delegate, NULL);
  CHECK_NOT_NULL(interpreter);
  CHECK(prepared);
  TfLiteInterpreterDelete(interpreter);
  TfLiteOpaqueDelegateDelete(delegate);
}

/* ---- MarkSubgraphAsDelegationSkippable --------------------------------------- */

typedef struct SkipState {
  int prepare_calls;
  bool mark;
} SkipState;

static TfLiteStatus SkippingPrepare(TfLiteOpaqueContext* context,
                                    TfLiteOpaqueDelegate* delegate,
                                    void* data) {
  SkipState* s = (SkipState*)data;
  (void)delegate;
  s->prepare_calls++;
  if (s->mark) {
    CHECK_EQ_INT(kTfLiteOk,
                 TfLiteOpaqueContextMarkSubgraphAsDelegationSkippable(context,
                                                                      1));
  }
  return kTfLiteOk;
}

static void RunSkippable(bool mark, int expected_prepares) {
  SkipState state;
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteOpaqueDelegate* delegate;
  TfLiteInterpreter* interpreter;
  memset(&state, 0, sizeof(state));
  memset(&builder, 0, sizeof(builder));
  state.mark = mark;
  builder.data = &state;
  builder.Prepare = SkippingPrepare;
  delegate = TfLiteOpaqueDelegateCreate(&builder);
  interpreter =
      CreateWithDelegate(CorpusPath("2_subgraphs.bin"), delegate, NULL);
  CHECK_NOT_NULL(interpreter);
  /* Applied to each subgraph, except one marked skippable meanwhile. */
  CHECK_EQ_INT(expected_prepares, state.prepare_calls);
  TfLiteInterpreterDelete(interpreter);
  TfLiteOpaqueDelegateDelete(delegate);
}

static void TestMarkSubgraphAsDelegationSkippable(void) {
  RunSkippable(false, 2);
  RunSkippable(true, 1);
}

/* ---- buffer handles with an opaque delegate ----------------------------------- */

typedef struct HandleState {
  bool prepared;
  bool copy_from_called;
  bool free_called;
  int buffer_handle;
} HandleState;

static void HandleStateReset(HandleState* s) {
  s->prepared = false;
  s->copy_from_called = false;
  s->free_called = false;
  s->buffer_handle = -1;
}

static TfLiteStatus OkPrepare(TfLiteOpaqueContext* context,
                              TfLiteOpaqueNode* node) {
  (void)context;
  (void)node;
  return kTfLiteOk;
}

static TfLiteStatus OkInvoke(TfLiteOpaqueContext* context,
                             TfLiteOpaqueNode* node) {
  (void)context;
  (void)node;
  return kTfLiteOk;
}

static TfLiteStatus HandlePrepare(TfLiteOpaqueContext* context,
                                  TfLiteOpaqueDelegate* delegate, void* data) {
  HandleState* s = (HandleState*)data;
  TfLiteIntArray* plan = NULL;
  TfLiteOperator* kernel =
      CreateOperator(kTfLiteBuiltinDelegate,
                     "OpaqueTestDelegate delegate kernel", 1, NULL);
  s->prepared = true;
  s->buffer_handle++;
  TfLiteOperatorSetPrepare(kernel, OkPrepare);
  TfLiteOperatorSetInvoke(kernel, OkInvoke);
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetExecutionPlan(context, &plan));
  return TfLiteOpaqueContextReplaceNodeSubsetsWithDelegateKernels(
      context, kernel, plan, delegate);
}

static TfLiteStatus HandleCopyFrom(TfLiteOpaqueContext* context,
                                   TfLiteOpaqueDelegate* delegate, void* data,
                                   TfLiteBufferHandle handle,
                                   TfLiteOpaqueTensor* tensor) {
  HandleState* s = (HandleState*)data;
  float* out = (float*)TfLiteOpaqueTensorData(tensor);
  int i, n = 1;
  (void)context;
  (void)delegate;
  s->copy_from_called = true;
  s->buffer_handle = handle;
  for (i = 0; i < TfLiteOpaqueTensorNumDims(tensor); ++i)
    n *= TfLiteOpaqueTensorDim(tensor, i);
  for (i = 0; i < n; ++i) out[i] = 42.f;
  return kTfLiteOk;
}

static void HandleFree(TfLiteOpaqueContext* context,
                       TfLiteOpaqueDelegate* delegate, void* data,
                       TfLiteBufferHandle* handle) {
  (void)context;
  (void)delegate;
  (void)handle;
  ((HandleState*)data)->free_called = true;
}

static void RunOpaqueBufferHandleOutput(bool allow) {
  HandleState state;
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteOpaqueDelegate* delegate;
  TfLiteInterpreter* interpreter;
  TfLiteTensor* input;
  TfLiteTensor* output;
  int i, n = 1 * 8 * 8 * 3;
  HandleStateReset(&state);
  memset(&builder, 0, sizeof(builder));
  builder.data = &state;
  builder.Prepare = HandlePrepare;
  builder.CopyFromBufferHandle = HandleCopyFrom;
  builder.FreeBufferHandle = HandleFree;
  delegate = TfLiteOpaqueDelegateCreate(&builder);
  interpreter = CreateWithDelegate(CorpusPath("add.bin"), delegate, NULL);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  input = TfLiteInterpreterGetInputTensor(interpreter, 0);
  for (i = 0; i < n; ++i) input->data.f[i] = 1.f;
  CHECK(!state.free_called);
  output = TfLiteInterpreterGetTensor(interpreter, 2);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterSetBufferHandle(interpreter, output,
                                                           0, delegate));
  output->data_is_stale = true;
  TfLiteSetAllowBufferHandleOutput(interpreter, allow);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  CHECK(state.prepared);
  CHECK_EQ_INT(0, state.buffer_handle);
  CHECK(!state.free_called);
  if (allow) {
    CHECK(!state.copy_from_called);
  } else {
    CHECK(state.copy_from_called);
    for (i = 0; i < n; ++i) CHECK_EQ_FLOAT(42.f, output->data.f[i]);
  }
  CHECK_EQ_INT(0, output->buffer_handle);
  CHECK_EQ_PTR(delegate, output->delegate);
  /* Deleting the interpreter releases its tensors' buffer handles. */
  HandleStateReset(&state);
  TfLiteInterpreterDelete(interpreter);
  TfLiteOpaqueDelegateDelete(delegate);
  CHECK(!state.copy_from_called);
  CHECK(state.free_called);
}

static void TestOpaqueSetAllowBufferHandleOutputFalse(void) {
  RunOpaqueBufferHandleOutput(false);
}

static void TestOpaqueSetAllowBufferHandleOutputTrue(void) {
  RunOpaqueBufferHandleOutput(true);
}

/* ---- several delegate kernels (TestFP16Delegation) ----------------------------- */

/* Runs every ADD of its partition (tensors inside the partition kept
 * privately); the graph's other nodes stay on the CPU. */
typedef struct ChainKernel {
  int in0[4], in1[4], out[4];
  int num_ops;
  int boundary[8];
  int num_boundary;
  float scratch[4];
} ChainKernel;

static void* ChainInit(void* user_data, TfLiteOpaqueContext* context,
                       const char* buffer, size_t length) {
  const TfLiteOpaqueDelegateParams* params =
      (const TfLiteOpaqueDelegateParams*)buffer;
  DelegateState* state = (DelegateState*)params->delegate_data;
  ChainKernel* k = (ChainKernel*)calloc(1, sizeof(ChainKernel));
  int i;
  (void)user_data;
  (void)length;
  CHECK_EQ_PTR(state->delegate, params->delegate);
  for (i = 0; i < params->nodes_to_replace->size; ++i) {
    TfLiteOpaqueNode* node = NULL;
    TfLiteOperator* reg = NULL;
    const int* ins = NULL;
    const int* outs = NULL;
    int num_ins = 0, num_outs = 0;
    int n = params->nodes_to_replace->data[i];
    state->nodes_to_replace[state->num_nodes_to_replace++] = n;
    CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetNodeAndRegistration(
                                context, n, &node, &reg));
    CHECK_EQ_INT(kTfLiteBuiltinAdd, TfLiteOperatorGetBuiltInCode(reg));
    CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueNodeInputs(node, &ins, &num_ins));
    CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueNodeOutputs(node, &outs, &num_outs));
    CHECK_EQ_INT(2, num_ins);
    CHECK_EQ_INT(1, num_outs);
    k->in0[k->num_ops] = ins[0];
    k->in1[k->num_ops] = ins[1];
    k->out[k->num_ops] = outs[0];
    k->num_ops++;
  }
  for (i = 0; i < params->input_tensors->size; ++i)
    k->boundary[k->num_boundary++] = params->input_tensors->data[i];
  for (i = 0; i < params->output_tensors->size; ++i)
    k->boundary[k->num_boundary++] = params->output_tensors->data[i];
  state->inits++;
  return k;
}

/* Value of a [1]-shaped tensor: from the runtime if it crosses the partition
 * boundary, else from the kernel's scratch slot (the op that wrote it). */
static float* ChainValue(TfLiteOpaqueContext* context, ChainKernel* k, int t) {
  int i;
  for (i = 0; i < k->num_boundary; ++i)
    if (k->boundary[i] == t)
      return (float*)TfLiteOpaqueTensorData(
          TfLiteOpaqueContextGetOpaqueTensor(context, t));
  for (i = 0; i < k->num_ops; ++i)
    if (k->out[i] == t) return &k->scratch[i];
  return NULL;
}

static TfLiteStatus ChainInvoke(void* user_data, TfLiteOpaqueContext* context,
                                TfLiteOpaqueNode* node) {
  ChainKernel* k = (ChainKernel*)TfLiteOpaqueNodeGetUserData(node);
  int i;
  (void)user_data;
  for (i = 0; i < k->num_ops; ++i) {
    float* a = ChainValue(context, k, k->in0[i]);
    float* b = ChainValue(context, k, k->in1[i]);
    float* o = ChainValue(context, k, k->out[i]);
    TF_LITE_OPAQUE_ENSURE(context, a != NULL && b != NULL && o != NULL);
    *o = *a + *b;
  }
  return kTfLiteOk;
}

static void ChainFree(void* user_data, TfLiteOpaqueContext* context,
                      void* data) {
  (void)user_data;
  (void)context;
  free(data);
  g_state->frees++;
}

static TfLiteStatus AddOnlyPrepare(TfLiteOpaqueContext* context,
                                   TfLiteOpaqueDelegate* delegate, void* data) {
  DelegateState* state = (DelegateState*)data;
  TfLiteIntArray* plan = NULL;
  TfLiteIntArray* adds;
  TfLiteOperator* kernel;
  int i, n = 0;
  state->prepared = true;
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetExecutionPlan(context, &plan));
  CHECK_EQ_INT(8, plan->size);
  adds = TfLiteIntArrayCreate(plan->size);
  for (i = 0; i < plan->size; ++i) {
    TfLiteOpaqueNode* node = NULL;
    TfLiteOperator* reg = NULL;
    CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetNodeAndRegistration(
                                context, plan->data[i], &node, &reg));
    if (TfLiteOperatorGetBuiltInCode(reg) == kTfLiteBuiltinAdd)
      adds->data[n++] = plan->data[i];
  }
  adds->size = n;
  kernel = CreateOperator(kTfLiteBuiltinDelegate, "chain delegate kernel", 1,
                          NULL);
  TfLiteOperatorSetInitWithData(kernel, ChainInit);
  TfLiteOperatorSetInvokeWithData(kernel, ChainInvoke);
  TfLiteOperatorSetFreeWithData(kernel, ChainFree);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteOpaqueContextReplaceNodeSubsetsWithDelegateKernels(
                   context, kernel, adds, delegate));
  TfLiteIntArrayFree(adds);
  return kTfLiteOk;
}

/* Looks at the plan through a second, opaque delegate applied afterwards. */
typedef struct PlanProbe {
  int plan[16];
  int size;
  int delegate_nodes;
} PlanProbe;

static TfLiteStatus ProbePrepare(TfLiteOpaqueContext* context,
                                 TfLiteOpaqueDelegate* delegate, void* data) {
  PlanProbe* p = (PlanProbe*)data;
  TfLiteIntArray* plan = NULL;
  int i;
  (void)delegate;
  CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetExecutionPlan(context, &plan));
  CHECK(plan->size <= 16);
  p->size = plan->size;
  for (i = 0; i < plan->size; ++i) {
    TfLiteOpaqueNode* node = NULL;
    TfLiteOperator* reg = NULL;
    p->plan[i] = plan->data[i];
    CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetNodeAndRegistration(
                                context, plan->data[i], &node, &reg));
    if (TfLiteOperatorGetBuiltInCode(reg) == kTfLiteBuiltinDelegate)
      p->delegate_nodes++;
  }
  return kTfLiteOk;
}

static void TestMultipleDelegateKernels(void) {
  DelegateState state;
  PlanProbe probe;
  TfLiteOpaqueDelegateBuilder builder, probe_builder;
  TfLiteOpaqueDelegate* probe_delegate;
  TfLiteInterpreter* interpreter;
  const int expected_plan[7] = {0, 2, 4, 6, 8, 5, 9};
  float x = 3.f, y = 0.f;
  int i;
  memset(&state, 0, sizeof(state));
  memset(&probe, 0, sizeof(probe));
  memset(&builder, 0, sizeof(builder));
  memset(&probe_builder, 0, sizeof(probe_builder));
  builder.data = &state;
  builder.Prepare = AddOnlyPrepare;
  state.delegate = TfLiteOpaqueDelegateCreate(&builder);
  g_state = &state;
  interpreter = CreateWithDelegate(DataPath("delegate_chain8.tflite"),
                                   state.delegate, NULL);
  CHECK_NOT_NULL(interpreter);
  CHECK(state.prepared);
  /* Nodes 1, 3 and 7 are the ADDs: two partitions, {1, 3} and {7}. */
  CHECK_EQ_INT(2, state.inits);
  CHECK_EQ_INT(3, state.num_nodes_to_replace);
  CHECK_EQ_INT(1, state.nodes_to_replace[0]);
  CHECK_EQ_INT(3, state.nodes_to_replace[1]);
  CHECK_EQ_INT(7, state.nodes_to_replace[2]);

  probe_builder.data = &probe;
  probe_builder.Prepare = ProbePrepare;
  probe_builder.flags = kTfLiteDelegateFlagsAllowDynamicTensors;
  probe_delegate = TfLiteOpaqueDelegateCreate(&probe_builder);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterModifyGraphWithDelegate(
                              interpreter, probe_delegate));
  CHECK_EQ_INT(7, probe.size);
  CHECK_EQ_INT(2, probe.delegate_nodes);
  for (i = 0; i < 7; ++i) CHECK_EQ_INT(expected_plan[i], probe.plan[i]);

  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyFromBuffer(
                   TfLiteInterpreterGetInputTensor(interpreter, 0), &x,
                   sizeof(x)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyToBuffer(
                              TfLiteInterpreterGetOutputTensor(interpreter, 0),
                              &y, sizeof(y)));
  CHECK_EQ_FLOAT(16.f, y);

  TfLiteInterpreterDelete(interpreter);
  CHECK_EQ_INT(2, state.frees);
  TfLiteOpaqueDelegateDelete(probe_delegate);
  TfLiteOpaqueDelegateDelete(state.delegate);
  g_state = NULL;
}

/* ---- AcquireSubgraphContext through the opaque API -------------------------- */

static TfLiteStatus AcquiringPrepare(TfLiteOpaqueContext* context,
                                     TfLiteOpaqueDelegate* delegate,
                                     void* data) {
  int* calls = (int*)data;
  TfLiteOpaqueContext* other = NULL;
  TfLiteIntArray* plan = NULL;
  (void)delegate;
  if ((*calls)++ == 0) {
    CHECK_EQ_INT(kTfLiteOk,
                 TfLiteOpaqueContextAcquireSubgraphContext(context, 1, &other));
    CHECK_NOT_NULL(other);
    CHECK_EQ_INT(kTfLiteOk, TfLiteOpaqueContextGetExecutionPlan(other, &plan));
    CHECK_EQ_INT(1, plan->size);
    CHECK_EQ_INT(1, (int)TfLiteOpaqueContextGetNumNodes(other));
    CHECK_EQ_INT(kTfLiteOk,
                 TfLiteOpaqueContextReleaseSubgraphContext(context, 1));
  }
  return kTfLiteOk;
}

static void TestOpaqueAcquireSubgraphContext(void) {
  int calls = 0;
  TfLiteOpaqueDelegateBuilder builder;
  TfLiteOpaqueDelegate* delegate;
  TfLiteInterpreter* interpreter;
  memset(&builder, 0, sizeof(builder));
  builder.data = &calls;
  builder.Prepare = AcquiringPrepare;
  delegate = TfLiteOpaqueDelegateCreate(&builder);
  interpreter =
      CreateWithDelegate(CorpusPath("multi_signatures.bin"), delegate, NULL);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(2, calls);
  TfLiteInterpreterDelete(interpreter);
  TfLiteOpaqueDelegateDelete(delegate);
}

int main(void) {
  RUN_TEST(TestGetExecutionPlan);
  RUN_TEST(TestReportErrorMacroEnsureMsg);
  RUN_TEST(TestReportErrorMacroEnsure);
  RUN_TEST(TestReportErrorMacroEnsureEq);
  RUN_TEST(TestReportErrorMacroEnsureTypesEq);
  RUN_TEST(TestReportErrorMacroEnsureNear);
  RUN_TEST(TestOpaqueReplaceNodeSubsetsWithDelegateKernels);
  RUN_TEST(TestTransferOperatorOwnershipWithoutNodeToReplace);
  RUN_TEST(TestOpaqueTensorGet);
  RUN_TEST(TestOpaqueContextGetNodeAndRegistration);
  RUN_TEST(TestOpaqueContextResizeTensor);
  RUN_TEST(TestMarkSubgraphAsDelegationSkippable);
  RUN_TEST(TestOpaqueSetAllowBufferHandleOutputFalse);
  RUN_TEST(TestOpaqueSetAllowBufferHandleOutputTrue);
  RUN_TEST(TestMultipleDelegateKernels);
  RUN_TEST(TestOpaqueAcquireSubgraphContext);
  return 0;
}
