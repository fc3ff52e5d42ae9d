"""BUCKETIZE: for each value, how many (sorted, float32) boundaries are not above it, as
int32; float32, float64, int32 and int64 inputs, values on the boundaries included."""
import numpy as np
from graph import NP, Graph, rng_for
from make_op_cases import Case


def bucketize(name, dtype, shape, boundaries, note=""):
    rng = rng_for(name)
    if dtype in ("FLOAT32", "FLOAT64"):
        x = rng.uniform(-12, 12, shape).astype(NP[dtype])
    else:
        x = rng.integers(-12, 12, shape, endpoint=True).astype(NP[dtype])
    flat = x.reshape(-1)
    for k, b in enumerate(boundaries[: flat.size // 2]):
        flat[2 * k] = b  # values exactly on a boundary fall in the bucket above it
    g = Graph()
    i = g.input("x", dtype, shape)
    o = g.tensor("bucket", "INT32", shape)
    g.op("BUCKETIZE", [i], [o], options=Graph.options("BucketizeOptions", boundaries=list(boundaries)))
    g.outputs([o])
    return Case(name, g.finish(), [x], note=note, ops=["BUCKETIZE:1"])


def cases():
    yield bucketize("bucketize_f32", "FLOAT32", [4, 6], [-5.0, -1.5, 0.0, 2.0, 7.25])
    yield bucketize("bucketize_f64", "FLOAT64", [10], [-3.0, 3.0])
    yield bucketize("bucketize_i32", "INT32", [3, 5], [-4.0, 0.0, 0.5, 6.0, 6.0, 9.0],
                    note="a repeated boundary counts twice")
    yield bucketize("bucketize_i64", "INT64", [2, 2, 3], [0.0, 10.0])
