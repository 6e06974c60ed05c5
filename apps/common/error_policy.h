#pragma once
// The error policy of every cact-* tool: run the work and turn any error into
// one line "tool: message" on stderr with a non-zero exit (docs/RELIABILITY.md).
#include <functional>
#include <stdexcept>

namespace cact::app {

// A usage error found after parsing (a flag combination, an out-of-range
// value): exit 2 like the parser's own errors.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
[[noreturn]] void usage_error(const std::string& message);

// Exit codes: 0 ok, 1 the input or the work failed (also: stdout could not be
// written), 2 bad usage (UsageError, or the flag parser's).
int run_guarded(const char* tool, const std::function<int()>& body);

}  // namespace cact::app
