//! The custom op `TFLite_Detection_PostProcess` (TFLite `kernels/detection_postprocess.cc`):
//! the tail of SSD-style detectors.
//!
//! Inputs: box encodings `[1, num_boxes, >= 4]` (center-size `[y, x, h, w]` relative to
//! the anchors; float32, or uint8 with uint8 anchors), class predictions
//! `[1, num_boxes, num_classes (+1 for a background column first)]` (float32 or uint8),
//! and anchors (`[num_boxes, 4]`, `[y, x, h, w]`). Options (a flexbuffer map):
//! `max_detections`, `max_classes_per_detection`, `detections_per_class` (default 100),
//! `use_regular_nms` (default false), `nms_score_threshold`, `nms_iou_threshold`,
//! `num_classes`, `y_scale`, `x_scale`, `h_scale`, `w_scale`.
//!
//! Boxes decode as TFLite's, in double precision: `ycenter = y / y_scale * anchor_h +
//! anchor_y`, `half_h = 0.5 * exp(h / h_scale) * anchor_h` (likewise x, w). Then either
//! fast NMS (each anchor ranked by its best class, keeping its top
//! `max_classes_per_detection` classes) or regular NMS (per class, then the best
//! `max_detections` over all classes). Outputs (float32): boxes `[1, D, 4]` (`[ymin,
//! xmin, ymax, xmax]`), classes `[1, D]`, scores `[1, D]` and the count `[1]`, with
//! `D = max_detections * max_classes_per_detection`.
//!
//! Exactness: the orders follow TFLite's exactly: a stable sort by score within a class,
//! libstdc++'s `std::partial_sort` (heap select, then heap sort) for the top classes of an
//! anchor, and for regular NMS a merge of each class's detections into the best so far
//! that keeps earlier classes first on equal scores (TFLite's single-threaded order); each
//! class keeps at most `min(detections_per_class, max_detections)`, which must be
//! positive (so regular NMS with `max_detections` 0 is an error, as in TFLite). Where TFLite leaves output rows unwritten (rows past the count in fast NMS,
//! and past `max_detections` when `max_classes_per_detection > 1` in regular NMS) they
//! are 0 here. int8 inputs are refused, as TFLite 2.19 does at Invoke.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, QuantParams, TensorView};
use crate::kernels::flexbuffer::FlexMap;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::op_error;

const OP: &str = "TFLite_Detection_PostProcess";

/// The registration of the custom op `TFLite_Detection_PostProcess`.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<DetectionPostProcess>(TfLiteBuiltinOperator::kTfLiteBuiltinCustom)
}

fn err(e: Error) -> Error {
    op_error(OP, e.message)
}

/// The op's options, as TFLite's `Init` reads them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Options {
    pub max_detections: i32,
    pub max_classes_per_detection: i32,
    pub detections_per_class: i32,
    pub use_regular_nms: bool,
    pub score_threshold: f32,
    pub iou_threshold: f32,
    pub num_classes: i32,
    /// `y_scale`, `x_scale`, `h_scale`, `w_scale`.
    pub scale: [f32; 4],
}

impl Options {
    /// Reads the flexbuffer map; absent keys read as 0 (`detections_per_class`: 100).
    pub fn parse(buf: &[u8]) -> Result<Options> {
        let m = FlexMap::root(buf)?;
        let dpc = m.get("detections_per_class")?;
        let regular = m.get("use_regular_nms")?;
        Ok(Options {
            max_detections: m.get("max_detections")?.as_i32(),
            max_classes_per_detection: m.get("max_classes_per_detection")?.as_i32(),
            detections_per_class: if dpc.is_null() { 100 } else { dpc.as_i32() },
            use_regular_nms: !regular.is_null() && regular.as_bool(),
            score_threshold: m.get("nms_score_threshold")?.as_f32(),
            iou_threshold: m.get("nms_iou_threshold")?.as_f32(),
            num_classes: m.get("num_classes")?.as_i32(),
            scale: [
                m.get("y_scale")?.as_f32(),
                m.get("x_scale")?.as_f32(),
                m.get("h_scale")?.as_f32(),
                m.get("w_scale")?.as_f32(),
            ],
        })
    }
}

