#include "common/signals.h"

#include <unistd.h>
#include <atomic>
#include <csignal>
#include <cstring>

#include "cact/atomic_file.h"
#include "cact/mapped_file.h"

namespace cact::app {

namespace {

const char* tool_name = "cact";
// Several threads can fault on the same truncated mapping at once: the first
// reports and exits, the others wait for that.
std::atomic<bool> bus_error_reported{false};
static_assert(std::atomic<bool>::is_always_lock_free);

// Only async-signal-safe calls below: write(2), unlink(2) (through
// remove_pending_temporaries), pause(2), _exit(2), sigaction(2).

// Appends `text` to the line in `buf` (of `size` bytes, kept NUL-terminated).
void append(char* buf, size_t size, const char* text) {
  size_t at = std::strlen(buf);
  while (*text != '\0' && at + 1 < size) buf[at++] = *text++;
  buf[at] = '\0';
}

void on_termination(int sig) {
  remove_pending_temporaries();
  ::_exit(128 + sig);
}

void on_bus_error(int sig, siginfo_t* info, void*) {
  const char* path = info != nullptr ? mapped_path_at(info->si_addr) : nullptr;
  if (path == nullptr) {
    // Not a mapped input: the default action (a core dump) on return, when the
    // faulting access runs again.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    return;
  }
  if (bus_error_reported.exchange(true)) {
    for (;;) ::pause();
  }
  // One write(2) of the whole line, so that it cannot interleave.
  static char line[2048];
  line[0] = '\0';
  for (const char* part :
       {tool_name, ": ", path, ": file changed while in use (truncated or rewritten by another process); stopped\n"}) {
    append(line, sizeof line, part);
  }
  const ssize_t written = ::write(STDERR_FILENO, line, std::strlen(line));
  (void)written;  // nothing else to do when stderr is gone
  remove_pending_temporaries();
  ::_exit(1);
}

void catch_unless_ignored(int sig) {
  struct sigaction old {};
  ::sigaction(sig, nullptr, &old);
  if (old.sa_handler == SIG_IGN) return;
  struct sigaction sa {};
  sa.sa_handler = on_termination;
  sigemptyset(&sa.sa_mask);
  ::sigaction(sig, &sa, nullptr);
}

}  // namespace

void install_signal_handlers(const char* tool) {
  tool_name = tool;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) catch_unless_ignored(sig);
  struct sigaction bus {};
  bus.sa_sigaction = on_bus_error;
  bus.sa_flags = SA_SIGINFO;
  sigemptyset(&bus.sa_mask);
  ::sigaction(SIGBUS, &bus, nullptr);
}

}  // namespace cact::app
