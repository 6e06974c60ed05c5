// bench_memory: single-thread read bandwidth of this machine at several working
// set sizes, the denominator of the decode roofline in docs/PERFORMANCE.md
// (decode streams every CQ weight byte once per token: ~15 MB for needle3).
//   bench_memory [--help]
// Prints GB/s for working sets from 1 MiB (L2) to 256 MiB (beyond the caches),
// best of 20 passes; the buffer is touched before timing.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

// Sum of 64-bit words with 8 independent accumulators: the adds are not the
// bottleneck, loads are (the compiler vectorises this to full-width loads).
uint64_t sum_words(const uint64_t* p, size_t n) {
  uint64_t acc[8] = {};
  for (size_t i = 0; i + 8 <= n; i += 8) {
    for (size_t k = 0; k < 8; ++k) acc[k] += p[i + k];
  }
  uint64_t s = 0;
  for (uint64_t a : acc) s += a;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    const bool help = std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h";
    std::fputs("usage: bench_memory  (single-thread read bandwidth by working-set size)\n", help ? stdout : stderr);
    return help ? 0 : 2;
  }
  uint64_t sink = 0;
  for (size_t mib : {1, 2, 4, 16, 36, 64, 256}) {
    const size_t words = (mib << 20) / sizeof(uint64_t);
    std::vector<uint64_t> buf(words, 1);
    double best = 1e30;
    for (int pass = 0; pass < 20; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      sink += sum_words(buf.data(), words);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("%4zu MiB: %6.1f GB/s\n", mib, double(mib << 20) / best / 1e9);
  }
  return sink == 0 ? 1 : 0;  // keeps the sums alive; never 0 (every word is 1)
}
