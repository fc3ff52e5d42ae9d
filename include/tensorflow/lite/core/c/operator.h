/* tensorflow/lite/core/c/operator.h: part of the TensorFlow Lite 2.19 C API as implemented by this library.
 * Everything is declared in the one header generated from the Rust sources,
 * tensorflow/lite/core/c/c_api.h; this file exists so TFLite's include paths work. */
#ifndef TFLITE_RS_SHIM_TENSORFLOW_LITE_CORE_C_OPERATOR_H
#define TFLITE_RS_SHIM_TENSORFLOW_LITE_CORE_C_OPERATOR_H
#include "tensorflow/lite/core/c/c_api.h"
#endif
