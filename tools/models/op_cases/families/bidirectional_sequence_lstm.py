"""BIDIRECTIONAL_SEQUENCE_LSTM (float32, and hybrid int8 weights): a forward and a backward LSTM cell over one
sequence, batch- or time-major, separate or merged outputs, CIFG, peepholes, projection and clipping, and the aux
input in both of its roles (cross-linked with aux weights, or the backward cell's input without them).

It also builds UNIDIRECTIONAL_SEQUENCE_LSTM cases (`uni=True`) for what the two ops' shared LSTM step does that the
other cases do not reach (TFLite's output with no activation)."""
import numpy as np
from ai_edge_litert import schema_py_generated as s
from graph import Graph, random_weights, rng_for
from make_op_cases import Case


def bilstm(name, batch, time, n_input, n_cell, n_output=None, time_major=False, merge=False, cifg=False,
           peephole=False, projection=False, proj_bias=False, cell_clip=0.0, proj_clip=0.0, act="TANH",
           aux=None, aux_weights=False, hybrid=False, asymmetric=False, zero_step=None, uni=False, note=""):
    """`aux`: the aux input's last dimension, or None for no aux input. `zero_step`: a time step whose input
    values are all zero (the hybrid kernel skips its product)."""
    n_output = n_cell if n_output is None else n_output
    rng = rng_for(name)
    g = Graph()
    lead = [time, batch] if time_major else [batch, time]
    x = g.input("input", "FLOAT32", lead + [n_input])

    def weights(wname, shape, lim):
        return random_weights(g, rng, wname, shape, lim, hybrid)

    def cell(tag):
        ins = []
        for gate in ("input", "forget", "cell", "output"):
            ins.append(-1 if cifg and gate == "input" else weights(f"{tag}_{gate}_w", [n_cell, n_input], 0.6))
        for gate in ("input", "forget", "cell", "output"):
            ins.append(-1 if cifg and gate == "input" else weights(f"{tag}_{gate}_r", [n_cell, n_output], 0.5))
        for gate in ("input", "forget", "output"):
            ins.append(weights(f"{tag}_{gate}_peephole", [n_cell], 0.4)
                       if peephole and not (cifg and gate == "input") else -1)
        for gate in ("input", "forget", "cell", "output"):
            ins.append(-1 if cifg and gate == "input"
                       else g.const(f"{tag}_{gate}_bias", "FLOAT32", [n_cell], rng.uniform(-0.3, 0.3, n_cell)))
        ins.append(weights(f"{tag}_projection", [n_output, n_cell], 0.5) if projection else -1)
        ins.append(g.const(f"{tag}_projection_bias", "FLOAT32", [n_output], rng.uniform(-0.2, 0.2, n_output))
                   if proj_bias else -1)
        return ins

    if uni:
        return unidirectional(g, name, rng, x, lead, cell("cell"), n_input, n_cell, n_output, time_major, act,
                              cell_clip, proj_clip, note)
    inputs = [x] + cell("fw") + cell("bw")
    # The states hold as many rows as the option's layout gives the batch.
    state_rows = lead[1] if time_major else lead[0]
    for tag in ("fw", "bw"):
        inputs.append(g.tensor(f"{tag}_output_state", "FLOAT32", [state_rows, n_output], variable=True))
        inputs.append(g.tensor(f"{tag}_cell_state", "FLOAT32", [state_rows, n_cell], variable=True))
    xv = rng.uniform(-1.5, 1.5, lead + [n_input]).astype(np.float32)
    if zero_step is not None:
        if time_major:
            xv[zero_step] = 0.0
        else:
            xv[:, zero_step] = 0.0
    feeds = [xv]
    if aux is None:
        inputs += [-1] * 9
    else:
        inputs.append(g.input("aux_input", "FLOAT32", lead + [aux]))
        feeds.append(rng.uniform(-1.5, 1.5, lead + [aux]).astype(np.float32))
        for tag in ("fw", "bw"):
            for gate in ("input", "forget", "cell", "output"):
                use = aux_weights and not (cifg and gate == "input")
                inputs.append(weights(f"{tag}_aux_{gate}_w", [n_cell, aux], 0.6) if use else -1)
    if merge:
        outs = [g.tensor("output", "FLOAT32", lead + [2 * n_output])]
    else:
        outs = [g.tensor("fw_output", "FLOAT32", lead + [n_output]),
                g.tensor("bw_output", "FLOAT32", lead + [n_output])]
    opts = Graph.options("BidirectionalSequenceLSTMOptions", timeMajor=time_major, mergeOutputs=merge,
                         fusedActivationFunction=getattr(s.ActivationFunctionType, act), cellClip=cell_clip,
                         projClip=proj_clip, asymmetricQuantizeInputs=asymmetric)
    version = (3 if asymmetric else 2) if hybrid else 1
    g.op("BIDIRECTIONAL_SEQUENCE_LSTM", inputs, outs, options=opts, version=version)
    g.outputs(outs)
    return Case(name, g.finish(), feeds, note=note, ops=[f"BIDIRECTIONAL_SEQUENCE_LSTM:{version}"])


