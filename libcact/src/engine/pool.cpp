#include "engine/pool.h"

#include <system_error>

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
// Spins, then yields, until done() (the caller waiting for another thread).
template <typename Done>
void wait_until(Done done) {
  for (int spins = 0; !done();) {
    if (++spins < kCallerSpins) {
      relax();
    } else {
      std::this_thread::yield();
    }
  }
}
// The low 32 bits of a generation (the words keep those; generations wrap).
inline uint32_t gen_of(uint64_t word) { return uint32_t(word >> 32); }
inline uint32_t begin_of(uint64_t word) { return uint32_t(word & 0xFFFF); }
inline uint32_t end_of(uint64_t word) { return uint32_t((word >> 16) & 0xFFFF); }
inline uint64_t share_word(uint64_t gen, uint32_t begin, uint32_t end) {
  return (gen << 32) | (uint64_t(end) << 16) | begin;
}
}  // namespace

uint32_t ThreadPool::resolve(uint32_t threads) {
  if (threads != 0) return threads;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1u : hw;
}

ThreadPool::ThreadPool(uint32_t threads) {
  const uint32_t n = resolve(threads);
  share_ = std::make_unique<Share[]>(n);
  workers_.reserve(n - 1);
  try {
    for (uint32_t t = 1; t < n; ++t) workers_.emplace_back([this, t] { worker(t); });
  } catch (const std::system_error&) {
    // No more threads (a process limit, no memory for a stack): the pool runs
    // with those it has; size() tells the session how many that is.
  }
}

ThreadPool::~ThreadPool() {
  join();
  stop_.store(true);
  ticket_.store(generation_ + 1);
  ticket_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool ThreadPool::claim(uint32_t s, uint64_t gen, bool front, uint32_t& task) {
  std::atomic<uint64_t>& word = share_[s].word;
  uint64_t w = word.load();
  for (;;) {
    const uint32_t b = begin_of(w), e = end_of(w);
    if (gen_of(w) != uint32_t(gen) || b >= e) return false;
    const uint64_t next = front ? share_word(gen, b + 1, e) : share_word(gen, b, e - 1);
    if (word.compare_exchange_weak(w, next)) {
      task = front ? b : e - 1;
      return true;
    }
  }
}

void ThreadPool::work(uint64_t gen, uint32_t thread) {
  const uint32_t base = base_.load();
  const Call call = call_.load();
  void* const ctx = ctx_.load();
  const uint32_t n = size();
  uint32_t task = 0;
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t s = (thread + k) % n;
    while (claim(s, gen, k == 0, task)) {
      call(ctx, base + task, thread);
      done_.fetch_add(1);
    }
    if (gen_of(share_[s].word.load()) != uint32_t(gen)) return;  // the job is over
  }
}

void ThreadPool::dispatch(uint32_t base, uint32_t tasks, Call call, void* ctx) {
  const uint64_t gen = ++generation_;
  const uint32_t n = size();
  // Release stores, not sequentially consistent ones: on x86 each of those is
  // a locked exchange that waits for its line to come back from the worker's
  // cache, one after another. The workers read the job's fields only after
  // acquiring the ticket or a share word stored below them.
  constexpr auto relaxed = std::memory_order_relaxed;
  for (uint32_t s = 0; s < n; ++s) share_[s].word.store(share_word(gen, 0, 0), relaxed);
  base_.store(base, relaxed);
  call_.store(call, relaxed);
  ctx_.store(ctx, relaxed);
  done_.store(0, relaxed);
  for (uint32_t s = 0; s < n; ++s) {
    const uint32_t begin = uint32_t(uint64_t(tasks) * s / n), end = uint32_t(uint64_t(tasks) * (s + 1) / n);
    share_[s].word.store(share_word(gen, begin, end), std::memory_order_release);
  }
  ticket_.store(gen, std::memory_order_release);
  ticket_.notify_all();
  work(gen, 0);
  wait_until([&] { return done_.load() == tasks; });
}

void ThreadPool::launch_call(Call call, void* ctx) {
  join();  // one background task at a time
  background_call_.store(call, std::memory_order_relaxed);
  background_ctx_.store(ctx, std::memory_order_relaxed);
  background_.store(kWaiting, std::memory_order_release);
  // A ticket of its own wakes a sleeping worker; its generation has no tasks
  // (the shares keep an older one), so work() returns at once.
  ticket_.store(++generation_, std::memory_order_release);
  ticket_.notify_all();
}

bool ThreadPool::take_background(uint32_t thread) {
  uint32_t waiting = kWaiting;
  if (background_.load(std::memory_order_relaxed) != kWaiting ||
      !background_.compare_exchange_strong(waiting, kRunning, std::memory_order_acquire)) {
    return false;
  }
  background_call_.load(std::memory_order_relaxed)(background_ctx_.load(std::memory_order_relaxed), 0, thread);
  background_.store(kDone, std::memory_order_release);
  return true;
}

void ThreadPool::join() {
  if (background_.load(std::memory_order_relaxed) == kNone) return;
  if (!take_background(0)) wait_until([&] { return background_.load(std::memory_order_acquire) == kDone; });
  background_.store(kNone, std::memory_order_relaxed);
}

void ThreadPool::worker(uint32_t thread) {
  uint64_t seen = 0;  // generation last served
  for (;;) {
    int spins = 0;
    uint64_t t = ticket_.load();
    while (t == seen) {
      if (stop_.load()) return;
      if (++spins < kWorkerSpins) {
        relax();
      } else {
        ticket_.wait(t);
      }
      t = ticket_.load();
    }
    if (stop_.load()) return;
    seen = t;
    work(t, thread);
    take_background(thread);
  }
}

}  // namespace cact::engine
