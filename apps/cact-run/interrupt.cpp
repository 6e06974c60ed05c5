#include "interrupt.h"

#include <atomic>
#include <csignal>

namespace cact::run {

namespace {
std::atomic<bool> generating{false}, flag{false};
InterruptPolicy policy_in_effect = InterruptPolicy::batch;
static_assert(std::atomic<bool>::is_always_lock_free);

void die_of_sigint() {
  std::signal(SIGINT, SIG_DFL);
  std::raise(SIGINT);
}

void on_sigint(int) {
  const bool batch = policy_in_effect == InterruptPolicy::batch;
  if (!generating.load()) {
    if (batch) die_of_sigint();
    flag.store(true);
    return;
  }
  if (flag.exchange(true) && batch) die_of_sigint();
}
}  // namespace

void install_interrupt_handler(InterruptPolicy policy) {
  policy_in_effect = policy;
  struct sigaction old {};
  sigaction(SIGINT, nullptr, &old);
  if (old.sa_handler == SIG_IGN) return;  // started to ignore Ctrl-C (a background job, nohup): keep it so
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // a write to a slow pipe must not fail with EINTR
  sigaction(SIGINT, &sa, nullptr);
}

Generating::Generating() { generating.store(true); }
Generating::~Generating() { generating.store(false); }
bool interrupted() { return flag.load(); }
void clear_interrupt() { flag.store(false); }

}  // namespace cact::run
