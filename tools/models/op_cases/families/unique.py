"""UNIQUE: the distinct values of a 1-D input in order of first appearance (a dynamic
output) and each element's position among them, as int32 or int64 (idx_out_type)."""
import numpy as np
from graph import NP, Graph, rng_for, tensor_type
from make_op_cases import Case


def unique(name, dtype, n, idx_type, distinct=6, note=""):
    rng = rng_for(name)
    pool = rng.uniform(-4, 4, distinct) if dtype == "FLOAT32" else rng.choice(
        np.arange(max(np.iinfo(NP[dtype]).min, -100), min(np.iinfo(NP[dtype]).max, 100) + 1), distinct, replace=False)
    x = (rng.permutation(pool)[:n] if distinct >= n else rng.choice(pool, n)).astype(NP[dtype])
    g = Graph()
    i = g.input("x", dtype, [n])
    y = g.tensor("values", dtype, [n])
    idx = g.tensor("index", idx_type, [n])
    g.op("UNIQUE", [i], [y, idx], options=Graph.options("UniqueOptions", idxOutType=tensor_type(idx_type)))
    g.outputs([y, idx])
    return Case(name, g.finish(), [x], note=note, ops=["UNIQUE:1"])


def cases():
    yield unique("unique_f32_i32", "FLOAT32", 20, "INT32")
    yield unique("unique_f32_i64", "FLOAT32", 12, "INT64")
    yield unique("unique_int8", "INT8", 16, "INT32")
    yield unique("unique_uint8", "UINT8", 16, "INT64")
    yield unique("unique_int16", "INT16", 10, "INT32")
    yield unique("unique_i32", "INT32", 25, "INT32", distinct=9)
    yield unique("unique_i64", "INT64", 8, "INT64", distinct=3)
    yield unique("unique_all_distinct", "INT32", 6, "INT32", distinct=40, note="every value distinct")
