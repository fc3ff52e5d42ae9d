//! NON_MAX_SUPPRESSION_V4 and NON_MAX_SUPPRESSION_V5 (TFLite `kernels/non_max_suppression.cc`,
//! `internal/reference/non_max_suppression.h`).
//!
//! Inputs: boxes `[num_boxes, 4]` (`[y1, x1, y2, x2]`, corners in either order), scores
//! `[num_boxes]`, `max_output_size` (an int32 scalar, >= 0), the IoU and score thresholds
//! (float32 scalars) and, for V5 (six inputs), the Soft-NMS sigma (a float32 scalar, >= 0).
//! Outputs: the selected indices `[max_output_size]` (int32, padded with 0), for V5 their
//! scores `[max_output_size]` (float32, padded with 0), and the number selected (an int32
//! scalar). Float32 only, as TFLite 2.19. As in TFLite, both registrations run the same
//! kernel and the input count picks the mode.
//!
//! Exactness: the candidates sit in a binary max-heap by score that behaves exactly like
//! libstdc++'s `std::priority_queue` (TFLite's), so equal scores come out in TFLite's
//! order. As TFLite's loop, a selected candidate goes back into the queue; popped again,
//! it is compared with itself, which suppresses it unless its box has no area (or the IoU
//! threshold is above 1): then it is selected again. A non-constant `max_output_size`
//! makes the outputs dynamic, sized at Invoke.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{known_at_prepare, op_error, plan_declared_output, settle_output_shape};

const V4: &str = "NON_MAX_SUPPRESSION_V4";
const V5: &str = "NON_MAX_SUPPRESSION_V5";

/// The NON_MAX_SUPPRESSION_V4 registration.
pub fn v4_registration() -> TfLiteRegistration {
    kernel::registration::<Nms<false>>(TfLiteBuiltinOperator::kTfLiteBuiltinNonMaxSuppressionV4)
}

/// The NON_MAX_SUPPRESSION_V5 registration.
pub fn v5_registration() -> TfLiteRegistration {
    kernel::registration::<Nms<true>>(TfLiteBuiltinOperator::kTfLiteBuiltinNonMaxSuppressionV5)
}

/// C++'s `std::min<float>`: `b < a ? b : a` (keeps `a` when either is NaN).
#[inline]
fn c_min(a: f32, b: f32) -> f32 {
    if b < a { b } else { a }
}

/// C++'s `std::max<float>`: `a < b ? b : a`.
#[inline]
fn c_max(a: f32, b: f32) -> f32 {
    if a < b { b } else { a }
}

/// Intersection over union of boxes `i` and `j` of `boxes` (`[y1, x1, y2, x2]` each), 0
/// when either has no area; TFLite's operation order.
pub fn iou(boxes: &[f32], i: usize, j: usize) -> f32 {
    let (a, b) = (&boxes[4 * i..4 * i + 4], &boxes[4 * j..4 * j + 4]);
    let (a_ymin, a_ymax, a_xmin, a_xmax) = (c_min(a[0], a[2]), c_max(a[0], a[2]), c_min(a[1], a[3]), c_max(a[1], a[3]));
    let (b_ymin, b_ymax, b_xmin, b_xmax) = (c_min(b[0], b[2]), c_max(b[0], b[2]), c_min(b[1], b[3]), c_max(b[1], b[3]));
    let area_a = (a_ymax - a_ymin) * (a_xmax - a_xmin);
    let area_b = (b_ymax - b_ymin) * (b_xmax - b_xmin);
    if area_a <= 0.0 || area_b <= 0.0 {
        return 0.0;
    }
    let inter_ymax = c_min(a_ymax, b_ymax);
    let inter_xmax = c_min(a_xmax, b_xmax);
    let inter_ymin = c_max(a_ymin, b_ymin);
    let inter_xmin = c_max(a_xmin, b_xmin);
    let inter = c_max(inter_ymax - inter_ymin, 0.0) * c_max(inter_xmax - inter_xmin, 0.0);
    let union = area_a + area_b - inter;
    if union == 0.0 {
        return 0.0;
    }
    inter / union
}

/// One queued box.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    index: usize,
    score: f32,
    /// Selections before this one were already compared with it.
    suppress_begin: usize,
}

