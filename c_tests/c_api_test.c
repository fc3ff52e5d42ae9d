/* Behaviour of TFLite's tflite/core/c/c_api_test.cc (CApiSimple.*), the
 * tests that need no delegate, re-expressed in C (see
 * shared/design/CAPI_TESTS.md). Plus one behaviour the official suite leaves
 * implicit: a model with an unregistered custom op still yields an
 * interpreter, and AllocateTensors is where it fails. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/c/c_api.h"
#include "tensorflow/lite/c/c_api_opaque.h"
#include "tensorflow/lite/c/common.h"

#include "check.h"
#include "test_util.h"

static void TestVersion(void) {
  const char* version = TfLiteVersion();
  int major = -1, minor = -1, patch = -1;
  CHECK_NOT_NULL(version);
  CHECK(version[0] != '\0');
  CHECK_EQ_INT(3, sscanf(version, "%d.%d.%d", &major, &minor, &patch));
  CHECK_EQ_INT(2, major);
  CHECK(minor >= 12);
  CHECK(patch >= 0);
  /* Stable across calls. */
  CHECK_STREQ(version, TfLiteVersion());
}

static void TestExtensionApisVersion(void) {
  const char* version = TfLiteExtensionApisVersion();
  int major = -1, minor = -1, patch = -1;
  CHECK_NOT_NULL(version);
  CHECK(version[0] != '\0');
  CHECK_EQ_INT(3, sscanf(version, "%d.%d.%d", &major, &minor, &patch));
  CHECK(major >= 0);
  CHECK(minor >= 0);
  CHECK(patch >= 0);
  CHECK_STREQ(version, TfLiteExtensionApisVersion());
}

static void TestSchemaVersion(void) {
  CHECK_EQ_INT(3, TfLiteSchemaVersion());
  CHECK_EQ_INT(3, TfLiteSchemaVersion());
}

/* Checks that `t` is a float32 tensor of shape [2] with the given name and
 * no quantization. */
static void CheckFloatVector2(const TfLiteTensor* t, const char* name) {
  TfLiteQuantizationParams qp;
  CHECK_NOT_NULL(t);
  CHECK_EQ_INT(kTfLiteFloat32, TfLiteTensorType(t));
  CHECK_EQ_INT(1, TfLiteTensorNumDims(t));
  CHECK_EQ_INT(2, TfLiteTensorDim(t, 0));
  CHECK_EQ_INT(2 * sizeof(float), TfLiteTensorByteSize(t));
  CHECK_NOT_NULL(TfLiteTensorData(t));
  CHECK_STREQ(name, TfLiteTensorName(t));
  qp = TfLiteTensorQuantizationParams(t);
  CHECK_EQ_FLOAT(0.f, qp.scale);
  CHECK_EQ_INT(0, qp.zero_point);
}

/* Full flow on add.bin (y = 3x): options and model may be deleted right
 * after the interpreter is created. */
static void TestSmoke(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  const int* indices;
  int dims[1] = {2};
  float input[2] = {1.f, 3.f};
  float output[2] = {0.f, 0.f};

  CHECK_NOT_NULL(model);
  CHECK_NOT_NULL(options);
  TfLiteInterpreterOptionsSetNumThreads(options, 2);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);

  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(1, TfLiteInterpreterGetInputTensorCount(interpreter));
  CHECK_EQ_INT(1, TfLiteInterpreterGetOutputTensorCount(interpreter));
  indices = TfLiteInterpreterInputTensorIndices(interpreter);
  CHECK_NOT_NULL(indices);
  CHECK_EQ_INT(1, indices[0]);
  indices = TfLiteInterpreterOutputTensorIndices(interpreter);
  CHECK_NOT_NULL(indices);
  CHECK_EQ_INT(2, indices[0]);

  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterResizeInputTensor(interpreter, 0, dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));

  CheckFloatVector2(TfLiteInterpreterGetInputTensor(interpreter, 0), "input");
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyFromBuffer(
                   TfLiteInterpreterGetInputTensor(interpreter, 0), input,
                   sizeof(input)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));

  CheckFloatVector2(TfLiteInterpreterGetOutputTensor(interpreter, 0),
                    "output");
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyToBuffer(
                   TfLiteInterpreterGetOutputTensor(interpreter, 0), output,
                   sizeof(output)));
  CHECK_EQ_FLOAT(3.f, output[0]);
  CHECK_EQ_FLOAT(9.f, output[1]);

  TfLiteInterpreterDelete(interpreter);
}

