//! Bad input: mutated and truncated versions of EVERY corpus model (the C API models, the
//! whole-model corpus including the multi-megabyte ones, and the single-op models) go
//! through create → allocate → invoke via the C API. Each must be rejected with a message
//! or run; a crash, abort or hang kills the test, and a panic inside the library (caught at
//! the ABI boundary, so the caller only sees an error) is recorded by a panic hook and fails
//! it too.
//!
//! The mutations are aimed at the flatbuffer's structure, found by walking the unmutated
//! model: tensor/operator/subgraph indices, shapes, enum and option fields, vtable entries,
//! offsets and vector lengths, the contents of small integer constant tensors (shapes, axes,
//! paddings, permutations), random bytes outside the large weight buffers, random bytes
//! anywhere and truncations. Everything is seeded: a model's mutation sequence depends only
//! on its file name, so `MALFORMED_ONLY=<substring>` reproduces a case in isolation and
//! `MALFORMED_TRACE=1` prints each case before it runs (to find a crashing one) and the
//! messages reported, `MALFORMED_CASE=<k>` runs only case k of each model, and
//! `MALFORMED_SCALE=<x>` multiplies the number of mutations per model (deeper runs).
//!
//! Bounds: Invoke runs under a watchdog that calls `TfLiteInterpreterCancel` once it has
//! run for `CANCEL_SMALL_AFTER` / `CANCEL_AFTER` (a mutated WHILE may loop forever, as in
//! TFLite). Invoke is skipped, and counted, only when the input tensors are over
//! `MAX_INVOKE_INPUT_BYTES` or all the primary subgraph's tensors together are over twice
//! the unmutated model's total and over `MIN_INVOKE_TENSOR_LIMIT` (a mutated shape asking
//! for a lot of memory is legal, and allocation is exercised; touching hundreds of
//! megabytes per case is not affordable). A case that takes longer than `HARD_LIMIT` (a
//! hang that cancellation cannot stop) ends the process with its name.

mod common;
use common::*;
use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

unsafe extern "C" {
    fn TfLiteInterpreterOptionsAddDelegate(o: *mut Opaque, d: *mut c_void);
    fn TfLiteInterpreterOptionsEnableCancellation(o: *mut Opaque, enable: bool) -> Status;
    fn TfLiteInterpreterCancel(i: *const Opaque) -> Status;
    fn TfLiteInterpreterGetTensor(i: *const Opaque, index: c_int) -> *mut Opaque;
    fn vsnprintf(buf: *mut c_char, n: usize, fmt: *const c_char, args: *mut c_void) -> c_int;
}

const KTFLITE_CANCELLED: Status = 8;
/// When the watchdog cancels an invoke: the small models' invokes take microseconds, the
/// large ones' tens of milliseconds.
const CANCEL_SMALL_AFTER: Duration = Duration::from_millis(300);
const CANCEL_AFTER: Duration = Duration::from_millis(1000);
const HARD_LIMIT: Duration = Duration::from_secs(90);
const MAX_INVOKE_INPUT_BYTES: usize = 64 << 20;
const MIN_INVOKE_TENSOR_LIMIT: usize = 32 << 20;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len())]
    }
}

// ---------------------------------------------------------------------------------------
// The structure map: where a model's interesting bytes are
// ---------------------------------------------------------------------------------------

/// Byte positions in an unmutated (verified) model, by what they hold.
#[derive(Default)]
struct Map {
    /// i32 index slots and the size of what they index (tensors, buffers, opcodes, ...).
    indices: Vec<(usize, u32)>,
    /// i32 dimensions (shape, shape_signature).
    dims: Vec<usize>,
    /// Scalar table fields (types, enums, option fields, versions, quantization values).
    scalars: Vec<usize>,
    /// u16 vtable entries (including the vtable sizes).
    vtables: Vec<usize>,
    /// u32 offsets (root, fields, vector elements), vector lengths and table soffsets.
    offsets: Vec<usize>,
    /// i32 elements of small integer constant tensors (shapes, axes, paddings, ...).
    params: Vec<usize>,
    /// Operator codes: positions of (deprecated_builtin_code: i8, builtin_code: i32).
    opcodes: Vec<(Option<usize>, Option<usize>)>,
    /// The builtin codes the model uses.
    used_codes: Vec<i32>,
    /// Operators' builtin_options_type (u8) positions, and the option types used.
    option_types: Vec<usize>,
    used_option_types: Vec<u8>,
    /// Byte ranges outside the large weight buffers.
    structural: Vec<(usize, usize)>,
    structural_len: usize,
}

