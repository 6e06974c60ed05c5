// LSB-first bit streams of codebook indices (FORMAT.md "CQ blob").
#include <cstring>

#include "cact/codec.h"

namespace cact::codec {

void pack_indices(const uint8_t* indices, size_t n, uint32_t bits, uint8_t* out) {
  const uint32_t w = index_bits(bits);
  std::memset(out, 0, (n * w + 7) / 8);
  for (size_t k = 0; k < n; ++k) {
    uint32_t code = indices[k];
    if (bits == kTernary) code = trit_to_crumb(uint8_t(code));
    const size_t bit = k * w;
    // w divides 8 for 1, 2, 4; 3-bit codes may straddle a byte boundary.
    out[bit / 8] = uint8_t(out[bit / 8] | (code << (bit % 8)));
    if (bit % 8 + w > 8) out[bit / 8 + 1] = uint8_t(out[bit / 8 + 1] | (code >> (8 - bit % 8)));
  }
}

namespace {

// Widths that divide 8 (1, 2, 4 bits, not ternary): whole bytes, W-bit fields
// LSB first; a loop GCC vectorises (embedding and engram rows are unpacked per
// token). The same indices as the general loop below.
template <uint32_t W>
void unpack_whole_bytes(const uint8_t* packed, size_t n, uint8_t* indices) {
  constexpr uint32_t kPerByte = 8 / W, kMask = (1u << W) - 1;
  const size_t bytes = n / kPerByte;
  for (size_t b = 0; b < bytes; ++b) {
    for (uint32_t j = 0; j < kPerByte; ++j) indices[b * kPerByte + j] = uint8_t((packed[b] >> (j * W)) & kMask);
  }
  for (size_t k = bytes * kPerByte; k < n; ++k) {
    indices[k] = uint8_t((packed[k / kPerByte] >> (k % kPerByte * W)) & kMask);
  }
}

}  // namespace

bool unpack_indices(const uint8_t* packed, size_t n, uint32_t bits, uint8_t* indices) {
  const uint32_t w = index_bits(bits);
  if (bits != kTernary && (w == 1 || w == 2 || w == 4)) {
    if (w == 1) unpack_whole_bytes<1>(packed, n, indices);
    if (w == 2) unpack_whole_bytes<2>(packed, n, indices);
    if (w == 4) unpack_whole_bytes<4>(packed, n, indices);
    return true;
  }
  const uint32_t mask = (1u << w) - 1;
  bool ok = true;
  for (size_t k = 0; k < n; ++k) {
    const size_t bit = k * w;
    uint32_t code = packed[bit / 8] >> (bit % 8);
    if (bit % 8 + w > 8) code |= uint32_t(packed[bit / 8 + 1]) << (8 - bit % 8);
    code &= mask;
    if (bits == kTernary) {
      const int trit = crumb_to_trit(uint8_t(code));
      if (trit < 0) ok = false;
      code = trit < 0 ? 1 : uint32_t(trit);  // invalid crumb decodes as zero; caller is told
    }
    indices[k] = uint8_t(code);
  }
  return ok;
}

}  // namespace cact::codec
