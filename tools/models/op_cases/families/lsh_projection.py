"""LSH_PROJECTION: rows of the input hashed (FarmHash Fingerprint64 of a float seed and
the row's bytes), weighted and summed; the sign of each sum is one bit, written one per
element (DENSE) or packed per hash function (SPARSE)."""
import numpy as np
from ai_edge_litert import schema_py_generated as s
from graph import Graph, NP, rng_for
from make_op_cases import Case


def lsh(name, kind, num_hash, num_bits, dtype, in_shape, weighted, note=""):
    rng = rng_for(name)
    seeds = rng.uniform(-10, 10, [num_hash, num_bits]).astype(np.float32)
    t = NP[dtype]
    if dtype == "FLOAT32":
        x = rng.uniform(-5, 5, in_shape).astype(t)
    else:
        info = np.iinfo(t)
        x = rng.integers(max(info.min, -1000), min(info.max, 1000), in_shape, endpoint=True).astype(t)
    g = Graph()
    h = g.input("hash", "FLOAT32", [num_hash, num_bits])
    i = g.input("input", dtype, list(in_shape))
    ins, vals = [h, i], [seeds, x]
    if weighted:
        ins.append(g.input("weight", "FLOAT32", [in_shape[0]]))
        vals.append(rng.uniform(-1, 2, [in_shape[0]]).astype(np.float32))
    n = num_hash if kind == "SPARSE" else num_hash * num_bits
    y = g.tensor("y", "INT32", [n])
    g.op("LSH_PROJECTION", ins, [y], options=Graph.options("LSHProjectionOptions",
                                                          type=getattr(s.LSHProjectionType, kind)))
    g.outputs([y])
    return Case(name, g.finish(), vals, note=note, ops=["LSH_PROJECTION:1"])


def cases():
    # Key lengths (4 seed bytes + one row) cover each of FarmHash's length paths.
    yield lsh("lsh_projection_dense_f32", "DENSE", 4, 8, "FLOAT32", [3, 2], False, note="12-byte keys")
    yield lsh("lsh_projection_sparse_f32", "SPARSE", 6, 5, "FLOAT32", [4, 1], True, note="8-byte keys, weighted")
    yield lsh("lsh_projection_dense_i32_len24", "DENSE", 3, 6, "INT32", [5, 5], True, note="24-byte keys")
    yield lsh("lsh_projection_sparse_i32_len44", "SPARSE", 5, 10, "INT32", [3, 10], False, note="44-byte keys")
    yield lsh("lsh_projection_dense_f32_len64", "DENSE", 2, 16, "FLOAT32", [4, 15], True, note="64-byte keys")
    yield lsh("lsh_projection_dense_f32_len68", "DENSE", 2, 16, "FLOAT32", [4, 16], False, note="68-byte keys")
    yield lsh("lsh_projection_sparse_f32_len204", "SPARSE", 3, 12, "FLOAT32", [2, 5, 10], True,
              note="204-byte keys, rows of a rank-3 input")
    yield lsh("lsh_projection_dense_u8_len5", "DENSE", 2, 7, "UINT8", [6, 1], False, note="5-byte keys")
    yield lsh("lsh_projection_dense_i8_len7", "DENSE", 2, 7, "INT8", [6, 3], True, note="7-byte keys")
    yield lsh("lsh_projection_sparse_i64_len132", "SPARSE", 4, 3, "INT64", [3, 16], False, note="132-byte keys")
    yield lsh("lsh_projection_sparse_i8_len129", "SPARSE", 2, 4, "INT8", [3, 125], False, note="129-byte keys")
    yield lsh("lsh_projection_sparse_i16_len30", "SPARSE", 3, 2, "INT16", [4, 13], True, note="30-byte keys")
