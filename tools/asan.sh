#!/usr/bin/env bash
# AddressSanitizer stage: the library's unit tests (every microkernel against its scalar
# twin, the kernels' glue), the mutated-model test over the whole corpus, the conformance
# suites, the runtime and model-validation tests, built with -Zsanitizer=address (leak
# checking on) and run. OpenCL is switched off: PoCL's thread teardown trips ASan, and the
# GPU delegate has its own valgrind-checked C tests.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
export TFLITE_CORPUS_DIR=${TFLITE_CORPUS_DIR:-$here/../shared/corpus}
# shellcheck source=tools/nightly_toolchain.sh
source tools/nightly_toolchain.sh
tests=(--lib --test malformed_models --test ops_conformance --test corpus_golden --test runtime_ops
  --test model_validation)
# --target keeps the sanitizer off build scripts; its own target dir keeps it off the
# normal build.
export RUSTFLAGS="-Zsanitizer=address" CARGO_TARGET_DIR=$here/target/asan
# shellcheck disable=SC2086
cargo $RUST_TOOLCHAIN test --release --target "$HOST_TRIPLE" "${tests[@]}" --no-run
# allocator_may_return_null: an impossible allocation must come back as NULL (the library
# turns it into an error), as it does without ASan, instead of ASan's abort.
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:abort_on_error=1
unset TFLITE_REQUIRE_OPENCL
export OCL_ICD_VENDORS=/nonexistent
start=$(date +%s)
mkdir -p "$here/target/logs"
# shellcheck disable=SC2086
cargo $RUST_TOOLCHAIN test --release --target "$HOST_TRIPLE" "${tests[@]}" -- --show-output 2>&1 |
  tee "$here/target/logs/asan.log" | grep -E "^test result|mutated cases|^ops: [0-9]|Sanitizer"
echo "ASan stage: every test ran clean under AddressSanitizer in $(( $(date +%s) - start )) s"
