//! The StableHLO ops TFLite 2.19 runs (`kernels/stablehlo_*.cc`, `dilate.cc`,
//! `reduce_window.cc`, `rng_bit_generator.cc`), one file per op family. Their options
//! live in the operator's `builtin_options_2` and are parsed in `model::options`.

pub mod composite;
pub mod elementwise;
pub mod gather;
pub mod pad;
pub mod reduce_window;
pub mod scatter;
