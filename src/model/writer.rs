//! A small `.tflite` writer: builds single-subgraph models in memory from tensors and
//! builtin operators, for tests and the model-making binaries (`make-demo-model`,
//! `make-test-models`).
//!
//! Development code, not part of the shipped library: the library compiles it only for
//! its own unit tests (`#[cfg(test)]`); the binaries and `tests/model_validation.rs`
//! include this file with `#[path]` (a cargo feature turned on for tests would make
//! `cargo build` and `cargo test` rebuild the library each time they alternate). It
//! finds the schema as `super::fb`: whoever includes it imports
//! `tensorflowlite_c::model::fb`.

use super::fb;
use flatbuffers::{FlatBufferBuilder, WIPOffset};

/// A tensor of the model being written.
pub struct TensorSpec {
    pub name: String,
    pub dtype: fb::TensorType,
    pub shape: Vec<i32>,
    /// Constant contents (little-endian bytes), if any.
    pub data: Option<Vec<u8>>,
    /// A variable (state the runtime keeps across invokes).
    pub variable: bool,
    /// Sparsity parameters (sparse constants).
    pub sparsity: Option<SparsitySpec>,
}

/// One dimension of a sparse tensor: DENSE with `dense_size`, or SPARSE_CSR with its
/// segments and indices, written as `index_type` vectors (values cast to that type).
#[derive(Clone)]
pub struct DimSpec {
    pub csr: bool,
    pub dense_size: i32,
    pub segments: Vec<i32>,
    pub indices: Vec<i32>,
    pub index_type: fb::SparseIndexVector,
}

impl DimSpec {
    /// A DENSE dimension.
    pub fn dense(size: i32) -> DimSpec {
        DimSpec {
            csr: false,
            dense_size: size,
            segments: vec![],
            indices: vec![],
            index_type: fb::SparseIndexVector::NONE,
        }
    }

    /// A SPARSE_CSR dimension with int32 index vectors.
    pub fn csr(segments: &[i32], indices: &[i32]) -> DimSpec {
        DimSpec {
            csr: true,
            dense_size: 0,
            segments: segments.to_vec(),
            indices: indices.to_vec(),
            index_type: fb::SparseIndexVector::Int32Vector,
        }
    }
}

/// A tensor's sparsity parameters.
#[derive(Clone)]
pub struct SparsitySpec {
    pub traversal_order: Vec<i32>,
    pub block_map: Vec<i32>,
    pub dims: Vec<DimSpec>,
}

/// An operator of the model being written.
pub struct OpSpec {
    pub op: fb::BuiltinOperator,
    pub version: i32,
    pub inputs: Vec<i32>,
    pub outputs: Vec<i32>,
    /// Fused activation for ADD/SUB/MUL (others ignore it).
    pub activation: fb::ActivationFunctionType,
}

/// Builder for one-subgraph models.
#[derive(Default)]
pub struct ModelWriter {
    tensors: Vec<TensorSpec>,
    ops: Vec<OpSpec>,
    inputs: Vec<i32>,
    outputs: Vec<i32>,
}

impl ModelWriter {
    /// An empty model.
    pub fn new() -> ModelWriter {
        ModelWriter::default()
    }

    /// Adds a float32 activation tensor; returns its index.
    pub fn tensor_f32(&mut self, name: &str, shape: &[i32]) -> i32 {
        self.tensors.push(TensorSpec {
            name: name.into(),
            dtype: fb::TensorType::FLOAT32,
            shape: shape.to_vec(),
            data: None,
            variable: false,
            sparsity: None,
        });
        self.tensors.len() as i32 - 1
    }

    /// Adds a float32 constant; returns its index.
    pub fn constant_f32(&mut self, name: &str, shape: &[i32], values: &[f32]) -> i32 {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.tensors.push(TensorSpec {
            name: name.into(),
            dtype: fb::TensorType::FLOAT32,
            shape: shape.to_vec(),
            data: Some(data),
            variable: false,
            sparsity: None,
        });
        self.tensors.len() as i32 - 1
    }

    /// Gives tensor `t` sparsity parameters.
    pub fn set_sparsity(&mut self, t: i32, sparsity: SparsitySpec) {
        self.tensors[t as usize].sparsity = Some(sparsity);
    }

    /// Marks tensor `t` as a variable.
    pub fn set_variable(&mut self, t: i32) {
        self.tensors[t as usize].variable = true;
    }

    /// Adds a builtin operator.
    pub fn op(&mut self, op: fb::BuiltinOperator, inputs: &[i32], outputs: &[i32]) {
        self.ops.push(OpSpec {
            op,
            version: 1,
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
            activation: fb::ActivationFunctionType::NONE,
        });
    }

