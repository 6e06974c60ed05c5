#pragma once
// Output discipline of the tools: stdout carries the product, stderr the
// notes. Notes flush stdout first so `2>&1` keeps the order things happened
// in; a failed write to stdout (disk full, closed file) is an error, not a
// silent exit 0.
#include <string_view>

namespace cact::app {

// Write (and flush, so text streams) to stdout; false once stdout has failed.
bool write_out(std::string_view text);
// One line "tool: text" on stderr, after flushing stdout.
void note(const char* tool, std::string_view text);
// Throws cact::Error "cannot write to standard output: ..." when a write to
// stdout failed or fails now (flushes what is buffered).
void check_out();

// --quiet (every tool, run_tool.h): drops what is neither a result nor an
// error — "wrote ..." lines, notices, warnings, progress.
void set_quiet(bool quiet);
bool quiet();
// note() unless --quiet.
void info(const char* tool, std::string_view text);
// "wrote PATH: what" on stderr unless --quiet: the one form every tool uses
// for a file it wrote (results stay on stdout).
void wrote(std::string_view path, std::string_view what);

}  // namespace cact::app
