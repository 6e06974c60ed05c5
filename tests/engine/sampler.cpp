// Sampling: greedy, temperature, top-k, top-p, seeded reproducibility.
#include <doctest/doctest.h>

#include <set>
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
  CHECK_THROWS_AS(cact::Sampler({.temperature = -1.0f}), cact::Error);
  CHECK_THROWS_AS(cact::Sampler({.temperature = 1.0f, .top_p = 0.0f}), cact::Error);
}
