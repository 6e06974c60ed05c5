// Contiguous-chunk parallel loops (see cact/parallel.h).
#include "cact/parallel.h"

#include <algorithm>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace cact {

unsigned resolve_threads(unsigned requested) {
  constexpr unsigned kMaxThreads = 256;  // a typo like --threads 100000 must not spawn that many
  if (requested > 0) return std::min(requested, kMaxThreads);
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? std::min(hw, kMaxThreads) : 1;
}

void parallel_for(size_t count, unsigned threads, const std::function<void(size_t, size_t)>& body) {
  if (count == 0) return;
  // At least a few items per thread: starting a thread costs more than a row.
  constexpr size_t kMinPerWorker = 4;
  const size_t workers = std::min<size_t>(std::max(1u, threads), (count + kMinPerWorker - 1) / kMinPerWorker);
  if (workers == 1) {
    body(0, count);
    return;
  }
  std::vector<std::exception_ptr> errors(workers);
  auto run = [&](size_t w) {
    const size_t begin = count * w / workers, end = count * (w + 1) / workers;
    try {
      body(begin, end);
    } catch (...) {
      errors[w] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  size_t started = 1;
  try {
    for (; started < workers; ++started) pool.emplace_back(run, started);
  } catch (const std::system_error&) {
    // No more threads (a process limit, no memory for a stack): the chunks
    // not started run here; the result is the same, only slower.
  }
  run(0);
  for (size_t w = started; w < workers; ++w) run(w);
  for (auto& t : pool) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace cact
