"""A streaming int8 model: its state lives in a resource variable (CALL_ONCE initializes
it, VAR_HANDLE / READ_VARIABLE / ASSIGN_VARIABLE carry it from one Invoke to the next),
and each Invoke mixes the state through an int8 FULLY_CONNECTED (the 8-bit GEMM), adds
the input (int8 ADD, its own requantization) and squashes the sum with int8 TANH. The
random weights keep the state wandering rather than settling, so after hundreds of
Invokes on the same input the outputs end a long chain in which one wrong bit in any
Invoke would have spread: the golden is TFLite's reference kernels' answer after the
last Invoke."""
import numpy as np
from graph import Graph, quant, rng_for
from make_op_cases import Case

TANH_Q = (1.0 / 128.0, 0)  # TFLite's int8 TANH output quantization


def streaming_int8(n, invokes):
    name = f"streaming_int8_state_{invokes}_invokes"
    rng = rng_for(name)
    g = Graph()
    x = g.input("x", "INT8", [1, n], q=quant(0.02, -5))
    state_q = quant(*TANH_Q)
    g.op("CALL_ONCE", [], [], options=Graph.options("CallOnceOptions", initSubgraphIndex=1))
    h = g.tensor("state_handle", "RESOURCE", [])
    g.op("VAR_HANDLE", [], [h], options=Graph.options("VarHandleOptions", sharedName="state"))
    s = g.tensor("state", "INT8", [1, n], q=state_q)
    g.op("READ_VARIABLE", [h], [s])
    # Weights of gain about 1.6 on the [-1, 1] state: a random tanh map that wanders.
    w_scale = 1.6 / np.sqrt(n) * 3.0 / 127.0
    w = rng.integers(-127, 128, (n, n)).astype(np.int8)
    wt = g.const("weights", "INT8", [n, n], w, q=quant(w_scale, 0))
    bias_scale = TANH_Q[0] * w_scale
    b = g.const("bias", "INT32", [n], rng.integers(-2000, 2000, n).astype(np.int32), q=quant(bias_scale, 0))
    f = g.tensor("mixed", "INT8", [1, n], q=quant(0.03, 2))
    g.op("FULLY_CONNECTED", [s, wt, b], [f], version=4, options=Graph.options("FullyConnectedOptions"))
    a = g.tensor("driven", "INT8", [1, n], q=quant(0.04, -1))
    g.op("ADD", [f, x], [a], version=2, options=Graph.options("AddOptions"))
    y = g.tensor("next_state", "INT8", [1, n], q=quant(*TANH_Q))
    g.op("TANH", [a], [y], version=2)
    g.op("ASSIGN_VARIABLE", [h, y], [])
    g.outputs([y])

    g.new_subgraph("init")
    h0 = g.tensor("state_handle", "RESOURCE", [])
    g.op("VAR_HANDLE", [], [h0], options=Graph.options("VarHandleOptions", sharedName="state"))
    k = g.const("initial_state", "INT8", [1, n], rng.integers(-100, 101, (1, n)).astype(np.int8), q=quant(*TANH_Q))
    g.op("ASSIGN_VARIABLE", [h0, k], [])
    g.sub = 0

    inputs = [rng.integers(-128, 128, (1, n)).astype(np.int8)]
    return Case(name, g.finish(), inputs, invokes=invokes,
                note=f"int8 state of {n} values carried through a resource variable for {invokes} Invokes",
                ops=["CALL_ONCE:1", "VAR_HANDLE:1", "READ_VARIABLE:1", "FULLY_CONNECTED:4", "ADD:2",
                     "TANH:2", "ASSIGN_VARIABLE:1"])


def cases():
    # 40 values: not a multiple of 16, 32 or 64, so the AVX-512 kernels on the way run tails.
    yield streaming_int8(40, 1)
    yield streaming_int8(40, 300)
