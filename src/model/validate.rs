//! Validation of a verified model: every index, shape, size product and buffer range is
//! checked once here, so the interpreter can build from the model without re-checking
//! and a malformed file is an error naming what is wrong — never a crash.

use super::fb;
use crate::abi::types::TfLiteType;
use crate::error::{Error, Result};

/// The only schema version TFLite 2.x reads.
pub const SCHEMA_VERSION: u32 = 3;

/// Largest tensor (in bytes) we agree to plan. Far above any real model's activations,
/// low enough that a corrupted shape cannot make us ask the OS for absurd memory.
pub const MAX_TENSOR_BYTES: usize = 1 << 30;

/// Maximum rank we accept (TFLite kernels support at most 6; leave headroom).
pub const MAX_RANK: usize = 16;

/// Converts a schema `TensorType` to a `TfLiteType` as TFLite's `ConvertTensorType`.
pub fn tensor_type(t: fb::TensorType) -> Option<TfLiteType> {
    use TfLiteType::*;
    Some(match t {
        fb::TensorType::FLOAT32 => kTfLiteFloat32,
        fb::TensorType::FLOAT16 => kTfLiteFloat16,
        fb::TensorType::INT32 => kTfLiteInt32,
        fb::TensorType::UINT8 => kTfLiteUInt8,
        fb::TensorType::INT64 => kTfLiteInt64,
        fb::TensorType::STRING => kTfLiteString,
        fb::TensorType::BOOL => kTfLiteBool,
        fb::TensorType::INT16 => kTfLiteInt16,
        fb::TensorType::COMPLEX64 => kTfLiteComplex64,
        fb::TensorType::INT8 => kTfLiteInt8,
        fb::TensorType::FLOAT64 => kTfLiteFloat64,
        fb::TensorType::COMPLEX128 => kTfLiteComplex128,
        fb::TensorType::UINT64 => kTfLiteUInt64,
        fb::TensorType::RESOURCE => kTfLiteResource,
        fb::TensorType::VARIANT => kTfLiteVariant,
        fb::TensorType::UINT32 => kTfLiteUInt32,
        fb::TensorType::UINT16 => kTfLiteUInt16,
        fb::TensorType::INT4 => kTfLiteInt4,
        fb::TensorType::BFLOAT16 => kTfLiteBFloat16,
        _ => return None,
    })
}

/// Bytes needed by a tensor of `dtype` and `shape`, checked for overflow.
/// Types without a fixed element size (strings, resources, variants) give 0.
pub fn tensor_bytes(dtype: TfLiteType, shape: &[i32]) -> Result<usize> {
    let mut n: usize = 1;
    for &d in shape {
        let d = usize::try_from(d).map_err(|_| Error::new(format!("negative dimension {d} in shape {shape:?}")))?;
        n = n.checked_mul(d).ok_or_else(|| Error::new(format!("shape {shape:?} overflows")))?;
    }
    let bytes = match dtype {
        TfLiteType::kTfLiteInt4 => n.div_ceil(2),
        t => match t.element_size() {
            Some(sz) => n.checked_mul(sz).ok_or_else(|| Error::new(format!("shape {shape:?} overflows")))?,
            None => 0,
        },
    };
    if bytes > MAX_TENSOR_BYTES {
        return Err(Error::new(format!(
            "tensor of shape {shape:?} needs {bytes} bytes, over the {MAX_TENSOR_BYTES}-byte limit"
        )));
    }
    Ok(bytes)
}

