"""FAKE_QUANT: float32 values quantized to num_bits over [min, max] (nudged so that zero is
exact) and dequantized; ranges containing zero, entirely on one side of it, 2 to 16 bits,
and version 2 (whose narrow_range option TFLite refuses when set, so it stays false)."""
import numpy as np
from graph import Graph, rng_for
from make_op_cases import Case


def fake_quant(name, shape, lo, hi, bits, version=1, spread=1.5, note=""):
    rng = rng_for(name)
    x = rng.uniform(lo - spread, hi + spread, shape).astype(np.float32)
    flat = x.reshape(-1)
    if flat.size >= 3:
        flat[:3] = [lo, hi, 0.0]
    g = Graph()
    i = g.input("x", "FLOAT32", shape)
    o = g.tensor("y", "FLOAT32", shape)
    opts = Graph.options("FakeQuantOptions", min=lo, max=hi, numBits=bits, narrowRange=False)
    g.op("FAKE_QUANT", [i], [o], version=version, options=opts)
    g.outputs([o])
    return Case(name, g.finish(), [x], note=note, ops=[f"FAKE_QUANT:{version}"])


def cases():
    yield fake_quant("fake_quant_8bit", [2, 3, 5], -1.0, 2.0, 8)
    yield fake_quant("fake_quant_nudged", [40], -0.1, 0.9, 8, spread=0.3,
                     note="a zero point of about 25.5 is rounded to a whole step, shifting the range")
    yield fake_quant("fake_quant_4bit", [4, 4], -3.5, 1.25, 4)
    yield fake_quant("fake_quant_2bit", [12], -1.0, 2.0, 2)
    yield fake_quant("fake_quant_16bit", [3, 7], -6.0, 6.0, 16)
    yield fake_quant("fake_quant_positive_range", [16], 0.5, 3.0, 8, note="range above zero: shifted to start at 0")
    yield fake_quant("fake_quant_negative_range", [16], -4.0, -1.0, 3, note="range below zero: shifted to end at 0")
    yield fake_quant("fake_quant_v2", [1, 2, 2, 3], -2.0, 2.0, 8, version=2)
