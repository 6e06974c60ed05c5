#!/usr/bin/env bash
# Installs every Debian package the build, the tests and CI need. Idempotent;
# used by the README's commands and by .ci/run. Needs root (or sudo).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libcli11-dev libfmt-dev libxxhash-dev doctest-dev nlohmann-json3-dev
  libsentencepiece-dev sentencepiece
  libedit-dev python3
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
