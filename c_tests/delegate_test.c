/* Delegates through the classic struct API (TfLiteDelegate + the TfLiteContext
 * callbacks), re-expressing the delegate behaviour of TFLite's C API tests
 * (shared/design/CAPI_TESTS.md): CApiSimple.Delegate / DelegateFails, the
 * buffer-handle tests of c_api_experimental_test.cc (SetAndGetBufferHandle,
 * SetAllowBufferHandleOutput, SetInvalidHandleToTensor), TestDelegate.NoDelegate
 * / DelegateNodeInvokeFailure / DelegateNodeInvokeFailureFallback /
 * TestFallbackWithMultipleDelegates (with the exact statuses, where TFLite's
 * test compares them as bools), plus:
 *  - the partitions of the demo model's f(x) = sin(x) + x + sin(2x) with a delegate
 *    taking SIN (models/sin_add_mul.tflite): PreviewDelegatePartitioning, the
 *    params passed to the kernel's init, the execution plan afterwards (the
 *    four subsets TFLite makes), and the result;
 *  - a delegate taking the ADD nodes 1, 3, 7 of an 8-node chain
 *    (c_tests/data/delegate_chain8.tflite, made by `make-test-models`): an
 *    execution plan of 7;
 *  - op versions: a delegate supporting DEPTHWISE_CONV_2D v1 only leaves the v2
 *    node of models/depthwise_dilated.tflite on the CPU;
 *  - an unresolved custom op (capi/custom_sinh.bin) claimed by a delegate;
 *  - failure semantics: any Prepare failure makes TfLiteInterpreterCreate
 *    return NULL; TfLiteInterpreterModifyGraphWithDelegate returns
 *    kTfLiteDelegateError and leaves the graph on the CPU;
 *  - the delegate-only context functions are forbidden outside Prepare;
 *    AcquireSubgraphContext / ReleaseSubgraphContext; delegates are applied to
 *    every subgraph;
 *  - a resize re-applies a delegate that does not allow dynamic tensors.
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

/* ---- paths ---------------------------------------------------------------- */

/* "<corpus>/models/<name>" (the capi/ models go through CorpusPath). */
static const char* ModelPath(const char* name) {
  static char buffers[4][4096];
  static int next = 0;
  const char* dir = getenv("TFLITE_CORPUS_DIR");
  char* out = buffers[next];
  FILE* f;
  next = (next + 1) % 4;
  if (dir == NULL || dir[0] == '\0') dir = "../shared/corpus";
  snprintf(out, sizeof(buffers[0]), "%s/models/%s", dir, name);
  f = fopen(out, "rb");
  if (f == NULL) {
    fprintf(stderr, "FATAL: corpus model '%s' not found (TFLITE_CORPUS_DIR)\n",
            out);
    exit(2);
  }
  fclose(f);
  return out;
}

