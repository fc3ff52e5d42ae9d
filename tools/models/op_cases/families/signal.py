"""RFFT2D and the complex-number ops COMPLEX_ABS, REAL and IMAG: the 2-D real FFT of the
innermost two dimensions (cropped or zero-padded to fft_length, powers of two), and the
magnitude / real part / imaginary part of complex64 and complex128 tensors."""
import numpy as np
from graph import Graph, rng_for
from make_op_cases import Case


def rfft2d(name, shape, fft_length, constant=True, note=""):
    g = Graph()
    x = g.input("x", "FLOAT32", shape)
    if constant:
        n = g.const("fft_length", "INT32", [2], fft_length)
    else:
        n = g.input("fft_length", "INT32", [2])
    y = g.tensor("y", "COMPLEX64", list(shape[:-2]) + [fft_length[0], fft_length[1] // 2 + 1])
    g.op("RFFT2D", [x, n], [y])
    g.outputs([y])
    rng = rng_for(name)
    inputs = [rng.uniform(-3, 3, shape).astype(np.float32)]
    if not constant:
        inputs.append(np.asarray(fft_length, np.int32))
    return Case(name, g.finish(), inputs, note=note, ops=["RFFT2D:1"])


def complex_part(name, op, dtype, shape, note=""):
    out = {"COMPLEX64": "FLOAT32", "COMPLEX128": "FLOAT64"}[dtype]
    g = Graph()
    x = g.input("x", dtype, shape)
    y = g.tensor("y", out, shape)
    g.op(op, [x], [y])
    g.outputs([y])
    rng = rng_for(name)
    np_t = {"COMPLEX64": np.complex64, "COMPLEX128": np.complex128}[dtype]
    v = (rng.uniform(-5, 5, shape) + 1j * rng.uniform(-5, 5, shape)).astype(np_t)
    if v.size >= 4:
        # Exact cases: zero, a purely real and a purely imaginary value, a 3-4-5 triangle.
        v.flat[:4] = [0, -2.5, 1.5j, 3 - 4j]
    return Case(name, g.finish(), [v], note=note, ops=[f"{op}:1"])


def rfft2d_abs(name, shape, fft_length):
    g = Graph()
    x = g.input("x", "FLOAT32", shape)
    n = g.const("fft_length", "INT32", [2], fft_length)
    oshape = list(shape[:-2]) + [fft_length[0], fft_length[1] // 2 + 1]
    c = g.tensor("spectrum", "COMPLEX64", oshape)
    y = g.tensor("magnitude", "FLOAT32", oshape)
    g.op("RFFT2D", [x, n], [c])
    g.op("COMPLEX_ABS", [c], [y])
    g.outputs([y])
    x0 = rng_for(name).uniform(-1, 1, shape).astype(np.float32)
    return Case(name, g.finish(), [x0], note="a magnitude spectrum", ops=["RFFT2D:1", "COMPLEX_ABS:1"])


def cases():
    yield rfft2d("rfft2d_f32_4x4", [4, 4], [4, 4])
    yield rfft2d("rfft2d_f32_batch_padded", [2, 3, 5], [8, 16], note="the input is zero-padded to fft_length")
    yield rfft2d("rfft2d_f32_cropped", [7, 9], [4, 2], note="the input is cropped to fft_length")
    yield rfft2d("rfft2d_f32_rank4", [2, 2, 16, 8], [16, 8])
    yield rfft2d("rfft2d_f32_height1", [3, 5], [1, 4], note="a single row")
    yield rfft2d("rfft2d_f32_large", [1, 64, 32], [64, 32])
    yield rfft2d("rfft2d_f32_dynamic_length", [3, 5], [4, 8], constant=False,
                 note="fft_length is an input: the output shape is set at Invoke")
    yield rfft2d_abs("rfft2d_then_complex_abs", [2, 8, 8], [8, 8])
    for op in ("COMPLEX_ABS", "REAL", "IMAG"):
        lo = op.lower()
        yield complex_part(f"{lo}_c64", op, "COMPLEX64", [3, 5])
        yield complex_part(f"{lo}_c128", op, "COMPLEX128", [2, 2, 3])
