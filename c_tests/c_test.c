/* Behaviour of TFLite's own tflite/c/c_test.c (see
 * shared/design/CAPI_TESTS.md), re-expressed: the public headers build and
 * link as C, and the basic model -> interpreter -> invoke flows work, both
 * through the interpreter and through signature runners. The delegate parts
 * of c_test.c (opaque-context execution plan, report-error macros) live with
 * the delegate tests. */
#ifdef __cplusplus
#error "This file must be compiled as C, not C++."
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/c/builtin_op_data.h"
#include "tensorflow/lite/c/c_api.h"
#include "tensorflow/lite/c/c_api_experimental.h"
#include "tensorflow/lite/c/c_api_opaque.h"
#include "tensorflow/lite/c/c_api_types.h"
#include "tensorflow/lite/c/common.h"

#include "check.h"
#include "test_util.h"

static void TestVersion(void) {
  const char* version = TfLiteVersion();
  CHECK_NOT_NULL(version);
  printf("TfLiteVersion() = %s\n", version);
  CHECK(version[0] != '\0');
}

/* multi_signatures.bin: signature "add" computes x + 2, "sub" x - 3. */
static void TestInferenceUsingSignature(void) {
  TfLiteModel* model =
      TfLiteModelCreateFromFile(CorpusPath("multi_signatures.bin"));
  TfLiteInterpreterOptions* options;
  TfLiteInterpreter* interpreter;
  TfLiteSignatureRunner* runner;
  TfLiteTensor* in;
  const TfLiteTensor* out;
  TfLiteQuantizationParams qp;
  int dims[1] = {2};
  float input[2] = {2.f, 4.f};
  float output[2] = {0.f, 0.f};

  CHECK_NOT_NULL(model);
  options = TfLiteInterpreterOptionsCreate();
  CHECK_NOT_NULL(options);
  TfLiteInterpreterOptionsSetNumThreads(options, 2);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  /* Options may go right after the interpreter is created. */
  TfLiteInterpreterOptionsDelete(options);

  CHECK_EQ_INT(2, TfLiteInterpreterGetSignatureCount(interpreter));
  CHECK_STREQ("add", TfLiteInterpreterGetSignatureKey(interpreter, 0));
  CHECK_STREQ("sub", TfLiteInterpreterGetSignatureKey(interpreter, 1));

  runner = TfLiteInterpreterGetSignatureRunner(interpreter, "add");
  CHECK_NOT_NULL(runner);
  CHECK_EQ_INT(1, TfLiteSignatureRunnerGetInputCount(runner));
  CHECK_STREQ("x", TfLiteSignatureRunnerGetInputName(runner, 0));
  CHECK_EQ_INT(1, TfLiteSignatureRunnerGetOutputCount(runner));
  CHECK_STREQ("output_0", TfLiteSignatureRunnerGetOutputName(runner, 0));

  CHECK_EQ_INT(kTfLiteOk,
               TfLiteSignatureRunnerResizeInputTensor(runner, "x", dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteSignatureRunnerAllocateTensors(runner));

  in = TfLiteSignatureRunnerGetInputTensor(runner, "x");
  CHECK_NOT_NULL(in);
  CHECK_EQ_INT(kTfLiteFloat32, TfLiteTensorType(in));
  CHECK_EQ_INT(1, TfLiteTensorNumDims(in));
  CHECK_EQ_INT(2, TfLiteTensorDim(in, 0));
  CHECK_EQ_INT(2 * sizeof(float), TfLiteTensorByteSize(in));
  CHECK_NOT_NULL(TfLiteTensorData(in));
  qp = TfLiteTensorQuantizationParams(in);
  CHECK_EQ_FLOAT(0.f, qp.scale);
  CHECK_EQ_INT(0, qp.zero_point);

  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyFromBuffer(in, input, sizeof(input)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteSignatureRunnerInvoke(runner));

  out = TfLiteSignatureRunnerGetOutputTensor(runner, "output_0");
  CHECK_NOT_NULL(out);
  CHECK_EQ_INT(kTfLiteFloat32, TfLiteTensorType(out));
  CHECK_EQ_INT(1, TfLiteTensorNumDims(out));
  CHECK_EQ_INT(2, TfLiteTensorDim(out, 0));
  CHECK_EQ_INT(2 * sizeof(float), TfLiteTensorByteSize(out));
  CHECK_NOT_NULL(TfLiteTensorData(out));
  qp = TfLiteTensorQuantizationParams(out);
  CHECK_EQ_FLOAT(0.f, qp.scale);
  CHECK_EQ_INT(0, qp.zero_point);

  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyToBuffer(out, output, sizeof(output)));
  CHECK_EQ_FLOAT(4.f, output[0]);
  CHECK_EQ_FLOAT(6.f, output[1]);

  /* Runner before interpreter, interpreter before model. */
  TfLiteSignatureRunnerDelete(runner);
  TfLiteInterpreterDelete(interpreter);
  TfLiteModelDelete(model);
}