fn rd32(b: &[u8], p: usize) -> Option<u32> {
    b.get(p..p + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
fn rd16(b: &[u8], p: usize) -> Option<u16> {
    b.get(p..p + 2).map(|s| u16::from_le_bytes([s[0], s[1]]))
}

struct Walker<'a> {
    b: &'a [u8],
    map: Map,
    /// Large data regions (start, end) to leave out of the structural ranges.
    data: Vec<(usize, usize)>,
    /// (buffer index → tensor types reading it), for the integer parameters.
    int_buffers: Vec<bool>,
}

impl<'a> Walker<'a> {
    /// Records a table's soffset and vtable entries; returns its present fields
    /// (vtable offset → absolute position).
    fn table(&mut self, loc: usize) -> Vec<(u16, usize)> {
        let Some(so) = rd32(self.b, loc) else { return vec![] };
        self.map.offsets.push(loc);
        let vt = (loc as i64 - so as i32 as i64) as usize;
        let Some(vt_len) = rd16(self.b, vt) else { return vec![] };
        let mut fields = Vec::new();
        for k in (0..vt_len as usize).step_by(2) {
            self.map.vtables.push(vt + k);
            if k >= 4
                && let Some(f) = rd16(self.b, vt + k).filter(|&f| f != 0)
            {
                fields.push((k as u16, loc + f as usize));
            }
        }
        fields
    }

    /// Follows an offset field to a vector: records the field and the length; returns the
    /// element start and count.
    fn vector(&mut self, field: usize) -> Option<(usize, usize)> {
        self.map.offsets.push(field);
        let v = field + rd32(self.b, field)? as usize;
        self.map.offsets.push(v);
        Some((v + 4, rd32(self.b, v)? as usize))
    }

    /// A vector of tables: records each element offset; returns the table locations.
    fn tables(&mut self, field: usize) -> Vec<usize> {
        let Some((start, n)) = self.vector(field) else { return vec![] };
        (0..n)
            .filter_map(|i| {
                let p = start + 4 * i;
                self.map.offsets.push(p);
                Some(p + rd32(self.b, p)? as usize)
            })
            .collect()
    }

    fn i32s(&mut self, field: usize) -> Vec<usize> {
        let Some((start, n)) = self.vector(field) else { return vec![] };
        (0..n).map(|i| start + 4 * i).collect()
    }

    fn indices(&mut self, field: usize, bound: u32) {
        for p in self.i32s(field) {
            self.map.indices.push((p, bound));
        }
    }

    /// Fields not named by the caller are scalars; a nested table of unknown layout (an
    /// options table) has all its fields treated as scalars.
    fn generic(&mut self, loc: usize) {
        for (_, p) in self.table(loc) {
            self.map.scalars.push(p);
        }
    }

    fn walk(mut self, model: &tensorflowlite_c::model::fb::Model<'_>) -> Map {
        use tensorflowlite_c::model::fb;
        let b = self.b;
        self.map.offsets.push(0);
        let root = rd32(b, 0).unwrap() as usize;
        let nbuf = model.buffers().map_or(0, |v| v.len()) as u32;
        let ncodes = model.operator_codes().map_or(0, |v| v.len()) as u32;
        let nsg = model.subgraphs().map_or(0, |v| v.len()) as u32;
        self.int_buffers = vec![false; nbuf as usize];
        for sg in model.subgraphs().into_iter().flatten() {
            for t in sg.tensors().into_iter().flatten() {
                if matches!(t.type_(), fb::TensorType::INT32 | fb::TensorType::INT64)
                    && let Some(x) = self.int_buffers.get_mut(t.buffer() as usize)
                {
                    *x = true;
                }
            }
        }
        for c in model.operator_codes().into_iter().flatten() {
            self.map.used_codes.push(c.builtin_code().0.max(i32::from(c.deprecated_builtin_code())));
        }
        for sg in model.subgraphs().into_iter().flatten() {
            for op in sg.operators().into_iter().flatten() {
                self.map.used_option_types.push(op.builtin_options_type().0);
            }
        }
        let mut sub_tensors = Vec::new();
        for (voff, p) in self.table(root) {
            match voff {
                fb::Model::VT_OPERATOR_CODES => {
                    for c in self.tables(p) {
                        let mut code = (None, None);
                        for (voff, p) in self.table(c) {
                            match voff {
                                fb::OperatorCode::VT_CUSTOM_CODE => self.map.offsets.push(p),
                                fb::OperatorCode::VT_DEPRECATED_BUILTIN_CODE => code.0 = Some(p),
                                fb::OperatorCode::VT_BUILTIN_CODE => code.1 = Some(p),
                                _ => self.map.scalars.push(p),
                            }
                        }
                        self.map.opcodes.push(code);
                    }
                }
                fb::Model::VT_SUBGRAPHS => {
                    for sg in self.tables(p) {
                        let nt = self.subgraph(sg, nbuf, ncodes, nsg);
                        sub_tensors.push(nt);
                    }
                }
                fb::Model::VT_BUFFERS => {
                    for (bi, buf) in self.tables(p).into_iter().enumerate() {
                        self.buffer(bi, buf);
                    }
                }
                fb::Model::VT_METADATA_BUFFER => self.indices(p, nbuf),
                fb::Model::VT_METADATA => {
                    for md in self.tables(p) {
                        for (voff, p) in self.table(md) {
                            if voff == fb::Metadata::VT_BUFFER {
                                self.map.indices.push((p, nbuf));
                            } else {
                                self.map.offsets.push(p);
                            }
                        }
                    }
                }
                fb::Model::VT_SIGNATURE_DEFS => {
                    for sd in self.tables(p) {
                        for (voff, p) in self.table(sd) {
                            match voff {
                                fb::SignatureDef::VT_INPUTS | fb::SignatureDef::VT_OUTPUTS => {
                                    for tm in self.tables(p) {
                                        for (voff, p) in self.table(tm) {
                                            if voff == fb::TensorMap::VT_TENSOR_INDEX {
                                                let nt = sub_tensors.first().copied().unwrap_or(1);
                                                self.map.indices.push((p, nt));
                                            } else {
                                                self.map.offsets.push(p);
                                            }
                                        }
                                    }
                                }
                                fb::SignatureDef::VT_SUBGRAPH_INDEX => self.map.indices.push((p, nsg)),
                                _ => self.map.offsets.push(p),
                            }
                        }
                    }
                }
                fb::Model::VT_DESCRIPTION => self.map.offsets.push(p),
                _ => self.map.scalars.push(p),
            }
        }
        // Structural ranges: the file minus the large data regions.
        let mut data = std::mem::take(&mut self.data);
        data.sort_unstable();
        let mut at = 0usize;
        for (s, e) in data {
            if s > at {
                self.map.structural.push((at, s));
            }
            at = at.max(e);
        }
        if at < b.len() {
            self.map.structural.push((at, b.len()));
        }
        self.map.structural_len = self.map.structural.iter().map(|(s, e)| e - s).sum();
        self.map
    }

    fn subgraph(&mut self, loc: usize, nbuf: u32, ncodes: u32, nsg: u32) -> u32 {
        use tensorflowlite_c::model::fb;
        let fields = self.table(loc);
        let nt = fields
            .iter()
            .find(|(v, _)| *v == fb::SubGraph::VT_TENSORS)
            .and_then(|&(_, p)| rd32(self.b, p + rd32(self.b, p)? as usize))
            .unwrap_or(0);
        for (voff, p) in fields {
            match voff {
                fb::SubGraph::VT_TENSORS => {
                    for t in self.tables(p) {
                        self.tensor(t, nbuf);
                    }
                }
                fb::SubGraph::VT_INPUTS | fb::SubGraph::VT_OUTPUTS => self.indices(p, nt),
                fb::SubGraph::VT_OPERATORS => {
                    for op in self.tables(p) {
                        self.operator(op, nt, ncodes, nsg);
                    }
                }
                fb::SubGraph::VT_NAME => self.map.offsets.push(p),
                _ => self.map.scalars.push(p),
            }
        }
        nt
    }

    fn tensor(&mut self, loc: usize, nbuf: u32) {
        use tensorflowlite_c::model::fb;
        for (voff, p) in self.table(loc) {
            match voff {
                fb::Tensor::VT_SHAPE | fb::Tensor::VT_SHAPE_SIGNATURE => {
                    let dims = self.i32s(p);
                    self.map.dims.extend(dims);
                }
                fb::Tensor::VT_BUFFER => self.map.indices.push((p, nbuf)),
                fb::Tensor::VT_QUANTIZATION => {
                    self.map.offsets.push(p);
                    let Some(q) = rd32(self.b, p).map(|o| p + o as usize) else { continue };
                    for (voff, p) in self.table(q) {
                        match voff {
                            fb::QuantizationParameters::VT_MIN
                            | fb::QuantizationParameters::VT_MAX
                            | fb::QuantizationParameters::VT_SCALE
                            | fb::QuantizationParameters::VT_ZERO_POINT => {
                                let Some((start, n)) = self.vector(p) else { continue };
                                let w = if voff == fb::QuantizationParameters::VT_ZERO_POINT { 8 } else { 4 };
                                // Per-channel vectors can be long: a few elements suffice.
                                for i in 0..n.min(8) {
                                    self.map.scalars.push(start + w * i);
                                }
                            }
                            fb::QuantizationParameters::VT_DETAILS => self.map.offsets.push(p),
                            _ => self.map.scalars.push(p),
                        }
                    }
                }
                fb::Tensor::VT_NAME | fb::Tensor::VT_SPARSITY | fb::Tensor::VT_VARIANT_TENSORS => {
                    self.map.offsets.push(p)
                }
                _ => self.map.scalars.push(p),
            }
        }
    }

    fn operator(&mut self, loc: usize, nt: u32, ncodes: u32, _nsg: u32) {
        use tensorflowlite_c::model::fb;
        for (voff, p) in self.table(loc) {
            match voff {
                fb::Operator::VT_OPCODE_INDEX => self.map.indices.push((p, ncodes)),
                fb::Operator::VT_INPUTS | fb::Operator::VT_OUTPUTS | fb::Operator::VT_INTERMEDIATES => {
                    self.indices(p, nt)
                }
                fb::Operator::VT_BUILTIN_OPTIONS | fb::Operator::VT_BUILTIN_OPTIONS_2 => {
                    self.map.offsets.push(p);
                    if let Some(o) = rd32(self.b, p) {
                        self.generic(p + o as usize);
                    }
                }
                fb::Operator::VT_CUSTOM_OPTIONS => {
                    if let Some((start, n)) = self.vector(p) {
                        self.map.scalars.extend(start..start + n.min(64));
                        if n > 64 {
                            self.data.push((start + 64, start + n));
                        }
                    }
                }
                fb::Operator::VT_MUTATING_VARIABLE_INPUTS => self.map.offsets.push(p),
                fb::Operator::VT_BUILTIN_OPTIONS_TYPE => self.map.option_types.push(p),
                _ => self.map.scalars.push(p),
            }
        }
    }

    fn buffer(&mut self, index: usize, loc: usize) {
        use tensorflowlite_c::model::fb;
        for (voff, p) in self.table(loc) {
            if voff == fb::Buffer::VT_DATA {
                let Some((start, n)) = self.vector(p) else { continue };
                if self.int_buffers.get(index).copied().unwrap_or(false) && n <= 4096 {
                    self.map.params.extend((0..n / 4).map(|i| start + 4 * i));
                }
                if n > 64 {
                    self.data.push((start, start + n));
                }
            } else {
                if voff == fb::Buffer::VT_OFFSET {
                    let off = self.b.get(p..p + 8).map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap())) as usize;
                    let size =
                        self.b.get(p + 8..p + 16).map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap())) as usize;
                    if off > 1 && size > 64 {
                        self.data.push((off, off.saturating_add(size).min(self.b.len())));
                    }
                }
                self.map.scalars.push(p);
            }
        }
    }
}

