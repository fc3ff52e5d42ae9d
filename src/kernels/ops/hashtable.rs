//! HASHTABLE, HASHTABLE_IMPORT, HASHTABLE_FIND and HASHTABLE_SIZE (TFLite
//! `kernels/hashtable*.cc`, `experimental/resource/static_hashtable.cc`): static hash
//! tables from int64 to string or from string to int64, held by the interpreter like
//! resource variables.
//!
//! HASHTABLE outputs its `table_id` in a resource tensor of shape `[1]` and creates the
//! table (with the options' key and value types) the first time it runs. HASHTABLE_IMPORT
//! fills a table from a key and a value tensor of the same shape, once: later imports
//! change nothing, and of repeated keys the first wins. HASHTABLE_FIND looks each key up,
//! giving the first element of its default-value tensor for keys it lacks (an error
//! before the table was imported). HASHTABLE_SIZE outputs the number of entries as an
//! int64 `[1]` (0 before the import).

use super::strings::{read_strings, write_strings};
use crate::abi::builtin_op_data::TfLiteHashtableParams;
use crate::abi::builtin_ops::TfLiteBuiltinOperator;
use crate::abi::types::{TfLiteRegistration, TfLiteType};
use crate::error::{Error, Result};
use crate::kernels::api::{OpCtx, TensorView};
use crate::kernels::graph::calls_of;
use crate::kernels::kernel::{self, BuiltinKernel};
use crate::kernels::resources::Hashtable;
use crate::kernels::shape_util::{element_count, int_values, op_error};
use std::collections::HashMap;

/// The HASHTABLE registration.
pub fn hashtable_registration() -> TfLiteRegistration {
    kernel::registration::<HashtableOp>(TfLiteBuiltinOperator::kTfLiteBuiltinHashtable)
}

/// The HASHTABLE_FIND registration.
pub fn find_registration() -> TfLiteRegistration {
    kernel::registration::<Find>(TfLiteBuiltinOperator::kTfLiteBuiltinHashtableFind)
}

/// The HASHTABLE_IMPORT registration.
pub fn import_registration() -> TfLiteRegistration {
    kernel::registration::<Import>(TfLiteBuiltinOperator::kTfLiteBuiltinHashtableImport)
}

/// The HASHTABLE_SIZE registration.
pub fn size_registration() -> TfLiteRegistration {
    kernel::registration::<Size>(TfLiteBuiltinOperator::kTfLiteBuiltinHashtableSize)
}

const HASHTABLE: &str = "HASHTABLE";
const FIND: &str = "HASHTABLE_FIND";
const IMPORT: &str = "HASHTABLE_IMPORT";
const SIZE: &str = "HASHTABLE_SIZE";

use TfLiteType::{kTfLiteInt64, kTfLiteResource, kTfLiteString};

/// True for the two (key, value) type pairs TFLite's tables support.
fn supported_pair(key: TfLiteType, value: TfLiteType) -> bool {
    matches!((key, value), (kTfLiteInt64, kTfLiteString) | (kTfLiteString, kTfLiteInt64))
}

/// The elements of a key or value tensor as byte strings: int64s little-endian, strings
/// as they are. `n` is the element count its shape gives.
pub fn elements(t: &TensorView<'_>, n: usize) -> Result<Vec<Vec<u8>>> {
    match t.dtype {
        // Read byte-wise: int64 constants in a model buffer need not be 8-byte aligned.
        kTfLiteInt64 => Ok(int_values(t, false)?.iter().take(n).map(|v| v.to_le_bytes().to_vec()).collect()),
        kTfLiteString => {
            let strings = read_strings(t.raw()?)?;
            if strings.len() < n {
                return Err(Error::new(format!("string tensor holds {} strings, its shape {n}", strings.len())));
            }
            Ok(strings[..n].iter().map(|s| s.to_vec()).collect())
        }
        other => Err(Error::new(format!("tensor {} has type {}, not int64 or string", t.index, other.name()))),
    }
}

/// Fills a table from parallel keys and values, keeping the first of repeated keys.
pub fn import(keys: Vec<Vec<u8>>, values: Vec<Vec<u8>>) -> HashMap<Vec<u8>, Vec<u8>> {
    let mut map = HashMap::with_capacity(keys.len());
    for (k, v) in keys.into_iter().zip(values) {
        map.entry(k).or_insert(v);
    }
    map
}

/// The table id a resource tensor holds.
fn table_id(t: &TensorView<'_>, op: &str) -> Result<i32> {
    let raw = t.raw()?;
    let b: [u8; 4] =
        raw.get(..4).and_then(|b| b.try_into().ok()).ok_or_else(|| op_error(op, "the resource input holds no id"))?;
    Ok(i32::from_le_bytes(b))
}

