// The session pool's background task (ThreadPool::launch / join): it runs
// exactly once, join() waits for it, and jobs dispatched meanwhile complete
// whether or not a worker is busy with it.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "engine/pool.h"

using cact::engine::ThreadPool;

namespace {

// Squares of 0..n-1 by a pool job of n tasks.
std::vector<uint64_t> squares(ThreadPool& pool, uint32_t n) {
  std::vector<uint64_t> out(n, 0);
  pool.run(n, [&](uint32_t task, uint32_t) { out[task] = uint64_t(task) * task; });
  return out;
}

bool are_squares(const std::vector<uint64_t>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != uint64_t(i) * i) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("pool: join waits for the background task, which runs once") {
  for (uint32_t threads : {1u, 2u, 3u}) {
    CAPTURE(threads);
    ThreadPool pool(threads);
    for (int round = 0; round < 50; ++round) {
      std::atomic<int> runs{0};
      std::atomic<uint32_t> on{~0u};
      auto task = [&](uint32_t thread) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // still running when join() is called
        on.store(thread);
        runs.fetch_add(1);
      };
      pool.launch(task);
      pool.join();
      CHECK(runs.load() == 1);
      CHECK(on.load() < pool.size());
      pool.join();  // nothing launched: returns at once
      CHECK(runs.load() == 1);
    }
  }
}

TEST_CASE("pool: jobs run to the end while a worker is busy with the background task") {
  ThreadPool pool(2);
  for (int round = 0; round < 50; ++round) {
    std::atomic<bool> jobs_done{false};
    std::atomic<int> runs{0};
    // Holds whichever thread takes it until the jobs below are done: a worker
    // (the caller then runs every task) or the caller at join (jobs already done).
    auto task = [&](uint32_t) {
      while (!jobs_done.load()) std::this_thread::yield();
      runs.fetch_add(1);
    };
    pool.launch(task);
    for (uint32_t n : {1u, 2u, 7u, 64u}) CHECK(are_squares(squares(pool, n)));
    jobs_done.store(true);
    pool.join();
    CHECK(runs.load() == 1);
  }
}

TEST_CASE("pool: a second launch first joins the first") {
  ThreadPool pool(2);
  std::atomic<int> first{0}, second{0};
  auto a = [&](uint32_t) {
    std::this_thread::sleep_for(std::chrono::microseconds(500));
    first.fetch_add(1);
  };
  auto b = [&](uint32_t) { second.fetch_add(first.load() == 1 ? 1 : 100); };
  pool.launch(a);
  pool.launch(b);
  pool.join();
  CHECK(first.load() == 1);
  CHECK(second.load() == 1);
}
