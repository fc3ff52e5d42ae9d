//! A read-only, private memory mapping of a whole file (what `TfLiteModelCreateFromFile`
//! loads through, as TFLite's MMAPAllocation does).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// A mapped file; unmapped on drop. An empty file maps to an empty slice.
pub struct Mmap {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Mmap {
    /// Maps `path` read-only.
    pub fn open(path: &Path) -> io::Result<Mmap> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
        }
        let len = usize::try_from(meta.len()).map_err(|_| io::Error::other("file too large"))?;
        if len == 0 {
            return Ok(Mmap { ptr: core::ptr::null_mut(), len: 0 });
        }
        // SAFETY: mapping a file we opened read-only, PROT_READ + MAP_PRIVATE; the result is
        // checked against MAP_FAILED. The mapping stays valid after `file` is closed.
        let ptr =
            unsafe { libc::mmap(core::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mmap { ptr, len })
    }

    /// The mapped bytes.
    pub fn as_slice(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr` is a live mapping of `len` readable bytes until drop.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmapping exactly the region mapped in `open`, once.
            unsafe { libc::munmap(self.ptr, self.len) };
        }
    }
}
