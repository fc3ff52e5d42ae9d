/* Behaviour of TFLite's tflite/c/c_api_signature_runner_test.cc
 * (SignatureRunnerTest.*) re-expressed in C (see
 * shared/design/CAPI_TESTS.md). Like the original, it reads and writes
 * `tensor->data.f[i]` directly, so it also pins the TfLiteTensor layout that
 * C clients compile against. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/c/c_api.h"
#include "tensorflow/lite/c/common.h"

#include "check.h"
#include "test_util.h"

/* no_signatures.bin through the plain interpreter API: resize both inputs
 * to [2], write data.f directly, invoke. */
static void CheckNoSignaturesViaInterpreter(TfLiteInterpreter* interpreter) {
  int dims[1] = {2};
  TfLiteTensor* x1;
  TfLiteTensor* x2;
  const TfLiteTensor* out;
  CHECK_EQ_INT(2, TfLiteInterpreterGetInputTensorCount(interpreter));
  CHECK_EQ_INT(1, TfLiteInterpreterGetOutputTensorCount(interpreter));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterResizeInputTensor(interpreter, 0, dims, 1));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteInterpreterResizeInputTensor(interpreter, 1, dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interpreter));
  x1 = TfLiteInterpreterGetInputTensor(interpreter, 0);
  x2 = TfLiteInterpreterGetInputTensor(interpreter, 1);
  CHECK_STREQ("x1", TfLiteTensorName(x1));
  CHECK_STREQ("x2", TfLiteTensorName(x2));
  x1->data.f[0] = -8.f;
  x1->data.f[1] = 0.5f;
  x2->data.f[0] = -1.f;
  x2->data.f[1] = 1.5f;
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interpreter));
  out = TfLiteInterpreterGetOutputTensor(interpreter, 0);
  CHECK_STREQ("Identity", TfLiteTensorName(out));
  CHECK_EQ_FLOAT(0.f, out->data.f[0]); /* relu(-9) */
  CHECK_EQ_FLOAT(2.f, out->data.f[1]);
}

/* no_signatures.bin: inputs x1, x2 -> output "Identity" (ADD with a fused
 * ReLU), and no SignatureDefs. */
