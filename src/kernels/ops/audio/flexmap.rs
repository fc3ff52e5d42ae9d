//! A bounds-checked reader for the custom options of the audio ops: a FlexBuffer whose
//! root is a map from keys to scalars (ints, uints, floats, bools, inline or indirect).
//!
//! Lookups follow FlexBuffers' `Reference` conversions as TFLite uses them: a missing key
//! reads as null, which is 0 and false; a float read as an integer is truncated toward
//! zero; any non-zero number is true. Every offset is checked against the buffer; a
//! buffer that is not a map of this kind is an error, not a panic.

use crate::error::{Error, Result};

// FlexBuffers value types (flexbuffers.h `Type`).
const NULL: u8 = 0;
const INT: u8 = 1;
const UINT: u8 = 2;
const FLOAT: u8 = 3;
const INDIRECT_INT: u8 = 6;
const INDIRECT_UINT: u8 = 7;
const INDIRECT_FLOAT: u8 = 8;
const MAP: u8 = 9;
const BOOL: u8 = 26;

/// One scalar of the map.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Null,
    Int(i64),
    UInt(u64),
    Float(f64),
    Bool(bool),
}

impl Scalar {
    /// FlexBuffers' `AsInt64`.
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Null => 0,
            Scalar::Int(v) => v,
            Scalar::UInt(v) => v as i64,
            // Saturating where C++'s conversion would be undefined.
            Scalar::Float(v) => v as i64,
            Scalar::Bool(b) => i64::from(b),
        }
    }

    /// FlexBuffers' `AsBool`.
    pub fn as_bool(self) -> bool {
        match self {
            Scalar::Null => false,
            Scalar::Int(v) => v != 0,
            Scalar::UInt(v) => v != 0,
            Scalar::Float(v) => v != 0.0,
            Scalar::Bool(b) => b,
        }
    }
}

/// The map's entries, decoded once.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlexMap {
    entries: Vec<(Vec<u8>, Scalar)>,
}

fn bad(what: &str) -> Error {
    Error::new(format!("custom options are not a FlexBuffer map of scalars: {what}"))
}

fn read_uint(b: &[u8], at: usize, width: usize) -> Result<u64> {
    let s = at.checked_add(width).and_then(|end| b.get(at..end)).ok_or_else(|| bad("offset out of range"))?;
    let mut v = [0u8; 8];
    match width {
        1 | 2 | 4 | 8 => v[..width].copy_from_slice(s),
        _ => return Err(bad("bad byte width")),
    }
    Ok(u64::from_le_bytes(v))
}

fn read_int(b: &[u8], at: usize, width: usize) -> Result<i64> {
    let u = read_uint(b, at, width)?;
    let shift = 64 - 8 * width as u32;
    Ok(((u << shift) as i64) >> shift)
}

fn read_float(b: &[u8], at: usize, width: usize) -> Result<f64> {
    let u = read_uint(b, at, width)?;
    match width {
        4 => Ok(f64::from(f32::from_bits(u as u32))),
        8 => Ok(f64::from_bits(u)),
        _ => Err(bad("a float must be 4 or 8 bytes")),
    }
}

/// The position `offset` bytes before `at`.
fn back(b: &[u8], at: usize, width: usize) -> Result<usize> {
    let off = read_uint(b, at, width)?;
    usize::try_from(off).ok().and_then(|o| at.checked_sub(o)).ok_or_else(|| bad("offset out of range"))
}

