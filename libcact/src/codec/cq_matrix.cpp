// Quantise / dequantise [out, in] matrices group by group (FORMAT.md):
// rotate with H, store the FP16 norm, pick the nearest unit-codebook entry.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "cact/codec.h"
#include "cact/error.h"
#include "cact/half.h"

namespace cact::codec {

float CqMatrix::norm(uint32_t r, uint32_t g) const { return load_half(norms, size_t(r) * groups_per_row() + g); }

CqMatrix view_matrix(std::span<const uint8_t> blob, uint32_t out, uint32_t in, uint32_t bits, uint32_t group) {
  const uint64_t expected = blob_bytes(out, in, bits, group);
  if (expected == 0 || expected != blob.size()) {
    fail("CQ matrix [" + std::to_string(out) + ", " + std::to_string(in) + "] at width " + std::to_string(bits) +
         ": blob is " + std::to_string(blob.size()) + " bytes, expected " + std::to_string(expected));
  }
  CqMatrix m;
  m.out = out;
  m.in = in;
  m.bits = bits;
  m.group = group;
  m.in_pad = padded_in(in, group);
  m.row_bytes = packed_row_bytes(m.in_pad, bits);
  m.packed = blob.data();
  m.norms = blob.data() + size_t(out) * m.row_bytes;
  return m;
}

std::vector<uint8_t> quantize_matrix(const float* w, uint32_t out, uint32_t in, uint32_t bits,
                                     std::span<const float> codebook, uint32_t group) {
  const uint64_t total = blob_bytes(out, in, bits, group);
  if (total == 0)
    fail("cannot quantise a [" + std::to_string(out) + ", " + std::to_string(in) + "] matrix at width " +
         std::to_string(bits));
  if (codebook.size() != levels(bits)) fail("codebook size does not match CQ width " + std::to_string(bits));
  std::vector<uint8_t> blob(total);
  const uint32_t in_pad = padded_in(in, group);
  const size_t row_bytes = packed_row_bytes(in_pad, bits);
  const uint32_t groups = in_pad / group;
  std::vector<float> rotated(group);
  std::vector<uint8_t> indices(in_pad);
  uint8_t* norms = blob.data() + size_t(out) * row_bytes;
  for (uint32_t r = 0; r < out; ++r) {
    for (uint32_t g = 0; g < groups; ++g) {
      for (uint32_t i = 0; i < group; ++i) {
        const uint32_t col = g * group + i;
        rotated[i] = col < in ? w[size_t(r) * in + col] : 0.0f;
      }
      fwht(rotated.data(), group);
      double sum = 0.0;
      for (float v : rotated) sum += double(v) * v;
      const float norm = float(std::sqrt(sum));
      const uint16_t half = float_to_half(norm);
      std::memcpy(norms + 2 * (size_t(r) * groups + g), &half, 2);
      const float inv = 1.0f / std::max(norm, 1e-12f);
      for (uint32_t i = 0; i < group; ++i) indices[g * group + i] = nearest_index(rotated[i] * inv, codebook);
    }
    pack_indices(indices.data(), in_pad, bits, blob.data() + size_t(r) * row_bytes);
  }
  return blob;
}

uint8_t index_at(const CqMatrix& m, uint32_t r, uint32_t k) {
  uint8_t idx = 0;
  // Unpack a single index: locate its bits directly.
  const uint32_t w = index_bits(m.bits);
  const size_t bit = size_t(k) * w;
  const uint8_t* row = m.row(r);
  uint32_t code = row[bit / 8] >> (bit % 8);
  if (bit % 8 + w > 8) code |= uint32_t(row[bit / 8 + 1]) << (8 - bit % 8);
  code &= (1u << w) - 1;
  if (m.bits == kTernary) {
    const int trit = crumb_to_trit(uint8_t(code));
    idx = uint8_t(trit < 0 ? 1 : trit);
  } else {
    idx = uint8_t(code);
  }
  return idx;
}

void dequantize_row(const CqMatrix& m, uint32_t r, std::span<const float> codebook, float* out) {
  std::vector<uint8_t> indices(m.in_pad);
  unpack_indices(m.row(r), m.in_pad, m.bits, indices.data());
  std::vector<float> group(m.group);
  for (uint32_t g = 0; g < m.groups_per_row(); ++g) {
    const float norm = m.norm(r, g);
    for (uint32_t i = 0; i < m.group; ++i) group[i] = codebook[indices[g * m.group + i]] * norm;
    fwht(group.data(), m.group);
    for (uint32_t i = 0; i < m.group; ++i) {
      const uint32_t col = g * m.group + i;
      if (col < m.in) out[col] = group[i];
    }
  }
}

}  // namespace cact::codec
