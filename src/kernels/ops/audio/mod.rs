//! TFLite's audio custom ops, `AudioSpectrogram` and `Mfcc`.

pub mod mfcc;
pub mod spectrogram;
