#!/usr/bin/env bash
# Build the libFuzzer targets (fuzz/) with clang + ASan + UBSan into build-fuzz
# and run each for a bounded time. Exits non-zero if any target finds a crash.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   run each target SECONDS (default 60)
#   scripts/fuzz.sh --seeds                 regenerate fuzz/corpus/ from models/ and golden/
#   scripts/fuzz.sh --list                  list the targets
#
# Environment: CACT_FUZZ_BUILD (default build-fuzz), CACT_FUZZ_JOBS (build -j, default 2),
# CACT_FUZZ_RSS_MB (default 2048). The working corpus grows in fuzz/corpus-work/<target>
# (git-ignored) and is kept between runs; crashes land in $BUILD/artifacts/<target>/.
# Reproduce one with:  $BUILD/fuzz/fuzz_<target> FILE
# Once fixed, copy FILE into fuzz/regressions/<target>/: the test suite replays it forever.
# Total time is bounded by SECONDS x targets (+ the build); CI calls it with e.g. 60.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CACT_FUZZ_BUILD:-$root/build-fuzz}"
jobs="${CACT_FUZZ_JOBS:-2}"
rss="${CACT_FUZZ_RSS_MB:-2048}"
all_targets=(archive archive_layout tokenizer_blob tokenizer_encode spm_import safetensors geometry_json slice engine synth cli_text
             json_input tool_list chat_request transcript)

configure() {
  if ! command -v clang++ >/dev/null; then
    echo "fuzz.sh: clang++ not found (apt-get install clang libclang-rt-14-dev)" >&2
    exit 2
  fi
  # The SIMD kernel tables are built too (base/cpu_features.cpp reads F16C
  # and AVX-VNNI from CPUID, which clang accepts), so the engine target runs on the
  # CPU's best table, as the tools do.
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCACT_FUZZ=ON -DCACT_APPS=OFF \
    -DCACT_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -UCACT_CXX_HAS_AVX2 >/dev/null
}

case "${1:-}" in
  --list)
    printf '%s\n' "${all_targets[@]}"
    exit 0
    ;;
  --seeds)
    configure
    cmake --build "$build" --target fuzz_make_seeds -j"$jobs"
    "$build/fuzz/fuzz_make_seeds" "$root" "$root/fuzz/corpus"
    exit 0
    ;;
  -h|--help)
    sed -n '2,16p' "$0"
    exit 0
    ;;
esac

seconds="${1:-60}"
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a number, got '$seconds'" >&2; exit 2; }
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")

configure
cmake --build "$build" --target $(printf 'fuzz_%s ' "${targets[@]}") -j"$jobs"

stats="$build/fuzz-stats.tsv"
[[ -f "$stats" ]] || printf 'date\ttarget\tseconds\texecutions\texec_per_s\tcorpus\tresult\n' >"$stats"
failed=()
for t in "${targets[@]}"; do
  work="$root/fuzz/corpus-work/$t"
  artifacts="$build/artifacts/$t"
  mkdir -p "$work" "$artifacts"
  extra=()
  seeds="$root/fuzz/corpus/$t"
  case "$t" in
    tokenizer_encode) extra+=(-max_len=4096) ;;
    archive_layout) extra+=(-max_len=8192) ;;
    geometry_json) extra+=(-max_len=4096) ;;
    engine) extra+=(-max_len=512) ;;
    slice) seeds="$root/fuzz/corpus/archive" ;;  # same inputs as the archive target
    synth) seeds="$root/fuzz/corpus/geometry_json"; extra+=(-max_len=4096) ;;
    cli_text) extra+=(-max_len=256) ;;
    json_input|tool_list|chat_request|transcript) extra+=(-max_len=16384) ;;
  esac
  log="$build/fuzz-$t.log"
  echo "== fuzz_$t for ${seconds}s"
  set +e
  # -timeout: one input taking > 10 s is a finding (a hang), not a slow machine.
  "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb="$rss" \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${extra[@]}" \
    "$work" "$seeds" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  corpus=$(find "$work" -type f | wc -l)
  if [[ $rc -eq 0 ]]; then
    result=clean
  else
    result="FOUND (rc $rc)"
    failed+=("$t")
    grep -E 'ERROR|invariant failed|SUMMARY|Test unit written' "$log" | head -5 >&2 || true
    echo "   reproduce: $build/fuzz/fuzz_$t $artifacts/<crash-file>   (full log: $log)" >&2
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$seconds" "${execs:-?}" "${speed:-?}" "$corpus" "$result" >>"$stats"
  printf '   %s executions (%s/s), corpus %s files: %s\n' "${execs:-?}" "${speed:-?}" "$corpus" "$result"
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: findings in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: all targets clean (stats: $stats)"
