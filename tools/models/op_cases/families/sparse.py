"""Sparse constants (the schema's SparsityParameters): DENSIFY of float32, float16 and
int8 constants in CSR layouts with and without blocks, a DENSIFY -> FULLY_CONNECTED model
as TFLite's sparse converter writes them, and FULLY_CONNECTED with sparse float32
weights (random sparse, 1x4 and 1x16 blocks)."""
import numpy as np
from ai_edge_litert import schema_py_generated as s
from graph import Graph, quant, rng_for
from make_op_cases import Case

DENSE, CSR = s.DimensionType.DENSE, s.DimensionType.SPARSE_CSR
INDEX = {
    "INT32": (s.SparseIndexVector.Int32Vector, s.Int32VectorT),
    "UINT16": (s.SparseIndexVector.Uint16Vector, s.Uint16VectorT),
    "UINT8": (s.SparseIndexVector.Uint8Vector, s.Uint8VectorT),
}


def index_vector(kind, values):
    _, cls = INDEX[kind]
    v = cls()
    v.values = [int(x) for x in values]
    return v


def to_sparse(dense, order, formats, block_map=(), block_sizes=(), index="INT32"):
    """The stored values and SparsityParametersT of `dense` walked in `order` over its
    expanded dimensions (the blocked dimensions, then the insides of the blocks), each
    level stored as `formats` says (a compressed level keeps the coordinates whose slice
    holds a nonzero)."""
    rank = dense.ndim
    split, outer, inner = [], [], [None] * len(block_map)
    for d in range(rank):
        if d in block_map:
            b = list(block_map).index(d)
            split += [dense.shape[d] // block_sizes[b], block_sizes[b]]
            outer.append(len(split) - 2)
            inner[b] = len(split) - 1
        else:
            split.append(dense.shape[d])
            outer.append(len(split) - 1)
    walked = dense.reshape(split).transpose(outer + inner).transpose(order)
    positions = [walked]
    dims = []
    for level, fmt in enumerate(formats):
        n = walked.shape[level]
        m = s.DimensionMetadataT()
        m.format = fmt
        if fmt == DENSE:
            m.denseSize = n
            positions = [p[i] for p in positions for i in range(n)]
        else:
            segments, indices, nxt = [0], [], []
            for p in positions:
                for i in range(n):
                    if np.any(p[i] != 0):
                        indices.append(i)
                        nxt.append(p[i])
                segments.append(len(indices))
            positions = nxt
            m.arraySegmentsType = m.arrayIndicesType = INDEX[index][0]
            m.arraySegments = index_vector(index, segments)
            m.arrayIndices = index_vector(index, indices)
        dims.append(m)
    sp = s.SparsityParametersT()
    sp.traversalOrder = list(order)
    sp.blockMap = list(block_map) if block_map else None
    sp.dimMetadata = dims
    return np.array([np.asarray(p) for p in positions], dense.dtype).reshape(-1), sp


def sparse_matrix(rng, shape, density, block=1, dtype=np.float32):
    """A random matrix whose nonzeros come in 1 x `block` blocks, `density` of them kept."""
    rows, cols = shape
    keep = rng.random((rows, cols // block)) < density
    keep[0, :] = False  # an empty row
    keep = np.repeat(keep, block, axis=1)
    if dtype == np.int8:
        vals = rng.integers(-127, 128, shape).astype(np.int8)
    else:
        vals = rng.uniform(-1, 1, shape).astype(dtype)
    return np.where(keep, vals, 0).astype(dtype)


def densify_case(name, dtype, dense, order, formats, block_map=(), block_sizes=(), index="INT32", q=None, note=""):
    g = Graph()
    values, sp = to_sparse(dense, order, formats, block_map, block_sizes, index)
    c = g.const("sparse", dtype, list(dense.shape), values, q=q, sparsity=sp)
    y = g.tensor("dense", dtype, list(dense.shape), q)
    g.op("DENSIFY", [c], [y])
    g.outputs([y])
    return Case(name, g.finish(), [], note=note, ops=["DENSIFY:1"])


def fc_case(name, weights, block, batches, densify, activation="NONE", bias=True, note=""):
    rng = rng_for(name + "/input")
    units, depth = weights.shape
    formats = [DENSE, CSR] + ([DENSE] if block > 1 else [])
    order = [0, 1, 2] if block > 1 else [0, 1]
    values, sp = to_sparse(weights, order, formats, (1,) if block > 1 else (), (block,) if block > 1 else ())
    g = Graph()
    x = g.input("x", "FLOAT32", [batches, depth])
    w = g.const("weights", "FLOAT32", [units, depth], values, sparsity=sp)
    ops = ["FULLY_CONNECTED:8"]
    if densify:
        wd = g.tensor("weights_dense", "FLOAT32", [units, depth])
        g.op("DENSIFY", [w], [wd])
        w = wd
        ops = ["DENSIFY:1", "FULLY_CONNECTED:1"]
    b = g.const("bias", "FLOAT32", [units], rng.uniform(-1, 1, units).astype(np.float32)) if bias else -1
    y = g.tensor("y", "FLOAT32", [batches, units])
    opts = Graph.options("FullyConnectedOptions",
                         fusedActivationFunction=getattr(s.ActivationFunctionType, activation))
    g.op("FULLY_CONNECTED", [x, w, b], [y], version=1 if densify else 8, options=opts)
    g.outputs([y])
    return Case(name, g.finish(), [rng.uniform(-2, 2, (batches, depth)).astype(np.float32)], note=note, ops=ops)


def fc_int8_case(name, units, depth, batches, per_channel=False, activation="NONE", note=""):
    rng = rng_for(name)
    w = sparse_matrix(rng, (units, depth), 0.5, block=16, dtype=np.int8)
    values, sp = to_sparse(w, [0, 1, 2], [DENSE, CSR, DENSE], (1,), (16,))
    in_q, out_q = (0.05, -3), (0.2, 4)
    if per_channel:
        w_scales = rng.uniform(0.002, 0.01, units).astype(np.float32)
        wq = quant(w_scales, np.zeros(units, np.int64), dim=0)
        b_scales = (np.float32(in_q[0]) * w_scales).astype(np.float32)
        bq = quant(b_scales, np.zeros(units, np.int64), dim=0)
    else:
        wq = quant(0.006, 0)
        bq = quant(float(np.float32(in_q[0]) * np.float32(0.006)), 0)
    g = Graph()
    x = g.input("x", "INT8", [batches, depth], quant(*in_q))
    wt = g.const("weights", "INT8", [units, depth], values, q=wq, sparsity=sp)
    b = g.const("bias", "INT32", [units], rng.integers(-2000, 2000, units).astype(np.int32), q=bq)
    y = g.tensor("y", "INT8", [batches, units], quant(*out_q))
    opts = Graph.options("FullyConnectedOptions",
                         fusedActivationFunction=getattr(s.ActivationFunctionType, activation))
    g.op("FULLY_CONNECTED", [x, wt, b], [y], version=8, options=opts)
    g.outputs([y])
    xs = rng.integers(-128, 128, (batches, depth)).astype(np.int8)
    return Case(name, g.finish(), [xs], note=note, ops=["FULLY_CONNECTED:8"])


def fc_hybrid_case(name, units, depth, batches, asymmetric, per_channel=False, weight_type="INT8",
                   activation="NONE", bias=True, zero_input=False, note=""):
    """FULLY_CONNECTED with float input and sparse 8-bit weights in 1x16 blocks: TFLite's
    sparse hybrid kernel (inputs quantized per batch row, symmetric or asymmetric)."""
    rng = rng_for(name)
    w = sparse_matrix(rng, (units, depth), 0.5, block=16, dtype=np.int8)
    values, sp = to_sparse(w, [0, 1, 2], [DENSE, CSR, DENSE], (1,), (16,))
    if per_channel:
        wq = quant(rng.uniform(0.002, 0.01, units).astype(np.float32), np.zeros(units, np.int64), dim=0)
    else:
        wq = quant(0.006, 0)
    if weight_type == "UINT8":
        values = values.view(np.uint8)
    g = Graph()
    x = g.input("x", "FLOAT32", [batches, depth])
    wt = g.const("weights", weight_type, [units, depth], values, q=wq, sparsity=sp)
    b = g.const("bias", "FLOAT32", [units], rng.uniform(-1, 1, units).astype(np.float32)) if bias else -1
    y = g.tensor("y", "FLOAT32", [batches, units])
    opts = Graph.options("FullyConnectedOptions",
                         fusedActivationFunction=getattr(s.ActivationFunctionType, activation),
                         asymmetricQuantizeInputs=asymmetric)
    g.op("FULLY_CONNECTED", [x, wt, b], [y], version=8, options=opts)
    g.outputs([y])
    xs = rng.uniform(-2, 2, (batches, depth)).astype(np.float32)
    if zero_input:
        xs[:] = 0
    else:
        xs[-1, :] = 0  # an all-zero row among nonzero ones
    # Eigen's tanh (TFLite's vector TANH) is not reproduced bit for bit.
    return Case(name, g.finish(), [xs], note=note, ops=["FULLY_CONNECTED:8"], float_bits_exact=activation != "TANH")


def cases():
    rng = rng_for("sparse")
    m = sparse_matrix(rng, (5, 7), 0.4)
    yield densify_case("densify_f32_csr", "FLOAT32", m, [0, 1], [DENSE, CSR],
                       note="rows dense, columns compressed (random sparsity)")
    yield densify_case("densify_f32_csr_col_major", "FLOAT32", m, [1, 0], [DENSE, CSR],
                       note="columns walked first, rows compressed")
    yield densify_case("densify_f32_csr_csr", "FLOAT32", sparse_matrix(rng, (6, 5), 0.3), [0, 1], [CSR, CSR],
                       note="both dimensions compressed")
    yield densify_case("densify_f32_block1x4", "FLOAT32", sparse_matrix(rng, (4, 12), 0.5, block=4),
                       [0, 1, 2], [DENSE, CSR, DENSE], (1,), (4,), note="1x4 blocks, as TFLite's converter writes")
    m22 = np.kron(rng.random((3, 3)) < 0.5, np.ones((2, 2))) * rng.uniform(-1, 1, (6, 6))
    yield densify_case("densify_f32_block2x2", "FLOAT32", m22.astype(np.float32), [0, 1, 2, 3],
                       [DENSE, CSR, DENSE, DENSE], (0, 1), (2, 2), note="2x2 blocks over both dimensions")
    t3 = np.where(rng.random((2, 3, 4)) < 0.3, rng.uniform(-1, 1, (2, 3, 4)), 0).astype(np.float32)
    yield densify_case("densify_f32_rank3", "FLOAT32", t3, [0, 1, 2], [DENSE, CSR, CSR],
                       note="rank 3, two compressed levels")
    yield densify_case("densify_f32_uint8_indices", "FLOAT32", sparse_matrix(rng, (3, 9), 0.4), [0, 1],
                       [DENSE, CSR], index="UINT8", note="uint8 index vectors")
    yield densify_case("densify_f32_uint16_indices", "FLOAT32", sparse_matrix(rng, (4, 300), 0.05), [0, 1],
                       [DENSE, CSR], index="UINT16", note="uint16 index vectors")
    yield densify_case("densify_f16_csr", "FLOAT16", sparse_matrix(rng, (4, 6), 0.4, dtype=np.float16), [0, 1],
                       [DENSE, CSR], note="float16 in, float16 out")
    yield densify_case("densify_int8_block1x16", "INT8", sparse_matrix(rng, (3, 32), 0.5, block=16, dtype=np.int8),
                       [0, 1, 2], [DENSE, CSR, DENSE], (1,), (16,), q=quant(0.02, 0),
                       note="int8 in 1x16 blocks")
    yield densify_case("densify_int8_csr", "INT8", sparse_matrix(rng, (5, 5), 0.5, dtype=np.int8), [0, 1],
                       [DENSE, CSR], q=quant(0.1, 3))

    yield fc_case("densify_fully_connected_f32", sparse_matrix(rng, (8, 16), 0.3, block=4), 4, 2, True,
                  note="a sparse model as TFLite's converter writes it: DENSIFY of 1x4-block weights, then FC")
    yield fc_case("densify_fully_connected_f32_random", sparse_matrix(rng, (6, 10), 0.3), 1, 3, True,
                  activation="RELU")
    yield fc_case("fully_connected_sparse_f32_random", sparse_matrix(rng, (6, 10), 0.3), 1, 3, False,
                  note="sparse weights read by FULLY_CONNECTED itself (random sparsity)")
    yield fc_case("fully_connected_sparse_f32_block1x4", sparse_matrix(rng, (8, 16), 0.4, block=4), 4, 2, False,
                  activation="RELU6")
    yield fc_case("fully_connected_sparse_f32_block1x16", sparse_matrix(rng, (4, 48), 0.5, block=16), 16, 1,
                  False, bias=False)
    yield fc_int8_case("fully_connected_sparse_int8_block1x16", 6, 48, 3,
                       note="TFLite's sparse 8-bit kernel: fixed-point requantization")
    yield fc_int8_case("fully_connected_sparse_int8_block1x16_per_channel", 5, 32, 2, per_channel=True,
                       activation="RELU")
    yield fc_hybrid_case("fully_connected_sparse_hybrid", 6, 48, 3, False,
                         note="float input, int8 1x16-block weights: TFLite's sparse hybrid kernel")
    yield fc_hybrid_case("fully_connected_sparse_hybrid_asymmetric", 7, 64, 5, True, activation="RELU",
                         note="input zero points: scale * zero_point * row_sum subtracted in float")
    yield fc_hybrid_case("fully_connected_sparse_hybrid_per_channel", 5, 32, 2, False, per_channel=True)
    yield fc_hybrid_case("fully_connected_sparse_hybrid_per_channel_asymmetric", 9, 48, 4, True,
                         per_channel=True, bias=False)
    yield fc_hybrid_case("fully_connected_sparse_hybrid_tanh", 6, 32, 3, True, activation="TANH",
                         note="TANH after the sums (TFLite applies Eigen's tanh: last-bit differences)")
    yield fc_hybrid_case("fully_connected_sparse_hybrid_uint8", 4, 32, 2, False, weight_type="UINT8",
                         note="uint8 weights, read as int8 as TFLite does")
    yield fc_hybrid_case("fully_connected_sparse_hybrid_zero_input", 4, 32, 2, True, zero_input=True,
                         activation="RELU6", note="an all-zero input leaves bias and activation")