/* add_quantized.bin: uint8 in/out, scale 0.003922, zero point 0. */
static void TestQuantizationParams(void) {
  TfLiteModel* model =
      TfLiteModelCreateFromFile(CorpusPath("add_quantized.bin"));
  TfLiteInterpreter* interpreter;
  TfLiteTensor* in;
  const TfLiteTensor* out;
  TfLiteQuantizationParams qp;
  int dims[1] = {2};
  uint8_t input[2] = {1, 3};
  uint8_t output[2] = {0, 0};

  CHECK_NOT_NULL(model);
  interpreter = TfLiteInterpreterCreate(model, NULL);
  CHECK_NOT_NULL(interpreter);
  TfLiteModelDelete(model);

  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterResizeInputTensor(interpreter, 0, dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));

  in = TfLiteInterpreterGetInputTensor(interpreter, 0);
  CHECK_NOT_NULL(in);
  CHECK_EQ_INT(kTfLiteUInt8, TfLiteTensorType(in));
  CHECK_EQ_INT(1, TfLiteTensorNumDims(in));
  CHECK_EQ_INT(2, TfLiteTensorDim(in, 0));
  qp = TfLiteTensorQuantizationParams(in);
  CHECK_EQ_FLOAT(0.003922f, qp.scale);
  CHECK_EQ_INT(0, qp.zero_point);

  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyFromBuffer(in, input, sizeof(input)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));

  out = TfLiteInterpreterGetOutputTensor(interpreter, 0);
  CHECK_NOT_NULL(out);
  CHECK_EQ_INT(kTfLiteUInt8, TfLiteTensorType(out));
  qp = TfLiteTensorQuantizationParams(out);
  CHECK_EQ_FLOAT(0.003922f, qp.scale);
  CHECK_EQ_INT(0, qp.zero_point);

  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyToBuffer(out, output, sizeof(output)));
  CHECK_EQ_INT(3, output[0]);
  CHECK_EQ_INT(9, output[1]);
  CHECK_EQ_FLOAT(0.011766f, qp.scale * (float)(output[0] - qp.zero_point));
  CHECK_EQ_FLOAT(0.035298f, qp.scale * (float)(output[1] - qp.zero_point));

  TfLiteInterpreterDelete(interpreter);
}

/* Tensor 1 of add.bin is the input, tensor 2 the output. */
static void TestInterpreterGetTensor(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  TfLiteTensor* in;
  const TfLiteTensor* out;
  int dims[1] = {2};
  float input[2] = {1.f, 3.f};
  float output[2] = {0.f, 0.f};

  CHECK_NOT_NULL(model);
  TfLiteInterpreterOptionsSetNumThreads(options, 2);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);

  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterResizeInputTensor(interpreter, 0, dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));

  in = TfLiteInterpreterGetTensor(interpreter, 1);
  CheckFloatVector2(in, "input");
  /* Same object as the one reached through the input list. */
  CHECK_EQ_PTR(TfLiteInterpreterGetInputTensor(interpreter, 0), in);
  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyFromBuffer(in, input, sizeof(input)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));

  out = TfLiteInterpreterGetTensor(interpreter, 2);
  CheckFloatVector2(out, "output");
  CHECK_EQ_PTR(TfLiteInterpreterGetOutputTensor(interpreter, 0), out);
  CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyToBuffer(out, output, sizeof(output)));
  CHECK_EQ_FLOAT(3.f, output[0]);
  CHECK_EQ_FLOAT(9.f, output[1]);

  TfLiteInterpreterDelete(interpreter);
}