/// Decodes one center-size encoding `[y, x, h, w]` against an anchor `[y, x, h, w]` into
/// `[ymin, xmin, ymax, xmax]`, in TFLite's double-precision steps.
pub fn decode_box(enc: [f32; 4], anchor: [f32; 4], scale: [f32; 4]) -> [f32; 4] {
    let d = |v: f32| f64::from(v);
    let ycenter = (d(enc[0]) / d(scale[0]) * d(anchor[2]) + d(anchor[0])) as f32;
    let xcenter = (d(enc[1]) / d(scale[1]) * d(anchor[3]) + d(anchor[1])) as f32;
    let half_h = (0.5 * (d(enc[2]) / d(scale[2])).exp() * d(anchor[2])) as f32;
    let half_w = (0.5 * (d(enc[3]) / d(scale[3])).exp() * d(anchor[3])) as f32;
    [ycenter - half_h, xcenter - half_w, ycenter + half_h, xcenter + half_w]
}

/// TFLite's `ComputeIntersectionOverUnion` on decoded boxes `i` and `j`.
pub fn iou(boxes: &[f32], i: usize, j: usize) -> f32 {
    let (a, b) = (&boxes[4 * i..4 * i + 4], &boxes[4 * j..4 * j + 4]);
    let area_a = (a[2] - a[0]) * (a[3] - a[1]);
    let area_b = (b[2] - b[0]) * (b[3] - b[1]);
    if area_a <= 0.0 || area_b <= 0.0 {
        return 0.0;
    }
    // std::max / std::min<float> as C++ evaluates them.
    let max = |x: f32, y: f32| if x < y { y } else { x };
    let min = |x: f32, y: f32| if y < x { y } else { x };
    let inter_h = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0);
    let inter_w = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0);
    let inter = inter_h * inter_w;
    inter / (area_a + area_b - inter)
}

/// libstdc++'s `__adjust_heap` on `v[..len]` (then `__push_heap` from the hole), with
/// `comp` the "comes later" order of the heap.
fn adjust_heap(v: &mut [i32], mut hole: usize, len: usize, value: i32, comp: &impl Fn(i32, i32) -> bool) {
    let top = hole;
    let mut second = hole;
    while second < len.saturating_sub(1) / 2 {
        second = 2 * (second + 1);
        if comp(v[second], v[second - 1]) {
            second -= 1;
        }
        v[hole] = v[second];
        hole = second;
    }
    if len & 1 == 0 && len >= 2 && second == (len - 2) / 2 {
        second = 2 * (second + 1);
        v[hole] = v[second - 1];
        hole = second - 1;
    }
    while hole > top {
        let parent = (hole - 1) / 2;
        if !comp(v[parent], value) {
            break;
        }
        v[hole] = v[parent];
        hole = parent;
    }
    v[hole] = value;
}

/// libstdc++'s `std::partial_sort(v, v + middle, v + v.len(), comp)`.
pub fn partial_sort(v: &mut [i32], middle: usize, comp: impl Fn(i32, i32) -> bool) {
    let len = middle;
    if len >= 2 {
        let mut parent = (len - 2) / 2;
        loop {
            adjust_heap(v, parent, len, v[parent], &comp);
            if parent == 0 {
                break;
            }
            parent -= 1;
        }
    }
    // __heap_select: smaller-ranked elements from the tail replace the heap's top.
    if len > 0 {
        for i in middle..v.len() {
            if comp(v[i], v[0]) {
                let value = v[i];
                v[i] = v[0];
                adjust_heap(v, 0, len, value, &comp);
            }
        }
    }
    // __sort_heap.
    let mut last = len;
    while last > 1 {
        last -= 1;
        let value = v[last];
        v[last] = v[0];
        adjust_heap(v, 0, last, value, &comp);
    }
}

/// TFLite's `DecreasingPartialArgSort`: the first `num_to_sort` entries of `indices` (of
/// `values.len()`) are the positions of the largest values, in TFLite's order.
fn decreasing_partial_arg_sort(values: &[f32], num_to_sort: usize, indices: &mut [i32]) {
    if num_to_sort == 1 {
        // optimized_ops::ArgMaxVector: the first maximum.
        let mut best = 0;
        for (i, &v) in values.iter().enumerate().skip(1) {
            if v > values[best] {
                best = i;
            }
        }
        indices[0] = best as i32;
        return;
    }
    let idx = &mut indices[..values.len()];
    for (i, x) in idx.iter_mut().enumerate() {
        *x = i as i32;
    }
    partial_sort(idx, num_to_sort, |a, b| values[a as usize] > values[b as usize]);
}

