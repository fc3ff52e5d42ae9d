"""SEGMENT_SUM (sorted ids from 0, rising by 0 or 1) and UNSORTED_SEGMENT_SUM / PROD / MAX /
MIN (ids in any order, negative ids skipped, ids of any prefix of the data shape, empty
segments holding the reduction's identity), float32 and int32."""
import numpy as np
from graph import NP, Graph, rng_for
from make_op_cases import Case


def values(rng, dtype, shape, small=False):
    if dtype == "FLOAT32":
        return rng.uniform(-2, 2, shape).astype(np.float32)
    hi = 4 if small else 50
    return rng.integers(-hi, hi, shape, endpoint=True).astype(np.int32)


def segment_sum(name, dtype, shape, ids, const_ids=False, note=""):
    rng = rng_for(name)
    data = values(rng, dtype, shape)
    g = Graph()
    d = g.input("data", dtype, shape)
    ids = np.asarray(ids, np.int32)
    if const_ids:
        s = g.const("segment_ids", "INT32", [len(ids)], ids)
        inputs = [data]
    else:
        s = g.input("segment_ids", "INT32", [len(ids)])
        inputs = [data, ids]
    out_shape = [int(ids.max()) + 1] + list(shape[1:])
    o = g.tensor("out", dtype, out_shape)
    g.op("SEGMENT_SUM", [d, s], [o])
    g.outputs([o])
    return Case(name, g.finish(), inputs, note=note, ops=["SEGMENT_SUM:1"])


def unsorted(name, op, dtype, shape, ids, num, const=True, note=""):
    rng = rng_for(name)
    data = values(rng, dtype, shape, small=(op == "UNSORTED_SEGMENT_PROD"))
    ids = np.asarray(ids, np.int32)
    g = Graph()
    d = g.input("data", dtype, shape)
    inputs = [data]
    if const:
        s = g.const("segment_ids", "INT32", list(ids.shape), ids)
        n = g.const("num_segments", "INT32", [1], [num])
    else:
        s = g.input("segment_ids", "INT32", list(ids.shape))
        n = g.input("num_segments", "INT32", [1])
        inputs += [ids, np.asarray([num], np.int32)]
    o = g.tensor("out", dtype, [num] + list(shape[ids.ndim:]))
    g.op(op, [d, s, n], [o])
    g.outputs([o])
    return Case(name, g.finish(), inputs, note=note, ops=[f"{op}:1"])


def cases():
    yield segment_sum("segment_sum_f32", "FLOAT32", [6, 3], [0, 0, 1, 2, 2, 2])
    yield segment_sum("segment_sum_i32", "INT32", [5, 2, 2], [0, 1, 1, 2, 3])
    yield segment_sum("segment_sum_const_ids", "FLOAT32", [4, 5], [0, 0, 0, 1], const_ids=True,
                      note="constant ids with non-constant data: the output is still sized at Invoke")
    for op in ["SUM", "PROD", "MAX", "MIN"]:
        full = f"UNSORTED_SEGMENT_{op}"
        low = op.lower()
        yield unsorted(f"unsorted_segment_{low}_f32", full, "FLOAT32", [6, 4], [3, 0, 3, -1, 1, 0], 5,
                       note="segment 2 and 4 are empty; id -1 is skipped")
        yield unsorted(f"unsorted_segment_{low}_i32", full, "INT32", [5, 3], [1, 1, 0, 2, 1], 3)
    yield unsorted("unsorted_segment_sum_2d_ids", "UNSORTED_SEGMENT_SUM", "FLOAT32", [2, 3, 4],
                   [[0, 1, 0], [2, 2, 1]], 3, note="ids of shape [2, 3], a prefix of the data's")
    yield unsorted("unsorted_segment_max_dynamic", "UNSORTED_SEGMENT_MAX", "INT32", [7, 2], [4, 2, 2, 0, 4, 1, 0], 6,
                   const=False, note="ids and num_segments as inputs: the output is sized at Invoke")