/* "<directory of this file>/data/<name>": models checked in beside the tests. */
static const char* DataPath(const char* name) {
  static char out[4096];
  const char* file = __FILE__;
  const char* slash = strrchr(file, '/');
  size_t dir_len = slash ? (size_t)(slash - file) : 0;
  FILE* f;
  if (slash)
    snprintf(out, sizeof(out), "%.*s/data/%s", (int)dir_len, file, name);
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

static size_t NumElements(const TfLiteIntArray* dims) {
  size_t n = 1;
  int i;
  for (i = 0; i < dims->size; ++i) n *= (size_t)dims->data[i];
  return n;
}

static TfLiteRegistration EmptyRegistration(void) {
  TfLiteRegistration r;
  memset(&r, 0, sizeof(r));
  return r;
}

/* ---- SimpleDelegate (TFLite's delegate_test_util, in C) -------------------- */

/* Claims the listed ADD nodes; its kernel "fake_fused_op" computes in0 + in1
 * (in0 + in0 for a single input), or fails in Invoke. Buffer-handle callbacks
 * count their calls; CopyFromBufferHandle writes 6 into the first dims[0]
 * elements. */
typedef struct SimpleDelegate {
  TfLiteDelegate delegate;
  int nodes[8];
  int num_nodes;
  bool fail_invoke;
  bool shapes_propagated; /* kernel Prepare only checks the output shape */
  int prepare_calls;
  int copy_from_calls;
  int free_handle_calls;
} SimpleDelegate;

static TfLiteStatus FakeFusedPrepare(TfLiteContext* context, TfLiteNode* node) {
  const TfLiteTensor* in = &context->tensors[node->inputs->data[0]];
  TfLiteTensor* out = &context->tensors[node->outputs->data[0]];
  return context->ResizeTensor(context, out, TfLiteIntArrayCopy(in->dims));
}

/* With kTfLiteDelegateFlagsRequirePropagatedShapes the runtime prepares the
 * original nodes first, so the output already has the input's shape. */
static TfLiteStatus FakeFusedCheckShapePrepare(TfLiteContext* context,
                                               TfLiteNode* node) {
  const TfLiteTensor* in = &context->tensors[node->inputs->data[0]];
  const TfLiteTensor* out = &context->tensors[node->outputs->data[0]];
  int i;
  TF_LITE_ENSURE_EQ(context, in->dims->size, out->dims->size);
  for (i = 0; i < in->dims->size; ++i)
    TF_LITE_ENSURE_EQ(context, in->dims->data[i], out->dims->data[i]);
  return kTfLiteOk;
}

static TfLiteStatus FakeFusedInvoke(TfLiteContext* context, TfLiteNode* node) {
  const TfLiteTensor* a0 = &context->tensors[node->inputs->data[0]];
  const TfLiteTensor* a1 =
      node->inputs->size == 2 ? &context->tensors[node->inputs->data[1]] : a0;
  TfLiteTensor* out = &context->tensors[node->outputs->data[0]];
  size_t i, n = NumElements(a0->dims);
  for (i = 0; i < n; ++i) out->data.f[i] = a0->data.f[i] + a1->data.f[i];
  /* Output living in a delegate buffer: the CPU copy is stale now. */
  if (out->buffer_handle != kTfLiteNullBufferHandle) out->data_is_stale = true;
  return kTfLiteOk;
}

static TfLiteStatus FakeFusedInvokeFails(TfLiteContext* context,
                                         TfLiteNode* node) {
  (void)context;
  (void)node;
  return kTfLiteError;
}

static TfLiteStatus SimpleDelegatePrepare(TfLiteContext* context,
                                          TfLiteDelegate* delegate) {
  SimpleDelegate* s = (SimpleDelegate*)delegate->data_;
  TfLiteIntArray* nodes = TfLiteIntArrayCreate(s->num_nodes);
  TfLiteIntArray* plan = NULL;
  TfLiteDelegateParams* params = NULL;
  int num_partitions = -1;
  TfLiteRegistration reg = EmptyRegistration();
  TfLiteStatus status;
  int i;
  s->prepare_calls++;
  for (i = 0; i < s->num_nodes; ++i) {
    TfLiteNode* node = NULL;
    TfLiteRegistration* r = NULL;
    nodes->data[i] = s->nodes[i];
    CHECK_EQ_INT(kTfLiteOk, context->GetNodeAndRegistration(
                                context, s->nodes[i], &node, &r));
    CHECK_EQ_INT(kTfLiteBuiltinAdd, r->builtin_code);
  }
  CHECK_EQ_INT(kTfLiteOk, context->GetExecutionPlan(context, &plan));
  for (i = 0; i < plan->size; ++i) {
    TfLiteNode* node = NULL;
    TfLiteRegistration* r = NULL;
    CHECK_EQ_INT(kTfLiteOk, context->GetNodeAndRegistration(
                                context, plan->data[i], &node, &r));
    /* Nodes not delegated yet are the model's ADDs. */
    if (plan->data[i] == i) CHECK_EQ_INT(kTfLiteBuiltinAdd, r->builtin_code);
  }
  CHECK_EQ_INT(kTfLiteOk, context->PreviewDelegatePartitioning(
                              context, nodes, &params, &num_partitions));
  CHECK(num_partitions >= 1);
  CHECK_NOT_NULL(params);
  /* A second preview is fine: the runtime owns the memory. */
  CHECK_EQ_INT(kTfLiteOk, context->PreviewDelegatePartitioning(
                              context, nodes, &params, &num_partitions));
  reg.custom_name = "fake_fused_op";
  reg.prepare =
      s->shapes_propagated ? FakeFusedCheckShapePrepare : FakeFusedPrepare;
  reg.invoke = s->fail_invoke ? FakeFusedInvokeFails : FakeFusedInvoke;
  status = context->ReplaceNodeSubsetsWithDelegateKernels(context, reg, nodes,
                                                          delegate);
  TfLiteIntArrayFree(nodes);
  return status;
}

static TfLiteStatus SimpleCopyFromBufferHandle(TfLiteContext* context,
                                               TfLiteDelegate* delegate,
                                               TfLiteBufferHandle handle,
                                               TfLiteTensor* tensor) {
  SimpleDelegate* s = (SimpleDelegate*)delegate->data_;
  int i;
  (void)context;
  s->copy_from_calls++;
  CHECK_EQ_INT(tensor->buffer_handle, handle);
  for (i = 0; i < tensor->dims->data[0]; ++i) tensor->data.f[i] = 6.f;
  return kTfLiteOk;
}

static TfLiteStatus SimpleCopyToBufferHandle(TfLiteContext* context,
                                             TfLiteDelegate* delegate,
                                             TfLiteBufferHandle handle,
                                             TfLiteTensor* tensor) {
  (void)context;
  (void)delegate;
  (void)handle;
  (void)tensor;
  return kTfLiteOk;
}

static void SimpleFreeBufferHandle(TfLiteContext* context,
                                   TfLiteDelegate* delegate,
                                   TfLiteBufferHandle* handle) {
  SimpleDelegate* s = (SimpleDelegate*)delegate->data_;
  (void)context;
  s->free_handle_calls++;
  *handle = kTfLiteNullBufferHandle;
}

static void SimpleDelegateInit(SimpleDelegate* s, const int* nodes,
                               int num_nodes, int64_t flags, bool fail_invoke) {
  int i;
  memset(s, 0, sizeof(*s));
  s->delegate = TfLiteDelegateCreate();
  s->delegate.data_ = s;
  s->delegate.Prepare = SimpleDelegatePrepare;
  s->delegate.CopyFromBufferHandle = SimpleCopyFromBufferHandle;
  s->delegate.CopyToBufferHandle = SimpleCopyToBufferHandle;
  s->delegate.FreeBufferHandle = SimpleFreeBufferHandle;
  s->delegate.flags = flags;
  for (i = 0; i < num_nodes; ++i) s->nodes[i] = nodes[i];
  s->num_nodes = num_nodes;
  s->fail_invoke = fail_invoke;
}

/* ---- an elementwise delegate kernel that runs every node of its subset ---- */

/* What a delegate node's init saw. */
typedef struct InitRecord {
  TfLiteDelegate* delegate;
  int nodes[8], num_nodes;
  int inputs[8], num_inputs;
  int outputs[8], num_outputs;
} InitRecord;

static InitRecord g_inits[8];
static int g_num_inits = 0;
static int g_kernel_frees = 0;

typedef struct ElemOp {
  int code; /* kTfLiteBuiltinAdd / Mul / Sin, or Custom (= sinh) */
  int in0, in1, out;
} ElemOp;

/* The subset's nodes in order; tensors produced and consumed inside the subset
 * live in private buffers (the runtime does not allocate them). */
typedef struct ElemKernel {
  ElemOp ops[16];
  int num_ops;
  int boundary[16]; /* the subset's input and output tensors */
  int num_boundary;
  int private_tensor[16];
  float* private_data[16];
  int num_private;
} ElemKernel;

static void* ElemInit(TfLiteContext* context, const char* buffer,
                      size_t length) {
  const TfLiteDelegateParams* p = (const TfLiteDelegateParams*)buffer;
  ElemKernel* k = (ElemKernel*)calloc(1, sizeof(ElemKernel));
  InitRecord* rec = &g_inits[g_num_inits++];
  int i;
  CHECK_EQ_INT(0, length);
  CHECK(g_num_inits <= 8);
  rec->delegate = p->delegate;
  rec->num_nodes = p->nodes_to_replace->size;
  rec->num_inputs = p->input_tensors->size;
  rec->num_outputs = p->output_tensors->size;
  CHECK(rec->num_nodes <= 8 && rec->num_inputs <= 8 && rec->num_outputs <= 8);
  for (i = 0; i < rec->num_nodes; ++i) {
    TfLiteNode* node = NULL;
    TfLiteRegistration* reg = NULL;
    ElemOp* op = &k->ops[k->num_ops++];
    rec->nodes[i] = p->nodes_to_replace->data[i];
    /* GetNodeAndRegistration works here: init runs inside Prepare. */
    CHECK_EQ_INT(kTfLiteOk, context->GetNodeAndRegistration(
                                context, rec->nodes[i], &node, &reg));
    op->code = reg->builtin_code;
    op->in0 = node->inputs->data[0];
    op->in1 = node->inputs->size > 1 ? node->inputs->data[1] : -1;
    op->out = node->outputs->data[0];
  }
  for (i = 0; i < rec->num_inputs; ++i) {
    rec->inputs[i] = p->input_tensors->data[i];
    k->boundary[k->num_boundary++] = rec->inputs[i];
  }
  for (i = 0; i < rec->num_outputs; ++i) {
    rec->outputs[i] = p->output_tensors->data[i];
    k->boundary[k->num_boundary++] = rec->outputs[i];
  }
  return k;
}

static void ElemFree(TfLiteContext* context, void* buffer) {
  ElemKernel* k = (ElemKernel*)buffer;
  int i;
  (void)context;
  for (i = 0; i < k->num_private; ++i) free(k->private_data[i]);
  free(k);
  g_kernel_frees++;
}

static bool IsBoundary(const ElemKernel* k, int t) {
  int i;
  for (i = 0; i < k->num_boundary; ++i)
    if (k->boundary[i] == t) return true;
  return false;
}

static TfLiteStatus ElemPrepare(TfLiteContext* context, TfLiteNode* node) {
  ElemKernel* k = (ElemKernel*)node->user_data;
  int i;
  for (i = 0; i < k->num_private; ++i) free(k->private_data[i]);
  k->num_private = 0;
  for (i = 0; i < k->num_ops; ++i) {
    int t = k->ops[i].out;
    if (IsBoundary(k, t)) continue;
    k->private_tensor[k->num_private] = t;
    k->private_data[k->num_private] = (float*)calloc(
        NumElements(context->tensors[t].dims), sizeof(float));
    k->num_private++;
  }
  return kTfLiteOk;
}

static float* ElemData(TfLiteContext* context, ElemKernel* k, int t) {
  int i;
  for (i = 0; i < k->num_private; ++i)
    if (k->private_tensor[i] == t) return k->private_data[i];
  return context->tensors[t].data.f;
}

static TfLiteStatus ElemInvoke(TfLiteContext* context, TfLiteNode* node) {
  ElemKernel* k = (ElemKernel*)node->user_data;
  int i;
  for (i = 0; i < k->num_ops; ++i) {
    const ElemOp* op = &k->ops[i];
    const float* a = ElemData(context, k, op->in0);
    const float* b = op->in1 >= 0 ? ElemData(context, k, op->in1) : NULL;
    size_t nb = op->in1 >= 0 ? NumElements(context->tensors[op->in1].dims) : 0;
    float* out = ElemData(context, k, op->out);
    size_t j, n = NumElements(context->tensors[op->out].dims);
    for (j = 0; j < n; ++j) {
      float y = b ? b[nb == 1 ? 0 : j] : 0.f;
      switch (op->code) {
        case kTfLiteBuiltinAdd: out[j] = a[j] + y; break;
        case kTfLiteBuiltinMul: out[j] = a[j] * y; break;
        case kTfLiteBuiltinSin: out[j] = sinf(a[j]); break;
        case kTfLiteBuiltinCustom: out[j] = sinhf(a[j]); break;
        default: return kTfLiteError;
      }
    }
  }
  return kTfLiteOk;
}

static TfLiteRegistration ElemRegistration(void) {
  TfLiteRegistration r = EmptyRegistration();
  r.init = ElemInit;
  r.free = ElemFree;
  r.prepare = ElemPrepare;
  r.invoke = ElemInvoke;
  r.custom_name = "elementwise_delegate";
  return r;
}

static void ResetInits(void) {
  memset(g_inits, 0, sizeof(g_inits));
  g_num_inits = 0;
  g_kernel_frees = 0;
}

/* A delegate claiming every node whose builtin code is `code` (for
 * kTfLiteBuiltinCustom: whose custom name is `custom_name`) and whose version
 * is at most `max_version`, previewing the partitioning first. */
typedef struct OpDelegate {
  TfLiteDelegate delegate;
  int code;
  const char* custom_name;
  int max_version;
  int prepare_calls;
  int plan_size_seen;
  int versions_seen[8];
  int num_seen;
  int num_claimed;
  int preview_count;
  InitRecord preview[8];
} OpDelegate;

static TfLiteStatus OpDelegatePrepare(TfLiteContext* context,
                                      TfLiteDelegate* delegate) {
  OpDelegate* d = (OpDelegate*)delegate->data_;
  TfLiteIntArray* plan = NULL;
  TfLiteIntArray* claim;
  TfLiteDelegateParams* params = NULL;
  int num = 0, i, n = 0;
  d->prepare_calls++;
  CHECK_EQ_INT(kTfLiteOk, context->GetExecutionPlan(context, &plan));
  d->plan_size_seen = plan->size;
  claim = TfLiteIntArrayCreate(plan->size);
  for (i = 0; i < plan->size; ++i) {
    TfLiteNode* node = NULL;
    TfLiteRegistration* reg = NULL;
    CHECK_EQ_INT(kTfLiteOk, context->GetNodeAndRegistration(
                                context, plan->data[i], &node, &reg));
    if (reg->builtin_code != d->code) continue;
    if (d->custom_name != NULL &&
        (reg->custom_name == NULL || strcmp(reg->custom_name, d->custom_name)))
      continue;
    if (d->num_seen < 8) d->versions_seen[d->num_seen++] = reg->version;
    /* Refuse versions above what this delegate supports. */
    if (reg->version > d->max_version) continue;
    claim->data[n++] = plan->data[i];
  }
  claim->size = n;
  d->num_claimed = n;
  CHECK_EQ_INT(kTfLiteOk, context->PreviewDelegatePartitioning(
                              context, claim, &params, &num));
  d->preview_count = num;
  CHECK(num <= 8);
  for (i = 0; i < num; ++i) {
    int j;
    InitRecord* r = &d->preview[i];
    CHECK_NULL(params[i].delegate);
    r->num_nodes = params[i].nodes_to_replace->size;
    r->num_inputs = params[i].input_tensors->size;
    r->num_outputs = params[i].output_tensors->size;
    for (j = 0; j < r->num_nodes && j < 8; ++j)
      r->nodes[j] = params[i].nodes_to_replace->data[j];
    for (j = 0; j < r->num_inputs && j < 8; ++j)
      r->inputs[j] = params[i].input_tensors->data[j];
    for (j = 0; j < r->num_outputs && j < 8; ++j)
      r->outputs[j] = params[i].output_tensors->data[j];
  }
  {
    TfLiteStatus s = context->ReplaceNodeSubsetsWithDelegateKernels(
        context, ElemRegistration(), claim, delegate);
    TfLiteIntArrayFree(claim);
    return s;
  }
}

static void OpDelegateInit(OpDelegate* d, int code, const char* custom_name,
                           int max_version, int64_t flags) {
  memset(d, 0, sizeof(*d));
  d->delegate = TfLiteDelegateCreate();
  d->delegate.data_ = d;
  d->delegate.Prepare = OpDelegatePrepare;
  d->delegate.flags = flags;
  d->code = code;
  d->custom_name = custom_name;
  d->max_version = max_version;
}

/* A delegate that only records the execution plan and each planned node's
 * builtin code, version, delegate and tensors (applied with
 * TfLiteInterpreterModifyGraphWithDelegate to look at a graph). */
typedef struct PlanNodeInfo {
  int index, code, version;
  TfLiteDelegate* delegate;
  int inputs[8], num_inputs;
  int outputs[8], num_outputs;
} PlanNodeInfo;

typedef struct ProbeDelegate {
  TfLiteDelegate delegate;
  PlanNodeInfo plan[16];
  int plan_size;
} ProbeDelegate;

static TfLiteStatus ProbePrepare(TfLiteContext* context,
                                 TfLiteDelegate* delegate) {
  ProbeDelegate* p = (ProbeDelegate*)delegate->data_;
  TfLiteIntArray* plan = NULL;
  int i, j;
  CHECK_EQ_INT(kTfLiteOk, context->GetExecutionPlan(context, &plan));
  CHECK(plan->size <= 16);
  p->plan_size = plan->size;
  for (i = 0; i < plan->size; ++i) {
    TfLiteNode* node = NULL;
    TfLiteRegistration* reg = NULL;
    PlanNodeInfo* info = &p->plan[i];
    CHECK_EQ_INT(kTfLiteOk, context->GetNodeAndRegistration(
                                context, plan->data[i], &node, &reg));
    info->index = plan->data[i];
    info->code = reg->builtin_code;
    info->version = reg->version;
    info->delegate = node->delegate;
    info->num_inputs = node->inputs->size;
    info->num_outputs = node->outputs->size;
    for (j = 0; j < node->inputs->size && j < 8; ++j)
      info->inputs[j] = node->inputs->data[j];
    for (j = 0; j < node->outputs->size && j < 8; ++j)
      info->outputs[j] = node->outputs->data[j];
  }
  return kTfLiteOk;
}

static void Probe(TfLiteInterpreter* interpreter, ProbeDelegate* p) {
  memset(p, 0, sizeof(*p));
  p->delegate = TfLiteDelegateCreate();
  p->delegate.data_ = p;
  p->delegate.Prepare = ProbePrepare;
  p->delegate.flags = kTfLiteDelegateFlagsAllowDynamicTensors;
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterModifyGraphWithDelegate(interpreter,
                                                        &p->delegate));
}