/// Scratch for single-class NMS, sized once at Prepare.
#[derive(Default)]
pub struct NmsScratch {
    keep: Vec<usize>,
    active: Vec<bool>,
}

/// TFLite's `NonMaxSuppressionSingleClassHelper`: the boxes (of `decoded`) chosen for
/// `scores`, best first, at most `max_detections`, into `selected`.
pub fn nms_single_class(
    decoded: &[f32],
    scores: &[f32],
    score_threshold: f32,
    iou_threshold: f32,
    max_detections: i32,
    scratch: &mut NmsScratch,
    selected: &mut Vec<usize>,
) -> Result<()> {
    if max_detections < 0 {
        crate::bail!("max_detections {max_detections} is negative");
    }
    if !(iou_threshold > 0.0 && iou_threshold <= 1.0) {
        crate::bail!("nms_iou_threshold {iou_threshold} must be in (0, 1]");
    }
    if decoded.chunks_exact(4).any(|b| b[0] > b[2] || b[1] > b[3]) {
        crate::bail!("a decoded box has its minimum above its maximum");
    }
    let keep = &mut scratch.keep;
    keep.clear();
    keep.extend((0..scores.len()).filter(|&i| scores[i] >= score_threshold));
    // std::stable_sort by decreasing score (no NaN passed the threshold test).
    keep.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).unwrap_or(core::cmp::Ordering::Equal));
    let kept = keep.len();
    let output_size = kept.min(max_detections as usize);
    selected.clear();
    let active = &mut scratch.active;
    active.clear();
    active.resize(kept, true);
    let mut num_active = kept;
    for i in 0..kept {
        if num_active == 0 || selected.len() >= output_size {
            break;
        }
        if !active[i] {
            continue;
        }
        selected.push(keep[i]);
        active[i] = false;
        num_active -= 1;
        for j in i + 1..kept {
            if active[j] && iou(decoded, keep[i], keep[j]) > iou_threshold {
                active[j] = false;
                num_active -= 1;
            }
        }
    }
    Ok(())
}

/// The four outputs, zeroed by the caller.
pub struct Outputs<'a> {
    pub boxes: &'a mut [f32],
    pub classes: &'a mut [f32],
    pub scores: &'a mut [f32],
    pub count: &'a mut f32,
}

/// Scratch for one node, sized at Prepare.
#[derive(Default)]
pub struct Scratch {
    class_scores: Vec<f32>,
    sorted_classes: Vec<i32>,
    selected: Vec<usize>,
    nms: NmsScratch,
    /// Regular NMS: (flat score index, score) of the best detections so far.
    merged: Vec<(usize, f32)>,
    merge_tmp: Vec<(usize, f32)>,
}

/// Fast NMS (`NonMaxSuppressionMultiClassFastHelper`): `scores` is `[num_boxes, ncwb]`.
pub fn fast_nms(
    o: &Options,
    decoded: &[f32],
    scores: &[f32],
    ncwb: usize,
    s: &mut Scratch,
    out: Outputs<'_>,
) -> Result<()> {
    let num_boxes = decoded.len() / 4;
    let num_classes = o.num_classes as usize;
    let label_offset = ncwb - num_classes;
    if o.max_classes_per_detection <= 0 {
        crate::bail!("max_classes_per_detection {} must be positive", o.max_classes_per_detection);
    }
    let per_anchor = o.max_classes_per_detection as usize;
    let categories = per_anchor.min(num_classes);
    if num_boxes > 0 && categories == 0 {
        crate::bail!("num_classes must be positive");
    }
    s.class_scores.clear();
    s.sorted_classes.clear();
    s.sorted_classes.resize(num_boxes * num_classes, 0);
    for row in 0..num_boxes {
        let box_scores = &scores[row * ncwb + label_offset..row * ncwb + label_offset + num_classes];
        let classes = &mut s.sorted_classes[row * num_classes..(row + 1) * num_classes];
        decreasing_partial_arg_sort(box_scores, categories, classes);
        s.class_scores.push(box_scores[classes[0] as usize]);
    }
    nms_single_class(
        decoded,
        &s.class_scores,
        o.score_threshold,
        o.iou_threshold,
        o.max_detections,
        &mut s.nms,
        &mut s.selected,
    )?;
    for (k, &sel) in s.selected.iter().enumerate() {
        let box_scores = &scores[sel * ncwb + label_offset..];
        let classes = &s.sorted_classes[sel * num_classes..];
        for col in 0..categories {
            let at = per_anchor * k + col;
            out.boxes[4 * at..4 * at + 4].copy_from_slice(&decoded[4 * sel..4 * sel + 4]);
            out.classes[at] = classes[col] as f32;
            out.scores[at] = box_scores[classes[col] as usize];
        }
    }
    *out.count = s.selected.len() as f32;
    Ok(())
}

