#!/usr/bin/env bash
# Runs every C test and the examples (minimal, sin_delegate, version_aware_delegate)
# under valgrind against the library in $1 (a directory holding libtensorflowlite_c.so):
# no errors, no leaks.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
libdir=$(cd "${1:?usage: valgrind_c_tests.sh LIBDIR}" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export TFLITE_CORPUS_DIR=${TFLITE_CORPUS_DIR:-$here/../shared/corpus}
cc_flags=(-std=c11 -g -O1 -I"$here/include" -I"$here/c_tests")
link=(-L"$libdir" -ltensorflowlite_c -Wl,-rpath,"$libdir" -lm -pthread)
vg=(valgrind --suppressions="$here/tools/valgrind.supp" --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 -q)
fail=0
for src in "$here"/c_tests/*.c; do
  name=$(basename "$src" .c)
  cc "${cc_flags[@]}" "$src" -o "$out/$name" "${link[@]}"
  if "${vg[@]}" "$out/$name" >"$out/$name.log" 2>&1; then
    echo "valgrind ok: $name"
  else
    echo "valgrind FAILED: $name"; tail -40 "$out/$name.log"; fail=1
  fi
done
run_example() { # NAME ARGS...
  local name=$1; shift
  cc "${cc_flags[@]}" "$here/examples_c/$name.c" -o "$out/$name" "${link[@]}"
  if "${vg[@]}" "$out/$name" "$@" >"$out/$name.log" 2>&1; then
    echo "valgrind ok: $name $*"
  else
    echo "valgrind FAILED: $name $*"; tail -40 "$out/$name.log"; fail=1
  fi
}
run_example minimal "$here/examples_c/demo_model.tflite"
run_example sin_delegate "$here/examples_c/sin_sin.tflite"
run_example sin_delegate "$here/examples_c/demo_model.tflite"
run_example version_aware_delegate "$TFLITE_CORPUS_DIR/models/depthwise_dilated.tflite"
echo "valgrind: $([ $fail = 0 ] && echo 'all clean' || echo 'FAILURES')"
exit $fail
