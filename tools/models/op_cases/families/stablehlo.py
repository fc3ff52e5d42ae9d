"""StableHLO ops TFLite runs: COMPOSITE (its decomposition subgraph), CASE (a branch
subgraph by index), the elementwise ADD / MULTIPLY / MAXIMUM / MINIMUM / AND /
SHIFT_LEFT, PAD, DILATE, GATHER, SCATTER, REDUCE_WINDOW (both), RNG_BIT_GENERATOR."""
import numpy as np
from graph import Graph, NP, rng_for
from make_op_cases import Case


def values(rng, dtype, shape, lo=-1000, hi=1000):
    t = NP[dtype]
    if dtype in ("FLOAT32", "FLOAT64", "FLOAT16"):
        return rng.uniform(-4, 4, shape).astype(t)
    if dtype == "BOOL":
        return rng.integers(0, 2, shape).astype(t)
    info = np.iinfo(t)
    return rng.integers(max(info.min, lo), min(info.max, hi), shape, endpoint=True).astype(t)


# ---- elementwise -------------------------------------------------------------------------

def binary(name, op, dtype, shape, a=None, b=None, note=""):
    g = Graph()
    x = g.input("a", dtype, shape)
    y = g.input("b", dtype, shape)
    z = g.tensor("z", dtype, shape)
    g.op(op, [x, y], [z])
    g.outputs([z])
    rng = rng_for(name)
    a = values(rng, dtype, shape) if a is None else np.asarray(a, NP[dtype]).reshape(shape)
    b = values(rng, dtype, shape) if b is None else np.asarray(b, NP[dtype]).reshape(shape)
    return Case(name, g.finish(), [a, b], note=note, ops=[f"{op}:1"])


ARITH_TYPES = ["FLOAT32", "FLOAT16", "FLOAT64", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16",
               "UINT32", "UINT64", "BOOL"]


def elementwise_cases():
    for op, short in [("STABLEHLO_ADD", "add"), ("STABLEHLO_MULTIPLY", "mul"), ("STABLEHLO_MAXIMUM", "max"),
                      ("STABLEHLO_MINIMUM", "min")]:
        for dt in ARITH_TYPES:
            yield binary(f"stablehlo_{short}_{dt.lower()}", op, dt, [2, 3, 4])
    # Wrapping integer arithmetic, as C++ computes it.
    yield binary("stablehlo_add_int8_wraps", "STABLEHLO_ADD", "INT8", [4], [127, -128, 100, -100], [1, -1, 100, -100],
                 note="int8 sums wrap")
    yield binary("stablehlo_mul_int16_wraps", "STABLEHLO_MULTIPLY", "INT16", [4], [300, -300, 32767, 256],
                 [300, 300, 2, 256], note="int16 products wrap")
    yield binary("stablehlo_mul_int32_wraps", "STABLEHLO_MULTIPLY", "INT32", [3], [65536, -65536, 2**31 - 1],
                 [65536, 65537, 3], note="int32 products wrap")
    yield binary("stablehlo_add_scalar_f32", "STABLEHLO_ADD", "FLOAT32", [], [1.5], [2.25], note="rank 0")
    yield binary("stablehlo_max_empty_f32", "STABLEHLO_MAXIMUM", "FLOAT32", [2, 0, 3], note="empty operands")
    for dt in ["INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64", "BOOL"]:
        yield binary(f"stablehlo_and_{dt.lower()}", "STABLEHLO_AND", dt, [3, 5])
    for dt, bits in [("INT8", 8), ("INT16", 16), ("INT32", 32)]:
        rng = rng_for(f"shift{dt}")
        shape = [4, 6]
        a = values(rng, dt, shape, -100, 100)
        s = rng.integers(0, bits, shape)
        yield binary(f"stablehlo_shift_left_{dt.lower()}", "STABLEHLO_SHIFT_LEFT", dt, shape, a, s,
                     note="shift amounts within the type's width")
    yield binary("stablehlo_shift_left_int8_past_width", "STABLEHLO_SHIFT_LEFT", "INT8", [6], [3, -3, 1, 127, 5, -1],
                 [7, 7, 8, 9, 12, 6], note="int8 shifted as int and truncated: bits past 8 are dropped")


# ---- composite and case ------------------------------------------------------------------

