// A decode step allocates nothing (int8 and float paths): every buffer is sized when the
// Session is made. Counted with a replacement global operator new.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "cact/engine.h"
#include "cact/sampler.h"
#include "support/test_paths.h"

namespace {
std::atomic<long> g_allocations{0};
}

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

TEST_CASE("decoding allocates nothing per token (prefill chunks neither), both numerics") {
  const auto model = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  for (uint32_t kv_window : {0u, 20u}) {
    for (cact::Numerics num : {cact::Numerics::int8, cact::Numerics::reference}) {
      cact::Engine engine(model, {num, nullptr});
      cact::Session s(engine, {.context = 200, .sinks = 4, .kv_window = kv_window, .max_chunk = 8});
      cact::Sampler sampler({.temperature = 0.7f, .top_k = 20, .seed = 1});
      const std::vector<int32_t> prompt{2, 344, 367, 666, 341, 938, 959, 957, 908, 962, 552, 286, 488, 844, 962, 299};
      std::span<const float> logits = s.prefill(prompt);
      int32_t next = sampler.sample(logits);  // warms the sampler's scratch
      logits = s.step(next);
      const long before = g_allocations.load();
      s.prefill(prompt);  // two chunks of 8
      for (int i = 0; i < 40; ++i) {
        next = sampler.sample(logits);
        logits = s.step(next);
      }
      CHECK(g_allocations.load() == before);
    }
  }
}
