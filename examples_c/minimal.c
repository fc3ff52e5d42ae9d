/*
 * minimal: the classic minimal TFLite program in C API form. Loads a model, fills the input with a ramp,
 * invokes and prints the output.
 * usage: minimal MODEL.tflite
 */
#include <stdio.h>
#include <stdlib.h>

#include "tensorflow/lite/c/c_api.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.tflite\n", argv[0]);
    return 2;
  }
  TfLiteModel* model = TfLiteModelCreateFromFile(argv[1]);
  if (model == NULL) {
    fprintf(stderr, "minimal: could not load %s\n", argv[1]);
    return 1;
  }
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreterOptionsSetNumThreads(options, 1);
  TfLiteInterpreter* interpreter = TfLiteInterpreterCreate(model, options);
  TfLiteInterpreterOptionsDelete(options);
  if (interpreter == NULL) {
    fprintf(stderr, "minimal: could not create the interpreter\n");
    TfLiteModelDelete(model);
    return 1;
  }
  int rc = 1;
  if (TfLiteInterpreterAllocateTensors(interpreter) != kTfLiteOk) {
    fprintf(stderr, "minimal: AllocateTensors failed\n");
    goto done;
  }
  TfLiteTensor* input = TfLiteInterpreterGetInputTensor(interpreter, 0);
  if (input == NULL || TfLiteTensorType(input) != kTfLiteFloat32) {
    fprintf(stderr, "minimal: expected one float32 input\n");
    goto done;
  }
  size_t n = TfLiteTensorByteSize(input) / sizeof(float);
  float* in = (float*)malloc(n * sizeof(float));
  if (in == NULL) goto done;
  for (size_t i = 0; i < n; ++i) in[i] = (float)i * 0.25f;
  TfLiteTensorCopyFromBuffer(input, in, n * sizeof(float));
  free(in);

  if (TfLiteInterpreterInvoke(interpreter) != kTfLiteOk) {
    fprintf(stderr, "minimal: Invoke failed\n");
    goto done;
  }
  const TfLiteTensor* output = TfLiteInterpreterGetOutputTensor(interpreter, 0);
  size_t m = TfLiteTensorByteSize(output) / sizeof(float);
  float* out = (float*)malloc(m * sizeof(float) + 1);
  if (out == NULL) goto done;
  if (TfLiteTensorCopyToBuffer(output, out, m * sizeof(float)) != kTfLiteOk) {
    free(out);
    goto done;
  }
  printf("output '%s' (%zu values):\n", TfLiteTensorName(output), m);
  for (size_t i = 0; i < m; ++i) printf("  y[%zu] = %.6f\n", i, out[i]);
  free(out);
  rc = 0;
done:
  TfLiteInterpreterDelete(interpreter);
  TfLiteModelDelete(model);
  return rc;
}
