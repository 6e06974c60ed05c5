#pragma once
// Token ids for the engine benchmarks: a fixed pseudo-random sequence per
// seed, so runs and builds feed the same prompts.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cact::bench {
// n ids in [4, vocab): the ids below 4 are the special tokens.
inline std::vector<int32_t> ids_for(uint32_t vocab, size_t n, uint32_t seed) {
  std::vector<int32_t> ids;
  uint32_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    ids.push_back(int32_t(4 + (x >> 8) % (vocab - 4)));
  }
  return ids;
}
}  // namespace cact::bench
