//! `TfLiteGpuDelegateOptionsV2` (tensorflow/lite/delegates/gpu/delegate_options.h, 56
//! bytes) and what its fields mean here.
#![allow(non_camel_case_types)]

use core::ffi::{CStr, c_char};
use std::path::PathBuf;

use crate::error::Result;
use crate::gpu::tuner::TuneLevel;

/// Options of the GPU delegate; always start from `TfLiteGpuDelegateOptionsV2Default()`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct TfLiteGpuDelegateOptionsV2 {
    /// Obsolete: -1 uses the priorities; 0 means priority1 = MAX_PRECISION, other values
    /// priority1 = MIN_LATENCY.
    pub is_precision_loss_allowed: i32,
    /// A `TfLiteGpuInferenceUsage`: FAST_SINGLE_ANSWER (0) tunes nothing,
    /// SUSTAINED_SPEED (1) tunes every kernel, BALANCED (2) tunes within a time budget.
    pub inference_preference: i32,
    /// `TfLiteGpuInferencePriority` values, most important first.
    pub inference_priority1: i32,
    pub inference_priority2: i32,
    pub inference_priority3: i32,
    /// Bitmask of `TfLiteGpuExperimentalFlags`.
    pub experimental_flags: i64,
    /// How many partitions (largest first) the delegate takes; values <= 0 mean 1.
    pub max_delegated_partitions: i32,
    /// Directory of the persistent tuning cache (with ENABLE_SERIALIZATION and
    /// `model_token`).
    pub serialization_dir: *const c_char,
    /// Per-model namespace of the cache file.
    pub model_token: *const c_char,
}

/// `TfLiteGpuInferenceUsage` (the values of `inference_preference`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteGpuInferenceUsage {
    /// One answer quickly: nothing is tuned (cached tunings are still used).
    TFLITE_GPU_INFERENCE_PREFERENCE_FAST_SINGLE_ANSWER = 0,
    /// Many inferences: every kernel is tuned.
    TFLITE_GPU_INFERENCE_PREFERENCE_SUSTAINED_SPEED = 1,
    /// Tuned within a per-model time budget.
    TFLITE_GPU_INFERENCE_PREFERENCE_BALANCED = 2,
}

/// `TfLiteGpuInferencePriority`.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteGpuInferencePriority {
    TFLITE_GPU_INFERENCE_PRIORITY_AUTO = 0,
    TFLITE_GPU_INFERENCE_PRIORITY_MAX_PRECISION = 1,
    TFLITE_GPU_INFERENCE_PRIORITY_MIN_LATENCY = 2,
    TFLITE_GPU_INFERENCE_PRIORITY_MIN_MEMORY_USAGE = 3,
}

/// `TfLiteGpuExperimentalFlags` (bits of `experimental_flags`).
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TfLiteGpuExperimentalFlags {
    TFLITE_GPU_EXPERIMENTAL_FLAGS_NONE = 0,
    /// Quantized models (accepted; the delegate computes float32).
    TFLITE_GPU_EXPERIMENTAL_FLAGS_ENABLE_QUANT = 1,
    /// OpenCL only (the only backend here).
    TFLITE_GPU_EXPERIMENTAL_FLAGS_CL_ONLY = 2,
    /// OpenGL only: not available, Create fails.
    TFLITE_GPU_EXPERIMENTAL_FLAGS_GL_ONLY = 4,
    /// Persist tuning results in `serialization_dir` under `model_token`.
    TFLITE_GPU_EXPERIMENTAL_FLAGS_ENABLE_SERIALIZATION = 8,
}

use TfLiteGpuExperimentalFlags::*;
use TfLiteGpuInferencePriority::*;
use TfLiteGpuInferenceUsage::*;
const AUTO: i32 = TFLITE_GPU_INFERENCE_PRIORITY_AUTO as i32;

impl Default for TfLiteGpuDelegateOptionsV2 {
    /// TFLite's defaults (delegate.cc): -1, FAST_SINGLE_ANSWER, {MAX_PRECISION, AUTO,
    /// AUTO}, ENABLE_QUANT, 1 partition, no serialization.
    fn default() -> Self {
        TfLiteGpuDelegateOptionsV2 {
            is_precision_loss_allowed: -1,
            inference_preference: TFLITE_GPU_INFERENCE_PREFERENCE_FAST_SINGLE_ANSWER as i32,
            inference_priority1: TFLITE_GPU_INFERENCE_PRIORITY_MAX_PRECISION as i32,
            inference_priority2: AUTO,
            inference_priority3: AUTO,
            experimental_flags: TFLITE_GPU_EXPERIMENTAL_FLAGS_ENABLE_QUANT as i64,
            max_delegated_partitions: 1,
            serialization_dir: core::ptr::null(),
            model_token: core::ptr::null(),
        }
    }
}