    /// Declares the graph inputs and outputs.
    pub fn io(&mut self, inputs: &[i32], outputs: &[i32]) {
        self.inputs = inputs.to_vec();
        self.outputs = outputs.to_vec();
    }

    /// Serializes the model.
    pub fn finish(&self) -> Vec<u8> {
        let mut b = FlatBufferBuilder::new();
        // Buffer 0 is the conventional empty buffer.
        let mut buffers = vec![fb::Buffer::create(&mut b, &fb::BufferArgs::default())];
        let mut tensors = Vec::new();
        for t in &self.tensors {
            let buffer = match &t.data {
                Some(d) => {
                    b.force_defaults(false);
                    let data = b.create_vector(d);
                    buffers
                        .push(fb::Buffer::create(&mut b, &fb::BufferArgs { data: Some(data), ..Default::default() }));
                    buffers.len() as u32 - 1
                }
                None => 0,
            };
            let shape = b.create_vector(&t.shape);
            let name = b.create_string(&t.name);
            let sparsity = t.sparsity.as_ref().map(|sp| Self::sparsity(&mut b, sp));
            tensors.push(fb::Tensor::create(
                &mut b,
                &fb::TensorArgs {
                    shape: Some(shape),
                    type_: t.dtype,
                    buffer,
                    name: Some(name),
                    is_variable: t.variable,
                    sparsity,
                    ..Default::default()
                },
            ));
        }
        let mut codes: Vec<(i32, i32)> = Vec::new();
        let mut operators = Vec::new();
        for o in &self.ops {
            let key = (o.op.0, o.version);
            let idx = match codes.iter().position(|c| *c == key) {
                Some(i) => i,
                None => {
                    codes.push(key);
                    codes.len() - 1
                }
            };
            let inputs = b.create_vector(&o.inputs);
            let outputs = b.create_vector(&o.outputs);
            let (opt_type, opt) = Self::options(&mut b, o);
            operators.push(fb::Operator::create(
                &mut b,
                &fb::OperatorArgs {
                    opcode_index: idx as u32,
                    inputs: Some(inputs),
                    outputs: Some(outputs),
                    builtin_options_type: opt_type,
                    builtin_options: opt,
                    ..Default::default()
                },
            ));
        }
        let opcodes: Vec<_> = codes
            .iter()
            .map(|&(code, version)| {
                fb::OperatorCode::create(
                    &mut b,
                    &fb::OperatorCodeArgs {
                        deprecated_builtin_code: code.min(127) as i8,
                        custom_code: None,
                        version,
                        builtin_code: fb::BuiltinOperator(code),
                    },
                )
            })
            .collect();
        let tensors = b.create_vector(&tensors);
        let operators = b.create_vector(&operators);
        let inputs = b.create_vector(&self.inputs);
        let outputs = b.create_vector(&self.outputs);
        let name = b.create_string("main");
        let sg = fb::SubGraph::create(
            &mut b,
            &fb::SubGraphArgs {
                tensors: Some(tensors),
                inputs: Some(inputs),
                outputs: Some(outputs),
                operators: Some(operators),
                name: Some(name),
                ..Default::default()
            },
        );
        let subgraphs = b.create_vector(&[sg]);
        let opcodes = b.create_vector(&opcodes);
        let buffers = b.create_vector(&buffers);
        let desc = b.create_string("tensorflowlite_c model writer");
        let model = fb::Model::create(
            &mut b,
            &fb::ModelArgs {
                version: 3,
                operator_codes: Some(opcodes),
                subgraphs: Some(subgraphs),
                description: Some(desc),
                buffers: Some(buffers),
                ..Default::default()
            },
        );
        b.finish(model, Some("TFL3"));
        b.finished_data().to_vec()
    }

    fn index_vector(
        b: &mut FlatBufferBuilder<'_>,
        kind: fb::SparseIndexVector,
        v: &[i32],
    ) -> Option<WIPOffset<flatbuffers::UnionWIPOffset>> {
        match kind {
            fb::SparseIndexVector::Int32Vector => {
                let values = Some(b.create_vector(v));
                Some(fb::Int32Vector::create(b, &fb::Int32VectorArgs { values }).as_union_value())
            }
            fb::SparseIndexVector::Uint16Vector => {
                let v: Vec<u16> = v.iter().map(|&x| x as u16).collect();
                let values = Some(b.create_vector(&v));
                Some(fb::Uint16Vector::create(b, &fb::Uint16VectorArgs { values }).as_union_value())
            }
            fb::SparseIndexVector::Uint8Vector => {
                let v: Vec<u8> = v.iter().map(|&x| x as u8).collect();
                let values = Some(b.create_vector(&v));
                Some(fb::Uint8Vector::create(b, &fb::Uint8VectorArgs { values }).as_union_value())
            }
            _ => None,
        }
    }