/// Regular NMS (`NonMaxSuppressionMultiClassRegularHelper`, one thread): per class, at
/// most `min(detections_per_class, max_detections)` boxes, merged into the best
/// `max_detections` so far; on equal scores the earlier classes' detections stay first.
pub fn regular_nms(
    o: &Options,
    decoded: &[f32],
    scores: &[f32],
    ncwb: usize,
    s: &mut Scratch,
    out: Outputs<'_>,
) -> Result<()> {
    let num_boxes = decoded.len() / 4;
    let num_classes = o.num_classes as usize;
    let label_offset = ncwb - num_classes;
    let per_class = o.detections_per_class.min(o.max_detections);
    if per_class <= 0 {
        crate::bail!(
            "min(detections_per_class {}, max_detections {}) must be positive",
            o.detections_per_class,
            o.max_detections
        );
    }
    let max_det = o.max_detections as usize;
    s.merged.clear();
    for col in 0..num_classes {
        s.class_scores.clear();
        s.class_scores.extend((0..num_boxes).map(|row| scores[row * ncwb + col + label_offset]));
        nms_single_class(
            decoded,
            &s.class_scores,
            o.score_threshold,
            o.iou_threshold,
            per_class,
            &mut s.nms,
            &mut s.selected,
        )?;
        if s.selected.is_empty() {
            continue;
        }
        // Both lists are sorted by decreasing score: merge, keeping the earlier first on ties.
        s.merge_tmp.clear();
        let (old, new) = (&s.merged, &s.selected);
        let (mut i, mut j) = (0, 0);
        while i < old.len() && j < new.len() {
            let cand = (new[j] * ncwb + col + label_offset, s.class_scores[new[j]]);
            if cand.1 > old[i].1 {
                s.merge_tmp.push(cand);
                j += 1;
            } else {
                s.merge_tmp.push(old[i]);
                i += 1;
            }
        }
        s.merge_tmp.extend_from_slice(&old[i..]);
        s.merge_tmp.extend(new[j..].iter().map(|&b| (b * ncwb + col + label_offset, s.class_scores[b])));
        s.merge_tmp.truncate(max_det);
        core::mem::swap(&mut s.merged, &mut s.merge_tmp);
    }
    for (k, &(flat, score)) in s.merged.iter().enumerate() {
        let anchor = flat / ncwb;
        let class = flat - anchor * ncwb - label_offset;
        out.boxes[4 * k..4 * k + 4].copy_from_slice(&decoded[4 * anchor..4 * anchor + 4]);
        out.classes[k] = class as f32;
        out.scores[k] = score;
    }
    *out.count = s.merged.len() as f32;
    Ok(())
}

/// The custom op's kernel.
struct DetectionPostProcess;

/// What Prepare derives for a node.
struct Plan {
    options: Options,
    num_boxes: usize,
    /// Values per box encoding (>= 4).
    box_len: usize,
    /// Classes with the background column, if any.
    ncwb: usize,
    /// Decoded boxes `[num_boxes, 4]`.
    decoded: Vec<f32>,
    /// Dequantized class predictions (uint8 ones only).
    dequantized: Vec<f32>,
    scratch: Scratch,
}

fn dim(t: &TensorView<'_>, i: usize) -> usize {
    t.shape.get(i).map_or(0, |&d| d.max(0) as usize)
}