/// Checks input 0 is a resource tensor of shape `[1]` (every op but HASHTABLE).
fn check_handle(ctx: &OpCtx<'_>, op: &str) -> Result<()> {
    let r = ctx.input(0)?;
    if r.dtype != kTfLiteResource || r.shape != [1] {
        return Err(op_error(op, format!("the first input must be a resource of shape [1], not {:?}", r.shape)));
    }
    Ok(())
}

/// Runs `f` on table `id` of the interpreter, or errors if no HASHTABLE created it.
fn with_table<R>(ctx: &OpCtx<'_>, op: &str, id: i32, f: impl FnOnce(&mut Hashtable) -> Result<R>) -> Result<R> {
    let g = calls_of(ctx, op)?;
    let shared = g.shared();
    let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
    let table = s.hashtables.get_mut(&id).ok_or_else(|| op_error(op, format!("no hash table with id {id}")))?;
    f(table)
}

struct HashtableOp;

impl BuiltinKernel for HashtableOp {
    const NAME: &'static str = HASHTABLE;
    type Params = TfLiteHashtableParams;
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, p: &TfLiteHashtableParams) -> Result<()> {
        if ctx.num_inputs() != 0 || ctx.num_outputs() != 1 {
            return Err(op_error(HASHTABLE, "expects no inputs and 1 output"));
        }
        if !supported_pair(p.key_dtype, p.value_dtype) {
            return Err(op_error(
                HASHTABLE,
                format!(
                    "a table from {} to {} is not supported (int64 to string or string to int64)",
                    p.key_dtype.name(),
                    p.value_dtype.name()
                ),
            ));
        }
        let out = ctx.output(0)?;
        if out.dtype != kTfLiteResource {
            return Err(op_error(HASHTABLE, format!("the output has type {}, not resource", out.dtype.name())));
        }
        let index = out.index as i32;
        // The handle gets its shape and bytes now, so the ops reading it can check it in
        // their Prepare (TFLite allocates it here too).
        calls_of(ctx, HASHTABLE)?.write(index, &[1], kTfLiteResource, &p.table_id.to_le_bytes())
    }

    fn invoke(ctx: &OpCtx<'_>, p: &TfLiteHashtableParams, _: &mut ()) -> Result<()> {
        let index = ctx.output(0)?.index as i32;
        let mut g = calls_of(ctx, HASHTABLE)?;
        g.write(index, &[1], kTfLiteResource, &p.table_id.to_le_bytes())?;
        let shared = g.shared();
        let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
        s.hashtables.entry(p.table_id).or_insert_with(|| Hashtable {
            key: p.key_dtype,
            value: p.value_dtype,
            entries: None,
        });
        Ok(())
    }
}

struct Import;

impl BuiltinKernel for Import {
    const NAME: &'static str = IMPORT;
    type Params = ();
    type State = usize;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<usize> {
        if ctx.num_inputs() != 3 || ctx.num_outputs() != 0 {
            return Err(op_error(IMPORT, "expects 3 inputs and no outputs"));
        }
        check_handle(ctx, IMPORT)?;
        let (k, v) = (ctx.input(1)?, ctx.input(2)?);
        if !supported_pair(k.dtype, v.dtype) {
            return Err(op_error(IMPORT, "keys and values must be int64 and string, or string and int64"));
        }
        if k.shape != v.shape {
            return Err(op_error(IMPORT, format!("keys {:?} and values {:?} differ in shape", k.shape, v.shape)));
        }
        element_count(k.shape).map_err(|e| op_error(IMPORT, e.message))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), n: &mut usize) -> Result<()> {
        let id = table_id(&ctx.input(0)?, IMPORT)?;
        let (k, v) = (ctx.input(1)?, ctx.input(2)?);
        let n = *n;
        with_table(ctx, IMPORT, id, |t| {
            check_types(t, k.dtype, v.dtype, IMPORT)?;
            if t.entries.is_none() {
                let keys = elements(&k, n).map_err(|e| op_error(IMPORT, e.message))?;
                let values = elements(&v, n).map_err(|e| op_error(IMPORT, e.message))?;
                t.entries = Some(import(keys, values));
            }
            Ok(())
        })
    }
}

/// TFLite's `CheckKeyAndValueTypes`.
fn check_types(t: &Hashtable, key: TfLiteType, value: TfLiteType, op: &str) -> Result<()> {
    if t.key != key || t.value != value {
        return Err(op_error(
            op,
            format!(
                "the table maps {} to {}, the tensors are {} and {}",
                t.key.name(),
                t.value.name(),
                key.name(),
                value.name()
            ),
        ));
    }
    Ok(())
}

