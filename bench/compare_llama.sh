#!/usr/bin/env bash
# cact against llama.cpp at equal compute, both measured in one run, interleaved
# (docs/PERFORMANCE.md "The results table").
#
#   bench/compare_llama.sh [--rounds N] [--also ISAS] [--work DIR] [--build DIR]
#
#   --rounds N   interleaved rounds, default 3
#   --also ISAS  more cact columns, one per CACT_ISA level in the comma-separated
#                list (e.g. avx512-vbmi on an AMX CPU)
#   --work DIR   where llama.cpp is built and the models are written (default
#                /tmp/cact-compare; reused by later runs)
#   --build DIR  cact's Release build directory (default build/release; built if missing)
#
# llama.cpp comes from ../shared/peers/ (a source snapshot and a model maker): it
# is built here as a measuring stick and never linked into or copied into cact.
# cact runs `bench_engine --rates` on the synthetic needle3 archive; llama.cpp runs
# `llama-bench` (tg128, pp512) on a random Llama of the same multiply-accumulates
# per token. A round runs, one after the other: cact (best kernel table), cact
# under each --also level, cact's scalar twin (CACT_ISA=scalar), cact's
# `--layers 8` rung, llama.cpp Q2_K and llama.cpp Q4_0. Prints one table of
# medians with the ratio of cact to the better llama.cpp format and to its own
# scalar twin, then the machine it ran on. If the native llama.cpp fails a
# smoke run on an AMX CPU (its AMX path crashes on some guests), its AVX-512 build
# without AMX is measured instead, and the output says so.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
peers="$root/../shared/peers"
rounds=3
also=()
work=/tmp/cact-compare
build="$root/build/release"

