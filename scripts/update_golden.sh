#!/usr/bin/env bash
# Regenerate golden/archives and golden/inspect from the current build.
# Run only when a change of output is intended; review the diff before committing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${BUILD_DIR:-$root/build}")
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCACT_WERROR=ON >/dev/null
cmake --build "$build" --target cact-build cact-inspect
mkdir -p "$root/golden/archives" "$root/golden/inspect"
for preset in $(cat "$root/golden/presets.txt"); do
  "$build/apps/cact-build" synth "$root/golden/archives/$preset.cact" --preset "$preset" --seed 1
  (cd "$root/golden/archives" &&
    "$build/apps/cact-inspect" "$preset.cact" > "$root/golden/inspect/$preset.txt" &&
    "$build/apps/cact-inspect" "$preset.cact" --tensors > "$root/golden/inspect/$preset.tensors.txt" &&
    "$build/apps/cact-inspect" "$preset.cact" --json --tensors > "$root/golden/inspect/$preset.json")
done
echo "golden files regenerated; review with: git diff --stat golden/"
