"""RANDOM_UNIFORM, RANDOM_STANDARD_NORMAL and MULTINOMIAL: TensorFlow's Philox generator
seeded from the options, bit for bit. Cases with `invokes` > 1 check that the generator
carries on from one Invoke to the next."""
import numpy as np
from graph import Graph, rng_for
from make_op_cases import Case


def shaped(name, op, shape, seed, seed2, dynamic=False, invokes=1, note=""):
    g = Graph()
    if dynamic:
        s = g.input("shape", "INT32", [len(shape)])
        inputs = [np.asarray(shape, np.int32)]
    else:
        s = g.const("shape", "INT32", [len(shape)], shape)
        inputs = []
    y = g.tensor("y", "FLOAT32", [] if dynamic else shape)
    g.op(op, [s], [y], options=Graph.options("RandomOptions", seed=seed, seed2=seed2))
    g.outputs([y])
    return Case(name, g.finish(), inputs, note=note, ops=[f"{op}:1"], invokes=invokes)


def multinomial(name, logits_shape, samples, out_type, seed, seed2, dynamic=False, invokes=1, masked=False, note=""):
    g = Graph()
    rng = rng_for(name)
    logits = rng.uniform(-3, 3, logits_shape).astype(np.float32)
    if masked:
        logits[0, ::2] = -np.inf
        logits[-1, 1] = np.nan
    lg = g.input("logits", "FLOAT32", logits_shape)
    inputs = [logits]
    if dynamic:
        n = g.input("num_samples", "INT32", [])
        inputs.append(np.asarray(samples, np.int32))
    else:
        n = g.const("num_samples", "INT32", [], [samples])
    y = g.tensor("y", out_type, [logits_shape[0], samples])
    g.op("MULTINOMIAL", [lg, n], [y], options=Graph.options("RandomOptions", seed=seed, seed2=seed2))
    g.outputs([y])
    return Case(name, g.finish(), inputs, note=note, ops=["MULTINOMIAL:1"], invokes=invokes)


def cases():
    yield shaped("random_uniform", "RANDOM_UNIFORM", [2, 3, 5], 7, 13,
                 note="30 numbers: the last block of four is used in part")
    yield shaped("random_uniform_second_invoke", "RANDOM_UNIFORM", [2, 3, 5], 7, 13, invokes=2,
                 note="the second Invoke continues the sequence")
    yield shaped("random_uniform_dynamic_shape", "RANDOM_UNIFORM", [4, 1, 3], 1, 2, dynamic=True, invokes=3,
                 note="shape from an input: the output is resized at Eval")
    yield shaped("random_uniform_negative_seed", "RANDOM_UNIFORM", [9], -5, 0,
                 note="seeds are sign-extended to 64 bits; seed2 = 0 alone stays deterministic")
    yield shaped("random_uniform_seed2_only", "RANDOM_UNIFORM", [6], 0, -77)
    yield shaped("random_standard_normal", "RANDOM_STANDARD_NORMAL", [3, 6], 42, 4242)
    yield shaped("random_standard_normal_second_invoke", "RANDOM_STANDARD_NORMAL", [2, 5], 42, 4242,
                 invokes=2)
    yield shaped("random_standard_normal_dynamic_shape", "RANDOM_STANDARD_NORMAL", [2, 2, 4], -1, 99,
                 dynamic=True)
    yield multinomial("multinomial_i64", [3, 5], 7, "INT64", 11, 22)
    yield multinomial("multinomial_i32_second_invoke", [2, 4], 6, "INT32", 11, 22, invokes=2,
                      note="the node's generator skips a block per Invoke")
    yield multinomial("multinomial_masked", [2, 6], 9, "INT64", -3, 5, masked=True,
                      note="-inf and NaN logits get no probability")
    yield multinomial("multinomial_dynamic", [4, 3], 5, "INT32", 8, 0, dynamic=True, invokes=2,
                      note="num_samples from an input: the output is resized at Eval")
