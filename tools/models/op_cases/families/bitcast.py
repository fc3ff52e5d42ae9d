"""BITCAST: the input's bytes as the output's type; a narrower output appends a dimension,
a wider one consumes the last."""
import numpy as np
from graph import NP, Graph, rng_for
from make_op_cases import Case


def bitcast(name, src, dst, shape, out_shape, note=""):
    rng = rng_for(name)
    raw = rng.integers(0, 256, int(np.prod(shape)) * np.dtype(NP[src]).itemsize, dtype=np.uint8)
    x = raw.view(NP[src]).reshape(shape)
    if NP[src] in (np.float32, np.float64):
        x = rng.uniform(-10, 10, shape).astype(NP[src])
    if NP[dst] in (np.float32, np.float64) and NP[src] not in (np.float32, np.float64):
        # Finite float bit patterns: the golden comparison does not accept NaN.
        x = rng.uniform(-10, 10, shape).astype(NP[dst]).view(NP[src]).reshape(shape)
    g = Graph()
    i = g.input("x", src, shape)
    o = g.tensor("y", dst, out_shape)
    g.op("BITCAST", [i], [o])
    g.outputs([o])
    return Case(name, g.finish(), [x], note=note, ops=["BITCAST:1"])


def cases():
    yield bitcast("bitcast_f32_to_i32", "FLOAT32", "INT32", [3, 4], [3, 4])
    yield bitcast("bitcast_i32_to_u8", "INT32", "UINT8", [2, 3], [2, 3, 4])
    yield bitcast("bitcast_i8_to_i32", "INT8", "INT32", [5, 4], [5])
    yield bitcast("bitcast_i16_to_i64", "INT16", "INT64", [2, 3, 4], [2, 3])
    yield bitcast("bitcast_i64_to_u16", "INT64", "UINT16", [3], [3, 4])
    yield bitcast("bitcast_u32_to_f32", "UINT32", "FLOAT32", [6], [6])
