#include "engine/pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace cact::engine {

namespace {
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
constexpr int kWorkerSpins = 4096;  // pauses before a worker sleeps
constexpr int kCallerSpins = 256;   // pauses before the caller yields while a claimed task runs
constexpr uint64_t kClosed = 0xFFFFFFFFull;
inline uint64_t gen_of(uint64_t ticket) { return ticket >> 32; }
}  // namespace

uint32_t ThreadPool::resolve(uint32_t threads) {
  if (threads != 0) return threads;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1u : hw;
}

ThreadPool::ThreadPool(uint32_t threads) {
  const uint32_t n = resolve(threads);
  ticket_.store(kClosed);
  workers_.reserve(n - 1);
  for (uint32_t t = 1; t < n; ++t) workers_.emplace_back([this, t] { worker(t); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  ticket_.store(((generation_ + 1) << 32) | kClosed);
  ticket_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::work(uint64_t ticket, uint32_t thread) {
  const uint64_t gen = gen_of(ticket);
  const uint32_t tasks = tasks_.load();
  const Call call = call_.load();
  void* const ctx = ctx_.load();
  for (;;) {
    if (gen_of(ticket) != gen || (ticket & kClosed) >= tasks) return;
    if (ticket_.compare_exchange_weak(ticket, ticket + 1)) {
      call(ctx, uint32_t(ticket & kClosed), thread);
      done_.fetch_add(1);
      ++ticket;
    }
  }
}

void ThreadPool::dispatch(uint32_t tasks, Call call, void* ctx) {
  const uint64_t gen = ++generation_;
  ticket_.store((gen << 32) | kClosed);
  tasks_.store(tasks);
  call_.store(call);
  ctx_.store(ctx);
  done_.store(0);
  ticket_.store(gen << 32);
  ticket_.notify_all();
  work(gen << 32, 0);
  int spins = 0;
  while (done_.load() != tasks) {
    if (++spins < kCallerSpins) {
      relax();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::worker(uint32_t thread) {
  uint64_t seen = 0;  // generation last served
  for (;;) {
    int spins = 0;
    uint64_t t = ticket_.load();
    while (gen_of(t) == seen || (t & kClosed) == kClosed) {
      if (stop_.load()) return;
      if (++spins < kWorkerSpins) {
        relax();
      } else {
        ticket_.wait(t);
      }
      t = ticket_.load();
    }
    if (stop_.load()) return;
    seen = gen_of(t);
    work(t, thread);
  }
}

}  // namespace cact::engine
