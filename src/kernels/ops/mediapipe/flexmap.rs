//! A bounds-checked reader for the FlexBuffers maps that MediaPipe's custom ops keep as
//! their custom options (`flexbuffers::GetRoot(data, size).AsMap()`).
//!
//! Only what the options use is read: a root map, its scalar values (int, uint, float,
//! bool, their indirect forms, null) and integer vectors. Every offset and width is
//! checked against the buffer, so a malformed buffer is an error, never a read outside it.
//! A key the map lacks reads as `None`; the callers give it the value FlexBuffers' C++
//! reader gives a missing key (0).

use crate::error::{Error, Result};

// FlexBuffers type codes (`flexbuffers::Type`).
const NULL: u8 = 0;
const INT: u8 = 1;
const UINT: u8 = 2;
const FLOAT: u8 = 3;
const INDIRECT_INT: u8 = 6;
const INDIRECT_UINT: u8 = 7;
const INDIRECT_FLOAT: u8 = 8;
const MAP: u8 = 9;
const VECTOR: u8 = 10;
const VECTOR_INT: u8 = 11;
const VECTOR_UINT: u8 = 12;
const VECTOR_INT2: u8 = 16;
const VECTOR_UINT4: u8 = 23;
const BOOL: u8 = 26;
const VECTOR_BOOL: u8 = 36;

fn err(msg: impl core::fmt::Display) -> Error {
    Error::new(format!("malformed custom options: {msg}"))
}

/// An unsigned little-endian integer of `width` bytes at `pos`.
fn read_uint(buf: &[u8], pos: usize, width: usize) -> Result<u64> {
    if !matches!(width, 1 | 2 | 4 | 8) {
        return Err(err(format!("byte width {width}")));
    }
    let bytes = pos.checked_add(width).and_then(|end| buf.get(pos..end)).ok_or_else(|| err("value past the end"))?;
    let mut v = [0u8; 8];
    v[..width].copy_from_slice(bytes);
    Ok(u64::from_le_bytes(v))
}

/// A signed little-endian integer of `width` bytes at `pos`.
fn read_int(buf: &[u8], pos: usize, width: usize) -> Result<i64> {
    let u = read_uint(buf, pos, width)?;
    let shift = 64 - 8 * width as u32;
    Ok(((u << shift) as i64) >> shift)
}

/// A float of `width` bytes at `pos` (FlexBuffers writes 4- and 8-byte floats).
fn read_float(buf: &[u8], pos: usize, width: usize) -> Result<f64> {
    let u = read_uint(buf, pos, width)?;
    match width {
        4 => Ok(f64::from(f32::from_bits(u as u32))),
        8 => Ok(f64::from_bits(u)),
        _ => Err(err(format!("a float of {width} bytes"))),
    }
}

/// The position an offset slot of `width` bytes at `pos` points to (offsets go backwards).
fn indirect(buf: &[u8], pos: usize, width: usize) -> Result<usize> {
    let off = read_uint(buf, pos, width)?;
    usize::try_from(off).ok().and_then(|o| pos.checked_sub(o)).ok_or_else(|| err("offset before the buffer"))
}

