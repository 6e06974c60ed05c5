#!/usr/bin/env bash
# Checks that the C and C++ sources follow .clang-format (CONTRIBUTING.md "Style"): prints
# each file clang-format would change and exits 1 if there is any. Changes nothing;
# `clang-format -i FILE` applies the style to a file.
#
#   scripts/check_format.sh [-v]      -v: also clang-format's diagnostics for each file
# Environment: CLANG_FORMAT (default clang-format; scripts/install_ci_deps.sh installs it).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
clang_format="${CLANG_FORMAT:-clang-format}"
verbose=0
[[ ${1:-} == -v ]] && verbose=1

if ! command -v "$clang_format" >/dev/null; then
  echo "check_format: $clang_format not found (scripts/install_ci_deps.sh installs it)" >&2
  exit 2
fi

cd "$root"
# Tracked files only: build directories and generated sources are not ours to format.
mapfile -t files < <(git ls-files -- {libcact,apps,tests,bench,fuzz,examples}/'*.'{c,h,cpp,hpp,cc})
differ=0
for file in "${files[@]}"; do
  if ! report=$("$clang_format" --dry-run --Werror --style=file "$file" 2>&1); then
    echo "$file"
    ((verbose)) && printf '%s\n' "$report"
    differ=$((differ + 1))
  fi
done
if ((differ > 0)); then
  echo "check_format: $differ of ${#files[@]} files differ from .clang-format" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files follow .clang-format"
