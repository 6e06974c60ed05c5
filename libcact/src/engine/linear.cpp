#include "engine/linear.h"

#include <algorithm>

#include "cact/error.h"

namespace cact::engine {

Linear::Linear(const Weights& w, Numerics numerics, const kernels::KernelTable& kernels)
    : w_(&w), numerics_(numerics), kernels_(&kernels) {}

void Linear::reserve(LinearInput& input, uint32_t max_in, uint32_t max_count) {
  if (numerics_ == Numerics::int8) {
    const uint32_t in_pad = codec::padded_in(max_in, codec::kGroup);
    input.q.q.resize(size_t(in_pad) * max_count);
    input.q.scale.resize(size_t(in_pad / codec::kGroup) * max_count);
  }
  reserve_rows(max_in);
}

void Linear::reserve_rows(uint32_t max_in) {
  const uint32_t in_pad = codec::padded_in(max_in, codec::kGroup);
  if (indices_.size() < in_pad) indices_.resize(in_pad);
  if (group_.size() < codec::kGroup) group_.resize(codec::kGroup);
  if (dense_.size() < in_pad) dense_.resize(in_pad);
}

void Linear::load(LinearInput& input, const float* x, uint32_t in, uint32_t count) {
  input.in = in;
  input.count = count;
  input.x = x;
  if (numerics_ == Numerics::int8) kernels_->quantize_activations(x, in, count, input.q);
}

void Linear::row(const codec::CqMatrix& m, uint32_t r, float* out) {
  reserve_rows(m.in);
  codec::unpack_indices(m.row(r), m.in_pad, m.bits, indices_.data());
  const std::vector<float>& cb = w_->codebook_of(m);
  if (m.group > group_.size()) group_.resize(m.group);
  float* group = group_.data();
  for (uint32_t g = 0; g < m.groups_per_row(); ++g) {
    const float norm = m.norm(r, g);
    const uint8_t* idx = indices_.data() + size_t(g) * m.group;
    for (uint32_t i = 0; i < m.group; ++i) group[i] = cb[idx[i]] * norm;
    codec::fwht(group, m.group);
    const uint32_t first = g * m.group;
    const uint32_t used = m.in - first < m.group ? m.in - first : m.group;
    for (uint32_t i = 0; i < used; ++i) out[first + i] = group[i];
  }
}

void Linear::apply(const LinearInput& input, const codec::CqMatrix& m, uint32_t row_begin, uint32_t row_end,
                   float* y, size_t y_stride) {
  if (input.in != m.in) fail("internal: matrix input width does not match the prepared activations");
  if (numerics_ == Numerics::int8) {
    const kernels::Int8Codebook& cb = w_->int8_codebook_of(m);
    const uint32_t rows = row_end - row_begin;
    // Rows are independent: any split gives the same bits. Parts are multiples
    // of 8 rows (the kernels' tile) and not smaller than ~64 rows of one vector.
    const uint64_t work = uint64_t(rows) * input.count;
    uint32_t parts = pool_ != nullptr ? pool_->size() : 1;
    if (work < 128) parts = 1;
    parts = uint32_t(std::min<uint64_t>(parts, std::max<uint64_t>(1, work / 64)));
    if (parts <= 1) {
      kernels_->cq_matmul(m, cb, input.q, row_begin, row_end, y, y_stride);
      return;
    }
    const uint32_t step = (rows / parts + 7) / 8 * 8;
    pool_->run(parts, [&](uint32_t part, uint32_t) {
      const uint32_t b = std::min(row_end, row_begin + part * step);
      const uint32_t e = part + 1 == parts ? row_end : std::min(row_end, b + step);
      if (b < e) kernels_->cq_matmul(m, cb, input.q, b, e, y, y_stride);
    });
    return;
  }
  reserve_rows(m.in);
  float* dense = dense_.data();
  for (uint32_t r = row_begin; r < row_end; ++r) {
    row(m, r, dense);
    for (uint32_t v = 0; v < input.count; ++v) {
      const float* x = input.x + size_t(v) * input.in;
      double sum = 0.0;
      for (uint32_t i = 0; i < m.in; ++i) sum += double(dense[i]) * double(x[i]);
      y[size_t(v) * y_stride + r] = float(sum);
    }
  }
}

size_t Linear::bytes() const {
  return indices_.capacity() + (group_.capacity() + dense_.capacity()) * sizeof(float);
}

}  // namespace cact::engine
