//! Model + resolver → subgraphs (TFLite's InterpreterBuilder): tensors from the model's
//! tensor tables (constants point into the model bytes), one node per operator with its
//! parsed builtin params or custom options, `init` called on each, execution plan in
//! operator order. The model was validated on load, so indices here are in range.

use super::subgraph::{NodeEntry, Subgraph};
use super::{InterpreterConfig, SignatureInfo, node_ops};
use crate::abi::arrays::*;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::*;
use crate::error::{Error, Result};
use crate::model::validate::{tensor_bytes, tensor_type};
use crate::model::{Model, fb, options};
use crate::resolver::{OpFinder, describe_versions, opcode};
use core::ffi::{c_char, c_void};
use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

const CUSTOM: i32 = TfLiteBuiltinOperator::kTfLiteBuiltinCustom as i32;

/// Builds every subgraph of `model`.
pub fn build_subgraphs(
    model: &Arc<Model>,
    resolver: &dyn OpFinder,
    config: &InterpreterConfig,
    cancelled: &Arc<AtomicBool>,
) -> Result<Vec<Box<Subgraph>>> {
    let m = model.fb();
    let mut out = Vec::new();
    for (si, sg) in m.subgraphs().into_iter().flatten().enumerate() {
        let name = CString::new(sg.name().unwrap_or("").replace('\0', "")).unwrap_or_default();
        let mut s = Subgraph::new(
            model.clone(),
            name,
            config.reporter.clone(),
            config.num_threads,
            cancelled.clone(),
            config.enable_cancellation,
            config.preserve_intermediates,
        );
        s.allow_fusion = config.fuse_activations;
        s.adaptive_threads = config.adaptive_threads;
        build_tensors(model, &sg, &mut s).map_err(|e| Error::new(format!("subgraph {si}: {e}")))?;
        s.inputs = sg.inputs().map(|v| v.iter().collect()).unwrap_or_default();
        s.outputs = sg.outputs().map(|v| v.iter().collect()).unwrap_or_default();
        s.variables = (0..s.tensors.len() as i32).filter(|&i| s.tensors[i as usize].is_variable).collect();
        build_nodes(model, &sg, &mut s, resolver, config)?;
        out.push(s);
    }
    Ok(out)
}

fn build_tensors(model: &Model, sg: &fb::SubGraph<'_>, s: &mut Subgraph) -> Result<()> {
    let Some(tensors) = sg.tensors() else { return Ok(()) };
    s.add_tensors(tensors.len())?;
    for (i, ft) in tensors.iter().enumerate() {
        let dtype = tensor_type(ft.type_()).ok_or_else(|| Error::new(format!("tensor {i}: unsupported type")))?;
        let shape: Vec<i32> = ft.shape().map(|v| v.iter().collect()).unwrap_or_default();
        let name = CString::new(ft.name().unwrap_or("").replace('\0', "")).unwrap_or_default();
        let data = model.buffer_data(ft.buffer() as usize);
        let t = &mut s.tensors[i];
        t.r#type = dtype;
        // SAFETY: dims was created by add_tensors and is owned by the tensor.
        unsafe { int_array_free(t.dims) };
        t.dims = int_array_from_slice(&shape);
        if t.dims.is_null() {
            return Err(Error::new("out of memory"));
        }
        if let Some(sig) = ft.shape_signature() {
            let sig: Vec<i32> = sig.iter().collect();
            t.dims_signature = int_array_from_slice(&sig);
        }
        t.is_variable = ft.is_variable();
        set_quantization(t, ft.quantization())?;
        if !data.is_empty() {
            // As TFLite's ParseTensors: only constants carry their sparsity.
            if let Some(sp) = ft.sparsity() {
                set_sparsity(t, &sp)?;
            }
            t.allocation_type = TfLiteAllocationType::kTfLiteMmapRo;
            t.data.raw_const = data.as_ptr() as *const c_char;
            t.bytes = data.len();
            t.allocation = model.bytes().as_ptr() as *const c_void;
        } else {
            t.allocation_type = match dtype {
                TfLiteType::kTfLiteString | TfLiteType::kTfLiteResource | TfLiteType::kTfLiteVariant => {
                    TfLiteAllocationType::kTfLiteDynamic
                }
                _ if ft.is_variable() => TfLiteAllocationType::kTfLiteArenaRwPersistent,
                _ => TfLiteAllocationType::kTfLiteArenaRw,
            };
            t.bytes = tensor_bytes(dtype, &shape)?;
        }
        s.tensor_names[i] = Some(name);
        t.name = s.tensor_names[i].as_ref().map_or(core::ptr::null(), |n| n.as_ptr());
    }
    Ok(())
}