/// One value: the slot at `pos` (`parent_width` bytes wide) and its packed type.
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
        FlexValue { buf, pos, parent_width, ty: packed >> 2, width: 1 << (packed & 3) }
    }

    /// The value as an integer (`AsInt64`): ints, uints, bools, floats (truncated) and null (0).
    pub fn as_i64(&self) -> Result<i64> {
        let (b, p, w) = (self.buf, self.pos, self.parent_width);
        match self.ty {
            NULL => Ok(0),
            INT => read_int(b, p, w),
            UINT | BOOL => read_uint(b, p, w).map(|u| u as i64),
            FLOAT => read_float(b, p, w).map(|f| f as i64),
            INDIRECT_INT => read_int(b, indirect(b, p, w)?, self.width),
            INDIRECT_UINT => read_uint(b, indirect(b, p, w)?, self.width).map(|u| u as i64),
            INDIRECT_FLOAT => read_float(b, indirect(b, p, w)?, self.width).map(|f| f as i64),
            t => Err(err(format!("type {t} where a number is expected"))),
        }
    }

    /// The value as an int32, an error when it does not fit.
    pub fn as_i32(&self) -> Result<i32> {
        let v = self.as_i64()?;
        i32::try_from(v).map_err(|_| err(format!("{v} does not fit an int32")))
    }

    /// The value as a float (`AsDouble`): floats, ints, uints, bools and null (0).
    pub fn as_f64(&self) -> Result<f64> {
        let (b, p, w) = (self.buf, self.pos, self.parent_width);
        match self.ty {
            FLOAT => read_float(b, p, w),
            INDIRECT_FLOAT => read_float(b, indirect(b, p, w)?, self.width),
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    /// The value as an int32 vector: a typed int/uint/bool vector, a fixed-length typed
    /// vector, or an untyped vector of numbers.
    pub fn as_i32_vec(&self) -> Result<Vec<i32>> {
        let b = self.buf;
        let to_i32 = |v: i64| i32::try_from(v).map_err(|_| err(format!("{v} does not fit an int32")));
        let read_n = |start: usize, n: usize, signed: bool| -> Result<Vec<i32>> {
            let w = self.width;
            (0..n)
                .map(|i| {
                    let at =
                        i.checked_mul(w).and_then(|o| start.checked_add(o)).ok_or_else(|| err("vector too long"))?;
                    to_i32(if signed { read_int(b, at, w)? } else { read_uint(b, at, w)? as i64 })
                })
                .collect()
        };
        match self.ty {
            VECTOR_INT | VECTOR_UINT | VECTOR_BOOL | VECTOR => {
                let start = indirect(b, self.pos, self.parent_width)?;
                let len = read_uint(b, start.checked_sub(self.width).ok_or_else(|| err("vector length"))?, self.width)?;
                let len = usize::try_from(len).map_err(|_| err("vector length"))?;
                // Each element takes at least one byte: a longer length cannot be in the buffer.
                if len > b.len() {
                    return Err(err(format!("vector length {len}")));
                }
                if self.ty != VECTOR {
                    return read_n(start, len, self.ty == VECTOR_INT);
                }
                let types = len
                    .checked_mul(self.width)
                    .and_then(|o| start.checked_add(o))
                    .ok_or_else(|| err("vector too long"))?;
                (0..len)
                    .map(|i| {
                        let packed = *b.get(types + i).ok_or_else(|| err("vector types past the end"))?;
                        to_i32(FlexValue::new(b, start + i * self.width, self.width, packed).as_i64()?)
                    })
                    .collect()
            }
            VECTOR_INT2..=VECTOR_UINT4 => {
                let k = (self.ty - VECTOR_INT2) as usize;
                let (n, kind) = (2 + k / 3, k % 3);
                if kind == 2 {
                    return Err(err("a float vector where integers are expected"));
                }
                read_n(indirect(b, self.pos, self.parent_width)?, n, kind == 0)
            }
            t => Err(err(format!("type {t} where an integer vector is expected"))),
        }
    }
}

/// A FlexBuffers map: its values (a vector) and its keys (a vector of key offsets).
#[derive(Debug)]
pub struct FlexMap<'a> {
    buf: &'a [u8],
    values: usize,
    width: usize,
    len: usize,
    keys: usize,
    key_width: usize,
    key_len: usize,
}

