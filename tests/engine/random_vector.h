#pragma once
// Normal random test vectors for the engine's white-box tests.
#include <random>
#include <vector>

namespace cact::test {

inline std::vector<float> random_vector(std::mt19937& rng, size_t n, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace cact::test
