"""SVDF: a feature filter and a time filter over a memory of past activations kept in a
variable state tensor. Each case chains several SVDF nodes that share one state tensor,
so one Invoke runs several time steps and the later outputs depend on the memory."""
import numpy as np
from graph import Graph, quant, rng_for
from make_op_cases import Case

ACT = {"NONE": 0, "RELU": 1, "RELU6": 3, "TANH": 4, "SIGMOID": 6}


def svdf(name, batch, input_size, filters, rank, memory, steps=3, kind="float", bias=True, act="NONE",
         asym=False, zero_step=None, invokes=1, note=""):
    g = Graph()
    rng = rng_for(name)
    units = filters // rank
    version = {"float": 1, "hybrid": 4 if asym else 2, "int8": 3}[kind]
    opts = Graph.options("SVDFOptions", rank=rank, fusedActivationFunction=ACT[act],
                         asymmetricQuantizeInputs=asym)
    if kind == "int8":
        q_in, q_wf, q_state, q_wt, q_out = (quant(0.05, 3), quant(1 / 127, 0), quant(0.0005, 0),
                                           quant(1 / 32767, 0), quant(0.08, -5))
        xs = [g.input(f"x{t}", "INT8", [batch, input_size], q_in) for t in range(steps)]
        wf = g.const("weights_feature", "INT8", [filters, input_size],
                     rng.integers(-127, 128, [filters, input_size]), q_wf)
        wt = g.const("weights_time", "INT16", [filters, memory],
                     rng.integers(-32767, 32768, [filters, memory]), q_wt)
        b = g.const("bias", "INT32", [units], rng.integers(-3000, 3000, [units]),
                    quant(0.0005 / 32767, 0)) if bias else -1
        state = g.tensor("state", "INT16", [batch, memory * filters], q_state, variable=True)
        ys = [g.tensor(f"y{t}", "INT8", [batch, units], q_out) for t in range(steps)]
        inputs = [rng.integers(-128, 128, [batch, input_size]).astype(np.int8) for _ in range(steps)]
    else:
        xs = [g.input(f"x{t}", "FLOAT32", [batch, input_size]) for t in range(steps)]
        if kind == "hybrid":
            wf = g.const("weights_feature", "INT8", [filters, input_size],
                         rng.integers(-127, 128, [filters, input_size]), quant(0.011, 0))
            wt = g.const("weights_time", "INT8", [filters, memory],
                         rng.integers(-127, 128, [filters, memory]), quant(0.007, 0))
        else:
            wf = g.const("weights_feature", "FLOAT32", [filters, input_size],
                         rng.uniform(-1, 1, [filters, input_size]))
            wt = g.const("weights_time", "FLOAT32", [filters, memory], rng.uniform(-1, 1, [filters, memory]))
        b = g.const("bias", "FLOAT32", [units], rng.uniform(-0.5, 0.5, [units])) if bias else -1
        state = g.tensor("state", "FLOAT32", [batch, memory * filters], variable=True)
        ys = [g.tensor(f"y{t}", "FLOAT32", [batch, units]) for t in range(steps)]
        inputs = [rng.uniform(-2, 2, [batch, input_size]).astype(np.float32) for _ in range(steps)]
        if zero_step is not None:
            inputs[zero_step][:] = 0
    for t in range(steps):
        g.op("SVDF", [xs[t], wf, wt, b, state], [ys[t]], version=version, options=opts)
    g.outputs(ys)
    return Case(name, g.finish(), inputs, note=note, ops=[f"SVDF:{version}"], invokes=invokes)


def cases():
    yield svdf("svdf_f32", 2, 3, 4, 1, 5, note="three steps through one state")
    yield svdf("svdf_f32_rank2_relu_nobias", 2, 4, 6, 2, 3, bias=False, act="RELU")
    yield svdf("svdf_f32_tanh_long_memory", 1, 5, 3, 3, 8, steps=4, act="TANH")
    yield svdf("svdf_hybrid", 2, 3, 4, 1, 5, kind="hybrid", zero_step=1,
               note="int8 weights, float activations; the second step's input is all zeros")
    yield svdf("svdf_hybrid_rank2_relu6", 3, 7, 8, 2, 4, kind="hybrid", act="RELU6", bias=False)
    yield svdf("svdf_hybrid_asymmetric", 2, 6, 4, 2, 3, kind="hybrid", asym=True,
               note="asymmetric input quantization (version 4)")
    yield svdf("svdf_int8", 2, 3, 4, 1, 5, kind="int8", act="RELU", note="int8 input/output, int16 state")
    yield svdf("svdf_f32_third_invoke", 2, 3, 4, 2, 3, steps=1, invokes=3,
               note="the state carries over from one Invoke to the next")
    yield svdf("svdf_hybrid_third_invoke", 1, 4, 3, 1, 4, steps=1, kind="hybrid", asym=True, invokes=3)
    yield svdf("svdf_int8_third_invoke", 2, 3, 4, 1, 3, steps=1, kind="int8", act="RELU", invokes=3)
    yield svdf("svdf_int8_rank2_nobias", 1, 8, 6, 2, 4, kind="int8", act="RELU", bias=False)
