//! The builtin op table: one line per op with TFLite's supported version range
//! (`tensorflow/lite/core/kernels/register.cc`). A version inside the range whose
//! features a kernel does not implement yet fails in that kernel's Prepare with a
//! message; a version outside it fails interpreter creation.

use super::OpResolver;
use crate::abi::builtin_ops::TfLiteBuiltinOperator as Op;
use crate::kernels::ops;

/// The resolver with every builtin kernel this runtime has.
pub fn builtin_op_resolver() -> OpResolver {
    let mut r = OpResolver::new();
    let mut add = |op: Op, reg, min, max| r.add_builtin(op as i32, reg, min, max);
    add(Op::kTfLiteBuiltinAdd, ops::add::registration(), 1, 5);
    add(Op::kTfLiteBuiltinSub, ops::sub::registration(), 1, 5);
    add(Op::kTfLiteBuiltinMul, ops::mul::registration(), 1, 7);
    add(Op::kTfLiteBuiltinSin, ops::sin::registration(), 1, 1);
    add(Op::kTfLiteBuiltinFullyConnected, ops::fully_connected::registration(), 1, 13);
    add(Op::kTfLiteBuiltinRelu, ops::relu::relu_registration(), 1, 3);
    add(Op::kTfLiteBuiltinRelu6, ops::relu::relu6_registration(), 1, 3);
    add(Op::kTfLiteBuiltinReluN1To1, ops::relu::relu_n1_to_1_registration(), 1, 1);
    r
}