/// A max-heap by score whose push and pop move elements exactly as libstdc++'s
/// `push_heap` / `pop_heap` (`__push_heap`, `__adjust_heap`) with `a.score < b.score`, so
/// that ties leave in the same order as from TFLite's `std::priority_queue`.
#[derive(Default)]
pub struct StdHeap {
    v: Vec<Candidate>,
}

impl StdHeap {
    fn less(a: &Candidate, b: &Candidate) -> bool {
        a.score < b.score
    }

    fn clear(&mut self) {
        self.v.clear();
    }

    fn len(&self) -> usize {
        self.v.len()
    }

    /// `__push_heap`: moves `value` up from `hole` (not above `top`).
    fn sift_up(&mut self, mut hole: usize, top: usize, value: Candidate) {
        while hole > top {
            let parent = (hole - 1) / 2;
            if !Self::less(&self.v[parent], &value) {
                break;
            }
            self.v[hole] = self.v[parent];
            hole = parent;
        }
        self.v[hole] = value;
    }

    fn push(&mut self, c: Candidate) {
        self.v.push(c);
        let last = self.v.len() - 1;
        self.sift_up(last, 0, c);
    }

    /// `pop_heap` then `pop_back`: the largest, ties as libstdc++ breaks them.
    fn pop(&mut self) -> Option<Candidate> {
        let n = self.v.len();
        if n == 0 {
            return None;
        }
        let top = self.v[0];
        if n > 1 {
            let value = self.v[n - 1];
            // `__adjust_heap` over the first n - 1 elements, from the root.
            let len = n - 1;
            let mut hole = 0usize;
            let mut second = 0usize;
            while second < len.saturating_sub(1) / 2 {
                second = 2 * (second + 1);
                if Self::less(&self.v[second], &self.v[second - 1]) {
                    second -= 1;
                }
                self.v[hole] = self.v[second];
                hole = second;
            }
            if len & 1 == 0 && len >= 2 && second == (len - 2) / 2 {
                second = 2 * (second + 1);
                self.v[hole] = self.v[second - 1];
                hole = second - 1;
            }
            self.sift_up(hole, 0, value);
        }
        self.v.pop();
        Some(top)
    }
}

/// TFLite's (Soft-)NMS on float boxes: writes the selections to `indices` (and their
/// possibly decayed scores to `selected_scores`), pads both with 0 up to
/// `max_output_size`, and returns how many were selected. `sigma` 0 is plain NMS.
#[allow(clippy::too_many_arguments)]
pub fn non_max_suppression(
    boxes: &[f32],
    scores: &[f32],
    max_output_size: usize,
    iou_threshold: f32,
    score_threshold: f32,
    sigma: f32,
    heap: &mut StdHeap,
    indices: &mut [i32],
    mut selected_scores: Option<&mut [f32]>,
) -> Result<usize> {
    let num_boxes = scores.len();
    if boxes.len() != num_boxes * 4 {
        crate::bail!("{} box values for {num_boxes} scores", boxes.len());
    }
    if indices.len() < max_output_size || selected_scores.as_ref().is_some_and(|s| s.len() < max_output_size) {
        crate::bail!("outputs are shorter than max_output_size {max_output_size}");
    }
    heap.clear();
    for (i, &s) in scores.iter().enumerate() {
        if s > score_threshold {
            heap.push(Candidate { index: i, score: s, suppress_begin: 0 });
        }
    }
    let num_outputs = heap.len().min(max_output_size);
    let mut selected = 0usize;
    let scale = if sigma > 0.0 { -0.5f32 / sigma } else { 0.0 };
    while selected < num_outputs {
        let Some(mut next) = heap.pop() else { break };
        let original = next.score;
        let mut hard_suppress = false;
        for j in (next.suppress_begin..selected).rev() {
            let v = iou(boxes, next.index, indices[j] as usize);
            if v >= iou_threshold {
                hard_suppress = true;
                break;
            }
            if sigma > 0.0 {
                next.score *= (scale * v * v).exp();
            }
            if next.score <= score_threshold {
                break;
            }
        }
        next.suppress_begin = selected;
        if !hard_suppress {
            if next.score == original {
                indices[selected] = next.index as i32;
                if let Some(s) = selected_scores.as_deref_mut() {
                    s[selected] = next.score;
                }
                selected += 1;
            }
            if next.score > score_threshold {
                heap.push(next);
            }
        }
    }
    indices[selected..max_output_size].fill(0);
    if let Some(s) = selected_scores {
        s[selected..max_output_size].fill(0.0);
    }
    Ok(selected)
}

