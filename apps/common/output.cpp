#include "common/output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "cact/error.h"

namespace cact::app {

namespace {
int first_errno = 0;  // of the first failed write, for the message
bool quiet_mode = false;

bool remember(bool ok) {
  if (!ok && first_errno == 0) first_errno = errno != 0 ? errno : EIO;
  return ok;
}
}  // namespace

bool write_out(std::string_view text) {
  if (std::ferror(stdout)) return false;
  errno = 0;
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) return remember(false);
  return remember(std::fflush(stdout) == 0);
}

void note(const char* tool, std::string_view text) {
  errno = 0;
  remember(std::fflush(stdout) == 0);
  std::fprintf(stderr, "%s: %.*s\n", tool, int(text.size()), text.data());
}

void check_out() {
  errno = 0;
  remember(std::fflush(stdout) == 0);
  if (std::ferror(stdout))
    fail(std::string("cannot write to standard output: ") + std::strerror(first_errno != 0 ? first_errno : EIO));
}

void set_quiet(bool quiet) { quiet_mode = quiet; }
bool quiet() { return quiet_mode; }

void info(const char* tool, std::string_view text) {
  if (!quiet_mode) note(tool, text);
}

void wrote(std::string_view path, std::string_view what) {
  if (quiet_mode) return;
  errno = 0;
  remember(std::fflush(stdout) == 0);
  std::fprintf(stderr, "wrote %.*s: %.*s\n", int(path.size()), path.data(), int(what.size()), what.data());
}

}  // namespace cact::app