/* ---- CApiSimple.Delegate / DelegateFails ---------------------------------- */

static TfLiteStatus NoOpPrepare(TfLiteContext* context,
                                TfLiteDelegate* delegate) {
  (void)context;
  (*(int*)delegate->data_)++;
  return kTfLiteOk;
}

static void TestDelegateIsApplied(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteDelegate delegate = TfLiteDelegateCreate();
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  int prepared = 0;
  CHECK_NOT_NULL(model);
  delegate.data_ = &prepared;
  delegate.Prepare = NoOpPrepare;
  TfLiteInterpreterOptionsAddDelegate(options, &delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(1, prepared);
  /* Options and model may go right away; a static-shape delegate leaves the
   * graph allocated, so Invoke works without AllocateTensors. */
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  TfLiteInterpreterDelete(interpreter);
}

static TfLiteStatus g_prepare_result;
static int g_failing_prepare_calls;

static TfLiteStatus ReturnStatusPrepare(TfLiteContext* context,
                                        TfLiteDelegate* delegate) {
  (void)context;
  (void)delegate;
  g_failing_prepare_calls++;
  return g_prepare_result;
}

/* Takes both ADD nodes (with a kernel that counts init/free), then fails. */
static TfLiteStatus ReplaceThenFailPrepare(TfLiteContext* context,
                                           TfLiteDelegate* delegate) {
  TfLiteIntArray* plan = NULL;
  g_failing_prepare_calls++;
  CHECK_EQ_INT(kTfLiteOk, context->GetExecutionPlan(context, &plan));
  CHECK_EQ_INT(kTfLiteOk, context->ReplaceNodeSubsetsWithDelegateKernels(
                              context, ElemRegistration(), plan, delegate));
  return kTfLiteDelegateError;
}

static void CheckAddModelOnCpu(TfLiteInterpreter* interpreter) {
  TfLiteTensor* in;
  const TfLiteTensor* out;
  int dims[1] = {2};
  float x[2] = {1.f, 3.f}, y[2] = {0.f, 0.f};
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterResizeInputTensor(interpreter, 0, dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  in = TfLiteInterpreterGetInputTensor(interpreter, 0);
  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyFromBuffer(in, x, sizeof(x)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  out = TfLiteInterpreterGetOutputTensor(interpreter, 0);
  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyToBuffer(out, y, sizeof(y)));
  CHECK_EQ_FLOAT(3.f, y[0]);
  CHECK_EQ_FLOAT(9.f, y[1]);
}

static void TestDelegateFails(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  /* Whatever Prepare's failure status, TfLiteInterpreterCreate returns NULL. */
  TfLiteStatus statuses[3] = {kTfLiteError, kTfLiteDelegateError,
                              kTfLiteApplicationError};
  int i;
  CHECK_NOT_NULL(model);
  for (i = 0; i < 3; ++i) {
    TfLiteDelegate delegate = TfLiteDelegateCreate();
    TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
    ErrorCollector errors;
    ErrorCollectorReset(&errors);
    delegate.Prepare = ReturnStatusPrepare;
    g_prepare_result = statuses[i];
    g_failing_prepare_calls = 0;
    TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, &errors);
    TfLiteInterpreterOptionsAddDelegate(options, &delegate);
    CHECK_NULL(TfLiteInterpreterCreate(model, options));
    CHECK_EQ_INT(1, g_failing_prepare_calls);
    CHECK_CONTAINS(errors.messages,
                   "Restored original execution plan after delegate "
                   "application failure.");
    TfLiteInterpreterOptionsDelete(options);
  }
  TfLiteModelDelete(model);
}

/* TfLiteInterpreterModifyGraphWithDelegate: a failing delegate (even one that
 * replaced nodes first) gives kTfLiteDelegateError, its nodes are freed and
 * the graph runs on the CPU. */
static void TestModifyGraphWithFailingDelegateRunsOnCpu(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  ErrorCollector errors;
  TfLiteInterpreter* interpreter;
  TfLiteDelegate fails = TfLiteDelegateCreate();
  TfLiteDelegate replaces_then_fails = TfLiteDelegateCreate();
  ProbeDelegate probe;
  ErrorCollectorReset(&errors);
  TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, &errors);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);

  fails.Prepare = ReturnStatusPrepare;
  g_prepare_result = kTfLiteError;
  g_failing_prepare_calls = 0;
  CHECK_EQ_INT(kTfLiteDelegateError,
               TfLiteInterpreterModifyGraphWithDelegate(interpreter, &fails));
  CHECK_EQ_INT(1, g_failing_prepare_calls);
  CHECK_CONTAINS(errors.messages, "Restored original execution plan");

  ResetInits();
  replaces_then_fails.Prepare = ReplaceThenFailPrepare;
  CHECK_EQ_INT(kTfLiteDelegateError, TfLiteInterpreterModifyGraphWithDelegate(
                                         interpreter, &replaces_then_fails));
  CHECK_EQ_INT(1, g_num_inits);
  CHECK_EQ_INT(1, g_kernel_frees); /* the delegate node is gone */
  Probe(interpreter, &probe);
  CHECK_EQ_INT(2, probe.plan_size);
  CHECK_EQ_INT(kTfLiteBuiltinAdd, probe.plan[0].code);
  CHECK_EQ_INT(kTfLiteBuiltinAdd, probe.plan[1].code);
  CHECK_NULL(probe.plan[0].delegate);
  CheckAddModelOnCpu(interpreter);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

