"""EMBEDDING_LOOKUP_SPARSE: weighted rows of `value` gathered into the slots a sparse
tensor names, combined by SUM, MEAN or SQRTN."""
import numpy as np
from ai_edge_litert import schema_py_generated as s
from graph import Graph, rng_for
from make_op_cases import Case


def els(name, combiner, ids, indices, dense_shape, value_shape, weights=None, note=""):
    rng = rng_for(name)
    ids = np.asarray(ids, np.int32)
    indices = np.asarray(indices, np.int32).reshape(len(ids), len(dense_shape))
    dense_shape = np.asarray(dense_shape, np.int32)
    if weights is None:
        weights = rng.uniform(0.25, 2.0, [len(ids)])
    weights = np.asarray(weights, np.float32)
    value = rng.uniform(-3, 3, value_shape).astype(np.float32)
    g = Graph()
    i0 = g.input("ids", "INT32", [len(ids)])
    i1 = g.input("indices", "INT32", list(indices.shape))
    i2 = g.input("dense_shape", "INT32", [len(dense_shape)])
    i3 = g.input("weights", "FLOAT32", [len(ids)])
    i4 = g.input("value", "FLOAT32", list(value_shape))
    y = g.tensor("y", "FLOAT32", [])
    g.op("EMBEDDING_LOOKUP_SPARSE", [i0, i1, i2, i3, i4], [y], options=Graph.options(
        "EmbeddingLookupSparseOptions", combiner=getattr(s.CombinerType, combiner)))
    g.outputs([y])
    return Case(name, g.finish(), [ids, indices, dense_shape, weights, value], note=note,
                ops=["EMBEDDING_LOOKUP_SPARSE:1"])


def cases():
    # Three examples of a [3, 4] sparse tensor: example 0 has two ids, 1 none, 2 three.
    ids = [1, 3, 0, 2, 4]
    idx = [[0, 0], [0, 1], [2, 0], [2, 1], [2, 3]]
    for c in ["SUM", "MEAN", "SQRTN"]:
        yield els(f"embedding_lookup_sparse_{c.lower()}", c, ids, idx, [3, 4], [5, 4])
    yield els("embedding_lookup_sparse_3d_value", "MEAN", [0, 2, 1], [[0, 0], [1, 0], [1, 1]], [2, 2], [3, 2, 3],
              note="a value of rank 3: each row is 2x3")
    yield els("embedding_lookup_sparse_rank3_lookup", "SQRTN", [1, 0, 1, 2], [[0, 0, 0], [0, 1, 0], [0, 1, 2],
              [1, 1, 1]], [2, 2, 3], [3, 5], note="lookups of rank 3: output [2, 2, 5]")
    yield els("embedding_lookup_sparse_regrouped", "MEAN", [0, 1, 2], [[0, 0], [1, 0], [0, 1]], [2, 2], [3, 2],
              weights=[2.0, 1.0, 4.0], note="slot 0 met again after slot 1: combined twice, as TFLite does")
    yield els("embedding_lookup_sparse_rank1_lookup", "SUM", [2, 0], [[0], [1]], [1], [3, 4],
              note="lookups of rank 1: every id goes to the one slot")
