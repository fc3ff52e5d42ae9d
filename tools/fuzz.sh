#!/usr/bin/env bash
# Fuzz stage: the libFuzzer target fuzz/fuzz_targets/model_lifecycle.rs (model bytes →
# create → allocate → fill → invoke → delete through the C API), built with coverage
# instrumentation, AddressSanitizer and debug assertions (fuzz/Cargo.toml's profile), run for
# FUZZ_SECONDS (default 240) on both cores. Seeds: every corpus model up to 64 KiB and the
# regression models in fuzz/regressions. Any crash, sanitizer report, panic, leak or
# timeout fails the stage; the input that caused it is left in target/fuzz/artifacts
# (copy it to fuzz/regressions and name it in tests/model_validation.rs, which checks it
# from then on).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
corpus=${TFLITE_CORPUS_DIR:-$here/../shared/corpus}
seconds=${FUZZ_SECONDS:-240}
# shellcheck source=tools/nightly_toolchain.sh
source tools/nightly_toolchain.sh
# The flags cargo-fuzz uses (sancov for libFuzzer's coverage feedback).
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table
  -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Zsanitizer=address"
export CARGO_TARGET_DIR=$here/target/fuzz
# shellcheck disable=SC2086
cargo $RUST_TOOLCHAIN build --manifest-path fuzz/Cargo.toml --release --target "$HOST_TRIPLE" --bin model_lifecycle
bin=$CARGO_TARGET_DIR/$HOST_TRIPLE/release/model_lifecycle

work=$CARGO_TARGET_DIR/run
rm -rf "$work" "$CARGO_TARGET_DIR/artifacts"
mkdir -p "$work/corpus" "$work/seeds" "$CARGO_TARGET_DIR/artifacts"
find "$corpus" -name '*.tflite' -size -65537c -exec cp {} "$work/seeds/" \;
cp fuzz/regressions/* "$work/seeds/" 2>/dev/null || true
seeds=$(find "$work/seeds" -type f | wc -l)
if [ "$seeds" -lt 300 ]; then
  echo "FATAL: only $seeds seed models (is the corpus at $corpus?)" >&2
  exit 1
fi
echo "fuzzing for $seconds s from $seeds seed models"
unset TFLITE_REQUIRE_OPENCL
export OCL_ICD_VENDORS=/nonexistent
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1
jobs=$(nproc)
set +e
"$bin" "$work/corpus" "$work/seeds" -fork="$jobs" -max_total_time="$seconds" -max_len=65536 -timeout=120 \
  -rss_limit_mb=4096 -malloc_limit_mb=4096 -print_final_stats=1 \
  -artifact_prefix="$CARGO_TARGET_DIR/artifacts/" >"$work/log" 2>&1
status=$?
set -e
grep -E "^(INFO: (fuzzed|exiting)|stat::)" "$work/log" | tail -8
# Fork mode's last progress line: executions, coverage, corpus, exec/s, oom/timeout/crash.
grep -E "^#[0-9]+:" "$work/log" | tail -1
# slow-unit-* files are inputs that took long (legal work, reported, not failures).
for a in "$CARGO_TARGET_DIR"/artifacts/slow-unit-*; do
  if [ -e "$a" ]; then echo "slow input (not a failure): $a"; fi
done
if ls "$CARGO_TARGET_DIR"/artifacts/{crash,leak,timeout,oom}-* >/dev/null 2>&1; then
  for a in "$CARGO_TARGET_DIR"/artifacts/{crash,leak,timeout,oom}-*; do
    [ -e "$a" ] || continue
    echo "FUZZ FAILURE: $a; rerun on it:" >&2
    "$bin" "$a" 2>&1 | grep -vE "^ +#[0-9]+ .* in (std::|core::|libfuzzer_sys|fuzzer::|__libc|_start|main )" | head -60 >&2 || true
  done
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "FUZZ FAILURE: libFuzzer exited with $status (see $work/log)" >&2
  exit 1
fi
echo "fuzz stage: no crash in $seconds s; $(find "$work/corpus" -type f | wc -l) corpus units kept"
