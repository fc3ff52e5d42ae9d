"""SPARSE_TO_DENSE: values scattered at indices over a default-filled tensor: vector and
[n, rank] indices (int32, int64), 1-D to 4-D outputs, a scalar value for one index, a
repeated index, every value type (float32, int32 at version 1, int64 at 2, int8, uint8 at
3), and an output shape that is an input (a dynamic output)."""
import numpy as np
from graph import NP, Graph, rng_for
from make_op_cases import Case


def s2d(name, indices, idx_dtype, dense, dtype, version, scalar=False, const_shape=True, shape_dtype="INT32",
        note=""):
    rng = rng_for(name)
    indices = np.asarray(indices, NP[idx_dtype])
    n = 1 if indices.ndim == 0 else indices.shape[0]
    vshape = [] if scalar else [n]
    if dtype == "FLOAT32":
        values = rng.uniform(-5, 5, vshape).astype(np.float32)
        default = np.float32(0.25)
    else:
        info = np.iinfo(NP[dtype])
        values = rng.integers(max(info.min, -1000), min(info.max, 1000), vshape, endpoint=True).astype(NP[dtype])
        default = NP[dtype](7)
    g = Graph()
    i = g.const("indices", idx_dtype, list(indices.shape), indices)
    if const_shape:
        s = g.const("output_shape", shape_dtype, [len(dense)], dense)
        inputs = []
    else:
        s = g.input("output_shape", shape_dtype, [len(dense)])
        inputs = [np.asarray(dense, NP[shape_dtype])]
    v = g.input("values", dtype, vshape)
    d = g.const("default_value", dtype, [], [default])
    o = g.tensor("dense", dtype, list(dense))
    g.op("SPARSE_TO_DENSE", [i, s, v, d], [o], version=version,
         options=Graph.options("SparseToDenseOptions", validateIndices=False))
    g.outputs([o])
    return Case(name, g.finish(), inputs + [values], note=note, ops=[f"SPARSE_TO_DENSE:{version}"])


def cases():
    yield s2d("sparse_to_dense_f32_1d", [0, 3, 5, 9], "INT32", [10], "FLOAT32", 1)
    yield s2d("sparse_to_dense_f32_2d", [[0, 1], [2, 3], [1, 0]], "INT32", [3, 4], "FLOAT32", 1)
    yield s2d("sparse_to_dense_i32_3d", [[0, 1, 2], [1, 0, 0], [1, 2, 1], [0, 0, 0]], "INT64", [2, 3, 3], "INT32", 1)
    yield s2d("sparse_to_dense_f32_4d", [[0, 1, 2, 3], [1, 0, 0, 1]], "INT32", [2, 2, 3, 4], "FLOAT32", 1,
              shape_dtype="INT64")
    yield s2d("sparse_to_dense_f32_scalar_value", [[1, 2]], "INT32", [3, 3], "FLOAT32", 1, scalar=True,
              note="a scalar value is accepted for a single index")
    yield s2d("sparse_to_dense_i32_repeated", [2, 2, 0], "INT32", [4], "INT32", 1,
              note="a repeated index keeps its last value")
    yield s2d("sparse_to_dense_i64", [[0, 0], [1, 1]], "INT64", [2, 2], "INT64", 2)
    yield s2d("sparse_to_dense_int8", [1, 4, 6], "INT64", [8], "INT8", 3)
    yield s2d("sparse_to_dense_uint8", [[0, 2], [2, 0]], "INT32", [3, 3], "UINT8", 3)
    yield s2d("sparse_to_dense_f32_dynamic", [[0, 1], [1, 2]], "INT32", [2, 3], "FLOAT32", 1, const_shape=False,
              note="output_shape is an input: the output is sized at Invoke")
    yield s2d("sparse_to_dense_i64_dynamic_i64_shape", [3, 1], "INT64", [5], "INT64", 2, const_shape=False,
              shape_dtype="INT64")
    yield s2d("sparse_to_dense_f32_scalar_index", 2, "INT32", [4], "FLOAT32", 1, scalar=True,
              note="a scalar index")
