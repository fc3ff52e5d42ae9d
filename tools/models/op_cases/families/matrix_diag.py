"""MATRIX_DIAG (a vector per batch onto the diagonal of zeroed square matrices) and
MATRIX_SET_DIAG (the main diagonal of each matrix replaced), over float32, int64,
int32, int16, int8 and uint8; quantized types keep their raw values (zero bits off the
diagonal)."""
import numpy as np
from graph import NP, Graph, quant, rng_for
from make_op_cases import Case


def make(rng, dtype, shape):
    if dtype == "FLOAT32":
        return rng.uniform(-5, 5, shape).astype(np.float32)
    info = np.iinfo(NP[dtype])
    return rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(NP[dtype])


def diag(name, dtype, shape, q=None):
    rng = rng_for(name)
    g = Graph()
    x = g.input("diagonal", dtype, shape, q)
    o = g.tensor("out", dtype, list(shape) + [shape[-1]], q)
    g.op("MATRIX_DIAG", [x], [o])
    g.outputs([o])
    return Case(name, g.finish(), [make(rng, dtype, shape)], ops=["MATRIX_DIAG:1"])


def set_diag(name, dtype, shape, q=None):
    rng = rng_for(name)
    dshape = list(shape[:-2]) + [min(shape[-2], shape[-1])]
    g = Graph()
    x = g.input("input", dtype, shape, q)
    d = g.input("diagonal", dtype, dshape, q)
    o = g.tensor("out", dtype, shape, q)
    g.op("MATRIX_SET_DIAG", [x, d], [o])
    g.outputs([o])
    return Case(name, g.finish(), [make(rng, dtype, shape), make(rng, dtype, dshape)], ops=["MATRIX_SET_DIAG:1"])


def cases():
    yield diag("matrix_diag_f32", "FLOAT32", [2, 4])
    yield diag("matrix_diag_f32_1d", "FLOAT32", [5])
    yield diag("matrix_diag_i64", "INT64", [3])
    yield diag("matrix_diag_i32", "INT32", [2, 2, 3])
    yield diag("matrix_diag_int16", "INT16", [2, 3], q=quant(0.02, 0))
    yield diag("matrix_diag_int8", "INT8", [3, 3], q=quant(0.1, 4))
    yield diag("matrix_diag_uint8", "UINT8", [2, 2], q=quant(0.1, 128))
    yield set_diag("matrix_set_diag_f32", "FLOAT32", [2, 3, 3])
    yield set_diag("matrix_set_diag_f32_wide", "FLOAT32", [2, 4])
    yield set_diag("matrix_set_diag_f32_tall", "FLOAT32", [3, 5, 2])
    yield set_diag("matrix_set_diag_i64", "INT64", [3, 3])
    yield set_diag("matrix_set_diag_i32", "INT32", [2, 2, 3, 2])
    yield set_diag("matrix_set_diag_int16", "INT16", [4, 4])
    yield set_diag("matrix_set_diag_int8", "INT8", [2, 3, 3], q=quant(0.1, -2))
    yield set_diag("matrix_set_diag_uint8", "UINT8", [3, 4], q=quant(0.5, 100))
