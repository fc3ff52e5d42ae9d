/*
 * version_aware_delegate: a delegate that checks op versions.
 *
 * DEPTHWISE_CONV_2D version 2 added dilation factors. A delegate whose kernel
 * only implements version 1 must not take a version-2 node: it reads
 * `registration->version` in Prepare and leaves newer nodes to the CPU. This
 * program applies such a delegate to a model with a DEPTHWISE_CONV_2D v2 node
 * (shared corpus: models/depthwise_dilated.tflite): with support up to v1 the
 * node stays on the CPU; with support up to v2 the delegate takes it. Either
 * way the result must match a direct computation.
 *
 * If the library has no CPU kernel for DEPTHWISE_CONV_2D, this program
 * registers its own reference kernel (TfLiteInterpreterOptionsAddBuiltinOp)
 * and says so.
 * usage: version_aware_delegate depthwise_dilated.tflite
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/builtin_ops.h"
#include "tensorflow/lite/c/builtin_op_data.h"
#include "tensorflow/lite/c/c_api.h"
#include "tensorflow/lite/c/c_api_experimental.h"
#include "tensorflow/lite/c/common.h"

/* ---- depthwise convolution (NHWC, float32), with dilation ----------------- */

static int OutSize(TfLitePadding padding, int in, int filter, int stride,
                   int dilation) {
  int effective = (filter - 1) * dilation + 1;
  if (padding == kTfLitePaddingSame) return (in + stride - 1) / stride;
  return (in - effective + stride) / stride;
}

static int PadBefore(TfLitePadding padding, int in, int out, int filter,
                     int stride, int dilation) {
  int effective = (filter - 1) * dilation + 1;
  int total = (out - 1) * stride + effective - in;
  if (padding != kTfLitePaddingSame || total < 0) return 0;
  return total / 2;
}

static float Activate(TfLiteFusedActivation a, float v) {
  switch (a) {
    case kTfLiteActRelu: return v < 0 ? 0 : v;
    case kTfLiteActReluN1To1: return v < -1 ? -1 : (v > 1 ? 1 : v);
    case kTfLiteActRelu6: return v < 0 ? 0 : (v > 6 ? 6 : v);
    default: return v;
  }
}

/* out[b, y, x, c * m + q] = sum over the window of
 * in[b, y', x', c] * filter[0, ky, kx, c * m + q] + bias[c * m + q]. */
static void DepthwiseConv(const TfLiteDepthwiseConvParams* p,
                          const TfLiteTensor* input, const TfLiteTensor* filter,
                          const TfLiteTensor* bias, const TfLiteIntArray* out_dims,
                          float* out) {
  const int batches = input->dims->data[0], in_h = input->dims->data[1],
            in_w = input->dims->data[2], in_c = input->dims->data[3];
  const int k_h = filter->dims->data[1], k_w = filter->dims->data[2],
            out_c = filter->dims->data[3];
  const int out_h = out_dims->data[1], out_w = out_dims->data[2];
  const int m = out_c / in_c;
  const int dh = p->dilation_height_factor > 0 ? p->dilation_height_factor : 1;
  const int dw = p->dilation_width_factor > 0 ? p->dilation_width_factor : 1;
  const int pad_h = PadBefore(p->padding, in_h, out_h, k_h, p->stride_height, dh);
  const int pad_w = PadBefore(p->padding, in_w, out_w, k_w, p->stride_width, dw);
  for (int b = 0; b < batches; ++b)
    for (int y = 0; y < out_h; ++y)
      for (int x = 0; x < out_w; ++x)
        for (int c = 0; c < in_c; ++c)
          for (int q = 0; q < m; ++q) {
            int oc = c * m + q;
            float acc = bias != NULL ? bias->data.f[oc] : 0.f;
            for (int ky = 0; ky < k_h; ++ky)
              for (int kx = 0; kx < k_w; ++kx) {
                int iy = y * p->stride_height - pad_h + ky * dh;
                int ix = x * p->stride_width - pad_w + kx * dw;
                if (iy < 0 || iy >= in_h || ix < 0 || ix >= in_w) continue;
                acc += input->data.f[((b * in_h + iy) * in_w + ix) * in_c + c] *
                       filter->data.f[(ky * k_w + kx) * out_c + oc];
              }
            out[((b * out_h + y) * out_w + x) * out_c + oc] =
                Activate(p->activation, acc);
          }
}

