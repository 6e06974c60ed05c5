#!/usr/bin/env bash
# install_test.sh CMAKE BUILD_DIR SOURCE_DIR CC CXX
# Installs BUILD_DIR to a temporary prefix, then, as an app would: configures
# and builds examples/c as a project of its own with find_package(cact) (the
# shared and the static library), builds chat.c with `pkg-config --cflags
# --libs cact`, and runs all three and the installed cact-run on the
# installed model. Fails on the first difference.
set -euo pipefail
cmake=$1 build=$2 src=$3 cc=$4 cxx=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
share=$prefix/share/cact
for f in include/cact/cact.h include/cact/engine.h share/cact/tools-tiny.cact share/cact/tools.json; do
  [[ -f $prefix/$f ]] || { echo "install_test: $f was not installed" >&2; exit 1; }
done
[[ ! -e $prefix/include/cact/spm_import.h ]] || { echo "install_test: spm_import.h installed" >&2; exit 1; }

request=(set\ a\ timer\ for\ 10\ minutes)
expected='set_timer {"minutes":10}'
expect() {  # what, command...
  local what=$1 out
  shift
  out=$("$@" "$share/tools-tiny.cact" "$share/tools.json" "${request[@]}")
  if [[ $out != "$expected" ]]; then
    printf 'install_test: %s printed\n%s\ninstead of\n%s\n' "$what" "$out" "$expected" >&2
    exit 1
  fi
  echo "ok   $what"
}

# find_package(cact CONFIG), warnings as errors as a strict consumer would have them.
"$cmake" -S "$src/examples/c" -B "$work/cmake-consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="-Wall -Wextra -pedantic -Werror" >"$work/configure.log"
"$cmake" --build "$work/cmake-consumer" >"$work/build.log"
expect "find_package(cact): chat (libcact.so)" "$work/cmake-consumer/chat"
expect "find_package(cact): chat-static (libcact.a)" "$work/cmake-consumer/chat-static"
if ldd "$work/cmake-consumer/chat-static" | grep -q libcact; then
  echo "install_test: chat-static loads libcact.so" >&2
  exit 1
fi

# pkg-config, the C99 way.
pc_dir=$(dirname "$(find "$prefix" -name cact.pc | head -1)")
flags=$(PKG_CONFIG_PATH=$pc_dir pkg-config --cflags --libs cact)
# shellcheck disable=SC2086  # flags are words
"$cc" -std=c99 -Wall -Wextra -pedantic -Werror -o "$work/chat-pc" "$src/examples/c/chat.c" $flags
libdir=$(PKG_CONFIG_PATH=$pc_dir pkg-config --variable=libdir cact)
expect "pkg-config cact: chat" env LD_LIBRARY_PATH="$libdir" "$work/chat-pc"

# The installed cact-run finds its bundled model and tools in ../share/cact.
if [[ -x $prefix/bin/cact-run ]]; then
  out=$("$prefix/bin/cact-run" --chat -q --json -p "${request[@]}")
  if [[ $out != *'"name":"set_timer"'* ]]; then
    printf 'install_test: the installed cact-run printed\n%s\n' "$out" >&2
    exit 1
  fi
  echo "ok   installed cact-run with its bundled model"
fi