impl FlexMap {
    /// Decodes `buf`.
    pub fn parse(buf: &[u8]) -> Result<FlexMap> {
        let n = buf.len();
        if n < 3 {
            return Err(bad("too short"));
        }
        let root_width = usize::from(buf[n - 1]);
        let packed = buf[n - 2];
        let root = n.checked_sub(2 + root_width).ok_or_else(|| bad("too short"))?;
        if packed >> 2 != MAP {
            return Err(bad("the root is not a map"));
        }
        let width = 1usize << (packed & 3);
        let map = back(buf, root, root_width)?;
        let header = map.checked_sub(3 * width).ok_or_else(|| bad("offset out of range"))?;
        let keys = back(buf, header, width)?;
        let key_width = usize::try_from(read_uint(buf, header + width, width)?).map_err(|_| bad("bad key width"))?;
        let size = usize::try_from(read_uint(buf, header + 2 * width, width)?).map_err(|_| bad("bad size"))?;
        let key_count =
            read_uint(buf, keys.checked_sub(key_width).ok_or_else(|| bad("offset out of range"))?, key_width)?;
        // Every entry takes at least `width + 1` bytes of the buffer.
        if key_count != size as u64 || size > n {
            return Err(bad("key and value counts differ"));
        }
        let types = size.checked_mul(width).and_then(|s| map.checked_add(s)).ok_or_else(|| bad("too large"))?;
        let mut entries = Vec::with_capacity(size);
        for i in 0..size {
            let kpos = keys + i * key_width;
            let start = back(buf, kpos, key_width)?;
            let len =
                buf.get(start..).and_then(|s| s.iter().position(|&c| c == 0)).ok_or_else(|| bad("unterminated key"))?;
            let key = buf[start..start + len].to_vec();
            let vpos = map + i * width;
            let vt = *buf.get(types + i).ok_or_else(|| bad("offset out of range"))?;
            let inner = 1usize << (vt & 3);
            let value = match vt >> 2 {
                NULL => Scalar::Null,
                INT => Scalar::Int(read_int(buf, vpos, width)?),
                UINT => Scalar::UInt(read_uint(buf, vpos, width)?),
                FLOAT => Scalar::Float(read_float(buf, vpos, width)?),
                BOOL => Scalar::Bool(read_uint(buf, vpos, width)? != 0),
                INDIRECT_INT => Scalar::Int(read_int(buf, back(buf, vpos, width)?, inner)?),
                INDIRECT_UINT => Scalar::UInt(read_uint(buf, back(buf, vpos, width)?, inner)?),
                INDIRECT_FLOAT => Scalar::Float(read_float(buf, back(buf, vpos, width)?, inner)?),
                other => return Err(bad(&format!("value type {other} is not a scalar"))),
            };
            entries.push((key, value));
        }
        Ok(FlexMap { entries })
    }

    /// The value of `key` (null when missing).
    pub fn get(&self, key: &str) -> Scalar {
        self.entries.iter().find(|(k, _)| k.as_slice() == key.as_bytes()).map_or(Scalar::Null, |e| e.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Written by Python's `flatbuffers.flexbuffers.Dumps`.
    const SPECTROGRAM: [u8; 60] = [
        119, 105, 110, 100, 111, 119, 95, 115, 105, 122, 101, 0, 115, 116, 114, 105, 100, 101, 0, 109, 97, 103, 110,
        105, 116, 117, 100, 101, 95, 115, 113, 117, 97, 114, 101, 100, 0, 3, 19, 27, 40, 0, 4, 0, 1, 0, 3, 0, 1, 0,
        128, 0, 0, 1, 105, 5, 5, 9, 37, 1,
    ];
    const MIXED: [u8; 33] =
        [97, 0, 98, 0, 2, 5, 4, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 112, 17, 1, 0, 0, 0, 192, 191, 6, 14, 10, 38, 1];

    #[test]
    fn reads_python_maps() {
        let m = FlexMap::parse(&SPECTROGRAM).unwrap();
        assert_eq!(m.get("window_size").as_i64(), 256);
        assert_eq!(m.get("stride").as_i64(), 128);
        assert!(m.get("magnitude_squared").as_bool());
        assert_eq!(m.get("missing"), Scalar::Null);
        assert_eq!(m.get("missing").as_i64(), 0);
        let m = FlexMap::parse(&MIXED).unwrap();
        assert_eq!(m.get("a"), Scalar::Int(70000));
        assert_eq!(m.get("b"), Scalar::Float(-1.5));
        assert_eq!(m.get("b").as_i64(), -1);
    }

    #[test]
    fn malformed_buffers_are_errors() {
        assert!(FlexMap::parse(&[]).is_err());
        assert!(FlexMap::parse(&[1, 2]).is_err());
        // Every truncation and every single-byte change either parses or errors.
        for cut in 0..SPECTROGRAM.len() {
            let _ = FlexMap::parse(&SPECTROGRAM[cut..]);
            let _ = FlexMap::parse(&SPECTROGRAM[..cut]);
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut b = SPECTROGRAM;
                b[cut] = v;
                let _ = FlexMap::parse(&b);
            }
        }
        // An int root is not a map.
        assert!(FlexMap::parse(&[5, 4, 1]).is_err());
    }
}