/* ---- the delegate-only context functions ----------------------------------- */

static TfLiteStatus g_forbidden_status[5];
static bool g_kernel_checked_forbidden;

static TfLiteStatus ForbiddenCheckingInvoke(TfLiteContext* context,
                                            TfLiteNode* node) {
  TfLiteIntArray* plan = NULL;
  TfLiteNode* n = NULL;
  TfLiteRegistration* r = NULL;
  TfLiteDelegateParams* params = NULL;
  int num = 0;
  TfLiteIntArray* none = TfLiteIntArrayCreate(0);
  TfLiteContext* other = NULL;
  g_forbidden_status[0] = context->GetExecutionPlan(context, &plan);
  g_forbidden_status[1] = context->GetNodeAndRegistration(context, 0, &n, &r);
  g_forbidden_status[2] = context->ReplaceNodeSubsetsWithDelegateKernels(
      context, EmptyRegistration(), none, node->delegate);
  g_forbidden_status[3] =
      context->PreviewDelegatePartitioning(context, none, &params, &num);
  g_forbidden_status[4] = context->AcquireSubgraphContext(context, 0, &other);
  TfLiteIntArrayFree(none);
  g_kernel_checked_forbidden = true;
  return FakeFusedInvoke(context, node);
}

static TfLiteStatus ForbiddenCheckingPrepare(TfLiteContext* context,
                                             TfLiteDelegate* delegate) {
  TfLiteIntArray* plan = NULL;
  TfLiteIntArray* none = TfLiteIntArrayCreate(0);
  TfLiteDelegateParams* params = NULL;
  int num = -1;
  TfLiteRegistration reg = EmptyRegistration();
  TfLiteStatus status;
  CHECK_EQ_INT(kTfLiteOk, context->GetExecutionPlan(context, &plan));
  CHECK_EQ_INT(2, plan->size);
  /* Nothing to preview / replace is fine. */
  CHECK_EQ_INT(kTfLiteOk, context->PreviewDelegatePartitioning(
                              context, none, &params, &num));
  CHECK_EQ_INT(0, num);
  CHECK_EQ_INT(kTfLiteOk, context->ReplaceNodeSubsetsWithDelegateKernels(
                              context, reg, none, delegate));
  TfLiteIntArrayFree(none);
  CHECK_EQ_INT(kTfLiteOk, context->GetExecutionPlan(context, &plan));
  CHECK_EQ_INT(2, plan->size);
  reg.prepare = FakeFusedPrepare;
  reg.invoke = ForbiddenCheckingInvoke;
  reg.custom_name = "forbidden_checker";
  status = context->ReplaceNodeSubsetsWithDelegateKernels(context, reg, plan,
                                                          delegate);
  return status;
}

