"""CONV_3D and CONV_3D_TRANSPOSE in float32: NDHWC inputs, DHWIO / DHWOI filters, SAME and
VALID padding, strides, dilations, optional bias and fused activations."""
import numpy as np
from ai_edge_litert import schema_py_generated as schema
from graph import Graph, rng_for
from make_op_cases import Case

ACT = {"NONE": 0, "RELU": 1, "RELU6": 3}


def out_size(padding, n, f, s, d):
    eff = (f - 1) * d + 1
    return (n + s - 1) // s if padding == "SAME" else (n + s - eff) // s


def conv3d(name, x_shape, f_shape, padding="VALID", strides=(1, 1, 1), dilations=(1, 1, 1), bias=True,
           act="NONE", note=""):
    rng = rng_for(name)
    g = Graph()
    x = g.input("x", "FLOAT32", x_shape)
    w = g.const("filter", "FLOAT32", f_shape, rng.uniform(-1, 1, f_shape).astype(np.float32))
    ins = [x, w]
    if bias:
        ins.append(g.const("bias", "FLOAT32", [f_shape[4]], rng.uniform(-1, 1, [f_shape[4]]).astype(np.float32)))
    o = [out_size(padding, x_shape[i + 1], f_shape[i], strides[i], dilations[i]) for i in range(3)]
    y = g.tensor("y", "FLOAT32", [x_shape[0]] + o + [f_shape[4]])
    opts = Graph.options("Conv3DOptions", padding=getattr(schema.Padding, padding),
                         strideD=strides[0], strideH=strides[1], strideW=strides[2],
                         dilationDFactor=dilations[0], dilationHFactor=dilations[1], dilationWFactor=dilations[2],
                         fusedActivationFunction=ACT[act])
    g.op("CONV_3D", ins, [y], options=opts)
    g.outputs([y])
    return Case(name, g.finish(), [rng.uniform(-1, 1, x_shape).astype(np.float32)], note=note, ops=["CONV_3D:1"])


def conv3d_transpose(name, out_shape, f_shape, x_spatial, padding="VALID", strides=(1, 1, 1), bias=True,
                     act="NONE", constant_shape=True, note=""):
    rng = rng_for(name)
    g = Graph()
    x_shape = [out_shape[0]] + list(x_spatial) + [f_shape[4]]
    if constant_shape:
        s = g.const("output_shape", "INT32", [5], out_shape)
    else:
        s = g.input("output_shape", "INT32", [5])
    w = g.const("filter", "FLOAT32", f_shape, rng.uniform(-1, 1, f_shape).astype(np.float32))
    x = g.input("x", "FLOAT32", x_shape)
    ins = [s, w, x]
    if bias:
        ins.append(g.const("bias", "FLOAT32", [f_shape[3]], rng.uniform(-1, 1, [f_shape[3]]).astype(np.float32)))
    y = g.tensor("y", "FLOAT32", out_shape)
    opts = Graph.options("Conv3DOptions", padding=getattr(schema.Padding, padding),
                         strideD=strides[0], strideH=strides[1], strideW=strides[2],
                         dilationDFactor=1, dilationHFactor=1, dilationWFactor=1,
                         fusedActivationFunction=ACT[act])
    g.op("CONV_3D_TRANSPOSE", ins, [y], options=opts)
    g.outputs([y])
    xs = rng.uniform(-1, 1, x_shape).astype(np.float32)
    inputs = [xs] if constant_shape else [np.asarray(out_shape, np.int32), xs]
    return Case(name, g.finish(), inputs, note=note, ops=["CONV_3D_TRANSPOSE:1"])


def cases():
    yield conv3d("conv_3d_f32_valid", [1, 4, 5, 6, 3], [2, 3, 2, 3, 4])
    yield conv3d("conv_3d_f32_same_stride", [2, 5, 6, 7, 2], [3, 3, 3, 2, 3], padding="SAME", strides=(2, 1, 2),
                 act="RELU")
    yield conv3d("conv_3d_f32_dilated_no_bias", [1, 6, 6, 6, 2], [2, 2, 2, 2, 2], dilations=(2, 1, 3), bias=False,
                 act="RELU6")
    yield conv3d_transpose("conv_3d_transpose_f32_valid", [1, 5, 6, 7, 3], [2, 3, 2, 3, 4], [4, 4, 6])
    yield conv3d_transpose("conv_3d_transpose_f32_same_stride", [2, 6, 5, 8, 2], [3, 3, 3, 2, 3], [3, 5, 4],
                           padding="SAME", strides=(2, 1, 2), act="RELU")
    yield conv3d_transpose("conv_3d_transpose_f32_dynamic_shape", [1, 4, 4, 4, 2], [2, 2, 2, 2, 3], [2, 2, 2],
                           strides=(2, 2, 2), bias=False, constant_shape=False,
                           note="output_shape is an input: the output shape is set at Invoke")
