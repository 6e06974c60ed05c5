#!/usr/bin/env bash
# Regenerate golden/logits/ (top-10 logits, float path and int8 scalar path) with
# cact-run --dump-golden. Tests only read these files; run this only when a
# change of the numerics is intended, and review the diff before committing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${BUILD_DIR:-$root/build}")
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCACT_WERROR=ON >/dev/null
cmake --build "$build" --target cact-run
mkdir -p "$root/golden/logits"
cd "$root"
"$build/apps/cact-run" models/license-tiny.cact --dump-golden golden/logits/license-tiny.json --golden-steps 8 \
  -p "Permission is hereby granted, free of charge, to any person obtaining a copy"
for preset in micro micro-notaps micro-heads micro-mixed; do
  if [ -f "golden/archives/$preset.cact" ]; then
    "$build/apps/cact-run" "golden/archives/$preset.cact" --dump-golden "golden/logits/$preset.json" --golden-steps 8 \
      -p "The quick brown fox jumps over the lazy dog"
  fi
done
echo "golden logits regenerated; review with: git diff --stat golden/logits"
