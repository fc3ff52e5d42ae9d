//! The arena plan as a picture: an SVG with one box per tensor of the read-write arena
//! (x: the nodes during which it is live, y: its offset, height: its size), a line at the
//! arena's size and one at the planner's lower bound, so gaps and peaks show at a glance.
//! Open it in any browser.

use super::plan::{MemoryPlan, TensorKind};

/// Width of one node's column and the drawing's height, in SVG units.
const COLUMN: f64 = 12.0;
const HEIGHT: f64 = 600.0;
/// Room for the axis labels.
const MARGIN: f64 = 60.0;

/// Renders `plan`; `name(t)` labels tensor `t` (shown when hovering over its box).
pub fn plan_svg(plan: &MemoryPlan, name: &dyn Fn(usize) -> String) -> String {
    let nodes = plan.num_nodes.max(1);
    let top = plan.arena_bytes.max(plan.lower_bound_bytes).max(1) as f64;
    let width = nodes as f64 * COLUMN;
    let y_of = |bytes: usize| HEIGHT - bytes as f64 / top * HEIGHT;
    let mut out = String::new();
    out.push_str(&format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"{vx} 0 {w} {h}\">\n",
        w = width + 2.0 * MARGIN,
        h = HEIGHT + 2.0 * MARGIN,
        vx = -MARGIN,
    ));
    out.push_str(&format!(
        "<title>arena plan: {} bytes, lower bound {} bytes, {} nodes</title>\n",
        plan.arena_bytes, plan.lower_bound_bytes, plan.num_nodes
    ));
    out.push_str(&format!("<g transform=\"translate(0 {MARGIN})\">\n"));
    out.push_str(&format!(
        "<rect class=\"frame\" x=\"0\" y=\"0\" width=\"{width}\" height=\"{HEIGHT}\" fill=\"none\" stroke=\"#888\"/>\n"
    ));
    for t in 0..plan.tensor_kind.len() {
        if plan.tensor_kind[t] != TensorKind::Arena || plan.alias_of.get(t).is_some_and(|a| a.is_some()) {
            continue;
        }
        let (Some(Some(offset)), Some(Some(first)), Some(&bytes)) =
            (plan.arena_offsets.get(t), plan.alloc_node.get(t), plan.tensor_bytes.get(t))
        else {
            continue;
        };
        let last = plan.dealloc_node.get(t).copied().flatten().unwrap_or(nodes - 1).max(*first);
        let (y0, y1) = (y_of(offset + bytes), y_of(*offset));
        // A colour per tensor, spread around the hue circle.
        let hue = (t * 47) % 360;
        out.push_str(&format!(
            "<rect class=\"tensor\" x=\"{:.1}\" y=\"{y0:.2}\" width=\"{:.1}\" height=\"{:.2}\" \
             fill=\"hsl({hue},60%,65%)\" stroke=\"#333\" stroke-width=\"0.3\">\
             <title>tensor {t} {}: {bytes} bytes at offset {offset}, nodes {first}..{last}</title></rect>\n",
            *first as f64 * COLUMN,
            (last + 1 - first) as f64 * COLUMN,
            (y1 - y0).max(0.5),
            xml_escape(&name(t)),
        ));
    }
    for (class, bytes, colour) in [("arena", plan.arena_bytes, "#c00"), ("lower-bound", plan.lower_bound_bytes, "#06c")]
    {
        let y = y_of(bytes);
        out.push_str(&format!(
            "<line class=\"{class}\" x1=\"0\" y1=\"{y:.2}\" x2=\"{width}\" y2=\"{y:.2}\" stroke=\"{colour}\" \
             stroke-dasharray=\"6 3\"/>\n<text x=\"{width}\" y=\"{:.2}\" font-size=\"11\" text-anchor=\"end\" \
             fill=\"{colour}\">{class}: {bytes} B</text>\n",
            y - 3.0
        ));
    }
    out.push_str(&format!(
        "<text x=\"0\" y=\"{:.1}\" font-size=\"11\">node 0</text>\n<text x=\"{width}\" y=\"{:.1}\" font-size=\"11\" \
         text-anchor=\"end\">node {}</text>\n",
        HEIGHT + 15.0,
        HEIGHT + 15.0,
        nodes - 1
    ));
    out.push_str("</g>\n</svg>\n");
    out
}

/// Text safe inside an XML element.
fn xml_escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            c if (c as u32) < 0x20 && c != '\t' => " ".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// Tensors `plan_svg` draws a box for: the arena tensors that own their memory.
pub fn drawn_tensors(plan: &MemoryPlan) -> usize {
    (0..plan.tensor_kind.len())
        .filter(|&t| {
            plan.tensor_kind[t] == TensorKind::Arena
                && !plan.alias_of.get(t).is_some_and(|a| a.is_some())
                && matches!(plan.arena_offsets.get(t), Some(Some(_)))
                && matches!(plan.alloc_node.get(t), Some(Some(_)))
        })
        .count()
}