/// Validates the whole model. `file_len` bounds the out-of-flatbuffer buffer regions.
pub fn validate(m: &fb::Model<'_>, file_len: usize) -> Result<()> {
    if m.version() != SCHEMA_VERSION {
        return Err(Error::new(format!(
            "Model provided has schema version {}, not equal to supported version {}.",
            m.version(),
            SCHEMA_VERSION
        )));
    }
    let num_buffers = m.buffers().map_or(0, |b| b.len());
    let num_opcodes = m.operator_codes().map_or(0, |c| c.len());
    let subgraphs = m.subgraphs().ok_or_else(|| Error::new("Model has no subgraphs"))?;
    if subgraphs.is_empty() {
        return Err(Error::new("Model has no subgraphs"));
    }

    if let Some(buffers) = m.buffers() {
        for (i, b) in buffers.iter().enumerate() {
            let (off, size) = (b.offset(), b.size_());
            if b.data().is_none() && off > 1 {
                let end = off.checked_add(size);
                if end.is_none_or(|e| e > file_len as u64) {
                    return Err(Error::new(format!("buffer {i}: offset {off} + size {size} is outside the file")));
                }
            }
        }
    }

    if let Some(codes) = m.operator_codes() {
        for (i, c) in codes.iter().enumerate() {
            if c.version() < 1 {
                return Err(Error::new(format!("operator code {i} has invalid version {}", c.version())));
            }
        }
    }

    for (si, sg) in subgraphs.iter().enumerate() {
        validate_subgraph(m, si, &sg, num_buffers, num_opcodes, file_len)?;
    }

    if let Some(md) = m.metadata() {
        for e in md.iter() {
            if e.buffer() as usize >= num_buffers {
                return Err(Error::new(format!(
                    "metadata '{}' refers to buffer {} of {num_buffers}",
                    e.name().unwrap_or(""),
                    e.buffer()
                )));
            }
        }
    }

    if let Some(sigs) = m.signature_defs() {
        for s in sigs.iter() {
            let si = s.subgraph_index() as usize;
            if si >= subgraphs.len() {
                return Err(Error::new(format!(
                    "signature '{}' refers to subgraph {si}",
                    s.signature_key().unwrap_or("")
                )));
            }
            let nt = subgraphs.get(si).tensors().map_or(0, |t| t.len());
            for map in s.inputs().into_iter().flatten().chain(s.outputs().into_iter().flatten()) {
                if map.tensor_index() as usize >= nt {
                    return Err(Error::new(format!(
                        "signature '{}' refers to tensor {} of {nt}",
                        s.signature_key().unwrap_or(""),
                        map.tensor_index()
                    )));
                }
                if map.name().is_none() {
                    return Err(Error::new("signature tensor without a name"));
                }
            }
        }
    }
    Ok(())
}

fn check_indices(
    what: &str,
    list: Option<flatbuffers::Vector<'_, i32>>,
    nt: usize,
    allow_optional: bool,
) -> Result<()> {
    for t in list.into_iter().flatten() {
        let ok = if t == -1 { allow_optional } else { usize::try_from(t).is_ok_and(|i| i < nt) };
        if !ok {
            return Err(Error::new(format!("{what} refers to tensor {t}, but the subgraph has {nt} tensors")));
        }
    }
    Ok(())
}

