//! Which builtin an `OperatorCode` names. Codes above 127 do not fit the old `int8`
//! field, so newer files write `deprecated_builtin_code = 127` (the placeholder) and the
//! real code in `builtin_code`; old files only fill `deprecated_builtin_code`. TFLite takes
//! the larger of the two, and so do we.

use crate::model::fb;

/// The code of `PLACEHOLDER_FOR_GREATER_OP_CODES`.
pub const PLACEHOLDER_FOR_GREATER_OP_CODES: i32 = 127;

/// The effective builtin code of an operator code entry.
pub fn builtin_code(code: &fb::OperatorCode<'_>) -> i32 {
    code.builtin_code().0.max(i32::from(code.deprecated_builtin_code()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_of(deprecated: i8, builtin: i32) -> i32 {
        let mut b = flatbuffers::FlatBufferBuilder::new();
        let oc = fb::OperatorCode::create(
            &mut b,
            &fb::OperatorCodeArgs {
                deprecated_builtin_code: deprecated,
                custom_code: None,
                version: 1,
                builtin_code: fb::BuiltinOperator(builtin),
            },
        );
        b.finish(oc, None);
        let data = b.finished_data().to_vec();
        let oc = flatbuffers::root::<fb::OperatorCode>(&data).expect("valid");
        builtin_code(&oc)
    }

    #[test]
    fn old_and_new_files() {
        assert_eq!(code_of(0, 0), 0); // ADD, either way
        assert_eq!(code_of(3, 0), 3); // old file: only the deprecated field
        assert_eq!(code_of(3, 3), 3); // new file, small code: both
        assert_eq!(code_of(127, 150), 150); // new file, large code
    }
}
