#!/usr/bin/env bash
# ThreadSanitizer build of the multi-threaded code and its tests: the CQ
# quantiser's worker pool (tests/interchange), the synthetic archive builder
# (tests/model), the tools that take --threads (tests/tools) and the engine's
# session pool (tests/engine/threads_test.cpp: threaded prefill and decode, two
# sessions of one Engine in two threads) and the C API (tests/capi: one engine
# and tokenizer shared by sessions and chats on many threads) and cact-serve
# (serve_endpoints: concurrent requests on its session pool). Any data
# race or lock-order report fails the run.
#
#   scripts/tsan.sh [ctest -R regex]     default: interchange|model|tools|engine|capi|serve_endpoints
# Environment: CACT_TSAN_BUILD (default build/tsan), CACT_TSAN_JOBS (default nproc).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CACT_TSAN_BUILD:-$root/build/tsan}"
jobs="${CACT_TSAN_JOBS:-$(nproc)}"
regex="${1:-^(interchange|model|tools|engine|capi|serve_endpoints)$}"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCACT_WERROR=ON -DCACT_TSAN=ON -DCACT_BENCH=OFF >/dev/null
targets=()
for suite in interchange model tools engine capi; do
  [[ "$suite" =~ ${regex//[\^\$()]/} ]] && targets+=("test_$suite")
done
# cact-serve's session pool: many requests on one shared engine (tests/serve/).
[[ "serve_endpoints" =~ ${regex//[\^\$()]/} ]] && targets+=(cact-serve)
[[ ${#targets[@]} -gt 0 ]] || targets=(all)
cmake --build "$build" --target "${targets[@]}" -j"$jobs"
# halt_on_error: the first race fails the test that hit it; second_deadlock_stack for lock reports.
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4" \
  ctest --test-dir "$build" --output-on-failure -R "$regex" -j"$jobs"
echo "tsan.sh: clean"
