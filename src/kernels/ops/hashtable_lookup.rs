//! HASHTABLE_LOOKUP (TFLite `kernels/hashtable_lookup.cc`): rows of a value table looked
//! up by int32 key.
//!
//! Inputs: `lookup` (int32, 1-D), `keys` (int32, 1-D, sorted ascending) and `values`
//! (`[len(keys), ...]` of any fixed-size type, or 1-D string). Outputs: `output`, row `i`
//! being the values row of the key equal to `lookup[i]` (all zero bytes, or the empty
//! string, when there is none), and `hits` (uint8 `[len(lookup)]`, 1 for a found key).
//! Non-string rows are copied as raw bytes, so every element type works the same.
//!
//! The search is the C library's `bsearch` as glibc runs it (midpoint `(lo + hi) / 2`,
//! left when the lookup key is smaller, right when it is larger), so repeated keys give the
//! row that search lands on and unsorted keys what it finds, as in TFLite. TFLite's
//! comparator returns `lookup - key` in int32, which would wrap for keys 2^31 or more apart
//! and send the search the wrong way; yet LiteRT 2.3.0 finds `-2e9` among the keys
//! `[-2e9, 2e9]` and `i32::MIN` among `[i32::MIN, -1, 1, i32::MAX]`, where wrapping
//! subtraction would miss both (most likely glibc's `bsearch` is inlined with the
//! comparator and, signed overflow being undefined, the compiler folds its sign tests into
//! comparisons). The search here compares, matching that observed result (pinned by the
//! conformance cases `hashtable_lookup_extreme_keys` and `hashtable_lookup_int32_limits`).
//!
//! A table without rows is an error: TFLite divides the table's bytes by its row count.

use super::strings::{read_strings, write_strings};
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::Result;
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::graph::calls_of;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::shape_util::{check_arity, element_count, in_op, op_error, with_elem_type};
use core::cmp::Ordering;

const OP: &str = "HASHTABLE_LOOKUP";

/// The HASHTABLE_LOOKUP registration.
pub fn registration() -> TfLiteRegistration {
    kernel::registration::<HashtableLookup>(TfLiteBuiltinOperator::kTfLiteBuiltinHashtableLookup)
}

/// The position of `key` in `keys` as glibc's `bsearch` finds it with TFLite's comparator
/// compiled to a comparison (see the module doc), or `None`.
pub fn find(key: i32, keys: &[i32]) -> Option<usize> {
    let (mut lo, mut hi) = (0usize, keys.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        match key.cmp(&keys[mid]) {
            Ordering::Less => hi = mid,
            Ordering::Greater => lo = mid + 1,
            Ordering::Equal => return Some(mid),
        }
    }
    None
}

/// Looks every `lookup` key up: row `i` of `out` (rows of `row` elements) becomes the
/// `values` row of the key found, or `T::default()` (zero bytes for every element type)
/// when none is, and `hits[i]` 1 or 0.
pub fn lookup_rows<T: Copy + Default>(
    lookup: &[i32],
    keys: &[i32],
    values: &[T],
    row: usize,
    out: &mut [T],
    hits: &mut [u8],
) -> Result<()> {
    if values.len() != keys.len() * row || out.len() != lookup.len() * row || hits.len() != lookup.len() {
        crate::bail!(
            "sizes disagree: {} keys, {} values, rows of {row}, {} lookups, output {}, hits {}",
            keys.len(),
            values.len(),
            lookup.len(),
            out.len(),
            hits.len()
        );
    }
    for (i, &k) in lookup.iter().enumerate() {
        let dst = &mut out[i * row..(i + 1) * row];
        match find(k, keys) {
            Some(j) => {
                dst.copy_from_slice(&values[j * row..(j + 1) * row]);
                hits[i] = 1;
            }
            None => {
                dst.fill(T::default());
                hits[i] = 0;
            }
        }
    }
    Ok(())
}

/// The strings of a string table looked up (the empty string for a missing key), and the
/// hits.
pub fn lookup_strings<'a>(lookup: &[i32], keys: &[i32], values: &[&'a [u8]]) -> (Vec<&'a [u8]>, Vec<u8>) {
    lookup
        .iter()
        .map(|&k| match find(k, keys) {
            Some(j) => (values[j], 1u8),
            None => (&b""[..], 0u8),
        })
        .unzip()
}

