"""REVERSE_SEQUENCE: per batch entry, the first seq_lengths[b] elements along seq_dim
reversed (a length of 0 or 1 leaves the slice as it is), batch_dim before or after
seq_dim, int32 or int64 lengths."""
import numpy as np
from graph import NP, Graph, rng_for
from make_op_cases import Case


def revseq(name, dtype, shape, seq_dim, batch_dim, lengths, len_dtype="INT32", note=""):
    rng = rng_for(name)
    if dtype == "FLOAT32":
        x = rng.uniform(-5, 5, shape).astype(np.float32)
    else:
        info = np.iinfo(NP[dtype])
        x = rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(NP[dtype])
    g = Graph()
    i = g.input("x", dtype, shape)
    l = g.input("seq_lengths", len_dtype, [len(lengths)])
    o = g.tensor("out", dtype, shape)
    g.op("REVERSE_SEQUENCE", [i, l], [o],
         options=Graph.options("ReverseSequenceOptions", seqDim=seq_dim, batchDim=batch_dim))
    g.outputs([o])
    return Case(name, g.finish(), [x, np.asarray(lengths, NP[len_dtype])], note=note, ops=["REVERSE_SEQUENCE:1"])


def cases():
    yield revseq("reverse_sequence_f32", "FLOAT32", [3, 5, 2], 1, 0, [5, 0, 3])
    yield revseq("reverse_sequence_f32_batch_after", "FLOAT32", [4, 2, 3], 0, 2, [4, 1, 2],
                 note="batch_dim after seq_dim, with a dimension between them")
    yield revseq("reverse_sequence_i32_i64_lengths", "INT32", [2, 6], 1, 0, [6, 4], len_dtype="INT64")
    yield revseq("reverse_sequence_i64", "INT64", [2, 3, 4], 2, 1, [2, 4, 3])
    yield revseq("reverse_sequence_uint8", "UINT8", [4, 3], 0, 1, [4, 2, 3])
    yield revseq("reverse_sequence_int16", "INT16", [2, 2, 5], 2, 0, [5, 3])
