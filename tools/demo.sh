#!/usr/bin/env bash
# Builds the library, writes the demo model, compiles examples_c/minimal.c against the
# library and runs it on the model.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
cargo build --release --lib --bin make-demo-model
./target/release/make-demo-model examples_c/demo_model.tflite
mkdir -p target/examples
cc -std=c99 -Wall -Wextra -Werror -O2 -Iinclude examples_c/minimal.c -o target/examples/minimal \
  -Ltarget/release -ltensorflowlite_c -Wl,-rpath,"$here/target/release"
./target/examples/minimal examples_c/demo_model.tflite