    fn sparsity<'a>(b: &mut FlatBufferBuilder<'a>, sp: &SparsitySpec) -> WIPOffset<fb::SparsityParameters<'a>> {
        let mut dims = Vec::new();
        for d in &sp.dims {
            let (segments, indices) = if d.csr {
                (Self::index_vector(b, d.index_type, &d.segments), Self::index_vector(b, d.index_type, &d.indices))
            } else {
                (None, None)
            };
            let kind = if d.csr { d.index_type } else { fb::SparseIndexVector::NONE };
            dims.push(fb::DimensionMetadata::create(
                b,
                &fb::DimensionMetadataArgs {
                    format: if d.csr { fb::DimensionType::SPARSE_CSR } else { fb::DimensionType::DENSE },
                    dense_size: d.dense_size,
                    array_segments_type: kind,
                    array_segments: segments,
                    array_indices_type: kind,
                    array_indices: indices,
                },
            ));
        }
        let traversal_order = Some(b.create_vector(&sp.traversal_order));
        let block_map = if sp.block_map.is_empty() { None } else { Some(b.create_vector(&sp.block_map)) };
        let dim_metadata = Some(b.create_vector(&dims));
        fb::SparsityParameters::create(b, &fb::SparsityParametersArgs { traversal_order, block_map, dim_metadata })
    }

    fn options(
        b: &mut FlatBufferBuilder<'_>,
        o: &OpSpec,
    ) -> (fb::BuiltinOptions, Option<WIPOffset<flatbuffers::UnionWIPOffset>>) {
        match o.op {
            fb::BuiltinOperator::ADD => {
                let x = fb::AddOptions::create(
                    b,
                    &fb::AddOptionsArgs { fused_activation_function: o.activation, ..Default::default() },
                );
                (fb::BuiltinOptions::AddOptions, Some(x.as_union_value()))
            }
            fb::BuiltinOperator::MUL => {
                let x = fb::MulOptions::create(b, &fb::MulOptionsArgs { fused_activation_function: o.activation });
                (fb::BuiltinOptions::MulOptions, Some(x.as_union_value()))
            }
            fb::BuiltinOperator::SUB => {
                let x = fb::SubOptions::create(
                    b,
                    &fb::SubOptionsArgs { fused_activation_function: o.activation, ..Default::default() },
                );
                (fb::BuiltinOptions::SubOptions, Some(x.as_union_value()))
            }
            // Convolutions with unit strides and dilations and VALID padding.
            fb::BuiltinOperator::CONV_2D => {
                let x = fb::Conv2DOptions::create(
                    b,
                    &fb::Conv2DOptionsArgs {
                        padding: fb::Padding::VALID,
                        stride_w: 1,
                        stride_h: 1,
                        dilation_w_factor: 1,
                        dilation_h_factor: 1,
                        fused_activation_function: o.activation,
                        ..Default::default()
                    },
                );
                (fb::BuiltinOptions::Conv2DOptions, Some(x.as_union_value()))
            }
            fb::BuiltinOperator::DEPTHWISE_CONV_2D => {
                let x = fb::DepthwiseConv2DOptions::create(
                    b,
                    &fb::DepthwiseConv2DOptionsArgs {
                        padding: fb::Padding::VALID,
                        stride_w: 1,
                        stride_h: 1,
                        depth_multiplier: 1,
                        dilation_w_factor: 1,
                        dilation_h_factor: 1,
                        fused_activation_function: o.activation,
                    },
                );
                (fb::BuiltinOptions::DepthwiseConv2DOptions, Some(x.as_union_value()))
            }
            _ => (fb::BuiltinOptions::NONE, None),
        }
    }
}

/// A one-operator model for the library's unit tests: y = relu(x), x and y of shape [n].
#[cfg(test)]
#[allow(dead_code, reason = "the integration tests that include this file do not use it")]
pub fn relu_model(n: i32) -> Vec<u8> {
    let mut w = ModelWriter::new();
    let x = w.tensor_f32("x", &[n]);
    let y = w.tensor_f32("y", &[n]);
    w.op(fb::BuiltinOperator::RELU, &[x], &[y]);
    w.io(&[x], &[y]);
    w.finish()
}
