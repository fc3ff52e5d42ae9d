#!/usr/bin/env bash
# The whole test suite: what CI runs and what the README's test command runs.
#  0. formatting and lints: `cargo fmt --check`, `cargo clippy --all-targets -D warnings`;
#  1. cargo test (unit tests, header check, layout, C tests + examples against our
#     library, the installed library used through pkg-config and CMake, corpus goldens,
#     the mutated-model test), then the conformance suites again
#     with the SIMD microkernel tables switched off (TFLITE_RS_NO_SIMD=1: scalar twins);
#  2. the same C tests against the real TensorFlow Lite C library (proves the tests);
#  3. valgrind on the C tests and on examples_c/minimal;
#  4. the tflitec 0.7.0 crate's own test suite linked against our library, without and
#     with its xnnpack feature;
#  5. AddressSanitizer (tools/asan.sh): unit tests, mutated models, conformance, runtime
#     and validation tests built with -Zsanitizer=address;
#  6. coverage-guided fuzzing of the C API (tools/fuzz.sh), FUZZ_SECONDS (240) long.
# The cargo test stages and the ASan stage also write their output to target/logs/.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
shared=${TFLITE_SHARED_DIR:-$here/../shared}
if [ ! -d "$shared/corpus" ]; then
  echo "FATAL: $shared/corpus not found: the shared reference corpus must sit beside the repository" >&2
  exit 1
fi
export TFLITE_CORPUS_DIR="$shared/corpus"
logs=$here/target/logs
mkdir -p "$logs"

echo "== 0. cargo fmt --check, cargo clippy -D warnings"
cargo fmt --check
rustfmt --check --edition 2024 --config-path rustfmt.toml fuzz/fuzz_targets/*.rs
cargo clippy --release --all-targets -- -D warnings

echo "== 1. cargo test (release)"
bash tools/mediapipe_models.sh
cargo test --release 2>&1 | tee "$logs/cargo_test.log"
echo "== 1b. conformance suites on the scalar microkernels (TFLITE_RS_NO_SIMD=1)"
TFLITE_RS_NO_SIMD=1 cargo test --release --test ops_conformance --test corpus_golden 2>&1 | tee "$logs/scalar.log"
cargo build --release --lib
lib="$here/target/release"

echo "== 2. C tests against the real TFLite C library (TF 2.17.1 from PyPI)"
reflib_dir=${TFLITE_REFLIB_DIR:-$here/target/reflib}
if bash "$shared/tools/reflib/get_reflib.sh" "$reflib_dir"; then
  TFLITE_C_LIB_DIR="$reflib_dir" cargo test --release --test c_tests -- --test-threads=1 2>&1 | tee "$logs/reflib.log"
else
  echo "FATAL: could not fetch the reference library" >&2
  exit 1
fi

echo "== 3. valgrind"
bash tools/valgrind_c_tests.sh "$lib"

echo "== 4. tflitec 0.7.0 test suite against our library (default, then --features xnnpack)"
bash tools/tflitec_suite.sh "$lib"
TFLITEC_FEATURES="--features xnnpack" bash tools/tflitec_suite.sh "$lib"

echo "== 5. AddressSanitizer"
bash tools/asan.sh

echo "== 6. fuzzing the C API (libFuzzer)"
bash tools/fuzz.sh
echo "== all test stages passed"
