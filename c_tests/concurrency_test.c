/* Many interpreters on one model at once. TFLite lets any number of
 * interpreters share one TfLiteModel, each used by its own thread; this
 * program holds the library to that. For each corpus model below, one
 * interpreter on 1 thread computes the reference outputs of kInvokes
 * successive Invokes on the corpus's golden input. Then kThreads threads each
 * create their own interpreter on the same TfLiteModel at the same moment
 * (half with 1 thread, half with 2, so that the kernels' shared worker pool
 * is contended), run the same Invokes together, compare every output with the
 * reference and delete their interpreter; the model goes last.
 *
 * Our kernels give the same bits on any thread count, so outputs must match
 * byte for byte. TFLite's own kernels do not: with 2 threads TFLite 2.17.1
 * puts face_landmark's landmarks up to 3e-6 (relative) off its 1-thread
 * answer. So where TFLITE_C_LIB_DIR names the library under test (as
 * tests/c_tests.rs takes it: another library, such as real TFLite), float
 * outputs may differ by kRefLibTolerance relative to max(1, |reference|).
 *
 * The models: face_landmark and hand_recrop (convolutions, big enough that 2
 * threads split their ops), lstm_fused (a stateful LSTM: each Invoke's output
 * depends on the state the interpreter's earlier Invokes left, so state
 * shared between interpreters shows as a mismatch) and while_loop
 * (control-flow subgraphs). Under valgrind, where one Invoke of face_landmark
 * takes seconds, face_landmark is left out and hand_recrop runs on 4 threads
 * once each. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/c/c_api.h"
#include "tensorflow/lite/c/common.h"

#include "check.h"
#include "test_util.h"

enum { kThreads = 8, kInvokes = 5, kMaxIo = 4 };

/* How many worker threads, and how many Invokes each (and the reference). */
typedef struct Plan {
  int threads;
  int invokes;
} Plan;

/* Max |difference| / max(1, |reference|) allowed between float outputs for
 * another library (its kernels may round differently on another thread
 * count); far below what outputs computed from the wrong data or state show. */
static const float kRefLibTolerance = 1e-4f;

/* One model, its golden input and the reference outputs of `invokes` Invokes. */
typedef struct Case {
  const char* name;
  TfLiteModel* model;
  int num_inputs;
  void* inputs[kMaxIo];
  size_t input_bytes[kMaxIo];
  int num_outputs;
  TfLiteType output_types[kMaxIo];
  size_t output_bytes[kMaxIo];
  int invokes;
  /* reference[k][j]: output j after Invoke k. */
  void* reference[kInvokes][kMaxIo];
  int exact; /* outputs must match byte for byte */
  pthread_barrier_t start;
  pthread_barrier_t invoke;
} Case;

typedef struct Worker {
  Case* c;
  int index;
  int num_threads;
} Worker;

/* Valgrind runs a program with its preload libraries in LD_PRELOAD. */
static int UnderValgrind(void) {
  const char* preload = getenv("LD_PRELOAD");
  return preload != NULL && strstr(preload, "vgpreload") != NULL;
}

/* tests/c_tests.rs tests another library where TFLITE_C_LIB_DIR is set. */
static int TestingOurLibrary(void) {
  const char* other_lib = getenv("TFLITE_C_LIB_DIR");
  return other_lib == NULL || other_lib[0] == '\0';
}

/* "<corpus>/<dir>/<name>", checked to exist. */
static const char* CorpusFile(const char* dir, const char* name, char* out, size_t size) {
  const char* corpus = getenv("TFLITE_CORPUS_DIR");
  FILE* f;
  if (corpus == NULL || corpus[0] == '\0') corpus = "../shared/corpus";
  snprintf(out, size, "%s/%s/%s", corpus, dir, name);
  f = fopen(out, "rb");
  if (f == NULL) {
    fprintf(stderr, "FATAL: corpus file '%s' not found (set TFLITE_CORPUS_DIR)\n", out);
    exit(2);
  }
  fclose(f);
  return out;
}

