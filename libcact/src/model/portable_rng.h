#pragma once
// A random source whose output is bit-identical on every platform and
// compiler: splitmix64 integers, uniforms from 24-bit integers, and normals
// as a scaled sum of four uniforms (Irwin-Hall; no libm, so no ulp drift).
#include <cmath>
#include <cstdint>

namespace cact::detail {

class PortableRng {
 public:
  explicit PortableRng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1), exact multiples of 2^-24.
  double uniform() { return double(next() >> 40) * (1.0 / 16777216.0); }
  // Approximately standard normal (mean 0, variance 1, bounded by +-2*sqrt(3)).
  double normal() {
    const double sum = uniform() + uniform() + uniform() + uniform();
    return (sum - 2.0) * 1.7320508075688772;  // sqrt(12 / 4)
  }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return next() % n; }

 private:
  uint64_t state_;
};

}  // namespace cact::detail
