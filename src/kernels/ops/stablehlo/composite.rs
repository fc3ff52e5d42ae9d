//! STABLEHLO_COMPOSITE and STABLEHLO_CASE (TFLite `kernels/stablehlo_composite.cc`,
//! `stablehlo_case.cc`): ops that run another subgraph of the model in place of the node.
//!
//! A composite always runs its decomposition subgraph (its name, version and attributes
//! only describe it); a case runs the branch its int32 index input picks, an index out of
//! range choosing the last branch. The callee is reached through
//! `kernels::graph::SubgraphCalls`, as IF and WHILE reach theirs: the node's inputs are
//! copied into the callee's inputs and its outputs back. When the callee has dynamic
//! tensors, or the case branches give different output shapes, the node's outputs are
//! dynamic and take the values' shapes at Eval, as in TFLite.

use crate::abi::builtin_op_data::{TfLiteStablehloCaseParams, TfLiteStablehloCompositeParams};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::OpCtx;
use crate::kernels::graph::{SubgraphCalls, SubgraphIndex, calls_of};
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::ops::control_flow::{self, size_outputs};
use crate::kernels::shape_util::op_error;

const COMPOSITE: &str = "STABLEHLO_COMPOSITE";
const CASE: &str = "STABLEHLO_CASE";

/// The STABLEHLO_COMPOSITE registration.
pub fn composite_registration() -> TfLiteRegistration {
    kernel::registration::<Composite>(TfLiteBuiltinOperator::kTfLiteBuiltinStablehloComposite)
}

/// The STABLEHLO_CASE registration.
pub fn case_registration() -> TfLiteRegistration {
    kernel::registration::<Case>(TfLiteBuiltinOperator::kTfLiteBuiltinStablehloCase)
}

/// Resolves callee `index` (in range, not the running subgraph, nesting bounded).
fn callee(g: &mut dyn SubgraphCalls, index: i32, what: &str, op: &str) -> Result<SubgraphIndex> {
    g.enter(index, what).map_err(|e| op_error(op, e.message))
}

/// Checks that `callee` takes `n_in` inputs and gives `n_out` outputs, none optional.
fn check_signature(g: &dyn SubgraphCalls, callee: SubgraphIndex, n_in: usize, n_out: usize, op: &str) -> Result<()> {
    let (c_in, c_out) = (g.inputs(callee), g.outputs(callee));
    if c_in.len() != n_in || c_out.len() != n_out {
        return Err(op_error(
            op,
            format!(
                "subgraph {callee} has {} inputs and {} outputs, the node passes {n_in} and expects {n_out}",
                c_in.len(),
                c_out.len()
            ),
        ));
    }
    if c_in.iter().chain(&c_out).any(|&t| t < 0) {
        return Err(op_error(op, format!("subgraph {callee} has an optional input or output")));
    }
    Ok(())
}

/// Gives `callee`'s inputs the shapes and types of `src` and allocates it; returns
/// whether it has dynamic tensors and its outputs' shapes.
fn prepare_callee(
    g: &mut dyn SubgraphCalls,
    src: &[i32],
    callee: SubgraphIndex,
    op: &str,
) -> Result<(bool, Vec<Vec<i32>>)> {
    g.copy_shapes_to_inputs(src, callee).map_err(|e| op_error(op, e.message))?;
    g.allocate(callee).map_err(|e| Error::with_status(e.status, format!("{op}: subgraph: {}", e.message)))?;
    let mut shapes = Vec::new();
    for o in g.outputs(callee) {
        shapes.push(g.shape_and_type(callee, o).map_err(|e| op_error(op, e.message))?.0);
    }
    Ok((g.has_dynamic_tensors(callee), shapes))
}

/// Runs `callee` on `src` (the control-flow ops' sequence) and copies its outputs into
/// the node's outputs.
fn run_callee(ctx: &OpCtx<'_>, g: &mut dyn SubgraphCalls, src: &[i32], callee: SubgraphIndex, op: &str) -> Result<()> {
    control_flow::run_callee(g, src, callee, op)?;
    let own = control_flow::own_index(g, op)?;
    let outs = g.outputs(callee);
    g.copy(callee, &outs, own, ctx.output_indices()).map_err(|e| op_error(op, e.message))
}

/// The node's inputs from `first` on, none of them optional.
fn passed_inputs(ctx: &OpCtx<'_>, first: usize, op: &str) -> Result<Vec<i32>> {
    let ins = ctx.input_indices().get(first..).unwrap_or_default().to_vec();
    if ins.iter().any(|&t| t < 0) {
        return Err(op_error(op, "optional inputs are not supported"));
    }
    Ok(ins)
}

// ---------------------------------------------------------------------------------------
// STABLEHLO_COMPOSITE
// ---------------------------------------------------------------------------------------

/// STABLEHLO_COMPOSITE: no state of its own (the decomposition subgraph keeps its).
struct Composite;