static void TestInterpreterOptionsCopy(void) {
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreterOptions* copy;
  CHECK_NOT_NULL(options);
  TfLiteInterpreterOptionsSetNumThreads(options, 2);
  copy = TfLiteInterpreterOptionsCopy(options);
  CHECK_NOT_NULL(copy);
  CHECK(copy != options);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteInterpreterOptionsDelete(copy);
  /* Delete functions accept NULL. */
  TfLiteInterpreterOptionsDelete(NULL);
}

/* Invoke before AllocateTensors fails, and the reporter installed through the
 * options receives exactly one message. */
static void TestErrorReporter(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  ErrorCollector errors;

  ErrorCollectorReset(&errors);
  CHECK_NOT_NULL(model);
  TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, &errors);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
  CHECK_EQ_INT(0, errors.num_calls);

  CHECK_EQ_INT(kTfLiteError, TfLiteInterpreterInvoke(interpreter));
  CHECK_STREQ("Invoke called on model that is not ready.", errors.messages);
  CHECK_EQ_INT(1, errors.num_calls);

  TfLiteInterpreterDelete(interpreter);
}

static void TestModelCreateWithErrorReporter(void) {
  ErrorCollector errors;
  size_t size = 0;
  char* buffer = ReadWholeFile(CorpusPath("add.bin"), &size);
  char invalid[20];
  TfLiteModel* model;

  ErrorCollectorReset(&errors);
  model = TfLiteModelCreateWithErrorReporter(buffer, size, CollectError,
                                             &errors);
  CHECK_NOT_NULL(model);
  CHECK_STREQ("", errors.messages);
  CHECK_EQ_INT(0, errors.num_calls);
  TfLiteModelDelete(model);

  memset(invalid, 'c', sizeof(invalid));
  model = TfLiteModelCreateWithErrorReporter(invalid, sizeof(invalid),
                                             CollectError, &errors);
  CHECK_NULL(model);
  CHECK_STREQ("The model is not a valid Flatbuffer buffer", errors.messages);
  CHECK_EQ_INT(1, errors.num_calls);
  TfLiteModelDelete(NULL);
  free(buffer);
}

static void TestModelCreateFromFileWithErrorReporter(void) {
  ErrorCollector errors;
  TfLiteModel* model;

  ErrorCollectorReset(&errors);
  model = TfLiteModelCreateFromFileWithErrorReporter(CorpusPath("add.bin"),
                                                     CollectError, &errors);
  CHECK_NOT_NULL(model);
  CHECK_STREQ("", errors.messages);
  TfLiteModelDelete(model);

  model = TfLiteModelCreateFromFileWithErrorReporter(
      "invalid/path/foo.tflite", CollectError, &errors);
  CHECK_NULL(model);
  /* The first report names the file (nothing was reported before it). */
  CHECK(strncmp(errors.messages, "Could not open 'invalid/path/foo.tflite'.",
                strlen("Could not open 'invalid/path/foo.tflite'.")) == 0);
  /* Real TFLite 2.17.1 makes a second report here ("The model allocation is
   * null/empty"); only the first is part of the contract. */
  CHECK(errors.num_calls >= 1);
  TfLiteModelDelete(model);
}

static void TestValidModel(void) {
  size_t size = 0;
  char* buffer = ReadWholeFile(CorpusPath("add.bin"), &size);
  TfLiteModel* model = TfLiteModelCreate(buffer, size);
  CHECK_NOT_NULL(model);
  TfLiteModelDelete(model);
  free(buffer);
}

static void TestValidModelFromFile(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("add.bin"));
  CHECK_NOT_NULL(model);
  TfLiteModelDelete(model);
}