def unidirectional(g, name, rng, x, lead, cell_inputs, n_input, n_cell, n_output, time_major, act, cell_clip,
                   proj_clip, note):
    """A float UNIDIRECTIONAL_SEQUENCE_LSTM over `cell_inputs` (LSTM's inputs 1-17), no layer normalization."""
    rows = lead[1] if time_major else lead[0]
    states = [g.tensor("output_state", "FLOAT32", [rows, n_output], variable=True),
              g.tensor("cell_state", "FLOAT32", [rows, n_cell], variable=True)]
    out = g.tensor("output", "FLOAT32", lead + [n_output])
    opts = Graph.options("UnidirectionalSequenceLSTMOptions", timeMajor=time_major,
                         fusedActivationFunction=getattr(s.ActivationFunctionType, act), cellClip=cell_clip,
                         projClip=proj_clip)
    g.op("UNIDIRECTIONAL_SEQUENCE_LSTM", [x] + cell_inputs + states + [-1] * 4, [out], options=opts, version=1)
    g.outputs([out])
    feeds = [rng.uniform(-1.5, 1.5, lead + [n_input]).astype(np.float32)]
    return Case(name, g.finish(), feeds, note=note, ops=["UNIDIRECTIONAL_SEQUENCE_LSTM:1"])


def case(suffix, *args, **kwargs):
    return bilstm("bidirectional_sequence_lstm_" + suffix, *args, **kwargs)


def cases():
    yield case("f32", 2, 3, 3, 4, note="batch-major, separate outputs")
    yield case("f32_time_major_merged", 2, 3, 3, 4, time_major=True, merge=True,
               note="time-major, one output with the forward then the backward values")
    yield case("f32_batch_major_merged", 1, 4, 2, 3, merge=True,
               note="batch-major merged output: one batch row (TFLite offsets states by the merged row)")
    yield case("f32_peephole_projection", 2, 3, 3, 4, n_output=3, peephole=True, projection=True,
               proj_bias=True, cell_clip=0.8, proj_clip=0.5, note="peepholes, projection with bias, clipping")
    yield case("f32_cifg_peephole_time_major", 2, 4, 2, 3, time_major=True, cifg=True, peephole=True,
               act="RELU6", note="CIFG: the input gate is 1 - forget")
    yield case("f32_projection_no_bias_merged", 2, 2, 3, 2, n_output=4, time_major=True, merge=True,
               projection=True, act="NONE",
               note="no activation: TFLite's output is the output gate times the cell gate")
    yield case("f32_cross_links", 2, 3, 3, 4, aux=2, aux_weights=True,
               note="aux input with aux weights: both cells add W_aux * aux")
    yield case("f32_time_major_cross_links_cifg_merged", 2, 3, 3, 3, time_major=True, merge=True, cifg=True,
               aux=4, aux_weights=True)
    yield case("f32_aux_backward_input", 2, 3, 3, 4, aux=3,
               note="aux input without aux weights: the backward cell reads it instead of the input")
    yield case("f32_time_major_aux_backward_input", 2, 3, 3, 4, time_major=True, aux=3)
    yield case("hybrid_time_major", 2, 3, 3, 4, time_major=True, zero_step=1,
               hybrid=True, note="int8 weights, input and output state quantized per row (symmetric)")
    yield case("hybrid_asymmetric_merged_peephole_projection", 2, 3, 3, 2, n_output=4, time_major=True,
               merge=True, peephole=True, projection=True, proj_bias=True, hybrid=True, asymmetric=True,
               note="asymmetric input quantization with weight row sums, int8 peepholes and projection")
    yield case("hybrid_batch_major", 3, 2, 3, 4, hybrid=True,
               note="batch-major hybrid: each batch row stepped alone")
    yield case("hybrid_asymmetric_projection_batch_major", 2, 3, 2, 3, n_output=2,
               projection=True, hybrid=True, asymmetric=True, note="n_output not a multiple of n_cell")
    yield case("hybrid_batch_major_asymmetric_square", 2, 2, 2, 3, peephole=True, hybrid=True,
               asymmetric=True)
    yield case("hybrid_cross_links_asymmetric", 2, 3, 3, 4, time_major=True, aux=2, aux_weights=True,
               hybrid=True, asymmetric=True, zero_step=0)
    yield case("hybrid_cifg_cross_links", 2, 3, 3, 3, time_major=True, cifg=True, aux=3, aux_weights=True,
               hybrid=True, cell_clip=0.5, act="NONE")
    yield case("hybrid_aux_backward_input_merged", 2, 3, 3, 4, time_major=True, merge=True, aux=3,
               hybrid=True, asymmetric=True)
    for time_major in (False, True):
        layout = "time_major" if time_major else "batch_major"
        yield bilstm(f"unidirectional_sequence_lstm_f32_no_activation_{layout}", 2, 3, 3, 4, time_major=time_major,
                     peephole=True, act="NONE", uni=True,
                     note="no activation: TFLite's output is the output gate times the cell gate")
