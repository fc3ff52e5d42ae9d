#!/usr/bin/env bash
# Fetches MediaPipe's public models that the MediaPipe-model test runs
# (tests/mediapipe_models.rs) from the mediapipe 0.10.21 wheel on PyPI, into
# target/mediapipe/ (or $1). Only the model files are kept; each is checked against
# its SHA-256. Runs once: models already present and intact are not fetched again.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$here/target/mediapipe}
mkdir -p "$dest"
models=(
  "face_landmark/face_landmark_with_attention.tflite e06a804e0144f9929eda782122916b35d60c697c3c9344013ca2bbe76a6ce2b4"
  "face_detection/face_detection_full_range_sparse.tflite 2c3728e6da56f21e21a320433396fb06d40d9088f2247c05e5635a688d45dfe1"
  "pose_detection/pose_detection.tflite 9ba9dd3d42efaaba86b4ff0122b06f29c4122e756b329d89dca1e297fd8f866c"
)
intact() {
  for entry in "${models[@]}"; do
    read -r rel sum <<<"$entry"
    f="$dest/$(basename "$rel")"
    [ -f "$f" ] && echo "$sum  $f" | sha256sum --check --quiet >/dev/null 2>&1 || return 1
  done
}
if intact; then
  echo "mediapipe models: present in $dest"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
  --python-version 3.11 -d "$tmp" mediapipe==0.10.21
wheel=$(ls "$tmp"/mediapipe-0.10.21-*.whl)
for entry in "${models[@]}"; do
  read -r rel sum <<<"$entry"
  python3 - "$wheel" "mediapipe/modules/$rel" "$dest/$(basename "$rel")" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[3], "wb") as out:
    out.write(z.read(sys.argv[2]))
PY
  echo "$sum  $dest/$(basename "$rel")" | sha256sum --check --quiet
done
echo "mediapipe models: fetched into $dest"