/// The options as the delegate uses them (strings copied at create time).
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub level: TuneLevel,
    pub max_partitions: usize,
    /// `<serialization_dir>/<model_token>.wgtune` when serialization is on.
    pub cache_path: Option<PathBuf>,
    pub model_token: String,
}

/// Copies a NUL-terminated string the caller owns, if any.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
unsafe fn string(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

impl Settings {
    /// # Safety
    /// The string fields of `o` are NULL or NUL-terminated.
    pub unsafe fn from_options(o: &TfLiteGpuDelegateOptionsV2) -> Result<Settings> {
        let prio = [o.inference_priority1, o.inference_priority2, o.inference_priority3];
        if prio.iter().any(|p| !(0..=3).contains(p)) {
            crate::bail!("invalid inference priorities {prio:?}");
        }
        // AUTO may only follow fully specified priorities (TFLite's IsValid).
        if let Some(first_auto) = prio.iter().position(|&p| p == AUTO)
            && prio[first_auto..].iter().any(|&p| p != AUTO)
        {
            crate::bail!("invalid inference priorities {prio:?}: AUTO must come last");
        }
        if o.experimental_flags & TFLITE_GPU_EXPERIMENTAL_FLAGS_GL_ONLY as i64 != 0 {
            crate::bail!("the OpenGL backend (GL_ONLY) is not available; this delegate runs OpenCL");
        }
        // SAFETY: forwarded from the caller.
        let (dir, token) = unsafe { (string(o.serialization_dir), string(o.model_token)) };
        let cache_path = match (
            o.experimental_flags & TFLITE_GPU_EXPERIMENTAL_FLAGS_ENABLE_SERIALIZATION as i64 != 0,
            dir,
            &token,
        ) {
            (true, Some(d), Some(t)) if !d.is_empty() && !t.is_empty() => {
                let safe: String = t
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
                    .collect();
                Some(PathBuf::from(d).join(format!("{safe}.wgtune")))
            }
            _ => None,
        };
        Ok(Settings {
            level: TuneLevel::from_inference_preference(o.inference_preference),
            max_partitions: o.max_delegated_partitions.max(1) as usize,
            cache_path,
            model_token: token.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_tflites() {
        assert_eq!(core::mem::size_of::<TfLiteGpuDelegateOptionsV2>(), 56);
        assert_eq!(core::mem::offset_of!(TfLiteGpuDelegateOptionsV2, experimental_flags), 24);
        assert_eq!(core::mem::offset_of!(TfLiteGpuDelegateOptionsV2, max_delegated_partitions), 32);
        assert_eq!(core::mem::offset_of!(TfLiteGpuDelegateOptionsV2, serialization_dir), 40);
        assert_eq!(core::mem::offset_of!(TfLiteGpuDelegateOptionsV2, model_token), 48);
    }

    #[test]
    fn settings_follow_the_options() {
        let mut o = TfLiteGpuDelegateOptionsV2::default();
        // SAFETY: NULL strings.
        let s = unsafe { Settings::from_options(&o) }.unwrap();
        assert_eq!((s.level, s.max_partitions, s.cache_path.clone()), (TuneLevel::Fast, 1, None));
        o.inference_preference = TFLITE_GPU_INFERENCE_PREFERENCE_SUSTAINED_SPEED as i32;
        o.max_delegated_partitions = -3;
        o.experimental_flags |= TFLITE_GPU_EXPERIMENTAL_FLAGS_ENABLE_SERIALIZATION as i64;
        o.serialization_dir = c"/tmp/x".as_ptr();
        o.model_token = c"m/1".as_ptr();
        // SAFETY: static C strings.
        let s = unsafe { Settings::from_options(&o) }.unwrap();
        assert_eq!(s.level, TuneLevel::Full);
        assert_eq!(s.max_partitions, 1);
        assert_eq!(s.cache_path, Some(PathBuf::from("/tmp/x/m_1.wgtune")));
        o.inference_priority1 = AUTO;
        o.inference_priority2 = TFLITE_GPU_INFERENCE_PRIORITY_MIN_LATENCY as i32;
        // SAFETY: as above.
        assert!(unsafe { Settings::from_options(&o) }.unwrap_err().message.contains("AUTO"));
    }
}
