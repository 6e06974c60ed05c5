#pragma once
// Run a built cact-* tool on a pseudo-terminal (forkpty), as a user at a
// terminal would: type keys, wait for text on the screen, wait for the exit.
// Every wait is bounded, and the destructor kills a child still running, so
// a test can never hang. Header-only: the support library's file list is
// fixed; link the suite with `util` (forkpty).
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/test_paths.h"

namespace cact::test {

inline std::string app_path(const std::string& tool) { return (binary_dir() / "apps" / tool).string(); }

class PtyApp {
 public:
  // `argv[0]`: the program's path (app_path("cact-run"), or /bin/sh to add
  // redirections); `env`: "NAME=value" entries set in the child on top of this environment.
  explicit PtyApp(std::vector<std::string> argv_s, const std::vector<std::string>& env = {}) {
    const std::string exe = argv_s.at(0);
    winsize ws{};
    ws.ws_row = 40;
    ws.ws_col = 200;  // wide: no line wrapping in what the tests look for
    pid_ = ::forkpty(&fd_, nullptr, nullptr, &ws);
    if (pid_ == 0) {
      for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> argv;
      for (std::string& a : argv_s) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(exe.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~PtyApp() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (fd_ >= 0) ::close(fd_);
  }
  PtyApp(const PtyApp&) = delete;
  PtyApp& operator=(const PtyApp&) = delete;

  bool started() const { return pid_ > 0 && fd_ >= 0; }
  void type(std::string_view keys) {
    while (!keys.empty()) {
      const ssize_t n = ::write(fd_, keys.data(), keys.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      keys.remove_prefix(size_t(n));
    }
  }
  // Everything the terminal showed so far (output and echo).
  const std::string& screen() const { return screen_; }
  size_t mark() const { return screen_.size(); }
  // Read until `text` appears at or after `from` (default: the start); false on timeout or exit.
  bool wait_for(std::string_view text, double seconds, size_t from = 0) {
    const auto end = deadline(seconds);
    while (screen_.find(text, from) == std::string::npos) {
      if (!read_some(end)) return screen_.find(text, from) != std::string::npos;
    }
    return true;
  }
  // Wait until the program has the terminal in a mode without signal keys
  // (ISIG off: a line editor reading keys); a Ctrl-C typed before that would
  // be a signal, not a key. The pty's modes are shared by both of its ends.
  bool wait_keys_mode(double seconds) {
    const auto end = deadline(seconds);
    while (std::chrono::steady_clock::now() < end) {
      termios t{};
      if (::tcgetattr(fd_, &t) == 0 && (t.c_lflag & ISIG) == 0) return true;
      ::usleep(1000);
    }
    return false;
  }
  // The exit code (128 + signal if killed), or -1 when it did not end in time.
  int wait_exit(double seconds) {
    const auto end = deadline(seconds);
    while (read_some(end)) {
    }
    while (!exited_ && std::chrono::steady_clock::now() < end) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      ::usleep(10000);
    }
    return exited_ ? code_ : -1;
  }

 private:
  static std::chrono::steady_clock::time_point deadline(double seconds) {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(seconds * 1000.0));
  }
  // One read within the deadline; false at the deadline or when the child closed the terminal.
  bool read_some(std::chrono::steady_clock::time_point end) {
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || fd_ < 0) return false;
      pollfd p{fd_, POLLIN, 0};
      const int r = ::poll(&p, 1, int(left.count()));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      char buf[4096];
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;  // EIO: the child side is closed
      screen_.append(buf, size_t(n));
      return true;
    }
  }
  pid_t pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
  int code_ = -1;
  std::string screen_;
};

}  // namespace cact::test
