#pragma once
// Run a shell command line (pipes, redirections such as >/dev/full or 2>&1)
// and capture its stdout and stderr: what run_app cannot express.
// Header-only: the support library's file list is fixed.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "support/run_app.h"
#include "support/test_paths.h"

namespace cact::test {

// `script` is run by /bin/sh with stdin from /dev/null unless it redirects it.
inline AppRun run_shell(const std::string& script) {
  static std::atomic<int> counter{0};
  const auto dir = binary_dir() / "scratch";
  std::filesystem::create_directories(dir);
  const std::string tag = std::to_string(::getpid()) + "-sh-" + std::to_string(counter++);
  const auto out = dir / ("out-" + tag), err = dir / ("err-" + tag);
  std::string cmd = "( ";
  cmd.append(script).append(" ) </dev/null >").append(shell_quote(out.string()));
  cmd.append(" 2>").append(shell_quote(err.string()));
  const int status = std::system(("/bin/sh -c " + shell_quote(cmd)).c_str());
  AppRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.signaled = r.code > 128;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

}  // namespace cact::test
