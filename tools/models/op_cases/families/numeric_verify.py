"""NumericVerify (custom): the difference between a dequantized tensor and its float
reference, an error past `tolerance * scale` when `log_if_failed` is set and the tolerance
is at least 0.1."""
import numpy as np
from flatbuffers import flexbuffers
from graph import Graph, NP, quant, rng_for
from make_op_cases import Case


def nv(name, dtype, shape, q, tolerance, log_if_failed, const_input=False, noise=0.0, note=""):
    rng = rng_for(name)
    t = NP[dtype]
    if dtype == "FLOAT16":
        x = rng.uniform(-4, 4, shape).astype(np.float16)
        deq = x.astype(np.float32)
    else:
        info = np.iinfo(t)
        x = rng.integers(info.min, info.max, shape, endpoint=True).astype(t)
        deq = (q[0] * (x.astype(np.float64) - q[1])).astype(np.float32)
    ref = (deq + rng.uniform(-noise, noise, shape)).astype(np.float32)
    g = Graph()
    qq = quant(*q) if dtype != "FLOAT16" else None
    if const_input:
        xi = g.const("quantized", dtype, shape, x, qq)
    else:
        xi = g.input("quantized", dtype, shape, qq)
    r = g.input("reference", "FLOAT32", shape)
    y = g.tensor("diff", "FLOAT32", shape)
    opts = {"tolerance": tolerance, "log_if_failed": log_if_failed}
    g.custom_op("NumericVerify", [xi, r], [y], custom_options=flexbuffers.Dumps(opts))
    g.outputs([y])
    inputs = [ref] if const_input else [x, ref]
    return Case(name, g.finish(), inputs, note=note, ops=["NumericVerify (custom)"])


def cases():
    yield nv("numeric_verify_uint8", "UINT8", [2, 3, 4], (0.05, 128), 0.05, False, noise=0.02)
    yield nv("numeric_verify_int8", "INT8", [3, 5], (0.1, -3), 0.05, True, noise=0.05,
             note="tolerance below 0.1: differences only, no check")
    yield nv("numeric_verify_int16", "INT16", [17], (0.001, 0), 0.01, False, noise=0.001)
    yield nv("numeric_verify_int16_zero_point", "INT16", [2, 4], (0.002, 5), 0.0, False, noise=0.001,
             note="a non-zero int16 zero point is accepted")
    yield nv("numeric_verify_float16", "FLOAT16", [6], (0.0, 0), 0.0, False, noise=0.01)
    yield nv("numeric_verify_int8_checked_pass", "INT8", [4, 4], (0.1, 0), 0.5, True, noise=0.04,
             note="every difference within tolerance * scale = 0.05")
    yield nv("numeric_verify_uint8_checked_loose", "UINT8", [10], (0.1, 128), 2.0, False, noise=1.0,
             note="large differences, log_if_failed off: no check")
    yield nv("numeric_verify_int8_const_input", "INT8", [2, 3], (0.25, 1), 0.0, False, const_input=True,
             noise=0.1, note="a constant quantized input")
    yield nv("numeric_verify_uint8_empty", "UINT8", [0, 3], (0.5, 0), 1.0, True, note="no elements")
