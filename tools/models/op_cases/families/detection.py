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


DPP = "TFLite_Detection_PostProcess"


def dpp_options(max_det, per_det, num_classes, regular=False, per_class=None, score_t=0.2, iou_t=0.5,
                scales=(10.0, 10.0, 5.0, 5.0)):
    o = {"max_detections": max_det, "max_classes_per_detection": per_det, "use_regular_nms": regular,
         "nms_score_threshold": score_t, "nms_iou_threshold": iou_t, "num_classes": num_classes,
         "y_scale": scales[0], "x_scale": scales[1], "h_scale": scales[2], "w_scale": scales[3]}
    if per_class is not None:
        o["detections_per_class"] = per_class
    return flexbuffers.Dumps(o)


def grid_anchors(n, rng):
    """`n` anchors [y, x, h, w] on a loose grid, some overlapping."""
    side = int(np.ceil(np.sqrt(n)))
    k = np.arange(n)
    y = (k // side + 0.5) / side
    x = (k % side + 0.5) / side
    hw = rng.uniform(0.15, 0.5, (n, 2))
    return np.stack([y, x, hw[:, 0], hw[:, 1]], axis=1).astype(np.float32)


def dpp_outputs(g):
    return [g.tensor(n, "FLOAT32", []) for n in ("detection_boxes", "detection_classes", "detection_scores",
                                                   "num_detections")]


def dpp(name, n, ncwb, options, quantized=False, levels=None, note=""):
    rng = rng_for(name)
    anchors = grid_anchors(n, rng)
    enc = rng.normal(0, 1.0, (1, n, 4)).astype(np.float32)
    scores = rng.uniform(0, 1, (1, n, ncwb)).astype(np.float32)
    if levels:
        scores = np.round(scores * levels) / levels  # ties
    g = Graph()
    if quantized:
        qb, qs, qa = quant(0.05, 128), quant(1 / 255, 0), quant(1 / 200, 0)
        b = g.input("box_encodings", "UINT8", [1, n, 4], qb)
        c = g.input("class_predictions", "UINT8", [1, n, ncwb], qs)
        a = g.const("anchors", "UINT8", [n, 4], np.clip(np.round(anchors * 200), 0, 255).astype(np.uint8), qa)
        inputs = [np.clip(np.round(enc / 0.05) + 128, 0, 255).astype(np.uint8),
                  np.clip(np.round(scores * 255), 0, 255).astype(np.uint8)]
    else:
        b = g.input("box_encodings", "FLOAT32", [1, n, 4])
        c = g.input("class_predictions", "FLOAT32", [1, n, ncwb])
        a = g.const("anchors", "FLOAT32", [n, 4], anchors)
        inputs = [enc, scores]
    outs = dpp_outputs(g)
    g.custom_op(DPP, [b, c, a], outs, options)
    g.outputs(outs)
    return Case(name, g.finish(), inputs, note=note, ops=[f"CUSTOM {DPP}:1"])


def ssd_model(name, regular):
    """A tiny SSD head: two 1x1 CONV_2Ds on a feature map give the box encodings and the
    class logits of two anchors per cell; RESHAPE, LOGISTIC, then the post-processing."""
    rng = rng_for(name)
    h = w = 3
    cin, per_cell, ncwb = 4, 2, 3
    n = h * w * per_cell
    g = Graph()
    x = g.input("features", "FLOAT32", [1, h, w, cin])
    conv = Graph.options("Conv2DOptions", padding=1, strideW=1, strideH=1, dilationWFactor=1, dilationHFactor=1)
    wb = g.const("box_weights", "FLOAT32", [per_cell * 4, 1, 1, cin], rng.normal(0, 0.5, (per_cell * 4, 1, 1, cin)))
    bb = g.const("box_bias", "FLOAT32", [per_cell * 4], np.zeros(per_cell * 4))
    wc = g.const("class_weights", "FLOAT32", [per_cell * ncwb, 1, 1, cin],
                 rng.normal(0, 1.5, (per_cell * ncwb, 1, 1, cin)))
    bc = g.const("class_bias", "FLOAT32", [per_cell * ncwb], rng.normal(0, 0.5, per_cell * ncwb))
    yb = g.tensor("box_map", "FLOAT32", [1, h, w, per_cell * 4])
    yc = g.tensor("class_map", "FLOAT32", [1, h, w, per_cell * ncwb])
    g.op("CONV_2D", [x, wb, bb], [yb], options=conv)
    g.op("CONV_2D", [x, wc, bc], [yc], options=conv)
    sb = g.const("box_shape", "INT32", [3], [1, n, 4])
    sc = g.const("class_shape", "INT32", [3], [1, n, ncwb])
    rb = g.tensor("box_encodings", "FLOAT32", [1, n, 4])
    rc = g.tensor("class_logits", "FLOAT32", [1, n, ncwb])
    g.op("RESHAPE", [yb, sb], [rb], options=Graph.options("ReshapeOptions", newShape=[1, n, 4]))
    g.op("RESHAPE", [yc, sc], [rc], options=Graph.options("ReshapeOptions", newShape=[1, n, ncwb]))
    pc = g.tensor("class_predictions", "FLOAT32", [1, n, ncwb])
    g.op("LOGISTIC", [rc], [pc])
    cy, cx = np.meshgrid((np.arange(h) + 0.5) / h, (np.arange(w) + 0.5) / w, indexing="ij")
    anchors = []
    for y, xx in zip(cy.ravel(), cx.ravel()):
        anchors += [[y, xx, 0.4, 0.4], [y, xx, 0.6, 0.3]]
    a = g.const("anchors", "FLOAT32", [n, 4], np.asarray(anchors, np.float32))
    outs = dpp_outputs(g)
    opts = dpp_options(5, 1, ncwb - 1, regular=regular, per_class=4, score_t=0.3, iou_t=0.45)
    g.custom_op(DPP, [rb, pc, a], outs, opts)
    g.outputs(outs)
    feats = rng.normal(0, 1, (1, h, w, cin)).astype(np.float32)
    return Case(name, g.finish(), [feats], note="SSD-style head: CONV_2D, RESHAPE, LOGISTIC, post-processing",
                ops=["CONV_2D:1", "RESHAPE:1", "LOGISTIC:1", f"CUSTOM {DPP}:1"])


def dpp_cases():
    yield dpp("dpp_fast_f32", 16, 4, dpp_options(5, 1, 3), note="fast NMS, one class per detection")
    yield dpp("dpp_fast_f32_two_classes", 16, 4, dpp_options(4, 2, 3, score_t=0.0),
              note="fast NMS, the top two classes of each detection")
    yield dpp("dpp_fast_f32_ties", 20, 4, dpp_options(6, 3, 3, score_t=0.0), levels=4,
              note="tied scores: stable sort and libstdc++'s partial_sort order")
    yield dpp("dpp_regular_f32", 16, 4, dpp_options(6, 1, 3, regular=True, per_class=3),
              note="regular NMS per class, then the best over all classes")
    yield dpp("dpp_regular_f32_ties", 20, 3, dpp_options(8, 1, 2, regular=True, per_class=5, score_t=0.0),
              levels=3, note="regular NMS with tied scores")
    yield dpp("dpp_regular_f32_no_background", 12, 3, dpp_options(5, 1, 3, regular=True, per_class=2),
              note="as many score columns as classes: no background column")
    yield dpp("dpp_regular_f32_default_per_class", 16, 4, dpp_options(20, 1, 3, regular=True, score_t=0.9),
              note="detections_per_class absent: 100; fewer detections than max: zero rows")
    yield dpp("dpp_fast_f32_few", 16, 4, dpp_options(10, 2, 3, score_t=0.9),
              note="fewer detections than max_detections: TFLite leaves the other rows unwritten (zero here)")
    yield dpp("dpp_fast_u8", 16, 4, dpp_options(5, 1, 3), quantized=True,
              note="uint8 box encodings, anchors and class predictions")
    yield dpp("dpp_regular_u8", 16, 4, dpp_options(6, 1, 3, regular=True, per_class=3), quantized=True)
    yield ssd_model("dpp_ssd_head_fast_f32", regular=False)
    yield ssd_model("dpp_ssd_head_regular_f32", regular=True)


def cases():
    yield from nms_cases()
    yield from dpp_cases()
