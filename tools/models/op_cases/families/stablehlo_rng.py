"""STABLEHLO_RNG_BIT_GENERATOR: counter-based random bits (Philox-4x32 for DEFAULT and
PHILOX, Threefry-2x32 for THREEFRY) from a uint64 state, with the advanced state as the
first output."""
import numpy as np
from graph import Graph
from make_op_cases import Case
from ai_edge_litert import schema_py_generated as s


def rng_case(name, algorithm, state, out_dtype, out_shape, const_state=False, note=""):
    state = np.asarray(state, np.uint64)
    g = Graph()
    if const_state:
        st = g.const("state", "UINT64", list(state.shape), state)
    else:
        st = g.input("state", "UINT64", list(state.shape))
    key = g.tensor("new_state", "UINT64", list(state.shape))
    out = g.tensor("bits", out_dtype, list(out_shape))
    g.op("STABLEHLO_RNG_BIT_GENERATOR", [st], [key, out], options=Graph.options(
        "StablehloRngBitGeneratorOptions", algorithm=getattr(s.RngAlgorithm, algorithm)))
    g.outputs([key, out])
    return Case(name, g.finish(), [] if const_state else [state], note=note,
                ops=["STABLEHLO_RNG_BIT_GENERATOR:1"])


KEY = 0x0123456789ABCDEF
TYPES = ["INT32", "INT64", "UINT32", "UINT64"]


def cases():
    for alg in ["DEFAULT", "PHILOX", "THREEFRY"]:
        for dt in TYPES:
            yield rng_case(f"stablehlo_rng_{alg.lower()}_{dt.lower()}", alg, [KEY, 5], dt, [3, 5])
    # Philox with a 3-value state: the third holds the counter's high half.
    yield rng_case("stablehlo_rng_philox_state3_u32", "PHILOX", [KEY, 7, 0xFEDCBA9876543210], "UINT32", [2, 7],
                   note="a 3-value Philox state; its third value passes through")
    yield rng_case("stablehlo_rng_default_state3_i64", "DEFAULT", [1, 2, 3], "INT64", [9])
    # Counter carries: the low word wraps into the second, and the whole counter wraps.
    yield rng_case("stablehlo_rng_philox_carry_u32", "PHILOX", [KEY, 0xFFFFFFFE], "UINT32", [13],
                   note="the counter's low word wraps and carries")
    yield rng_case("stablehlo_rng_philox_wrap_u64", "PHILOX", [KEY, 0xFFFFFFFFFFFFFFFF, 4], "UINT64", [6],
                   note="the counter wraps to zero, the carry stops at its second word")
    yield rng_case("stablehlo_rng_threefry_carry_i32", "THREEFRY", [KEY, 0xFFFFFFFF], "INT32", [5],
                   note="the counter's low word wraps and carries")
    yield rng_case("stablehlo_rng_threefry_wrap_u64", "THREEFRY", [0, 0xFFFFFFFFFFFFFFFF], "UINT64", [3])
    # Partial last blocks, rank 0 and higher-rank outputs, an empty output.
    yield rng_case("stablehlo_rng_philox_odd_u32", "PHILOX", [0, 0], "UINT32", [7], note="zero key and counter")
    yield rng_case("stablehlo_rng_threefry_odd_i32", "THREEFRY", [0, 0], "INT32", [1], note="a partial block")
    yield rng_case("stablehlo_rng_philox_scalar_i64", "PHILOX", [KEY, 3], "INT64", [], note="a rank-0 output")
    yield rng_case("stablehlo_rng_threefry_4d_u32", "THREEFRY", [KEY, 11], "UINT32", [2, 3, 2, 5])
    yield rng_case("stablehlo_rng_philox_empty_u64", "PHILOX", [KEY, 11], "UINT64", [2, 0],
                   note="an empty output leaves the state unchanged")
    yield rng_case("stablehlo_rng_threefry_const_state", "THREEFRY", [KEY, 100], "UINT64", [4], const_state=True,
                   note="a constant state")
