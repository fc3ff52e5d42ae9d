/*
 * The C-variadic pieces of the C API. Stable Rust can neither define a C variadic
 * function nor build a va_list, so these thin functions format the message with
 * vsnprintf and hand the resulting string to Rust (tflite_rs_report_message).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct TfLiteContext;
struct TfLiteOpaqueContext;

/* Implemented in Rust (src/interpreter/context.rs): delivers a formatted message. */
void tflite_rs_report_message(struct TfLiteContext* context, const char* message);

static void report_va(struct TfLiteContext* context, const char* format, va_list args) {
  char stack_buf[1024];
  va_list copy;
  int n;
  if (format == NULL) {
    tflite_rs_report_message(context, "(null format)");
    return;
  }
  va_copy(copy, args);
  n = vsnprintf(stack_buf, sizeof(stack_buf), format, copy);
  va_end(copy);
  if (n < 0) {
    tflite_rs_report_message(context, format);
    return;
  }
  if ((size_t)n < sizeof(stack_buf)) {
    tflite_rs_report_message(context, stack_buf);
    return;
  }
  {
    char* heap = (char*)malloc((size_t)n + 1);
    if (heap == NULL) {
      tflite_rs_report_message(context, stack_buf);
      return;
    }
    vsnprintf(heap, (size_t)n + 1, format, args);
    tflite_rs_report_message(context, heap);
    free(heap);
  }
}

/* TfLiteContext::ReportError. */
void tflite_rs_context_report_error(struct TfLiteContext* context, const char* format, ...) {
  va_list args;
  va_start(args, format);
  report_va(context, format, args);
  va_end(args);
}

void TfLiteOpaqueContextReportError(struct TfLiteOpaqueContext* opaque_context, const char* format, ...) {
  va_list args;
  va_start(args, format);
  report_va((struct TfLiteContext*)opaque_context, format, args);
  va_end(args);
}

void TfLiteOpaqueContextReportErrorVa(struct TfLiteOpaqueContext* opaque_context, const char* format,
                                      va_list vlist) {
  report_va((struct TfLiteContext*)opaque_context, format, vlist);
}

/* Calls an application error reporter `void (*)(void*, const char*, va_list)` with
 * the already-formatted message, through a "%s" format. */
typedef void (*tflite_rs_reporter_fn)(void* user_data, const char* format, va_list args);

static void call_reporter_va(tflite_rs_reporter_fn reporter, void* user_data, const char* format, ...) {
  va_list args;
  va_start(args, format);
  reporter(user_data, format, args);
  va_end(args);
}

void tflite_rs_call_reporter(tflite_rs_reporter_fn reporter, void* user_data, const char* message) {
  if (reporter != NULL) {
    call_reporter_va(reporter, user_data, "%s", message);
  }
}
