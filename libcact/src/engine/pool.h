#pragma once
// A small fork-join pool for one Session: `threads - 1` workers plus the
// calling thread (fewer workers when the system refuses to create them).
// run(tasks, fn) calls fn(task, thread) for every task in [0, tasks) and
// returns when all are done; `thread` is in [0, size()) and names per-thread
// scratch. Which thread runs which task varies, so callers
// only split work whose per-element results do not depend on the split
// (row ranges of a matrix product, tokens of a chunk): results are identical
// for any thread count.
//
// Tasks have home threads: thread t first runs its own contiguous share of
// [0, tasks) in order, then takes what is left of the other shares from their
// ends. A chunk's per-token stages thus keep the same tokens on the same
// thread (token data stays in that core's cache from stage to stage), and a
// thread that is late or slow is helped by the others.
//
// Workers spin briefly between jobs (decoding issues one job per matrix, a few
// microseconds apart) and then sleep on the ticket. A worker that is not
// scheduled (a busy machine) delays nothing: the caller claims the tasks.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

namespace cact::engine {

class ThreadPool {
 public:
  explicit ThreadPool(uint32_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  uint32_t size() const { return uint32_t(workers_.size()) + 1; }

  template <typename F>
  void run(uint32_t tasks, F&& fn) {
    if (workers_.empty() || tasks <= 1) {
      for (uint32_t t = 0; t < tasks; ++t) fn(t, 0u);
      return;
    }
    using Fn = std::remove_reference_t<F>;  // (a const lambda too: its call operator is const)
    const Call call = [](void* ctx, uint32_t task, uint32_t thread) { (*static_cast<Fn*>(ctx))(task, thread); };
    for (uint32_t base = 0; base < tasks; base += kMaxTasks) {  // jobs of at most kMaxTasks tasks
      dispatch(base, std::min(tasks - base, kMaxTasks), call, const_cast<void*>(static_cast<const void*>(&fn)));
    }
  }

  // One background task: fn(thread) runs on an idle worker while the caller
  // goes on (jobs run meanwhile: the caller claims the busy worker's tasks);
  // join() returns when it is done, running it on the caller if no worker has
  // taken it. fn must outlive join(). Without workers it runs here, now.
  // Decoding uses it for work that does not depend on the hidden state, in
  // the worker's idle time while the caller runs the per-token float work.
  template <typename F>
  void launch(F& fn) {
    if (workers_.empty()) {
      fn(0u);
      return;
    }
    launch_call([](void* ctx, uint32_t, uint32_t thread) { (*static_cast<F*>(ctx))(thread); }, &fn);
  }
  void join();

  // 0 = the hardware concurrency (at least 1).
  static uint32_t resolve(uint32_t threads);

 private:
  static constexpr uint32_t kMaxTasks = 0xFFFF;  // a share's bounds are 16-bit
  using Call = void (*)(void*, uint32_t, uint32_t);
  void dispatch(uint32_t base, uint32_t tasks, Call call, void* ctx);
  // Runs tasks of job generation `gen`: the own share from its front, then the
  // other shares from their backs, until none is left or the job changed.
  void work(uint64_t gen, uint32_t thread);
  // Claims one task of share s of job `gen` (front or back); false if none is left.
  bool claim(uint32_t s, uint64_t gen, bool front, uint32_t& task);
  void worker(uint32_t thread);
  void launch_call(Call call, void* ctx);
  // Runs the background task if it is still waiting for a thread.
  bool take_background(uint32_t thread);

  std::vector<std::thread> workers_;
  // share_[s] = (job generation << 32) | (end << 16) | begin: the unclaimed
  // tasks [begin, end) of thread s's share. A task is claimed by a
  // compare-exchange on the whole word, so a worker that wakes late (its
  // generation is gone) can never claim a task of a newer job; the caller
  // waits only for claimed tasks (done_), never for a worker to wake up.
  // Before writing a new job the caller empties every share under the new
  // generation, so job fields read before a successful claim belong to the
  // claimed generation. ticket_ announces the generation to the workers.
  struct alignas(64) Share {
    std::atomic<uint64_t> word{0};
  };
  std::unique_ptr<Share[]> share_;
  std::atomic<uint64_t> ticket_{0};
  std::atomic<uint32_t> base_{0};
  std::atomic<Call> call_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  alignas(64) std::atomic<uint32_t> done_{0};
  std::atomic<bool> stop_{false};
  enum Background : uint32_t { kNone, kWaiting, kRunning, kDone };
  alignas(64) std::atomic<uint32_t> background_{kNone};
  std::atomic<Call> background_call_{nullptr};
  std::atomic<void*> background_ctx_{nullptr};
  uint64_t generation_ = 0;  // caller side
};

}  // namespace cact::engine