fn structure(bytes: &[u8]) -> Map {
    let model = tensorflowlite_c::model::fb::root_as_model(bytes).expect("a corpus model verifies");
    Walker { b: bytes, map: Map::default(), data: vec![], int_buffers: vec![] }.walk(&model)
}

// ---------------------------------------------------------------------------------------
// Mutations
// ---------------------------------------------------------------------------------------

fn put32(m: &mut [u8], p: usize, v: u32) {
    if p + 4 <= m.len() {
        m[p..p + 4].copy_from_slice(&v.to_le_bytes());
    }
}
fn get32(m: &[u8], p: usize) -> u32 {
    rd32(m, p).unwrap_or(0)
}

/// A structural position: inside the non-weight ranges, weighted by their lengths.
fn structural_pos(rng: &mut Rng, map: &Map) -> usize {
    let mut k = rng.below(map.structural_len);
    for &(s, e) in &map.structural {
        if k < e - s {
            return s + k;
        }
        k -= e - s;
    }
    0
}

/// One mutation of `m` in place; returns a short label.
fn mutate_once(rng: &mut Rng, map: &Map, m: &mut Vec<u8>) -> &'static str {
    let len = m.len();
    loop {
        match rng.below(24) {
            20..=21 if !map.opcodes.is_empty() => {
                // Another operator's kernel on this operator's tensors and options.
                let (dep, code) = map.opcodes[rng.below(map.opcodes.len())];
                let r = rng.below(4);
                let v = match r {
                    0 | 1 => rng.pick(&map.used_codes),
                    2 => rng.below(210) as i32,
                    _ => rng.pick(&[-1, 210, 1000, i32::MAX, 32 /* CUSTOM */, 127, 128]),
                };
                if let Some(p) = code {
                    put32(m, p, v as u32);
                }
                if let Some(p) = dep.filter(|&p| p < len) {
                    m[p] = v.clamp(0, 127) as u8;
                }
                return "opcode";
            }
            22 if !map.option_types.is_empty() => {
                // Options read as another options table.
                let p = map.option_types[rng.below(map.option_types.len())];
                let v = if rng.below(2) == 0 { rng.pick(&map.used_option_types) } else { rng.below(256) as u8 };
                if p < len {
                    m[p] = v;
                }
                return "options-type";
            }
            23 if map.indices.len() > 1 => {
                // Two index slots swapped (operands, graph inputs/outputs).
                let (a, _) = map.indices[rng.below(map.indices.len())];
                let (b, _) = map.indices[rng.below(map.indices.len())];
                let (va, vb) = (get32(m, a), get32(m, b));
                put32(m, a, vb);
                put32(m, b, va);
                return "swap";
            }
            0..=3 if !map.indices.is_empty() => {
                let (p, n) = map.indices[rng.below(map.indices.len())];
                let r = rng.next();
                let orig = get32(m, p);
                let v = rng.pick(&[
                    n.wrapping_sub(1),
                    n,
                    n + 1,
                    0,
                    u32::MAX,
                    u32::MAX - 1,
                    0x7FFF_FFFF,
                    orig.wrapping_add(1),
                    orig ^ 0x8000_0000,
                    r as u32 % (n + 2),
                ]);
                put32(m, p, v);
                return "index";
            }
            4..=5 if !map.dims.is_empty() => {
                let p = map.dims[rng.below(map.dims.len())];
                let orig = get32(m, p) as i32;
                let v = rng.pick(&[
                    0,
                    -1,
                    -2,
                    1,
                    2,
                    3,
                    1 << 16,
                    1 << 24,
                    i32::MAX,
                    i32::MIN,
                    orig.wrapping_add(1),
                    orig.wrapping_sub(1),
                    orig.wrapping_mul(2),
                    orig.wrapping_mul(1000),
                ]);
                put32(m, p, v as u32);
                return "dim";
            }
            6..=8 if !map.scalars.is_empty() => {
                let p = map.scalars[rng.below(map.scalars.len())];
                let (r, small) = (rng.next(), rng.below(64) as u32);
                match rng.below(4) {
                    0 => {
                        if p < len {
                            m[p] = rng.pick(&[0u8, 1, 2, 3, 4, 5, 6, 0x7F, 0x80, 0xFF, r as u8, m[p].wrapping_add(1)]);
                        }
                    }
                    1 => {
                        if p < len {
                            m[p] ^= 1 << rng.below(8);
                        }
                    }
                    _ => {
                        let orig = get32(m, p);
                        let v = rng.pick(&[
                            0,
                            1,
                            2,
                            3,
                            u32::MAX,
                            0x7FFF_FFFF,
                            0x8000_0000,
                            0x7F80_0000, /* inf */
                            0x7FC0_0000, /* nan */
                            0xFF80_0000,
                            orig.wrapping_add(1),
                            orig.wrapping_neg(),
                            small.wrapping_sub(8),
                            r as u32,
                        ]);
                        put32(m, p, v);
                    }
                }
                return "field";
            }
            9..=10 if !map.vtables.is_empty() => {
                let p = map.vtables[rng.below(map.vtables.len())];
                let r = rng.next();
                if let Some(orig) = rd16(m, p) {
                    let v = rng.pick(&[
                        0u16,
                        2,
                        4,
                        orig.wrapping_add(2),
                        orig.wrapping_add(4),
                        orig.wrapping_sub(2),
                        orig.wrapping_sub(4),
                        0xFFFF,
                        0x8000,
                        orig.wrapping_mul(2),
                        r as u16,
                    ]);
                    m[p..p + 2].copy_from_slice(&v.to_le_bytes());
                }
                return "vtable";
            }
            11..=12 if !map.offsets.is_empty() => {
                let p = map.offsets[rng.below(map.offsets.len())];
                let orig = get32(m, p);
                let v = rng.pick(&[
                    0,
                    1,
                    4,
                    orig.wrapping_add(4),
                    orig.wrapping_sub(4),
                    orig.wrapping_add(8),
                    orig.wrapping_add(1),
                    orig.wrapping_mul(2),
                    orig / 2,
                    len as u32,
                    (len as u32).wrapping_sub(p as u32),
                    u32::MAX,
                    0x7FFF_FFFF,
                    0x8000_0000,
                    0xFFFF,
                ]);
                put32(m, p, v);
                return "offset";
            }
            13..=14 if !map.params.is_empty() => {
                let p = map.params[rng.below(map.params.len())];
                let orig = get32(m, p) as i32;
                let v = rng.pick(&[
                    0,
                    -1,
                    -2,
                    1,
                    2,
                    3,
                    4,
                    5,
                    6,
                    7,
                    i32::MAX,
                    i32::MIN,
                    1 << 20,
                    1 << 30,
                    100,
                    orig.wrapping_add(1),
                    orig.wrapping_sub(1),
                    orig.wrapping_mul(4),
                    orig.wrapping_neg(),
                ]);
                put32(m, p, v as u32);
                return "param";
            }
            15..=16 if map.structural_len > 0 => {
                for _ in 0..1 + rng.below(3) {
                    let p = structural_pos(rng, map);
                    if rng.below(2) == 0 {
                        m[p] ^= 1 << rng.below(8);
                    } else {
                        m[p] = rng.next() as u8;
                    }
                }
                return "byte";
            }
            17 => {
                // Copy a chunk of structure over another one (duplicated offsets/tables).
                if map.structural_len > 16 {
                    let (a, b) = (structural_pos(rng, map), structural_pos(rng, map));
                    let n = (4 << rng.below(3)).min(len - a.max(b));
                    let chunk = m[a..a + n].to_vec();
                    m[b..b + n].copy_from_slice(&chunk);
                }
                return "splice";
            }
            18 => {
                let p = rng.below(len);
                m[p] ^= 1 << rng.below(8);
                return "anywhere";
            }
            19 => {
                let cut = match rng.below(3) {
                    0 => rng.below(len),
                    1 => len - 1 - rng.below(len.min(1024)),
                    _ => structural_pos(rng, map),
                };
                m.truncate(cut);
                return "truncate";
            }
            _ => {}
        }
    }
}

