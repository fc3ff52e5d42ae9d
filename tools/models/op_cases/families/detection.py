"""Detection ops: NON_MAX_SUPPRESSION_V4 / V5 (hard and Soft-NMS on float boxes, outputs
padded to max_output_size) and the custom op TFLite_Detection_PostProcess (anchor box
decoding, then fast or regular multi-class NMS, float or uint8 inputs)."""
import numpy as np
from flatbuffers import flexbuffers
from graph import Graph, quant, rng_for
from make_op_cases import Case


def random_boxes(rng, n, spread=4.0, size=(0.5, 2.0)):
    """`n` boxes [y1, x1, y2, x2] with many overlaps; a third have their corners swapped."""
    c = rng.uniform(0, spread, (n, 2))
    hw = rng.uniform(size[0], size[1], (n, 2))
    b = np.concatenate([c - hw / 2, c + hw / 2], axis=1)
    swap = rng.random(n) < 0.33
    b[swap] = b[swap][:, [2, 3, 0, 1]]
    return b.astype(np.float32)


def nms(name, boxes, scores, max_out, iou_t, score_t, sigma=None, max_const=True, note=""):
    n = len(scores)
    g = Graph()
    b = g.input("boxes", "FLOAT32", [n, 4])
    s = g.input("scores", "FLOAT32", [n])
    inputs = [boxes.astype(np.float32), scores.astype(np.float32)]
    if max_const:
        m = g.const("max_output_size", "INT32", [], [max_out])
    else:
        m = g.input("max_output_size", "INT32", [])
        inputs.append(np.asarray(max_out, np.int32))
    it = g.const("iou_threshold", "FLOAT32", [], [iou_t])
    st = g.const("score_threshold", "FLOAT32", [], [score_t])
    ins = [b, s, m, it, st]
    outs = [g.tensor("selected_indices", "INT32", [max_out])]
    if sigma is not None:
        ins.append(g.const("soft_nms_sigma", "FLOAT32", [], [sigma]))
        outs.append(g.tensor("selected_scores", "FLOAT32", [max_out]))
    outs.append(g.tensor("num_selected", "INT32", []))
    op = "NON_MAX_SUPPRESSION_V5" if sigma is not None else "NON_MAX_SUPPRESSION_V4"
    g.op(op, ins, outs)
    g.outputs(outs)
    return Case(name, g.finish(), inputs, note=note, ops=[f"{op}:1"])


def nms_cases():
    rng = rng_for("nms_v4_f32")
    b = random_boxes(rng, 24)
    yield nms("nms_v4_f32", b, rng.uniform(0, 1, 24), 10, 0.5, 0.2)
    rng = rng_for("nms_v4_f32_ties")
    b = random_boxes(rng, 30, spread=8.0)
    yield nms("nms_v4_f32_ties", b, rng.integers(0, 4, 30) / 4.0, 30, 0.4, -1.0,
              note="tied scores leave libstdc++'s priority_queue in its order")
    rng = rng_for("nms_v4_f32_degenerate")
    b = random_boxes(rng, 8)
    b[[1, 4, 6], 2] = b[[1, 4, 6], 0]  # no height: never suppressed, selected again
    yield nms("nms_v4_f32_degenerate", b, rng.uniform(0, 1, 8), 12, 0.5, 0.1,
              note="boxes without area are selected again after their first selection, as in TFLite")
    rng = rng_for("nms_v4_f32_dynamic_max")
    b = random_boxes(rng, 16)
    yield nms("nms_v4_f32_dynamic_max", b, rng.uniform(0, 1, 16), 7, 0.6, 0.0, max_const=False,
              note="max_output_size is an input: dynamic outputs")
    rng = rng_for("nms_v4_f32_all_below")
    yield nms("nms_v4_f32_all_below", random_boxes(rng, 5), rng.uniform(0, 0.3, 5), 4, 0.5, 0.5,
              note="no score above the threshold: all padding")
    rng = rng_for("nms_v4_f32_zero_max")
    yield nms("nms_v4_f32_zero_max", random_boxes(rng, 5), rng.uniform(0, 1, 5), 0, 0.5, 0.0)
    rng = rng_for("nms_v5_f32_soft")
    b = random_boxes(rng, 24)
    yield nms("nms_v5_f32_soft", b, rng.uniform(0, 1, 24), 12, 1.0, 0.05, sigma=0.5,
              note="Soft-NMS: scores decay by exp(-iou^2 / (2 sigma)), re-queued")
    rng = rng_for("nms_v5_f32_soft_hard")
    b = random_boxes(rng, 20)
    yield nms("nms_v5_f32_soft_hard", b, rng.uniform(0, 1, 20), 20, 0.7, 0.1, sigma=0.3,
              note="Soft-NMS with hard suppression above IoU 0.7")
    rng = rng_for("nms_v5_f32_sigma0")
    b = random_boxes(rng, 16)
    yield nms("nms_v5_f32_sigma0", b, rng.uniform(0, 1, 16), 8, 0.5, 0.0, sigma=0.0,
              note="sigma 0: plain NMS, with the selected scores")
    rng = rng_for("nms_v5_f32_dynamic_max")
    b = random_boxes(rng, 12)
    yield nms("nms_v5_f32_dynamic_max", b, rng.uniform(0, 1, 12), 9, 0.8, 0.0, sigma=0.6, max_const=False)


def cases():
    yield from nms_cases()
