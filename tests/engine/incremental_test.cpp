// Incremental decoding equals a full-sequence recompute, in both numerics:
// token-by-token (chunks of 1, rings as small as the span allows) against one
// chunk holding the whole sequence (every position stored), past the sliding
// window, with and without a kv_window span and pinned sinks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "cact/engine.h"
#include "cact/error.h"
#include "cact/tokenizer.h"
#include "support/test_paths.h"

namespace {

std::vector<int32_t> long_prompt(const cact::Model& model, size_t offset, size_t bytes) {
  std::ifstream in(cact::test::models_dir() / "corpus.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  const cact::Tokenizer tok = cact::Tokenizer::from_blob(model.tokenizer_blob());
  std::vector<int32_t> ids{int32_t(tok.model().bos_id)};
  for (int32_t id : tok.encode(ss.str().substr(offset, bytes))) ids.push_back(id);
  return ids;
}

double max_diff(std::span<const float> a, std::span<const float> b) {
  double d = 0.0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

void check_incremental(const cact::Engine& engine, const std::vector<int32_t>& ids, cact::SessionOptions base,
                       bool mixed_chunks = true) {
  const size_t V = engine.output_rows();
  cact::SessionOptions whole = base;
  whole.max_chunk = uint32_t(ids.size());
  cact::Session full(engine, whole);
  const std::vector<float> all = full.prefill_all(ids);

  cact::SessionOptions one = base;
  one.max_chunk = 1;
  cact::Session inc(engine, one);
  double worst = 0.0;
  for (size_t t = 0; t < ids.size(); ++t) {
    const auto l = inc.step(ids[t]);
    worst = std::max(worst, max_diff(l, std::span<const float>(all.data() + t * V, V)));
  }
  if (mixed_chunks) {  // 7 tokens at a time through prefill
    cact::SessionOptions seven = base;
    seven.max_chunk = 7;
    cact::Session mixed(engine, seven);
    const auto last = mixed.prefill(ids);
    worst = std::max(worst, max_diff(last, std::span<const float>(all.data() + (ids.size() - 1) * V, V)));
  }
  MESSAGE(std::string(cact::numerics_name(engine.numerics()))
          << " span " << full.kv_span() << " sinks " << full.sinks() << ": max |token-by-token - full| = " << worst);
  CHECK(worst <= 1e-5);
}

}  // namespace

TEST_CASE("token-by-token logits equal a full-sequence recompute") {
  const auto model = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  const std::vector<int32_t> ids = long_prompt(model, 3000, 420);  // > sliding_window 64
  REQUIRE(ids.size() > 95);
  // The float path shares the ring code with the int8 path and is slow token by
  // token (it dequantises every row per token): one configuration is enough.
  cact::Engine reference(model, {cact::Numerics::reference, nullptr});
  check_incremental(reference, ids, {.context = 256, .sinks = 5, .kv_window = 40}, false);
  cact::Engine engine(model, {cact::Numerics::int8, &cact::kernels::scalar_kernels()});
  check_incremental(engine, ids, {.context = 256});
  // A 40-position span (below the sliding window) with 5 pinned sinks, and one without sinks.
  check_incremental(engine, ids, {.context = 256, .sinks = 5, .kv_window = 40});
  check_incremental(engine, ids, {.context = 256, .sinks = 0, .kv_window = 90}, false);
}

TEST_CASE("the best kernel table decodes like the scalar one") {
  const auto model = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  const std::vector<int32_t> ids = long_prompt(model, 9000, 400);
  cact::Engine scalar(model, {cact::Numerics::int8, &cact::kernels::scalar_kernels()});
  cact::Engine best(model, {cact::Numerics::int8, &cact::kernels::best_kernels()});
  cact::Session a(scalar, {.context = 256}), b(best, {.context = 256});
  const auto la = a.prefill_all(ids), lb = b.prefill_all(ids);
  const double d = max_diff(la, lb);
  MESSAGE("scalar vs " << std::string(best.kernels().name) << ": max logit difference " << d);
  CHECK(d <= 1e-3);
}

TEST_CASE("the span and the sinks change what is visible") {
  const auto model = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  const std::vector<int32_t> ids = long_prompt(model, 3000, 420);
  cact::Engine engine(model, {cact::Numerics::int8, nullptr});
  cact::Session plain(engine, {.context = 256}), span(engine, {.context = 256, .kv_window = 40}),
      sinks(engine, {.context = 256, .sinks = 5, .kv_window = 40});
  const auto a = plain.prefill(ids);
  const std::vector<float> va(a.begin(), a.end());
  const auto b = span.prefill(ids);
  const std::vector<float> vb(b.begin(), b.end());
  const auto c = sinks.prefill(ids);
  CHECK(max_diff(va, vb) > 1e-3);
  CHECK(max_diff(vb, c) > 1e-3);
  CHECK(span.kv_span() == 40);
  CHECK(sinks.sinks() == 5);
  CHECK(plain.kv_span() == 0);
  CHECK(plain.sinks() == 0);
}

TEST_CASE("context limits end with a clear error, not a crash") {
  const auto model = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  cact::Engine engine(model, {cact::Numerics::int8, nullptr});
  cact::Session s(engine, {.context = 16, .max_chunk = 4});
  std::vector<int32_t> ids(17, 5);
  CHECK_THROWS_WITH_AS(s.prefill(ids), doctest::Contains("does not fit the context of 16"), cact::Error);
  CHECK(s.position() == 0);
  ids.resize(15);
  s.prefill(ids);
  s.step(7);
  CHECK(s.remaining() == 0);
  CHECK_THROWS_WITH_AS(s.step(7), doctest::Contains("context of 16 positions is full"), cact::Error);
  CHECK(s.position() == 16);
  s.reset();
  CHECK(s.position() == 0);
  CHECK_THROWS_WITH_AS(s.step(5000), doctest::Contains("outside the vocabulary"), cact::Error);
  CHECK_THROWS_WITH_AS(s.step(-1), doctest::Contains("outside the vocabulary"), cact::Error);
  CHECK_THROWS_WITH_AS(cact::Session(engine, {.context = 100000}), doctest::Contains("max_seq_len"), cact::Error);
}

TEST_CASE("logits of chosen rows: the full feed's bits there, -inf elsewhere, the same state") {
  const auto model = cact::Model::open(cact::test::models_dir() / "license-tiny.cact");
  const std::vector<int32_t> ids = long_prompt(model, 5000, 200);
  cact::Engine scalar(model, {cact::Numerics::int8, &cact::kernels::scalar_kernels()});
  cact::Engine best(model, {cact::Numerics::int8, &cact::kernels::best_kernels()});
  cact::Engine reference(model, {cact::Numerics::reference, nullptr});
  const uint32_t out_rows = best.output_rows();
  // Scattered ids, the first and last row, and a run across a 16-row tile edge.
  const std::vector<int32_t> rows{0, 3, 14, 15, 16, 17, 18, 19, 100, 101, 517, int32_t(out_rows) - 1};
  for (const cact::Engine* engine : {&scalar, &best, &reference}) {
    CAPTURE(std::string(engine->kernels().name));
    CAPTURE(cact::numerics_name(engine->numerics()));
    cact::Session full(*engine, {.context = 256, .max_chunk = 16}), some(*engine, {.context = 256, .max_chunk = 16});
    // A multi-chunk prefill, then a one-token feed.
    for (const std::span<const int32_t> feed : {std::span(ids).first(40), std::span(ids).subspan(40, 1)}) {
      const auto want = full.prefill(feed);
      const auto got = some.prefill(feed, rows);
      size_t at = 0, others_inf = 0;
      for (uint32_t r = 0; r < out_rows; ++r) {
        if (at < rows.size() && rows[at] == int32_t(r)) {
          CHECK(got[r] == want[r]);
          ++at;
        } else {
          others_inf += got[r] == -std::numeric_limits<float>::infinity();
        }
      }
      CHECK(others_inf == out_rows - rows.size());
      CHECK_FALSE(some.nonfinite_logits());
    }
    const auto want = full.step(ids[41]);
    const std::vector<float> next(want.begin(), want.end());
    CHECK(max_diff(next, some.step(ids[41])) == 0.0);
  }
  cact::Session s(best, {.context = 64});
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + 4);
  const std::string rule =
      "logit rows must be a non-empty ascending list of distinct ids below " + std::to_string(out_rows);
  const std::vector<std::vector<int32_t>> malformed{{}, {5, 3}, {3, 3}, {-1, 2}, {int32_t(out_rows)}};
  for (const std::vector<int32_t>& bad : malformed) {
    CHECK_THROWS_WITH_AS(s.prefill(prompt, bad), rule.c_str(), cact::Error);
  }
  CHECK(s.position() == 0);
}

TEST_CASE("golden synthetic archives: token by token equals recompute, both numerics") {
  // micro-notaps has no q/k/v taps and kv_window 32; micro-mixed has block-untied
  // Hadamard factors and CQ1/CQ3/ternary matrices; micro-heads has all three heads.
  const auto dir = cact::test::golden_dir() / "archives";
  for (const char* name : {"micro", "micro-notaps", "micro-mixed", "micro-heads"}) {
    const auto path = dir / (std::string(name) + ".cact");
    if (!std::filesystem::exists(path)) continue;
    INFO(name);
    const auto model = cact::Model::open(path);
    std::vector<int32_t> ids{2};
    for (int i = 0; i < 45; ++i) ids.push_back(int32_t((i * 37 + 11) % model.header().vocab));
    for (cact::Numerics num : {cact::Numerics::reference, cact::Numerics::int8}) {
      cact::Engine engine(model, {num, nullptr});
      check_incremental(engine, ids, {});
      check_incremental(engine, ids, {.context = 100, .sinks = 3}, false);
    }
  }
}