fn set_quantization(t: &mut TfLiteTensor, q: Option<fb::QuantizationParameters<'_>>) -> Result<()> {
    let Some(q) = q else { return Ok(()) };
    let Some(scales) = q.scale() else { return Ok(()) };
    if scales.is_empty() {
        return Ok(());
    }
    let scales: Vec<f32> = scales.iter().collect();
    let zps: Vec<i32> = match q.zero_point() {
        Some(z) if !z.is_empty() => z.iter().map(|v| v as i32).collect(),
        _ => vec![0; scales.len()],
    };
    if scales.len() == 1 {
        t.params = TfLiteQuantizationParams { scale: scales[0], zero_point: zps[0] };
    }
    // SAFETY: calloc of one struct; checked for NULL; arrays malloc'ed by our helpers. The
    // tensor owns them and frees them in `free_quantization`.
    unsafe {
        let aq = libc::calloc(1, core::mem::size_of::<TfLiteAffineQuantization>()) as *mut TfLiteAffineQuantization;
        if aq.is_null() {
            return Err(Error::new("out of memory"));
        }
        (*aq).scale = float_array_from_slice(&scales);
        (*aq).zero_point = int_array_from_slice(&zps);
        (*aq).quantized_dimension = q.quantized_dimension();
        t.quantization =
            TfLiteQuantization { r#type: TfLiteQuantizationType::kTfLiteAffineQuantization, params: aq.cast() };
    }
    Ok(())
}

/// The tensor's `TfLiteSparsity` (malloc'ed, owned by the tensor and freed with it), as
/// TFLite's `ParseSparsity` builds it: CSR dimensions own their two index arrays, dense
/// ones have none. The model's validation checked the parameters.
fn set_sparsity(t: &mut TfLiteTensor, sp: &fb::SparsityParameters<'_>) -> Result<()> {
    use crate::model::sparsity::{DimMetadata, Sparsity};
    let sp = Sparsity::from_flatbuffer(sp)?;
    let n = sp.dim_metadata.len();
    let oom = || Error::new("out of memory");
    // SAFETY: calloc'ed structs checked for NULL; every member is NULL or malloc'ed by our
    // helpers, which is what `sparsity_free` (run when the tensor is freed) expects.
    unsafe {
        let s = libc::calloc(1, core::mem::size_of::<TfLiteSparsity>()) as *mut TfLiteSparsity;
        if s.is_null() {
            return Err(oom());
        }
        t.sparsity = s;
        (*s).traversal_order = int_array_from_slice(&sp.traversal_order);
        if !sp.block_map.is_empty() {
            (*s).block_map = int_array_from_slice(&sp.block_map);
        }
        if n > 0 {
            let md = libc::calloc(n, core::mem::size_of::<TfLiteDimensionMetadata>()) as *mut TfLiteDimensionMetadata;
            if md.is_null() {
                return Err(oom());
            }
            (*s).dim_metadata = md;
            (*s).dim_metadata_size = n as i32;
            for (i, d) in sp.dim_metadata.iter().enumerate() {
                let m = &mut *md.add(i);
                match d {
                    DimMetadata::Dense(size) => {
                        m.format = TfLiteDimensionType::kTfLiteDimDense;
                        m.dense_size = *size;
                    }
                    DimMetadata::Csr { segments, indices } => {
                        m.format = TfLiteDimensionType::kTfLiteDimSparseCSR;
                        m.array_segments = int_array_from_slice(segments);
                        m.array_indices = int_array_from_slice(indices);
                        if m.array_segments.is_null() || m.array_indices.is_null() {
                            return Err(oom());
                        }
                    }
                }
            }
        }
        if (*s).traversal_order.is_null() {
            return Err(oom());
        }
    }
    Ok(())
}

fn build_nodes(
    model: &Model,
    sg: &fb::SubGraph<'_>,
    s: &mut Subgraph,
    resolver: &dyn OpFinder,
    config: &InterpreterConfig,
) -> Result<()> {
    let m = model.fb();
    let codes = m.operator_codes();
    let Some(ops) = sg.operators() else { return Ok(()) };
    for (oi, op) in ops.iter().enumerate() {
        let Some(code_entry) = codes.as_ref().map(|c| c.get(op.opcode_index() as usize)) else {
            return Err(Error::new(format!("operator {oi}: no operator codes")));
        };
        let code = opcode::builtin_code(&code_entry);
        let version = code_entry.version();
        let mut entry = Box::new(NodeEntry {
            node: TfLiteNode {
                inputs: int_array_from_slice(&op.inputs().map(|v| v.iter().collect::<Vec<_>>()).unwrap_or_default()),
                outputs: int_array_from_slice(&op.outputs().map(|v| v.iter().collect::<Vec<_>>()).unwrap_or_default()),
                intermediates: int_array_from_slice(
                    &op.intermediates().map(|v| v.iter().collect::<Vec<_>>()).unwrap_or_default(),
                ),
                temporaries: int_array_create(0),
                user_data: core::ptr::null_mut(),
                builtin_data: core::ptr::null_mut(),
                custom_initial_data: core::ptr::null(),
                custom_initial_data_size: 0,
                delegate: core::ptr::null_mut(),
                might_have_side_effect: false,
            },
            registration: TfLiteRegistration::empty(),
            op_name: String::new(),
            unresolved_custom: None,
            custom_name: None,
            owns_builtin_data: false,
            initialized: false,
            settled: crate::interpreter::subgraph::Settled::Never,
        });
        let n = &entry.node;
        if n.inputs.is_null() || n.outputs.is_null() || n.intermediates.is_null() || n.temporaries.is_null() {
            s.nodes.push(entry);
            return Err(Error::new("out of memory"));
        }

        if code == CUSTOM {
            let name = code_entry.custom_code().unwrap_or("").to_string();
            let cname = CString::new(name.replace('\0', "")).unwrap_or_default();
            match resolver.find_custom(&name, version) {
                Some(reg) => entry.registration = reg,
                None => {
                    entry.registration =
                        TfLiteRegistration { builtin_code: CUSTOM, version, ..TfLiteRegistration::empty() };
                    entry.unresolved_custom = Some(name.clone());
                }
            }
            entry.registration.builtin_code = CUSTOM;
            entry.registration.version = version;
            entry.custom_name = Some(cname);
            entry.registration.custom_name = entry.custom_name.as_ref().map_or(core::ptr::null(), |c| c.as_ptr());
            entry.op_name = name;
            let custom = custom_options(model, &op);
            entry.node.custom_initial_data = custom.as_ptr() as *const c_void;
            entry.node.custom_initial_data_size = i32::try_from(custom.len()).unwrap_or(i32::MAX);
        } else {
            // Every early return hands the entry to the subgraph first: its drop frees the
            // node's arrays.
            let Some(op_enum) = TfLiteBuiltinOperator::from_raw(code) else {
                s.nodes.push(entry);
                return Err(Error::new(format!("operator {oi}: unknown builtin opcode {code}")));
            };
            entry.op_name = op_enum.name().to_string();
            let Some(reg) = resolver.find_builtin(code, version) else {
                // TFLite's sentence first (callers match on it), then what we do support.
                let ranges = resolver.builtin_versions(code);
                let ours = if ranges.is_empty() {
                    format!("This runtime does not implement {}.", op_enum.name())
                } else {
                    format!("This runtime supports {} versions {}.", op_enum.name(), describe_versions(&ranges))
                };
                (config.reporter)(&format!(
                    "Didn't find op for builtin opcode '{}' version '{version}'. An older version of this builtin might be supported. Are you using an old TFLite binary with a newer model? {ours}\n",
                    op_enum.name()
                ));
                s.nodes.push(entry);
                return Err(Error::new("Registration failed.\n"));
            };
            entry.registration = reg;
            entry.registration.builtin_code = code;
            entry.registration.version = version;
            let data = match options::parse_builtin_options(op_enum, &op) {
                Ok(data) => data,
                Err(e) => {
                    s.nodes.push(entry);
                    return Err(Error::new(format!("operator {oi} ({}): {}", op_enum.name(), e.message)));
                }
            };
            entry.node.builtin_data = data;
            entry.owns_builtin_data = !data.is_null();
        }

        // TFLite passes builtin params to init as the buffer (length 0), custom options
        // with their size.
        let (buf, len) = if code == CUSTOM {
            (entry.node.custom_initial_data as *const c_char, entry.node.custom_initial_data_size as usize)
        } else {
            (entry.node.builtin_data as *const c_char, 0)
        };
        // SAFETY: the node's arrays were created above and are owned by it.
        let (ins, outs) = unsafe { (int_array_slice(entry.node.inputs), int_array_slice(entry.node.outputs)) };
        entry.node.might_have_side_effect = s.op_might_have_side_effect(code, ins, outs);
        let ctx = s.context_ptr();
        if entry.unresolved_custom.is_none() {
            // SAFETY: calling the op's init with the arguments TFLite passes; ctx is live.
            entry.node.user_data = unsafe { node_ops::init(&entry.registration, ctx, buf, len) };
            entry.initialized = true;
        }
        s.nodes.push(entry);
        s.execution_plan.push(oi as i32);
    }
    Ok(())
}

fn custom_options<'a>(model: &'a Model, op: &fb::Operator<'a>) -> &'a [u8] {
    if let Some(c) = op.custom_options() {
        return c;
    }
    let (off, size) = (op.large_custom_options_offset(), op.large_custom_options_size());
    if size > 0 {
        let (Ok(o), Ok(n)) = (usize::try_from(off), usize::try_from(size)) else { return &[] };
        return o.checked_add(n).and_then(|end| model.bytes().get(o..end)).unwrap_or(&[]);
    }
    &[]
}

/// The model's signature defs, in order.
pub fn read_signatures(model: &Model) -> Vec<SignatureInfo> {
    let m = model.fb();
    let cs = |s: &str| CString::new(s.replace('\0', "")).unwrap_or_default();
    m.signature_defs()
        .into_iter()
        .flatten()
        .map(|s| SignatureInfo {
            key: cs(s.signature_key().unwrap_or("")),
            subgraph: s.subgraph_index() as usize,
            inputs: s
                .inputs()
                .into_iter()
                .flatten()
                .map(|t| (cs(t.name().unwrap_or("")), t.tensor_index() as i32))
                .collect(),
            outputs: s
                .outputs()
                .into_iter()
                .flatten()
                .map(|t| (cs(t.name().unwrap_or("")), t.tensor_index() as i32))
                .collect(),
        })
        .collect()
}