static void TestContextFunctionsForbiddenOutsidePrepare(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteDelegate delegate = TfLiteDelegateCreate();
  ErrorCollector errors;
  TfLiteInterpreter* interpreter;
  int i;
  ErrorCollectorReset(&errors);
  delegate.Prepare = ForbiddenCheckingPrepare;
  TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, &errors);
  TfLiteInterpreterOptionsAddDelegate(options, &delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  g_kernel_checked_forbidden = false;
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  CHECK(g_kernel_checked_forbidden);
  for (i = 0; i < 5; ++i) CHECK_EQ_INT(kTfLiteError, g_forbidden_status[i]);
  CHECK_CONTAINS(errors.messages,
                 "The function is forbidden if not calling in delegate.");
  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

/* Delegates are applied to every subgraph; AcquireSubgraphContext gives
 * another subgraph's context with the delegate functions until released. */
typedef struct SubgraphVisitor {
  int prepare_calls;
  int plan_sizes[4];
  int other_plan_size;
  TfLiteStatus after_release;
} SubgraphVisitor;

static TfLiteStatus AcquiringPrepare(TfLiteContext* context,
                                     TfLiteDelegate* delegate) {
  SubgraphVisitor* v = (SubgraphVisitor*)delegate->data_;
  TfLiteIntArray* plan = NULL;
  TfLiteContext* other = NULL;
  CHECK_EQ_INT(kTfLiteOk, context->GetExecutionPlan(context, &plan));
  v->plan_sizes[v->prepare_calls++] = plan->size;
  if (v->prepare_calls == 1) {
    CHECK_EQ_INT(kTfLiteOk, context->AcquireSubgraphContext(context, 1, &other));
    CHECK_NOT_NULL(other);
    CHECK(other != context);
    CHECK_EQ_INT(kTfLiteOk, other->GetExecutionPlan(other, &plan));
    v->other_plan_size = plan->size;
    CHECK_EQ_INT(kTfLiteOk, context->ReleaseSubgraphContext(context, 1));
    v->after_release = other->GetExecutionPlan(other, &plan);
    /* Out of range. */
    CHECK_EQ_INT(kTfLiteError,
                 context->AcquireSubgraphContext(context, 7, &other));
  }
  return kTfLiteOk;
}

static void TestDelegateSeesEverySubgraph(void) {
  TfLiteModel* model =
      TfLiteModelCreateFromFile(CorpusPath("multi_signatures.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteDelegate delegate = TfLiteDelegateCreate();
  ErrorCollector errors;
  SubgraphVisitor visitor;
  TfLiteInterpreter* interpreter;
  memset(&visitor, 0, sizeof(visitor));
  ErrorCollectorReset(&errors);
  delegate.data_ = &visitor;
  delegate.Prepare = AcquiringPrepare;
  TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, &errors);
  TfLiteInterpreterOptionsAddDelegate(options, &delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(2, visitor.prepare_calls);
  CHECK_EQ_INT(1, visitor.plan_sizes[0]);
  CHECK_EQ_INT(1, visitor.plan_sizes[1]);
  CHECK_EQ_INT(1, visitor.other_plan_size);
  CHECK_EQ_INT(kTfLiteError, visitor.after_release);
  CHECK_CONTAINS(errors.messages,
                 "The function is forbidden if not calling in delegate.");
  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

/* ---- buffer handles (CApiExperimentalTest) ---------------------------------- */

static void TestSetAndGetBufferHandle(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  SimpleDelegate simple;
  const int nodes[2] = {0, 1};
  TfLiteInterpreter* interpreter;
  TfLiteTensor* tensor;
  TfLiteOpaqueDelegate* fetched_delegate = NULL;
  TfLiteBufferHandle fetched_handle = 0;
  SimpleDelegateInit(&simple, nodes, 2, kTfLiteDelegateFlagsNone, false);
  TfLiteInterpreterOptionsAddDelegate(options, &simple.delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));

  /* Tensor 1 is the model's input: no handle, no delegate yet. */
  tensor = TfLiteInterpreterGetTensor(interpreter, 1);
  CHECK_EQ_INT(kTfLiteNullBufferHandle, tensor->buffer_handle);
  CHECK_NULL(tensor->delegate);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterSetBufferHandle(
                              interpreter, tensor, 1234, &simple.delegate));
  CHECK_EQ_PTR(&simple.delegate, tensor->delegate);
  CHECK_EQ_INT(1234, tensor->buffer_handle);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterGetBufferHandle(interpreter, 1, &fetched_handle,
                                                &fetched_delegate));
  CHECK_EQ_PTR(&simple.delegate, fetched_delegate);
  CHECK_EQ_INT(1234, fetched_handle);
  /* Setting another handle gives the old one back first. */
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterSetBufferHandle(
                              interpreter, tensor, 1235, &simple.delegate));
  CHECK_EQ_INT(1, simple.free_handle_calls);
  CHECK_EQ_INT(1235, tensor->buffer_handle);

  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  TfLiteInterpreterDelete(interpreter);
  /* Deleting the interpreter gives every handle back. */
  CHECK_EQ_INT(2, simple.free_handle_calls);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

/* A stale output is copied back from its buffer handle after Invoke unless
 * buffer-handle outputs are allowed. */
static void RunBufferHandleOutput(bool allow) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  SimpleDelegate simple;
  const int nodes[2] = {0, 1};
  TfLiteInterpreter* interpreter;
  TfLiteTensor* input;
  TfLiteTensor* output;
  size_t i, n;
  SimpleDelegateInit(&simple, nodes, 2, kTfLiteDelegateFlagsNone, false);
  TfLiteInterpreterOptionsAddDelegate(options, &simple.delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  input = TfLiteInterpreterGetInputTensor(interpreter, 0);
  n = NumElements(input->dims);
  for (i = 0; i < n; ++i) input->data.f[i] = 1.f;
  output = TfLiteInterpreterGetTensor(interpreter, 2);
  /* The delegate node writes tensor 2: it belongs to the delegate already. */
  CHECK_EQ_PTR(&simple.delegate, output->delegate);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterSetBufferHandle(
                              interpreter, output, 0, &simple.delegate));
  TfLiteSetAllowBufferHandleOutput(interpreter, allow);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  if (allow) {
    CHECK_EQ_INT(0, simple.copy_from_calls);
    CHECK(output->data_is_stale);
    CHECK_EQ_FLOAT(2.f, output->data.f[0]);
  } else {
    CHECK_EQ_INT(1, simple.copy_from_calls);
    CHECK(!output->data_is_stale);
    CHECK_EQ_FLOAT(6.f, output->data.f[0]); /* from CopyFromBufferHandle */
    CHECK_EQ_FLOAT(2.f, output->data.f[1]);
  }
  CHECK_EQ_INT(0, output->buffer_handle);
  CHECK_EQ_INT(0, simple.free_handle_calls);
  if (allow) {
    /* TfLiteInterpreterEnsureTensorDataIsReadable is 2.18+; look it up. */
    typedef TfLiteStatus (*EnsureFn)(TfLiteInterpreter*, int);
    EnsureFn ensure = (EnsureFn)OptionalLibSymbol(
        "TfLiteInterpreterEnsureTensorDataIsReadable");
    if (ensure != NULL) {
      CHECK_EQ_INT(kTfLiteOk, ensure(interpreter, 2));
      CHECK_EQ_INT(1, simple.copy_from_calls);
      CHECK(!output->data_is_stale);
      CHECK_EQ_FLOAT(6.f, output->data.f[0]);
      CHECK_EQ_INT(kTfLiteOk, ensure(interpreter, 2)); /* not stale: no copy */
      CHECK_EQ_INT(1, simple.copy_from_calls);
    }
  }
  TfLiteInterpreterDelete(interpreter);
  CHECK_EQ_INT(1, simple.free_handle_calls);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

static void TestSetAllowBufferHandleOutputFalse(void) {
  RunBufferHandleOutput(false);
}

static void TestSetAllowBufferHandleOutputTrue(void) {
  RunBufferHandleOutput(true);
}

static void TestSetInvalidHandleToTensor(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  SimpleDelegate simple, another;
  const int nodes[3] = {0, 1, 2};
  TfLiteInterpreter* interpreter;
  TfLiteTensor* tensor;
  SimpleDelegateInit(&simple, nodes, 2, kTfLiteDelegateFlagsNone, false);
  SimpleDelegateInit(&another, nodes, 3, kTfLiteDelegateFlagsNone, false);
  TfLiteInterpreterOptionsAddDelegate(options, &simple.delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  tensor = TfLiteInterpreterGetTensor(interpreter, 2);
  CHECK_EQ_PTR(&simple.delegate, tensor->delegate);
  CHECK_EQ_INT(kTfLiteNullBufferHandle, tensor->buffer_handle);
  /* The tensor belongs to another delegate. */
  CHECK_EQ_INT(kTfLiteError, TfLiteInterpreterSetBufferHandle(
                                 interpreter, tensor, kTfLiteNullBufferHandle + 1,
                                 &another.delegate));
  CHECK_EQ_PTR(&simple.delegate, tensor->delegate);
  CHECK_EQ_INT(kTfLiteNullBufferHandle, tensor->buffer_handle);
  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

/* ---- TestDelegate.* (c_api_experimental_test.cc) ---------------------------- */

/* add.bin with input {1, 3} resized to {2}: four Invokes; each result is
 * checked exactly; outputs are checked whenever the status is not
 * kTfLiteError. */
static void CheckExecution(TfLiteInterpreterOptions* options,
                           TfLiteStatus expected_first,
                           TfLiteStatus expected_rest) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreter* interpreter = TfLiteInterpreterCreate(model, options);
  TfLiteTensor* input;
  int dims[1] = {2};
  float x[2] = {1.f, 3.f};
  int i;
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterResizeInputTensor(interpreter, 0, dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  input = TfLiteInterpreterGetInputTensor(interpreter, 0);
  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyFromBuffer(input, x, sizeof(x)));
  for (i = 0; i < 4; ++i) {
    TfLiteStatus status = TfLiteInterpreterInvoke(interpreter);
    CHECK_EQ_INT(i == 0 ? expected_first : expected_rest, status);
    if (status != kTfLiteError) {
      float y[2] = {0.f, 0.f};
      CHECK_EQ_INT(kTfLiteOk,
                   TfLiteTensorCopyToBuffer(
                       TfLiteInterpreterGetOutputTensor(interpreter, 0), y,
                       sizeof(y)));
      CHECK_EQ_FLOAT(3.f, y[0]);
      CHECK_EQ_FLOAT(9.f, y[1]);
    }
  }
  TfLiteInterpreterDelete(interpreter);
  TfLiteModelDelete(model);
}

static void TestNoDelegate(void) {
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  CheckExecution(options, kTfLiteOk, kTfLiteOk);
  TfLiteInterpreterOptionsDelete(options);
}

static void TestDelegateNodeInvokeFailure(void) {
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  SimpleDelegate simple;
  const int nodes[2] = {0, 1};
  SimpleDelegateInit(&simple, nodes, 2, kTfLiteDelegateFlagsNone, true);
  TfLiteInterpreterOptionsAddDelegate(options, &simple.delegate);
  CheckExecution(options, kTfLiteError, kTfLiteError);
  TfLiteInterpreterOptionsDelete(options);
}

static void TestDelegateNodeInvokeFailureFallback(void) {
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  SimpleDelegate simple;
  const int nodes[2] = {0, 1};
  ErrorCollector errors;
  ErrorCollectorReset(&errors);
  SimpleDelegateInit(&simple, nodes, 2, kTfLiteDelegateFlagsNone, true);
  TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, &errors);
  TfLiteInterpreterOptionsAddDelegate(options, &simple.delegate);
  TfLiteInterpreterOptionsSetEnableDelegateFallback(options, true);
  /* The first Invoke fails in the delegate, falls back to the CPU (outputs
   * valid) and says so with kTfLiteDelegateError; later ones run on the CPU. */
  CheckExecution(options, kTfLiteDelegateError, kTfLiteOk);
  CHECK_CONTAINS(errors.messages,
                 "Invoke() failed in the presence of delegation. Retrying "
                 "without.");
  TfLiteInterpreterOptionsDelete(options);
}

static void TestFallbackWithMultipleDelegates(void) {
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  SimpleDelegate first, second;
  const int node0[1] = {0};
  const int node1[1] = {1};
  /* The first allows dynamic tensors (else the second could not be applied
   * after it); the second makes the graph immutable. Both fail in Invoke. */
  SimpleDelegateInit(&first, node0, 1, kTfLiteDelegateFlagsAllowDynamicTensors,
                     true);
  SimpleDelegateInit(&second, node1, 1, kTfLiteDelegateFlagsNone, true);
  TfLiteInterpreterOptionsAddDelegate(options, &first.delegate);
  TfLiteInterpreterOptionsAddDelegate(options, &second.delegate);
  TfLiteInterpreterOptionsSetEnableDelegateFallback(options, true);
  CheckExecution(options, kTfLiteDelegateError, kTfLiteOk);
  TfLiteInterpreterOptionsDelete(options);
}

/* A resize after delegation applies again (calls Prepare again for) a
 * delegate that does not allow dynamic tensors; one that does is kept. */
static void RunResizeAfterDelegation(int64_t flags, int expected_prepares) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  SimpleDelegate simple;
  const int nodes[2] = {0, 1};
  TfLiteInterpreter* interpreter;
  int dims[1] = {2};
  float x[2] = {1.f, 3.f}, y[2] = {0.f, 0.f};
  SimpleDelegateInit(&simple, nodes, 2, flags, false);
  TfLiteInterpreterOptionsAddDelegate(options, &simple.delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(1, simple.prepare_calls);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(1, simple.prepare_calls);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterResizeInputTensor(interpreter, 0, dims, 1));
  CHECK_EQ_INT(1, simple.prepare_calls);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(expected_prepares, simple.prepare_calls);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyFromBuffer(
                   TfLiteInterpreterGetInputTensor(interpreter, 0), x,
                   sizeof(x)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyToBuffer(
                              TfLiteInterpreterGetOutputTensor(interpreter, 0),
                              y, sizeof(y)));
  /* The fused kernel computes in + in. */
  CHECK_EQ_FLOAT(2.f, y[0]);
  CHECK_EQ_FLOAT(6.f, y[1]);
  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

static void TestResizeReappliesStaticShapeDelegate(void) {
  RunResizeAfterDelegation(kTfLiteDelegateFlagsNone, 2);
}

static void TestResizeKeepsDynamicShapeDelegate(void) {
  RunResizeAfterDelegation(kTfLiteDelegateFlagsAllowDynamicTensors, 1);
}

/* kTfLiteDelegateFlagsRequirePropagatedShapes: after a resize, the original
 * (replaced) nodes are prepared again before the delegate kernel, so shapes
 * reach it without the kernel resizing anything; without the flag the kernel
 * sees the old output shape. */
static void RunPropagatedShapes(int64_t flags, TfLiteStatus expected) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  SimpleDelegate simple;
  const int nodes[2] = {0, 1};
  TfLiteInterpreter* interpreter;
  ErrorCollector errors;
  int dims[1] = {2};
  ErrorCollectorReset(&errors);
  SimpleDelegateInit(&simple, nodes, 2,
                     kTfLiteDelegateFlagsAllowDynamicTensors | flags, false);
  simple.shapes_propagated = true;
  TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, &errors);
  TfLiteInterpreterOptionsAddDelegate(options, &simple.delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterResizeInputTensor(interpreter, 0, dims, 1));
  CHECK_EQ_INT(expected, TfLiteInterpreterAllocateTensors(interpreter));
  if (expected == kTfLiteOk) {
    float x[2] = {1.f, 3.f}, y[2] = {0.f, 0.f};
    CHECK_EQ_INT(1, TfLiteTensorNumDims(
                        TfLiteInterpreterGetOutputTensor(interpreter, 0)));
    CHECK_EQ_INT(kTfLiteOk,
                 TfLiteTensorCopyFromBuffer(
                     TfLiteInterpreterGetInputTensor(interpreter, 0), x,
                     sizeof(x)));
    CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
    CHECK_EQ_INT(kTfLiteOk,
                 TfLiteTensorCopyToBuffer(
                     TfLiteInterpreterGetOutputTensor(interpreter, 0), y,
                     sizeof(y)));
    CHECK_EQ_FLOAT(2.f, y[0]);
    CHECK_EQ_FLOAT(6.f, y[1]);
  }
  CHECK_EQ_INT(1, simple.prepare_calls);
  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

