#!/usr/bin/env bash
# Installs the Debian packages that building cact, its tests and running the
# tools need. Idempotent; used by the README's commands. Needs root (or sudo).
# CI's extra tools (clang, sanitizer runtimes, valgrind, the aarch64 cross
# compiler and qemu, clang-format) are scripts/install_ci_deps.sh's, which names them here.
#   scripts/install_deps.sh [PACKAGE...]    default: the build and run packages
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libcli11-dev libfmt-dev libxxhash-dev doctest-dev nlohmann-json3-dev
  libsentencepiece-dev sentencepiece
  libedit-dev python3 libcpp-httplib-dev
)
[ $# -eq 0 ] || packages=("$@")
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
