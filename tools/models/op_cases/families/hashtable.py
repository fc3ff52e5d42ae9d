"""HASHTABLE, HASHTABLE_IMPORT, HASHTABLE_FIND, HASHTABLE_SIZE: static int64->string and
string->int64 tables held by the interpreter. String tensors are model constants (the C
API cannot set a string input); string outputs are compared in TFLite's string layout."""
import numpy as np
from graph import Graph
from ai_edge_litert import schema_py_generated as s
from make_op_cases import Case, tensor_bytes


def strings(values):
    return tensor_bytes(np.asarray([v.encode() for v in values], dtype=object))


def table(g, name, table_id, key, value):
    h = g.tensor(name, "RESOURCE", [1])
    g.op("HASHTABLE", [], [h], options=Graph.options(
        "HashtableOptions", tableId=table_id, keyDtype=getattr(s.TensorType, key),
        valueDtype=getattr(s.TensorType, value)))
    return h


def const(g, name, dtype, values, shape=None):
    shape = [len(values)] if shape is None else shape
    if dtype == "STRING":
        return g.const(name, "STRING", shape, strings(values))
    return g.const(name, dtype, shape, values)


def string_to_int64():
    g = Graph()
    h = table(g, "table", 1, "STRING", "INT64")
    g.op("HASHTABLE_IMPORT", [h, const(g, "keys", "STRING", ["apple", "banana", "", "cherry"]),
                              const(g, "values", "INT64", [5, -7, 0, 1 << 40])], [])
    q = const(g, "query", "STRING", ["cherry", "kiwi", "", "apple", "Apple", "banana"], shape=[2, 3])
    y = g.tensor("found", "INT64", [2, 3])
    g.op("HASHTABLE_FIND", [h, q, const(g, "default", "INT64", [-1], shape=[])], [y])
    n = g.tensor("size", "INT64", [1])
    g.op("HASHTABLE_SIZE", [h], [n])
    g.outputs([y, n])
    return Case("hashtable_string_to_int64", g.finish(), [],
                note="missing keys (case matters) give the default; the empty string is a key",
                ops=["HASHTABLE:1", "HASHTABLE_IMPORT:1", "HASHTABLE_FIND:1", "HASHTABLE_SIZE:1"])


def int64_to_string_and_back(invokes):
    g = Graph()
    q = g.input("query", "INT64", [5])
    a = table(g, "to_string", 2, "INT64", "STRING")
    g.op("HASHTABLE_IMPORT", [a, const(g, "a_keys", "INT64", [10, 20, 30, 40]),
                              const(g, "a_values", "STRING", ["x", "yy", "zzz", "x"])], [])
    b = table(g, "to_int", 3, "STRING", "INT64")
    g.op("HASHTABLE_IMPORT", [b, const(g, "b_keys", "STRING", ["x", "yy", "zzz", "none"]),
                              const(g, "b_values", "INT64", [1, 2, 3, -9])], [])
    names = g.tensor("names", "STRING", [5])
    g.op("HASHTABLE_FIND", [a, q, const(g, "a_default", "STRING", ["none"], shape=[1])], [names])
    ids = g.tensor("ids", "INT64", [5])
    g.op("HASHTABLE_FIND", [b, names, const(g, "b_default", "INT64", [0], shape=[1])], [ids])
    g.outputs([names, ids])
    name = "hashtable_int64_to_string" + ("_second_invoke" if invokes > 1 else "")
    return Case(name, g.finish(), [np.asarray([20, 99, 10, 40, -30], np.int64)], invokes=invokes,
                note="a string output, fed to a second table", ops=["HASHTABLE:1", "HASHTABLE_IMPORT:1",
                                                                   "HASHTABLE_FIND:1"])


def import_once():
    g = Graph()
    h = table(g, "table", 7, "INT64", "STRING")
    n0 = g.tensor("size_before", "INT64", [1])
    g.op("HASHTABLE_SIZE", [h], [n0])
    g.op("HASHTABLE_IMPORT", [h, const(g, "keys", "INT64", [3, 1, 3, 2]),
                              const(g, "values", "STRING", ["first", "one", "second", "two"])], [])
    g.op("HASHTABLE_IMPORT", [h, const(g, "keys2", "INT64", [3, 4]),
                              const(g, "values2", "STRING", ["third", "four"])], [])
    n1 = g.tensor("size_after", "INT64", [1])
    g.op("HASHTABLE_SIZE", [h], [n1])
    q = g.input("query", "INT64", [2, 2])
    y = g.tensor("found", "STRING", [2, 2])
    g.op("HASHTABLE_FIND", [h, q, const(g, "default", "STRING", ["?", "unused"])], [y])
    g.outputs([n0, n1, y])
    return Case("hashtable_import_once", g.finish(), [np.asarray([[3, 4], [1, 2]], np.int64)],
                note="the second import is ignored; of repeated keys the first wins; the size is 0 before",
                ops=["HASHTABLE:1", "HASHTABLE_IMPORT:1", "HASHTABLE_FIND:1", "HASHTABLE_SIZE:1"])


def cases():
    yield string_to_int64()
    yield int64_to_string_and_back(1)
    yield int64_to_string_and_back(2)
    yield import_once()
