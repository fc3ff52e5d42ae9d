"""WHERE: the int64 coordinates of the true (non-zero) elements of a condition; the output
shape depends on the values, so the output is dynamic unless the condition is constant."""
import numpy as np
from graph import NP, Graph, rng_for
from make_op_cases import Case


def where(name, dtype, shape, version, density=0.4, const=False, note=""):
    rng = rng_for(name)
    mask = rng.uniform(0, 1, shape) < density
    if dtype == "BOOL":
        cond = mask
    elif dtype == "FLOAT32":
        cond = np.where(mask, rng.uniform(-3, 3, shape), 0.0).astype(np.float32)
        if cond.size > 2:
            cond.flat[0] = -0.0  # -0.0 equals zero: not a true element
    else:
        info = np.iinfo(NP[dtype])
        vals = rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True)
        cond = np.where(mask, vals, 0).astype(NP[dtype])
    g = Graph()
    inputs = []
    if const:
        c = g.const("cond", dtype, shape, cond)
    else:
        c = g.input("cond", dtype, shape)
        inputs = [cond]
    y = g.tensor("coords", "INT64", [1, len(shape)])
    g.op("WHERE", [c], [y], version=version)
    g.outputs([y])
    return Case(name, g.finish(), inputs, note=note, ops=[f"WHERE:{version}"])


def cases():
    yield where("where_bool_2d", "BOOL", [4, 5], 1)
    yield where("where_bool_1d", "BOOL", [9], 1)
    yield where("where_bool_4d", "BOOL", [2, 3, 2, 4], 1)
    yield where("where_bool_const", "BOOL", [3, 3], 1, const=True, note="a constant condition sizes the output at Prepare")
    yield where("where_f32", "FLOAT32", [3, 6], 2, note="non-zero floats are true, -0.0 is not")
    yield where("where_i32", "INT32", [2, 3, 4], 2)
    yield where("where_i64", "INT64", [10], 2)
    yield where("where_int8", "INT8", [4, 4], 2)
    yield where("where_uint8", "UINT8", [5, 3], 2)
    yield where("where_uint32", "UINT32", [2, 7], 2)
