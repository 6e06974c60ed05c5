#!/bin/sh
# expect_output.sh EXPECTED COMMAND [ARG...]: run COMMAND; pass when it exits 0
# and its stdout is EXPECTED (trailing newlines aside). For the examples' tests.
expected=$1
shift
out=$("$@")
code=$?
if [ "$code" -ne 0 ]; then
  echo "expect_output: $1 exited with $code" >&2
  exit 1
fi
if [ "$out" != "$expected" ]; then
  printf 'expect_output: %s printed\n%s\ninstead of\n%s\n' "$1" "$out" "$expected" >&2
  exit 1
fi
