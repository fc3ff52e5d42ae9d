#!/usr/bin/env python3
"""Computes a reference answer for a model that TFLite cannot run whole because it uses
MediaPipe's custom ops: every builtin operator is cut out as a one-op model (its
constant inputs included) and run by TFLite's reference kernels (LiteRT 2.3.0,
BUILTIN_REF) on the values the graph has computed so far; each MediaPipe custom op is
computed by the numpy oracle in op_cases/families/mediapipe.py, written from MediaPipe's
published kernel source. So every builtin op's numerics are TFLite's own, and only the
custom ops' come from an independent implementation.

    op_by_op_reference.py MODEL --out DIR [--check-whole-model]

writes DIR/output_j.bin and DIR/meta.json in the corpus layout (see
../shared/corpus/README.md) for inputs given by a formula (fixed_inputs), which the test
recomputes, so no input files are kept. `--check-whole-model` also runs the
model whole in LiteRT (only for models without custom ops) and reports the difference:
the check that cutting the graph into single ops changes nothing.
"""
import argparse, json, os, sys, tempfile
import numpy as np
import flatbuffers
from flatbuffers import flexbuffers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "op_cases"))
from ai_edge_litert import schema_py_generated as s  # noqa: E402
from ai_edge_litert.interpreter import Interpreter, OpResolverType  # noqa: E402
from graph import NP  # noqa: E402

TYPE_NAMES = {v: k for k, v in vars(s.TensorType).items() if not k.startswith("_")}


def custom_oracles():
    """name -> f(inputs: list of arrays, options: dict, output shapes) -> list of arrays."""
    from families import mediapipe as mp
    return {
        "Landmarks2TransformMatrix": lambda ins, o, shapes: [mp.landmarks_to_transform_matrix(ins[0], o)],
        "TransformTensorBilinear":
            lambda ins, o, shapes: [mp.transform_tensor_bilinear(ins[0], ins[1], o, out_shape=shapes[0])],
        "TransformLandmarks": lambda ins, o, shapes: [mp.transform_landmarks(ins[0], ins[1], o)],
        "MaxPoolingWithArgmax2D": lambda ins, o, shapes: mp.max_pooling_with_argmax_2d(ins[0], o),
        "MaxUnpooling2D": lambda ins, o, shapes: [mp.max_unpooling_2d(ins[0], ins[1], o)],
        "Resampler": lambda ins, o, shapes: [mp.resampler(ins[0], ins[1], o)],
    }


def tensor_name(t):
    return t.name.decode() if isinstance(t.name, bytes) else (t.name or "")


def const_value(m, t):
    b = m.buffers[t.buffer] if t.buffer < len(m.buffers) else None
    if b is None or b.data is None or len(b.data) == 0:
        return None
    raw = bytes(bytearray(b.data))
    if t.sparsity is not None:
        return raw  # a sparse constant: its values in the sparse layout, only DENSIFY reads it
    return np.frombuffer(raw, dtype=NP[TYPE_NAMES[t.type]]).reshape(t.shape)


KINDS = {"ref": OpResolverType.BUILTIN_REF, "builtin": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}


def run_one_op(m, op, values, tmpdir, kernels):
    """Runs builtin `op` of subgraph 0 alone on `values` (tensor index -> array)."""
    sg = m.subgraphs[0]
    g = s.ModelT()
    g.version = 3
    g.buffers = [s.BufferT()]
    code = m.operatorCodes[op.opcodeIndex]
    g.operatorCodes = [code]
    sub = s.SubGraphT()
    sub.tensors, sub.inputs, sub.outputs = [], [], []
    remap = {}

    def add(ti, data=None, shape=None):
        src = sg.tensors[ti]
        t = s.TensorT()
        t.name, t.type, t.quantization, t.sparsity = src.name, src.type, src.quantization, src.sparsity
        t.shape = list(shape) if shape is not None else list(src.shape)
        if data is not None:
            b = s.BufferT()
            b.data = list(data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes())
            g.buffers.append(b)
            t.buffer = len(g.buffers) - 1
        sub.tensors.append(t)
        remap[ti] = len(sub.tensors) - 1
        return remap[ti]

    feed = []
    for ti in op.inputs:
        if ti < 0 or ti in remap:
            continue
        c = const_value(m, sg.tensors[ti])
        if c is not None:
            add(ti, data=c)
        else:
            x = values[ti]
            sub.inputs.append(add(ti, shape=x.shape))
            feed.append(x)
    for ti in op.outputs:
        sub.outputs.append(add(ti))
    o = s.OperatorT()
    o.opcodeIndex = 0
    o.inputs = [remap[t] if t >= 0 else -1 for t in op.inputs]
    o.outputs = [remap[t] for t in op.outputs]
    o.builtinOptionsType, o.builtinOptions = op.builtinOptionsType, op.builtinOptions
    o.builtinOptions2Type, o.builtinOptions2 = op.builtinOptions2Type, op.builtinOptions2
    sub.operators = [o]
    g.subgraphs = [sub]
    b = flatbuffers.Builder(1024)
    b.Finish(g.Pack(b), file_identifier=b"TFL3")
    path = os.path.join(tmpdir, "op.tflite")
    with open(path, "wb") as f:
        f.write(bytes(b.Output()))
    it = Interpreter(model_path=path, num_threads=1, experimental_op_resolver_type=KINDS[kernels])
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), feed):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def fixed_inputs(m):
    """Inputs from a formula a test can recompute without files: element i of every input
    is ((i * 7919) mod 256) / 255 (floats) or (i * 7919) mod 256 (integers)."""
    sg = m.subgraphs[0]
    xs = []
    for ti in sg.inputs:
        t = sg.tensors[ti]
        dt = NP[TYPE_NAMES[t.type]]
        v = (np.arange(int(np.prod(t.shape)), dtype=np.int64) * 7919) % 256
        x = (v / 255.0) if np.dtype(dt).kind == "f" else v
        xs.append(x.astype(dt).reshape(t.shape))
    return xs