static void TestNoSignatures(void) {
  TfLiteModel* model =
      TfLiteModelCreateFromFile(CorpusPath("no_signatures.bin"));
  TfLiteInterpreter* interpreter;
  TfLiteSignatureRunner* runner;
  TfLiteTensor* x1;
  TfLiteTensor* x2;
  const TfLiteTensor* out;
  int n_in, n_out, i;
  int dims[1] = {2};

  CHECK_NOT_NULL(model);
  interpreter = TfLiteInterpreterCreate(model, NULL);
  CHECK_NOT_NULL(interpreter);

  CHECK_EQ_INT(0, TfLiteInterpreterGetSignatureCount(interpreter));
  CHECK_NULL(TfLiteInterpreterGetSignatureRunner(interpreter, "foo"));

  if (LibMinorVersion() < 19) {
    /* TfLiteInterpreterGetSignatureRunner(interpreter, NULL) is a 2.18/2.19
     * addition (a placeholder runner for the primary subgraph); TF 2.17.1
     * builds a std::string from the NULL key and aborts. On such a library
     * only check the model itself, through the interpreter API. */
    printf("note: %s < 2.19, NULL signature key not exercised\n",
           TfLiteVersion());
    CheckNoSignaturesViaInterpreter(interpreter);
    TfLiteInterpreterDelete(interpreter);
    TfLiteModelDelete(model);
    return;
  }

  /* A NULL key selects the primary subgraph. */
  runner = TfLiteInterpreterGetSignatureRunner(interpreter, NULL);
  CHECK_NOT_NULL(runner);

  n_in = TfLiteInterpreterGetInputTensorCount(interpreter);
  CHECK_EQ_INT(2, n_in);
  CHECK_EQ_INT(n_in, TfLiteSignatureRunnerGetInputCount(runner));
  for (i = 0; i < n_in; ++i) {
    TfLiteTensor* t = TfLiteInterpreterGetInputTensor(interpreter, i);
    const char* name;
    CHECK_NOT_NULL(t);
    name = TfLiteTensorName(t);
    CHECK_NOT_NULL(name);
    CHECK_STREQ(name, TfLiteSignatureRunnerGetInputName(runner, i));
    /* Same tensor object, not a copy. */
    CHECK_EQ_PTR(t, TfLiteSignatureRunnerGetInputTensor(runner, name));
  }

  n_out = TfLiteInterpreterGetOutputTensorCount(interpreter);
  CHECK_EQ_INT(1, n_out);
  CHECK_EQ_INT(n_out, TfLiteSignatureRunnerGetOutputCount(runner));
  for (i = 0; i < n_out; ++i) {
    const TfLiteTensor* t = TfLiteInterpreterGetOutputTensor(interpreter, i);
    const char* name;
    CHECK_NOT_NULL(t);
    name = TfLiteTensorName(t);
    CHECK_NOT_NULL(name);
    CHECK_STREQ(name, TfLiteSignatureRunnerGetOutputName(runner, i));
    CHECK_EQ_PTR(t, TfLiteSignatureRunnerGetOutputTensor(runner, name));
  }

  CHECK_EQ_INT(kTfLiteOk,
               TfLiteSignatureRunnerResizeInputTensor(runner, "x1", dims, 1));
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteSignatureRunnerResizeInputTensor(runner, "x2", dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteSignatureRunnerAllocateTensors(runner));

  x1 = TfLiteSignatureRunnerGetInputTensor(runner, "x1");
  x2 = TfLiteSignatureRunnerGetInputTensor(runner, "x2");
  CHECK_NOT_NULL(x1);
  CHECK_NOT_NULL(x2);
  CHECK_NULL(TfLiteSignatureRunnerGetInputTensor(runner, "foo"));
  out = TfLiteSignatureRunnerGetOutputTensor(runner, "Identity");
  CHECK_NOT_NULL(out);
  CHECK_NULL(TfLiteSignatureRunnerGetOutputTensor(runner, "foo"));

  x1->data.f[0] = -8.f;
  x1->data.f[1] = 0.5f;
  x2->data.f[0] = -1.f;
  x2->data.f[1] = 1.5f;
  CHECK_EQ_INT(kTfLiteOk, TfLiteSignatureRunnerInvoke(runner));
  CHECK_EQ_FLOAT(0.f, out->data.f[0]); /* relu(-9) */
  CHECK_EQ_FLOAT(2.f, out->data.f[1]);

  TfLiteSignatureRunnerDelete(runner);
  TfLiteInterpreterDelete(interpreter);
  TfLiteModelDelete(model);
}

/* Checks that `runner` has exactly one input "x" and one output
 * "output_0", and that out-of-range name indices give NULL. */
static void CheckXToOutput0(const TfLiteSignatureRunner* runner) {
  CHECK_EQ_INT(1, TfLiteSignatureRunnerGetInputCount(runner));
  CHECK_STREQ("x", TfLiteSignatureRunnerGetInputName(runner, 0));
  CHECK_EQ_INT(1, TfLiteSignatureRunnerGetOutputCount(runner));
  CHECK_STREQ("output_0", TfLiteSignatureRunnerGetOutputName(runner, 0));
  CHECK_NULL(TfLiteSignatureRunnerGetInputName(runner, 1));
  CHECK_NULL(TfLiteSignatureRunnerGetInputName(runner, -1));
  CHECK_NULL(TfLiteSignatureRunnerGetOutputName(runner, 1));
  CHECK_NULL(TfLiteSignatureRunnerGetOutputName(runner, -1));
}

