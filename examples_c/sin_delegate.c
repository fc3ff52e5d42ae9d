/*
 * sin_delegate: the classic MyDelegate example (a SIN delegate), done right, in C.
 *
 * A delegate that takes every SIN node. ReplaceNodeSubsetsWithDelegateKernels
 * gathers connected SIN nodes into one delegate node per partition, so one
 * delegate kernel may stand for several SIN nodes (sin(sin(x)) is a single
 * partition of two). A kernel that computes sin of its input once is wrong
 * then; this kernel runs every node of its partition, in order, keeping
 * the tensors produced and consumed inside the partition in its own buffers
 * (the runtime does not allocate those).
 *
 * The program runs the model with the delegate and without it (CPU kernels)
 * and compares the outputs.
 * usage: sin_delegate MODEL.tflite   (e.g. examples_c/sin_sin.tflite or
 *                                     examples_c/demo_model.tflite)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/builtin_ops.h"
#include "tensorflow/lite/c/c_api.h"
#include "tensorflow/lite/c/c_api_experimental.h"
#include "tensorflow/lite/c/common.h"

#define MAX_OPS 32

/* ---- the delegate kernel ------------------------------------------------- */

/* One SIN node of the partition. */
typedef struct SinOp {
  int input, output; /* tensor indices */
} SinOp;

/* What one delegate node runs. */
typedef struct SinKernel {
  SinOp ops[MAX_OPS];
  int num_ops;
  TfLiteIntArray* outputs;  /* the partition's outputs (runtime memory) */
  float* scratch[MAX_OPS];  /* ops[i].output when it stays inside */
  size_t scratch_len[MAX_OPS];
} SinKernel;

static size_t NumElements(const TfLiteIntArray* dims) {
  size_t n = 1;
  for (int i = 0; i < dims->size; ++i) n *= (size_t)dims->data[i];
  return n;
}

static int IsPartitionOutput(const SinKernel* k, int tensor) {
  for (int i = 0; i < k->outputs->size; ++i)
    if (k->outputs->data[i] == tensor) return 1;
  return 0;
}

/* init gets the partition (TfLiteDelegateParams) as its buffer. It runs inside
 * the delegate's Prepare, so GetNodeAndRegistration may be used here. */
static void* SinKernelInit(TfLiteContext* context, const char* buffer,
                           size_t length) {
  (void)length;
  const TfLiteDelegateParams* params = (const TfLiteDelegateParams*)buffer;
  SinKernel* k = (SinKernel*)calloc(1, sizeof(SinKernel));
  if (k == NULL) return NULL;
  for (int i = 0; i < params->nodes_to_replace->size && i < MAX_OPS; ++i) {
    TfLiteNode* node;
    TfLiteRegistration* reg;
    if (context->GetNodeAndRegistration(context,
                                        params->nodes_to_replace->data[i],
                                        &node, &reg) != kTfLiteOk) {
      free(k);
      return NULL;
    }
    k->ops[k->num_ops].input = node->inputs->data[0];
    k->ops[k->num_ops].output = node->outputs->data[0];
    k->num_ops++;
  }
  k->outputs = TfLiteIntArrayCopy(params->output_tensors);
  return k;
}

static void SinKernelFree(TfLiteContext* context, void* buffer) {
  (void)context;
  SinKernel* k = (SinKernel*)buffer;
  for (int i = 0; i < k->num_ops; ++i) free(k->scratch[i]);
  TfLiteIntArrayFree(k->outputs);
  free(k);
}

/* Shapes flow through the partition (SIN keeps its input's shape): outputs
 * the runtime sees are resized, inner tensors get scratch buffers. */
static TfLiteStatus SinKernelPrepare(TfLiteContext* context, TfLiteNode* node) {
  SinKernel* k = (SinKernel*)node->user_data;
  TF_LITE_ENSURE(context, k != NULL);
  for (int i = 0; i < k->num_ops; ++i) {
    const TfLiteTensor* in = &context->tensors[k->ops[i].input];
    TfLiteTensor* out = &context->tensors[k->ops[i].output];
    TF_LITE_ENSURE_TYPES_EQ(context, in->type, kTfLiteFloat32);
    TF_LITE_ENSURE_STATUS(
        context->ResizeTensor(context, out, TfLiteIntArrayCopy(in->dims)));
    if (!IsPartitionOutput(k, k->ops[i].output)) {
      size_t n = NumElements(out->dims);
      free(k->scratch[i]);
      k->scratch[i] = (float*)malloc((n ? n : 1) * sizeof(float));
      TF_LITE_ENSURE(context, k->scratch[i] != NULL);
      k->scratch_len[i] = n;
    }
  }
  return kTfLiteOk;
}

/* The data of `tensor` as this kernel sees it. */
static float* Data(TfLiteContext* context, SinKernel* k, int tensor) {
  for (int i = 0; i < k->num_ops; ++i)
    if (k->ops[i].output == tensor && k->scratch[i] != NULL)
      return k->scratch[i];
  return context->tensors[tensor].data.f;
}

/* Every node of the partition, in order: a kernel computing sin once would
 * miss the others. */
static TfLiteStatus SinKernelInvoke(TfLiteContext* context, TfLiteNode* node) {
  SinKernel* k = (SinKernel*)node->user_data;
  for (int i = 0; i < k->num_ops; ++i) {
    const float* in = Data(context, k, k->ops[i].input);
    float* out = Data(context, k, k->ops[i].output);
    size_t n = NumElements(context->tensors[k->ops[i].output].dims);
    TF_LITE_ENSURE(context, in != NULL && out != NULL);
    for (size_t j = 0; j < n; ++j) out[j] = sinf(in[j]);
  }
  return kTfLiteOk;
}