static void TestRequirePropagatedShapes(void) {
  RunPropagatedShapes(kTfLiteDelegateFlagsRequirePropagatedShapes, kTfLiteOk);
  RunPropagatedShapes(kTfLiteDelegateFlagsNone, kTfLiteError);
}

/* ---- partitioning: the demo model and the 8-node chain ---------------------------- */

static void CheckRecord(const InitRecord* r, const int* nodes, int num_nodes,
                        const int* inputs, int num_inputs, const int* outputs,
                        int num_outputs) {
  int i;
  CHECK_EQ_INT(num_nodes, r->num_nodes);
  for (i = 0; i < num_nodes; ++i) CHECK_EQ_INT(nodes[i], r->nodes[i]);
  CHECK_EQ_INT(num_inputs, r->num_inputs);
  for (i = 0; i < num_inputs; ++i) CHECK_EQ_INT(inputs[i], r->inputs[i]);
  CHECK_EQ_INT(num_outputs, r->num_outputs);
  for (i = 0; i < num_outputs; ++i) CHECK_EQ_INT(outputs[i], r->outputs[i]);
}

/* sin_add_mul.tflite: 0 SIN(x)->t2, 1 ADD(t2,x)->t3, 2 MUL(x,c)->t4,
 * 3 SIN(t4)->t5, 4 ADD(t3,t5)->t6. A delegate taking SIN splits it into the
 * four subsets TFLite makes: [SIN1] [ADD1, MUL] [SIN2] [ADD2]. */
