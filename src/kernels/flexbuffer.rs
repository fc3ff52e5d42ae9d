//! A small, bounds-checked reader for the flexbuffer maps custom ops keep their options in
//! (the root of the buffer is a map from keys to scalars).
//!
//! Only what such a map needs: the root reference, the map's keys and values, and the
//! scalar types (null, int, uint, float, bool, and their indirect forms). Every offset
//! and width is checked against the buffer, so a malformed buffer is an error, never a
//! read outside it. Conversions follow flexbuffers' `AsInt64` / `AsDouble` / `AsBool`: a
//! missing key reads as null, which converts to 0, 0.0 and false.

use crate::error::{Error, Result};

// Flexbuffer type codes (flexbuffers.h `Type`).
const T_NULL: u8 = 0;
const T_INT: u8 = 1;
const T_UINT: u8 = 2;
const T_FLOAT: u8 = 3;
const T_INDIRECT_INT: u8 = 6;
const T_INDIRECT_UINT: u8 = 7;
const T_INDIRECT_FLOAT: u8 = 8;
const T_MAP: u8 = 9;
const T_BOOL: u8 = 26;

/// A scalar read from a map.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Null,
    Int(i64),
    UInt(u64),
    Float(f64),
    Bool(bool),
}

impl Scalar {
    /// True for a missing key or an explicit null.
    pub fn is_null(self) -> bool {
        self == Scalar::Null
    }

    /// flexbuffers' `AsInt64` (a float truncates toward zero, saturating).
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Null => 0,
            Scalar::Int(v) => v,
            Scalar::UInt(v) => v as i64,
            Scalar::Float(v) => v as i64,
            Scalar::Bool(b) => i64::from(b),
        }
    }

    /// flexbuffers' `AsInt32`: `AsInt64` truncated to 32 bits.
    pub fn as_i32(self) -> i32 {
        self.as_i64() as i32
    }

    /// flexbuffers' `AsDouble`.
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Null => 0.0,
            Scalar::Int(v) => v as f64,
            Scalar::UInt(v) => v as f64,
            Scalar::Float(v) => v,
            Scalar::Bool(b) => f64::from(u8::from(b)),
        }
    }

    /// flexbuffers' `AsFloat`.
    pub fn as_f32(self) -> f32 {
        self.as_f64() as f32
    }

    /// flexbuffers' `AsBool`: nonzero.
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

fn malformed(what: &str) -> Error {
    Error::new(format!("malformed flexbuffer: {what}"))
}

/// `width` (1, 2, 4 or 8) bytes at `at`, little-endian, as an unsigned value.
fn read_uint(buf: &[u8], at: usize, width: usize) -> Result<u64> {
    let end = at.checked_add(width).ok_or_else(|| malformed("offset overflow"))?;
    let b = buf.get(at..end).ok_or_else(|| malformed("read past the end"))?;
    let mut v = [0u8; 8];
    v[..width.min(8)].copy_from_slice(&b[..width.min(8)]);
    Ok(u64::from_le_bytes(v))
}

/// As [`read_uint`], sign-extended.
fn read_int(buf: &[u8], at: usize, width: usize) -> Result<i64> {
    let u = read_uint(buf, at, width)?;
    Ok(match width {
        1 => u as u8 as i8 as i64,
        2 => u as u16 as i16 as i64,
        4 => u as u32 as i32 as i64,
        _ => u as i64,
    })
}

fn read_float(buf: &[u8], at: usize, width: usize) -> Result<f64> {
    match width {
        4 => Ok(f64::from(f32::from_bits(read_uint(buf, at, 4)? as u32))),
        8 => Ok(f64::from_bits(read_uint(buf, at, 8)?)),
        _ => Err(malformed(&format!("a float of {width} bytes"))),
    }
}

/// The position `offset` bytes before `at` (offsets point backwards).
fn back(at: usize, offset: u64) -> Result<usize> {
    usize::try_from(offset).ok().and_then(|o| at.checked_sub(o)).ok_or_else(|| malformed("offset out of range"))
}

fn width_of(packed: u8) -> usize {
    1usize << (packed & 3)
}

/// A map at the root of a flexbuffer.
pub struct FlexMap<'a> {
    buf: &'a [u8],
    /// Where the values start.
    values: usize,
    /// Width of the value slots.
    width: usize,
    len: usize,
    keys: usize,
    key_width: usize,
}

