#!/usr/bin/env bash
# Runs every C test and examples_c/minimal under valgrind against the library in $1
# (a directory holding libtensorflowlite_c.so): no errors, no leaks.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
libdir=$(cd "${1:?usage: valgrind_c_tests.sh LIBDIR}" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export TFLITE_CORPUS_DIR=${TFLITE_CORPUS_DIR:-$here/../shared/corpus}
cc_flags=(-std=c11 -g -O1 -I"$here/include" -I"$here/c_tests")
link=(-L"$libdir" -ltensorflowlite_c -Wl,-rpath,"$libdir" -lm)
vg=(valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 -q)
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
cc "${cc_flags[@]}" "$here/examples_c/minimal.c" -o "$out/minimal" "${link[@]}"
if "${vg[@]}" "$out/minimal" "$here/examples_c/demo_model.tflite" >"$out/minimal.log" 2>&1; then
  echo "valgrind ok: minimal"
else
  echo "valgrind FAILED: minimal"; tail -40 "$out/minimal.log"; fail=1
fi
echo "valgrind: $([ $fail = 0 ] && echo 'all clean' || echo 'FAILURES')"
exit $fail
