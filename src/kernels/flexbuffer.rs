//! A small, bounds-checked reader for the flexbuffer maps custom ops keep their options in
//! (the root of the buffer is a map from keys to values).
//!
//! Only what such maps need: the root reference, the map's keys and values, the scalar
//! types (null, int, uint, float, bool, and their indirect forms) and integer vectors
//! (typed, fixed-length typed, and untyped vectors of numbers). Every offset and width is
//! checked against the buffer, so a malformed buffer is an error, never a read outside it.
//! Conversions follow flexbuffers' `AsInt64` / `AsDouble` / `AsBool`: a missing key reads
//! as null, which converts to 0, 0.0 and false (and an empty vector).

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
const T_VECTOR: u8 = 10;
const T_VECTOR_INT: u8 = 11;
const T_VECTOR_UINT: u8 = 12;
const T_VECTOR_INT2: u8 = 16;
const T_VECTOR_UINT4: u8 = 23;
const T_BOOL: u8 = 26;
const T_VECTOR_BOOL: u8 = 36;

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

/// The position an offset slot of `width` bytes at `pos` points to.
fn indirect(buf: &[u8], pos: usize, width: usize) -> Result<usize> {
    back(pos, read_uint(buf, pos, width)?)
}

/// One value of a map: the slot at `pos` (`parent_width` bytes wide) and its packed type.
#[derive(Clone, Copy, Debug)]
pub struct FlexValue<'a> {
    buf: &'a [u8],
    pos: usize,
    parent_width: usize,
    ty: u8,
    /// The width of what the slot points to (for vectors: of their elements).
    width: usize,
}