fn validate_subgraph(
    m: &fb::Model<'_>,
    si: usize,
    sg: &fb::SubGraph<'_>,
    num_buffers: usize,
    num_opcodes: usize,
    _file_len: usize,
) -> Result<()> {
    let tensors = sg.tensors();
    let nt = tensors.map_or(0, |t| t.len());
    let mut constant = vec![false; nt];
    // Tensors an operator may read without another operator writing them first: constants,
    // variables (state the runtime keeps) and tensors of zero bytes (nothing to read).
    let mut ready = vec![false; nt];
    if let Some(tensors) = tensors {
        for (ti, t) in tensors.iter().enumerate() {
            let ctx = || format!("subgraph {si} tensor {ti} ('{}')", t.name().unwrap_or(""));
            let dtype = tensor_type(t.type_())
                .ok_or_else(|| Error::new(format!("{}: unsupported type {}", ctx(), t.type_().0)))?;
            let shape: Vec<i32> = t.shape().map(|s| s.iter().collect()).unwrap_or_default();
            if shape.len() > MAX_RANK {
                return Err(Error::new(format!("{}: rank {} is over {MAX_RANK}", ctx(), shape.len())));
            }
            let bytes = tensor_bytes(dtype, &shape).map_err(|e| Error::new(format!("{}: {e}", ctx())))?;
            if let Some(sig) = t.shape_signature()
                && (sig.len() != shape.len() || sig.iter().any(|d| d < -1))
            {
                return Err(Error::new(format!("{}: shape_signature does not match shape", ctx())));
            }
            let b = t.buffer() as usize;
            if b >= num_buffers && !(b == 0 && num_buffers == 0) {
                return Err(Error::new(format!("{}: buffer {b} out of range ({num_buffers} buffers)", ctx())));
            }
            if b != 0 && b < num_buffers {
                let buf = m.buffers().map(|bs| bs.get(b));
                let len = match buf {
                    Some(buf) => match buf.data() {
                        Some(d) => d.len(),
                        None if buf.offset() > 1 => buf.size_() as usize,
                        None => 0,
                    },
                    None => 0,
                };
                if len > 0 {
                    constant[ti] = true;
                    if t.is_variable() {
                        // TFLite's InterpreterBuilder refuses these too: the runtime writes
                        // variables, and this one's data lies in the read-only model.
                        return Err(Error::new(format!(
                            "{}: Tensor {ti} is a variable tensor with buffer. It's not supported now.",
                            ctx()
                        )));
                    }
                    let fixed = dtype.element_size().is_some() || dtype == TfLiteType::kTfLiteInt4;
                    if let Some(sp) = t.sparsity() {
                        check_sparse_constant(&sp, dtype, &shape, len)
                            .map_err(|e| Error::new(format!("{}: invalid sparsity parameters: {e}", ctx())))?;
                    } else if fixed && len != bytes {
                        return Err(Error::new(format!(
                            "{}: buffer {b} holds {len} bytes but shape {shape:?} of {} needs {bytes}",
                            ctx(),
                            dtype.name()
                        )));
                    }
                }
            }
            let fixed_size = dtype.element_size().is_some() || dtype == TfLiteType::kTfLiteInt4;
            ready[ti] = constant[ti] || t.is_variable() || (fixed_size && bytes == 0);
            if let Some(q) = t.quantization() {
                let ns = q.scale().map_or(0, |s| s.len());
                let nz = q.zero_point().map_or(0, |z| z.len());
                if ns != nz && nz != 0 {
                    return Err(Error::new(format!("{}: {ns} quantization scales but {nz} zero points", ctx())));
                }
                if ns > 1 {
                    let qd = q.quantized_dimension();
                    let dim = usize::try_from(qd).ok().and_then(|d| shape.get(d).copied());
                    if dim.is_none_or(|d| d as usize != ns) {
                        return Err(Error::new(format!(
                            "{}: {ns} per-channel scales do not match dimension {qd} of {shape:?}",
                            ctx()
                        )));
                    }
                }
            }
        }
    }

    check_indices(&format!("subgraph {si} inputs"), sg.inputs(), nt, false)?;
    check_indices(&format!("subgraph {si} outputs"), sg.outputs(), nt, false)?;
    let tensor_name = |ti: usize| tensors.map_or("", |ts| ts.get(ti).name().unwrap_or(""));
    let mut graph_input = vec![false; nt];
    for i in sg.inputs().into_iter().flatten() {
        let i = i as usize;
        // The application writes graph inputs (TfLiteTensorCopyFromBuffer, a control-flow
        // op copies into its subgraph's): a constant's data lies in the read-only model.
        if constant[i] {
            return Err(Error::new(format!(
                "subgraph {si}: input tensor {i} ('{}') is a constant (it has data in the model); a graph input must be writable",
                tensor_name(i)
            )));
        }
        graph_input[i] = true;
    }

    let mut writer: Vec<Option<usize>> = vec![None; nt];
    if let Some(ops) = sg.operators() {
        for (oi, op) in ops.iter().enumerate() {
            let what = format!("subgraph {si} operator {oi}");
            if op.opcode_index() as usize >= num_opcodes {
                return Err(Error::new(format!(
                    "{what}: opcode index {} out of range ({num_opcodes} codes)",
                    op.opcode_index()
                )));
            }
            check_indices(&format!("{what} inputs"), op.inputs(), nt, true)?;
            check_indices(&format!("{what} outputs"), op.outputs(), nt, true)?;
            check_indices(&format!("{what} intermediates"), op.intermediates(), nt, true)?;
            let inputs: Vec<i32> = op.inputs().map(|v| v.iter().collect()).unwrap_or_default();
            let outputs: Vec<i32> = op.outputs().map(|v| v.iter().collect()).unwrap_or_default();
            for (k, &o) in outputs.iter().enumerate() {
                if o < 0 {
                    continue;
                }
                if constant[o as usize] {
                    return Err(Error::new(format!("{what}: output tensor {o} is a constant")));
                }
                if inputs.contains(&o) || outputs[..k].contains(&o) {
                    return Err(Error::new(format!(
                        "{what}: tensor {o} is written and read (or written twice) by the same operator"
                    )));
                }
            }
            for &o in &outputs {
                if o < 0 {
                    continue;
                }
                let o = o as usize;
                if graph_input[o] {
                    return Err(Error::new(format!(
                        "{what} ({}): output tensor {o} ('{}') is a graph input of subgraph {si}",
                        op_name(m, &op),
                        tensor_name(o)
                    )));
                }
                if let Some(p) = writer[o] {
                    return Err(Error::new(format!(
                        "subgraph {si}: tensor {o} ('{}') is written by operator {p} ({}) and operator {oi} ({})",
                        tensor_name(o),
                        op_name(m, &ops.get(p)),
                        op_name(m, &op)
                    )));
                }
                writer[o] = Some(oi);
            }
            if op.large_custom_options_size() > 0 {
                let end = op.large_custom_options_offset().checked_add(op.large_custom_options_size());
                if end.is_none_or(|e| e > _file_len as u64) {
                    return Err(Error::new(format!("{what}: custom options lie outside the file")));
                }
            }
        }

        // Operators run in file order, so every input must exist before its reader runs:
        // a tensor read before the operator that writes it (a cycle, or a misordered graph)
        // or never written at all would be read uninitialized.
        let mut available: Vec<bool> = (0..nt).map(|i| ready[i] || graph_input[i]).collect();
        for (oi, op) in ops.iter().enumerate() {
            for i in op.inputs().into_iter().flatten() {
                if i < 0 || available[i as usize] {
                    continue;
                }
                let i = i as usize;
                return Err(Error::new(match writer[i] {
                    Some(p) => format!(
                        "subgraph {si}: operator {oi} ({}) reads tensor {i} ('{}') before operator {p} ({}) writes it \
                         (operators run in order: a cycle or a misordered graph)",
                        op_name(m, &op),
                        tensor_name(i),
                        op_name(m, &ops.get(p))
                    ),
                    None => format!(
                        "subgraph {si}: operator {oi} ({}) reads tensor {i} ('{}'), which no operator writes and which is \
                         not a graph input, a constant or a variable",
                        op_name(m, &op),
                        tensor_name(i)
                    ),
                }));
            }
            for o in op.outputs().into_iter().flatten() {
                if o >= 0 {
                    available[o as usize] = true;
                }
            }
        }
    }
    // A graph output that nothing writes would hand the application bytes no one wrote
    // (TFLite gives it arena memory and never fills it).
    for o in sg.outputs().into_iter().flatten() {
        let o = o as usize;
        if !(ready[o] || graph_input[o] || writer[o].is_some()) {
            return Err(Error::new(format!(
                "subgraph {si}: output tensor {o} ('{}') is written by no operator and is not a graph input, a \
                 constant or a variable",
                tensor_name(o)
            )));
        }
    }
    Ok(())
}

