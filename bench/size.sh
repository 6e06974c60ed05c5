#!/usr/bin/env bash
# The size budget of what an app links to run a model (docs/API.md "Size"):
# libcact.so (container, tokenizer, engine, kernels, chat layer, C API),
# stripped, at most 1 000 000 bytes on x86-64 and on aarch64.
#
#   bench/size.sh LIBRARY [STRIP]    print LIBRARY's stripped size; exit 1 above the budget
#   bench/size.sh --aarch64          cross-build libcact.so (Release) in build-arm/ (the
#                                    build dir of scripts/test_aarch64.sh) and check it
#   cmake --build BUILD --target size    the first form on BUILD's libcact.so
# Environment for --aarch64: BUILD_DIR (default build-arm), JOBS (default 2).
set -euo pipefail
budget=1000000

if [[ ${1:-} == --aarch64 ]]; then
  root=$(cd "$(dirname "$0")/.." && pwd)
  build=${BUILD_DIR:-$root/build-arm}
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCACT_WERROR=ON \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" -DCACT_KERNELS_ONLY=OFF -DCACT_ENGINE_ONLY=ON >/dev/null
  cmake --build "$build" -j"${JOBS:-2}" --target cact_shared >/dev/null
  exec "$0" "$(find "$build/libcact" -maxdepth 1 -name 'libcact.so.*.*.*' | head -1)" aarch64-linux-gnu-strip
fi

library=${1:?usage: bench/size.sh LIBRARY [STRIP] | --aarch64}
strip_tool=${2:-strip}
stripped=$(mktemp)
trap 'rm -f "$stripped"' EXIT
"$strip_tool" --strip-all -o "$stripped" "$library"
bytes=$(stat -c %s "$stripped")
arch=$(readelf -h "$stripped" | sed -n 's/^ *Machine: *//p')
printf 'libcact.so stripped: %d bytes (%s; budget %d, %d to spare)\n' "$bytes" "$arch" "$budget" $((budget - bytes))
if ((bytes > budget)); then
  echo "size.sh: $library is over the budget by $((bytes - budget)) bytes" >&2
  exit 1
fi
