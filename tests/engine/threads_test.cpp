// Threads: results do not depend on the session's thread count (row-split
// products, token-parallel per-token work), and two sessions of one Engine
// run concurrently from two threads (the Engine is read-only). Also the
// suite's TSan coverage (scripts/tsan.sh): multithreaded prefill and decode.
#include <doctest/doctest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "cact/engine.h"
#include "support/test_paths.h"

namespace {

std::vector<int32_t> ids_for(const cact::Engine& engine, size_t n, uint32_t seed) {
  std::vector<int32_t> ids;
  uint32_t x = seed;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    ids.push_back(int32_t((x >> 8) % engine.output_rows()));
  }
  return ids;
}

// Logits of every prompt position, then of 6 greedy steps.
std::vector<float> run(const cact::Engine& engine, const std::vector<int32_t>& ids, uint32_t threads,
                       uint32_t max_chunk) {
  cact::SessionOptions so;
  so.threads = threads;
  so.max_chunk = max_chunk;
  so.context = 256;
  cact::Session s(engine, so);
  std::vector<float> out = s.prefill_all(ids);
  std::span<const float> lg = s.logits();
  for (int i = 0; i < 6; ++i) {
    int32_t best = 0;
    for (size_t j = 1; j < lg.size(); ++j) {
      if (lg[j] > lg[size_t(best)]) best = int32_t(j);
    }
    lg = s.step(best);
    out.insert(out.end(), lg.begin(), lg.end());
  }
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("threads: logits are bit-identical for any thread count and chunking") {
  const cact::Model model = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  for (const cact::kernels::KernelTable* kt : {&cact::kernels::scalar_kernels(), &cact::kernels::best_kernels()}) {
    CAPTURE(kt->name);
    cact::EngineOptions eo;
    eo.kernels = kt;
    const cact::Engine engine(model, eo);
    const std::vector<int32_t> ids = ids_for(engine, 70, 7);
    const std::vector<float> one = run(engine, ids, 1, 32);
    CHECK(same_bits(one, run(engine, ids, 2, 32)));
    CHECK(same_bits(one, run(engine, ids, 3, 64)));
    CHECK(same_bits(one, run(engine, ids, 4, 7)));
  }
}

TEST_CASE("threads: two sessions of one Engine in two threads") {
  const cact::Model model = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  const cact::Engine engine(model);
  const std::vector<int32_t> a = ids_for(engine, 50, 1), b = ids_for(engine, 60, 2);
  const std::vector<float> want_a = run(engine, a, 1, 32), want_b = run(engine, b, 1, 32);
  std::vector<float> got_a, got_b;
  std::thread ta([&] { got_a = run(engine, a, 2, 16); });
  std::thread tb([&] { got_b = run(engine, b, 2, 32); });
  ta.join();
  tb.join();
  CHECK(same_bits(want_a, got_a));
  CHECK(same_bits(want_b, got_b));
}
