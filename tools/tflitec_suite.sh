#!/usr/bin/env bash
# The external gate: runs the test suite of the `tflitec` crate 0.7.0 (crates.io) linked
# against our library. tflitec's build.rs takes TFLITEC_PREBUILT_PATH (the .so) and
# TFLITEC_HEADER_DIR (our include/), and runs bindgen (needs libclang-dev).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
libdir=$(cd "${1:?usage: tflitec_suite.sh LIBDIR}" && pwd)
work=${TFLITEC_WORK_DIR:-$here/target/tflitec-suite}
mkdir -p "$work"
if [ ! -f "$work/tflitec-0.7.0/Cargo.toml" ]; then
  # Fetch the published crate source through cargo (crates.io only).
  rm -rf "$work/fetch" && mkdir -p "$work/fetch/src"
  cat > "$work/fetch/Cargo.toml" <<'TOML'
[package]
name = "fetch-tflitec"
version = "0.0.0"
edition = "2021"
[dependencies]
tflitec = "=0.7.0"
TOML
  echo 'fn main() {}' > "$work/fetch/src/main.rs"
  (cd "$work/fetch" && cargo fetch -q)
  src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/tflitec-0.7.0 | head -1)
  cp -r "$src" "$work/tflitec-0.7.0"
fi
cd "$work/tflitec-0.7.0"
export TFLITEC_PREBUILT_PATH="$libdir/libtensorflowlite_c.so"
export TFLITEC_HEADER_DIR="$here/include"
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cargo test --release ${TFLITEC_FEATURES:-} 2>&1 | tee "$work/test.log"
grep -q "test result: ok" "$work/test.log"
