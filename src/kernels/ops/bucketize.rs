//! BUCKETIZE (TFLite `kernels/bucketize.cc`): for each input value, the number of
//! boundaries not above it (`std::upper_bound`), as int32.
//!
//! The boundaries (float32, from the options) must be sorted. Inputs are float32,
//! float64, int32 or int64; as in C++, an integer is converted to float32 to compare
//! with a boundary, and a boundary is widened to float64 for a float64 input.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BucketizeBoundaries, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error};

const OP: &str = "BUCKETIZE";

/// The BUCKETIZE registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Bucketize>(TfLiteBuiltinOperator::kTfLiteBuiltinBucketize)
}

/// The bucket of every input: how many leading boundaries are not greater than it
/// (`below(x, b)` is C++'s `x < b` for the input type).
pub fn bucketize<T: Copy>(input: &[T], boundaries: &[f32], below: impl Fn(T, f32) -> bool, out: &mut [i32]) {
    for (o, &x) in out.iter_mut().zip(input) {
        *o = boundaries.partition_point(|&b| !below(x, b)) as i32;
    }
}

/// BUCKETIZE; stateless beyond its boundaries.
struct Bucketize;

impl BuiltinKernel for Bucketize {
    const NAME: &'static str = OP;
    type Params = BucketizeBoundaries;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, p: &BucketizeBoundaries) -> Result<()> {
        check_arity(ctx, OP, 1, 1, 1)?;
        if p.0.windows(2).any(|w| w[1] < w[0]) {
            return Err(op_error(OP, "Expected sorted boundaries"));
        }
        let input = ctx.input(0).map_err(in_op(OP))?;
        use TfLiteType::*;
        if !matches!(input.dtype, kTfLiteInt32 | kTfLiteFloat32 | kTfLiteInt64 | kTfLiteFloat64) {
            return Err(op_error(OP, format!("type {} is not supported", input.dtype.name())));
        }
        ctx.set_output_type(0, kTfLiteInt32).map_err(in_op(OP))?;
        ctx.resize_output(0, input.shape).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, p: &BucketizeBoundaries, _: &mut ()) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        if out.dtype != TfLiteType::kTfLiteInt32 || out.num_elements() != input.num_elements() {
            return Err(op_error(OP, "output must be int32 of the input's size"));
        }
        let o = out.data_mut::<i32>()?;
        let b = &p.0;
        match input.dtype {
            TfLiteType::kTfLiteFloat32 => bucketize(input.data::<f32>()?, b, |x, b| x < b, o),
            TfLiteType::kTfLiteFloat64 => bucketize(input.data::<f64>()?, b, |x, b| x < f64::from(b), o),
            TfLiteType::kTfLiteInt32 => bucketize(input.data::<i32>()?, b, |x, b| (x as f32) < b, o),
            TfLiteType::kTfLiteInt64 => bucketize(input.data::<i64>()?, b, |x, b| (x as f32) < b, o),
            other => return Err(op_error(OP, format!("type {} is not supported", other.name()))),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::builtin_op_data::TfLiteBucketizeParams;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn buckets() {
        let b = [0.0f32, 10.0, 100.0];
        let mut o = [0; 6];
        bucketize(&[-5.0f32, 0.0, 5.0, 10.0, 1e9, f32::NAN], &b, |x, b| x < b, &mut o);
        assert_eq!(o, [0, 1, 1, 2, 3, 3]);
        bucketize(&[16_777_217i32], &[16_777_216.0], |x, b| (x as f32) < b, &mut o[..1]);
        assert_eq!(o[0], 1);
    }

    #[test]
    fn glue() {
        let bounds = [0.0f32, 10.0, 100.0];
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteInt64, &[2, 2], &[-5i64, 10, 11, 100], None, false);
        let o = g.output(kTfLiteInt32, None);
        let p = TfLiteBucketizeParams { num_boundaries: 3, boundaries: bounds.as_ptr() };
        assert_eq!(g.run(&registration(), &[x], &[o], Some(p)), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<i32>(o), vec![0, 2, 2, 3]);
        let unsorted = [1.0f32, 0.0];
        let q = TfLiteBucketizeParams { num_boundaries: 2, boundaries: unsorted.as_ptr() };
        let o2 = g.output(kTfLiteInt32, None);
        assert_eq!(g.run(&registration(), &[x], &[o2], Some(q)), TfLiteStatus::kTfLiteError);
    }
}