impl BuiltinKernel for Composite {
    const NAME: &'static str = COMPOSITE;
    type Params = TfLiteStablehloCompositeParams;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteStablehloCompositeParams) -> Result<()> {
        // As TFLite: a composite has at least one operand.
        if ctx.num_inputs() == 0 {
            return Err(op_error(COMPOSITE, "needs at least one input"));
        }
        let ins = passed_inputs(ctx, 0, COMPOSITE)?;
        let mut g = calls_of(ctx, COMPOSITE)?;
        let sg = callee(&mut *g, p.subgraph_index, "decomposition_subgraph_index", COMPOSITE)?;
        check_signature(&*g, sg, ins.len(), ctx.num_outputs(), COMPOSITE)?;
        let (dynamic, shapes) = prepare_callee(&mut *g, &ins, sg, COMPOSITE)?;
        size_outputs(ctx, COMPOSITE, dynamic, &shapes)
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteStablehloCompositeParams, _: &mut ()) -> Result<()> {
        let ins = passed_inputs(ctx, 0, COMPOSITE)?;
        let mut g = calls_of(ctx, COMPOSITE)?;
        let sg = callee(&mut *g, p.subgraph_index, "decomposition_subgraph_index", COMPOSITE)?;
        run_callee(ctx, &mut *g, &ins, sg, COMPOSITE)
    }
}

// ---------------------------------------------------------------------------------------
// STABLEHLO_CASE
// ---------------------------------------------------------------------------------------

/// The branch an index picks: TFLite (and StableHLO) run the last branch for an index
/// outside `0..n`.
pub fn case_branch(index: i32, n: usize) -> usize {
    match usize::try_from(index) {
        Ok(i) if i < n => i,
        _ => n.saturating_sub(1),
    }
}

/// The branch subgraph indices of a case node.
fn branches(p: &TfLiteStablehloCaseParams) -> Result<&[i32]> {
    let n = p.num_branches as usize;
    p.branch_subgraph_indices
        .get(..n)
        .filter(|b| !b.is_empty())
        .ok_or_else(|| op_error(CASE, format!("{n} branches: there must be 1 to {}", p.branch_subgraph_indices.len())))
}

/// STABLEHLO_CASE: no state of its own (the branch subgraphs keep theirs).
struct Case;

impl BuiltinKernel for Case {
    const NAME: &'static str = CASE;
    type Params = TfLiteStablehloCaseParams;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteStablehloCaseParams) -> Result<()> {
        if ctx.num_inputs() == 0 {
            return Err(op_error(CASE, "needs the branch index input"));
        }
        let index = ctx.input(0).map_err(|e| op_error(CASE, e.message))?;
        if index.dtype != TfLiteType::kTfLiteInt32 || index.num_elements() != 1 {
            return Err(op_error(CASE, "the branch index must be one int32"));
        }
        let ins = passed_inputs(ctx, 1, CASE)?;
        let mut g = calls_of(ctx, CASE)?;
        let mut first: Option<Vec<Vec<i32>>> = None;
        let mut dynamic = false;
        for &b in branches(p)? {
            let sg = callee(&mut *g, b, "branch_subgraph_indices", CASE)?;
            check_signature(&*g, sg, ins.len(), ctx.num_outputs(), CASE)?;
            let (dyn_b, shapes) = prepare_callee(&mut *g, &ins, sg, CASE)?;
            dynamic |= dyn_b;
            match &first {
                Some(f) => dynamic |= *f != shapes,
                None => first = Some(shapes),
            }
        }
        size_outputs(ctx, CASE, dynamic, &first.unwrap_or_default())
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteStablehloCaseParams, _: &mut ()) -> Result<()> {
        let index = ctx.input(0).map_err(|e| op_error(CASE, e.message))?;
        let i = super::first_value::<i32>(&index).map_err(|e| op_error(CASE, e.message))?;
        let b = branches(p)?;
        let chosen = b[case_branch(i, b.len())];
        let ins = passed_inputs(ctx, 1, CASE)?;
        let mut g = calls_of(ctx, CASE)?;
        let sg = callee(&mut *g, chosen, "branch_subgraph_indices", CASE)?;
        run_callee(ctx, &mut *g, &ins, sg, CASE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;

    #[test]
    fn out_of_range_index_takes_the_last_branch() {
        assert_eq!(case_branch(0, 3), 0);
        assert_eq!(case_branch(2, 3), 2);
        assert_eq!(case_branch(3, 3), 2);
        assert_eq!(case_branch(-1, 3), 2);
        assert_eq!(case_branch(i32::MIN, 1), 0);
    }

    #[test]
    fn branch_count_is_checked() {
        let mut p = TfLiteStablehloCaseParams::default();
        assert!(branches(&p).is_err());
        p.num_branches = 2;
        p.branch_subgraph_indices[1] = 4;
        assert_eq!(branches(&p).unwrap(), &[0, 4]);
        p.num_branches = 1000;
        assert!(branches(&p).is_err());
    }

    #[test]
    fn outside_an_interpreter_is_an_error() {
        let mut g = Graph::new();
        let x = g.tensor(TfLiteType::kTfLiteFloat32, &[2], &[1.0f32, 2.0], None, false);
        let o = g.output(TfLiteType::kTfLiteFloat32, None);
        let p = TfLiteStablehloCompositeParams { subgraph_index: 1, ..Default::default() };
        assert_eq!(g.run(&composite_registration(), &[x], &[o], Some(p)), TfLiteStatus::kTfLiteError);
        assert_eq!(
            g.run(&composite_registration(), &[], &[o], Some(p)),
            TfLiteStatus::kTfLiteError,
            "a composite without operands"
        );
    }
}
