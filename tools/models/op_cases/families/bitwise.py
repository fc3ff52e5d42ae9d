"""BITWISE_XOR and RIGHT_SHIFT on 8/16/32-bit signed and unsigned integers, with numpy
broadcasting; RIGHT_SHIFT clamps the shift into [0, bits - 1] and shifts signed values
arithmetically."""
import numpy as np
from graph import NP, Graph, rng_for
from make_op_cases import Case


def binary(name, op, dtype, ashape, bshape, note=""):
    rng = rng_for(name)
    info = np.iinfo(NP[dtype])
    a = rng.integers(info.min, info.max, ashape, endpoint=True).astype(NP[dtype])
    if op == "RIGHT_SHIFT":
        bits = info.bits
        lo = -3 if info.min < 0 else 0
        b = rng.integers(lo, bits + 4, bshape, endpoint=True).astype(NP[dtype])
    else:
        b = rng.integers(info.min, info.max, bshape, endpoint=True).astype(NP[dtype])
    out_shape = list(np.broadcast_shapes(tuple(ashape), tuple(bshape)))
    g = Graph()
    x = g.input("a", dtype, ashape)
    y = g.input("b", dtype, bshape)
    z = g.tensor("out", dtype, out_shape)
    g.op(op, [x, y], [z])
    g.outputs([z])
    return Case(name, g.finish(), [a, b], note=note, ops=[f"{op}:1"])


def cases():
    for dt in ["INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32"]:
        t = dt.lower()
        yield binary(f"bitwise_xor_{t}", "BITWISE_XOR", dt, [3, 5], [3, 5])
        yield binary(f"right_shift_{t}", "RIGHT_SHIFT", dt, [4, 6], [4, 6],
                     note="shift amounts below 0 and at or past the bit width are clamped")
    yield binary("bitwise_xor_broadcast", "BITWISE_XOR", "INT32", [2, 3, 4], [4])
    yield binary("right_shift_broadcast", "RIGHT_SHIFT", "INT16", [2, 1, 5], [3, 1])
