"""HASHTABLE_LOOKUP: rows of a value table looked up by int32 key (keys sorted, searched
with bsearch and TFLite's `a - b` comparator, which compiled TFLite evaluates as a
comparison: keys 2^31 apart are still found), zero rows / empty strings and a 0 hit for
missing keys. Values of any type are copied as raw bytes; string values build a
string output."""
import numpy as np
from graph import Graph, rng_for
from make_op_cases import Case, tensor_bytes

OPS = ["HASHTABLE_LOOKUP:1"]


def strings(values):
    return tensor_bytes(np.asarray([v.encode() for v in values], dtype=object))


def lookup_case(name, dtype, keys, values, lookup, keys_const=True, values_const=False, note=""):
    """`values` is a numpy array (or a list of str for STRING)."""
    g = Graph()
    lk = g.input("lookup", "INT32", [len(lookup)])
    inputs = [np.asarray(lookup, np.int32)]
    keys = np.asarray(keys, np.int32)
    if keys_const:
        k = g.const("keys", "INT32", [len(keys)], keys)
    else:
        k = g.input("keys", "INT32", [len(keys)])
        inputs.append(keys)
    if dtype == "STRING":
        vshape = [len(values)]
        vdata = np.asarray([v.encode() for v in values], dtype=object)
        oshape = [len(lookup)]
    else:
        vdata = np.asarray(values)
        vshape = list(vdata.shape)
        oshape = [len(lookup)] + vshape[1:]
    if values_const:
        v = g.const("values", dtype, vshape, strings(values) if dtype == "STRING" else vdata)
    else:
        v = g.input("values", dtype, vshape)
        inputs.append(vdata)
    y = g.tensor("output", dtype, oshape)
    hits = g.tensor("hits", "UINT8", [len(lookup)])
    g.op("HASHTABLE_LOOKUP", [lk, k, v], [y, hits])
    g.outputs([y, hits])
    return Case(name, g.finish(), inputs, note=note, ops=OPS)


def cases():
    rng = rng_for("hashtable_lookup")
    keys = [-7, -2, 0, 3, 4, 11, 50]
    lookup = [3, 5, -7, 50, 51, 0, -8, 11, 3, 4]
    yield lookup_case("hashtable_lookup_f32", "FLOAT32", keys,
                      rng.uniform(-3, 3, [7, 3]).astype(np.float32), lookup,
                      note="hits and misses (zero rows), a repeated lookup, keys below and above the table")
    yield lookup_case("hashtable_lookup_f32_keys_input", "FLOAT32", keys,
                      rng.uniform(-3, 3, [7, 2, 2]).astype(np.float32), lookup, keys_const=False,
                      note="keys as a graph input, 3-D values")
    yield lookup_case("hashtable_lookup_i32", "INT32", keys,
                      rng.integers(-1000, 1000, [7]).astype(np.int32), lookup, values_const=True,
                      note="1-D constant values")
    yield lookup_case("hashtable_lookup_uint8", "UINT8", keys,
                      rng.integers(1, 256, [7, 5]).astype(np.uint8), lookup)
    yield lookup_case("hashtable_lookup_int8", "INT8", keys,
                      rng.integers(-128, 128, [7, 3]).astype(np.int8), lookup)
    yield lookup_case("hashtable_lookup_int16", "INT16", keys,
                      rng.integers(-30000, 30000, [7, 2]).astype(np.int16), lookup)
    yield lookup_case("hashtable_lookup_int64", "INT64", keys,
                      rng.integers(-(1 << 60), 1 << 60, [7, 2]).astype(np.int64), lookup)
    yield lookup_case("hashtable_lookup_bool", "BOOL", keys,
                      np.ones([7, 3], np.bool_), lookup, note="a missing key gives a false row")
    yield lookup_case("hashtable_lookup_f16", "FLOAT16", keys,
                      rng.uniform(-3, 3, [7, 2]).astype(np.float16), lookup)
    yield lookup_case("hashtable_lookup_string", "STRING", keys,
                      ["seven", "", "zero", "three", "four", "eleven", "fifty"], lookup,
                      note="string values given as an input; a missing key gives the empty string")
    yield lookup_case("hashtable_lookup_string_const", "STRING", [1, 2, 3],
                      ["héllo wörld", "日本語", "a b  c"], [3, 1, 9, 2, 2],
                      values_const=True, note="constant string values with non-ASCII bytes")
    yield lookup_case("hashtable_lookup_empty_lookup", "FLOAT32", keys,
                      rng.uniform(-3, 3, [7, 3]).astype(np.float32), [],
                      note="no lookups: a [0, 3] output and [0] hits")
    yield lookup_case("hashtable_lookup_single_key", "INT32", [5],
                      np.asarray([[1, 2]], np.int32), [4, 5, 6])
    big = 2_000_000_000
    yield lookup_case("hashtable_lookup_extreme_keys", "INT32", [-big, big],
                      np.asarray([10, 20], np.int32), [-big, big, 0],
                      note="-2e9 - 2e9 overflows int32 in TFLite's comparator, yet TFLite finds -2e9")
    imin, imax = -(1 << 31), (1 << 31) - 1
    yield lookup_case("hashtable_lookup_int32_limits", "INT32", [imin, -1, 1, imax],
                      np.asarray([1, 2, 3, 4], np.int32), [imin, -1, 1, imax, 0],
                      note="int32 extremes: the comparator's subtraction overflows, every key is still found")
    yield lookup_case("hashtable_lookup_extreme_keys_f32", "FLOAT32", [imin, 0, imax],
                      np.asarray([[1, 2], [3, 4], [5, 6]], np.float32), [imin, 0, imax, -5, 5],
                      note="int32 extremes in a float table")
    yield lookup_case("hashtable_lookup_unsorted_keys", "INT32", [9, 1, 5, 3, 7, 2],
                      np.asarray([0, 1, 2, 3, 4, 5], np.int32), [9, 1, 5, 3, 7, 2, 4],
                      note="unsorted keys: what the binary search finds (some present keys are missed)")
    yield lookup_case("hashtable_lookup_duplicate_keys", "INT32", [1, 2, 2, 2, 2, 3],
                      np.asarray([10, 20, 21, 22, 23, 30], np.int32), [2, 1, 3],
                      note="a repeated key: the row the binary search lands on")
