"""A small builder for single-op .tflite models, on the flatbuffer object API that
ai-edge-litert ships (`ai_edge_litert.schema_py_generated`).

    g = Graph()
    x = g.input("x", "FLOAT32", [2, 3])
    i = g.const("begin", "INT32", [2], [0, 1])
    y = g.tensor("y", "FLOAT32", [2, 3])
    g.op("DYNAMIC_UPDATE_SLICE", [x, u, i], [y])
    g.outputs([y])
    bytes = g.finish()

Options go in as the generated `...OptionsT` objects (`g.options("Conv3DOptions", strideD=1)`),
custom ops as `g.custom_op("Name", ins, outs, custom_options=bytes)`.
"""
import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as s

NP = {
    "FLOAT32": np.float32, "FLOAT16": np.float16, "FLOAT64": np.float64, "INT32": np.int32,
    "UINT8": np.uint8, "INT64": np.int64, "BOOL": np.bool_, "INT16": np.int16,
    "INT8": np.int8, "UINT32": np.uint32, "UINT16": np.uint16, "UINT64": np.uint64,
    "COMPLEX64": np.complex64,
}


def rng_for(name):
    """A random generator seeded from the case name: the same inputs on every run."""
    import zlib
    return np.random.default_rng(zlib.crc32(name.encode()))


def tensor_type(name):
    return getattr(s.TensorType, name)


def quant(scale, zero_point, dim=0):
    q = s.QuantizationParametersT()
    q.scale = list(np.atleast_1d(np.asarray(scale, np.float32)).tolist())
    q.zeroPoint = list(np.atleast_1d(np.asarray(zero_point, np.int64)).tolist())
    q.quantizedDimension = dim
    return q


class Graph:
    """One model with one or more subgraphs; `sub` selects the subgraph being built."""

    def __init__(self):
        self.buffers = [s.BufferT()]  # buffer 0: the empty buffer every tensor without data uses
        self.codes = []
        self.subgraphs = [s.SubGraphT(tensors=[], inputs=[], outputs=[], operators=[])]
        self.sub = 0

    def new_subgraph(self, name=None):
        self.subgraphs.append(s.SubGraphT(tensors=[], inputs=[], outputs=[], operators=[], name=name))
        self.sub = len(self.subgraphs) - 1
        return self.sub

    @property
    def sg(self):
        return self.subgraphs[self.sub]

    def tensor(self, name, dtype, shape, q=None, data=None, signature=None, variable=False, sparsity=None):
        t = s.TensorT()
        t.name = name
        t.type = tensor_type(dtype)
        t.shape = list(shape)
        if signature is not None:
            t.shapeSignature = list(signature)
        t.quantization = q
        t.isVariable = variable
        t.sparsity = sparsity
        if data is not None:
            raw = data if isinstance(data, (bytes, bytearray)) else np.asarray(data, NP[dtype]).tobytes()
            b = s.BufferT()
            b.data = list(raw)
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        self.sg.tensors.append(t)
        return len(self.sg.tensors) - 1

    def input(self, name, dtype, shape, q=None, signature=None):
        i = self.tensor(name, dtype, shape, q, signature=signature)
        self.sg.inputs.append(i)
        return i

    def const(self, name, dtype, shape, values, q=None, sparsity=None):
        return self.tensor(name, dtype, shape, q, data=values, sparsity=sparsity)

    def outputs(self, outs):
        self.sg.outputs = list(outs)

    def _code(self, builtin, custom, version):
        code = getattr(s.BuiltinOperator, builtin) if builtin else s.BuiltinOperator.CUSTOM
        for k, c in enumerate(self.codes):
            if c.builtinCode == code and c.customCode == custom and c.version == version:
                return k
        c = s.OperatorCodeT()
        c.builtinCode = code
        c.deprecatedBuiltinCode = min(code, 127)
        c.customCode = custom
        c.version = version
        self.codes.append(c)
        return len(self.codes) - 1

    @staticmethod
    def options(kind, **fields):
        """(union type, options object) for `op(..., options=...)`: kind names the table,
        e.g. "Conv3DOptions"; fields are its object-API attribute names."""
        obj = getattr(s, kind + "T")()
        for k, v in fields.items():
            if not hasattr(obj, k):
                raise AttributeError(f"{kind} has no field {k}")
            setattr(obj, k, v)
        return kind, obj

    def op(self, builtin, inputs, outputs, version=1, options=None, intermediates=None):
        o = s.OperatorT()
        o.opcodeIndex = self._code(builtin, None, version)
        o.inputs = list(inputs)
        o.outputs = list(outputs)
        if options is not None:
            kind, obj = options
            if hasattr(s.BuiltinOptions, kind):
                o.builtinOptionsType = getattr(s.BuiltinOptions, kind)
                o.builtinOptions = obj
            else:
                o.builtinOptions2Type = getattr(s.BuiltinOptions2, kind)
                o.builtinOptions2 = obj
        if intermediates:
            o.intermediates = list(intermediates)
        self.sg.operators.append(o)

    def custom_op(self, name, inputs, outputs, custom_options=b"", version=1):
        o = s.OperatorT()
        o.opcodeIndex = self._code(None, name, version)
        o.inputs = list(inputs)
        o.outputs = list(outputs)
        o.customOptions = list(custom_options)
        self.sg.operators.append(o)

    def finish(self):
        m = s.ModelT()
        m.version = 3
        m.operatorCodes = self.codes
        m.subgraphs = self.subgraphs
        m.buffers = self.buffers
        m.description = "single-op case"
        b = flatbuffers.Builder(1024)
        b.Finish(m.Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def random_weights(g, rng, name, shape, lim, hybrid):
    """A constant of uniform values in [-lim, lim]: float32, or for a hybrid (dynamic-range)
    model int8 with one symmetric scale, as TFLite's converter quantizes weights."""
    v = rng.uniform(-lim, lim, shape).astype(np.float32)
    if not hybrid:
        return g.const(name, "FLOAT32", shape, v)
    scale = float(np.max(np.abs(v))) / 127.0
    return g.const(name, "INT8", shape, np.round(v / scale).astype(np.int8), q=quant(scale, 0))
