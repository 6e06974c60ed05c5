// Non-finite values in a checked archive (cact-inspect --check). Kept out of
// check_archive, which every open runs: this reads every FP16/FP32 blob and
// every CQ norm (CQ codes index finite codebooks, so finite norms imply finite
// CQ values).
#include <cmath>
#include <cstring>

#include "cact/codec.h"
#include "cact/model.h"

namespace cact {

namespace {

// FP16 bits with an all-ones exponent: +-inf or NaN.
bool half_not_finite(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return (h & 0x7C00u) == 0x7C00u;
}

std::string half_text(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  if ((h & 0x03FFu) != 0) return "NaN";
  return (h & 0x8000u) ? "-inf" : "+inf";
}

std::string float_text(float v) { return std::isnan(v) ? "NaN" : v > 0 ? "+inf" : "-inf"; }

// "N values are not finite (first: element K, +inf)" and the like.
std::string summary(uint64_t count, const char* what, const std::string& first_at, const std::string& first_value) {
  return std::to_string(count) + " " + what + (count == 1 ? " is" : " are") + " not finite (first: " + first_at + ", " +
         first_value + ")";
}

}  // namespace

std::vector<std::string> check_values(const Model& model) {
  std::vector<std::string> problems;
  for (size_t i = 0; i < model.records().size(); ++i) {
    const Record& r = model.record(i);
    const std::span<const uint8_t> blob = model.blob(i);
    uint64_t bad = 0;
    std::string first_at, first_value;
    switch (r.dtype) {
      case Dtype::CQ: {
        const codec::CqMatrix m = model.matrix(i);
        const uint32_t groups = m.groups_per_row();
        for (uint64_t k = 0; k < uint64_t(m.out) * groups; ++k) {
          if (!half_not_finite(m.norms + 2 * k)) continue;
          if (bad++ == 0) {
            first_at = "row " + std::to_string(k / groups) + ", group " + std::to_string(k % groups);
            first_value = half_text(m.norms + 2 * k);
          }
        }
        if (bad > 0)
          problems.push_back(model.label(i) + ": " +
                             summary(bad, bad == 1 ? "CQ norm" : "CQ norms", first_at, first_value));
        break;
      }
      case Dtype::FP16:
        for (uint64_t k = 0; k < r.elements(); ++k) {
          if (!half_not_finite(blob.data() + 2 * k)) continue;
          if (bad++ == 0) {
            first_at = "element " + std::to_string(k);
            first_value = half_text(blob.data() + 2 * k);
          }
        }
        if (bad > 0)
          problems.push_back(model.label(i) + ": " +
                             summary(bad, bad == 1 ? "FP16 value" : "FP16 values", first_at, first_value));
        break;
      case Dtype::FP32:
        for (uint64_t k = 0; k < r.elements(); ++k) {
          float v;
          std::memcpy(&v, blob.data() + 4 * k, 4);
          if (std::isfinite(v)) continue;
          if (bad++ == 0) {
            first_at = "element " + std::to_string(k);
            first_value = float_text(v);
          }
        }
        if (bad > 0)
          problems.push_back(model.label(i) + ": " +
                             summary(bad, bad == 1 ? "FP32 value" : "FP32 values", first_at, first_value));
        break;
      case Dtype::RAW:
        break;
    }
  }
  return problems;
}

}  // namespace cact
