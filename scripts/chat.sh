#!/usr/bin/env bash
# The main command: install deps, build cact-run, open a terminal chat with the
# bundled tool-calling model (models/tools/tools-tiny.cact and its tools.json).
# Extra arguments go to cact-run (docs/CHAT.md), e.g. scripts/chat.sh --stats.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build/release}
"$root/scripts/install_deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCACT_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target cact-run >&2
exec "$build/apps/cact-run" "$@"
