/*
 * gpu_delegate: runs a float model on the CPU and with the OpenCL GPU delegate
 * (tensorflow/lite/delegates/gpu/delegate.h), and compares the outputs.
 * usage: gpu_delegate MODEL.tflite
 * exit status: 0 outputs agree within 1e-4 of each output's range; 1 failure;
 *              3 no GPU delegate (no OpenCL platform or device: Create returned NULL).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/c/c_api.h"
#include "tensorflow/lite/delegates/gpu/delegate.h"

/* Runs the model on a fixed input pattern; returns malloc'ed outputs (all concatenated). */
static float* run(const TfLiteModel* model, TfLiteDelegate* delegate, size_t* count) {
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  if (delegate != NULL) TfLiteInterpreterOptionsAddDelegate(options, delegate);
  TfLiteInterpreter* interpreter = TfLiteInterpreterCreate(model, options);
  TfLiteInterpreterOptionsDelete(options);
  if (interpreter == NULL || TfLiteInterpreterAllocateTensors(interpreter) != kTfLiteOk) {
    fprintf(stderr, "gpu_delegate: interpreter setup failed\n");
    TfLiteInterpreterDelete(interpreter);
    return NULL;
  }
  for (int i = 0; i < TfLiteInterpreterGetInputTensorCount(interpreter); ++i) {
    TfLiteTensor* t = TfLiteInterpreterGetInputTensor(interpreter, i);
    size_t n = TfLiteTensorByteSize(t) / sizeof(float);
    float* data = (float*)TfLiteTensorData(t);
    for (size_t k = 0; k < n; ++k) data[k] = (float)((k * 7919u) % 255u) / 127.5f - 1.0f;
  }
  float* out = NULL;
  *count = 0;
  if (TfLiteInterpreterInvoke(interpreter) == kTfLiteOk) {
    for (int i = 0; i < TfLiteInterpreterGetOutputTensorCount(interpreter); ++i) {
      const TfLiteTensor* t = TfLiteInterpreterGetOutputTensor(interpreter, i);
      size_t n = TfLiteTensorByteSize(t) / sizeof(float);
      out = (float*)realloc(out, (*count + n) * sizeof(float));
      TfLiteTensorCopyToBuffer(t, out + *count, n * sizeof(float));
      *count += n;
    }
  } else {
    fprintf(stderr, "gpu_delegate: Invoke failed\n");
  }
  TfLiteInterpreterDelete(interpreter);
  return out;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.tflite\n", argv[0]);
    return 1;
  }
  TfLiteGpuDelegateOptionsV2 options = TfLiteGpuDelegateOptionsV2Default();
  if (sizeof(options) != 56 || options.is_precision_loss_allowed != -1 ||
      options.inference_priority1 != TFLITE_GPU_INFERENCE_PRIORITY_MAX_PRECISION ||
      options.experimental_flags != TFLITE_GPU_EXPERIMENTAL_FLAGS_ENABLE_QUANT ||
      options.max_delegated_partitions != 1 || options.serialization_dir != NULL) {
    fprintf(stderr, "gpu_delegate: unexpected default options\n");
    return 1;
  }
  TfLiteDelegate* gpu = TfLiteGpuDelegateV2Create(&options);
  if (gpu == NULL) {
    printf("gpu_delegate: no GPU delegate on this machine (see the message above)\n");
    return 3;
  }
  TfLiteModel* model = TfLiteModelCreateFromFile(argv[1]);
  if (model == NULL) {
    fprintf(stderr, "gpu_delegate: could not load %s\n", argv[1]);
    TfLiteGpuDelegateV2Delete(gpu);
    return 1;
  }
  size_t n_cpu = 0, n_gpu = 0;
  float* cpu = run(model, NULL, &n_cpu);
  float* got = run(model, gpu, &n_gpu);
  int rc = 1;
  if (cpu != NULL && got != NULL && n_cpu == n_gpu && n_cpu > 0) {
    float lo = cpu[0], hi = cpu[0], worst = 0.0f;
    for (size_t k = 0; k < n_cpu; ++k) {
      if (cpu[k] < lo) lo = cpu[k];
      if (cpu[k] > hi) hi = cpu[k];
    }
    float range = hi > lo ? hi - lo : 1.0f;
    for (size_t k = 0; k < n_cpu; ++k) {
      float e = fabsf(cpu[k] - got[k]) / range;
      if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    }
    printf("gpu_delegate: %zu output values, max |gpu - cpu| = %.3g of the output range\n", n_cpu, worst);
    rc = worst <= 1e-4f ? 0 : 1;
  }
  free(cpu);
  free(got);
  TfLiteModelDelete(model);
  TfLiteGpuDelegateV2Delete(gpu);
  return rc;
}