static TfLiteIntArray* OutputDims(const TfLiteDepthwiseConvParams* p,
                                  const TfLiteTensor* input,
                                  const TfLiteTensor* filter) {
  TfLiteIntArray* d = TfLiteIntArrayCreate(4);
  int dh = p->dilation_height_factor > 0 ? p->dilation_height_factor : 1;
  int dw = p->dilation_width_factor > 0 ? p->dilation_width_factor : 1;
  d->data[0] = input->dims->data[0];
  d->data[1] = OutSize(p->padding, input->dims->data[1], filter->dims->data[1],
                       p->stride_height, dh);
  d->data[2] = OutSize(p->padding, input->dims->data[2], filter->dims->data[2],
                       p->stride_width, dw);
  d->data[3] = filter->dims->data[3];
  return d;
}

/* ---- a reference CPU kernel (used only if the library has none) ------------- */

static TfLiteStatus RefPrepare(TfLiteContext* context, TfLiteNode* node) {
  const TfLiteDepthwiseConvParams* p =
      (const TfLiteDepthwiseConvParams*)node->builtin_data;
  TF_LITE_ENSURE(context, p != NULL);
  return context->ResizeTensor(
      context, &context->tensors[node->outputs->data[0]],
      OutputDims(p, &context->tensors[node->inputs->data[0]],
                 &context->tensors[node->inputs->data[1]]));
}

static TfLiteStatus RefInvoke(TfLiteContext* context, TfLiteNode* node) {
  TfLiteTensor* out = &context->tensors[node->outputs->data[0]];
  const TfLiteTensor* bias = node->inputs->size > 2 && node->inputs->data[2] >= 0
                                 ? &context->tensors[node->inputs->data[2]]
                                 : NULL;
  DepthwiseConv((const TfLiteDepthwiseConvParams*)node->builtin_data,
                &context->tensors[node->inputs->data[0]],
                &context->tensors[node->inputs->data[1]], bias, out->dims,
                out->data.f);
  return kTfLiteOk;
}

/* ---- the delegate ---------------------------------------------------------------- */

/* The delegate kernel: one DEPTHWISE_CONV_2D node (its params copied at init). */
typedef struct DwKernel {
  TfLiteDepthwiseConvParams params;
  int input, filter, bias, output;
} DwKernel;

static void* DwInit(TfLiteContext* context, const char* buffer, size_t length) {
  (void)length;
  const TfLiteDelegateParams* dp = (const TfLiteDelegateParams*)buffer;
  TfLiteNode* node;
  TfLiteRegistration* reg;
  if (dp->nodes_to_replace->size != 1 ||
      context->GetNodeAndRegistration(context, dp->nodes_to_replace->data[0],
                                      &node, &reg) != kTfLiteOk)
    return NULL;
  DwKernel* k = (DwKernel*)malloc(sizeof(DwKernel));
  if (k == NULL) return NULL;
  k->params = *(const TfLiteDepthwiseConvParams*)node->builtin_data;
  k->input = node->inputs->data[0];
  k->filter = node->inputs->data[1];
  k->bias = node->inputs->size > 2 ? node->inputs->data[2] : -1;
  k->output = node->outputs->data[0];
  return k;
}

static void DwFree(TfLiteContext* context, void* buffer) {
  (void)context;
  free(buffer);
}

