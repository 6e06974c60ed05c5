// Sampling: greedy, temperature, top-k, top-p, seeded reproducibility.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "cact/error.h"
#include "cact/sampler.h"

TEST_CASE("greedy picks the argmax, ties to the lowest id, within the limit") {
  const std::vector<float> l{0.5f, 2.0f, 2.0f, -1.0f, 9.0f};
  cact::Sampler greedy;
  CHECK(greedy.sample(l) == 4);
  CHECK(greedy.sample(l, 4) == 1);
  CHECK(cact::argmax(l) == 4);
  CHECK_THROWS_AS(greedy.sample(std::span<const float>{}), cact::Error);
}

TEST_CASE("same seed, same draws; top-k and top-p cut the candidates") {
  std::vector<float> l(50);
  for (size_t i = 0; i < l.size(); ++i) l[i] = float(i % 7) * 0.3f;
  l[6] = 2.5f;
  auto draws = [&](cact::SamplerOptions o) {
    cact::Sampler s(o);
    std::vector<int32_t> out;
    for (int i = 0; i < 200; ++i) out.push_back(s.sample(l));
    return out;
  };
  const auto a = draws({.temperature = 1.0f, .seed = 7});
  CHECK(a == draws({.temperature = 1.0f, .seed = 7}));
  CHECK(a != draws({.temperature = 1.0f, .seed = 8}));
  CHECK(std::set<int32_t>(a.begin(), a.end()).size() > 20);
  // top-k 3: id 6 (2.5), then 13 and 20 (1.8; ties to the lower ids).
  const auto k = draws({.temperature = 1.0f, .top_k = 3, .seed = 1});
  CHECK(std::set<int32_t>(k.begin(), k.end()) == std::set<int32_t>{6, 13, 20});
  // top-p: a dominant logit alone carries more than 0.9 of the mass.
  std::vector<float> peaked(10, 0.0f);
  peaked[3] = 10.0f;
  cact::Sampler p({.temperature = 1.0f, .top_p = 0.9f, .seed = 3});
  for (int i = 0; i < 50; ++i) CHECK(p.sample(peaked) == 3);
  // Low temperature concentrates on the maximum.
  cact::Sampler cold({.temperature = 0.01f, .seed = 3});
  for (int i = 0; i < 20; ++i) CHECK(cold.sample(l) == 6);
  // <= 0 is greedy, as documented.
  CHECK(cact::Sampler({.temperature = -1.0f}).sample(l) == 6);
  CHECK_THROWS_AS(cact::Sampler({.temperature = 1.0f, .top_p = 0.0f}), cact::Error);
}

TEST_CASE("sampler options out of range are refused by name") {
  auto message = [](cact::SamplerOptions o) {
    try {
      cact::check_sampler_options(o);
    } catch (const cact::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message({.top_p = 2.0f}).find("top_p") == 0);
  CHECK(message({.min_p = -0.1f}).find("min_p") == 0);
  CHECK(message({.min_p = 1.5f}).find("min_p") == 0);
  CHECK(message({.repeat_penalty = 0.0f}).find("repeat_penalty") == 0);
  CHECK(message({.temperature = INFINITY}).find("temperature") == 0);
  CHECK(message({.temperature = 0.7f, .top_p = 1.0f, .min_p = 1.0f, .repeat_penalty = 1.3f}).empty());
}

TEST_CASE("min-p keeps only ids near the best one") {
  // Probabilities at temperature 1: e^0 = 1 for id 0, e^-1 ~ 0.37, e^-5 ~ 0.007.
  const std::vector<float> l{5.0f, 4.0f, 0.0f, 0.0f};
  cact::Sampler s({.temperature = 1.0f, .min_p = 0.2f, .seed = 11});
  std::set<int32_t> seen;
  for (int i = 0; i < 400; ++i) seen.insert(s.sample(l));
  CHECK(seen == std::set<int32_t>{0, 1});
}

TEST_CASE("repeat penalty lowers recent ids once each, positive and negative") {
  const std::vector<float> l{2.0f, 1.9f, -0.5f, -0.6f};
  cact::Sampler s({.repeat_penalty = 1.5f, .repeat_last_n = 2});
  const std::vector<int32_t> recent0{0};
  CHECK(s.sample(l, 0, recent0, nullptr) == 1);  // 2.0 / 1.5 < 1.9
  // Id 0 is outside the last 2: no penalty for it.
  const std::vector<int32_t> old0{0, 2, 3};
  CHECK(s.sample(l, 0, old0, nullptr) == 0);
  // A negative logit is multiplied; repeats inside the window count once.
  const std::vector<float> neg{-1.0f, -1.4f};
  const std::vector<int32_t> twice{0, 0};
  CHECK(s.sample(neg, 0, twice, nullptr) == 1);  // -1.5 < -1.4, not -2.25
}

namespace {
// Allows the ids of a set; counts how it was asked.
struct SetFilter final : cact::TokenFilter {
  std::set<int32_t> ok;
  mutable int single = 0, masks = 0;
  bool allows(int32_t id) const override {
    ++single;
    return ok.count(id) != 0;
  }
  void fill_mask(std::span<uint8_t> mask) const override {
    ++masks;
    for (size_t i = 0; i < mask.size(); ++i) mask[i] = ok.count(int32_t(i)) ? 1 : 0;
  }
};
}  // namespace

TEST_CASE("a token filter removes ids; greedy stays the argmax of what is left") {
  const std::vector<float> l{0.1f, 3.0f, 2.0f, 2.5f, -1.0f};
  SetFilter f;
  f.ok = {1, 2};
  cact::Sampler greedy;
  CHECK(greedy.sample(l, 0, {}, &f) == 1);
  CHECK(f.masks == 0);  // the best id was allowed: no mask built
  f.ok = {0, 2, 4};
  CHECK(greedy.sample(l, 0, {}, &f) == 2);
  CHECK(f.masks == 1);
  cact::Sampler hot({.temperature = 2.0f, .seed = 5});
  for (int i = 0; i < 200; ++i) CHECK(f.ok.count(hot.sample(l, 0, {}, &f)) == 1);
  f.ok = {};
  CHECK_THROWS_AS(greedy.sample(l, 0, {}, &f), cact::Error);
}
