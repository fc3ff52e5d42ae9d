//! TFLite's audio custom ops, `AudioSpectrogram` and `Mfcc`, with the FlexBuffer reader
//! for their options.

pub(crate) mod flexmap;
pub mod mfcc;
pub mod spectrogram;