fn mutate(rng: &mut Rng, map: &Map, base: &[u8]) -> (Vec<u8>, String) {
    let mut m = base.to_vec();
    let mut label = String::new();
    let n = [1, 1, 1, 2, 3][rng.below(5)];
    for _ in 0..n {
        if m.len() < base.len() {
            break; // truncated: further positions may be gone
        }
        if !label.is_empty() {
            label.push('+');
        }
        label.push_str(mutate_once(rng, map, &mut m));
    }
    (m, label)
}

// ---------------------------------------------------------------------------------------
// Running a case under a watchdog
// ---------------------------------------------------------------------------------------

/// What the watchdog watches: the interpreter being invoked (as an address) and when its
/// invoke started, and the case running.
struct Watch {
    interp: usize,
    invoke_start: Option<Instant>,
    case: String,
    case_start: Instant,
    cancel_after: Duration,
    cancels: usize,
}

static WATCH: Mutex<Option<Watch>> = Mutex::new(None);
static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());
static REPORTED: AtomicUsize = AtomicUsize::new(0);
static TRACE: AtomicBool = AtomicBool::new(false);

fn watch<R>(f: impl FnOnce(&mut Watch) -> R) -> R {
    let mut g = WATCH.lock().unwrap_or_else(|e| e.into_inner());
    f(g.as_mut().expect("watch installed"))
}