/* Shrinking and growing the runner's input keeps the tensor pointers taken
 * before the first resize valid, and every size computes x + 2. */
static void TestRepeatResizeInputTensor(void) {
  static const int kSizes[3] = {3, 1, 5};
  static const float kIn0[3] = {3.f, 6.f, 11.f};
  static const float kIn1[1] = {4.f};
  static const float kIn2[5] = {5.f, 8.f, 11.f, 12.f, 20.f};
  const float* inputs[3] = {kIn0, kIn1, kIn2};
  TfLiteModel* model =
      TfLiteModelCreateFromFile(CorpusPath("multi_signatures.bin"));
  TfLiteInterpreterOptions* options;
  TfLiteInterpreter* interpreter;
  TfLiteSignatureRunner* runner;
  TfLiteTensor* in;
  const TfLiteTensor* out;
  int round, j;

  CHECK_NOT_NULL(model);
  options = TfLiteInterpreterOptionsCreate();
  CHECK_NOT_NULL(options);
  TfLiteInterpreterOptionsSetNumThreads(options, 2);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  TfLiteInterpreterOptionsDelete(options);

  CHECK_EQ_INT(2, TfLiteInterpreterGetSignatureCount(interpreter));
  runner = TfLiteInterpreterGetSignatureRunner(interpreter, "add");
  CHECK_NOT_NULL(runner);
  CHECK_STREQ("x", TfLiteSignatureRunnerGetInputName(runner, 0));
  CHECK_STREQ("output_0", TfLiteSignatureRunnerGetOutputName(runner, 0));

  in = TfLiteSignatureRunnerGetInputTensor(runner, "x");
  out = TfLiteSignatureRunnerGetOutputTensor(runner, "output_0");
  CHECK_NOT_NULL(in);
  CHECK_NOT_NULL(out);

  for (round = 0; round < 3; ++round) {
    int n = kSizes[round];
    int dims[1];
    float result[5];
    dims[0] = n;
    CHECK_EQ_INT(kTfLiteOk,
                 TfLiteSignatureRunnerResizeInputTensor(runner, "x", dims, 1));
    CHECK_EQ_INT(kTfLiteOk, TfLiteSignatureRunnerAllocateTensors(runner));
    CHECK_EQ_INT(kTfLiteFloat32, TfLiteTensorType(in));
    CHECK_EQ_INT(1, TfLiteTensorNumDims(in));
    CHECK_EQ_INT(n, TfLiteTensorDim(in, 0));
    CHECK_EQ_INT(n * sizeof(float), TfLiteTensorByteSize(in));
    CHECK_NOT_NULL(TfLiteTensorData(in));
    CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyFromBuffer(in, inputs[round],
                                                       n * sizeof(float)));
    CHECK_EQ_INT(kTfLiteOk, TfLiteSignatureRunnerInvoke(runner));
    CHECK_EQ_INT(kTfLiteFloat32, TfLiteTensorType(out));
    CHECK_EQ_INT(1, TfLiteTensorNumDims(out));
    CHECK_EQ_INT(n, TfLiteTensorDim(out, 0));
    CHECK_EQ_INT(n * sizeof(float), TfLiteTensorByteSize(out));
    CHECK_NOT_NULL(TfLiteTensorData(out));
    CHECK_EQ_INT(kTfLiteOk,
                 TfLiteTensorCopyToBuffer(out, result, n * sizeof(float)));
    for (j = 0; j < n; ++j) CHECK_EQ_FLOAT(inputs[round][j] + 2.f, result[j]);
  }

  TfLiteSignatureRunnerDelete(runner);
  TfLiteInterpreterDelete(interpreter);
  TfLiteModelDelete(model);
}