static TfLiteStatus DwPrepare(TfLiteContext* context, TfLiteNode* node) {
  DwKernel* k = (DwKernel*)node->user_data;
  TF_LITE_ENSURE(context, k != NULL);
  return context->ResizeTensor(
      context, &context->tensors[k->output],
      OutputDims(&k->params, &context->tensors[k->input],
                 &context->tensors[k->filter]));
}

static TfLiteStatus DwInvoke(TfLiteContext* context, TfLiteNode* node) {
  DwKernel* k = (DwKernel*)node->user_data;
  TfLiteTensor* out = &context->tensors[k->output];
  DepthwiseConv(&k->params, &context->tensors[k->input],
                &context->tensors[k->filter],
                k->bias >= 0 ? &context->tensors[k->bias] : NULL, out->dims,
                out->data.f);
  return kTfLiteOk;
}

typedef struct VersionAwareDelegate {
  TfLiteDelegate base;
  int max_version; /* the newest DEPTHWISE_CONV_2D version it implements */
  int taken, left;
  TfLiteDepthwiseConvParams params; /* of the last node seen */
} VersionAwareDelegate;

static TfLiteStatus VersionAwarePrepare(TfLiteContext* context,
                                        TfLiteDelegate* delegate) {
  VersionAwareDelegate* d = (VersionAwareDelegate*)delegate->data_;
  TfLiteIntArray* plan;
  TF_LITE_ENSURE_STATUS(context->GetExecutionPlan(context, &plan));
  TfLiteIntArray* nodes = TfLiteIntArrayCreate(plan->size);
  int n = 0;
  for (int i = 0; i < plan->size; ++i) {
    TfLiteNode* node;
    TfLiteRegistration* reg;
    if (context->GetNodeAndRegistration(context, plan->data[i], &node, &reg) !=
        kTfLiteOk) {
      TfLiteIntArrayFree(nodes);
      return kTfLiteError;
    }
    if (reg->builtin_code != kTfLiteBuiltinDepthwiseConv2d) continue;
    d->params = *(const TfLiteDepthwiseConvParams*)node->builtin_data;
    if (reg->version > d->max_version) {
      printf("  node %d: DEPTHWISE_CONV_2D v%d -> left on the CPU (delegate "
             "implements up to v%d)\n",
             plan->data[i], reg->version, d->max_version);
      d->left++;
      continue;
    }
    printf("  node %d: DEPTHWISE_CONV_2D v%d -> delegated\n", plan->data[i],
           reg->version);
    nodes->data[n++] = plan->data[i];
  }
  nodes->size = n;
  d->taken = n;
  TfLiteRegistration kernel;
  memset(&kernel, 0, sizeof(kernel));
  kernel.init = DwInit;
  kernel.free = DwFree;
  kernel.prepare = DwPrepare;
  kernel.invoke = DwInvoke;
  kernel.custom_name = "VersionAwareDepthwise";
  TfLiteStatus status = context->ReplaceNodeSubsetsWithDelegateKernels(
      context, kernel, nodes, delegate);
  TfLiteIntArrayFree(nodes);
  return status;
}

/* ---- running ------------------------------------------------------------------------ */

static void Quiet(void* user_data, const char* format, va_list args) {
  (void)user_data;
  (void)format;
  (void)args;
}

/* Runs the model with a delegate implementing up to `max_version`; checks the
 * output against DepthwiseConv on the same tensors. Returns 0 when right. */