static void TestInvalidModel(void) {
  char invalid[20];
  memset(invalid, 'c', sizeof(invalid));
  CHECK_NULL(TfLiteModelCreate(invalid, sizeof(invalid)));
}

static void TestInvalidModelFromFile(void) {
  CHECK_NULL(TfLiteModelCreateFromFile("invalid/path/foo.tflite"));
}

/* ---- custom op "Sinh" through TfLiteOperator *WithData callbacks -------- */

typedef struct SinhCalls {
  int init;
  int prepare;
  int invoke;
  int free;
} SinhCalls;

typedef struct SinhParams {
  int use_cosh;
} SinhParams;

static void* SinhInitWithData(void* user_data, TfLiteOpaqueContext* context,
                              const char* buffer, size_t length) {
  SinhParams* params = (SinhParams*)calloc(1, sizeof(SinhParams));
  (void)context;
  ((SinhCalls*)user_data)->init++;
  CHECK_NOT_NULL(params);
  /* The buffer is the op's custom_options; "use_cosh" selects cosh. */
  params->use_cosh = buffer != NULL && length == 8 &&
                     memcmp(buffer, "use_cosh", 8) == 0;
  return params;
}

static void SinhFreeWithData(void* user_data, TfLiteOpaqueContext* context,
                             void* data) {
  (void)context;
  ((SinhCalls*)user_data)->free++;
  free(data);
}

static TfLiteStatus SinhPrepareWithData(void* user_data,
                                        TfLiteOpaqueContext* context,
                                        TfLiteOpaqueNode* node) {
  (void)context;
  (void)node;
  ((SinhCalls*)user_data)->prepare++;
  return kTfLiteOk;
}

static TfLiteStatus SinhInvokeWithData(void* user_data,
                                       TfLiteOpaqueContext* context,
                                       TfLiteOpaqueNode* node) {
  const SinhParams* params = (const SinhParams*)TfLiteOpaqueNodeGetUserData(node);
  const TfLiteOpaqueTensor* input;
  TfLiteOpaqueTensor* output;
  float x, y;
  ((SinhCalls*)user_data)->invoke++;
  CHECK_NOT_NULL(params);
  CHECK_EQ_INT(1, TfLiteOpaqueNodeNumberOfInputs(node));
  CHECK_EQ_INT(1, TfLiteOpaqueNodeNumberOfOutputs(node));
  input = TfLiteOpaqueNodeGetInput(context, node, 0);
  output = TfLiteOpaqueNodeGetOutput(context, node, 0);
  CHECK_NOT_NULL(input);
  CHECK_NOT_NULL(output);
  CHECK_EQ_INT(sizeof(float), TfLiteOpaqueTensorByteSize(input));
  memcpy(&x, TfLiteOpaqueTensorData(input), sizeof(float));
  y = params->use_cosh ? coshf(x) : sinhf(x);
  return TfLiteOpaqueTensorCopyFromBuffer(output, &y, sizeof(y));
}