fn start_watchdog() {
    *WATCH.lock().unwrap() = Some(Watch {
        interp: 0,
        invoke_start: None,
        case: String::new(),
        case_start: Instant::now(),
        cancel_after: CANCEL_AFTER,
        cancels: 0,
    });
    // Panics inside the library are caught at the ABI boundary and become error statuses;
    // record them here so that they fail the test.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let case = WATCH.lock().map(|w| w.as_ref().map(|w| w.case.clone()).unwrap_or_default()).unwrap_or_default();
        PANICS.lock().unwrap_or_else(|e| e.into_inner()).push(format!("{case}: {info}"));
        previous(info);
    }));
    std::thread::spawn(|| {
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let mut g = WATCH.lock().unwrap_or_else(|e| e.into_inner());
            let Some(w) = g.as_mut() else { continue };
            if w.case_start.elapsed() > HARD_LIMIT && !w.case.is_empty() {
                eprintln!(
                    "HANG: case {} has run for {:?} (cancellation did not stop it)",
                    w.case,
                    w.case_start.elapsed()
                );
                std::process::exit(3);
            }
            if w.interp != 0 && w.invoke_start.is_some_and(|s| s.elapsed() > w.cancel_after) {
                // SAFETY: the main thread clears `interp` under this lock before it deletes
                // the interpreter, so it is live; Cancel only sets an atomic flag. Invoke
                // clears the flag when it starts a new run, so keep setting it.
                unsafe { TfLiteInterpreterCancel(w.interp as *const Opaque) };
                w.cancels += 1;
            }
        }
    });
}

unsafe extern "C" fn reporter(user: *mut c_void, _fmt: *const c_char, _args: *mut c_void) {
    REPORTED.fetch_add(1, Ordering::Relaxed);
    if TRACE.load(Ordering::Relaxed) && !_fmt.is_null() {
        let mut buf = [0 as c_char; 512];
        // SAFETY: the library passes a NUL-terminated format string and its arguments (a
        // `va_list`, which as a parameter is passed as a pointer); vsnprintf writes at most
        // `buf.len()` bytes including the NUL.
        unsafe { vsnprintf(buf.as_mut_ptr(), buf.len(), _fmt, _args) };
        // SAFETY: vsnprintf NUL-terminated `buf`.
        eprintln!("  reported: {}", unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy());
    }
    // SAFETY: forwarded to the counting reporter with the same user data.
    unsafe { counting_reporter(user, _fmt, _args) };
}