def op_by_op(m, inputs, kernels):
    sg = m.subgraphs[0]
    values = dict(zip(sg.inputs, inputs))
    oracles = None
    with tempfile.TemporaryDirectory() as tmp:
        for k, op in enumerate(sg.operators):
            code = m.operatorCodes[op.opcodeIndex]
            builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
            if builtin == s.BuiltinOperator.CUSTOM:
                name = code.customCode.decode() if isinstance(code.customCode, bytes) else code.customCode
                oracles = oracles or custom_oracles()
                if name not in oracles:
                    raise SystemExit(f"operator {k}: no oracle for custom op {name}")
                raw = bytes(bytearray(op.customOptions)) if op.customOptions is not None else b""
                opts = flexbuffers.Loads(raw) if len(raw) else {}
                ins = [values[t] if t in values else const_value(m, sg.tensors[t]) for t in op.inputs]
                shapes = [tuple(sg.tensors[t].shape) for t in op.outputs]
                outs = oracles[name](ins, opts, shapes)
            else:
                outs = run_one_op(m, op, values, tmp, kernels)
            for ti, y in zip(op.outputs, outs):
                values[ti] = np.asarray(y)
    return [values[ti] for ti in sg.outputs]


def whole_model(path, inputs):
    it = Interpreter(model_path=path, num_threads=1, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--out", required=True)
    ap.add_argument("--check-whole-model", action="store_true")
    a = ap.parse_args()
    with open(a.model, "rb") as f:
        buf = f.read()
    m = s.ModelT.InitFromPackedBuf(buf, 0)
    sg = m.subgraphs[0]
    inputs = fixed_inputs(m)
    outs = op_by_op(m, inputs, "ref")
    other = op_by_op(m, inputs, "builtin")
    os.makedirs(a.out, exist_ok=True)

    def tmeta(ti, arr, file):
        t = sg.tensors[ti]
        q = t.quantization
        return {"name": tensor_name(t), "tensor_index": int(ti), "dtype": TYPE_NAMES[t.type],
                "shape": [int(v) for v in arr.shape],
                "quantization": {"scale": list(map(float, q.scale)) if q is not None and q.scale is not None else [],
                                 "zero_point": list(map(int, q.zeroPoint)) if q is not None and q.zeroPoint is not None else [],
                                 "quantized_dimension": int(q.quantizedDimension) if q is not None else 0},
                "file": file}

    meta_in, meta_out = [], []
    for i, (ti, x) in enumerate(zip(sg.inputs, inputs)):
        meta_in.append(tmeta(ti, x, None))
    whole = whole_model(a.model, inputs) if a.check_whole_model else None
    for j, (ti, y) in enumerate(zip(sg.outputs, outs)):
        np.ascontiguousarray(y).tofile(os.path.join(a.out, f"output_{j}.bin"))
        o = tmeta(ti, y, f"output_{j}.bin")
        o["expected_from"] = "op_by_op"
        o["tflite_family_spread"] = {"ref_vs_builtin": float(np.max(np.abs(
            other[j].astype(np.float64) - y.astype(np.float64)), initial=0.0))}
        if y.dtype.kind == "f":
            o["abs_max"] = float(np.max(np.abs(y), initial=0.0))
        if whole is not None:
            d = float(np.max(np.abs(whole[j].astype(np.float64) - y.astype(np.float64)), initial=0.0))
            print(f"output {j} {o['name']}: op-by-op vs whole model max abs diff {d:.3g}")
            o["op_by_op_vs_whole_model"] = d
        meta_out.append(o)
    meta = {"case": os.path.basename(a.out.rstrip("/")), "model": os.path.basename(a.model),
            "reference": "op by op: TFLite reference kernels (LiteRT 2.3.0) per builtin op, numpy oracles "
                         "(tools/models/op_cases/families/mediapipe.py) per MediaPipe custom op",
            "inputs_formula": "element i: ((i * 7919) mod 256) / 255 for floats, (i * 7919) mod 256 for integers",
            "resize_inputs": None, "inputs": meta_in, "outputs": meta_out, "stateful": False}
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"wrote {len(outs)} outputs to {a.out}")


if __name__ == "__main__":
    main()