impl BuiltinKernel for DetectionPostProcess {
    const NAME: &'static str = OP;
    type Params = ();
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Plan> {
        let options = Options::parse(ctx.custom_initial_data())
            .map_err(|e| op_error(OP, format!("custom options: {}", e.message)))?;
        if ctx.num_inputs() != 3 || ctx.num_outputs() != 4 {
            return Err(op_error(
                OP,
                format!("expected 3 inputs and 4 outputs, got {} and {}", ctx.num_inputs(), ctx.num_outputs()),
            ));
        }
        let boxes = ctx.input(0).map_err(err)?;
        let classes = ctx.input(1).map_err(err)?;
        let anchors = ctx.input(2).map_err(err)?;
        if boxes.shape.len() != 3 || classes.shape.len() != 3 || anchors.shape.len() != 2 {
            return Err(op_error(OP, "box encodings and class predictions must have rank 3, anchors rank 2"));
        }
        use TfLiteType::*;
        match (boxes.dtype, anchors.dtype) {
            (kTfLiteFloat32, kTfLiteFloat32) | (kTfLiteUInt8, kTfLiteUInt8) => {}
            (b, a) => {
                return Err(op_error(
                    OP,
                    format!(
                        "box encodings of type {} with anchors of type {} are not supported (float32 or uint8, both alike)",
                        b.name(),
                        a.name()
                    ),
                ));
            }
        }
        if !matches!(classes.dtype, kTfLiteFloat32 | kTfLiteUInt8) {
            return Err(op_error(OP, format!("class predictions of type {} are not supported", classes.dtype.name())));
        }
        let num_boxes = dim(&boxes, 1);
        let box_len = dim(&boxes, 2);
        let ncwb = dim(&classes, 2);
        if boxes.shape[0] != 1 || box_len < 4 {
            return Err(op_error(
                OP,
                format!("box encodings must have shape [1, num_boxes, >= 4], have {:?}", boxes.shape),
            ));
        }
        if classes.shape[0] != 1 || dim(&classes, 1) != num_boxes {
            return Err(op_error(
                OP,
                format!("class predictions must have shape [1, {num_boxes}, classes], have {:?}", classes.shape),
            ));
        }
        if anchors.num_elements() < num_boxes * 4 {
            return Err(op_error(OP, format!("anchors {:?} hold fewer than {num_boxes} boxes", anchors.shape)));
        }
        let o = &options;
        if o.num_classes < 0 || ncwb < o.num_classes as usize || ncwb - o.num_classes as usize > 1 {
            return Err(op_error(
                OP,
                format!("num_classes {} does not fit {ncwb} class predictions per box", o.num_classes),
            ));
        }
        if o.max_detections < 0 || o.max_classes_per_detection < 0 {
            return Err(op_error(OP, "max_detections and max_classes_per_detection must not be negative"));
        }
        // Regular NMS writes max_detections rows whatever max_classes_per_detection is.
        if o.use_regular_nms && o.max_detections > 0 && o.max_classes_per_detection == 0 {
            return Err(op_error(OP, "max_classes_per_detection must be positive"));
        }
        let detected = o
            .max_detections
            .checked_mul(o.max_classes_per_detection)
            .ok_or_else(|| op_error(OP, "max_detections * max_classes_per_detection overflows"))?;
        for (i, shape) in [vec![1, detected, 4], vec![1, detected], vec![1, detected], vec![1]].iter().enumerate() {
            ctx.set_output_type(i, kTfLiteFloat32).map_err(err)?;
            ctx.resize_output(i, shape).map_err(err)?;
        }
        let decoded = Vec::with_capacity(num_boxes * 4);
        let dequantized = Vec::with_capacity(if classes.dtype == kTfLiteUInt8 { num_boxes * ncwb } else { 0 });
        Ok(Plan { options, num_boxes, box_len, ncwb, decoded, dequantized, scratch: Scratch::default() })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut Plan) -> Result<()> {
        let boxes = ctx.input(0).map_err(err)?;
        let classes = ctx.input(1).map_err(err)?;
        let anchors = ctx.input(2).map_err(err)?;
        let (n, len) = (plan.num_boxes, plan.box_len);
        let (decoded, dequantized, s) = (&mut plan.decoded, &mut plan.dequantized, &mut plan.scratch);
        decoded.clear();
        let scale = plan.options.scale;
        let deq = |q: QuantParams| move |x: u8| (f32::from(x) - q.zero_point as f32) * q.scale;
        if boxes.dtype == TfLiteType::kTfLiteUInt8 {
            let (b, a) = (boxes.data::<u8>().map_err(err)?, anchors.data::<u8>().map_err(err)?);
            let (db, da) = (deq(boxes.quant()), deq(anchors.quant()));
            for i in 0..n {
                let e = &b[i * len..i * len + 4];
                let an = &a[i * 4..i * 4 + 4];
                decoded.extend(decode_box(
                    [db(e[0]), db(e[1]), db(e[2]), db(e[3])],
                    [da(an[0]), da(an[1]), da(an[2]), da(an[3])],
                    scale,
                ));
            }
        } else {
            let (b, a) = (boxes.data::<f32>().map_err(err)?, anchors.data::<f32>().map_err(err)?);
            for i in 0..n {
                let e = &b[i * len..i * len + 4];
                let an = &a[i * 4..i * 4 + 4];
                decoded.extend(decode_box([e[0], e[1], e[2], e[3]], [an[0], an[1], an[2], an[3]], scale));
            }
        }
        let scores: &[f32] = if classes.dtype == TfLiteType::kTfLiteUInt8 {
            let q = classes.quant();
            dequantized.clear();
            dequantized.extend(
                classes.data::<u8>().map_err(err)?.iter().map(|&x| (i32::from(x) - q.zero_point) as f32 * q.scale),
            );
            dequantized
        } else {
            classes.data::<f32>().map_err(err)?
        };
        if scores.len() < n * plan.ncwb {
            return Err(op_error(OP, "class predictions are shorter than their shape"));
        }
        let (mut ob, mut oc, mut os, mut on) = (
            ctx.output(0).map_err(err)?,
            ctx.output(1).map_err(err)?,
            ctx.output(2).map_err(err)?,
            ctx.output(3).map_err(err)?,
        );
        let out = Outputs {
            boxes: ob.data_mut::<f32>().map_err(err)?,
            classes: oc.data_mut::<f32>().map_err(err)?,
            scores: os.data_mut::<f32>().map_err(err)?,
            count: on
                .data_mut::<f32>()
                .map_err(err)?
                .first_mut()
                .ok_or_else(|| op_error(OP, "the count output is empty"))?,
        };
        out.boxes.fill(0.0);
        out.classes.fill(0.0);
        out.scores.fill(0.0);
        *out.count = 0.0;
        let r = if plan.options.use_regular_nms {
            regular_nms(&plan.options, decoded, scores, plan.ncwb, s, out)
        } else {
            fast_nms(&plan.options, decoded, scores, plan.ncwb, s, out)
        };
        r.map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(regular: bool) -> Options {
        Options {
            max_detections: 3,
            max_classes_per_detection: 1,
            detections_per_class: 100,
            use_regular_nms: regular,
            score_threshold: 0.1,
            iou_threshold: 0.5,
            num_classes: 2,
            scale: [10.0, 10.0, 5.0, 5.0],
        }
    }

    /// Three boxes: 0 and 1 overlap heavily, 2 is apart. Scores `[background, a, b]`.
    fn boxes() -> Vec<f32> {
        vec![0.0, 0.0, 1.0, 1.0, 0.0, 0.05, 1.0, 1.05, 2.0, 2.0, 3.0, 3.0]
    }

    fn run(o: &Options, scores: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>, f32) {
        let d = (o.max_detections * o.max_classes_per_detection) as usize;
        let (mut b, mut c, mut s, mut n) = (vec![0.0; 4 * d], vec![0.0; d], vec![0.0; d], 0.0);
        let out = Outputs { boxes: &mut b, classes: &mut c, scores: &mut s, count: &mut n };
        let mut scratch = Scratch::default();
        if o.use_regular_nms {
            regular_nms(o, &boxes(), scores, 3, &mut scratch, out).unwrap();
        } else {
            fast_nms(o, &boxes(), scores, 3, &mut scratch, out).unwrap();
        }
        (b, c, s, n)
    }

    #[test]
    fn options_parse() {
        // flexbuffers.Dumps({"max_detections": 3, "max_classes_per_detection": 1,
        // "nms_score_threshold": 0.25, "nms_iou_threshold": 0.5, "num_classes": 2,
        // "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0})
        let hex = concat!(
            "6d61785f646574656374696f6e73006d61785f636c61737365735f7065725f646574656374696f6e006e6d735f73636f7265",
            "5f7468726573686f6c64006e6d735f696f755f7468726573686f6c64006e756d5f636c617373657300795f7363616c650078",
            "5f7363616c6500685f7363616c6500775f7363616c650009116e7e4257320f20290000000c00000001000000090000000000",
            "a04001000000030000000000003f0000803e020000000000a04000002041000020410e06060e0e060e0e0e2d2601",
        );
        let buf: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
        let o = Options::parse(&buf).unwrap();
        assert_eq!(o.max_detections, 3);
        assert_eq!(o.detections_per_class, 100);
        assert!(!o.use_regular_nms);
        assert_eq!(o.score_threshold, 0.25);
        assert_eq!(o.scale, [10.0, 10.0, 5.0, 5.0]);
        assert!(Options::parse(&[]).is_err());
    }

    #[test]
    fn decodes_center_size() {
        // Zero encodings give the anchor itself.
        assert_eq!(decode_box([0.0; 4], [0.5, 0.5, 1.0, 2.0], [10.0, 10.0, 5.0, 5.0]), [0.0, -0.5, 1.0, 1.5]);
        let b = decode_box([10.0, 0.0, 0.0, 0.0], [0.5, 0.5, 1.0, 1.0], [10.0, 10.0, 5.0, 5.0]);
        assert_eq!(b, [1.0, 0.0, 2.0, 1.0]);
    }

    #[test]
    fn fast_and_regular() {
        let scores = [0.0, 0.9, 0.2, 0.0, 0.8, 0.85, 0.0, 0.3, 0.6];
        // Fast: anchors ranked by their best class (0.9, 0.85, 0.6); box 1 overlaps box 0.
        let (b, c, s, n) = run(&opts(false), &scores);
        assert_eq!(n, 2.0);
        assert_eq!(c, vec![0.0, 1.0, 0.0]);
        assert_eq!(s, vec![0.9, 0.6, 0.0]);
        assert_eq!(&b[..8], &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
        // Regular: per class, so box 1 survives in class 1.
        let (_, c, s, n) = run(&opts(true), &scores);
        assert_eq!(n, 3.0);
        assert_eq!(s, vec![0.9, 0.85, 0.6]);
        assert_eq!(c, vec![0.0, 1.0, 1.0]);
        // Two classes per detection in fast mode.
        let o = Options { max_classes_per_detection: 2, ..opts(false) };
        let (_, c, s, n) = run(&o, &scores);
        assert_eq!(n, 2.0);
        assert_eq!(c[..4], [0.0, 1.0, 1.0, 0.0]);
        assert_eq!(s[..4], [0.9, 0.2, 0.6, 0.3]);
    }

    #[test]
    fn option_errors() {
        let scores = [0.0; 9];
        let mut scratch = Scratch::default();
        let (mut b, mut c, mut s, mut n) = (vec![0.0; 12], vec![0.0; 3], vec![0.0; 3], 0.0);
        let o = Options { iou_threshold: 0.0, ..opts(false) };
        let out = Outputs { boxes: &mut b, classes: &mut c, scores: &mut s, count: &mut n };
        assert!(fast_nms(&o, &boxes(), &scores, 3, &mut scratch, out).is_err());
        let o = Options { detections_per_class: 0, ..opts(true) };
        let out = Outputs { boxes: &mut b, classes: &mut c, scores: &mut s, count: &mut n };
        assert!(regular_nms(&o, &boxes(), &scores, 3, &mut scratch, out).is_err());
        // A box with its minimum above its maximum.
        let bad = [1.0, 0.0, 0.0, 1.0];
        assert!(nms_single_class(&bad, &[1.0], 0.0, 0.5, 1, &mut NmsScratch::default(), &mut Vec::new()).is_err());
    }

    #[test]
    fn partial_sort_matches_libstdcxx() {
        // Distinct values: the top 3 in decreasing order.
        let vals = [0.1f32, 0.7, 0.3, 0.9, 0.5, 0.2];
        let mut idx = [0i32; 6];
        decreasing_partial_arg_sort(&vals, 3, &mut idx);
        assert_eq!(idx[..3], [3, 1, 4]);
        // Ties: libstdc++'s std::partial_sort order.
        let ties = [0.5f32, 0.5, 0.5, 0.5, 0.5];
        decreasing_partial_arg_sort(&ties, 3, &mut idx);
        assert_eq!(idx[..5], [0, 1, 2, 3, 4]);
        let mut idx8 = [0i32; 8];
        decreasing_partial_arg_sort(&[0.3, 0.3, 0.9, 0.3, 0.9, 0.1, 0.3, 0.9], 4, &mut idx8);
        assert_eq!(idx8, [7, 4, 2, 0, 3, 5, 6, 1]);
        // One: the first maximum.
        decreasing_partial_arg_sort(&ties, 1, &mut idx);
        assert_eq!(idx[0], 0);
    }
}
