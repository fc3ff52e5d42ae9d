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




# ---- pad and dilate ----------------------------------------------------------------------

def stablehlo_pad(name, dtype, shape, low, high, interior, out_shape, pad_value=0, note=""):
    g = Graph()
    x = g.input("x", dtype, shape)
    v = g.const("pad_value", dtype, [], [pad_value])
    y = g.tensor("y", dtype, out_shape)
    g.op("STABLEHLO_PAD", [x, v], [y], options=Graph.options(
        "StablehloPadOptions", edgePaddingLow=list(low), edgePaddingHigh=list(high), interiorPadding=list(interior)))
    g.outputs([y])
    rng = rng_for(name)
    return Case(name, g.finish(), [values(rng, dtype, shape, -100, 100)], note=note, ops=["STABLEHLO_PAD:1"])


def dilate(name, dtype, shape, factors, pad_value=0, const_factors=True, note=""):
    g = Graph()
    x = g.input("x", dtype, shape)
    inputs = [values(rng_for(name), dtype, shape, -100, 100)]
    if const_factors:
        f = g.const("dilations", "INT32", [len(shape)], factors)
    else:
        f = g.input("dilations", "INT32", [len(shape)])
        inputs.append(np.asarray(factors, np.int32))
    v = g.const("pad_value", dtype, [], [pad_value])
    out = [(d - 1) * k + 1 for d, k in zip(shape, factors)]
    y = g.tensor("y", dtype, out if const_factors else [1] * len(shape))
    g.op("DILATE", [x, f, v], [y])
    g.outputs([y])
    return Case(name, g.finish(), inputs, note=note, ops=["DILATE:1"])


def pad_cases():
    yield stablehlo_pad("stablehlo_pad_f32_edge_interior", "FLOAT32", [2, 3], [1, 2], [2, 0], [1, 2], [6, 7], 0.5)
    yield stablehlo_pad("stablehlo_pad_f32_negative", "FLOAT32", [4, 5], [-1, 2], [1, -3], [0, 1], [4, 8], -1.0,
                        note="negative edge padding crops, also into interior padding")
    yield stablehlo_pad("stablehlo_pad_f32_negative_interior_crop", "FLOAT32", [5], [-3], [-2], [2], [8], 9.0,
                        note="cropping starts inside the interior padding")
    yield stablehlo_pad("stablehlo_pad_int8", "INT8", [1, 3, 3, 2], [0, 1, 1, 0], [0, 1, 1, 0], [0, 1, 1, 0],
                        [1, 7, 7, 2], -5)
    yield stablehlo_pad("stablehlo_pad_int16", "INT16", [3, 4], [2, 0], [0, 2], [0, 0], [5, 6], 7)
    yield stablehlo_pad("stablehlo_pad_int32", "INT32", [3, 2, 2], [0, 0, -1], [1, 0, 0], [1, 0, 3], [6, 2, 4], 11)
    yield stablehlo_pad("stablehlo_pad_int64", "INT64", [4], [3], [-1], [0], [6], 100)
    yield stablehlo_pad("stablehlo_pad_uint8", "UINT8", [2, 2], [1, 1], [1, 1], [1, 1], [5, 5], 255)
    yield stablehlo_pad("stablehlo_pad_bool", "BOOL", [3], [1], [1], [1], [7], True)
    yield stablehlo_pad("stablehlo_pad_f16", "FLOAT16", [2, 2], [0, 1], [1, 0], [0, 0], [3, 3], 1.5)
    yield stablehlo_pad("stablehlo_pad_crop_to_empty", "FLOAT32", [2, 3], [0, -2], [0, -1], [0, 0], [0, 0],
                        note="a dimension cropped to nothing: TFLite empties every dimension")


def dilate_cases():
    yield dilate("dilate_f32", "FLOAT32", [3, 3], [2, 3], 0.0)
    yield dilate("dilate_f32_trailing_ones", "FLOAT32", [2, 3, 4], [3, 1, 1], -2.5,
                 note="trailing factors of 1 (TFLite merges those dimensions)")
    yield dilate("dilate_int8", "INT8", [1, 4, 4, 2], [1, 2, 2, 1], -7)
    yield dilate("dilate_int32_all_ones", "INT32", [3, 2], [1, 1], 5, note="factors of 1 copy the input")
    yield dilate("dilate_int64", "INT64", [5], [4], 9)
    yield dilate("dilate_uint8_dynamic", "UINT8", [2, 3], [3, 2], 200, const_factors=False,
                 note="dilations given at run time: the output is dynamic")
    yield dilate("dilate_bool", "BOOL", [2, 2], [2, 2], True)


