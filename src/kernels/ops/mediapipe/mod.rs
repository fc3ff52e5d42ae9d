//! MediaPipe's custom ops (`mediapipe/util/tflite/operations/`,
//! `mediapipe/tasks/cc/vision/custom_ops/`), which TFLite's builtin resolver lacks and
//! MediaPipe's models use. Each is registered under MediaPipe's name at the versions
//! MediaPipe's op resolvers accept.

pub mod fused_batch_norm;
pub mod landmarks_to_transform_matrix;
pub mod max_pool_argmax;
pub mod max_unpooling;
pub mod resampler;
pub mod transform_landmarks;
pub mod transform_tensor_bilinear;
