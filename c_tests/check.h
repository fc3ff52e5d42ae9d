/* Minimal assertion macros and test-runner pattern for the plain C tests.
 *
 * No framework: a failing check prints "file:line: <what failed>" to stderr
 * and exits the process with status 1, so the Rust runner (tests/c_tests.rs)
 * sees a non-zero exit and shows the output. Each test file has
 * `static void TestX(void)` functions; `main` calls them through RUN_TEST,
 * which prints "ok TestX" after each one that returns.
 *
 * Only the C standard library is used here, so the header works with any
 * TFLite C API headers (ours or the real ones).
 */
#ifndef TFLITE_C_TESTS_CHECK_H_
#define TFLITE_C_TESTS_CHECK_H_

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_FAIL_(...)                                  \
  do {                                                    \
    fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);       \
    fprintf(stderr, __VA_ARGS__);                         \
    fputc('\n', stderr);                                  \
    fflush(stderr);                                       \
    fflush(stdout);                                       \
    exit(1);                                              \
  } while (0)

/* CHECK(cond): cond must be true. */
#define CHECK(cond)                                        \
  do {                                                     \
    if (!(cond)) CHECK_FAIL_("CHECK failed: %s", #cond);   \
  } while (0)

/* CHECK_EQ_INT(expected, actual): integer (or enum) equality. */
#define CHECK_EQ_INT(expected, actual)                                     \
  do {                                                                     \
    long long check_e_ = (long long)(expected);                            \
    long long check_a_ = (long long)(actual);                              \
    if (check_e_ != check_a_)                                              \
      CHECK_FAIL_("CHECK_EQ_INT failed: %s == %s (expected %lld, got %lld)", \
                  #expected, #actual, check_e_, check_a_);                 \
  } while (0)

/* CHECK_NE_INT(a, b): integer inequality. */
#define CHECK_NE_INT(a, b)                                                \
  do {                                                                    \
    long long check_x_ = (long long)(a);                                  \
    long long check_y_ = (long long)(b);                                  \
    if (check_x_ == check_y_)                                             \
      CHECK_FAIL_("CHECK_NE_INT failed: %s != %s (both %lld)", #a, #b,    \
                  check_x_);                                              \
  } while (0)

/* CHECK_EQ_PTR(expected, actual): pointer identity. */
#define CHECK_EQ_PTR(expected, actual)                                    \
  do {                                                                    \
    const void* check_e_ = (const void*)(expected);                       \
    const void* check_a_ = (const void*)(actual);                         \
    if (check_e_ != check_a_)                                             \
      CHECK_FAIL_("CHECK_EQ_PTR failed: %s == %s (expected %p, got %p)",  \
                  #expected, #actual, check_e_, check_a_);                \
  } while (0)

#define CHECK_NULL(p)                                                     \
  do {                                                                    \
    const void* check_p_ = (const void*)(p);                              \
    if (check_p_ != NULL)                                                 \
      CHECK_FAIL_("CHECK_NULL failed: %s is %p", #p, check_p_);           \
  } while (0)

#define CHECK_NOT_NULL(p)                                                 \
  do {                                                                    \
    if ((const void*)(p) == NULL)                                         \
      CHECK_FAIL_("CHECK_NOT_NULL failed: %s is NULL", #p);               \
  } while (0)

/* CHECK_NEAR(expected, actual, tol): |expected - actual| <= tol. */
#define CHECK_NEAR(expected, actual, tol)                                  \
  do {                                                                     \
    double check_e_ = (double)(expected);                                  \
    double check_a_ = (double)(actual);                                    \
    if (!(fabs(check_e_ - check_a_) <= (double)(tol)))                     \
      CHECK_FAIL_("CHECK_NEAR failed: %s ~= %s (expected %.9g, got %.9g, " \
                  "tol %g)", #expected, #actual, check_e_, check_a_,       \
                  (double)(tol));                                          \
  } while (0)

/* CHECK_EQ_FLOAT(expected, actual): exact float equality (as float). */
#define CHECK_EQ_FLOAT(expected, actual)                                   \
  do {                                                                     \
    float check_e_ = (float)(expected);                                    \
    float check_a_ = (float)(actual);                                      \
    if (!(check_e_ == check_a_))                                           \
      CHECK_FAIL_("CHECK_EQ_FLOAT failed: %s == %s (expected %.9g, got %.9g)", \
                  #expected, #actual, (double)check_e_, (double)check_a_); \
  } while (0)

/* CHECK_STREQ(expected, actual): both non-NULL and equal. */
#define CHECK_STREQ(expected, actual)                                      \
  do {                                                                     \
    const char* check_e_ = (expected);                                     \
    const char* check_a_ = (actual);                                       \
    if (check_e_ == NULL || check_a_ == NULL || strcmp(check_e_, check_a_)) \
      CHECK_FAIL_("CHECK_STREQ failed: %s == %s (expected \"%s\", got \"%s\")", \
                  #expected, #actual, check_e_ ? check_e_ : "(null)",      \
                  check_a_ ? check_a_ : "(null)");                         \
  } while (0)

/* CHECK_CONTAINS(haystack, needle): needle is a substring of haystack. */
#define CHECK_CONTAINS(haystack, needle)                                   \
  do {                                                                     \
    const char* check_h_ = (haystack);                                     \
    const char* check_n_ = (needle);                                       \
    if (check_h_ == NULL || strstr(check_h_, check_n_) == NULL)            \
      CHECK_FAIL_("CHECK_CONTAINS failed: %s contains %s (\"%s\" does not " \
                  "contain \"%s\")", #haystack, #needle,                   \
                  check_h_ ? check_h_ : "(null)", check_n_);               \
  } while (0)

/* Runs one `static void TestX(void)` and prints "ok TestX" if it returns. */
#define RUN_TEST(fn)              \
  do {                            \
    fn();                         \
    printf("ok %s\n", #fn);       \
    fflush(stdout);               \
  } while (0)

#endif /* TFLITE_C_TESTS_CHECK_H_ */
