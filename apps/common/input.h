#pragma once
// Whole-file arguments of the tools: a path, or "-" for standard input.
#include <string>

namespace cact::app {

// The bytes of `path` ("-": all of stdin). Throws cact::Error "<what>: cannot
// read (reason)" naming the flag or command it came from.
std::string read_input(const std::string& path, const std::string& what);

}  // namespace cact::app
