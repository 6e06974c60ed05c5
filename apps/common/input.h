#pragma once
// Whole-file arguments of the tools: a path, or "-" for standard input. A path
// must name a regular file (a FIFO would block, /dev/zero never ends; "-" is
// the way to pipe), and every input is bounded in size.
#include <cstddef>
#include <istream>
#include <string>

namespace cact::app {

// Bound of an input read whole when its reader has no tighter one (prompts,
// files given with -f): far above any real prompt, far below memory.
inline constexpr size_t kMaxInputBytes = size_t(64) << 20;

// The bytes of `path` ("-": all of stdin), at most `max_bytes`. Throws
// cact::Error "<what>: <reason>" naming the flag or command it came from.
std::string read_input(const std::string& path, const std::string& what, size_t max_bytes = kMaxInputBytes);

// The next line of `in` without its '\n'; false at the end of input. Bytes
// past `limit` are read but not kept (`too_long` is set): one endless line (a
// stream with no newline) must not take all memory before it can be refused.
bool read_line(std::istream& in, std::string& line, size_t limit, bool& too_long);

}  // namespace cact::app