usage() {  # usage [CODE]: the help text, to stdout for --help (CODE 0), else to stderr (exit 2)
  local code=${1:-2} text
  text=$(sed -n '5,12p' "$0" | sed 's/^# \{0,1\}//')
  if ((code == 0)); then echo "$text"; else echo "$text" >&2; fi
  exit "$code"
}
while (($#)); do
  case "$1" in
    --rounds) [[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || usage; rounds=$2; shift 2 ;;
    --also) [[ $# -ge 2 && $2 =~ ^[a-z0-9-]+(,[a-z0-9-]+)*$ ]] || usage; IFS=, read -ra also <<<"$2"; shift 2 ;;
    --work) [[ $# -ge 2 ]] || usage; work=$2; shift 2 ;;
    --build) [[ $# -ge 2 ]] || usage; build=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "compare_llama: unknown argument '$1'" >&2; usage ;;
  esac
done
snapshot=$(ls "$peers"/llama.cpp-*-cpu.tar.xz 2>/dev/null | head -n 1 || true)
if [[ -z $snapshot || ! -f $peers/make_gguf.py ]]; then
  echo "compare_llama: no llama.cpp snapshot and make_gguf.py in $peers" >&2
  exit 1
fi
mkdir -p "$work"
log() { printf '== %s\n' "$*" >&2; }

# make_gguf.py needs numpy: Debian's own Python with Debian's package (a pyenv or venv
# python3 earlier on PATH may lack it).
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  log "installing python3-numpy (make_gguf.py needs it)"
  apt-get install -y python3-numpy >/dev/null
fi

if [[ ! -x $build/bench/bench_engine || ! -x $build/apps/cact-build || ! -x $build/apps/cact-slice ]]; then
  log "building cact (Release) in $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$(nproc)" --target bench_engine cact-build cact-slice >/dev/null
fi
# An --also level this CPU or build lacks fails here, before anything is measured.
for isa in "${also[@]}"; do
  if ! err=$(CACT_ISA=$isa "$build/apps/cact-slice" --version 2>&1 >/dev/null); then
    echo "compare_llama: --also $isa: ${err#cact-slice: }" >&2
    exit 2
  fi
done

cpu_flags=" $(grep -m1 '^flags' /proc/cpuinfo) "
llama="$work/llama.cpp"
build_llama() {  # build_llama DIR CMAKE_ARGS...
  local dir=$1
  shift
  cmake -S "$llama" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF "$@" >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target llama-bench llama-quantize >/dev/null
}
if [[ ! -x $llama/build/bin/llama-bench ]]; then
  log "building llama.cpp from $(basename "$snapshot") in $llama"
  rm -rf "$llama"
  tar -xJf "$snapshot" -C "$work"
  build_llama "$llama/build" -DGGML_NATIVE=ON
fi

# Written afresh on every run: how the archive's pages sit in the page cache moves
# cact's decode by up to a quarter (docs/ENGINE.md "Page cache"), and a fresh
# write by cact's own writer is the state the figures are meant to show.
archive="$work/needle3.cact"
"$build/apps/cact-build" synth "$archive" --preset needle3 -q
rung="$work/needle3.l8.cact"
"$build/apps/cact-slice" "$archive" "$rung" --layers 8 -q >/dev/null
if [[ ! -f $work/equal.Q4_0.gguf || ! -f $work/equal.Q2_K.gguf ]]; then
  log "writing the equal-compute Llama (make_gguf.py) and its Q2_K and Q4_0 quantisations"
  PYTHONPATH="$llama/gguf-py" /usr/bin/python3 "$peers/make_gguf.py" "$work/equal.f32.gguf" f32 >/dev/null
  for q in Q2_K Q4_0; do
    "$llama/build/bin/llama-quantize" "$work/equal.f32.gguf" "$work/equal.$q.gguf" "$q" >/dev/null 2>&1
  done
  rm -f "$work/equal.f32.gguf"
fi

# The native build's AMX path (ggml's CPU_AMX buffers) crashes with SIGSEGV in
# llama-bench on some AMX guests: there the peer is measured on its AVX-512 path,
# a build with every x86 extension of this CPU except AMX.
bench_bin="$llama/build/bin/llama-bench"
# (In a subshell with its stderr redirected: bash's "Segmentation fault" notice goes there too.)
if ! ("$bench_bin" -m "$work/equal.Q4_0.gguf" -p 8 -n 2 -r 1 -t 1) >/dev/null 2>&1; then
  if [[ $cpu_flags != *" amx_int8 "* ]]; then
    echo "compare_llama: llama-bench fails on $work/equal.Q4_0.gguf" >&2
    exit 1
  fi
  if [[ ! -x $llama/build-noamx/bin/llama-bench ]]; then
    log "llama-bench crashed on its AMX path: building llama.cpp without AMX in $llama/build-noamx"
    args=(-DGGML_NATIVE=OFF)
    for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx_vnni:AVX_VNNI avx512f:AVX512 \
      avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16; do
      if [[ $cpu_flags == *" ${pair%%:*} "* ]]; then args+=("-DGGML_${pair#*:}=ON"); fi
    done
    build_llama "$llama/build-noamx" "${args[@]}"
  fi
  bench_bin="$llama/build-noamx/bin/llama-bench"
  llama_note="llama.cpp without AMX (its AMX path crashed here)"
fi

results="$work/results.jsonl"
: >"$results"
cact_rates() {  # cact_rates ENGINE ARCHIVE [CACT_ISA]: one line of results
  log "round $r of $rounds: $1"
  printf '{"engine": "%s", "rates": %s}\n' "$1" \
    "$(env ${3:+CACT_ISA=$3} "$build/bench/bench_engine" --rates "$2")" >>"$results"
}
for ((r = 1; r <= rounds; ++r)); do
  cact_rates cact "$archive"
  for isa in "${also[@]}"; do cact_rates "cact $isa" "$archive" "$isa"; done
  cact_rates "cact scalar" "$archive" scalar
  cact_rates "cact 8-layer rung" "$rung"
  for q in Q2_K Q4_0; do
    log "round $r of $rounds: llama.cpp $q"
    # Flash attention on and off: the better counts (it helps on some CPUs only).
    "$bench_bin" -m "$work/equal.$q.gguf" -p 512 -n 128 -r 1 -t 1,2 -fa on,off -o json 2>/dev/null |
      python3 -c 'import json, sys; print(json.dumps({"engine": sys.argv[1], "runs": json.load(sys.stdin)}))' \
        "llama.cpp $q" >>"$results"
  done
done

python3 - "$results" "${also[@]}" <<'EOF'
import json, statistics, sys

rows = {"decode, 1 thread": ("decode_1t", 0, 128, 1), "decode, 2 threads": ("decode_2t", 0, 128, 2),
        "prefill 512, 1 thread": ("prefill512_1t", 512, 0, 1), "prefill 512, 2 threads": ("prefill512_2t", 512, 0, 2)}
samples = {}  # (engine, row) -> per-round figures
for line in open(sys.argv[1]):
    entry = json.loads(line)
    for row, (key, n_prompt, n_gen, threads) in rows.items():
        if entry["engine"].startswith("cact"):
            value = entry["rates"][key]
        else:
            value = max(run["avg_ts"] for run in entry["runs"]
                        if run["n_prompt"] == n_prompt and run["n_gen"] == n_gen and run["n_threads"] == threads)
        samples.setdefault((entry["engine"], row), []).append(value)

peers = ["llama.cpp Q2_K", "llama.cpp Q4_0"]
cacts = ["cact"] + ["cact " + isa for isa in sys.argv[2:]]
columns = cacts + peers + [c + " ÷ best" for c in cacts] + ["cact scalar", "cact ÷ scalar", "cact 8-layer rung"]
rounds = len(samples[("cact", "decode, 1 thread")])
print(f"tok/s, median of {rounds} interleaved rounds; ÷ best: against the better llama.cpp format")
print("| tok/s | " + " | ".join(columns) + " |")
print("|---|" + "---|" * len(columns))
for row in rows:
    med = {e: statistics.median(samples[(e, row)]) for e in cacts + peers + ["cact scalar", "cact 8-layer rung"]}
    best_peer = max(med[e] for e in peers)
    cells = [f"{med[e]:.0f}" for e in cacts + peers] + [f"{med[c] / best_peer:.2f}" for c in cacts]
    cells += [f"{med['cact scalar']:.1f}", f"{med['cact'] / med['cact scalar']:.0f}", f"{med['cact 8-layer rung']:.0f}"]
    print(f"| {row} | " + " | ".join(cells) + " |")
EOF

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
isa=""
for f in avx2 avx_vnni avx512f avx512_vnni avx512vbmi amx_int8; do
  [[ $cpu_flags == *" $f "* ]] && isa+="$f "
done
# Which table each cact column ran (the first round says it for all).
table=$(sed -n 's/^{"engine": "\(cact[^"]*\)", "rates": {"table": "\([^"]*\)".*/\1 = \2/p' "$results" |
  awk '!seen[$0]++' | paste -sd ';' | sed 's/;/; /g')
isa=${isa% }
echo "machine: $cpu, $(nproc) cores; ISA: ${isa:-baseline}; cact tables: $table"
echo "cact $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?'), llama.cpp $(basename "$snapshot" .tar.xz), $(date -u +%Y-%m-%d)"
if [[ -n ${llama_note:-} ]]; then echo "$llama_note"; fi