# ---- gather ------------------------------------------------------------------------------

def gather(name, dtype, shape, idx_dtype, indices, offset, collapsed, start_map, ivd, sizes, out_shape, note=""):
    g = Graph()
    x = g.input("operand", dtype, shape)
    indices = np.asarray(indices, NP[idx_dtype])
    i = g.input("start_indices", idx_dtype, list(indices.shape))
    y = g.tensor("y", dtype, out_shape)
    g.op("STABLEHLO_GATHER", [x, i], [y], options=Graph.options(
        "StablehloGatherOptions", offsetDims=list(offset), collapsedSliceDims=list(collapsed),
        startIndexMap=list(start_map), indexVectorDim=ivd, sliceSizes=list(sizes), indicesAreSorted=False))
    g.outputs([y])
    return Case(name, g.finish(), [values(rng_for(name), dtype, shape), indices], note=note,
                ops=["STABLEHLO_GATHER:1"])


def gather_cases():
    # Rows of a matrix (tf.gather on axis 0).
    for dt in ["FLOAT32", "FLOAT16", "FLOAT64", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32",
               "UINT64"]:
        yield gather(f"stablehlo_gather_rows_{dt.lower()}", dt, [5, 3], "INT32", [[4], [0], [2], [2]], [1], [0], [0],
                     1, [1, 3], [4, 3])
    yield gather("stablehlo_gather_spec_example", "INT32", [3, 4, 2], "INT64",
                 [[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 2]]], [2, 3], [0], [1, 0], 2, [1, 2, 2],
                 [2, 3, 2, 2], note="StableHLO spec's example: 2-D start indices, partial slices")
    yield gather("stablehlo_gather_clamped", "FLOAT32", [4, 6], "INT32", [[3, 5], [1, 2], [0, 9]], [1, 2], [], [0, 1],
                 1, [2, 3], [3, 2, 3], note="starts past the end are moved back so the slice fits")
    yield gather("stablehlo_gather_index_dim_first", "INT16", [6, 2], "INT32", [[1, 5, 0]], [1], [0], [0], 0, [1, 2],
                 [3, 2], note="index_vector_dim 0")
    yield gather("stablehlo_gather_offset_first", "FLOAT32", [3, 5], "INT64", [[2], [0]], [0], [1], [1], 1, [3, 1],
                 [3, 2], note="the slice dimension comes before the batch one in the output")


# ---- reduce window -----------------------------------------------------------------------

BODY_OPS = {"add": "STABLEHLO_ADD", "mul": "STABLEHLO_MULTIPLY", "max": "STABLEHLO_MAXIMUM",
            "min": "STABLEHLO_MINIMUM", "and": "LOGICAL_AND", "or": "LOGICAL_OR", "tfl_add": "ADD",
            "tfl_max": "MAXIMUM"}