#[derive(Default, Debug)]
struct Tally {
    cases: usize,
    rejected_at_create: usize,
    rejected_later: usize,
    ran: usize,
    cancelled: usize,
    skipped_big: usize,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.cases += o.cases;
        self.rejected_at_create += o.rejected_at_create;
        self.rejected_later += o.rejected_later;
        self.ran += o.ran;
        self.cancelled += o.cancelled;
        self.skipped_big += o.skipped_big;
    }
}

/// Fills the input tensors with deterministic data: small floats, small integers
/// (so that index inputs are sometimes valid) or random bytes.
unsafe fn fill_inputs(interp: *mut Opaque, rng: &mut Rng) {
    // SAFETY: a live, allocated interpreter; each input's data holds ByteSize bytes.
    unsafe {
        for i in 0..TfLiteInterpreterGetInputTensorCount(interp) {
            let t = TfLiteInterpreterGetInputTensor(interp, i);
            let (p, n) = (TfLiteTensorData(t) as *mut u8, TfLiteTensorByteSize(t));
            if p.is_null() || n == 0 {
                continue;
            }
            let d = std::slice::from_raw_parts_mut(p, n);
            match TfLiteTensorType(t) {
                1 => {
                    for c in d.chunks_exact_mut(4) {
                        c.copy_from_slice(&((rng.below(2001) as f32 - 1000.0) / 500.0).to_le_bytes());
                    }
                }
                2 => {
                    let big = rng.below(4) == 0;
                    for c in d.chunks_exact_mut(4) {
                        let v = if big { rng.next() as u32 } else { rng.below(4) as u32 };
                        c.copy_from_slice(&v.to_le_bytes());
                    }
                }
                _ => d.iter_mut().for_each(|b| *b = rng.next() as u8),
            }
        }
    }
}

thread_local! {
    /// The GPU delegate to apply in `exercise` (NULL: none).
    static GPU: std::cell::Cell<*mut c_void> = const { std::cell::Cell::new(std::ptr::null_mut()) };
}

/// create → allocate → invoke (twice for small models); returns (created, reached Invoke).
/// Invoke is skipped when the tensors total more than `tensor_limit` bytes. Returns the
/// tensors' total when the model was allocated.
fn exercise(bytes: &[u8], rng: &mut Rng, tally: &mut Tally, invokes: usize, tensor_limit: usize) -> Option<usize> {
    let mut messages = 0usize;
    let user = &mut messages as *mut usize as *mut c_void;
    tally.cases += 1;
    // SAFETY: C API calls with valid arguments; `bytes` outlives the model and interpreter;
    // the watchdog only sees the interpreter between the `interp` store and clear below.
    unsafe {
        let model = TfLiteModelCreateWithErrorReporter(bytes.as_ptr().cast(), bytes.len(), Some(reporter), user);
        if model.is_null() {
            assert!(messages > 0, "model rejected without a message");
            tally.rejected_at_create += 1;
            return None;
        }
        let opts = TfLiteInterpreterOptionsCreate();
        TfLiteInterpreterOptionsSetErrorReporter(opts, Some(reporter), user);
        assert_eq!(TfLiteInterpreterOptionsEnableCancellation(opts, true), OK);
        let gpu = GPU.with(|g| g.get());
        if !gpu.is_null() {
            TfLiteInterpreterOptionsAddDelegate(opts, gpu);
        }
        let interp = TfLiteInterpreterCreate(model, opts);
        TfLiteInterpreterOptionsDelete(opts);
        let mut failed = interp.is_null();
        let mut total = None;
        if !interp.is_null() {
            if TfLiteInterpreterAllocateTensors(interp) != OK {
                failed = true;
            } else {
                let inputs: usize = (0..TfLiteInterpreterGetInputTensorCount(interp))
                    .map(|i| TfLiteTensorByteSize(TfLiteInterpreterGetInputTensor(interp, i)))
                    .sum();
                let mut all = 0usize;
                for i in 0.. {
                    let t = TfLiteInterpreterGetTensor(interp, i);
                    if t.is_null() {
                        break;
                    }
                    all = all.saturating_add(TfLiteTensorByteSize(t));
                }
                total = Some(all);
                if inputs > MAX_INVOKE_INPUT_BYTES || all > tensor_limit {
                    tally.skipped_big += 1;
                } else {
                    fill_inputs(interp, rng);
                    watch(|w| {
                        w.interp = interp as usize;
                        w.invoke_start = Some(Instant::now());
                    });
                    let mut cancelled = false;
                    for _ in 0..invokes {
                        let s = TfLiteInterpreterInvoke(interp);
                        if s == KTFLITE_CANCELLED {
                            cancelled = true;
                        }
                        if s != OK {
                            failed = true;
                            break;
                        }
                    }
                    watch(|w| {
                        w.interp = 0;
                        w.invoke_start = None;
                    });
                    if cancelled {
                        tally.cancelled += 1;
                    } else if !failed {
                        tally.ran += 1;
                    }
                }
            }
            TfLiteInterpreterDelete(interp);
        }
        if failed {
            assert!(messages > 0, "a failure was reported without a message");
            tally.rejected_later += 1;
        }
        TfLiteModelDelete(model);
        total
    }
}

/// Mutations per model, by size: structure parsing and a failed load are cheap, but a
/// mutated model that still loads runs a whole Invoke.
fn mutations_for(len: usize, single_op: bool) -> usize {
    if single_op {
        150
    } else if len < 16 << 10 {
        2500
    } else if len < 1 << 20 {
        1000
    } else {
        600
    }
}

