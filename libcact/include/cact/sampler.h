#pragma once
// Token sampling: greedy, temperature, top-k, top-p, with a portable seeded
// generator (xoshiro256** seeded through splitmix64), so the same seed gives
// the same tokens on every platform and standard library.
#include <cstdint>
#include <span>
#include <vector>

namespace cact {

// splitmix64 -> xoshiro256**; next_double() uses the top 53 bits.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0);
  uint64_t next();
  double next_double();  // [0, 1)

 private:
  uint64_t s_[4];
};

struct SamplerOptions {
  float temperature = 0.0f;  // <= 0: greedy (argmax; ties to the lowest id)
  uint32_t top_k = 0;        // 0: no top-k cut
  float top_p = 1.0f;        // >= 1: no nucleus cut
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(SamplerOptions options = {});
  // Pick an id from logits[0, limit) (limit 0 = all); throws cact::Error on an
  // empty range. Scratch is kept between calls (no allocation once warmed up).
  int32_t sample(std::span<const float> logits, size_t limit = 0);
  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
  Rng rng_;
  std::vector<uint32_t> order_;
  std::vector<double> prob_;
};

// Argmax with ties to the lowest id.
int32_t argmax(std::span<const float> logits);

}  // namespace cact
