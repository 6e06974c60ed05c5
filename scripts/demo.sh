#!/usr/bin/env bash
# The main job on the bundled archive: build, then generate text with cact-run
# on models/license-tiny.cact (its default). Extra arguments go to cact-run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build/release}
"$root/scripts/install_deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target cact-run cact-inspect
"$build/apps/cact-inspect" "$root/models/license-tiny.cact"
if [ $# -eq 0 ]; then set -- -p "This program is free software" -n 40 --stats; fi
"$build/apps/cact-run" "$@"
