#!/usr/bin/env python3
"""Writes the repository's single-op conformance cases: tiny models built here
(tools/models/op_cases/graph.py) and TFLite's answers on them.

    python tools/models/op_cases/make_op_cases.py [--only SUBSTRING] [--list]

Needs ai-edge-litert (LiteRT 2.3.0, TFLite's kernels) and numpy:
    python3 -m venv /tmp/litert-venv && /tmp/litert-venv/bin/pip install ai-edge-litert==2.3.0 numpy

Each family module in families/ defines `cases()`, yielding `Case`s. For each case this
writes tests/op_cases/models/<case>.tflite and tests/op_cases/golden/<case>/ in the corpus
layout (input_i.bin, output_j.bin, meta.json; see ../shared/corpus/README.md): the golden
is TFLite's reference kernels' answer (OpResolverType.BUILTIN_REF), or its optimized
builtin kernels' where the reference resolver lacks the op (`expected_from` says which),
and float outputs carry the spread between the two families as their tolerance.
A case TFLite itself refuses is an error here: every golden comes from TFLite.
"""
import argparse, importlib, json, os, pkgutil, sys
from dataclasses import dataclass, field
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from graph import NP  # noqa: E402
from ai_edge_litert.interpreter import Interpreter, OpResolverType  # noqa: E402
from ai_edge_litert import schema_py_generated as s  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
OUT = os.path.join(ROOT, "tests", "op_cases")
TYPE_NAMES = {v: k for k, v in vars(s.TensorType).items() if not k.startswith("_")}


@dataclass
class Case:
    name: str
    model: bytes
    inputs: list  # numpy arrays, one per subgraph-0 input, in order
    note: str = ""
    ops: list = field(default_factory=list)  # "OP:version" strings, for the reader
    golden_from: str = "ref"  # "builtin" where TFLite's reference kernel is known wrong
    resize_inputs: dict = None  # input position -> new shape, applied before AllocateTensors
    # For ops TFLite does not have (MediaPipe's custom ops): a numpy implementation written
    # from the op's published source, inputs -> list of outputs. The golden is its answer.
    oracle: object = None
    oracle_name: str = ""  # what the oracle is, for meta.json
    float_tolerance: float = 0.0  # the oracle's own float error bound, as the "spread"
    invokes: int = 1  # Invoke calls on the same inputs; the golden is the last one's outputs
    # Float outputs that must equal TFLite's bit for bit (a kernel whose float steps we
    # reproduce in TFLite's order), not just within the tolerance.
    float_bits_exact: bool = False


def run_litert(path, inputs, kernels, resize, invokes=1):
    kind = {"ref": OpResolverType.BUILTIN_REF, "builtin": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}[kernels]
    it = Interpreter(model_path=path, num_threads=1, experimental_op_resolver_type=kind)
    dets = it.get_input_details()
    for pos, shape in (resize or {}).items():
        it.resize_tensor_input(dets[pos]["index"], shape)
    it.allocate_tensors()
    dets = it.get_input_details()
    for d, x in zip(dets, inputs):
        it.set_tensor(d["index"], x)
    for _ in range(invokes):
        it.invoke()
    return [(d, it.get_tensor(d["index"])) for d in it.get_output_details()], dets


def quant_meta(q):
    return {"scale": [float(v) for v in q["scales"]], "zero_point": [int(v) for v in q["zero_points"]],
            "quantized_dimension": int(q["quantized_dimension"])}


def tensor_dtype(model_bytes, index):
    m = s.ModelT.InitFromPackedBuf(model_bytes, 0)
    return TYPE_NAMES[m.subgraphs[0].tensors[index].type]


def tensor_bytes(x):
    """A tensor's bytes as TFLite holds them: string tensors in TFLite's string layout
    (int32 count, count + 1 int32 offsets, the bytes)."""
    if x.dtype.kind not in "OSU":
        return x.tobytes()
    items = [v if isinstance(v, bytes) else str(v).encode() for v in x.reshape(-1)]
    offsets, at = [], 4 * (len(items) + 2)
    for v in items:
        offsets.append(at)
        at += len(v)
    return np.asarray([len(items)] + offsets + [at], np.int32).tobytes() + b"".join(items)


def spread(a, b):
    if a.dtype.kind == "c":
        a, b = a.view(np.float32), b.view(np.float32)
    if a.dtype.kind != "f" or a.shape != b.shape:
        return None
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0.0))