def stablehlo_reduce_window(name, dtype, shape, init, body, window, strides=None, base=None, wdil=None,
                            padding=None, note=""):
    rank = len(shape)
    strides = strides or [1] * rank
    base = base or [1] * rank
    wdil = wdil or [1] * rank
    padding = padding or [0] * (2 * rank)
    out = []
    for d in range(rank):
        padded = (shape[d] - 1) * base[d] + 1 + padding[2 * d] + padding[2 * d + 1]
        ext = (window[d] - 1) * wdil[d] + 1
        out.append(0 if padded < ext else (padded - ext) // strides[d] + 1)
    g = Graph()
    x = g.input("operand", dtype, shape)
    v = g.const("init", dtype, [], [init])
    y = g.tensor("y", dtype, out)
    g.op("STABLEHLO_REDUCE_WINDOW", [x, v], [y], options=Graph.options(
        "StablehloReduceWindowOptions", windowDimensions=list(window), windowStrides=list(strides),
        baseDilations=list(base), windowDilations=list(wdil), padding=list(padding), bodySubgraphIndex=1))
    g.outputs([y])
    g.new_subgraph("body")
    a = g.input("acc", dtype, [])
    b = g.input("elem", dtype, [])
    c = g.tensor("res", dtype, [])
    op = BODY_OPS[body]
    if op in ("ADD", "MUL"):
        g.op(op, [a, b], [c], options=Graph.options("AddOptions" if op == "ADD" else "MulOptions"))
    else:
        g.op(op, [a, b], [c])
    g.outputs([c])
    g.sub = 0
    return Case(name, g.finish(), [values(rng_for(name), dtype, shape, -20, 20)], note=note,
                ops=["STABLEHLO_REDUCE_WINDOW:1", f"{op}:1"])


def tfl_reduce_window(name, dtype, shape, init, func, window, strides, wdil, note=""):
    rank = len(shape)
    out = []
    for d in range(rank):
        ext = (window[d] - 1) * wdil[d] + 1
        out.append(0 if shape[d] < ext else (shape[d] - ext) // strides[d] + 1)
    g = Graph()
    x = g.input("operand", dtype, shape)
    v = g.const("init", dtype, [], [init])
    w = g.const("window_shape", "INT64", [rank], window)
    s = g.const("window_strides", "INT64", [rank], strides)
    d = g.const("window_dilations", "INT64", [rank], wdil)
    y = g.tensor("y", dtype, out)
    from ai_edge_litert import schema_py_generated as sch
    g.op("REDUCE_WINDOW", [x, v, w, s, d], [y], options=Graph.options(
        "ReduceWindowOptions", reduceFunction=getattr(sch.ReduceWindowFunction, func)))
    g.outputs([y])
    return Case(name, g.finish(), [values(rng_for(name), dtype, shape, -20, 20)], note=note,
                ops=["REDUCE_WINDOW:1"])


def reduce_window_cases():
    yield stablehlo_reduce_window("stablehlo_reduce_window_add_f32", "FLOAT32", [4, 6], 0.0, "add", [2, 3], [2, 1])
    yield stablehlo_reduce_window("stablehlo_reduce_window_max_f32_padded", "FLOAT32", [1, 5, 5, 2], -1e30, "max",
                                  [1, 3, 3, 1], [1, 2, 2, 1], padding=[0, 0, 1, 1, 1, 1, 0, 0],
                                  note="max pooling with SAME-like padding")
    yield stablehlo_reduce_window("stablehlo_reduce_window_add_i32_dilated", "INT32", [5, 4], 3, "add", [2, 2],
                                  [1, 2], base=[2, 1], wdil=[1, 2], padding=[1, 0, 0, 1],
                                  note="base and window dilations, padding; init value counted per window")
    yield stablehlo_reduce_window("stablehlo_reduce_window_min_i8_cropped", "INT8", [6, 5], 100, "min", [2, 2],
                                  [2, 1], padding=[-1, -1, 0, -2], note="negative padding crops")
    yield stablehlo_reduce_window("stablehlo_reduce_window_mul_i64", "INT64", [3, 4], 1, "mul", [2, 2])
    yield stablehlo_reduce_window("stablehlo_reduce_window_add_i16_wraps", "INT16", [8], 30000, "add", [3], [1],
                                  note="sums wrap")
    yield stablehlo_reduce_window("stablehlo_reduce_window_max_u8", "UINT8", [3, 7], 0, "max", [3, 2], [1, 3])
    yield stablehlo_reduce_window("stablehlo_reduce_window_f64_tfl_add_body", "FLOAT64", [2, 3, 4], 0.5, "tfl_add",
                                  [1, 2, 2], [1, 1, 2], note="body is TFLite's ADD")
    yield stablehlo_reduce_window("stablehlo_reduce_window_and_bool", "BOOL", [4, 4], True, "and", [2, 2], [1, 1])
    yield stablehlo_reduce_window("stablehlo_reduce_window_or_bool", "BOOL", [5], False, "or", [3], [2],
                                  padding=[1, 1])
    yield stablehlo_reduce_window("stablehlo_reduce_window_empty_output", "FLOAT32", [2, 3], 0.0, "add", [3, 1],
                                  note="the window is larger than the operand")
    yield tfl_reduce_window("reduce_window_add_f32", "FLOAT32", [4, 5], 0.0, "ADD", [2, 2], [2, 1], [1, 1])
    yield tfl_reduce_window("reduce_window_max_i32_dilated", "INT32", [6, 6], -1000, "MAXIMUM", [2, 3], [1, 2],
                            [2, 1])
    yield tfl_reduce_window("reduce_window_min_i8", "INT8", [7], 50, "MINIMUM", [3], [2], [1])
    yield tfl_reduce_window("reduce_window_mul_i64", "INT64", [2, 4], 1, "MUL", [1, 2], [1, 2], [1, 1])
    yield tfl_reduce_window("reduce_window_all_bool", "BOOL", [3, 3], True, "ALL", [2, 2], [1, 1], [1, 1])
    yield tfl_reduce_window("reduce_window_any_f64", "FLOAT64", [5], 0.0, "ANY", [2], [1], [1],
                            note="ANY on floats gives 1.0 or 0.0")


# ---- scatter -----------------------------------------------------------------------------

def scatter(name, dtype, shape, idx_dtype, indices, upd_shape, window, inserted, to_op, ivd, body, note=""):
    g = Graph()
    x = g.input("operand", dtype, shape)
    indices = np.asarray(indices, NP[idx_dtype])
    i = g.input("scatter_indices", idx_dtype, list(indices.shape))
    u = g.input("updates", dtype, upd_shape)
    y = g.tensor("y", dtype, shape)
    g.op("STABLEHLO_SCATTER", [x, i, u], [y], options=Graph.options(
        "StablehloScatterOptions", indicesAreSorted=False, updateWindowDims=list(window),
        insertedWindowDims=list(inserted), scatterDimsToOperandDims=list(to_op), indexVectorDim=ivd,
        uniqueIndices=False, updateComputationSubgraphIndex=1))
    g.outputs([y])
    g.new_subgraph("update_computation")
    a = g.input("old", dtype, [])
    b = g.input("new", dtype, [])
    if body is None:
        g.outputs([b])
    else:
        c = g.tensor("res", dtype, [])
        g.op(body, [a, b], [c])
        g.outputs([c])
    g.sub = 0
    rng = rng_for(name)
    return Case(name, g.finish(), [values(rng, dtype, shape, -50, 50), indices, values(rng, dtype, upd_shape, -50, 50)],
                note=note, ops=["STABLEHLO_SCATTER:1"] + ([f"{body}:1"] if body else []))


def scatter_cases():
    rows = [[3], [0], [3], [9], [1]]
    for dt in ["FLOAT32", "FLOAT16", "FLOAT64", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32",
               "UINT64"]:
        yield scatter(f"stablehlo_scatter_add_rows_{dt.lower()}", dt, [4, 3], "INT32", rows, [5, 3], [1], [0], [0], 1,
                      "STABLEHLO_ADD", note="row 3 updated twice, row 9 out of bounds (dropped)")
    yield scatter("stablehlo_scatter_replace", "FLOAT32", [4, 3], "INT64", rows, [5, 3], [1], [0], [0], 1, None,
                  note="an empty update computation: values are replaced, the last update wins")
    yield scatter("stablehlo_scatter_mul", "INT32", [4, 3], "INT32", rows, [5, 3], [1], [0], [0], 1,
                  "STABLEHLO_MULTIPLY")
    yield scatter("stablehlo_scatter_max", "FLOAT32", [4, 3], "INT32", rows, [5, 3], [1], [0], [0], 1,
                  "STABLEHLO_MAXIMUM")
    yield scatter("stablehlo_scatter_min", "INT16", [4, 3], "INT32", rows, [5, 3], [1], [0], [0], 1,
                  "STABLEHLO_MINIMUM")
    yield scatter("stablehlo_scatter_spec_example", "INT32", [3, 4, 2], "INT64",
                  [[[0, 2], [1, 0], [2, 1]], [[0, 1], [1, 0], [0, 9]]], [2, 3, 2, 2], [2, 3], [0], [1, 0], 2,
                  "STABLEHLO_ADD", note="StableHLO spec's example: windows partly out of bounds are dropped")
    yield scatter("stablehlo_scatter_points_2d", "FLOAT32", [3, 3], "INT32", [[0, 0], [2, 1], [1, 2], [2, 1]], [4],
                  [], [0, 1], [0, 1], 1, "STABLEHLO_ADD", note="single elements at 2-D points")


def cases():
    yield from elementwise_cases()
    yield from control_cases()
    yield from pad_cases()
    yield from dilate_cases()
    yield from gather_cases()
    yield from reduce_window_cases()
    yield from scatter_cases()