/* multi_signatures.bin: "add" is x + 2, "sub" is x - 3. */
static void TestMultiSignatures(void) {
  TfLiteModel* model =
      TfLiteModelCreateFromFile(CorpusPath("multi_signatures.bin"));
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interpreter;
  TfLiteSignatureRunner* add;
  TfLiteSignatureRunner* sub;
  TfLiteTensor* in;
  const TfLiteTensor* out;
  int add_dims[1] = {2};
  int sub_dims[1] = {3};

  CHECK_NOT_NULL(model);
  CHECK_NOT_NULL(options);
  TfLiteInterpreterOptionsSetNumThreads(options, 2);
  interpreter = TfLiteInterpreterCreate(model, options);
  CHECK_NOT_NULL(interpreter);
  TfLiteInterpreterOptionsDelete(options);

  CHECK_EQ_INT(2, TfLiteInterpreterGetSignatureCount(interpreter));
  CHECK_STREQ("add", TfLiteInterpreterGetSignatureKey(interpreter, 0));
  CHECK_STREQ("sub", TfLiteInterpreterGetSignatureKey(interpreter, 1));
  CHECK_NULL(TfLiteInterpreterGetSignatureRunner(interpreter, "foo"));
  CHECK_NULL(TfLiteInterpreterGetSignatureKey(interpreter, 2));
  CHECK_NULL(TfLiteInterpreterGetSignatureKey(interpreter, -1));

  /* --- add --- */
  add = TfLiteInterpreterGetSignatureRunner(interpreter, "add");
  CHECK_NOT_NULL(add);
  CheckXToOutput0(add);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteSignatureRunnerResizeInputTensor(add, "x", add_dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteSignatureRunnerAllocateTensors(add));
  in = TfLiteSignatureRunnerGetInputTensor(add, "x");
  CHECK_NULL(TfLiteSignatureRunnerGetInputTensor(add, "foo"));
  out = TfLiteSignatureRunnerGetOutputTensor(add, "output_0");
  CHECK_NULL(TfLiteSignatureRunnerGetOutputTensor(add, "foo"));
  CHECK_NOT_NULL(in);
  CHECK_NOT_NULL(out);
  in->data.f[0] = 2.f;
  in->data.f[1] = 4.f;
  CHECK_EQ_INT(kTfLiteOk, TfLiteSignatureRunnerInvoke(add));
  CHECK_EQ_FLOAT(4.f, out->data.f[0]);
  CHECK_EQ_FLOAT(6.f, out->data.f[1]);
  TfLiteSignatureRunnerDelete(add);

  /* --- sub --- */
  sub = TfLiteInterpreterGetSignatureRunner(interpreter, "sub");
  CHECK_NOT_NULL(sub);
  CheckXToOutput0(sub);
  CHECK_EQ_INT(kTfLiteOk,
               TfLiteSignatureRunnerResizeInputTensor(sub, "x", sub_dims, 1));
  CHECK_EQ_INT(kTfLiteOk, TfLiteSignatureRunnerAllocateTensors(sub));
  in = TfLiteSignatureRunnerGetInputTensor(sub, "x");
  CHECK_NULL(TfLiteSignatureRunnerGetInputTensor(sub, "foo"));
  out = TfLiteSignatureRunnerGetOutputTensor(sub, "output_0");
  CHECK_NULL(TfLiteSignatureRunnerGetOutputTensor(sub, "foo"));
  CHECK_NOT_NULL(in);
  CHECK_NOT_NULL(out);
  in->data.f[0] = 2.f;
  in->data.f[1] = 4.f;
  in->data.f[2] = 6.f;
  CHECK_EQ_INT(kTfLiteOk, TfLiteSignatureRunnerInvoke(sub));
  CHECK_EQ_FLOAT(-1.f, out->data.f[0]);
  CHECK_EQ_FLOAT(1.f, out->data.f[1]);
  CHECK_EQ_FLOAT(3.f, out->data.f[2]);
  TfLiteSignatureRunnerDelete(sub);

  TfLiteSignatureRunnerDelete(NULL);
  TfLiteInterpreterDelete(interpreter);
  TfLiteModelDelete(model);
}

int main(void) {
  RUN_TEST(TestNoSignatures);
  RUN_TEST(TestMultiSignatures);
  printf("c_api_signature_runner_test: all tests passed\n");
  return 0;
}
