#!/usr/bin/env bash
# Cycles of the aarch64 decode and prefill tiles by llvm-mca's pipeline models (docs/KERNELS.md
# "Against the ISA's peak"): no Arm hardware here, and qemu counts instructions,
# not cycles. llvm-mca runs a tile's loop over the groups through the scheduling
# model of an in-order core (Cortex-A55; Cortex-A53 for the table without dot
# products) and an out-of-order one (Cortex-A76): an estimate, not a measurement,
# but one that weighs latency and issue width as an instruction count cannot.
#
#   bench/mca_neon.sh [--build DIR]
#
#   --build  the cross build directory (default build-arm, as scripts/test_aarch64.sh)
#
# Cross-builds the kernel library, disassembles each table's tiles of 8 rows x 1
# vector (decode) and 2 rows x 4 vectors (prefill) for every index width, cuts
# out the body of a tile's loop over the groups (the widest backward branch)
# and prints its instructions and llvm-mca's cycles per group (either tile:
# 8 dots of 128 columns = 1024 MACs). A group loop with a loop inside (GCC did
# not unroll one) is named and skipped: llvm-mca would run its body once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-arm
usage() {
  sed -n '9,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while (($#)); do
  case "$1" in
    --build) [[ $# -ge 2 ]] || usage; build=$2; shift 2 ;;
    *) echo "mca_neon: unknown argument '$1'" >&2; usage ;;
  esac
done
for tool in aarch64-linux-gnu-g++ aarch64-linux-gnu-objdump llvm-mca gawk ninja; do
  command -v "$tool" >/dev/null || {
    echo "mca_neon: $tool not found (apt-get install g++-aarch64-linux-gnu llvm gawk ninja-build)" >&2
    exit 1
  }
done
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCACT_WERROR=ON \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" -DCACT_KERNELS_ONLY=OFF -DCACT_ENGINE_ONLY=ON >/dev/null
cmake --build "$build" --target cact_kernels >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
objects=$build/libcact/CMakeFiles/cact_kernels.dir/src/kernels/arm
iterations=200
printf '%-13s %-12s %13s' table tile "instructions"
for cpu in cortex-a53 cortex-a55 cortex-a76; do printf ' %12s' "$cpu"; done
printf '   (per group of 1024 MACs; cycles by llvm-mca)\n'
for table in neon-dotprod neon; do
  if [[ $table == neon-dotprod ]]; then
    object=$objects/neon_dotprod.cpp.o dotprod=true cpus=(cortex-a55 cortex-a76)
  else
    object=$objects/neon.cpp.o dotprod=false cpus=(cortex-a53 cortex-a55 cortex-a76)
  fi
  aarch64-linux-gnu-objdump -d -C --no-show-raw-insn "$object" >"$work/all.s"
  for tile in "1 8, 1" "2 8, 1" "3 8, 1" "4 8, 1" "1 2, 4" "2 2, 4" "3 2, 4" "4 2, 4"; do
    bits=${tile%% *} shape=${tile#* }
    label="CQ$bits ${shape/, /x}"
    # The function's lines, then the body of its widest backward branch.
    gawk -v name="cq_tile<$dotprod, cact::kernels::(anonymous namespace)::neon::Unpack$bits, $shape>" '
      /^[0-9a-f]+ </ && index($0, name "(") { on = 1; next }
      on && /^$/ { exit }
      on { print }' "$work/all.s" >"$work/tile.s"
    gawk '
      function addr(s) { gsub(/[ :]/, "", s); return strtonum("0x" s) }
      { split($0, f, "\t"); at[NR] = addr(f[1]); text[NR] = f[2] "\t" f[3] }
      f[2] ~ /^b\.[a-z]+$/ || f[2] ~ /^(cbn?z|tbn?z)$/ {
        if (!match(f[3], /([0-9a-f]+) </, m)) next
        to = strtonum("0x" m[1])
        if (to < at[NR] && at[NR] - to > best) { best = at[NR] - to; from = to; last = NR }
      }
      END {
        for (i = 1; i < last; ++i) if (at[i] >= from) { t = text[i]; sub(/\s*\/\/.*/, "", t); print t }
      }' "$work/tile.s" >"$work/loop.s"
    [[ -s $work/loop.s ]] || { echo "mca_neon: no group loop found in the $table $label tile" >&2; exit 1; }
    # llvm-mca runs a body straight through: a loop inside it would be counted once.
    if grep -qE $'^(b\\.[a-z]+|cbn?z|tbn?z|b)\t' "$work/loop.s"; then
      printf '%-13s %-12s   (a loop inside the group loop: not modelled)\n' "$table" "$label"
      continue
    fi
    printf '%-13s %-12s %13d' "$table" "$label" $(($(wc -l <"$work/loop.s") + 1))
    for cpu in cortex-a53 cortex-a55 cortex-a76; do
      if [[ " ${cpus[*]} " == *" $cpu "* ]]; then
        cycles=$(llvm-mca -mtriple=aarch64 -mcpu="$cpu" -mattr=+dotprod -iterations=$iterations "$work/loop.s" 2>/dev/null |
          gawk -v n=$iterations '/^Total Cycles:/ { printf "%.0f", $3 / n }')
        printf ' %12s' "$cycles"
      else
        printf ' %12s' -
      fi
    done
    printf '\n'
  done
done