static void TestCustomOpSupport(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("custom_sinh.bin"));
  SinhCalls calls = {0, 0, 0, 0};
  TfLiteOperator* op;
  TfLiteInterpreterOptions* options;
  TfLiteInterpreter* interpreter;
  float input = 1.0f, output = 0.f;

  CHECK_NOT_NULL(model);
  op = CreateOperator(kTfLiteBuiltinCustom, "Sinh", 1, &calls);
  CHECK_EQ_INT(kTfLiteOk, TfLiteOperatorSetInitWithData(op, SinhInitWithData));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteOperatorSetPrepareWithData(op, SinhPrepareWithData));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteOperatorSetInvokeWithData(op, SinhInvokeWithData));
  CHECK_EQ_INT(kTfLiteOk, TfLiteOperatorSetFreeWithData(op, SinhFreeWithData));
  CHECK_STREQ("Sinh", TfLiteOperatorGetCustomName(op));
  CHECK_EQ_INT(kTfLiteBuiltinCustom, TfLiteOperatorGetBuiltInCode(op));
  CHECK_EQ_INT(1, TfLiteOperatorGetVersion(op));
  CHECK_EQ_PTR(&calls, TfLiteOperatorGetUserData(op));

  options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreterOptionsAddOperator(options, op);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  CHECK_EQ_INT(1, calls.init);

  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  CHECK(calls.prepare >= 1);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyFromBuffer(
                   TfLiteInterpreterGetInputTensor(interpreter, 0), &input,
                   sizeof(input)));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  CHECK_EQ_INT(1, calls.invoke);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteTensorCopyToBuffer(
                   TfLiteInterpreterGetOutputTensor(interpreter, 0), &output,
                   sizeof(output)));
  CHECK_EQ_FLOAT(sinhf(1.0f), output);

  CHECK_EQ_INT(0, calls.free);
  TfLiteInterpreterDelete(interpreter);
  CHECK_EQ_INT(1, calls.free);
  TfLiteModelDelete(model);
  TfLiteOperatorDelete(op);
  TfLiteOperatorDelete(NULL);
}

/* custom_sinh.bin without registering "Sinh": the builder accepts the model
 * (an unresolved custom op gets a placeholder), AllocateTensors is what
 * fails, naming the op. */
static void TestUnresolvedCustomOp(void) {
  TfLiteModel* model = TfLiteModelCreateFromFile(CorpusPath("custom_sinh.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  ErrorCollector errors;

  ErrorCollectorReset(&errors);
  CHECK_NOT_NULL(model);
  TfLiteInterpreterOptionsSetErrorReporter(options, CollectError, &errors);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  CHECK_EQ_INT(0, errors.num_calls);

  /* Real TFLite (checked on 2.17.1; the 2.19 code path is the same):
   * OpPrepare reports the unresolved op and returns kTfLiteUnresolvedOps,
   * then the prepare loop reports the failing node and passes that status
   * through. Two reporter calls. */
  CHECK_EQ_INT(kTfLiteUnresolvedOps,
               TfLiteInterpreterAllocateTensors(interpreter));
  CHECK_STREQ(
      "Encountered unresolved custom op: Sinh.\n"
      "See instructions: https://www.tensorflow.org/lite/guide/ops_custom "
      "Node number 0 (Sinh) failed to prepare.",
      errors.messages);
  CHECK_EQ_INT(2, errors.num_calls);
  /* Still not runnable. */
  CHECK(TfLiteInterpreterInvoke(interpreter) != kTfLiteOk);

  TfLiteInterpreterDelete(interpreter);
  TfLiteInterpreterOptionsDelete(options);
  TfLiteModelDelete(model);
}

static void TestOperatorGetVersionNullptr(void) {
  CHECK_EQ_INT(-1, TfLiteOperatorGetVersion(NULL));
}

int main(void) {
  RUN_TEST(TestVersion);
  RUN_TEST(TestExtensionApisVersion);
  RUN_TEST(TestSchemaVersion);
  RUN_TEST(TestSmoke);
  RUN_TEST(TestQuantizationParams);
  RUN_TEST(TestInterpreterGetTensor);
  RUN_TEST(TestInterpreterOptionsCopy);
  RUN_TEST(TestErrorReporter);
  RUN_TEST(TestModelCreateWithErrorReporter);
  RUN_TEST(TestModelCreateFromFileWithErrorReporter);
  RUN_TEST(TestValidModel);
  RUN_TEST(TestValidModelFromFile);
  RUN_TEST(TestInvalidModel);
  RUN_TEST(TestInvalidModelFromFile);
  RUN_TEST(TestCustomOpSupport);
  RUN_TEST(TestUnresolvedCustomOp);
  RUN_TEST(TestOperatorGetVersionNullptr);
  printf("c_api_test: all tests passed\n");
  return 0;
}
