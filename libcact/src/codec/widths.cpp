// Which CQ widths exist, how they pack, and their codebooks.
#include <cmath>
#include <limits>

#include "cact/codec.h"
#include "cact/error.h"

namespace cact::codec {

bool valid_bits(uint32_t bits) { return bits >= 1 && bits <= 5; }

uint32_t index_bits(uint32_t bits) { return bits == kTernary ? 2 : bits; }

uint32_t levels(uint32_t bits) { return bits == kTernary ? 3 : (1u << bits); }

uint32_t padded_in(uint32_t in, uint32_t group) { return (in + group - 1) / group * group; }

size_t packed_row_bytes(uint32_t in_pad, uint32_t bits) { return (size_t(in_pad) * index_bits(bits) + 7) / 8; }

uint64_t blob_bytes(uint64_t out, uint64_t in, uint32_t bits, uint32_t group) {
  if (!valid_bits(bits) || group == 0 || group % 8 != 0) return 0;
  constexpr uint64_t kLimit = uint64_t(1) << 40;  // far past any model; keeps products exact
  if (out >= kLimit || in >= kLimit) return 0;
  const uint64_t in_pad = (in + group - 1) / group * group;
  const uint64_t packed = out * (in_pad * index_bits(bits) / 8);
  const uint64_t norms = out * (in_pad / group) * 2;
  if (out != 0 && (packed / out != in_pad * index_bits(bits) / 8)) return 0;
  return packed + norms;
}

std::vector<float> codebook_for(uint32_t bits, std::span<const float> stored, uint32_t group) {
  const double rescale = std::sqrt(double(kGroup) / double(group));
  const double inv_sqrt_group = 1.0 / std::sqrt(double(group));
  switch (bits) {
    case 1: {
      const double c = std::sqrt(2.0 / M_PI) * inv_sqrt_group;
      return {float(-c), float(c)};
    }
    case kTernary: {
      const double c = 1.2240064 * inv_sqrt_group;
      return {float(-c), 0.0f, float(c)};
    }
    case 2:
    case 3:
    case 4: {
      const size_t offset = bits == 2 ? 0 : bits == 3 ? 4 : 12;
      const size_t count = size_t(1) << bits;
      if (stored.size() < offset + count) fail("codebooks: too few stored entries for CQ" + std::to_string(bits));
      std::vector<float> cb(count);
      for (size_t i = 0; i < count; ++i) cb[i] = float(double(stored[offset + i]) * rescale);
      return cb;
    }
    default:
      fail("CQ width " + std::to_string(bits) + " is not one the format carries (1, 2, 3, 4, 5 = ternary)");
  }
}

uint8_t trit_to_crumb(uint8_t trit) {
  static constexpr uint8_t kCrumb[3] = {3, 0, 1};
  return kCrumb[trit];
}

int crumb_to_trit(uint8_t crumb) {
  static constexpr int kTrit[4] = {1, 2, -1, 0};
  return kTrit[crumb & 3];
}

}  // namespace cact::codec