/// A sparse constant: its parameters must describe `shape` (every index in range) and
/// its buffer must hold exactly the values they place. TFLite reads sparsity only on
/// constants, so it is checked only there.
fn check_sparse_constant(sp: &fb::SparsityParameters<'_>, dtype: TfLiteType, shape: &[i32], len: usize) -> Result<()> {
    let Some(size) = dtype.element_size() else {
        return Err(Error::new(format!("sparse tensors of type {} are not supported", dtype.name())));
    };
    let plan = super::sparsity::Sparsity::from_flatbuffer(sp)?.plan(shape)?;
    let need = plan.num_values().checked_mul(size).ok_or_else(|| Error::new("the number of values overflows"))?;
    if len != need {
        return Err(Error::new(format!(
            "the buffer holds {len} bytes, but the sparsity places {} values of {} ({need} bytes)",
            plan.num_values(),
            dtype.name()
        )));
    }
    Ok(())
}

/// The operator's name for messages: the builtin's name or the custom code.
fn op_name(m: &fb::Model<'_>, op: &fb::Operator<'_>) -> String {
    let Some(code) = m.operator_codes().map(|c| c.get(op.opcode_index() as usize)) else {
        return String::from("?");
    };
    let raw = crate::resolver::opcode::builtin_code(&code);
    if raw == crate::abi::builtin_ops::TfLiteBuiltinOperator::kTfLiteBuiltinCustom as i32 {
        return code.custom_code().unwrap_or("custom").to_string();
    }
    crate::abi::builtin_ops::TfLiteBuiltinOperator::from_raw(raw)
        .map_or_else(|| format!("opcode {raw}"), |o| o.name().to_string())
}