/* ---- the delegate ---------------------------------------------------------- */

typedef struct SinDelegate {
  TfLiteDelegate base;
  int claimed;    /* SIN nodes taken */
  int partitions; /* delegate nodes made */
} SinDelegate;

static TfLiteStatus SinDelegatePrepare(TfLiteContext* context,
                                       TfLiteDelegate* delegate) {
  SinDelegate* d = (SinDelegate*)delegate->data_;
  TfLiteIntArray* plan;
  TF_LITE_ENSURE_STATUS(context->GetExecutionPlan(context, &plan));
  TfLiteIntArray* supported = TfLiteIntArrayCreate(plan->size);
  int n = 0;
  for (int i = 0; i < plan->size; ++i) {
    TfLiteNode* node;
    TfLiteRegistration* reg;
    if (context->GetNodeAndRegistration(context, plan->data[i], &node, &reg) !=
        kTfLiteOk) {
      TfLiteIntArrayFree(supported);
      return kTfLiteError;
    }
    if (reg->builtin_code == kTfLiteBuiltinSin && reg->version == 1)
      supported->data[n++] = plan->data[i];
  }
  supported->size = n;
  d->claimed += n;

  /* How many delegate nodes will there be? */
  TfLiteDelegateParams* partitions;
  int num_partitions = 0;
  if (context->PreviewDelegatePartitioning(context, supported, &partitions,
                                           &num_partitions) == kTfLiteOk)
    d->partitions += num_partitions;

  TfLiteRegistration kernel;
  memset(&kernel, 0, sizeof(kernel));
  kernel.init = SinKernelInit;
  kernel.free = SinKernelFree;
  kernel.prepare = SinKernelPrepare;
  kernel.invoke = SinKernelInvoke;
  kernel.custom_name = "SinDelegate";
  TfLiteStatus status = context->ReplaceNodeSubsetsWithDelegateKernels(
      context, kernel, supported, delegate);
  TfLiteIntArrayFree(supported);
  return status;
}

/* ---- running ---------------------------------------------------------------- */

/* Runs the model (with `delegate` if not NULL) on a fixed ramp; the outputs go
 * to a malloc'ed array. Returns its length, 0 on failure. */
static size_t Run(const TfLiteModel* model, TfLiteDelegate* delegate,
                  float** out) {
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  if (delegate != NULL) TfLiteInterpreterOptionsAddDelegate(options, delegate);
  TfLiteInterpreter* interpreter = TfLiteInterpreterCreate(model, options);
  TfLiteInterpreterOptionsDelete(options);
  size_t n = 0;
  *out = NULL;
  if (interpreter == NULL) return 0;
  if (TfLiteInterpreterAllocateTensors(interpreter) == kTfLiteOk) {
    TfLiteTensor* input = TfLiteInterpreterGetInputTensor(interpreter, 0);
    size_t m = TfLiteTensorByteSize(input) / sizeof(float);
    float* x = (float*)malloc(m * sizeof(float));
    for (size_t i = 0; i < m; ++i) x[i] = -2.0f + 0.5f * (float)i;
    TfLiteTensorCopyFromBuffer(input, x, m * sizeof(float));
    free(x);
    if (TfLiteInterpreterInvoke(interpreter) == kTfLiteOk) {
      const TfLiteTensor* output =
          TfLiteInterpreterGetOutputTensor(interpreter, 0);
      n = TfLiteTensorByteSize(output) / sizeof(float);
      *out = (float*)malloc(n * sizeof(float));
      TfLiteTensorCopyToBuffer(output, *out, n * sizeof(float));
    }
  }
  TfLiteInterpreterDelete(interpreter);
  return n;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.tflite\n", argv[0]);
    return 2;
  }
  TfLiteModel* model = TfLiteModelCreateFromFile(argv[1]);
  if (model == NULL) {
    fprintf(stderr, "sin_delegate: could not load %s\n", argv[1]);
    return 1;
  }
  SinDelegate sin_delegate;
  memset(&sin_delegate, 0, sizeof(sin_delegate));
  sin_delegate.base = TfLiteDelegateCreate();
  sin_delegate.base.data_ = &sin_delegate;
  sin_delegate.base.Prepare = SinDelegatePrepare;

  float* delegated = NULL;
  float* cpu = NULL;
  size_t n = Run(model, &sin_delegate.base, &delegated);
  size_t n_cpu = Run(model, NULL, &cpu);
  int rc = 1;
  if (n == 0 || n != n_cpu) {
    fprintf(stderr, "sin_delegate: running the model failed\n");
  } else {
    double max_diff = 0;
    for (size_t i = 0; i < n; ++i) {
      double d = fabs((double)delegated[i] - (double)cpu[i]);
      if (d > max_diff) max_diff = d;
    }
    printf("sin_delegate: %d SIN node(s) in %d delegate node(s)\n",
           sin_delegate.claimed, sin_delegate.partitions);
    for (size_t i = 0; i < n && i < 8; ++i)
      printf("  y[%zu] = %f (CPU kernels: %f)\n", i, delegated[i], cpu[i]);
    printf("max |delegate - CPU| = %g\n", max_diff);
    rc = sin_delegate.claimed > 0 && max_diff <= 1e-5 ? 0 : 1;
  }
  free(delegated);
  free(cpu);
  TfLiteModelDelete(model);
  return rc;
}