/* add.bin: output = 3 * input (two ADDs), input [1,8,8,3] resized to [2]. */
static void TestInferenceUsingInterpreter(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options;
  TfLiteInterpreter* interpreter;
  TfLiteTensor* in;
  const TfLiteTensor* out;
  TfLiteQuantizationParams qp;
  int dims[1] = {2};
  float input[2] = {1.f, 3.f};
  float output[2] = {0.f, 0.f};

  CHECK_NOT_NULL(model);
  options = TfLiteInterpreterOptionsCreate();
  CHECK_NOT_NULL(options);
  TfLiteInterpreterOptionsSetNumThreads(options, 2);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  TfLiteInterpreterOptionsDelete(options);

  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(1, TfLiteInterpreterGetInputTensorCount(interpreter));
  CHECK_EQ_INT(1, TfLiteInterpreterGetOutputTensorCount(interpreter));

  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterResizeInputTensor(interpreter, 0, dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));

  in = TfLiteInterpreterGetInputTensor(interpreter, 0);
  CHECK_NOT_NULL(in);
  CHECK_EQ_INT(kTfLiteFloat32, TfLiteTensorType(in));
  CHECK_EQ_INT(1, TfLiteTensorNumDims(in));
  CHECK_EQ_INT(2, TfLiteTensorDim(in, 0));
  CHECK_EQ_INT(2 * sizeof(float), TfLiteTensorByteSize(in));
  CHECK_NOT_NULL(TfLiteTensorData(in));
  CHECK_STREQ("input", TfLiteTensorName(in));
  qp = TfLiteTensorQuantizationParams(in);
  CHECK_EQ_FLOAT(0.f, qp.scale);
  CHECK_EQ_INT(0, qp.zero_point);

  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyFromBuffer(in, input, sizeof(input)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));

  out = TfLiteInterpreterGetOutputTensor(interpreter, 0);
  CHECK_NOT_NULL(out);
  CHECK_EQ_INT(kTfLiteFloat32, TfLiteTensorType(out));
  CHECK_EQ_INT(1, TfLiteTensorNumDims(out));
  CHECK_EQ_INT(2, TfLiteTensorDim(out, 0));
  CHECK_EQ_INT(2 * sizeof(float), TfLiteTensorByteSize(out));
  CHECK_NOT_NULL(TfLiteTensorData(out));
  CHECK_STREQ("output", TfLiteTensorName(out));
  qp = TfLiteTensorQuantizationParams(out);
  CHECK_EQ_FLOAT(0.f, qp.scale);
  CHECK_EQ_INT(0, qp.zero_point);

  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyToBuffer(out, output, sizeof(output)));
  CHECK_EQ_FLOAT(3.f, output[0]);
  CHECK_EQ_FLOAT(9.f, output[1]);

  TfLiteInterpreterDelete(interpreter);
  TfLiteModelDelete(model);
}

int main(void) {
  RUN_TEST(TestVersion);
  RUN_TEST(TestInferenceUsingSignature);
  RUN_TEST(TestRepeatResizeInputTensor);
  RUN_TEST(TestInferenceUsingInterpreter);
  printf("c_test: all tests passed\n");
  return 0;
}