impl<'a> FlexMap<'a> {
    /// The map at the root of `buf`; an error when `buf` holds no map.
    pub fn parse(buf: &'a [u8]) -> Result<FlexMap<'a>> {
        let n = buf.len();
        if n < 3 {
            return Err(err(format!("{n} bytes hold no FlexBuffers root")));
        }
        let root_width = buf[n - 1] as usize;
        let root = FlexValue::new(
            buf,
            (n - 2).checked_sub(root_width).ok_or_else(|| err("root width"))?,
            root_width,
            buf[n - 2],
        );
        if root.ty != MAP {
            return Err(err(format!("the root is of type {}, not a map", root.ty)));
        }
        let w = root.width;
        let values = indirect(buf, root.pos, root.parent_width)?;
        let header = |k: usize| values.checked_sub(k * w).ok_or_else(|| err("map header before the buffer"));
        let len = read_uint(buf, header(1)?, w)? as usize;
        let key_width = read_uint(buf, header(2)?, w)? as usize;
        let keys = indirect(buf, header(3)?, w)?;
        let key_len =
            read_uint(buf, keys.checked_sub(key_width).ok_or_else(|| err("keys length"))?, key_width)? as usize;
        Ok(FlexMap { buf, values, width: w, len, keys, key_width, key_len })
    }

    /// The value under `key`, `None` when the map has no such key.
    pub fn get(&self, key: &str) -> Result<Option<FlexValue<'a>>> {
        let b = self.buf;
        for i in 0..self.len.min(self.key_len) {
            let slot =
                i.checked_mul(self.key_width).and_then(|o| self.keys.checked_add(o)).ok_or_else(|| err("keys"))?;
            let at = indirect(b, slot, self.key_width)?;
            let tail = b.get(at..).ok_or_else(|| err("key past the end"))?;
            let end = tail.iter().position(|&c| c == 0).ok_or_else(|| err("unterminated key"))?;
            if &tail[..end] != key.as_bytes() {
                continue;
            }
            let pos =
                i.checked_mul(self.width).and_then(|o| self.values.checked_add(o)).ok_or_else(|| err("values"))?;
            let types = self.len.checked_mul(self.width).and_then(|o| self.values.checked_add(o));
            let packed =
                *types.and_then(|t| b.get(t.checked_add(i)?)).ok_or_else(|| err("value types past the end"))?;
            return Ok(Some(FlexValue::new(b, pos, self.width, packed)));
        }
        Ok(None)
    }

    /// The int32 under `key`; 0 when it is missing (as FlexBuffers' null reference reads).
    pub fn i32_or_zero(&self, key: &str) -> Result<i32> {
        self.get(key)?.map_or(Ok(0), |v| v.as_i32())
    }

    /// The float under `key` (`AsFloat`); 0 when it is missing.
    pub fn f32_or_zero(&self, key: &str) -> Result<f32> {
        self.get(key)?.map_or(Ok(0.0), |v| v.as_f64().map(|f| f as f32))
    }

    /// The int32 vector under `key`; empty when it is missing.
    pub fn i32_vec_or_empty(&self, key: &str) -> Result<Vec<i32>> {
        self.get(key)?.map_or(Ok(Vec::new()), |v| v.as_i32_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{"a": 7, "b": 1.5, "v": [61, 146, 91] (typed int16 vector)}` as FlexBuffers'
    /// builder writes it (keys sorted).
    fn sample() -> Vec<u8> {
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
        b.extend_from_slice(&[INT << 2 | 2, FLOAT << 2 | 2, VECTOR_INT << 2 | 1]);
        // root: offset back to the values, packed type, width
        let root_at = b.len();
        b.push((root_at - values_at) as u8);
        b.extend_from_slice(&[MAP << 2 | 2, 1]);
        b
    }

    #[test]
    fn reads_a_map() {
        let b = sample();
        let m = FlexMap::parse(&b).unwrap();
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
    fn every_truncation_and_corruption_is_an_error_or_a_value() {
        let b = sample();
        for n in 0..b.len() {
            let _ = FlexMap::parse(&b[..n]).and_then(|m| m.i32_vec_or_empty("v"));
        }
        for i in 0..b.len() {
            for x in [0u8, 1, 0x7f, 0xff] {
                let mut c = b.clone();
                c[i] = x;
                if let Ok(m) = FlexMap::parse(&c) {
                    for k in ["a", "b", "v"] {
                        let _ = m.i32_or_zero(k);
                        let _ = m.f32_or_zero(k);
                        let _ = m.i32_vec_or_empty(k);
                    }
                }
            }
        }
        assert!(FlexMap::parse(&[]).is_err());
        assert!(FlexMap::parse(&[1, 4, 1]).is_err());
    }
}
