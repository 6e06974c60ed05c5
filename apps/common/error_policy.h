#pragma once
// The error policy of every cact-* tool: run the work and turn any error into
// one line "tool: message" on stderr with exit code 1 (docs/RELIABILITY.md).
#include <functional>

namespace cact::app {
// Exit codes: 0 ok, 1 the input or the work failed (2, bad usage, is the flag parser's).
int run_guarded(const char* tool, const std::function<int()>& body);
}  // namespace cact::app