struct Find;

impl BuiltinKernel for Find {
    const NAME: &'static str = FIND;
    type Params = ();
    type State = usize;

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<usize> {
        if ctx.num_inputs() != 3 || ctx.num_outputs() != 1 {
            return Err(op_error(FIND, "expects 3 inputs and 1 output"));
        }
        check_handle(ctx, FIND)?;
        let (k, d) = (ctx.input(1)?, ctx.input(2)?);
        let out = ctx.output(0)?;
        if d.dtype != out.dtype {
            return Err(op_error(FIND, "the default value and the output differ in type"));
        }
        if !supported_pair(k.dtype, out.dtype) {
            return Err(op_error(FIND, "keys and output must be int64 and string, or string and int64"));
        }
        let shape = k.shape.to_vec();
        let n = element_count(&shape).map_err(|e| op_error(FIND, e.message))?;
        ctx.resize_output(0, &shape).map_err(|e| op_error(FIND, e.message))?;
        Ok(n)
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), n: &mut usize) -> Result<()> {
        let n = *n;
        let id = table_id(&ctx.input(0)?, FIND)?;
        let (k, d) = (ctx.input(1)?, ctx.input(2)?);
        let (out_index, out_type) = {
            let out = ctx.output(0)?;
            (out.index as i32, out.dtype)
        };
        let keys = elements(&k, n).map_err(|e| op_error(FIND, e.message))?;
        let values = with_table(ctx, FIND, id, |t| {
            check_types(t, k.dtype, out_type, FIND)?;
            let Some(entries) = &t.entries else {
                return Err(op_error(FIND, "the hash table must be imported before it is used"));
            };
            let default = elements(&d, d.num_elements().min(1)).map_err(|e| op_error(FIND, e.message))?;
            let default = default.into_iter().next();
            keys.iter()
                .map(|key| {
                    entries
                        .get(key)
                        .cloned()
                        .or_else(|| default.clone())
                        .ok_or_else(|| op_error(FIND, "the default value tensor is empty"))
                })
                .collect::<Result<Vec<_>>>()
        })?;
        match out_type {
            kTfLiteString => {
                let shape = k.shape.to_vec();
                let bytes = write_strings(&values).map_err(|e| op_error(FIND, e.message))?;
                calls_of(ctx, FIND)?.write(out_index, &shape, kTfLiteString, &bytes)
            }
            _ => {
                let mut out = ctx.output(0)?;
                let dst = out.data_mut::<i64>().map_err(|e| op_error(FIND, e.message))?;
                for (o, v) in dst.iter_mut().zip(&values) {
                    let b: [u8; 8] = v.as_slice().try_into().map_err(|_| op_error(FIND, "malformed int64 value"))?;
                    *o = i64::from_le_bytes(b);
                }
                Ok(())
            }
        }
    }
}

struct Size;

impl BuiltinKernel for Size {
    const NAME: &'static str = SIZE;
    type Params = ();
    type State = ();

    fn prepare(ctx: &OpCtx<'_>, _: &()) -> Result<()> {
        if ctx.num_inputs() != 1 || ctx.num_outputs() != 1 {
            return Err(op_error(SIZE, "expects 1 input and 1 output"));
        }
        check_handle(ctx, SIZE)?;
        if ctx.output(0)?.dtype != kTfLiteInt64 {
            return Err(op_error(SIZE, "the output must be int64"));
        }
        ctx.resize_output(0, &[1]).map_err(|e| op_error(SIZE, e.message))
    }

    fn invoke(ctx: &OpCtx<'_>, _: &(), _: &mut ()) -> Result<()> {
        let id = table_id(&ctx.input(0)?, SIZE)?;
        let n = with_table(ctx, SIZE, id, |t| Ok(t.entries.as_ref().map_or(0, |e| e.len())))?;
        let mut out = ctx.output(0)?;
        out.data_mut::<i64>().map_err(|e| op_error(SIZE, e.message))?[0] = n as i64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_keeps_the_first_of_repeated_keys() {
        let k = |v: i64| v.to_le_bytes().to_vec();
        let map = import(vec![k(1), k(2), k(1)], vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(map.len(), 2);
        assert_eq!(map[&k(1)], b"a");
    }

    #[test]
    fn only_two_type_pairs() {
        assert!(supported_pair(kTfLiteInt64, kTfLiteString));
        assert!(supported_pair(kTfLiteString, kTfLiteInt64));
        assert!(!supported_pair(kTfLiteInt64, kTfLiteInt64));
        assert!(!supported_pair(TfLiteType::kTfLiteInt32, kTfLiteString));
    }
}
