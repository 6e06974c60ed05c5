#!/usr/bin/env bash
# Instruction counts of the aarch64 products under qemu (docs/KERNELS.md
# "Against the ISA's peak"): an emulator's time means nothing, but the
# instructions a product executes, and how many of them are dot products, do.
#
#   bench/count_neon.sh [--tables NAME,NAME] [--build DIR] [--attention | --step ARCHIVE]
#
#   --tables     aarch64 tables to count (default neon-dotprod,neon)
#   --build      the cross build directory (default build-arm, as scripts/test_aarch64.sh)
#   --attention  count one decode token's int8 attention instead (`bench_attention
#                --once`: needle3's shape over a 514-position prefix and a full window)
#   --step       count one decode step of ARCHIVE at position 18 (`bench_step`, one
#                thread, best table) and the functions that take the most of it
#
# Cross-builds bench_kernels (engine-only scope), runs `bench_kernels --once` per
# table under `qemu-aarch64 -cpu max -singlestep -d in_asm,exec,nochain` and
# counts, between the count_marker() calls around each product, the instructions
# executed and the SDOT among them; prints MACs per instruction against SDOT's 16.
# With --attention or --step, the same count around `bench_attention --once` or
# `bench_step` (no MAC figures).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-arm
tables=neon-dotprod,neon
bench=bench_kernels
usage() {
  sed -n '6,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while (($#)); do
  case "$1" in
    --tables) [[ $# -ge 2 ]] || usage; tables=$2; shift 2 ;;
    --build) [[ $# -ge 2 ]] || usage; build=$2; shift 2 ;;
    --attention) bench=bench_attention; tables=attention; shift ;;
    --step)
      [[ $# -ge 2 ]] || usage
      [[ -f $2 && -r $2 ]] || { echo "count_neon: no readable archive '$2'" >&2; exit 1; }
      bench=bench_step; tables=step; archive=$(realpath "$2"); shift 2 ;;
    *) echo "count_neon: unknown argument '$1'" >&2; usage ;;
  esac
done
for tool in aarch64-linux-gnu-g++ qemu-aarch64 ninja; do
  command -v "$tool" >/dev/null || { echo "count_neon: $tool not found (scripts/test_aarch64.sh installs it)" >&2; exit 1; }
done
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCACT_WERROR=ON \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" -DCACT_KERNELS_ONLY=OFF -DCACT_ENGINE_ONLY=ON >/dev/null
cmake --build "$build" --target "$bench" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-13s %-26s %14s %12s %8s %9s\n' table product instructions sdot "MAC/ins" "of 16"
for table in ${tables//,/ }; do
  mkfifo "$work/trace"
  case $bench in
    bench_attention) args=(--once) ;;
    bench_step) args=("$archive") ;;
    *) args=(--once --tables "$table") ;;
  esac
  qemu-aarch64 -cpu max -singlestep -d in_asm,exec,nochain -D "$work/trace" \
    "$build/bench/$bench" "${args[@]}" >"$work/products" &
  qemu=$!
  # A window opens at each entry into count_marker and closes at the next.
  by_function=0
  [[ $bench == bench_step ]] && by_function=1
  awk -v products="$work/products" -v functions="$work/functions" -v by_function="$by_function" '
    # (qemu 7.2 disassembles SDOT as .byte: it is recognised by its encoding, the
    # vector form 0x0e809400 under mask 0xbfe0fc00, the by-element form 0x0f80e000
    # under mask 0xbfc0f400.)
    function hex(s,   v, i) {
      v = 0
      for (i = 1; i <= length(s); ++i) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
      return v
    }
    function masked(v, mask,   r, bit) {  # v & mask for 32-bit values
      r = 0
      for (bit = 2147483648; bit >= 1; bit /= 2) {
        if (v >= bit && mask >= bit) r += bit
        if (v >= bit) v -= bit
        if (mask >= bit) mask -= bit
      }
      return r
    }
    /^0x[0-9a-f]+:/ {
      pc = $1; sub(/^0x0*/, "", pc); sub(/:$/, "", pc)
      word = hex($2)
      sdot[pc] = masked(word, 3219192832) == 243307520 || masked(word, 3217093632) == 260104192
      next
    }
    /^Trace / {
      split($0, f, "/"); pc = f[2]; sub(/^0*/, "", pc)
      sym = $NF
      marker = sym ~ /count_marker/
      if (marker && !in_marker) { open = !open; if (open) { ++w; n[w] = 0; d[w] = 0 } }
      in_marker = marker
      if (open && !marker) { ++n[w]; if (sdot[pc]) ++d[w]; if (by_function) ++count_of[sym] }
    }
    END {
      for (fn in count_of) print count_of[fn], fn > functions
      for (i = 1; i <= w; ++i) {
        getline line < products
        if (line ~ /^attention/) {  # bench_attention: "attention of one token over N positions"
          nf = split(line, q, " ")
          printf "%-13s %-26s %14d %12d %8s %9s\n", "-", "attention over " q[nf - 1], n[i], d[i], "-", "-"
          continue
        }
        if (line ~ /^decode step/) {  # bench_step: "decode step at position N"
          nf = split(line, q, " ")
          printf "%-13s %-26s %14d %12d %8s %9s\n", "best", "decode step at " q[nf], n[i], d[i], "-", "-"
          continue
        }
        split(line, p, " on ")
        sub(/^product /, "", p[1])
        macs = p[1]; gsub(/[^0-9 ]/, " ", macs); split(macs, m, " +")
        k = 1; while (m[k] == "") ++k
        total = m[k] * m[k + 1] * m[k + 3]  # out, in, (bits), vectors
        printf "%-13s %-26s %14d %12d %8.2f %8.0f%%\n", p[2], p[1], n[i], d[i], total / n[i], 100 * total / n[i] / 16
      }
    }' "$work/trace"
  wait "$qemu"
  rm -f "$work/trace"
  want=2
  [[ $bench == bench_kernels ]] || want=1
  [[ $(wc -l <"$work/products") -eq $want ]] || { echo "count_neon: $bench gave no result for '$table' under qemu -cpu max" >&2; exit 1; }
done
if [[ $bench == bench_step ]]; then
  total=$(awk '{ t += $1 } END { print t }' "$work/functions")
  echo "functions with the most of the step's instructions:"
  sort -rn "$work/functions" | head -12 | c++filt | sed "s/(anonymous namespace):://g" |
    awk -v t="$total" '{ n = $1; $1 = ""; f = substr($0, 2); if (length(f) > 100) f = substr(f, 1, 97) "..."
                         printf "%12d %5.1f%%  %s\n", n, 100 * n / t, f }'
fi