static int Run(const TfLiteModel* model, int max_version, int own_cpu_kernel,
               int expect_taken) {
  VersionAwareDelegate d;
  memset(&d, 0, sizeof(d));
  d.base = TfLiteDelegateCreate();
  d.base.data_ = &d;
  d.base.Prepare = VersionAwarePrepare;
  d.max_version = max_version;

  TfLiteRegistration ref;
  memset(&ref, 0, sizeof(ref));
  ref.prepare = RefPrepare;
  ref.invoke = RefInvoke;
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  if (own_cpu_kernel)
    TfLiteInterpreterOptionsAddBuiltinOp(options, kTfLiteBuiltinDepthwiseConv2d,
                                         &ref, 1, 2);
  TfLiteInterpreterOptionsAddDelegate(options, &d.base);
  printf("delegate implementing DEPTHWISE_CONV_2D up to v%d:\n", max_version);
  TfLiteInterpreter* interpreter = TfLiteInterpreterCreate(model, options);
  TfLiteInterpreterOptionsDelete(options);
  if (interpreter == NULL) {
    fprintf(stderr, "version_aware_delegate: creating the interpreter failed\n");
    return 1;
  }
  int rc = 1;
  if (d.taken != expect_taken) {
    fprintf(stderr, "version_aware_delegate: expected %d node(s) delegated, got %d\n",
            expect_taken, d.taken);
    goto done;
  }
  if (TfLiteInterpreterAllocateTensors(interpreter) != kTfLiteOk) goto done;
  TfLiteTensor* input = TfLiteInterpreterGetInputTensor(interpreter, 0);
  size_t n_in = TfLiteTensorByteSize(input) / sizeof(float);
  for (size_t i = 0; i < n_in; ++i)
    input->data.f[i] = (float)((int)(i * 7 % 23) - 11) / 8.f;
  if (TfLiteInterpreterInvoke(interpreter) != kTfLiteOk) goto done;

  /* The model: input 0, weights 1, bias 2, output 3; the node's parameters as
   * the delegate saw them. */
  const TfLiteTensor* output = TfLiteInterpreterGetOutputTensor(interpreter, 0);
  size_t n_out = TfLiteTensorByteSize(output) / sizeof(float);
  float* expected = (float*)calloc(n_out, sizeof(float));
  printf("  params: padding %d, stride %dx%d, dilation %dx%d\n",
         (int)d.params.padding, d.params.stride_height, d.params.stride_width,
         d.params.dilation_height_factor, d.params.dilation_width_factor);
  DepthwiseConv(&d.params, input, TfLiteInterpreterGetTensor(interpreter, 1),
                TfLiteInterpreterGetTensor(interpreter, 2), output->dims,
                expected);
  double max_diff = 0;
  for (size_t i = 0; i < n_out; ++i) {
    double diff = fabs((double)expected[i] - (double)output->data.f[i]);
    if (diff > max_diff) max_diff = diff;
  }
  free(expected);
  printf("  %zu outputs, max |result - direct computation| = %g\n", n_out,
         max_diff);
  rc = max_diff <= 1e-4 ? 0 : 1;
done:
  TfLiteInterpreterDelete(interpreter);
  return rc;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s depthwise_dilated.tflite\n", argv[0]);
    return 2;
  }
  TfLiteModel* model = TfLiteModelCreateFromFile(argv[1]);
  if (model == NULL) {
    fprintf(stderr, "version_aware_delegate: could not load %s\n", argv[1]);
    return 1;
  }
  /* Does the library have a CPU kernel for DEPTHWISE_CONV_2D v2? */
  TfLiteInterpreterOptions* probe = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreterOptionsSetErrorReporter(probe, Quiet, NULL);
  TfLiteInterpreter* cpu = TfLiteInterpreterCreate(model, probe);
  int own_cpu_kernel = cpu == NULL;
  TfLiteInterpreterDelete(cpu);
  TfLiteInterpreterOptionsDelete(probe);
  if (own_cpu_kernel)
    printf("(no CPU kernel for DEPTHWISE_CONV_2D v2 in this library: using "
           "this program's reference kernel on the CPU side)\n");

  int rc = Run(model, 1, own_cpu_kernel, 0);
  if (rc == 0) rc = Run(model, 2, own_cpu_kernel, 1);
  TfLiteModelDelete(model);
  printf(rc == 0 ? "ok\n" : "FAILED\n");
  return rc;
}
