#pragma once
// "Did you mean ...?" for a mistyped flag, subcommand or command: the nearest
// known name by edit distance. CLI11 only says an argument was not expected.
#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace cact::app {

// The candidate nearest to `word` (optimal string alignment distance, i.e.
// Levenshtein plus swapped neighbours), or "" when none is close: within
// max(2, |word| / 3) edits, or `word` is a prefix of it (3+ characters).
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

// After a failed parse: the first argument of argv that names no option (or
// no subcommand) of `cli`, as "unknown option --x (did you mean --y?)";
// "" when every name is known (the error is about something else).
std::string unknown_name_hint(CLI::App& cli, int argc, const char* const* argv);

}  // namespace cact::app
