"""DYNAMIC_UPDATE_SLICE: the update written into the operand at start indices, which are
clamped so that the update fits (XLA's semantics)."""
import numpy as np
from graph import Graph, quant, rng_for
from make_op_cases import Case


def dus(name, dtype, shape, ushape, idx_dtype, start, q=None, note=""):
    g = Graph()
    x = g.input("operand", dtype, shape, q)
    u = g.input("update", dtype, ushape, q)
    i = g.input("start", idx_dtype, [len(shape)])
    y = g.tensor("y", dtype, shape, q)
    g.op("DYNAMIC_UPDATE_SLICE", [x, u, i], [y])
    g.outputs([y])
    rng = rng_for(name)
    np_t = {"FLOAT32": np.float32, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
            "BOOL": np.bool_, "UINT8": np.uint8}[dtype]
    def make(sh):
        if dtype == "FLOAT32":
            return rng.uniform(-2, 2, sh).astype(np_t)
        if dtype == "BOOL":
            return rng.integers(0, 2, sh).astype(np_t)
        info = np.iinfo(np_t)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), sh, endpoint=True).astype(np_t)
    idx = np.asarray(start, {"INT32": np.int32, "INT64": np.int64}[idx_dtype])
    return Case(name, g.finish(), [make(shape), make(ushape), idx], note=note, ops=["DYNAMIC_UPDATE_SLICE:1"])


def cases():
    yield dus("dynamic_update_slice_f32", "FLOAT32", [4, 5], [2, 3], "INT32", [1, 1])
    yield dus("dynamic_update_slice_f32_clamped", "FLOAT32", [2, 4, 6], [1, 3, 4], "INT32", [5, -3, 4],
              note="start indices outside the operand are clamped")
    yield dus("dynamic_update_slice_int8", "INT8", [1, 6, 6, 3], [1, 2, 3, 3], "INT32", [0, 2, 1, 0],
              q=quant(0.05, -3))
    yield dus("dynamic_update_slice_int16", "INT16", [3, 7], [3, 2], "INT32", [0, 5], q=quant(0.01, 0))
    yield dus("dynamic_update_slice_i32", "INT32", [8], [3], "INT32", [6])
    yield dus("dynamic_update_slice_i64", "INT64", [2, 3], [1, 3], "INT64", [1, 0])
    yield dus("dynamic_update_slice_uint8", "UINT8", [2, 3, 4], [2, 1, 2], "INT32", [0, 2, 3], q=quant(0.1, 128),
              note="the last start index is clamped from 3 to 2")
    yield dus("dynamic_update_slice_f32_5d", "FLOAT32", [2, 2, 3, 2, 4], [1, 2, 2, 1, 3], "INT64", [1, 0, 1, 1, 1])
    yield dus("dynamic_update_slice_bool", "BOOL", [3, 3], [2, 2], "INT32", [1, 1])
    yield dus("dynamic_update_slice_f32_i64_start", "FLOAT32", [1, 8, 16], [1, 1, 16], "INT64", [0, 3, 0],
              note="a KV-cache style update: one row at a position given as int64")
