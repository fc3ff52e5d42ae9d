//! The StableHLO ops TFLite 2.19 runs (`kernels/stablehlo_*.cc`, `dilate.cc`,
//! `reduce_window.cc`, `rng_bit_generator.cc`), one file per op family. Their options
//! live in the operator's `builtin_options_2` and are parsed in `model::options`.

pub mod composite;
pub mod elementwise;
pub mod gather;
pub mod pad;
pub mod reduce_window;
pub mod rng_bit_generator;
pub mod scatter;

use crate::error::{Error, Result};
use crate::kernels::api::TensorView;

/// Element types read from a tensor's bytes, which need not be aligned: constants in a
/// model buffer are only as aligned as the flatbuffer places them.
pub trait LeBytes: Copy {
    fn from_le(b: &[u8]) -> Option<Self>;
}

macro_rules! le_bytes {
    ($($t:ty),*) => {$(
        impl LeBytes for $t {
            fn from_le(b: &[u8]) -> Option<$t> {
                Some(<$t>::from_le_bytes(b.try_into().ok()?))
            }
        }
    )*};
}
le_bytes!(f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);

/// The values of `t` (of the element type `T`), read byte-wise.
pub fn values_of<T: LeBytes>(t: &TensorView<'_>) -> Result<Vec<T>> {
    let size = core::mem::size_of::<T>();
    let raw = t.raw()?;
    let n = t.num_elements();
    if raw.len() < n.saturating_mul(size) {
        return Err(Error::new(format!("tensor {} holds {} bytes, needs {}", t.index, raw.len(), n * size)));
    }
    raw.chunks_exact(size).take(n).map(|c| T::from_le(c).ok_or_else(|| Error::new("bad element size"))).collect()
}

/// The first value of `t`, read byte-wise; an error when `t` is empty.
pub fn first_value<T: LeBytes>(t: &TensorView<'_>) -> Result<T> {
    let size = core::mem::size_of::<T>();
    let raw = t.raw()?;
    if t.num_elements() == 0 || raw.len() < size {
        return Err(Error::new(format!("tensor {} holds no value", t.index)));
    }
    T::from_le(&raw[..size]).ok_or_else(|| Error::new("bad element size"))
}
