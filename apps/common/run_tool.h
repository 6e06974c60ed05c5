#pragma once
// Shared shell of every cact-* tool: parse flags with CLI11, run, and turn any
// error into one line "tool: message" on stderr with a non-zero exit.
#include <CLI/CLI.hpp>
#include <functional>

namespace cact::app {
// Adds the flags every tool has: --version (version.h) and -q/--quiet
// (output.h; on each subcommand too, unless the tool declares its own).
// Exit codes: 0 ok, 1 the input or the work failed (run_guarded), 2 bad usage
// (CLI11's errors, with "did you mean" for a mistyped name; UsageError).
int run_tool(const char* tool, CLI::App& cli, int argc, char** argv, const std::function<int()>& body);
}  // namespace cact::app