/// The values of a 1-D int32 tensor, read byte-wise (a constant in a model buffer need not
/// be 4-byte aligned).
fn i32s(t: &TensorView<'_>, what: &str) -> Result<Vec<i32>> {
    let n = t.num_elements();
    let raw = t.raw().map_err(in_op(OP))?;
    if raw.len() < n * 4 {
        return Err(op_error(OP, format!("{what} holds {} bytes, its shape {:?} needs {}", raw.len(), t.shape, n * 4)));
    }
    Ok(raw[..n * 4].chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}

/// What Prepare derives: the rows' length and, for constant keys, the keys.
struct Plan {
    /// Elements per values row (1 for string tables).
    row: usize,
    /// Rows of the table.
    rows: usize,
    keys: Option<Vec<i32>>,
}

struct HashtableLookup;

impl BuiltinKernel for HashtableLookup {
    const NAME: &'static str = OP;
    type Params = ();
    type State = Plan;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<Plan> {
        use TfLiteType::{kTfLiteInt32, kTfLiteString, kTfLiteUInt8};
        check_arity(ctx, OP, 3, 3, 2)?;
        let lookup = ctx.input(0).map_err(in_op(OP))?;
        let keys = ctx.input(1).map_err(in_op(OP))?;
        let values = ctx.input(2).map_err(in_op(OP))?;
        if lookup.shape.len() != 1 || lookup.dtype != kTfLiteInt32 {
            return Err(op_error(
                OP,
                format!("lookup must be a 1-D int32 tensor, not {} {:?}", lookup.dtype.name(), lookup.shape),
            ));
        }
        if keys.shape.len() != 1 || keys.dtype != kTfLiteInt32 {
            return Err(op_error(
                OP,
                format!("keys must be a 1-D int32 tensor, not {} {:?}", keys.dtype.name(), keys.shape),
            ));
        }
        if values.shape.is_empty() || values.shape[0] != keys.shape[0] {
            return Err(op_error(
                OP,
                format!("values {:?} must have one row per key ({} keys)", values.shape, keys.shape[0]),
            ));
        }
        if values.dtype == kTfLiteString && values.shape.len() != 1 {
            return Err(op_error(OP, format!("string values must be 1-D, not {:?}", values.shape)));
        }
        let count = element_count(values.shape).map_err(in_op(OP))?;
        element_count(lookup.shape).map_err(in_op(OP))?;
        let rows = keys.shape[0] as usize;
        // TFLite divides the table's bytes by its rows: an empty table is a crash there.
        if rows == 0 {
            return Err(op_error(OP, "the table has no rows"));
        }
        let hits = ctx.output(1).map_err(in_op(OP))?;
        if hits.dtype != kTfLiteUInt8 {
            return Err(op_error(OP, format!("hits must be uint8, not {}", hits.dtype.name())));
        }
        let output = ctx.output(0).map_err(in_op(OP))?;
        if output.dtype != values.dtype {
            return Err(op_error(
                OP,
                format!("the output type {} differs from the values' {}", output.dtype.name(), values.dtype.name()),
            ));
        }
        let row = if values.dtype == kTfLiteString {
            1
        } else {
            if values.dtype.element_size().is_none() {
                return Err(op_error(OP, format!("values of type {} are not supported", values.dtype.name())));
            }
            let mut shape = values.shape.to_vec();
            shape[0] = lookup.shape[0];
            ctx.resize_output(0, &shape).map_err(in_op(OP))?;
            count / rows
        };
        ctx.resize_output(1, &[lookup.shape[0]]).map_err(in_op(OP))?;
        let keys = if keys.is_constant() { Some(i32s(&keys, "keys")?) } else { None };
        Ok(Plan { row, rows, keys })
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), plan: &mut Plan) -> Result<()> {
        let lookup = i32s(&ctx.input(0).map_err(in_op(OP))?, "lookup")?;
        let read;
        let keys = match &plan.keys {
            Some(k) => k.as_slice(),
            None => {
                read = i32s(&ctx.input(1).map_err(in_op(OP))?, "keys")?;
                read.as_slice()
            }
        };
        let values = ctx.input(2).map_err(in_op(OP))?;
        if values.dtype == TfLiteType::kTfLiteString {
            let strings = read_strings(values.raw().map_err(in_op(OP))?).map_err(in_op(OP))?;
            if strings.len() < plan.rows {
                return Err(op_error(OP, format!("values hold {} strings for {} keys", strings.len(), plan.rows)));
            }
            let (found, hit) = lookup_strings(&lookup, keys, &strings[..plan.rows]);
            ctx.output(1).map_err(in_op(OP))?.data_mut::<u8>().map_err(in_op(OP))?.copy_from_slice(&hit);
            let bytes = write_strings(&found).map_err(in_op(OP))?;
            let out = ctx.output(0).map_err(in_op(OP))?.index as i32;
            let shape = [lookup.len() as i32];
            return calls_of(ctx, OP)?.write(out, &shape, TfLiteType::kTfLiteString, &bytes).map_err(in_op(OP));
        }
        let mut out = ctx.output(0).map_err(in_op(OP))?;
        let mut hits = ctx.output(1).map_err(in_op(OP))?;
        let hits = hits.data_mut::<u8>().map_err(in_op(OP))?;
        let row = plan.row;
        match values.dtype {
            TfLiteType::kTfLiteComplex64 => {
                lookup_rows(&lookup, keys, values.data::<[f32; 2]>()?, row, out.data_mut::<[f32; 2]>()?, hits)
            }
            TfLiteType::kTfLiteComplex128 => {
                lookup_rows(&lookup, keys, values.data::<[f64; 2]>()?, row, out.data_mut::<[f64; 2]>()?, hits)
            }
            dtype => with_elem_type!(dtype, OP, T => lookup_rows(
                &lookup,
                keys,
                values.data::<T>()?,
                row,
                out.data_mut::<T>()?,
                hits
            )),
        }
        .map_err(in_op(OP))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::types::TfLiteStatus;
    use crate::kernels::test_util::Graph;
    use TfLiteType::*;

    #[test]
    fn finds_sorted_keys() {
        let keys = [-5, 0, 3, 7, 100];
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(find(k, &keys), Some(i));
        }
        assert_eq!(find(1, &keys), None);
        assert_eq!(find(-6, &keys), None);
        assert_eq!(find(101, &keys), None);
        assert_eq!(find(0, &[]), None);
    }

    /// Keys 2^31 or more apart: found, as LiteRT finds them, although TFLite's
    /// comparator `a - b` overflows int32 on them.
    #[test]
    fn extreme_keys_compare_without_wrapping() {
        let keys = [-2_000_000_000, 2_000_000_000];
        // mid = 1: -2e9 - 2e9 would wrap to +294967296 and send the search right.
        assert_eq!(find(-2_000_000_000, &keys), Some(0));
        assert_eq!(find(2_000_000_000, &keys), Some(1));
        assert_eq!(find(0, &keys), None);
        let keys = [i32::MIN, -1, 1, i32::MAX];
        // i32::MIN - 1 and i32::MIN - i32::MAX would wrap positive at mid = 2 and 3.
        assert_eq!(find(i32::MIN, &keys), Some(0));
        assert_eq!(find(-1, &keys), Some(1));
        assert_eq!(find(i32::MAX, &keys), Some(3));
        assert_eq!(find(0, &keys), None);
    }

    /// Repeated and unsorted keys give what glibc's midpoint sequence finds.
    #[test]
    fn repeated_and_unsorted_keys_follow_the_search() {
        assert_eq!(find(2, &[1, 2, 2, 2, 2, 3]), Some(3));
        let keys = [9, 1, 5, 3, 7, 2];
        let found: Vec<_> = [9, 1, 5, 3, 7, 2, 4].iter().map(|&k| find(k, &keys)).collect();
        assert_eq!(found, [None, Some(1), None, Some(3), None, None, None]);
    }

    #[test]
    fn rows_hits_and_misses() {
        let keys = [1, 3, 5];
        let values = [10i16, 11, 30, 31, 50, 51];
        let mut out = [7i16; 6];
        let mut hits = [9u8; 3];
        lookup_rows(&[5, 2, 1], &keys, &values, 2, &mut out, &mut hits).unwrap();
        assert_eq!(out, [50, 51, 0, 0, 10, 11]);
        assert_eq!(hits, [1, 0, 1]);
        assert!(lookup_rows(&[5], &keys, &values, 2, &mut out, &mut hits).is_err());
        let (s, h) = lookup_strings(&[3, 4], &keys, &[b"a", b"bb", b"ccc"]);
        assert_eq!(s, [&b"bb"[..], b""]);
        assert_eq!(h, [1, 0]);
    }

    #[test]
    fn glue() {
        let mut g = Graph::new();
        let l = g.tensor(kTfLiteInt32, &[4], &[3i32, 0, -1, 3], None, false);
        let k = g.tensor(kTfLiteInt32, &[3], &[-1i32, 2, 3], None, true);
        let v = g.tensor(kTfLiteFloat32, &[3, 2], &[1f32, 2., 3., 4., 5., 6.], None, false);
        let (o, h) = (g.output(kTfLiteFloat32, None), g.output(kTfLiteUInt8, None));
        assert_eq!(g.run::<()>(&registration(), &[l, k, v], &[o, h], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.shape(o), [4, 2]);
        assert_eq!(g.data::<f32>(o), [5., 6., 0., 0., 1., 2., 5., 6.]);
        assert_eq!(g.data::<u8>(h), [1, 0, 1, 1]);
        let c = g.tensor(kTfLiteComplex64, &[3], &[[1f32, 2.], [3., 4.], [5., 6.]], None, false);
        let (o, h) = (g.output(kTfLiteComplex64, None), g.output(kTfLiteUInt8, None));
        assert_eq!(g.run::<()>(&registration(), &[l, k, c], &[o, h], None), TfLiteStatus::kTfLiteOk);
        assert_eq!(g.data::<[f32; 2]>(o), [[5., 6.], [0., 0.], [1., 2.], [5., 6.]]);
    }

    #[test]
    fn malformed_nodes_are_errors() {
        let mut g = Graph::new();
        let l = g.tensor(kTfLiteInt32, &[2], &[1i32, 2], None, false);
        let k = g.tensor(kTfLiteInt32, &[2], &[1i32, 2], None, false);
        let v = g.tensor(kTfLiteInt32, &[2, 2], &[1i32, 2, 3, 4], None, false);
        let mut run = |ins: &[i32], out: TfLiteType, hits: TfLiteType| {
            let (o, h) = (g.output(out, None), g.output(hits, None));
            g.run::<()>(&registration(), ins, &[o, h], None)
        };
        assert_eq!(run(&[l, k, v], kTfLiteInt32, kTfLiteUInt8), TfLiteStatus::kTfLiteOk);
        // hits of another type, output of another type, too few inputs.
        assert_eq!(run(&[l, k, v], kTfLiteInt32, kTfLiteInt32), TfLiteStatus::kTfLiteError);
        assert_eq!(run(&[l, k, v], kTfLiteFloat32, kTfLiteUInt8), TfLiteStatus::kTfLiteError);
        assert_eq!(run(&[l, k], kTfLiteInt32, kTfLiteUInt8), TfLiteStatus::kTfLiteError);
        let mut g = Graph::new();
        let l = g.tensor(kTfLiteInt32, &[2], &[1i32, 2], None, false);
        let k = g.tensor(kTfLiteInt32, &[2], &[1i32, 2], None, false);
        let k64 = g.tensor(kTfLiteInt64, &[2], &[1i64, 2], None, false);
        let l2d = g.tensor(kTfLiteInt32, &[1, 2], &[1i32, 2], None, false);
        let v3 = g.tensor(kTfLiteInt32, &[3], &[1i32, 2, 3], None, false);
        let empty_k = g.tensor::<i32>(kTfLiteInt32, &[0], &[], None, false);
        let empty_v = g.tensor::<i32>(kTfLiteInt32, &[0], &[], None, false);
        let strings = write_strings(&["a", "b"]).unwrap();
        let s2d = g.tensor(kTfLiteString, &[2, 1], &strings, None, false);
        let short_keys = g.tensor(kTfLiteInt32, &[2], &[1i32], None, false);
        let v2 = g.tensor(kTfLiteInt32, &[2], &[1i32, 2], None, false);
        let mut run = |ins: &[i32], out: TfLiteType| {
            let (o, h) = (g.output(out, None), g.output(kTfLiteUInt8, None));
            g.run::<()>(&registration(), ins, &[o, h], None)
        };
        assert_eq!(run(&[l, k64, v3], kTfLiteInt32), TfLiteStatus::kTfLiteError);
        assert_eq!(run(&[l2d, k, v3], kTfLiteInt32), TfLiteStatus::kTfLiteError);
        assert_eq!(run(&[l, k, v3], kTfLiteInt32), TfLiteStatus::kTfLiteError);
        assert_eq!(run(&[l, empty_k, empty_v], kTfLiteInt32), TfLiteStatus::kTfLiteError);
        assert_eq!(run(&[l, k, s2d], kTfLiteString), TfLiteStatus::kTfLiteError);
        // A keys tensor shorter than its shape says.
        assert_eq!(run(&[l, short_keys, v2], kTfLiteInt32), TfLiteStatus::kTfLiteError);
    }

    #[test]
    fn malformed_string_values_are_errors() {
        let mut g = Graph::new();
        let l = g.tensor(kTfLiteInt32, &[1], &[1i32], None, false);
        let k = g.tensor(kTfLiteInt32, &[3], &[1i32, 2, 3], None, false);
        // Two strings for three keys.
        let s = g.tensor(kTfLiteString, &[3], &write_strings(&["a", "b"]).unwrap(), None, false);
        let (o, h) = (g.output(kTfLiteString, None), g.output(kTfLiteUInt8, None));
        assert_eq!(g.run::<()>(&registration(), &[l, k, s], &[o, h], None), TfLiteStatus::kTfLiteError);
        let mut bad = write_strings(&["a", "b", "c"]).unwrap();
        bad[4..8].copy_from_slice(&(-3i32).to_le_bytes());
        let s = g.tensor(kTfLiteString, &[3], &bad, None, false);
        let (o, h) = (g.output(kTfLiteString, None), g.output(kTfLiteUInt8, None));
        assert_eq!(g.run::<()>(&registration(), &[l, k, s], &[o, h], None), TfLiteStatus::kTfLiteError);
    }
}
