// The scalar kernel table: the plain-C++ oracle every SIMD table must match.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "cact/codec.h"
#include "cact/half.h"
#include "cact/kernels.h"
#include "kernels/scalar.h"
#include "kernels/simd_common.h"

namespace cact::kernels {

void QuantizedActivations::mark_written() {
  static std::atomic<uint64_t> last{0};
  version = last.fetch_add(1, std::memory_order_relaxed) + 1;
}

void prepare_activations(uint32_t in, uint32_t count, QuantizedActivations& out) {
  out.mark_written();
  out.in = in;
  out.group = codec::kGroup;
  out.in_pad = codec::padded_in(in, out.group);
  out.count = count;
  const size_t q_size = size_t(out.in_pad) * count;
  const size_t s_size = size_t(out.groups()) * count;
  if (out.q.size() < q_size) out.q.resize(q_size);
  if (out.scale.size() < s_size) out.scale.resize(s_size);
}

void quantize_group_scalar(float* rotated, uint32_t group, int8_t* q, float* scale) {
  codec::fwht(rotated, group);
  float absmax = 0.0f;
  for (uint32_t i = 0; i < group; ++i) absmax = std::max(absmax, std::fabs(rotated[i]));
  const GroupScale gs = group_scale(absmax);
  for (uint32_t i = 0; i < group; ++i) {
    const long v = gs.zero() ? 0 : std::lround(rotated[i] * gs.inv);
    q[i] = int8_t(std::clamp<long>(v, -127, 127));
  }
  *scale = gs.scale;
}

namespace {

void quantize_activations_scalar(const float* x, uint32_t in, uint32_t count, QuantizedActivations& out) {
  prepare_activations(in, count, out);
  float rotated[codec::kGroup];
  for (uint32_t v = 0; v < count; ++v) {
    const float* src = x + size_t(v) * in;
    for (uint32_t g = 0; g < out.groups(); ++g) {
      for (uint32_t i = 0; i < out.group; ++i) {
        const uint32_t col = g * out.group + i;
        rotated[i] = col < in ? src[col] : 0.0f;
      }
      quantize_group_scalar(rotated, out.group, out.q.data() + size_t(v) * out.in_pad + g * out.group,
                            out.scale.data() + size_t(v) * out.groups() + g);
    }
  }
}

// Integer dot product of one packed group against int8 activations.
int32_t group_dot(const uint8_t* packed_row, uint32_t first_index, uint32_t group, uint32_t bits,
                  const Int8Codebook& cb, const int8_t* a) {
  const uint32_t w = codec::index_bits(bits);
  const uint32_t mask = (1u << w) - 1;
  int32_t sum = 0;
  for (uint32_t i = 0; i < group; ++i) {
    const size_t bit = size_t(first_index + i) * w;
    uint32_t code = packed_row[bit / 8] >> (bit % 8);
    if (bit % 8 + w > 8) code |= uint32_t(packed_row[bit / 8 + 1]) << (8 - bit % 8);
    code &= mask;
    int32_t weight;
    if (bits == codec::kTernary) {
      // Crumbs sign-extend to -1, 0, +1; the invalid crumb 2 was rejected at load.
      const int trit = codec::crumb_to_trit(uint8_t(code));
      weight = cb.q[trit < 0 ? 1 : trit];
    } else {
      weight = cb.q[code];
    }
    sum += weight * int32_t(a[i]);
  }
  return sum;
}

void cq_matmul_scalar(const codec::CqMatrix& w, const Int8Codebook& cb, const QuantizedActivations& a,
                      uint32_t row_begin, uint32_t row_end, float* y, size_t y_stride) {
  const uint32_t groups = w.groups_per_row();
  for (uint32_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = w.row(r);
    for (uint32_t v = 0; v < a.count; ++v) {
      const int8_t* act = a.vec(v);
      const float* scales = a.scales(v);
      float acc = 0.0f;
      for (uint32_t g = 0; g < groups; ++g) {
        const int32_t dot = group_dot(row, g * w.group, w.group, w.bits, cb, act + g * w.group);
        acc += float(dot) * (w.norm(r, g) * scales[g]);
      }
      y[size_t(v) * y_stride + r] = acc * cb.scale;
    }
  }
}

// Per group: codebook[index] * norm, then codec::fwht (the oracle's order of
// operations, which every SIMD table repeats lane by lane).
void dequantize_row_scalar(const codec::CqMatrix& w, const float* codebook, uint32_t r, float* out) {
  if (w.group != codec::kGroup) {
    codec::dequantize_row(w, r, {codebook, codec::levels(w.bits)}, out);
    return;
  }
  dequantize_row_by_groups(w, codebook, r, out, [&](const uint8_t* indices, float norm, float* group) {
    for (uint32_t i = 0; i < codec::kGroup; ++i) group[i] = codebook[indices[i]] * norm;
    codec::fwht(group, codec::kGroup);
  });
}

}  // namespace

const KernelTable& scalar_kernels() {
  static const KernelTable table{"scalar", quantize_activations_scalar, cq_matmul_scalar, dequantize_row_scalar};
  return table;
}

}  // namespace cact::kernels
