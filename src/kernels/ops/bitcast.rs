//! BITCAST (TFLite `kernels/bitcast.cc`): the input's bytes reinterpreted as the output's
//! type.
//!
//! The output type comes from the model. When it is narrower than the input's, a last
//! dimension of `in_size / out_size` is appended; when wider, the input's last dimension
//! must be `out_size / in_size` and is dropped; otherwise the shape is kept. Types
//! without a fixed element size are an error.

use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::OpCtx;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, in_op, op_error, with_elem_type};

const OP: &str = "BITCAST";

/// The BITCAST registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<Bitcast>(TfLiteBuiltinOperator::kTfLiteBuiltinBitcast)
}

/// The output shape of bitcasting `shape` from elements of `from` bytes to `to` bytes.
pub fn bitcast_shape(shape: &[i32], from: usize, to: usize) -> Result<Vec<i32>> {
    if from > to {
        let mut s = shape.to_vec();
        s.push((from / to) as i32);
        Ok(s)
    } else if from < to {
        match shape.split_last() {
            Some((&last, rest)) if last as usize == to / from => Ok(rest.to_vec()),
            _ => crate::bail!("the last dimension of {shape:?} must be {}", to / from),
        }
    } else {
        Ok(shape.to_vec())
    }
}

fn size(t: TfLiteType) -> Result<usize> {
    t.element_size().ok_or_else(|| op_error(OP, format!("type {} has no fixed element size", t.name())))
}

/// An element built from its little-endian bytes.
trait FromLe: Sized {
    fn from_le_slice(b: &[u8]) -> Self;
}

macro_rules! from_le {
    ($($t:ty),*) => {$(
        impl FromLe for $t {
            fn from_le_slice(b: &[u8]) -> $t {
                let mut a = [0u8; core::mem::size_of::<$t>()];
                let n = a.len();
                a.copy_from_slice(&b[..n]);
                <$t>::from_le_bytes(a)
            }
        }
    )*};
}
from_le!(f32, f64, i8, u8, i16, u16, i32, u32, i64, u64);

/// BITCAST; stateless.
struct Bitcast;

impl BuiltinKernel for Bitcast {
    const NAME: &'static str = OP;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        check_arity(ctx, OP, 1, 1, 1)?;
        let input = ctx.input(0).map_err(in_op(OP))?;
        let out = ctx.output(0).map_err(in_op(OP))?;
        if input.shape.iter().any(|&d| d < 0) {
            return Err(op_error(OP, "negative dimension"));
        }
        let shape = bitcast_shape(input.shape, size(input.dtype)?, size(out.dtype)?).map_err(in_op(OP))?;
        ctx.resize_output(0, &shape).map_err(in_op(OP))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let input = ctx.input(0).map_err(in_op(OP))?;
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        let src = input.raw()?;
        with_elem_type!(out.dtype, OP, T => {
            let dst = out.data_mut::<T>()?;
            for (d, c) in dst.iter_mut().zip(src.chunks_exact(core::mem::size_of::<T>())) {
                *d = T::from_le_slice(c);
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn shapes() {
        assert_eq!(bitcast_shape(&[2, 3], 4, 1).unwrap(), [2, 3, 4]);
        assert_eq!(bitcast_shape(&[2, 4], 2, 8).unwrap(), [2]);
        assert_eq!(bitcast_shape(&[5], 4, 4).unwrap(), [5]);
        assert!(bitcast_shape(&[2, 3], 2, 8).is_err());
        assert!(bitcast_shape(&[], 1, 2).is_err());
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let x = g.tensor(kTfLiteUInt32, &[2], &[0x0403_0201u32, 0xFFFF_FFFF], None, false);
        let o = g.output(kTfLiteUInt8, None);
        assert_eq!(g.run::<()>(&registration(), &[x], &[o], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), vec![2, 4]);
        assert_eq!(g.data::<u8>(o), vec![1, 2, 3, 4, 255, 255, 255, 255]);
        // Two uint32 make one int64; three do not.
        let o2 = g.output(kTfLiteInt64, None);
        assert_eq!(g.run::<()>(&registration(), &[x], &[o2], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o2), Vec::<i32>::new());
        assert_eq!(g.data::<i64>(o2), vec![-4_294_967_296 + 0x0403_0201]);
        let x3 = g.tensor(kTfLiteUInt32, &[3], &[0u32; 3], None, false);
        let o3 = g.output(kTfLiteInt64, None);
        assert_eq!(g.run::<()>(&registration(), &[x3], &[o3], None), TfLiteStatus::kTfLiteError);
    }
}