def write_case(c):
    model_rel = f"models/{c.name}.tflite"
    path = os.path.join(OUT, model_rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(c.model)
    if c.oracle is not None:
        return write_oracle_case(c, path, model_rel)
    families = {}
    errors = {}
    for k in ("ref", "builtin"):
        try:
            families[k] = run_litert(path, c.inputs, k, c.resize_inputs, c.invokes)
        except Exception as e:  # a family that lacks the op
            errors[k] = str(e).splitlines()[0] if str(e) else repr(e)
    primary = c.golden_from if c.golden_from in families else ("ref" if "ref" in families else "builtin")
    if primary not in families:
        raise SystemExit(f"{c.name}: TFLite cannot run it: {errors}")
    outs, in_dets = families[primary]
    gdir = os.path.join(OUT, "golden", c.name)
    os.makedirs(gdir, exist_ok=True)
    for old in os.listdir(gdir):
        os.remove(os.path.join(gdir, old))
    meta_in = []
    for i, (d, x) in enumerate(zip(in_dets, c.inputs)):
        x = np.ascontiguousarray(x)
        with open(os.path.join(gdir, f"input_{i}.bin"), "wb") as f:
            f.write(tensor_bytes(x))
        meta_in.append({"name": d["name"], "tensor_index": int(d["index"]),
                        "dtype": tensor_dtype(c.model, d["index"]), "shape": [int(v) for v in x.shape],
                        "quantization": quant_meta(d["quantization_parameters"]), "file": f"input_{i}.bin"})
    meta_out = []
    for j, (d, y) in enumerate(outs):
        y = np.ascontiguousarray(y)
        with open(os.path.join(gdir, f"output_{j}.bin"), "wb") as f:
            f.write(tensor_bytes(y))
        o = {"name": d["name"], "tensor_index": int(d["index"]), "dtype": tensor_dtype(c.model, d["index"]),
             "shape": [int(v) for v in y.shape], "quantization": quant_meta(d["quantization_parameters"]),
             "file": f"output_{j}.bin", "expected_from": primary, "tflite_family_spread": {}}
        other = "builtin" if primary == "ref" else "ref"
        if other in families:
            sp = spread(y, families[other][0][j][1])
            if sp is not None:
                o["tflite_family_spread"][f"{primary}_vs_{other}"] = sp
            elif tensor_bytes(y) != tensor_bytes(families[other][0][j][1]):
                o["families_differ"] = True
        if y.dtype.kind in "fc":
            o["abs_max"] = float(np.max(np.abs(y.view(np.float32) if y.dtype.kind == "c" else y), initial=0.0))
        meta_out.append(o)
    meta = {"case": c.name, "model": model_rel, "ops": c.ops, "note": c.note,
            "reference": "LiteRT 2.3.0 (TFLite), num_threads=1", "resize_inputs": c.resize_inputs,
            "inputs": meta_in, "outputs": meta_out, "known_issue": None, "stateful": False,
            "families_failed": errors or None}
    if c.invokes != 1:
        meta["invokes"] = c.invokes
    if c.float_bits_exact:
        meta["float_bits_exact"] = True
    with open(os.path.join(gdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    return primary, errors


def write_oracle_case(c, path, model_rel):
    """A case whose golden is `c.oracle`'s answer (TFLite cannot run the op)."""
    import flatbuffers  # noqa: F401  (the schema module needs it)
    m = s.ModelT.InitFromPackedBuf(c.model, 0)
    sg = m.subgraphs[0]
    gdir = os.path.join(OUT, "golden", c.name)
    os.makedirs(gdir, exist_ok=True)
    for old in os.listdir(gdir):
        os.remove(os.path.join(gdir, old))

    def tmeta(ti, arr, file):
        t = sg.tensors[ti]
        q = t.quantization
        quant = {"scale": list(map(float, q.scale)) if q is not None and q.scale is not None else [],
                 "zero_point": list(map(int, q.zeroPoint)) if q is not None and q.zeroPoint is not None else [],
                 "quantized_dimension": int(q.quantizedDimension) if q is not None else 0}
        name = t.name.decode() if isinstance(t.name, bytes) else t.name
        return {"name": name, "tensor_index": int(ti), "dtype": TYPE_NAMES[t.type],
                "shape": [int(v) for v in arr.shape], "quantization": quant, "file": file}

    meta_in = []
    for i, (ti, x) in enumerate(zip(sg.inputs, c.inputs)):
        x = np.ascontiguousarray(x)
        with open(os.path.join(gdir, f"input_{i}.bin"), "wb") as f:
            f.write(x.tobytes())
        meta_in.append(tmeta(ti, x, f"input_{i}.bin"))
    meta_out = []
    for j, (ti, y) in enumerate(zip(sg.outputs, c.oracle(*c.inputs))):
        y = np.ascontiguousarray(y)
        with open(os.path.join(gdir, f"output_{j}.bin"), "wb") as f:
            f.write(y.tobytes())
        o = tmeta(ti, y, f"output_{j}.bin")
        o["expected_from"] = "oracle"
        o["tflite_family_spread"] = {"oracle_float_error": c.float_tolerance}
        if y.dtype.kind in "fc":
            o["abs_max"] = float(np.max(np.abs(y), initial=0.0))
        meta_out.append(o)
    meta = {"case": c.name, "model": model_rel, "ops": c.ops, "note": c.note,
            "reference": f"numpy oracle: {c.oracle_name}", "resize_inputs": c.resize_inputs,
            "inputs": meta_in, "outputs": meta_out, "known_issue": None, "stateful": False}
    with open(os.path.join(gdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    return "oracle", {}


def all_cases():
    pkg_dir = os.path.join(HERE, "families")
    for mod in sorted(m.name for m in pkgutil.iter_modules([pkg_dir])):
        module = importlib.import_module(f"families.{mod}")
        for c in module.cases():
            yield mod, c


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="write only cases whose name contains this")
    ap.add_argument("--list", action="store_true", help="print the case names and stop")
    a = ap.parse_args()
    seen = set()
    n = 0
    for fam, c in all_cases():
        if c.name in seen:
            raise SystemExit(f"duplicate case name {c.name}")
        seen.add(c.name)
        if a.list:
            print(c.name)
            continue
        if a.only and a.only not in c.name:
            continue
        primary, errors = write_case(c)
        n += 1
        extra = f" (other family failed: {errors})" if errors else ""
        print(f"{fam}: {c.name}: golden from {primary}{extra}")
    if not a.list:
        print(f"wrote {n} cases under {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