impl<'a> FlexMap<'a> {
    /// Reads the root of `buf`, which must be a map.
    pub fn root(buf: &'a [u8]) -> Result<FlexMap<'a>> {
        if buf.len() < 3 {
            return Err(malformed("shorter than a root"));
        }
        let root_width = usize::from(buf[buf.len() - 1]);
        let packed = buf[buf.len() - 2];
        if !matches!(root_width, 1 | 2 | 4 | 8) {
            return Err(malformed("root width"));
        }
        if packed >> 2 != T_MAP {
            return Err(malformed("the root is not a map"));
        }
        let root_at = (buf.len() - 2).checked_sub(root_width).ok_or_else(|| malformed("root out of range"))?;
        let values = back(root_at, read_uint(buf, root_at, root_width)?)?;
        let width = width_of(packed);
        // Before the values: keys offset, keys width, length (one slot each).
        let len_at = values.checked_sub(width).ok_or_else(|| malformed("map header out of range"))?;
        let kw_at = len_at.checked_sub(width).ok_or_else(|| malformed("map header out of range"))?;
        let ko_at = kw_at.checked_sub(width).ok_or_else(|| malformed("map header out of range"))?;
        let len = usize::try_from(read_uint(buf, len_at, width)?).map_err(|_| malformed("map length"))?;
        let key_width = usize::try_from(read_uint(buf, kw_at, width)?).map_err(|_| malformed("key width"))?;
        if !matches!(key_width, 1 | 2 | 4 | 8) {
            return Err(malformed("key width"));
        }
        let keys = back(ko_at, read_uint(buf, ko_at, width)?)?;
        // The values, then one type byte per value, must fit; so must the keys.
        let types_end = len
            .checked_mul(width)
            .and_then(|v| v.checked_add(values))
            .and_then(|v| v.checked_add(len))
            .ok_or_else(|| malformed("map size"))?;
        let keys_end = len.checked_mul(key_width).and_then(|v| v.checked_add(keys)).ok_or_else(|| malformed("keys"))?;
        if types_end > buf.len() || keys_end > buf.len() {
            return Err(malformed("map past the end"));
        }
        let key_len_at = keys.checked_sub(key_width).ok_or_else(|| malformed("keys header"))?;
        if read_uint(buf, key_len_at, key_width)? != len as u64 {
            return Err(malformed("keys and values differ in number"));
        }
        Ok(FlexMap { buf, values, width, len, keys, key_width })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty map.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Key `i` (NUL-terminated in the buffer).
    fn key(&self, i: usize) -> Result<&'a [u8]> {
        let slot = self.keys + i * self.key_width;
        let at = back(slot, read_uint(self.buf, slot, self.key_width)?)?;
        let rest = self.buf.get(at..).ok_or_else(|| malformed("key out of range"))?;
        let end = rest.iter().position(|&b| b == 0).ok_or_else(|| malformed("unterminated key"))?;
        Ok(&rest[..end])
    }

    /// The scalar under `key`; `Scalar::Null` when the key is absent. An error for a
    /// malformed entry or a value that is not a scalar.
    pub fn get(&self, key: &str) -> Result<Scalar> {
        for i in 0..self.len {
            if self.key(i)? == key.as_bytes() {
                return self.value(i).map_err(|e| Error::new(format!("{} (key \"{key}\")", e.message)));
            }
        }
        Ok(Scalar::Null)
    }

    fn value(&self, i: usize) -> Result<Scalar> {
        let packed = self.buf[self.values + self.len * self.width + i];
        let (kind, child_width) = (packed >> 2, width_of(packed));
        let at = self.values + i * self.width;
        let w = self.width;
        let indirect = |at: usize| -> Result<usize> { back(at, read_uint(self.buf, at, w)?) };
        Ok(match kind {
            T_NULL => Scalar::Null,
            T_INT => Scalar::Int(read_int(self.buf, at, w)?),
            T_UINT => Scalar::UInt(read_uint(self.buf, at, w)?),
            T_FLOAT => Scalar::Float(read_float(self.buf, at, w)?),
            T_BOOL => Scalar::Bool(read_uint(self.buf, at, w)? != 0),
            T_INDIRECT_INT => Scalar::Int(read_int(self.buf, indirect(at)?, child_width)?),
            T_INDIRECT_UINT => Scalar::UInt(read_uint(self.buf, indirect(at)?, child_width)?),
            T_INDIRECT_FLOAT => Scalar::Float(read_float(self.buf, indirect(at)?, child_width)?),
            _ => return Err(malformed(&format!("value of type {kind} is not a scalar"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `flatbuffers.flexbuffers.Dumps({"a": 3, "b": 0.5, "c": True, "big": 70000,
    /// "neg": -2})` from the flatbuffers Python package.
    const SAMPLE: &[u8] = &[
        0x61, 0x00, 0x62, 0x00, 0x63, 0x00, 0x62, 0x69, 0x67, 0x00, 0x6e, 0x65, 0x67, 0x00, 0x05, 0x0f, 0x0e, 0x0b,
        0x0e, 0x09, 0x05, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x3f, 0x70, 0x11, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0xfe, 0xff, 0xff, 0xff, 0x06, 0x0e,
        0x06, 0x6a, 0x06, 0x19, 0x26, 0x01,
    ];

    #[test]
    fn reads_scalars() {
        let m = FlexMap::root(SAMPLE).unwrap();
        assert_eq!(m.len(), 5);
        assert_eq!(m.get("a").unwrap().as_i32(), 3);
        assert_eq!(m.get("b").unwrap().as_f32(), 0.5);
        assert!(m.get("c").unwrap().as_bool());
        assert_eq!(m.get("big").unwrap().as_i32(), 70000);
        assert_eq!(m.get("neg").unwrap().as_i64(), -2);
        assert!(m.get("missing").unwrap().is_null());
        assert_eq!(m.get("missing").unwrap().as_f32(), 0.0);
        // Conversions as flexbuffers'.
        assert_eq!(Scalar::Float(2.9).as_i32(), 2);
        assert_eq!(Scalar::Int(3).as_f32(), 3.0);
        assert!(Scalar::UInt(2).as_bool());
    }

    #[test]
    fn malformed_buffers_are_errors() {
        assert!(FlexMap::root(&[]).is_err());
        assert!(FlexMap::root(&[0, 0]).is_err());
        // Every truncation and every single-byte corruption is an error or a value, never a panic.
        for n in 0..SAMPLE.len() {
            let _ = FlexMap::root(&SAMPLE[n..]).map(|m| m.get("a"));
            let _ = FlexMap::root(&SAMPLE[..n]).map(|m| m.get("a"));
        }
        for i in 0..SAMPLE.len() {
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut b = SAMPLE.to_vec();
                b[i] = v;
                if let Ok(m) = FlexMap::root(&b) {
                    for k in ["a", "b", "c", "big", "neg"] {
                        let _ = m.get(k);
                    }
                }
            }
        }
        // A root that is an int, not a map.
        assert!(FlexMap::root(&[0x05, 0x04, 0x01]).is_err());
    }
}
