#!/usr/bin/env python3
"""Makes a dynamic-range (hybrid) model from a float one, as TFLite's converter does with
`optimizations=[tf.lite.Optimize.DEFAULT]` and no representative data: the weights of
every CONV_2D (per output channel) and FULLY_CONNECTED (per tensor) become symmetric int8
with their scales, activations stay float32, and the runtime quantizes each input on the
fly. Needs the `ai-edge-litert` package (for TFLite's schema bindings) and numpy.

    make_dynamic_range.py mobilenet_v2_f32.tflite mobilenet_v2_dynamic_range.tflite
"""
import sys

import numpy as np
from ai_edge_litert import schema_py_generated as fb

# Op versions TFLite gives the hybrid kernels (op_version.cc): CONV_2D with per-channel
# int8 weights and float input is 5; FULLY_CONNECTED with int8 weights is 3.
HYBRID_VERSIONS = {fb.BuiltinOperator.CONV_2D: 5, fb.BuiltinOperator.FULLY_CONNECTED: 3}


def quantize(values, axis):
    """Symmetric int8 quantization, per slice along `axis` (or per tensor for None)."""
    if axis is None:
        scale = np.array([max(np.abs(values).max(), 1e-30) / 127.0], dtype=np.float32)
        q = np.round(values / scale[0])
    else:
        moved = np.moveaxis(values, axis, 0)
        scale = np.maximum(np.abs(moved.reshape(moved.shape[0], -1)).max(axis=1), 1e-30) / 127.0
        scale = scale.astype(np.float32)
        q = np.moveaxis(np.round(moved / scale.reshape((-1,) + (1,) * (moved.ndim - 1))), 0, axis)
    return np.clip(q, -127, 127).astype(np.int8), scale


def main(src, dst):
    model = fb.ModelT.InitFromPackedBuf(bytearray(open(src, "rb").read()), 0)
    sg = model.subgraphs[0]
    done = set()
    for op in sg.operators:
        code = model.operatorCodes[op.opcodeIndex]
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        if builtin not in HYBRID_VERSIONS or len(op.inputs) < 2:
            continue
        t = sg.tensors[op.inputs[1]]
        buf = model.buffers[t.buffer]
        if t.type != fb.TensorType.FLOAT32 or buf.data is None or op.inputs[1] in done:
            continue
        values = np.frombuffer(bytes(bytearray(buf.data)), dtype=np.float32).reshape(t.shape)
        axis = 0 if builtin == fb.BuiltinOperator.CONV_2D else None
        q, scale = quantize(values, axis)
        buf.data = np.frombuffer(q.tobytes(), dtype=np.uint8)
        t.type = fb.TensorType.INT8
        t.quantization = fb.QuantizationParametersT()
        t.quantization.scale = scale.tolist()
        t.quantization.zeroPoint = [0] * len(scale)
        t.quantization.quantizedDimension = 0
        code.version = HYBRID_VERSIONS[builtin]
        done.add(op.inputs[1])
    builder = __import__("flatbuffers").Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    open(dst, "wb").write(builder.Output())
    print(f"{dst}: {len(done)} weight tensors quantized to int8")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