/// The one value of a float32 scalar, read byte-wise (model buffers need not be aligned).
fn scalar_f32(op: &str, what: &str, t: &TensorView<'_>) -> Result<f32> {
    let raw = t.raw().map_err(|e| op_error(op, e.message))?;
    let b: [u8; 4] =
        raw.get(..4).and_then(|b| b.try_into().ok()).ok_or_else(|| op_error(op, format!("{what} has no value")))?;
    Ok(f32::from_le_bytes(b))
}

/// `max_output_size`, checked to be >= 0.
fn max_output_size(op: &str, t: &TensorView<'_>) -> Result<usize> {
    let raw = t.raw().map_err(|e| op_error(op, e.message))?;
    let b: [u8; 4] =
        raw.get(..4).and_then(|b| b.try_into().ok()).ok_or_else(|| op_error(op, "max_output_size has no value"))?;
    let v = i32::from_le_bytes(b);
    usize::try_from(v).map_err(|_| op_error(op, format!("max_output_size {v} is negative")))
}

/// NON_MAX_SUPPRESSION_V4 (`SOFT == false`) or _V5 (`SOFT == true`); the input count
/// chooses the mode either way, as in TFLite.
struct Nms<const SOFT: bool>;

/// What Prepare derives for an NMS node.
struct NmsPlan {
    soft: bool,
    /// `max_output_size` when it is a constant.
    max_output: Option<usize>,
    heap: StdHeap,
}

fn check_scalar(op: &str, what: &str, t: &TensorView<'_>, dtype: TfLiteType) -> Result<()> {
    if t.dtype != dtype {
        return Err(op_error(op, format!("{what} has type {}, expected {}", t.dtype.name(), dtype.name())));
    }
    if !t.shape.is_empty() {
        return Err(op_error(op, format!("{what} must be a scalar, has shape {:?}", t.shape)));
    }
    Ok(())
}

