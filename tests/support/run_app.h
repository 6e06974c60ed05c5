#pragma once
// Run a built cact-* tool as a user would (through /bin/sh), capturing exit
// status, stdout and stderr. Shared by every tests/tools suite.
#include <filesystem>
#include <string>
#include <vector>

namespace cact::test {

struct AppRun {
  int code = -1;  // exit code, or 128 + signal
  bool signaled = false;
  std::string out, err;
  size_t err_lines() const;
};

// Single-quote for /bin/sh.
std::string shell_quote(const std::string& s);
std::string slurp(const std::filesystem::path& p);

// `tool` is an app name ("cact-inspect"); args are quoted here. `cwd` empty =
// current directory. `prefix` is raw shell run first (e.g. "ulimit -f 10; ").
AppRun run_app(const std::string& tool, const std::vector<std::string>& args, const std::filesystem::path& cwd = {},
               const std::string& prefix = "");

// A shell command line (pipes, redirections such as >/dev/full or 2>&1) run by
// /bin/sh with stdin from /dev/null unless it redirects its own.
AppRun run_shell(const std::string& script);

// Whether uid/gid 65534, which root-run tests drop to where root would ignore a
// limit or a permission, can execute the built tools and read or enter every
// path in `paths` (a checkout under a private directory cannot be reached).
bool nobody_can_reach(const std::vector<std::filesystem::path>& paths);

}  // namespace cact::test
