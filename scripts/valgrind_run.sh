#!/usr/bin/env bash
# valgrind memcheck of the tools on the bundled model: one cact-run generation
# (int8 path with the best kernels, then the scalar and float paths), plus
# cact-inspect --check on a good and a malformed archive. Any memcheck error
# (invalid read/write, uninitialised value used, definite leak) fails the run.
#
#   scripts/valgrind_run.sh            build (RelWithDebInfo) and check
# Environment: CACT_VALGRIND_BUILD (default build/valgrind), CACT_VALGRIND_JOBS (default nproc).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CACT_VALGRIND_BUILD:-$root/build/valgrind}"
jobs="${CACT_VALGRIND_JOBS:-$(nproc)}"
model="$root/models/license-tiny.cact"
command -v valgrind >/dev/null || { echo "valgrind_run.sh: valgrind not found (apt-get install valgrind)" >&2; exit 2; }

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCACT_WERROR=ON -DCACT_TESTS=OFF -DCACT_BENCH=OFF >/dev/null
cmake --build "$build" --target cact-run cact-inspect -j"$jobs"

vg=(valgrind --tool=memcheck --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
    --track-origins=yes --quiet)
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

run() {
  echo "== valgrind $*" >&2
  "${vg[@]}" "$@"
}

run "$build/apps/cact-run" "$model" --prompt "This program is free software" --max-tokens 8 >"$scratch/out-int8.txt"
run "$build/apps/cact-run" "$model" --scalar --prompt "Copyright" --max-tokens 4 >"$scratch/out-scalar.txt"
run "$build/apps/cact-run" "$model" --float --prompt "Copyright" --max-tokens 4 >"$scratch/out-float.txt"
run "$build/apps/cact-inspect" --check "$model" >/dev/null
# The chat path: the bundled tool model with its tools, one constrained answer and a tool-result turn.
printf '%s\n' '{"query": "set a timer for 10 minutes"}' '{"tool_result": {"ok": true}}' |
  run "$build/apps/cact-run" --jsonl >"$scratch/out-chat.txt"
for f in "$scratch"/out-*.txt; do printf '   %s: %s\n' "$(basename "$f")" "$(head -c 120 "$f" | tr '\n' ' ')"; done

# A malformed archive: the tool must fail (exit 1) without a memcheck error
# (memcheck's own errors exit with 1 too, so look for its report instead).
cp "$model" "$scratch/bad.cact"
chmod u+w "$scratch/bad.cact"
printf '\x00\x00\x00\x40' | dd of="$scratch/bad.cact" bs=1 seek=20 conv=notrunc status=none  # vocab 2^30
printf '\x06' | dd of="$scratch/bad.cact" bs=1 seek=$((308 + 44 * 2 + 40)) conv=notrunc status=none  # record 2: CQ bits 6
echo "== valgrind cact-inspect --check (malformed archive)"
set +e
valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --quiet \
  "$build/apps/cact-inspect" --check "$scratch/bad.cact" >/dev/null 2>"$scratch/bad.err"
rc=$?
set -e
cat "$scratch/bad.err"
if [[ $rc -ne 1 ]]; then
  echo "valgrind_run.sh: cact-inspect on a malformed archive exited $rc (want 1; 99 = memcheck error)" >&2
  exit 1
fi
echo "valgrind_run.sh: clean"
