//! Corpus goldens through the C API (see tests/common/golden.rs for the rule).

mod common;
use common::corpus;
use common::golden::run_case;

#[test]
fn golden_sin_add_mul() {
    run_case(&corpus(), "sin_add_mul").unwrap();
}

#[test]
fn golden_dynamic_batch_mlp() {
    run_case(&corpus(), "dynamic_batch_mlp").unwrap();
}

#[test]
fn golden_dynamic_batch_mlp_batch3() {
    run_case(&corpus(), "dynamic_batch_mlp@batch3").unwrap();
}
