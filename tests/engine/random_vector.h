#pragma once
// Normal(0, scale) test vectors for the white-box engine tests.
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