/* Copies the golden inputs in, runs one Invoke. */
static void InvokeOnce(const Case* c, TfLiteInterpreter* interp) {
  int i;
  for (i = 0; i < c->num_inputs; i++) {
    TfLiteTensor* t = TfLiteInterpreterGetInputTensor(interp, i);
    CHECK_NOT_NULL(t);
    CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyFromBuffer(t, c->inputs[i], c->input_bytes[i]));
  }
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterInvoke(interp));
}

static TfLiteInterpreter* NewInterpreter(const Case* c, int num_threads) {
  TfLiteInterpreterOptions* options = TfLiteInterpreterOptionsCreate();
  TfLiteInterpreter* interp;
  CHECK_NOT_NULL(options);
  TfLiteInterpreterOptionsSetNumThreads(options, num_threads);
  interp = TfLiteInterpreterCreate(c->model, options);
  TfLiteInterpreterOptionsDelete(options);
  CHECK_NOT_NULL(interp);
  CHECK_EQ_INT(kTfLiteOk, TfLiteInterpreterAllocateTensors(interp));
  return interp;
}

/* Loads the model and its golden inputs; computes the reference on 1 thread. */
static void CaseLoad(Case* c, const char* name, int invokes) {
  char path[4096], file[64];
  TfLiteInterpreter* interp;
  int i, j, k;
  memset(c, 0, sizeof(*c));
  c->name = name;
  c->invokes = invokes;
  snprintf(file, sizeof(file), "%s.tflite", name);
  c->model = TfLiteModelCreateFromFile(CorpusFile("models", file, path, sizeof(path)));
  CHECK_NOT_NULL(c->model);
  c->exact = TestingOurLibrary();

  interp = NewInterpreter(c, 1);
  c->num_inputs = TfLiteInterpreterGetInputTensorCount(interp);
  c->num_outputs = TfLiteInterpreterGetOutputTensorCount(interp);
  CHECK(c->num_inputs >= 1 && c->num_inputs <= kMaxIo);
  CHECK(c->num_outputs >= 1 && c->num_outputs <= kMaxIo);
  for (i = 0; i < c->num_inputs; i++) {
    char golden_dir[256];
    snprintf(golden_dir, sizeof(golden_dir), "golden/%s", name);
    snprintf(file, sizeof(file), "input_%d.bin", i);
    c->inputs[i] = ReadWholeFile(CorpusFile(golden_dir, file, path, sizeof(path)), &c->input_bytes[i]);
    CHECK_EQ_INT(TfLiteTensorByteSize(TfLiteInterpreterGetInputTensor(interp, i)), c->input_bytes[i]);
  }
  for (k = 0; k < invokes; k++) {
    InvokeOnce(c, interp);
    for (j = 0; j < c->num_outputs; j++) {
      const TfLiteTensor* t = TfLiteInterpreterGetOutputTensor(interp, j);
      CHECK_NOT_NULL(t);
      c->output_types[j] = TfLiteTensorType(t);
      c->output_bytes[j] = TfLiteTensorByteSize(t);
      CHECK(c->output_bytes[j] > 0);
      c->reference[k][j] = malloc(c->output_bytes[j]);
      CHECK_NOT_NULL(c->reference[k][j]);
      CHECK_EQ_INT(kTfLiteOk, TfLiteTensorCopyToBuffer(t, c->reference[k][j], c->output_bytes[j]));
    }
  }
  TfLiteInterpreterDelete(interp);
}

static void CaseFree(Case* c) {
  int i, j, k;
  for (i = 0; i < c->num_inputs; i++) free(c->inputs[i]);
  for (k = 0; k < c->invokes; k++)
    for (j = 0; j < c->num_outputs; j++) free(c->reference[k][j]);
  TfLiteModelDelete(c->model);
}

