#pragma once
// Data-parallel loops for the offline tools (synthesis, quantisation): split
// [0, count) into contiguous chunks, one per thread. Results must not depend
// on the thread count, so bodies write disjoint outputs.
#include <cstddef>
#include <functional>

namespace cact {

// 0 = the machine's hardware concurrency; always 1..256.
unsigned resolve_threads(unsigned requested);

// Runs body(begin, end) over contiguous chunks of [0, count) on up to
// `threads` threads (the calling thread is one of them; at least 4 items per
// thread). Exceptions are rethrown in the caller (the first one, by chunk order).
// When a thread cannot be created, its chunks run on the calling thread.
void parallel_for(size_t count, unsigned threads, const std::function<void(size_t begin, size_t end)>& body);

}  // namespace cact
