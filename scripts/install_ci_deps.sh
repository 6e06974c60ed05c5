#!/usr/bin/env bash
# Installs what CI (.ci/run) needs beyond scripts/install_deps.sh: clang and its
# sanitizer/libFuzzer runtime (fuzzing, TSan), valgrind, and the aarch64 cross
# compiler with qemu-user (the NEON build). Users building cact never need
# these. Idempotent; needs root (or sudo).
set -euo pipefail
packages=(
  clang libclang-rt-14-dev valgrind
  g++-aarch64-linux-gnu qemu-user
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
