"""BROADCAST_ARGS: the numpy broadcast of two shapes given as int32 or int64 vectors."""
import numpy as np
from graph import NP, Graph
from make_op_cases import Case


def bargs(name, dtype, a, b, note=""):
    g = Graph()
    x = g.input("s0", dtype, [len(a)])
    y = g.input("s1", dtype, [len(b)])
    o = g.tensor("shape", dtype, [max(len(a), len(b))])
    g.op("BROADCAST_ARGS", [x, y], [o])
    g.outputs([o])
    return Case(name, g.finish(), [np.asarray(a, NP[dtype]), np.asarray(b, NP[dtype])], note=note,
                ops=["BROADCAST_ARGS:1"])


def cases():
    yield bargs("broadcast_args_i32", "INT32", [2, 1, 3], [4, 1])
    yield bargs("broadcast_args_i64", "INT64", [1, 5], [7, 3, 1, 1])
    yield bargs("broadcast_args_same", "INT32", [6, 2], [6, 2])
    yield bargs("broadcast_args_zero_dim", "INT64", [0, 1], [1, 9], note="a zero dimension broadcasts against 1")