static void TestSinAddMulPartitions(void) {
  TfLiteModel* model =
      TfLiteModelCreateFromFile(ModelPath("sin_add_mul.tflite"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  OpDelegate sin_delegate;
  ProbeDelegate probe;
  TfLiteInterpreter* interpreter;
  TfLiteTensor* input;
  const TfLiteTensor* output;
  const int n0[1] = {0}, in0[1] = {0}, out0[1] = {2};
  const int n1[1] = {3}, in1[1] = {4}, out1[1] = {5};
  const int plan[5] = {5, 1, 2, 6, 4};
  float x[64], y[64];
  size_t i, n;
  CHECK_NOT_NULL(model);
  ResetInits();
  OpDelegateInit(&sin_delegate, kTfLiteBuiltinSin, NULL, 1,
                 kTfLiteDelegateFlagsNone);
  TfLiteInterpreterOptionsAddDelegate(options, &sin_delegate.delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(1, sin_delegate.prepare_calls);
  CHECK_EQ_INT(5, sin_delegate.plan_size_seen);
  CHECK_EQ_INT(2, sin_delegate.num_claimed);

  /* PreviewDelegatePartitioning: the two delegated subsets. */
  CHECK_EQ_INT(2, sin_delegate.preview_count);
  CheckRecord(&sin_delegate.preview[0], n0, 1, in0, 1, out0, 1);
  CheckRecord(&sin_delegate.preview[1], n1, 1, in1, 1, out1, 1);
  /* The params each delegate node's init got: the same, with the delegate. */
  CHECK_EQ_INT(2, g_num_inits);
  CheckRecord(&g_inits[0], n0, 1, in0, 1, out0, 1);
  CheckRecord(&g_inits[1], n1, 1, in1, 1, out1, 1);
  CHECK_EQ_PTR(&sin_delegate.delegate, g_inits[0].delegate);
  CHECK_EQ_PTR(&sin_delegate.delegate, g_inits[1].delegate);

  /* The plan: delegate node, ADD + MUL kept in order, delegate node, ADD. */
  Probe(interpreter, &probe);
  CHECK_EQ_INT(5, probe.plan_size);
  for (i = 0; i < 5; ++i) CHECK_EQ_INT(plan[i], probe.plan[i].index);
  CHECK_EQ_INT(kTfLiteBuiltinDelegate, probe.plan[0].code);
  CHECK_EQ_PTR(&sin_delegate.delegate, probe.plan[0].delegate);
  CHECK_EQ_INT(1, probe.plan[0].num_inputs);
  CHECK_EQ_INT(0, probe.plan[0].inputs[0]);
  CHECK_EQ_INT(2, probe.plan[0].outputs[0]);
  CHECK_EQ_INT(kTfLiteBuiltinAdd, probe.plan[1].code);
  CHECK_NULL(probe.plan[1].delegate);
  CHECK_EQ_INT(kTfLiteBuiltinMul, probe.plan[2].code);
  CHECK_EQ_INT(kTfLiteBuiltinDelegate, probe.plan[3].code);
  CHECK_EQ_INT(4, probe.plan[3].inputs[0]);
  CHECK_EQ_INT(5, probe.plan[3].outputs[0]);
  CHECK_EQ_INT(kTfLiteBuiltinAdd, probe.plan[4].code);
  /* Outputs of delegated subsets belong to the delegate. */
  CHECK_EQ_PTR(&sin_delegate.delegate,
               TfLiteInterpreterGetTensor(interpreter, 2)->delegate);
  CHECK_EQ_PTR(&sin_delegate.delegate,
               TfLiteInterpreterGetTensor(interpreter, 5)->delegate);
  CHECK_NULL(TfLiteInterpreterGetTensor(interpreter, 3)->delegate);

  /* And it computes f(x) = sin(x) + x + sin(2x). */
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  input = TfLiteInterpreterGetInputTensor(interpreter, 0);
  n = TfLiteTensorByteSize(input) / sizeof(float);
  CHECK(n >= 1 && n <= 64);
  for (i = 0; i < n; ++i) x[i] = -1.5f + 0.37f * (float)i;
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyFromBuffer(input, x, n * sizeof(float)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  output = TfLiteInterpreterGetOutputTensor(interpreter, 0);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyToBuffer(output, y, n * sizeof(float)));
  for (i = 0; i < n; ++i)
    CHECK_NEAR(sin(x[i]) + x[i] + sin(2.0 * x[i]), y[i], 1e-5);

  TfLiteInterpreterDelete(interpreter);
  CHECK_EQ_INT(2, g_kernel_frees);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

/* TestFP16Delegation's graph: 0 RELU, 1 ADD, 2 RELU, 3 ADD, 4 RELU, 5 MUL,
 * 6 RELU, 7 ADD; a delegate taking the ADDs gets nodes {1, 3} and {7} and the
 * plan shrinks from 8 to 7. y = ((x + 2) + 2) * 2 + 2. */
static void TestChainOfEightNodes(void) {
  TfLiteModel* model =
      TfLiteModelCreateFromFile(DataPath("delegate_chain8.tflite"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  OpDelegate add_delegate;
  ProbeDelegate probe;
  TfLiteInterpreter* interpreter;
  const int n0[2] = {1, 3}, in0[3] = {0, 2, 5}, out0[1] = {6};
  const int n1[1] = {7}, in1[2] = {9, 11}, out1[1] = {12};
  const int plan[7] = {0, 2, 4, 6, 8, 5, 9};
  float x = 3.f, y = 0.f;
  int i;
  CHECK_NOT_NULL(model);
  ResetInits();
  OpDelegateInit(&add_delegate, kTfLiteBuiltinAdd, NULL, 1,
                 kTfLiteDelegateFlagsNone);
  TfLiteInterpreterOptionsAddDelegate(options, &add_delegate.delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(8, add_delegate.plan_size_seen);
  CHECK_EQ_INT(3, add_delegate.num_claimed);
  CHECK_EQ_INT(2, add_delegate.preview_count);
  CHECK_EQ_INT(2, g_num_inits);
  CheckRecord(&g_inits[0], n0, 2, in0, 3, out0, 1);
  CheckRecord(&g_inits[1], n1, 1, in1, 2, out1, 1);
  CheckRecord(&add_delegate.preview[0], n0, 2, in0, 3, out0, 1);
  CheckRecord(&add_delegate.preview[1], n1, 1, in1, 2, out1, 1);

  Probe(interpreter, &probe);
  CHECK_EQ_INT(7, probe.plan_size);
  for (i = 0; i < 7; ++i) CHECK_EQ_INT(plan[i], probe.plan[i].index);
  CHECK_EQ_INT(kTfLiteBuiltinDelegate, probe.plan[4].code);
  CHECK_EQ_INT(kTfLiteBuiltinMul, probe.plan[5].code);
  CHECK_EQ_INT(kTfLiteBuiltinDelegate, probe.plan[6].code);

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
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

/* ---- op versions --------------------------------------------------------------- */

/* A stand-in DEPTHWISE_CONV_2D kernel (registered for versions 1-2 so the model
 * loads whether or not the library has one); never invoked here. */
static TfLiteStatus StubInvoke(TfLiteContext* context, TfLiteNode* node) {
  (void)context;
  (void)node;
  return kTfLiteError;
}

static void RunDepthwiseDelegate(int max_version, bool expect_claimed) {
  TfLiteModel* model =
      TfLiteModelCreateFromFile(ModelPath("depthwise_dilated.tflite"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteRegistration stub = EmptyRegistration();
  OpDelegate dw;
  ProbeDelegate probe;
  TfLiteInterpreter* interpreter;
  CHECK_NOT_NULL(model);
  ResetInits();
  stub.invoke = StubInvoke;
  TfLiteInterpreterOptionsAddBuiltinOp(options, kTfLiteBuiltinDepthwiseConv2d,
                                       &stub, 1, 2);
  OpDelegateInit(&dw, kTfLiteBuiltinDepthwiseConv2d, NULL, max_version,
                 kTfLiteDelegateFlagsNone);
  TfLiteInterpreterOptionsAddDelegate(options, &dw.delegate);
  interpreter = TfLiteInterpreterCreateWithSelectedOps(model, options);
  CHECK_NOT_NULL(interpreter);
  /* The delegate saw the node and its version, 2 (dilation). */
  CHECK_EQ_INT(1, dw.num_seen);
  CHECK_EQ_INT(2, dw.versions_seen[0]);
  Probe(interpreter, &probe);
  CHECK_EQ_INT(1, probe.plan_size);
  if (expect_claimed) {
    CHECK_EQ_INT(1, dw.num_claimed);
    CHECK_EQ_INT(1, g_num_inits);
    CHECK_EQ_INT(kTfLiteBuiltinDelegate, probe.plan[0].code);
    CHECK_EQ_PTR(&dw.delegate, probe.plan[0].delegate);
  } else {
    /* Left on the CPU: the plan still holds the DEPTHWISE_CONV_2D v2 node. */
    CHECK_EQ_INT(0, dw.num_claimed);
    CHECK_EQ_INT(0, g_num_inits);
    CHECK_EQ_INT(0, probe.plan[0].index);
    CHECK_EQ_INT(kTfLiteBuiltinDepthwiseConv2d, probe.plan[0].code);
    CHECK_EQ_INT(2, probe.plan[0].version);
    CHECK_NULL(probe.plan[0].delegate);
  }
  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

static void TestVersionAwareDelegateLeavesNewerOpOnCpu(void) {
  RunDepthwiseDelegate(1, false);
}

static void TestVersionAwareDelegateTakesSupportedVersion(void) {
  RunDepthwiseDelegate(2, true);
}

/* ---- an unresolved custom op claimed by a delegate --------------------------- */

static void TestDelegateClaimsUnresolvedCustomOp(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("custom_sinh.bin"));
  OpDelegate sinh_delegate;
  TfLiteInterpreterOptions* options;
  TfLiteInterpreter* interpreter;
  ErrorCollector errors;
  float x = 1.f, y = 0.f;
  CHECK_NOT_NULL(model);

  /* No resolver knows "Sinh": AllocateTensors fails without a delegate. */
  ErrorCollectorReset(&errors);
  options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, &errors);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK(TfLiteInterpreterAllocateTensors(interpreter) != kTfLiteOk);
  CHECK_CONTAINS(errors.messages, "Encountered unresolved custom op: Sinh.");
  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);

  /* A delegate that needs static shapes prepares the graph first, which fails
   * on the unresolved op: creation fails (as in TFLite). */
  ResetInits();
  options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, &errors);
  OpDelegateInit(&sinh_delegate, kTfLiteBuiltinCustom, "Sinh", 1,
                 kTfLiteDelegateFlagsNone);
  TfLiteInterpreterOptionsAddDelegate(options, &sinh_delegate.delegate);
  CHECK_NULL(TfLiteInterpreterCreate(model, options));
  CHECK_EQ_INT(0, sinh_delegate.prepare_calls);
  TfLiteInterpreterOptionsDelete(options);

  /* One that allows dynamic tensors claims it, and the model runs. */
  ResetInits();
  options = TfLiteInterpreterOptionsCreate();
  OpDelegateInit(&sinh_delegate, kTfLiteBuiltinCustom, "Sinh", 1,
                 kTfLiteDelegateFlagsAllowDynamicTensors);
  TfLiteInterpreterOptionsAddDelegate(options, &sinh_delegate.delegate);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(1, sinh_delegate.num_claimed);
  CHECK_EQ_INT(1, g_num_inits);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyFromBuffer(
                   TfLiteInterpreterGetInputTensor(interpreter, 0), &x,
                   sizeof(x)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyToBuffer(
                              TfLiteInterpreterGetOutputTensor(interpreter, 0),
                              &y, sizeof(y)));
  CHECK_NEAR(sinh(1.0), y, 1e-6);
  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

int main(void) {
  RUN_TEST(TestDelegateIsApplied);
  RUN_TEST(TestDelegateFails);
  RUN_TEST(TestModifyGraphWithFailingDelegateRunsOnCpu);
  RUN_TEST(TestContextFunctionsForbiddenOutsidePrepare);
  RUN_TEST(TestDelegateSeesEverySubgraph);
  RUN_TEST(TestSetAndGetBufferHandle);
  RUN_TEST(TestSetAllowBufferHandleOutputFalse);
  RUN_TEST(TestSetAllowBufferHandleOutputTrue);
  RUN_TEST(TestSetInvalidHandleToTensor);
  RUN_TEST(TestNoDelegate);
  RUN_TEST(TestDelegateNodeInvokeFailure);
  RUN_TEST(TestDelegateNodeInvokeFailureFallback);
  RUN_TEST(TestFallbackWithMultipleDelegates);
  RUN_TEST(TestResizeReappliesStaticShapeDelegate);
  RUN_TEST(TestResizeKeepsDynamicShapeDelegate);
  RUN_TEST(TestRequirePropagatedShapes);
  RUN_TEST(TestSinAddMulPartitions);
  RUN_TEST(TestChainOfEightNodes);
  RUN_TEST(TestVersionAwareDelegateLeavesNewerOpOnCpu);
  RUN_TEST(TestVersionAwareDelegateTakesSupportedVersion);
  RUN_TEST(TestDelegateClaimsUnresolvedCustomOp);
  return 0;
}