def composite_add_mul(name, dtype="FLOAT32", shape=(2, 3)):
    """z = (a + b) * a, through a composite whose decomposition is ADD then MUL."""
    shape = list(shape)
    g = Graph()
    a = g.input("a", dtype, shape)
    b = g.input("b", dtype, shape)
    z = g.tensor("z", dtype, shape)
    g.op("STABLEHLO_COMPOSITE", [a, b], [z], options=Graph.options(
        "StableHLOCompositeOptions", name="test.add_mul", decompositionSubgraphIndex=1, version=2,
        compositeAttributes=list(b"\x00\x00\x01")))
    g.outputs([z])
    g.new_subgraph("decomposition")
    x1 = g.input("x1", dtype, shape)
    x2 = g.input("x2", dtype, shape)
    s = g.tensor("s", dtype, shape)
    p = g.tensor("p", dtype, shape)
    g.op("ADD", [x1, x2], [s], options=Graph.options("AddOptions"))
    g.op("MUL", [s, x1], [p], options=Graph.options("MulOptions"))
    g.outputs([p])
    g.sub = 0
    rng = rng_for(name)
    return Case(name, g.finish(), [values(rng, dtype, shape, -50, 50), values(rng, dtype, shape, -50, 50)],
                note="the decomposition subgraph computes (a + b) * a", ops=["STABLEHLO_COMPOSITE:1", "ADD:1", "MUL:1"])


def composite_two_outputs(name):
    """Two outputs, one of them an input passed straight through, plus an op after."""
    g = Graph()
    a = g.input("a", "INT32", [5])
    c = g.const("c", "INT32", [5], [1, 2, 3, 4, 5])
    z0 = g.tensor("z0", "INT32", [5])
    z1 = g.tensor("z1", "INT32", [5])
    w = g.tensor("w", "INT32", [5])
    g.op("STABLEHLO_COMPOSITE", [a, c], [z0, z1], options=Graph.options(
        "StableHLOCompositeOptions", name="test.pair", decompositionSubgraphIndex=1, version=1,
        compositeAttributes=list(b"\x00\x00\x01")))
    g.op("STABLEHLO_MULTIPLY", [z0, z1], [w])
    g.outputs([w, z1])
    g.new_subgraph("decomposition")
    x1 = g.input("x1", "INT32", [5])
    x2 = g.input("x2", "INT32", [5])
    m = g.tensor("m", "INT32", [5])
    g.op("STABLEHLO_MAXIMUM", [x1, x2], [m])
    g.outputs([m, x1])
    g.sub = 0
    rng = rng_for(name)
    return Case(name, g.finish(), [rng.integers(-5, 10, [5]).astype(np.int32)],
                note="second output is the decomposition's input itself; a constant operand",
                ops=["STABLEHLO_COMPOSITE:1", "STABLEHLO_MAXIMUM:1", "STABLEHLO_MULTIPLY:1"])


def case_op(name, index, n_branches=3):
    """Branch k computes x * (k + 2) (branch 0: x + x); an out-of-range index picks the last."""
    g = Graph()
    i = g.input("index", "INT32", [])
    x = g.input("x", "FLOAT32", [4])
    y = g.tensor("y", "FLOAT32", [4])
    g.op("STABLEHLO_CASE", [i, x], [y], options=Graph.options(
        "StablehloCaseOptions", branchSubgraphIndices=list(range(1, n_branches + 1))))
    g.outputs([y])
    for k in range(n_branches):
        g.new_subgraph(f"branch{k}")
        bx = g.input("bx", "FLOAT32", [4])
        by = g.tensor("by", "FLOAT32", [4])
        if k == 0:
            g.op("STABLEHLO_ADD", [bx, bx], [by])
        else:
            c = g.const("c", "FLOAT32", [4], [k + 2.0] * 4)
            g.op("STABLEHLO_MULTIPLY", [bx, c], [by])
        g.outputs([by])
    g.sub = 0
    rng = rng_for(name)
    return Case(name, g.finish(), [np.array(index, np.int32), rng.uniform(-3, 3, [4]).astype(np.float32)],
                note=f"branch index {index} of {n_branches}", ops=["STABLEHLO_CASE:1"])


def control_cases():
    yield composite_add_mul("stablehlo_composite_f32")
    yield composite_add_mul("stablehlo_composite_int16", "INT16", (3, 4))
    yield composite_two_outputs("stablehlo_composite_two_outputs")
    for idx in [0, 1, 2]:
        yield case_op(f"stablehlo_case_branch{idx}", idx)
    yield case_op("stablehlo_case_index_past_end", 7)
    yield case_op("stablehlo_case_negative_index", -1)


def cases():
    yield from elementwise_cases()
    yield from control_cases()
