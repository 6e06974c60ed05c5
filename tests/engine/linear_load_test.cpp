// Linear::load with a prologue: in the int8 numerics the prologue writes into
// a per-thread scratch that is quantised block by block, never into a
// chunk-sized buffer. Whatever the width, the count and the threads, the
// prepared input must equal one quantisation of all the vectors at once, and
// the prologue must run once per vector.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cact/engine.h"
#include "cact/error.h"
#include "engine/linear.h"
#include "engine/pool.h"
#include "engine/weights.h"
#include "random_vector.h"
#include "support/test_paths.h"

using cact::engine::Linear;
using cact::engine::LinearInput;
using cact::engine::ThreadPool;
using cact::engine::weights_of;
using cact::test::random_vector;

namespace {

// Widths around the scratch's block (kStreamedFloats floats): many vectors
// per block, one, and one wider than the block; tails of a 128-group too.
constexpr uint32_t kWidths[] = {100, 768, 3072, 4096, 5000};

cact::Model license_tiny() { return cact::Model::open(cact::test::models_dir() / "license-tiny.cact"); }

cact::Engine engine_with(const cact::Model& model, cact::Numerics numerics) {
  cact::EngineOptions options;
  options.numerics = numerics;
  return cact::Engine(model, options);
}

// A prologue that writes vector v of x (vectors `in` floats wide).
auto copy_of(const std::vector<float>& x, uint32_t in) {
  return
      [&x, in](uint32_t v, uint32_t, float* dst) { std::memcpy(dst, x.data() + size_t(v) * in, in * sizeof(float)); };
}

}  // namespace

TEST_CASE("linear: a load with a prologue prepares what one load of the same floats does") {
  const cact::Model model = license_tiny();
  for (const cact::Numerics numerics : {cact::Numerics::int8, cact::Numerics::reference}) {
    CAPTURE(int(numerics));
    const cact::Engine engine = engine_with(model, numerics);
    for (const uint32_t threads : {1u, 2u, 3u}) {
      CAPTURE(threads);
      ThreadPool pool(threads);
      for (const uint32_t in : kWidths) {
        for (const uint32_t count : {1u, 7u, 48u}) {
          CAPTURE(in);
          CAPTURE(count);
          std::mt19937 rng(in * 31 + count);
          const std::vector<float> x = random_vector(rng, size_t(in) * count);
          Linear linear(weights_of(engine), numerics, engine.kernels());
          linear.set_pool(&pool);
          LinearInput streamed, whole;
          linear.reserve(streamed, in, count, true);
          linear.reserve(whole, in, count);
          std::vector<std::atomic<int>> calls(count);
          linear.load(streamed, in, count, [&, copy = copy_of(x, in)](uint32_t v, uint32_t thread, float* dst) {
            CHECK(thread < pool.size());
            calls[v].fetch_add(1);
            copy(v, thread, dst);
          });
          for (const std::atomic<int>& c : calls) CHECK(c.load() == 1);
          linear.load(whole, x.data(), in, count);
          REQUIRE(streamed.count == count);
          REQUIRE(streamed.in == in);
          if (numerics == cact::Numerics::int8) {
            const size_t q_bytes = size_t(whole.q.in_pad) * count, scales = size_t(whole.q.groups()) * count;
            CHECK(streamed.q.in_pad == whole.q.in_pad);
            CHECK(std::memcmp(streamed.q.q.data(), whole.q.q.data(), q_bytes) == 0);
            CHECK(std::memcmp(streamed.q.scale.data(), whole.q.scale.data(), scales * sizeof(float)) == 0);
            CHECK(streamed.q.version != whole.q.version);
          } else {
            CHECK(std::memcmp(streamed.x, x.data(), x.size() * sizeof(float)) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("linear: a prologue load fits any width up to its reserve, and fails loudly without one") {
  const cact::Model model = license_tiny();
  for (const cact::Numerics numerics : {cact::Numerics::int8, cact::Numerics::reference}) {
    CAPTURE(int(numerics));
    const cact::Engine engine = engine_with(model, numerics);
    ThreadPool pool(2);
    Linear linear(weights_of(engine), numerics, engine.kernels());
    linear.set_pool(&pool);
    // A width below the reserved one can take more vectors per block than
    // the reserved width does (2048: two, 3000: one).
    LinearInput wide, plain;
    linear.reserve(wide, 3000, 48, true);
    linear.reserve(plain, 2048, 48);
    std::mt19937 rng(5);
    const std::vector<float> x = random_vector(rng, size_t(2048) * 48);
    linear.load(wide, 2048, 48, copy_of(x, 2048));
    linear.load(plain, x.data(), 2048, 48);
    if (numerics == cact::Numerics::int8) {
      CHECK(std::memcmp(wide.q.q.data(), plain.q.q.data(), size_t(plain.q.in_pad) * 48) == 0);
    } else {
      CHECK(std::memcmp(wide.x, x.data(), x.size() * sizeof(float)) == 0);
    }
    // An input reserved without a prologue in a fresh Linear: no scratch, so a refusal.
    Linear fresh(weights_of(engine), numerics, engine.kernels());
    fresh.set_pool(&pool);
    LinearInput unreserved;
    fresh.reserve(unreserved, 2048, 48);
    CHECK_THROWS_AS(fresh.load(unreserved, 2048, 48, copy_of(x, 2048)), cact::Error);
  }
}