impl<'a> FlexValue<'a> {
    fn new(buf: &'a [u8], pos: usize, parent_width: usize, packed: u8) -> FlexValue<'a> {
        FlexValue { buf, pos, parent_width, ty: packed >> 2, width: width_of(packed) }
    }

    /// The value as an integer (`AsInt64`): ints, uints, bools, floats (truncated) and null (0).
    pub fn as_i64(&self) -> Result<i64> {
        let (b, p, w) = (self.buf, self.pos, self.parent_width);
        match self.ty {
            T_NULL => Ok(0),
            T_INT => read_int(b, p, w),
            T_UINT | T_BOOL => read_uint(b, p, w).map(|u| u as i64),
            T_FLOAT => read_float(b, p, w).map(|f| f as i64),
            T_INDIRECT_INT => read_int(b, indirect(b, p, w)?, self.width),
            T_INDIRECT_UINT => read_uint(b, indirect(b, p, w)?, self.width).map(|u| u as i64),
            T_INDIRECT_FLOAT => read_float(b, indirect(b, p, w)?, self.width).map(|f| f as i64),
            t => Err(malformed(&format!("type {t} where a number is expected"))),
        }
    }

    /// The value as an int32, an error when it does not fit.
    pub fn as_i32(&self) -> Result<i32> {
        let v = self.as_i64()?;
        i32::try_from(v).map_err(|_| malformed(&format!("{v} does not fit an int32")))
    }

    /// The value as a float (`AsDouble`): floats, ints, uints, bools and null (0).
    pub fn as_f64(&self) -> Result<f64> {
        let (b, p, w) = (self.buf, self.pos, self.parent_width);
        match self.ty {
            T_FLOAT => read_float(b, p, w),
            T_INDIRECT_FLOAT => read_float(b, indirect(b, p, w)?, self.width),
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    /// The value as an int32 vector: a typed int/uint/bool vector, a fixed-length typed
    /// vector, or an untyped vector of numbers.
    pub fn as_i32_vec(&self) -> Result<Vec<i32>> {
        let b = self.buf;
        let to_i32 = |v: i64| i32::try_from(v).map_err(|_| malformed(&format!("{v} does not fit an int32")));
        let read_n = |start: usize, n: usize, signed: bool| -> Result<Vec<i32>> {
            let w = self.width;
            (0..n)
                .map(|i| {
                    let at = i
                        .checked_mul(w)
                        .and_then(|o| start.checked_add(o))
                        .ok_or_else(|| malformed("vector too long"))?;
                    to_i32(if signed { read_int(b, at, w)? } else { read_uint(b, at, w)? as i64 })
                })
                .collect()
        };
        match self.ty {
            T_VECTOR_INT | T_VECTOR_UINT | T_VECTOR_BOOL | T_VECTOR => {
                let start = indirect(b, self.pos, self.parent_width)?;
                let len_at = start.checked_sub(self.width).ok_or_else(|| malformed("vector length"))?;
                let len = usize::try_from(read_uint(b, len_at, self.width)?).map_err(|_| malformed("vector length"))?;
                // Each element takes at least one byte: a longer length cannot be in the buffer.
                if len > b.len() {
                    return Err(malformed(&format!("vector length {len}")));
                }
                if self.ty != T_VECTOR {
                    return read_n(start, len, self.ty == T_VECTOR_INT);
                }
                let types = len
                    .checked_mul(self.width)
                    .and_then(|o| start.checked_add(o))
                    .ok_or_else(|| malformed("vector too long"))?;
                (0..len)
                    .map(|i| {
                        let packed = *b.get(types + i).ok_or_else(|| malformed("vector types past the end"))?;
                        to_i32(FlexValue::new(b, start + i * self.width, self.width, packed).as_i64()?)
                    })
                    .collect()
            }
            T_VECTOR_INT2..=T_VECTOR_UINT4 => {
                let k = usize::from(self.ty - T_VECTOR_INT2);
                let (n, kind) = (2 + k / 3, k % 3);
                if kind == 2 {
                    return Err(malformed("a float vector where integers are expected"));
                }
                read_n(indirect(b, self.pos, self.parent_width)?, n, kind == 0)
            }
            t => Err(malformed(&format!("type {t} where an integer vector is expected"))),
        }
    }
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

    /// Reads the root of `buf` as [`FlexMap::root`] and checks every entry: all keys must be
    /// terminated and all values scalars, whether or not they are looked up.
    pub fn root_of_scalars(buf: &'a [u8]) -> Result<FlexMap<'a>> {
        let m = FlexMap::root(buf)?;
        for i in 0..m.len {
            m.key(i)?;
            m.value(i)?;
        }
        Ok(m)
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

    /// The value under `key` of any type, `None` when the key is absent.
    pub fn get_value(&self, key: &str) -> Result<Option<FlexValue<'a>>> {
        for i in 0..self.len {
            if self.key(i)? == key.as_bytes() {
                let packed = self.buf[self.values + self.len * self.width + i];
                return Ok(Some(FlexValue::new(self.buf, self.values + i * self.width, self.width, packed)));
            }
        }
        Ok(None)
    }

    /// The int32 under `key`; 0 when it is missing (as flexbuffers' null reference reads),
    /// an error when it does not fit.
    pub fn i32_or_zero(&self, key: &str) -> Result<i32> {
        self.get_value(key)?.map_or(Ok(0), |v| v.as_i32())
    }

    /// The float under `key` (`AsFloat`); 0 when it is missing.
    pub fn f32_or_zero(&self, key: &str) -> Result<f32> {
        self.get_value(key)?.map_or(Ok(0.0), |v| v.as_f64().map(|f| f as f32))
    }

    /// The int32 vector under `key`; empty when it is missing.
    pub fn i32_vec_or_empty(&self, key: &str) -> Result<Vec<i32>> {
        self.get_value(key)?.map_or(Ok(Vec::new()), |v| v.as_i32_vec())
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

    // Written by Python's `flatbuffers.flexbuffers.Dumps`.
    const SPECTROGRAM: [u8; 60] = [
        119, 105, 110, 100, 111, 119, 95, 115, 105, 122, 101, 0, 115, 116, 114, 105, 100, 101, 0, 109, 97, 103, 110,
        105, 116, 117, 100, 101, 95, 115, 113, 117, 97, 114, 101, 100, 0, 3, 19, 27, 40, 0, 4, 0, 1, 0, 3, 0, 1, 0,
        128, 0, 0, 1, 105, 5, 5, 9, 37, 1,
    ];
    const MIXED: [u8; 33] =
        [97, 0, 98, 0, 2, 5, 4, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 112, 17, 1, 0, 0, 0, 192, 191, 6, 14, 10, 38, 1];

    #[test]
    fn reads_python_maps_of_scalars() {
        let m = FlexMap::root_of_scalars(&SPECTROGRAM).unwrap();
        assert_eq!(m.get("window_size").unwrap().as_i64(), 256);
        assert_eq!(m.get("stride").unwrap().as_i64(), 128);
        assert!(m.get("magnitude_squared").unwrap().as_bool());
        assert_eq!(m.get("missing").unwrap(), Scalar::Null);
        assert_eq!(m.get("missing").unwrap().as_i64(), 0);
        let m = FlexMap::root_of_scalars(&MIXED).unwrap();
        assert_eq!(m.get("a").unwrap(), Scalar::Int(70000));
        assert_eq!(m.get("b").unwrap(), Scalar::Float(-1.5));
        assert_eq!(m.get("b").unwrap().as_i64(), -1);
    }

    #[test]
    fn malformed_maps_of_scalars_are_errors() {
        assert!(FlexMap::root_of_scalars(&[]).is_err());
        assert!(FlexMap::root_of_scalars(&[1, 2]).is_err());
        // Every truncation and every single-byte change either parses or errors.
        for cut in 0..SPECTROGRAM.len() {
            let _ = FlexMap::root_of_scalars(&SPECTROGRAM[cut..]);
            let _ = FlexMap::root_of_scalars(&SPECTROGRAM[..cut]);
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut b = SPECTROGRAM;
                b[cut] = v;
                let _ = FlexMap::root_of_scalars(&b);
            }
        }
        // An int root is not a map.
        assert!(FlexMap::root_of_scalars(&[5, 4, 1]).is_err());
        // A value that is not a scalar is an error even when it is not looked up.
        assert!(FlexMap::root(&vector_sample()).is_ok());
        assert!(FlexMap::root_of_scalars(&vector_sample()).is_err());
    }

    /// `{"a": 7, "b": 1.5, "v": [61, 146, 91] (typed int16 vector)}` as flexbuffers'
    /// builder writes it (keys sorted).
    fn vector_sample() -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"a\0b\0v\0"); // keys at 0, 2, 4
        // typed vector int16: length 3 then 61, 146, 91 (at 6: len, 8: data)
        b.extend_from_slice(&[3, 0, 61, 0, 146, 0, 91, 0]);
        // keys vector (width 1): length 3 at 14, data at 15..18
        b.extend_from_slice(&[3, 15, 14, 13]);
        // map header (width 4): keys offset, key width, length; then values at 30
        let values_at = 18 + 12;
        let keys_slot = 18;
        b.extend_from_slice(&((keys_slot - 15) as u32).to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&3u32.to_le_bytes());
        assert_eq!(b.len(), values_at);
        b.extend_from_slice(&7i32.to_le_bytes());
        b.extend_from_slice(&1.5f32.to_bits().to_le_bytes());
        b.extend_from_slice(&((values_at + 8 - 8) as u32).to_le_bytes()); // to the vector data at 8
        b.extend_from_slice(&[T_INT << 2 | 2, T_FLOAT << 2 | 2, T_VECTOR_INT << 2 | 1]);
        // root: offset back to the values, packed type, width
        let root_at = b.len();
        b.push((root_at - values_at) as u8);
        b.extend_from_slice(&[T_MAP << 2 | 2, 1]);
        b
    }

    #[test]
    fn reads_a_map_with_a_vector() {
        let b = vector_sample();
        let m = FlexMap::root(&b).unwrap();
        assert_eq!(m.i32_or_zero("a").unwrap(), 7);
        assert_eq!(m.f32_or_zero("b").unwrap(), 1.5);
        assert_eq!(m.i32_or_zero("b").unwrap(), 1);
        assert_eq!(m.f32_or_zero("a").unwrap(), 7.0);
        assert_eq!(m.i32_vec_or_empty("v").unwrap(), vec![61, 146, 91]);
        assert_eq!(m.i32_or_zero("missing").unwrap(), 0);
        assert!(m.i32_vec_or_empty("missing").unwrap().is_empty());
        assert!(m.i32_or_zero("v").is_err());
    }

    #[test]
    fn every_truncation_and_corruption_of_a_vector_map_is_an_error_or_a_value() {
        let b = vector_sample();
        for n in 0..b.len() {
            let _ = FlexMap::root(&b[..n]).and_then(|m| m.i32_vec_or_empty("v"));
        }
        for i in 0..b.len() {
            for x in [0u8, 1, 0x7f, 0xff] {
                let mut c = b.clone();
                c[i] = x;
                if let Ok(m) = FlexMap::root(&c) {
                    for k in ["a", "b", "v"] {
                        let _ = m.i32_or_zero(k);
                        let _ = m.f32_or_zero(k);
                        let _ = m.i32_vec_or_empty(k);
                    }
                }
            }
        }
        assert!(FlexMap::root(&[]).is_err());
        assert!(FlexMap::root(&[1, 4, 1]).is_err());
    }
}
