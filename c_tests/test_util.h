/* Shared helpers for the C API tests: corpus paths, reading a file, an
 * error-reporter that records what it receives, lookup of optional library
 * functions, and one version shim for creating a TfLiteOperator with user
 * data.
 *
 * Include after the TFLite headers. Everything is `static inline` so a test
 * file that does not use a helper gets no unused-function warning.
 */
#ifndef TFLITE_C_TESTS_TEST_UTIL_H_
#define TFLITE_C_TESTS_TEST_UTIL_H_

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tensorflow/lite/c/c_api.h"

/* ---- corpus ------------------------------------------------------------ */

/* Returns "<corpus>/capi/<name>", where <corpus> is $TFLITE_CORPUS_DIR
 * (set by tests/c_tests.rs) or "../shared/corpus" relative to the current
 * directory. The result lives in one of 8 rotating static buffers. Exits
 * loudly if the file does not exist: a missing corpus must never look like
 * a passing test. */
static inline const char* CorpusPath(const char* name) {
  static char buffers[8][4096];
  static int next = 0;
  const char* dir = getenv("TFLITE_CORPUS_DIR");
  char* out = buffers[next];
  FILE* f;
  next = (next + 1) % 8;
  if (dir == NULL || dir[0] == '\0') dir = "../shared/corpus";
  snprintf(out, sizeof(buffers[0]), "%s/capi/%s", dir, name);
  f = fopen(out, "rb");
  if (f == NULL) {
    fprintf(stderr,
            "FATAL: test model '%s' not found. Set TFLITE_CORPUS_DIR to the "
            "shared corpus directory (the one containing capi/).\n",
            out);
    exit(2);
  }
  fclose(f);
  return out;
}

/* Reads a whole file into a malloc'ed buffer; *size gets its length. */
static inline char* ReadWholeFile(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  long len;
  char* buf;
  CHECK(f != NULL);
  CHECK(fseek(f, 0, SEEK_END) == 0);
  len = ftell(f);
  CHECK(len > 0);
  CHECK(fseek(f, 0, SEEK_SET) == 0);
  buf = (char*)malloc((size_t)len);
  CHECK(buf != NULL);
  CHECK(fread(buf, 1, (size_t)len, f) == (size_t)len);
  fclose(f);
  *size = (size_t)len;
  return buf;
}

/* ---- error reporter ---------------------------------------------------- */

/* Records every report: messages are concatenated (like TFLite's own
 * TestErrorReporter) and the calls counted. */
typedef struct ErrorCollector {
  char messages[8192];
  size_t len;
  int num_calls;
} ErrorCollector;

static inline void ErrorCollectorReset(ErrorCollector* c) {
  c->messages[0] = '\0';
  c->len = 0;
  c->num_calls = 0;
}

/* Matches the `reporter` parameter of TfLiteInterpreterOptionsSetErrorReporter
 * and TfLiteModelCreate*WithErrorReporter. */
static inline void CollectError(void* user_data, const char* format,
                                va_list args) {
  ErrorCollector* c = (ErrorCollector*)user_data;
  c->num_calls++;
  if (c->len < sizeof(c->messages) - 1) {
    int n = vsnprintf(c->messages + c->len, sizeof(c->messages) - c->len,
                      format, args);
    if (n > 0) {
      c->len += (size_t)n;
      if (c->len > sizeof(c->messages) - 1) c->len = sizeof(c->messages) - 1;
    }
  }
}

/* ---- library version --------------------------------------------------- */

/* Minor version of the library under test (TfLiteVersion() = "2.<minor>.x"). */
static inline int LibMinorVersion(void) {
  int major = 0, minor = 0;
  if (sscanf(TfLiteVersion(), "%d.%d", &major, &minor) != 2) return -1;
  return major == 2 ? minor : 1000;
}

/* ---- optional library symbols ------------------------------------------- */

/* Looks up an exported function of the library under test by name, or NULL
 * when the library does not export it. Used for functions that exist only
 * in some TFLite versions, so that the tests link against all of them and
 * do not redeclare anything the headers may (or may not) declare. */
static inline void* OptionalLibSymbol(const char* name) {
  void* self = dlopen(NULL, RTLD_NOW);
  void* sym = NULL;
  if (self != NULL) {
    sym = dlsym(self, name);
    dlclose(self);
  }
  return sym;
}

/* ---- TfLiteOperator with user data (2.17 vs 2.18+) ---------------------- */

/* TF 2.18 gave TfLiteOperatorCreate a 4th parameter, `user_data`, and
 * dropped TfLiteOperatorCreateWithData. Our library mirrors 2.19 (4-arg
 * TfLiteOperatorCreate). The reference library these tests are validated
 * against is TF 2.17.1, whose TfLiteOperatorCreate takes 3 arguments and
 * ignores a 4th (harmless on x86-64 SysV: the extra argument just sits in a
 * register the callee never reads), so there user data has to go through
 * TfLiteOperatorCreateWithData(builtin_code, custom_name, version,
 * user_data), which 2.17 exports. That fallback is taken ONLY for libraries
 * reporting a version below 2.18, so a 2.19-compatible library must honour
 * the 4-arg form itself. */
typedef TfLiteOperator* (*TfLiteOperatorCreateWithDataFn)(
    TfLiteBuiltinOperator builtin_code, const char* custom_name, int version,
    void* user_data);

static inline TfLiteOperator* CreateOperator(TfLiteBuiltinOperator builtin_code,
                                             const char* custom_name,
                                             int version, void* user_data) {
  TfLiteOperator* op = NULL;
  if (LibMinorVersion() < 18) {
    TfLiteOperatorCreateWithDataFn create_with_data =
        (TfLiteOperatorCreateWithDataFn)OptionalLibSymbol(
            "TfLiteOperatorCreateWithData");
    if (create_with_data != NULL) {
      op = create_with_data(builtin_code, custom_name, version, user_data);
    }
  }
  if (op == NULL) {
    op = TfLiteOperatorCreate(builtin_code, custom_name, version, user_data);
  }
  CHECK(op != NULL);
  return op;
}

#endif /* TFLITE_C_TESTS_TEST_UTIL_H_ */
