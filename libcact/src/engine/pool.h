#pragma once
// A small fork-join pool for one Session: `threads - 1` workers plus the
// calling thread. run(tasks, fn) calls fn(task, thread) for every task in
// [0, tasks) and returns when all are done; `thread` is in [0, size()) and
// names per-thread scratch. Which thread runs which task varies, so callers
// only split work whose per-element results do not depend on the split
// (row ranges of a matrix product, tokens of a chunk): results are identical
// for any thread count.
//
// Workers spin briefly between jobs (decoding issues one job per matrix, a few
// microseconds apart) and then sleep on the ticket. A worker that is not
// scheduled (a busy machine) delays nothing: the caller claims the tasks.
#include <atomic>
#include <cstdint>
#include <thread>
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
    dispatch(tasks, [](void* ctx, uint32_t task, uint32_t thread) { (*static_cast<F*>(ctx))(task, thread); },
             static_cast<void*>(&fn));
  }

  // 0 = the hardware concurrency (at least 1).
  static uint32_t resolve(uint32_t threads);

 private:
  using Call = void (*)(void*, uint32_t, uint32_t);
  void dispatch(uint32_t tasks, Call call, void* ctx);
  // Claims and runs tasks of the job in `ticket` until none is left or the job changed.
  void work(uint64_t ticket, uint32_t thread);
  void worker(uint32_t thread);

  std::vector<std::thread> workers_;
  // ticket_ = (job generation << 32) | next task index. A task is claimed by a
  // compare-exchange on the whole ticket, so a worker that wakes late (its
  // generation is gone) can never claim a task of a newer job; the caller
  // waits only for claimed tasks (done_), never for a worker to wake up.
  // Before writing a new job the caller closes the ticket (index ~0), so job
  // fields read before a successful claim belong to the claimed generation.
  std::atomic<uint64_t> ticket_{0};
  std::atomic<uint32_t> tasks_{0};
  std::atomic<Call> call_{nullptr};
  std::atomic<void*> ctx_{nullptr};
  std::atomic<uint32_t> done_{0};
  std::atomic<bool> stop_{false};
  uint64_t generation_ = 0;  // caller side
};

}  // namespace cact::engine
