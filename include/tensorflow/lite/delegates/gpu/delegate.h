/* tensorflow/lite/delegates/gpu/delegate.h: the OpenCL GPU delegate of this library
 * (TfLiteGpuDelegateOptionsV2, 56 bytes; TfLiteGpuDelegateOptionsV2Default,
 * TfLiteGpuDelegateV2Create, TfLiteGpuDelegateV2Delete). Valid C, unlike TFLite's own.
 * Everything is declared in the one header generated from the Rust sources,
 * tensorflow/lite/core/c/c_api.h; this file exists so TFLite's include paths work. */
#ifndef TFLITE_RS_SHIM_TENSORFLOW_LITE_DELEGATES_GPU_DELEGATE_H
#define TFLITE_RS_SHIM_TENSORFLOW_LITE_DELEGATES_GPU_DELEGATE_H
#include "tensorflow/lite/core/c/c_api.h"
#endif
