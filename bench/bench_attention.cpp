// Attention benchmark: one decode token's int8 attention in needle3's shape
// (2 KV heads of 6 query heads each, dq 48, dv 64) over a pinned prefix and a
// full window, as a chat session's decode step attends over its tool list in
// every layer. Random K, V and queries; the cache is written once, then the
// token attends over every stored position of both KV heads.
//
//   bench_attention [--sinks N] [--window N] [--min-time SECONDS] [--once]
//     --sinks     pinned positions (default 514: bench_chat's system + tool-list prefix)
//     --window    positions of the sliding window (default 256: needle3's kv_window)
//     --min-time  per round (default 0.25)
//     --once      one token's attention (both KV heads) between count_marker()
//                 calls and no timing: for instruction counts under an emulator
//                 (bench/count_neon.sh --attention)
//
// Prints microseconds per token and layer (thread CPU time, best of 5 rounds)
// and nanoseconds per visible position, on the engine's widest float build.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "count_marker.h"
#include "engine/kv_cache.h"
#include "thread_seconds.h"

namespace {

using cact::bench::thread_seconds;
using cact::engine::AttendScratch;
using cact::engine::KvCache;
using cact::engine::KvFormat;
using cact::engine::PosRange;

constexpr uint32_t kKvHeads = 2, kGroup = 6, kDq = 48, kDv = 64;

struct Bench {
  KvCache cache;
  AttendScratch scratch;
  std::vector<float> q, out;
  PosRange visible;
  volatile float sink = 0.0f;

  Bench(uint32_t sinks, uint32_t window) : q(kGroup * kDq), out(kGroup * kDv) {
    cache.init(KvFormat::int8, kKvHeads, kDq, kDv, sinks, window, 8, {}, nullptr);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal;
    std::vector<float> k(kKvHeads * kDq), v(kKvHeads * kDv);
    const uint32_t positions = sinks + window;
    for (uint32_t p = 0; p < positions; ++p) {
      for (float& x : k) x = normal(rng);
      for (float& x : v) x = normal(rng);
      cache.write(p, k.data(), v.data());
    }
    for (float& x : q) x = normal(rng);
    scratch.reserve(cache.rows(), kDq, kDv);
    visible = {0, positions - 1};
  }
  // One token of one layer: each KV head's group of query heads.
  void token() {
    for (uint32_t kv = 0; kv < kKvHeads; ++kv) {
      cache.attend_group(q.data(), kGroup, kv, {&visible, 1}, out.data(), scratch);
      sink = sink + out[0];
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  uint32_t sinks = 514, window = 256;
  double min_time = 0.25;
  bool once = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sinks") == 0 && i + 1 < argc) {
      sinks = uint32_t(std::strtoul(argv[++i], nullptr, 10));
    } else if (std::strcmp(argv[i], "--window") == 0 && i + 1 < argc) {
      window = uint32_t(std::strtoul(argv[++i], nullptr, 10));
    } else if (std::strcmp(argv[i], "--min-time") == 0 && i + 1 < argc) {
      min_time = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--once") == 0) {
      once = true;
    } else {
      std::fprintf(stderr, "usage: bench_attention [--sinks N] [--window N] [--min-time SECONDS] [--once]\n");
      return 2;
    }
  }
  if (window == 0 || sinks + window > 65536) {
    std::fprintf(stderr, "bench_attention: --window must be 1 or more and --sinks + --window at most 65536\n");
    return 2;
  }
  Bench b(sinks, window);
  const uint32_t positions = sinks + window;
  if (once) {
    std::printf("attention of one token over %u positions\n", positions);
    std::fflush(stdout);
    cact::bench::count_marker("begin");
    b.token();
    cact::bench::count_marker("end");
    return 0;
  }
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    uint64_t calls = 0;
    const double t0 = thread_seconds();
    double elapsed = 0.0;
    do {
      b.token();
      ++calls;
      elapsed = thread_seconds() - t0;
    } while (elapsed < min_time);
    best = std::min(best, elapsed / double(calls));
  }
  std::printf(
      "int8 attention, %u KV heads x %u query heads, dq %u, dv %u: one token over %u positions "
      "(%u pinned + %u window)\n",
      kKvHeads, kGroup, kDq, kDv, positions, sinks, window);
  std::printf("  %.2f us per token and layer, %.2f ns per position (thread CPU time, best of 5 rounds)\n", best * 1e6,
              best * 1e9 / positions);
}
