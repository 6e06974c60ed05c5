// Sampling with a self-contained generator: the same seed gives the same ids
// everywhere (no std distributions, whose output differs between libraries).
#include "cact/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cact/error.h"

namespace cact {

namespace {
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t s = seed;
  for (uint64_t& word : s_) word = splitmix64(s);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::next_double() { return double(next() >> 11) * 0x1.0p-53; }

int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) fail("argmax of no logits");
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return int32_t(best);
}

void check_sampler_options(const SamplerOptions& o) {
  if (!std::isfinite(o.temperature)) fail("temperature must be finite");
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) fail("top_p must be in (0, 1]");
  if (!(o.min_p >= 0.0f && o.min_p <= 1.0f)) fail("min_p must be in [0, 1]");
  if (!(o.repeat_penalty > 0.0f) || !std::isfinite(o.repeat_penalty)) fail("repeat_penalty must be finite and > 0");
}

Sampler::Sampler(SamplerOptions options) : options_(options), rng_(options.seed) { check_sampler_options(options); }

void Sampler::take_forced() {
  // sample() draws once whenever it does not take the argmax.
  if (options_.temperature > 0.0f) rng_.next();
}

int32_t Sampler::sample(std::span<const float> logits, size_t limit) { return sample(logits, limit, {}, nullptr); }

int32_t Sampler::sample(std::span<const float> logits, size_t limit, std::span<const int32_t> recent,
                        const TokenFilter* filter) {
  const size_t n = limit == 0 ? logits.size() : std::min(limit, logits.size());
  if (n == 0) fail("sampling from an empty vocabulary");
  std::span<const float> l = logits.first(n);
  if (options_.repeat_penalty != 1.0f && !recent.empty()) {
    penalised_.assign(l.begin(), l.end());
    const size_t from = recent.size() > options_.repeat_last_n ? recent.size() - options_.repeat_last_n : 0;
    for (size_t i = from; i < recent.size(); ++i) {
      const int32_t id = recent[i];
      if (id < 0 || size_t(id) >= n) continue;
      float& v = penalised_[size_t(id)];
      // Applied once per id however often it recurs (llama.cpp's rule), so the
      // penalty does not compound with the window length.
      if (std::find(recent.begin() + long(from), recent.begin() + long(i), id) != recent.begin() + long(i)) continue;
      v = v > 0.0f ? v / options_.repeat_penalty : v * options_.repeat_penalty;
    }
    l = penalised_;
  }
  if (filter != nullptr) {
    if (options_.temperature <= 0.0f) {
      const int32_t best = argmax(l);
      if (filter->allows(best)) return best;
    }
    mask_.assign(n, 0);
    filter->fill_mask(mask_);
    if (std::find(mask_.begin(), mask_.end(), uint8_t(1)) == mask_.end()) fail("the constraint allows no token");
    masked_.assign(l.begin(), l.end());
    for (size_t i = 0; i < n; ++i) {
      if (mask_[i] == 0) masked_[i] = -std::numeric_limits<float>::infinity();
    }
    l = masked_;
  }
  if (options_.temperature <= 0.0f) return argmax(l);

  order_.resize(n);
  for (size_t i = 0; i < n; ++i) order_[i] = uint32_t(i);
  // Highest logit first, ties to the lower id: a strict total order, so the
  // result does not depend on the sort implementation.
  auto before = [&](uint32_t a, uint32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); };
  size_t keep = n;
  if (options_.top_k > 0 && options_.top_k < n) {
    keep = options_.top_k;
    std::partial_sort(order_.begin(), order_.begin() + long(keep), order_.end(), before);
  } else if (options_.top_p < 1.0f) {
    std::sort(order_.begin(), order_.end(), before);
  } else {
    // Only the maximum matters for stability.
    std::swap(order_[0], order_[size_t(argmax(l))]);
  }
  const double inv_t = 1.0 / double(options_.temperature);
  const double top = double(l[order_[0]]);
  prob_.resize(keep);
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    // Masked ids (-inf) get probability 0 and are never picked.
    prob_[i] = std::exp((double(l[order_[i]]) - top) * inv_t);
    total += prob_[i];
  }
  if (options_.min_p > 0.0f) {
    // prob_[0] is the best id's (1 after the shift); the order is descending
    // only when sorted, so filter in place rather than cut a prefix.
    const double floor = double(options_.min_p) * prob_[0];
    total = 0.0;
    for (size_t i = 0; i < keep; ++i) {
      if (prob_[i] < floor) prob_[i] = 0.0;
      total += prob_[i];
    }
  }
  if (options_.top_p < 1.0f) {
    // Smallest prefix (in descending order) whose mass reaches top_p.
    double mass = 0.0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      mass += prob_[i] / total;
      if (mass >= double(options_.top_p)) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
    total = 0.0;
    for (size_t i = 0; i < keep; ++i) total += prob_[i];
  }
  double r = rng_.next_double() * total;
  size_t last_possible = 0;
  for (size_t i = 0; i < keep; ++i) {
    if (prob_[i] == 0.0) continue;
    last_possible = i;
    r -= prob_[i];
    if (r < 0.0) return int32_t(order_[i]);
  }
  // Rounding left r >= 0: the last id that could be drawn, never a cut one.
  return int32_t(order_[last_possible]);
}

}  // namespace cact
