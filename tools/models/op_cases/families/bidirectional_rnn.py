"""BIDIRECTIONAL_SEQUENCE_RNN (float32, and hybrid int8 weights): a forward and a backward basic RNN cell over one
sequence, batch- or time-major, separate or merged outputs, and the aux input in both of
its roles (cross-linked with aux weights, or the backward cell's input without them)."""
import numpy as np
from ai_edge_litert import schema_py_generated as s
from graph import Graph, random_weights, rng_for
from make_op_cases import Case


def birnn(name, batch, time, n, fw_units, bw_units, time_major=False, merge=False, act="TANH",
          aux=None, aux_weights=False, hybrid=False, asymmetric=False, note=""):
    """`aux`: the aux input's last dimension, or None for no aux input."""
    rng = rng_for(name)
    g = Graph()
    lead = [time, batch] if time_major else [batch, time]
    x = g.input("input", "FLOAT32", lead + [n])
    inputs = [x]
    def weights(wname, shape, lim):
        return random_weights(g, rng, wname, shape, lim, hybrid)

    for tag, u in (("fw", fw_units), ("bw", bw_units)):
        inputs.append(weights(f"{tag}_weights", [u, n], 0.6))
        inputs.append(weights(f"{tag}_recurrent", [u, u], 0.5))
        inputs.append(g.const(f"{tag}_bias", "FLOAT32", [u], rng.uniform(-0.3, 0.3, u)))
        inputs.append(g.tensor(f"{tag}_state", "FLOAT32", [batch, u], variable=True))
    feeds = [rng.uniform(-1.5, 1.5, lead + [n]).astype(np.float32)]
    if aux is None:
        inputs += [-1, -1, -1]
    else:
        inputs.append(g.input("aux_input", "FLOAT32", lead + [aux]))
        feeds.append(rng.uniform(-1.5, 1.5, lead + [aux]).astype(np.float32))
        if aux_weights:
            inputs.append(weights("fw_aux_weights", [fw_units, aux], 0.6))
            inputs.append(weights("bw_aux_weights", [bw_units, aux], 0.6))
        else:
            inputs += [-1, -1]
    if merge:
        outs = [g.tensor("output", "FLOAT32", lead + [fw_units + bw_units])]
    else:
        outs = [g.tensor("fw_output", "FLOAT32", lead + [fw_units]), g.tensor("bw_output", "FLOAT32", lead + [bw_units])]
    opts = Graph.options("BidirectionalSequenceRNNOptions", timeMajor=time_major, mergeOutputs=merge,
                         fusedActivationFunction=getattr(s.ActivationFunctionType, act),
                         asymmetricQuantizeInputs=asymmetric)
    version = (3 if asymmetric else 2) if hybrid else 1
    g.op("BIDIRECTIONAL_SEQUENCE_RNN", inputs, outs, options=opts, version=version)
    g.outputs(outs)
    return Case(name, g.finish(), feeds, note=note, ops=[f"BIDIRECTIONAL_SEQUENCE_RNN:{version}"])


def cases():
    yield birnn("bidirectional_rnn_f32", 2, 3, 4, 3, 2, note="batch-major, separate outputs, TANH")
    yield birnn("bidirectional_rnn_f32_time_major_merged", 2, 4, 3, 2, 3, time_major=True, merge=True,
                act="RELU", note="time-major, one output with forward then backward units")
    yield birnn("bidirectional_rnn_f32_merged_batch_major", 3, 2, 2, 2, 2, merge=True, act="NONE")
    yield birnn("bidirectional_rnn_f32_cross_links", 2, 3, 4, 3, 2, aux=3, aux_weights=True,
                note="aux input with aux weights: both cells add W_aux * aux")
    yield birnn("bidirectional_rnn_f32_time_major_cross_links", 2, 3, 4, 2, 3, time_major=True, aux=4,
                aux_weights=True, merge=True)
    yield birnn("bidirectional_rnn_f32_time_major_aux_backward", 2, 3, 4, 3, 2, time_major=True, aux=4,
                note="aux input without aux weights: the backward cell reads it instead of the input")
    yield birnn("bidirectional_rnn_f32_batch_major_aux_ignored", 2, 3, 4, 3, 2, aux=4,
                note="batch-major: TFLite's backward cell reads the input, the aux input is unused")
    yield birnn("bidirectional_rnn_hybrid", 2, 3, 4, 3, 2, hybrid=True,
                note="int8 weights, input and hidden state quantized per row (symmetric)")
    yield birnn("bidirectional_rnn_hybrid_asymmetric", 2, 3, 4, 3, 2, hybrid=True, asymmetric=True, merge=True)
    yield birnn("bidirectional_rnn_hybrid_cross_links", 2, 3, 4, 2, 3, hybrid=True, asymmetric=True, aux=4,
                aux_weights=True)
    yield birnn("bidirectional_rnn_hybrid_time_major", 2, 3, 4, 3, 2, time_major=True, hybrid=True,
                note="TFLite's hybrid time-major kernel runs both passes once per time step")
    yield birnn("bidirectional_rnn_hybrid_time_major_aux_backward", 2, 2, 3, 2, 2, time_major=True, hybrid=True,
                asymmetric=True, aux=3, merge=True)
