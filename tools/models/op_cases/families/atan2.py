"""ATAN2: atan2(y, x) element by element, float32 and float64, all four quadrants and the
axes."""
import numpy as np
from graph import NP, Graph, rng_for
from make_op_cases import Case


def atan2(name, dtype, shape, note=""):
    rng = rng_for(name)
    y = rng.uniform(-3, 3, shape).astype(NP[dtype])
    x = rng.uniform(-3, 3, shape).astype(NP[dtype])
    flat_y, flat_x = y.reshape(-1), x.reshape(-1)
    for k, (a, b) in enumerate([(0, 1), (0, -1), (1, 0), (-1, 0), (0, 0)]):
        if k < flat_y.size:
            flat_y[k], flat_x[k] = a, b
    g = Graph()
    i = g.input("y", dtype, shape)
    j = g.input("x", dtype, shape)
    o = g.tensor("out", dtype, shape)
    g.op("ATAN2", [i, j], [o])
    g.outputs([o])
    return Case(name, g.finish(), [y, x], note=note, ops=["ATAN2:1"])


def cases():
    yield atan2("atan2_f32", "FLOAT32", [4, 8])
    yield atan2("atan2_f32_4d", "FLOAT32", [1, 2, 3, 5])
    yield atan2("atan2_f64", "FLOAT64", [3, 7])
