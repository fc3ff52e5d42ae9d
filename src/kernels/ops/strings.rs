//! TFLite's string tensor layout (`string_util.h`): an int32 count `n`, then `n + 1` int32
//! byte offsets from the start of the buffer (string `i` is `[offset[i], offset[i + 1])`,
//! the last offset is the buffer's length), then the bytes of the strings.

use crate::error::{Error, Result};

/// The strings of a string tensor's buffer, checked: every offset lies inside the buffer
/// and none goes backwards.
pub fn read_strings(raw: &[u8]) -> Result<Vec<&[u8]>> {
    let word = |i: usize| -> Result<usize> {
        let b = raw
            .get(i * 4..i * 4 + 4)
            .ok_or_else(|| Error::new(format!("string tensor of {} bytes is truncated", raw.len())))?;
        let v = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        usize::try_from(v).map_err(|_| Error::new(format!("string tensor holds a negative count or offset {v}")))
    };
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let n = word(0)?;
    let header = n.checked_add(2).and_then(|w| w.checked_mul(4)).filter(|&h| h <= raw.len());
    let Some(header) = header else {
        return Err(Error::new(format!("string tensor of {} bytes cannot hold {n} strings", raw.len())));
    };
    let mut out = Vec::with_capacity(n);
    let mut start = word(1)?;
    if start < header {
        return Err(Error::new("string tensor offsets point into its header"));
    }
    for i in 0..n {
        let end = word(i + 2)?;
        if end < start || end > raw.len() {
            return Err(Error::new(format!("string {i} of a string tensor lies outside its buffer")));
        }
        out.push(&raw[start..end]);
        start = end;
    }
    Ok(out)
}

/// The buffer of a string tensor holding `strings` (TFLite's `DynamicBuffer::WriteToTensor`
/// layout); an error if it would exceed what int32 offsets can address.
pub fn write_strings<S: AsRef<[u8]>>(strings: &[S]) -> Result<Vec<u8>> {
    let n = strings.len();
    let header = (n + 2) * 4;
    let total = strings.iter().try_fold(header, |acc, s| acc.checked_add(s.as_ref().len()));
    let total = total.filter(|&t| i32::try_from(t).is_ok()).ok_or_else(|| Error::new("strings too large"))?;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(n as i32).to_le_bytes());
    let mut offset = header;
    for s in strings {
        out.extend_from_slice(&(offset as i32).to_le_bytes());
        offset += s.as_ref().len();
    }
    out.extend_from_slice(&(offset as i32).to_le_bytes());
    for s in strings {
        out.extend_from_slice(s.as_ref());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let buf = write_strings(&["ab", "", "xyz"]).unwrap();
        assert_eq!(&buf[..4], &3i32.to_le_bytes());
        assert_eq!(&buf[4..8], &20i32.to_le_bytes());
        assert_eq!(buf.len(), 20 + 5);
        assert_eq!(read_strings(&buf).unwrap(), vec![&b"ab"[..], b"", b"xyz"]);
        assert_eq!(read_strings(&write_strings::<&str>(&[]).unwrap()).unwrap(), Vec::<&[u8]>::new());
        assert!(read_strings(&[]).unwrap().is_empty());
    }

    #[test]
    fn malformed_buffers_are_errors() {
        let mut buf = write_strings(&["ab", "c"]).unwrap();
        assert!(read_strings(&buf[..10]).is_err());
        buf[8..12].copy_from_slice(&100i32.to_le_bytes());
        assert!(read_strings(&buf).is_err());
        assert!(read_strings(&(-1i32).to_le_bytes()).is_err());
        let mut buf = write_strings(&["ab"]).unwrap();
        buf[4..8].copy_from_slice(&0i32.to_le_bytes());
        assert!(read_strings(&buf).is_err());
    }
}
