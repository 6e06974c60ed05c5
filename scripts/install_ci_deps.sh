#!/usr/bin/env bash
# Installs what CI (.ci/run) needs beyond scripts/install_deps.sh: clang and its
# sanitizer/libFuzzer runtime (fuzzing, TSan), valgrind, the aarch64 cross
# compiler with qemu-user (the NEON build) and clang-format
# (scripts/check_format.sh). Users building cact never need these.
# Idempotent; needs root (or sudo).
set -euo pipefail
exec "$(dirname "$0")/install_deps.sh" clang libclang-rt-14-dev valgrind g++-aarch64-linux-gnu qemu-user clang-format
