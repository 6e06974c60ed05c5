#include "support/run_app.h"

#include <grp.h>
#include <sys/wait.h>

#include <unistd.h>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support/test_paths.h"

namespace cact::test {

size_t AppRun::err_lines() const {
  size_t n = 0;
  for (char c : err) n += c == '\n';
  return n;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q.append("'\\''");
    } else {
      q.push_back(c);
    }
  }
  q.push_back('\'');
  return q;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

namespace {

// `cmd` run by /bin/sh with stdin from /dev/null (unless it redirects its own)
// and its stdout and stderr captured through scratch files.
AppRun run_captured(const std::string& cmd) {
  static std::atomic<int> counter{0};
  const auto dir = binary_dir() / "scratch";
  std::filesystem::create_directories(dir);
  std::string tag = std::to_string(::getpid());
  tag.push_back('-');
  tag.append(std::to_string(counter++));
  const auto out = dir / ("out-" + tag), err = dir / ("err-" + tag);
  // Built with append: GCC 12 misreports -Wrestrict on chained string operator+.
  std::string line = cmd;
  line.append(" </dev/null >").append(shell_quote(out.string())).append(" 2>").append(shell_quote(err.string()));
  const std::string shell = std::string("/bin/sh -c ").append(shell_quote(line));
  const int status = std::system(shell.c_str());
  AppRun r;
  if (WIFEXITED(status)) {
    r.code = WEXITSTATUS(status);
    // /bin/sh reports a signal-killed child as 128 + signal.
    r.signaled = r.code > 128;
  } else {
    r.signaled = true;
    r.code = 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

}  // namespace

AppRun run_app(const std::string& tool, const std::vector<std::string>& args, const std::filesystem::path& cwd,
               const std::string& prefix) {
  std::string cmd = prefix;
  if (!cwd.empty()) cmd.append("cd ").append(shell_quote(cwd.string())).append(" && ");
  cmd.append("exec ").append(shell_quote((binary_dir() / "apps" / tool).string()));
  for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
  return run_captured(cmd);
}

AppRun run_shell(const std::string& script) { return run_captured("( " + script + " )"); }

bool nobody_can_reach(const std::vector<std::filesystem::path>& paths) {
  const std::string tools = (binary_dir() / "apps").string();
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(1);
    if (::access(tools.c_str(), X_OK) != 0) ::_exit(1);
    for (const auto& p : paths) {
      if (::access(p.c_str(), R_OK) != 0) ::_exit(1);
    }
    ::_exit(0);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace cact::test
