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
  float temperature = 0.0f;     // <= 0: greedy (argmax; ties to the lowest id)
  uint32_t top_k = 0;           // 0: no top-k cut
  float top_p = 1.0f;           // (0, 1]; 1: no nucleus cut
  float min_p = 0.0f;           // [0, 1]: keep ids whose probability is >= min_p x the best one's; 0: off
  float repeat_penalty = 1.0f;  // > 0; 1: off. Logits of recent ids: positive ones divided, negative multiplied
  uint32_t repeat_last_n = 64;  // how many recent ids the penalty looks at
  uint64_t seed = 0;
};

// Throws cact::Error naming the first option out of range (temperature not
// finite, top_p outside (0, 1], min_p outside [0, 1], repeat_penalty <= 0).
void check_sampler_options(const SamplerOptions& options);

// Which ids may be sampled (a grammar's view of the next token).
class TokenFilter {
 public:
  virtual ~TokenFilter() = default;
  virtual bool allows(int32_t id) const = 0;
  // mask[id] = allows(id) for every id < mask.size(); may be faster than per-id calls.
  virtual void fill_mask(std::span<uint8_t> mask) const = 0;
};

class Sampler {
 public:
  explicit Sampler(SamplerOptions options = {});
  // Pick an id from logits[0, limit) (limit 0 = all); throws cact::Error on an
  // empty range. Scratch is kept between calls (no allocation once warmed up).
  int32_t sample(std::span<const float> logits, size_t limit = 0);
  // Same, with the repeat penalty over `recent` (the ids so far, last ones
  // count) and only ids the filter allows (nullptr: all). Greedy checks the
  // best id first and builds the mask only when the filter refuses it, so the
  // result is the argmax over the allowed ids either way. Throws cact::Error
  // when the filter allows no id.
  int32_t sample(std::span<const float> logits, size_t limit, std::span<const int32_t> recent,
                 const TokenFilter* filter);
  // Account for an id the filter forced (it allows no other) without looking
  // at logits: the random stream advances as sample() would have advanced it,
  // so a seeded answer does not depend on whether its forced ids were sampled.
  void take_forced();
  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
  Rng rng_;
  std::vector<uint32_t> order_;
  std::vector<double> prob_;
  std::vector<float> penalised_, masked_;
  std::vector<uint8_t> mask_;
};

// Argmax with ties to the lowest id.
int32_t argmax(std::span<const float> logits);

}  // namespace cact