/* Output j of a worker's Invoke k against the reference. */
static void CheckOutput(const Worker* w, int k, int j, const TfLiteTensor* t) {
  const Case* c = w->c;
  const unsigned char* got = (const unsigned char*)TfLiteTensorData(t);
  const unsigned char* want = (const unsigned char*)c->reference[k][j];
  size_t n = c->output_bytes[j], e;
  CHECK_NOT_NULL(got);
  CHECK_EQ_INT(c->output_types[j], TfLiteTensorType(t));
  CHECK_EQ_INT(n, TfLiteTensorByteSize(t));
  if (memcmp(got, want, n) == 0) return;
  if (c->exact || c->output_types[j] != kTfLiteFloat32) {
    for (e = 0; e < n && got[e] == want[e]; e++) {
    }
    CHECK_FAIL_("%s: worker %d (num_threads %d), Invoke %d: output %d differs from the 1-thread reference at byte %zu",
                c->name, w->index, w->num_threads, k, j, e);
  }
  for (e = 0; e < n / sizeof(float); e++) {
    float a = ((const float*)(const void*)got)[e], b = ((const float*)(const void*)want)[e];
    if (!(fabsf(a - b) <= kRefLibTolerance * fmaxf(1.0f, fabsf(b))))
      CHECK_FAIL_("%s: worker %d (num_threads %d), Invoke %d: output %d[%zu] = %.9g, the 1-thread reference %.9g",
                  c->name, w->index, w->num_threads, k, j, e, (double)a, (double)b);
  }
}

static void* WorkerMain(void* arg) {
  Worker* w = (Worker*)arg;
  Case* c = w->c;
  TfLiteInterpreter* interp;
  int j, k;
  /* All threads create their interpreters together, then invoke together. */
  pthread_barrier_wait(&c->start);
  interp = NewInterpreter(c, w->num_threads);
  pthread_barrier_wait(&c->invoke);
  for (k = 0; k < c->invokes; k++) {
    InvokeOnce(c, interp);
    for (j = 0; j < c->num_outputs; j++) CheckOutput(w, k, j, TfLiteInterpreterGetOutputTensor(interp, j));
  }
  TfLiteInterpreterDelete(interp);
  return NULL;
}

static void RunConcurrently(const char* name, Plan plan) {
  Case c;
  Worker workers[kThreads];
  pthread_t threads[kThreads];
  int i;
  CHECK(plan.threads >= 1 && plan.threads <= kThreads);
  CHECK(plan.invokes >= 1 && plan.invokes <= kInvokes);
  CaseLoad(&c, name, plan.invokes);
  CHECK_EQ_INT(0, pthread_barrier_init(&c.start, NULL, (unsigned)plan.threads));
  CHECK_EQ_INT(0, pthread_barrier_init(&c.invoke, NULL, (unsigned)plan.threads));
  for (i = 0; i < plan.threads; i++) {
    workers[i].c = &c;
    workers[i].index = i;
    workers[i].num_threads = i % 2 == 0 ? 1 : 2;
    CHECK_EQ_INT(0, pthread_create(&threads[i], NULL, WorkerMain, &workers[i]));
  }
  for (i = 0; i < plan.threads; i++) CHECK_EQ_INT(0, pthread_join(threads[i], NULL));
  pthread_barrier_destroy(&c.start);
  pthread_barrier_destroy(&c.invoke);
  CaseFree(&c);
}

static const Plan kFullPlan = {kThreads, kInvokes};

static void TestFaceLandmark(void) {
  if (UnderValgrind()) {
    printf("face_landmark left out under valgrind (seconds per Invoke)\n");
    return;
  }
  RunConcurrently("face_landmark", kFullPlan);
}

static void TestHandRecrop(void) {
  Plan under_valgrind = {4, 1};
  RunConcurrently("hand_recrop", UnderValgrind() ? under_valgrind : kFullPlan);
}

/* The LSTM keeps state between Invokes: the reference's Invokes differ, so a
 * worker matches them only if its state is its own. */
static void TestStatefulLstm(void) {
  Case c;
  CaseLoad(&c, "lstm_fused", 2);
  CHECK(memcmp(c.reference[0][0], c.reference[1][0], c.output_bytes[0]) != 0);
  CaseFree(&c);
  RunConcurrently("lstm_fused", kFullPlan);
}

static void TestWhileLoop(void) { RunConcurrently("while_loop", kFullPlan); }

int main(void) {
  RUN_TEST(TestFaceLandmark);
  RUN_TEST(TestHandRecrop);
  RUN_TEST(TestStatefulLstm);
  RUN_TEST(TestWhileLoop);
  printf("concurrency_test: all tests passed\n");
  return 0;
}