fn seed_for(name: &str) -> u64 {
    // FNV-1a of the file name: a model's sequence does not depend on the others.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h | 1
}

fn peak_rss_mib() -> u64 {
    // SAFETY: getrusage fills the zeroed struct.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u.ru_maxrss as u64 / 1024
    }
}

#[test]
fn mutated_models_of_the_whole_corpus_never_crash() {
    let corpus = corpus();
    let only = std::env::var("MALFORMED_ONLY").ok();
    let trace = std::env::var_os("MALFORMED_TRACE").is_some();
    TRACE.store(trace, Ordering::Relaxed);
    let scale: f64 = std::env::var("MALFORMED_SCALE").ok().and_then(|c| c.parse().ok()).unwrap_or(1.0);
    let only_case: Option<usize> = std::env::var("MALFORMED_CASE").ok().and_then(|c| c.parse().ok());
    let mut files: Vec<(std::path::PathBuf, bool)> = Vec::new();
    for (dir, single_op) in [("capi", false), ("models", false), ("ops/models", true)] {
        let mut v: Vec<_> =
            std::fs::read_dir(corpus.join(dir)).expect("corpus dir").flatten().map(|e| e.path()).collect();
        v.sort();
        files.extend(v.into_iter().map(|p| (p, single_op)));
    }
    // The repository's own single-op cases (the ops the shared corpus does not cover) and,
    // when fetched (tools/mediapipe_models.sh), MediaPipe's models with custom ops and
    // sparse weights.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (dir, single_op) in [(repo.join("tests/op_cases/models"), true), (repo.join("target/mediapipe"), false)] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            println!("mutation test: {} not found, its models are not mutated", dir.display());
            continue;
        };
        let mut v: Vec<_> =
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "tflite")).collect();
        v.sort();
        files.extend(v.into_iter().map(|p| (p, single_op)));
    }
    assert!(files.len() > 300, "expected the whole corpus, found {} models", files.len());
    start_watchdog();
    let start = Instant::now();
    let mut tally = Tally::default();
    // Every truncation of a small model.
    let add = std::fs::read(corpus.join("capi/add.bin")).expect("add.bin");
    let mut rng = Rng(1);
    for len in 0..add.len() {
        exercise(&add[..len], &mut rng, &mut tally, 1, MIN_INVOKE_TENSOR_LIMIT);
    }
    let truncations = tally.cases;
    let mut per_kind: std::collections::BTreeMap<String, (usize, f64)> = Default::default();
    let mut models = 0;
    let mut slow: Vec<(Duration, String)> = Vec::new();
    let mut by_label: std::collections::BTreeMap<String, [usize; 4]> = Default::default();
    for (path, single_op) in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        models += 1;
        let base = std::fs::read(path).expect("read model");
        let map = structure(&base);
        let mut rng = Rng(seed_for(&name));
        let model_start = Instant::now();
        // The unmutated model must load and run.
        let base_total = exercise(&base, &mut rng, &mut Tally::default(), 1, usize::MAX);
        let tensor_limit = base_total.unwrap_or(0).saturating_mul(2).max(MIN_INVOKE_TENSOR_LIMIT);
        // Random input data may make the unmutated model's Invoke fail (an integer division
        // by zero); it must load and allocate, except two C API fixtures (custom_sinh.bin,
        // with_metadata.bin) whose custom ops are not registered here.
        let base_ok = base_total.is_some();
        assert!(
            base_ok || path.parent().is_some_and(|d| d.ends_with("capi")),
            "{name}: the unmutated model did not allocate (MALFORMED_TRACE=1 shows why)"
        );
        let mut model_tally = Tally::default();
        let small = base.len() < 200_000;
        let invokes = if small { 2 } else { 1 };
        watch(|w| w.cancel_after = if small { CANCEL_SMALL_AFTER } else { CANCEL_AFTER });
        let count = (mutations_for(base.len(), *single_op) as f64 * scale) as usize;
        for k in 0..count {
            let (m, label) = mutate(&mut rng, &map, &base);
            let case = format!("{name} #{k} ({label})");
            if only_case.is_some_and(|c| c != k) {
                continue;
            }
            if trace {
                eprintln!("case {case}");
            }
            watch(|w| {
                w.case = case.clone();
                w.case_start = Instant::now();
            });
            let before = (model_tally.rejected_at_create, model_tally.rejected_later, model_tally.ran);
            // The input data comes from its own generator, so that the mutation sequence does
            // not depend on what ran (MALFORMED_CASE reproduces a case).
            let mut input_rng = Rng(seed_for(&name) ^ (k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            exercise(&m, &mut input_rng, &mut model_tally, invokes, tensor_limit);
            if !label.contains('+') {
                let e = by_label.entry(label.clone()).or_insert([0; 4]);
                e[0] += 1;
                e[1] += model_tally.rejected_at_create - before.0;
                e[2] += model_tally.rejected_later - before.1;
                e[3] += model_tally.ran - before.2;
            }
            let el = watch(|w| {
                w.case.clear();
                w.case_start.elapsed()
            });
            assert!(el < Duration::from_secs(30), "case {case} took {el:?}");
            if el > Duration::from_millis(300) {
                slow.push((el, case));
            }
        }
        let secs = model_start.elapsed().as_secs_f64();
        if !*single_op || trace {
            let t = &model_tally;
            println!(
                "  {name}: {} bytes ({} structural): {} cases, {} rejected at load, {} later, {} ran, {} cancelled, {} skipped; {secs:.1} s",
                base.len(),
                map.structural_len,
                t.cases,
                t.rejected_at_create,
                t.rejected_later,
                t.ran,
                t.cancelled,
                t.skipped_big
            );
        }
        tally.add(&model_tally);
        let kind = if *single_op { "ops".to_string() } else { name };
        let e = per_kind.entry(kind).or_default();
        e.0 += 1;
        e.1 += secs;
    }
    // The GPU delegate reads the same kind of mutated graphs through its own lowering:
    // it must refuse (or run) them just as safely. A sample, as PoCL invokes are slow.
    match tensorflowlite_c::gpu::delegate::create(&Default::default()) {
        Err(why) if std::env::var("TFLITE_REQUIRE_OPENCL").as_deref() == Ok("1") => {
            panic!("OpenCL is required (TFLITE_REQUIRE_OPENCL=1) but unavailable: {why}")
        }
        Err(why) => println!("SKIPPED the GPU-delegate mutation pass: no usable OpenCL platform ({why})"),
        Ok(mut d) if only.is_none() && only_case.is_none() => {
            let gpu_start = Instant::now();
            GPU.with(|g| g.set((&raw mut d.base).cast()));
            let mut gpu_tally = Tally::default();
            let mut gpu_models: Vec<(std::path::PathBuf, usize)> =
                ["face_detection_short_range.tflite", "selfie_segmentation.tflite"]
                    .iter()
                    .map(|m| (corpus.join("models").join(m), 25))
                    .collect();
            for (path, single_op) in &files {
                let n = path.file_name().unwrap().to_string_lossy();
                let gpu_op = [
                    "conv_2d",
                    "depthwise",
                    "pool",
                    "concatenation",
                    "pad",
                    "resize_bilinear",
                    "mean",
                    "softmax",
                    "fully_connected",
                    "transpose_conv",
                    "prelu",
                    "add_bcast",
                ];
                if *single_op && n.ends_with("_f32.tflite") && gpu_op.iter().any(|o| n.starts_with(o)) {
                    gpu_models.push((path.clone(), 20));
                }
            }
            for (path, count) in &gpu_models {
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                let base = std::fs::read(path).expect("read model");
                let map = structure(&base);
                let mut rng = Rng(seed_for(&name) ^ 0x6770_7500);
                watch(|w| w.cancel_after = CANCEL_AFTER);
                for k in 0..((*count as f64 * scale) as usize) {
                    let (m, label) = mutate(&mut rng, &map, &base);
                    let case = format!("GPU {name} #{k} ({label})");
                    watch(|w| {
                        w.case = case.clone();
                        w.case_start = Instant::now();
                    });
                    let mut input_rng = Rng(seed_for(&name) ^ (k as u64 + 7));
                    exercise(&m, &mut input_rng, &mut gpu_tally, 1, MIN_INVOKE_TENSOR_LIMIT);
                    let el = watch(|w| {
                        w.case.clear();
                        w.case_start.elapsed()
                    });
                    assert!(el < Duration::from_secs(60), "case {case} took {el:?}");
                }
            }
            GPU.with(|g| g.set(std::ptr::null_mut()));
            let r = d.report();
            drop(d);
            let t = &gpu_tally;
            println!(
                "GPU delegate pass: {} models, {} mutated cases: {} rejected at load, {} later, {} ran ({} nodes delegated in {} partitions); {:.1} s",
                gpu_models.len(),
                t.cases,
                t.rejected_at_create,
                t.rejected_later,
                t.ran,
                r.nodes_delegated,
                r.partitions,
                gpu_start.elapsed().as_secs_f64()
            );
            assert!(r.partitions > 0, "the GPU delegate took no partition in the mutation pass");
        }
        Ok(_) => {}
    }
    let panics = PANICS.lock().unwrap().clone();
    for (label, [n, load, later, ran]) in &by_label {
        println!("  single '{label}' mutations: {n} cases, {load} rejected at load, {later} later, {ran} ran");
    }
    slow.sort_by_key(|s| std::cmp::Reverse(s.0));
    for (el, case) in slow.iter().take(10) {
        println!("  slow case: {case}: {el:?}");
    }
    let cancels = watch(|w| w.cancels);
    println!(
        "{models} models, {} mutated cases ({truncations} of them truncations of add.bin): {} rejected at load + {} rejected later (all with a message), {} ran, {} invokes cancelled by the watchdog ({} cancel calls), {} invokes skipped (inputs over {} MiB or all tensors over twice the unmutated model's and over {} MiB); {} messages; peak RSS {} MiB; {:.1} s",
        tally.cases,
        tally.rejected_at_create,
        tally.rejected_later,
        tally.ran,
        tally.cancelled,
        cancels,
        tally.skipped_big,
        MAX_INVOKE_INPUT_BYTES >> 20,
        MIN_INVOKE_TENSOR_LIMIT >> 20,
        REPORTED.load(Ordering::Relaxed),
        peak_rss_mib(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        panics.is_empty(),
        "{} panics inside the library:\n{}",
        panics.len(),
        panics.iter().take(30).cloned().collect::<Vec<_>>().join("\n")
    );
    if only.is_none() && only_case.is_none() {
        assert!(tally.rejected_at_create > 0 && tally.rejected_later > 0 && tally.ran > 0);
    }
}

#[test]
fn structure_map_finds_the_interesting_bytes() {
    let path = Path::new(&corpus()).join("models/mobilenet_v2_f32.tflite");
    let b = std::fs::read(path).unwrap();
    let map = structure(&b);
    assert!(map.structural_len < b.len() / 20, "weights excluded: {} of {}", map.structural_len, b.len());
    assert!(map.indices.len() > 100 && map.dims.len() > 100 && map.vtables.len() > 100 && map.offsets.len() > 100);
}
