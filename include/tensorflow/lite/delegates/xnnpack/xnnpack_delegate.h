/* tensorflow/lite/delegates/xnnpack/xnnpack_delegate.h: part of the TensorFlow Lite 2.19
 * C API as implemented by this library (TF 2.19 option layout, 32 bytes).
 * Everything is declared in the one header generated from the Rust sources,
 * tensorflow/lite/core/c/c_api.h; this file exists so TFLite's include paths work. */
#ifndef TFLITE_RS_SHIM_TENSORFLOW_LITE_DELEGATES_XNNPACK_XNNPACK_DELEGATE_H
#define TFLITE_RS_SHIM_TENSORFLOW_LITE_DELEGATES_XNNPACK_XNNPACK_DELEGATE_H
#include "tensorflow/lite/core/c/c_api.h"
#endif
