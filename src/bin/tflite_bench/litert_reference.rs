//! LiteRT 2.3.0's arena sizes for the corpus models: what "never worse than TFLite"
//! is measured against (the benchmark's `--compare` column and
//! `tests/arena_vs_litert.rs`, which includes this file with `#[path]`). Development
//! data: the library does not contain it.
//!
//! Source: shared/design/MEMORY.md, RESULTS section 0 ("The emulation of TFLite is
//! exact", the `validate_litert` table): the extent of the real LiteRT 2.3.0
//! interpreter's non-persistent arena after `AllocateTensors`, builtin kernels without
//! the default XNNPACK delegate, kernel temporaries (CONV_2D im2col) included.
//! LiteRT cannot load `selfie_segmentation` (MediaPipe custom op); its figure is
//! shared/tools/memplan/plan.py's TFLite emulation ("TFLite current", `--im2col`),
//! which matches LiteRT to the byte on every model LiteRT loads, and is marked
//! emulated.

/// How a reference figure was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Measured on the real LiteRT 2.3.0 runtime.
    Measured,
    /// plan.py's emulation of LiteRT (the model needs ops LiteRT lacks).
    Emulated,
}

/// LiteRT's arena bytes for one model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiteRtArena {
    pub bytes: usize,
    pub source: Source,
}

const TABLE: &[(&str, usize, Source)] = &[
    ("face_detection_full_range_sparse", 4_030_976, Source::Measured),
    ("face_detection_short_range", 1_818_624, Source::Measured),
    ("face_landmark", 2_211_840, Source::Measured),
    ("hand_landmark_full", 4_917_248, Source::Measured),
    ("hand_landmark_lite", 4_816_896, Source::Measured),
    ("hand_recrop", 3_080_192, Source::Measured),
    ("iris_landmark", 704_512, Source::Measured),
    ("palm_detection_full", 4_386_816, Source::Measured),
    ("palm_detection_lite", 4_386_816, Source::Measured),
    ("pose_detection", 7_140_352, Source::Measured),
    ("pose_landmark_full", 23_027_712, Source::Measured),
    ("mobilenet_v2_f32", 6_623_232, Source::Measured),
    ("mobilenet_v2_int8", 1_655_808, Source::Measured),
    ("mobilenet_v2_fp16w", 6_623_232, Source::Measured),
    ("selfie_segmentation", 4_915_200, Source::Emulated),
];

/// LiteRT's arena for the model named `model` (file stem, e.g. `"iris_landmark"`), or
/// `None` where there is no figure.
pub fn litert_arena(model: &str) -> Option<LiteRtArena> {
    TABLE.iter().find(|(name, _, _)| *name == model).map(|&(_, bytes, source)| LiteRtArena { bytes, source })
}

/// Every model the table has a figure for.
pub fn litert_models() -> impl Iterator<Item = &'static str> {
    TABLE.iter().map(|(name, _, _)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        assert_eq!(litert_arena("iris_landmark"), Some(LiteRtArena { bytes: 704_512, source: Source::Measured }));
        assert_eq!(litert_arena("selfie_segmentation").map(|a| a.source), Some(Source::Emulated));
        assert_eq!(litert_arena("sin_add_mul"), None);
        assert_eq!(litert_models().count(), TABLE.len());
    }
}
