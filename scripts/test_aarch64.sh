#!/usr/bin/env bash
# Cross-build the library up to the engine for Linux/aarch64 and run the
# tests of those layers under qemu-user: codec, kernels and engine once with
# `-cpu max` (tables scalar, neon, neon-dotprod) and once with `-cpu
# cortex-a53` (no dot product: the dispatch must leave neon-dotprod out);
# container and model once. So the engine's forward pass (golden logits,
# expected.tsv on every kernel table) is checked on Arm, not only compiled.
# Also runs the weak_symbols ctest on the aarch64 kernel files (see
# docs/KERNELS.md "Dispatch"). About five minutes on 2 cores.
#
#   scripts/test_aarch64.sh            # build dir build-arm/, -j2
#   BUILD_DIR=/tmp/arm JOBS=4 scripts/test_aarch64.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-arm}
jobs=${JOBS:-2}

missing=()
command -v aarch64-linux-gnu-g++ >/dev/null || missing+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64 >/dev/null || missing+=(qemu-user)
command -v ninja >/dev/null || missing+=(ninja-build)
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]]; then
    apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"
  else
    echo "test_aarch64: missing ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
fi

echo "== configure ($build)"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCACT_WERROR=ON \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" -DCACT_KERNELS_ONLY=OFF -DCACT_ENGINE_ONLY=ON >/dev/null

targets=()
for t in test_codec test_kernels test_container test_model test_engine; do
  if cmake --build "$build" --target help | grep -q "^$t:"; then targets+=("$t"); fi
done
echo "== build ${targets[*]}"
cmake --build "$build" -j"$jobs" --target "${targets[@]}"

echo "== weak-symbol audit of the ISA-flagged kernel objects (ctest weak_symbols)"
ctest --test-dir "$build" -R '^weak_symbols$' --output-on-failure

# qemu-user accepts madvise hints and ignores them, so MADV_POPULATE_READ
# "succeeds" without mapping anything, and its /proc/self/smaps describes the
# host's mappings, not the guest's: the prefault and huge-page advice tests
# are left to the x86 run.
declare -A extra=([test_model]='--test-case-exclude=prefault_dense*,Model::open?advises*')
status=0
run() {  # cpu, suite
  echo "== qemu-aarch64 -cpu $1 $2"
  # shellcheck disable=SC2086  # extra flags: none or one word
  if ! qemu-aarch64 -cpu "$1" "$build/tests/$2" ${extra[$2]:-}; then
    echo "FAILED: $2 on -cpu $1" >&2
    status=1
  fi
}
for t in "${targets[@]}"; do
  run max "$t"
  case $t in test_codec | test_kernels | test_engine) run cortex-a53 "$t" ;; esac
done
exit $status