impl<const SOFT: bool> BuiltinKernel for Nms<SOFT> {
    const NAME: &'static str = if SOFT { V5 } else { V4 };
    type Params = ();
    type State = NmsPlan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<NmsPlan> {
        let op = Self::NAME;
        let err = |e: Error| op_error(op, e.message);
        let n_in = ctx.num_inputs();
        if n_in != 5 && n_in != 6 {
            return Err(op_error(op, format!("expected 5 or 6 inputs, got {n_in}")));
        }
        let soft = n_in == 6;
        use TfLiteType::*;
        let boxes = ctx.input(0).map_err(err)?;
        if boxes.dtype != kTfLiteFloat32 {
            return Err(op_error(op, format!("boxes type {} is not supported (float32 only)", boxes.dtype.name())));
        }
        if boxes.shape.len() != 2 || boxes.shape[1] != 4 || boxes.shape[0] < 0 {
            return Err(op_error(op, format!("boxes must have shape [num_boxes, 4], have {:?}", boxes.shape)));
        }
        let scores = ctx.input(1).map_err(err)?;
        if scores.dtype != kTfLiteFloat32 {
            return Err(op_error(op, format!("scores type {} is not supported (float32 only)", scores.dtype.name())));
        }
        if scores.shape != [boxes.shape[0]] {
            return Err(op_error(op, format!("scores must have shape [{}], have {:?}", boxes.shape[0], scores.shape)));
        }
        let max_out = ctx.input(2).map_err(err)?;
        check_scalar(op, "max_output_size", &max_out, kTfLiteInt32)?;
        let max_output = if known_at_prepare(&max_out) { Some(max_output_size(op, &max_out)?) } else { None };
        check_scalar(op, "iou_threshold", &ctx.input(3).map_err(err)?, kTfLiteFloat32)?;
        check_scalar(op, "score_threshold", &ctx.input(4).map_err(err)?, kTfLiteFloat32)?;
        let vectors: &[usize] = if soft {
            check_scalar(op, "soft_nms_sigma", &ctx.input(5).map_err(err)?, kTfLiteFloat32)?;
            if ctx.num_outputs() != 3 {
                return Err(op_error(op, format!("expected 3 outputs, got {}", ctx.num_outputs())));
            }
            ctx.set_output_type(0, kTfLiteInt32).map_err(err)?;
            ctx.set_output_type(1, kTfLiteFloat32).map_err(err)?;
            ctx.set_output_type(2, kTfLiteInt32).map_err(err)?;
            ctx.resize_output(2, &[]).map_err(err)?;
            &[0, 1]
        } else {
            if ctx.num_outputs() != 2 {
                return Err(op_error(op, format!("expected 2 outputs, got {}", ctx.num_outputs())));
            }
            ctx.set_output_type(0, kTfLiteInt32).map_err(err)?;
            ctx.set_output_type(1, kTfLiteInt32).map_err(err)?;
            ctx.resize_output(1, &[]).map_err(err)?;
            &[0]
        };
        for &o in vectors {
            match max_output {
                Some(m) => {
                    let m = i32::try_from(m).map_err(|_| op_error(op, "max_output_size is too large"))?;
                    ctx.resize_output(o, &[m]).map_err(err)?
                }
                None => plan_declared_output(ctx, op, o)?,
            }
        }
        Ok(NmsPlan { soft, max_output, heap: StdHeap::default() })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut NmsPlan) -> Result<()> {
        let op = Self::NAME;
        let err = |e: Error| op_error(op, e.message);
        let max_output = max_output_size(op, &ctx.input(2).map_err(err)?)?;
        if plan.max_output.is_some_and(|m| m != max_output) {
            return Err(op_error(op, "the constant max_output_size changed after Prepare"));
        }
        let iou_threshold = scalar_f32(op, "iou_threshold", &ctx.input(3).map_err(err)?)?;
        let score_threshold = scalar_f32(op, "score_threshold", &ctx.input(4).map_err(err)?)?;
        let sigma = if plan.soft {
            let s = scalar_f32(op, "soft_nms_sigma", &ctx.input(5).map_err(err)?)?;
            if s < 0.0 {
                return Err(op_error(op, format!("invalid sigma value for soft NMS: {s}")));
            }
            s
        } else {
            0.0
        };
        let vectors: &[usize] = if plan.soft { &[0, 1] } else { &[0] };
        if plan.max_output.is_none() {
            let m = i32::try_from(max_output).map_err(|_| op_error(op, "max_output_size is too large"))?;
            for &o in vectors {
                settle_output_shape(ctx, op, o, "max_output_size", &[m])?;
            }
        }
        let boxes = ctx.input(0).map_err(err)?.data::<f32>().map_err(err)?;
        let scores = ctx.input(1).map_err(err)?.data::<f32>().map_err(err)?;
        let mut indices_out = ctx.output(0).map_err(err)?;
        let indices = indices_out.data_mut::<i32>().map_err(err)?;
        let (count_at, n) = if plan.soft {
            let mut scores_out = ctx.output(1).map_err(err)?;
            let selected_scores = scores_out.data_mut::<f32>().map_err(err)?;
            let n = non_max_suppression(
                boxes,
                scores,
                max_output,
                iou_threshold,
                score_threshold,
                sigma,
                &mut plan.heap,
                indices,
                Some(selected_scores),
            );
            (2, n)
        } else {
            let n = non_max_suppression(
                boxes,
                scores,
                max_output,
                iou_threshold,
                score_threshold,
                0.0,
                &mut plan.heap,
                indices,
                None,
            );
            (1, n)
        };
        let n = n.map_err(|e| op_error(op, e.message))?;
        let mut count = ctx.output(count_at).map_err(err)?;
        let c = count.data_mut::<i32>().map_err(err)?;
        let first = c.first_mut().ok_or_else(|| op_error(op, "the count output has no element"))?;
        *first = n as i32;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    fn run(boxes: &[f32], scores: &[f32], max: usize, iou_t: f32, score_t: f32, sigma: f32) -> (Vec<i32>, Vec<f32>) {
        let (mut idx, mut sc) = (vec![-1; max], vec![-1.0; max]);
        let mut heap = StdHeap::default();
        let n =
            non_max_suppression(boxes, scores, max, iou_t, score_t, sigma, &mut heap, &mut idx, Some(&mut sc)).unwrap();
        assert!(idx[n..].iter().all(|&i| i == 0) && sc[n..].iter().all(|&s| s == 0.0));
        idx.truncate(n);
        sc.truncate(n);
        (idx, sc)
    }

    #[test]
    fn iou_values() {
        let b = [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0];
        assert_eq!(iou(&b, 0, 0), 1.0);
        // Corners in either order; half of box 0.
        assert_eq!(iou(&b, 0, 1), 0.5);
        // No area: 0 even against itself.
        assert_eq!(iou(&b, 2, 2), 0.0);
    }

    #[test]
    fn hard_nms() {
        // Boxes 0 and 1 overlap (IoU 0.8), 2 is apart.
        let b = [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.8, 5.0, 5.0, 6.0, 6.0];
        let (i, s) = run(&b, &[0.9, 0.95, 0.5], 3, 0.5, 0.0, 0.0);
        assert_eq!(i, vec![1, 2]);
        assert_eq!(s, vec![0.95, 0.5]);
        // A higher IoU threshold keeps both; the score threshold drops box 2.
        assert_eq!(run(&b, &[0.9, 0.95, 0.5], 3, 0.9, 0.6, 0.0).0, vec![1, 0]);
        // max_output_size limits, and 0 selects nothing.
        assert_eq!(run(&b, &[0.9, 0.95, 0.5], 1, 0.9, 0.0, 0.0).0, vec![1]);
        assert_eq!(run(&b, &[0.9, 0.95, 0.5], 0, 0.9, 0.0, 0.0).0, Vec::<i32>::new());
        // No boxes.
        assert_eq!(run(&[], &[], 2, 0.5, 0.0, 0.0).0, Vec::<i32>::new());
    }

    #[test]
    fn soft_nms_decays() {
        let b = [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.8, 5.0, 5.0, 6.0, 6.0];
        // Box 0 decays below box 2 (IoU 0.8 with box 1), then box 2 does not touch it.
        let (i, s) = run(&b, &[0.9, 0.95, 0.5], 3, 1.0, 0.0, 0.5);
        assert_eq!(i, vec![1, 2, 0]);
        assert_eq!(s[0], 0.95);
        assert_eq!(s[1], 0.5);
        assert_eq!(s[2], 0.9 * (-0.5f32 / 0.5 * 0.8 * 0.8).exp());
    }

    #[test]
    fn ties_and_degenerate_boxes_follow_libstdcxx() {
        // Separate unit boxes with tied scores: the order libstdc++'s heap gives
        // (checked against TFLite).
        let scores = [1.0, 1.0, 2.0, 1.0, 0.0, 0.0, 2.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0];
        let b: Vec<f32> = (0..13).flat_map(|i| [2.0 * i as f32, 0.0, 2.0 * i as f32 + 1.0, 1.0]).collect();
        assert_eq!(run(&b, &scores, 13, 0.5, -1.0, 0.0).0, vec![2, 6, 0, 11, 1, 10, 3, 7, 12, 5, 4, 9, 8]);
        // Boxes without area never suppress, themselves included: selected again.
        let flat = [0.0f32; 8];
        assert_eq!(run(&flat, &[0.5, 0.7], 4, 0.5, 0.0, 0.0).0, vec![1, 1]);
    }

    #[test]
    fn heap_pops_in_score_order() {
        let mut h = StdHeap::default();
        for (i, s) in [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0].into_iter().enumerate() {
            h.push(Candidate { index: i, score: s, suppress_begin: 0 });
        }
        let order: Vec<f32> = core::iter::from_fn(|| h.pop()).map(|c| c.score).collect();
        assert_eq!(order, vec![9.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 1.0]);
    }

    #[test]
    fn glue_v4_and_v5() {
        let mut g = Graph::new();
        let b = g.tensor(
            kTfLiteFloat32,
            &[3, 4],
            &[0.0f32, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.8, 5.0, 5.0, 6.0, 6.0],
            None,
            false,
        );
        let s = g.tensor(kTfLiteFloat32, &[3], &[0.9f32, 0.95, 0.5], None, false);
        let m = g.tensor(kTfLiteInt32, &[], &[4i32], None, true);
        let it = g.tensor(kTfLiteFloat32, &[], &[0.5f32], None, true);
        let st = g.tensor(kTfLiteFloat32, &[], &[0.0f32], None, true);
        let (i, n) = (g.output(kTfLiteInt32, None), g.output(kTfLiteInt32, None));
        assert_eq!(g.run::<()>(&v4_registration(), &[b, s, m, it, st], &[i, n], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(i), vec![1, 2, 0, 0]);
        assert_eq!(g.data::<i32>(n), vec![2]);
        assert_eq!(g.shape(n), Vec::<i32>::new());

        let sigma = g.tensor(kTfLiteFloat32, &[], &[0.5f32], None, true);
        let (i, sc, n) = (g.output(kTfLiteInt32, None), g.output(kTfLiteFloat32, None), g.output(kTfLiteInt32, None));
        let ins = [b, s, m, it, st, sigma];
        assert_eq!(g.run::<()>(&v5_registration(), &ins, &[i, sc, n], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(i), vec![1, 2, 0, 0]);
        assert_eq!(g.data::<f32>(sc), vec![0.95, 0.5, 0.0, 0.0]);

        // A negative sigma, a negative max_output_size and a non-scalar threshold are errors.
        let neg = g.tensor(kTfLiteFloat32, &[], &[-1.0f32], None, true);
        let (i, sc, n) = (g.output(kTfLiteInt32, None), g.output(kTfLiteFloat32, None), g.output(kTfLiteInt32, None));
        let ins = [b, s, m, it, st, neg];
        assert_eq!(g.run::<()>(&v5_registration(), &ins, &[i, sc, n], None), TfLiteStatus::kTfLiteError);
        let neg_m = g.tensor(kTfLiteInt32, &[], &[-1i32], None, true);
        let (i, n) = (g.output(kTfLiteInt32, None), g.output(kTfLiteInt32, None));
        assert_eq!(g.run::<()>(&v4_registration(), &[b, s, neg_m, it, st], &[i, n], None), TfLiteStatus::kTfLiteError);
        let vec_t = g.tensor(kTfLiteFloat32, &[1], &[0.5f32], None, true);
        let (i, n) = (g.output(kTfLiteInt32, None), g.output(kTfLiteInt32, None));
        assert_eq!(g.run::<()>(&v4_registration(), &[b, s, m, vec_t, st], &[i, n], None), TfLiteStatus::kTfLiteError);
        // Scores that do not match the boxes.
        let s2 = g.tensor(kTfLiteFloat32, &[2], &[0.9f32, 0.95], None, false);
        let (i, n) = (g.output(kTfLiteInt32, None), g.output(kTfLiteInt32, None));
        assert_eq!(g.run::<()>(&v4_registration(), &[b, s2, m, it, st], &[i, n], None), TfLiteStatus::kTfLiteError);
    }

    #[test]
    fn dynamic_max_output_size() {
        let mut g = Graph::new();
        let b = g.tensor(kTfLiteFloat32, &[2, 4], &[0.0f32, 0.0, 1.0, 1.0, 5.0, 5.0, 6.0, 6.0], None, false);
        let s = g.tensor(kTfLiteFloat32, &[2], &[0.9f32, 0.95], None, false);
        let m = g.tensor(kTfLiteInt32, &[], &[3i32], None, false);
        let it = g.tensor(kTfLiteFloat32, &[], &[0.5f32], None, false);
        let st = g.tensor(kTfLiteFloat32, &[], &[0.0f32], None, false);
        let (i, n) = (g.output(kTfLiteInt32, None), g.output(kTfLiteInt32, None));
        assert_eq!(g.run::<()>(&v4_registration(), &[b, s, m, it, st], &[i, n], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(i), vec![3]);
        assert_eq!(g.data::<i32>(i), vec![1, 0, 0]);
        assert_eq!(g.data::<i32>(n), vec![2]);
    }
}
